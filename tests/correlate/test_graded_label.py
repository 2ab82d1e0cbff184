"""``correlate --label-kind graded``: human grades (Evtikhiev et al.'s CoNaLa set, bundled as
``conala-all-grades`` / ``conala-human-grades``) as the label.

* an outcome label (the default) outside [0, 1] stays an error, which now says how to declare a grade;
* on the aggregated grade, every shipped metric reproduces ICE-Score's published CoNaLa numbers
  (Kendall tau-b, Spearman, Pearson; corpus and example level) to 3 decimals;
* the CLI's JSON equals an independent scipy task bootstrap on a real slice with heavy ties in the
  grade (0-4) and in the metrics (0 and 1.0 scores), and on the graders' mean grade;
* a graded report has no pass rate and no means by outcome, and its terminal line says "graded".
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from scipy_bootstrap import COEFFICIENTS, TaskBootstrap, draws, natural_order
from workbench.cli import app
from workbench.correlate import correlate
from workbench.data import load_records
from workbench.errors import DataError

SHIPPED = ["rougel", "bleu", "chrf", "meteor", "codebleu", "ruby"]


def test_a_grade_as_outcome_label_is_still_refused_and_the_message_says_how_to_declare_it():
    with pytest.raises(DataError, match="must be 0/1 or a pass ratio in \\[0, 1\\]") as caught:
        correlate("conala-all-grades", metrics=["chrf"], label="grade", n_resamples=40)
    assert "--label-kind graded" in str(caught.value)
    result = CliRunner().invoke(app, ["correlate", "conala-all-grades", "-m", "chrf", "--label", "grade", "--resamples", "40"])
    assert result.exit_code != 0 and "--label-kind graded" in result.output


def test_unknown_label_kind_is_refused():
    with pytest.raises(ValueError, match="label_kind must be one of outcome, graded"):
        correlate("conala-all-grades", metrics=["chrf"], label="grade", label_kind="ordinal", n_resamples=40)
    result = CliRunner().invoke(app, ["correlate", "conala-all-grades", "-m", "chrf", "--label", "grade",
                                      "--label-kind", "ordinal", "--resamples", "40"])
    assert result.exit_code != 0 and "ordinal" in result.output


def test_shipped_metrics_reproduce_ice_score_published_conala_numbers(test_data):
    published = {}
    with open(test_data / "ice_score_published_conala.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            published[(row["level"], row["metric_key"])] = {c: float(row[c2]) for c, c2 in
                                                           (("kendall", "kendall_tau"), ("spearman", "spearman"), ("pearson", "pearson"))}
    report = correlate("conala-all-grades", metrics=SHIPPED, label="grade", label_kind="graded", n_resamples=40)
    checked = 0
    for metric in SHIPPED:
        result = report.metrics[metric]
        for level, block in (("corpus", result.pooled), ("example", result.per_problem)):
            for c in COEFFICIENTS:
                # the notebook printed 3 decimals: agree to within half a unit of the last one
                assert abs(block[c].value - published[(level, metric)][c]) <= 0.0005 + 1e-9, (metric, level, c)
                checked += 1
    assert checked == 6 * 2 * 3
    assert report.metrics["chrf"].n_samples == 2360 and report.metrics["chrf"].n_tasks == 472
    # 30 items got one grade for all five models: no within-item correlation, counted (nanmean)
    assert report.metrics["chrf"].excluded_tasks["constant_label"] == 30


def test_graded_report_has_no_pass_rate_nor_means_by_outcome(tmp_path):
    report = correlate("conala-all-grades", metrics=["chrf"], label="grade", label_kind="graded", n_resamples=40)
    counts = report.to_dict()["counts"]
    assert counts["pass_rate"] is None and counts["label_kind"] == "graded"
    assert counts["label_summary"]["values"] == {"0": 1025, "1": 443, "2": 274, "3": 229, "4": 389}
    assert counts["label_summary"]["mean"] == pytest.approx((443 + 2 * 274 + 3 * 229 + 4 * 389) / 2360)
    assert report.metrics["chrf"].mean_by_outcome is None
    # a 0/1 column declared graded is a grade too: no pass/fail means
    rows = {"task_id": ["a", "a", "b", "b", "c", "c"], "sample_id": [0, 1] * 3, "ok": [0, 1, 1, 0, 0, 1],
            "m": [0.1, 0.9, 0.8, 0.2, 0.3, 0.7]}
    assert correlate(rows, metrics=["m"], label="ok", n_resamples=40).metrics["m"].mean_by_outcome is not None
    declared = correlate(rows, metrics=["m"], label="ok", label_kind="graded", n_resamples=40)
    assert declared.metrics["m"].mean_by_outcome is None and declared.counts.pass_rate is None


def test_cli_graded_output_speaks_of_grades_and_draws_the_plot(tmp_path):
    result = CliRunner().invoke(app, ["correlate", "conala-human-grades", "--label", "grade", "--label-kind", "graded",
                                      "-m", "n_graders", "--resamples", "40", "--json", str(tmp_path / "r.json"),
                                      "--plot", str(tmp_path / "r.png")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "pass rate" not in result.output and "graded label" in result.output
    assert (tmp_path / "r.png").stat().st_size > 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["counts"]["label_summary"]["distinct"] > 20 and report["counts"]["label_summary"]["values"] is None


def test_grade_columns_are_not_taken_as_metrics_by_default():
    report = correlate("conala-all-grades", label="grade", label_kind="graded", length_column="none", n_resamples=40)
    assert list(report.metrics) == SHIPPED  # not reference_grade / reference_n_graders
    with pytest.raises(DataError, match="no numeric metric columns found"):  # n_graders, grade_sd: no metrics
        correlate("conala-human-grades", label="grade", label_kind="graded", n_resamples=40)


# -- an independent recomputation with scipy (tests/scipy_bootstrap.py) ---------------------------


@pytest.mark.parametrize("label_source", ["aggregated", "graders' mean"])
def test_cli_numbers_equal_a_scipy_task_bootstrap_with_tied_grades(tmp_path, label_source):
    aggregated = load_records("conala-all-grades").splits["test"].to_list()
    means = load_records("conala-human-grades").splits["test"].to_list()
    keep = {f"conala/{i}" for i in range(0, 472, 8)}  # 59 items x 5 models
    rows = []
    for row, human in zip(aggregated, means):
        if row["task_id"] in keep:
            assert (row["task_id"], row["sample_id"]) == (human["task_id"], human["sample_id"])
            grade = row["grade"] if label_source == "aggregated" else human["grade"]
            rows.append({"task_id": row["task_id"], "sample_id": row["sample_id"], "grade": grade,
                         "bleu": row["bleu"], "chrf": row["chrf"]})
    (tmp_path / "slice.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    resamples, seed = 100, 3
    result = CliRunner().invoke(app, ["correlate", str(tmp_path / "slice.jsonl"), "--label", "grade", "--label-kind", "graded",
                                      "-m", "bleu", "-m", "chrf", "--length-column", "none", "--resamples", str(resamples),
                                      "--seed", str(seed), "--json", str(tmp_path / "r.json")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "r.json").read_text())

    order = {t: i for i, t in enumerate(natural_order(keep))}
    task = np.array([order[r["task_id"]] for r in rows])
    y = np.array([float(r["grade"]) for r in rows])
    assert len(np.unique(y)) < len(y) / 4  # heavily tied: tau-b's tie correction matters
    counts = draws(len(order), resamples, np.random.default_rng(seed))
    resampled_by_metric = {}
    for metric in ("bleu", "chrf"):
        x = np.array([float(r[metric]) for r in rows])
        bootstrap = TaskBootstrap(x, y, [np.flatnonzero(task == t) for t in range(len(order))], counts)
        point, resampled = bootstrap.point, bootstrap.resampled
        resampled_by_metric[metric] = resampled
        if label_source == "aggregated":  # five grades: tau-b differs from tau-a, so the check has teeth
            n = len(x)
            concordance = sum(np.sign(x[i] - x[j]) * np.sign(y[i] - y[j]) for i in range(n) for j in range(i))
            assert abs(concordance / (n * (n - 1) / 2) - point["pooled"]["kendall"]) > 0.05
        for level in ("pooled", "per_problem"):
            for c in COEFFICIENTS:
                block = report["metrics"][metric][level]
                assert block[c] == pytest.approx(point[level][c], abs=1e-9), (metric, level, c)
                expected = np.percentile(np.array(resampled[level][c])[~np.isnan(resampled[level][c])], [2.5, 97.5])
                assert block[f"{c}_ci"] == pytest.approx(list(expected), abs=1e-9), (metric, level, c)
    (comparison,) = report["comparisons"]
    difference = (np.array(resampled_by_metric[comparison["metric_a"]]["pooled"]["kendall"])
                  - np.array(resampled_by_metric[comparison["metric_b"]]["pooled"]["kendall"]))
    assert comparison["differences"]["pooled"]["kendall"]["difference_ci"] == pytest.approx(
        list(np.percentile(difference, [2.5, 97.5])), abs=1e-9)
