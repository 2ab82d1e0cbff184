"""One call for the whole job: read a dedup output and a metric table, join them, and compute
every setting of the duplication and contamination analyses (what ``workbench bias`` runs)."""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from workbench.bias.config import BiasConfig
from workbench.bias.dedup_output import DedupOutput, read_dedup_output
from workbench.bias.intervals import Interval, SettingDifference, UnitBootstrap, kendall_difference, unit_indices
from workbench.bias.metric_table import LISTED_IDS, MetricTable, read_metric_table
from workbench.bias.results import Analysis, BiasReport, JoinCounts, MetricBias
from workbench.bias.settings import (
    COMPARED_SETTINGS,
    CONTAMINATION_SETTINGS,
    SINGLE_SET_SETTINGS,
    TRAIN_TEST_SETTINGS,
    decompose,
    single_set_masks,
    train_test_masks,
)
from workbench.correlate.bootstrap import BootstrapSettings
from workbench.data.samples import SAMPLE_COLUMN, TASK_COLUMN
from workbench.data.task_order import natural_key
from workbench.errors import DataError, MissingColumnError, require_argument, require_path
from workbench.formatting import count
from workbench.option_words import option_named, option_set, option_value


class _Rows:
    """The joined rows (in canonical order of their ids): their ids, and what the dedup output says about each."""

    def __init__(self, output: DedupOutput, table: MetricTable, id_columns: Sequence[str]):
        splits = [output.split_of(row, id_columns) for row in table.ids]
        joined = np.array([s is not None for s in splits], dtype=bool)
        self.unjoined_ids = [row for row, s in zip(table.ids, splits) if s is None]
        # the joined rows in canonical id order: sums over rows are made in one order whatever the
        # table's row order, so a shuffled table gives the same numbers to the last bit
        self.index = np.array(sorted(np.flatnonzero(joined).tolist(), key=lambda i: natural_key(table.ids[i])), dtype=np.int64)
        self.ids = [table.ids[i] for i in self.index]
        self.splits = [splits[i] for i in self.index]
        self.values = {name: column[self.index] for name, column in table.values.items()}
        self.tasks = [table.tasks[i] for i in self.index] if table.tasks is not None else None
        self.cluster = np.array([output.cluster_of.get(row, -1) for row in self.ids], dtype=np.int64)
        self.position = np.array([output.position_of.get(row, 0) for row in self.ids], dtype=np.int64)
        # the cluster's kept row (DedupOutput.is_cluster_row: a decontamination keeps more than one)
        self.kept = np.array([output.is_cluster_row(row) for row in self.ids], dtype=bool)
        self._clusters = output.clusters

    def __len__(self) -> int:
        return len(self.ids)

    def units(self, by_task: bool) -> tuple[np.ndarray, str]:
        """Bootstrap unit of each row: its task, or its cluster (a row outside clusters alone).

        Units are numbered in canonical order (:func:`~workbench.bias.intervals.unit_indices`): a
        cluster by its first member id in that order (over all of ``clusters.json``'s members, so
        not by its place in the file), a row outside clusters by its own id; ids are unique and
        clusters disjoint, so no two units share a key."""
        if by_task and self.tasks is not None:
            return unit_indices(self.tasks), "task"
        first = {c: min(self._clusters[c], key=natural_key) for c in set(self.cluster.tolist()) if c >= 0}
        return unit_indices([first[c] if c >= 0 else row for row, c in zip(self.ids, self.cluster)]), "cluster"


