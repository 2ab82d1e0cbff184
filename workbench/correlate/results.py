"""Result objects of ``workbench correlate``; each has ``to_dict()`` giving JSON-ready data
(NaN becomes ``null``)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.io import atomic_write
from workbench.correlate.bootstrap import BootstrapSettings, estimate_outside_interval, interval_contains_zero
from workbench.correlate.correlation import COEFFICIENTS
from workbench.correlate.combine import Combination
from workbench.correlate.json_ready import json_ready
from workbench.correlate.length import LengthSource
from workbench.correlate.table import CorrelationTable, JoinSummary, RowExclusions


@dataclass(frozen=True)
class Estimate:
    """One coefficient with its bootstrap interval.

    Attributes:
        value: the point estimate (NaN when undefined).
        ci: ``(low, high)`` percentile interval over task resamples.
        undefined_resamples: resamples where the statistic was undefined (left out of the CI).
        no_interval: why no interval is given (too few tasks or samples,
            :func:`~workbench.correlate.bootstrap.no_interval_reason`); ``ci`` is then NaN.
    """

    value: float
    ci: tuple[float, float]
    undefined_resamples: int = 0
    no_interval: str | None = None

    @property
    def spans_zero(self) -> bool | None:
        """Whether the interval contains 0, i.e. the estimate is *not distinguishable from 0* at
        the interval's level; ``None`` when the interval is undefined."""
        return interval_contains_zero(*self.ci)

    @property
    def outside_interval(self) -> bool | None:
        """Whether the estimate lies outside its own interval (the interval is then unreliable,
        :func:`~workbench.correlate.bootstrap.estimate_outside_interval`); ``None`` without one."""
        return estimate_outside_interval(self.value, *self.ci)


def estimates_block(estimates: dict[str, Estimate]) -> dict[str, Any]:
    """The JSON of one level's coefficients: ``{"kendall", "kendall_ci", ..., "undefined_resamples",
    "not_distinguishable_from_0", "estimate_outside_interval", "no_interval"}``; the flags map each
    coefficient to whether its interval contains 0, and whether the estimate lies outside its
    interval (``null`` when the interval is undefined)."""
    out: dict[str, Any] = {name: estimates[name].value for name in COEFFICIENTS}
    out.update({f"{name}_ci": list(estimates[name].ci) for name in COEFFICIENTS})
    out["undefined_resamples"] = {name: estimates[name].undefined_resamples for name in COEFFICIENTS}
    out["not_distinguishable_from_0"] = {name: estimates[name].spans_zero for name in COEFFICIENTS}
    out["estimate_outside_interval"] = {name: estimates[name].outside_interval for name in COEFFICIENTS}
    out["no_interval"] = {name: estimates[name].no_interval for name in COEFFICIENTS}
    return out


@dataclass(frozen=True)
class LengthCorrelation:
    """Correlations of one column (a metric, or the label) with completion length.

    Attributes:
        n_samples: rows with both values.
        n_tasks: tasks among them.
        pooled: coefficient -> :class:`Estimate` over all those rows.
        per_problem: coefficient -> :class:`Estimate` of the mean within-task correlation (length
            differences between samples of one problem: the cleaner view of a verbosity bias,
            as long problems also tend to fail more).
        per_problem_tasks: tasks entering the per-problem mean.
    """

    n_samples: int
    n_tasks: int
    pooled: dict[str, Estimate]
    per_problem: dict[str, Estimate]
    per_problem_tasks: int

    def to_dict(self) -> dict[str, Any]:
        per_problem = estimates_block(self.per_problem)
        per_problem["n_tasks"] = self.per_problem_tasks
        return json_ready(
            {"n_samples": self.n_samples, "n_tasks": self.n_tasks, "pooled": estimates_block(self.pooled),
             "per_problem": per_problem}
        )


@dataclass(frozen=True)
class LengthSummary:
    """The length analysis of a report.

    Attributes:
        source: the column and unit (:class:`~workbench.correlate.length.LengthSource`), or ``None``
            when no length was measured.
        note: why there is no length analysis (no generation column found, or switched off);
            ``None`` when there is one.
        missing: rows without a length (left out of the length correlations, counted).
        execution: the length's own correlation with the execution label, the reference every
            metric's length correlation is read against.
        mean: the mean length over the rows with one.
    """

    source: LengthSource | None
    note: str | None = None
    missing: int = 0
    execution: LengthCorrelation | None = None
    mean: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return json_ready(
            {
                "column": None if self.source is None else self.source.column,
                "unit": None if self.source is None else self.source.unit,
                "detected": None if self.source is None else self.source.detected,
                "description": None if self.source is None else self.source.describe(),
                "note": self.note,
                "missing": self.missing,
                "mean": self.mean,
                "with_execution": None if self.execution is None else self.execution.to_dict(),
            }
        )


