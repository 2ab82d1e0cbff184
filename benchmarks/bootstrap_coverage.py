"""Coverage of correlate's task-bootstrap percentile intervals on simulated data with known truth.

For each design (how metric, label and task effects are drawn) and size (tasks x samples per
task), draws ``--reps`` data sets, computes the pooled Kendall tau-b, Pearson r and Spearman rho
with the same engine as ``workbench correlate`` (``TaskBlocks`` and ``task_resample_counts``,
``--resamples`` task resamples, percentile interval at 95 %), and prints for each coefficient:

* cover E: share of intervals holding E[estimate at this size] (the Monte-Carlo mean over reps);
* cover inf: share holding the population value (the coefficient on 20,000 tasks of the design;
  the two differ by the O(1/T) share of within-task pairs);
* holds est: share of intervals that hold their own estimate (see docs/correlate.md,
  "When the estimate lies outside its interval");
* width: mean interval width.

A 95 % interval should cover about .95; with R reps the Monte-Carlo standard error of a coverage
near .95 is sqrt(.95 * .05 / R) (.011 at 400). Designs:

* ``continuous``: task difficulty drives both pass/fail and the metric, plus a per-task metric offset
  that has nothing to do with passing (an overlap metric's dependence on the reference);
* ``judge``: a 0-4 judge score (few values, many ties) against pass/fail;
* ``copies``: like continuous, but 60 % of passing samples are an exact copy of the reference
  (the metric's maximum, tied);
* ``separated``: one passing sample per task that is an exact copy, one failing sample with a
  continuous score: the label is a function of the metric, the statistic barely varies between
  draws of tasks, and the interval shows the resampling's bias (the probe of docs/correlate.md).

Run: ``python benchmarks/bootstrap_coverage.py [--reps 400] [--resamples 1000]`` (about 4
minutes on 2 cores at the defaults). Results: ``benchmarks/results/bootstrap_coverage.txt``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from workbench.correlate.blocks import TaskBlocks
from workbench.correlate.bootstrap import BootstrapSettings, percentile_interval, task_resample_counts
from workbench.correlate.correlation import COEFFICIENTS, pooled_correlations

#: tasks drawn for the population value of a design
POPULATION_TASKS = 20_000


def _continuous(rng: np.random.Generator, tasks: int, per_task: int) -> tuple[np.ndarray, np.ndarray]:
    n = tasks * per_task
    difficulty = rng.normal(0.0, 1.0, tasks).repeat(per_task)
    offset = rng.normal(0.0, 1.0, tasks).repeat(per_task)
    quality = difficulty + rng.normal(0.0, 1.0, n)
    passed = (quality + rng.normal(0.0, 0.5, n) > 0).astype(float)
    metric = np.round(quality + offset + rng.normal(0.0, 0.5, n), 2)
    return metric, passed


def _judge(rng: np.random.Generator, tasks: int, per_task: int) -> tuple[np.ndarray, np.ndarray]:
    n = tasks * per_task
    quality = rng.normal(0.0, 1.0, tasks).repeat(per_task) + rng.normal(0.0, 1.0, n)
    passed = (quality + rng.normal(0.0, 0.5, n) > 0).astype(float)
    return np.clip(np.round(quality + 2.0 + rng.normal(0.0, 1.2, n)), 0, 4), passed


def _copies(rng: np.random.Generator, tasks: int, per_task: int) -> tuple[np.ndarray, np.ndarray]:
    metric, passed = _continuous(rng, tasks, per_task)
    copy = (passed == 1.0) & (rng.random(len(passed)) < 0.6)
    return np.where(copy, 10.0, metric), passed


def _separated(rng: np.random.Generator, tasks: int, per_task: int) -> tuple[np.ndarray, np.ndarray]:
    passed = np.tile(np.r_[1.0, np.zeros(per_task - 1)], tasks)
    metric = np.where(passed == 1.0, 1.0, np.round(rng.uniform(0.0, 0.4, len(passed)), 3))
    return metric, passed


DESIGNS = {"continuous": _continuous, "judge": _judge, "copies": _copies, "separated": _separated}
SIZES = [(8, 2), (25, 2), (50, 2), (15, 8)]


def measure(design: str, tasks: int, per_task: int, reps: int, resamples: int, seed: int) -> dict[str, dict[str, float]]:
    """Coverage figures of one design and size: coefficient -> {cover_e, cover_inf, holds, width}."""
    draw = DESIGNS[design]
    rng = np.random.default_rng(seed)
    population = pooled_correlations(*draw(rng, POPULATION_TASKS, per_task))
    row_task = np.arange(tasks).repeat(per_task)
    estimates = {c: np.empty(reps) for c in COEFFICIENTS}
    intervals = {c: np.empty((reps, 2)) for c in COEFFICIENTS}
    for rep in range(reps):
        metric, passed = draw(rng, tasks, per_task)
        point = pooled_correlations(metric, passed)
        counts = task_resample_counts(tasks, BootstrapSettings(n_resamples=resamples, seed=rep))
        resampled = TaskBlocks.build(metric, passed, row_task).resampled(counts)
        for c in COEFFICIENTS:
            estimates[c][rep] = point[c]
            intervals[c][rep] = percentile_interval(resampled[c], 0.95)
    out = {}
    for c in COEFFICIENTS:
        value, (low, high) = estimates[c], intervals[c].T
        expected = float(np.nanmean(value))
        out[c] = {
            "expected": expected,
            "population": population[c],
            "sd": float(np.nanstd(value)),
            "cover_e": float(np.mean((low <= expected) & (expected <= high))),
            "cover_inf": float(np.mean((low <= population[c]) & (population[c] <= high))),
            "holds": float(np.mean((low <= value) & (value <= high))),
            "width": float(np.nanmean(high - low)),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=400, help="simulated data sets per design and size")
    parser.add_argument("--resamples", type=int, default=1000, help="task resamples per interval")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--designs", nargs="*", default=list(DESIGNS), choices=list(DESIGNS))
    args = parser.parse_args()
    print(f"95% percentile task-bootstrap intervals, {args.reps} reps x {args.resamples} resamples; "
          f"Monte-Carlo s.e. of a coverage near .95: {np.sqrt(.95 * .05 / args.reps):.3f}")
    print(f"{'design':11s} {'tasks':>5s} {'n/task':>6s} {'coef':8s} {'E[est]':>7s} {'pop':>7s} {'sd':>6s} "
          f"{'cover E':>8s} {'cover inf':>9s} {'holds est':>9s} {'width':>6s}")
    started = time.perf_counter()
    for design in args.designs:
        for tasks, per_task in SIZES:
            figures = measure(design, tasks, per_task, args.reps, args.resamples, args.seed)
            for c in COEFFICIENTS:
                f = figures[c]
                print(f"{design:11s} {tasks:5d} {per_task:6d} {c:8s} {f['expected']:7.3f} {f['population']:7.3f} "
                      f"{f['sd']:6.3f} {f['cover_e']:8.3f} {f['cover_inf']:9.3f} {f['holds']:9.3f} {f['width']:6.3f}",
                      flush=True)
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
