"""Execution result rows: the jsonl file ``workbench correlate`` joins on
``task_id`` + ``sample_id``, written one row at a time so an interrupted run resumes."""

from __future__ import annotations

import json
import os
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workbench.errors import DataError

#: the columns of a result row, in order (``correlate`` needs the first three)
RESULT_COLUMNS: tuple[str, ...] = (
    "task_id", "sample_id", "passed", "status", "duration_s", "timeout_s",
    "exit_code", "signal", "detail", "stderr_tail", "language", "isolation",
)


def result_key(task_id: Any, sample_id: Any) -> tuple[str, str]:
    """The join key of a row; ids compare as text, so ``3`` and ``"3"`` are one sample."""
    return str(task_id), str(sample_id)


def read_results(path: str | os.PathLike[str], *, allow_torn_tail: bool = True) -> list[dict[str, Any]]:
    """Read a results file.

    Args:
        path: the jsonl file.
        allow_torn_tail: ignore a last line without its newline that does not parse
            (what a killed run leaves); a bad line anywhere else is an error.

    Raises:
        DataError: a row that is not JSON, or lacks ``task_id``/``sample_id``/``passed``.
    """
    rows = []
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        torn = number == len(lines) and not data.endswith(b"\n")
        try:
            row = json.loads(line)
        except ValueError as error:
            if torn and allow_torn_tail:
                break
            raise DataError(f"{path}, line {number}: not a JSON row ({error})") from error
        if not isinstance(row, dict) or not {"task_id", "sample_id", "passed"} <= row.keys():
            raise DataError(f"{path}, line {number}: a result row needs task_id, sample_id and passed")
        rows.append(row)
    return rows


class ResultWriter:
    """Appends result rows to a jsonl file, flushing each so a crash loses nothing finished.

    Args:
        path: the output file.
        resume: keep the rows already there (a torn last line is cut off first);
            otherwise the file must not exist yet unless ``overwrite``.
        overwrite: replace an existing file.

    Raises:
        DataError: the file exists and neither ``resume`` nor ``overwrite`` is set, or
            ``path`` is a folder (``--overwrite`` replaces files, never folders), or, with
            ``resume``, the file is not a results file (it is then left as it was).
    """

    def __init__(self, path: str | os.PathLike[str], *, resume: bool = False, overwrite: bool = False):
        self.path = Path(path)
        self.finished: set[tuple[str, str]] = set()
        if self.path.is_dir():
            raise DataError(
                f"{self.path} is a folder; --output takes a results file, e.g. {self.path / 'results.jsonl'}"
            )
        if self.path.exists() and self.path.stat().st_size > 0:
            if resume:
                # read (and so check) the file before cutting anything: a file that is not
                # a results file (a mistyped --output) must be refused untouched
                rows = read_results(self.path)
                if self._cut_torn_tail():  # a torn row that parsed is cut too, so it runs again
                    rows = read_results(self.path)
                self.finished = {result_key(r["task_id"], r["sample_id"]) for r in rows}
            elif not overwrite:
                raise DataError(f"{self.path} already exists; pass --resume to continue it or --overwrite to replace it")
        if self.path.parent and not self.path.parent.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "a" if resume else "w", encoding="utf-8")

    def _cut_torn_tail(self) -> bool:
        """Cut a last line without its newline (what a killed run leaves); True if one was cut."""
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as handle:
                handle.truncate(keep)
            return True
        return False

    def write(self, row: Mapping[str, Any]) -> None:
        """Append one row (columns in :data:`RESULT_COLUMNS` order, extras after)."""
        ordered = {column: row[column] for column in RESULT_COLUMNS if column in row}
        ordered.update({k: v for k, v in row.items() if k not in ordered})
        self._handle.write(json.dumps(ordered, ensure_ascii=False) + "\n")
        self._handle.flush()
        self.finished.add(result_key(row["task_id"], row["sample_id"]))

    def close(self) -> None:
        """Flush to disk and close."""
        if not self._handle.closed:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def pass_at_1(rows: Iterable[Mapping[str, Any]]) -> float | None:
    """Return pass@1: the mean over tasks of each task's fraction of passing samples
    (the unbiased estimator of Chen et al. 2021, Sec. 2.1, with k = 1). ``None`` for no rows."""
    per_task: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        per_task[str(row["task_id"])].append(int(row["passed"]))
    if not per_task:
        return None
    return sum(sum(v) / len(v) for v in per_task.values()) / len(per_task)


def status_counts(rows: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Return status -> number of rows, most frequent first."""
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        counts[str(row.get("status", "?"))] += 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))