@dataclass(frozen=True)
class MetricResult:
    """Correlations of one metric with the execution label.

    Attributes:
        name: the metric column.
        n_samples: rows used (label and metric valid).
        n_tasks: tasks with at least one used row.
        excluded_rows: rows whose metric value was unusable.
        pooled: coefficient -> :class:`Estimate` over all samples.
        per_problem: coefficient -> :class:`Estimate` of the mean within-task correlation.
        per_problem_tasks: tasks entering the per-problem mean.
        excluded_tasks: ``{"single_sample", "constant_label", "constant_metric"}`` -> tasks left
            out of the per-problem mean.
        mean_by_outcome: for 0/1 labels, the metric's mean on passing and failing samples.
        length: the metric's correlation with completion length (its verbosity bias), when the
            lengths are known.
    """

    name: str
    n_samples: int
    n_tasks: int
    excluded_rows: RowExclusions
    pooled: dict[str, Estimate]
    per_problem: dict[str, Estimate]
    per_problem_tasks: int
    excluded_tasks: dict[str, int]
    mean_by_outcome: dict[str, float] | None = None
    length: LengthCorrelation | None = None

    def not_distinguishable_from_zero(self) -> list[tuple[str, str]]:
        """The ``(level, coefficient)`` estimates against the label whose interval contains 0,
        e.g. ``[("pooled", "kendall")]``."""
        return [
            (level, name)
            for level, estimates in (("pooled", self.pooled), ("per_problem", self.per_problem))
            for name in COEFFICIENTS
            if estimates[name].spans_zero
        ]

    def to_dict(self) -> dict[str, Any]:
        per_problem = estimates_block(self.per_problem)
        per_problem["n_tasks"] = self.per_problem_tasks
        per_problem["excluded_tasks"] = dict(self.excluded_tasks)
        return json_ready(
            {
                "n_samples": self.n_samples,
                "n_tasks": self.n_tasks,
                "excluded_rows": self.excluded_rows.to_dict(),
                "pooled": estimates_block(self.pooled),
                "per_problem": per_problem,
                "mean_by_outcome": self.mean_by_outcome,
                "length": None if self.length is None else self.length.to_dict(),
            }
        )


@dataclass(frozen=True)
class PairedDifference:
    """One statistic of two metrics on the same resampled tasks, and their difference.

    Attributes:
        value_a, value_b: the statistic of each metric (on the rows both have).
        difference: ``value_a - value_b``.
        ci: percentile interval of the resampled differences.
        p_value: two-sided bootstrap p-value of "no difference"
            (:func:`~workbench.correlate.bootstrap.paired_p_value`).
        undefined_resamples: resamples where either statistic was undefined (left out).
        no_interval: why no interval (and no p-value) is given: too few tasks or samples.
    """

    value_a: float
    value_b: float
    difference: float
    ci: tuple[float, float]
    p_value: float
    undefined_resamples: int = 0
    no_interval: str | None = None

    def to_dict(self) -> dict[str, Any]:
        low, high = self.ci
        spans = interval_contains_zero(low, high)
        return json_ready(
            {
                "a": self.value_a,
                "b": self.value_b,
                "difference": self.difference,
                "difference_ci": list(self.ci),
                "p_value": self.p_value,
                "not_distinguishable_from_0": spans,
                "ci_spans_0": spans,  # the earlier name of the same flag, kept for scripts that read it
                "estimate_outside_interval": estimate_outside_interval(self.difference, low, high),
                "undefined_resamples": self.undefined_resamples,
                "no_interval": self.no_interval,
            }
        )


