"""The conformance kit (workbench.languages.conformance): the built-in Python plugin passes it, and
each deliberately broken plugin fails exactly the check that covers its defect.

Everything is real: the tree-sitter Python grammar, and a small Python test runner whose
RunSpecs are executed by real ``python3`` subprocesses in the sandbox of ``workbench execute``
(at its strongest level, or at its ``unsandboxed`` level)."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import pytest

from workbench.languages import RunSpec, SubCodeKind, TestRunner, get_language
from workbench.languages.python_plugin import PythonLanguage
from workbench.languages.python_runner import interpreter_paths
from workbench.languages.conformance import (
    CHECKS,
    LanguagePluginConformance,
    PluginConformanceError,
    RunnerCase,
    check_plugin,
    run_spec,
)

SAMPLE = '''\
import math


class Counter:
    """Counts things."""

    def __init__(self, start: int = 0):
        self.value = start  # a comment, not a token


def walk(items, limit=3.5):
    total = 0
    for item in items:
        total += item
    while total > limit:
        total -= 1
    if total == 0:
        return "zero"
    match total:
        case 1:
            return 'one'
    return math.floor(total)
'''
SMALL = "x = f(y, 'a')  # c\n"


# the interpreter behind the venv (the sandbox hides the working tree; interpreter_paths
# lists the folders it must re-expose, e.g. a pyenv prefix under the home)
PYTHON = os.path.realpath(sys.executable)


class TinyPythonRunner(TestRunner):
    """A minimal runner using the weaker variant of the token protocol: the token is
    embedded in the harness (no token_input_fd), which calls ``check(entry_point)`` and
    then writes it to fd 4."""

    toolchain = (PYTHON,)
    write_token_first = False  # the defect a broken runner has

    def prepare(self, program: str, tests: str, entry_point: str | None, token: str) -> RunSpec:
        deliver = f"import os as _os\n_os.write(4, {json.dumps(token)}.encode())\n"
        check = f"check({entry_point})\n"
        body = program + "\n" + tests + "\n" + (deliver + check if self.write_token_first else check + deliver)
        return RunSpec(files={"main.py": body}, run=[PYTHON, "-I", "main.py"], pass_token_fd=4,
                       read_only_paths=interpreter_paths(PYTHON))


TESTS = "def check(candidate):\n    assert candidate(2) == 4\n"
RUNNER_CASES = [
    RunnerCase("def double(x):\n    return 2 * x\n", TESTS, expect_pass=True, entry_point="double"),
    RunnerCase("def double(x):\n    return x + 1\n", TESTS, expect_pass=False, entry_point="double"),
    RunnerCase("import sys\ndef double(x):\n    sys.exit(0)\n", TESTS, expect_pass=False, entry_point="double",
               description="exit(0) inside the candidate"),
]


class RunnablePython(PythonLanguage):
    runner = TinyPythonRunner()


def _report(plugin: Any, checks=CHECKS, **kwargs):
    kwargs.setdefault("executor", "unsandboxed")
    kwargs.setdefault("expected_tokens", {1: ["x", "f", "y", "'a'"]})
    return check_plugin(plugin, [SAMPLE, SMALL], checks=checks, **kwargs)


# HumanEval layout for the built-in runner: tests define check(candidate), the harness calls it
BUILTIN_RUNNER_CASES = [
    RunnerCase("def double(x):\n", "def check(candidate):\n    assert candidate(2) == 4\n", expect_pass=True,
               entry_point="double", description="correct") ,
    RunnerCase("def double(x):\n", "def check(candidate):\n    assert candidate(2) == 5\n", expect_pass=False,
               entry_point="double", description="assert fails"),
    RunnerCase("import os\ndef double(x):\n    os._exit(0)\n", "def check(candidate):\n    assert candidate(2) == 4\n",
               expect_pass=False, entry_point="double", description="os._exit(0) inside the candidate"),
]
BUILTIN_RUNNER_CASES = [
    RunnerCase(case.program + ("    return 2 * x\n" if case.program.endswith("(x):\n") else ""), case.tests,
               case.expect_pass, case.entry_point, case.description)
    for case in BUILTIN_RUNNER_CASES
]


@pytest.mark.parametrize("executor", ["sandbox", "unsandboxed"])
def test_builtin_python_plugin_passes_every_check(executor):
    report = _report(get_language("python"), runner_cases=BUILTIN_RUNNER_CASES, executor=executor)
    assert report.ok, str(report)
    assert set(report.problems) == set(CHECKS) and not report.skipped


@pytest.mark.parametrize("executor", ["sandbox", "unsandboxed"])
def test_a_correct_embedded_token_runner_passes_including_live_runs(executor):
    report = _report(RunnablePython(), checks=("runner",), runner_cases=RUNNER_CASES, executor=executor)
    assert report.ok and not report.skipped, str(report)


# -- deliberately broken plugins: (check expected to fail, plugin, fragment of the message) --------


class BadName(PythonLanguage):
    name = "Py thon"


class GrammarNotInstalled(PythonLanguage):
    grammar_distribution = "tree-sitter-no-such-grammar"


class GrammarImportFails(PythonLanguage):
    _language = None

    def language_capsule(self):
        import tree_sitter_pyhton  # noqa: F401 - the typo is the defect

        return tree_sitter_pyhton.language()


class MisspelledLiteralType(PythonLanguage):
    literal_node_types = frozenset({"string", "integer", "float_literal"})


class StringKeysInDecomposition(PythonLanguage):
    subcode_node_types = {kind.value: types for kind, types in PythonLanguage.subcode_node_types.items()}


class BareStringInsteadOfSet(PythonLanguage):
    subcode_node_types = {**PythonLanguage.subcode_node_types, SubCodeKind.FOR: "for_statement"}


class MissingSwitchKind(PythonLanguage):
    subcode_node_types = {k: v for k, v in PythonLanguage.subcode_node_types.items() if k is not SubCodeKind.SWITCH}


class WrongWhileNodeType(PythonLanguage):
    # exists in the grammar, but is not a loop: the samples' while loop is never found
    subcode_node_types = {**PythonLanguage.subcode_node_types, SubCodeKind.WHILE: frozenset({"with_statement"})}


class KeywordTokens(PythonLanguage):
    def tokens(self, code):  # whitespace split: keywords, operators and comments become tokens
        text = code.decode("utf-8", "replace") if isinstance(code, bytes) else code
        return text.split()


class CommentTokens(PythonLanguage):
    skip_node_types = frozenset()
    literal_node_types = PythonLanguage.literal_node_types | {"comment"}


class CrashesOnSyntaxErrors(PythonLanguage):
    def tokens(self, code):
        if self.parse(code).root_node.has_error:
            raise SyntaxError("cannot tokenize broken code")
        return super().tokens(code)


class NoFieldSuchName(PythonLanguage):
    definition_fields = {**PythonLanguage.definition_fields, "assignment": ("lhs",)}


class FieldWithoutIdentifiers(PythonLanguage):
    # "return_type" is a real field of function_definition, but no sample function has one
    definition_fields = {**PythonLanguage.definition_fields, "function_definition": ("return_type",)}


class UnseenDefinitionType(PythonLanguage):
    # probe 38p: a definition node type the samples never contain went unchecked, so a real but wrong
    # field (a lambda's body instead of its parameters) passed the kit
    definition_fields = {**PythonLanguage.definition_fields, "lambda": ("body",)}


class UnknownQueryPredicate(PythonLanguage):
    # probe 38p: tree-sitter ignores a predicate it does not know (no predicate callback is passed), so
    # `#eqq?` made this pattern mark every identifier as no name, and the kit passed it
    name_query = PythonLanguage.name_query + '((identifier) @not_a_name (#eqq? @not_a_name "self"))'


class TokenFirstRunner(TinyPythonRunner):
    write_token_first = True


class RunnerWritesTokenBeforeTests(PythonLanguage):
    runner = TokenFirstRunner()


class FixedTokenRunner(TinyPythonRunner):
    def prepare(self, program, tests, entry_point, token):
        return super().prepare(program, tests, entry_point, "always-the-same")


class RunnerIgnoresToken(PythonLanguage):
    runner = FixedTokenRunner()


class EscapingRunner(TinyPythonRunner):
    def prepare(self, program, tests, entry_point, token):
        spec = super().prepare(program, tests, entry_point, token)
        return RunSpec(files={"../main.py": spec.files["main.py"]}, run=spec.run, pass_token_fd=4,
                       read_only_paths=spec.read_only_paths)


class RunnerWritesOutsideWorkdir(PythonLanguage):
    runner = EscapingRunner()


class LeakingFdRunner(TinyPythonRunner):
    def prepare(self, program, tests, entry_point, token):  # claims the fd protocol, still embeds the token
        spec = super().prepare(program, tests, entry_point, token)
        return RunSpec(files=spec.files, run=spec.run, pass_token_fd=4, token_input_fd=3)


class RunnerLeaksToken(PythonLanguage):
    runner = LeakingFdRunner()


class NeedsRealTestsRunner(TinyPythonRunner):
    """Refuses empty tests and keeps the default ``toolchain_spec`` (which prepares empty ones):
    ``workbench execute`` would stop before its first sample (the C++ runner once did)."""

    def prepare(self, program, tests, entry_point, token):
        if not tests.strip():
            raise ValueError("the tests define no check")
        return super().prepare(program, tests, entry_point, token)


class RunnerNeedsRealTests(PythonLanguage):
    runner = NeedsRealTestsRunner()


class EveryKindEmpty(PythonLanguage):
    # probe 33: eight empty sets passed the kit, and dsa-cqe then analysed every program whole
    subcode_node_types = {kind: frozenset() for kind in SubCodeKind}
    definition_fields = {}
    name_query = ""


BROKEN = [
    ("identity", BadName(), "lower-case"),
    ("identity", GrammarNotInstalled(), "'tree-sitter-no-such-grammar' is not installed: pip install it, or set "
                                        "grammar_distribution to the PyPI name of the grammar wheel that "
                                        "language_capsule() imports"),
    ("registration", BadName(), "not provided by any installed plugin"),
    ("grammar", GrammarImportFails(), "load_language() raised ModuleNotFoundError"),
    ("node_types", MisspelledLiteralType(), "'float_literal' is not a visible named node type"),
    ("node_types", BareStringInsteadOfSet(), "must be a set"),
    ("decomposition", StringKeysInDecomposition(), "is not a SubCodeKind"),
    ("decomposition", MissingSwitchKind(), "lacks ['Switch']"),
    ("decomposition", WrongWhileNodeType(), "no While sub-code found"),
    ("decomposition", EveryKindEmpty(), "maps every kind to frozenset(): the plugin cannot decompose"),
    ("tokens", KeywordTokens(), "keywords, operators and comment text are not tokens"),
    ("tokens", CommentTokens(), "!= expected"),
    ("robustness", CrashesOnSyntaxErrors(), "raised SyntaxError"),
    ("node_types", NoFieldSuchName(), "'lhs' is not a field"),
    ("definition_fields", FieldWithoutIdentifiers(), "never holds an identifier"),
    ("node_types", UnknownQueryPredicate(), "name_query uses the predicates ['#eqq?'], which tree-sitter does not"),
    ("definition_fields", UnseenDefinitionType(), "the definition node types ['lambda'] never occur in the samples"),
    ("runner", RunnerWritesTokenBeforeTests(), "expected fail, got passed"),
    ("runner", RunnerIgnoresToken(), "ignores the token"),
    ("runner", RunnerWritesOutsideWorkdir(), "must be a relative path inside the working directory"),
    ("runner", RunnerLeaksToken(), "where the candidate can read it"),
    ("runner", RunnerNeedsRealTests(), "toolchain_spec() raised ValueError: the tests define no check"),
]


@pytest.mark.parametrize(("check", "plugin", "message"), BROKEN, ids=[f"{c}-{type(p).__name__}" for c, p, _ in BROKEN])
def test_kit_fails_a_deliberately_broken_plugin(check, plugin, message):
    report = _report(plugin, runner_cases=RUNNER_CASES)
    assert check in report.failed_checks(), str(report)
    assert any(message in problem for problem in report.problems[check]), str(report)
    with pytest.raises(PluginConformanceError, match="FAILED"):
        report.raise_if_failed()


def test_runner_without_failing_case_is_reported():
    report = _report(RunnablePython(), checks=("runner",), runner_cases=RUNNER_CASES[:1])
    assert any("at least one passing and one failing" in p for p in report.problems["runner"])


def test_unknown_check_name_is_rejected():
    with pytest.raises(ValueError, match="unknown conformance checks"):
        check_plugin(get_language("python"), [SAMPLE], checks=("tokens", "speling"))


def test_run_spec_at_the_unsandboxed_level_speaks_the_token_protocol_and_times_out():
    token = "tok-123"
    spec = RunSpec(files={"m.py": f"import os\nos.write(5, b{token!r})\n"}, run=[PYTHON, "m.py"],
                   pass_token_fd=5)
    assert run_spec(spec, token).passed
    assert run_spec(spec, "other-token").status == "error"  # exit 0 without the token
    echo = RunSpec(files={"m.py": "import os\nt = os.read(3, 100)\nos.close(3)\nos.write(4, t)\n"},
                   run=[PYTHON, "m.py"], token_input_fd=3, pass_token_fd=4, exit_statuses={7: "error"})
    assert run_spec(echo, "fresh-token").passed
    in_file = RunSpec(files={"m.py": f"open('ok', 'w').write({token!r})\n"}, run=[PYTHON, "m.py"],
                      pass_token_file="ok")
    assert run_spec(in_file, token).passed
    exits = RunSpec(files={"m.py": "raise SystemExit(7)\n"}, run=[PYTHON, "m.py"], pass_token_fd=4,
                    exit_statuses={7: "error"})
    assert run_spec(exits, token).status == "error"
    slow = RunSpec(files={"m.py": "import time\ntime.sleep(30)\n"}, run=[PYTHON, "m.py"], pass_token_file="t")
    outcome = run_spec(slow, token, timeout_s=1)
    assert outcome.status == "timeout" and outcome.signal == "SIGKILL"
    broken_build = RunSpec(files={"m.py": ""}, build=[[PYTHON, "-c", "raise SystemExit(2)"]],
                           run=[PYTHON, "m.py"], pass_token_file="t")
    assert run_spec(broken_build, token).status == "syntax_error"


class TestPythonThroughTheBaseClass(LanguagePluginConformance):
    """The pytest base class, used exactly as a plugin author would."""

    plugin = RunnablePython()
    samples = [SAMPLE, SMALL]
    expected_tokens = {1: ["x", "f", "y", "'a'"]}
    runner_cases = RUNNER_CASES

    def test_registration(self):  # RunnablePython is a test subclass, not an installed plugin
        with pytest.raises(PluginConformanceError, match="not provided by any installed plugin"):
            super().test_registration()


class _BadNameQuery(PythonLanguage):
    name_query = "(assignment left: (_) @target)"


class _BrokenNameQuery(PythonLanguage):
    name_query = "(no_such_node) @definition"


def test_name_query_is_checked_against_the_contract_and_the_grammar():
    from workbench.languages.conformance.checks import check_node_types

    assert check_node_types(PythonLanguage()) == []
    assert check_node_types(_BadNameQuery()) == [
        "name_query captures ['target']; use only ['definition', 'not_a_name', 'update']"
    ]
    problems = check_node_types(_BrokenNameQuery())
    assert len(problems) == 1 and problems[0].startswith("name_query does not compile against the grammar")


def test_a_check_whose_live_half_was_skipped_is_one_line():
    from workbench.languages.conformance.kit import ConformanceReport

    report = ConformanceReport(plugin="go", problems={"tokens": [], "runner": []}, skipped={"runner": "go: not found"})
    assert str(report).splitlines() == ["conformance of language plugin 'go':", "  tokens: ok",
                                        "  runner: ok, part skipped (go: not found)"]


class JavaGrammarForPython(PythonLanguage):
    """A copied plugin whose language_capsule() still returns another language's grammar."""

    _language = None

    def language_capsule(self):
        import tree_sitter_java

        return tree_sitter_java.language()


