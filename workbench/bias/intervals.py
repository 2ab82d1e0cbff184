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
    paired_p_value,
    percentile_interval,
    task_resample_counts,
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


def independent_resample_counts(n_units: int, settings: BootstrapSettings) -> np.ndarray:
    """Draws like :func:`~workbench.correlate.bootstrap.task_resample_counts`, from a stream
    independent of the seed's own: ``numpy.random.default_rng(numpy.random.SeedSequence(seed).spawn(1)[0])``
    (numpy's way to derive an independent stream from a seed). The second sample of an unpaired
    (two-sample) bootstrap: drawn from the seed's own stream, its counts would follow the first
    sample's draw for draw and the difference would not be that of independent samples.

    Returns:
        ``(B, n_units)`` float counts, rows summing to ``n_units``.
    """
    rng = np.random.default_rng(np.random.SeedSequence(settings.seed).spawn(1)[0])
    if n_units == 0:
        return np.zeros((settings.n_resamples, 0))
    return rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=settings.n_resamples).astype(np.float64)


def resampled_kendall(x: np.ndarray, y: np.ndarray, units: np.ndarray, drawn_units: np.ndarray,
                      counts: np.ndarray) -> np.ndarray:
    """Pooled Kendall tau-b of ``x`` with ``y`` in each resample of whole units.

    Args:
        x, y: ``(n,)`` the rows' values.
        units: ``(n,)`` each row's unit number.
        drawn_units: ``(U,)`` the unit numbers the draws are over, ascending (canonical order);
            every unit of ``units`` among them.
        counts: ``(B, U)`` how often each of them is drawn in each resample.

    Returns:
        ``(B,)`` tau-b per resample (NaN where undefined), computed as ``workbench correlate``
        computes its pooled tau-b resamples (:class:`~workbench.correlate.blocks.TaskBlocks`).
    """
    from workbench.correlate.blocks import TaskBlocks
    from workbench.correlate.direct import DirectTaskStatistics

    order = np.argsort(units, kind="stable")  # the blocks need each unit's rows together
    x, y, units = x[order], y[order], units[order]
    present, local = np.unique(units, return_inverse=True)
    engine = TaskBlocks if TaskBlocks.fits(x, y, len(present)) else DirectTaskStatistics
    blocks = engine.build(x, y, local)
    return blocks.resampled(counts[:, np.searchsorted(drawn_units, present)])["kendall"]


@dataclass(frozen=True)
class SettingDifference:
    """One statistic in setting ``a`` minus the same in setting ``b``, with its bootstrap interval.

    Attributes:
        a, b: the settings (the difference is a minus b).
        value: the difference of the two estimates (NaN when either is undefined).
        low, high: the percentile interval of the resampled differences (NaN when withheld).
        p_value: two-sided bootstrap p-value of "no difference"
            (:func:`~workbench.correlate.bootstrap.paired_p_value`'s formula on the resampled
            differences), NaN without an interval.
        paired: whether the two settings share units and were resampled on the same draws (over
            the units of either); ``False``: they share no unit, and each was resampled on its own
            independent draws (the two-sample bootstrap).
        n_units_a, n_units_b, n_units_shared: units (tasks or clusters) of each and of both.
        no_interval: why no interval is given, else ``None``.
    """

    a: str
    b: str
    value: float
    low: float
    high: float
    p_value: float
    paired: bool
    n_units_a: int
    n_units_b: int
    n_units_shared: int
    no_interval: str | None = None

    @property
    def spans_zero(self) -> bool | None:
        """Whether the interval contains 0 (:func:`~workbench.correlate.bootstrap.interval_contains_zero`)."""
        return interval_contains_zero(self.low, self.high)

    @property
    def pairing(self) -> str:
        """How the interval was made, in words."""
        if self.paired:
            return (f"paired: both settings on the same resampled units ({self.n_units_shared} shared of "
                    f"{self.n_units_a} and {self.n_units_b})")
        return ("unpaired: the settings share no unit, so each is resampled on its own independent draws "
                "(two-sample bootstrap)")

    def to_dict(self) -> dict:
        def clean(x: float) -> float | None:
            return None if math.isnan(x) else x

        return {"a": self.a, "b": self.b, "difference": clean(self.value), "ci": [clean(self.low), clean(self.high)],
                "p_value": clean(self.p_value), "not_distinguishable_from_0": self.spans_zero,
                "paired": self.paired, "pairing": self.pairing, "n_units_a": self.n_units_a,
                "n_units_b": self.n_units_b, "n_units_shared": self.n_units_shared,
                **({"no_interval": self.no_interval} if self.no_interval else {})}


