"""Reading the published human-grade JSON files, shared by their two importers.

ICE-Score's HumanEval grade files (:mod:`workbench.data.ice_score_file`) and Evtikhiev et al.'s
CoNaLa grade files (:mod:`workbench.data.codegen_metrics_file`) are both a JSON list of objects
with ``intent`` and ``snippet`` keys, plain or gzipped. This module opens them
(:func:`open_json_text`), sniffs their head (:func:`grade_file_head`), parses them with one clear
error per way a file can be broken (:func:`load_grade_json`) and stores their score columns so
Arrow can hold them (:func:`uniform_column`); the importers tell the layouts apart and flatten them.
"""

from __future__ import annotations

import gzip
import json
import os
import zlib
from pathlib import Path
from typing import IO, Any

from workbench.errors import DataError


def open_json_text(path: Path) -> IO[str]:
    """``path`` (``.json`` or ``.json.gz``) opened as UTF-8 text; raises OSError as ``open`` does."""
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix.lower() == ".gz" else path.open(encoding="utf-8")


def grade_file_head(path: str | os.PathLike[str], size: int) -> str | None:
    """The first ``size`` characters of a ``.json``/``.json.gz`` file that begins as a JSON list of
    objects with ``intent`` and ``snippet`` keys (the layout ICE-Score's and Evtikhiev et al.'s CoNaLa
    grade files share), else ``None``. Never raises for unreadable or non-JSON files.

    Args:
        path: any path.
        size: characters to read (the detectors tell their ``grade-`` keys apart in this head).
    """
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes[-2:] != [".json", ".gz"] and suffixes[-1:] != [".json"]:
        return None
    try:
        with open_json_text(path) as handle:
            head = handle.read(size)
    except (OSError, UnicodeDecodeError, EOFError, zlib.error):
        return None
    return head if head.lstrip().startswith("[") and '"intent"' in head and '"snippet"' in head else None


def load_grade_json(path: str | os.PathLike[str], layout: str) -> Any:
    """Parse a whole grade file (``.json`` or ``.json.gz``, UTF-8).

    Args:
        path: the file.
        layout: what the file is read as, for the error message (``"an ICE-Score grade file"``).

    Returns:
        the parsed JSON value, as ``json.load`` returns it (the importers check its shape).

    Raises:
        DataError: one line, ``"<path>: cannot read as <layout>: <what is wrong>"``, and what to do
            where that is known: the file is missing or unreadable, not UTF-8 text, a gzip stream
            that ends early or is damaged, or not valid JSON (with the line and column where parsing
            stopped; a file cut short by an interrupted download stops at its end).
    """
    path = Path(path)
    where = f"{path}: cannot read as {layout}"
    try:
        with open_json_text(path) as handle:
            return json.load(handle)
    except json.JSONDecodeError as error:
        cut = error.pos >= len(error.doc.rstrip())
        hint = "the file ends early: it was truncated, copy or download it again" if cut else (
            "is it the published grade file, or was it truncated or edited?")
        raise DataError(f"{where}: not valid JSON at line {error.lineno} column {error.colno} ({error.msg}); {hint}") from error
    except UnicodeDecodeError as error:
        raise DataError(f"{where}: not UTF-8 text (byte offset {error.start}: {error.reason}); save it as UTF-8") from error
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise DataError(f"{where}: damaged gzip stream ({error}); it may be truncated, copy or download it again") from error
    except OSError as error:
        raise DataError(f"{where}: {error.strerror or error}") from error


def uniform_column(values: list[Any]) -> list[Any]:
    """One score column of a grade file, in a form Arrow can hold.

    Numbers stay numbers (all floats once one is a float); a column with any non-number is
    stored as text (strings as they are, anything else as its JSON), so Arrow can hold it and
    the consumer (e.g. ``correlate``) sees, counts and reports the odd cells.

    Args:
        values: the column's cells, ``None`` where a row lacks the key.

    Returns:
        a new list of the same length; ``None`` stays ``None``.
    """
    present = [v for v in values if v is not None]
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
        if any(isinstance(v, float) for v in present):
            return [None if v is None else float(v) for v in values]
        return values
    return [None if v is None else (v if isinstance(v, str) else json.dumps(v)) for v in values]
