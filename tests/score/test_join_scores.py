"""``benchmarks/join_scores.py``: the fidelity table's columns joined from real ``workbench score``
run folders (chrF on real ICE-Score rows: no LLM), and grown on top of an earlier joined table."""

from __future__ import annotations

import json

import pytest

from workbench.io import read_jsonl
from workbench.score.job import Columns, load_samples, score_samples

@pytest.fixture
def chrf_run(tmp_path, ice_slice, score_kwargs):
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    score_samples(samples, **score_kwargs(method=["chrf"], output_dir=tmp_path / "chrf"))
    return tmp_path / "chrf"


def test_a_base_table_keeps_its_columns_and_gains_the_new_one(tmp_path, chrf_run, benchmark_script):
    join = benchmark_script("join_scores").join
    first = tmp_path / "first.jsonl"
    assert join(first, [("chrf-a", chrf_run, "chrf", None)]) == {"chrf-a": 4}
    # a committed table carries a column no run folder has any more
    old = read_jsonl(first)
    for row in old:
        row["old-judge"] = 0.5 if row["passed"] else 0.25
    first.write_text("".join(json.dumps(row) + "\n" for row in old))

    grown = tmp_path / "grown.jsonl"
    assert join(grown, [("chrf-b", chrf_run, "chrf", None)], base=first) == {"chrf-b": 4}
    rows = {(r["task_id"], r["sample_id"]): r for r in read_jsonl(grown)}
    assert len(rows) == 4
    for row in old:
        new = rows[(row["task_id"], row["sample_id"])]
        assert new["old-judge"] == row["old-judge"] and new["chrf-b"] == row["chrf-a"] == new["chrf-a"]
        assert new["passed"] == row["passed"]


def test_a_column_already_in_the_base_is_refused_not_overwritten(tmp_path, chrf_run, benchmark_script):
    join = benchmark_script("join_scores").join
    first = tmp_path / "first.jsonl"
    join(first, [("chrf-a", chrf_run, "chrf", None)])
    before = first.read_text()
    with pytest.raises(SystemExit, match="already has the column"):
        join(tmp_path / "again.jsonl", [("chrf-a", chrf_run, "chrf", None)], base=first)
    assert first.read_text() == before and not (tmp_path / "again.jsonl").exists()
