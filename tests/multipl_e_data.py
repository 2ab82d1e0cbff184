"""The real MultiPL-E problems and ICE-Score grade files of one language, for the language plugins'
tests (``plugins/*/tests``; ``tests/`` is on pytest's ``pythonpath``): where they are, loaded, and the
labelled samples of a task written as a generations file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

# tests -> repository root -> ../shared/data (as the shared_data fixture of tests/conftest.py)
_DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def multipl_e_files(language: str) -> dict[str, Path]:
    """The paths of ``problems`` (``multipl-e-codex-<language>/problems.jsonl``) and ``grades``
    (``ice-score/humaneval_<language>_grade.json``) under ``$WORKBENCH_SHARED_DATA`` (default
    ``../shared/data``); skips the calling test when either is absent."""
    root = Path(os.environ.get("WORKBENCH_SHARED_DATA", _DEFAULT_DATA))
    files = {"problems": root / f"multipl-e-codex-{language}" / "problems.jsonl",
             "grades": root / "ice-score" / f"humaneval_{language}_grade.json"}
    if not all(path.is_file() for path in files.values()):
        pytest.skip(f"MultiPL-E / ICE-Score {language} data not found under {root}")
    return files


def load_multipl_e(files: dict[str, Path]) -> dict:
    """``problems`` (task_id -> MultiPL-E problem row) and ``grades`` (the grade file's task
    objects) of :func:`multipl_e_files`."""
    with open(files["problems"], encoding="utf-8") as handle:
        problems = {row["task_id"]: row for row in map(json.loads, handle)}
    return {"problems": problems, "grades": json.loads(files["grades"].read_text(encoding="utf-8"))}


def grade_task(data: dict, task_number: str) -> dict:
    """The grade file's object of task ``task_number`` (``"0"`` for HumanEval/0)."""
    return next(task for task in data["grades"] if task["task_id"] == task_number)


def labelled_samples(data: dict, task_number: str, per_label: int = 1) -> dict[str, int]:
    """Sample id -> ICE-Score label (``grade-N.execution``) for the first ``per_label`` samples of
    each label of a task; fails the test when the task has fewer of either label."""
    task = grade_task(data, task_number)
    chosen: dict[str, int] = {}
    counts = {0: 0, 1: 0}
    for key in (k for k in task if k.isdigit()):
        label = task[f"grade-{key}"]["execution"]
        if counts[label] < per_label:
            chosen[key] = label
            counts[label] += 1
    assert counts == {0: per_label, 1: per_label}
    return chosen


def write_generations(path: Path, data: dict, task_number: str, keys) -> None:
    """Write the samples ``keys`` of a task as a generations file (``task_id``, ``sample_id``,
    ``completion``) for ``workbench execute``."""
    task = grade_task(data, task_number)
    with open(path, "w", encoding="utf-8") as handle:
        for key in keys:
            handle.write(json.dumps({"task_id": f"HumanEval/{task_number}", "sample_id": int(key),
                                     "completion": task[key]}) + "\n")
