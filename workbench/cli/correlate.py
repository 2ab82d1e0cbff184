"""``workbench correlate``: parse options, call :func:`workbench.correlate.run_correlate`, print."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich import box
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from workbench.cli.app import NOTE, app, console, err_console
from workbench.cli.config_options import config_options
from workbench.correlate.config import CorrelateConfig

if TYPE_CHECKING:
    from workbench.correlate.results import CorrelationReport, Estimate, MetricResult, PairedDifference
from workbench.correlate.bootstrap import interval_contains_zero
from workbench.formatting import count, fixed


#: table style that fits value-over-CI cells for three coefficients in 80 columns
_COMPACT = {"box": box.SIMPLE_HEAD, "pad_edge": False, "show_edge": False, "collapse_padding": True}


def _number(value: float) -> str:
    return fixed(value, 3)


#: how the table names the coefficients
_SYMBOLS = {"kendall": "τ-b", "spearman": "ρ", "pearson": "r"}
#: the mark of an estimate whose interval contains 0
ZERO_MARK = "≈0"
#: in place of an interval withheld for too few tasks or samples
NO_CI = "(no CI: small n)"
#: the mark of an estimate outside its own interval (the interval is not to be read)
OUTSIDE_MARK = "(!)"


def _with_ci(estimate: Estimate) -> str:
    """Value over its interval; ``≈0`` after the value when the interval contains 0."""
    if math.isnan(estimate.value):
        return "n/a"
    if estimate.no_interval:  # too few tasks or samples: the reason is among the warnings
        return f"{estimate.value:.3f}\n{NO_CI}"
    mark = f" {ZERO_MARK}" if estimate.spans_zero else ""
    outside = f" {OUTSIDE_MARK}" if estimate.outside_interval else ""
    return f"{estimate.value:.3f}{mark}\n[{_number(estimate.ci[0])}, {_number(estimate.ci[1])}]{outside}"


def _undefined_text(estimates: dict[str, Estimate], level: str, resamples: int) -> list[str]:
    """``pooled τ-b 12/1000`` for each coefficient undefined in some resamples."""
    return [f"{level} {_SYMBOLS[c]} {estimates[c].undefined_resamples}/{resamples}"
            for c in ("kendall", "spearman", "pearson") if estimates[c].undefined_resamples]


@app.command("correlate", short_help="Correlate metric scores with execution results or human grades.")
@config_options(CorrelateConfig, extra_flags={"metric": ("-m",)})
def correlate_command(
    config: CorrelateConfig,
    scores: str = typer.Argument(
        ...,
        help="Scores table: .jsonl/.json/.parquet/.csv (optionally .gz), an ICE-Score *_grade.json, "
        "a bundled name (humaneval-codex-python) or a hub id.",
    ),
    json_path: str | None = typer.Option(None, "--json", help="Write the machine-readable report here."),
    plot_path: str | None = typer.Option(
        None, "--plot", help="Write a figure here (.png/.svg/.pdf): CI forest plot and score distributions by outcome."
    ),
) -> None:
    """Correlate metric scores with execution results (or, with --label-kind graded, with grades such as
    human grades): Kendall tau-b, Pearson r and Spearman rho,
    pooled over all samples and per problem (mean over tasks; constant tasks excluded and counted),
    with bootstrap CIs over tasks and paired comparisons of metrics (pooled and per problem).

    Each metric's correlation with completion length (its verbosity bias) is shown next to its
    correlation with the label; an estimate whose interval contains 0 is marked "not
    distinguishable from 0".

    Example: workbench correlate scores.jsonl -m codebleu -m chrf --label passed --json report.json
    """
    from workbench.correlate.analysis import run_correlate  # datasets and scipy: only when a command runs

    report = run_correlate(scores, config, json_path=json_path, plot_path=plot_path)
    print_report(report, json_path, plot_path)


def print_report(report: CorrelationReport, json_path: Path | None = None, plot_path: Path | None = None) -> None:
    """The correlation tables, the counts and warnings, and where the files were written."""
    _print_report(report)
    if report.deduplicated is not None:
        _print_per_cluster(report)
    if json_path is not None:
        console.print(f"JSON report: {Path(json_path)}")
    if plot_path is not None:
        from workbench.correlate.plot import figure_path

        console.print(f"Figure: {figure_path(plot_path)}")


def _print_per_cluster(report: CorrelationReport) -> None:
    """Each coefficient on all rows next to one row per near-duplicate cluster (``--dedup``)."""
    level = int(round(report.bootstrap.confidence * 100))
    selection = report.per_cluster
    table = Table(title=f"All rows vs one row per near-duplicate cluster ({level}% CI over tasks)", **_COMPACT)
    table.add_column("metric", overflow="fold", min_width=12)
    table.add_column("level", no_wrap=True)
    for heading in ("Kendall τ-b\nall rows", "Kendall τ-b\none per cluster", "difference\n[CI], p"):
        table.add_column(heading, justify="right", no_wrap=True)
    for name, result in report.metrics.items():
        other = report.deduplicated.metrics.get(name)
        for level_name, label in (("pooled", "pooled"), ("per_problem", "per-problem")):
            mine = getattr(result, level_name)["kendall"]
            theirs = getattr(other, level_name)["kendall"] if other else None
            difference = report.per_cluster_differences.get(name, {}).get(level_name, {}).get("kendall")
            table.add_row(name if level_name == "pooled" else f"[dim]n {result.n_samples} / {other.n_samples if other else 0}[/dim]",
                          label, _with_ci(mine), _with_ci(theirs) if theirs is not None else "n/a",
                          _difference_cell(difference), end_section=level_name == "per_problem")
    console.print(table)
    console.print(f"[dim]difference: one per cluster − all rows, paired (both on the same resampled tasks), with its "
                  f"{level}% percentile interval and two-sided bootstrap p-value; {ZERO_MARK}: the interval contains 0.[/dim]")
    console.print(
        f"one row per cluster of {selection.dedup_output} (the row the dedup kept): {selection.kept} of {count(selection.rows, 'row')}; "
        f"{count(selection.rows_in_clusters, 'row')} in {count(selection.clusters, 'cluster')}"
        + (f"; {count(selection.unknown_ids, 'row')} not in the dedup output (kept)" if selection.unknown_ids else "")
    )
    # the per-cluster report's own warnings and notes (a method_limit, small n), marked as whose they are
    for warning in report.deduplicated.warnings:
        err_console.print(f"[yellow]warning:[/yellow] one row per cluster: {escape(str(warning))}")
    for note in report.deduplicated.notes:
        err_console.print(f"{NOTE} one row per cluster: {escape(str(note))}")


def _difference_cell(difference: PairedDifference | None) -> str:
    """A paired difference over its interval (``≈0`` when the interval contains 0) and its p-value."""
    if difference is None or math.isnan(difference.difference):
        return "n/a"
    if difference.no_interval:
        return f"{_number(difference.difference)}\n{NO_CI}"
    low, high = difference.ci
    mark = f" {ZERO_MARK}" if interval_contains_zero(low, high) else ""
    p = "n/a" if math.isnan(difference.p_value) else _number(difference.p_value)
    return f"{_number(difference.difference)}{mark}\n[{_number(low)}, {_number(high)}]\np {p}"


def _fits(table: Table, folding_column: int = 0) -> bool:
    """Whether ``table`` fits the terminal with its ``folding_column`` at its ``min_width`` and
    every other column (intervals, which may not wrap) at its natural width. Drawn once into a
    wide off-screen console: rich's own minimum measure counts a no-wrap cell by its longest word."""
    wide = Console(width=1000, file=io.StringIO(), color_system=None)
    natural = Measurement.get(wide, wide.options, table).maximum
    column = table.columns[folding_column]
    cells = [Measurement.get(wide, wide.options, cell).maximum for cell in column.cells]
    flexible = max([*cells, Measurement.get(wide, wide.options, column.header).maximum])
    return natural - flexible + min(flexible, column.min_width or flexible) <= console.width


