"""Append-only JSON Lines files written as results arrive, and resuming from them.

Every row is written with one ``write`` of a whole line, flushed and ``fsync``-ed, so a
killed run loses at most the row in flight; on resume a torn last line is cut off.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Return the complete rows of a JSON Lines file (a torn last line is skipped)."""
    return list(_complete_rows(Path(path)))


def _complete_rows(path: Path) -> Iterator[dict[str, Any]]:
    if not path.exists():
        return
    with path.open("rb") as handle:
        for line in handle:
            if not line.endswith(b"\n"):
                break  # torn by a kill
            text = line.strip()
            if text:
                yield json.loads(text)


def _cut_torn_tail(path: Path) -> int:
    """Truncate ``path`` after its last newline; return how many bytes were cut."""
    if not path.exists():
        return 0
    data_size = path.stat().st_size
    if data_size == 0:
        return 0
    with path.open("rb+") as handle:
        # scan backwards in blocks for the last newline
        position = data_size
        block = 65536
        while position > 0:
            start = max(0, position - block)
            handle.seek(start)
            chunk = handle.read(position - start)
            index = chunk.rfind(b"\n")
            if index >= 0:
                keep = start + index + 1
                break
            position = start
        else:
            keep = 0
        if keep < data_size:
            handle.truncate(keep)
        return data_size - keep


class JsonlWriter:
    """A thread-safe, append-only JSON Lines writer that syncs every row.

    Args:
        path: the file (created with its folder if missing).
        append: keep existing rows (resume); otherwise the file is truncated.
    """

    def __init__(self, path: str | os.PathLike[str], append: bool):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.cut_bytes = _cut_torn_tail(self.path) if append else 0
        self._handle = self.path.open("ab" if append else "wb")
        self._lock = threading.Lock()

    def write(self, row: dict[str, Any]) -> None:
        """Append one row and make it durable."""
        line = (json.dumps(row, ensure_ascii=False, default=str) + "\n").encode("utf-8")
        with self._lock:
            self._handle.write(line)
            self._handle.flush()
            os.fsync(self._handle.fileno())

    def close(self) -> None:
        with self._lock:
            self._handle.close()


def write_wide_table(
    scores_path: str | os.PathLike[str], wide_path: str | os.PathLike[str], row_columns: tuple[str, ...]
) -> int:
    """Write one row per (task_id, sample_id) with one score column per method.

    ``scores.jsonl`` holds one row per (sample, method); ``workbench correlate`` wants one row
    per sample with a column per metric. A method's column is its ``score`` when the row's
    status is ``ok`` and ``null`` otherwise (so failures are counted as missing, never as 0);
    carried input columns (``passed``, ...; every column not in ``row_columns``) are kept. The
    newest row of a (task, sample, method) wins, as when resuming with ``retry_failed``.

    Args:
        scores_path: the run's ``scores.jsonl``.
        wide_path: the file to write (JSON Lines), replaced atomically.
        row_columns: the per-method columns of ``scores.jsonl`` (not carried into the table).

    Returns:
        the number of rows written.
    """
    samples: dict[tuple[str, str], dict[str, Any]] = {}
    for row in read_rows(scores_path):
        key = (str(row["task_id"]), str(row["sample_id"]))
        wide = samples.setdefault(key, {"task_id": row["task_id"], "sample_id": row["sample_id"]})
        wide.update({k: v for k, v in row.items() if k not in row_columns})
        wide[row["method"]] = row["score"] if row.get("status") == "ok" else None
    target = Path(wide_path)
    temporary = target.with_name(target.name + ".tmp")
    with temporary.open("w", encoding="utf-8") as handle:
        for wide in samples.values():
            handle.write(json.dumps(wide) + "\n")
    temporary.replace(target)
    return len(samples)
