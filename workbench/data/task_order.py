"""One order of task ids (and bias's resampling units) that does not depend on the order of rows.

The task bootstrap (:func:`workbench.correlate.bootstrap.task_resample_counts`) draws counts per
task *number*; numbering tasks in order of first appearance made every interval depend on the
order of the input rows (a shuffled file, or ``workbench execute``'s results, written in
completion order, gave other intervals). ``correlate``, ``bias`` and pass@k all number their
units with :func:`canonical_codes`: a natural sort of the id text, digits compared as numbers
(``HumanEval/2`` < ``HumanEval/10``), so equal rows in any order give equal draws per task.

Pure Python (no numpy): :mod:`workbench.execute.pass_at_k` imports it at load time.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable, Sequence
from typing import Any

# ASCII digits only: int() of a run of them never fails (unicode digits such as "²" stay text)
_DIGITS = re.compile(r"([0-9]+)")


def _number(match: re.Match) -> str:
    """A digit run as text that sorts as its number: a marker, its length (4 digits), its digits
    without leading zeros ("0010" -> "\x010002" + "10")."""
    digits = match.group().lstrip("0") or "0"
    return f"\x01{len(digits):04d}{digits}"


def natural_key(value: Any) -> tuple:
    """The sort key of one id: its text with every digit run rewritten so that plain text order
    compares it as a number (``HumanEval/2`` < ``HumanEval/10``; numbers before letters at the same
    place), then the text itself (so ``"07"`` and ``"7"`` stay apart).

    Any value has a key, and keys of unequal values never tie: after the text come, for a value
    that is not text, its type name and ``repr`` (so the int ``3`` and the text ``"3"`` are two
    ids in one fixed order). ``""`` sorts first. Keys are strings, compared in C: sorting a
    million ids takes seconds.

    Example:

    >>> sorted(["HumanEval/10", "HumanEval/2", "HumanEval/1", "Eval/3"], key=natural_key)
    ['Eval/3', 'HumanEval/1', 'HumanEval/2', 'HumanEval/10']
    >>> sorted(["b", "", 10, "10", "a2", "a10", "07", "7", "é1"], key=natural_key)
    ['', '07', '7', '10', 10, 'a2', 'a10', 'b', 'é1']
    """
    text = value if isinstance(value, str) else str(value)
    if isinstance(value, str):
        return _DIGITS.sub(_number, text), text
    return _DIGITS.sub(_number, text), text, type(value).__name__, repr(value)


def canonical_order(ids: Iterable[Hashable]) -> list:
    """The distinct ``ids`` in the order of :func:`natural_key`.

    >>> canonical_order(["HumanEval/10", "HumanEval/2", "HumanEval/10"])
    ['HumanEval/2', 'HumanEval/10']
    """
    return sorted(set(ids), key=natural_key)


def canonical_codes(ids: Sequence[Hashable]) -> tuple[list, list[int]]:
    """Number the distinct ``ids`` in :func:`canonical_order`.

    Args:
        ids: ``(n,)`` the unit (task, cluster) of each row; hashable, any type, any row order.

    Returns:
        ``(units, codes)``: the distinct ids in canonical order, and ``(n,)`` each row's index into them.

    >>> canonical_codes(["t10", "t2", "t10", "t1"])
    (['t1', 't2', 't10'], [2, 1, 2, 0])
    """
    units = canonical_order(ids)
    number = {unit: index for index, unit in enumerate(units)}
    return units, [number[i] for i in ids]
