"""Data files must be UTF-8: find the first byte that is not, before ``datasets`` reads them.

``datasets`` reads a JSON Lines file with a stray Latin-1 byte without complaint and fails
only when that row is read (a ``UnicodeDecodeError`` from pyarrow, mid-run), and a CSV fails
with "An error occurred while generating the dataset". Both say neither the file nor the line.
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

from workbench.errors import DataError


@dataclass(frozen=True)
class InvalidUtf8:
    """Where a file stops being UTF-8.

    Attributes:
        line: 1-based line number; column: 1-based byte position within the line.
        offset: 0-based byte offset in the (decompressed) file.
        bad: the offending bytes.
        reason: the decoder's reason (``invalid continuation byte``).
    """

    line: int
    column: int
    offset: int
    bad: bytes
    reason: str


def first_invalid_utf8(path: str | os.PathLike[str]) -> InvalidUtf8 | None:
    """Return the first position where ``path`` (``.gz`` is decompressed) is not UTF-8, or ``None``.

    Lines are decoded one at a time (a newline byte never occurs inside a multi-byte UTF-8
    character, so this finds exactly what decoding the whole file would).
    """
    path = Path(path)
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    offset = 0
    with opener(path, "rb") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as error:
                bad = line[error.start : error.end]
                return InvalidUtf8(number, error.start + 1, offset + error.start, bad, error.reason)
            offset += len(line)
    return None


def require_utf8(path: str | os.PathLike[str]) -> None:
    """Raise :class:`DataError` naming the file, line and byte offset where ``path`` is not UTF-8.

    Raises:
        DataError: e.g. ``data.jsonl is not UTF-8 text: line 2, byte 30 (offset 66 in the
            file) is b'\\xe9' (invalid continuation byte); save the file as UTF-8 ...``.
    """
    found = first_invalid_utf8(path)
    if found is not None:
        raise DataError(
            f"{path} is not UTF-8 text: line {found.line}, byte {found.column} (offset {found.offset} in the file) "
            f"is {found.bad!r} ({found.reason}); save the file as UTF-8 (e.g. with iconv -f latin1 -t utf-8)"
        )
