"""Resample statistics the direct way: build every resample and ask scipy.

Used when the task-block matrices of :mod:`workbench.correlate.blocks` would not fit in memory
(they hold ``tasks x rows`` cells, e.g. thousands of tasks with many samples each). Slower
(``O(B N log N)`` instead of matrix products) but with no size limit beyond the data itself.
Same interface as :class:`~workbench.correlate.blocks.TaskBlocks`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workbench.correlate.correlation import kendall_tau_b, pearson_r, spearman_rho


@dataclass(frozen=True)
class DirectTaskStatistics:
    """Rows grouped by task, and the statistics of resamples of whole tasks.

    Attributes:
        x: ``(n,)`` metric values; y: ``(n,)`` labels.
        row_task: ``(n,)`` task index ``0..T-1``, non-decreasing.
        sizes: ``(T,)`` rows per task.
    """

    x: np.ndarray
    y: np.ndarray
    row_task: np.ndarray
    sizes: np.ndarray

    @classmethod
    def build(cls, x: np.ndarray, y: np.ndarray, row_task: np.ndarray) -> DirectTaskStatistics:
        """Wrap the arrays (same contract as :meth:`TaskBlocks.build`)."""
        row_task = np.asarray(row_task, dtype=np.int64)
        return cls(np.asarray(x, float), np.asarray(y, float), row_task, np.bincount(row_task).astype(float))

    @property
    def n_tasks(self) -> int:
        return len(self.sizes)

    def _starts(self) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)

    def resampled(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """Pooled coefficients per resample (see :meth:`TaskBlocks.resampled`)."""
        counts = np.atleast_2d(counts)
        starts, sizes = self._starts(), self.sizes.astype(np.int64)
        out = {name: np.empty(len(counts)) for name in ("kendall", "pearson", "spearman")}
        for b, drawn in enumerate(counts.astype(np.int64)):
            tasks = np.repeat(np.arange(self.n_tasks), drawn)
            rows = np.concatenate([np.arange(starts[t], starts[t] + sizes[t]) for t in tasks]) if len(tasks) else np.zeros(0, int)
            x, y = self.x[rows], self.y[rows]
            out["kendall"][b] = kendall_tau_b(x, y)
            out["pearson"][b] = pearson_r(x, y)
            out["spearman"][b] = spearman_rho(x, y)
        return out

    def per_task(self) -> dict[str, np.ndarray]:
        """Within-task coefficients (see :meth:`TaskBlocks.per_task`)."""
        starts, sizes = self._starts(), self.sizes.astype(np.int64)
        out = {name: np.full(self.n_tasks, np.nan) for name in ("kendall", "pearson", "spearman")}
        constant_x = np.zeros(self.n_tasks, dtype=bool)
        constant_y = np.zeros(self.n_tasks, dtype=bool)
        for t in range(self.n_tasks):
            x, y = self.x[starts[t] : starts[t] + sizes[t]], self.y[starts[t] : starts[t] + sizes[t]]
            constant_x[t], constant_y[t] = np.all(x == x[0]), np.all(y == y[0])
            if not (constant_x[t] or constant_y[t]):
                out["kendall"][t], out["pearson"][t], out["spearman"][t] = kendall_tau_b(x, y), pearson_r(x, y), spearman_rho(x, y)
        return {**out, "constant_x": constant_x, "constant_y": constant_y}
