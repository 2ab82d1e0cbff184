"""``correlate``: how well metric scores track execution results, with task-level bootstrap CIs."""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from workbench.errors import DataError, require_argument, require_path
from workbench.correlate.blocks import TaskBlocks
from workbench.correlate.direct import DirectTaskStatistics
from workbench.correlate.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    BootstrapSettings,
    no_interval_reason,
    estimate_outside_interval,
    paired_p_value,
    percentile_interval,
    resamples_problem,
    resampled_task_mean,
    task_resample_counts,
)
from workbench.correlate.combine import DEFAULT_FOLDS, Combination, CombinationError, rank_mean
from workbench.correlate.config import LABEL_KINDS, CorrelateConfig
from workbench.correlate.correlation import COEFFICIENTS, PerProblem, per_problem_correlations, pooled_correlations
from workbench.correlate.fitted import cross_validated_rank_mean
from workbench.correlate.inputs import (
    TableSource,
    as_dataset,
    mostly_numeric_text_columns,
    numeric_columns,
    prepare_table,
)
from workbench.correlate.length import AUTO_LENGTH
from workbench.formatting import count
from workbench.option_words import option_named, option_value
from workbench.correlate.results import (
    CombinationSummary,
    CorrelationCounts,
    CorrelationReport,
    Estimate,
    LengthCorrelation,
    LengthSummary,
    MetricComparison,
    MetricResult,
    PairedDifference,
)
from workbench.correlate.table import CorrelationTable, RowExclusions

