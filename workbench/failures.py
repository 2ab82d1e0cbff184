"""Exit statuses a CI job can gate on, and the ``max_failures`` limit that decides them.

A command that finished can still have produced nothing usable (``workbench score`` where every
sample ended ``llm_error``) or too little (a provider that failed on half the samples). Such a
run exits with its own status, after writing and printing everything it did, and says which
counts decided it. The statuses of every ``workbench`` command:

====  ==================  ===================================================================
code  name                meaning
====  ==================  ===================================================================
0     ok                  finished; failures, if any, within ``--max-failures``
1     error               stopped: bad configuration or data, an unusable sandbox, a stage
                          of ``workbench run`` that failed (the message says which and why)
2     usage               the command line itself is wrong (an unknown option, a bad value)
3     no_usable_result    finished, but a method (``score``) or the sample phase
                          (``execute``) produced no usable result: no row has one
4     too_many_failures   finished, but failures exceeded ``--max-failures``
130   interrupted         Ctrl-C; finished rows are kept, rerun with ``--resume``
143   terminated          SIGTERM (SLURM, ``timeout``): ended as a Ctrl-C ends it (128 + 15)
====  ==================  ===================================================================

``workbench run`` runs every stage it can and exits with the highest of its stages' statuses.

A *failure* is a row the tool could not produce: for ``score``, a row whose status is
``llm_error``, ``parse_error``, ``budget_exceeded`` or ``error``; for ``execute``, a sample the
sandbox could not run (``sandbox_error``). A sample whose program fails its tests is a result,
not a failure.

Example::

    >>> limit = parse_max_failures("10%")
    >>> check_failures({"dsa-cqe": (3, 17, 20)}, limit).status
    4
    >>> check_failures({"dsa-cqe": (1, 19, 20), "chrf": (0, 0, 20)}, limit).status
    3
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum

from workbench.formatting import count
from workbench.thresholds import decimal_float, exact_threshold


class ExitStatus(IntEnum):
    """The exit statuses of every ``workbench`` command (see the module)."""

    OK = 0
    ERROR = 1
    USAGE = 2
    NO_USABLE_RESULT = 3
    TOO_MANY_FAILURES = 4
    INTERRUPTED = 130
    TERMINATED = 143


#: one line per status, for ``--help`` and the docs
EXIT_STATUS_HELP = (
    "Exit status: 0 ok; 1 error (configuration, data, sandbox, a failed stage); 2 bad command line; "
    "3 a method or phase produced no usable result (every row failed); 4 failures above --max-failures; "
    "130 interrupted; 143 interrupted by SIGTERM."
)


@dataclass(frozen=True)
class FailureLimit:
    """The most failures a finished run may have and still exit 0.

    Exactly one of the two is set.

    Attributes:
        count: at most this many failed rows (``--max-failures 5``).
        fraction: at most this share of the rows, in [0, 1] (``--max-failures 0.1`` or ``10%``).
    """

    count: int | None = None
    fraction: float | None = None

    def exceeded(self, failed: int, total: int) -> bool:
        """Whether ``failed`` of ``total`` rows is above the limit."""
        if self.count is not None:
            return failed > self.count
        # exactly: failed / total against the decimal that was written (0.57% of 10,000 rows is 57)
        limit = exact_threshold(self.fraction or 0.0)
        return total > 0 and failed * limit.denominator > limit.numerator * total

    def __str__(self) -> str:
        if self.count is not None:
            return str(self.count)
        return f"{self.fraction:g}"


def parse_max_failures(value: object) -> FailureLimit:
    """Read a ``max_failures`` value: a whole number of rows, or a fraction of them.

    Args:
        value: ``5`` / ``"5"`` (rows), ``0.1`` / ``"0.1"`` / ``"10%"`` (a share of the rows), or
            a :class:`FailureLimit`.

    Returns:
        a :class:`FailureLimit`.

    Raises:
        ValueError: negative, a fraction above 1, or not a number (the message says which forms
            are accepted).
    """
    if isinstance(value, FailureLimit):
        return value
    forms = "takes a number of failed rows (5) or a fraction of them (0.1 or 10%)"
    if isinstance(value, bool):
        raise ValueError(f"{forms}, not {value!r}")
    text = str(value).strip()
    try:
        if text.endswith("%"):
            # the float nearest the exact share, whose shortest text is that share ("0.57%" -> 0.0057)
            decimal_float(text[:-1])  # a number, and not more digits than a float keeps
            fraction = float(exact_threshold(text[:-1]) / 100)
            if fraction is None or not 0 <= fraction <= 1:
                raise ValueError
            return FailureLimit(fraction=fraction)
        if (isinstance(value, int) and value >= 0) or text.isdigit():
            return FailureLimit(count=int(text))
        number = decimal_float(text)
    except ValueError:
        raise ValueError(f"{forms}, not {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise ValueError(f"{forms}, not {value!r}")
    if number.is_integer() and number >= 1:
        return FailureLimit(count=int(number))
    if number > 1:
        raise ValueError(f"{forms}; a fraction is at most 1, not {value!r}")
    return FailureLimit(fraction=number)


def failure_limit_text(limit: FailureLimit | None) -> str:
    """The text form of a limit (for ``--help`` and recorded command lines)."""
    return "" if limit is None else str(limit)


@dataclass(frozen=True)
class FailureVerdict:
    """Whether a finished run passes, and the counts that decided it.

    Attributes:
        status: an :class:`ExitStatus` value (0, 3 or 4).
        message: one sentence naming the group, its failed and total rows and the limit
            (empty when ``status`` is 0).
        counts: group -> (failed rows, usable rows, rows) that were judged.
        limit: the limit's text, or ``None`` when none was set.
    """

    status: int
    message: str
    counts: dict[str, tuple[int, int, int]]
    limit: str | None

    def as_dict(self) -> dict[str, object]:
        """For ``run.json``."""
        return {"exit_status": self.status, "message": self.message, "limit": self.limit,
                "counts": {group: {"failed": f, "usable": u, "rows": n} for group, (f, u, n) in self.counts.items()}}


def check_failures(counts: Mapping[str, tuple[int, int, int]], limit: FailureLimit | None,
                   *, flag: str | None = None) -> FailureVerdict:
    """Judge a finished run by its failures.

    Args:
        counts: group (a scoring method, ``"samples"``) -> (failed rows, usable rows, rows) of
            this run. A usable row is one with a result (a score; an execution verdict); a row
            neither failed nor usable is e.g. a ``skipped`` one (empty reference). A group with
            no rows (all resumed) is not judged.
        limit: the ``max_failures`` limit, or ``None`` (then only "no usable result" fails).
        flag: how the limit is named in the message; default: ``--max-failures``, or its config key
            (``[score] max_failures``) while a ``workbench run`` stage runs
            (:func:`~workbench.option_words.option_named`).

    Returns:
        a :class:`FailureVerdict`: status 3 when a group has rows and none usable (this wins:
        nothing usable is worse than too much failed), else 4 when a group's failed rows exceed
        ``limit``, else 0.
    """
    from workbench.option_words import option_named

    flag = flag or option_named("max_failures")
    judged = {group: tuple(numbers) for group, numbers in counts.items() if numbers[2] > 0}
    limit_text = None if limit is None else str(limit)

    def detail(groups: list[str]) -> str:
        return "; ".join(f"{group}: {judged[group][0]} of {count(judged[group][2], 'row')} failed, "
                         f"{judged[group][1]} usable" for group in groups)

    empty = [group for group, (_, usable, _) in judged.items() if usable == 0]
    if empty:
        return FailureVerdict(int(ExitStatus.NO_USABLE_RESULT), f"no usable result ({detail(empty)})", judged, limit_text)
    if limit is not None:
        over = [group for group, (failed, _, total) in judged.items() if limit.exceeded(failed, total)]
        if over:
            return FailureVerdict(int(ExitStatus.TOO_MANY_FAILURES), f"too many failures ({detail(over)}; {flag} {limit})",
                                  judged, limit_text)
    return FailureVerdict(int(ExitStatus.OK), "", judged, limit_text)


__all__ = [
    "EXIT_STATUS_HELP",
    "ExitStatus",
    "FailureLimit",
    "FailureVerdict",
    "check_failures",
    "failure_limit_text",
    "parse_max_failures",
]
