"""Importer for ICE-Score's HumanEval grade files (``humaneval_{python,java,cpp,js}_grade.json``).

Zhuo, "ICE-Score: Instructing Large Language Models to Evaluate Code", EACL Findings 2024;
files from terryyz/ice-score ``data/humaneval/``. Each file is a JSON list with one object per
task: ``task_id`` (bare number), ``intent`` (the prompt), ``snippet`` (``[reference]``),
``simplified``, and per sample id ``N``: ``"N"`` (the stripped generation), ``"grade-N"``
(``{"execution": 0|1}``) and ``"<metric>-N"`` scores. :func:`read_ice_score_grades` flattens that
into one row per (task, sample). :func:`workbench.data.load_records` calls it for any ``.json`` file
in this layout, so every command accepts a grade file directly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import datasets

from workbench.data.grade_json import grade_file_head, load_grade_json, uniform_column
from workbench.errors import DataError

#: metric keys of the published grade files, in ICE-Score's order; other ``<name>-N`` keys are kept too
ICE_SCORE_METRICS: tuple[str, ...] = (
    "bleu",
    "codebleu",
    "chrf",
    "rougel",
    "meteor",
    "ruby",
    "codebertscore_f1",
    "codebertscore_f3",
    "codebertscore_s_f1",
    "codebertscore_s_f3",
    "gpt35_nsnr",
    "gpt35_nswr",
)

#: leading columns of the flat table, before the metric columns
BASE_COLUMNS: tuple[str, ...] = (
    "task_id", "sample_id", "language", "prompt", "generation", "reference", "simplified", "passed",
)

#: bytes read to decide whether a ``.json`` file is a grade file (one task object is ~20 KB)
_SNIFF_BYTES = 65536
_SAMPLE_KEY = re.compile(r"^(?P<name>.+)-(?P<sample>\d+)$")
_FILE_LANGUAGE = re.compile(r"humaneval_(?P<language>[a-z0-9+#]+)_grade", re.IGNORECASE)


def looks_like_ice_score_grades(path: str | os.PathLike[str]) -> bool:
    """Cheaply tell whether ``path`` is a grade file in ICE-Score's layout.

    Reads at most the first 64 KiB: a JSON list whose first object has ``intent``,
    ``snippet`` and ``grade-N`` keys. Never raises for unreadable or non-JSON files.

    Args:
        path: a ``.json`` or ``.json.gz`` file.

    Returns:
        True when the file should be read with :func:`read_ice_score_grades`.
    """
    head = grade_file_head(path, _SNIFF_BYTES)
    return head is not None and re.search(r'"grade-\d+"\s*:', head) is not None


def language_from_filename(path: str | os.PathLike[str]) -> str:
    """Return ``"java"`` for ``humaneval_java_grade.json`` and so on; ``""`` when the name says nothing."""
    match = _FILE_LANGUAGE.search(Path(path).name)
    return match.group("language").lower() if match else ""


def read_ice_score_grades(
    path: str | os.PathLike[str], *, language: str | None = None, task_prefix: str = "HumanEval/"
) -> datasets.Dataset:
    """Read one ICE-Score grade file into a flat table, one row per (task, sample).

    Args:
        path: ``humaneval_<language>_grade.json`` (optionally gzipped).
        language: the value of the ``language`` column; default from the file name
            (``humaneval_cpp_grade.json`` -> ``"cpp"``), else ``""``.
        task_prefix: prepended to bare task numbers (``"99"`` -> ``"HumanEval/99"``).

    Returns:
        a ``datasets.Dataset`` with the :data:`BASE_COLUMNS` -- ``task_id`` (str),
        ``sample_id`` (int, the MultiPL-E completion index), ``language``, ``prompt`` (= ``intent``),
        ``generation`` (the stripped sample), ``reference`` (= ``snippet[0]``), ``simplified``,
        ``passed`` (= ``grade-N.execution``, 0/1, null if absent) -- then one column per metric
        key (:data:`ICE_SCORE_METRICS` first, others sorted), numeric where every value is a
        number, else strings (the ``raw_*`` LLM answers stay strings). Samples that lack a metric
        get null there; nothing is dropped.

    Raises:
        DataError: the file cannot be read or parsed, or is not in this layout.
    """
    path = Path(path)
    tasks = load_grade_json(path, "an ICE-Score grade file")
    if language is None:
        language = language_from_filename(path)
    columns = ice_score_grade_columns(tasks, language=language, task_prefix=task_prefix, where=str(path))
    return datasets.Dataset.from_dict(columns)


def ice_score_grade_columns(
    tasks: Any, *, language: str = "", task_prefix: str = "HumanEval/", where: str = "the grade file"
) -> dict[str, list]:
    """Flatten parsed grade-file objects into columns (see :func:`read_ice_score_grades`).

    Args:
        tasks: the parsed JSON (a list of task objects).
        language, task_prefix: as in :func:`read_ice_score_grades`.
        where: names the source in error messages.

    Returns:
        column name -> list of values, all lists of equal length.

    Raises:
        DataError: ``tasks`` is not a list of objects, a task has no ``task_id`` or no samples.
    """
    if not isinstance(tasks, list) or not tasks:
        raise DataError(f"{where}: expected a non-empty JSON list of task objects (ICE-Score grade layout)")
    rows: list[dict[str, Any]] = []
    metric_names: set[str] = set()
    for index, task in enumerate(tasks):
        if not isinstance(task, Mapping) or "task_id" not in task:
            raise DataError(f"{where}: item {index} is not a task object with a 'task_id'")
        sample_ids = [key for key in task if key.isdigit()]
        if not sample_ids:
            raise DataError(f"{where}: task {task['task_id']!r} (item {index}) has no samples (keys '0', '1', ...)")
        task_id = str(task["task_id"])
        if task_id.isdigit():
            task_id = f"{task_prefix}{task_id}"
        snippet = task.get("snippet")
        reference = snippet[0] if isinstance(snippet, Sequence) and not isinstance(snippet, str) and snippet else snippet
        per_sample: dict[str, dict[str, Any]] = {sample: {} for sample in sample_ids}
        for key, value in task.items():
            match = _SAMPLE_KEY.match(key)
            if match and match.group("sample") in per_sample:
                per_sample[match.group("sample")][match.group("name")] = value
        for sample in sample_ids:
            scores = per_sample[sample]
            grade = scores.pop("grade", None)
            passed = grade.get("execution") if isinstance(grade, Mapping) else grade
            metric_names.update(scores)
            rows.append(
                {
                    "task_id": task_id,
                    "sample_id": int(sample),
                    "language": language,
                    "prompt": task.get("intent"),
                    "generation": task[sample],
                    "reference": reference,
                    "simplified": task.get("simplified"),
                    "passed": passed,
                    **scores,
                }
            )
    ordered = [m for m in ICE_SCORE_METRICS if m in metric_names] + sorted(metric_names - set(ICE_SCORE_METRICS))
    columns = {name: [row.get(name) for row in rows] for name in (*BASE_COLUMNS, *ordered)}
    for name in ordered:
        columns[name] = uniform_column(columns[name])
    return columns

