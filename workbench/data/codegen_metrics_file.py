"""Importer for the human-graded CoNaLa files of Evtikhiev et al. ("Out of the BLEU").

Evtikhiev, Bogomolov, Sokolov, Bryksin, "Out of the BLEU: How Should We Assess Quality of the Code
Generation Models?", Journal of Systems and Software 203, 2023; files from
JetBrains-Research/codegen-metrics ``data/to-grade/conala/``. Both are a JSON list with one object
per CoNaLa item:

* ``intent`` (the natural-language request), ``snippet`` (a list of reference snippets),
* the generations of five models under the keys ``baseline``, ``tranx-annot``, ``best-tranx``,
  ``best-tranx-rerank`` and ``codex``,
* ``grade-<model>``: in ``conala-human-grades.json`` a ``{"graderK": 0-4}`` object (3 to 10
  graders); in ``conala-all-grades.json`` one aggregated grade (0-4; the authors aggregated the
  graders with MMSR, crowd-kit), next to ``<metric>-<model>`` scores (``rougel``, ``bleu``, ``chrf``,
  ``meteor``, ``codebleu``, ``ruby``),
* ``grade-snippet``: the graders' grades of the reference itself (a per-grader object in both files).

:func:`read_codegen_metrics_grades` flattens either file into one row per (item, model).
:func:`workbench.data.load_records` calls it for any ``.json`` (or ``.json.gz``) file in this
layout, so every command accepts the files directly. The reference is **not** made a row of its
own: every match-based metric gives the reference a perfect score against itself, so such rows
would only add ties at the top of the scale. Its grades become the columns ``reference_grade``
(mean over its graders) and ``reference_n_graders`` of each of the item's rows instead: how good
the graders thought the reference was, e.g. to leave out items with a poor reference.
"""

from __future__ import annotations

import json
import os
import re
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import datasets

from workbench.data.grade_json import grade_file_head, load_grade_json, uniform_column
from workbench.errors import DataError

#: the metric keys of ``conala-all-grades.json``, in the file's order; other ``<name>-<model>`` keys are kept too
CODEGEN_METRICS: tuple[str, ...] = ("rougel", "bleu", "chrf", "meteor", "codebleu", "ruby")

#: the five models of the CoNaLa files, in the paper's order; rows of an item come in this order
#: (the files' key order varies between items), any other graded model after them in key order
CONALA_MODELS: tuple[str, ...] = ("baseline", "tranx-annot", "best-tranx", "best-tranx-rerank", "codex")

#: the key of the reference's own grades
REFERENCE_GRADE_KEY = "grade-snippet"

#: leading columns of the flat table, before the metric columns
BASE_COLUMNS: tuple[str, ...] = (
    "task_id", "sample_id", "prompt", "generation", "reference", "references", "grade",
)

#: columns only per-grader files have (``conala-human-grades.json``)
GRADER_COLUMNS: tuple[str, ...] = ("n_graders", "grade_sd", "graders", "grader_grades")

#: the reference's grades, on every row of its item
REFERENCE_COLUMNS: tuple[str, ...] = ("reference_grade", "reference_n_graders")

#: numeric columns that describe the human grades rather than score a generation: ``correlate``'s
#: automatic metric choice leaves them out (``grade`` itself is the label, left out as such)
GRADE_SIDE_COLUMNS = frozenset({"n_graders", "grade_sd", *REFERENCE_COLUMNS})

#: bytes read to decide whether a ``.json`` file is in this layout (one item object is ~1.5 KB)
_SNIFF_BYTES = 16384
_MODEL_GRADE = re.compile(r'"grade-[A-Za-z][^"]*"\s*:')


def looks_like_codegen_metrics_grades(path: str | os.PathLike[str]) -> bool:
    """Cheaply tell whether ``path`` is a CoNaLa grade file of Evtikhiev et al.

    Reads at most the first 16 KiB: a JSON list whose first object has ``intent``, ``snippet``
    and ``grade-<model>`` keys (a model name, not a number: ICE-Score's ``grade-N`` files are
    :mod:`workbench.data.ice_score_file`'s). Never raises for unreadable or non-JSON files.

    Args:
        path: a ``.json`` or ``.json.gz`` file.

    Returns:
        True when the file should be read with :func:`read_codegen_metrics_grades`.
    """
    head = grade_file_head(path, _SNIFF_BYTES)
    return head is not None and _MODEL_GRADE.search(head) is not None


def read_codegen_metrics_grades(path: str | os.PathLike[str], *, task_prefix: str = "conala/") -> datasets.Dataset:
    """Read ``conala-all-grades.json`` or ``conala-human-grades.json`` into a flat table.

    Args:
        path: the file (optionally gzipped).
        task_prefix: prepended to the item's 0-based position in the file (``"conala/17"``).

    Returns:
        a ``datasets.Dataset``, one row per (item, model), items in file order and models in
        :data:`CONALA_MODELS` order, see :func:`codegen_metrics_columns`.

    Raises:
        DataError: the file cannot be read or parsed, or is not in this layout.
    """
    path = Path(path)
    items = load_grade_json(path, "a CoNaLa human-grade file (Evtikhiev et al.)")
    return datasets.Dataset.from_dict(codegen_metrics_columns(items, task_prefix=task_prefix, where=str(path)))


