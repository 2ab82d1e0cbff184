"""One column, one kind of value in every file of a dataset: the check both dedup engines (and
every local load of a folder of data files) run before reading, so that neither casts one
file's numbers to another's text silently (``datasets`` casts every file to the first file's
types; Spark's JSON reader merges a number and a text column into text) nor fails with a raw
cast error (``ArrowInvalid: Failed to parse string``, Spark's ``CAST_INVALID_INPUT``).

A type is reduced to its kind (:func:`kind_of`): text, numbers (integers and floats alike: both
engines widen one to the other), true/false values, bytes, lists, objects; a column of nulls
only has no kind and matches every kind. Type names of Arrow (``int64``, ``large_string``),
Spark (``bigint``, ``array<string>``) and Spark's variant schema (``BIGINT``, ``OBJECT<...>``)
are all understood, so both engines find the same clash and say it in the same words. An ISO date
in a JSON Lines file is text to both (pyarrow would take it for a timestamp: the local loader
reads it as text, :mod:`workbench.data.json_dates`, and gives its type as text here); a date or
timestamp column of a Parquet file is its own kind on both.

Only the standard library: the Spark engine's driver imports it without ``datasets``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

#: the kind of each type name's head (lower-cased, up to the first ``(``, ``<`` or ``[``)
_KINDS = {
    **dict.fromkeys(("string", "large_string", "string_view", "utf8", "large_utf8", "varchar", "char"), "text"),
    **dict.fromkeys(("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "tinyint",
                     "smallint", "int", "integer", "bigint", "long", "halffloat", "float", "float16", "float32",
                     "float64", "double", "decimal", "decimal32", "decimal64", "decimal128", "decimal256"),
                    "numbers"),
    **dict.fromkeys(("bool", "boolean"), "true/false values"),
    **dict.fromkeys(("binary", "large_binary", "binary_view", "fixed_size_binary"), "bytes"),
    **dict.fromkeys(("list", "large_list", "list_view", "large_list_view", "fixed_size_list", "array"), "lists"),
    **dict.fromkeys(("struct", "object", "map"), "objects"),
    **dict.fromkeys(("null", "void", "na"), None),
}


def kind_of(type_name: str) -> str | None:
    """The kind of a column type (``"int64"`` -> ``"numbers"``, ``"STRING"`` -> ``"text"``,
    ``"array<string>"`` -> ``"lists"``); ``None`` for a column of nulls only; any other type
    (a timestamp, a date) is its own kind, named by its type."""
    head = re.split(r"[(<\[ ]", type_name.strip().lower(), maxsplit=1)[0]
    return _KINDS.get(head, head)


def first_clash(files: Iterable[tuple[str, Mapping[str, str]]]) -> tuple[str, str, str, str, str] | None:
    """The first column whose kind differs between two files.

    Args:
        files: ``(file, {column: type name})`` in the order the files are read (a file whose
            types are not known is left out by the caller).

    Returns:
        ``(column, first file, its kind, later file, its kind)`` for the first later file whose
        kind of a column differs from the kind the column had in the first file that gave it
        one, or ``None``.
    """
    seen: dict[str, tuple[str, str]] = {}
    for file, types in files:
        for column, type_name in types.items():
            kind = kind_of(type_name)
            if kind is None:
                continue
            if column not in seen:
                seen[column] = (file, kind)
            elif seen[column][1] != kind:
                return column, seen[column][0], seen[column][1], file, kind
    return None


def clash_message(where: str, clash: tuple[str, str, str, str, str]) -> str:
    """What to say of :func:`first_clash`'s answer (one line, the same for both engines).

    Args:
        where: the folder or URI as the user gave it; clash: ``(column, file, kind, file, kind)``,
            the files relative to ``where``; a file may be a part of one (``"big.jsonl (from line
            45,060)"``: :mod:`workbench.data.file_types`), and two parts of one file are said so.
    """
    column, first, first_kind, later, later_kind = clash
    if later.startswith(f"{first.split(' (from ', 1)[0]} (from "):  # two parts of one file (loading's file_types)
        return (f"{where}: column {column!r} holds {first_kind} in {first} but {later_kind} in {later}: a column "
                f"must hold one type of value throughout (else the read fails, or one part's values would be "
                f"silently turned into the other's type); write {column!r} as one type in every row (e.g. all text)")
    return (f"{where}: column {column!r} holds {first_kind} in {first} but {later_kind} in {later}: every file of a "
            f"dataset must give a column one type (else one file's values would be silently turned into the other's "
            f"type, or the read fails); write {column!r} as one type in every file (e.g. all text), or move the "
            f"odd file out of the folder")


_LIST_ITEMS = re.compile(r"^(?:large_)?list<(?:item|element): (.*)>$|^ARRAY<(.*)>$|^array<(.*)>$", re.DOTALL)


def item_kind(type_name: str) -> str | None:
    """The kind of the items of a list type (``"list<item: int64>"``, Spark's ``"array<bigint>"``,
    its variant schema's ``"ARRAY<STRING>"`` -> ``"numbers"``, ``"text"``); ``None`` for a list of
    nulls only, or for a type that is no list."""
    found = _LIST_ITEMS.match(type_name.strip())
    if found is None:
        return None
    inner = next(group for group in found.groups() if group is not None)
    return kind_of(inner)


def first_item_clash(files: Iterable[tuple[str, Mapping[str, str]]]) -> tuple[str, str, str, str, str] | None:
    """:func:`first_clash` for the items of list columns: the first column of lists whose items
    are of one kind in a file and of another in a later one (lists of numbers, then of text),
    which Spark's JSON reader would read as lists of text and ``datasets`` cannot read. Lists of
    nulls only (``[]``, ``[null]``) match every kind.

    Returns:
        ``(column, first file, "lists of <kind>", later file, "lists of <kind>")``, or ``None``.
    """
    seen: dict[str, tuple[str, str]] = {}
    for file, types in files:
        for column, type_name in types.items():
            kind = item_kind(type_name)
            if kind is None:
                continue
            if column not in seen:
                seen[column] = (file, kind)
            elif seen[column][1] != kind:
                return column, seen[column][0], f"lists of {seen[column][1]}", file, f"lists of {kind}"
    return None


def mixed_message(where: str, column: str, file: str, mixed: tuple[str, int, str, int]) -> str:
    """What both engines say of a JSON Lines file whose column holds two kinds of value in its rows
    (one line; the same for both engines): Spark's JSON reader would read such a column as text
    (``5`` as ``"5"``), ``datasets`` as JSON objects when the mix shows in the file's first 10 MB and
    not at all later, so neither reading is the file's.

    Args:
        where: the folder, file or URI as the user gave it; column: the column (or pyarrow's path of
            a nested one, ``"tags/[]"``); file: the file, relative to ``where`` (its name for one
            file); mixed: :func:`workbench.data.json_lines.first_mixed_line`'s answer.
    """
    first_kind, first_line, other_kind, other_line = mixed
    top = column.split("/")[0]
    inside = f"column {top!r}" if column == top else f"column {top!r} (at {column!r})"
    return (f"{where}: {inside} holds {first_kind} at line {first_line:,} of {file} but {other_kind} at line "
            f"{other_line:,}: a column must hold one type of value in every row (Spark would read them all as "
            f"text, datasets fails past a file's first 10 MB); write {top!r} as one type in every row (e.g. all text)")


#: the integer type names (of Arrow, Spark and Spark's variant schema, lower-cased): a numbers column of these
#: only is widened to ``int64``; with any other number type (float, double, decimal), to ``double``
_INTEGERS = frozenset({"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "tinyint",
                       "smallint", "int", "integer", "bigint", "long"})


def widened_types(files: Iterable[tuple[str, Mapping[str, str]]]) -> dict[str, str]:
    """The columns both engines read as one wider type, because their files type them differently
    within one kind (for a folder :func:`first_clash` found no clash in): what a user means by such
    a folder, and what Spark's JSON reader makes of it (``datasets`` would cast every file to the
    first file's type instead, failing on ``0.5`` after integers or on text after a column of nulls).

    * numbers of several types: ``"double"`` when any file holds fractions (a float, double or
      decimal type), else ``"int64"`` (``int32`` in one file, ``int64`` in another);
    * a column of nulls only in some files: the type the other files give it (their first, in
      file order, when they name several of one kind), widened as above for numbers.

    Text of several types (``string``, ``large_string``, a dictionary) and lists or objects whose
    inner types differ are left to the reader (both read them alike, or the read says why).

    Args:
        files: ``(file, {column: type name})`` in the order the files are read.

    Returns:
        column -> ``"double"``, ``"int64"``, or the type name (as a file gave it) of the column in
        the files that hold values; only columns that need it.
    """
    names: dict[str, list[str]] = {}
    for _, types in files:
        for column, type_name in types.items():
            names.setdefault(column, []).append(type_name)
    widened: dict[str, str] = {}
    for column, typed in names.items():
        if len(set(typed)) == 1:
            continue
        held = [name for name in typed if kind_of(name) is not None]
        kinds = {kind_of(name) for name in held}
        if len(kinds) != 1:
            continue  # nulls only, or two kinds (first_clash refuses those)
        if kinds == {"numbers"}:
            heads = {re.split(r"[(<\[ ]", name.strip().lower(), maxsplit=1)[0] for name in held}
            widened[column] = "int64" if heads <= _INTEGERS else "double"
        elif len(held) < len(typed):  # some files hold nulls only
            widened[column] = held[0]
    return widened


def _top_level(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` outside ``<...>`` (a type name's arguments)."""
    parts, depth, start = [], 0, 0
    for at, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:at])
            start = at + 1
    return parts + [text[start:]]


