"""The column types of data files over their whole length, part by part as ``datasets`` reads them.

``datasets`` reads a JSON Lines file in chunks of 10 MB (pyarrow infers each chunk's types) and a
CSV file in chunks of 10,000 rows (pandas infers each chunk's), takes the columns and types of the
first chunk of the first file, and casts every later chunk to them: a column null for the first
10 MB and text later, integers then a ``0.5``, or a key first seen after 10 MB fails with a raw
cast error (``Couldn't cast array of type string to null``, ``Float value 0.500000 was
truncated``), and a column null in one file's first chunk but numbers later is cast to another
file's text silently. The loader (:mod:`workbench.data.loading`) types every part here, in the
same chunks, and reads with the types :mod:`workbench.data.column_types` widens them to.

A part is named for the messages: the file's name for its first chunk, ``"big.jsonl (from line
45,060)"`` or ``"big.csv (from row 10,001)"`` for a later one.

Cost: JSON Lines are parsed once more by pyarrow (about 0.2 CPU seconds for 70 MB, against 0.4 for the
whole load: benchmarks/loading_bench.py); CSV files
are typed by one pass of Python's ``csv`` module (the pass that finds zero-padded ids) and parsed
by pandas only when a column's kind changes between chunks (:func:`csv_needs_typing`).
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

#: the bytes ``datasets``' ``json`` builder parses at a time (its ``JsonConfig.chunksize`` default)
JSON_CHUNK_BYTES = 10 << 20
#: the rows ``datasets``' ``csv`` builder reads at a time (its ``CsvConfig.chunksize`` default)
CSV_CHUNK_ROWS = 10_000


def _opener(file: Path) -> Any:
    return gzip.open if file.suffix.lower() == ".gz" else open


class MixedPart(Exception):
    """A chunk of a JSON Lines file holds two kinds of value in one column (numbers and text):
    ``datasets`` reads such a column (as JSON objects) only when the mix shows in the first chunk
    of the only file it reads; in a later chunk, or beside another file, its read fails with a raw
    cast error.

    Attributes:
        part: the part's name (``"big.jsonl (from line 45,060)"``); column: the column's path as
        pyarrow gives it (``"v"``, ``"meta/at"``); change: pyarrow's words (``"number to string"``);
        first: the part is the file's first chunk.
    """

    def __init__(self, part: str, column: str, change: str, first: bool = False) -> None:
        super().__init__(f"{part}: column {column!r} changed from {change}")
        self.part, self.column, self.change, self.first = part, column, change, first


_CHANGED = re.compile(r"Column\(/([^)]*)\) changed from (\w+ to \w+)")


def json_part_schemas(file: Path, name: str, chunk_bytes: int = JSON_CHUNK_BYTES) -> list[tuple[str, pa.Schema]] | None:
    """The Arrow schema pyarrow infers for each chunk of a JSON Lines file, chunked as ``datasets``
    chunks it (``chunk_bytes``, then to the end of the line).

    Args:
        file: a JSON Lines file (``.gz`` too); name: how messages name it (relative to its folder).

    Returns:
        ``[(part name, schema)]`` in file order; ``None`` when pyarrow cannot type a chunk (a JSON
        document, a broken line): the read itself then says why.

    Raises:
        MixedPart: a chunk holds two kinds of value in one column (``first``: the first chunk,
            which ``datasets`` reads its own way, as JSON objects, when it reads that file alone).
    """
    import pyarrow.json as pj

    parts: list[tuple[str, pa.Schema]] = []
    line = 1
    try:
        with _opener(file)(file, "rb") as handle:
            while True:
                batch = handle.read(chunk_bytes)
                if not batch:
                    break
                if not parts:
                    batch = batch.removeprefix(codecs.BOM_UTF8)
                    if batch.lstrip().startswith(b"["):
                        return None  # a JSON document: datasets reads it whole, through pandas
                batch += handle.readline()
                block = len(batch) if len(batch) // 8 > max(chunk_bytes // 32, 16 << 10) else max(chunk_bytes // 32, 16 << 10)
                part = name if not parts else f"{name} (from line {line:,})"
                try:
                    table = pj.read_json(io.BytesIO(batch), read_options=pj.ReadOptions(block_size=block))
                except pa.ArrowInvalid as error:
                    changed = _CHANGED.search(str(error))
                    if changed is None:
                        raise
                    raise MixedPart(part, changed.group(1), changed.group(2), first=not parts) from None
                parts.append((part, table.schema))
                line += batch.count(b"\n")
    except (pa.ArrowException, OSError, ValueError, EOFError):
        return None
    return parts


@dataclass
class CsvSurvey:
    """One pass of Python's ``csv`` module over CSV files: what :func:`survey_csv` found.

    Attributes:
        headers: file -> its header (column names in order).
        padded: the columns of numbers only, some zero-padded (``007``): read as text.
        classes: file -> column -> the class of each chunk of :data:`CSV_CHUNK_ROWS` rows
            (``"null"``: empty cells only; ``"int"``: integers, no empty cell; ``"number"``: decimals
            or integers beside empty cells; ``"text"``; ``"unsure"``: a cell pandas may read otherwise
            than Python, ``nan``, ``True``, `` 1``, a very long integer).
    """

    headers: dict[Path, list[str]]
    padded: set[str]
    classes: dict[Path, dict[str, list[str]]]


_INTEGER = re.compile(r"[+-]?\d{1,18}")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_ZERO_PADDED = re.compile(r"[+-]?0\d")


def _cell_class(value: str) -> str:
    if _INTEGER.fullmatch(value):
        return "int"
    if _DECIMAL.fullmatch(value):
        return "number"
    try:
        float(value)  # "nan", "inf", " 1", "1_0": pandas reads some as numbers, some as text
    except ValueError:
        return "unsure" if value.strip().lower() in ("true", "false") else "text"
    return "unsure"


def _chunk_class(seen: set[str], empty: bool) -> str:
    if not seen:
        return "null"
    if "text" in seen:  # any other text makes pandas read the chunk's column as text
        return "text"
    if "unsure" in seen:
        return "unsure"
    return "int" if seen == {"int"} and not empty else "number"


def survey_csv(files: Sequence[Path]) -> CsvSurvey:
    """Read CSV ``files`` once with Python's ``csv`` module: each file's header, the zero-padded
    number columns, and the class of each column in each chunk of :data:`CSV_CHUNK_ROWS` rows
    (blank lines are no rows, as pandas skips them). A file that cannot be read is left out (the
    read itself says why)."""
    headers: dict[Path, list[str]] = {}
    classes: dict[Path, dict[str, list[str]]] = {}
    padded: set[str] = set()
    not_number: set[str] = set()
    for file in files:
        try:
            with _opener(file)(file, "rt", encoding="utf-8", newline="") as handle:
                reader = csv.reader(handle)
                header = next(reader, [])
                chunks: dict[str, list[str]] = {name: [] for name in header}
                seen: list[set[str]] = [set() for _ in header]
                empty = [False] * len(header)
                rows = 0
                for row in reader:
                    if not row:
                        continue
                    for number, value in enumerate(row[:len(header)]):
                        if not value:
                            empty[number] = True
                            continue
                        kinds = seen[number]
                        if "text" in kinds:
                            continue  # the chunk's column is text (so the column is no number column either)
                        kind = _cell_class(value)
                        kinds.add(kind)
                        if kind == "text" or (kind == "unsure" and not _is_float(value)):
                            not_number.add(header[number])
                        elif header[number] not in padded and _ZERO_PADDED.match(value):
                            padded.add(header[number])
                    for number in range(len(row), len(header)):
                        empty[number] = True
                    rows += 1
                    if rows % CSV_CHUNK_ROWS == 0:
                        _close_chunk(header, chunks, seen, empty)
                if rows % CSV_CHUNK_ROWS or not rows:
                    _close_chunk(header, chunks, seen, empty)
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
        headers[file] = header
        classes[file] = chunks
    return CsvSurvey(headers, padded - not_number, classes)


def _close_chunk(header: list[str], chunks: dict[str, list[str]], seen: list[set[str]], empty: list[bool]) -> None:
    """Append each column's class in the chunk just read, and start the next chunk."""
    for number, name in enumerate(header):
        chunks[name].append(_chunk_class(seen[number], empty[number]))
        seen[number].clear()
        empty[number] = False


