"""``workbench dedup``: options and printing only; the work is :func:`workbench.dedup.run_dedup`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from workbench.cli.app import NOTE, app, console, err_console
from workbench.cli.config_options import config_options
from workbench.cli.interrupts import interrupted_status, interrupted_word
from workbench.dedup.config import DedupConfig
from workbench.dedup.output_folder import OutputsInPlace, interrupted_after_run_message

if TYPE_CHECKING:
    from workbench.dedup.job import DedupRun


@contextmanager
def progress_bars(enabled: bool = True) -> Iterator[Callable | None]:
    """A progress-bar factory for :func:`run_dedup` (bars on stderr), or ``None`` when disabled."""
    if not enabled:
        yield None
        return
    with Progress(
        TextColumn("{task.description:<22}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=False,
    ) as bars:

        @contextmanager
        def factory(description: str, total: int):
            task = bars.add_task(description, total=total)
            yield lambda n: bars.advance(task, n)
            bars.update(task, completed=total)

        yield factory


def print_run(run: DedupRun, output: str | Path | None) -> None:
    """The report as tables, and what was written where."""
    from workbench.dedup.duplication_report import render_report

    for renderable in render_report(run.report):
        console.print(renderable)
    if run.written:
        console.print(f"Wrote {len(run.written)} outputs to {output}: " + ", ".join(Path(p).name for p in run.written.values()))
    elif output is None:
        console.print("No --output given: nothing was written (the report only). Pass -o FOLDER for the deduplicated "
                      "splits, clusters.json, pairs.csv, removed.csv and report.json.")


@app.command("dedup", short_help="Find exact and near-duplicates and write deduplicated splits.")
@config_options(DedupConfig, extra_flags={"set_threshold": ("--t0",), "multiset_threshold": ("--t1",),
                                          "workers": ("-j",), "language": ("-l",)})
def dedup_command(
    config: DedupConfig,
    source: str = typer.Argument(..., help="Data file (.jsonl/.json/.parquet/.csv[.gz]), folder, bundled name or hub id; with --engine spark also a URI Spark reads itself (file://, s3a://, hdfs://, gs://, abfss://: JSON Lines or Parquet file, folder or glob)."),
    # a str, not a Path: Path would fold the // of s3a://bucket/out
    output: Optional[str] = typer.Option(None, "--output", "-o", help="Folder for clusters.json, pairs.csv, removed.csv, report.json and the deduplicated splits; a file:// URI is the local folder it names. With --engine spark and a SOURCE URI, also a URI Spark writes (s3a://, hdfs://, gs://, abfss://): Spark writes the splits there and the small files are copied there through Hadoop's file system (the same --spark-conf connector settings as the input). Files there that no earlier run recorded in manifest.json are refused; the outputs are swapped in when all are written."),
    json_output: bool = typer.Option(False, "--json", help="Print the report as JSON instead of tables."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bars on stderr."),
) -> None:
    """Find exact and near-duplicate files within and across splits (Allamanis 2019: MinHash LSH
    candidates, exact set/multiset Jaccard verification), report the duplication and write
    deduplicated splits."""
    try:
        with progress_bars(progress and not json_output) as factory:
            # datasets: only when a command runs
            from workbench.dedup.job import run_dedup

            run = run_dedup(source, config, output_dir=output, progress=factory)
    except OutputsInPlace as stop:  # the outputs were swapped in before the Ctrl-C
        typer.echo(interrupted_after_run_message(output, stop.written, interrupted_status(), interrupted_word()),
                   err=True)
        raise typer.Exit(interrupted_status()) from None
    except KeyboardInterrupt:
        from workbench.dedup.output_folder import interrupted_message

        # outputs are staged and swapped in at the end: the generic "may be incomplete" is wrong here
        typer.echo(interrupted_message(output, interrupted_status(), interrupted_word()), err=True)
        raise typer.Exit(interrupted_status()) from None
    try:
        for note in run.notes:
            err_console.print(f"{NOTE} {escape(note)}")
        if json_output:
            typer.echo(json.dumps(run.report, indent=2, default=str))
            return
        print_run(run, output)
    except KeyboardInterrupt:
        # the run finished and its outputs were swapped in: only the printing was cut short
        typer.echo(interrupted_after_run_message(output, run.written, interrupted_status(), interrupted_word()),
                   err=True)
        raise typer.Exit(interrupted_status()) from None
