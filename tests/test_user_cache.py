"""``$WORKBENCH_CACHE_DIR`` moves every cache folder: the model store, the LLM response cache and
the reference times. (Before, it moved only the model store: a run "from an empty cache" with it
set still read the answers of earlier runs from ``~/.cache/workbench/llm``.)"""

from __future__ import annotations

from pathlib import Path

from workbench.execute.config import ExecutionConfig
from workbench.llm.models import models_dir
from workbench.score.config import ScoreConfig


def test_one_variable_moves_the_models_the_responses_and_the_reference_times(monkeypatch, tmp_path):
    monkeypatch.delenv("WORKBENCH_MODELS_DIR", raising=False)
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "cache"
    assert models_dir() == root / "models"
    assert ScoreConfig(method=("chrf",)).response_cache_dir == root / "llm"
    assert Path(ExecutionConfig().reference_cache_folder) == root / "reference-times"


def test_explicit_folders_still_win(monkeypatch, tmp_path):
    monkeypatch.setenv("WORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    assert ScoreConfig(method=("chrf",), cache_dir=tmp_path / "mine").response_cache_dir == tmp_path / "mine"
    assert Path(ExecutionConfig(reference_cache_dir=tmp_path / "times").reference_cache_folder) == tmp_path / "times"
