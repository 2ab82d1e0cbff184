"""Java language plugin for workbench (grammar: ``tree-sitter-java``).

Provides dedup tokens, the DSA-CQE decomposition map and a MultiPL-E-style test runner
(``javac`` + ``java -ea``). Registered through the ``workbench.languages`` entry point
(see this package's ``pyproject.toml``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from workbench.languages.spec import LanguagePlugin, SubCodeKind, hookimpl

from workbench_java.runner import JavaRunner

__all__ = ["JavaLanguage", "JavaRunner", "workbench_languages"]


class JavaLanguage(LanguagePlugin):
    """Java (up to 21, as far as ``tree-sitter-java`` parses it).

    Tokens are identifier and literal tokens in the sense of Allamanis 2019, Sec. 3, with
    the token classes of the Java Language Specification (JLS 17, Sec. 3.8 identifiers,
    Sec. 3.10 literals), except that the keyword-spelled literals ``true``, ``false`` and
    ``null`` are dropped like every other keyword (the same choice as the Python plugin,
    which drops ``True``/``None``, and as Allamanis' Roslyn-based C# tokenizer). Type names
    (``String``, ``ArrayList``) are identifiers; primitive types (``int``) are keywords.
    A string or text block is one token including its quotes. ``var`` as the type of a
    local variable, lambda parameter or resource is the reserved type name (JLS 17, Sec. 3.9
    and 14.4: no type may be named ``var``), a keyword there, and dropped; a variable named
    ``var`` is an identifier and kept. The grammar gives the other contextual keywords
    (``record``, ``yield``, ``sealed``, ``permits``, ``when``, the module keywords) no
    identifier node.
    """

    name = "java"
    extensions = (".java",)
    grammar_distribution = "tree-sitter-java"
    identifier_node_types = frozenset({"identifier", "type_identifier"})
    literal_node_types = frozenset(
        {
            "decimal_integer_literal",
            "hex_integer_literal",
            "octal_integer_literal",
            "binary_integer_literal",
            "decimal_floating_point_literal",
            "hex_floating_point_literal",
            "character_literal",
            "string_literal",
        }
    )
    skip_node_types = frozenset({"line_comment", "block_comment"})
    subcode_node_types = {
        SubCodeKind.FOR: frozenset({"for_statement", "enhanced_for_statement"}),
        SubCodeKind.WHILE: frozenset({"while_statement", "do_statement"}),
        # a declaration with initialiser is Java's binding form of Python's ``x = ...``
        SubCodeKind.ASSIGN: frozenset({"assignment_expression", "local_variable_declaration", "field_declaration"}),
        SubCodeKind.IF: frozenset({"if_statement"}),
        SubCodeKind.CLASS_DEF: frozenset(
            {"class_declaration", "interface_declaration", "enum_declaration", "record_declaration"}
        ),
        SubCodeKind.FUNCTION_DEF: frozenset(
            {"method_declaration", "constructor_declaration", "compact_constructor_declaration"}
        ),
        # tree-sitter-java parses both the switch statement and the switch expression as switch_expression
        SubCodeKind.SWITCH: frozenset({"switch_expression"}),
        SubCodeKind.CALL: frozenset(
            {"method_invocation", "object_creation_expression", "explicit_constructor_invocation"}
        ),
    }
    definition_fields = {
        "variable_declarator": ("name",),
        "assignment_expression": ("left",),
        "enhanced_for_statement": ("name",),
        "formal_parameter": ("name",),
        "catch_formal_parameter": ("name",),
        # ``try (Scanner in = ...)``, ``x -> ...`` and ``(a, b) -> ...``, ``o instanceof String s``
        "resource": ("name",),
        "lambda_expression": ("parameters",),
        "instanceof_expression": ("name",),
        "method_declaration": ("name",),
        "constructor_declaration": ("name",),
        "class_declaration": ("name",),
        "interface_declaration": ("name",),
        "enum_declaration": ("name",),
        "enum_constant": ("name",),
        "record_declaration": ("name",),
    }
    # what fields cannot say (JLS 17: 15.14-15.15 increments, 15.26.2 compound assignment,
    # 14.30 patterns): ``i++``, ``--i`` and ``total += x`` read their operand and rebind it; a
    # pattern binds its variable and names its type (a type, like a declaration's, is no name);
    # a method's name after ``obj.`` or ``::`` and a label name no variable
    name_query = """
    (update_expression (_) @update)
    (assignment_expression
      left: (_) @update
      operator: ["+=" "-=" "*=" "/=" "%=" "&=" "|=" "^=" "<<=" ">>=" ">>>="])
    (instanceof_expression right: (_) @not_a_name)
    (type_pattern . (_) @not_a_name . (identifier))
    (type_pattern (identifier) @definition .)
    (record_pattern . (_) @not_a_name)
    (record_pattern_component . (_) @not_a_name . (identifier))
    (record_pattern_component (identifier) @definition .)
    (method_invocation object: (_) name: (identifier) @not_a_name)
    (method_reference "::" (identifier) @not_a_name)
    (labeled_statement (identifier) @not_a_name)
    (break_statement (identifier) @not_a_name)
    (continue_statement (identifier) @not_a_name)
    """

    def __init__(self, runner: JavaRunner | None = None):
        self.runner = runner if runner is not None else JavaRunner()

    def language_capsule(self) -> Any:
        """Return ``tree_sitter_java.language()``."""
        import tree_sitter_java

        return tree_sitter_java.language()

    def iter_token_nodes(self, root: Any) -> Iterator[Any]:
        """Yield identifier and literal nodes in source order, leaving out ``var`` where the
        grammar parses it as a type (a ``type_identifier``): the reserved type name, a keyword."""
        for node in super().iter_token_nodes(root):
            if node.type == "type_identifier" and node.text == b"var":
                continue
            yield node


@hookimpl
def workbench_languages() -> list[LanguagePlugin]:
    """Provide the Java plugin."""
    return [JavaLanguage()]
