"""Completion length, the reference for a judge's verbosity bias.

An LLM judge that prefers longer answers whatever their correctness has a *verbosity bias*
(Zheng et al. 2023, "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", section 3.3;
Saito et al. 2023, "Verbosity Bias in Preference Labeling by Large Language Models").
``correlate`` puts each metric's correlation with the length of the generated code next to
its correlation with execution: a metric that tracks length far better than length tracks
passing is rewarding size, not correctness.

The length is measured here from a column of the table:

* a text column (the generation): its length in ``chars`` (Unicode code points of the text as
  stored) or in ``tokens`` (lexical tokens: runs of letters, digits and underscores, and every
  other non-blank character on its own; a language-neutral approximation of a code tokenizer
  that splits ``==`` into two tokens);
* a numeric column: taken as the length as it is (e.g. token counts from the model's own
  tokenizer); the unit is then the column's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from workbench.errors import DataError
from workbench.formatting import count
from workbench.option_words import option_named

#: the generation columns looked for, in this order, when the length column is ``"auto"``
GENERATION_COLUMNS: tuple[str, ...] = ("completion", "generation", "code", "candidate", "prediction", "output")
#: the length units of a text column
LENGTH_UNITS: tuple[str, ...] = ("chars", "tokens")
#: the ``length_column`` values that switch the length analysis off, and that ask for detection
NO_LENGTH, AUTO_LENGTH = "none", "auto"

_LEXICAL_TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Lexical tokens of ``text``: runs of word characters (``\\w+``) and each other non-blank
    character on its own.

    Example:
        >>> count_tokens("def f(x): return x+1")
        10
    """
    return len(_LEXICAL_TOKEN.findall(text))


def text_length(text: str, unit: str) -> int:
    """The length of ``text`` in ``unit`` (``"chars"`` or ``"tokens"``, see :func:`count_tokens`).

    Raises:
        ValueError: an unknown unit.
    """
    if unit == "chars":
        return len(text)
    if unit == "tokens":
        return count_tokens(text)
    raise ValueError(f"length unit must be one of {', '.join(LENGTH_UNITS)}, got {unit!r}")


def find_generation_column(columns: Sequence[str]) -> str | None:
    """The first of :data:`GENERATION_COLUMNS` among ``columns``, or ``None``."""
    present = set(columns)
    return next((name for name in GENERATION_COLUMNS if name in present), None)


@dataclass(frozen=True)
class LengthSource:
    """Where the lengths came from, for the report.

    Attributes:
        column: the column read.
        unit: ``"chars"`` or ``"tokens"`` for a text column; ``"column value"`` for a numeric one.
        detected: the column was found by name (``length_column="auto"``), not named by the user.
    """

    column: str
    unit: str
    detected: bool

    def describe(self) -> str:
        """E.g. ``"length of 'generation' in chars (found by name)"``."""
        how = f" (found by name; set another with {option_named('length_column')})" if self.detected else ""
        if self.unit == "column value":
            return f"length = the numbers of column {self.column!r}{how}"
        return f"length of {self.column!r} in {self.unit}{how}"


def measure_lengths(cells: Sequence[Any], unit: str, column: str) -> tuple[np.ndarray, np.ndarray, str]:
    """Lengths of one column's cells.

    Args:
        cells: the column's values: all text (measured in ``unit``) or all numbers (taken as
            they are); ``None`` cells are missing.
        unit: ``"chars"`` or ``"tokens"`` (used for text).
        column: the column's name, for messages.

    Returns:
        ``(lengths, missing, unit)``: ``(n,)`` floats (NaN where missing), ``(n,)`` booleans,
        and the unit actually used (``"column value"`` for a numeric column).

    Raises:
        DataError: cells that are neither text nor numbers, a mix of both, or negative or
            infinite numbers.
        ValueError: an unknown unit.
    """
    if unit not in LENGTH_UNITS:
        raise ValueError(f"length unit must be one of {', '.join(LENGTH_UNITS)}, got {unit!r}")
    present = [value for value in cells if value is not None]
    texts = all(isinstance(value, str) for value in present)
    numbers = all(isinstance(value, (int, float)) and not isinstance(value, bool) for value in present)
    if present and not (texts or numbers):
        odd = next(v for v in present if not isinstance(v, str))
        raise DataError(
            f"length column {column!r} must hold the generated text (or a number per row); it has "
            f"{type(odd).__name__} cells such as {str(odd)[:60]!r} (set the generation column with {option_named('length_column')})"
        )
    lengths = np.full(len(cells), np.nan)
    missing = np.array([value is None for value in cells], dtype=bool)
    if texts:
        for index, value in enumerate(cells):
            if value is not None:
                lengths[index] = text_length(value, unit)
        return lengths, missing, unit
    for index, value in enumerate(cells):
        if value is not None:
            lengths[index] = float(value)
    missing |= np.isnan(lengths)
    bad = np.flatnonzero(~missing & (~np.isfinite(lengths) | (lengths < 0)))
    if bad.size:
        raise DataError(
            f"length column {column!r}: a length must be a finite number >= 0; {count(bad.size, 'row')} {'is' if bad.size == 1 else 'are'} not, "
            f"e.g. row {int(bad[0])}: {cells[bad[0]]!r}"
        )
    return lengths, missing, "column value"