#: the checks that need the plugin's own grammar: with another language's, or none, each says so in one line
GRAMMAR_CHECKS = ("grammar", "node_types", "tokens", "robustness", "decomposition", "definition_fields")


def test_a_foreign_grammar_is_named_as_such_in_one_line_per_check():
    """Session 35: the Java grammar behind a Python plugin was reported as some 30 missing node types,
    samples that do not parse and sub-codes never found, none of which says the capsule is wrong."""
    report = _report(JavaGrammarForPython(), checks=GRAMMAR_CHECKS)
    for check in GRAMMAR_CHECKS:
        problems = report.problems[check]
        assert len(problems) == 1, str(report)
        assert problems[0].startswith("language_capsule() loads another grammar than tree-sitter-python's: "), problems
        assert "make JavaGrammarForPython.language_capsule() return the python grammar's language, " \
               "e.g. tree_sitter_python.language()" in problems[0], problems


def test_a_grammar_that_does_not_load_is_one_line_per_check_not_a_cascade():
    report = _report(GrammarImportFails(), checks=GRAMMAR_CHECKS)
    for check in GRAMMAR_CHECKS:
        assert report.problems[check] == [
            "load_language() raised ModuleNotFoundError: No module named 'tree_sitter_pyhton'"], str(report)


class CapsuleAsLanguage(PythonLanguage):
    """Returns the ``tree_sitter.Language`` built from the capsule instead of the capsule itself."""

    _language = None

    def language_capsule(self):
        import tree_sitter
        import tree_sitter_python

        return tree_sitter.Language(tree_sitter_python.language())