def run_bias(
    dedup_output: str | os.PathLike[str],
    metrics_source: object,
    config: BiasConfig | None = None,
    *,
    json_path: str | os.PathLike[str] | None = None,
    plot_path: str | os.PathLike[str] | None = None,
    run_dir: str | os.PathLike[str] | None = None,
) -> BiasReport:
    """How much duplicates and contamination move per-row metrics: what ``workbench bias`` runs.

    For a train/test corpus, each metric in Allamanis 2019's test settings (fully biased,
    cross-set biased, unbiased test; Table 2), their relative difference Δ (Table 3) and Eq. 2's
    ``d``, ``f̄`` and ``β`` over the test set (:mod:`workbench.bias.settings`); for one set of
    rows (generations of a benchmark), all rows against one row per duplicate cluster. With a
    reference (``--against``), each metric on clean against contaminated rows (GPT-3, Brown et
    al. 2020, App. C). Every value has a bootstrap interval over tasks or clusters and the number
    of rows behind it; with ``config.label`` also each metric's Kendall tau-b with the label.

    Args:
        dedup_output: a ``workbench dedup -o`` folder (:mod:`workbench.bias.dedup_output`).
        metrics_source: the per-row metric table (path, bundled name, hub id, dataset or mapping).
        config: the options (:class:`BiasConfig`); ``config.metric`` must name at least one column.
        json_path: write the report as JSON here.
        plot_path: write a figure here (``.png``/``.svg``/``.pdf``): each metric per setting with its interval.
        run_dir: the ``workbench run`` folder the inputs lie in (``None``: a job on its own): the JSON
            names ``dedup_output`` and ``metrics_source`` inside it relative to it (``<run folder>/dedup``;
            :func:`~workbench.resume_guard.shown_path`), so a moved or copied run folder's report does
            not name the old location. The report returned names them as given.

    Returns:
        a :class:`~workbench.bias.results.BiasReport`.

    Raises:
        TypeError: ``dedup_output``, ``json_path`` or ``plot_path`` is not a path, or ``config``
            not a :class:`BiasConfig` (a swapped argument).
        DataError: a folder that is not a dedup output, a missing column, duplicate ids, a
            non-numeric metric cell (naming the column and the first bad row), a metric column
            with no value in any joined row, no row that joins, a metric table whose sample ids
            were numbered in its row order against a dedup that read real ones; a ``json_path``
            that is a folder, a ``json_path`` or ``plot_path`` in a folder that cannot be written,
            or a ``plot_path`` of a format matplotlib cannot write (checked before any work).

    Example::

        from workbench.bias import BiasConfig, run_bias
        report = run_bias("out/dedup", "humaneval-codex-python",
                          BiasConfig(metric=["passed"], id_column="task_id,sample_id", task_column="task_id"))
        report.duplication.metrics["passed"].settings["deduplicated"].value
    """
    config = config or BiasConfig()
    call = "run_bias(dedup_output, metrics_source, config)"
    require_argument(config, BiasConfig, "config", call)
    require_path(dedup_output, "dedup_output", call, hint="the folder workbench dedup -o wrote (the metric table "
                                                          "comes second)")
    require_path(json_path, "json_path", call, optional=True)
    require_path(plot_path, "plot_path", call, optional=True)
    if not config.metric:
        raise DataError(f"name at least one per-row metric column ({option_named('metric')})")
    _check_output_paths(json_path, plot_path)
    output = read_dedup_output(dedup_output)
    if config.id_column is None:  # join on the ids the dedup made
        config = dataclasses.replace(config, id_column=output.id_column or "id")
    reference = read_dedup_output(config.contamination) if config.contamination else output
    if config.contamination and not reference.has_reference:
        raise DataError(f"{config.contamination}: this dedup output was not run with --against (no contamination "
                        "table in its report.json); give the folder of a `workbench dedup --against` run")
    columns = list(dict.fromkeys([*config.metric, *([config.label] if config.label else [])]))
    from_results = [config.label] if config.results is not None else []
    table = read_metric_table(metrics_source, metrics=[c for c in columns if c not in from_results],
                              id_columns=config.id_columns, task_column=config.task_column,
                              splits=list(config.split) or None, offline=config.offline,
                              flags={config.label: option_named("label")} if config.label else None,
                              labels={config.label: config.label_kind} if config.label and not from_results else None,
                              # execute's results name rows by task_id:sample_id only: the way to join them
                              # to ids of another column (a [data] id_column such as uid)
                              alias_columns=[TASK_COLUMN, SAMPLE_COLUMN] if from_results else None)
    _check_id_kinds(output, table, config)
    warnings: list[str] = []
    notes: list[str] = []
    if from_results:
        warnings += _join_results(table, config)
        # information, not a fault: a data set's recorded outcomes (ICE-Score's `passed`) next to this execution's
        notes += _own_label_disagreement(metrics_source, table, config)
    rows = _Rows(output, table, config.id_columns)
    # the rows every setting counts: a train/test corpus's test rows (the evaluated split, Allamanis 2019
    # Sec. 3), else every joined row; the warnings below speak of these, not of rows no setting uses
    in_test = np.array([s == output.test_split for s in rows.splits], dtype=bool)
    test_scope = in_test if output.has_train_test and in_test.any() else None
    counted_rows = output.rows if test_scope is None else _split_rows(output, output.test_split, int(in_test.sum()))
    counted_joined = len(rows) if test_scope is None else int(in_test.sum())
    join = JoinCounts(
        metric_rows=table.rows, without_id=table.without_id, joined=len(rows), unjoined=len(rows.unjoined_ids),
        unjoined_ids=rows.unjoined_ids[:LISTED_IDS], dedup_rows=output.rows,
        dedup_rows_without_metric=max(0, output.rows - len(rows)),
        id_columns=config.id_columns, rows_counted="all" if test_scope is None else "test",
        dedup_rows_counted=counted_rows, dedup_rows_counted_without_metric=max(0, counted_rows - counted_joined),
    )
    if len(rows) == 0:
        shown = ", ".join(repr(i) for i in table.ids[:3])
        listed, examples = output.example_ids()
        theirs = (f"{listed} has e.g. {', '.join(map(repr, examples))}" if examples
                  else "the dedup output lists no row ids")
        raise DataError(f"{table.source}: none of its {table.rows} rows joins the dedup output {output.folder} "
                        f"(ids built from {option_named('id_column')} {config.id_column}, e.g. {shown}; {theirs})")
    if join.unjoined > join.joined and not config.allow_partial_join:
        numbered = (f"; it has no {SAMPLE_COLUMN} column, so its rows were numbered per task in file order, and "
                    f"those numbers name other rows where the dedup read a real {SAMPLE_COLUMN} column: give the table "
                    f"with that column") if table.numbered_samples else ""
        raise DataError(f"{table.source}: only {join.joined} of its {join.joined + join.unjoined} rows join the dedup "
                        f"output {output.folder} (ids from {option_named('id_column')} {config.id_column}, e.g. unjoined "
                        f"{', '.join(map(repr, rows.unjoined_ids[:3]))}){numbered}. A join this partial usually pairs "
                        f"rows of another dataset, or ids built another way, with the wrong rows; "
                        f"{option_set('allow_partial_join')} if the metric table really covers more rows than the "
                        "dedup run")
    for metric in config.metric:
        if not (~np.isnan(rows.values[metric])).any():  # NaN is an empty cell
            raise DataError(f"{table.source}: metric column {metric!r} has no value in any of the {len(rows)} joined rows "
                            f"(every cell is empty or NaN): there is nothing to average; check the column, or leave "
                            f"-m {metric} out")
    if join.dedup_rows_counted and join.dedup_rows_counted_without_metric > join.dedup_rows_counted / 2:
        kind = "test rows" if test_scope is not None else "rows"
        warnings.append(f"{join.dedup_rows_counted_without_metric} of the dedup's {join.dedup_rows_counted} {kind} have no "
                        f"metric row: every setting is computed over the {counted_joined} {kind} that have one; a metric "
                        f"over part of the {kind} (e.g. only those the dedup kept) cannot show what the duplicates among "
                        "the others do")
    settings = BootstrapSettings(n_resamples=config.resamples, confidence=config.confidence, seed=config.seed)
    units, unit = rows.units(by_task=config.task_column is not None)
    bootstrap = UnitBootstrap(units, settings)
    label = rows.values.get(config.label) if config.label else None
    metrics = list(config.metric)
    if output.split_files_found is False:
        unchecked = [row for row in rows.ids if row not in output.cluster_of and row not in output.removed]
        possible = output.rows_outside_files
        if possible is not None and len(unchecked) > possible:
            raise DataError(f"{output.folder} has no deduplicated split file, and {count(len(unchecked), 'metric row')} "
                            f"{'is' if len(unchecked) == 1 else 'are'} in neither clusters.json nor removed.csv while the "
                            f"dedup run had only {count(possible, 'such row')}: "
                            f"{table.source} holds rows the dedup never saw (among e.g. {', '.join(unchecked[:3])}); "
                            "restore the split file or give the metric table of this dedup run")
        warnings.append(f"{output.folder} has no deduplicated split file: {count(len(unchecked), 'metric row')} in no cluster "
                        f"{'is' if len(unchecked) == 1 else 'are'} taken as unique rows of its only split, unchecked")
    if join.unjoined:
        warnings.extend(_unjoined_warnings(rows.unjoined_ids, output))
    if reference is not output:
        _check_same_rows(reference, rows, config)
    if reference.has_reference:
        joined_ids = set(rows.ids)
        # of the rows the settings count, as the count contaminated_rows_without_metric
        counted = _contaminated_counted(reference, test_scope is not None, output.test_split)
        elsewhere = [row for row in counted if row not in joined_ids]
        if elsewhere:
            what = "contaminated test row" if test_scope is not None else "contaminated row"
            warnings.append(f"{len(elsewhere)} of the {count(len(counted), what)} in "
                            f"{reference.folder / 'contamination.csv'} {'has' if len(elsewhere) == 1 else 'have'} no joined metric row and "
                            f"{'is' if len(elsewhere) == 1 else 'are'} not in the "
                            f"clean vs contaminated figures (e.g. {', '.join(elsewhere[:3])})")
    duplication = _duplication(output, rows, metrics, bootstrap, label, config)
    # the contamination split covers the rows the duplication settings count (test_scope above)
    contamination = (_contamination(reference, rows, metrics, bootstrap, label, config, test_scope, output.test_split)
                     if reference.has_reference else None)
    for analysis in (duplication, contamination):
        for name, result in (analysis.metrics.items() if analysis is not None else ()):
            if result.unmeasured:
                what = ("Δ% and Eq. 2 (d, β)" if analysis.kind != "contamination"
                        else f"Δ% {analysis.setting_label('all_rows')} vs clean")
                warnings.append(f"{name}: {what} not measured (n/a): {result.unmeasured}")
    report = BiasReport(
        dedup_output=str(output.folder), metrics_source=table.source, join=join, duplication=duplication,
        contamination=contamination, bootstrap={**settings.to_dict(), "unit": unit}, label=config.label,
        label_kind=config.label_kind if config.label else None,
        warnings=warnings, notes=notes,
    )
    if plot_path is not None:
        # an earlier run's figure must not outlive its JSON: if plotting is interrupted, no figure beats a stale one
        Path(plot_path).unlink(missing_ok=True)
    written = report
    if run_dir is not None:
        from workbench.resume_guard import shown_path

        written = dataclasses.replace(report, dedup_output=shown_path(report.dedup_output, run_dir),
                                      metrics_source=shown_path(report.metrics_source, run_dir))
    if json_path is not None:
        written.write_json(json_path)
    if plot_path is not None:
        from workbench.bias.plot import plot_bias

        plot_bias(written, plot_path)
    return report


