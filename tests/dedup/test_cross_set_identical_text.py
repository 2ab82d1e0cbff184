"""The console table's train/test figures count test files that are identical-text copies of
train files (``exact_text``: below ``--min-tokens``, so only the identical-text rule finds them),
beside the compared rows' figures of Allamanis 2019; and the per-split rows say that they count
duplicates within their split only. Real tree-sitter, the real CLI (local and Spark engines).

Found by the new-user pass newuser36: three test files copied from train were removed and counted
in report.json (``exact_text_cross_set_test_files`` 3), but the table said "cross-set clusters 0" and
"test files with a duplicate in train 0".
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from copied_corpus import MUL, write_copied_corpus
from workbench.cli import app


def copied_corpus(root):
    """train/ with 4 short files, test/ with byte-identical copies of 3 of them."""
    return write_copied_corpus(root, extra={"train/other.py": MUL})


def dedup(corpus, out, width: int, *options: str):
    result = CliRunner().invoke(app, ["dedup", str(corpus), "-o", str(out), "--no-progress", "--workers", "1", *options],
                                terminal_width=width)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.replace("│", " ").split())  # a table cell's wrapped lines as one text
    return json.loads((out / "report.json").read_text()), said


@pytest.mark.parametrize("width", [250, 80])
def test_the_table_counts_test_files_identical_to_train_files(tmp_path, width):
    report, said = dedup(copied_corpus(tmp_path), tmp_path / "out", width)
    cross = report["cross_set"]
    # report.json keeps Allamanis' figures (compared rows) and the identical-text ones apart, as documented
    assert (cross["cross_set_test_files"], cross["exact_text_cross_set_test_files"]) == (0, 3)
    assert (cross["cross_set_clusters"], cross["exact_text_cross_set_clusters"]) == (0, 3)
    assert "test files with a duplicate in train 0 " not in said, said
    assert "cross-set clusters 0 " not in said, said
    if width == 250:  # at 80 the value wraps inside its cell, between the words
        assert "test files with a duplicate in train 3 (0 compared + 3 identical text below 20 tokens)" in said
        assert "cross-set clusters 3 (0 compared + 3 identical text below 20 tokens)" in said
        assert "100.00% (3 of all 3 test files)" in said, said
    assert "identical text below 20 tokens" in said


def test_the_per_split_rows_say_they_count_within_their_split(tmp_path):
    """A train file and its near copy in test are one duplicate overall and none in either split."""
    body = "\n".join(f"def f{i}(alpha, beta, gamma):\n    return alpha * {i} + beta - gamma * {i + 1}\n"
                     for i in range(6))
    for split, text in (("train", body), ("test", body.replace("return", "  return").replace("gamma * 6", "gamma * 7"))):
        (tmp_path / "corpus" / split).mkdir(parents=True)
        (tmp_path / "corpus" / split / "a.py").write_text(text)
    for width in (250, 80):
        report, said = dedup(tmp_path / "corpus", tmp_path / f"out{width}", width)
        assert report["overall"]["duplicate_rows"] == 1
        assert report["splits"]["test"]["duplicate_rows"] == report["splits"]["train"]["duplicate_rows"] == 0
        assert ("a split's exact dup., near dup., clusters and d count duplicates within that split only; "
                "overall counts them across splits too") in said, said


def test_one_split_has_no_such_note(tmp_path):
    _, said = dedup(write_copied_corpus(tmp_path, splits=()), tmp_path / "out", 250)
    assert "within that split only" not in said


def test_spark_prints_the_same_cross_set_rows(spark, tmp_path):
    corpus = copied_corpus(tmp_path)
    local_report, local_said = dedup(corpus, tmp_path / "local", 250)
    spark_report, spark_said = dedup(corpus, tmp_path / "spark", 250, "--engine", "spark", "--spark-master", "local[2]")
    assert spark_report["cross_set"] == local_report["cross_set"]
    row = "test files with a duplicate in train 3 (0 compared + 3 identical text below 20 tokens)"
    assert row in local_said and row in spark_said
