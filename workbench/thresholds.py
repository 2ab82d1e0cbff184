"""Exact comparisons of a ratio with a threshold a user typed.

A threshold is a decimal (``0.56``); a ratio of counts is a rational (``14/25``). In binary
floating point ``0.56 * 25`` is ``14.000000000000002``, so ``14 >= 0.56 * 25`` is false and
a pair exactly at the threshold is rejected. Here the threshold is read as the decimal it
was written as (:class:`fractions.Fraction` of its shortest round-trip text, which is the
text the user typed) and the comparison is made by integer cross-multiplication, so the
boundary holds for every threshold.

A decimal with more significant digits than a float keeps (``0.30000000000000001``) would
be read as another number; :func:`decimal_float` refuses such text with a message instead.

Example:

>>> at_least(14, 25, 0.56), 14 >= 0.56 * 25
(True, False)
>>> exact_threshold(0.56)
Fraction(14, 25)
"""

from __future__ import annotations

from fractions import Fraction


def exact_threshold(value: float | int | str | Fraction) -> Fraction:
    """The threshold as an exact rational: the decimal that was written.

    Args:
        value: a float (read as its shortest round-trip decimal, ``repr``: ``0.56`` is 14/25),
            an int, decimal text (``"0.56"``) or a Fraction (returned as is).

    Returns:
        the exact value.

    Raises:
        ValueError: text that is not a decimal number, or a value that is not finite.
    """
    if isinstance(value, Fraction):
        return value
    if isinstance(value, str):
        return Fraction(value.strip())
    if isinstance(value, bool):
        raise ValueError(f"a threshold is a number, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    return Fraction(repr(float(value)))


def at_least(numerator: int, denominator: int, threshold: float | str | Fraction) -> bool:
    """Whether ``numerator / denominator >= threshold``, exactly (``denominator > 0``).

    Args:
        numerator, denominator: non-negative integer counts, ``denominator > 0``.
        threshold: as :func:`exact_threshold` takes it.

    Raises:
        ValueError: ``denominator`` <= 0.
    """
    if denominator <= 0:
        raise ValueError(f"the denominator of a ratio must be > 0, not {denominator}")
    t = exact_threshold(threshold)
    return numerator * t.denominator >= t.numerator * denominator


def decimal_float(text: str) -> float:
    """The float of decimal ``text``, refusing text that a float would not hold exactly as written.

    ``"0.56"`` is 0.56 (whose round-trip text is ``0.56`` again, so :func:`exact_threshold`
    gives back 14/25); ``"0.30000000000000001"`` is refused, as it would be read as 0.3.

    Raises:
        ValueError: not a number, or more significant digits than a float keeps (about 15-17).
    """
    value = float(text.strip())
    if value != value or value in (float("inf"), float("-inf")):
        return value  # a range check names these
    if Fraction(text.strip()) != Fraction(repr(value)):
        raise ValueError(
            f"{text.strip()!r} has more significant digits than a number keeps; write it with at most 15 "
            f"(it would be read as {value!r})"
        )
    return value
