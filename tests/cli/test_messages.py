"""Error messages a new user meets (the new-user probe of the CLI): each names the option that
sets the missing column, the file and line a loader cannot read (once, not twice), and the file
a command actually wrote. Real commands on real (small) files; no LLM, no sandbox."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data import loading
from workbench.data.loading import load_records
from workbench.correlate import correlate
from workbench.errors import DataError, MissingColumnError

ICE_SCORE = "ice-score/humaneval_python_flat.jsonl"


def _rows(bundled_data: Path, n: int) -> list[dict]:
    with open(bundled_data / ICE_SCORE, encoding="utf-8") as handle:
        return [json.loads(next(handle)) for _ in range(n)]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _invoke(args: list[str]):
    return CliRunner().invoke(app, args, terminal_width=400)


def _error(result) -> str:
    """The ``Error: ...`` message, on one line (rich may wrap it)."""
    assert result.exit_code == 1, result.output
    return " ".join(result.output.split())


# -- a missing column names the option that sets it ------------------------------------------


def test_dedup_against_code_column_missing_names_against_code_column(tmp_path: Path, bundled_data: Path) -> None:
    data = _jsonl(tmp_path / "gens.jsonl", _rows(bundled_data, 6))
    result = _invoke(["dedup", str(data), "--code-column", "completion_multipl_e", "--against", "humaneval",
                      "--against-code-column", "nope", "-o", str(tmp_path / "out"), "--no-progress"])
    text = _error(result)
    assert "column 'nope' not found (set it with --against-code-column)" in text
    assert "(in split 'test' of humaneval)" in text and "--code-column)" not in text


def test_dedup_code_column_missing_still_names_code_column(tmp_path: Path, bundled_data: Path) -> None:
    data = _jsonl(tmp_path / "gens.jsonl", _rows(bundled_data, 6))
    result = _invoke(["dedup", str(data), "--code-column", "nope", "-o", str(tmp_path / "out"), "--no-progress"])
    assert "column 'nope' not found (set it with --code-column)" in _error(result)


def test_score_stratified_without_the_outcome_column_names_stratify_column(tmp_path: Path, bundled_data: Path) -> None:
    rows = _rows(bundled_data, 8)
    for row in rows:
        row.pop("passed")
    data = _jsonl(tmp_path / "no_passed.jsonl", rows)
    result = _invoke(["score", str(data), "--method", "chrf", "--limit", "4", "--select", "stratified",
                      "--generation-column", "completion_multipl_e", "-o", str(tmp_path / "s"), "--no-progress"])
    text = _error(result)
    assert "column 'passed' not found (set it with --stratify-column, or take each sample's outcome" in text
    assert "--results RESULTS.jsonl" in text and "--carry" not in text


def test_correlate_combine_member_missing_says_the_combine_declaration_names_it(tmp_path: Path,
                                                                                bundled_data: Path) -> None:
    data = _jsonl(tmp_path / "scores.jsonl", _rows(bundled_data, 40))
    common = [str(data), "--metric", "codebleu", "--resamples", "40"]
    text = _error(_invoke(["correlate", *common, "--combine", "x=rank-mean:codebleu,nope"]))
    assert "column 'nope' not found (the --combine declaration x=rank-mean:codebleu,nope names it)" in text
    assert "--metric" not in text
    text = _error(_invoke(["correlate", *common, "--baseline", "nope"]))
    assert "column 'nope' not found (set it with --baseline)" in text
    # a column --metric names is still the --metric's, even when a declaration names it too
    text = _error(_invoke(["correlate", *common, "--metric", "nope", "--combine", "x=rank-mean:codebleu,nope"]))
    assert "column 'nope' not found (set it with --metric)" in text


# -- --plot names the file written ----------------------------------------------------------


def test_correlate_plot_without_suffix_prints_the_png_it_writes(tmp_path: Path, bundled_data: Path) -> None:
    data = _jsonl(tmp_path / "scores.jsonl", _rows(bundled_data, 40))
    target = tmp_path / "out" / "plotfile"
    result = _invoke(["correlate", str(data), "--metric", "codebleu", "--resamples", "40", "--plot", str(target)])
    assert result.exit_code == 0, result.output
    written = target.with_name("plotfile.png")
    assert written.is_file() and not target.exists()
    assert f"Figure: {written}" in " ".join(result.output.split())


# -- loader errors: the file, the 1-based line, what is wrong; printed once ------------------


def _semicolon_csv(path: Path) -> Path:
    # a ;-separated file whose third line has a comma in a field: pandas sees 1 field, then 2
    path.write_text("task_id;completion;passed\nHumanEval/0;return 1;1\nHumanEval/1;f(1, 2);0\n", encoding="utf-8")
    return path


def _truncated_jsonl(path: Path, bundled_data: Path) -> Path:
    lines = [json.dumps(row) for row in _rows(bundled_data, 8)]
    lines[5] = lines[5][:60]  # line 6 cut off inside a string
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_semicolon_csv_names_the_line_and_asks_about_the_separator(tmp_path: Path) -> None:
    data = _semicolon_csv(tmp_path / "scores.csv")
    with pytest.raises(DataError) as caught:
        load_records(data)
    message = str(caught.value)
    assert message.startswith(f"cannot read {data}: rows have different numbers of fields; is the file ;-separated?")
    assert "line 3 has 2" in message and "Expected 1 fields" not in message


def test_semicolon_csv_without_commas_asks_about_the_separator_when_a_column_is_missing(tmp_path: Path) -> None:
    # no comma anywhere: every row has one field, so the file loads, as one column named by the whole header
    data = tmp_path / "scores.csv"
    data.write_text("task_id;completion;passed\nHumanEval/0;return 1;1\nHumanEval/1;return 2;0\n", encoding="utf-8")
    with pytest.raises(MissingColumnError) as caught:
        correlate(data, metrics=["completion"], offline=True)
    message = str(caught.value)
    assert "the data has: task_id;completion;passed. That one column's name is a whole header row: " \
           "is the file ;-separated?" in message
    assert "is the file tab-separated?" in str(MissingColumnError("x", ["a\tb"], "--metric"))
    assert "separated" not in str(MissingColumnError("x", ["a", "b;c"], "--metric"))


def test_csv_with_an_unquoted_comma_names_the_line(tmp_path: Path) -> None:
    data = tmp_path / "scores.csv"
    data.write_text("task_id,completion,passed\na,x,1\nb,x,0\nc,f(1, 2),1\n", encoding="utf-8")
    problem = loading.file_problem(data)
    assert problem is not None and "line 4 has 4" in problem and "without double quotes" in problem


def test_truncated_jsonl_line_is_named_by_its_line_number_not_as_an_encoding_error(tmp_path: Path,
                                                                                   bundled_data: Path) -> None:
    data = _truncated_jsonl(tmp_path / "scores.jsonl", bundled_data)
    with pytest.raises(DataError) as caught:
        load_records(data)
    message = str(caught.value)
    assert message.startswith(f"cannot read {data}: line 6 is not valid JSON: Unterminated string")
    assert "encoding" not in message and "row 5" not in message
    packed = tmp_path / "scores.jsonl.gz"
    packed.write_bytes(gzip.compress(data.read_bytes()))
    assert loading.file_problem(packed).startswith("line 6 is not valid JSON")


def test_a_json_document_with_a_fault_names_its_line(tmp_path: Path) -> None:
    data = tmp_path / "scores.json"
    data.write_text('[{"a": 1},\n {"a": 2},\n {"a": 3\n]\n', encoding="utf-8")
    assert loading.file_problem(data) == "line 4 is not valid JSON: Expecting ',' delimiter: column 1"
    data.write_text('[{"a": 1}]\n', encoding="utf-8")
    assert loading.file_problem(data) is None


@pytest.mark.parametrize("name, expected", [
    ("csv", "rows have different numbers of fields; is the file ;-separated?"),
    ("jsonl", "line 6 is not valid JSON: Unterminated string"),
])
def test_a_loader_error_is_printed_once_by_the_command(tmp_path: Path, bundled_data: Path, name: str,
                                                        expected: str) -> None:
    """A subprocess, as a user runs it: datasets logs the parser's error on stderr itself
    (its own handler, which CliRunner does not capture) before workbench reports it."""
    data = (_semicolon_csv(tmp_path / "scores.csv") if name == "csv"
            else _truncated_jsonl(tmp_path / "scores.jsonl", bundled_data))
    env = {**os.environ, "HF_DATASETS_CACHE": str(tmp_path / "cache"), "NO_COLOR": "1"}
    done = subprocess.run([sys.executable, "-m", "workbench", "correlate", str(data), "--metric", "codebleu"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 1, done.stderr
    output = done.stdout + done.stderr
    assert output.count(expected) == 1, output
    assert "Failed to" not in output and "Expected 1 fields" not in output and "in row 5" not in output
    assert f"Error: cannot read {data}: {expected}" in " ".join(output.split())


@pytest.mark.parametrize("command", [
    ["score", "nobody-here/no-such-dataset-xyz", "-m", "chrf", "-o", "OUT/scores"],
    ["execute", "nobody-here/no-such-dataset-xyz", "-o", "OUT/results.jsonl"],
])
def test_score_and_execute_take_offline_as_the_other_commands_do(tmp_path: Path, command: list[str]) -> None:
    """``--offline`` reached only dedup, correlate and bias (and ``workbench run --offline`` only
    their stages): score and execute asked the hub for a hub id all the same."""
    arguments = [part.replace("OUT", str(tmp_path)) for part in command]
    result = CliRunner().invoke(app, [*arguments, "--offline"])
    assert result.exit_code == 1, result.output
    assert "offline mode is on and it is not in the local cache" in " ".join(result.output.split())


def test_ctrl_c_in_a_command_without_rows_to_keep_says_so_and_exits_130(tmp_path, monkeypatch):
    """dedup, correlate, bias keep no rows to resume from: a Ctrl-C (KeyboardInterrupt, as Python
    raises it on SIGINT, here raised inside the real dedup search) ends with one line naming the
    command and status 130 (docs/exit-status.md), never silence or a traceback."""
    import json

    from typer.testing import CliRunner

    import workbench.dedup.job as dedup_job
    from workbench.cli import app

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": i, "content": f"x = {i}\n"}) + "\n" for i in range(3)))
    monkeypatch.setattr(dedup_job, "find_duplicates", interrupted)
    result = CliRunner().invoke(app, ["dedup", str(data), "-o", str(tmp_path / "out")])
    assert result.exit_code == 130
    assert "Interrupted: dedup stopped before it finished (exit status 130)" in " ".join(result.output.split())
    assert "Traceback" not in result.output


# -- an output path with a file in the way: one line before any work, not a traceback -------------


@pytest.mark.parametrize("command", [
    ["score", "{data}", "--generation-column", "completion_multipl_e", "-m", "chrf", "-o", "{file}", "--no-progress"],
    ["score", "{data}", "--generation-column", "completion_multipl_e", "-m", "chrf", "-o", "{file}/run",
     "--no-progress"],
    ["execute", "{data}", "--completion-column", "completion_multipl_e", "-o", "{file}/results.jsonl",
     "--no-progress"],
    ["correlate", "{data}", "-m", "codebleu", "--length-column", "none", "--json", "{file}/c.json"],
    ["correlate", "{data}", "-m", "codebleu", "--length-column", "none", "--plot", "{file}/c.png"],
], ids=["score-o-file", "score-o-under-file", "execute-o-under-file", "correlate-json", "correlate-plot"])
def test_an_output_under_a_file_is_one_line(tmp_path: Path, bundled_data: Path, command: list[str]) -> None:
    """These raised ``FileExistsError`` / ``NotADirectoryError`` tracebacks (score and execute
    after loading the data; correlate after the whole bootstrap)."""
    data = _jsonl(tmp_path / "gens.jsonl", _rows(bundled_data, 6))
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine\n")
    args = [part.format(data=data, file=blocker) for part in command]
    text = _error(_invoke(args))
    assert f"{blocker} exists and is not a folder; choose another path" in text
    assert blocker.read_text() == "mine\n"
