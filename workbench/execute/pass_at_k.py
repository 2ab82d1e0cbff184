"""pass@k of execution results: the unbiased estimator of Chen et al. 2021 with a task-bootstrap interval.

pass@k is the probability that at least one of k samples drawn for a problem passes, averaged over
problems. With n samples of a problem of which c pass, the unbiased estimate for that problem is
``1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021, "Evaluating Large Language Models Trained on Code",
Sec. 2.1, Eq. 1), computed as ``1 - prod_{i = n - c + 1}^{n} (1 - k / i)`` (their Fig. 3) so that no
binomial coefficient is formed. It needs n >= k for every problem: as HumanEval's
``evaluate_functional_correctness`` does, a k that some problem has fewer samples for is not reported.

The interval is for the problem set as a sample of problems: a percentile bootstrap over tasks
(Miller 2024, "Adding Error Bars to Evals", arXiv:2411.00640, treats the questions of an eval as drawn
from a population the same way), with the draws of ``workbench correlate`` and ``workbench bias``
(:func:`workbench.correlate.bootstrap.task_resample_counts`, tasks numbered in the canonical order of
:mod:`workbench.data.task_order`, whatever the order of the rows), so
pass@1 gets the interval bias gives the mean over tasks of the same rows. The samples' own randomness
within a task is not in it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workbench.data.task_order import canonical_order
from workbench.errors import DataError
from workbench.formatting import count

#: the ks reported by default, as bigcode-evaluation-harness and HumanEval report them
DEFAULT_KS = (1, 10, 100)
#: bootstrap resamples and seed of the task interval (seeded: a rerun prints the same interval)
BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 0


def pass_at_k_one_task(n: int, c: int, k: int) -> float:
    """The unbiased pass@k of one problem with ``n`` samples of which ``c`` pass.

    Chen et al. 2021, Sec. 2.1, Eq. 1, in the product form of their Fig. 3.

    Raises:
        ValueError: ``k`` < 1, ``n`` < ``k`` or ``c`` outside ``[0, n]``.
    """
    if k < 1 or n < k or not 0 <= c <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


@dataclass(frozen=True)
class PassAtK:
    """pass@k over a set of tasks.

    Attributes:
        k: samples drawn per problem.
        estimate: the mean over tasks of the per-task unbiased estimate, in [0, 1].
        low, high: the 95 % percentile task-bootstrap interval, or ``None`` (``no_interval``
            says why: too few tasks or samples for one, by the rule correlate and bias follow,
            :func:`workbench.correlate.bootstrap.no_interval_reason`; or every task has the same
            value, so there is no variation to resample).
        tasks: tasks averaged over.
        no_interval: why there is no interval, or ``None``.
    """

    k: int
    estimate: float
    low: float | None
    high: float | None
    tasks: int
    no_interval: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """``{"k", "estimate", "ci", "tasks", "no_ci"}`` (``ci`` is ``[low, high]`` or ``None``, and
        ``no_ci`` then says why)."""
        ci = None if self.low is None or self.high is None else [self.low, self.high]
        return {"k": self.k, "estimate": self.estimate, "ci": ci, "tasks": self.tasks, "no_ci": self.no_interval}


@dataclass(frozen=True)
class PassAtKReport:
    """pass@k for each k that every task has enough samples for.

    Attributes:
        values: the reported ks, ascending.
        omitted: k -> why it is not reported (``"some task has fewer than k samples (min 20)"``).
        samples_per_task: ``(min, max)`` samples per task, or ``None`` without rows.
    """

    values: tuple[PassAtK, ...]
    omitted: Mapping[int, str]
    samples_per_task: tuple[int, int] | None

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON holds it: ``{"values": {"1": {...}, ...}, "omitted": {"100": why},
        "samples_per_task": [min, max] | None, "interval": how it was computed}``."""
        return {
            "values": {str(v.k): v.as_dict() for v in self.values},
            "omitted": {str(k): why for k, why in self.omitted.items()},
            "samples_per_task": None if self.samples_per_task is None else list(self.samples_per_task),
            "interval": f"95% percentile bootstrap over tasks, {BOOTSTRAP_RESAMPLES} resamples, seed {BOOTSTRAP_SEED}",
        }