#: the two levels every statistic is computed at
LEVELS: tuple[str, ...] = ("pooled", "per_problem")

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
    length_column: str | None = AUTO_LENGTH,
    length_unit: str = "chars",
    combine: Sequence[str | Combination] = (),
    baselines: Sequence[str] = (),
    allow_partial_join: bool = False,
    label_kind: str = "outcome",
    method_limits: Mapping[str, int] | None = None,
    limited_rows: Mapping[str, int] | None = None,
) -> CorrelationReport:
    """Correlate metric scores with execution results (or human grades), pooled and per problem, with task-level
    bootstrap confidence intervals, paired metric comparisons, each metric's correlation with
    completion length, and combined judges.

    Definitions follow ICE-Score (Zhuo, EACL Findings 2024, section 4): *pooled* ("corpus
    level") is one correlation over all samples; *per-problem* ("example level") is the mean
    over tasks of the within-task correlation, skipping tasks where it is undefined (one sample,
    or a constant metric or label), which are counted. Kendall's tau is tau-b.

    Args:
        scores: the scores table: a path (``.jsonl``/``.json``/``.parquet``/``.csv``, optionally
            ``.gz``; an ICE-Score ``*_grade.json``), a bundled name, a hub id, a
            :class:`~workbench.data.LoadedDataset`, a ``datasets.Dataset`` or a mapping
            column -> values.
        metrics: metric columns; default: every numeric column except the label, task, sample
            and length columns and workbench's own bookkeeping columns
            (:data:`~workbench.correlate.inputs.BOOKKEEPING_COLUMNS`: ``generation_truncated``,
            ``seconds``, token counts ...), which are metrics only when named. Members of a combination and baselines are added when missing.
        label: the label: an execution label, 0/1 or a pass ratio in [0, 1]; with
            ``label_kind="graded"``, any numeric grade (e.g. human grades 0-4). Read from
            ``results`` when given, else from ``scores``.
        results: an execution-results table (e.g. ``workbench execute`` output: rows
            ``{task_id, sample_id, passed, status, ...}``), joined to ``scores`` on
            (task, sample); unmatched rows on either side are counted in the report.
        task_column: the task id column (both tables).
        sample_column: the sample id column (both tables). Default ``"sample_id"``: required for
            a join; in one-table mode used, when present, to reject duplicate (task, sample) keys.
        splits: splits of the scores table to use (all when empty).
        n_resamples: bootstrap resamples of whole tasks (>= 1).
        confidence: interval level, e.g. 0.95.
        seed: seed of the resampling (and of the folds of a fitted combination), so a report
            can be reproduced exactly.
        offline: never contact the Hugging Face hub.
        length_column: the generated-code column whose length each metric is correlated with
            (a judge's verbosity bias, :mod:`workbench.correlate.length`): a column of text (or of
            numbers, taken as lengths), ``"auto"`` (the first generation-like column present,
            e.g. ``completion`` or ``generation``; the report says when there is none) or
            ``"none"`` (no length analysis).
        length_unit: ``"chars"`` or ``"tokens"`` (lexical tokens) of a text length column.
        combine: combined judges, each ``"NAME=rank-mean:metric_a,metric_b[,w_a,w_b]"`` (weights
            fixed in advance; equal when omitted) or ``"NAME=rank-mean-cv:metric_a,metric_b"``
            (weights fitted with task-level cross-validation), or a
            :class:`~workbench.correlate.combine.Combination`. Each is evaluated like a metric and
            compared with each of its members.
        baselines: metrics every other metric is compared with (e.g. ``["codebleu", "chrf"]``);
            empty: every pair of metrics is compared.
        allow_partial_join: with ``results``, go on when fewer than half of the score rows have
            a result (by default an error: another dataset, or ids numbered another way).
        label_kind: ``"outcome"`` (default: the label must lie in [0, 1], so a grade named by
            mistake is an error) or ``"graded"`` (an ordinal or continuous grade: any finite
            number; the report then has no pass rate and no means by outcome, and ties in the
            grade are handled by tau-b and the average ranks of Spearman's rho).
        method_limits: method -> N, the methods that have values on the first N rows of ``scores`` only, by
            design (a score run's ``method_limit``): their other rows and the intervals too few tasks
            withhold are notes, not warnings. Default: :func:`score_method_limits` of ``scores`` (the
            ``run.json`` beside a ``scores_wide.jsonl`` path; none for a table given otherwise).
        limited_rows: method -> how many rows of ``scores`` lie within that method's first N scored rows; default
            N itself. Fewer on a selection of the scored rows (one row per cluster, ``--dedup``), whose rows past
            those are the ones the method has no value on by design.

    Returns:
        a :class:`~workbench.correlate.results.CorrelationReport`.

    Raises:
        DataError: unreadable or empty input, missing columns (listing those present), labels
            that are not numbers in [0, 1], duplicate (task, sample) keys, a join without overlap
            or (unless ``allow_partial_join``) one where fewer than half of the score rows join,
            a metric without a single usable value, a named length column that is absent or
            holds neither text nor numbers, a combination that cannot be read or whose name is
            taken.
        ValueError: ``n_resamples < 1``, ``confidence`` not in (0, 1), an unknown length unit or
            label kind.

    Example:
        >>> report = correlate("humaneval-codex-python", metrics=["codebleu", "chrf"],
        ...                    combine=["both=rank-mean:codebleu,chrf"], baselines=["codebleu"])  # doctest: +SKIP
        >>> report.metrics["both"].pooled["kendall"].value, report.metrics["chrf"].length  # doctest: +SKIP
    """
    if label_kind not in LABEL_KINDS:
        raise ValueError(f"label_kind must be one of {', '.join(LABEL_KINDS)}, not {label_kind!r}")
    settings = BootstrapSettings(n_resamples=n_resamples, confidence=confidence, seed=seed)
    combinations = [c if isinstance(c, Combination) else Combination.parse(c) for c in combine]
    score_data, score_name = as_dataset(scores, splits=splits, offline=offline)
    result_data = None
    names = (score_name, "the results")
    if results is not None:
        result_data, result_name = as_dataset(results, offline=offline)
        given_by = option_named("results", plain="")
        if given_by and not given_by.startswith("--"):
            # under workbench run, results the run gave the stage itself: "the execute stage's results PATH"
            result_name = f"{given_by} {result_name}"
        names = (score_name, result_name)
    if sample_column is None and (results is not None or DEFAULT_SAMPLE_COLUMN in score_data.column_names):
        sample_column = DEFAULT_SAMPLE_COLUMN
    left_out: list[str] = []
    if metrics is None or len(metrics) == 0:
        skip = (label, task_column, sample_column or "", length_column or "")
        metrics = numeric_columns(score_data, exclude=skip)
        # a metric column with a few text cells is typed as text: say so rather than drop it unseen
        for name, (texts, present, example) in mostly_numeric_text_columns(score_data, exclude=skip).items():
            left_out.append(f"{name}: not among the metrics chosen automatically, as {texts} of its {present} cells "
                            f"are not numbers (e.g. {example!r}); name it with {option_value('metric', name)} to correlate its numeric rows")
        if not metrics and not combinations:
            raise DataError(f"{score_name}: no numeric metric columns found; name them with {option_named('metric')}"
                            + (f" ({'; '.join(left_out)})" if left_out else ""))
    metrics = list(metrics)
    for combination in combinations:
        if combination.name in score_data.column_names:
            raise CombinationError(
                f"combination {combination.name!r}: {score_name} already has a column of that name; name the combination differently"
            )
    combined = {c.name for c in combinations}
    # a metric only a --baseline or --combine names: its missing column is reported as theirs
    named_by: dict[str, str] = {}
    declared = [(b, f"set it with {option_named('baseline')}") for b in baselines]
    for c in combinations:
        declared += [(m, f"the {option_named('combine')} declaration {c.name}={c.method}:{','.join(c.members)} names it")
                     for m in c.members]
    for name, where in declared:
        if name not in metrics and name not in combined:
            metrics.append(name)
            named_by[name] = where
    table = prepare_table(
        score_data,
        metrics=metrics,
        label=label,
        task_column=task_column,
        sample_column=sample_column,
        results=result_data,
        names=names,
        length_column=length_column,
        length_unit=length_unit,
        metric_hints=named_by,
        allow_partial_join=allow_partial_join,
        compare_code=results is None or results_digests_comparable(results),
        label_kind=label_kind,
    )
    source = score_name if result_data is None else f"{score_name} + {names[1]}"
    report = correlate_table(
        table, settings, source=source, label=label, combinations=combinations, baselines=baselines,
        method_limits=score_method_limits(scores) if method_limits is None else method_limits,
        limited_rows=limited_rows,
    )
    report.warnings[:0] = left_out
    return report


def results_digests_comparable(results: TableSource) -> bool:
    """Whether the ``code_sha256`` of ``results`` can be compared with score rows' (which hash
    the generation alone, as execute does by default): not when the execute summary next to a
    results file (``results.summary.json``) records a ``--prompt-column``, whose prompt its
    digests cover. No summary (a copied file, another table): compared."""
    import json

    from workbench.execute.result_file import summary_path

    if not isinstance(results, (str, os.PathLike)):
        return True
    try:
        settings = json.loads(summary_path(results).read_text(encoding="utf-8")).get("settings")
    except (OSError, ValueError, AttributeError):
        return True
    return not (isinstance(settings, dict) and settings.get("prompt_column"))


