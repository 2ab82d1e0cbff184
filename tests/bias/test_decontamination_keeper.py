"""On a decontamination folder (``dedup --against REF --decontaminate-only``), whose clusters keep
every row that is not contaminated, ``workbench bias`` and ``workbench correlate --dedup`` count each
cluster by the keeper the dedup recorded (``cluster_shapes.csv`` ``kept``: the row a dedup without
``--decontaminate-only`` keeps), not by its first member that is not contaminated. The dedup runs
are the real ``run_dedup``; the keeper policy is ``--keep longest``, whose keeper is not the first member."""

from __future__ import annotations

import numpy as np
import pytest

from workbench.bias import BiasConfig, run_bias
from workbench.bias.dedup_output import read_dedup_output
from workbench.correlate import CorrelateConfig, kendall_tau_b, run_correlate


def _longer(code: str) -> str:
    """``code`` with one more line of its own tokens: a near-duplicate with more tokens."""
    head, _, tail = code.rpartition("    return")
    return f"{head}    extra_name_1 = extra_name_2(extra_name_3, 7)\n    return{tail}"


@pytest.fixture()
def folders(tmp_path, corpus):
    """Per task: sample 0, its longer near copy (sample 1), sample 2 alone; a reference unlike all of them.
    Returns (the decontamination folder, the plain dedup folder, the metric rows)."""
    rows, table = [], []
    rng = np.random.default_rng(3)
    for task in range(6):
        base = corpus.code(f"t{task}")
        for sample, text in enumerate((base, _longer(base), corpus.code(f"t{task}s2"))):
            rows.append({"task_id": f"T/{task}", "sample_id": sample, "content": text})
            # the longer copy (the keeper under --keep longest) has a value unlike its cluster's first member
            table.append({"task_id": f"T/{task}", "sample_id": sample, "passed": int(rng.random() < 0.5),
                          "judge": float(sample == 1) + float(rng.random())})
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "ref", "content": corpus.code("reference")}])
    options = {"id_column": "task_id,sample_id", "group_column": "task_id", "keep": "longest"}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    decontamination = corpus.dedup(tmp_path / "a", rows, against=str(reference), decontaminate_only=True, **options)
    plain = corpus.dedup(tmp_path / "b", rows, **options)
    return decontamination, plain, table


def test_keeper_is_the_recorded_one(folders):
    decontamination, plain, _ = folders
    kept = read_dedup_output(decontamination).kept_of_cluster
    assert kept == read_dedup_output(plain).kept_of_cluster
    assert kept == [f"T/{task}:1" for task in range(6)]  # the longer copy, not the first member


def test_bias_counts_the_recorded_keeper(folders, tmp_path):
    decontamination, plain, table = folders
    scores = {"id": [f"{r['task_id']}:{r['sample_id']}" for r in table], "judge": [r["judge"] for r in table]}
    expected = np.mean([r["judge"] for r in table if r["sample_id"] != 0])
    for folder in (decontamination, plain):
        report = run_bias(folder, scores, BiasConfig(metric=["judge"], id_column="id", resamples=50))
        assert report.duplication.metrics["judge"].settings["deduplicated"].value == pytest.approx(expected), folder


def test_correlate_counts_the_recorded_keeper(folders, tmp_path, corpus):
    decontamination, plain, table = folders
    scores = corpus.write_jsonl(tmp_path / "scores.jsonl", table)
    kept = [r for r in table if r["sample_id"] != 0]
    expected = kendall_tau_b(np.array([r["judge"] for r in kept]), np.array([r["passed"] for r in kept], dtype=float))
    for folder in (decontamination, plain):
        report = run_correlate(str(scores), CorrelateConfig(metric=["judge"], dedup=str(folder), resamples=40,
                                                            length_column="none"))
        assert report.deduplicated.metrics["judge"].pooled["kendall"].value == pytest.approx(expected), folder