def _check_output_paths(json_path, plot_path) -> None:
    """Refuse output paths that cannot be written before the analysis runs, not after it."""
    from matplotlib.backend_bases import FigureCanvasBase

    from workbench.io import check_output_files

    check_output_files({"--json": json_path, "--plot": plot_path})  # a folder, or one not writable: now, not after
    if plot_path is not None:
        formats = FigureCanvasBase.get_supported_filetypes()
        suffix = Path(plot_path).suffix.lstrip(".").lower()
        if suffix not in formats:
            raise DataError(f"--plot {plot_path}: the suffix names no image format matplotlib writes; use .png, .svg "
                            f"or .pdf (or one of {', '.join(sorted(formats))})")


def _check_id_kinds(output: DedupOutput, table: MetricTable, config: BiasConfig) -> None:
    """Refuse a join of sample ids made two ways: the metric table's numbered per task in its row
    order (it has no ``sample_id`` column) against a dedup that read real ones from its data
    (``report.json`` ``parameters.numbered_id_column`` is ``null``). The numbers name other rows as
    soon as the table's order differs (shuffled, filtered, sorted), and every id still joins, so the
    values would be paired with the wrong rows without a trace. Both numbered in file order (the
    same data read twice) is the documented case and is taken; a dedup made before the record
    existed cannot be checked.

    Raises:
        DataError: saying what ids each side has and how to give the table real ones.
    """
    parameters = output.report.get("parameters") or {}
    if not table.numbered_samples or "numbered_id_column" not in parameters:
        return
    if parameters["numbered_id_column"] is None and SAMPLE_COLUMN in (output.id_column or "").split(","):
        raise DataError(
            f"{table.source} has no {SAMPLE_COLUMN} column, so its rows were numbered per task in its row order "
            f"(0, 1, ...) to build {option_named('id_column')} {config.id_column} ids, while the dedup output {output.folder} read real "
            f"{SAMPLE_COLUMN} values from its data: numbers made from this table's order name other rows as soon as it "
            f"is ordered otherwise, and the values would be paired with the wrong rows. Give the metric table its "
            f"{SAMPLE_COLUMN} column (the dedup data's), or join on a column both have ({option_named('id_column')})")