def run_correlate(
    scores: TableSource,
    config: CorrelateConfig | None = None,
    *,
    json_path: str | os.PathLike[str] | None = None,
    plot_path: str | os.PathLike[str] | None = None,
    run_dir: str | os.PathLike[str] | None = None,
) -> CorrelationReport:
    """Correlate ``scores`` with execution results as ``config`` says and write the report
    files: what ``workbench correlate`` runs.

    Args:
        scores: the scores table (see :func:`correlate`).
        config: the options (:class:`~workbench.correlate.config.CorrelateConfig`; default: all defaults).
        json_path: write the machine-readable report here (:meth:`CorrelationReport.write_json`).
        plot_path: write the figure here (``.png``/``.svg``/``.pdf``): CI forest plot and
            score distributions by outcome (:func:`workbench.correlate.plot.plot_report`).
        run_dir: the ``workbench run`` folder the inputs lie in (``None``: a job on its own): the
            files write the input paths inside it relative to it (``source``:
            ``<run folder>/score/all/scores_wide.jsonl + ...``;
            :func:`~workbench.resume_guard.shown_path`), so a moved or copied run folder's report
            does not name the old location. The report returned names them as given.

    Returns:
        the :class:`~workbench.correlate.results.CorrelationReport`.

    Raises:
        DataError, ValueError: as :func:`correlate`; DataError also for a ``json_path`` or
            ``plot_path`` that names a folder (checked first).

    Example::

        from workbench import CorrelateConfig, run_correlate

        report = run_correlate("humaneval-codex-python", CorrelateConfig(metric=["codebleu", "chrf"], resamples=200),
                               json_path="correlation.json")
        print(report.metrics["codebleu"].pooled["kendall"].value)
    """
    from workbench.io import check_output_files

    call = "run_correlate(scores, config, json_path=..., plot_path=...)"
    require_path(json_path, "json_path", call, optional=True)
    require_path(plot_path, "plot_path", call, optional=True)
    check_output_files({"--json": json_path, "--plot": plot_path})  # before the bootstrap, not after it
    config = config or CorrelateConfig()
    require_argument(config, CorrelateConfig, "config", call)
    options = dict(
        metrics=list(config.metric) or None, label=config.label, results=config.results,
        task_column=config.task_column, sample_column=config.sample_column,
        n_resamples=config.resamples, confidence=config.confidence, seed=config.seed, offline=config.offline,
        length_column=config.length_column, length_unit=config.length_unit, combine=config.combinations(),
        baselines=config.baseline, allow_partial_join=config.allow_partial_join, label_kind=config.label_kind,
    )
    if config.dedup is None:
        report = correlate(scores, splits=list(config.split) or None, **options)
    else:
        from workbench.correlate.per_cluster import one_row_per_cluster

        dataset, name = as_dataset(scores, splits=list(config.split) or None, offline=config.offline)
        id_columns = ([c.strip() for c in config.dedup_id_column.split(",") if c.strip()] if config.dedup_id_column
                      else [config.task_column, config.sample_column or DEFAULT_SAMPLE_COLUMN])
        subset, selection = one_row_per_cluster(dataset, config.dedup, id_columns,
                                                allow_partial_join=config.allow_partial_join)
        # the scores are passed on as a table: the score run's method_limit is read from the path here, and
        # one row per cluster keeps of a limited method's first N rows those the selection kept
        limits = score_method_limits(scores)
        report = correlate(dataset, **options, method_limits=limits)
        report.source = name if config.results is None else f"{name} + {report.source.split(' + ', 1)[1]}"
        report.deduplicated = correlate(subset, **options, method_limits=limits, limited_rows={
            method: selection.kept_among_first(limit) for method, limit in limits.items()})
        report.deduplicated.source = f"{report.source}, one row per cluster of {config.dedup}"
        if selection.clusters_without_kept_row:
            shown = ", ".join(repr(row) for row in selection.absent_kept_rows)
            report.deduplicated.notes.append(
                f"{count(selection.clusters_without_kept_row, 'cluster')} left out: the row the dedup kept "
                f"(e.g. {shown}) is not in the score table, and the rows it removed do not stand in")
        report.per_cluster = selection
        report.per_cluster_differences = per_cluster_differences(report, report.deduplicated)
    if plot_path is not None:
        # an earlier run's figure must not outlive its JSON: if plotting is interrupted, no figure beats a stale one
        Path(plot_path).unlink(missing_ok=True)
    written = report if run_dir is None else _paths_in_run_folder(report, (scores, config.results, config.dedup),
                                                                   run_dir)
    if json_path is not None:
        written.write_json(json_path)
    if plot_path is not None:
        from workbench.correlate.plot import plot_report

        plot_report(written, plot_path)
    return report


def _paths_in_run_folder(report: CorrelationReport, inputs: Iterable[Any],
                         run_dir: str | os.PathLike[str]) -> CorrelationReport:
    """A copy of ``report`` whose ``source`` (and the one-row-per-cluster report's ``source`` and
    dedup folder) names each of ``inputs`` (the paths :func:`run_correlate` was given; other
    inputs are skipped) that lies inside ``run_dir`` relative to it
    (:func:`~workbench.resume_guard.shown_path`)."""
    from workbench.resume_guard import shown_path

    names = {os.fspath(given): shown_path(given, run_dir) for given in inputs if isinstance(given, (str, os.PathLike))}
    names = {given: shown for given, shown in names.items() if given != shown}
    if not names:
        return report

    def renamed(text: str) -> str:
        for given, shown in sorted(names.items(), key=lambda item: -len(item[0])):  # the longest name first
            text = text.replace(given, shown)
        return text

    written = dataclasses.replace(report, source=renamed(report.source))
    if report.deduplicated is not None:
        written.deduplicated = dataclasses.replace(report.deduplicated, source=renamed(report.deduplicated.source))
    if report.per_cluster is not None:  # a ClusterSelection
        written.per_cluster = dataclasses.replace(report.per_cluster,
                                                  dedup_output=renamed(report.per_cluster.dedup_output))
    return written


