"""`workbench run` as a new user meets it: config values of the wrong type or shape fail in
the preflight (before any stage has spent time), Rich never eats the "[table]" names of a
message, and Ctrl-C in the middle of a stage is an interruption that a rerun resumes (real
subprocess, real SIGINT, real sandboxed execution; no LLM)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ctrl_c import interrupt_after_rows, jsonl_rows
from run_config import write_run_config
from workbench.cli import app
from workbench.errors import WorkbenchError
from workbench.run import load_config, run_pipeline
from workbench.run.config import ConfigError, build_config

BASE = {"data": {"source": "humaneval-codex-python", "code_column": "completion_multipl_e"}}


def _config(tmp_path: Path, **tables: dict) -> dict:
    return {**BASE, "run": {"output": str(tmp_path / "run")}, **tables}


@pytest.mark.parametrize("table, value, message", [
    ("score", {"method": "chrf"}, None),  # a scalar for a repeatable option becomes a list
    ("score", {"method": 3}, r"\[score\] method must be one of .*, not '3'"),  # checked as its field checks it
    ("score", {"limit": [1, 2]}, r"\[score\] limit takes one value, not a list"),
    ("score", {"no_prompt": "false"}, r"\[score\] no_prompt is a switch: true or false"),
    ("execute", {"workers": {"n": 2}}, r"\[execute\] workers takes a value, not a table"),
    ("run", {"stages": 3}, r"\[run\] stages must be a list"),
    ("run", {"output": 7}, r"\[run\] output must be a folder path"),
])
def test_values_of_the_wrong_shape_are_config_errors(tmp_path: Path, table: str, value: dict, message: str | None) -> None:
    raw = _config(tmp_path)
    raw[table] = {**raw.get(table, {}), **value}
    if message is None:
        assert build_config(raw).sections["score"]["method"] == ["chrf"]
    else:
        with pytest.raises(ConfigError, match=message):
            build_config(raw)


def test_a_non_string_method_is_an_unknown_method_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[score\] method must be one of .*, not '3'"):
        run_pipeline(build_config(_config(tmp_path, score={"method": 3})))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("override, message", [
    ('score.limit="ten"', r"\[score\] limit must be an integer, not 'ten'"),
    ("execute.workers=-1", r"\[execute\] workers must be >= 0, not -1"),
])
def test_a_value_the_command_refuses_fails_before_any_stage(tmp_path: Path, override: str, message: str) -> None:
    raw = _config(tmp_path, score={"method": ["chrf", "ice-score"], "model": "local/smollm2-135m"})
    with pytest.raises(ConfigError, match=message):
        run_pipeline(build_config(raw, overrides=[override]))
    assert not (tmp_path / "run").exists()  # nothing ran, not even dedup


def test_a_bad_value_on_the_command_line_is_one_error_line(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\n'
                    'code_column = "completion_multipl_e"\n[score]\nmethod = ["chrf"]\n')
    result = CliRunner().invoke(app, ["run", str(path), "--set", "correlate.resamples=lots", "--dry-run"])
    assert result.exit_code == 1
    assert "Error: [correlate] resamples must be an integer, not 'lots'" in result.output
    assert "Traceback" not in result.output


def test_table_names_in_skip_reasons_are_printed_not_eaten_as_markup(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\n'
                    'code_column = "completion_multipl_e"\n[score]\nmethod = ["chrf"]\n')
    result = CliRunner().invoke(app, ["run", str(path), "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "skipped: [decontaminate] against is not set" in result.output
    assert "no LLM method in [score] method" in result.output


def test_a_run_that_computes_nothing_says_so_and_a_limit_without_use_too(tmp_path: Path) -> None:
    """probe23: stages that were all skipped, and a --limit no stage uses, passed without a word.
    Real pipeline (only the score stage, skipped: no LLM method; then the report)."""
    path = tmp_path / "c.toml"
    path.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["score", "report"]\n[data]\n'
                    'source = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n[score]\nmethod = ["chrf"]\n')
    result = CliRunner().invoke(app, ["run", str(path), "--limit", "5"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "warning: no stage computed anything: each selected stage was skipped" in output
    assert "note: --limit sets [score] limit, and the score stage did not run (no LLM method" in output


def _generations(path: Path, rows: int) -> None:
    """HumanEval completions that each sleep 0.4 s, so a SIGINT lands mid-stage."""
    lines = []
    for index in range(rows):
        lines.append(json.dumps({"task_id": f"HumanEval/{index}", "sample_id": 0,
                                 "completion": "    import time\n    time.sleep(0.4)\n    return None\n"}))
    path.write_text("\n".join(lines) + "\n")


def _finished(results: Path) -> list[dict]:
    return [row for row in jsonl_rows(results) if row.get("phase") != "calibrate"]


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_an_interruption_in_execute_is_recorded_and_a_rerun_resumes(tmp_path: Path, signal_name: str) -> None:
    """Ctrl-C (SIGINT) and SIGTERM (SLURM, ``timeout``) mid-stage: the stage is recorded ``interrupted`` in
    run.json, the advice says to rerun (not execute's own ``--resume``), the exit status is 128 + the signal, and
    the rerun resumes, keeping the first run's rows. SIGTERM killed ``workbench run`` like SIGKILL before (exit
    143, no advice, the stage left ``running``). Real subprocess, real signal, real sandboxed samples."""
    import signal

    signum = getattr(signal, signal_name)
    data = tmp_path / "gens.jsonl"
    _generations(data, 12)
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["execute"]\n[data]\nsource = "{data}"\n'
                      '[execute]\nworkers = 1\ntimeout = 5.0\n')
    command = [sys.executable, "-m", "workbench", "run", str(config)]
    results = tmp_path / "run" / "execute" / "results.jsonl"
    returncode, stderr = interrupt_after_rows(command, lambda: _finished(results), signum=signum)
    assert returncode == 128 + signum, stderr
    assert "Rerun the same command to resume" in stderr and "exited with status" not in stderr
    assert "--resume" not in stderr  # execute's own hint would be wrong here: the rerun resumes by itself
    assert "Traceback" not in stderr
    if signal_name == "SIGTERM":
        assert "Interrupted by SIGTERM. Rerun the same command to resume" in " ".join(stderr.split()), stderr
    stage = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["execute"]
    assert stage["status"] == "interrupted", stage
    before = _finished(results)
    assert 2 <= len(before) < 12

    outcome = run_pipeline(load_config(config))
    assert [o.status for o in outcome.outcomes if o.name == "execute"] == ["resumed"]
    after = _finished(results)
    keys = [row["task_id"] for row in after]
    assert sorted(keys) == sorted(f"HumanEval/{i}" for i in range(12)) and len(set(keys)) == 12
    assert after[: len(before)] == before  # the rows of the first run were kept, not executed again


def test_an_execution_mode_the_library_refuses_fails_before_any_stage(tmp_path: Path) -> None:
    raw = _config(tmp_path, execute={"mode": "program"}, score={"method": ["chrf"]})
    with pytest.raises(ConfigError, match=r"\[execute\] mode must be one of completion, full, not 'program'"):
        run_pipeline(build_config(raw))
    assert not (tmp_path / "run").exists()


def test_a_relative_source_next_to_the_config_says_where_it_is_read_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    _generations(folder / "gens.jsonl", 2)
    (folder / "c.toml").write_text('[run]\nstages = ["execute"]\n[data]\nsource = "gens.jsonl"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(ConfigError, match=r"not in the current folder .*next to the config.*gens\.jsonl"):
        run_pipeline(load_config(folder / "c.toml"))
    assert not (elsewhere / "runs").exists()
    monkeypatch.chdir(folder)  # from the config's folder the same file is found
    from workbench.run.preflight import run_preflight

    assert run_preflight(load_config(folder / "c.toml")).rows == 2


def test_a_score_stage_killed_before_its_final_files_resumes_from_its_rows(tmp_path: Path) -> None:
    # SIGKILL mid-score leaves scores.jsonl (appended row by row) but no scores_wide.jsonl and
    # run.json saying "running": the state is made exactly so, from a real chrF run
    data = tmp_path / "gens.jsonl"
    rows = [{"task_id": f"T{i}", "sample_id": 0, "completion": f"x = {i}\n", "reference": f"x = {i + 1}\n"}
            for i in range(6)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["score_all"]\n[data]\nsource = "{data}"\n'
                      '[score]\nmethod = ["chrf"]\n')
    run_pipeline(load_config(config))
    folder = tmp_path / "run" / "score" / "all"
    scores = folder / "scores.jsonl"
    kept = scores.read_text().splitlines(keepends=True)[:3]
    scores.write_text("".join(kept))
    (folder / "scores_wide.jsonl").unlink()
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    manifest["stages"]["score_all"]["status"] = "running"
    (tmp_path / "run" / "run.json").write_text(json.dumps(manifest))

    outcome = run_pipeline(load_config(config))
    assert [o.status for o in outcome.outcomes if o.name == "score_all"] == ["resumed"]
    lines = scores.read_text().splitlines(keepends=True)
    assert lines[:3] == kept and len(lines) == 6  # the three kept rows untouched, three scored now
    assert sorted(json.loads(line)["task_id"] for line in lines) == [f"T{i}" for i in range(6)]


def test_a_mistyped_stage_or_a_folder_for_the_config_is_one_clear_line(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[data]\nsource = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n'
                    '[score]\nmethod = ["chrf"]\n')
    result = CliRunner().invoke(app, ["run", str(path), "--stage", "corelate", "--dry-run"])
    assert result.exit_code == 1 and "unknown stage 'corelate' (did you mean 'correlate'?)" in result.output
    result = CliRunner().invoke(app, ["run", str(tmp_path), "--dry-run"])
    assert result.exit_code == 1 and "is a folder; give the config file" in result.output


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_file_where_the_run_folder_goes_is_one_clear_line(tmp_path: Path, dry_run: bool) -> None:
    """``-o notes.txt`` (an existing file) was a FileExistsError traceback after the preflight, and
    --dry-run planned stages into it."""
    path = tmp_path / "c.toml"
    path.write_text('[data]\nsource = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n'
                    '[score]\nmethod = ["chrf"]\n')
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine\n")
    for output in (blocker, blocker / "run"):
        result = CliRunner().invoke(app, ["run", str(path), "-o", str(output), "--no-progress"]
                                    + (["--dry-run"] if dry_run else []))
        assert result.exit_code == 1, result.output
        assert f"{blocker} exists and is not a folder; choose another path" in " ".join(result.output.split())
    assert blocker.read_text() == "mine\n"


def _chrf_config(tmp_path: Path, data_name: str, run_name: str, stages: list[str], reference) -> Path:
    """Six labelled generations (reference(i) is row i's reference) and a chrF-only config."""
    data = tmp_path / data_name
    data.write_text("".join(json.dumps({"task_id": f"T{i}", "sample_id": 0, "completion": f"x = {i}\n",
                                        "reference": f"x = {reference(i)}\n", "passed": i % 2}) + "\n" for i in range(6)))
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / run_name}"\nstages = {json.dumps(stages)}\n'
                      f'[data]\nsource = "{data}"\nlabel_column = "passed"\n[score]\nmethod = ["chrf"]\n'
                      '[correlate]\nresamples = 100\n')
    return config


