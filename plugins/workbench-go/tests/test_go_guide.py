"""docs/plugins.md builds this plugin step by step: its code blocks are this plugin's files, word for
word, and its snippets run as the guide says (real tree-sitter-go). Probe 38p wrote the plugin from
the guide and found its names wrong (a method's receiver, ``x++``, a function literal's parameters were
only ever read) while the guide said every block had been run: now the guide's blocks are tested."""

from __future__ import annotations

import doctest
import re
import shutil
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[1]
GUIDE = PLUGIN.parents[1] / "docs" / "plugins.md"


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)


def _one(language: str, marker: str) -> str:
    found = [block for block in _blocks(language) if marker in block]
    assert len(found) == 1, f"docs/plugins.md has {len(found)} {language} blocks with {marker!r}"
    return found[0]


@pytest.mark.parametrize(("language", "marker", "path"), [
    ("toml", 'name = "workbench-go"', "pyproject.toml"),
    ("python", "class GoLanguage(LanguagePlugin):", "workbench_go.py"),
    ("python", "class TestGoConformance(LanguagePluginConformance):\n    plugin = GoLanguage()", "tests/test_go_conformance.py"),
])
def test_the_guides_files_are_this_plugins_files(language, marker, path):
    assert _one(language, marker) == (PLUGIN / path).read_text(encoding="utf-8")


def test_the_guides_token_examples_give_what_they_show():
    examples = doctest.DocTestParser().get_doctest(_one("python", ">>> from workbench.languages import get_language"),
                                                   {}, "docs/plugins.md", str(GUIDE), 0)
    runner = doctest.DocTestRunner()
    runner.run(examples)
    assert runner.summarize(verbose=False).failed == 0


def test_the_guides_grammar_exploration_and_kit_snippets_run():
    namespace: dict = {}
    exec(_one("python", "import tree_sitter, tree_sitter_go"), namespace)
    assert "source_file" in namespace["kinds"] and "receiver" in namespace["fields"]
    from workbench_go import GoLanguage

    conformance: dict = {}
    exec((PLUGIN / "tests" / "test_go_conformance.py").read_text(encoding="utf-8"), conformance)
    SAMPLE = conformance["SAMPLE"]  # noqa: N806 - the guide's name
    snippet = _one("python", "report = check_plugin(GoLanguage(), [SAMPLE]")
    namespace = {"GoLanguage": GoLanguage, "SAMPLE": SAMPLE, "print": lambda *args: None}
    exec(snippet, namespace)  # raise_if_failed() raises if a check failed
    assert namespace["report"].ok


def _nodes(root, node_type: str) -> list:
    stack, found = [root], []
    while stack:
        node = stack.pop()
        found += [node] if node.type == node_type else []
        stack.extend(node.children)
    return found


def test_the_guides_runner_sketch_writes_go_files_that_parse_and_passes_the_kits_static_runner_check():
    """Probe 38p: the sketch appended its ``main`` after the tests and said the tests "import io and os",
    which Go allows only at the top of a file; its harness is now a file of its own. Checked here without a
    Go toolchain: every file it writes parses as Go, and the kit's runner check passes its static half (the
    live runs are kept off by naming a toolchain that is never installed, so a machine with Go gives the same
    verdict); the live runs are the next test's."""
    from workbench.execute import new_token
    from workbench.languages.conformance import RunnerCase, check_plugin
    from workbench_go import GoLanguage

    namespace: dict = {}
    exec(_one("python", "class GoRunner(TestRunner):"), namespace)

    class StaticOnly(namespace["GoRunner"]):
        toolchain = ("go-toolchain-never-installed",)

    class GoWithRunner(GoLanguage):
        runner = StaticOnly()

    program = 'package main\n\nimport "strings"\n\nfunc Shout(s string) string {\n\treturn strings.ToUpper(s)\n}\n'
    tests = 'func runTests() {\n\tif Shout("a") != "A" {\n\t\tpanic("Shout(\\"a\\") != \\"A\\"")\n\t}\n}\n'
    spec = GoWithRunner.runner.prepare(program, tests, "Shout", new_token())
    plugin = GoWithRunner()
    assert sorted(spec.files) == ["harness.go", "main.go", "tests.go"]
    for name, text in spec.files.items():
        root = plugin.parse(text).root_node
        assert not root.has_error, name
        # Go's rule the old sketch broke: a file imports every package it names (here: the standard ones used)
        imported = {node.text.decode().strip('"') for node in _nodes(root, "import_spec")
                    for node in [node.child_by_field_name("path")]}
        used = {node.child_by_field_name("operand").text.decode() for node in _nodes(root, "selector_expression")}
        assert used & {"io", "os", "strings", "fmt"} <= imported, (name, used, imported)
    wrong = program.replace("ToUpper", "ToLower")
    report = check_plugin(plugin, [program], checks=("runner",), runner_cases=[
        RunnerCase(program=program, tests=tests, expect_pass=True),
        RunnerCase(program=wrong, tests=tests, expect_pass=False)])
    assert report.ok and "runner" in report.skipped, str(report)


