"""The built-in Python language plugin (grammar: ``tree-sitter-python``).

It registers through the same hook as third-party plugins
(:data:`workbench.languages.registry.DEFAULT_PLUGINS`).
"""

from __future__ import annotations

from typing import Any

from workbench.languages.python_runner import PythonTestRunner
from workbench.languages.spec import LanguagePlugin, SubCodeKind, hookimpl


class PythonLanguage(LanguagePlugin):
    """Python 3: tokens, DSA-CQE decomposition and (via :mod:`workbench.execute`) execution.

    Tokens follow Python's own ``tokenize`` view used by the Allamanis 2019 dedup
    definition: NAME tokens that are not keywords, and whole STRING / NUMBER literals
    (an f-string is one literal; implicitly concatenated strings are several).
    """

    name = "python"
    aliases = ("py", "python3")
    extensions = (".py", ".pyi")
    grammar_distribution = "tree-sitter-python"
    # soft keywords used as names (``match = 1``, ``type = x``) parse as plain ``identifier``
    # in tree-sitter-python >= 0.23 (the conformance kit checks every type exists)
    identifier_node_types = frozenset({"identifier"})
    literal_node_types = frozenset({"string", "integer", "float"})
    # non-keyword names the grammar has as anonymous tokens; ``tokenize`` reports them as NAME
    anonymous_identifier_node_types = frozenset({"match", "case", "_", "type", "__future__", "print", "exec"})
    skip_node_types = frozenset({"comment"})
    subcode_node_types = {
        SubCodeKind.FOR: frozenset({"for_statement"}),
        SubCodeKind.WHILE: frozenset({"while_statement"}),
        SubCodeKind.ASSIGN: frozenset({"assignment", "augmented_assignment"}),
        SubCodeKind.IF: frozenset({"if_statement"}),
        SubCodeKind.CLASS_DEF: frozenset({"class_definition"}),
        SubCodeKind.FUNCTION_DEF: frozenset({"function_definition"}),
        SubCodeKind.SWITCH: frozenset({"match_statement"}),
        SubCodeKind.CALL: frozenset({"call"}),
    }
    definition_fields = {
        "assignment": ("left",),
        "augmented_assignment": ("left",),
        "for_statement": ("left",),
        "function_definition": ("name", "parameters"),
        "class_definition": ("name",),
    }
    runner = PythonTestRunner()

    def language_capsule(self) -> Any:
        import tree_sitter_python

        return tree_sitter_python.language()


@hookimpl
def workbench_languages() -> list[LanguagePlugin]:
    """Provide the Python plugin."""
    return [PythonLanguage()]