def test_a_stage_left_out_of_a_fresh_folder_is_not_called_out_of_date(tmp_path: Path) -> None:
    """newuser34: `workbench run configs/humaneval.toml --stage dedup --stage execute` in a fresh clone
    ended with the report "read the outputs of decontaminate, score, ..., which are out of date
    (options or inputs changed since they ran ...)": they never ran. Real chrF, no LLM."""
    config = _chrf_config(tmp_path, "gens.jsonl", "run", ["score_all", "correlate_all", "report"], lambda i: i + 1)
    fresh = run_pipeline(load_config(config), only=["score_all"])
    detail = {o.name: o.detail for o in fresh.outcomes}["report"]
    assert "out of date" not in detail, detail
    assert detail == "correlate_all has not finished in this run folder (add --stage correlate_all to run it)"
    # once it ran, a change of its options is "out of date" again
    run_pipeline(load_config(config))
    changed = run_pipeline(load_config(config, overrides=["correlate.resamples=150"]), only=["score_all"])
    assert {o.name: o.detail for o in changed.outcomes}["report"].startswith(
        "read the outputs of correlate_all, which are out of date")


def _six_tasks(path: Path, task: str = "task_id", sample: str = "sample_id") -> Path:
    """Write 12 rows to ``path`` (JSON Lines): tasks T0..T5 of 2 samples each (columns ``task`` and ``sample``),
    the code ``gen`` "x = <task>", its ``reference`` "x = <row>", ``passed`` 0 then 1 in each task."""
    path.write_text("".join(json.dumps({task: f"T{i // 2}", sample: i % 2, "gen": f"x = {i // 2}\n",
                                        "reference": f"x = {i}\n", "passed": i % 2}) + "\n" for i in range(12)))
    return path