SHOUT = 'package main\n\nimport "strings"\n\nfunc Shout(s string) string {\n\treturn strings.ToUpper(s)\n}\n'
SHOUT_TESTS = 'func runTests() {\n\tif Shout("a") != "A" {\n\t\tpanic("Shout(\\"a\\") != \\"A\\"")\n\t}\n}\n'
#: reads the token pipe and writes what it read to the pass pipe, then exits 0, before main: in init() or in a
#: package-level variable's initialiser (placeholder: where the stealing code goes)
STEALS = ('package main\n\nimport (\n\t"io"\n\t"os"\n)\n\n{where}\n\nfunc steal() int {{\n'
          '\tt, _ := io.ReadAll(os.NewFile(3, "t"))\n\tos.NewFile(4, "p").Write(t)\n\tos.Exit(0)\n\treturn 0\n}}\n\n'
          'func Shout(s string) string {{\n\treturn s\n}}\n')


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain (go) on PATH")
def test_the_guides_runner_sketch_runs_in_the_sandbox_and_its_token_is_read_before_the_candidates_code():
    """leftover of session 40: the sketch had never run. With Go installed (Debian's golang-go 1.19 here) it runs
    in the sandbox of workbench execute (run_spec, executor "sandbox": the strongest level available): a right
    program passes, a wrong one fails with the harness's last line as its detail, one that does not compile is a
    syntax_error, one that exits 0 first an error; and a candidate that reads the token pipe in init() or in a
    package-level variable's initialiser and writes it back is an error, not passed (the sketch that read the
    token in main passed both). The kit's runner check with its live half agrees."""
    from workbench.execute import new_token
    from workbench.languages.conformance import RunnerCase, check_plugin, run_spec
    from workbench_go import GoLanguage

    namespace: dict = {}
    exec(_one("python", "class GoRunner(TestRunner):"), namespace)

    class GoWithRunner(GoLanguage):
        runner = namespace["GoRunner"]()

    runner = GoWithRunner.runner
    cases = {
        "right": (SHOUT, "passed"),
        "wrong": (SHOUT.replace("ToUpper", "ToLower"), "failed"),
        "exits early": (SHOUT.replace("return strings", "os.Exit(0)\n\treturn strings")
                        .replace('import "strings"', 'import (\n\t"os"\n\t"strings"\n)'), "error"),
        "does not compile": (SHOUT.replace("ToUpper(s)", "ToUpper(s) +"), "syntax_error"),
        "steals in init()": (STEALS.format(where="func init() {\n\tsteal()\n}"), "error"),
        "steals in a variable": (STEALS.format(where="var stolen = steal()"), "error"),
    }
    got = {}
    for name, (program, _) in cases.items():
        token = new_token()
        outcome = run_spec(runner.prepare(program, SHOUT_TESTS, "Shout", token), token, timeout_s=300,
                           executor="sandbox")
        got[name] = outcome.status
        if name == "wrong":
            assert outcome.detail.endswith('workbench: check failed: Shout("a") != "A"'), outcome.detail
    assert got == {name: status for name, (_, status) in cases.items()}, got
    report = check_plugin(GoWithRunner(), [SHOUT], checks=("runner",), executor="sandbox", runner_cases=[
        RunnerCase(program=program, tests=SHOUT_TESTS, expect_pass=status == "passed", expect_status=status)
        for program, status in cases.values()])
    assert report.ok and "runner" not in report.skipped, str(report)
