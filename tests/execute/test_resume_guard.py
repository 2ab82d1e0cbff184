"""``workbench execute --resume`` refuses settings that would change a finished row (another
completion column, another timeout ...) and still resumes what legitimately differs (more
samples, other workers) and results files of older versions. Real HumanEval problems, real
sandboxed runs."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_humaneval
from workbench.errors import DataError
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.execute.result_file import read_results, summary_path
from workbench.resume_guard import ResumeMismatchError

FIXED = dict(timeout=30.0, workers=2, reference_cache=False)  # fixed timeout: no calibration


@pytest.fixture
def generations(tmp_path):
    """Four HumanEval tasks, each with the canonical solution and a wrong one in another column."""
    path = tmp_path / "gen.jsonl"
    rows = [{"task_id": p["task_id"], "sample_id": 0, "completion": p["canonical_solution"],
             "wrong": "    return None\n"} for p in load_humaneval().select(range(4))]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("changes, named", [
    ({"timeout": 20.0}, "timeout 30.0 -> 20.0"),
    ({"timeout": None}, "timeout 30.0 -> the default (calibrated per task: "),  # not "None" (probe23)
    ({"completion_column": "wrong"}, "completion_column 'completion' -> 'wrong'"),
    ({"timeout": 20.0, "completion_column": "wrong", "memory_mb": 2048},
     "completion_column 'completion' -> 'wrong'; timeout 30.0 -> 20.0; memory_mb 4096 -> 2048"),
])
def test_a_changed_setting_is_refused_and_the_results_are_left_as_they_were(tmp_path, generations, changes, named):
    output = tmp_path / "out.jsonl"
    run_execute(generations, output, ExecutionConfig(limit=2, **FIXED))
    before = output.read_bytes()
    with pytest.raises(ResumeMismatchError) as refused:
        run_execute(generations, output, ExecutionConfig(resume=True, **{**FIXED, **changes}))
    message = str(refused.value)
    assert named in message and "--overwrite instead of --resume" in message and "\n" not in message
    assert output.read_bytes() == before


def test_the_command_line_names_the_flags_and_exits_1(tmp_path, generations):
    output = tmp_path / "out.jsonl"
    common = ["execute", str(generations), "-o", str(output), "-j", "2", "--no-reference-cache"]
    assert CliRunner().invoke(app, [*common, "--timeout", "30", "--limit", "2"]).exit_code == 0
    before = output.read_bytes()
    again = CliRunner().invoke(app, [*common, "--timeout", "10", "--completion-column", "wrong", "--resume"])
    assert again.exit_code == 1, again.output
    message = " ".join(again.output.split())
    assert "--timeout 30.0 -> 10.0" in message and "--completion-column 'completion' -> 'wrong'" in message
    assert "fresh --output" in message
    assert output.read_bytes() == before


def test_more_samples_and_other_workers_still_resume(tmp_path, generations):
    output = tmp_path / "out.jsonl"
    run_execute(generations, output, ExecutionConfig(limit=1, **FIXED))
    summary = run_execute(generations, output, ExecutionConfig(resume=True, **{**FIXED, "workers": 1},
                                                               max_failures=2))
    assert summary.skipped_finished == 1 and summary.executed == 3
    assert [r["passed"] for r in read_results(output)] == [1, 1, 1, 1]


def test_an_interrupted_run_records_its_settings_before_its_summary(tmp_path, generations):
    """The summary is written at the end; the settings are in the summary file before any sample
    runs, so a run stopped by Ctrl-C still refuses a resume with another timeout."""
    output = tmp_path / "out.jsonl"

    def interrupt(row):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_execute(generations, output, ExecutionConfig(**{**FIXED, "workers": 1}), on_result=interrupt)
    assert len(read_results(output)) == 1
    with pytest.raises(ResumeMismatchError, match="timeout 30.0 -> 20.0"):
        run_execute(generations, output, ExecutionConfig(resume=True, **{**FIXED, "timeout": 20.0}))
    assert run_execute(generations, output, ExecutionConfig(resume=True, **FIXED)).executed == 3


def test_an_old_summary_without_settings_still_resumes_with_a_note(tmp_path, generations):
    output = tmp_path / "out.jsonl"
    run_execute(generations, output, ExecutionConfig(limit=2, **FIXED))
    summary_file = summary_path(output)
    record = json.loads(summary_file.read_text())
    record.pop("settings", None)
    summary_file.write_text(json.dumps(record))

    summary = run_execute(generations, output, ExecutionConfig(resume=True, **FIXED))

    assert summary.executed == 2 and len(read_results(output)) == 4
    assert any("records no settings" in note for note in summary.notes)
    assert json.loads(summary_file.read_text())["settings"]["timeout"] == 30.0


def test_a_generations_file_edited_since_the_run_is_refused(tmp_path, generations):
    """probe23: a completion edited after its row was written kept its old verdict on --resume.
    Each row records the digest of the code it ran; a resume compares. Appending new samples (or
    an older results file without digests) still resumes. Real sandboxed runs."""
    output = tmp_path / "out.jsonl"
    original = generations.read_text()
    run_execute(generations, output, ExecutionConfig(limit=2, **FIXED))
    assert all(len(r["code_sha256"]) == 16 for r in read_results(output))
    rows = [json.loads(line) for line in original.splitlines()]
    generations.write_text("".join(json.dumps({**r, "completion": "    return 'edited'\n"} if i == 0 else r) + "\n"
                                   for i, r in enumerate(rows)))
    before = output.read_bytes()
    with pytest.raises(DataError, match=r"cannot resume: 1 finished row of .*out.jsonl was run on other code "
                                        r"than the generations hold now \(first: HumanEval/0:0\)"):
        run_execute(generations, output, ExecutionConfig(resume=True, **FIXED))
    assert output.read_bytes() == before
    # a results file of an older version (no digests) resumes as before
    old = tmp_path / "old.jsonl"
    old.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "code_sha256"}) + "\n"
                           for r in read_results(output)))
    summary_path(old).write_text(summary_path(output).read_text())
    assert run_execute(generations, old, ExecutionConfig(resume=True, limit=2, **FIXED)).executed == 0
    # the file as it was, with one more sample run: resumes
    generations.write_text(original)
    assert run_execute(generations, output, ExecutionConfig(resume=True, limit=3, **FIXED)).executed == 1


def test_a_language_alias_and_its_name_are_one_setting(tmp_path, generations):
    """``-l py`` then ``-l python`` resume (probe 24: the alias was recorded as typed and refused); the rows
    record the plugin's name. An older summary that recorded the alias resumes too."""
    output = tmp_path / "out.jsonl"
    run_execute(generations, output, ExecutionConfig(limit=1, language="py", **FIXED))
    assert {row["language"] for row in read_results(output)} == {"python"}
    record = json.loads(summary_path(output).read_text())
    assert record["settings"]["language"] == "python"
    record["settings"]["language"] = "py"  # as a version before canonical names wrote it
    summary_path(output).write_text(json.dumps(record))
    summary = run_execute(generations, output, ExecutionConfig(limit=2, resume=True, language="python", **FIXED))
    assert summary.skipped_finished == 1 and summary.executed == 1


