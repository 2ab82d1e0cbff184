"""``workbench run``: the whole pipeline from a TOML config."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

import typer
from rich.markup import escape
from rich.table import Table

from workbench.cli.app import NOTE, app, console, err_console
from workbench.cli.interrupts import interrupted_status, interrupted_word
from workbench.formatting import count, fixed


@app.command("run", short_help="Run all stages as one pipeline and write an HTML report.")
def run_command(
    config_path: Path = typer.Argument(..., metavar="CONFIG", help="Pipeline config (TOML), e.g. configs/humaneval.toml."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Run folder (overrides [run] output)."),
    stage: Optional[list[str]] = typer.Option(None, "--stage", help="Run only this stage (again); repeatable."),
    set_: Optional[list[str]] = typer.Option(None, "--set", help="Override a config key: TABLE.KEY=VALUE (e.g. score.limit=20); repeatable."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Samples scored by the LLM methods (score.limit)."),
    model: Optional[str] = typer.Option(None, "--model", help="Model of the LLM methods (score.model)."),
    offline: bool = typer.Option(False, "--offline", help="Never contact the Hugging Face hub (run.offline)."),
    retry_failed: bool = typer.Option(
        False, "--retry-failed", help="Score the failed rows (llm_error, ...) of a finished score stage again, "
        "keeping its finished rows (run.retry_failed)."),
    force: bool = typer.Option(False, "--force", help="Run every selected stage from scratch (the LLM cache still answers)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check the config and the data, print each stage's command, run nothing."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Draw the progress bars on stderr, the stages' and a model fetch's before them (off for logs)."),
) -> None:
    """Run decontamination, dedup, execute, score, correlate and bias as one pipeline and write an HTML report.

    Every option of the single commands is a key of its table in the config (the jobs' config
    fields); the command line overrides the file. Stages write into one run folder; a rerun skips finished stages
    and resumes an interrupted one.

    Exit status: the highest of the stages': 0 ok; 1 error (configuration, data, a failed stage);
    2 bad command line; 3 a stage produced no usable result; 4 a stage's failures above its
    max_failures (a key of the score and execute tables); 130 interrupted (143 by SIGTERM).
    """
    from workbench.run.config import check_stage_names, load_config
    from workbench.run.preflight import run_preflight
    from workbench.run.runner import preview, run_pipeline
    from workbench.run.stages import NOT_IN_STAGES

    overrides = list(set_ or [])
    if output is not None:
        overrides.append(f"run.output={_toml_string(str(output))}")
    if limit is not None:
        overrides.append(f"score.limit={limit}")
    if model is not None:
        overrides.append(f"score.model={_toml_string(model)}")
    if offline:
        overrides.append("run.offline=true")
    if retry_failed:
        overrides.append("run.retry_failed=true")
    config = load_config(config_path, overrides=overrides)
    check_stage_names(stage or ())
    for note in config.notes:
        err_console.print(f"{NOTE} {escape(note)}")

    if dry_run:
        preflight = run_preflight(config, dry_run=True)  # writes nothing, not even a probe file
        _print_preflight_notes(preflight)
        console.print(escape(f"{config.data['source']}: {count(preflight.rows, 'row')}; run folder {config.output}"))
        notes: dict[str, list[str]] = {}  # stage -> why it would run again (the real run's on_note lines)
        actions = preview(config, preflight, only=stage or (), force=force,
                          on_note=lambda plan, line: notes.setdefault(plan.name, []).append(line))
        for plan, action in actions:
            # skip reasons name config tables ("[score] method"): text, not Rich markup
            if action == "skipped":
                line = f"[dim]skipped: {escape(plan.skip_detail or '')}[/dim]"
            elif action in ("up-to-date", "not selected"):
                line = f"[dim]{action}[/dim]"
            else:
                line = f"[cyan]would {action}:[/cyan] {escape(plan.command_line())}"
            console.print(f"[bold]{plan.name}[/bold]: {line}", soft_wrap=True)
            for note in notes.get(plan.name, []):
                console.print(f"  {NOTE} {escape(plan.name)}: {escape(note)}", soft_wrap=True)
        return

    def on_stage(plan, event: str) -> None:
        if event == "start":
            err_console.rule(f"[bold]{plan.name}[/bold]")
            err_console.print(f"[dim]{escape(plan.command_line())}[/dim]", soft_wrap=True)
        elif event == "up-to-date":
            err_console.print(f"[green]{plan.name}[/green]: up to date (outputs and options unchanged)")

    try:
        result = run_pipeline(config, only=stage or (), force=force, on_stage=on_stage,
                              run_stage=lambda plan, call: _run_stage(plan, call, progress),
                              on_preflight=_print_preflight_notes, progress=progress,
                              on_note=lambda plan, line: err_console.print(f"{NOTE} {escape(plan.name)}: {escape(line)}",
                                                                           soft_wrap=True))
    except KeyboardInterrupt:
        err_console.print(f"[yellow]{interrupted_word()}.[/yellow] Rerun the same command to resume "
                          f"({escape(str(config.output))}).")
        raise typer.Exit(interrupted_status()) from None

    for note in result.notes:
        err_console.print(f"{NOTE} {escape(note)}", soft_wrap=True)
    # the stages the user asked for (not those left out by [run] stages or --stage)
    asked = [o for o in result.outcomes if o.name != "report"
             and not (o.status == "skipped" and (o.detail or "").startswith((NOT_IN_STAGES, "not selected with --stage")))]
    if asked and all(o.status == "skipped" for o in asked):
        err_console.print("[yellow]warning:[/yellow] no stage computed anything: each selected stage was skipped "
                          "(see the detail column)", soft_wrap=True)
    score_skipped = next((o for o in result.outcomes if o.name == "score" and o.status == "skipped"), None)
    if limit is not None and score_skipped is not None:
        err_console.print(f"{NOTE} --limit sets {escape('[score] limit')}, and the score stage did not "
                          f"run ({escape(score_skipped.detail or 'skipped')}): it changed nothing", soft_wrap=True)

    table = Table(title=escape(f"workbench run -> {result.run_dir}"))
    for column in ("stage", "status", "seconds", "detail"):
        table.add_column(column)
    for outcome in result.outcomes:
        table.add_row(outcome.name, outcome.status, f"{outcome.seconds:.1f}", escape(outcome.detail or ""))
    console.print(table)
    console.print(f"wall time {result.seconds:.1f} s")
    if result.report:
        _print_headline(result.report[0])
        console.print(escape(f"report: {result.report[1]}  (data: {result.report[0]})"))
    if result.exit_status:
        for outcome in result.outcomes:
            if outcome.exit_status:
                err_console.print(f"[bold red]{escape(outcome.name)}: exit status {outcome.exit_status}[/bold red] "
                                  f"{escape(outcome.detail or '')}", soft_wrap=True)
        if any(outcome.status == "failed" for outcome in result.outcomes):
            err_console.print("Finished stages are kept; fix the failed stage's cause and rerun the same command "
                              "to continue.", soft_wrap=True)
        raise typer.Exit(result.exit_status)


def _run_stage(plan: Any, call: Callable[..., Any], progress: bool = True) -> Any:
    """Run one stage's job with the progress bars of its command (none when not ``progress``),
    and print what it printed."""
    from workbench.cli import bias, correlate, dedup, execute, score

    if plan.command == "dedup":
        with dedup.progress_bars(progress) as factory:
            run = call(progress=factory)
        dedup.print_run(run, Path(plan.targets["output"]))
        return run
    if plan.command == "execute":
        with execute.progress_hooks(progress) as hooks:
            summary = call(**hooks)
        execute.print_summary(summary)
        return summary
    if plan.command == "score":
        with score.progress_hooks(progress, cache=str(plan.config().cache)) as hooks:
            report = call(**hooks)
        # in the stage's config words: a run config refuses [score] resume / retry_failed, so the
        # retry advice is the run's own --retry-failed, and --set refreshes the cache
        with plan.words():
            score.print_report(report, str(plan.config().cache))
        return report
    report = call()
    if plan.command == "bias":
        bias.print_report(report)
        return report
    if plan.command != "correlate":
        raise AssertionError(f"no printer for the {plan.command!r} stage")  # a new stage must name its printer here
    correlate.print_report(report, plan.targets.get("json_path"), plan.targets.get("plot_path"))
    return report


def _interval(block: dict | None, coefficient: str) -> str:
    """The estimate over its interval, with the report's marks: ``0.340 ≈0`` over ``[-0.123, 0.546]``
    when the interval contains 0, ``(no CI: small n)`` under the estimate when correlate withheld
    the interval (a bare 1.000 from 2 samples would read as a perfect judge). Two lines, so the
    table fits an 80-column terminal without cutting an interval."""
    if not block or block.get(coefficient) is None:
        return "n/a"
    low, high = block.get(f"{coefficient}_ci") or (None, None)
    estimate, ci = fixed(block[coefficient], 3), ""
    if (block.get("no_interval") or {}).get(coefficient):
        ci = "(no CI: small n)"
    elif low is not None and high is not None:
        ci = f"[{fixed(low, 3)}, {fixed(high, 3)}]"
        if (block.get("not_distinguishable_from_0") or {}).get(coefficient):
            estimate += " ≈0"
    return f"{estimate}\n{ci}" if ci else estimate


def _print_preflight_notes(preflight: Any) -> None:
    """The preflight's findings before any stage runs, marked as the rest of the CLI marks them: its warnings
    (a weaker sandbox, scored samples execute will miss) as ``warning:``, its notes (a model to pull, rows an
    ``[execute] limit`` leaves out as asked) as ``note:``."""
    for warning in preflight.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(warning)}", soft_wrap=True)
    for note in preflight.notes:  # expected outcomes of the config's own settings: information, not faults
        err_console.print(f"{NOTE} {escape(note)}", soft_wrap=True)


def _print_headline(report_json: Path) -> None:
    """The report's headline on the terminal: pooled Kendall tau-b and Pearson r per method."""
    import json

    report = json.loads(report_json.read_text())
    headline = report.get("headline") or []
    # what the correlations are with: execution, or a graded label named with its column (the grade 'grade')
    noun = (report.get("label") or {}).get("noun") or "execution"
    from rich import box

    table = Table(title=f"correlation with {noun} (pooled; 95% bootstrap CI over tasks)", box=box.SIMPLE_HEAD)
    table.add_column("method", no_wrap=True)
    table.add_column("rows", no_wrap=True, min_width=6)
    table.add_column("n", justify="right", no_wrap=True, min_width=4)
    table.add_column("Kendall tau-b")
    table.add_column("Pearson r")
    for entry in headline:
        for scope, label in (("subset", "subset"), ("all", "all")):
            block = entry.get(scope) or {}
            if block.get("n_samples"):
                table.add_row(escape(str(entry.get("method", "?"))), label, str(block["n_samples"]),
                              _interval(block.get("pooled"), "kendall"), _interval(block.get("pooled"), "pearson"))
    console.print(table)
    console.print("≈0: the interval contains 0, not distinguishable from 0; no CI: too few samples or tasks "
                  "for an interval (the report says why).", style="dim")


def _toml_string(text: str) -> str:
    import json

    return json.dumps(text)  # a JSON string is a valid TOML basic string