def test_bias_reads_score_alls_table_when_the_data_names_task_and_sample_otherwise(tmp_path: Path) -> None:
    """newuser34: `[data] task_column = "problem"`, `sample_column = "completion_id"`: the bias stage
    read score_all's table (which names them task_id and sample_id) with `--id-column
    problem,completion_id` and failed: "column 'problem' not found". Real dedup, chrF and bias."""
    data = _six_tasks(tmp_path / "gens.jsonl", task="problem", sample="completion_id")
    config = write_run_config(tmp_path / "c.toml", {
        "run": {"stages": ["dedup", "score_all", "bias", "report"]},
        "data": {"task_column": "problem", "sample_column": "completion_id", "code_column": "gen",
                 "label_column": "passed"},
        "dedup": {"min_tokens": 1}, "score": {"method": ["chrf"]}, "bias": {"resamples": 100},
    }, output=tmp_path / "run", source=data)
    result = run_pipeline(load_config(config))
    assert {o.name: o.status for o in result.outcomes}["bias"] == "ran", [(o.name, o.detail) for o in result.outcomes]
    bias = json.loads((tmp_path / "run" / "bias" / "report.json").read_text())
    assert bias["join"]["joined"] == 12 and bias["bootstrap"]["unit"] == "task"


def test_a_dedup_only_run_of_a_corpus_without_tasks_needs_no_task_column(tmp_path: Path) -> None:
    """newuser34: a corpus of files (`id`, `content`; no tasks) with `stages = ["dedup", "report"]` and
    `[data] id_column = "id"` was refused: "column 'task_id' not found (set it with [data] task_column)",
    though dedup reads its ids from id_column and no stage that runs keys rows by task. Real dedup."""
    data = tmp_path / "corpus.jsonl"
    body = "def f{k}(alpha, beta):\n    gamma = alpha * beta + {k}\n    return gamma - alpha\n"
    data.write_text("".join(json.dumps({"id": f"file{i}.py", "content": body.format(k=i % 3)}) + "\n" for i in range(6)))
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["dedup", "report"]\n'
                      f'[data]\nsource = "{data}"\ncode_column = "content"\nid_column = "id"\n'
                      '[dedup]\nmin_tokens = 1\n')
    result = run_pipeline(load_config(config))
    assert {o.name: o.status for o in result.outcomes}["dedup"] == "ran", [(o.name, o.detail) for o in result.outcomes]
    dedup = json.loads((tmp_path / "run" / "dedup" / "report.json").read_text())
    assert dedup["overall"]["duplicate_rows"] == 3
    # a stage that keys rows by task still asks for the column
    with pytest.raises(WorkbenchError, match=r"column 'task_id' not found \(set it with \[data\] task_column\)"):
        run_pipeline(load_config(config, overrides=['run.stages=["dedup", "execute"]']))


