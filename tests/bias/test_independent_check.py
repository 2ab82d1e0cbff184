"""An independent recomputation of what ``workbench bias`` prints for one set of rows (Allamanis
2019, Sec. 2, Eq. 2), on a real slice of the ICE-Score HumanEval-Python set (the copy bundled in
the package) deduplicated within each task by the real ``workbench dedup``.

From the dedup's documented output alone (``removed.csv``: every row not listed there is the
row its cluster kept, or a row without duplicates) and numpy, never through workbench's
statistics:

* D = every row, X = the rows not removed; ``d = (|D| - |X|) / |D|``, ``f̄`` = mean over X,
  ``β`` = mean over D minus X, and ``f̂ = (1 - d) f̄ + d β``;
* ``Δ% = 100 (f̂ - f̄) / |f̄|``;
* the mean over tasks: each task's mean over the rows a setting keeps, averaged over tasks;
* the intervals: percentile intervals over resamples of whole tasks, each resample built the
  slow, obvious way (the rows of every drawn task, repeated as often as it was drawn) from the
  draws ``numpy.random.default_rng(seed).multinomial(T, [1/T] * T, size=B)`` (tasks in the
  order they first appear), the same draws for both settings so Δ% is paired;
* tau-b with the label: ``scipy.stats.kendalltau`` on the setting's rows.
"""

from __future__ import annotations

import csv
import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from workbench.cli import app

BUNDLED = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"
METRICS = ("passed", "codebleu", "gpt35_nswr")


def _slice(path: Path) -> list[dict]:
    """Every 3rd task of the bundled set (54 tasks x 20 samples), in file order."""
    with gzip.open(BUNDLED, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    keep = set(list(dict.fromkeys(row["task_id"] for row in rows))[::3])
    out = [{key: row[key] for key in ("task_id", "sample_id", "completion_multipl_e", *METRICS)}
           for row in rows if row["task_id"] in keep]
    path.write_text("".join(json.dumps(row) + "\n" for row in out))
    return out


def _interval(values: np.ndarray, confidence: float) -> list[float]:
    tail = (1 - confidence) / 2 * 100
    return list(np.percentile(values[~np.isnan(values)], [tail, 100 - tail]))


def test_bias_numbers_equal_an_independent_recomputation_on_a_real_slice(tmp_path):
    seed, resamples, confidence = 3, 150, 0.95
    rows = _slice(tmp_path / "slice.jsonl")
    runner = CliRunner()
    dedup = runner.invoke(app, ["dedup", str(tmp_path / "slice.jsonl"), "--code-column", "completion_multipl_e",
                                "--id-column", "task_id,sample_id", "--group-column", "task_id", "--min-tokens", "5",
                                "--no-progress", "-o", str(tmp_path / "dedup")])
    assert dedup.exit_code == 0, dedup.output
    bias = runner.invoke(app, ["bias", str(tmp_path / "dedup"), str(tmp_path / "slice.jsonl"),
                               *[a for m in METRICS for a in ("-m", m)], "--id-column", "task_id,sample_id",
                               "--task-column", "task_id", "--label", "passed", "--resamples", str(resamples),
                               "--seed", str(seed), "--json", str(tmp_path / "bias.json")])
    assert bias.exit_code == 0, bias.output
    report = json.loads((tmp_path / "bias.json").read_text())["duplication"]

    with open(tmp_path / "dedup" / "removed.csv", newline="") as handle:
        removed = {row["id"] for row in csv.DictReader(handle)}
    ids = [f"{row['task_id']}:{row['sample_id']}" for row in rows]
    kept = np.array([i not in removed for i in ids])
    assert 0 < (~kept).sum() < len(rows) // 4  # real in-task duplicates, not a degenerate slice
    order: dict[str, int] = {}
    task = np.array([order.setdefault(row["task_id"], len(order)) for row in rows])
    n_tasks = len(order)
    counts = np.random.default_rng(seed).multinomial(n_tasks, np.full(n_tasks, 1 / n_tasks), size=resamples)
    task_rows = [np.flatnonzero(task == t) for t in range(n_tasks)]
    draws = [np.concatenate([task_rows[t] for t in range(n_tasks) for _ in range(draw[t])]) for draw in counts]
    label = np.array([float(row["passed"]) for row in rows])

    def task_mean(values: np.ndarray, mask: np.ndarray, weights: np.ndarray) -> float:
        means = np.array([values[r][mask[r]].mean() if mask[r].any() else np.nan for r in task_rows])
        defined = ~np.isnan(means) & (weights > 0)
        return float(np.sum(weights[defined] * means[defined]) / np.sum(weights[defined]))

    for metric in METRICS:
        values = np.array([float(row[metric]) for row in rows])
        got = report["metrics"][metric]
        f_hat, f_bar, beta = values.mean(), values[kept].mean(), values[~kept].mean()
        d = (~kept).sum() / len(rows)
        assert got["eq2"]["f_hat"] == pytest.approx(f_hat, abs=1e-12)
        assert got["eq2"]["f_bar"] == pytest.approx(f_bar, abs=1e-12)
        assert got["eq2"]["beta"] == pytest.approx(beta, abs=1e-12)
        assert got["eq2"]["d"] == pytest.approx(d, abs=1e-15)
        assert (got["eq2"]["n_D"], got["eq2"]["n_X"]) == (len(rows), int(kept.sum()))
        assert f_hat == pytest.approx((1 - d) * f_bar + d * beta, abs=1e-12)
        all_rows = np.array([values[r].mean() for r in draws])
        deduplicated = np.array([values[r][kept[r]].mean() for r in draws])
        for setting, value, resampled in (("all_rows", f_hat, all_rows), ("deduplicated", f_bar, deduplicated)):
            assert got["settings"][setting]["value"] == pytest.approx(value, abs=1e-12)
            assert got["settings"][setting]["ci"] == pytest.approx(_interval(resampled, confidence), abs=1e-12)
        delta = got["delta_percent"]
        assert delta["value"] == pytest.approx(100 * (f_hat - f_bar) / abs(f_bar), abs=1e-9)
        assert delta["ci"] == pytest.approx(_interval(100 * (all_rows - deduplicated) / np.abs(deduplicated), confidence), abs=1e-9)
        per_task = got["task_means"]["deduplicated"]
        assert per_task["value"] == pytest.approx(task_mean(values, kept, np.ones(n_tasks)), abs=1e-12)
        resampled = np.array([task_mean(values, kept, draw.astype(float)) for draw in counts])
        assert per_task["ci"] == pytest.approx(_interval(resampled, confidence), abs=1e-12)
        if metric != "passed":
            tau = got["kendall_tau_b_with_label"]
            for setting, mask in (("all_rows", np.ones(len(rows), bool)), ("deduplicated", kept)):
                assert tau[setting]["value"] == pytest.approx(stats.kendalltau(values[mask], label[mask]).statistic, abs=1e-12)
