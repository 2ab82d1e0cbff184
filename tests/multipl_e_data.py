"""The real MultiPL-E problems and ICE-Score grade files of one language, for the language plugins'
tests (``plugins/*/tests``; ``tests/`` is on pytest's ``pythonpath``): written out from the sets bundled
in the package (``humaneval-<language>``, ``humaneval-codex-<language>``; byte for byte the files of
``../shared/data``, tests/bundled_data.py), loaded, and the labelled samples of a task written as a
generations file."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
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


def multipl_e_fixtures(language: str):
    """The two session fixtures of a plugin's ``conftest.py`` for ``language`` (``java``, ``cpp``):
    ``<language>_files`` (:func:`multipl_e_files` under a session temporary folder) and
    ``<language>_data`` (:func:`load_multipl_e` of them). Use::

        java_files, java_data = multipl_e_fixtures("java")

    Returns:
        (files fixture, data fixture); pytest registers them under the names above.
    """

    @pytest.fixture(scope="session", name=f"{language}_files")
    def files(tmp_path_factory) -> dict[str, Path]:
        return multipl_e_files(language, tmp_path_factory.mktemp(f"multipl-e-{language}"))

    @pytest.fixture(scope="session", name=f"{language}_data")
    def data(request) -> dict:
        return load_multipl_e(request.getfixturevalue(f"{language}_files"))

    files.__doc__ = (f"The paths of ``problems`` (MultiPL-E {language} problems) and ``grades`` (ICE-Score "
                     f"{language} grade file), written from the sets bundled in the package.")
    data.__doc__ = (f"``problems`` (task_id -> MultiPL-E {language} problem) and ``grades`` (ICE-Score "
                    f"{language} grade file).")
    return files, data


def reference_programs(data: dict) -> Iterator[tuple[str, dict, str]]:
    """(task number, MultiPL-E problem row, prompt + reference solution) of every task of the grade
    file, in its order; the reference is the task's first ``snippet``."""
    for task in data["grades"]:
        problem = data["problems"][f"HumanEval/{task['task_id']}"]
        yield task["task_id"], problem, problem["prompt"] + task["snippet"][0]


def generations(data: dict) -> Iterator[str]:
    """Every graded generation of every task of the grade file (the stripped bodies the model
    wrote, not compilation units on their own), in file order."""
    for task in data["grades"]:
        for key in (k for k in task if k.isdigit()):
            yield task[key]


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


def check_execute_command(language: str, data: dict, files: dict[str, Path], folder: Path) -> None:
    """Run ``workbench execute -l <language>`` end to end, as a user types it, on the two labelled
    samples of HumanEval/0 (one of each ICE-Score label), as docs/execute.md shows it: no entry
    point column, the default timeout, two jobs; fail the test unless each sample passes or fails
    as labelled, is recorded under ``language``, ran under the default 4 s floor after a build of
    its own, and the command said the problems have no entry point column.

    Args:
        language: the plugin's name (``java``, ``cpp``).
        data, files: the ``<language>_data`` and ``<language>_files`` fixtures (:func:`multipl_e_fixtures`).
        folder: an empty working folder (pytest's ``tmp_path``).
    """
    from typer.testing import CliRunner

    from workbench.cli import app

    labels = labelled_samples(data, "0")
    generations_file = folder / "gens.jsonl"
    write_generations(generations_file, data, "0", labels)
    output = folder / "results.jsonl"
    result = CliRunner().invoke(app, [
        "execute", str(generations_file), "--problems", str(files["problems"]), "--test-column", "tests",
        "-l", language, "-j", "2", "-o", str(output)])
    assert result.exit_code == 0, result.output
    rows = {str(row["sample_id"]): row for row in map(json.loads, output.read_text().splitlines())}
    assert {key: row["passed"] for key, row in rows.items()} == labels, rows
    assert {row["language"] for row in rows.values()} == {language}
    # no entry point column (MultiPL-E's tests call the function) and the default timeout, the
    # 4 s floor: the build ran under its own limit, so a slow compile cannot time a sample out
    assert all(row["timeout_s"] == 4.0 and row["build_s"] > 0 for row in rows.values()), rows
    assert "the problems have no 'entry_point' column" in " ".join(result.output.split())
