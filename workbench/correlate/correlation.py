"""Point estimates: pooled correlations from scipy, per-problem correlations averaged over tasks.

Definitions follow ICE-Score (Zhuo 2024, section 4 and ``compute_results.ipynb``):
*pooled* ("corpus level") is one correlation over all samples; *per-problem* ("example level")
correlates the metric with the label within each task and takes the mean over the tasks where
that correlation is defined (scipy gives NaN for a task whose metric or label is constant;
numpy's ``nanmean`` then skips it). Kendall's tau is tau-b (Kendall 1945, the tie-corrected form
that ``scipy.stats.kendalltau`` computes by default), never tau-a.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from scipy import stats

#: the three coefficients, in report order
COEFFICIENTS: tuple[str, ...] = ("kendall", "pearson", "spearman")


class WithinTaskStatistics(Protocol):
    """What :func:`per_problem_correlations` reads of a metric's rows grouped by task: met by
    :class:`~workbench.correlate.blocks.TaskBlocks` and by its direct-resampling stand-in for huge
    inputs, :class:`~workbench.correlate.direct.DirectTaskStatistics`.

    Attributes:
        sizes: ``(T,)`` rows per task.
    """

    sizes: np.ndarray

    def per_task(self) -> dict[str, np.ndarray]:
        """Within-task statistics: ``"kendall"``, ``"pearson"``, ``"spearman"`` -> ``(T,)`` values
        (NaN where undefined); ``"constant_x"``, ``"constant_y"`` -> ``(T,)`` bools, True where the
        task's metric (x) or label (y) is constant."""
        ...


def _scipy_statistic(function, x: np.ndarray, y: np.ndarray, **options) -> float:
    """``function(x, y, **options).statistic`` as a float; NaN for fewer than two values, and
    without scipy's warning for constant input (the statistic is then NaN too)."""
    if len(x) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)
        return float(function(x, y, **options).statistic)


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b of two equal-length arrays (``scipy.stats.kendalltau``, variant ``"b"``).

    Returns:
        tau-b in [-1, 1]; NaN when either array is constant or has fewer than two values.
    """
    return _scipy_statistic(stats.kendalltau, x, y, variant="b")


def pearson_r(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r (``scipy.stats.pearsonr``); NaN for constant input or fewer than two values."""
    return _scipy_statistic(stats.pearsonr, x, y)


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho with average ranks for ties (``scipy.stats.spearmanr``); NaN for constant input."""
    return _scipy_statistic(stats.spearmanr, x, y)


def pooled_correlations(x: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Kendall tau-b, Pearson r and Spearman rho over all samples, from scipy.

    Args:
        x: ``(n,)`` metric values; y: ``(n,)`` labels.

    Returns:
        ``{"kendall", "pearson", "spearman"}`` -> value (NaN when undefined).
    """
    return {"kendall": kendall_tau_b(x, y), "pearson": pearson_r(x, y), "spearman": spearman_rho(x, y)}


@dataclass(frozen=True)
class PerProblem:
    """Within-task correlations of one metric.

    Attributes:
        values: coefficient -> ``(T,)`` per-task values, NaN where undefined.
        defined: ``(T,)`` True where the task's correlations are defined (>= 2 samples,
            neither metric nor label constant); the same tasks for all three coefficients.
        single_sample: tasks excluded because they have one sample.
        constant_label: tasks excluded because every sample has the same label.
        constant_metric: tasks excluded because the metric is constant (label not constant).
    """

    values: dict[str, np.ndarray]
    defined: np.ndarray
    single_sample: int
    constant_label: int
    constant_metric: int

    def means(self) -> dict[str, float]:
        """The per-problem correlations: the mean over tasks where they are defined (nanmean)."""
        if not self.defined.any():
            return {name: float("nan") for name in self.values}
        return {name: float(np.mean(values[self.defined])) for name, values in self.values.items()}

    @property
    def n_tasks(self) -> int:
        """Tasks that enter the mean."""
        return int(self.defined.sum())


def per_problem_correlations(blocks: WithinTaskStatistics) -> PerProblem:
    """Kendall tau-b, Pearson r and Spearman rho within each task.

    Computed together from :class:`~workbench.correlate.blocks.TaskBlocks` (one pass instead of
    ``3 T`` scipy calls); the test suite checks them against ``scipy.stats`` task by task.

    Args:
        blocks: the metric's task blocks (or their direct-resampling stand-in for huge inputs;
            :class:`WithinTaskStatistics`).

    Returns:
        a :class:`PerProblem`.
    """
    within = blocks.per_task()
    single = blocks.sizes < 2
    constant_label = within["constant_y"] & ~single
    constant_metric = within["constant_x"] & ~within["constant_y"] & ~single
    values = {name: within[name] for name in COEFFICIENTS}
    defined = ~(single | within["constant_y"] | within["constant_x"])
    return PerProblem(values, defined, int(single.sum()), int(constant_label.sum()), int(constant_metric.sum()))
