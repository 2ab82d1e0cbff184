"""The CoNaLa human-grade files of Evtikhiev et al. ("Out of the BLEU", JSS 2023): read by layout by
``load_records`` (real files from ``../shared/data/codegen-metrics`` and the bundled copies), one row
per (item, model), each value checked against the raw JSON."""

from __future__ import annotations

import gzip
import hashlib
import json
import statistics
from collections import Counter

import pytest

from workbench.data import load_records
from workbench.data.codegen_metrics_file import (
    CODEGEN_METRICS,
    looks_like_codegen_metrics_grades,
    read_codegen_metrics_grades,
)
from workbench.data.ice_score_file import looks_like_ice_score_grades
from workbench.errors import DataError

MODELS = ("baseline", "tranx-annot", "best-tranx", "best-tranx-rerank", "codex")


@pytest.fixture(scope="module")
def conala_dir(bundled_data):
    """The CoNaLa grade files, written from the bundled copies (byte for byte the shared files)."""
    return bundled_data / "codegen-metrics"


def _raw(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def test_all_grades_flatten_to_one_row_per_item_and_model(conala_dir):
    path = conala_dir / "conala-all-grades.json"
    assert looks_like_codegen_metrics_grades(path) and not looks_like_ice_score_grades(path)
    table = load_records(path).splits["test"]
    raw = _raw(path)
    assert table.num_rows == 472 * 5
    assert table.column_names[:7] == ["task_id", "sample_id", "prompt", "generation", "reference", "references", "grade"]
    assert [c for c in table.column_names if c in CODEGEN_METRICS] == list(CODEGEN_METRICS)
    assert "n_graders" not in table.column_names  # aggregated file: no per-grader columns
    rows = table.to_list()
    for number, row in enumerate(rows):
        item, model = raw[number // 5], MODELS[number % 5]
        assert row["task_id"] == f"conala/{number // 5}" and row["sample_id"] == model
        assert row["prompt"] == item["intent"] and row["generation"] == item[model]
        assert row["reference"] == item["snippet"][0] and row["references"] == item["snippet"]
        assert row["grade"] == item[f"grade-{model}"]
        for metric in CODEGEN_METRICS:
            assert row[metric] == item[f"{metric}-{model}"]
        snippet_grades = list(item["grade-snippet"].values())
        assert row["reference_grade"] == pytest.approx(statistics.fmean(snippet_grades))
        assert row["reference_n_graders"] == len(snippet_grades)
    # SOURCES.md: 0-4 MMSR-aggregated grades
    assert Counter(table["grade"]) == {0: 1025, 1: 443, 4: 389, 2: 274, 3: 229}
    assert Counter(len(r) for r in table["references"]) == {1: 456 * 5, 2: 35, 3: 35, 4: 5, 5: 5}


def test_human_grades_give_mean_count_spread_and_each_grader(conala_dir):
    path = conala_dir / "conala-human-grades.json"
    table = load_records(path).splits["test"]
    raw = _raw(path)
    assert table.num_rows == 2360
    assert {"n_graders", "grade_sd", "graders", "grader_grades"} <= set(table.column_names)
    for number, row in enumerate(table.to_list()):
        grades = raw[number // 5][f"grade-{MODELS[number % 5]}"]
        assert dict(zip(row["graders"], row["grader_grades"])) == grades
        assert row["n_graders"] == len(grades)
        assert row["grade"] == pytest.approx(sum(grades.values()) / len(grades))
        assert row["grade_sd"] == pytest.approx(statistics.stdev(grades.values()))
    first = table[0]
    assert first["graders"] == ["grader4", "grader8", "grader11"]  # grader4 before grader11
    assert Counter(table["n_graders"])[3] == 402 and max(table["n_graders"]) == 10


def test_bundled_copies_are_the_verbatim_files(shared_data):
    from importlib import resources

    conala_dir = shared_data / "codegen-metrics"
    for name in ("conala-all-grades", "conala-human-grades"):
        bundled = resources.files("workbench.data") / "bundled" / f"{name}.json.gz"
        original = (conala_dir / f"{name}.json").read_bytes()
        assert hashlib.sha256(gzip.decompress(bundled.read_bytes())).digest() == hashlib.sha256(original).digest()
        by_name = load_records(name).splits["test"]
        assert by_name.to_list() == load_records(conala_dir / f"{name}.json").splits["test"].to_list()


def test_ice_score_grade_file_is_not_taken_for_conala(bundled_data):
    path = bundled_data / "ice-score" / "humaneval_java_grade.json"
    assert looks_like_ice_score_grades(path) and not looks_like_codegen_metrics_grades(path)


def test_gzipped_copy_is_read_too(conala_dir, tmp_path):
    target = tmp_path / "conala-all-grades.json.gz"
    target.write_bytes(gzip.compress((conala_dir / "conala-all-grades.json").read_bytes()))
    assert load_records(target).splits["test"].num_rows == 2360


@pytest.mark.parametrize(
    ("grade", "message"),
    [("good", "grade-codex is 'good', not a grade"), ({"grader1": "x"}, "expected {grader: number} grades")],
)
def test_a_grade_that_is_no_number_is_an_error_naming_the_item(tmp_path, grade, message):
    path = tmp_path / "grades.json"
    path.write_text(json.dumps([{"intent": "add", "snippet": ["a + b"], "codex": "a+b", "grade-codex": grade}]))
    with pytest.raises(DataError, match="item 0") as caught:
        read_codegen_metrics_grades(path)
    assert message in str(caught.value)


def test_a_graded_model_without_generation_is_an_error(tmp_path):
    path = tmp_path / "grades.json"
    path.write_text(json.dumps([{"intent": "add", "snippet": ["a + b"], "grade-codex": 3}]))
    with pytest.raises(DataError, match="no generation under 'codex'"):
        load_records(path)
