"""Conformance kit for language plugins: plugin authors import it in their own tests.

It checks a :class:`~workbench.languages.spec.LanguagePlugin` against the contract in
:mod:`workbench.languages.spec`, on sample code the author provides, the way pytest's
``pytester`` lets plugin authors test against pytest itself. Two ways to use it:

* subclass :class:`LanguagePluginConformance` in a test module (one pytest test per
  check)::

      from workbench.languages.conformance import LanguagePluginConformance, RunnerCase

      class TestGoConformance(LanguagePluginConformance):
          plugin = GoLanguage()
          samples = [GO_SAMPLE_WITH_ALL_EIGHT_CONSTRUCTS]
          expected_tokens = {0: ["main", "fmt", "Println", '"hi"', ...]}
          runner_cases = [RunnerCase(program=..., tests=..., expect_pass=True), ...]

* or call :func:`check_plugin` and look at the :class:`ConformanceReport`
  (``report.raise_if_failed()`` raises :class:`PluginConformanceError`).

The checks (each a function ``check_<name>(plugin, ...) -> list[str]`` of problems):

``identity``
    name, aliases and extensions are well-formed; the grammar distribution is installed.
``registration``
    the plugin is discoverable through the ``workbench.languages`` entry points and no
    other installed plugin claims its name, aliases or extensions.
``grammar``
    the tree-sitter ``Language`` loads, its ABI is one this tree-sitter can read, and
    every sample parses without syntax errors (so the samples test what they mean to).
    A grammar that does not load, or that is another language's (``language_capsule()``
    returns the wrong grammar: at least half the plugin's node types missing), is one
    sentence in each check that needs the grammar, through ``definition_fields``.
``node_types``
    every node type the plugin names exists in the grammar as a visible named node
    (``Language.id_for_node_kind``), every field name exists, and the type sets do not
    overlap.
``tokens``
    on every sample the tokens are non-empty, and are identifier / literal node texts
    of the sample, in source order, outside comments; optional exact expectations.
``robustness``
    empty, blank, truncated, garbled, invalid-UTF-8 and deeply nested inputs give a
    token list (``[]`` for empty input) and never raise.
``decomposition``
    the map's keys are :class:`SubCodeKind` members, all eight are present (an empty set
    says the language lacks the construct), values are sets of node-type strings with no
    type in two kinds, and every non-empty kind is found in the samples.
``definition_fields``
    field names are tuples of grammar fields, and on the samples each field is present
    on the node type and holds at least one identifier.
``runner``
    (plugins with a runner) toolchain listed, ``build_program`` modes, ``prepare``
    returns a well-formed :class:`RunSpec` that carries the per-run token (not a fixed
    one) and does not pre-create the token file; each :class:`RunnerCase` is then built
    and run in the sandbox of ``workbench execute`` (at its strongest isolation, or at
    its ``unsandboxed`` level for trusted cases) and must pass or fail as expected, or
    end with its ``expect_status``. Skipped, not failed, when the toolchain is missing.

:func:`run_spec` runs one :class:`~workbench.languages.spec.RunSpec` the same way, for a
plugin's own tests; its status is the one ``workbench execute`` would record.
:func:`one_subcode` finds the one DSA-CQE sub-code of a program of a given kind and first
characters, for a plugin's own tests of the names each sub-code defines and reads;
:func:`subcode_kind_counts` counts the sub-code kinds the plugin's map finds in a corpus.
:func:`languages_row` is the plugin's row of ``workbench languages --json``, and
:func:`dedup_clusters` the clusters ``workbench dedup`` finds in a folder of the plugin's files.

Modules: :mod:`~.checks` (the checks that need no toolchain), :mod:`~.runner_check` (the runner
check and :func:`run_spec`), :mod:`~.kit` (:func:`check_plugin` and its report),
:mod:`~.pytest_base` (:class:`LanguagePluginConformance`), :mod:`~.subcodes` (:func:`one_subcode`),
:mod:`~.commands` (:func:`languages_row`, :func:`dedup_clusters`).
"""

from workbench.languages.conformance.checks import (
    check_decomposition,
    check_definition_fields,
    check_grammar,
    check_identity,
    check_node_types,
    check_registration,
    check_robustness,
    check_tokens,
    subcode_kind_counts,
)
from workbench.languages.conformance.commands import dedup_clusters, languages_row
from workbench.languages.conformance.pytest_base import LanguagePluginConformance
from workbench.languages.conformance.kit import CHECKS, ConformanceReport, PluginConformanceError, check_plugin
from workbench.languages.conformance.runner_check import EXECUTORS, RunnerCase, check_runner, run_spec
from workbench.languages.conformance.subcodes import one_subcode

__all__ = [
    "CHECKS",
    "EXECUTORS",
    "ConformanceReport",
    "LanguagePluginConformance",
    "PluginConformanceError",
    "RunnerCase",
    "check_decomposition",
    "check_definition_fields",
    "check_grammar",
    "check_identity",
    "check_node_types",
    "check_plugin",
    "check_registration",
    "check_robustness",
    "check_runner",
    "check_tokens",
    "dedup_clusters",
    "languages_row",
    "one_subcode",
    "run_spec",
    "subcode_kind_counts",
]
