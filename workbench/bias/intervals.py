"""Bootstrap intervals of a metric's mean in each setting, and of the difference between two.

The resampling unit is a task (rows of one problem are not independent) or a duplicate cluster
(a row outside any cluster is its own unit): whole units are drawn with replacement, as
:mod:`workbench.correlate.bootstrap` does for tasks (Davison & Hinkley 1997, Sec. 3.8), with
its draws and percentile intervals. A cluster's rows are drawn together, so the row a setting
keeps for a cluster stays that cluster's row in every resample. All settings are computed on
the same draws, so a difference between two settings is paired.

A cluster bootstrap of a large corpus has as many units as rows outside clusters: the ``(B, U)``
resample counts are kept one byte per cell (the counts of :func:`task_resample_counts`, drawn and
multiplied a block of resamples at a time), so 1,000 resamples of a million units take about 1 GB,
not the 16 GB of two dense 64-bit copies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from workbench.correlate.bootstrap import (
    BootstrapSettings,
    interval_contains_zero,
    no_interval_reason,
    percentile_interval,
)
from workbench.data.task_order import canonical_codes

#: cells of the dense 64-bit block a draw or a product works on at a time (32 MB)
BLOCK_CELLS = 4_000_000


def compact_resample_counts(n_units: int, settings: BootstrapSettings) -> np.ndarray:
    """The draws of :func:`workbench.correlate.bootstrap.task_resample_counts` (the same
    generator, seed and order), stored in the smallest unsigned integer type that holds them.

    Args:
        n_units: number of units ``U``.
        settings: resample count ``B`` and seed.

    Returns:
        ``(B, U)`` unsigned integer counts (``uint8`` unless a unit is drawn more than 255 times).

    Example:

    >>> from workbench.correlate.bootstrap import task_resample_counts
    >>> settings = BootstrapSettings(n_resamples=50, seed=3)
    >>> counts = compact_resample_counts(1000, settings)
    >>> counts.dtype.name, bool((counts == task_resample_counts(1000, settings)).all())
    ('uint8', True)
    """
    counts = np.zeros((settings.n_resamples, n_units), dtype=np.uint8)
    if n_units == 0:
        return counts
    rng = np.random.default_rng(settings.seed)
    probabilities = np.full(n_units, 1.0 / n_units)
    block = max(1, BLOCK_CELLS // n_units)
    for start in range(0, settings.n_resamples, block):
        # successive draws of one generator continue one stream: equal to one draw of all rows
        drawn = rng.multinomial(n_units, probabilities, size=min(block, settings.n_resamples - start))
        if drawn.max() > np.iinfo(counts.dtype).max:
            counts = counts.astype(np.uint32)
        counts[start:start + len(drawn)] = drawn
    return counts


@dataclass(frozen=True)
class Interval:
    """A value with its bootstrap interval.

    Attributes:
        value: the estimate on the data (NaN when undefined).
        low, high: the percentile interval (NaN when withheld or undefined).
        n_rows: rows behind the value; n_units: tasks or clusters they come from.
        no_interval: why no interval is given (too few units or rows), else ``None``.

    Its JSON (:meth:`to_dict`) holds ``not_distinguishable_from_0`` (:attr:`spans_zero`), as
    correlate's JSON does per coefficient.
    """

    value: float
    low: float
    high: float
    n_rows: int
    n_units: int
    no_interval: str | None = None

    @property
    def spans_zero(self) -> bool | None:
        """Whether the interval contains 0 (bounds included): the value is *not distinguishable
        from 0*, marked ``≈0``, by the rule correlate's tables use
        (:func:`~workbench.correlate.bootstrap.interval_contains_zero`); ``None`` without an interval."""
        return interval_contains_zero(self.low, self.high)

    def to_dict(self) -> dict:
        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {"value": clean(self.value), "ci": [clean(self.low), clean(self.high)], "n_rows": self.n_rows,
                "n_units": self.n_units, "not_distinguishable_from_0": self.spans_zero,
                **({"no_interval": self.no_interval} if self.no_interval else {})}


class UnitBootstrap:
    """Resampled means over units, shared by every setting and metric of one analysis.

    Args:
        units: ``(n,)`` unit index of each row, in ``0 .. U-1``.
        settings: resamples, confidence and seed.

    Example:

    >>> import numpy as np
    >>> boot = UnitBootstrap(np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9]), BootstrapSettings(n_resamples=200))
    >>> values = np.array([1, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0], dtype=float)
    >>> round(boot.mean(values, np.ones(11, bool)).value, 4)
    0.5455
    """

    def __init__(self, units: np.ndarray, settings: BootstrapSettings):
        self.units = np.asarray(units, dtype=np.int64)
        self.n_units = int(self.units.max()) + 1 if self.units.size else 0
        self.settings = settings
        self.counts = compact_resample_counts(self.n_units, settings)  # (B, U), compact

    def _times(self, vector: np.ndarray) -> np.ndarray:
        """``(B,)`` = counts ``(B, U)`` @ ``vector`` ``(U,)``, a block of resamples at a time."""
        out = np.empty(self.counts.shape[0], dtype=np.float64)
        block = max(1, BLOCK_CELLS // max(1, self.n_units))
        for start in range(0, len(out), block):
            out[start:start + block] = self.counts[start:start + block].astype(np.float64) @ vector
        return out

    def _per_unit(self, values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sums = np.bincount(self.units[mask], weights=values[mask], minlength=self.n_units)
        sizes = np.bincount(self.units[mask], minlength=self.n_units).astype(np.float64)
        return sums, sizes

    def resampled_means(self, values: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``(B,)`` the mean of ``values`` over the masked rows of each resample (NaN: no row drawn)."""
        sums, sizes = self._per_unit(values, mask)
        weight = self._times(sizes)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = self._times(sums) / weight
        means[weight == 0] = np.nan
        return means

    def _reason(self, mask: np.ndarray) -> tuple[int, int, str | None]:
        n_rows = int(mask.sum())
        n_units = int(np.unique(self.units[mask]).size)
        return n_rows, n_units, no_interval_reason(n_units, n_rows)

    def mean(self, values: np.ndarray, mask: np.ndarray) -> Interval:
        """The mean of ``values`` over ``mask`` with its interval."""
        n_rows, n_units, reason = self._reason(mask)
        value = float(values[mask].mean()) if n_rows else math.nan
        low = high = math.nan
        if reason is None:
            low, high = percentile_interval(self.resampled_means(values, mask), self.settings.confidence)
        return Interval(value, low, high, n_rows, n_units, reason if n_rows else "no rows")

    def task_mean(self, values: np.ndarray, mask: np.ndarray) -> Interval:
        """The mean over units of each unit's mean over ``mask`` (a task-level bootstrap: with 0/1
        values and tasks as units, pass@1 as Chen et al. 2021 average it, each task counting once
        however many of its rows a setting keeps), with its interval."""
        n_rows, n_units, reason = self._reason(mask)
        sums, sizes = self._per_unit(values, mask)
        defined = sizes > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            per_unit = np.where(defined, sums / np.where(defined, sizes, 1.0), np.nan)
        value = float(per_unit[defined].mean()) if defined.any() else math.nan
        low = high = math.nan
        if reason is None:
            # resampled_task_mean of workbench.correlate.bootstrap, on the compact counts
            weight = self._times(defined.astype(np.float64))
            with np.errstate(invalid="ignore", divide="ignore"):
                resampled = self._times(np.where(defined, per_unit, 0.0)) / weight
            resampled[weight == 0] = np.nan
            low, high = percentile_interval(resampled, self.settings.confidence)
        return Interval(value, low, high, n_rows, n_units, reason if n_rows else "no rows")

    def relative_difference(self, values: np.ndarray, biased: np.ndarray, unbiased: np.ndarray) -> Interval:
        """``100 (mean over biased - mean over unbiased) / |mean over unbiased|`` with a paired
        interval (both means on the same resampled units); n counts the rows of either set."""
        from workbench.bias.settings import relative_difference

        either = biased | unbiased
        n_rows, n_units, reason = self._reason(either)
        a = float(values[biased].mean()) if biased.any() else math.nan
        b = float(values[unbiased].mean()) if unbiased.any() else math.nan
        value = relative_difference(a, b)
        low = high = math.nan
        if reason is None and not math.isnan(value):
            ra, rb = self.resampled_means(values, biased), self.resampled_means(values, unbiased)
            with np.errstate(invalid="ignore", divide="ignore"):
                resampled = 100.0 * (ra - rb) / np.abs(rb)
            resampled[~np.isfinite(resampled)] = np.nan
            low, high = percentile_interval(resampled, self.settings.confidence)
        return Interval(value, low, high, n_rows, n_units, reason)


def unit_indices(labels: list) -> np.ndarray:
    """``(n,)`` index of each row's unit label (a task id, or a cluster's key), units numbered in
    canonical order (:func:`workbench.data.task_order.canonical_codes`), whatever the order of
    the rows: the draws are per unit number, so a shuffled table gives the same intervals.

    >>> unit_indices(["HumanEval/10", "HumanEval/2", "HumanEval/10"]).tolist()
    [1, 0, 1]
    """
    return np.array(canonical_codes(labels)[1], dtype=np.int64)
