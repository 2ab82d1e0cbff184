"""Rank-mean weights fitted on the data, with task-level k-fold cross-validation.

Weights chosen to maximise the correlation on the same data would flatter the combination.
Here every sample's combined value comes from weights fitted on *other tasks* only: the tasks
are split into ``k`` folds; for each fold the weights are chosen on the remaining folds (the
grid point of the weight simplex with the highest pooled Kendall tau-b against the label there)
and applied to the held-out fold. The out-of-fold values are then evaluated like any metric
(cross-validation for model assessment: Hastie, Tibshirani & Friedman 2009, "The Elements of
Statistical Learning", section 7.10; folds over tasks, as the samples of one task are not
independent).

What this does not cover: the task bootstrap intervals of the out-of-fold values treat the fold
weights as given; refitting inside every resample would widen them a little.

The members' ranks (twice the average ranks, :func:`~workbench.correlate.combine.doubled_ranks`)
are taken once over all evaluated rows; they use no label, so they leak nothing from the held-out
fold. The weighted sums are formed in integers (grid counts times doubled ranks), so rows with
equal sums tie exactly, in the fit's tau-b and in the values (floating-point ``0.4 r_a + 0.6 r_b``
split such ties).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from workbench.correlate.combine import CombinationError, doubled_ranks
from workbench.correlate.correlation import kendall_tau_b

#: grid step of the weight simplex, by member count (finer for few members)
_GRID_STEPS = {2: 20, 3: 20, 4: 10, 5: 10, 6: 6}
#: the most members a fitted combination takes (the grid grows as steps^(members-1))
MAX_FITTED_MEMBERS = max(_GRID_STEPS)


@dataclass(frozen=True)
class CrossValidatedRankMean:
    """The out-of-fold combined values and the weights each fold chose.

    Attributes:
        values: ``(n,)`` combined values (NaN where a member is missing).
        fold_weights: per fold, the chosen weights (member order, summing to 1).
        folds: the number of folds.
        fold_tasks: per fold, the task indices (of ``row_task``) it holds out.
    """

    values: np.ndarray
    fold_weights: tuple[tuple[float, ...], ...]
    folds: int
    fold_tasks: tuple[np.ndarray, ...] = ()


def weight_grid(members: int) -> np.ndarray:
    """Points of the weight simplex with the grid step of :data:`_GRID_STEPS`.

    Returns:
        ``(G, members)`` weights >= 0, each row summing to 1 (the corners give one member alone).

    Raises:
        CombinationError: more members than :data:`MAX_FITTED_MEMBERS`.
    """
    if members not in _GRID_STEPS:
        raise CombinationError(
            f"a fitted combination takes 2 to {MAX_FITTED_MEMBERS} metrics, got {members}; "
            "declare fixed weights with rank-mean instead"
        )
    steps = _GRID_STEPS[members]
    points = [c for c in itertools.product(range(steps + 1), repeat=members - 1) if sum(c) <= steps]
    grid = np.array([[*c, steps - sum(c)] for c in points], dtype=np.float64) / steps
    return grid


def cross_validated_rank_mean(
    columns: list[np.ndarray], label: np.ndarray, row_task: np.ndarray, *, folds: int, seed: int
) -> CrossValidatedRankMean:
    """Out-of-fold weighted rank means, weights fitted on the other folds' tasks.

    Args:
        columns: one ``(n,)`` array per member, NaN where missing.
        label: ``(n,)`` execution labels.
        row_task: ``(n,)`` task index of each row.
        folds: number of task folds (>= 2).
        seed: seeds the assignment of tasks to folds.

    Returns:
        a :class:`CrossValidatedRankMean`.

    Raises:
        CombinationError: fewer tasks than folds, fewer than two folds, or too many members.
    """
    if folds < 2:
        raise CombinationError(f"cross-validation needs at least 2 folds, got {folds}")
    grid = weight_grid(len(columns))
    stacked = np.vstack([np.asarray(c, dtype=np.float64) for c in columns])
    valid = ~np.isnan(stacked).any(axis=0)
    rows = np.flatnonzero(valid)
    tasks = np.unique(row_task[rows])
    if len(tasks) < folds:
        raise CombinationError(f"cross-validation over {folds} task folds needs at least {folds} tasks, got {len(tasks)}")
    doubled = np.vstack([doubled_ranks(member[rows]) for member in stacked])  # (members, n_valid)
    steps = _GRID_STEPS[len(columns)]
    counts = np.rint(grid * steps).astype(np.int64)  # the grid in whole steps: exact integer sums
    scale = 2 * len(rows) * steps  # sum of counts (steps) x twice the row count: values in (0, 1]
    order = np.random.default_rng(seed).permutation(len(tasks))
    fold_of_task = dict(zip(tasks[order].tolist(), (np.arange(len(tasks)) % folds).tolist()))
    fold = np.array([fold_of_task[t] for t in row_task[rows].tolist()])
    y = label[rows]
    equal = np.full(len(columns), 1.0 / len(columns))
    # ties in the fit go to the weights nearest equal weights (the no-knowledge choice)
    preference = np.argsort(np.linalg.norm(grid - equal, axis=1), kind="stable")
    out = np.full(stacked.shape[1], np.nan)
    chosen: list[tuple[float, ...]] = []
    for k in range(folds):
        train, test = fold != k, fold == k
        combined = counts[preference] @ doubled[:, train]  # (G, n_train) integers
        taus = np.array([kendall_tau_b(c, y[train]) for c in combined])
        best = int(np.argmax(np.nan_to_num(taus, nan=-np.inf)))  # first maximum = nearest equal
        weights = grid[preference][best]
        out[rows[test]] = (counts[preference][best] @ doubled[:, test]) / scale
        chosen.append(tuple(float(w) for w in weights))
    held_out = tuple(np.array(sorted(t for t, f in fold_of_task.items() if f == k)) for k in range(folds))
    return CrossValidatedRankMean(values=out, fold_weights=tuple(chosen), folds=folds, fold_tasks=held_out)
