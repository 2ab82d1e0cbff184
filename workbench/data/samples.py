"""Samples and their key: the one place that says which rows are the same sample.

Every job that reads or writes per-sample rows (``execute``, ``score``, ``correlate`` and the
report) joins them on ``(task_id, sample_id)``. This module owns that key and the rules around
it:

* :func:`sample_key` -- ids compared as text (``3``, ``3.0`` and ``"3"`` are one sample;
  surrounding blanks ignored), a missing id (null, NaN, blank) is ``None``, never ``"None"``;
* :class:`SampleNumbering` / :func:`number_samples` -- data without a sample id column gets
  ids 0, 1, ... per task in file order, the same in every job, so their outputs join; a row
  without a task or sample id is refused (:class:`MissingIdError`);
* :func:`resolve_sample_column` -- when an absent sample column means "number them";
* :func:`check_unique` -- two rows with one key are refused (:class:`DuplicateSampleError`);
* :class:`BaseSample` -- the part every job's sample shares (the ids and the key); the
  execution and scoring samples add their own fields to it;
* :func:`code_digest` -- the ``code_sha256`` of a sample's code that execute's and score's rows
  record, so ``workbench correlate --results`` can tell two files of other generations apart.

Example::

    from workbench.data.samples import check_unique, number_samples, sample_key
    rows = [{"task_id": "T/0", "code": "a"}, {"task_id": "T/0", "code": "b"}, {"task_id": "T/1", "code": "c"}]
    numbered = list(number_samples(rows, "task_id", None))
    assert [(task, sample) for task, sample, _ in numbered] == [("T/0", 0), ("T/0", 1), ("T/1", 0)]
    check_unique([sample_key(task, sample) for task, sample, _ in numbered], where="rows")
    assert sample_key("T/0", 3.0) == sample_key("T/0", "3") == ("T/0", "3")
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Optional

from workbench.errors import DataError
from workbench.formatting import count
from workbench.option_words import option_named


def code_digest(prompt: str | None, completion: str | None) -> str:
    """The ``code_sha256`` of a row: the first 16 hex digits of the SHA-256 of the JSON list
    ``[prompt, completion]`` (UTF-8).

    Args:
        prompt: the prompt the generations carry and the code runs after (execute's
            ``--prompt-column``), or ``None`` for the problem's own prompt (execute's default).
        completion: the generated code as run or scored (after any ``--stop`` cut), or ``None``
            for a null generation.

    Returns:
        16 lowercase hex digits. ``workbench execute`` (:attr:`workbench.execute.job.Sample.code_digest`)
        and ``workbench score`` (:attr:`workbench.score.base.Sample.code_digest`) both record it.
    """
    payload = json.dumps([prompt, completion], ensure_ascii=False).encode("utf-8", "surrogatepass")
    return hashlib.sha256(payload).hexdigest()[:16]


#: the default names of the key columns in every file workbench writes
TASK_COLUMN = "task_id"
SAMPLE_COLUMN = "sample_id"

#: ``(task id, sample id)`` as text; ``None`` for a missing id
SampleKey = tuple[Optional[str], Optional[str]]


def id_text(value: Any) -> str | None:
    """One id as join text: a missing id -- ``None``, a float NaN (a CSV or parquet gap) or blank
    text -- is ``None``, never the text ``"None"``, ``"nan"`` or ``""``; a whole float loses its
    ``.0`` (a CSV reader turns an int column with a gap into floats); text is stripped."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip() or None


def sample_key(task_id: Any, sample_id: Any) -> SampleKey:
    """The join key of one sample: ``(id_text(task_id), id_text(sample_id))``.

    Example::

        sample_key("HumanEval/0", 4) == sample_key(" HumanEval/0", "4") == ("HumanEval/0", "4")
    """
    return id_text(task_id), id_text(sample_id)


def row_key(row: Mapping[str, Any]) -> SampleKey:
    """The key of a row of a file workbench wrote (its ``task_id`` and ``sample_id`` columns)."""
    return sample_key(row.get(TASK_COLUMN), row.get(SAMPLE_COLUMN))


@dataclass(frozen=True)
class BaseSample:
    """What every sample has, whatever the job: its task and its id within the task.

    Attributes:
        task_id: the problem's id (``"HumanEval/0"``), as text.
        sample_id: the generation's id within the task as read (an int when numbered), written
            back unchanged into output rows; compared through :attr:`key`.
    """

    task_id: str
    sample_id: Any

    @property
    def key(self) -> SampleKey:
        """The join key (:func:`sample_key`)."""
        return sample_key(self.task_id, self.sample_id)


class DuplicateSampleError(DataError):
    """Two rows share one ``(task, sample)`` key.

    Attributes:
        duplicates: the repeated keys (the first few).
    """

    def __init__(self, message: str, duplicates: list[SampleKey]):
        super().__init__(message)
        self.duplicates = duplicates


