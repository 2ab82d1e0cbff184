"""End to end with a real local model: SmolLM2-135M-Instruct (Q4_1 GGUF) in process through
llama.cpp (the ``local`` litellm provider), real tree-sitter, real embedded Chroma with real
MiniLM. Two samples are scored with ``dsa-cqe``; the rerun must make zero LLM calls (all
cache hits) and give identical scores. The provider's token log-probabilities feed the
``expected`` score mode of p-correct and ice-score."""

from __future__ import annotations

import json

import pytest

from workbench.io import read_jsonl
from workbench.score.config import ScoreConfig
from workbench.score.job import Columns, load_samples, score_samples

pytestmark = [pytest.mark.llm, pytest.mark.slow]


@pytest.fixture
def two_samples(bundled_data, tmp_path):
    # HumanEval/2 is small (one-line reference), which keeps a CPU run short
    rows = [json.loads(line) for line in (bundled_data / "ice-score" / "humaneval_python_flat.jsonl").open()]
    picked = [r for r in rows if r["task_id"] == "HumanEval/2"][:2]
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked))
    return load_samples(path, Columns(generation="completion_multipl_e"))


def test_smollm2_dsa_cqe_end_to_end_then_all_cache_hits(two_samples, tmp_path):
    config = ScoreConfig(method=["dsa-cqe"], model="local/smollm2-135m", max_tokens=200, timeout=600, workers=1,
                         cache_dir=tmp_path / "cache", max_subcodes=4)

    first = score_samples(two_samples, config, tmp_path / "first")
    rows = read_jsonl(tmp_path / "first" / "scores.jsonl")
    assert len(rows) == 2
    # llama.cpp decodes under the JSON-schema grammar, so the answers parse
    assert [r["status"] for r in rows] == ["ok", "ok"], [r["error"] for r in rows]
    assert all(0 <= r["score"] <= 4 and r["subcodes"] >= 1 for r in rows)
    assert first.usage["calls"] >= 3 and first.usage["completion_tokens"] > 0
    traces = read_jsonl(tmp_path / "first" / "traces.jsonl")
    assert all(t["trace"]["generation"]["units"][0]["description"] for t in traces)

    second = score_samples(two_samples, config, tmp_path / "second")
    assert second.usage["calls"] == 0
    assert second.usage["cache_hits"] == first.usage["calls"]
    again = read_jsonl(tmp_path / "second" / "scores.jsonl")
    assert {(r["task_id"], r["sample_id"]): r["score"] for r in again} == {
        (r["task_id"], r["sample_id"]): r["score"] for r in rows
    }


def test_smollm2_in_process_returns_logprobs_that_the_expected_mode_reads(two_samples, tmp_path):
    """The ``local/`` provider hands back OpenAI-format log-probabilities through litellm: p-correct
    reads P(Yes) from them, ice-score the expectation over its score token."""
    config = ScoreConfig(method=["p-correct", "ice-score"], model="local/smollm2-135m", max_tokens=64, timeout=600,
                         workers=1, cache_dir=tmp_path / "cache")
    report = score_samples(two_samples, config, tmp_path / "out")
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    p_correct = [r for r in rows if r["method"] == "p-correct"]
    assert [r["score_read"] for r in p_correct] == ["expected", "expected"], [r["read_note"] for r in p_correct]
    for row in p_correct:
        assert 0 < row["score_mass"] <= 1 + 1e-6 and 0 <= row["score"] <= 1
        assert row["score"] == pytest.approx(row["p_yes"] / (row["p_yes"] + row["p_no"]))
    ice = [r for r in rows if r["method"] == "ice-score" and r["status"] == "ok"]
    assert all(r["score_read"] == "expected" and 0 <= r["score"] <= 4 for r in ice)
    assert report.score_reads["p-correct"] == {"expected": 2}