class CapsuleIsNone(PythonLanguage):
    _language = None

    def language_capsule(self):
        return None


def test_language_capsule_may_return_a_built_language_and_a_wrong_type_is_named():
    assert _report(CapsuleAsLanguage(), checks=GRAMMAR_CHECKS).ok
    problems = _report(CapsuleIsNone(), checks=("grammar",)).problems["grammar"]
    assert problems == ["load_language() raised TypeError: CapsuleIsNone.language_capsule() returned None; return "
                        "the grammar package's language pointer, e.g. tree_sitter_python.language()"], problems


class NoPassChannelRunner(TinyPythonRunner):
    def prepare(self, program, tests, entry_point, token):  # forgets pass_token_fd / pass_token_file
        return RunSpec(files={"main.py": program + tests + token}, run=[PYTHON, "main.py"])


class RunnerWithoutPassChannel(PythonLanguage):
    runner = NoPassChannelRunner()


def test_an_invalid_run_spec_is_blamed_on_prepare_not_on_a_toolchain_spec_to_override():
    """Session 35: a prepare() without a pass channel was reported with the advice to override
    toolchain_spec() 'when prepare() needs real tests', which is not the fault."""
    problems = _report(RunnerWithoutPassChannel(), checks=("runner",), runner_cases=RUNNER_CASES).problems["runner"]
    first = problems[0]
    assert first.startswith("prepare() returns an invalid RunSpec (toolchain_spec() prepares an empty program with "
                            "it): RunSpec: set exactly one of pass_token_fd and pass_token_file"), problems
    assert "override it" not in first and "invalid RunSpec: invalid RunSpec" not in first, problems