def test_a_resume_without_the_timeout_is_refused_in_one_line_naming_the_default(tmp_path, generations):
    """``workbench execute --timeout 30`` then ``--resume`` without ``--timeout`` (a real subprocess).
    The refusal used to run to several sentences and say "--timeout=30.0, now not set (the
    default)": the default's value (the calibrated timeout) went unsaid. Reproduction from the
    new-user pass newuser36."""
    import subprocess
    import sys

    output = tmp_path / "out.jsonl"
    common = [sys.executable, "-m", "workbench", "execute", str(generations), "-o", str(output), "-j", "2",
              "--no-reference-cache", "--no-progress"]
    first = subprocess.run([*common, "--timeout", "30", "--limit", "2"], capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    before = output.read_bytes()
    again = subprocess.run([*common, "--resume"], capture_output=True, text=True, timeout=600,
                           env={**__import__("os").environ, "COLUMNS": "1000"})
    assert again.returncode == 1, again.stderr
    lines = [line for line in again.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    line = lines[0]
    assert ("--timeout 30.0 -> the default (calibrated per task: max(4 s, 4 x the reference solution's time))"
            in line), line
    assert "not set" not in line and "None" not in line
    assert "pass the same options as before" in line and "a fresh --output" in line and "--overwrite" in line
    assert line.count(". ") == 0, line  # one sentence
    assert output.read_bytes() == before
