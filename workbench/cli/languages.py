"""``workbench languages``: the installed language plugins and their capabilities."""

from __future__ import annotations

import typer
from rich.table import Table

from workbench.cli.app import app, console
from workbench.languages import installed_plugins


@app.command("languages")
def languages_command(
    json_output: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """List installed language plugins: versions, grammar versions, capabilities
    (tokens / decompose / execute) and missing runner toolchains."""
    rows = []
    for info in installed_plugins():
        plugin = info.plugin
        missing = plugin.runner.missing_toolchain() if plugin.runner is not None else []
        rows.append(
            {
                "name": plugin.name,
                "aliases": list(plugin.aliases),
                "extensions": list(plugin.extensions),
                "distribution": info.distribution,
                "version": info.version,
                "grammar": plugin.grammar_distribution,
                "grammar_version": info.grammar_version,
                "capabilities": plugin.capabilities(),
                "missing_toolchain": missing,
            }
        )
    if json_output:
        import json

        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="Language plugins")
    for column in ("language", "aliases", "plugin", "grammar", "capabilities", "runner toolchain"):
        table.add_column(column)
    for row in rows:
        toolchain = "n/a" if "execute" not in row["capabilities"] else (
            f"[red]missing: {', '.join(row['missing_toolchain'])}[/red]" if row["missing_toolchain"] else "[green]ok[/green]"
        )
        table.add_row(
            row["name"],
            ", ".join(row["aliases"] + row["extensions"]),
            f"{row['distribution']} {row['version']}",
            f"{row['grammar']} {row['grammar_version']}",
            ", ".join(row["capabilities"]),
            toolchain,
        )
    console.print(table)
