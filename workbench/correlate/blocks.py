"""Task-block sufficient statistics: Kendall tau-b, Pearson r and Spearman rho of any resample
of whole tasks, without re-sorting or re-ranking the data for each resample.

A task-level bootstrap resample is a vector ``w`` of how many times each task was drawn. Every
statistic here is then a small function of ``w``:

* Kendall tau-b (Kendall 1945; the tie-corrected form scipy's ``kendalltau`` computes) is
  ``w'Cw / sqrt((N^2 - w'Xw) (N^2 - w'Yw))`` with ``N = w'n``, where ``C[t, u]`` sums
  ``sign(x_i - x_j) sign(y_i - y_j)`` over rows ``i`` of task ``t`` and ``j`` of task ``u``, and
  ``X[t, u]`` / ``Y[t, u]`` count the pairs tied in ``x`` / ``y`` (self-pairs included). Copies of
  one task contribute ``w_t^2`` times its own block because a row never disagrees with its copy.
* Pearson r uses per-task sums of ``x, y, x^2, y^2, xy``, which add up linearly in ``w``.
* Spearman rho is Pearson r of average ranks. The average rank of row ``i`` in the resample is
  ``0.5 + sum_u w_u (less_u(i) + equal_u(i) / 2)``, where ``less_u(i)`` / ``equal_u(i)`` count the
  rows of task ``u`` below / equal to ``x_i``: one matrix product per resample batch.

The concordance matrix comes from per-(task, label value) histograms when the label has few
values (0/1, pass ratios), else from all row pairs in chunks; either way once per metric, and the
bootstrap is then matrix algebra. The matrices hold ``T x n`` cells: past
:data:`MAX_TASK_ROW_CELLS` the caller switches to :mod:`workbench.correlate.direct`.
``tests/correlate/test_stats.py`` checks every value against scipy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: pair comparisons held in memory at once while building the concordance matrix
_PAIR_CHUNK = 4_000_000
#: resample-by-row cells held in memory at once for the Spearman ranks
_RANK_CHUNK = 4_000_000
#: above this many task x row cells the block matrices get too big; use direct resampling instead
MAX_TASK_ROW_CELLS = 8_000_000
#: above this many rows the all-pairs concordance (for labels with many values) gets too slow
MAX_PAIR_ROWS = 40_000
#: labels with at most this many distinct values get their resampled ranks from level counts
_FEW_LEVELS = 64


@dataclass(frozen=True)
class TaskBlocks:
    """Per-task statistics of one (metric, label) pair.

    Rows must be grouped by task (all rows of a task consecutive).

    Attributes:
        sizes: ``(T,)`` rows per task.
        concordance: ``(T, T)`` summed concordance signs between tasks (``C`` above).
        ties_x, ties_y: ``(T, T)`` tied pairs between tasks, self-pairs included.
        rank_x, rank_y: ``(T, n)`` ``less_u(i) + equal_u(i) / 2`` for task ``u`` and row ``i``.
        sums: ``(T, 5)`` per-task sums of ``x, y, x^2, y^2, xy`` of the centred values.
        row_task: ``(n,)`` task index of each row.
        x, y: the row values.
        label_level_counts: ``(T, L)`` rows per task at each distinct label value, when the label
            has few values (0/1, pass ratios); then a resample's label ranks follow from
            ``w @ label_level_counts`` alone. ``None`` otherwise.
        label_onehot: ``(n, L)`` indicator of each row's label value (with the counts).
        joint_level_counts: ``(T, K * L)`` rows per task at each (metric value, label value)
            pair, when both take few values (e.g. a 0-4 judge score and 0/1); then Spearman's
            rho of a resample needs no per-row ranks at all. ``None`` otherwise.
    """

    sizes: np.ndarray
    concordance: np.ndarray
    ties_x: np.ndarray
    ties_y: np.ndarray
    rank_x: np.ndarray
    rank_y: np.ndarray
    sums: np.ndarray
    row_task: np.ndarray
    x: np.ndarray
    y: np.ndarray
    label_level_counts: np.ndarray | None = None
    label_onehot: np.ndarray | None = None
    joint_level_counts: np.ndarray | None = None

    @classmethod
    def build(cls, x: np.ndarray, y: np.ndarray, row_task: np.ndarray) -> TaskBlocks:
        """Compute the blocks.

        Args:
            x: ``(n,)`` finite metric values.
            y: ``(n,)`` finite labels.
            row_task: ``(n,)`` task index ``0..T-1`` of each row, non-decreasing, every task
                present at least once.

        Raises:
            ValueError: shapes differ or rows are not grouped by task.
        """
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        row_task = np.asarray(row_task, dtype=np.int64)
        if not (x.shape == y.shape == row_task.shape) or x.ndim != 1:
            raise ValueError("x, y and row_task must be 1-d arrays of the same length")
        if len(row_task) and (np.any(np.diff(row_task) < 0) or row_task[0] != 0 or np.any(np.diff(row_task) > 1)):
            raise ValueError("rows must be grouped by task, with task indices 0..T-1 in order")
        sizes = np.bincount(row_task) if len(row_task) else np.zeros(0, dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        less_x, equal_x, ties_x = _less_equal_counts(x, row_task, len(sizes))
        less_y, equal_y, ties_y = _less_equal_counts(y, row_task, len(sizes))
        # centring keeps the sums of squares from cancelling catastrophically
        xc = x - x.mean() if len(x) else x
        yc = y - y.mean() if len(y) else y
        sums = np.add.reduceat(np.column_stack([xc, yc, xc * xc, yc * yc, xc * yc]), starts, axis=0) if len(x) else np.zeros((0, 5))
        label_level_counts = label_onehot = joint_level_counts = None
        levels = np.unique(y)
        if 0 < len(levels) <= _FEW_LEVELS:
            label_onehot = (y[:, None] == levels[None, :]).astype(np.float64)
            label_level_counts = np.add.reduceat(label_onehot, starts, axis=0)
            metric_levels, metric_level_of_row = np.unique(x, return_inverse=True)
            if len(metric_levels) <= _FEW_LEVELS:
                cells = len(metric_levels) * len(levels)
                cell = row_task * cells + metric_level_of_row * len(levels) + np.searchsorted(levels, y)
                joint_level_counts = np.bincount(cell, minlength=len(sizes) * cells).reshape(len(sizes), cells)
                joint_level_counts = joint_level_counts.astype(np.float64)
        return cls(
            sizes=sizes.astype(np.float64),
            concordance=_concordance(x, y, row_task, starts, sizes),
            ties_x=ties_x,
            ties_y=ties_y,
            # float32 holds these integer/half counts exactly and halves the bootstrap's matmul time
            rank_x=(less_x + equal_x / 2.0).astype(np.float32),
            rank_y=(less_y + equal_y / 2.0).astype(np.float32),
            sums=sums,
            row_task=row_task,
            x=x,
            y=y,
            label_level_counts=label_level_counts,
            label_onehot=label_onehot,
            joint_level_counts=joint_level_counts,
        )

    @staticmethod
    def fits(x: np.ndarray, y: np.ndarray, n_tasks: int) -> bool:
        """Whether the blocks of this data stay within :data:`MAX_TASK_ROW_CELLS` cells and, for
        labels with many values, :data:`MAX_PAIR_ROWS` rows (the all-pairs concordance)."""
        n_rows = len(x)
        if n_tasks * n_rows > MAX_TASK_ROW_CELLS:
            return False
        by_levels = _counts_by_levels(n_tasks, len(np.unique(y)), len(np.unique(x)))
        return by_levels or n_rows <= MAX_PAIR_ROWS

    @property
    def n_tasks(self) -> int:
        return len(self.sizes)

    # -- whole-sample (pooled) statistics of resamples ---------------------------------------

    def resampled(self, counts: np.ndarray) -> dict[str, np.ndarray]:
        """Pooled Kendall tau-b, Pearson r and Spearman rho for each resample.

        Args:
            counts: ``(B, T)`` times each task is drawn in each resample (all ones = the data).

        Returns:
            ``{"kendall", "pearson", "spearman"}`` -> ``(B,)`` arrays; NaN where the metric or
            the label is constant in that resample (the correlation is undefined).
        """
        w = np.atleast_2d(np.asarray(counts, dtype=np.float64))
        total = w @ self.sizes
        square = total * total
        spread_x = square - _quadratic(w, self.ties_x)
        spread_y = square - _quadratic(w, self.ties_y)
        defined = (spread_x > 0.5) & (spread_y > 0.5)  # integer counts: > 0.5 means > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            kendall = _quadratic(w, self.concordance) / np.sqrt(spread_x * spread_y)
            s = w @ self.sums
            cov = s[:, 4] - s[:, 0] * s[:, 1] / total
            var_x = s[:, 2] - s[:, 0] ** 2 / total
            var_y = s[:, 3] - s[:, 1] ** 2 / total
            pearson = np.clip(cov / np.sqrt(var_x * var_y), -1.0, 1.0)
        spearman = self._resampled_spearman(w, total)
        undefined = ~defined
        for values in (kendall, pearson, spearman):
            values[undefined] = np.nan
        return {"kendall": kendall, "pearson": pearson, "spearman": spearman}

    def _resampled_spearman(self, w: np.ndarray, total: np.ndarray) -> np.ndarray:
        n_rows = len(self.row_task)
        out = np.full(len(w), np.nan)
        if n_rows == 0:
            return out
        if self.joint_level_counts is not None:
            return self._spearman_from_levels(w, total)
        sizes = self.sizes.astype(np.int64)
        # float32 sums are exact while the resample has under 2**22 rows; beyond, use float64
        exact = np.float32 if total.max(initial=0.0) < 2**22 else np.float64
        rank_x, rank_y = self.rank_x.astype(exact, copy=False), self.rank_y.astype(exact, copy=False)
        step = max(1, _RANK_CHUNK // n_rows)
        for begin in range(0, len(w), step):
            wb = w[begin : begin + step]
            wb_exact = wb.astype(exact)
            rx = np.add(wb_exact @ rank_x, 0.5, dtype=np.float64)
            copies = np.repeat(wb, sizes, axis=1)  # how often each row is in the resample
            weighted_rx = copies * rx
            n = total[begin : begin + step]
            mean = (n + 1.0) / 2.0  # the mean of average ranks is (N + 1) / 2, ties or not
            base = n * mean * mean
            var_x = np.einsum("bi,bi->b", weighted_rx, rx) - base
            if self.label_level_counts is not None:
                # a label value's average rank = rows below it + (rows at it + 1) / 2
                at_level = wb @ self.label_level_counts
                level_rank = np.cumsum(at_level, axis=1) - at_level + (at_level + 1.0) / 2.0
                var_y = np.einsum("bl,bl,bl->b", at_level, level_rank, level_rank) - base
                cov = np.einsum("bl,bl->b", weighted_rx @ self.label_onehot, level_rank) - base
            else:
                ry = np.add(wb_exact @ rank_y, 0.5, dtype=np.float64)
                cov = np.einsum("bi,bi->b", weighted_rx, ry) - base
                var_y = np.einsum("bi,bi,bi->b", copies, ry, ry) - base
            with np.errstate(invalid="ignore", divide="ignore"):
                out[begin : begin + step] = np.clip(cov / np.sqrt(var_x * var_y), -1.0, 1.0)
        return out

    def _spearman_from_levels(self, w: np.ndarray, total: np.ndarray) -> np.ndarray:
        """Spearman's rho when metric and label both take few values: every row at a value has
        that value's average rank, so the rank sums come from the (value, value) counts."""
        n_label = self.label_level_counts.shape[1]
        joint = (w @ self.joint_level_counts).reshape(len(w), -1, n_label)  # (B, K, L)
        at_x, at_y = joint.sum(axis=2), joint.sum(axis=1)

        def average_rank(at_level: np.ndarray) -> np.ndarray:
            return np.cumsum(at_level, axis=1) - at_level + (at_level + 1.0) / 2.0

        rank_x, rank_y = average_rank(at_x), average_rank(at_y)
        mean = (total + 1.0) / 2.0
        base = total * mean * mean
        cov = np.einsum("bkl,bk,bl->b", joint, rank_x, rank_y) - base
        var_x = np.einsum("bk,bk,bk->b", at_x, rank_x, rank_x) - base
        var_y = np.einsum("bl,bl,bl->b", at_y, rank_y, rank_y) - base
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.clip(cov / np.sqrt(var_x * var_y), -1.0, 1.0)

    # -- within-task (per-problem) statistics ------------------------------------------------

    def per_task(self) -> dict[str, np.ndarray]:
        """Kendall tau-b, Pearson r and Spearman rho within each task.

        Returns:
            ``{"kendall", "pearson", "spearman"}`` -> ``(T,)`` arrays, NaN where the task has one
            row or a constant metric or label (as scipy returns); plus ``"constant_x"`` and
            ``"constant_y"`` boolean ``(T,)`` arrays saying why.
        """
        sizes = self.sizes
        square = sizes * sizes
        spread_x = square - np.diag(self.ties_x)
        spread_y = square - np.diag(self.ties_y)
        constant_x, constant_y = spread_x < 0.5, spread_y < 0.5
        undefined = constant_x | constant_y
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        rows = np.arange(len(self.row_task))
        with np.errstate(invalid="ignore", divide="ignore"):
            kendall = np.diag(self.concordance) / np.sqrt(spread_x * spread_y)
            pearson = _grouped_pearson(self.x, self.y, starts, sizes)
            within_x = self.rank_x[self.row_task, rows] + 0.5
            within_y = self.rank_y[self.row_task, rows] + 0.5
            spearman = _grouped_pearson(within_x, within_y, starts, sizes)
        for values in (kendall, pearson, spearman):
            values[undefined] = np.nan
        return {
            "kendall": kendall,
            "pearson": np.clip(pearson, -1.0, 1.0),
            "spearman": np.clip(spearman, -1.0, 1.0),
            "constant_x": constant_x,
            "constant_y": constant_y,
        }