def test_one_subcode_finds_the_one_sub_code_and_its_names():
    from workbench.languages.conformance import one_subcode

    code = "def count_down(n):\n    total = 0\n    while n > 0:\n        total += n\n        n -= 1\n    return total\n"
    loop = one_subcode(code, get_language("python"), SubCodeKind.WHILE, "while")
    assert loop.text.startswith("while n > 0:") and loop.kind is SubCodeKind.WHILE
    assert (loop.defines, loop.uses) == (["total", "n"], ["n", "total"])
    # "total" picks one of the two assignments by its first characters
    assert one_subcode(code, get_language("python"), SubCodeKind.ASSIGN, "total = ").text == "total = 0"


@pytest.mark.parametrize(("kind", "starts", "found"), [(SubCodeKind.FOR, "for", 0), (SubCodeKind.ASSIGN, "", 2)])
def test_one_subcode_fails_on_none_or_several_and_lists_every_sub_code(kind, starts, found):
    from workbench.languages.conformance import one_subcode

    with pytest.raises(AssertionError) as caught:
        one_subcode("x = 1\ny = 2\n", get_language("python"), kind, starts)
    message = str(caught.value)
    assert f"expected one {kind.value} sub-code starting with {starts!r}, found {found}" in message
    assert "[('Assign', 'x = 1'), ('Assign', 'y = 2')]" in message