@dataclass(frozen=True)
class MetricComparison:
    """Paired bootstrap comparison of two metrics: every coefficient, pooled and per problem.

    Both statistics are computed on the same resampled tasks, so the interval of the difference
    accounts for their correlation (Efron & Tibshirani 1993, section 16.4, the paired design).
    The headline is the pooled Kendall tau-b (:attr:`difference`, :attr:`ci`, :attr:`p_value`).

    Attributes:
        metric_a, metric_b: the metrics (differences are a minus b).
        differences: level (``"pooled"``, ``"per_problem"``) -> coefficient -> :class:`PairedDifference`.
        n_samples: rows both metrics have.
        n_tasks: tasks among them.
    """

    metric_a: str
    metric_b: str
    differences: dict[str, dict[str, PairedDifference]]
    n_samples: int
    n_tasks: int = 0

    @property
    def headline(self) -> PairedDifference:
        """The pooled Kendall tau-b difference."""
        return self.differences["pooled"]["kendall"]

    @property
    def kendall_a(self) -> float:
        return self.headline.value_a

    @property
    def kendall_b(self) -> float:
        return self.headline.value_b

    @property
    def difference(self) -> float:
        return self.headline.difference

    @property
    def ci(self) -> tuple[float, float]:
        return self.headline.ci

    @property
    def p_value(self) -> float:
        return self.headline.p_value

    def to_dict(self) -> dict[str, Any]:
        """``{"metric_a", "metric_b", "statistic", "kendall_a", "kendall_b", "difference",
        "difference_ci", "p_value"`` (the pooled Kendall tau-b headline), ``"n_samples",
        "n_tasks", "differences": {level: {coefficient: PairedDifference.to_dict()}}}``."""
        return json_ready(
            {
                "metric_a": self.metric_a,
                "metric_b": self.metric_b,
                "statistic": "pooled kendall tau-b",
                "kendall_a": self.kendall_a,
                "kendall_b": self.kendall_b,
                "difference": self.difference,
                "difference_ci": list(self.ci),
                "p_value": self.p_value,
                "n_samples": self.n_samples,
                "n_tasks": self.n_tasks,
                "differences": {
                    level: {name: difference.to_dict() for name, difference in by_coefficient.items()}
                    for level, by_coefficient in self.differences.items()
                },
            }
        )


@dataclass(frozen=True)
class CombinationSummary:
    """A combined judge of the report (:mod:`workbench.correlate.combine`).

    Attributes:
        combination: the declaration.
        weights_note: how the weights came about, as the output states it.
        fold_weights: ``rank-mean-cv`` only: the weights fitted in each fold (member order).
        folds: ``rank-mean-cv`` only: the number of task folds.
    """

    combination: Combination
    weights_note: str
    fold_weights: tuple[tuple[float, ...], ...] | None = None
    folds: int | None = None

    def to_dict(self, comparisons: list[MetricComparison]) -> dict[str, Any]:
        """The JSON, with the paired comparisons of the combination against each member."""
        name, members = self.combination.name, set(self.combination.members)
        against = [
            c.to_dict() for c in comparisons
            if (c.metric_a == name and c.metric_b in members) or (c.metric_b == name and c.metric_a in members)
        ]
        return json_ready(
            {
                "method": self.combination.method,
                "members": list(self.combination.members),
                "weights": None if self.combination.weights is None else list(self.combination.weights),
                "weights_source": "fitted" if self.combination.fitted else "declared",
                "weights_note": self.weights_note,
                "declaration": self.combination.declaration(),
                "folds": self.folds,
                "fold_weights": None if self.fold_weights is None else [list(w) for w in self.fold_weights],
                "against_members": against,
            }
        )


@dataclass(frozen=True)
class CorrelationCounts:
    """What went in, what was used, what was left out.

    Attributes:
        rows: rows read (after a join: the matched rows).
        samples: rows with a task id and a label (each metric may exclude more, see
            :attr:`MetricResult.excluded_rows`).
        tasks: distinct tasks among ``samples``.
        samples_per_task: ``{"min", "median", "mean", "max"}``.
        pass_rate: mean label over ``samples``; ``None`` for a graded label (no pass/fail reading).
        label_kind: ``"binary"`` (0/1), ``"ratio"`` (pass ratios in [0, 1]) or ``"graded"``
            (declared: an ordinal or continuous grade).
        label_summary: for a graded label, ``{"mean", "min", "max", "distinct", "values"}``
            (``values``: grade -> count when at most 20 distinct); ``None`` otherwise.
        excluded_missing_label: rows without a label (left out, counted).
        excluded_missing_task: rows without a task id (left out, counted).
        excluded_missing_sample: in two-table mode, score rows with a task id and without a sample
            id (left out of the join, counted); 0 in one-table mode.
        join: the join, in two-table mode.
    """

    rows: int
    samples: int
    tasks: int
    samples_per_task: dict[str, float]
    pass_rate: float | None
    label_kind: str
    excluded_missing_label: int
    excluded_missing_task: int
    join: JoinSummary | None = None
    label_summary: dict[str, Any] | None = None
    excluded_missing_sample: int = 0

    def to_dict(self) -> dict[str, Any]:
        return json_ready(
            {
                "rows": self.rows,
                "samples": self.samples,
                "tasks": self.tasks,
                "samples_per_task": self.samples_per_task,
                "pass_rate": self.pass_rate,
                "label_kind": self.label_kind,
                "label_summary": self.label_summary,
                "excluded_missing_label": self.excluded_missing_label,
                "excluded_missing_task": self.excluded_missing_task,
                "excluded_missing_sample": self.excluded_missing_sample,
                "join": self.join.to_dict() if self.join else None,
            }
        )


