"""Conformance kit for language plugins: plugin authors import it in their own tests.

It checks a :class:`~workbench.languages.spec.LanguagePlugin` against the contract in
:mod:`workbench.languages.spec`, on sample code the author provides, the way pytest's
``pytester`` lets plugin authors test against pytest itself. Two ways to use it:

* subclass :class:`LanguagePluginConformance` in a test module (one pytest test per
  check)::

      from workbench.languages.testing import LanguagePluginConformance, RunnerCase

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
    and run in the real sandbox of ``workbench execute`` (or, without it,
    :func:`run_spec_unsandboxed`) and must pass or fail as expected. Skipped, not
    failed, when the toolchain is missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.metadata
import os
import secrets
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from workbench.languages.spec import SAMPLE_STATUSES, LanguagePlugin, RunSpec, SubCodeKind, TestRunner

__all__ = [
    "CHECKS",
    "ConformanceReport",
    "LanguagePluginConformance",
    "PluginConformanceError",
    "RunnerCase",
    "UnsandboxedResult",
    "check_plugin",
    "run_spec_unsandboxed",
]

#: inputs every plugin must survive (``robustness`` check), besides mangled samples
_HOSTILE_INPUTS: tuple[str | bytes, ...] = (
    "",
    " \n\t\n",
    "\x00\x01\x02",
    b"\xff\xfe\xfa\x80 not utf-8 \xc3\x28",
    "@@@ )( }{ ;; ``` \"unterminated",
    "(" * 3000 + ")" * 3000,
    "{" * 3000,
)


class PluginConformanceError(AssertionError):
    """A plugin failed one or more conformance checks; the message lists every problem."""


@dataclass(frozen=True)
class RunnerCase:
    """One program the plugin's runner must judge correctly.

    Attributes:
        program: the candidate program (already prompt + completion).
        tests: the test code in the problem set's layout (e.g. a MultiPL-E harness).
        expect_pass: whether the program passes the tests.
        entry_point: passed through to :meth:`TestRunner.prepare`.
        description: shown in failure messages (``"exit(0) before asserts"``).
    """

    program: str
    tests: str
    expect_pass: bool
    entry_point: str | None = None
    description: str = ""


@dataclass
class ConformanceReport:
    """The outcome of :func:`check_plugin`.

    Attributes:
        plugin: the plugin's name.
        problems: check name -> problems found (an empty list: the check passed).
        skipped: check name -> why it was skipped (e.g. a missing toolchain).
    """

    plugin: str
    problems: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no check found a problem."""
        return not any(self.problems.values())

    def failed_checks(self) -> list[str]:
        """Return the names of the checks that found problems."""
        return [name for name, found in self.problems.items() if found]

    def __str__(self) -> str:
        lines = [f"conformance of language plugin {self.plugin!r}:"]
        for name, found in self.problems.items():
            lines.append(f"  {name}: {'ok' if not found else 'FAILED'}")
            lines.extend(f"    - {problem}" for problem in found)
        for name, reason in self.skipped.items():
            lines.append(f"  {name}: skipped ({reason})")
        return "\n".join(lines)

    def raise_if_failed(self) -> None:
        """Raise :class:`PluginConformanceError` listing every problem, if any check failed."""
        if not self.ok:
            raise PluginConformanceError(str(self))


# -- helpers ---------------------------------------------------------------------------------


def _walk(root: Any, skip: frozenset[str] = frozenset()) -> list[Any]:
    """All nodes of a tree in pre-order (iterative), not entering node types in ``skip``."""
    nodes, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type in skip:
            continue
        nodes.append(node)
        stack.extend(reversed(node.children))
    return nodes


def _first_error(root: Any) -> str | None:
    for node in _walk(root):
        if node.type == "ERROR" or node.is_missing:
            row, column = node.start_point
            what = f"missing {node.type!r}" if node.is_missing else "syntax error"
            return f"{what} at line {row + 1}, column {column + 1}"
    return "syntax error" if root.has_error else None


def _as_set(value: Any) -> bool:
    return isinstance(value, (set, frozenset))


def _named_kind_exists(language: Any, node_type: str) -> bool:
    kind_id = language.id_for_node_kind(node_type, True)
    return kind_id is not None and language.node_kind_is_visible(kind_id)


def _preview(text: str | bytes, limit: int = 40) -> str:
    shown = repr(text[:limit])
    return shown + ("..." if len(text) > limit else "")


# -- the checks ------------------------------------------------------------------------------