def correlate_table(
    table: CorrelationTable,
    settings: BootstrapSettings,
    *,
    source: str = "the table",
    label: str = "passed",
    combinations: Sequence[Combination] = (),
    baselines: Sequence[str] = (),
    method_limits: Mapping[str, int] | None = None,
    limited_rows: Mapping[str, int] | None = None,
) -> CorrelationReport:
    """The statistics for a prepared :class:`CorrelationTable` (see :func:`correlate`).

    ``method_limits`` (method -> N: the score run's ``method_limit``, :func:`score_method_limits`)
    says which metrics have values on the first N samples only, by design: their other rows and
    the intervals too few tasks withhold are told in :attr:`CorrelationReport.notes`, not warnings.
    ``limited_rows`` (method -> rows of this table among those N; default N) is smaller on a selection
    of the scored rows (one row per cluster).

    Returns:
        a :class:`CorrelationReport`.

    Raises:
        DataError: no metric has a usable value (a metric or combination without any is left out
            of every table, with a warning, while another has values); a combination or baseline
            names a metric that is not in the table, or a combination's name is taken.
    """
    table, summaries = add_combinations(table, combinations, seed=settings.seed)
    for baseline in baselines:
        if baseline not in table.metrics:
            raise DataError(f"baseline {baseline!r} is not among the metrics {list(table.metrics)}")
    # The matrices are small (tasks x tasks, resamples x tasks): BLAS threads only add spin-waiting,
    # which on a busy 2-core machine doubled the CPU time (benchmarks/correlate_bench.py).
    with threadpool_limits(limits=1, user_api="blas"):
        report = _correlate_table(table, settings, source=source, label=label, baselines=tuple(dict.fromkeys(baselines)),
                                  combined=summaries, method_limits=dict(method_limits or {}),
                                  limited_rows=dict(limited_rows or {}))
    return report


def score_method_limits(scores: TableSource) -> dict[str, int]:
    """The ``method_limit`` of the ``workbench score`` run whose wide table ``scores`` is, from the
    ``run.json`` beside it: method -> N (that method scored the first N selected samples only);
    empty for another table, or a run without limits.

    Args:
        scores: the scores input of :func:`correlate` (a path, a bundled name, a dataset).
    """
    import json

    from workbench.score.wide_table import RUN_FILE, WIDE_SCORES_FILE

    if not isinstance(scores, (str, os.PathLike)) or Path(scores).name != WIDE_SCORES_FILE:
        return {}
    try:
        options = json.loads((Path(scores).parent / RUN_FILE).read_text(encoding="utf-8")).get("options") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    from workbench.score.config import parse_method_limit

    parsed = (parse_method_limit(entry) for entry in options.get("method_limit") or ())
    return dict(entry for entry in parsed if entry is not None)


def add_combinations(
    table: CorrelationTable, combinations: Sequence[Combination], *, seed: int = 0, folds: int = DEFAULT_FOLDS
) -> tuple[CorrelationTable, dict[str, CombinationSummary]]:
    """Add each combination's values to the table as a metric column.

    Args:
        table: the prepared table; every member must be one of its metrics.
        combinations: the declarations.
        seed: seeds the task folds of ``rank-mean-cv``.
        folds: task folds of ``rank-mean-cv``.

    Returns:
        ``(table with the combined columns, name -> CombinationSummary)``. A combined value is
        missing (counted) on rows where any member is.

    Raises:
        CombinationError: a member that is not a metric of the table, or a name already used.
    """
    if not combinations:
        return table, {}
    metrics, exclusions = dict(table.metrics), dict(table.exclusions)
    summaries: dict[str, CombinationSummary] = {}
    for combination in combinations:
        if combination.name in metrics:
            raise CombinationError(f"combination {combination.name!r}: that name is already a metric; name it differently")
        missing = [m for m in combination.members if m not in table.metrics]
        if missing:
            raise CombinationError(
                f"combination {combination.name!r}: {missing} not among the metrics {list(table.metrics)}"
            )
        columns = [table.metrics[m] for m in combination.members]
        if combination.fitted:
            try:
                fitted = cross_validated_rank_mean(columns, table.label, table.row_task, folds=folds, seed=seed)
            except CombinationError as error:  # say which declaration, and the alternative
                raise CombinationError(
                    f"combination {combination.name!r} ({combination.method}): {error}; declare the weights instead: "
                    f"{combination.name}=rank-mean:{','.join(combination.members)}") from None
            values = fitted.values
            distinct = list(dict.fromkeys(fitted.fold_weights))
            shown = (
                f"the same in every fold: {_weights_text(combination.members, distinct[0])}" if len(distinct) == 1
                else "per fold: " + "; ".join(_weights_text(combination.members, w) for w in fitted.fold_weights)
            )
            note = (
                f"weights FITTED on these rows with {fitted.folds}-fold task-level cross-validation (each sample's "
                f"value uses weights chosen on the other folds' tasks; {shown}); not fixed in advance"
            )
            summary = CombinationSummary(combination, note, fitted.fold_weights, fitted.folds)
        else:
            values = rank_mean(columns, combination.weights)
            total = sum(combination.weights)
            shown = _weights_text(combination.members, [w / total for w in combination.weights])
            # correlate cannot know when the weights were chosen: it says what it knows, and what a fair test needs
            note = (f"weights as declared ({shown}), not fitted to these rows; a fair test only if they were fixed "
                    f"before the data was seen (correlate cannot check that: record the declaration first)")
            summary = CombinationSummary(combination, note)
        complete = ~np.any([np.isnan(column) for column in columns], axis=0)
        constant = [m for m, column in zip(combination.members, columns) if len(np.unique(column[complete])) <= 1]
        if constant:  # its ranks are all tied: it adds nothing, and the combination ranks as the other members do
            others = len(combination.members) - len(constant)
            summary = dataclasses.replace(summary, weights_note=(
                f"{summary.weights_note}; {', '.join(map(repr, constant))} takes one value on the rows where every "
                f"member has one, so the combination orders them as the other {'member' if others == 1 else 'members'} "
                "alone"))
        metrics[combination.name] = values
        exclusions[combination.name] = RowExclusions(missing=int(np.isnan(values).sum()))
        summaries[combination.name] = summary
    return dataclasses.replace(table, metrics=metrics, exclusions=exclusions), summaries


