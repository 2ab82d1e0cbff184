"""ISO dates in JSON Lines read as the text they are, as Spark reads them.

pyarrow's JSON reader (so ``datasets``' ``json`` builder) types a string column whose values look
like ISO 8601 dates or times (``"2024-01-02"``, ``"2024-01-03T10:00:00Z"``) as a timestamp: the
value then comes back as ``2024-01-02 00:00:00`` (written out as ``2024-01-02T00:00:00``), a
``Z`` is dropped, and a folder whose files hold dates in one file's column and other text in
another's cannot be read (or the dates are cast to ``"2024-02-03 00:00:00"``). Spark's JSON
reader keeps them text (its ``inferTimestamp`` is off by default). In this project such a column
is an id or a piece of code: it stays the text the file holds, on both engines.

How: ``datasets`` reads the files with such columns declared text (:func:`text_date_features`:
each file's dates are cast, which loses their spelling), then each of those columns is replaced by
its values as the files spell them, read by pyarrow with the column's type given as text
(:func:`restore_date_text`). Only top-level columns are handled: a date inside an object
(``{"meta": {"at": "2024-01-02"}}``) stays pyarrow's timestamp.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import datasets
import pyarrow as pa

#: the heads of the Arrow type names pyarrow gives a JSON string it took for a date or time
_DATE_TYPES = ("timestamp", "date", "time")


def is_date_type(type_name: str) -> bool:
    """Whether an Arrow type name (``"timestamp[s]"``, ``"date32[day]"``) is one pyarrow gives
    an ISO date or time string in JSON."""
    return type_name.startswith(_DATE_TYPES)


def first_block_schema(file: Path) -> pa.Schema | None:
    """The Arrow schema pyarrow infers from the first block of a JSON Lines file (``.gz`` too);
    ``None`` when it cannot tell (a JSON document, a broken file: the read itself reports those)."""
    import pyarrow.json as pj

    try:
        with pa.input_stream(str(file), compression="detect") as stream:
            return pj.open_json(stream).schema
    except (pa.ArrowException, OSError, ValueError):
        return None


def text_date_features(files: Sequence[Path], schemas: Sequence[pa.Schema] | None = None
                       ) -> tuple[set[str], datasets.Features | None]:
    """What to read JSON Lines ``files`` with so that their ISO date columns are text.

    Args:
        files: the JSON Lines files of one read, the first one first (``datasets`` takes the
            columns from it).
        schemas: the schema of every part of every file, the first file's first part first
            (:func:`workbench.data.file_types.json_part_schemas`: a date first seen after the
            first block is found too); ``None``: each file's first block is read here.

    Returns:
        ``(dated columns, features)``: the top-level columns pyarrow types as a date or time in
        any part of ``schemas`` (else any file's first block), and the first file's columns (as ``datasets`` would take them)
        with those declared text (added if the first file lacks them); features ``None`` when
        there are no such columns, or the columns of a file cannot be told (a JSON document, a
        column of mixed objects: ``datasets`` reads as it would, dates as timestamps).
    """
    schemas = list(schemas) if schemas is not None else [first_block_schema(file) for file in files]
    dated = {field.name for schema in schemas if schema is not None for field in schema
             if is_date_type(str(field.type))}
    if not dated or any(schema is None for schema in schemas):
        return dated, None
    features = datasets.Features.from_arrow_schema(schemas[0])
    for column in sorted(dated):
        features[column] = datasets.Value("string")
    return dated, features


def restore_date_text(dataset: datasets.Dataset, files: Sequence[str], dated: set[str]) -> datasets.Dataset:
    """``dataset`` with each ``dated`` column holding its values as ``files`` spell them.

    Args:
        dataset: one split, as ``datasets`` read it with :func:`text_date_features`' features.
        files: that split's files, in the order ``datasets`` read them.
        dated: the columns to restore (those not in ``dataset`` are left out).

    Returns:
        a dataset with the same columns in the same order (``dataset`` when none is restored).

    Raises:
        ValueError: pyarrow reads another number of rows from the files than ``dataset`` has
            (a JSON document, which ``datasets`` reads through pandas).
    """
    import pyarrow.json as pj

    columns = [c for c in dataset.column_names if c in dated]
    if not columns:
        return dataset
    options = pj.ParseOptions(explicit_schema=pa.schema([(c, pa.string()) for c in columns]),
                              unexpected_field_behavior="ignore")
    tables = []
    for file in files:
        with pa.input_stream(str(file), compression="detect") as stream:
            tables.append(pj.read_json(stream, parse_options=options))
    text = pa.concat_tables(tables)
    if text.num_rows != dataset.num_rows:
        raise ValueError(f"read {text.num_rows} rows of column {columns[0]!r} from {files[0]} but datasets "
                         f"read {dataset.num_rows}")
    restored = dataset
    for column in columns:  # added beside the cast column first: a dataset of no columns has no rows
        spare = f"{column}.workbench-text"
        restored = restored.add_column(spare, text.column(column), feature=datasets.Value("string"))
        restored = restored.remove_columns(column).rename_column(spare, column)
    return restored.select_columns(dataset.column_names)


def refuse_rewritten_dates(label: str, features: datasets.Features | None, dated: set[str]) -> None:
    """After a read without :func:`text_date_features`' features: refuse a ``dated`` column that
    ``datasets`` made text (an earlier file's text, so a later file's dates were cast to
    ``"2024-01-02 00:00:00"``), rather than rewrite the dates silently.

    Args:
        label: the file or folder as the user named it; features: what ``datasets`` read.

    Raises:
        DataError: naming the column and what to do.
    """
    from workbench.errors import DataError

    cast = sorted(column for column in dated if (features or {}).get(column) == datasets.Value("string"))
    if cast:
        raise DataError(f"{label}: column {cast[0]!r} holds ISO dates in some files and other text in others, which "
                        f"cannot be read here with the dates kept as text (a column of mixed objects, or a JSON "
                        f"document among the files, makes datasets read them its own way, which would rewrite "
                        f"2024-01-02 as '2024-01-02 00:00:00'); write the column as one kind of value in every file")