def check_identity(plugin: LanguagePlugin) -> list[str]:
    """Check name, aliases, extensions, grammar distribution and capabilities."""
    problems = []
    name = plugin.name
    if not isinstance(name, str) or not name or name != name.lower() or any(ch.isspace() for ch in name):
        problems.append(f"name must be a non-empty lower-case word, got {name!r}")
    for attribute in ("aliases", "extensions"):
        value = getattr(plugin, attribute)
        if isinstance(value, str) or not isinstance(value, (tuple, list)):
            problems.append(f"{attribute} must be a tuple of strings, got {value!r}")
            continue
        if len(set(value)) != len(value):
            problems.append(f"{attribute} has duplicates: {value!r}")
        for item in value:
            if not isinstance(item, str) or not item or item != item.lower():
                problems.append(f"{attribute} entries must be non-empty lower-case strings, got {item!r}")
    for alias in plugin.aliases if isinstance(plugin.aliases, (tuple, list)) else ():
        if alias == name:
            problems.append(f"alias {alias!r} repeats the name")
        if isinstance(alias, str) and alias.startswith("."):
            problems.append(f"alias {alias!r} looks like a file extension; put it in extensions")
    extensions = plugin.extensions if isinstance(plugin.extensions, (tuple, list)) else ()
    if not extensions:
        problems.append("extensions is empty: folder loaders could never pick this language")
    for extension in extensions:
        if isinstance(extension, str) and (not extension.startswith(".") or len(extension) < 2):
            problems.append(f"extension {extension!r} must start with a dot, e.g. '.go'")
    if not plugin.grammar_distribution:
        problems.append("grammar_distribution is empty (the PyPI name of the tree-sitter grammar wheel)")
    else:
        try:
            importlib.metadata.version(plugin.grammar_distribution)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"grammar distribution {plugin.grammar_distribution!r} is not installed")
    capabilities = plugin.capabilities()
    if "tokens" not in capabilities:
        problems.append("no identifier_node_types / literal_node_types: the plugin cannot give dedup tokens")
    if plugin.runner is not None and not isinstance(plugin.runner, TestRunner):
        problems.append(f"runner must be a TestRunner instance, got {type(plugin.runner).__name__}")
    return problems


def check_registration(plugin: LanguagePlugin) -> list[str]:
    """Check that the installed entry points yield this plugin and nothing else claims its names."""
    from workbench.languages.registry import installed_plugins

    try:
        infos = installed_plugins()
    except ValueError as error:  # two plugins provide the same name
        return [str(error)]
    problems = []
    mine = [info for info in infos if type(info.plugin) is type(plugin)]
    if not mine:
        problems.append(
            f"{type(plugin).__name__} is not provided by any installed plugin: check the "
            f"[project.entry-points.\"workbench.languages\"] table and reinstall the package"
        )
    keys = {plugin.name, *plugin.aliases, *plugin.extensions}
    for info in infos:
        if type(info.plugin) is type(plugin):
            continue
        other = info.plugin
        clash = keys & {other.name, *other.aliases, *other.extensions}
        if clash:
            problems.append(f"{sorted(clash)} also claimed by plugin {other.name!r} ({info.distribution})")
    return problems


def check_grammar(plugin: LanguagePlugin, samples: Sequence[str]) -> list[str]:
    """Check that the grammar loads with a readable ABI and that every sample parses cleanly."""
    import tree_sitter

    try:
        language = plugin.load_language()
    except Exception as error:  # noqa: BLE001 - any failure to load is the finding
        return [f"load_language() raised {type(error).__name__}: {error}"]
    if not isinstance(language, tree_sitter.Language):
        return [f"load_language() must return a tree_sitter.Language, got {type(language).__name__}"]
    problems = []
    abi = language.abi_version
    if not tree_sitter.MIN_COMPATIBLE_LANGUAGE_VERSION <= abi <= tree_sitter.LANGUAGE_VERSION:
        problems.append(
            f"grammar ABI {abi} is outside what tree-sitter {tree_sitter.__name__} reads "
            f"({tree_sitter.MIN_COMPATIBLE_LANGUAGE_VERSION}..{tree_sitter.LANGUAGE_VERSION})"
        )
    if not samples:
        problems.append("no sample code given: pass samples that use the language's main constructs")
    for index, sample in enumerate(samples):
        error = _first_error(plugin.parse(sample).root_node)
        if error:
            problems.append(f"sample {index} does not parse cleanly ({error}); samples must be valid code")
    return problems