def test_dry_run_says_which_stages_would_run_after_a_change(tmp_path: Path) -> None:
    config = _chrf_config(tmp_path, "gens.jsonl", "run", ["score_all", "correlate_all"], lambda i: i + 1)
    fresh = CliRunner().invoke(app, ["run", str(config), "--dry-run"])
    assert "score_all: would run:" in fresh.output and "correlate_all: would run:" in fresh.output
    run_pipeline(load_config(config))
    same = CliRunner().invoke(app, ["run", str(config), "--dry-run"])
    assert "score_all: up-to-date" in same.output and "correlate_all: up-to-date" in same.output
    changed = CliRunner().invoke(app, ["run", str(config), "--dry-run", "--set", "correlate.resamples=150"])
    assert "score_all: up-to-date" in changed.output and "correlate_all: would run:" in changed.output
    # and the run does what the dry run said
    outcome = run_pipeline(load_config(config, overrides=["correlate.resamples=150"]))
    assert {o.name: o.status for o in outcome.outcomes}["score_all"] == "up-to-date"
    assert {o.name: o.status for o in outcome.outcomes}["correlate_all"] == "ran"


def test_editing_the_data_file_makes_its_stages_stale(tmp_path: Path) -> None:
    data = tmp_path / "gens.jsonl"

    def write(offset: int) -> None:
        data.write_text("".join(json.dumps({"task_id": f"T{i}", "sample_id": 0, "completion": f"x = {i + offset}\n",
                                            "reference": f"x = {i}\n"}) + "\n" for i in range(4)))

    write(0)
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["score_all"]\n[data]\nsource = "{data}"\n'
                      '[score]\nmethod = ["chrf"]\n')
    run_pipeline(load_config(config))
    wide = tmp_path / "run" / "score" / "all" / "scores_wide.jsonl"
    before = [json.loads(line)["chrf"] for line in wide.read_text().splitlines()]
    assert before == [1.0] * 4  # each completion equals its reference
    write(10)  # same path, new generations
    assert "score_all: would run:" in CliRunner().invoke(app, ["run", str(config), "--dry-run"]).output
    outcome = run_pipeline(load_config(config))
    assert {o.name: o.status for o in outcome.outcomes}["score_all"] == "ran"
    after = [json.loads(line)["chrf"] for line in wide.read_text().splitlines()]
    assert all(score < 1.0 for score in after)


