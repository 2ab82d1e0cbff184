"""chrF matches the ``chrf`` column ICE-Score shipped (computed by its authors), on real rows."""

from __future__ import annotations

import json

import pytest

from workbench.score.base import Sample
from workbench.score.chrf import Chrf


def test_chrf_reproduces_the_shipped_column(shared_data):
    path = shared_data / "ice-score" / "humaneval_python_flat.jsonl"
    rows = [json.loads(line) for line, _ in zip(path.open(), range(200))]
    method = Chrf()
    for row in rows:
        sample = Sample(row["task_id"], row["sample_id"], row["completion_multipl_e"], row["reference"], row["prompt"])
        result = method.score(sample, context=None)
        assert result.status == "ok"
        assert result.score == pytest.approx(row["chrf"], abs=1e-9)