def check_unique(
    keys: Iterable[SampleKey],
    *,
    where: str,
    columns: tuple[str, str] = (TASK_COLUMN, SAMPLE_COLUMN),
    hint: str = "remove the duplicates or name a unique sample id column",
) -> None:
    """Refuse keys that occur more than once (keys with a missing part are not compared).

    Args:
        keys: one key per row (:func:`sample_key`).
        where: names the input in the message (``"the generations (gen.jsonl)"``).
        columns: the key's column names, for the message.
        hint: how to fix the input.

    Raises:
        DuplicateSampleError: naming how many rows repeat a key and the first three keys.
    """
    counts = Counter(key for key in keys if None not in key)
    repeated = [key for key, n in counts.items() if n > 1]
    if not repeated:
        return
    extra = sum(n - 1 for n in counts.values())
    shown = ", ".join(f"({task}, {sample})" for task, sample in repeated[:3])
    raise DuplicateSampleError(
        f"{where}: {count(extra, 'row')} {'repeats' if extra == 1 else 'repeat'} a ({columns[0]}, {columns[1]}) key already seen (duplicate samples), "
        f"e.g. {shown}; a sample listed twice would be counted twice under one key, so each must appear once "
        f"({hint})",
        repeated[:3],
    )


def resolve_sample_column(available: Iterable[str], sample_column: str | None, default: str = SAMPLE_COLUMN) -> str | None:
    """The sample id column to read, or ``None`` when samples are to be numbered.

    A column left at its ``default`` name that the data does not have means "number the
    samples"; any other name is returned as asked (a missing one is then the caller's
    missing-column error).
    """
    if sample_column is None or (sample_column == default and sample_column not in set(available)):
        return None
    return sample_column


class SampleNumbering:
    """Sample ids for data without a sample id column: 0, 1, ... per task, in file order.

    Every job numbers the same rows the same way, so ``execute``'s results, ``score``'s rows
    and the report's dataset view join on ``(task_id, sample_id)``.
    """

    def __init__(self) -> None:
        self._next: dict[str, int] = {}

    def next_id(self, task_id: Any) -> int:
        """The id of the next sample of ``task_id`` (tasks compared as text)."""
        task = str(task_id)
        number = self._next.get(task, 0)
        self._next[task] = number + 1
        return number


def sample_numbers(task_ids: Iterable[Any]) -> list[int]:
    """The :class:`SampleNumbering` id of each row, given the rows' task ids in file order
    (``["A", "A", "B"]`` -> ``[0, 1, 0]``): the column a table without sample ids gets."""
    numbering = SampleNumbering()
    return [numbering.next_id(task) for task in task_ids]


class MissingIdError(DataError):
    """Rows whose task id or sample id is missing (null, NaN or blank).

    Attributes:
        column: the id column they lack a value in.
        rows: the 1-based numbers of those rows (all of them).
    """

    def __init__(self, message: str, column: str, rows: list[int]):
        super().__init__(message)
        self.column = column
        self.rows = rows


def _missing_ids(first: int, row: Mapping[str, Any], rest: Iterator[Mapping[str, Any]], task_column: str,
                 sample_column: str | None, where: str, option: str | None) -> MissingIdError:
    """The error for row ``first`` (``row``) without an id: the rest of the rows are read for
    their ids only, so the message names every row that lacks one (task ids first)."""
    tasks: list[int] = []
    samples: list[int] = []
    for number, each in itertools.chain([(first, row)], enumerate(rest, start=first + 1)):
        if id_text(each[task_column]) is None:
            tasks.append(number)
        elif sample_column is not None and id_text(each[sample_column]) is None:
            samples.append(number)
    missing = tasks or samples
    option = option or option_named("task_column")
    shown = ", ".join(str(n) for n in missing[:5]) + (" ..." if len(missing) > 5 else "")
    verb = "has" if len(missing) == 1 else "have"
    if tasks:
        return MissingIdError(
            f"{where}: {count(len(missing), 'row')} {verb} no task id in {option} {task_column!r} (null, NaN or blank; "
            f"rows {shown}, counting from 1); samples are grouped and joined by task, so fill them in, or name the "
            f"task id column with {option}", task_column, missing)
    return MissingIdError(
        f"{where}: {count(len(missing), 'row')} {verb} no sample id in column {sample_column!r} (rows {shown}); "
        f"results are joined on (task, sample id), so each needs one: fill them in, or name another column with "
        f"{option_named('sample_column')}", sample_column, missing)


def number_samples(
    rows: Iterable[Mapping[str, Any]], task_column: str, sample_column: str | None, *,
    where: str = "the data", option: str | None = None,
) -> Iterator[tuple[str, Any, Mapping[str, Any]]]:
    """Yield ``(task_id, sample_id, row)`` per row: the task id as text, the sample id from
    ``sample_column`` as read, or numbered by :class:`SampleNumbering` when it is ``None``.

    A row without a task id, or without a sample id in ``sample_column`` (null, NaN, blank:
    :func:`id_text` is ``None``), is refused, never read as a task called ``"None"`` or
    ``"nan"`` nor let two samples share the key ``(task, None)``: at the first such row the
    rest are read for their ids only and :class:`MissingIdError` names them all.

    Args:
        rows: the rows in file order; task_column: the task id column; sample_column: the
        sample id column, or ``None`` to number; where: the input, for the message
        (``"the generations (gens.jsonl)"``); option: the option that names ``task_column``
        (default: ``task_column``'s, :func:`workbench.option_words.option_named`).

    Raises:
        KeyError: a row lacks a named column (callers check columns first).
        MissingIdError: some rows have no task id, or no sample id (their row numbers, from 1).
    """
    numbering = SampleNumbering()
    rows = iter(rows)
    for number, row in enumerate(rows, start=1):
        value = row[task_column]
        if id_text(value) is None or (sample_column is not None and id_text(row[sample_column]) is None):
            raise _missing_ids(number, row, rows, task_column, sample_column, where, option)
        task_id = str(value)
        yield task_id, (row[sample_column] if sample_column else numbering.next_id(task_id)), row
