"""The Typer application object and the error handling shared by every command."""

from __future__ import annotations

import os

import click
import typer
from rich.console import Console
from typer.core import TyperGroup

from workbench import __version__
from workbench.errors import WorkbenchError

# litellm must read its cost map from the installed package, never from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The commands draw their own progress bars; datasets' "Generating train split" bars are noise.
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

#: console for tables and progress (stdout); errors go to ``err_console``
console = Console()
err_console = Console(stderr=True)


class _WorkbenchGroup(TyperGroup):
    """Turns :class:`WorkbenchError` into a one-line ``Error: ...`` and exit status 1."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except WorkbenchError as error:
            # typer >= 0.29 runs a vendored click, whose main loop does not catch
            # click.ClickException; typer.Exit is handled by every typer version.
            typer.echo(f"Error: {error}", err=True)
            raise typer.Exit(1) from error


app = typer.Typer(
    cls=_WorkbenchGroup,
    name="workbench",
    help="Evaluation workbench for ML models of code: dedup, execute, score, correlate.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version_callback(value: bool) -> None:
    if value:
        console.print(f"workbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."),
) -> None:
    """Evaluation workbench for ML models of code."""