def _weights_text(members: Sequence[str], weights: Sequence[float]) -> str:
    return ", ".join(f"{m} {w:.3g}" for m, w in zip(members, weights))


@dataclass(frozen=True)
class _Statistics:
    """Point estimates and resampled values of one pairing (x against y) on some rows.

    Attributes:
        point: level -> coefficient -> value.
        resampled: level -> coefficient -> ``(B,)`` values over the task resamples.
        within: the per-task correlations.
        n_samples, n_tasks: rows and tasks used.
    """

    point: dict[str, dict[str, float]]
    resampled: dict[str, dict[str, np.ndarray]]
    within: PerProblem
    n_samples: int
    n_tasks: int

    def no_interval(self, level: str) -> str | None:
        """Why the level's statistics get no interval (too few tasks or samples), or ``None``."""
        tasks = self.n_tasks if level == "pooled" else self.within.n_tasks
        return no_interval_reason(tasks, self.n_samples)

    def estimates(self, level: str, confidence: float) -> dict[str, Estimate]:
        withheld = self.no_interval(level)
        nan = float("nan")
        return {
            name: Estimate(
                value=self.point[level][name],
                ci=(nan, nan) if withheld else percentile_interval(self.resampled[level][name], confidence),
                undefined_resamples=int(np.isnan(self.resampled[level][name]).sum()),
                no_interval=withheld,
            )
            for name in COEFFICIENTS
        }


def _statistics(x_all: np.ndarray, y_all: np.ndarray, table: CorrelationTable, rows: np.ndarray, counts: np.ndarray) -> _Statistics:
    """Pooled and per-problem coefficients of ``x`` against ``y`` on ``rows``, and their task
    resamples (``counts``, drawn once for all metrics so every comparison is paired). Task
    blocks when they fit in memory, else the (slower) direct resampling."""
    present, local = np.unique(table.row_task[rows], return_inverse=True)
    x, y = x_all[rows], y_all[rows]
    engine = TaskBlocks if TaskBlocks.fits(x, y, len(present)) else DirectTaskStatistics
    blocks = engine.build(x, y, local)
    task_counts = counts[:, present]
    within = per_problem_correlations(blocks)
    per_problem_boot = {
        coefficient: resampled_task_mean(task_counts, within.values[coefficient], within.defined)
        for coefficient in COEFFICIENTS
    }
    return _Statistics(
        point={"pooled": pooled_correlations(x, y), "per_problem": within.means()},
        resampled={"pooled": blocks.resampled(task_counts), "per_problem": per_problem_boot},
        within=within,
        n_samples=len(rows),
        n_tasks=len(present),
    )