def nested_kinds(type_name: str, path: str = "") -> dict[str, str | None]:
    """The kind of every value inside a list or object type, by its path as pyarrow names it
    (``"meta/n"``: field ``n`` of the object ``meta``; ``"tags/[]"``: each item of the list ``tags``),
    from Arrow's (``struct<n: int64, tags: list<item: string>>``), Spark's (``struct<n:bigint>``) or
    Spark's variant schema's (``OBJECT<n: BIGINT>``) type names; a map is one value. ``{}`` for
    a type that is no list nor object; a path of nulls only has the kind ``None``.

    Args:
        type_name: the column's type name; path: the column's own path (the keys start with it).
    """
    name = type_name.strip()
    kind = kind_of(name)
    head = re.split(r"[(<\[ ]", name.lower(), maxsplit=1)[0]
    if "<" not in name or kind not in ("lists", "objects") or head == "map":
        return {}
    inner = name[name.index("<") + 1:name.rindex(">")]
    found: dict[str, str | None] = {}
    if kind == "lists":
        item = re.sub(r"^(?:item|element)\s*:\s*", "", inner.strip())
        children = [(f"{path}/[]", item)]
    else:
        children = [(f"{path}/{field.split(':', 1)[0].strip().strip('`')}", field.split(":", 1)[1])
                    for field in _top_level(inner, ",") if ":" in field]
    for child, child_type in children:
        found[child] = kind_of(child_type)
        found.update(nested_kinds(child_type, child))
    return found