def check_node_types(plugin: LanguagePlugin) -> list[str]:
    """Check that every node type and field name the plugin uses exists in its grammar."""
    try:
        language = plugin.load_language()
    except Exception as error:  # noqa: BLE001
        return [f"load_language() raised {type(error).__name__}: {error}"]
    problems = []
    groups: dict[str, Any] = {
        "identifier_node_types": plugin.identifier_node_types,
        "literal_node_types": plugin.literal_node_types,
        "skip_node_types": plugin.skip_node_types,
    }
    for kind, types in dict(plugin.subcode_node_types).items():
        groups[f"subcode_node_types[{getattr(kind, 'value', kind)}]"] = types
    groups["definition_fields"] = frozenset(plugin.definition_fields)
    for group, types in groups.items():
        if not _as_set(types):
            problems.append(f"{group} must be a set of node-type strings, got {type(types).__name__} {types!r}")
            continue
        for node_type in sorted(types, key=str):
            if not isinstance(node_type, str) or not _named_kind_exists(language, node_type):
                problems.append(f"{group}: {node_type!r} is not a visible named node type of the grammar")
    pairs = (("identifier", plugin.identifier_node_types), ("literal", plugin.literal_node_types),
             ("skip", plugin.skip_node_types))
    for i, (name_a, types_a) in enumerate(pairs):
        for name_b, types_b in pairs[i + 1 :]:
            if _as_set(types_a) and _as_set(types_b) and types_a & types_b:
                problems.append(f"{name_a} and {name_b} node types overlap: {sorted(types_a & types_b)}")
    for node_type, fields in dict(plugin.definition_fields).items():
        if isinstance(fields, str) or not isinstance(fields, (tuple, list)):
            problems.append(f"definition_fields[{node_type!r}] must be a tuple of field names, got {fields!r}")
            continue
        for field_name in fields:
            if not isinstance(field_name, str) or language.field_id_for_name(field_name) is None:
                problems.append(f"definition_fields[{node_type!r}]: {field_name!r} is not a field of the grammar")
    return problems


def check_tokens(
    plugin: LanguagePlugin, samples: Sequence[str], expected_tokens: Mapping[int, Sequence[str]] | None = None
) -> list[str]:
    """Check dedup tokens on every sample.

    Tokens must be non-empty, be texts of identifier / literal nodes of the sample that are
    outside comments, come in source order, be the same for ``str`` and UTF-8 ``bytes``
    input, and equal ``expected_tokens[i]`` where given. Across the samples at least one
    identifier and (if the plugin declares literal types) one literal must be found.
    """
    problems = []
    identifier_types = frozenset(plugin.identifier_node_types) | frozenset(plugin.anonymous_identifier_node_types)
    eligible_types = identifier_types | frozenset(plugin.literal_node_types)
    seen_identifier = seen_literal = False
    for index, sample in enumerate(samples):
        try:
            tokens = plugin.tokens(sample)
        except Exception as error:  # noqa: BLE001
            problems.append(f"sample {index}: tokens() raised {type(error).__name__}: {error}")
            continue
        if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
            problems.append(f"sample {index}: tokens() must return a list of str, got {_preview(repr(tokens))}")
            continue
        if not tokens:
            problems.append(f"sample {index}: no tokens at all")
            continue
        if any(not token for token in tokens):
            problems.append(f"sample {index}: empty-string token")
        tree = plugin.parse(sample)
        eligible = [
            (node.text.decode("utf-8", "replace"), node.type)
            for node in _walk(tree.root_node, frozenset(plugin.skip_node_types))
            if node.type in eligible_types
        ]
        # tokens must be a subsequence of the eligible node texts (pre-order = source order)
        position = 0
        for token in tokens:
            while position < len(eligible) and eligible[position][0] != token:
                position += 1
            if position == len(eligible):
                where = "later in" if any(text == token for text, _ in eligible) else "anywhere in"
                problems.append(
                    f"sample {index}: token {token!r} is not an identifier/literal node text {where} the sample "
                    f"(outside comments, in source order); keywords, operators and comment text are not tokens"
                )
                break
            node_type = eligible[position][1]
            seen_identifier |= node_type in identifier_types
            seen_literal |= node_type in plugin.literal_node_types
            position += 1
        if plugin.tokens(sample.encode("utf-8")) != tokens:
            problems.append(f"sample {index}: tokens differ between str and UTF-8 bytes input")
        if expected_tokens and index in expected_tokens and list(expected_tokens[index]) != tokens:
            problems.append(f"sample {index}: tokens {tokens!r} != expected {list(expected_tokens[index])!r}")
    if samples and not seen_identifier:
        problems.append("no identifier token found in any sample")
    if samples and plugin.literal_node_types and not seen_literal:
        problems.append("no literal token found in any sample: add literals to the samples or fix literal_node_types")
    return problems