def test_a_run_folder_with_brackets_in_its_name_runs_every_stage(tmp_path: Path) -> None:
    # datasets reads data_files as glob patterns: "run [1]" matched nothing and correlate failed
    config = _chrf_config(tmp_path, "gens [v2].jsonl", "run [1]", ["score_all", "correlate_all", "report"],
                          lambda i: i * 2)
    outcome = run_pipeline(load_config(config))
    assert {o.name: o.status for o in outcome.outcomes}["correlate_all"] == "ran"
    assert json.loads((tmp_path / "run [1]" / "correlate" / "all.json").read_text())


def test_a_data_folder_with_brackets_in_its_path_is_read(tmp_path: Path) -> None:
    # datasets reads a data path as a glob pattern; the loader passes the folder's files escaped
    from workbench.data.loading import load_records

    folder = tmp_path / "data [1]*?"
    folder.mkdir()
    (folder / "train.jsonl").write_text(json.dumps({"task_id": "T0", "completion": "x = 1\n"}) + "\n")
    (folder / "test.jsonl").write_text(json.dumps({"task_id": "T1", "completion": "y = 2\n"}) + "\n")
    records = load_records(str(folder))
    assert sorted(records.splits) == ["test", "train"]
    assert records.splits["train"]["task_id"] == ["T0"] and records.splits["test"]["task_id"] == ["T1"]


@pytest.mark.parametrize(("table", "key", "owner"), [
    ("score", "generation_column", r"\[data\] code_column"), ("execute", "task_column", r"\[data\] task_column"),
    ("dedup", "offline", r"\[run\] offline"), ("correlate", "sample_column", r"\[data\] sample_column"),
    ("score", "offline", r"\[run\] offline"), ("execute", "offline", r"\[run\] offline"),
])
def test_a_stage_table_may_not_set_a_column_that_every_stage_shares(tmp_path: Path, table: str, key: str,
                                                                     owner: str) -> None:
    # a [score] task_column of its own would give score rows ids that execute's rows do not have
    raw = _config(tmp_path, **{table: {key: True if key == "offline" else "other"}})
    with pytest.raises(ConfigError, match=rf"\[{table}\] {key}: set it once as {owner}"):
        build_config(raw)


