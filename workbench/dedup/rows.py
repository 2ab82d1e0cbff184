"""The rows a dedup run works on: ids, splits, code and language of every record of a
:class:`~workbench.data.loading.LoadedDataset`, flattened in split order."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from workbench.data.language_column import LANGUAGE_COLUMN, language_value, row_languages
from workbench.data.loading import LoadedDataset, describe_non_text, refuse_missing_cells
from workbench.errors import DataError
from workbench.formatting import count
from workbench.option_words import option_named
from workbench.languages.registry import get_language


@dataclass
class DedupRows:
    """Flattened records of one dataset.

    Attributes:
        source: where they came from (for messages).
        ids: one id per row (unique; the id column's values, or ``"<split>/<row>"``).
        splits: the split name of each row.
        codes: the code cell of each row (``str``, ``bytes`` or ``None``).
        languages: the language plugin name for each row.
        groups: the ``group_column`` value of each row, or ``None`` when not grouping.
        split_ranges: split name -> ``(start, stop)`` of its rows in the flat lists.
        id_columns: the column(s) the ids were read from (joined with ``:``); empty for
            ``"<split>/<row>"`` ids.
        numbered_id_column: the id column the run made by numbering each task's rows 0, 1, ...
            in file order (``sample_id``, absent from the data), ``None`` when every id column
            was read from the data.
    """

    source: str
    ids: list
    splits: list[str]
    codes: list
    languages: list[str]
    groups: list | None
    split_ranges: dict[str, tuple[int, int]]
    id_columns: tuple[str, ...] = ()
    numbered_id_column: str | None = None

    def __len__(self) -> int:
        return len(self.ids)


def _column(dataset, name: str) -> list:
    """One column's values as a list, read from the Arrow table.

    A dataset that is a selection of rows (rows regrouped into splits by a column) holds an
    indices mapping; ``datasets`` gathers such rows one slice per row (about 45 us each), so the
    values are taken through the mapping chunk by chunk instead (:func:`_take_by_chunk`).
    """
    indices = getattr(dataset, "_indices", None)
    if indices is not None and indices.num_columns == 1:
        return _take_by_chunk(dataset.data.column(name), indices.column(0))
    return dataset.with_format("arrow")[name].to_pylist()


def _take_by_chunk(column, positions) -> list:
    """``column[positions]`` as a list, taken from one Arrow chunk at a time.

    ``ChunkedArray.take`` joins every chunk of the column into one array first: for a split of a
    1M-file corpus that is a transient copy of all the texts (1.45 GB), which the Arrow memory
    pool then keeps. Per chunk, the transient is one chunk's selected values.

    Args:
        column: a ``pyarrow.ChunkedArray`` of n values; positions: a ``pyarrow`` integer
            array (or chunked array) of m row positions into it, in any order.

    Returns:
        the m values as Python objects, in the order of ``positions``.
    """
    import numpy as np
    import pyarrow as pa

    wanted = np.asarray(positions.to_numpy() if hasattr(positions, "to_numpy") else positions, dtype=np.int64)
    order = np.argsort(wanted, kind="stable")
    ordered = wanted[order]
    starts = np.cumsum([0] + [len(chunk) for chunk in column.chunks])
    bounds = np.searchsorted(ordered, starts)  # the slice of ``ordered`` that falls in each chunk
    values: list = []
    for k, chunk in enumerate(column.chunks):
        if bounds[k] < bounds[k + 1]:
            values.extend(chunk.take(pa.array(ordered[bounds[k]:bounds[k + 1]] - starts[k])).to_pylist())
    if len(values) != len(wanted):
        raise IndexError(f"row positions outside the column's {len(column)} rows")
    if np.all(order[:-1] < order[1:]):  # the usual case: a split's rows are in table order
        return values
    result: list = [None] * len(values)
    for position, value in zip(order.tolist(), values):
        result[position] = value
    return result


def column_options(code_columns: list[str], id_columns: list[str], code_option: str | None = None,
                   id_option: str | None = None) -> dict[str, str]:
    """Option -> column for the code and id columns, to check that they exist
    (:func:`~workbench.data.loading.require_columns`); one of several columns is named with its
    option (``--code-column (prompt)``). The options default to ``code_column``'s and
    ``id_column``'s as :func:`workbench.option_words.option_named` names them."""
    code_option = code_option or option_named("code_column")
    id_option = id_option or option_named("id_column")
    required = {f"{code_option} ({c})" if len(code_columns) > 1 else code_option: c for c in code_columns}
    required.update({f"{id_option} ({c})" if len(id_columns) > 1 else id_option: c for c in id_columns})
    return required


def collect_rows(
    loaded: LoadedDataset,
    *,
    code_column: str | list[str],
    id_column: str | list[str] | None = None,
    language: str = "python",
    language_column: str | None = LANGUAGE_COLUMN,
    group_column: str | None = None,
    code_option: str | None = None,
    id_option: str | None = None,
) -> DedupRows:
    """Flatten a loaded dataset into :class:`DedupRows`.

    Args:
        loaded: the dataset (see :func:`workbench.data.load_records`).
        code_column: the column with the code, or several columns whose texts are joined
            (e.g. ``["prompt", "canonical_solution"]`` for HumanEval).
        id_column: the column of unique ids, or several columns whose values joined with
            ``":"`` are unique (``["task_id", "completion_id"]`` -> ``"HumanEval/0:17"``);
            ``None`` uses ``"id"`` when present, else ``"<split>/<row number>"``.
        language: the language of rows without a language value.
        language_column: a column naming each row's language, used when present (the
            folder loader adds ``language``); empty values fall back to ``language``.
        group_column: a column whose value groups rows (e.g. ``task_id``).
        code_option / id_option: the options that name ``code_column`` / ``id_column``, for a
            missing column's message (``--against-code-column`` for the ``--against`` rows).

    Raises:
        MissingColumnError: a named column does not exist (the message lists the columns).
        LanguageNotFoundError: ``language`` has no plugin and some row takes it (not checked when
            every row names its language, as a folder's files do).
        DataError: the ids are not unique (the message shows some duplicated ids), or a code
            column does not hold text (a number or list in one JSON row makes ``datasets`` read the
            whole column as JSON texts, which would each tokenize as one string literal).
    """
    code_columns = [code_column] if isinstance(code_column, str) else list(code_column)
    if not code_columns:
        raise DataError("no code column given")
    if id_column is None and "id" in loaded.column_names:
        id_column = "id"
    id_columns = [id_column] if isinstance(id_column, str) else list(id_column or [])
    code_option = code_option or option_named("code_column")
    id_option = id_option or option_named("id_column")
    required = column_options(code_columns, id_columns, code_option, id_option)
    required[option_named("group_column")] = group_column
    loaded.require_columns(required)
    for split, dataset in loaded.splits.items():
        for column in code_columns:
            _require_code_text(dataset, column, split, code_option)
    ids: list = []
    splits: list[str] = []
    codes: list = []
    languages: list[str] = []
    default_used = False  # does a row take ``language`` (a folder gives every file its language)?
    groups: list | None = [] if group_column else None
    ranges: dict[str, tuple[int, int]] = {}
    for split, dataset in loaded.splits.items():
        start = len(ids)
        n = len(dataset)
        columns = [_column(dataset, c) for c in code_columns]
        if len(columns) == 1:
            codes.extend(columns[0])
        else:
            codes.extend(_join_cells(cells) for cells in zip(*columns))
        where = f"{loaded.source} (split {split!r})"
        id_cells = [_column(dataset, c) for c in id_columns]
        for column, cells in zip(id_columns, id_cells):  # a null id would be "" in the outputs, or "None" joined
            refuse_missing_cells(cells, column, id_option, where, "each row's id names it in the outputs")
        if len(id_columns) == 1:
            ids.extend(id_cells[0])
        elif id_columns:
            ids.extend(":".join(map(str, parts)) for parts in zip(*id_cells))
        else:
            ids.extend(f"{split}/{i}" for i in range(n))
        splits.extend([split] * n)
        if language_column and language_column in dataset.column_names:
            values = _column(dataset, language_column)
            default_used = default_used or not all(map(language_value, values))
            languages.extend(row_languages(values, language))
        else:
            default_used = default_used or n > 0
            languages.extend([language] * n)
        if groups is not None:
            group_cells = _column(dataset, group_column)
            # a null is no group: all null rows would be one group named None
            refuse_missing_cells(group_cells, group_column, option_named("group_column"), where,
                                 "rows are grouped by its value")
            groups.extend(group_cells)
        ranges[split] = (start, start + n)
    if default_used:
        get_language(language)  # fail before any work if the default language is unknown or clashes
    _check_unique(ids, ",".join(id_columns) or None, id_option, loaded, code_columns)
    return DedupRows(loaded.source, ids, splits, codes, languages, groups, ranges, tuple(id_columns))


#: Arrow types a code column may have: text, bytes (decoded per file, or listed as unreadable), all null
_CODE_DTYPES = frozenset({"string", "large_string", "binary", "large_binary", "null"})


def _require_code_text(dataset, column: str, split: str, option: str) -> None:
    """Raise :class:`DataError` unless ``column`` of ``dataset`` holds text (or bytes, or nulls)."""
    import datasets

    feature = dataset.features[column]
    if isinstance(feature, datasets.Value) and feature.dtype in _CODE_DTYPES:
        return
    raise DataError(
        f"{describe_non_text(dataset, column, option, f'split {split!r}')}: each row's code must be a string (a number, list "
        f"or object in some row makes the whole column non-text); fix those rows or name the column that holds the code"
    )


def _join_cells(cells: tuple) -> object:
    if any(cell is None for cell in cells):
        return None
    if all(isinstance(cell, str) for cell in cells):
        return "".join(cells)
    return b"".join(cell if isinstance(cell, bytes) else str(cell).encode("utf-8") for cell in cells)


def _check_unique(ids: list, id_column: str | None, id_option: str | None = None,
                  loaded: LoadedDataset | None = None, code_columns: list[str] = ()) -> None:
    """Raise :class:`DataError` when ``ids`` repeat, naming the option that sets them (``--id-column``,
    or ``--against-id-column`` for the ``--against`` rows) and the columns of ``loaded`` other than
    the ``code_columns`` whose values are unique (candidates for that option)."""
    if len(set(ids)) == len(ids):
        return
    repeated = [value for value, count in Counter(ids).items() if count > 1]
    shown = ", ".join(repr(v) for v in repeated[:5]) + (" ..." if len(repeated) > 5 else "")
    unique = _unique_columns(loaded, code_columns) if loaded is not None else []
    hint = (f" (unique here: {', '.join(unique)})" if unique else
            ", or several comma-separated columns whose values joined with ':' are unique (e.g. task_id,sample_id)")
    where = f"{loaded.source}: " if loaded is not None else ""
    raise DataError(
        f"{where}ids must be unique, but {count(len(repeated), 'id')} of column {id_column!r} "
        f"{'occurs' if len(repeated) == 1 else 'occur'} more than once: {shown}. "
        f"Pass a unique column with {id_option or option_named('id_column')}{hint}."
    )


def _unique_columns(loaded: LoadedDataset, skip: list[str] = ()) -> list[str]:
    """The columns but ``skip`` whose values are unique over every split (an id column the user may mean)."""
    from pyarrow import types as pa_types

    found = []
    for column in (c for c in loaded.column_names if c not in skip):
        values: list = []
        for dataset in loaded.splits.values():
            cells = dataset.with_format("arrow")[column]
            if not (pa_types.is_string(cells.type) or pa_types.is_large_string(cells.type) or pa_types.is_integer(cells.type)):
                break
            values.extend(cells.to_pylist())
        else:
            if values and None not in values and len(set(values)) == len(values):
                found.append(column)
    return found
