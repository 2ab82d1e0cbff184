"""``workbench execute``: run generations against their tests in a sandbox.

Options and printing only; the work is :func:`workbench.execute.job.run_execute`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from workbench.cli.app import app, console, err_console, exit_with_verdict
from workbench.cli.config_options import config_options, resume_command
from workbench.cli.interrupts import interrupted_status, interrupted_word
from workbench.execute.config import ExecutionConfig
from workbench.formatting import count


def _print_note(note: str) -> None:
    """One note of a run on stderr (a ``WARNING`` in bold red)."""
    style = "bold red" if note.startswith("WARNING") else "yellow"
    err_console.print(f"[{style}]{escape(str(note))}[/{style}]")


@contextmanager
def progress_hooks(enabled: bool = True, notes: bool = True) -> Iterator[dict[str, Callable]]:
    """``on_start`` / ``on_result`` for :func:`run_execute` that draw progress bars on stderr,
    and ``on_note`` that prints the notes known before the run at once (unless not ``notes``);
    :func:`print_summary` prints the others."""
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TimeRemainingColumn(), TextColumn("{task.fields[status]}"),
        console=err_console, disable=not enabled, transient=False,
    )
    tasks: dict[str, int] = {}
    passed = {"n": 0}

    def on_start(phase: str, size: int) -> None:
        label = "timing references" if phase == "calibrate" else "executing"
        tasks[phase] = progress.add_task(label, total=size, status="")

    def on_result(row: dict) -> None:
        if row.get("phase") == "calibrate":
            progress.advance(tasks["calibrate"])
            return
        passed["n"] += row.get("passed", 0)
        progress.update(tasks["execute"], advance=1, status=f"passed {passed['n']}")

    with progress:
        yield {"on_start": on_start, "on_result": on_result, **({"on_note": _print_note} if notes else {})}


def print_summary(summary: Any) -> None:
    """The notes (on stderr; not those printed before the run, ``announced_notes``) and the
    summary table of a finished run."""
    for note in summary.notes[summary.announced_notes:]:
        _print_note(note)
    table = Table(title=f"workbench execute -> {summary.output}", show_header=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("isolation", summary.isolation.description)
    lowered = [f"{item['flag']} {item['applied']}" for item in summary.limits.values() if item.get("lowered")]
    if lowered:
        table.add_row("limits lowered", ", ".join(lowered) + " (see the notes)")
    not_run = f", {summary.sandbox_errors} not run (sandbox error)" if summary.sandbox_errors else ""
    table.add_row("samples", f"{summary.total} in input, {summary.skipped_finished} already done, "
                             f"{summary.executed} run now{not_run}")
    table.add_row("speed", f"{summary.samples_per_s:.2f} samples/s ({summary.elapsed_s:.1f} s)")
    table.add_row("status", ", ".join(f"{k} {v}" for k, v in summary.counts.items()) or "-")
    flaky = summary.flaky
    if flaky.get("repeated"):
        flips = f" ({flaky['pass_flips']} passed on some attempts only)" if flaky["pass_flips"] else ""
        spread = (f"; pass@1 {flaky['pass_at_1_flaky_failed']:.4f} if they all failed, "
                  f"{flaky['pass_at_1_flaky_passed']:.4f} if they all passed" if flaky["pass_flips"] else "")
        table.add_row("flaky", f"{flaky['samples']} of the {count(flaky['repeated'], 'repeated sample')}{flips}, "
                               f"in {count(flaky['tasks'], 'task')}: pass@k counts each sample's {flaky['rule']}{spread}")
    memory = summary.memory
    if memory.get("measured"):
        limit = memory.get("limit_mib")
        near = (f", {memory['near_limit']} near the {limit:g} MiB limit: " + "; ".join(memory["near_limit_samples"])
                if memory.get("near_limit") else "")
        if limit is None:  # the runner turns it off (the JVM reserves address space): nothing is near it
            near = ", no address-space limit to compare with (the language's runner turns it off)"
        unmeasured = f", {memory['unmeasured']} not measured" if memory.get("unmeasured") else ""
        table.add_row("memory", f"peak median {memory['median_peak_rss_mib']:g} MiB, max {memory['max_peak_rss_mib']:g} "
                                     f"MiB (resident, per sample){unmeasured}{near}")
    report = summary.pass_at_k
    if report is None or not report.values:
        table.add_row("pass@1", "-" if summary.pass_at_1 is None else f"{summary.pass_at_1:.4f}")
    for value in report.values if report is not None else ():
        # the tasks' bootstrap interval: how much the figure would move with another draw of problems
        interval = (f" (no CI: {value.no_interval})" if value.low is None
                    else f" [{value.low:.4f}, {value.high:.4f}] (95% CI over tasks)")
        table.add_row(f"pass@{value.k}", f"{value.estimate:.4f}{interval}, {count(value.tasks, 'task')}")
    for k, why in (report.omitted.items() if report is not None else ()):
        table.add_row(f"pass@{k}", f"- ({why})")
    console.print(table)


@app.command("execute", short_help="Run generated code against the problems' tests in a sandbox.")
@config_options(ExecutionConfig, extra_flags={"language": ("-l",), "workers": ("-j",)})
def execute_command(
    config: ExecutionConfig,
    generations: str = typer.Argument(..., help="Generations: a .jsonl/.json/.parquet/.csv file, folder or hub id."),
    output: Path = typer.Option(..., "--output", "-o", help="Results file (jsonl), appended as samples finish."),
    json_output: bool = typer.Option(False, "--json", help="Print the summary as JSON (and no progress bars)."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr."),
) -> None:
    """Run generated code against the problems' tests in a sandbox and write one result row
    per sample (task_id, sample_id, passed, status, duration_s, stderr tail, ...).

    Exit status: 0 ok (failing tests are results); 1 error (configuration, data, a sandbox that
    does not work); 2 bad command line; 3 no sample of this run could be run; 4 samples the
    sandbox could not run above --max-failures; 130 interrupted (143 by SIGTERM).
    """
    # imported here: the job pulls in `datasets`, which every other command would pay for
    from workbench.execute.job import run_execute

    try:
        # --json: the notes are in the JSON, stderr stays quiet
        with progress_hooks(progress and not json_output, notes=not json_output) as hooks:
            summary = run_execute(generations, output, config, **hooks)
    except KeyboardInterrupt:
        again = resume_command("execute", generations, config, {"--output": str(output)})
        if Path(output).is_file() and Path(output).stat().st_size > 0:
            said = f"[yellow]{interrupted_word()}.[/yellow] The finished rows are kept in {escape(str(output))}; continue with:"
        else:  # stopped while reading the data or starting the sandbox: no row to keep (--resume starts afresh)
            said = (f"[yellow]{interrupted_word()} before any sample finished:[/yellow] nothing was written to "
                    f"{escape(str(output))}; run it again with:")
        err_console.print(said, highlight=False, soft_wrap=True)
        err_console.print(again, markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(interrupted_status()) from None

    if json_output:
        typer.echo(json.dumps(summary.as_dict(), indent=2))
    else:
        print_summary(summary)
    exit_with_verdict(summary.failures)
