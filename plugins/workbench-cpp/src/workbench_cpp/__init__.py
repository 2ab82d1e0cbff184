"""C++ language plugin for workbench (grammar: ``tree-sitter-cpp``).

Provides dedup tokens, the DSA-CQE decomposition map and a MultiPL-E-style test runner
(``g++``). Registered through the ``workbench.languages`` entry point (see this
package's ``pyproject.toml``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workbench.languages.spec import LanguagePlugin, SubCodeKind, hookimpl

from workbench_cpp.runner import CppRunner

__all__ = ["KEYWORDS", "CppLanguage", "CppRunner", "workbench_languages"]

#: spellings of ``primitive_type`` that are keywords (C++17 [lex.key]); tree-sitter-cpp
#: also parses library typedefs such as ``size_t`` or ``int64_t`` as ``primitive_type``,
#: and those are identifiers.
FUNDAMENTAL_TYPE_KEYWORDS = frozenset(
    {"bool", "char", "char8_t", "char16_t", "char32_t", "wchar_t", "short", "int", "long",
     "signed", "unsigned", "float", "double", "void", "auto"}
)

#: every keyword of C++20 ([lex.key], Table 5) and the alternative representations of operators
#: (Table 6). tree-sitter-cpp gives some of them identifier-like named nodes: ``wchar_t`` is a
#: ``type_identifier``, ``static_cast`` and ``typeid`` are ``identifier`` s. A keyword is never an
#: identifier token (Allamanis 2019, Sec. 3). ``final``, ``override``, ``import`` and ``module``
#: are identifiers with special meaning ([lex.name], Table 4), not keywords: they stay tokens.
KEYWORDS = FUNDAMENTAL_TYPE_KEYWORDS | frozenset(
    {"alignas", "alignof", "asm", "break", "case", "catch", "class", "co_await", "co_return", "co_yield",
     "concept", "const", "const_cast", "consteval", "constexpr", "constinit", "continue", "decltype", "default",
     "delete", "do", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "for", "friend",
     "goto", "if", "inline", "mutable", "namespace", "new", "noexcept", "nullptr", "operator", "private",
     "protected", "public", "register", "reinterpret_cast", "requires", "return", "sizeof", "static",
     "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true", "try",
     "typedef", "typeid", "typename", "union", "using", "virtual", "volatile", "while",
     "and", "and_eq", "bitand", "bitor", "compl", "not", "not_eq", "or", "or_eq", "xor", "xor_eq"}
)


class CppLanguage(LanguagePlugin):
    """C++ (through C++20, as far as ``tree-sitter-cpp`` parses it).

    Tokens are identifier and literal tokens in the sense of Allamanis 2019, Sec. 3, with
    the token classes of the C++ standard ([lex.name] identifiers, [lex.literal]
    literals): names of variables, functions, types, namespaces, fields and labels, and
    number, character, string and raw-string literals (a user-defined literal such as
    ``"ab"s`` is one token; adjacent string literals stay separate tokens). Keyword
    literals ``true``, ``false``, ``nullptr`` are dropped like all keywords, as in the
    Java and Python plugins, and so is every other keyword the grammar gives a name-like
    node (``wchar_t``, ``static_cast``, ``typeid``: :data:`KEYWORDS`). Header names in
    ``#include <...>`` count as literals.
    Text of macro bodies (``#define``) is not parsed by the grammar and yields no tokens.
    """

    name = "cpp"
    aliases = ("c++", "cxx", "cplusplus")
    # ``.h`` too: most C++ projects name their headers so. A C header parses as well (tree-sitter-cpp
    # extends tree-sitter-c's grammar); a C plugin claiming ``.h`` would make it ambiguous (``--language``).
    extensions = (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".h")
    grammar_distribution = "tree-sitter-cpp"
    identifier_node_types = frozenset(
        {"identifier", "field_identifier", "type_identifier", "namespace_identifier", "statement_identifier",
         "primitive_type"}
    )
    literal_node_types = frozenset(
        {"number_literal", "char_literal", "string_literal", "raw_string_literal", "user_defined_literal",
         "system_lib_string"}
    )
    skip_node_types = frozenset({"comment"})
    subcode_node_types = {
        SubCodeKind.FOR: frozenset({"for_statement", "for_range_loop"}),
        SubCodeKind.WHILE: frozenset({"while_statement", "do_statement"}),
        # ``int x = 1;`` is a declaration; it is C++'s binding form of Python's ``x = 1``
        SubCodeKind.ASSIGN: frozenset({"assignment_expression", "declaration"}),
        SubCodeKind.IF: frozenset({"if_statement"}),
        SubCodeKind.CLASS_DEF: frozenset({"class_specifier", "struct_specifier"}),
        SubCodeKind.FUNCTION_DEF: frozenset({"function_definition"}),
        SubCodeKind.SWITCH: frozenset({"switch_statement"}),
        SubCodeKind.CALL: frozenset({"call_expression"}),
    }
    # a declarator defines its name (``int *p``, ``int &r = i``, ``int a[n]``, ``auto [k, v] = kv``: the
    # array size is read), a range-for its variables, a class its fields and member functions
    definition_fields = {
        "declaration": ("declarator",),
        "init_declarator": ("declarator",),
        "assignment_expression": ("left",),
        "for_range_loop": ("declarator",),
        "parameter_declaration": ("declarator",),
        "optional_parameter_declaration": ("declarator",),
        "field_declaration": ("declarator",),
        "function_definition": ("declarator",),
        "type_definition": ("declarator",),
        "enumerator": ("name",),
    }
    # what fields cannot say ([expr.post.incr], [expr.pre.incr], [expr.ass]): ``i++``, ``--i`` and
    # ``total += x`` read their operand and rebind it; a constructor's ``: value(start)`` initializes
    # the member ``value``; ``class C;`` without a body names the class, it defines nothing; in
    # ``int C::get()`` the class is the scope of the name defined; ``.x`` in ``{.x = 1}`` is a member
    name_query = """
    (update_expression argument: (_) @update)
    (assignment_expression
      left: (_) @update
      operator: ["+=" "-=" "*=" "/=" "%=" "&=" "|=" "^=" "<<=" ">>=" "and_eq" "or_eq" "xor_eq"])
    (field_initializer (field_identifier) @definition)
    (class_specifier name: (_) @definition body: (_))
    (struct_specifier name: (_) @definition body: (_))
    (union_specifier name: (_) @definition body: (_))
    (function_declarator declarator: (qualified_identifier scope: (_) @not_a_name))
    (field_designator (field_identifier) @not_a_name)
    """
    # a label (``done:``, ``goto done``) names no variable
    non_name_fields = LanguagePlugin.non_name_fields | {"label"}

    def __init__(self, runner: CppRunner | None = None):
        self.runner = runner if runner is not None else CppRunner()

    def language_capsule(self) -> Any:
        """Return ``tree_sitter_cpp.language()``."""
        import tree_sitter_cpp

        return tree_sitter_cpp.language()

    def iter_token_nodes(self, root: Any) -> Iterator[Any]:
        """Yield identifier and literal nodes in source order, leaving out the keywords the
        grammar gives name-like nodes (:data:`KEYWORDS`): ``primitive_type`` nodes only when
        they spell a typedef name (``size_t``), not a keyword (``int``); never ``wchar_t``
        (a ``type_identifier``) or ``static_cast`` (an ``identifier``)."""
        literals = self.literal_node_types
        for node in super().iter_token_nodes(root):
            if node.type not in literals and node.text.decode("utf-8", "replace") in KEYWORDS:
                continue
            yield node


@hookimpl
def workbench_languages() -> list[LanguagePlugin]:
    """Provide the C++ plugin."""
    return [CppLanguage()]
