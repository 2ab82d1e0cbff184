"""``workbench bias --label-kind graded``: human grades as the label, as ``workbench correlate``
takes them (Evtikhiev et al. 2023's CoNaLa grades, bundled as ``conala-all-grades``).

A slice of the real set (every 4th intent, its five models' generations) is deduplicated within
each intent by the real dedup (``--min-tokens 5``: the snippets are one line); the numbers are
recomputed from the dedup's ``removed.csv`` with numpy and scipy alone:

* a grade given as an outcome label (the default kind) is refused, as correlate refuses it, with a
  message naming the column, a row and ``--label-kind graded`` (before: no error, every tau-b "n/a");
* declared graded: each setting's Kendall tau-b with the grade (ties in the 0-4 grade and in the
  metric) and its task-bootstrap interval, the paired all rows − deduplicated difference, and Eq. 2
  (d, f̄, β) of the grade's own mean;
* a grade cell that is no number, or infinite, is an error naming the label column, the row and its id,
  in the metric table and in ``--results``.
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from bundled_data import write_conala_slice
from workbench.bias import BiasConfig, run_bias
from workbench.cli import app
from workbench.errors import DataError

SEED, RESAMPLES, CONFIDENCE = 3, 120, 0.9


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """Every 4th CoNaLa intent (118 of 472, 590 rows), written as JSON Lines and deduplicated within each intent."""
    folder = tmp_path_factory.mktemp("conala")
    path = folder / "slice.jsonl"
    rows = write_conala_slice(path, 4, ("task_id", "sample_id", "generation", "grade", "chrf"))
    dedup = CliRunner().invoke(app, ["dedup", str(path), "--code-column", "generation", "--id-column", "task_id,sample_id",
                                     "--group-column", "task_id", "--min-tokens", "5", "--no-progress",
                                     "-o", str(folder / "dedup")])
    assert dedup.exit_code == 0, dedup.output
    with open(folder / "dedup" / "removed.csv", newline="") as handle:
        removed = {row["id"] for row in csv.DictReader(handle)}
    return {"folder": folder, "rows": rows, "path": path, "dedup": folder / "dedup", "removed": removed}


def _tau(x: np.ndarray, y: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.kendalltau(x, y, variant="b").statistic)


def _resampled_tau(x: np.ndarray, y: np.ndarray, unit_rows: list[np.ndarray], counts: np.ndarray) -> np.ndarray:
    out = []
    for draw in counts:
        rows = np.concatenate([unit_rows[j] for j in range(len(unit_rows)) for _ in range(draw[j])])
        out.append(_tau(x[rows], y[rows]))
    return np.array(out)


def _interval(values: np.ndarray) -> list[float]:
    tail = (1 - CONFIDENCE) / 2 * 100
    return list(np.percentile(values[~np.isnan(values)], [tail, 100 - tail]))


def test_a_grade_as_an_outcome_label_is_refused_naming_the_column_a_row_and_the_option(graded):
    """Before: bias took the 0-4 grade as an execution label, every tau-b was "n/a" and nothing said why."""
    config = BiasConfig(metric=["chrf"], label="grade", task_column="task_id", resamples=40)
    with pytest.raises(DataError) as caught:
        run_bias(graded["dedup"], str(graded["path"]), config)
    message = str(caught.value)
    first = next(i for i, row in enumerate(graded["rows"]) if not 0 <= row["grade"] <= 1)
    row = graded["rows"][first]
    assert "label column 'grade' must be 0/1 or a pass ratio in [0, 1]" in message, message
    assert f"row {first + 1} (counting from 1; id '{row['task_id']}:{row['sample_id']}'): {row['grade']:g}" in message, message
    assert "declare it with --label-kind graded" in message, message
    printed = CliRunner().invoke(app, ["bias", str(graded["dedup"]), str(graded["path"]), "-m", "chrf", "--label", "grade",
                                       "--task-column", "task_id", "--resamples", "40"], terminal_width=200)
    assert printed.exit_code == 1 and "--label-kind graded" in printed.output, printed.output


def test_graded_label_tau_b_per_setting_the_difference_and_eq2_recomputed_with_scipy(graded):
    rows, removed = graded["rows"], graded["removed"]
    json_path = graded["folder"] / "bias.json"
    printed = CliRunner().invoke(app, [
        "bias", str(graded["dedup"]), str(graded["path"]), "-m", "chrf", "-m", "grade", "--label", "grade",
        "--label-kind", "graded", "--task-column", "task_id", "--resamples", str(RESAMPLES), "--seed", str(SEED),
        "--confidence", str(CONFIDENCE), "--json", str(json_path)], terminal_width=200)
    assert printed.exit_code == 0, printed.output
    report = json.loads(json_path.read_text())
    assert report["label"] == "grade" and report["label_kind"] == "graded"
    duplication = report["duplication"]

    kept = np.array([f"{r['task_id']}:{r['sample_id']}" not in removed for r in rows])
    assert 20 < (~kept).sum() < len(rows) / 2  # the slice has duplicates to remove, and most rows stay
    x = np.array([r["chrf"] for r in rows], dtype=float)
    y = np.array([r["grade"] for r in rows], dtype=float)
    assert set(np.unique(y)) == {0.0, 1.0, 2.0, 3.0, 4.0}  # a grade, with ties

    # Eq. 2 of the grade itself: D every row, X one per cluster (the row the dedup kept)
    eq2 = duplication["metrics"]["grade"]["eq2"]
    assert eq2["n_D"] == len(rows) and eq2["n_X"] == int(kept.sum())
    assert eq2["d"] == pytest.approx((~kept).sum() / len(rows), abs=1e-12)
    assert eq2["f_hat"] == pytest.approx(y.mean(), abs=1e-12)
    assert eq2["f_bar"] == pytest.approx(y[kept].mean(), abs=1e-12)
    assert eq2["beta"] == pytest.approx(y[~kept].mean(), abs=1e-12)
    assert eq2["beta"] > eq2["f_bar"]  # the generations two models share are graded higher: they inflate the mean

    # each setting's tau-b of chrF with the grade, its interval on the task draws, and the paired difference
    chrf = duplication["metrics"]["chrf"]
    order = sorted({r["task_id"] for r in rows}, key=lambda t: int(t.rsplit("/", 1)[1]))
    task = np.array([order.index(r["task_id"]) for r in rows])
    counts = np.random.default_rng(SEED).multinomial(len(order), np.full(len(order), 1 / len(order)), size=RESAMPLES)
    every = _resampled_tau(x, y, [np.flatnonzero(task == t) for t in range(len(order))], counts)
    one_per_cluster = _resampled_tau(x, y, [np.flatnonzero((task == t) & kept) for t in range(len(order))], counts)
    taus = chrf["kendall_tau_b_with_label"]
    assert taus["all_rows"]["value"] == pytest.approx(_tau(x, y), abs=1e-12)
    assert taus["deduplicated"]["value"] == pytest.approx(_tau(x[kept], y[kept]), abs=1e-12)
    assert taus["all_rows"]["ci"] == pytest.approx(_interval(every), abs=1e-9)
    assert taus["deduplicated"]["ci"] == pytest.approx(_interval(one_per_cluster), abs=1e-9)
    [difference] = chrf["kendall_tau_b_differences"]
    assert difference["difference"] == pytest.approx(_tau(x, y) - _tau(x[kept], y[kept]), abs=1e-12)
    assert difference["ci"] == pytest.approx(_interval(every - one_per_cluster), abs=1e-9)
    assert "kendall_tau_b_with_label" not in duplication["metrics"]["grade"]  # the label is not correlated with itself
    assert "label 'grade' (graded: a grade: Kendall tau-b counts the ties in it)" in " ".join(printed.output.split())


@pytest.mark.parametrize("bad", ["excellent", "inf"])
def test_a_grade_that_is_no_finite_number_names_the_label_column_and_row(graded, bad):
    rows = [dict(r) for r in graded["rows"]]
    rows[7]["grade"] = bad
    path = graded["folder"] / "bad.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = BiasConfig(metric=["chrf"], label="grade", label_kind="graded", task_column="task_id", resamples=40)
    with pytest.raises(DataError) as caught:
        run_bias(graded["dedup"], str(path), config)
    message = str(caught.value)
    assert "label column 'grade' must hold finite numbers (a graded label)" in message, message
    assert f"1 row does not, e.g. row 8 (counting from 1; id '{rows[7]['task_id']}:{rows[7]['sample_id']}'): {bad!r}" in message, message

    # the same grade from --results: named there
    metrics = graded["folder"] / "metrics.jsonl"
    metrics.write_text("".join(json.dumps({k: r[k] for k in ("task_id", "sample_id", "chrf")}) + "\n" for r in rows))
    with pytest.raises(DataError) as caught:
        run_bias(graded["dedup"], str(metrics), BiasConfig(metric=["chrf"], label="grade", label_kind="graded",
                                                            results=str(path), task_column="task_id", resamples=40))
    assert f"{path}: label column 'grade' must hold finite numbers" in str(caught.value), str(caught.value)


def test_a_graded_label_from_results_gives_the_numbers_of_the_label_in_the_table(graded):
    """``--results`` with the grades (the metric table without them) gives the same tau-b as the grades in the table."""
    rows = graded["rows"]
    metrics = graded["folder"] / "chrf_only.jsonl"
    metrics.write_text("".join(json.dumps({k: r[k] for k in ("task_id", "sample_id", "chrf")}) + "\n" for r in rows))
    common = {"metric": ["chrf"], "label": "grade", "label_kind": "graded", "task_column": "task_id", "resamples": 40}
    joined = run_bias(graded["dedup"], str(metrics), BiasConfig(**common, results=str(graded["path"])))
    direct = run_bias(graded["dedup"], str(graded["path"]), BiasConfig(**common))
    for setting in ("all_rows", "deduplicated"):
        a = joined.duplication.metrics["chrf"].correlation[setting]
        b = direct.duplication.metrics["chrf"].correlation[setting]
        assert (a.value, a.low, a.high) == (b.value, b.low, b.high)
        assert not np.isnan(a.value)


def test_a_label_kind_without_a_label_is_refused():
    from workbench.options import OptionError

    with pytest.raises(OptionError, match="label_kind graded declares what the label is: set label too"):
        BiasConfig(metric=["chrf"], label_kind="graded")
    with pytest.raises(OptionError, match="label_kind must be one of outcome, graded, not .ordinal."):
        BiasConfig(metric=["chrf"], label="grade", label_kind="ordinal")
