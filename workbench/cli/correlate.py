"""``workbench correlate``: parse options, call :func:`workbench.stats.run_correlate`, print."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich import box
from rich.table import Table

from workbench.cli.app import app, console, err_console
from workbench.cli.options import config_options
from workbench.stats import CorrelateConfig, CorrelationReport, Estimate, run_correlate


#: table style that fits value-over-CI cells for three coefficients in 80 columns
_COMPACT = {"box": box.SIMPLE_HEAD, "pad_edge": False, "show_edge": False, "collapse_padding": True}


def _number(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"


def _with_ci(estimate: Estimate) -> str:
    if math.isnan(estimate.value):
        return "n/a"
    return f"{estimate.value:.3f}\n[{_number(estimate.ci[0])}, {_number(estimate.ci[1])}]"


@app.command("correlate")
@config_options(CorrelateConfig, extra_flags={"metric": ("-m",)})
def correlate_command(
    config: CorrelateConfig,
    scores: str = typer.Argument(
        ...,
        help="Scores table: .jsonl/.json/.parquet/.csv (optionally .gz), an ICE-Score *_grade.json, "
        "a bundled name (humaneval-codex-python) or a hub id.",
    ),
    json_path: Path = typer.Option(None, "--json", help="Write the machine-readable report here."),
    plot_path: Path = typer.Option(
        None, "--plot", help="Write a figure here (.png/.svg/.pdf): CI forest plot and score distributions by outcome."
    ),
) -> None:
    """Correlate metric scores with execution results: Kendall tau-b, Pearson r and Spearman rho,
    pooled over all samples and per problem (mean over tasks; constant tasks excluded and counted),
    with bootstrap CIs over tasks and paired comparisons of metrics' pooled Kendall tau.

    Example: workbench correlate scores.jsonl -m codebleu -m chrf --label passed --json report.json
    """
    report = run_correlate(scores, config, json_path=json_path, plot_path=plot_path)
    print_report(report, json_path, plot_path)


def print_report(report: CorrelationReport, json_path: Path | None = None, plot_path: Path | None = None) -> None:
    """The correlation tables, the counts and warnings, and where the files were written."""
    _print_report(report)
    if json_path is not None:
        console.print(f"JSON report: {Path(json_path)}")
    if plot_path is not None:
        console.print(f"Figure: {Path(plot_path)}")


def _print_report(report: CorrelationReport) -> None:
    counts = report.counts
    level = int(round(report.bootstrap.confidence * 100))
    table = Table(title=f"Correlation with {report.label!r} ({level}% CI over tasks)", **_COMPACT)
    table.add_column("metric", no_wrap=True)
    table.add_column("level", no_wrap=True)
    for heading in ("Kendall τ-b", "Spearman ρ", "Pearson r"):
        table.add_column(heading, justify="right", no_wrap=True)
    for name, result in report.metrics.items():
        table.add_row(
            name, "pooled", *(_with_ci(result.pooled[c]) for c in ("kendall", "spearman", "pearson")),
        )
        table.add_row(
            "", "per-problem", *(_with_ci(result.per_problem[c]) for c in ("kendall", "spearman", "pearson")),
            end_section=True,
        )
    console.print(table)
    if report.comparisons:
        pairs = Table(title="Paired bootstrap: difference in pooled Kendall τ-b", **_COMPACT)
        pairs.add_column("metric A")
        pairs.add_column("metric B")
        for heading in ("τ A", "τ B", "A − B", f"{level}% CI", "p"):
            pairs.add_column(heading, justify="right")
        for c in report.comparisons:
            pairs.add_row(
                c.metric_a, c.metric_b, _number(c.kendall_a), _number(c.kendall_b), _number(c.difference),
                f"[{_number(c.ci[0])},\N{NO-BREAK SPACE}{_number(c.ci[1])}]", _number(c.p_value),
            )
        console.print(pairs)
    spt = counts.samples_per_task
    console.print(
        f"samples {counts.samples} (of {counts.rows} rows), tasks {counts.tasks}, samples/task "
        f"{spt['min']}–{spt['max']} (median {spt['median']:g}), pass rate {counts.pass_rate:.3f} ({counts.label_kind} label); "
        f"left out: {counts.excluded_missing_label} without label, {counts.excluded_missing_task} without task id"
    )
    if counts.join is not None:
        j = counts.join
        console.print(
            f"join on ({j.key[0]}, {j.key[1]}): {j.matched} matched; {j.unmatched_scores} score rows without a result, "
            f"{j.unmatched_results} result rows without scores"
            + (f"; status: {', '.join(f'{k} {v}' for k, v in j.status_counts.items())}" if j.status_counts else "")
        )
    for name, result in report.metrics.items():
        rows, tasks = result.excluded_rows, result.excluded_tasks
        line = (
            f"{name}: {result.n_samples} samples; per-problem mean over {result.per_problem_tasks} of "
            f"{result.n_tasks} tasks (left out: constant label {tasks['constant_label']}, constant metric "
            f"{tasks['constant_metric']}, single sample {tasks['single_sample']})"
        )
        if rows.total:
            line += (
                f"; rows left out: {rows.total} (missing {rows.missing}, non-numeric {rows.non_numeric}, "
                f"infinite {rows.non_finite})"
            )
        console.print(line)
    b = report.bootstrap
    console.print(f"bootstrap: {b.n_resamples} resamples of whole tasks, seed {b.seed}, percentile intervals")
    for warning in report.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {warning}")
