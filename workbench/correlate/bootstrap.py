"""Task-level (cluster) bootstrap: resample whole tasks, never single rows.

Samples of one task share a problem and are not independent, so a row bootstrap would make the
intervals too narrow; resampling tasks with replacement is the cluster bootstrap (Davison &
Hinkley 1997, "Bootstrap Methods and their Application", section 3.8). Intervals are percentile
intervals (Efron & Tibshirani 1993, "An Introduction to the Bootstrap", chapter 13).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.formatting import count

#: default number of bootstrap resamples
DEFAULT_RESAMPLES = 1000
#: default confidence level of the intervals
DEFAULT_CONFIDENCE = 0.95


#: the fewest tasks an interval is given from. The bootstrap resamples whole tasks, so k tasks
#: give only C(2k-1, k) distinct resamples (k = 1: 1, 2: 3, 3: 10, 4: 35, 5: 126, 10: 92,378)
#: and, from fewer than 5, the 2.5th and 97.5th percentiles of 1,000 resamples fall on a handful
#: of values whatever the level asked; the cluster bootstrap needs several clusters (Davison &
#: Hinkley 1997, section 3.8) and undercovers with few of them (Cameron, Gelbach & Miller 2008,
#: "Bootstrap-Based Improvements for Inference with Clustered Errors", REStat 90(3), section IV)
MIN_INTERVAL_TASKS = 5
#: the fewest samples an interval is given from: below this the percentile interval's coverage
#: is far from its level (Efron & Tibshirani 1993, section 13.5; Davison & Hinkley 1997, section 5.3)
MIN_INTERVAL_SAMPLES = 10


def no_interval_reason(n_tasks: int, n_samples: int) -> str | None:
    """Why no interval is given for a statistic from ``n_tasks`` tasks and ``n_samples`` samples,
    or ``None`` when one is (:data:`MIN_INTERVAL_TASKS`, :data:`MIN_INTERVAL_SAMPLES`).

    Example:

    >>> no_interval_reason(1, 20)
    'only 1 task contributes (an interval needs at least 5: the task bootstrap has too few distinct resamples)'
    >>> no_interval_reason(5, 20) is None
    True
    """
    if n_tasks < MIN_INTERVAL_TASKS:
        word = "task contributes" if n_tasks == 1 else "tasks contribute"
        return (f"only {n_tasks} {word} (an interval needs at least {MIN_INTERVAL_TASKS}: the task "
                "bootstrap has too few distinct resamples)")
    if n_samples < MIN_INTERVAL_SAMPLES:
        return f"only {count(n_samples, 'sample')} (an interval needs at least {MIN_INTERVAL_SAMPLES})"
    return None


def min_resamples(confidence: float) -> int:
    """The fewest resamples a percentile interval at ``confidence`` is made from: its bounds are the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the resamples, so each tail
    must hold at least one resample, ``B (1 - confidence) / 2 >= 1``. With fewer the bounds are
    the smallest and largest resample, whatever the level asked (one resample: a zero-width
    "interval"). A floor, not a recommendation: Efron & Tibshirani (1993, section 19.3) ask for
    about 1,000 resamples for percentile intervals.

    >>> min_resamples(0.95), min_resamples(0.9), min_resamples(0.99)
    (40, 20, 200)
    """
    return math.ceil(round(2.0 / (1.0 - confidence), 6))


def resamples_problem(n_resamples: int, confidence: float) -> str | None:
    """Why ``n_resamples`` resamples are too few for a percentile interval at ``confidence``
    (:func:`min_resamples`), or ``None`` when they are enough."""
    floor = min_resamples(confidence)
    if n_resamples >= floor:
        return None
    return (f"{count(n_resamples, 'resample')} {'is' if n_resamples == 1 else 'are'} too few for a {100 * confidence:g}% percentile interval: each tail needs at "
            f"least one resample beyond its bound, so at least {floor} (1,000 or more recommended); with fewer the "
            "interval is just the range of the resamples")


@dataclass(frozen=True)
class BootstrapSettings:
    """How the intervals were made.

    Attributes:
        n_resamples: bootstrap resamples (>= 1). The commands (``CorrelateConfig``,
            ``BiasConfig``) refuse fewer than :func:`min_resamples` (40 at 95%); the engine
            takes fewer, for tests of the resampling itself.
        confidence: interval level in (0, 1), e.g. 0.95.
        seed: the seed of ``numpy.random.default_rng`` that drew the resamples.
    """

    n_resamples: int = DEFAULT_RESAMPLES
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = 0

    def __post_init__(self) -> None:
        if self.n_resamples < 1:
            raise ValueError(f"n_resamples must be at least 1, got {self.n_resamples}")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence must be between 0 and 1 (e.g. 0.95), got {self.confidence}")

    def to_dict(self) -> dict:
        return {
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            "seed": self.seed,
            "unit": "task",
            "interval": "percentile",
        }


def task_resample_counts(n_tasks: int, settings: BootstrapSettings) -> np.ndarray:
    """Draw the resamples: each draws ``n_tasks`` tasks with replacement.

    Args:
        n_tasks: number of tasks ``T``.
        settings: resample count and seed.

    Returns:
        ``(B, T)`` float array, how often each task is in each resample (rows sum to ``T``).
        Column ``j`` is task ``j`` in the canonical order of :mod:`workbench.data.task_order`
        (correlate, bias and pass@k number tasks so), so the draws do not depend on row order.
    """
    rng = np.random.default_rng(settings.seed)
    if n_tasks == 0:
        return np.zeros((settings.n_resamples, 0))
    # a multinomial draw of T with equal probabilities is T draws with replacement, counted
    counts = rng.multinomial(n_tasks, np.full(n_tasks, 1.0 / n_tasks), size=settings.n_resamples)
    return counts.astype(np.float64)


def percentile_interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    """The percentile interval of the defined (non-NaN) bootstrap values.

    Args:
        samples: ``(B,)`` statistic per resample; NaN marks a resample where it is undefined.
        confidence: e.g. 0.95 for the 2.5th and 97.5th percentiles.

    Returns:
        ``(low, high)``; ``(nan, nan)`` when no resample is defined.
    """
    defined = samples[~np.isnan(samples)]
    if defined.size == 0:
        return float("nan"), float("nan")
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(defined, [tail, 100.0 - tail])
    return float(low), float(high)


def interval_contains_zero(low: float | None, high: float | None) -> bool | None:
    """Whether the interval ``[low, high]`` contains 0, bounds included: the estimate is then *not
    distinguishable from 0* at the interval's level (marked ``≈0``). One rule for every table
    and report: correlate's coefficients and paired differences, bias's means and Δ%, the run
    report. ``None`` when a bound is missing or not finite (no interval).

    Example:

    >>> interval_contains_zero(-0.09, 0.0), interval_contains_zero(0.01, 0.2), interval_contains_zero(None, 0.1)
    (True, False, None)
    """
    bounds = (low, high)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in bounds):
        return None
    return bool(low <= 0.0 <= high)


#: how far (absolute) an estimate may lie outside its interval by floating-point rounding alone
#: (coefficients and their differences are at most 2 in magnitude; double rounding is ~1e-15)
ROUNDING_TOLERANCE = 1e-9


def estimate_outside_interval(value: float, low: float | None, high: float | None) -> bool | None:
    """Whether a point estimate lies outside its own bootstrap interval; ``None`` when the value or
    a bound is missing or not finite.

    The task bootstrap of a pair statistic (Kendall tau-b, Spearman rho) pairs a task drawn twice
    with its own copy, so it weighs within-task pairs about twice as much as the data do (Davison
    & Hinkley 1997, section 3.8, on the bias of the cluster bootstrap). Where the statistic hardly
    varies between samples of tasks, e.g. nearly separated data with ties, that shift exceeds the
    spread of the resamples and the percentile interval can miss the estimate (a probe found
    chrF tau-b .834 with interval [.839, .868] on 8 tasks with one exact copy of the reference
    each). In the realistic designs of ``benchmarks/bootstrap_coverage.py`` the interval covers at
    its level and always holds the estimate; where it does not, this flag says the interval is
    not to be trusted.

    >>> estimate_outside_interval(0.834, 0.839, 0.868), estimate_outside_interval(0.5, 0.4, 0.6)
    (True, False)
    >>> estimate_outside_interval(0.5, float("nan"), float("nan")) is None
    True

    Differences below :data:`ROUNDING_TOLERANCE` do not count: the estimate (scipy) and the
    resamples (task-block sums) are computed in different orders, so a metric equal to the label
    gives Pearson 0.9999999999999983 against an interval [1.0, 1.0].

    >>> estimate_outside_interval(0.9999999999999983, 1.0, 1.0)
    False
    """
    numbers = (value, low, high)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in numbers):
        return None
    return bool(value < low - ROUNDING_TOLERANCE or value > high + ROUNDING_TOLERANCE)


def paired_p_value(differences: np.ndarray) -> float:
    """Two-sided bootstrap p-value of "no difference" for paired resampled differences.

    Twice the share of resamples on the far side of zero, with the ``+1`` correction so a
    finite number of resamples never gives p = 0 (Davison & Hinkley 1997, section 4.4;
    the percentile-interval inversion of Efron & Tibshirani 1993, chapter 16).

    Args:
        differences: ``(B,)`` statistic of A minus statistic of B per resample (NaN skipped).

    Returns:
        p in (0, 1]; NaN when no resample is defined.
    """
    defined = differences[~np.isnan(differences)]
    if defined.size == 0:
        return float("nan")
    below = np.count_nonzero(defined <= 0.0)
    above = np.count_nonzero(defined >= 0.0)
    return float(min(1.0, 2.0 * (min(below, above) + 1) / (defined.size + 1)))


def resampled_task_mean(counts: np.ndarray, values: np.ndarray, defined: np.ndarray) -> np.ndarray:
    """Mean of per-task values in each resample, over the drawn tasks where they are defined.

    Args:
        counts: ``(B, T)`` resample counts.
        values: ``(T,)`` per-task statistic (NaN where undefined).
        defined: ``(T,)`` boolean.

    Returns:
        ``(B,)``; NaN for a resample that drew no defined task.
    """
    filled = np.where(defined, values, 0.0)
    weight = counts @ defined.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = (counts @ filled) / weight
    means[weight == 0] = np.nan
    return means
