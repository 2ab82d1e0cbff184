"""``workbench correlate --dedup``: the difference one row per cluster minus all rows of every
coefficient, with its paired task-bootstrap interval and p-value, recomputed from scipy and numpy
alone (tests/scipy_bootstrap.py) as ``test_scipy_crosscheck.py`` recomputes correlate's own numbers:

* the draws ``numpy.random.default_rng(seed).multinomial(T, [1/T] * T, size=B)`` over the tasks
  of all rows in natural order of their ids, the same draw for both sets of rows;
* each coefficient on the rows of every drawn task repeated as often as it was drawn (pooled), or
  the draw-weighted mean of the within-task coefficients where defined (per problem);
* the percentile interval of the differences and ``min(1, 2 (min(#{d <= 0}, #{d >= 0}) + 1) / (B + 1))``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from scipy_bootstrap import (COEFFICIENTS, LEVELS, TaskBootstrap, draws, kept_rows, p_value, percentile_interval,
                             task_units)
from workbench.cli import app
from workbench.correlate import correlate
from workbench.correlate.analysis import per_cluster_differences

BUNDLED = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"


def _check(got: dict, everything: TaskBootstrap, one_per_cluster: TaskBootstrap, confidence: float) -> None:
    for level in LEVELS:
        for c in COEFFICIENTS:
            d = got[level][c]
            resampled = one_per_cluster.resampled[level][c] - everything.resampled[level][c]
            assert d["a"] == pytest.approx(one_per_cluster.point[level][c], abs=1e-9), (level, c)
            assert d["b"] == pytest.approx(everything.point[level][c], abs=1e-9), (level, c)
            assert d["difference"] == pytest.approx(d["a"] - d["b"], abs=1e-12)
            assert d["difference_ci"] == pytest.approx(percentile_interval(resampled, confidence), abs=1e-9), (level, c)
            assert d["p_value"] == pytest.approx(p_value(resampled), abs=1e-12), (level, c)


def test_the_per_cluster_difference_equals_a_scipy_paired_task_bootstrap_on_a_real_slice(tmp_path):
    """Every 5th task of the bundled ICE-Score set, deduplicated within each task by the real dedup;
    the judge blanked on every 6th sample, so its rows differ from CodeBLEU's."""
    seed, resamples, confidence = 4, 80, 0.95
    with gzip.open(BUNDLED, "rt") as handle:
        everything = [json.loads(line) for line in handle]
    keep = set(list(dict.fromkeys(row["task_id"] for row in everything))[::5])
    rows = [{"task_id": row["task_id"], "sample_id": row["sample_id"], "code": row["completion_multipl_e"],
             "passed": row["passed"], "codebleu": row["codebleu"],
             "gpt35_nswr": None if row["sample_id"] % 6 == 0 else row["gpt35_nswr"]}
            for row in everything if row["task_id"] in keep]
    (tmp_path / "slice.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    runner = CliRunner()
    dedup = runner.invoke(app, ["dedup", str(tmp_path / "slice.jsonl"), "--code-column", "code", "--id-column",
                                "task_id,sample_id", "--group-column", "task_id", "--min-tokens", "5", "--no-progress",
                                "-o", str(tmp_path / "dedup")])
    assert dedup.exit_code == 0, dedup.output
    result = runner.invoke(app, ["correlate", str(tmp_path / "slice.jsonl"), "-m", "codebleu", "-m", "gpt35_nswr",
                                 "--dedup", str(tmp_path / "dedup"), "--length-column", "none", "--resamples",
                                 str(resamples), "--seed", str(seed), "--json", str(tmp_path / "r.json")], terminal_width=100)
    assert result.exit_code == 0, result.output
    assert "difference" in result.output and "p " in result.output
    written = json.loads((tmp_path / "r.json").read_text())["deduplicated"]["difference_from_all_rows"]
    assert written["difference"] == "one row per cluster (a) minus all rows (b)"

    kept = kept_rows(tmp_path / "dedup", rows)
    assert 0 < (~kept).sum()
    order, task = task_units(rows)
    y = np.array([row["passed"] for row in rows], dtype=float)
    counts = draws(len(order), resamples, np.random.default_rng(seed))
    for metric in ("codebleu", "gpt35_nswr"):
        x = np.array([np.nan if row[metric] is None else row[metric] for row in rows], dtype=float)
        valid = ~np.isnan(x)
        all_rows = TaskBootstrap(x, y, [np.flatnonzero((task == t) & valid) for t in range(len(order))], counts)
        per_cluster = TaskBootstrap(x, y, [np.flatnonzero((task == t) & valid & kept) for t in range(len(order))], counts)
        _check(written["metrics"][metric], all_rows, per_cluster, 0.95)


def test_a_task_the_deduplicated_rows_lack_keeps_the_all_rows_draws():
    """The deduplicated rows have one task fewer (its only labelled row was a removed duplicate):
    the deduplicated statistics are recomputed on the all-rows draws, each task in its own column."""
    rng = np.random.default_rng(3)
    tasks, samples, labels, metric = [], [], [], []
    for t in range(9):
        for s in range(8):
            tasks.append(f"T/{t}"), samples.append(s)
            labels.append(float(rng.random() < 0.5)), metric.append(float(rng.random()) + 0.5 * labels[-1])
    full = {"task_id": tasks, "sample_id": samples, "passed": labels, "judge": metric}
    keep = [i for i, (t, s) in enumerate(zip(tasks, samples)) if s % 3 != 2 and t != "T/4"]
    subset = {key: [values[i] for i in keep] for key, values in full.items()}
    options = dict(metrics=["judge"], n_resamples=60, seed=9, length_column="none")
    everything, deduplicated = correlate(full, **options), correlate(subset, **options)
    assert len(deduplicated.table.task_ids) == 8 < len(everything.table.task_ids) == 9
    got = per_cluster_differences(everything, deduplicated)["judge"]

    counts = draws(9, 60, np.random.default_rng(9))
    x, y, task = np.array(metric), np.array(labels), np.array([int(t.split("/")[1]) for t in tasks])
    kept = np.isin(np.arange(len(tasks)), keep)
    all_rows = TaskBootstrap(x, y, [np.flatnonzero(task == t) for t in range(9)], counts)
    per_cluster = TaskBootstrap(x, y, [np.flatnonzero((task == t) & kept) for t in range(9)], counts)
    _check({level: {c: d.to_dict() for c, d in by.items()} for level, by in got.items()}, all_rows, per_cluster, 0.95)
