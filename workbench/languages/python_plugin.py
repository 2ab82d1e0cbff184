"""The built-in Python language plugin (grammar: ``tree-sitter-python``).

It registers through the same hook as third-party plugins
(:data:`workbench.languages.registry.DEFAULT_PLUGINS`).
"""

from __future__ import annotations

import io
import tokenize
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
        # PEP 695 ``type X = ...`` binds a name like an assignment
        SubCodeKind.ASSIGN: frozenset({"assignment", "augmented_assignment", "type_alias_statement"}),
        SubCodeKind.IF: frozenset({"if_statement"}),
        SubCodeKind.CLASS_DEF: frozenset({"class_definition"}),
        SubCodeKind.FUNCTION_DEF: frozenset({"function_definition"}),
        SubCodeKind.SWITCH: frozenset({"match_statement"}),
        SubCodeKind.CALL: frozenset({"call"}),
    }
    definition_fields = {
        "assignment": ("left",),
        "for_statement": ("left",),
        "function_definition": ("name", "parameters"),
        "class_definition": ("name",),
    }
    # bindings a field cannot express (checked against ``ast``/``symtable``: benchmarks/decomposition_names.py);
    # ``x += 1`` reads ``x`` before it rebinds it (``@update``); ``global x`` declares, it reads nothing
    name_query = """
    (augmented_assignment left: (_) @update)
    (global_statement (identifier) @not_a_name)
    (nonlocal_statement (identifier) @not_a_name)
    (for_in_clause left: (_) @definition)
    (named_expression name: (_) @definition)
    (lambda parameters: (_) @definition)
    (as_pattern alias: (_) @definition)
    (delete_statement (_) @definition)
    (type_alias_statement left: (_) @definition)
    (function_definition type_parameters: (_) @definition)
    (class_definition type_parameters: (_) @definition)
    (import_statement name: (dotted_name . (identifier) @definition))
    (import_from_statement name: (dotted_name . (identifier) @definition))
    (aliased_import alias: (_) @definition)
    (aliased_import name: (_) @not_a_name)
    (import_from_statement module_name: (_) @not_a_name)
    (dotted_name (identifier) "." (identifier) @not_a_name)
    (keyword_argument name: (_) @not_a_name)
    (case_pattern (dotted_name . (identifier) @definition .))
    (keyword_pattern (dotted_name . (identifier) @definition .))
    (keyword_pattern . (identifier) @not_a_name)
    (splat_pattern (identifier) @definition)
    (case_pattern (as_pattern (identifier) @definition))
    """
    # names in an f-string's ``{...}`` (and nested format specs) are read
    embedded_code_node_types = frozenset({"interpolation"})
    # annotations are evaluated (read) at run time; only member names are not free names
    non_name_fields = frozenset({"attribute"})
    runner = PythonTestRunner()

    def language_capsule(self) -> Any:
        import tree_sitter_python

        return tree_sitter_python.language()

    def decode_source(self, data: bytes) -> str:
        """Decode a ``.py`` file as the interpreter does: a byte-order mark or a PEP 263 coding
        cookie on line 1 or 2 (``# -*- coding: latin-1 -*-``) names the encoding, else UTF-8
        (``tokenize.detect_encoding``). A BOM is dropped from the text.

        Raises:
            UnicodeDecodeError: the bytes are not in the declared (or default) encoding.
            ValueError: the cookie names an unknown encoding, or contradicts the BOM.
        """
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as error:  # how tokenize reports a cookie it cannot use, or lines 1-2 not UTF-8
            if "encoding declaration" in error.msg:  # no cookie and not UTF-8: the decoder says where
                return data.decode("utf-8")
            if error.msg.startswith("encoding problem"):
                raise ValueError("its coding cookie contradicts its UTF-8 byte-order mark") from None
            raise ValueError(f"coding cookie: {error.msg}") from None
        return data.decode(encoding)


@hookimpl
def workbench_languages() -> list[LanguagePlugin]:
    """Provide the Python plugin."""
    return [PythonLanguage()]
