"""Fixtures of the correlate tests."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture()
def two_tables(tmp_path) -> Callable[..., tuple[Path, Path]]:
    """A writer of the two tables of ``workbench correlate SCORES --results RESULTS``: called as
    ``two_tables(tasks, executed, **result_fields)``, it writes ``scores.jsonl`` (tasks ``T0`` ..,
    5 samples each, metric ``m`` = (7 task + 3 sample) mod 11) and ``results.jsonl`` (``passed`` =
    1 where (task + sample) mod 3 is 0, plus ``result_fields``) for the (task, sample) pairs
    ``executed(task, sample)`` is true of, under ``tmp_path``; returns the two paths."""

    def write(tasks: int, executed: Callable[[int, int], bool], **result_fields) -> tuple[Path, Path]:
        scores, results = tmp_path / "scores.jsonl", tmp_path / "results.jsonl"
        score_rows, result_rows = [], []
        for task in range(tasks):
            for sample in range(5):
                score_rows.append({"task_id": f"T{task}", "sample_id": sample, "m": (task * 7 + sample * 3) % 11})
                if executed(task, sample):
                    result_rows.append({"task_id": f"T{task}", "sample_id": sample,
                                        "passed": int((task + sample) % 3 == 0), **result_fields})
        scores.write_text("".join(json.dumps(row) + "\n" for row in score_rows))
        results.write_text("".join(json.dumps(row) + "\n" for row in result_rows))
        return scores, results

    return write
