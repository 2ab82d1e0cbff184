"""Acceptance: ``correlate`` reproduces ICE-Score's published HumanEval correlations
(``ice-score/published_correlations_ice_score.csv``, from terryyz/ice-score ``compute_results.ipynb``;
its HumanEval rows are copied to ``tests/fixtures``) to 3 decimals: on the flat Python file (and the
same set bundled in the package, so this runs even without ``../shared``), and on the Java and
C++ grade files read by the importer (the bundled files, written out under their ICE-Score names by the
``bundled_data`` fixture)."""

from __future__ import annotations

import csv
import json

import pytest

from workbench.data import load_records
from workbench.data.ice_score_file import ICE_SCORE_METRICS, looks_like_ice_score_grades
from workbench.errors import DataError
from workbench.correlate import correlate

ISSUE_METRICS = ["codebleu", "codebertscore_f3", "bleu", "chrf", "gpt35_nswr", "gpt35_nsnr"]


def _published(test_data, language: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(level, metric) -> (kendall, spearman) for HumanEval in ``language``."""
    out = {}
    with open(test_data / "ice_score_published_humaneval.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["dataset"].startswith("HumanEval") and row["language"] == language:
                out[(row["level"], row["metric_key"])] = (float(row["kendall_tau"]), float(row["spearman"]))
    return out


def _assert_matches_published(report, published, metrics):
    checked = 0
    for metric in metrics:
        result = report.metrics[metric]
        for level, block in (("corpus", result.pooled), ("example", result.per_problem)):
            kendall, spearman = published[(level, metric)]
            # the notebook printed 3 decimals: agree to within half a unit of the last one
            assert abs(block["kendall"].value - kendall) <= 0.0005 + 1e-9, (metric, level, block["kendall"].value, kendall)
            assert abs(block["spearman"].value - spearman) <= 0.0005 + 1e-9, (metric, level, block["spearman"].value, spearman)
            checked += 1
    assert checked == 2 * len(metrics)


@pytest.fixture(params=["bundled", "shared flat file"])
def python_set(request):
    """The ICE-Score HumanEval-Python set: bundled in the package, and ../shared's flat file."""
    if request.param == "bundled":
        return "humaneval-codex-python"
    return request.getfixturevalue("shared_data") / "ice-score" / "humaneval_python_flat.jsonl"


def test_python_set_reproduces_published_numbers(python_set, test_data):
    report = correlate(python_set, metrics=ISSUE_METRICS, label="passed", n_resamples=50)
    _assert_matches_published(report, _published(test_data, "python"), ISSUE_METRICS)
    codebleu = report.metrics["codebleu"]
    assert round(codebleu.pooled["kendall"].value, 3) == 0.303
    assert round(codebleu.pooled["spearman"].value, 3) == 0.371
    # SOURCES.md: 138 tasks have both outcomes; 135 / 109 keep a non-constant GPT-3.5 score
    assert codebleu.per_problem_tasks == 138 and codebleu.excluded_tasks["constant_label"] == 23
    assert report.metrics["gpt35_nswr"].per_problem_tasks == 135
    assert report.metrics["gpt35_nsnr"].per_problem_tasks == 109
    assert report.counts.samples == 3220 and report.counts.tasks == 161
    assert report.counts.pass_rate == pytest.approx(1342 / 3220)
    lo, hi = codebleu.pooled["kendall"].ci
    assert lo < codebleu.pooled["kendall"].value < hi


@pytest.mark.parametrize("language", ["java", "cpp"])
def test_java_and_cpp_grade_files_reproduce_published_numbers(bundled_data, test_data, language):
    path = bundled_data / "ice-score" / f"humaneval_{language}_grade.json"
    report = correlate(path, metrics=list(ICE_SCORE_METRICS), n_resamples=20)
    _assert_matches_published(report, _published(test_data, language), list(ICE_SCORE_METRICS))


def test_grade_file_importer_matches_the_flat_file(shared_data):
    loaded = load_records(shared_data / "ice-score" / "humaneval_python_grade.json")
    grades = loaded.splits["test"]
    assert grades.num_rows == 3220
    assert grades.column_names[:8] == ["task_id", "sample_id", "language", "prompt", "generation", "reference", "simplified", "passed"]
    assert set(ICE_SCORE_METRICS) | {"raw_gpt35_nsnr", "raw_gpt35_nswr"} <= set(grades.column_names)
    assert grades.features["raw_gpt35_nswr"].dtype == "string"
    flat = {}
    with open(shared_data / "ice-score" / "humaneval_python_flat.jsonl") as handle:
        for line in handle:
            row = json.loads(line)
            flat[(row["task_id"], row["sample_id"])] = row
    for row in grades:
        expected = flat[(row["task_id"], row["sample_id"])]
        assert row["language"] == "python"
        for column in ("prompt", "generation", "reference", "passed", *ICE_SCORE_METRICS, "raw_gpt35_nswr"):
            assert row[column] == expected[column], column


def test_java_grade_file_keeps_the_task_with_19_samples(bundled_data):
    grades = load_records(bundled_data / "ice-score" / "humaneval_java_grade.json").splits["test"]
    assert grades.num_rows == 161 * 20 - 1
    assert set(grades["language"]) == {"java"}
    assert all(task.startswith("HumanEval/") for task in grades["task_id"])


def test_grade_layout_detection_and_errors(tmp_path):
    plain = tmp_path / "records.json"
    plain.write_text(json.dumps([{"task_id": "a", "x": 1}]))
    assert not looks_like_ice_score_grades(plain)
    assert load_records(plain).num_rows == 1
    broken = tmp_path / "humaneval_python_grade.json"
    broken.write_text('[{"intent": "p", "snippet": ["r"], "0": "g", "grade-0": {"execution": 1}, "bleu-0": 0.5}]')
    assert looks_like_ice_score_grades(broken)
    with pytest.raises(DataError, match="task_id"):
        load_records(broken)
    mixed = tmp_path / "humaneval_cpp_grade.json"
    mixed.write_text(
        json.dumps(
            [
                {
                    "task_id": "7", "intent": "p", "snippet": ["r"], "simplified": "s",
                    "0": "a", "grade-0": {"execution": 1}, "bleu-0": 0.5, "judge-0": "3",
                    "1": "b", "grade-1": {"execution": 0}, "bleu-1": "oops", "judge-1": 2,
                    "2": "c", "grade-2": {"execution": 0},
                }
            ]
        )
    )
    rows = load_records(mixed).splits["test"]
    assert rows["task_id"] == ["HumanEval/7"] * 3 and rows["language"] == ["cpp"] * 3
    # a non-number makes the column text, so nothing is lost and correlate can count it
    assert rows["bleu"] == ["0.5", "oops", None]
    assert rows["judge"] == ["3", "2", None]
    assert rows["passed"] == [1, 0, 0]