@dataclass
class CorrelationReport:
    """Everything ``workbench correlate`` computes.

    Attributes:
        source: the scores input (and results input, in two-table mode).
        label: the label column.
        counts: :class:`CorrelationCounts`.
        metrics: metric name -> :class:`MetricResult`, in the order asked.
        comparisons: one :class:`MetricComparison` per pair of metrics, or, with baselines,
            per (metric, baseline) pair; plus each combination against each of its members.
        bootstrap: the resampling settings (seed included).
        warnings: sentences about anything that weakens the numbers.
        notes: sentences about expected outcomes of the inputs' own settings (a method the score run
            limited with ``method_limit`` has values on its prefix only; the scores' own label column
            differs from the results' on some rows): information, not faults.
        table: the prepared data (for plots); not part of :meth:`to_dict`.
        length: the completion-length analysis (verbosity bias), or why there is none.
        combinations: combined judges by name.
        baselines: the metrics every other metric was compared with (empty: all pairs).
        deduplicated: the same report on one row per near-duplicate cluster (``--dedup``), else ``None``.
        per_cluster: which rows stood for their clusters
            (:class:`~workbench.correlate.per_cluster.ClusterSelection`), with ``deduplicated``.
        per_cluster_differences: with ``deduplicated``, metric -> level -> coefficient ->
            :class:`PairedDifference` of one row per cluster (``a``) minus all rows (``b``), paired on
            the same task draws (:func:`~workbench.correlate.analysis.per_cluster_differences`).
        statistics: metric -> the point values and task resamples behind its estimates (for paired
            differences with another report on the same draws); not part of :meth:`to_dict`.
    """

    source: str
    label: str
    counts: CorrelationCounts
    metrics: dict[str, MetricResult]
    comparisons: list[MetricComparison]
    bootstrap: BootstrapSettings
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    table: CorrelationTable | None = field(default=None, repr=False, compare=False)
    length: LengthSummary | None = None
    combinations: dict[str, CombinationSummary] = field(default_factory=dict)
    baselines: tuple[str, ...] = ()
    deduplicated: CorrelationReport | None = None
    per_cluster: Any = None
    per_cluster_differences: dict[str, dict[str, dict[str, PairedDifference]]] = field(default_factory=dict)
    statistics: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: ``{"source", "label", "counts", "bootstrap", "metrics", "length",
        "combinations", "baselines", "comparisons", "warnings", "notes"}``."""
        from workbench import __version__

        return json_ready(
            {
                "workbench_version": __version__,
                "source": self.source,
                "label": self.label,
                "counts": {
                    **self.counts.to_dict(),
                    # per metric, repeated here so every exclusion is visible in one place
                    "excluded_metric_rows": {n: m.excluded_rows.total for n, m in self.metrics.items()},
                    "excluded_tasks_per_problem": {n: dict(m.excluded_tasks) for n, m in self.metrics.items()},
                },
                "bootstrap": self.bootstrap.to_dict(),
                "metrics": {name: result.to_dict() for name, result in self.metrics.items()},
                "length": None if self.length is None else self.length.to_dict(),
                "combinations": {
                    name: summary.to_dict(self.comparisons) for name, summary in self.combinations.items()
                },
                "baselines": list(self.baselines),
                "comparisons": [comparison.to_dict() for comparison in self.comparisons],
                "warnings": list(self.warnings),
                "notes": list(self.notes),
                **({"deduplicated": {"selection": self.per_cluster.to_dict(), **self.deduplicated.to_dict(),
                                     "difference_from_all_rows": self._per_cluster_differences_dict()}}
                   if self.deduplicated is not None else {}),
            }
        )

    def _per_cluster_differences_dict(self) -> dict[str, Any]:
        """``{"difference", "pairing", "metrics": {name: {level: {coefficient: PairedDifference.to_dict()}}}}``."""
        return {
            "difference": "one row per cluster (a) minus all rows (b)",
            "pairing": "paired: both on the same resampled tasks (the all-rows report's draws)",
            "metrics": {name: {level: {c: d.to_dict() for c, d in by.items()} for level, by in levels.items()}
                        for name, levels in self.per_cluster_differences.items()},
        }

    def write_json(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_dict` as indented JSON (parent folders created); returns the path."""
        return atomic_write(path, json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")
