"""An independent recomputation of what ``workbench correlate`` prints, on a real slice of the
ICE-Score HumanEval-Python set (the copy bundled in the package), from scipy and numpy alone.

Nothing here calls workbench's statistics (the bootstrap is tests/scipy_bootstrap.py): each
bootstrap resample is built the slow, obvious way (the rows of every drawn task, repeated as often
as the task was drawn) and handed to ``scipy.stats.kendalltau`` (tau-b), ``pearsonr`` and
``spearmanr``. The definitions checked are the ones docs/correlate.md states:

* pooled: one coefficient over all rows; per problem: the mean over the tasks where the
  within-task coefficient is defined (ICE-Score's ``nanmean``), a resample weighting each task by
  how often it was drawn;
* the draws: ``numpy.random.default_rng(seed).multinomial(T, [1/T] * T, size=B)``, whole tasks in
  natural order of their ids (HumanEval/2 before HumanEval/10), whatever the order of the rows;
* the interval: the percentile interval (``numpy.percentile`` at (1 - c)/2 and (1 + c)/2);
* the paired comparison: A - B on the same draws, its percentile interval, and the two-sided
  p-value ``min(1, 2 (min(#{d* <= 0}, #{d* >= 0}) + 1) / (B + 1))``;
* ``--combine NAME=rank-mean:A,B,wA,wB``: ``(wA rank(A) + wB rank(B)) / ((wA + wB) n)`` with average
  ranks (``scipy.stats.rankdata``) over the rows where both have a value.

The JSON of the real CLI must agree with all of it to 1e-9.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from scipy_bootstrap import COEFFICIENTS, LEVELS, TaskBootstrap, draws, natural_order, p_value, percentile_interval
from workbench.cli import app

BUNDLED = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"


def _slice(path: Path) -> list[dict]:
    """Every 4th task of the bundled set (41 tasks x 20 samples, in file order), with the judge's
    score blanked on every 7th sample (as a judge whose answer could not be parsed leaves it), so
    the paired comparisons run on the rows both metrics have."""
    with gzip.open(BUNDLED, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    tasks = list(dict.fromkeys(row["task_id"] for row in rows))[::4]
    keep = set(tasks)
    out = []
    for row in rows:
        if row["task_id"] in keep:
            judge = None if row["sample_id"] % 7 == 0 else row["gpt35_nswr"]
            out.append({"task_id": row["task_id"], "sample_id": row["sample_id"], "passed": row["passed"],
                        "codebleu": row["codebleu"], "chrf": row["chrf"], "gpt35_nswr": judge})
    path.write_text("".join(json.dumps(row) + "\n" for row in out))
    return out


def _task_rows(task: np.ndarray, rows: np.ndarray, n_tasks: int) -> list[np.ndarray]:
    """``rows`` split by task: item ``t`` holds the rows of task ``t`` (tasks numbered 0 ... n_tasks - 1)."""
    return [rows[task[rows] == t] for t in range(n_tasks)]


@pytest.mark.parametrize("seed,confidence", [(0, 0.95), (7, 0.9)])
def test_cli_numbers_equal_a_scipy_task_bootstrap_on_a_real_slice(tmp_path, seed, confidence):
    resamples = 120
    rows = _slice(tmp_path / "slice.jsonl")
    result = CliRunner().invoke(app, [
        "correlate", str(tmp_path / "slice.jsonl"), "-m", "codebleu", "-m", "chrf", "-m", "gpt35_nswr",
        "--combine", "both=rank-mean:codebleu,gpt35_nswr,2,1", "--length-column", "none",
        "--resamples", str(resamples), "--seed", str(seed), "--confidence", str(confidence),
        "--json", str(tmp_path / "report.json"),
    ])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["bootstrap"]["interval"] == "percentile" and report["bootstrap"]["unit"] == "task"

    # tasks numbered by the number in their id ("HumanEval/N"): the natural order, whatever the row order
    order = {t: i for i, t in enumerate(natural_order(row["task_id"] for row in rows))}
    task = np.array([order[row["task_id"]] for row in rows])
    y = np.array([float(row["passed"]) for row in rows])
    values = {m: np.array([np.nan if row[m] is None else float(row[m]) for row in rows]) for m in ("codebleu", "chrf", "gpt35_nswr")}
    both = ~np.isnan(values["codebleu"]) & ~np.isnan(values["gpt35_nswr"])
    combined = np.full(len(rows), np.nan)
    combined[both] = (2 * stats.rankdata(values["codebleu"][both]) + stats.rankdata(values["gpt35_nswr"][both])) / (3 * both.sum())
    values["both"] = combined
    counts = draws(len(order), resamples, np.random.default_rng(seed))

    independent = {m: TaskBootstrap(v, y, _task_rows(task, np.flatnonzero(~np.isnan(v)), len(order)), counts) for m, v in values.items()}
    assert report["metrics"]["gpt35_nswr"]["n_samples"] == int((~np.isnan(values["gpt35_nswr"])).sum()) < len(rows)
    for name, expected in independent.items():
        for level in LEVELS:
            block = report["metrics"][name][level]
            for c in COEFFICIENTS:
                assert block[c] == pytest.approx(expected.point[level][c], abs=1e-9), (name, level, c)
                assert block[f"{c}_ci"] == pytest.approx(percentile_interval(expected.resampled[level][c], confidence), abs=1e-9), (name, level, c)

    compared = 0
    for comparison in report["comparisons"]:
        a, b = comparison["metric_a"], comparison["metric_b"]
        common = np.flatnonzero(~np.isnan(values[a]) & ~np.isnan(values[b]))
        ia = TaskBootstrap(values[a], y, _task_rows(task, common, len(order)), counts)
        ib = TaskBootstrap(values[b], y, _task_rows(task, common, len(order)), counts)
        assert comparison["n_samples"] == len(common)
        for level in LEVELS:
            for c in COEFFICIENTS:
                got = comparison["differences"][level][c]
                resampled = ia.resampled[level][c] - ib.resampled[level][c]
                assert got["difference"] == pytest.approx(ia.point[level][c] - ib.point[level][c], abs=1e-9), (a, b, level, c)
                assert got["difference_ci"] == pytest.approx(percentile_interval(resampled, confidence), abs=1e-9), (a, b, level, c)
                assert got["p_value"] == pytest.approx(p_value(resampled), abs=1e-12), (a, b, level, c)
                compared += 1
    assert compared == 6 * 6  # every pair of the four metrics (the combination among them)