def _unjoined_warnings(unjoined_ids: list[str], output: DedupOutput) -> list[str]:
    """The warnings on metric rows left out of the join: those the dedup could not read
    (``unreadable.csv``: in no output split, so neither clean nor duplicated) apart from ids it
    never saw."""
    unreadable = [row for row in unjoined_ids if row in output.unreadable]
    unknown = [row for row in unjoined_ids if row not in output.unreadable]
    warnings = []
    if unreadable:
        warnings.append(f"{count(len(unreadable), 'metric row')} {'is a row' if len(unreadable) == 1 else 'are rows'} the dedup "
                        f"could not read and {'is' if len(unreadable) == 1 else 'are'} left out "
                        f"(listed in {output.folder / 'unreadable.csv'}; e.g. "
                        + ", ".join(f"{row} ({output.unreadable[row]})" for row in unreadable[:3]) + ")")
    if unknown:
        warnings.append(f"{count(len(unknown), 'metric row')} {'has' if len(unknown) == 1 else 'have'} an id the dedup output does "
                        f"not have and {'is' if len(unknown) == 1 else 'are'} left out "
                        f"(e.g. {', '.join(unknown[:3])})")
    return warnings


def _check_same_rows(reference: DedupOutput, rows: _Rows, config: BiasConfig) -> None:
    """A ``--contamination`` folder of other rows (or other ids) would call every row clean."""
    if not any(reference.split_of(row, config.id_columns) is not None for row in rows.ids):
        shown = ", ".join(list(reference.contaminated)[:2]) or "(no contaminated rows)"
        raise DataError(f"{option_value('contamination', os.fspath(reference.folder))}: none of the {len(rows)} joined "
                        f"rows (e.g. {rows.ids[0]!r}) is a row of that dedup output (its contamination.csv names e.g. "
                        f"{shown}); give the `workbench dedup --against` output of the same rows, with the same "
                        f"{option_named('id_column')}")