def test_a_column_named_in_a_stage_table_is_checked_before_any_stage(tmp_path: Path) -> None:
    from workbench.errors import MissingColumnError

    raw = _config(tmp_path, score={"method": ["chrf"], "carry": ["completion_typo"]})
    with pytest.raises(MissingColumnError, match=r"'completion_typo'.*\[score\] carry"):
        run_pipeline(build_config(raw))
    raw = _config(tmp_path, dedup={"group_column": "task"}, score={"method": ["chrf"]})
    with pytest.raises(MissingColumnError, match=r"'task'.*\[dedup\] group_column"):
        run_pipeline(build_config(raw))
    assert not (tmp_path / "run").exists()


def test_a_failed_stage_skips_what_reads_it_and_the_report_still_shows_it(tmp_path: Path) -> None:
    """The execute stage fails for real (its problems T0..T5 have no tests; task ids that are not
    in the problems, as before, are now refused by the preflight): dedup and
    score_all, which do not read its results, still run; correlate_all and bias, which do, are
    skipped with the reason; the report stage runs and its page says where the run failed."""
    config = _chrf_config(tmp_path, "gens.jsonl", "run", ["dedup", "execute", "score_all", "correlate_all", "bias",
                                                          "report"], lambda i: i + 1)
    problems = tmp_path / "problems.jsonl"
    problems.write_text("".join(json.dumps({"task_id": f"T{i}", "prompt": "", "test": ""}) + "\n" for i in range(6)))
    config.write_text(config.read_text() + f'[execute]\nworkers = 1\nproblems = "{problems}"\n[bias]\nresamples = 100\n')
    result = CliRunner().invoke(app, ["run", str(config)])
    assert result.exit_code == 1, result.output
    stages = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]
    assert stages["execute"]["status"] == "failed" and "have no tests" in stages["execute"]["error"]
    assert {name: stages[name]["status"] for name in ("dedup", "score_all", "report")} == dict.fromkeys(
        ("dedup", "score_all", "report"), "done")
    for name in ("correlate_all", "bias"):
        assert (stages[name]["status"], stages[name]["detail"]) == ("skipped", "stage execute failed"), name
    page = (tmp_path / "run" / "report.html").read_text()
    assert "failed at stage execute" in page and "have no tests" in page
    assert "rerun the same command to continue" in " ".join(result.output.split())


def test_execute_limit_that_misses_the_scored_subset_is_a_preflight_warning(tmp_path: Path) -> None:
    """[score] selects its stratified subset among all 3,220 rows; [execute] limit = 100
    runs only the first 100, so correlate would join nothing: the dry run says so."""
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["execute", "score", "correlate"]\n'
                      '[data]\nsource = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n'
                      'label_column = "passed"\n[execute]\nlimit = 100\n'
                      '[score]\nmethod = ["p-correct"]\nmodel = "openai/judge"\nlimit = 4\nselect = "stratified"\n')
    warned = CliRunner().invoke(app, ["run", str(config), "--dry-run"], env={"OPENAI_API_KEY": "sk-test"})
    assert warned.exit_code == 0, warned.output
    text = " ".join(warned.output.split())
    assert ("[execute] limit = 100 runs the first 100 rows, but 4 of the 4 samples [score] selects "
            "(select = 'stratified') are not among them: the correlate stage will find no row to join and fail") in text
    # the first 4 rows are among the first 100: nothing to warn about
    fine = CliRunner().invoke(app, ["run", str(config), "--dry-run", "--set", 'score.select="first"'],
                              env={"OPENAI_API_KEY": "sk-test"})
    assert fine.exit_code == 0 and "rows, but" not in fine.output, fine.output


def test_execute_limit_below_the_rows_says_correlate_all_joins_only_those(tmp_path: Path) -> None:
    """correlate_all correlates every row with execution; [execute] limit = 100 of 3,220 rows leaves
    3,120 without a label: the dry run says so (and says nothing without a limit)."""
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["execute", "score_all", "correlate_all"]\n'
                      '[data]\nsource = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n'
                      '[execute]\nlimit = 100\n[score]\nmethod = ["chrf"]\n')
    warned = CliRunner().invoke(app, ["run", str(config), "--dry-run"])
    assert warned.exit_code == 0, warned.output
    assert ("[execute] limit = 100 executes 100 of the 3220 rows: correlate_all (every row, labelled by execution) "
            "joins only those 100, and the other 3120 drop out of it") in " ".join(warned.output.split())
    config.write_text(config.read_text().replace("[execute]\nlimit = 100\n", ""))
    unlimited = CliRunner().invoke(app, ["run", str(config), "--dry-run"])
    assert unlimited.exit_code == 0 and "drop out of it" not in unlimited.output, unlimited.output