def _is_float(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def csv_needs_typing(survey: CsvSurvey) -> bool:
    """Whether pandas must type the chunks (:func:`csv_part_types`): a column's class changes
    between chunks or files, or pandas may read a cell otherwise than the survey (``"unsure"``).
    Zero-padded columns are read as text whatever their class."""
    columns: dict[str, set[str]] = {}
    for chunks in survey.classes.values():
        for column, classes in chunks.items():
            if column not in survey.padded:
                columns.setdefault(column, set()).update(classes)
    return any(len(classes) > 1 or classes == {"unsure"} for classes in columns.values())


def csv_part_types(file: Path, name: str, padded: set[str], converter: Any,
                   chunk_rows: int = CSV_CHUNK_ROWS) -> list[tuple[str, dict[str, str]]] | None:
    """Column -> Arrow type name of each chunk of a CSV file as the loader reads it (pandas, in
    ``datasets``' chunks, only empty cells missing, ``padded`` columns through ``converter``);
    ``"null"`` for a chunk's column of empty cells only. A column pandas reads as floats for its
    empty cells only (``1``, ``2``, empty) is ``"int64"``, and one of true/false values and empty
    cells (objects to pandas) ``"bool"``: the loader reads them so (its converters).

    Returns:
        ``[(part name, types)]`` in file order (``"x.csv (from row 10,001)"``); ``None`` when pandas
        cannot read the file (the read itself says why).
    """
    import pandas as pd

    parts: list[tuple[str, dict[str, str]]] = []
    try:
        reader = pd.read_csv(file, keep_default_na=False, na_values=[""], chunksize=chunk_rows,
                             converters=dict.fromkeys(padded, converter))
        with reader:
            for number, frame in enumerate(reader):
                names = {}
                for column in frame.columns:
                    cells = frame[column]
                    if cells.isna().all():
                        names[str(column)] = "null"
                    elif pd.api.types.infer_dtype(cells, skipna=True) == "boolean":
                        names[str(column)] = "bool"  # with an empty cell, pandas' column is of objects: True, NaN
                    elif pd.api.types.is_integer_dtype(cells):
                        names[str(column)] = "int64"
                    elif pd.api.types.is_float_dtype(cells):
                        # an integer column with an empty cell is float64 to pandas (NaN is a float): no
                        # fraction to widen another file's integers (ids 1, 2) to (1.0, 2.0) for
                        whole = cells.isna().any() and bool((cells.dropna() % 1 == 0).all())
                        names[str(column)] = "int64" if whole else "double"
                    else:
                        names[str(column)] = "string"
                parts.append((name if not number else f"{name} (from row {number * chunk_rows + 1:,})", names))
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError):
        return None
    return parts