def _join_results(table: MetricTable, config: BiasConfig) -> list[str]:
    """Put ``config.label`` from the results table into ``table`` by row id (NaN where a row has
    no result); returns warnings about rows on either side without a partner."""
    read = functools.partial(read_metric_table, config.results, metrics=[config.label], offline=config.offline,
                             flags={config.label: option_named("label")}, labels={config.label: config.label_kind})
    execute_ids = [TASK_COLUMN, SAMPLE_COLUMN]
    extra = None
    try:
        results = read(id_columns=config.id_columns)
    except MissingColumnError as error:
        # execute's results name the task and sample columns task_id and sample_id whatever the data
        # calls them: a TASK,SAMPLE id of other names is read from those there
        if error.column not in config.id_columns or not set(execute_ids) <= set(error.available):
            raise
        if len(config.id_columns) == 2:
            results = read(id_columns=execute_ids)
        elif table.aliases is not None:
            # an id column of the data's own (uid) that execute does not carry: joined through the
            # metric table's task_id:sample_id of each row, then put back under the row's id
            results = read(id_columns=execute_ids)
            by_alias = dict(zip(results.ids, results.values[config.label]))
            extra = len(set(by_alias) - set(table.aliases))
            pairs = [(row, by_alias[alias]) for row, alias in zip(table.ids, table.aliases) if alias in by_alias]
            results = dataclasses.replace(results, ids=[row for row, _ in pairs],
                                          values={config.label: np.array([v for _, v in pairs], dtype=np.float64)})
        else:
            raise DataError(f"{option_value('results', config.results)}: it has no {error.column!r} column "
                            f"({option_value('id_column', config.id_column)}), and the metric table {table.source} has no {TASK_COLUMN} and "
                            f"{SAMPLE_COLUMN} columns to join it through; give the metric table those columns "
                            f"(workbench score writes them), or results with {error.column!r}") from error
    by_id = dict(zip(results.ids, results.values[config.label]))
    if not set(by_id) & set(table.ids):
        # as in correlate: an empty join is a wrong file or id column, not a result with no labels
        raise DataError(f"{option_value('results', os.fspath(results.source))}: none of its {len(results.ids)} row ids is in the metric table "
                        f"{table.source} (ids like {results.ids[:2]} there, {table.ids[:2]} here); check the files, "
                        f"or set the id column(s) with {option_named('id_column')}")
    table.values[config.label] = np.array([by_id.get(row, np.nan) for row in table.ids], dtype=np.float64)
    table.missing[config.label] = int(np.count_nonzero(np.isnan(table.values[config.label])))
    warnings = []
    without = sum(1 for row in table.ids if row not in by_id)
    if without:
        warnings.append(f"{count(without, 'metric row')} {'has' if without == 1 else 'have'} no row in the results {results.source} ("
                        f"{'its' if without == 1 else 'their'} "
                        f"{config.label!r} is missing)")
    extra = len(set(results.ids) - set(table.ids)) if extra is None else extra
    if extra:
        warnings.append(f"{count(extra, 'row')} of the results {results.source} {'is' if extra == 1 else 'are'} not in the "
                        "metric table (left out)")
    return warnings


def _own_label_disagreement(metrics_source: object, table: MetricTable, config: BiasConfig) -> list[str]:
    """A note when the metric table has a ``config.label`` column of its own (ICE-Score's
    ``passed``, carried by ``workbench score``) that the results' label, the one used, contradicts
    on some joined rows; as ``workbench correlate`` notes. No note when the table has no such
    column or its cells are not all numbers (it is then no label)."""
    try:
        own = read_metric_table(metrics_source, metrics=[config.label], id_columns=config.id_columns,
                                splits=list(config.split) or None, offline=config.offline,
                                flags={config.label: option_named("label")})
    except DataError:  # no such column (MissingColumnError), or text cells: no label of its own
        return []
    mine = dict(zip(own.ids, own.values[config.label]))
    used = table.values[config.label]
    both = [(mine[row], value) for row, value in zip(table.ids, used)
            if row in mine and not np.isnan(mine[row]) and not np.isnan(value)]
    differ = sum(a != b for a, b in both)
    if not differ:
        return []
    message = (f"label: the metric table {table.source} has a {config.label!r} column of its own that differs from "
               f"the results' on {differ} of {len(both)} joined rows; the results' is the label used")
    return [message]


def _metric_bias(name: str, rows: _Rows, masks_of, names: Sequence[str], between: tuple[str, str],
                 bootstrap: UnitBootstrap, label: np.ndarray | None, eq2: tuple[str, str] | None,
                 config: BiasConfig, unmeasurable: Callable[[np.ndarray], str | None] | None = None,
                 kind: str = "single_set") -> MetricBias:
    """One metric in every setting of one analysis.

    ``unmeasurable`` takes the rows with a value and says why the rows the unbiased setting drops
    cannot be told (none of them has a value: the metric covers only rows the dedup kept), or
    ``None``. Then a Δ and an Eq. 2 whose dropped rows are empty are n/a with that reason, not a
    finding of 0: they would read as "no bias" while the bias was never measured."""
    values = rows.values[name]
    eligible = ~np.isnan(values)
    masks = masks_of(eligible)
    delta = bootstrap.relative_difference(values, masks[between[0]], masks[between[1]])
    decomposition = decompose(values, masks[eq2[0]], masks[eq2[1]]) if eq2 else None
    reason = unmeasurable(eligible) if unmeasurable is not None else None
    unmeasured = None
    if reason and not (masks[between[0]] & ~masks[between[1]]).any():
        delta = dataclasses.replace(delta, value=math.nan, low=math.nan, high=math.nan, no_interval=reason)
        unmeasured = reason
    if reason and eq2 and not (masks[eq2[0]] & ~masks[eq2[1]]).any():
        decomposition, unmeasured = None, reason
    result = MetricBias(
        metric=name,
        settings={setting: bootstrap.mean(values, masks[setting]) for setting in names},
        delta=delta, decomposition=decomposition, missing=int(np.count_nonzero(~eligible)), unmeasured=unmeasured,
    )
    if config.task_column is not None:
        result.task_means = {setting: bootstrap.task_mean(values, masks[setting]) for setting in names}
    if label is not None and name != config.label:
        result.correlation = {setting: _kendall(values, label, masks[setting], rows, config) for setting in names}
        result.correlation_differences = _kendall_differences(values, label, masks, result.correlation, rows, config,
                                                              COMPARED_SETTINGS[kind])
    return result