def test_a_stage_that_fails_on_a_rerun_leaves_no_numbers_of_the_earlier_run(tmp_path: Path) -> None:
    """Real chrF and correlation: a first run correlates; the data is then edited so that no row has a
    label, and the rerun's correlate_all fails. Its earlier correlation file is gone (the report must
    not show the first run's numbers beside the second run's counts) and the report says why."""
    config = _chrf_config(tmp_path, "gens.jsonl", "run", ["score_all", "correlate_all", "report"], lambda i: i + 1)
    run_pipeline(load_config(config))
    correlation = tmp_path / "run" / "correlate" / "all.json"
    assert correlation.exists()
    data = tmp_path / "gens.jsonl"
    data.write_text("".join(json.dumps({**json.loads(line), "passed": None}) + "\n" for line in data.read_text().splitlines()))
    result = CliRunner().invoke(app, ["run", str(config)])
    assert result.exit_code == 1, result.output
    stages = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]
    assert stages["correlate_all"]["status"] == "failed"
    assert not correlation.exists()
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert "failed at stage correlate_all" in json.dumps(report)
    assert report["correlation"].get("all") is None


@pytest.mark.parametrize("override, key", [('bias.metric=["nope"]', r"\[bias\] metric"),
                                           ('correlate.length_column="nope"', r"\[correlate\] length_column")])
def test_a_column_that_correlate_or_bias_reads_is_checked_before_any_stage(tmp_path: Path, override: str, key: str) -> None:
    from workbench.errors import MissingColumnError

    raw = _config(tmp_path, score={"method": ["chrf"]})
    with pytest.raises(MissingColumnError, match=rf"'nope'.*{key}"):
        run_pipeline(build_config(raw, overrides=[override]))
    assert not (tmp_path / "run").exists()
    # the columns they may name: a cheap method, execute's label, a column of the data
    fine = build_config(raw, overrides=['bias.metric=["chrf", "passed", "codebleu"]', 'correlate.length_column="prompt"'])
    from workbench.run.preflight import run_preflight
    plans = {plan.name: plan for plan in run_preflight(fine).plans}
    assert {"codebleu", "prompt"} <= set(plans["score_all"].config().carry)


def test_no_progress_keeps_the_bars_out_of_a_log(tmp_path: Path) -> None:
    config = _chrf_config(tmp_path, "gens.jsonl", "run", ["score_all", "correlate_all"], lambda i: i + 1)
    quiet = CliRunner().invoke(app, ["run", str(config), "--no-progress", "--force"])
    assert quiet.exit_code == 0, quiet.output
    bar = re.compile(r"scoring\s+━+")  # the score stage's progress bar (tables use the same line character)
    assert not bar.search(quiet.output) and "score_all" in quiet.output
    drawn = CliRunner().invoke(app, ["run", str(config), "--force"])
    assert bar.search(drawn.output)  # drawn once, at its end, on a non-terminal


def test_another_model_or_temperature_does_not_change_the_every_row_stage(tmp_path: Path) -> None:
    """score_all runs only the methods without an LLM (chrF): the LLM's settings are not its options, so
    changing them reruns the LLM subset alone, not chrF, correlate_all and bias."""
    from workbench.run.stages import plan_stages

    columns = {"task_id", "sample_id", "completion_multipl_e", "prompt", "reference", "passed"}
    raw = _config(tmp_path, score={"method": ["p-correct", "chrf"], "model": "local/smollm2-135m", "temperature": 0.0})
    plans = {p.name: p for p in plan_stages(build_config(raw), columns)}
    other = {p.name: p for p in plan_stages(build_config(
        raw, overrides=['score.model="local/qwen2.5-coder-0.5b"', "score.temperature=0.7", "score.max_tokens=99"]), columns)}
    assert plans["score_all"].argv == other["score_all"].argv
    assert plans["score"].argv != other["score"].argv
    assert "--model" not in plans["score_all"].argv and "--method" in plans["score_all"].argv


