"""Faults of a scoring run found in review: each test reproduces one defect. The LLM, where
one is needed, is litellm's own ``mock_response`` (a scripted responder, or a fixed failure);
storage is a real embedded Chroma in a temp dir with the real offline MiniLM."""

from __future__ import annotations

import pytest

from workbench.errors import WorkbenchError
from workbench.llm.client import LLMSettings
from workbench.scoring.results import read_rows
from workbench.scoring.run import Columns, ScoreConfig, load_samples, score_samples


def _config(tmp_path, mock=None, **overrides) -> ScoreConfig:
    settings = overrides.pop("llm", LLMSettings("gpt-4o-mini", retry_wait_s=0.01, max_retries=0))
    return ScoreConfig(
        **{
            "methods": ["chrf"],
            "output_dir": tmp_path / "out",
            "llm": settings,
            "cache_dir": tmp_path / "cache",
            "mock_response": mock,
            **overrides,
        }
    )


@pytest.mark.parametrize("column", ["chrf", "model"])
def test_a_carried_column_named_like_a_method_or_row_column_is_refused(tmp_path, ice_slice, column):
    """No LLM. The ICE-Score file has ``chrf`` and ``model`` columns: carried, they used to
    overwrite our chrF score in scores_wide.jsonl (or be dropped silently from scores.jsonl)."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e", carry=("passed", column)))
    with pytest.raises(WorkbenchError, match=f"--carry {column}"):
        score_samples(samples, _config(tmp_path, methods=["chrf", "ice-score"], mock_response="3"))
    assert not (tmp_path / "out" / "scores.jsonl").exists()


def test_carrying_the_shipped_columns_of_other_metrics_still_works(tmp_path, ice_slice):
    """No LLM: chrF only; ``codebleu`` is not one of our methods, so it is carried as before."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e", carry=("passed", "codebleu")))
    score_samples(samples, _config(tmp_path))
    wide = read_rows(tmp_path / "out" / "scores_wide.jsonl")
    assert len(wide) == 4 and all(0 <= r["chrf"] <= 1 and "codebleu" in r for r in wide)