def _kendall_differences(values: np.ndarray, label: np.ndarray, masks: dict[str, np.ndarray],
                         taus: dict[str, Interval], rows: _Rows, config: BiasConfig,
                         pairs: Sequence[tuple[str, str]]) -> list[SettingDifference]:
    """Each compared pair's tau-b difference (:func:`~workbench.bias.intervals.kendall_difference`):
    paired on the same unit draws where the settings share units, else unpaired."""
    from threadpoolctl import threadpool_limits

    units, _ = rows.units(by_task=config.task_column is not None)
    settings = BootstrapSettings(n_resamples=config.resamples, confidence=config.confidence, seed=config.seed)
    with threadpool_limits(limits=1, user_api="blas"):  # small matrices: BLAS threads only spin (as correlate)
        return [kendall_difference(values, label, units, masks[a], masks[b], (a, b), (taus[a], taus[b]), settings)
                for a, b in pairs if a in taus and b in taus]


def _duplication(output: DedupOutput, rows: _Rows, metrics: list[str], bootstrap: UnitBootstrap,
                 label: np.ndarray | None, config: BiasConfig) -> Analysis:
    notes: list[str] = []
    n_clusters = int(np.unique(rows.cluster[rows.cluster >= 0]).size)
    is_test = np.array([s == output.test_split for s in rows.splits], dtype=bool)
    if output.has_train_test and is_test.any():
        member_splits = [{output.split_of(m, config.id_columns) for m in members} for members in output.clusters]
        train_clusters = {index for index, splits in enumerate(member_splits) if output.train_split in splits}
        # a cluster with a row of a third split (validation): its test rows are not unbiased either
        outside_clusters = {index for index, splits in enumerate(member_splits)
                            if splits - {output.test_split, None}}
        has_train = np.array([c in train_clusters for c in rows.cluster], dtype=bool)
        has_outside = np.array([c in outside_clusters for c in rows.cluster], dtype=bool)
        other_only = is_test & has_outside & ~has_train

        def masks_of(eligible: np.ndarray) -> dict[str, np.ndarray]:
            return train_test_masks(is_test, rows.cluster, rows.position, rows.kept, has_outside, eligible)

        other = int(np.count_nonzero(~is_test))
        if other:
            notes.append(f"{count(other, 'joined row')} of other splits than {output.test_split!r} "
                         f"{'is' if other == 1 else 'are'} not part of the test settings")
        if other_only.any():
            third = sorted({str(output.split_of(m, config.id_columns)) for c in np.unique(rows.cluster[other_only])
                            for m in output.clusters[c]} - {output.test_split, output.train_split, "None"})
            n_other = int(other_only.sum())
            one = n_other == 1
            # what the dedup did with them: its test split drops those whose cluster kept a row of another split
            # (and a row it removed as contaminated, --against), and keeps the one a cluster kept in test
            # (--cross-set remove-train, a decontamination that keeps the rows of a reference no row copies)
            dropped = sum(1 for row in np.flatnonzero(other_only) if rows.ids[row] in output.removed)
            if dropped == n_other:
                done = f"the dedup dropped {'it' if one else 'them'} from its test split too"
            elif dropped == 0:
                done = f"the dedup kept {'it' if one else 'them'} in its test split"
            else:
                done = f"the dedup dropped {dropped} of them from its test split and kept {n_other - dropped}"
            notes.append(f"{count(n_other, 'test row')} whose duplicates outside {output.test_split!r} "
                         f"are all in other splits than {output.train_split!r} ({', '.join(map(repr, third))}) "
                         f"{'is' if one else 'are'} not in unbiased test, as rows with a train duplicate are not (a "
                         f"held-out split may have chosen the model; {done}); fully "
                         f"and cross-set biased count {'it' if one else 'them'}")
        notes.append("fully unbiased (Table 2) needs a model retrained on the deduplicated train split: "
                     "it cannot be computed from one model's per-row values")
        notes.append("a collapsed cluster counts with the value of the row the dedup kept, as the paper keeps exactly "
                     "one file per cluster (the first test member in input order when it kept a train row)")
        counts = {"joined": len(rows), "test_rows": int(is_test.sum()), "other_split_rows": other,
                  "test_rows_in_clusters": int(np.count_nonzero(is_test & (rows.cluster >= 0))),
                  "test_rows_with_train_duplicate": int(np.count_nonzero(is_test & has_train)),
                  "test_rows_with_other_split_duplicate_only": int(np.count_nonzero(other_only)),
                  "clusters": n_clusters, "train_split": output.train_split, "test_split": output.test_split}
        names, between, eq2 = TRAIN_TEST_SETTINGS, ("cross_set_biased", "unbiased_test"), ("fully_biased", "unbiased_test")
        kind = "train_test"
        scope, scope_split = is_test, output.test_split
    else:
        if output.has_train_test:
            notes.append(f"no joined row is in the test split {output.test_split!r}: all joined rows are compared as one set")

        def masks_of(eligible: np.ndarray) -> dict[str, np.ndarray]:
            return single_set_masks(rows.cluster, rows.position, rows.kept, eligible)

        notes.append("a collapsed cluster counts with the value of the row the dedup kept, as the paper keeps exactly "
                     "one file per cluster (the first member in input order with a value otherwise)")
        counts = {"joined": len(rows), "rows_in_clusters": int(np.count_nonzero(rows.cluster >= 0)), "clusters": n_clusters}
        names, between, eq2 = SINGLE_SET_SETTINGS, ("all_rows", "deduplicated"), ("all_rows", "deduplicated")
        kind = "single_set"
        scope, scope_split = np.ones(len(rows), dtype=bool), None
    # duplicates the dedup removed, in the rows the settings count (a contaminated row is no duplicate)
    removed_here = any(reason != "contaminated" and (scope_split is None or split == scope_split)
                       for split, reason in output.removed.values())

    def unmeasurable(eligible: np.ndarray) -> str | None:
        valued = eligible & scope
        # rows with a value that have duplicates, while none of those the dedup removed has a value
        if removed_here and (valued & (rows.cluster >= 0)).any() and not (valued & ~rows.kept).any():
            return ("no row the dedup removed as a duplicate has a value: the metric covers only rows the dedup kept "
                    "(e.g. its own deduplicated split), so the duplicates' effect cannot be measured; give the metric "
                    "on every row of the dedup's input")
        return None

    # the dedup's option; under workbench run the in-set dedup's key
    too_short = option_named("min_tokens", "[dedup] min_tokens")
    analysed = output.report.get("overall", {})
    joined_short = output.too_short_among(rows.ids)
    if analysed.get("too_short") and joined_short is not None:
        # the joined rows, not the whole dedup run: a metric table may cover part of it
        short = np.array([row in output.too_short for row in rows.ids], dtype=bool)
        in_text = int(np.count_nonzero(short & (rows.cluster >= 0)))  # a too-short row clusters only by its text
        notes.append(f"{joined_short} of the {count(len(rows), 'joined row')} "
                     f"{'was' if joined_short == 1 else 'were'} too short to be compared as token bags ({too_short}; "
                     f"{analysed['too_short']} of the dedup run's {output.rows}): {in_text} of them are in clusters of "
                     "identical text (exact_text), the rest count as unique")
    elif analysed.get("too_short"):
        if "exact_text_clusters" in analysed:  # a dedup that clusters identical short text (exact_text)
            in_text = int(analysed["exact_text_duplicates"]) + int(analysed["exact_text_clusters"])
            notes.append(f"{_rows_were(analysed['too_short'])} too short to be compared as token bags "
                         f"({too_short}): {in_text} of them are in clusters of identical text (exact_text), the rest "
                         "count as unique")
        else:
            notes.append(f"{_rows_were(analysed['too_short'])} too short to be compared ({too_short}): "
                         "they are in no cluster and count as unique")
    return Analysis(kind, names, between, {m: _metric_bias(m, rows, masks_of, names, between, bootstrap, label, eq2, config,
                                                           unmeasurable, kind) for m in metrics}, counts, notes)