def verdict(row: Mapping[str, Any], number: int) -> int:
    """The ``passed`` of result row ``number`` (0-based) as 0 or 1: a bool, or a number (or its
    text, ``"1"``) equal to 0 or 1, as ``workbench execute`` writes it.

    Raises:
        DataError: anything else (a pass ratio, ``"false"``, ``null``): truthiness would count
            0.5 or ``"false"`` as a pass, and a missing verdict is not a failure.
    """
    value = row.get("passed")
    try:
        number_value = float(value)
    except (TypeError, ValueError):
        number_value = None
    if number_value in (0.0, 1.0):
        return int(number_value)
    raise DataError(f"result row {number} (task {row.get('task_id')!r}, sample {row.get('sample_id')!r}) has "
                    f"passed={value!r}; pass@k needs a verdict per sample: 0/1 or true/false, as workbench "
                    f"execute writes it")


def outcomes_per_task(rows: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """Return task id -> ``(n, c)``: samples and passing samples, tasks in canonical order
    (:func:`workbench.data.task_order.canonical_order`), whatever the order of the rows: the
    bootstrap draws are per task number.

    Raises:
        DataError: a ``passed`` that is not a verdict (:func:`verdict`).
    """
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for number, row in enumerate(rows):
        entry = counts[str(row["task_id"])]
        entry[0] += 1
        entry[1] += verdict(row, number)
    return {task: (counts[task][0], counts[task][1]) for task in canonical_order(counts)}


def pass_at_k(rows: Iterable[Mapping[str, Any]], ks: Sequence[int] = DEFAULT_KS) -> PassAtKReport:
    """pass@k of execution result rows (``task_id``, ``passed``) for each k in ``ks``.

    A k larger than some task's number of samples is omitted with the reason (the estimator is
    undefined there), as is every k when there are no rows.

    Raises:
        ValueError: a k below 1.
        DataError: a ``passed`` that is not a verdict (:func:`verdict`).
    """
    from workbench.correlate.bootstrap import no_interval_reason  # numpy: not for importers of execute's config

    if any(k < 1 for k in ks):
        raise ValueError(f"pass@k needs k >= 1, got {sorted(ks)}")
    per_task = outcomes_per_task(rows)
    if not per_task:
        return PassAtKReport((), {k: "no results" for k in sorted(set(ks))}, None)
    sizes = [n for n, _ in per_task.values()]
    fewest = min(sizes)
    values, omitted = [], {}
    for k in sorted(set(ks)):
        if k > fewest:
            short = sum(1 for n in sizes if n < k)
            omitted[k] = (f"{short} of the {count(len(sizes), 'task')} {'has' if short == 1 else 'have'} fewer than "
                          f"{k} samples (min {fewest})")
            continue
        per_task_values = [pass_at_k_one_task(n, c, k) for n, c in per_task.values()]
        why = no_interval_reason(len(per_task_values), sum(sizes))
        if why is None and len(set(per_task_values)) == 1:
            why = "every task has the same value: nothing varies between resamples"
        low, high = (None, None) if why else _task_interval(per_task_values)
        values.append(PassAtK(k, math.fsum(per_task_values) / len(per_task_values), low, high, len(per_task_values), why))
    return PassAtKReport(tuple(values), omitted, (fewest, max(sizes)))


def _task_interval(values: list[float]) -> tuple[float, float]:
    """The 95 % percentile interval of the mean of per-task ``values`` over task resamples."""
    import numpy as np

    from workbench.correlate.bootstrap import (
        BootstrapSettings,
        percentile_interval,
        task_resample_counts,
    )

    settings = BootstrapSettings(n_resamples=BOOTSTRAP_RESAMPLES, confidence=0.95, seed=BOOTSTRAP_SEED)
    per_task = np.asarray(values, dtype=np.float64)
    counts = task_resample_counts(len(per_task), settings)  # (B, T): how often each task is drawn
    return percentile_interval(counts @ per_task / len(per_task), settings.confidence)
