"""``scores_wide.jsonl``: one row per sample, one column per method, read by ``correlate``.
No LLM: the rows are written by hand in the layout of ``scores.jsonl``."""

from __future__ import annotations

import json

from workbench.io import read_jsonl
from workbench.score.wide_table import write_wide_table
from workbench.score.job import ROW_COLUMNS
from workbench.correlate import correlate


def _row(task, sample, method, score, status="ok", passed=1):
    row = dict.fromkeys(ROW_COLUMNS)
    row.update(task_id=task, sample_id=sample, method=method, score=score, status=status, passed=passed)
    return row


def test_wide_table_pivots_methods_and_nulls_failures(tmp_path):
    scores = tmp_path / "scores.jsonl"
    rows = [
        _row("T/0", 0, "chrf", 0.5), _row("T/0", 0, "ice-score", 3.0),
        _row("T/0", 1, "chrf", 0.1, passed=0), _row("T/0", 1, "ice-score", None, status="llm_error", passed=0),
        # a retried row later in the file wins
        _row("T/0", 1, "ice-score", 1.0, passed=0),
    ]
    scores.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert write_wide_table(scores, tmp_path / "wide.jsonl", ROW_COLUMNS) == 2
    wide = read_jsonl(tmp_path / "wide.jsonl")
    assert wide == [
        {"task_id": "T/0", "sample_id": 0, "passed": 1, "chrf": 0.5, "ice-score": 3.0},
        {"task_id": "T/0", "sample_id": 1, "passed": 0, "chrf": 0.1, "ice-score": 1.0},
    ]


def test_failed_method_is_missing_not_zero(tmp_path):
    scores = tmp_path / "scores.jsonl"
    rows = [_row(f"T/{t}", s, "m", None if s == 0 else float(s), status="parse_error" if s == 0 else "ok",
                 passed=int(s > 1)) for t in range(3) for s in range(4)]
    scores.write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_wide_table(scores, tmp_path / "wide.jsonl", ROW_COLUMNS)
    assert [r["m"] for r in read_jsonl(tmp_path / "wide.jsonl")][:4] == [None, 1.0, 2.0, 3.0]
    report = correlate(str(tmp_path / "wide.jsonl"), metrics=["m"], label="passed", n_resamples=20)
    assert report.to_dict()["metrics"]["m"]["n_samples"] == 9