def _correlate_table(
    table: CorrelationTable,
    settings: BootstrapSettings,
    *,
    source: str,
    label: str,
    baselines: tuple[str, ...],
    combined: dict[str, CombinationSummary],
    method_limits: dict[str, int] | None = None,
    limited_rows: dict[str, int] | None = None,
) -> CorrelationReport:
    counts = task_resample_counts(len(table.task_ids), settings)
    warnings: list[str] = []
    notes: list[str] = []
    method_limits = method_limits or {}
    limited_rows = limited_rows or {}
    too_few = resamples_problem(settings.n_resamples, settings.confidence)
    if too_few:  # the commands refuse this; a library call is told in the output
        warnings.append(f"bootstrap: {too_few}")
    results: dict[str, MetricResult] = {}
    statistics: dict[str, _Statistics] = {}
    has_length = table.lengths is not None and not np.all(np.isnan(table.lengths))
    unusable: list[str] = []
    for name, values in table.metrics.items():
        valid = ~np.isnan(values)
        excluded = table.exclusions[name]
        if not valid.any():
            # one judge that failed on every row (a small model's parse errors) must not sink the others:
            # it is left out and said; only a table where no metric has a value is an error
            if name in combined:
                unusable.append(f"combination {name!r}: no row has a value of every member "
                                f"{list(combined[name].combination.members)}")
            else:
                examples = f" (e.g. {[e['value'] for e in excluded.examples[:3]]})" if excluded.non_numeric else ""
                unusable.append(
                    f"metric {name!r} has no usable value: {excluded.missing} missing, "
                    f"{excluded.non_numeric} non-numeric{examples}, {excluded.non_finite} infinite"
                )
            continue
        # a method the score run limited (method_limit N): the rows past its first N have no value by design
        # (on one row per cluster, past those of the N the selection kept)
        limit = method_limits.get(name) if name not in combined else None
        within = limited_rows.get(name, limit) if limit is not None else None
        by_design = min(excluded.missing, max(0, len(values) - within)) if within is not None else 0
        if excluded.total > by_design:
            missing = excluded.missing - by_design
            why = (
                "a member has no value there" if name in combined
                else f"{missing} missing, {excluded.non_numeric} non-numeric, {excluded.non_finite} infinite"
            )
            warnings.append(f"{name}: {count(excluded.total - by_design, 'row')} left out ({why})")
        statistics[name] = _statistics(values, table.label, table, np.flatnonzero(valid), counts)
        length = None
        if has_length:
            with_length = np.flatnonzero(valid & ~np.isnan(table.lengths))
            if with_length.size:
                length = _length_correlation(_statistics(values, table.lengths, table, with_length, counts), settings)
        results[name] = _metric_result(name, table, valid, statistics[name], settings, length)
        if np.isnan(results[name].pooled["kendall"].value):
            warnings.append(f"{name}: the pooled correlation is undefined (the metric or the label is constant)")
        elif np.isnan(results[name].per_problem["kendall"].value):
            # e.g. a judge that scores every sample of a task alike: nothing to rank within a task
            excluded = results[name].excluded_tasks
            parts = [f"{label} in {excluded[key]}" for key, label in
                     (("constant_label", "constant label"), ("constant_metric", "constant metric"),
                      ("single_sample", "a single sample")) if excluded.get(key)]
            warnings.append(f"{name}: the per-problem correlation is undefined in every task ({', '.join(parts)}): "
                            "no task ranks its samples by both the metric and the label")
        no_interval: dict[str, str] = {}
        for level in LEVELS:
            withheld = statistics[name].no_interval(level)
            value = statistics[name].point[level]["kendall"]
            if withheld and not np.isnan(value):  # an undefined value needs no interval to be withheld
                no_interval[level.replace("_", "-")] = withheld
        if limit is not None and by_design:
            # one line: what the limit leaves, and the intervals its few tasks cannot carry
            said = f"{name}: scored on {count(int(valid.sum()), 'sample')} of the {len(values)}, as the score run's " \
                   f"method_limit {name}={limit} asks (a prefix of its selection; the other rows are not scored)"
            if no_interval:
                reasons = list(dict.fromkeys(no_interval.values()))
                said += f"; no {' or '.join(no_interval)} interval: {'; '.join(reasons)}"
            notes.append(said)
        else:
            warnings += [f"{name}: small n: no {level} interval: {why}" for level, why in no_interval.items()]
    if not results:
        raise DataError("; ".join(unusable))
    warnings[:0] = [f"{problem}: left out of every table" for problem in unusable]
    kept = [name for name in table.metrics if name in results]
    baselines = tuple(name for name in baselines if name in results)
    combined = {name: summary for name, summary in combined.items() if name in results}
    comparisons = [
        _compare(a, b, table, counts, settings, statistics) for a, b in _pairs(kept, baselines, combined)
    ]
    warnings.extend(_outside_interval_warnings(results, comparisons))
    report_counts = _counts(table)
    if table.label.size and float(table.label.min()) == float(table.label.max()):
        warnings.append("every sample has the same label: no correlation is defined")
    if table.join is not None and table.join.unmatched_scores:
        # result rows without scores are no warning: the scores of a subset (the LLM methods' --limit)
        # join a part of the results by design; the join line and the JSON's join counts say how many
        missing = table.join.unmatched_scores
        first = table.join.examples.get("scores_without_results") or []
        shown = ", ".join(f"({task}, {sample})" for task, sample in first)
        which = "" if not shown else f" ({shown})" if missing == 1 else f" (the first: {shown})"
        warnings.append(f"join: {count(missing, 'score row')} had no execution result and "
                        f"{'is' if missing == 1 else 'are'} left out{which}")
    if table.join is not None and table.excluded_missing_sample:
        unkeyed = table.excluded_missing_sample
        rows = ", ".join(number for _, number in table.join.examples.get("scores_without_sample_id") or [])
        which = f"row {rows}" if unkeyed == 1 else f"rows {rows}" if unkeyed <= 3 else f"the first: rows {rows}"
        warnings.append(f"join: {count(unkeyed, 'score row')} {'has' if unkeyed == 1 else 'have'} no sample id in "
                        f"{table.join.key[1]!r} (null, NaN or blank; {which}, counting from 1) and "
                        f"{'is' if unkeyed == 1 else 'are'} left out: no key to join; fill "
                        f"{'it' if unkeyed == 1 else 'them'} in, or name the sample id column with "
                        f"{option_named('sample_column')}")
    if table.join is not None and table.join.code_mismatches:
        warnings.append(
            f"join: {table.join.code_mismatches} joined rows record other code in the scores than in the results "
            f"(code_sha256); they are left out ({option_named('allow_partial_join')})"
        )
    if table.join is not None and table.join.label_disagreements and table.join.label_disagreements[0]:
        # information, not a fault: a data set's recorded outcomes (ICE-Score's `passed`) next to this execution's
        differ, compared = table.join.label_disagreements
        notes.append(
            f"label: the scores have a {label!r} column of their own that differs from the results' on {differ} of "
            f"{compared} joined rows; the results' is the label used"
        )
    length_summary = _length_summary(table, counts, settings, warnings, notes)
    return CorrelationReport(
        source=source,
        label=label,
        counts=report_counts,
        metrics=results,
        comparisons=comparisons,
        bootstrap=settings,
        warnings=warnings,
        notes=notes,
        table=table,
        length=length_summary,
        combinations=combined,
        baselines=baselines,
        statistics=statistics,
    )