def _grader_grades(value: Mapping[str, Any], where: str) -> tuple[list[str], list[float]]:
    graders = sorted(value, key=lambda name: (len(name), name))  # grader2 before grader10
    grades = [value[name] for name in graders]
    if not grades or not all(isinstance(g, (int, float)) and not isinstance(g, bool) for g in grades):
        raise DataError(f"{where}: expected {{grader: number}} grades, got {json.dumps(value)[:80]}")
    return graders, grades


def codegen_metrics_columns(items: Any, *, task_prefix: str = "conala/", where: str = "the grade file") -> dict[str, list]:
    """Flatten parsed grade-file objects into columns (see :func:`read_codegen_metrics_grades`).

    Columns:

    * ``task_id``: ``task_prefix`` + the item's 0-based position (``conala/0`` ... ``conala/471``);
    * ``sample_id``: the model key (``baseline``, ``tranx-annot``, ``best-tranx``,
      ``best-tranx-rerank``, ``codex``);
    * ``prompt`` (= ``intent``), ``generation``, ``reference`` (= ``snippet[0]``),
      ``references`` (the whole ``snippet`` list; 16 of the 472 items have 2 to 5; a list column
      that ``workbench score --reference-column references`` reads as each sample's references);
    * ``grade``: the human grade on the 0-4 scale. An aggregated file (one number per model):
      that number. A per-grader file: the mean over the graders (float), with ``n_graders``,
      ``grade_sd`` (sample standard deviation, ``statistics.stdev``; null with one grader),
      ``graders`` (names, ``grader2`` before ``grader10``) and ``grader_grades`` (their grades, in
      that order);
    * ``reference_grade``, ``reference_n_graders``: the mean and count of ``grade-snippet``, the
      grades of the reference itself (null where an item has none);
    * one column per ``<metric>-<model>`` key (:data:`CODEGEN_METRICS` first, others sorted;
      only in the aggregated file), null where a model lacks it.

    Args:
        items: the parsed JSON (a list of item objects).
        task_prefix, where: see :func:`read_codegen_metrics_grades`; ``where`` names the source in errors.

    Returns:
        column name -> list of values, all lists of equal length.

    Raises:
        DataError: ``items`` is not a list of objects; an item has no ``intent``, no ``grade-<model>``
            key, a grade that is not a number or a ``{grader: number}`` object, or a graded model
            without its generation.
    """
    if not isinstance(items, list) or not items:
        raise DataError(f"{where}: expected a non-empty JSON list of item objects (CoNaLa human-grade layout)")
    rows: list[dict[str, Any]] = []
    metric_names: set[str] = set()
    per_grader = False
    for index, item in enumerate(items):
        if not isinstance(item, Mapping) or "intent" not in item:
            raise DataError(f"{where}: item {index} is not an object with an 'intent'")
        graded = [key[len("grade-"):] for key in item if key.startswith("grade-") and key != REFERENCE_GRADE_KEY]
        models = [m for m in CONALA_MODELS if m in graded] + [m for m in graded if m not in CONALA_MODELS]
        if not models:
            raise DataError(f"{where}: item {index} has no 'grade-<model>' key")
        snippet = item.get("snippet")
        references = [snippet] if isinstance(snippet, str) else list(snippet or [])
        reference_grade = reference_graders = None
        if isinstance(item.get(REFERENCE_GRADE_KEY), Mapping) and item[REFERENCE_GRADE_KEY]:
            _, grades = _grader_grades(item[REFERENCE_GRADE_KEY], f"{where}: item {index} {REFERENCE_GRADE_KEY}")
            reference_grade, reference_graders = statistics.fmean(grades), len(grades)
        for model in models:
            if model not in item:
                raise DataError(f"{where}: item {index} grades model {model!r} but has no generation under {model!r}")
            raw = item[f"grade-{model}"]
            row: dict[str, Any] = {
                "task_id": f"{task_prefix}{index}",
                "sample_id": model,
                "prompt": item["intent"],
                "generation": item[model],
                "reference": references[0] if references else None,
                "references": references,
                "reference_grade": reference_grade,
                "reference_n_graders": reference_graders,
            }
            if isinstance(raw, Mapping):
                per_grader = True
                graders, grades = _grader_grades(raw, f"{where}: item {index} grade-{model}")
                row.update(grade=statistics.fmean(grades), n_graders=len(grades),
                           grade_sd=statistics.stdev(grades) if len(grades) > 1 else None,
                           graders=graders, grader_grades=grades)
            elif isinstance(raw, (int, float)) and not isinstance(raw, bool):
                row["grade"] = raw
            else:
                raise DataError(f"{where}: item {index} grade-{model} is {raw!r}, not a grade (a number or {{grader: number}})")
            for key, value in item.items():
                metric, dash, rest = key.partition("-")
                if dash and rest == model and metric != "grade":
                    row[metric] = value
                    metric_names.add(metric)
            rows.append(row)
    ordered = [m for m in CODEGEN_METRICS if m in metric_names] + sorted(metric_names - set(CODEGEN_METRICS))
    names = [*BASE_COLUMNS, *(GRADER_COLUMNS if per_grader else ()), *REFERENCE_COLUMNS, *ordered]
    columns = {name: [row.get(name) for row in rows] for name in names}
    for name in ("grade", *ordered):
        columns[name] = uniform_column(columns[name])
    return columns

