"""Reading a run folder written by ``workbench run`` (or by the single commands) without ever
failing on a missing, partial or damaged file: every problem becomes a sentence in
:attr:`RunFolder.problems` that the report shows.

The folder's layout is :class:`workbench.run_layout.RunLayout`.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.data.samples import SampleNumbering
from workbench.errors import DataError, WorkbenchError
from workbench.run_layout import RunLayout
from workbench.formatting import count

@dataclass
class RunFolder:
    """A run folder and the problems met while reading it.

    Args:
        path: the run folder.

    Attributes:
        problems: one sentence per unreadable file or line (shown in the report).
    """

    path: Path
    problems: list[str] = field(default_factory=list)
    #: the CSV files read so far (relative path -> rows): the sections and the sample views read
    #: the dedup stages' ``removed.csv`` and ``contamination.csv`` from here, once
    _csv_rows: dict[str, list[dict[str, str]] | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def exists(self, relative: str) -> bool:
        return (self.path / relative).is_file()

    def json(self, relative: str) -> Any | None:
        """Return the parsed JSON file, or ``None`` when it is missing or unreadable (recorded)."""
        target = self.path / relative
        if not target.is_file():
            return None
        try:
            return json.loads(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            self.problems.append(f"{relative}: unreadable JSON ({type(error).__name__}: {error})")
            return None

    def json_object(self, relative: str) -> dict[str, Any] | None:
        """Like :meth:`json`, for files that must hold a JSON object: anything else is recorded and
        ``None`` is returned."""
        value = self.json(relative)
        if value is None or isinstance(value, dict):
            return value
        self.problems.append(f"{relative}: expected a JSON object, found {type(value).__name__}")
        return None

    def jsonl(self, relative: str) -> list[dict[str, Any]] | None:
        """Return the rows of a JSON Lines file, or ``None`` when it is missing.

        Lines that do not parse as a JSON object (e.g. a line torn by a killed run) are skipped
        and counted in :attr:`problems`, so finished rows are never lost to one bad line.
        """
        target = self.path / relative
        if not target.is_file():
            return None
        rows: list[dict[str, Any]] = []
        bad = 0
        try:
            with target.open("rb") as handle:
                for line in handle:
                    text = line.strip()
                    if not text:
                        continue
                    try:
                        row = json.loads(text)
                    except ValueError:
                        bad += 1
                        continue
                    if isinstance(row, dict):
                        rows.append(row)
                    else:
                        bad += 1
        except OSError as error:
            self.problems.append(f"{relative}: unreadable ({error})")
            return None
        if bad:
            what = "is not a JSON object and was" if bad == 1 else "are not JSON objects and were"
            self.problems.append(f"{relative}: {count(bad, 'line')} {what} skipped")
        return rows

    def csv(self, relative: str) -> list[dict[str, str]] | None:
        """Return the rows of a CSV file with a header, or ``None`` when it is missing or unreadable.

        The file is read once per :class:`RunFolder` (the report builds every section from one);
        each call returns a list of its own, the rows themselves shared (read them, do not edit them).
        """
        if relative not in self._csv_rows:
            self._csv_rows[relative] = self._read_csv(relative)
        rows = self._csv_rows[relative]
        return None if rows is None else list(rows)

    def _read_csv(self, relative: str) -> list[dict[str, str]] | None:
        target = self.path / relative
        if not target.is_file():
            return None
        try:
            with target.open(newline="", encoding="utf-8") as handle:
                return list(csv.DictReader(handle))
        except (OSError, UnicodeDecodeError, csv.Error) as error:
            self.problems.append(f"{relative}: unreadable CSV ({type(error).__name__}: {error})")
            return None


def dedup_id(task_id: Any, sample_id: Any) -> str:
    """The row id ``workbench dedup --id-column task_id,sample_id`` writes (``"HumanEval/5:44"``)."""
    return f"{task_id}:{sample_id}"


def sample_order(task_id: Any, sample_id: Any) -> tuple:
    """A sort key for samples in natural order: ``HumanEval/9`` before ``HumanEval/10``, sample 7
    before sample 14."""
    def natural(text: Any) -> tuple:
        return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(text)))

    return natural(task_id), natural(sample_id)


@dataclass
class Dataset:
    """The run's dataset rows with the pipeline's column names resolved.

    Attributes:
        rows: the rows, each with ``task_id`` and ``sample_id`` keys added when the dataset names
            them otherwise (samples numbered 0, 1, ... per task when it has no sample column, as
            ``workbench execute`` and ``workbench score`` number them); ``None`` when unavailable.
        source: where they came from.
        columns: ``{"task", "sample", "code", "reference", "prompt", "label", "language"}`` from
            the config's ``[data]`` table (defaults where it is silent; without ``[data]
            language``, the language the rows' ``language`` column names, as execute and score
            take it).
    """

    rows: list[dict[str, Any]] | None
    source: str | None
    columns: dict[str, str | None]


DEFAULT_COLUMNS = {"task": "task_id", "sample": "sample_id", "code": None, "reference": "reference",
                   "prompt": "prompt", "label": "passed", "language": "python"}


def load_dataset(folder: RunFolder, config: dict[str, Any] | None) -> Dataset:
    """Read the dataset rows: ``data.jsonl`` in the run folder if present, else the config's
    ``[data] source`` (a bundled name, a file, or a hub id read from the local cache only).

    A dataset that cannot be read is recorded in ``folder.problems``; the report then has no
    code and no shipped label, but every other section.
    """
    data = (config or {}).get("data") if isinstance(config, dict) else None
    data = data if isinstance(data, dict) else {}
    columns = dict(DEFAULT_COLUMNS)
    for key, config_key in (("task", "task_column"), ("sample", "sample_column"), ("code", "code_column"),
                            ("reference", "reference_column"), ("prompt", "prompt_column"),
                            ("label", "label_column"), ("language", "language")):
        if isinstance(data.get(config_key), str) and data[config_key]:
            columns[key] = data[config_key]
    rows = folder.jsonl(RunLayout.DATA)
    source = RunLayout.DATA if rows is not None else None
    if rows is None and isinstance(data.get("source"), str):
        source = data["source"]
        rows = _load_source(folder, source, data.get("split"))
    if rows is not None:
        _add_keys(rows, columns["task"], columns["sample"])
        _add_problem_texts(folder, rows, columns, (config or {}).get("score"))
        if not (isinstance(data.get("language"), str) and data["language"]):
            columns["language"] = _data_language(rows, columns["language"])
    return Dataset(rows, source, columns)


def _data_language(rows: list[dict[str, Any]], default: str) -> str:
    """The one language the rows' ``language`` column names (what execute and score ran without
    ``[data] language``: :func:`~workbench.data.language_column.run_language`), else ``default``
    (no such column, or several languages)."""
    from workbench.data.language_column import LANGUAGE_COLUMN, run_language

    if not any(LANGUAGE_COLUMN in row for row in rows):
        return default  # no plugin lookup for data without the column
    try:
        return run_language(None, {"the data": [row.get(LANGUAGE_COLUMN) for row in rows]})
    except DataError:  # several languages (execute and score refused them): no one language to show
        return default


def _add_problem_texts(folder: RunFolder, rows: list[dict[str, Any]], columns: dict[str, str | None],
                       score: Any) -> None:
    """Fill the prompt and reference of rows that lack them from ``[score] problems``, as the score
    stage did (:mod:`workbench.score.problems`), so the sample views show what the judges saw."""
    if not isinstance(score, dict) or not isinstance(score.get("problems"), str) or not rows:
        return
    lacking = [part for part in ("prompt", "reference") if not columns[part] or columns[part] not in rows[0]]
    if not lacking:
        return
    from workbench.score.problems import ProblemSet, load_problem_texts

    def setting(key: str, default: str | None) -> str | None:
        return score[key] if isinstance(score.get(key), str) and score[key] else default

    problems = ProblemSet(score["problems"], setting("problems_split", None), setting("problem_task_column", "task_id"),
                          setting("problem_prompt_column", "prompt"),
                          setting("problem_reference_column", "canonical_solution"), offline=True)
    try:
        texts = load_problem_texts(problems, prompt="prompt" in lacking, reference="reference" in lacking)
    except WorkbenchError as error:
        folder.problems.append(f"[score] problems could not be read ({error}); the prompt and reference are not shown")
        return
    for part in lacking:
        column = f"problem_{part}"  # a name of the report's own, never a data column it would overwrite
        for row in rows:
            problem = texts.get(str(row.get("task_id")))
            row[column] = getattr(problem, part) if problem is not None else ""
        columns[part] = column


def _load_source(folder: RunFolder, source: str, split: Any) -> list[dict[str, Any]] | None:
    from workbench.data.loading import load_records

    try:
        loaded = load_records(source, splits=[split] if isinstance(split, str) else None, offline=True)
        return [row for dataset in loaded.splits.values() for row in dataset.to_list()]
    except (WorkbenchError, OSError, ValueError) as error:
        folder.problems.append(f"dataset {source!r} could not be read ({error}); code and the shipped label are not shown")
        return None


def _add_keys(rows: list[dict[str, Any]], task_column: str, sample_column: str) -> None:
    numbering = SampleNumbering()
    for row in rows:
        task = row.get(task_column)
        row.setdefault("task_id", task)
        if sample_column in row:
            row.setdefault("sample_id", row[sample_column])
        else:
            row.setdefault("sample_id", numbering.next_id(task))