def _outside_interval_warnings(results: dict[str, MetricResult], comparisons: list[MetricComparison]) -> list[str]:
    """One warning per metric or comparison with an estimate outside its own interval
    (:func:`~workbench.correlate.bootstrap.estimate_outside_interval`)."""
    out: list[str] = []

    def warn(subject: str, misses: list[str]) -> None:
        if misses:
            out.append(
                f"{subject}: estimate outside its own bootstrap interval: {'; '.join(misses)}. The task resamples lie on one "
                "side of the estimate, as with nearly separated data and ties, where the statistic hardly varies "
                "between samples of tasks and a task drawn twice shifts it: do not read that interval "
                "(docs/correlate.md#when-the-estimate-lies-outside-its-interval)"
            )

    for name, result in results.items():
        warn(name, [
            f"{level.replace('_', '-')} {coefficient} {estimates[coefficient].value:.3f} "
            f"[{estimates[coefficient].ci[0]:.3f}, {estimates[coefficient].ci[1]:.3f}]"
            for level, estimates in (("pooled", result.pooled), ("per_problem", result.per_problem))
            for coefficient in COEFFICIENTS
            if estimates[coefficient].outside_interval
        ])
    for comparison in comparisons:
        warn(f"{comparison.metric_a} - {comparison.metric_b}", [
            f"the {level.replace('_', '-')} {coefficient} difference {d.difference:.3f} [{d.ci[0]:.3f}, {d.ci[1]:.3f}]"
            for level, by_coefficient in comparison.differences.items()
            for coefficient, d in by_coefficient.items()
            if estimate_outside_interval(d.difference, *d.ci)
        ])
    return out


def _length_correlation(statistics: _Statistics, settings: BootstrapSettings) -> LengthCorrelation:
    return LengthCorrelation(
        n_samples=statistics.n_samples,
        n_tasks=statistics.n_tasks,
        pooled=statistics.estimates("pooled", settings.confidence),
        per_problem=statistics.estimates("per_problem", settings.confidence),
        per_problem_tasks=statistics.within.n_tasks,
    )


def _length_summary(
    table: CorrelationTable, counts: np.ndarray, settings: BootstrapSettings, warnings: list[str], notes: list[str]
) -> LengthSummary:
    """The length's own correlation with the label, or the note saying why there is none. A
    length analysis the default ``--length-column auto`` found no column for is told among
    ``notes``, not warnings: nobody asked for it by name (a named column that is not there is an
    error, :func:`workbench.correlate.inputs.prepare_table`), and the metrics' numbers
    are whole without it; one switched off (``none``) is said in the JSON only."""
    if table.lengths is None:
        if table.length_note and "switched off" not in table.length_note:
            notes.append(table.length_note)
        return LengthSummary(source=None, note=table.length_note)
    known = ~np.isnan(table.lengths)
    missing = int((~known).sum())
    if missing:
        warnings.append(
            f"length: {count(missing, 'row')} {'has' if missing == 1 else 'have'} no {table.length_source.column!r} value; "
            f"{'it is' if missing == 1 else 'they are'} left out of the length correlations"
        )
    if not known.any():
        return LengthSummary(source=table.length_source, note="no row has a length", missing=missing)
    execution = _length_correlation(_statistics(table.lengths, table.label, table, np.flatnonzero(known), counts), settings)
    return LengthSummary(
        source=table.length_source, missing=missing, execution=execution, mean=float(table.lengths[known].mean())
    )


def _metric_result(
    name: str,
    table: CorrelationTable,
    valid: np.ndarray,
    statistics: _Statistics,
    settings: BootstrapSettings,
    length: LengthCorrelation | None,
) -> MetricResult:
    x, y = table.metrics[name][valid], table.label[valid]
    mean_by_outcome = None
    if table.binary_label:
        mean_by_outcome = {
            "passed": float(x[y == 1.0].mean()) if np.any(y == 1.0) else float("nan"),
            "failed": float(x[y == 0.0].mean()) if np.any(y == 0.0) else float("nan"),
        }
    within = statistics.within
    return MetricResult(
        name=name,
        n_samples=statistics.n_samples,
        n_tasks=statistics.n_tasks,
        excluded_rows=table.exclusions[name],
        pooled=statistics.estimates("pooled", settings.confidence),
        per_problem=statistics.estimates("per_problem", settings.confidence),
        per_problem_tasks=within.n_tasks,
        excluded_tasks={
            "single_sample": within.single_sample,
            "constant_label": within.constant_label,
            "constant_metric": within.constant_metric,
        },
        mean_by_outcome=mean_by_outcome,
        length=length,
    )


def _pairs(
    names: list[str], baselines: tuple[str, ...], combined: dict[str, CombinationSummary]
) -> list[tuple[str, str]]:
    """The (a, b) pairs to compare, a minus b: every pair, or each metric against each baseline;
    and always each combination against each member. A combination comes first in its pairs."""
    if baselines:
        pairs = [(m, b) for b in baselines for m in names if m != b]
    else:
        pairs = list(itertools.combinations(names, 2))
    pairs += [(name, member) for name, summary in combined.items() for member in summary.combination.members]
    out: dict[frozenset, tuple[str, str]] = {}
    for a, b in pairs:
        if b in combined and a not in combined:
            a, b = b, a
        out.setdefault(frozenset((a, b)), (a, b))
    return list(out.values())


def _compare(
    a: str,
    b: str,
    table: CorrelationTable,
    counts: np.ndarray,
    settings: BootstrapSettings,
    statistics: dict[str, _Statistics],
) -> MetricComparison:
    valid_a, valid_b = ~np.isnan(table.metrics[a]), ~np.isnan(table.metrics[b])
    if np.array_equal(valid_a, valid_b):
        stats_a, stats_b = statistics[a], statistics[b]
    else:
        # compare on the rows both metrics have, with the same resampled tasks
        rows = np.flatnonzero(valid_a & valid_b)
        if rows.size == 0:
            nan = float("nan")
            empty = PairedDifference(nan, nan, nan, (nan, nan), nan)
            return MetricComparison(a, b, {level: {c: empty for c in COEFFICIENTS} for level in LEVELS}, 0, 0)
        stats_a = _statistics(table.metrics[a], table.label, table, rows, counts)
        stats_b = _statistics(table.metrics[b], table.label, table, rows, counts)
    differences: dict[str, dict[str, PairedDifference]] = {}
    for level in LEVELS:
        differences[level] = {c: _paired_difference(stats_a, stats_b, level, c, settings) for c in COEFFICIENTS}
    return MetricComparison(a, b, differences, stats_a.n_samples, stats_a.n_tasks)