def test_subcode_kind_counts_counts_every_node_of_each_kind_nested_ones_too():
    """Real tree-sitter-python: two functions, a loop nested in one, three assignments (one in the loop)."""
    from workbench.languages.conformance import subcode_kind_counts

    codes = ["def f(n):\n    total = 0\n    for i in range(n):\n        total += i\n    return total\n",
             "def g():\n    x = 1\n    return x\n"]
    counts = subcode_kind_counts(get_language("python"), codes)
    assert counts[SubCodeKind.FUNCTION_DEF] == 2 and counts[SubCodeKind.FOR] == 1
    assert counts[SubCodeKind.ASSIGN] == 3 and counts[SubCodeKind.CALL] == 1
    assert SubCodeKind.WHILE not in counts and subcode_kind_counts(get_language("python"), []) == {}


def test_languages_row_is_the_command_s_row_and_names_what_is_listed_when_absent():
    from workbench.languages.conformance import languages_row

    row = languages_row("python")
    assert row["name"] == "python" and ".py" in row["extensions"] and "tokens" in row["capabilities"]
    with pytest.raises(AssertionError, match=r"workbench languages lists no 'no-such-language'; it lists \[.*'python'"):
        languages_row("no-such-language")


def test_command_json_is_read_from_stdout_only():
    """Click 8.2+ puts stderr in ``result.output`` too: a stray stderr line of a command that exits 0 must
    not break the JSON read from stdout, and output that is not JSON is an AssertionError naming the command.
    The command is a real Typer command run by ``CliRunner``, as the kit runs workbench's."""
    import typer
    from typer.testing import CliRunner

    from workbench.languages.conformance.commands import _json_of

    command = typer.Typer()

    @command.command()
    def main(valid: bool = True) -> None:
        typer.echo("a stray warning", err=True)
        typer.echo('[{"name": "python"}]' if valid else "no JSON here")

    result = CliRunner().invoke(command, [])
    assert result.exit_code == 0 and "a stray warning" in result.output
    assert _json_of(result, ["languages", "--json"]) == [{"name": "python"}]
    result = CliRunner().invoke(command, ["--no-valid"])
    with pytest.raises(AssertionError, match=r"workbench languages --json printed no JSON on stdout .*'no JSON here"):
        _json_of(result, ["languages", "--json"])


