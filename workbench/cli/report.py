"""``workbench report``: (re)build report.json and report.html of a run folder, print where they are."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from workbench.cli.app import NOTE, app, console, err_console


@app.command("report", short_help="Build the HTML report of a run folder from its stage outputs.")
def report_command(
    run_dir: Path = typer.Argument(..., help="A run folder written by `workbench run` (finished or partial)."),
) -> None:
    """Build RUN_DIR/report.json and RUN_DIR/report.html (one self-contained page) from the stage
    outputs of a run folder. Missing or failed stages are shown on the page, not raised.

    Example: workbench report runs/humaneval
    """
    from workbench.report import write_report

    json_path, html_path = write_report(run_dir)
    data = json.loads(json_path.read_text(encoding="utf-8"))
    for note in data.get("notes", {}).values():
        err_console.print(f"{NOTE} {escape(str(note))}", highlight=False, soft_wrap=True)
    check = data.get("data_check") or {}
    if check.get("status") == "changed":  # the page shows it as a banner; say it here too
        err_console.print(f"[red]warning: the data changed after the run:[/red] {escape(str(check.get('message')))}",
                          highlight=False, soft_wrap=True)
    for problem in data.get("problems", []):
        err_console.print(f"[yellow]warning:[/yellow] {escape(str(problem))}", highlight=False, soft_wrap=True)
    console.print(f"JSON: {escape(str(json_path))}", highlight=False, soft_wrap=True)
    console.print(f"HTML: {escape(str(html_path))} ({len(data.get('samples', []))} sample views)", highlight=False,
                  soft_wrap=True)
