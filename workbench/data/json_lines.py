"""What is wrong with one line of a JSON Lines file, in the words the loaders use: not JSON, not
an object, a lone UTF-16 surrogate escape. The local loader asks it when pyarrow refuses a file
(:func:`workbench.data.loading.file_problem`); the Spark reader of ``dedup --engine spark`` asks
it on the executors for the line its own check flagged (:mod:`workbench.dedup.spark_source`).
Only the standard library: the executors import it without ``datasets``."""

from __future__ import annotations

import json
import re
from typing import Any

#: a ``\\uXXXX`` escape of a surrogate that is not part of a pair; Python's and Java's regex syntax
#: alike (Spark's ``rlike`` uses it too)
LONE_SURROGATE_PATTERN = (r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
                          r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}")
LONE_SURROGATE_ESCAPE = re.compile(LONE_SURROGATE_PATTERN)


def lone_surrogate_message(where: str, lone: str) -> str:
    """``"<where> holds a lone UTF-16 surrogate escape (\\ud800) in a string: ..."`` (``where``:
    ``"line 4"``, ``"the file"``)."""
    return (f"{where} holds a lone UTF-16 surrogate escape (\\u{ord(lone):04x}) in a string: not "
            "Unicode text (text decoded with errors='surrogateescape' gives such characters), and pyarrow "
            "refuses the whole file; replace it, e.g. by \\ufffd")


def lone_surrogate(value: Any) -> str | None:
    """The first lone surrogate (U+D800-U+DFFF) in the strings of a parsed JSON value, or ``None``.
    Python's ``json`` decodes a ``\\udcff`` escape to one; a valid pair decodes to one character."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            return value[error.start]
        return None
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list):
        for item in value:
            if (found := lone_surrogate(item)) is not None:
                return found
    return None


def parse_line(line: str, where: str, *, null: bool = False) -> tuple[Any, str | None]:
    """Parse one line of a JSON Lines file.

    Args:
        line: the line (without its line end); where: how the message names it (``"line 2"``).
        null: a ``null`` line is taken (as ``datasets`` takes it: a row of nulls) instead of refused.

    Returns:
        ``(object, None)`` for a JSON object (``None`` for a blank line, or a ``null`` line with
        ``null``), or ``(None, message)``: not valid JSON, not an object, or holding a lone
        surrogate escape (``"line 2 is not valid JSON: ...; a JSON Lines file holds ..."``).
    """
    if not line.strip():
        return None, None
    try:
        value = json.loads(line)
    except json.JSONDecodeError as error:
        return None, (f"{where} is not valid JSON: {error.msg}: column {error.colno}; a JSON Lines file "
                      f"holds one whole JSON object per line: fix or remove that line (was it cut off?)")
    if value is None and null:
        return None, None
    if not isinstance(value, dict):
        return None, (f"{where} is a JSON {type(value).__name__}, not an object; a JSON Lines file holds one "
                      f"JSON object ({{...}}) per line")
    lone = lone_surrogate(value) if "\\u" in line else None
    if lone is not None:
        return None, lone_surrogate_message(where, lone)
    return value, None


def json_kind(value: Any) -> str | None:
    """The kind of a parsed JSON value, in :mod:`workbench.data.column_types`' words: ``"text"``,
    ``"numbers"``, ``"true/false values"``, ``"lists"``, ``"objects"``; ``None`` for ``null``."""
    if value is None:
        return None
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):  # before int: a bool is an int
        return "true/false values"
    if isinstance(value, (int, float)):
        return "numbers"
    return "lists" if isinstance(value, list) else "objects"


def line_kinds(line: str, column: str) -> list[str]:
    """The kinds of the values a JSON Lines line holds at ``column``, a column name or a path as
    pyarrow names a nested one (``"meta/at"``; ``"tags/[]"``: each item of the list ``tags``), in
    order, without repeats; ``[]`` for a line that is blank, not an object, or holds only nulls there.
    A line that is not JSON has no kinds (the loaders' own check names it)."""
    try:
        values = [json.loads(line)] if line.strip() else []
    except json.JSONDecodeError:
        return []
    for step in column.split("/"):
        if step == "[]":
            values = [item for value in values if isinstance(value, list) for item in value]
        else:
            values = [value[step] for value in values if isinstance(value, dict) and step in value]
    return list(dict.fromkeys(kind for kind in map(json_kind, values) if kind is not None))


def first_mixed_line(lines: Any, column: str) -> tuple[str, int, str, int] | None:
    """Where a column of a JSON Lines file turns from one kind of value to another.

    Args:
        lines: the file's lines, in order (``str``); column: as :func:`line_kinds` takes it.

    Returns:
        ``(first kind, its first line, other kind, the first line holding it)``, lines 1-based, or
        ``None`` when the column holds one kind throughout.
    """
    first: tuple[str, int] | None = None
    for number, line in enumerate(lines, start=1):
        for kind in line_kinds(line, column):
            if first is None:
                first = (kind, number)
            elif kind != first[0]:
                return first[0], first[1], kind, number
    return None