def test_dedup_clusters_runs_the_real_command_on_a_folder_of_files(tmp_path):
    from workbench.languages.conformance import dedup_clusters

    code = "def knapsack(weights, values, capacity):\n    best = [0] * (capacity + 1)\n" \
           "    for i, w in enumerate(weights):\n        best[w] = max(best[w], values[i] + 17)\n    return best\n"
    other = "def greet(name, times):\n    return ('hello ' + name + ' ') * times + str(42) + 'bye'\n"
    files = {"train/a.py": code, "train/b.py": other, "test/a2.py": code.replace("17", "18")}  # one literal changed: a near duplicate
    assert dedup_clusters(tmp_path, files, min_tokens=5) == [["test/a2.py", "train/a.py"]]
    with pytest.raises(AssertionError, match="workbench dedup .* exited"):
        dedup_clusters(tmp_path / "again", {}, min_tokens=5)


def test_a_quote_in_a_comment_does_not_hide_an_unknown_predicate():
    """review39a: strings were blanked before comments, so a comment holding one ``"`` opened a "string" that ran
    to the next real one and swallowed the pattern between, with its unknown predicate."""
    from workbench.languages.grammar_fit import unknown_predicates

    query = ('; the "self parameter\n((identifier) @not_a_name (#eqq? @not_a_name "self"))\n'
             '((identifier) @not_a_name (#eq? @not_a_name ";")) ; a ";" in a string is no comment\n'
             '((identifier) @not_a_name (#matchh? @not_a_name "^_"))\n')
    assert unknown_predicates(query) == ["eqq?", "matchh?"]