def _paired_difference(stats_a: _Statistics, stats_b: _Statistics, level: str, coefficient: str,
                       settings: BootstrapSettings) -> PairedDifference:
    """A minus B of one coefficient at one level, both resampled on the same task draws: the
    percentile interval and the two-sided bootstrap p-value of the resampled differences; neither
    when either side has too few tasks or samples for an interval."""
    nan = float("nan")
    withheld = stats_a.no_interval(level) or stats_b.no_interval(level)
    resampled = stats_a.resampled[level][coefficient] - stats_b.resampled[level][coefficient]
    value_a, value_b = stats_a.point[level][coefficient], stats_b.point[level][coefficient]
    return PairedDifference(
        value_a=value_a,
        value_b=value_b,
        difference=value_a - value_b,
        ci=(nan, nan) if withheld else percentile_interval(resampled, settings.confidence),
        p_value=nan if withheld else paired_p_value(resampled),
        undefined_resamples=int(np.isnan(resampled).sum()),
        no_interval=withheld,
    )


def per_cluster_differences(
    report: CorrelationReport, deduplicated: CorrelationReport
) -> dict[str, dict[str, dict[str, PairedDifference]]]:
    """Each coefficient on one row per near-duplicate cluster minus the same on all rows
    (``correlate --dedup``), paired on the task draws of the all-rows report.

    Both reports resample whole tasks with the same seed, tasks numbered in canonical order
    (:mod:`workbench.data.task_order`). The deduplicated rows are a subset of all rows, so their
    tasks are among all rows' tasks; when they are the same tasks (a cluster always keeps one
    row, so only a task whose every labelled row was dropped is missing) the two reports drew the
    same resamples and their resampled coefficients are subtracted draw by draw. Otherwise the
    deduplicated statistics are recomputed on the all-rows draws, each task keeping its column.
    Interval: percentile; p: :func:`~workbench.correlate.bootstrap.paired_p_value` (Efron &
    Tibshirani 1993, section 16.4, the paired design); none when either side has too few tasks or
    samples (:func:`~workbench.correlate.bootstrap.no_interval_reason`).

    Args:
        report: the all-rows report (:func:`correlate_table`'s, with its table and statistics).
        deduplicated: the report on one row per cluster, same settings.

    Returns:
        metric -> level (``pooled``, ``per_problem``) -> coefficient -> :class:`PairedDifference`
        (``value_a``: one row per cluster, ``value_b``: all rows); a metric the deduplicated report
        lacks (no usable value there) is left out.

    Raises:
        ValueError: the reports were made with other bootstrap settings, or lack their statistics
            (not made by :func:`correlate_table`).
    """
    if report.bootstrap != deduplicated.bootstrap:
        raise ValueError(f"the two reports were made with other bootstrap settings ({report.bootstrap} vs "
                         f"{deduplicated.bootstrap}); a paired difference needs the same draws")
    full, subset = report.table, deduplicated.table
    if full is None or subset is None or not report.statistics:
        raise ValueError("both reports must come from correlate_table (they carry their table and resamples)")
    settings = report.bootstrap
    same_tasks = list(full.task_ids) == list(subset.task_ids)
    counts = None if same_tasks else task_resample_counts(len(full.task_ids), settings)
    out: dict[str, dict[str, dict[str, PairedDifference]]] = {}
    with threadpool_limits(limits=1, user_api="blas"):
        for name, mine in report.statistics.items():
            theirs = deduplicated.statistics.get(name)
            if theirs is None:
                continue
            if not same_tasks:
                position = {task: index for index, task in enumerate(full.task_ids)}
                unknown = [task for task in subset.task_ids if task not in position]
                if unknown:
                    raise ValueError(f"the deduplicated rows have tasks all rows lack (e.g. {unknown[0]!r})")
                codes = np.array([position[task] for task in subset.task_ids], dtype=np.int64)
                remapped = dataclasses.replace(subset, row_task=codes[subset.row_task], task_ids=list(full.task_ids))
                values = subset.metrics[name]
                theirs = _statistics(values, subset.label, remapped, np.flatnonzero(~np.isnan(values)), counts)
            out[name] = {level: {c: _paired_difference(theirs, mine, level, c, settings) for c in COEFFICIENTS}
                         for level in LEVELS}
    return out


def _label_summary(label: np.ndarray) -> dict[str, Any]:
    """``{"mean", "min", "max", "distinct", "values"}`` of a graded label; ``values``: value -> count
    when there are at most 20 distinct values (an ordinal scale), else ``None``."""
    distinct, counts = np.unique(label, return_counts=True)
    return {
        "mean": float(label.mean()), "min": float(label.min()), "max": float(label.max()), "distinct": int(distinct.size),
        "values": {f"{v:g}": int(c) for v, c in zip(distinct, counts)} if distinct.size <= 20 else None,
    }


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
        pass_rate=None if table.graded_label else float(table.label.mean()),
        label_kind="graded" if table.graded_label else "binary" if table.binary_label else "ratio",
        label_summary=_label_summary(table.label) if table.graded_label else None,
        excluded_missing_label=table.excluded_missing_label,
        excluded_missing_task=table.excluded_missing_task,
        excluded_missing_sample=table.excluded_missing_sample,
        join=table.join,
    )
