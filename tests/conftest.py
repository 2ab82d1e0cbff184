"""Shared fixtures. ``shared_data`` is the project's ``../shared/data`` folder of real data
(HumanEval, ICE-Score, MultiPL-E); override with WORKBENCH_SHARED_DATA."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_DATA = REPO_ROOT / "tests" / "data"

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def _shared_root() -> Path:
    return Path(os.environ.get("WORKBENCH_SHARED", REPO_ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real-data folder ``../shared/data``; tests that need it skip when it is absent."""
    path = Path(os.environ.get("WORKBENCH_SHARED_DATA", _shared_root() / "data"))
    if not path.is_dir():
        pytest.skip(f"shared data folder not found at {path}")
    return path


@pytest.fixture(scope="session")
def shared_bench() -> Path:
    """The dedup benchmark folder ``../shared/bench``."""
    path = _shared_root() / "bench"
    if not path.is_dir():
        pytest.skip(f"shared bench folder not found at {path}")
    return path


@pytest.fixture(scope="session")
def test_data() -> Path:
    """The small data slices committed under ``tests/data``."""
    return TEST_DATA