def _length_cells(result: MetricResult) -> tuple[str, str]:
    """A metric's τ-b with completion length, pooled and per problem (``n/a`` without a length)."""
    if not result.length:
        return "n/a", "n/a"
    return _with_ci(result.length.pooled["kendall"]), _with_ci(result.length.per_problem["kendall"])


def _coefficient_table(title: str, with_length: bool) -> Table:
    table = Table(title=title, **_COMPACT)
    table.add_column("metric", overflow="fold", min_width=12)  # a long name breaks across lines, never loses its end
    table.add_column("level", no_wrap=True)
    for heading in ("Kendall τ-b", "Spearman ρ", "Pearson r"):
        table.add_column(heading, justify="right", no_wrap=True)
    if with_length:
        table.add_column("τ-b with\nlength", justify="right", no_wrap=True)
    return table


def _label_text(counts) -> str:
    """``pass rate 0.417 (binary label)``, or for a graded label its mean, range and distinct grades."""
    if counts.pass_rate is None:
        s = counts.label_summary or {}
        return (f"label mean {s.get('mean', float('nan')):.3f} (graded label, {s.get('min', float('nan')):g}–"
                f"{s.get('max', float('nan')):g}, {count(s.get('distinct', 0), 'distinct value')})")
    return f"pass rate {counts.pass_rate:.3f} ({counts.label_kind} label)"


