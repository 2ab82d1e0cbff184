"""``workbench execute``: run generations against their tests in a sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from workbench.cli.app import app, console, err_console
from workbench.execution.isolation import LEVEL_ORDER
from workbench.execution.limits import MiB, ResourceLimits
from workbench.execution.timeouts import DEFAULT_TIMEOUT_FACTOR, DEFAULT_TIMEOUT_FLOOR_S

#: the Click context ``obj`` of a command that ``workbench run`` invokes as one of its stages
PIPELINE_STAGE = "workbench-run-stage"

_ISOLATION_CHOICES = ["auto"] + [level.value for level in LEVEL_ORDER]  # never "unsandboxed" for model output


@app.command("execute")
def execute_command(
    ctx: typer.Context,
    generations: str = typer.Argument(..., help="Generations: a .jsonl/.json/.parquet/.csv file, folder or hub id."),
    output: Path = typer.Option(..., "--output", "-o", help="Results file (jsonl), appended as samples finish."),
    problems: str = typer.Option("humaneval", help="Problem set with prompt / test / entry point columns (bundled name, file or hub id)."),
    problems_split: str = typer.Option(None, help="Split of the problem set (default: its only split, or 'test')."),
    language: str = typer.Option("python", "--language", "-l", help="Language plugin whose runner executes the samples."),
    mode: str = typer.Option("completion", help="'completion': prompt + completion; 'full': the completion is the whole program."),
    task_column: str = typer.Option("task_id", help="Generations column with the task id."),
    sample_column: str = typer.Option("sample_id", help="Generations column with the sample id (if absent: numbered per task)."),
    completion_column: str = typer.Option("completion", help="Generations column with the generated code."),
    prompt_column: str = typer.Option(None, help="Generations column with the prompt to prepend (default: the problem's prompt)."),
    problem_task_column: str = typer.Option("task_id", help="Problems column with the task id."),
    problem_prompt_column: str = typer.Option("prompt", help="Problems column with the prompt."),
    test_column: str = typer.Option("test", help="Problems column with the test code."),
    entry_point_column: str = typer.Option("entry_point", help="Problems column with the function under test."),
    reference_column: str = typer.Option("canonical_solution", help="Problems column with the reference solution (timeout calibration)."),
    workers: int = typer.Option(None, "--workers", "-j", min=1, help="Parallel samples (default: number of cores)."),
    timeout: float = typer.Option(None, min=0.1, max=86400, help="One fixed timeout in seconds for every sample (skips calibration)."),
    timeout_floor: float = typer.Option(DEFAULT_TIMEOUT_FLOOR_S, min=0.1, max=86400, help="Calibrated timeout: max(floor, factor x reference time), seconds."),
    timeout_factor: float = typer.Option(DEFAULT_TIMEOUT_FACTOR, min=1.0, max=1000, help="Calibrated timeout factor k (EvalPlus default 4)."),
    memory_mb: int = typer.Option(4096, min=64, help="Address-space limit per process, MiB."),
    max_file_mb: int = typer.Option(64, min=1, help="Largest file a sample may write, MiB."),
    max_processes: int = typer.Option(64, min=1, help="Processes/threads per sample."),
    max_open_files: int = typer.Option(256, min=16, help="Open files per process."),
    tmp_mb: int = typer.Option(256, min=1, help="Private /tmp (and disk quota) per sample under bubblewrap, MiB."),
    isolation: str = typer.Option("auto", help=f"Isolation level: {', '.join(_ISOLATION_CHOICES)} (auto: strongest available)."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run: skip samples already in --output."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --output file."),
    reference_cache: bool = typer.Option(True, "--reference-cache/--no-reference-cache", help="Reuse measured reference times."),
    max_samples: int = typer.Option(None, "--max-samples", min=1, help="Run only the first N (not yet finished) samples."),
    python: str = typer.Option(None, "--python", help="Interpreter of the Python runner (default: the one running workbench)."),
    json_output: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Run generated code against the problems' tests in a sandbox and write one result row
    per sample (task_id, sample_id, passed, status, duration_s, stderr tail, ...)."""
    # imported here: the job pulls in `datasets`, which every other command would pay for
    from workbench.execution.job import ExecutionConfig, execute_generations

    if isolation not in _ISOLATION_CHOICES:
        raise typer.BadParameter(f"choose one of {', '.join(_ISOLATION_CHOICES)}", param_hint="--isolation")
    config = ExecutionConfig(
        problems=problems, problems_split=problems_split, language=language, mode=mode,
        task_column=task_column, sample_column=sample_column, completion_column=completion_column,
        prompt_column=prompt_column, problem_task_column=problem_task_column,
        problem_prompt_column=problem_prompt_column, test_column=test_column,
        entry_point_column=entry_point_column or None, reference_column=reference_column or None,
        workers=workers, timeout_s=timeout, timeout_floor_s=timeout_floor, timeout_factor=timeout_factor,
        limits=ResourceLimits(
            address_space_bytes=memory_mb * MiB, file_size_bytes=max_file_mb * MiB, processes=max_processes,
            open_files=max_open_files, tmpfs_bytes=tmp_mb * MiB,
        ),
        isolation=None if isolation == "auto" else isolation,
        resume=resume, overwrite=overwrite, max_samples=max_samples, python=python,
    )
    if not reference_cache:
        config.reference_cache = None

    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        TimeRemainingColumn(), TextColumn("{task.fields[status]}"),
        console=err_console, disable=json_output, transient=False,
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

    try:
        with progress:
            summary = execute_generations(generations, output, config, on_start=on_start, on_result=on_result)
    except KeyboardInterrupt:
        if ctx.obj == PIPELINE_STAGE:  # `workbench run` says how to resume (rerun it, no --resume)
            raise
        err_console.print(f"[yellow]Interrupted.[/yellow] Finished rows are in {output}; rerun with --resume to continue.")
        raise typer.Exit(130) from None

    if summary.sandbox_errors and ctx.obj == PIPELINE_STAGE:
        # a stage recorded done is not run again: the samples without a row would stay unrun
        from workbench.errors import WorkbenchError

        raise WorkbenchError(
            f"{summary.sandbox_errors} sample(s) were not run because the sandbox itself failed for them "
            f"(no result row; {summary.executed} rows written). Rerun the same command to run them."
        )
    if json_output:
        typer.echo(json.dumps({
            "output": summary.output, "isolation": summary.isolation.level.value,
            "isolation_description": summary.isolation.description, "total": summary.total,
            "skipped_finished": summary.skipped_finished, "executed": summary.executed,
            "sandbox_errors": summary.sandbox_errors,
            "elapsed_s": round(summary.elapsed_s, 3), "samples_per_s": round(summary.samples_per_s, 3),
            "calibration_s": round(summary.calibration_s, 3), "counts": summary.counts,
            "pass_at_1": summary.pass_at_1, "notes": summary.notes,
        }, indent=2))
        return
    for note in summary.notes:
        style = "bold red" if note.startswith("WARNING") else "yellow"
        err_console.print(f"[{style}]{note}[/{style}]")
    table = Table(title=f"workbench execute -> {summary.output}", show_header=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("isolation", summary.isolation.description)
    not_run = f", {summary.sandbox_errors} not run (sandbox error)" if summary.sandbox_errors else ""
    table.add_row("samples", f"{summary.total} in input, {summary.skipped_finished} already done, "
                             f"{summary.executed} run now{not_run}")
    table.add_row("speed", f"{summary.samples_per_s:.2f} samples/s ({summary.elapsed_s:.1f} s)")
    table.add_row("status", ", ".join(f"{k} {v}" for k, v in summary.counts.items()) or "-")
    table.add_row("pass@1", "-" if summary.pass_at_1 is None else f"{summary.pass_at_1:.4f}")
    console.print(table)
