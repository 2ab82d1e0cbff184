"""``workbench bias``: parse options, call :func:`workbench.bias.run_bias`, print."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich import box
from rich.table import Table

from workbench.bias.config import BiasConfig

if TYPE_CHECKING:
    from workbench.bias.intervals import Interval, SettingDifference
    from workbench.bias.results import Analysis, BiasReport
from workbench.cli.app import NOTE, app, console, err_console
from workbench.cli.config_options import config_options
from workbench.cli.correlate import ZERO_MARK
from workbench.formatting import count, fixed

_COMPACT = {"box": box.SIMPLE_HEAD, "pad_edge": False, "show_edge": False, "collapse_padding": True}
_TITLES = {
    "train_test": "Duplication bias over the test set (Allamanis 2019, Table 2; Δ as Table 3; Eq. 2)",
    "single_set": "Duplication bias: all rows vs one row per duplicate cluster (Allamanis 2019, Sec. 2, Eq. 2)",
    "contamination": "Contamination: clean vs contaminated rows (GPT-3, Brown et al. 2020, App. C)",
}


def _number(value: float | None, digits: int = 4) -> str:
    return fixed(value, digits)


@app.command("bias", short_help="Measure how much duplicates and contamination move a metric.")
@config_options(BiasConfig, extra_flags={"metric": ("-m",)})
def bias_command(
    config: BiasConfig,
    dedup_output: Path = typer.Argument(..., help="A `workbench dedup -o` folder (clusters.json, removed.csv, report.json; contamination.csv with --against)."),
    metrics: str = typer.Argument(..., help="Per-row metric table: .jsonl/.json/.parquet/.csv (optionally .gz), a bundled name or a hub id "
                                  "(e.g. `workbench execute` results, a score table)."),
    json_path: str | None = typer.Option(None, "--json", help="Write the machine-readable report here."),
    plot_path: str | None = typer.Option(None, "--plot", help="Write a figure here (.png/.svg/.pdf): each metric per setting with its CI."),
) -> None:
    """How much do duplicates and contamination move a metric? Joins per-row metric values to a `workbench dedup` output by row id and reports each metric, with bootstrap CIs and the rows behind each value, in the settings of Allamanis 2019 ("The Adverse Effects of Code Duplication in Machine Learning Models of Code"):

    Train/test corpus (Table 2): fully biased = every test row; cross-set biased = in-test duplicates collapsed to one row per cluster, test rows with a train duplicate kept; unbiased test = also without the test rows that have a duplicate in train (or in another split, such as validation); fully unbiased needs a model retrained on the deduplicated train split and is not computed. Δ% = 100 (cross-set biased - unbiased test) / |unbiased test|, the relative difference of Table 3.

    One set of rows (e.g. a benchmark's generations): all rows vs one row per duplicate cluster.

    Eq. 2 (Sec. 2): f̂ = (1 - d) f̄ + d β, with d = (|D| - |X|) / |D| the duplication factor, f̄ the mean over the deduplicated rows X (a cluster counts with the row the dedup kept, as the paper keeps one file per cluster) and β the mean over the removed duplicates D \\ X, the duplication bias; the identity is checked on the numbers.

    With --against in the dedup run (or --contamination DIR): clean vs contaminated rows (and tasks), the clean-subset report of GPT-3 (Brown et al. 2020, App. C), with the contaminated ids.

    Example: workbench bias out/ results.jsonl -m passed --id-column task_id,sample_id --task-column task_id
    """
    from workbench.bias.job import run_bias  # datasets and scipy: only when a command runs

    if not config.metric:  # a command-line mistake (exit 2), before anything is read
        raise typer.BadParameter("name at least one per-row metric column", param_hint="'--metric' / '-m'")
    report = run_bias(dedup_output, metrics, config, json_path=json_path, plot_path=plot_path)
    print_report(report)
    if json_path is not None:
        console.print(f"JSON report: {json_path}")
    if plot_path is not None:
        console.print(f"Figure: {plot_path}")


def print_report(report: BiasReport) -> None:
    """The tables of each analysis, the join counts, notes and warnings."""
    level = int(round(report.bootstrap["confidence"] * 100))
    for analysis in (report.duplication, report.contamination):
        if analysis is not None:
            _print_analysis(analysis, level, report.bootstrap["unit"])
    j = report.join
    console.print(
        f"join on {','.join(j.id_columns)}: {j.joined} of {j.metric_rows} metric rows joined; {j.unjoined} not in the "
        f"dedup output (left out), {j.without_id} without an id; {j.dedup_rows_without_metric} of the dedup's "
        f"{count(j.dedup_rows, 'row')} {'has' if j.dedup_rows_without_metric == 1 else 'have'} no metric row"
        + (f" ({j.dedup_rows_counted_without_metric} of its {count(j.dedup_rows_counted, 'test row')}, the rows the "
           "settings count)" if j.rows_counted == "test" else "")
    )
    if j.unjoined_ids:
        console.print(f"ids not in the dedup output: {escape(', '.join(j.unjoined_ids))}"
                      f"{' ...' if j.unjoined > len(j.unjoined_ids) else ''}")
    if report.label is not None:
        what = ("a grade: Kendall tau-b counts the ties in it" if report.label_kind == "graded"
                else "an execution outcome, 0/1 or a pass ratio")
        console.print(f"label {escape(repr(report.label))} ({report.label_kind}: {what})")
    b = report.bootstrap
    console.print(f"bootstrap: {b['n_resamples']} resamples of whole {b['unit']}s, seed {b['seed']}, {level}% percentile "
                  "intervals")
    for warning in report.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(str(warning))}")
    for note in report.notes:  # expected outcomes of the inputs' own settings: information, not faults
        err_console.print(f"{NOTE} {escape(str(note))}")


def _interval(value: Interval, digits: int = 4, suffix: str = "", rows: bool = False) -> str:
    """Value over its interval (and the rows / units behind it); ``≈0`` after the value when the
    interval contains 0, bounds included (``[-0.09, 0.00]`` too), as correlate marks it."""
    sizes = f"\n[dim]n {value.n_rows} / {value.n_units}[/dim]" if rows else ""
    if math.isnan(value.value):
        return "n/a" + sizes
    ci = "(no CI: small n)" if value.no_interval else f"[{_number(value.low, digits)}, {_number(value.high, digits)}]"
    mark = f" {ZERO_MARK}" if _marked(value) else ""
    return f"{_number(value.value, digits)}{suffix}{mark}\n{ci}{sizes}"


def _difference_cell(difference: SettingDifference) -> str:
    """A tau-b difference over its interval and p-value (``≈0`` when the interval contains 0)."""
    if math.isnan(difference.value):
        return "n/a"
    if difference.no_interval:
        return f"{_number(difference.value, 3)}\n(no CI: small n)"
    mark = f" {ZERO_MARK}" if difference.spans_zero else ""
    return (f"{_number(difference.value, 3)}{mark}\n[{_number(difference.low, 3)}, {_number(difference.high, 3)}]"
            f"\np {_number(difference.p_value, 3)}")


def _marked(value: Interval) -> bool:
    """Whether :func:`_interval` marks ``value`` ``≈0`` (and the legend is printed)."""
    return not math.isnan(value.value) and bool(value.spans_zero) and not value.no_interval


def _any_zero_mark(analysis: Analysis) -> bool:
    """Whether some value of the analysis's table is marked ``≈0``."""
    for result in analysis.metrics.values():
        values = [*result.settings.values(), *result.task_means.values(), *result.correlation.values()]
        if any(_marked(v) for v in values) or (result.delta is not None and _marked(result.delta)):
            return True
        if any(not d.no_interval and not math.isnan(d.value) and d.spans_zero for d in result.correlation_differences):
            return True
    return False


def _print_analysis(analysis: Analysis, level: int, unit: str) -> None:
    title = _TITLES[analysis.kind]
    if analysis.kind == "contamination" and analysis.counts.get("rows") == "test":
        # the same test rows as the duplication settings (a train/test corpus)
        title = title.replace("contaminated rows", f"contaminated test rows ({analysis.counts.get('rows_counted')})")
    table = Table(title=title, **_COMPACT)
    table.add_column("metric / setting", no_wrap=True)
    table.add_column(f"mean [{level}% CI]\nn rows / {unit}s", justify="right", no_wrap=True)
    with_tasks = any(result.task_means for result in analysis.metrics.values())
    if with_tasks:
        table.add_column("mean over\ntasks", justify="right", no_wrap=True)
    with_tau = any(result.correlation for result in analysis.metrics.values())
    if with_tau:
        table.add_column("τ-b with\nlabel", justify="right", no_wrap=True)
    blank = [""] * (with_tau + with_tasks)
    between = " vs\n   ".join(analysis.setting_label(name) for name in analysis.delta_between)
    for name, result in analysis.metrics.items():
        missing = f" [dim]({count(result.missing, 'row')} without a value)[/dim]" if result.missing else ""
        table.add_row(f"[bold]{escape(name)}[/bold]{missing}", "", *blank)
        for setting in analysis.settings:
            tasks = [_interval(result.task_means[setting]) if result.task_means else ""] if with_tasks else []
            tau = [_interval(result.correlation[setting], 3) if result.correlation else ""] if with_tau else []
            table.add_row(f"  {analysis.setting_label(setting)}", _interval(result.settings[setting], rows=True), *tasks, *tau)
        if result.delta is not None:
            table.add_row(f"  Δ% {between}", _interval(result.delta, 2, "%"), *blank)
        e = result.decomposition
        if e is not None:
            residual = "n/a" if math.isnan(e.residual) else f"{e.residual:.1e}"
            # d's D is every row with a value, not only the rows long enough to compare: say so, so it is
            # not taken for the d of the dedup table (over the compared rows)
            rows_of = "test rows" if analysis.kind == "train_test" else "rows"
            table.add_row(f"  Eq. 2: |D|, |X|\n   d over all {e.n_d:,} {rows_of}\n   f̄\n   β\n   |f̂-(1-d)f̄-dβ|",
                          f"{e.n_d}, {e.n_x}\n{_number(e.d)}\n{_number(e.f_bar)}\n{_number(e.beta)}\n{residual}", *blank)
        elif result.unmeasured and analysis.kind != "contamination":
            table.add_row("  Eq. 2: d, f̄, β", "n/a (not measured:\nsee the warning)", *blank)
        for difference in result.correlation_differences:
            # the tau-b column holds it; the mean (and tasks) columns are empty
            name_a, name_b = analysis.setting_label(difference.a), analysis.setting_label(difference.b)
            kind = "paired" if difference.paired else "unpaired"
            # no wider than the setting names above it, so the columns stay where they were
            table.add_row(f"  τ-b difference\n  {name_a}\n  − {name_b}\n  ({kind})", "", *([""] if with_tasks else []),
                          _difference_cell(difference))
        table.rows[-1].end_section = True
    console.print(table)
    differences = [d for result in analysis.metrics.values() for d in result.correlation_differences]
    if differences:
        unpaired = sorted({f"{analysis.setting_label(d.a)} − {analysis.setting_label(d.b)}" for d in differences if not d.paired})
        console.print(f"[dim]τ-b differences: {level}% percentile interval and two-sided bootstrap p; paired = both settings "
                      f"on the same resampled {unit}s"
                      + (f"; unpaired ({', '.join(unpaired)}): the settings share no {unit}, each is resampled on its own "
                         "independent draws" if unpaired else "") + ".[/dim]")
    if _any_zero_mark(analysis):  # the legend of a mark the table shows, not of one it does not
        console.print(f"[dim]{ZERO_MARK}: the {level}% interval contains 0: not distinguishable from 0.[/dim]")
    counts = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in analysis.counts.items() if v is not None)
    console.print(f"[dim]{escape(counts)}[/dim]")
    for note in analysis.notes:  # a note names config keys ("[dedup] min_tokens") under workbench run: not markup
        console.print(f"[dim]note: {escape(note)}[/dim]")
    listed = analysis.ids.get("contaminated_ids")
    if listed is not None:
        shown = ", ".join(listed[:20]) + (" ..." if len(listed) > 20 else "")
        console.print(f"contaminated ids ({len(listed)}): {escape(shown) or '(none)'}")