def _rows_were(rows: int) -> str:
    """``1 row of the dedup run was`` / ``3 rows of the dedup run were`` (``rows`` as the dedup's
    report.json records it, an int or its text)."""
    rows = int(rows)
    return f"{count(rows, 'row')} of the dedup run {'was' if rows == 1 else 'were'}"


def _split_rows(output: DedupOutput, split: str, fallback: int) -> int:
    """Rows of ``split`` in the dedup run (``report.json`` ``splits.<split>.files``), ``fallback`` when
    the report does not record them."""
    recorded = output.report["splits"].get(split)
    return int(recorded["files"]) if isinstance(recorded, dict) and recorded.get("files") is not None else fallback


def _contaminated_counted(reference: DedupOutput, test_scoped: bool, test_split: str) -> list[str]:
    """The contaminated rows of ``reference`` among the rows the settings count: on a train/test corpus
    (``test_scoped``) those of ``test_split`` (a row not in ``removed.csv`` taken as one), else all.
    Both the warning on contaminated rows without a metric row and the count
    ``contaminated_rows_without_metric`` are over these rows."""
    return [row for row in reference.contaminated
            if not test_scoped or reference.removed.get(row, (test_split,))[0] == test_split]


def _contamination(reference: DedupOutput, rows: _Rows, metrics: list[str], bootstrap: UnitBootstrap,
                   label: np.ndarray | None, config: BiasConfig, test_scope: np.ndarray | None = None,
                   test_split: str = "test") -> Analysis:
    """Clean against contaminated rows (GPT-3, Brown et al. 2020, App. C) over the rows the
    duplication settings count: ``test_scope`` (the test rows of a train/test corpus, the split a
    model's score is measured on), or every joined row when it is ``None``."""
    scope = test_scope if test_scope is not None else np.ones(len(rows), dtype=bool)
    contaminated = np.array([row in reference.contaminated for row in rows.ids], dtype=bool) & scope
    names: tuple[str, ...] = CONTAMINATION_SETTINGS
    bad_tasks = None
    if rows.tasks is not None:
        bad = {task for task, c in zip(rows.tasks, contaminated) if c}
        bad_tasks = np.array([task in bad for task in rows.tasks], dtype=bool)
        names = (*names, "clean_tasks", "contaminated_tasks")

    def masks_of(eligible: np.ndarray) -> dict[str, np.ndarray]:
        eligible = eligible & scope
        masks = {"all_rows": eligible.copy(), "clean": eligible & ~contaminated, "contaminated": eligible & contaminated}
        if bad_tasks is not None:
            masks.update(clean_tasks=eligible & ~bad_tasks, contaminated_tasks=eligible & bad_tasks)
        return masks

    notes = [f"contaminated: a near-duplicate of a row of {reference.reference} (its contamination.csv)"]
    other = int(np.count_nonzero(~scope))
    # the reference's contaminated rows among those counted: of the test split on a train/test corpus
    in_scope = _contaminated_counted(reference, test_scope is not None, test_split)
    if test_scope is not None:
        left_out = sum(1 for row, inside in zip(rows.ids, scope) if not inside and row in reference.contaminated)
        notes.insert(0, f"rows: the {count(int(scope.sum()), 'test row')} of {test_split!r}, the rows the duplication "
                        f"settings count; the {count(other, 'joined row')} of other splits "
                        f"({left_out} of them contaminated) {'is' if other == 1 else 'are'} left out")
    # of the joined rows, as every other count here; the --contamination run may hold many more rows
    joined_short = reference.too_short_among(rows.ids)
    too_short = option_named("min_tokens", "[decontaminate] min_tokens")  # under workbench run, decontaminate's key
    if reference.rows_not_checked:
        exact_text = "contaminated_exact_text_rows" in reference.report["contamination"]
        clean = " and count as clean" + (" unless their text is the text of a reference row" if exact_text else "")
        if joined_short is None:
            notes.append(f"{_rows_were(reference.rows_not_checked)} too short to be compared with the reference "
                         f"({too_short}){clean}; how many of the {count(len(rows), 'joined row')} is not known "
                         f"({reference.folder} has no skipped.csv)")
        else:
            notes.append(f"{joined_short} of the {count(len(rows), 'joined row')} "
                         f"{'was' if joined_short == 1 else 'were'} too short to be compared with the reference "
                         f"({too_short}; {reference.rows_not_checked} of the dedup run's {reference.rows}){clean}")
    joined_ids = set(rows.ids)
    counts = {"joined": len(rows), "rows": "test" if test_scope is not None else "all", "rows_counted": int(scope.sum()),
              "other_split_rows": other,
              "contaminated_rows": int(contaminated.sum()), "clean_rows": int((scope & ~contaminated).sum()),
              "contaminated_rows_without_metric": sum(1 for row in in_scope if row not in joined_ids),
              "reference": reference.reference,
              # joined rows under --min-tokens (None: the folder has no skipped.csv), and the dedup run's
              "rows_not_checked_too_short": joined_short,
              "dedup_run_rows_not_checked_too_short": reference.rows_not_checked}
    if bad_tasks is not None:
        counts["contaminated_tasks"] = len({t for t, b, inside in zip(rows.tasks, bad_tasks, scope) if b and inside})
        counts["tasks"] = len({t for t, inside in zip(rows.tasks, scope) if inside})
    ids = {"contaminated_ids": [row for row, c in zip(rows.ids, contaminated) if c]}

    def unmeasurable(eligible: np.ndarray) -> str | None:
        if in_scope and not (eligible & contaminated).any():
            return ("no contaminated row has a value (the dedup removed them; a metric over its deduplicated rows "
                    "has none): clean vs all rows cannot be measured; give the metric on every row of the dedup's input")
        return None

    return Analysis("contamination", names, ("all_rows", "clean"),
                    {m: _metric_bias(m, rows, masks_of, names, ("all_rows", "clean"), bootstrap, label, None, config,
                                     unmeasurable, "contamination") for m in metrics}, counts, notes, ids)