def _less_equal_counts(values: np.ndarray, row_task: np.ndarray, n_tasks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-task value histograms and what they give for each row.

    Returns:
        ``less`` / ``equal``: ``(T, n)`` counts of rows of task ``u`` strictly below / equal to
        row ``i``'s value; ``ties``: ``(T, T)`` pairs of rows tied in value between two tasks
        (self-pairs included), i.e. ``H H'`` for the ``(T, K)`` histogram ``H``.
    """
    if len(values) == 0:
        return np.zeros((n_tasks, 0)), np.zeros((n_tasks, 0)), np.zeros((n_tasks, n_tasks))
    _, dense = np.unique(values, return_inverse=True)
    width = int(dense.max()) + 1
    histogram = np.bincount(row_task * width + dense, minlength=n_tasks * width).reshape(n_tasks, width)
    below = np.cumsum(histogram, axis=1) - histogram
    equal = histogram[:, dense].astype(np.float64)
    starts = np.flatnonzero(np.r_[True, np.diff(row_task) != 0])
    # ties[u, t] = sum over rows i of task t of equal[u, i]; a segment sum, far cheaper than H H'
    ties = np.add.reduceat(equal, starts, axis=1)
    return below[:, dense].astype(np.float64), equal, ties.T


def _counts_by_levels(n_tasks: int, label_levels: int, metric_levels: int) -> bool:
    """Whether the (task, label level, metric value) histogram is small enough to use."""
    return label_levels <= _FEW_LEVELS and n_tasks * label_levels * metric_levels <= 4 * _PAIR_CHUNK


def _concordance(x: np.ndarray, y: np.ndarray, row_task: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``(T, T)`` sums of ``sign(x_i - x_j) * sign(y_i - y_j)`` over row pairs of two tasks.

    Labels usually take few values (0/1, or k/m pass ratios); then the sums come from sorted
    counts per (task, label level) in ``O(T K n log n)``. Otherwise all pairs are compared,
    in chunks of whole tasks so memory stays near ``_PAIR_CHUNK`` cells.
    """
    n_tasks, n_rows = len(sizes), len(x)
    if n_tasks == 0:
        return np.zeros((0, 0))
    levels = np.unique(y)
    if _counts_by_levels(n_tasks, len(levels), len(np.unique(x))):
        return _concordance_by_levels(x, y, levels, row_task, starts)
    out = np.zeros((n_tasks, n_tasks))
    per_chunk = max(1, _PAIR_CHUNK // n_rows)
    first = 0
    while first < n_tasks:
        last = first + 1
        while last < n_tasks and starts[last] + sizes[last] - starts[first] <= per_chunk:
            last += 1
        begin, end = starts[first], starts[last - 1] + sizes[last - 1]
        signs = np.sign(x[begin:end, None] - x[None, :]) * np.sign(y[begin:end, None] - y[None, :])
        by_column_task = np.add.reduceat(signs, starts, axis=1)
        out[first:last] = np.add.reduceat(by_column_task, starts[first:last] - begin, axis=0)
        first = last
    return out


def _concordance_by_levels(
    x: np.ndarray, y: np.ndarray, levels: np.ndarray, row_task: np.ndarray, starts: np.ndarray
) -> np.ndarray:
    """The concordance matrix through groups ``g = (task u, label level l)``:
    ``sum_{j in u} s_ij = sum_l sign(y_i - l) * (#{j in g: x_j < x_i} - #{j in g: x_j > x_i})``,
    read off per-group histograms of the dense ranks of ``x``."""
    n_tasks, n_levels = len(starts), len(levels)
    level_of_row = np.searchsorted(levels, y)
    _, dense_x = np.unique(x, return_inverse=True)
    width = int(dense_x.max()) + 1
    flat = (row_task * n_levels + level_of_row) * width + dense_x
    histogram = np.bincount(flat, minlength=n_tasks * n_levels * width).reshape(n_tasks, n_levels, width)
    below = np.cumsum(histogram, axis=2) - histogram
    # (#below - #above) of each x value within each group
    balance = (2 * below + histogram - histogram.sum(axis=2, keepdims=True)).astype(np.float64)
    level_sign = np.sign(np.arange(n_levels)[:, None] - np.arange(n_levels)[None, :]).astype(np.float64)
    by_level = np.einsum("ulk,ml->umk", balance, level_sign)  # [u, level of i, x value of i]
    per_row = by_level[:, level_of_row, dense_x]  # [u, i] = sum over rows j of task u of s_ij
    return np.add.reduceat(per_row, starts, axis=1).T


def _quadratic(w: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """``w_b' M w_b`` for every row ``b`` of ``w`` (a BLAS product, not a three-way einsum)."""
    return np.einsum("bt,bt->b", w @ matrix, w)


def _grouped_pearson(x: np.ndarray, y: np.ndarray, starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Pearson r within each group of consecutive rows, from group-centred sums."""
    if len(x) == 0:
        return np.zeros(0)
    group = np.repeat(np.arange(len(sizes)), sizes.astype(np.int64))
    mean_x = np.add.reduceat(x, starts) / sizes
    mean_y = np.add.reduceat(y, starts) / sizes
    dx, dy = x - mean_x[group], y - mean_y[group]
    cov = np.add.reduceat(dx * dy, starts)
    return cov / np.sqrt(np.add.reduceat(dx * dx, starts) * np.add.reduceat(dy * dy, starts))
