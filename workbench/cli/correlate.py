"""``workbench correlate``: parse options, call :func:`workbench.stats.correlate`, print."""

from __future__ import annotations

import math
from pathlib import Path

import typer
from rich import box
from rich.table import Table

from workbench.cli.app import app, console, err_console
from workbench.stats import CorrelationReport, Estimate, correlate
from workbench.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES


#: table style that fits value-over-CI cells for three coefficients in 80 columns
_COMPACT = {"box": box.SIMPLE_HEAD, "pad_edge": False, "show_edge": False, "collapse_padding": True}


def _number(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"


def _with_ci(estimate: Estimate) -> str:
    if math.isnan(estimate.value):
        return "n/a"
    return f"{estimate.value:.3f}\n[{_number(estimate.ci[0])}, {_number(estimate.ci[1])}]"


@app.command("correlate")
def correlate_command(
    scores: str = typer.Argument(
        ...,
        help="Scores table: .jsonl/.json/.parquet/.csv (optionally .gz), an ICE-Score *_grade.json, "
        "a bundled name (humaneval-codex-python) or a hub id.",
    ),
    metric: list[str] = typer.Option(
        None, "--metric", "-m", help="Metric column; repeat for several. Default: every numeric column except label/task/sample."
    ),
    label: str = typer.Option("passed", "--label", help="Execution label column: 0/1 or a pass ratio in [0, 1]."),
    results: str = typer.Option(
        None,
        "--results",
        help="Execution results table (e.g. `workbench execute` output) to join on task + sample id; "
        "the label is then read from it.",
    ),
    task_column: str = typer.Option("task_id", "--task-column", help="Task id column (both tables)."),
    sample_column: str = typer.Option(
        None,
        "--sample-column",
        help="Sample id column (both tables). Default sample_id: the join key, and used to reject duplicate keys.",
    ),
    split: list[str] = typer.Option(None, "--split", help="Split of the scores table to use; repeatable. Default: all."),
    resamples: int = typer.Option(DEFAULT_RESAMPLES, "--resamples", min=1, help="Bootstrap resamples of whole tasks."),
    seed: int = typer.Option(0, "--seed", min=0, max=2**32 - 1, help="Seed of the bootstrap resampling."),
    confidence: float = typer.Option(
        DEFAULT_CONFIDENCE, "--confidence", min=0.5, max=0.999, help="Confidence level of the intervals."
    ),
    json_path: Path = typer.Option(None, "--json", help="Write the machine-readable report here."),
    plot_path: Path = typer.Option(
        None, "--plot", help="Write a figure here (.png/.svg/.pdf): CI forest plot and score distributions by outcome."
    ),
    offline: bool = typer.Option(False, "--offline", help="Never contact the Hugging Face hub."),
) -> None:
    """Correlate metric scores with execution results: Kendall tau-b, Pearson r and Spearman rho,
    pooled over all samples and per problem (mean over tasks; constant tasks excluded and counted),
    with bootstrap CIs over tasks and paired comparisons of metrics' pooled Kendall tau.

    Example: workbench correlate scores.jsonl -m codebleu -m chrf --label passed --json report.json
    """
    report = correlate(
        scores,
        metrics=metric or None,
        label=label,
        results=results,
        task_column=task_column,
        sample_column=sample_column,
        splits=split or None,
        n_resamples=resamples,
        confidence=confidence,
        seed=seed,
        offline=offline,
    )
    _print_report(report)
    if json_path is not None:
        console.print(f"JSON report: {report.write_json(json_path)}")
    if plot_path is not None:
        from workbench.stats.plot import plot_report

        console.print(f"Figure: {plot_report(report, plot_path)}")


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
