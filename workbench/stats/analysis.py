"""``correlate``: how well metric scores track execution results, with task-level bootstrap CIs."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from workbench.errors import DataError
from workbench.stats.blocks import TaskBlocks
from workbench.stats.direct import DirectTaskStatistics
from workbench.stats.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    BootstrapSettings,
    paired_p_value,
    percentile_interval,
    resampled_task_mean,
    task_resample_counts,
)
from workbench.stats.config import CorrelateConfig
from workbench.stats.correlation import COEFFICIENTS, per_problem_correlations, pooled_correlations
from workbench.stats.inputs import CorrelationTable, TableSource, as_dataset, numeric_columns, prepare_table
from workbench.stats.report import (
    CorrelationCounts,
    CorrelationReport,
    Estimate,
    MetricComparison,
    MetricResult,
)

#: the default sample-id column; used when present (duplicate check) and for joins
DEFAULT_SAMPLE_COLUMN = "sample_id"


def correlate(
    scores: TableSource,
    *,
    metrics: Sequence[str] | None = None,
    label: str = "passed",
    results: TableSource | None = None,
    task_column: str = "task_id",
    sample_column: str | None = None,
    splits: Iterable[str] | None = None,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    offline: bool = False,
) -> CorrelationReport:
    """Correlate metric scores with execution results, pooled and per problem, with task-level
    bootstrap confidence intervals and paired metric comparisons.

    Definitions follow ICE-Score (Zhuo, EACL Findings 2024, section 4): *pooled* ("corpus
    level") is one correlation over all samples; *per-problem* ("example level") is the mean
    over tasks of the within-task correlation, skipping tasks where it is undefined (one sample,
    or a constant metric or label), which are counted. Kendall's tau is tau-b.

    Args:
        scores: the scores table: a path (``.jsonl``/``.json``/``.parquet``/``.csv``, optionally
            ``.gz``; an ICE-Score ``*_grade.json``), a bundled name, a hub id, a
            :class:`~workbench.data.LoadedDataset`, a ``datasets.Dataset`` or a mapping
            column -> values.
        metrics: metric columns; default: every numeric column except the label, task and
            sample columns.
        label: the execution label: 0/1, or a pass ratio in [0, 1]. Read from ``results`` when
            given, else from ``scores``.
        results: an execution-results table (e.g. ``workbench execute`` output: rows
            ``{task_id, sample_id, passed, status, ...}``), joined to ``scores`` on
            (task, sample); unmatched rows on either side are counted in the report.
        task_column: the task id column (both tables).
        sample_column: the sample id column (both tables). Default ``"sample_id"``: required for
            a join; in one-table mode used, when present, to reject duplicate (task, sample) keys.
        splits: splits of the scores table to use (all when empty).
        n_resamples: bootstrap resamples of whole tasks (>= 1).
        confidence: interval level, e.g. 0.95.
        seed: seed of the resampling, so a report can be reproduced exactly.
        offline: never contact the Hugging Face hub.

    Returns:
        a :class:`~workbench.stats.report.CorrelationReport`.

    Raises:
        DataError: unreadable or empty input, missing columns (listing those present), labels
            that are not numbers in [0, 1], duplicate (task, sample) keys, a join without overlap,
            a metric without a single usable value.
        ValueError: ``n_resamples < 1`` or ``confidence`` not in (0, 1).
    """
    settings = BootstrapSettings(n_resamples=n_resamples, confidence=confidence, seed=seed)
    score_data, score_name = as_dataset(scores, splits=splits, offline=offline)
    result_data = None
    names = (score_name, "the results")
    if results is not None:
        result_data, result_name = as_dataset(results, offline=offline)
        names = (score_name, result_name)
    if sample_column is None and (results is not None or DEFAULT_SAMPLE_COLUMN in score_data.column_names):
        sample_column = DEFAULT_SAMPLE_COLUMN
    if metrics is None or len(metrics) == 0:
        metrics = numeric_columns(score_data, exclude=(label, task_column, sample_column or ""))
        if not metrics:
            raise DataError(f"{score_name}: no numeric metric columns found; name them with --metric")
    table = prepare_table(
        score_data,
        metrics=list(metrics),
        label=label,
        task_column=task_column,
        sample_column=sample_column,
        results=result_data,
        names=names,
    )
    source = score_name if result_data is None else f"{score_name} + {names[1]}"
    return correlate_table(table, settings, source=source, label=label)


def run_correlate(
    scores: TableSource,
    config: CorrelateConfig | None = None,
    *,
    json_path: str | os.PathLike[str] | None = None,
    plot_path: str | os.PathLike[str] | None = None,
) -> CorrelationReport:
    """Correlate ``scores`` with execution results as ``config`` says and write the report
    files: what ``workbench correlate`` runs.

    Args:
        scores: the scores table (see :func:`correlate`).
        config: the options (:class:`~workbench.stats.config.CorrelateConfig`; default: all defaults).
        json_path: write the machine-readable report here (:meth:`CorrelationReport.write_json`).
        plot_path: write the figure here (``.png``/``.svg``/``.pdf``): CI forest plot and
            score distributions by outcome (:func:`workbench.stats.plot.plot_report`).

    Returns:
        the :class:`~workbench.stats.report.CorrelationReport`.

    Raises:
        DataError, ValueError: as :func:`correlate`.

    Example::

        from workbench import CorrelateConfig, run_correlate

        report = run_correlate("humaneval-codex-python", CorrelateConfig(metric=["codebleu", "chrf"], resamples=200),
                               json_path="correlation.json")
        print(report.metrics["codebleu"].pooled["kendall"].value)
    """
    config = config or CorrelateConfig()
    report = correlate(
        scores, metrics=list(config.metric) or None, label=config.label, results=config.results,
        task_column=config.task_column, sample_column=config.sample_column, splits=list(config.split) or None,
        n_resamples=config.resamples, confidence=config.confidence, seed=config.seed, offline=config.offline,
    )
    if json_path is not None:
        report.write_json(json_path)
    if plot_path is not None:
        from workbench.stats.plot import plot_report

        plot_report(report, plot_path)
    return report


def correlate_table(
    table: CorrelationTable, settings: BootstrapSettings, *, source: str = "the table", label: str = "passed"
) -> CorrelationReport:
    """The statistics for a prepared :class:`CorrelationTable` (see :func:`correlate`).

    Returns:
        a :class:`CorrelationReport`.

    Raises:
        DataError: a metric has no usable value.
    """
    # The matrices are small (tasks x tasks, resamples x tasks): BLAS threads only add spin-waiting,
    # which on a busy 2-core machine doubled the CPU time (benchmarks/correlate_bench.py).
    with threadpool_limits(limits=1, user_api="blas"):
        return _correlate_table(table, settings, source=source, label=label)


def _correlate_table(table: CorrelationTable, settings: BootstrapSettings, *, source: str, label: str) -> CorrelationReport:
    counts = task_resample_counts(len(table.task_ids), settings)
    warnings: list[str] = []
    results: dict[str, MetricResult] = {}
    resampled_kendall: dict[str, np.ndarray] = {}
    for name, values in table.metrics.items():
        valid = ~np.isnan(values)
        excluded = table.exclusions[name]
        if not valid.any():
            raise DataError(
                f"metric {name!r} has no usable value: {excluded.missing} missing, "
                f"{excluded.non_numeric} non-numeric (e.g. {[e['value'] for e in excluded.examples[:3]]}), "
                f"{excluded.non_finite} infinite"
            )
        if excluded.total:
            warnings.append(
                f"{name}: {excluded.total} rows left out ({excluded.missing} missing, "
                f"{excluded.non_numeric} non-numeric, {excluded.non_finite} infinite)"
            )
        result, kendall = _metric_result(name, table, valid, counts, settings)
        results[name] = result
        resampled_kendall[name] = kendall
        if np.isnan(result.pooled["kendall"].value):
            warnings.append(f"{name}: the pooled correlation is undefined (the metric or the label is constant)")
    comparisons = [
        _compare(a, b, table, counts, settings, resampled_kendall, results)
        for a, b in itertools.combinations(table.metrics, 2)
    ]
    report_counts = _counts(table)
    if report_counts.pass_rate in (0.0, 1.0):
        warnings.append("every sample has the same label: no correlation is defined")
    if table.join is not None and (table.join.unmatched_scores or table.join.unmatched_results):
        warnings.append(
            f"join: {table.join.unmatched_scores} score rows had no execution result and "
            f"{table.join.unmatched_results} result rows had no scores; they are left out"
        )
    return CorrelationReport(
        source=source,
        label=label,
        counts=report_counts,
        metrics=results,
        comparisons=comparisons,
        bootstrap=settings,
        warnings=warnings,
        table=table,
    )


def _blocks_for(
    table: CorrelationTable, metric: str, rows: np.ndarray
) -> tuple[TaskBlocks | DirectTaskStatistics, np.ndarray]:
    """Task statistics over the selected rows, and the global indices of the tasks they cover.
    Task blocks when they fit in memory, else the (slower) direct resampling."""
    present, local = np.unique(table.row_task[rows], return_inverse=True)
    x, y = table.metrics[metric][rows], table.label[rows]
    engine = TaskBlocks if TaskBlocks.fits(x, y, len(present)) else DirectTaskStatistics
    return engine.build(x, y, local), present


def _estimates(point: dict[str, float], resampled: dict[str, np.ndarray], confidence: float) -> dict[str, Estimate]:
    return {
        name: Estimate(
            value=point[name],
            ci=percentile_interval(resampled[name], confidence),
            undefined_resamples=int(np.isnan(resampled[name]).sum()),
        )
        for name in COEFFICIENTS
    }


def _metric_result(
    name: str, table: CorrelationTable, valid: np.ndarray, counts: np.ndarray, settings: BootstrapSettings
) -> tuple[MetricResult, np.ndarray]:
    rows = np.flatnonzero(valid)
    x, y = table.metrics[name][rows], table.label[rows]
    blocks, present = _blocks_for(table, name, rows)
    task_counts = counts[:, present]
    pooled_boot = blocks.resampled(task_counts)
    within = per_problem_correlations(blocks)
    per_problem_boot = {
        coefficient: resampled_task_mean(task_counts, within.values[coefficient], within.defined)
        for coefficient in COEFFICIENTS
    }
    mean_by_outcome = None
    if table.binary_label:
        mean_by_outcome = {
            "passed": float(x[y == 1.0].mean()) if np.any(y == 1.0) else float("nan"),
            "failed": float(x[y == 0.0].mean()) if np.any(y == 0.0) else float("nan"),
        }
    result = MetricResult(
        name=name,
        n_samples=len(rows),
        n_tasks=len(present),
        excluded_rows=table.exclusions[name],
        pooled=_estimates(pooled_correlations(x, y), pooled_boot, settings.confidence),
        per_problem=_estimates(within.means(), per_problem_boot, settings.confidence),
        per_problem_tasks=within.n_tasks,
        excluded_tasks={
            "single_sample": within.single_sample,
            "constant_label": within.constant_label,
            "constant_metric": within.constant_metric,
        },
        mean_by_outcome=mean_by_outcome,
    )
    return result, pooled_boot["kendall"]


def _compare(
    a: str,
    b: str,
    table: CorrelationTable,
    counts: np.ndarray,
    settings: BootstrapSettings,
    resampled_kendall: dict[str, np.ndarray],
    results: dict[str, MetricResult],
) -> MetricComparison:
    valid_a, valid_b = ~np.isnan(table.metrics[a]), ~np.isnan(table.metrics[b])
    if np.array_equal(valid_a, valid_b):
        kendall_a, kendall_b = results[a].pooled["kendall"].value, results[b].pooled["kendall"].value
        boot_a, boot_b = resampled_kendall[a], resampled_kendall[b]
        n_samples = results[a].n_samples
    else:
        # compare on the rows both metrics have, with the same resampled tasks
        rows = np.flatnonzero(valid_a & valid_b)
        if rows.size == 0:
            nan = float("nan")
            return MetricComparison(a, b, nan, nan, nan, (nan, nan), nan, 0)
        y = table.label[rows]
        kendall_a = pooled_correlations(table.metrics[a][rows], y)["kendall"]
        kendall_b = pooled_correlations(table.metrics[b][rows], y)["kendall"]
        blocks_a, present = _blocks_for(table, a, rows)
        blocks_b, _ = _blocks_for(table, b, rows)
        boot_a = blocks_a.resampled(counts[:, present])["kendall"]
        boot_b = blocks_b.resampled(counts[:, present])["kendall"]
        n_samples = len(rows)
    differences = boot_a - boot_b
    return MetricComparison(
        metric_a=a,
        metric_b=b,
        kendall_a=kendall_a,
        kendall_b=kendall_b,
        difference=kendall_a - kendall_b,
        ci=percentile_interval(differences, settings.confidence),
        p_value=paired_p_value(differences),
        n_samples=n_samples,
    )


def _counts(table: CorrelationTable) -> CorrelationCounts:
    per_task = np.bincount(table.row_task, minlength=len(table.task_ids))
    return CorrelationCounts(
        rows=table.rows,
        samples=len(table.label),
        tasks=len(table.task_ids),
        samples_per_task={
            "min": int(per_task.min()),
            "median": float(np.median(per_task)),
            "mean": float(per_task.mean()),
            "max": int(per_task.max()),
        },
        pass_rate=float(table.label.mean()),
        label_kind="binary" if table.binary_label else "ratio",
        excluded_missing_label=table.excluded_missing_label,
        excluded_missing_task=table.excluded_missing_task,
        join=table.join,
    )
