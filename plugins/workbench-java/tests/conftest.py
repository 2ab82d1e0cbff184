"""Fixtures for the Java plugin's tests: the real MultiPL-E / ICE-Score data."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# plugins/workbench-java/tests -> repository root -> ../shared/data
_DEFAULT_DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


def _data_root() -> Path:
    return Path(os.environ.get("WORKBENCH_SHARED_DATA", _DEFAULT_DATA))


@pytest.fixture(scope="session")
def java_problems_file() -> Path:
    """The MultiPL-E Java problems file (skips the test when the shared data is absent)."""
    path = _data_root() / "multipl-e-codex-java" / "problems.jsonl"
    if not path.is_file():
        pytest.skip(f"MultiPL-E Java problems not found at {path}")
    return path


@pytest.fixture(scope="session")
def java_files() -> dict[str, Path]:
    """The paths of ``problems`` (MultiPL-E Java problems) and ``grades`` (ICE-Score Java grade file)."""
    root = _data_root()
    problems_path = root / "multipl-e-codex-java" / "problems.jsonl"
    grades_path = root / "ice-score" / "humaneval_java_grade.json"
    if not problems_path.is_file() or not grades_path.is_file():
        pytest.skip(f"MultiPL-E / ICE-Score Java data not found under {root}")
    return {"problems": problems_path, "grades": grades_path}


@pytest.fixture(scope="session")
def java_data(java_files) -> dict:
    """``problems`` (task_id -> MultiPL-E Java problem) and ``grades`` (ICE-Score Java grade file)."""
    problems_path, grades_path = java_files["problems"], java_files["grades"]
    with open(problems_path, encoding="utf-8") as handle:
        problems = {row["task_id"]: row for row in map(json.loads, handle)}
    return {"problems": problems, "grades": json.loads(grades_path.read_text(encoding="utf-8"))}