def _kendall(values: np.ndarray, label: np.ndarray, mask: np.ndarray, rows: _Rows, config: BiasConfig) -> Interval:
    """Kendall tau-b of ``values`` with ``label`` over ``mask``, with the interval of
    :func:`workbench.correlate.correlate` (resampling tasks, or clusters without a task column)."""
    from workbench.correlate import correlate

    use = mask & ~np.isnan(label)
    units, _ = rows.units(by_task=config.task_column is not None)
    n_rows, n_units = int(use.sum()), int(np.unique(units[use]).size)
    if n_rows < 2:
        return Interval(math.nan, math.nan, math.nan, n_rows, n_units, "fewer than 2 rows")
    picked = np.flatnonzero(use)
    table = {"unit": [int(units[i]) for i in picked], "row": [rows.ids[i] for i in picked],
             "label": label[picked].tolist(), "metric": values[picked].tolist()}
    try:
        report = correlate(table, metrics=["metric"], label="label", task_column="unit", sample_column="row",
                           n_resamples=config.resamples, confidence=config.confidence, seed=config.seed,
                           length_column="none", label_kind=config.label_kind)
    except DataError as error:  # (the label's values were checked when read): said once, for this setting
        return Interval(math.nan, math.nan, math.nan, n_rows, n_units, str(error))
    estimate = report.metrics["metric"].pooled["kendall"]
    return Interval(estimate.value, estimate.ci[0], estimate.ci[1], n_rows, n_units, estimate.no_interval)
