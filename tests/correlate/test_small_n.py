"""Issue 12, item 7: no interval from fewer than two tasks (or too few samples), with the
reason and a small-n warning, and the resamples with an undefined coefficient on the terminal.
Real tables through the real ``workbench correlate`` command and :func:`run_correlate`."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.correlate import CorrelateConfig, run_correlate
from workbench.correlate.bootstrap import MIN_INTERVAL_SAMPLES, MIN_INTERVAL_TASKS, no_interval_reason

runner = CliRunner()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _one_task(tmp_path: Path) -> Path:
    """One task, 12 samples, a metric that orders them perfectly: every resample redraws the task."""
    return _write(tmp_path / "one.jsonl", [{"task_id": "T0", "sample_id": s, "passed": int(s >= 6), "m": s / 12}
                                           for s in range(12)])


def test_one_task_gives_no_interval_with_the_reason(tmp_path):
    report = run_correlate(str(_one_task(tmp_path)), CorrelateConfig(metric=("m",), resamples=200))
    result = report.metrics["m"]
    for level in (result.pooled, result.per_problem):
        kendall = level["kendall"]
        assert kendall.value > 0.7  # defined (tau-b with a binary label)
        assert all(math.isnan(bound) for bound in kendall.ci)  # not [1.000, 1.000]
        assert "only 1 task contributes" in kendall.no_interval
        assert kendall.spans_zero is None
    assert any("small n: no pooled interval: only 1 task" in w for w in report.warnings)
    block = report.to_dict()["metrics"]["m"]["pooled"]
    assert block["kendall_ci"] == [None, None] and "only 1 task" in block["no_interval"]["kendall"]


def test_the_terminal_shows_no_zero_width_interval(tmp_path):
    result = runner.invoke(app, ["correlate", str(_one_task(tmp_path)), "-m", "m", "--resamples", "200"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "[0.739, 0.739]" not in text  # the zero-width interval of main
    assert "no CI: small n" in text and "only 1 task contributes" in text


def test_too_few_samples_give_no_interval(tmp_path):
    rows = [{"task_id": f"T{t}", "sample_id": 0, "passed": t % 2, "m": t % 2 + t / 10} for t in range(9)]
    assert len(rows) < MIN_INTERVAL_SAMPLES
    report = run_correlate(str(_write(tmp_path / "few.jsonl", rows)), CorrelateConfig(metric=("m",), resamples=100))
    pooled = report.metrics["m"].pooled["kendall"]
    assert not math.isnan(pooled.value) and pooled.no_interval == no_interval_reason(9, 9)
    assert "only 9 samples" in pooled.no_interval


@pytest.mark.parametrize("n_tasks", [MIN_INTERVAL_TASKS - 1, MIN_INTERVAL_TASKS])
def test_an_interval_needs_enough_tasks(tmp_path, n_tasks):
    """Three samples per task (12 or 15, above the sample minimum): 4 tasks give only 35 distinct
    task resamples and no interval; 5 give one."""
    rows = [{"task_id": f"T{t}", "sample_id": s, "passed": int(s > 0), "m": s + t / 10}
            for t in range(n_tasks) for s in range(3)]
    report = run_correlate(str(_write(tmp_path / "tasks.jsonl", rows)), CorrelateConfig(metric=("m",), resamples=200))
    pooled = report.metrics["m"].pooled["kendall"]
    if n_tasks < MIN_INTERVAL_TASKS:
        assert f"only {n_tasks} tasks contribute" in pooled.no_interval and all(math.isnan(b) for b in pooled.ci)
    else:
        assert pooled.no_interval is None and pooled.ci[0] <= pooled.ci[1]  # a percentile interval, finite


def test_undefined_resamples_are_counted_on_the_terminal(tmp_path):
    """Five tasks, each with a constant label (three 0, two 1): a resample drawing tasks of one
    label only has a constant label and no pooled correlation (about 9 % of resamples); the count
    of such resamples is printed, not only written to JSON."""
    rows = [{"task_id": f"T{t}", "sample_id": s, "passed": t % 2, "m": s + 3 * (t % 2)} for t in range(5) for s in range(6)]
    path = _write(tmp_path / "five.jsonl", rows)
    report = run_correlate(str(path), CorrelateConfig(metric=("m",), resamples=200, seed=3))
    undefined = report.metrics["m"].pooled["kendall"].undefined_resamples
    assert 0 < undefined < 200
    result = runner.invoke(app, ["correlate", str(path), "-m", "m", "--resamples", "200", "--seed", "3"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"undefined in resamples (left out of the intervals): pooled τ-b {undefined}/200" in text


def test_a_per_problem_correlation_undefined_in_every_task_is_said_not_called_small_n(tmp_path):
    """A new-user probe: a judge that gives every sample of a task the same score (a per-task
    constant, as a small model writing "4" everywhere) has a pooled tau-b but no per-problem one.
    The pooled undefined case was warned about; the per-problem one had no warning, and its paired
    comparison printed "n/a ... (no CI: small n)" over 161 tasks."""
    rows = []
    for t in range(12):
        for s in range(6):
            rows.append({"task_id": f"T{t}", "sample_id": s, "passed": int((s + t) % 3 == 0),
                         "per_task": t / 12, "m": ((s * 7 + t) % 10) / 10})
    path = _write(tmp_path / "per_task.jsonl", rows)
    report = run_correlate(str(path), CorrelateConfig(metric=("per_task", "m"), resamples=100))
    assert math.isnan(report.metrics["per_task"].per_problem["kendall"].value)
    warning = next(w for w in report.warnings if w.startswith("per_task:"))
    assert "the per-problem correlation is undefined in every task (constant metric in 12)" in warning, report.warnings
    result = runner.invoke(app, ["correlate", str(path), "-m", "per_task", "-m", "m", "--resamples", "100",
                                 "--length-column", "none"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert any("per-problem" in line and "n/a" in line for line in result.output.splitlines()), result.output
    assert "small n" not in result.output, result.output  # 12 tasks of 6 samples: nothing is small here
