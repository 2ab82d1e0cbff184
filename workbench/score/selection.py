"""Which samples an expensive scoring run looks at: the first N, or a stratified subset.

A correlation with execution needs both outcomes, and per-problem correlations need tasks
that have both passing and failing samples. Scoring "the first N rows" of a file sorted by
task gives a handful of tasks, often with one outcome only. :func:`stratified_subset` spreads
a budget of N samples over tasks and over pass/fail, deterministically for a seed.
"""

from __future__ import annotations

import random
from fractions import Fraction
from collections.abc import Sequence
from typing import Any

from workbench.errors import DataError
from workbench.formatting import count
from workbench.score.base import Sample
from workbench.thresholds import exact_threshold
from workbench.option_words import option_named, option_value

#: a pass ratio at or above this counts as passing (compared exactly: "0.5" and 1/2 pass)
PASSING_RATIO = Fraction(1, 2)

#: the ways of choosing samples (``--select`` of ``workbench score``)
SELECTIONS = ("first", "stratified")


def _outcome(value: Any, task_id: str, column: str) -> bool:
    try:
        if isinstance(value, bool):
            return value
        return exact_threshold(value if isinstance(value, str) else float(value)) >= PASSING_RATIO
    except (TypeError, ValueError, ZeroDivisionError):
        raise DataError(
            f"cannot stratify on {column!r}: task {task_id!r} has value {value!r} (expected 0/1 or a pass ratio)"
        ) from None


def stratified_subset(samples: Sequence[Sample], limit: int, *, label: str = "passed", seed: int = 0) -> list[Sample]:
    """Pick ``limit`` samples spread over tasks and over execution outcomes.

    Tasks that have both passing and failing samples come first (they are the ones that carry
    within-task information for per-problem Kendall tau-b), in a seeded random order, then the
    other tasks. The picks go round by round: in each round every task gives one passing and
    one failing sample while it has them (each drawn at random without replacement). So a
    budget of ``2 x T`` samples covers ``T`` mixed tasks with one sample of each outcome, and
    the subset for a smaller ``limit`` is a prefix of the one for a larger ``limit`` (raising
    the limit of a resumed run only adds samples).

    Args:
        samples: candidates; ``sample.carried[label]`` holds the outcome (0/1, or a pass ratio:
            >= 0.5 counts as passing).
        limit: number of samples wanted (>= 1); fewer are returned only when there are fewer.
        label: the carried column with the outcome.
        seed: seed of the random orders.

    Returns:
        the chosen samples, in pick order.

    Raises:
        DataError: ``label`` was not carried, or holds a value that is not a number.
        ValueError: ``limit`` < 1.
    """
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if samples and label not in samples[0].carried:
        raise DataError(f"stratified selection needs the {label!r} column (carried with {option_value('carry', label)})")
    rng = random.Random(seed)
    strata: dict[str, tuple[list[Sample], list[Sample]]] = {}
    for sample in samples:
        passing, failing = strata.setdefault(sample.task_id, ([], []))
        (passing if _outcome(sample.carried.get(label), sample.task_id, label) else failing).append(sample)
    for passing, failing in strata.values():
        rng.shuffle(passing)
        rng.shuffle(failing)
    tasks = list(strata)
    rng.shuffle(tasks)
    # mixed tasks first; the sort is stable, so the seeded order holds within each group
    tasks.sort(key=lambda task: not (strata[task][0] and strata[task][1]))
    picked: list[Sample] = []
    for depth in range(max((max(len(p), len(f)) for p, f in strata.values()), default=0)):
        for task in tasks:
            for stratum in strata[task]:
                if depth < len(stratum):
                    picked.append(stratum[depth])
                    if len(picked) == limit:
                        return picked
    return picked


def balance_note(picked: Sequence[Sample], label: str = "passed", limit: int | None = None,
                 candidates: Sequence[Sample] | None = None) -> str | None:
    """A sentence on a stratified subset in which some tasks have one outcome only, or ``None``.

    Two causes are told apart: an odd ``limit`` leaves the last task of the pick order one sample
    (its pair is cut: an even limit mends it), or the data has too few tasks with both outcomes for
    the limit (the other tasks follow the mixed ones).

    Args:
        picked: the :func:`stratified_subset` result, in pick order.
        label: the carried outcome column.
        limit: the ``--limit`` that picked them (``None``: not known; the odd-limit cause is then
            not told).
        candidates: the samples they were picked from (``None``: not known; the odd-limit cause is
            then not told): an odd limit is the cause only where the task it cut has both outcomes
            in the data (a task whose samples all pass keeps one outcome at any limit).

    Returns:
        e.g. ``"--select stratified: 20 of the 21 tasks in the subset have both a passing and a
        failing sample; the other task has one sample only, as --limit 41 is odd (its pair is cut): use
        an even --limit"``; ``None`` when every task has both outcomes.
    """
    per_task: dict[str, set[bool]] = {}
    samples_of: dict[str, int] = {}
    for sample in picked:
        if label in sample.carried:
            per_task.setdefault(sample.task_id, set()).add(_outcome(sample.carried[label], sample.task_id, label))
            samples_of[sample.task_id] = samples_of.get(sample.task_id, 0) + 1
    mixed = sum(1 for outcomes in per_task.values() if len(outcomes) == 2)
    single = len(per_task) - mixed
    if not single:
        return None
    select = option_value("select", "stratified")
    last = picked[-1].task_id
    # the last task lost its second sample to the odd limit only if the data gives it both outcomes
    cut_mixed = candidates is not None and len({_outcome(s.carried[label], s.task_id, label) for s in candidates
                                                if s.task_id == last and label in s.carried}) == 2
    if single == 1 and limit is not None and limit % 2 and len(picked) == limit \
            and samples_of.get(last) == 1 and cut_mixed:
        cut = f"one sample only, as {option_value('limit', limit)} is odd (its pair is cut): use an even {option_named('limit')}"
        if not mixed:
            return f"{select}: the subset's one task has {cut}"
        return (f"{select}: {mixed} of the {count(len(per_task), 'task')} in the subset {'has' if mixed == 1 else 'have'} "
                f"both a passing and a failing sample; the other task has {cut}")
    why = (f"the data has too few tasks with both outcomes for this {option_named('limit')}, and a task with one "
           "outcome adds nothing to per-problem correlations")
    if not mixed:
        return f"{select}: no task in the subset has both a passing and a failing sample ({why})"
    others = "the other task has" if single == 1 else f"the other {single} tasks have"
    return (f"{select}: {mixed} of the {count(len(per_task), 'task')} in the subset {'has' if mixed == 1 else 'have'} "
            f"both a passing and a failing sample; {others} one outcome only ({why})")