def kendall_difference(x: np.ndarray, y: np.ndarray, units: np.ndarray, mask_a: np.ndarray, mask_b: np.ndarray,
                       names: tuple[str, str], estimates: tuple[Interval, Interval],
                       settings: BootstrapSettings) -> SettingDifference:
    """Kendall tau-b of ``x`` with ``y`` over ``mask_a`` minus the same over ``mask_b``, with a
    bootstrap interval over whole units.

    Paired when the two settings share a unit (all rows vs one row per cluster, clean vs
    contaminated rows of one task): the draws are over the units of either setting, numbered in
    canonical order, ``numpy.random.default_rng(seed).multinomial(U, [1/U] * U, size=B)`` as
    :func:`~workbench.correlate.bootstrap.task_resample_counts` draws them, and both tau-b are
    computed on each draw (Efron & Tibshirani 1993, section 16.4, the paired design); when both
    settings cover the same units these are exactly the draws of each setting's own interval.
    Unpaired when they share none (clean vs contaminated tasks): setting ``a`` on its own draws
    (those of its own interval) and ``b`` on :func:`independent_resample_counts` over its units,
    the two-sample bootstrap (Davison & Hinkley 1997, section 3.2; Efron & Tibshirani 1993,
    section 8.3). Either way: the percentile interval of the resampled differences and the
    two-sided p-value of :func:`~workbench.correlate.bootstrap.paired_p_value`.

    Args:
        x, y: ``(n,)`` the metric and the label (NaN rows are left out, as each setting's tau-b does).
        units: ``(n,)`` unit number of each row (canonical order).
        mask_a, mask_b: ``(n,)`` the rows of each setting.
        names: the two settings' names.
        estimates: each setting's tau-b with its interval (the value and the reason for no interval are taken from it).
        settings: resamples, confidence, seed.

    Returns:
        a :class:`SettingDifference`.
    """
    use_a, use_b = mask_a & ~np.isnan(x) & ~np.isnan(y), mask_b & ~np.isnan(x) & ~np.isnan(y)
    units_a, units_b = np.unique(units[use_a]), np.unique(units[use_b])
    shared = int(np.intersect1d(units_a, units_b).size)
    paired = shared > 0
    value = estimates[0].value - estimates[1].value
    nan = math.nan
    withheld = estimates[0].no_interval or estimates[1].no_interval
    if math.isnan(value) or withheld:
        reason = (f"{names[0]}: {estimates[0].no_interval}" if estimates[0].no_interval
                  else f"{names[1]}: {estimates[1].no_interval}" if estimates[1].no_interval
                  else "tau-b is undefined in a setting")
        return SettingDifference(*names, value, nan, nan, nan, paired, units_a.size, units_b.size, shared, reason)
    if paired:
        union = np.union1d(units_a, units_b)
        counts = task_resample_counts(union.size, settings)
        resampled = (resampled_kendall(x[use_a], y[use_a], units[use_a], union, counts)
                     - resampled_kendall(x[use_b], y[use_b], units[use_b], union, counts))
    else:
        resampled = (resampled_kendall(x[use_a], y[use_a], units[use_a], units_a, task_resample_counts(units_a.size, settings))
                     - resampled_kendall(x[use_b], y[use_b], units[use_b], units_b,
                                         independent_resample_counts(units_b.size, settings)))
    low, high = percentile_interval(resampled, settings.confidence)
    return SettingDifference(*names, value, low, high, paired_p_value(resampled), paired, units_a.size, units_b.size,
                             shared)