def test_a_stage_run_alone_on_out_of_date_inputs_says_so(tmp_path: Path) -> None:
    """Real chrF and correlation: after the data changes, `--stage correlate_all` correlates the old
    scores (score_all is not selected); the outcome and run.json say which input is out of date."""
    config = _chrf_config(tmp_path, "gens.jsonl", "run", ["score_all", "correlate_all"], lambda i: i + 1)
    run_pipeline(load_config(config))
    alone = run_pipeline(load_config(config), only=["correlate_all"])
    assert {o.name: o.detail for o in alone.outcomes}["correlate_all"] is None  # nothing changed: no note
    data = tmp_path / "gens.jsonl"
    data.write_text(data.read_text().replace('"x = 2\\n"', '"x = 20\\n"'))
    alone = run_pipeline(load_config(config), only=["correlate_all"])
    detail = {o.name: o.detail for o in alone.outcomes}["correlate_all"]
    assert detail.startswith("read the outputs of score_all, which are out of date") and "--stage score_all" in detail
    assert json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["correlate_all"]["detail"] == detail


def test_execute_limit_that_leaves_most_of_the_scored_subset_unexecuted_says_correlate_refuses(tmp_path: Path) -> None:
    """The preflight note said "correlate uses only the 1 executed ones" when [execute] limit = 1 left 3 of the 4
    scored samples without a result; correlate refuses such a join (fewer than half of the score rows have a
    result) unless [correlate] allow_partial_join is set, so the note must say that."""
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["execute", "score", "correlate"]\n'
                      '[data]\nsource = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n'
                      'label_column = "passed"\n[execute]\nlimit = 1\n'
                      '[score]\nmethod = ["p-correct"]\nmodel = "openai/judge"\nlimit = 4\nselect = "first"\n')
    env = {"OPENAI_API_KEY": "sk-test"}
    most = CliRunner().invoke(app, ["run", str(config), "--dry-run"], env=env)
    text = " ".join(most.output.split())
    assert most.exit_code == 0, most.output
    assert "3 of the 4 samples [score] selects (select = 'first') are not among them" in text, text
    assert "correlate uses only" not in text, text
    assert ("the correlate stage will refuse its join (only 1 of the 4 scored samples has a result), unless "
            "[correlate] allow_partial_join = true") in text, text
    allowed = CliRunner().invoke(app, ["run", str(config), "--dry-run", "--set", "correlate.allow_partial_join=true"],
                                 env=env)
    assert "correlate uses only the 1 executed one" in " ".join(allowed.output.split()), allowed.output
    few = CliRunner().invoke(app, ["run", str(config), "--dry-run", "--set", "execute.limit=3"], env=env)
    assert "correlate uses only the 3 executed ones" in " ".join(few.output.split()), few.output


def test_the_bias_stage_notes_name_the_dedup_key_not_eaten_as_markup(tmp_path: Path) -> None:
    """newuser35: under `workbench run` the bias note on rows too short to compare read "(
    min_tokens; ...": Rich took the "[dedup]" of "[dedup] min_tokens" for a style tag and dropped it.
    The ids the bias report lists are printed as they are too (an id "[x]" lost its brackets). Real
    dedup, chrF and bias through the CLI."""
    data = _six_tasks(tmp_path / "gens.jsonl")
    config = write_run_config(tmp_path / "c.toml", {
        "run": {"stages": ["dedup", "score_all", "bias"]}, "data": {"code_column": "gen", "label_column": "passed"},
        "score": {"method": ["chrf"]}, "bias": {"resamples": 100},
    }, output=tmp_path / "run", source=data)
    result = CliRunner().invoke(app, ["run", str(config), "--no-progress"], terminal_width=400)
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())
    assert "too short to be compared as token bags ([dedup] min_tokens;" in printed, printed
