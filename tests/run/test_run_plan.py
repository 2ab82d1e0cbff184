"""What a rerun of ``workbench run`` plans on a run folder that holds finished stages (probe 30):
a stage left out of ``[run] stages`` but finished and up to date is an input like any other.
Real sandboxed execution, real chrF, correlation, dedup and bias on a slice of the bundled
ICE-Score set (no LLM)."""

from __future__ import annotations

import gzip
import html
import json
from pathlib import Path

import pytest

from workbench.run import load_config, run_pipeline
from workbench.run.preflight import run_preflight
from workbench.run.runner import preview

BUNDLED = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"
TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/12")


def _generations(path: Path, *, per_outcome: int = 2, drop: tuple[str, ...] = ()) -> Path:
    """Real ICE-Score rows of three tasks: ``per_outcome`` passing and failing samples each."""
    rows = [json.loads(line) for line in gzip.open(BUNDLED, "rt")]
    picked = []
    for task in TASKS:
        mine = [r for r in rows if r["task_id"] == task]
        picked += [r for r in mine if str(r["passed"]) == "1"][:per_outcome]
        picked += [r for r in mine if str(r["passed"]) == "0"][:per_outcome]
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in drop}) + "\n" for r in picked))
    return path


def _write_config(tmp_path: Path, data: Path, stages: list[str], extra: str = "") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(f"""
[run]
output = "{tmp_path / 'run'}"
stages = {json.dumps(stages)}
[data]
source = "{data}"
code_column = "completion_multipl_e"
label_column = "passed"
[dedup]
group_column = "task_id"
[execute]
workers = 2
[score]
method = ["chrf"]
[correlate]
metric = ["codebleu"]
resamples = 100
[bias]
resamples = 100
{extra}""")
    return path


def _outcomes(result) -> dict[str, tuple[str, str | None]]:
    return {o.name: (o.status, o.detail) for o in result.outcomes}


FULL = ["dedup", "execute", "score_all", "correlate_all", "bias", "report"]


def test_run_stages_on_a_finished_folder_read_the_finished_stages(tmp_path: Path) -> None:
    """probe30 F1: ``stages = ["correlate_all", "report"]`` on a finished run correlated the
    dataset's shipped ``passed`` column (not execute/results.jsonl), dropped chrF (score_all was
    finished) and bias was "skipped: the dedup stage does not run"; the report still named
    execute/results.jsonl as the label. ``--stage correlate_all`` did it right."""
    config_path = _write_config(tmp_path, _generations(tmp_path / "gens.jsonl"), FULL)
    run = tmp_path / "run"
    run_pipeline(load_config(config_path))
    subset = ['run.stages=["correlate_all", "bias", "report"]']

    config = load_config(config_path, overrides=subset)
    preflight = run_preflight(config)
    plans = {plan.name: plan for plan in preflight.plans}
    argv = plans["correlate_all"].argv
    assert argv[0] == str(run / "score" / "all" / "scores_wide.jsonl")
    assert argv[argv.index("--results") + 1] == str(run / "execute" / "results.jsonl") and "--label" not in argv
    assert "chrf" in argv and plans["bias"].skip_reason is None
    assert preflight.available == {"dedup", "execute", "score_all"}
    # the same plan, hence the same key, as in the full run: nothing to do
    assert dict((plan.name, action) for plan, action in preview(config, preflight.plans))["correlate_all"] == "up-to-date"

    again = run_pipeline(load_config(config_path, overrides=[*subset, "correlate.resamples=150"]))
    outcomes = _outcomes(again)
    assert outcomes["correlate_all"][0] == "ran" and outcomes["bias"][0] == "up-to-date"
    assert outcomes["execute"] == ("skipped", "not in [run] stages (finished and up to date: the stages after it "
                                              "read its outputs)")
    correlation = json.loads((run / "correlate" / "all.json").read_text())
    assert set(correlation["metrics"]) == {"chrf", "codebleu"} and "execute/results.jsonl" in correlation["source"]
    stages = json.loads((run / "run.json").read_text())["stages"]
    assert stages["execute"]["status"] == "done" and stages["dedup"]["status"] == "done"
    report = json.loads((run / "report.json").read_text())
    assert report["counts"]["label_source"] == "our execution results, execute/results.jsonl"

    # an execute stage that is out of date (another timeout factor) is no input: the label is the
    # dataset's, and the report says so although execute/results.jsonl is in the folder
    stale = run_pipeline(load_config(config_path, overrides=[*subset, "execute.timeout_factor=6"]))
    assert _outcomes(stale)["execute"] == ("skipped", "not in [run] stages")
    argv = json.loads((run / "run.json").read_text())["stages"]["correlate_all"]["argv"]
    assert "--results" not in argv and argv[argv.index("--label") + 1] == "passed" and "chrf" in argv
    report = json.loads((run / "report.json").read_text())
    assert report["counts"]["label_source"] == ("the dataset's shipped 'passed' column, the correlate stages did "
                                                "not read the execution results")
    assert "execution label (from the dataset's shipped 'passed' column" in html.unescape((run / "report.html").read_text())


def test_a_score_stage_without_a_passed_column_stratifies_on_the_finished_execution(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """probe30 F1, same cause: ``stages = ["score", ...]`` on generations without a ``passed`` column
    failed with "column 'passed' not found" although the folder held finished execution results."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    data = _generations(tmp_path / "gens.jsonl", per_outcome=1, drop=("passed",))
    config_path = _write_config(tmp_path, data, ["execute"])
    config_path.write_text(config_path.read_text().replace('label_column = "passed"\n', "").replace(
        'method = ["chrf"]', 'method = ["p-correct", "chrf"]\nmodel = "openai/judge"\nlimit = 2\nselect = "stratified"'))
    run_pipeline(load_config(config_path))
    preflight = run_preflight(load_config(config_path, overrides=['run.stages=["score", "correlate", "report"]']))
    plans = {plan.name: plan for plan in preflight.plans}
    assert plans["score"].argv[plans["score"].argv.index("--results") + 1] == str(
        tmp_path / "run" / "execute" / "results.jsonl")
    assert "--results" in plans["correlate"].argv
