"""C language plugin for workbench (grammar: ``tree-sitter-c``).

Provides dedup tokens and the DSA-CQE decomposition map; it has no test runner (``execute``
needs one: a plugin may add it, see the workbench plugin guide). Registered through the
``workbench.languages`` entry point (see this package's ``pyproject.toml``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workbench.languages.spec import LanguagePlugin, SubCodeKind, hookimpl

__all__ = ["CLanguage", "workbench_languages"]

#: the keywords of C23 (6.4.1) with the C99/C11 underscore spellings. tree-sitter-c gives some of
#: them named nodes (``int`` a ``primitive_type``, ``_Bool`` a ``type_identifier``) and parses library
#: typedefs such as ``size_t`` as ``primitive_type`` too; a keyword is never an identifier token.
KEYWORDS = frozenset(
    {"alignas", "alignof", "auto", "bool", "break", "case", "char", "const", "constexpr", "continue", "default",
     "do", "double", "else", "enum", "extern", "false", "float", "for", "goto", "if", "inline", "int", "long",
     "nullptr", "register", "restrict", "return", "short", "signed", "sizeof", "static", "static_assert", "struct",
     "switch", "thread_local", "true", "typedef", "typeof", "typeof_unqual", "union", "unsigned", "void",
     "volatile", "while", "_Alignas", "_Alignof", "_Atomic", "_BitInt", "_Bool", "_Complex", "_Decimal128",
     "_Decimal32", "_Decimal64", "_Generic", "_Imaginary", "_Noreturn", "_Static_assert", "_Thread_local"}
)


class CLanguage(LanguagePlugin):
    """C (C89 through C23, as far as ``tree-sitter-c`` parses it, GNU extensions included).

    Tokens are identifier and literal tokens in the sense of Allamanis 2019, Sec. 3, with the
    token classes of the C standard (C23 6.4.2 identifiers, 6.4.4 constants, 6.4.5 string
    literals): names of variables, functions, types, struct fields and labels, typedef names
    such as ``size_t`` (and ``wchar_t``, ``char16_t``, ``char32_t``: typedefs of the C library,
    keywords only in C++), and number, character and string literals (adjacent string literals
    stay separate tokens) and ``#include <...>`` header names. ``NULL`` is a macro, so an
    identifier token; the keywords ``true``, ``false`` and ``nullptr`` (C23) are dropped like
    every keyword, as in the C++ plugin. The text of ``#define`` bodies is not parsed by the
    grammar and yields no tokens.

    Only ``.c`` files are claimed: the C++ plugin reads ``.h`` headers (its grammar extends
    this one), so a tree of C sources and headers is read by the two plugins together.
    """

    name = "c"
    aliases = ("c99", "c11", "c17", "c23")
    extensions = (".c",)
    grammar_distribution = "tree-sitter-c"
    identifier_node_types = frozenset(
        {"identifier", "field_identifier", "type_identifier", "statement_identifier", "primitive_type", "null"}
    )
    literal_node_types = frozenset({"number_literal", "char_literal", "string_literal", "system_lib_string"})
    skip_node_types = frozenset({"comment"})
    subcode_node_types = {
        SubCodeKind.FOR: frozenset({"for_statement"}),
        SubCodeKind.WHILE: frozenset({"while_statement", "do_statement"}),
        # ``int x = 1;`` is a declaration: C's binding form of Python's ``x = 1``
        SubCodeKind.ASSIGN: frozenset({"assignment_expression", "declaration"}),
        SubCodeKind.IF: frozenset({"if_statement"}),
        # C has no classes; a struct or union with its fields is the closest unit
        SubCodeKind.CLASS_DEF: frozenset({"struct_specifier", "union_specifier"}),
        SubCodeKind.FUNCTION_DEF: frozenset({"function_definition"}),
        SubCodeKind.SWITCH: frozenset({"switch_statement"}),
        SubCodeKind.CALL: frozenset({"call_expression"}),
    }
    # a declarator defines its name (``int *p``, ``int a[n]``: ``p`` and ``a``; the array size is read)
    definition_fields = {
        "declaration": ("declarator",),
        "init_declarator": ("declarator",),
        "assignment_expression": ("left",),
        "parameter_declaration": ("declarator",),
        "field_declaration": ("declarator",),
        "function_definition": ("declarator",),
        "type_definition": ("declarator",),
        "enumerator": ("name",),
    }
    # what fields cannot say (C23 6.5.2.4, 6.5.3.1 increments, 6.5.16.2 compound assignment): ``i++``,
    # ``--i`` and ``total += x`` read their operand and rebind it; ``struct point`` without a body
    # names the type, it defines nothing; the ``.x`` of a designated initializer is a member name
    name_query = """
    (update_expression argument: (_) @update)
    (assignment_expression
      left: (_) @update
      operator: ["+=" "-=" "*=" "/=" "%=" "&=" "|=" "^=" "<<=" ">>="])
    (struct_specifier name: (_) @definition body: (_))
    (union_specifier name: (_) @definition body: (_))
    (field_designator (field_identifier) @not_a_name)
    """
    # a label (``done:``, ``goto done``) names no variable
    non_name_fields = LanguagePlugin.non_name_fields | {"label"}

    def language_capsule(self) -> Any:
        """Return ``tree_sitter_c.language()``."""
        import tree_sitter_c

        return tree_sitter_c.language()

    def iter_token_nodes(self, root: Any) -> Iterator[Any]:
        """Yield identifier and literal nodes in source order, leaving out the keywords the
        grammar gives named nodes (:data:`KEYWORDS`: ``int`` and ``_Bool`` but not ``size_t``;
        ``nullptr`` but not the macro ``NULL``)."""
        literals = self.literal_node_types
        for node in super().iter_token_nodes(root):
            if node.type not in literals and node.text.decode("utf-8", "replace") in KEYWORDS:
                continue
            yield node


@hookimpl
def workbench_languages() -> list[LanguagePlugin]:
    """Provide the C plugin."""
    return [CLanguage()]
