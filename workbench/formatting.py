"""How an estimate or an interval bound is printed, in every table and report, and how a count
is written in a message ("1 row", "2 rows")."""

from __future__ import annotations

import math
from typing import Any


def fixed(value: Any, digits: int = 3) -> str:
    """``value`` with ``digits`` decimals; ``n/a`` when missing or not finite.

    A value that rounds to zero prints as ``0.000``, never ``-0.000``: the sign of a rounded zero
    says nothing, and ``[-0.072, -0.000]`` reads as an interval that clearly excludes 0 when its
    bound is -5e-6 (whether it contains 0 is the ``≈0`` mark's job,
    :func:`~workbench.correlate.bootstrap.interval_contains_zero`).

    Example:

    >>> fixed(-5e-6), fixed(-0.0364), fixed(float("nan")), fixed(0.06, 2)
    ('0.000', '-0.036', 'n/a', '0.06')
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return "n/a"
    return f"{round(float(value), digits) + 0.0:.{digits}f}"  # + 0.0 turns -0.0 into 0.0


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``number`` with ``noun`` in the grammatical number it takes: ``1 row``, ``0 rows``, ``2 rows``.

    Args:
        number: how many.
        noun: the singular (``"row"``, ``"failed row"``).
        plural: the plural where adding ``s`` does not give it (``"matches"``).

    Example:

    >>> count(1, "row"), count(3, "row"), count(0, "sample"), count(2, "match", "matches")
    ('1 row', '3 rows', '0 samples', '2 matches')
    """
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def megabytes(size: int) -> str:
    """A file or download size as ``workbench models list`` and the run preflight show it: ``98.4 MB``,
    ``1,117.3 MB`` (decimal megabytes, one decimal, thousands separated).

    Args:
        size: bytes.
    """
    return f"{size / 1e6:,.1f} MB"
