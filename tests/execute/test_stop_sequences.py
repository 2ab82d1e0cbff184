"""``--stop`` (issue 12, item 8): raw generations cut at stop sequences before they run and
before they are judged, as the Codex paper and bigcode-evaluation-harness do; every row says
whether its sample was cut. Real sandboxed runs of HumanEval samples, real config checks."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_humaneval
from workbench.data.stop_sequences import STOP_PRESETS, decode_escapes, resolve_stop_sequences, truncate_generation
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.execute.result_file import read_results
from workbench.options import OptionError

FIXED = dict(timeout=30.0, workers=2, reference_cache=False)


def test_the_humaneval_preset_is_the_harness_set():
    assert STOP_PRESETS["humaneval"] == ("\ndef ", "\nclass ", "\nif ", "\nprint(", "\n#", "\nassert ")
    assert resolve_stop_sequences(["humaneval"]) == STOP_PRESETS["humaneval"]
    # escapes typed on a command line; repeats dropped; order kept
    assert resolve_stop_sequences(["\\n```", "humaneval", "\\ndef ", "a\\tb\\\\n"]) == (
        "\n```", *STOP_PRESETS["humaneval"], "a\tb\\n")
    assert decode_escapes("\n\\x") == "\n\\x"  # a real newline (TOML) is kept; unknown escapes too
    with pytest.raises(ValueError, match="must not be empty"):
        resolve_stop_sequences(["humaneval", ""])


@pytest.mark.parametrize(
    ("text", "prompt", "kept", "stop"),
    [
        # the earliest of several stop sequences wins, whichever is listed first
        ("    return x\n\nassert f(1) == 1\nprint(f(2))\n", "", "    return x\n", "\nassert "),
        ("    return x\n\nprint(f(2))\nassert f(1) == 1\n", "", "    return x\n", "\nprint("),
        # indented code never stops: only top-level lines do
        ("    if x:\n        print(x)\n    # done\n    return x\n", "", None, None),
        # names that begin like a keyword do not stop (`define`, `classes`, `iffy`)
        ("    return x\ndefine = 1\nclasses = 2\niffy = 3\n", "", None, None),
        ("    return x\n# trailing notes\n", "", "    return x", "\n#"),
        # a whole program that repeats the prompt: the search starts after it
        ("def f(x):\n    '''doc'''\n    return x\ndef g():\n    pass\n", "def f(x):\n    '''doc'''\n",
         "def f(x):\n    '''doc'''\n    return x", "\ndef "),
        ("", "", None, None),
    ],
)
def test_truncate_generation(text, prompt, kept, stop):
    cut = truncate_generation(text, STOP_PRESETS["humaneval"], prompt)
    assert cut.text == (text if kept is None else kept)
    assert cut.stop == stop and cut.truncated is (stop is not None)
    assert cut.removed_chars == len(text) - len(cut.text)


def test_an_empty_stop_is_refused_naming_the_option():
    with pytest.raises(OptionError, match=r"^stop must not be empty"):
        ExecutionConfig(stop=["humaneval", ""])
    assert ExecutionConfig(stop=["humaneval", "\\n```"]).stop_sequences == (*STOP_PRESETS["humaneval"], "\n```")
    # a value with a comma is one stop sequence (no splitting at commas)
    assert ExecutionConfig(stop=["\\nfoo(a, b)"]).stop_sequences == ("\nfoo(a, b)",)


def _generations(tmp_path):
    """HumanEval/0 and /2 canonical solutions with the trailing text models emit."""
    problems = {row["task_id"]: row for row in load_humaneval().select(range(3))}
    rows = [
        # passes only when cut: the top-level assert fails at import
        {"task_id": "HumanEval/0", "sample_id": 0,
         "completion": problems["HumanEval/0"]["canonical_solution"] + "\n\nprint(has_close_elements([1.0], 0.5))\nassert False\n"},
        # a second def that would break the program (a syntax error in a cut-off last line)
        {"task_id": "HumanEval/2", "sample_id": 0,
         "completion": problems["HumanEval/2"]["canonical_solution"] + "\ndef unfinished(x:\n"},
        # nothing to cut
        {"task_id": "HumanEval/2", "sample_id": 1, "completion": problems["HumanEval/2"]["canonical_solution"]},
    ]
    path = tmp_path / "gen.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_execute_runs_the_cut_generation_and_records_the_cut(tmp_path):
    generations = _generations(tmp_path)
    raw = {(r["task_id"], r["sample_id"]): r for r in (
        run_execute(generations, tmp_path / "raw.jsonl", ExecutionConfig(**FIXED)) and read_results(tmp_path / "raw.jsonl"))}
    assert [raw[("HumanEval/0", 0)]["status"], raw[("HumanEval/2", 0)]["status"], raw[("HumanEval/2", 1)]["status"]] == [
        "failed", "syntax_error", "passed"]
    assert all(r["generation_truncated"] is False and r["stop_sequence"] is None for r in raw.values())

    summary = run_execute(generations, tmp_path / "cut.jsonl", ExecutionConfig(stop=["humaneval"], **FIXED))
    cut = {(r["task_id"], r["sample_id"]): r for r in read_results(tmp_path / "cut.jsonl")}
    assert {key: (r["passed"], r["generation_truncated"], r["stop_sequence"]) for key, r in cut.items()} == {
        ("HumanEval/0", 0): (1, True, "\nprint("),
        ("HumanEval/2", 0): (1, True, "\ndef "),
        ("HumanEval/2", 1): (1, False, None),
    }
    assert "2 of 3 completions run now were cut at a stop sequence (--stop)" in " ".join(summary.notes)


def test_execute_cli_takes_repeated_stops_and_the_preset(tmp_path):
    generations = _generations(tmp_path)
    output = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["execute", str(generations), "-o", str(output), "--timeout", "30", "-j", "2",
                                      "--stop", "\\nprint(", "--stop", "\\ndef ", "--json"])
    assert result.exit_code == 0, result.output
    rows = {(r["task_id"], r["sample_id"]): r for r in read_results(output)}
    # without `\nassert ` in the list, HumanEval/0 is cut at print( (earlier) and passes
    assert rows[("HumanEval/0", 0)]["stop_sequence"] == "\nprint(" and rows[("HumanEval/0", 0)]["passed"] == 1
    assert rows[("HumanEval/2", 0)]["stop_sequence"] == "\ndef "
    bad = CliRunner().invoke(app, ["execute", str(generations), "-o", str(tmp_path / "x.jsonl"), "--stop", ""])
    assert bad.exit_code == 2 and "--stop must not be empty" in bad.output