def check_robustness(plugin: LanguagePlugin, samples: Sequence[str]) -> list[str]:
    """Check that tokens and parsing survive empty, broken, binary and deeply nested input."""
    inputs: list[str | bytes] = list(_HOSTILE_INPUTS)
    for sample in samples[:3]:
        inputs.append(sample[: len(sample) // 2])  # truncated mid-construct
        inputs.append(sample.replace("(", "", 1).replace("{", "}", 1))  # unbalanced
        inputs.append(b"\xff\xfe" + sample.encode("utf-8")[::-1])  # binary garbage
    problems = []
    for text in inputs:
        try:
            tokens = plugin.tokens(text)
            plugin.parse(text)
        except Exception as error:  # noqa: BLE001
            problems.append(f"tokens()/parse() raised {type(error).__name__} on {_preview(text)}: {error}")
            continue
        if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
            problems.append(f"tokens() on {_preview(text)} must return a list of str, got {type(tokens).__name__}")
        elif not (text.strip() if isinstance(text, str) else text.strip()) and tokens:
            problems.append(f"tokens() of blank input {_preview(text)} must be [], got {tokens!r}")
    return problems


def check_decomposition(
    plugin: LanguagePlugin, samples: Sequence[str], expected_kinds: set[SubCodeKind] | None = None
) -> list[str]:
    """Check the DSA-CQE decomposition map (Xu et al., ISWC 2024 posters, Sec. 2).

    Args:
        expected_kinds: the kinds the samples contain; default: every kind whose node-type
            set is non-empty must be found in at least one sample.
    """
    mapping = plugin.subcode_node_types
    if not isinstance(mapping, Mapping):
        return [f"subcode_node_types must be a mapping SubCodeKind -> node types, got {type(mapping).__name__}"]
    problems = []
    for key in mapping:
        if not isinstance(key, SubCodeKind):
            problems.append(f"subcode_node_types key {key!r} is not a SubCodeKind (use SubCodeKind.FOR, not 'For')")
    missing = [kind.value for kind in SubCodeKind if kind not in mapping]
    if missing:
        problems.append(
            f"subcode_node_types lacks {missing}; map every kind, with frozenset() where the language has no such construct"
        )
    owner: dict[str, Any] = {}
    for key, types in mapping.items():
        if not _as_set(types):
            problems.append(f"subcode_node_types[{key!r}] must be a set of node types, got {types!r}")
            continue
        for node_type in types:
            if node_type in owner and owner[node_type] != key:
                problems.append(f"node type {node_type!r} is mapped to both {owner[node_type]} and {key}")
            owner[node_type] = key
    if problems:
        return problems
    found: set[SubCodeKind] = set()
    for sample in samples:
        for node in _walk(plugin.parse(sample).root_node):
            kind = plugin.kind_of(node.type)
            if kind is not None:
                found.add(kind)
    wanted = expected_kinds if expected_kinds is not None else {kind for kind, types in mapping.items() if types}
    for kind in sorted(wanted - found, key=lambda k: k.value):
        problems.append(
            f"no {kind.value} sub-code found in the samples (node types {sorted(mapping.get(kind, ()))}); "
            f"add a sample with one, or fix the node types"
        )
    return problems


def check_definition_fields(plugin: LanguagePlugin, samples: Sequence[str]) -> list[str]:
    """Check that each definition field occurs on its node type in the samples and holds an identifier."""
    fields_by_type = dict(plugin.definition_fields)
    if not fields_by_type:
        return []
    identifiers = frozenset(plugin.identifier_node_types)
    seen: dict[tuple[str, str], list[bool]] = {}
    for sample in samples:
        for node in _walk(plugin.parse(sample).root_node):
            for field_name in fields_by_type.get(node.type, ()):
                child = node.child_by_field_name(field_name)
                has_identifier = child is not None and any(n.type in identifiers for n in _walk(child))
                seen.setdefault((node.type, field_name), []).append(has_identifier)
    problems = []
    if not seen:
        problems.append(f"none of the definition node types {sorted(fields_by_type)} occurs in the samples")
    for (node_type, field_name), flags in sorted(seen.items()):
        if not any(flags):
            problems.append(
                f"field {field_name!r} of {node_type!r} never holds an identifier in the samples "
                f"({len(flags)} occurrence(s)); is it the right field?"
            )
    return problems


def _safe_relative(name: str) -> bool:
    path = PurePosixPath(name)
    return bool(name) and not path.is_absolute() and ".." not in path.parts and "\\" not in name


def _live_executor(executor: str, timeout_s: float) -> tuple[Callable[[Callable[[str], RunSpec]], tuple[str, int | None, str]], str]:
    """Return (run function, executor name). The run function takes ``prepare`` bound to
    a case (token -> RunSpec) and returns (status, exit code, stderr tail)."""
    if executor not in ("auto", "sandbox", "unsandboxed"):
        raise ValueError(f"executor must be 'auto', 'sandbox' or 'unsandboxed', not {executor!r}")
    if executor in ("auto", "sandbox"):
        try:
            from workbench.execution import Sandbox, new_token
        except ImportError:
            if executor == "sandbox":
                raise
        else:
            sandbox = Sandbox()

            def run_sandboxed(make_spec: Callable[[str], RunSpec]) -> tuple[str, int | None, str]:
                token = new_token()
                outcome = sandbox.run(make_spec(token), token, timeout_s)
                return outcome.status, outcome.exit_code, f"{outcome.detail} {outcome.stderr_tail}".strip()

            return run_sandboxed, "sandbox"

    def run_plain(make_spec: Callable[[str], RunSpec]) -> tuple[str, int | None, str]:
        token = secrets.token_hex(16)
        result = run_spec_unsandboxed(make_spec(token), token, timeout_s=timeout_s)
        return result.status, result.returncode, result.stderr

    return run_plain, "unsandboxed"


def check_runner(
    plugin: LanguagePlugin,
    runner_cases: Sequence[RunnerCase],
    execute: bool = True,
    timeout_s: float = 60.0,
    executor: str = "auto",
) -> tuple[list[str], str | None]:
    """Check the plugin's test runner statically and, when its toolchain is present, on ``runner_cases``.

    Args:
        executor: how live runs execute: ``"sandbox"`` (the real sandbox of ``workbench
            execute``, :class:`workbench.execution.Sandbox`), ``"unsandboxed"``
            (:func:`run_spec_unsandboxed`), or ``"auto"`` (the sandbox when the execution
            package is installed).

    Returns:
        (problems, reason the live runs were skipped or ``None``).
    """
    runner = plugin.runner
    if runner is None:
        return [], "plugin has no runner"
    problems = []
    toolchain = runner.toolchain
    if isinstance(toolchain, str) or not isinstance(toolchain, tuple) or not toolchain:
        problems.append(f"runner.toolchain must be a non-empty tuple of executable names, got {toolchain!r}")
    missing = runner.missing_toolchain()
    if not isinstance(missing, list) or not all(isinstance(item, str) for item in missing):
        problems.append(f"missing_toolchain() must return a list of str, got {missing!r}")
    if runner.build_program("PROMPT", "BODY", "completion") != "PROMPTBODY":
        problems.append("build_program(prompt, completion, 'completion') must be prompt + completion")
    if runner.build_program("PROMPT", "WHOLE", "full") != "WHOLE":
        problems.append("build_program(prompt, completion, 'full') must be the completion alone")
    try:
        runner.build_program("P", "C", "no-such-mode")
        problems.append("build_program with an unknown mode must raise ValueError")
    except ValueError:
        pass
    if not any(case.expect_pass for case in runner_cases) or all(case.expect_pass for case in runner_cases):
        problems.append("give runner_cases with at least one passing and one failing program")
    for number, case in enumerate(runner_cases):
        label = f"runner case {number}" + (f" ({case.description})" if case.description else "")
        token_a, token_b = secrets.token_hex(16), secrets.token_hex(16)
        try:
            spec = runner.prepare(case.program, case.tests, case.entry_point, token_a)
            other = runner.prepare(case.program, case.tests, case.entry_point, token_b)
        except Exception as error:  # noqa: BLE001
            problems.append(f"{label}: prepare() raised {type(error).__name__}: {error}")
            continue
        problems.extend(f"{label}: {problem}" for problem in _check_run_spec(spec, token_a))
        if isinstance(spec, RunSpec) and spec.token_input_fd is None and spec == other:
            problems.append(f"{label}: prepare() ignores the token (same RunSpec for two tokens)")
    if problems or not execute:
        return problems, None if execute else "live runs disabled"
    if missing:
        return problems, f"toolchain missing: {', '.join(missing)}"
    run, executor_name = _live_executor(executor, timeout_s)
    for number, case in enumerate(runner_cases):
        label = f"runner case {number}" + (f" ({case.description})" if case.description else "")
        status, code, stderr = run(lambda token, case=case: runner.prepare(case.program, case.tests, case.entry_point, token))
        if (status == "passed") != case.expect_pass:
            problems.append(
                f"{label}: expected {'pass' if case.expect_pass else 'fail'}, got {status} "
                f"(exit {code}, {executor_name}); stderr: {stderr[-400:]!r}"
            )
    return problems, None


def _check_run_spec(spec: Any, token: str) -> list[str]:
    if not isinstance(spec, RunSpec):
        return [f"prepare() must return a RunSpec, got {type(spec).__name__}"]
    problems = []
    if not isinstance(spec.files, Mapping) or not spec.files:
        problems.append("RunSpec.files must be a non-empty mapping name -> text")
    else:
        for name, text in spec.files.items():
            if not isinstance(name, str) or not _safe_relative(name):
                problems.append(f"RunSpec.files name {name!r} must be a relative path inside the working directory")
            if not isinstance(text, str):
                problems.append(f"RunSpec.files[{name!r}] must be text, got {type(text).__name__}")
    if not isinstance(spec.run, list) or not spec.run or not all(isinstance(arg, str) for arg in spec.run):
        problems.append(f"RunSpec.run must be a non-empty argv list of str, got {spec.run!r}")
    for command in spec.build:
        if not isinstance(command, list) or not command or not all(isinstance(arg, str) for arg in command):
            problems.append(f"RunSpec.build entries must be non-empty argv lists of str, got {command!r}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in dict(spec.env).items()):
        problems.append("RunSpec.env must map str to str")
    if (spec.pass_token_fd is None) == (spec.pass_token_file is None):
        problems.append("set exactly one of RunSpec.pass_token_fd and RunSpec.pass_token_file")
    fds = [fd for fd in (spec.token_input_fd, spec.pass_token_fd) if fd is not None]
    for fd in fds:
        if not isinstance(fd, int) or not 3 <= fd <= 9:
            problems.append(f"token fds must be ints from 3 to 9 (0-2 are stdio), got {fd!r}")
    if len(set(fds)) != len(fds):
        problems.append("RunSpec.token_input_fd and pass_token_fd must differ")
    if spec.pass_token_file is not None:
        if not _safe_relative(spec.pass_token_file):
            problems.append(f"pass_token_file {spec.pass_token_file!r} must be a relative name")
        elif isinstance(spec.files, Mapping) and spec.pass_token_file in spec.files:
            problems.append("pass_token_file is among RunSpec.files: the token would exist before the tests ran")
    carriers = [*(spec.files.values() if isinstance(spec.files, Mapping) else ()), *dict(spec.env).values(),
                *spec.run, *(arg for command in spec.build for arg in command)]
    carried = any(isinstance(text, str) and token in text for text in carriers)
    if spec.token_input_fd is None and not carried:
        problems.append("the token appears in no file, env value or run argument, and no token_input_fd is set: "
                        "the harness cannot know it")
    if spec.token_input_fd is not None and carried:
        problems.append("the token travels over token_input_fd but is also written into files/env/argv, "
                        "where the candidate can read it")
    for code, status in dict(spec.exit_statuses).items():
        if not isinstance(code, int) or code == 0 or status not in SAMPLE_STATUSES:
            problems.append(f"exit_statuses {code!r}: {status!r} must map a non-zero int to one of {SAMPLE_STATUSES}")
    paths = spec.read_only_paths
    if isinstance(paths, str) or not all(isinstance(path, str) and path.startswith("/") for path in paths):
        problems.append(f"read_only_paths must be a tuple of absolute paths, got {paths!r}")
    if spec.limit_overrides:
        try:
            from workbench.execution.limits import ResourceLimits
        except ImportError:  # the execution package is optional for a grammar-only checkout
            ResourceLimits = None  # noqa: N806
        if ResourceLimits is not None:
            try:
                ResourceLimits().with_overrides(spec.limit_overrides)
            except (ValueError, TypeError) as error:
                problems.append(f"limit_overrides: {error}")
    return problems


CHECKS: tuple[str, ...] = (
    "identity", "registration", "grammar", "node_types", "tokens", "robustness", "decomposition",
    "definition_fields", "runner",
)


def check_plugin(
    plugin: LanguagePlugin,
    samples: Sequence[str],
    *,
    expected_tokens: Mapping[int, Sequence[str]] | None = None,
    expected_kinds: set[SubCodeKind] | None = None,
    runner_cases: Sequence[RunnerCase] = (),
    checks: Sequence[str] = CHECKS,
    execute: bool = True,
    timeout_s: float = 60.0,
    executor: str = "auto",
) -> ConformanceReport:
    """Run the conformance checks on ``plugin`` and return a report (never raises for a bad plugin).

    Args:
        plugin: the plugin instance to check.
        samples: valid source files of the language; together they should contain every
            construct of the decomposition map and some identifiers and literals.
        expected_tokens: sample index -> the exact token list ``tokens()`` must return.
        expected_kinds: the sub-code kinds the samples contain (default: every mapped kind).
        runner_cases: programs with tests for the runner, at least one passing and one failing.
        checks: which checks to run (names from :data:`CHECKS`).
        execute: build and run ``runner_cases`` when the toolchain is installed.
        timeout_s: limit for each of those runs (build and run), in seconds.
        executor: ``"auto"``, ``"sandbox"`` or ``"unsandboxed"`` (see :func:`check_runner`).

    Returns:
        :class:`ConformanceReport`; call ``raise_if_failed()`` in a test.

    Raises:
        ValueError: an unknown check name.
    """
    unknown = set(checks) - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown conformance checks {sorted(unknown)}; known: {', '.join(CHECKS)}")
    samples = list(samples)
    runs: dict[str, Callable[[], list[str]]] = {
        "identity": lambda: check_identity(plugin),
        "registration": lambda: check_registration(plugin),
        "grammar": lambda: check_grammar(plugin, samples),
        "node_types": lambda: check_node_types(plugin),
        "tokens": lambda: check_tokens(plugin, samples, expected_tokens),
        "robustness": lambda: check_robustness(plugin, samples),
        "decomposition": lambda: check_decomposition(plugin, samples, expected_kinds),
        "definition_fields": lambda: check_definition_fields(plugin, samples),
    }
    report = ConformanceReport(plugin=str(plugin.name))
    for name in CHECKS:
        if name not in checks:
            continue
        if name == "runner":
            problems, skipped = check_runner(plugin, runner_cases, execute=execute, timeout_s=timeout_s,
                                             executor=executor)
            report.problems[name] = problems
            if skipped:
                report.skipped[name] = skipped
            continue
        try:
            report.problems[name] = runs[name]()
        except Exception as error:  # noqa: BLE001 - a crashing check is a finding, not a kit crash
            report.problems[name] = [f"check crashed: {type(error).__name__}: {error}"]
    return report


# -- running a RunSpec without the sandbox ---------------------------------------------------


@dataclass(frozen=True)
class UnsandboxedResult:
    """Outcome of :func:`run_spec_unsandboxed`.

    Attributes:
        status: ``"passed"``, ``"failed"`` (non-zero exit), ``"error"`` (exit 0 without the
            token), ``"syntax_error"`` (a build command failed), ``"timeout"``, or what
            ``spec.exit_statuses`` maps the exit status to.
        returncode: exit status of the last command run (``None`` on timeout).
        stdout, stderr: output of the last command run (decoded, possibly truncated by the caller).
        seconds: wall-clock time of build and run together.
    """

    status: str
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float

    @property
    def passed(self) -> bool:
        """True when the harness delivered the token and the program exited with status 0."""
        return self.status == "passed"


def _run(argv: list[str], cwd: str, env: dict[str, str], timeout_s: float,
         preexec: Callable[[], None] | None = None) -> tuple[int | None, str, str]:
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True, close_fds=preexec is None,
                               preexec_fn=preexec)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)  # the whole group: a JVM or a forked child too
        stdout, stderr = process.communicate()
        return None, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")
    return process.returncode, stdout.decode("utf-8", "replace"), stderr.decode("utf-8", "replace")


def run_spec_unsandboxed(spec: RunSpec, token: str, timeout_s: float = 60.0) -> UnsandboxedResult:
    """Build and run a :class:`RunSpec` in a fresh temporary directory with plain subprocesses.

    **No isolation**: only for trusted programs (the conformance kit's own cases, or a
    benchmark on known data). Untrusted model output belongs in the sandbox of
    ``workbench execute``. The environment is this process's plus ``spec.env``.

    Args:
        spec: what to write, build and run.
        token: the token given to ``prepare``; it is fed to ``spec.token_input_fd`` (with
            a newline) when set, and the run passes when the harness delivered exactly
            this token (surrounding whitespace ignored) and exited with status 0.
        timeout_s: limit for each build command and for the run, in seconds.
    """
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="workbench-run-") as workdir:
        for name, text in spec.files.items():
            path = Path(workdir, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        env = {**os.environ, **dict(spec.env)}
        for command in spec.build:
            code, out, err = _run(command, workdir, env, timeout_s)
            if code != 0:
                status = "timeout" if code is None else "syntax_error"
                return UnsandboxedResult(status, code, out, err, time.monotonic() - start)
        # the token protocol of RunSpec: token in on token_input_fd, token out on pass_token_fd
        child_fds: dict[int, int] = {}  # fd number in the child -> our fd
        ours: list[int] = []
        pass_read = None
        if spec.token_input_fd is not None:
            token_read, token_write = os.pipe()
            os.write(token_write, (token + "\n").encode())
            os.close(token_write)
            child_fds[spec.token_input_fd] = token_read
            ours.append(token_read)
        if spec.pass_token_fd is not None:
            pass_read, pass_write = os.pipe()
            child_fds[spec.pass_token_fd] = pass_write
            ours += [pass_read, pass_write]
        preexec: Callable[[], None] | None = None
        if child_fds:
            # copies above every target number, so one dup2 in the child cannot clobber another
            floor = max(child_fds) + 1
            staged = {target: fcntl.fcntl(source, fcntl.F_DUPFD, floor) for target, source in child_fds.items()}
            ours += list(staged.values())

            def place_token_fds() -> None:
                # in the child: put the pipe ends on the promised fds and close every other
                # inherited fd (close_fds would run after this and close them again)
                for target, fd in staged.items():
                    os.dup2(fd, target)
                keep = sorted(staged)
                previous = 3
                for fd in keep:
                    os.closerange(previous, fd)
                    previous = fd + 1
                os.closerange(previous, 65536)

            preexec = place_token_fds

        try:
            code, out, err = _run(spec.run, workdir, env, timeout_s, preexec)
            for fd in ours:
                if fd != pass_read:
                    os.close(fd)
            ours = [pass_read] if pass_read is not None else []
            delivered = ""
            if pass_read is not None:
                delivered = os.read(pass_read, 1 << 16).decode("utf-8", "replace")
            elif spec.pass_token_file is not None:
                token_path = Path(workdir, spec.pass_token_file)
                if token_path.is_file():
                    delivered = token_path.read_text(encoding="utf-8", errors="replace")
        finally:
            for fd in ours:
                with contextlib.suppress(OSError):
                    os.close(fd)
    seconds = time.monotonic() - start
    if code is None:
        status = "timeout"
    elif code == 0:
        status = "passed" if delivered.strip() == token else "error"
    else:
        status = spec.exit_statuses.get(code, "failed")
    return UnsandboxedResult(status, code, out, err, seconds)


# -- pytest base class -----------------------------------------------------------------------


class LanguagePluginConformance:
    """Base class for a plugin's conformance tests: subclass it as ``Test...`` and set

    Attributes:
        plugin: the plugin instance under test.
        samples: valid source files that together contain the eight constructs.
        expected_tokens: optional sample index -> exact tokens.
        expected_kinds: optional set of :class:`SubCodeKind` the samples contain.
        runner_cases: :class:`RunnerCase` list (at least one pass and one fail) if the
            plugin has a runner.

    Each check of :data:`CHECKS` becomes one test; the runner test is skipped when the
    runner's toolchain is missing.
    """

    plugin: LanguagePlugin
    samples: Sequence[str] = ()
    expected_tokens: Mapping[int, Sequence[str]] | None = None
    expected_kinds: set[SubCodeKind] | None = None
    runner_cases: Sequence[RunnerCase] = ()

    def _check(self, name: str) -> None:
        report = check_plugin(
            self.plugin, self.samples, expected_tokens=self.expected_tokens, expected_kinds=self.expected_kinds,
            runner_cases=self.runner_cases, checks=(name,),
        )
        report.raise_if_failed()
        if name in report.skipped:
            import pytest

            pytest.skip(report.skipped[name])

    def test_identity(self) -> None:
        self._check("identity")

    def test_registration(self) -> None:
        self._check("registration")

    def test_grammar(self) -> None:
        self._check("grammar")

    def test_node_types(self) -> None:
        self._check("node_types")

    def test_tokens(self) -> None:
        self._check("tokens")

    def test_robustness(self) -> None:
        self._check("robustness")

    def test_decomposition(self) -> None:
        self._check("decomposition")

    def test_definition_fields(self) -> None:
        self._check("definition_fields")

    def test_runner(self) -> None:
        self._check("runner")
