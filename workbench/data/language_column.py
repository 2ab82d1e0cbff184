"""The ``language`` column: which language plugin a row's code is written in.

Loaders name the language where they know it: a folder of source files gives each file's
(by its extension), an ICE-Score grade file its file name's (``humaneval_java_grade.json``),
and a data file may carry the column itself (MultiPL-E's problems). The rules, in one place:

* :func:`language_value` -- a cell names a language when it holds non-blank text; an empty or
  null cell names none (the row takes the command's ``--language``, or the default);
* :func:`row_languages` -- dedup reads the column per row: each row is tokenized with its own
  language's plugin (a folder of mixed files is one dedup run);
* :func:`run_language` -- execute and score run one plugin for the whole run: the data's
  language when ``--language`` is not given, the given one when it agrees with the data's, and
  a clear refusal otherwise (data in several languages; a ``--language`` the data contradicts),
  never Java run by the Python runner.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from workbench.errors import DataError
from workbench.formatting import count
from workbench.options import OptionError

#: the column a loader fills with each row's language (a folder's files, an ICE-Score grade file)
LANGUAGE_COLUMN = "language"
#: the language of a run whose data names none and whose ``--language`` is not given
DEFAULT_LANGUAGE = "python"


def language_value(value: Any) -> str | None:
    """The language a ``language`` cell names, or ``None`` for a null or blank cell.

    Args:
        value: the cell as read (text; ``None`` or ``""`` where the row names no language).

    Returns:
        the text, stripped; ``None`` when it names nothing.
    """
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def row_languages(values: Iterable[Any], default: str) -> list[str]:
    """Each row's language: its ``language`` cell, or ``default`` where the cell names none.

    Args:
        values: the ``language`` column, one cell per row.
        default: the language of rows that name none (the command's ``--language``).

    Returns:
        one language name (as written) per row.
    """
    return [language_value(value) or default for value in values]


def run_language(given: str | None, columns: Mapping[str, Iterable[Any] | None]) -> str:
    """The one language of a run that executes or scores code with one plugin.

    Args:
        given: ``--language`` as the user gave it (a name, alias or extension), or ``None``
            when it was not given.
        columns: where -> the ``language`` column found there (``{"the generations (x.json)":
            [...], "the problems (p.jsonl)": [...]}``), ``None`` where that input has no such
            column. Null and blank cells name no language. Each ``where`` is a plural subject
            ("the generations ... name java in the 'language' column"): ``"[data] source (x) rows"``,
            not ``"[data] source (x)"``.

    Returns:
        ``given``, else the language the data names, else :data:`DEFAULT_LANGUAGE`: its canonical
        name (``"py"`` -> ``"python"``) where a plugin handles it, else the name as found (the
        plugin lookup that follows refuses it with the installed languages).

    Raises:
        DataError: the data names several languages (in one input or across inputs): a run
            uses one plugin, so the data must be split by language.
        OptionError: ``given`` names another language than the data does (naming both).
    """
    from workbench.languages.registry import canonical_language  # the plugins load when a run starts

    found: dict[str, Counter[str]] = {}
    for where, values in columns.items():
        if values is None:
            continue
        named: Counter[str] = Counter()
        for name, rows in Counter(map(language_value, values)).items():  # one plugin lookup per name, not per row
            if name is not None:
                named[canonical_language(name)] += rows
        if named:
            found[where] = named
    in_data = Counter()
    for counts in found.values():
        in_data.update(counts)
    if len(in_data) > 1:
        shown = "; ".join(f"{where}: " + ", ".join(f"{name} ({count(n, 'row')})" for name, n in sorted(counts.items()))
                          for where, counts in found.items())
        raise DataError(
            f"the data names several languages in its {LANGUAGE_COLUMN!r} column ({shown}); a run executes and scores "
            f"one language with one plugin: split the data by language and run each part on its own")
    data_language = next(iter(in_data), None)
    if given is None:
        return data_language or canonical_language(DEFAULT_LANGUAGE)
    chosen = canonical_language(given)
    if data_language is not None and chosen != data_language:
        raise OptionError(
            f"{{language}} {given} contradicts the data: {' and '.join(found)} name {data_language} in the "
            f"{LANGUAGE_COLUMN!r} column ({count(in_data[data_language], 'row')}); leave {{language}} out to use the data's "
            f"language, or pass data written in {chosen}", "language")
    return chosen
