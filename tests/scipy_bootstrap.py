"""An independent task bootstrap from numpy and scipy alone, for the tests that recompute what
``workbench correlate`` and ``workbench bias`` print (tests/correlate/test_scipy_crosscheck.py,
tests/correlate/test_dedup_difference.py, tests/bias/test_tau_differences.py).

Nothing here calls workbench's statistics: each resample is built the slow, obvious way (the rows
of every drawn unit, repeated as often as the unit was drawn) and handed to
``scipy.stats.kendalltau`` (tau-b), ``pearsonr`` and ``spearmanr``. The definitions are the ones
docs/correlate.md and docs/bias.md state:

* the draws: ``generator.multinomial(U, [1/U] * U, size=B)`` over the units (tasks, clusters) in
  natural order of their ids (:func:`natural_order`: HumanEval/2 before HumanEval/10);
* pooled: one coefficient over the rows of every drawn unit; per problem: the draw-weighted mean
  of the within-task coefficients where they are defined (ICE-Score's ``nanmean``);
* the interval: the percentile interval (``numpy.percentile`` at (1 - c)/2 and (1 + c)/2);
* the paired comparison's two-sided p-value ``min(1, 2 (min(#{d* <= 0}, #{d* >= 0}) + 1) / (B + 1))``.
"""

from __future__ import annotations

import csv
import warnings
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy import stats

COEFFICIENTS = ("kendall", "pearson", "spearman")
LEVELS = ("pooled", "per_problem")


def natural_order(task_ids: Iterable[str]) -> list[str]:
    """The distinct ids ``PREFIX/N`` sorted by their number ``N`` (HumanEval/2 before HumanEval/10)."""
    return sorted(set(task_ids), key=lambda t: int(t.rsplit("/", 1)[1]))


def kept_rows(dedup_output: Path, rows: Sequence[Mapping]) -> np.ndarray:
    """One bool a row of ``rows`` (dicts with ``task_id`` and ``sample_id``): True where the row's id
    ``"{task_id}:{sample_id}"`` is not in the dedup output's ``removed.csv``, i.e. the row its cluster
    kept or a row without duplicates (one row per cluster)."""
    with open(dedup_output / "removed.csv", newline="") as handle:
        removed = {row["id"] for row in csv.DictReader(handle)}
    return np.array([f"{row['task_id']}:{row['sample_id']}" not in removed for row in rows])


def task_units(rows: Sequence[Mapping]) -> tuple[list[str], np.ndarray]:
    """The distinct ``task_id`` of ``rows`` in :func:`natural_order`, and each row's index in that list."""
    order = natural_order(row["task_id"] for row in rows)
    return order, np.array([order.index(row["task_id"]) for row in rows])


def draws(n_units: int, resamples: int, generator: np.random.Generator) -> np.ndarray:
    """``resamples`` x ``n_units`` counts: how often each unit is drawn in each resample."""
    return generator.multinomial(n_units, np.full(n_units, 1 / n_units), size=resamples)


def drawn_rows(unit_rows: list[np.ndarray], draw: np.ndarray) -> np.ndarray:
    """The row indices of one resample: unit ``j``'s rows, repeated ``draw[j]`` times, in unit order."""
    return np.concatenate([unit_rows[j] for j in range(len(unit_rows)) for _ in range(draw[j])])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """``scipy.stats.kendalltau(x, y, variant="b")``, its warnings on constant input silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.kendalltau(x, y, variant="b").statistic)


def coefficients(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Kendall tau-b, Pearson r and Spearman rho of ``x`` and ``y``; NaN for fewer than two rows
    or a constant side."""
    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return dict.fromkeys(COEFFICIENTS, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"kendall": stats.kendalltau(x, y, variant="b").statistic, "pearson": stats.pearsonr(x, y).statistic,
                "spearman": stats.spearmanr(x, y).statistic}


def resampled_tau(x: np.ndarray, y: np.ndarray, unit_rows: list[np.ndarray], counts: np.ndarray) -> np.ndarray:
    """Kendall tau-b of every resample of ``counts`` (NaN where a resample has no row)."""
    out = []
    for draw in counts:
        rows = drawn_rows(unit_rows, draw)
        out.append(kendall_tau_b(x[rows], y[rows]) if rows.size else np.nan)
    return np.array(out)


class TaskBootstrap:
    """Point values and resamples of the three coefficients of one metric ``x`` against the label
    ``y``, at both levels.

    Args:
        x, y: the metric and the label, one value a row.
        task_rows: ``task_rows[t]``: the indices of the rows of task ``t`` that take part.
        counts: the draws (:func:`draws`), one column a task.

    Attributes:
        point: level -> coefficient -> value on all of ``task_rows``.
        resampled: level -> coefficient -> array of one value a resample.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, task_rows: list[np.ndarray], counts: np.ndarray):
        self.within = {c: np.array([coefficients(x[r], y[r])[c] for r in task_rows]) for c in COEFFICIENTS}
        every = np.concatenate(task_rows)
        self.point = {"pooled": coefficients(x[every], y[every]), "per_problem": self._per_problem(np.ones(len(task_rows)))}
        self.resampled = {level: {c: [] for c in COEFFICIENTS} for level in LEVELS}
        for draw in counts:
            drawn = drawn_rows(task_rows, draw)
            pooled, per_problem = coefficients(x[drawn], y[drawn]), self._per_problem(draw.astype(float))
            for c in COEFFICIENTS:
                self.resampled["pooled"][c].append(pooled[c])
                self.resampled["per_problem"][c].append(per_problem[c])
        self.resampled = {level: {c: np.array(v) for c, v in by.items()} for level, by in self.resampled.items()}

    def _per_problem(self, weights: np.ndarray) -> dict[str, float]:
        out = {}
        for c in COEFFICIENTS:
            defined = ~np.isnan(self.within[c]) & (weights > 0)
            out[c] = float(np.sum(weights[defined] * self.within[c][defined]) / np.sum(weights[defined])) if defined.any() else np.nan
        return out


def percentile_interval(values: np.ndarray, confidence: float) -> list[float]:
    """The percentile interval of the resamples that are not NaN, as ``[low, high]``."""
    tail = (1 - confidence) / 2 * 100
    return list(np.percentile(values[~np.isnan(values)], [tail, 100 - tail]))


def p_value(differences: np.ndarray) -> float:
    """The two-sided bootstrap p-value of resampled differences (NaN left out)."""
    d = differences[~np.isnan(differences)]
    return min(1.0, 2 * (min(np.sum(d <= 0), np.sum(d >= 0)) + 1) / (len(d) + 1))
