"""Exceptions shared by every job. Each carries a message meant for the end user."""

import os


#: the hint of a table given where a data source (a path, bundled name or hub id) is read
TABLE_HINT = ("a data source is a path, a bundled name or a hub id: write a table to a file first (pandas: "
              "df.to_json('data.jsonl', orient='records', lines=True)); correlate and bias also take a table")


class WorkbenchError(Exception):
    """Base class: an error the CLI prints as a one-line message (no traceback)."""


class DataError(WorkbenchError):
    """The input data cannot be used as asked (missing file, column, split; bad values)."""


class MissingColumnError(DataError):
    """A requested column does not exist.

    Args:
        column: the column that was asked for.
        available: the columns that do exist.
        option: the CLI option that names this column (e.g. ``--code-column``), for the hint
            "(set it with OPTION)".
        hint: the hint in full, where the column is not one option's value (a column named
            inside a ``--combine`` declaration); it replaces the "set it with" hint.
    """

    def __init__(self, column: str, available: list[str], option: str | None = None, *, hint: str | None = None):
        self.column = column
        self.available = list(available)
        if hint is None and option:
            hint = f"set it with {option}"
        hint = f" ({hint})" if hint else ""
        super().__init__(
            f"column {column!r} not found{hint}; the data has: {', '.join(self.available) or '(no columns)'}"
            + _separator_hint(self.available)
        )


def _separator_hint(available: list[str]) -> str:
    """A note when the only column's name is a whole header row: a CSV file written with another
    separator loads as one column (pandas and pyarrow split on commas only)."""
    if len(available) != 1:
        return ""
    separator = next((s for s in (";", "\t", "|") if s in available[0]), None)
    if separator is None:
        return ""
    name = "tab" if separator == "\t" else separator
    return (f". That one column's name is a whole header row: is the file {name}-separated? A CSV file must be "
            f"comma-separated: convert it, e.g. with pandas read_csv(path, sep=...).to_csv(new_path, index=False), "
            f"or pass JSON Lines")


class MissingSplitError(DataError):
    """A requested split does not exist; the message lists the splits that do."""

    def __init__(self, split: str, available: list[str]):
        self.split = split
        self.available = list(available)
        super().__init__(f"split {split!r} not found; available splits: {', '.join(self.available) or '(none)'}")


class HubUnreachableError(DataError):
    """A Hugging Face hub id was given but the hub cannot be reached (and nothing is cached)."""


class LanguageNotFoundError(WorkbenchError):
    """No installed language plugin handles the requested language."""


#: what a path argument accepts (:func:`require_path`)
PATH_TYPES = (str, os.PathLike)


def require_argument(value: object, expected: type | tuple[type, ...], name: str, call: str, *,
                     optional: bool = False, hint: str = "") -> None:
    """Raise a clear :class:`TypeError` when a public function gets the wrong kind of argument
    (a notebook user's swapped or missing argument), instead of an ``AttributeError`` deep inside.

    Args:
        value: the argument; expected: the accepted type(s); name: its parameter name;
        call: the function's signature as a user writes it (``"run_score(source, config, output_dir)"``).
        optional: ``None`` is accepted too (and named among the accepted values).
        hint: what to do instead, appended to the message (``"write a table to a file first"``).

    Raises:
        TypeError: naming the parameter, the accepted and the given type, and the call.
    """
    if isinstance(value, expected) or (optional and value is None):
        return
    names = " or ".join(t.__name__ for t in (expected if isinstance(expected, tuple) else (expected,)))
    shown = repr(value)
    # a table's repr is many lines: its type says enough
    shown = "" if "\n" in shown else f" ({shown if len(shown) <= 60 else shown[:57] + '...'})"
    article = "an" if names[:1].lower() in ("a", "e", "i", "o", "u") else "a"  # an ExecutionConfig, a DedupConfig
    raise TypeError(f"{call}: {name} must be {article} {names}{' or None' if optional else ''}, not {type(value).__name__}"
                    f"{shown}{'; ' + hint if hint else ''}")


def _a(value: object) -> str:
    """``"a ScoreConfig"`` / ``"an ExecutionConfig"`` for an object, ``"str 'out'"`` for a path."""
    if isinstance(value, PATH_TYPES):
        return f"{type(value).__name__} {os.fspath(value)!r}"
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def reject_swapped(first: object, first_name: str, first_types: type | tuple[type, ...], second: object,
                   second_name: str, second_types: type | tuple[type, ...], call: str, hint: str) -> None:
    """Raise a :class:`TypeError` that says two arguments are swapped, when each holds what the
    other takes (``run_execute(gens, config, "out.jsonl")``: ``run_score``'s order); otherwise do
    nothing (:func:`require_argument` then names a single wrong argument).

    Args:
        first, second: the two arguments as given; first_name, second_name: their parameter names;
        first_types, second_types: what each accepts; call: the signature as a user writes it;
        hint: why the order is easy to get wrong (``"run_execute takes its output before its config"``).

    Raises:
        TypeError: ``"{call}: {first_name} and {second_name} are swapped ({first_name} got ...,
            {second_name} got ...); {hint}"``.
    """
    if not isinstance(first, first_types) and isinstance(first, second_types) and isinstance(second, first_types) \
            and not isinstance(second, second_types):
        raise TypeError(f"{call}: {first_name} and {second_name} are swapped ({first_name} got {_a(first)}, "
                        f"{second_name} got {_a(second)}); {hint}")


def require_path(value: object, name: str, call: str, *, optional: bool = False, hint: str = "") -> None:
    """:func:`require_argument` for a path argument (``str`` or ``os.PathLike``; ``None`` too when
    ``optional``): a DataFrame, a number or a swapped config is a TypeError naming ``name``.

    Raises:
        TypeError: as :func:`require_argument`.
    """
    require_argument(value, PATH_TYPES, name, call, optional=optional, hint=hint)
