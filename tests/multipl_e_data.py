"""The real MultiPL-E problems and ICE-Score grade files of one language, for the language plugins'
tests (``plugins/*/tests``; ``tests/`` is on pytest's ``pythonpath``): written out from the sets bundled
in the package (``humaneval-<language>``, ``humaneval-codex-<language>``; byte for byte the files of
``../shared/data``, tests/bundled_data.py), loaded, and the labelled samples of a task written as a
generations file."""

from __future__ import annotations

import json
from pathlib import Path

from bundled_data import write_bundled_data


def multipl_e_files(language: str, folder: Path) -> dict[str, Path]:
    """Write the bundled MultiPL-E problems and ICE-Score grade file of ``language`` (``java``, ``cpp``)
    under ``folder`` and return their paths: ``problems`` (``multipl-e-codex-<language>/problems.jsonl``,
    one MultiPL-E problem per line) and ``grades`` (``ice-score/humaneval_<language>_grade.json``, the
    file name the loader takes the language from)."""
    files = {"problems": f"multipl-e-codex-{language}/problems.jsonl",
             "grades": f"ice-score/humaneval_{language}_grade.json"}
    write_bundled_data(folder, files.values())
    return {key: folder / relative for key, relative in files.items()}


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