def first_field_clash(files: Iterable[tuple[str, Mapping[str, str | Iterable[str]]]]
                      ) -> tuple[str, str, str, str, str] | None:
    """:func:`first_clash` for the values inside objects (and lists of them): the first field
    whose kind differs between two files (``{"n": 1}`` in one, ``{"n": "x"}`` in a later one),
    which Spark's readers merge into text (or fail on) and pyarrow cannot unify. A field of
    nulls only matches every kind; a field one file holds two kinds of is left to that file's
    own check (:func:`mixed_message`).

    Args:
        files: ``(file, {column: type name, or the type names of its rows})`` in reading order.

    Returns:
        ``(path, first file, its kind, later file, its kind)`` (``path``: ``"meta/n"``), or ``None``.
    """
    seen: dict[str, tuple[str, str]] = {}
    for file, types in files:
        for column, names in types.items():
            held: dict[str, set[str]] = {}
            for name in ([names] if isinstance(names, str) else names):
                for path, kind in nested_kinds(name, column).items():
                    if kind is not None and path != f"{column}/[]":  # a list's items: first_item_clash's
                        held.setdefault(path, set()).add(kind)
            for path, kinds in held.items():
                if len(kinds) != 1:
                    continue
                kind = next(iter(kinds))
                if path not in seen:
                    seen[path] = (file, kind)
                elif seen[path][1] != kind:
                    return path, seen[path][0], seen[path][1], file, kind
    return None


def field_clash_message(where: str, clash: tuple[str, str, str, str, str]) -> str:
    """What both engines say of :func:`first_field_clash`'s answer (one line)."""
    path, first, first_kind, later, later_kind = clash
    top = path.split("/")[0]
    return (f"{where}: column {top!r} (at {path!r}) holds {first_kind} in {first} but {later_kind} in {later}: every "
            f"file of a dataset must give a column one type, inside its objects too (else the read fails, or one "
            f"file's values would be silently turned into the other's type); write {top!r} with one type of value "
            f"at {path!r} in every file (e.g. all text)")