def _print_report(report: CorrelationReport) -> None:
    counts = report.counts
    level = int(round(report.bootstrap.confidence * 100))
    length = report.length
    has_length = length is not None and length.source is not None
    title = f"Correlation with {report.label!r} ({level}% CI over tasks)"

    def fill(table: Table, with_length: bool) -> Table:
        for name, result in report.metrics.items():
            extra = [[cell] for cell in _length_cells(result)] if with_length else [[], []]
            table.add_row(
                name, "pooled", *(_with_ci(result.pooled[c]) for c in ("kendall", "spearman", "pearson")), *extra[0],
            )
            table.add_row(
                f"[dim]n {result.n_samples}, {count(result.n_tasks, 'task')}[/dim]", "per-problem",
                *(_with_ci(result.per_problem[c]) for c in ("kendall", "spearman", "pearson")), *extra[1],
                end_section=True,
            )
        if has_length and length.execution is not None:
            e = length.execution
            blank = [""] if with_length else []
            table.add_row(f"length ({length.source.unit})", "pooled",
                          *(_with_ci(e.pooled[c]) for c in ("kendall", "spearman", "pearson")), *blank)
            table.add_row(f"[dim]n {e.n_samples}, {count(e.n_tasks, 'task')}[/dim]", "per-problem",
                          *(_with_ci(e.per_problem[c]) for c in ("kendall", "spearman", "pearson")), *blank)
        return table

    # the length column sits next to the coefficients when the terminal is wide enough; in a
    # narrower one (80 columns) it gets a table of its own rather than cutting any interval
    table = fill(_coefficient_table(title, has_length), has_length)
    separate_length = has_length and not _fits(table)
    if separate_length:
        table = fill(_coefficient_table(title, False), False)
    console.print(table)
    if separate_length:
        bias = Table(title="τ-b with completion length (verbosity bias)", **_COMPACT)
        bias.add_column("metric", overflow="fold", min_width=12)
        bias.add_column("pooled", justify="right", no_wrap=True)
        bias.add_column("per-problem", justify="right", no_wrap=True)
        for name, result in report.metrics.items():
            bias.add_row(name, *_length_cells(result))
        console.print(bias)
    outside = any(e.outside_interval for r in report.metrics.values() for e in (*r.pooled.values(), *r.per_problem.values()))
    console.print(
        f"{ZERO_MARK}: the {level}% interval contains 0: not distinguishable from 0."
        + (f" {OUTSIDE_MARK}: the estimate lies outside its own interval; do not read that interval (see the warning)."
           if outside else "")
        + (f" τ-b with length: the metric's rank agreement with the completion length ({length.source.describe()}), "
           "a judge's verbosity bias; the last rows: the length's own correlation with the label."
           if has_length else "")
    )
    if report.comparisons:
        title = "Paired bootstrap: difference in Kendall τ-b (same resampled tasks)"
        if report.baselines:
            title += f"; baselines {', '.join(report.baselines)}"
        pairs = Table(title=title, **_COMPACT)
        pairs.add_column("metric A", overflow="fold", min_width=10)
        pairs.add_column("metric B", overflow="fold", min_width=10)
        pairs.add_column("level", no_wrap=True)
        for heading in ("τ A", "τ B", f"A − B\n[{level}% CI]", "p"):
            pairs.add_column(heading, justify="right", no_wrap=True)
        for c in report.comparisons:
            for row_level, label in (("pooled", "pooled"), ("per_problem", "per-problem")):
                d = c.differences[row_level]["kendall"]
                first = row_level == "pooled"
                pairs.add_row(
                    c.metric_a if first else f"[dim]n {c.n_samples}, {count(c.n_tasks, 'task')}[/dim]", c.metric_b if first else "",
                    label, _number(d.value_a), _number(d.value_b),
                    f"{_number(d.difference)}{f' {ZERO_MARK}' if interval_contains_zero(*d.ci) and not d.no_interval else ''}\n"
                    # an undefined difference (a coefficient undefined in every task) withholds nothing
                    + ("" if math.isnan(d.difference) else NO_CI if d.no_interval
                       else f"[{_number(d.ci[0])},\N{NO-BREAK SPACE}{_number(d.ci[1])}]"),
                    _number(d.p_value), end_section=not first,
                )
        console.print(pairs)
        console.print(
            f"{ZERO_MARK}: the difference's {level}% interval contains 0. p counts the resamples on the far side of 0 "
            "(+1 correction, Davison & Hinkley 1997, 4.4), so a bound that prints as 0.000 (within 0.0005 of 0) can "
            f"come with p just above {1 - report.bootstrap.confidence:.2f}: at that edge neither says more than "
            "\"borderline\"."
        )
    for name, summary in report.combinations.items():
        c = summary.combination
        console.print(f"combination {name} = {c.method} of {', '.join(c.members)}: {summary.weights_note}")
    spt = counts.samples_per_task
    console.print(
        f"samples {counts.samples} (of {count(counts.rows, 'row')}), tasks {counts.tasks}, samples/task "
        f"{spt['min']}–{spt['max']} (median {spt['median']:g}), {_label_text(counts)}; "
        f"left out: {counts.excluded_missing_label} without label, {counts.excluded_missing_task} without task id"
        + (f", {counts.excluded_missing_sample} without sample id" if counts.join is not None else "")
    )
    if counts.join is not None:
        j = counts.join
        console.print(
            f"join on ({j.key[0]}, {j.key[1]}): {j.matched} matched; {count(j.unmatched_scores, 'score row')} without a "
            f"result, {count(j.unmatched_results, 'result row')} without scores"
            + (f"; {j.code_mismatches} left out as other code (code_sha256)" if j.code_mismatches else "")
            + (f"; status: {', '.join(f'{k} {v}' for k, v in j.status_counts.items())}" if j.status_counts else "")
        )
    for name, result in report.metrics.items():
        rows, tasks = result.excluded_rows, result.excluded_tasks
        line = (
            f"{name}: {count(result.n_samples, 'sample')} from {count(result.n_tasks, 'task')}; per-problem mean over "
            f"{count(result.per_problem_tasks, 'task')} (left out: constant label {tasks['constant_label']}, constant metric "
            f"{tasks['constant_metric']}, single sample {tasks['single_sample']})"
        )
        if rows.total:
            line += (
                f"; rows left out: {rows.total} (missing {rows.missing}, non-numeric {rows.non_numeric}, "
                f"infinite {rows.non_finite})"
            )
        spanning = [f"{level.replace('_', '-')} {_SYMBOLS[c]}" for level, c in result.not_distinguishable_from_zero()]
        if spanning:
            line += f"; not distinguishable from 0: {', '.join(spanning)}"
        undefined = [*_undefined_text(result.pooled, "pooled", report.bootstrap.n_resamples),
                     *_undefined_text(result.per_problem, "per-problem", report.bootstrap.n_resamples)]
        if undefined:
            line += f"; undefined in resamples (left out of the intervals): {', '.join(undefined)}"
        console.print(line)
    if length is not None and length.note and length.note not in (*report.warnings, *report.notes):
        console.print(length.note)  # else it is printed as a note
    b = report.bootstrap
    console.print(f"bootstrap: {b.n_resamples} resamples of whole tasks, seed {b.seed}, percentile intervals")
    for warning in report.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(str(warning))}")
    for note in report.notes:  # expected outcomes of the inputs' own settings: information, not faults
        err_console.print(f"{NOTE} {escape(str(note))}")
