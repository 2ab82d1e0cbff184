"""Issue 12, item 7: no interval from fewer than two tasks (or too few samples), with the
reason and a small-n warning, and the resamples with an undefined coefficient on the terminal.
Real tables through the real ``workbench correlate`` command and :func:`run_correlate`."""

from __future__ import annotations

import json
import math
from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app
from workbench.correlate import CorrelateConfig, run_correlate
from workbench.correlate.bootstrap import MIN_INTERVAL_SAMPLES, no_interval_reason

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
    rows = [{"task_id": f"T{t}", "sample_id": s, "passed": s, "m": s + t / 10} for t in range(3) for s in range(2)]
    assert len(rows) < MIN_INTERVAL_SAMPLES
    report = run_correlate(str(_write(tmp_path / "few.jsonl", rows)), CorrelateConfig(metric=("m",), resamples=100))
    pooled = report.metrics["m"].pooled["kendall"]
    assert not math.isnan(pooled.value) and pooled.no_interval == no_interval_reason(3, 6)
    assert "only 6 samples" in pooled.no_interval


def test_undefined_resamples_are_counted_on_the_terminal(tmp_path):
    """Two tasks, each with a constant label: a resample drawing one task twice has a constant label
    and no pooled correlation; the count of such resamples is printed, not only written to JSON."""
    rows = [{"task_id": f"T{t}", "sample_id": s, "passed": t, "m": s + 3 * t} for t in range(2) for s in range(6)]
    path = _write(tmp_path / "two.jsonl", rows)
    report = run_correlate(str(path), CorrelateConfig(metric=("m",), resamples=200, seed=3))
    undefined = report.metrics["m"].pooled["kendall"].undefined_resamples
    assert 0 < undefined < 200
    result = runner.invoke(app, ["correlate", str(path), "-m", "m", "--resamples", "200", "--seed", "3"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"undefined in resamples (left out of the intervals): pooled τ-b {undefined}/200" in text


def test_enough_tasks_keep_their_interval(tmp_path):
    rows = [{"task_id": f"T{t}", "sample_id": s, "passed": int(s >= 3), "m": s + (t % 3) / 10}
            for t in range(8) for s in range(6)]
    report = run_correlate(str(_write(tmp_path / "many.jsonl", rows)), CorrelateConfig(metric=("m",), resamples=100))
    pooled = report.metrics["m"].pooled["kendall"]
    assert pooled.no_interval is None and not math.isnan(pooled.ci[0])
    assert not any("small n" in w for w in report.warnings)
