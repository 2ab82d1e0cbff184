"""Result objects of ``workbench correlate``; each has ``to_dict()`` giving JSON-ready data
(NaN becomes ``null``)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.io import atomic_write
from workbench.stats.bootstrap import BootstrapSettings
from workbench.stats.correlation import COEFFICIENTS

if TYPE_CHECKING:
    from workbench.stats.inputs import CorrelationTable


def _clean(value: Any) -> Any:
    """NaN/inf -> None, tuples -> lists, recursively, so ``json.dumps`` writes valid JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        return _clean(value.item())
    return value


@dataclass(frozen=True)
class Estimate:
    """One coefficient with its bootstrap interval.

    Attributes:
        value: the point estimate (NaN when undefined).
        ci: ``(low, high)`` percentile interval over task resamples.
        undefined_resamples: resamples where the statistic was undefined (left out of the CI).
    """

    value: float
    ci: tuple[float, float]
    undefined_resamples: int = 0


@dataclass(frozen=True)
class RowExclusions:
    """Rows left out of one column's statistics, by reason.

    Attributes:
        missing: null, empty or NaN values.
        non_numeric: text that does not parse as a number.
        non_finite: +-inf.
        examples: up to five ``{"row", "task_id", "value"}`` records, for the message.
    """

    missing: int = 0
    non_numeric: int = 0
    non_finite: int = 0
    examples: tuple[dict[str, Any], ...] = ()

    @property
    def total(self) -> int:
        return self.missing + self.non_numeric + self.non_finite

    def to_dict(self) -> dict[str, Any]:
        return _clean(
            {
                "total": self.total,
                "missing": self.missing,
                "non_numeric": self.non_numeric,
                "non_finite": self.non_finite,
                "examples": list(self.examples),
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

    def to_dict(self) -> dict[str, Any]:
        def block(estimates: dict[str, Estimate]) -> dict[str, Any]:
            out: dict[str, Any] = {name: estimates[name].value for name in COEFFICIENTS}
            out.update({f"{name}_ci": list(estimates[name].ci) for name in COEFFICIENTS})
            out["undefined_resamples"] = {name: estimates[name].undefined_resamples for name in COEFFICIENTS}
            return out

        per_problem = block(self.per_problem)
        per_problem["n_tasks"] = self.per_problem_tasks
        per_problem["excluded_tasks"] = dict(self.excluded_tasks)
        return _clean(
            {
                "n_samples": self.n_samples,
                "n_tasks": self.n_tasks,
                "excluded_rows": self.excluded_rows.to_dict(),
                "pooled": block(self.pooled),
                "per_problem": per_problem,
                "mean_by_outcome": self.mean_by_outcome,
            }
        )


@dataclass(frozen=True)
class MetricComparison:
    """Paired bootstrap comparison of two metrics' pooled Kendall tau-b.

    Both taus are computed on the same resampled tasks, so the interval of the difference
    accounts for their correlation.

    Attributes:
        metric_a, metric_b: the metrics (difference is a minus b).
        kendall_a, kendall_b: pooled tau-b on the rows both metrics have.
        difference: ``kendall_a - kendall_b``.
        ci: percentile interval of the resampled differences.
        p_value: two-sided bootstrap p-value of "no difference".
        n_samples: rows both metrics have.
    """

    metric_a: str
    metric_b: str
    kendall_a: float
    kendall_b: float
    difference: float
    ci: tuple[float, float]
    p_value: float
    n_samples: int

    def to_dict(self) -> dict[str, Any]:
        return _clean(
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
            }
        )


@dataclass(frozen=True)
class JoinSummary:
    """How a scores table and an execution-results table were joined on (task, sample).

    Attributes:
        key: the join columns ``(task column, sample column)``.
        score_rows, result_rows: rows in each table.
        matched: keys found in both.
        unmatched_scores: score rows with no execution result (left out, counted).
        unmatched_results: result rows with no scores (left out, counted).
        examples: up to three unmatched keys per side.
        status_counts: for matched rows, how many have each value of the results' ``status``
            column (``workbench execute`` writes e.g. ``passed``/``failed``/``timeout``), if any.
    """

    key: tuple[str, str]
    score_rows: int
    result_rows: int
    matched: int
    unmatched_scores: int
    unmatched_results: int
    examples: dict[str, list[list[str]]] = field(default_factory=dict)
    status_counts: dict[str, int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return _clean(
            {
                "key": list(self.key),
                "score_rows": self.score_rows,
                "result_rows": self.result_rows,
                "matched": self.matched,
                "unmatched_scores": self.unmatched_scores,
                "unmatched_results": self.unmatched_results,
                "examples": self.examples,
                "status_counts": self.status_counts,
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
        pass_rate: mean label over ``samples``.
        label_kind: ``"binary"`` (0/1) or ``"ratio"`` (pass ratios in [0, 1]).
        excluded_missing_label: rows without a label (left out, counted).
        excluded_missing_task: rows without a task id (left out, counted).
        join: the join, in two-table mode.
    """

    rows: int
    samples: int
    tasks: int
    samples_per_task: dict[str, float]
    pass_rate: float
    label_kind: str
    excluded_missing_label: int
    excluded_missing_task: int
    join: JoinSummary | None = None

    def to_dict(self) -> dict[str, Any]:
        return _clean(
            {
                "rows": self.rows,
                "samples": self.samples,
                "tasks": self.tasks,
                "samples_per_task": self.samples_per_task,
                "pass_rate": self.pass_rate,
                "label_kind": self.label_kind,
                "excluded_missing_label": self.excluded_missing_label,
                "excluded_missing_task": self.excluded_missing_task,
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
        comparisons: one :class:`MetricComparison` per pair of metrics.
        bootstrap: the resampling settings (seed included).
        warnings: sentences about anything that weakens the numbers.
        table: the prepared data (for plots); not part of :meth:`to_dict`.
    """

    source: str
    label: str
    counts: CorrelationCounts
    metrics: dict[str, MetricResult]
    comparisons: list[MetricComparison]
    bootstrap: BootstrapSettings
    warnings: list[str] = field(default_factory=list)
    table: CorrelationTable | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: ``{"source", "label", "counts", "bootstrap", "metrics", "comparisons", "warnings"}``."""
        from workbench import __version__

        return _clean(
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
                "comparisons": [comparison.to_dict() for comparison in self.comparisons],
                "warnings": list(self.warnings),
            }
        )

    def write_json(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_dict` as indented JSON (parent folders created); returns the path."""
        return atomic_write(path, json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")
