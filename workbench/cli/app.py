"""The Typer application object and the error handling shared by every command."""

from __future__ import annotations

import os
from contextlib import contextmanager

import click
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from typer.core import TyperCommand, TyperGroup

from workbench import __version__
from workbench.cli.interrupts import interrupted_status, interrupted_word
from workbench.errors import WorkbenchError
from workbench.options import OptionError, flag_of

# litellm must read its cost map from the installed package, never from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# The commands draw their own progress bars; datasets' "Generating train split" bars are noise.
os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")

#: console for tables and progress (stdout); errors go to ``err_console``
console = Console()
err_console = Console(stderr=True)

#: how a line of information is marked (an expected outcome of the settings: a method limited by
#: design, the data's own label next to this execution's), apart from ``[yellow]warning:[/yellow]``,
#: which marks what weakens the numbers or needs the user
NOTE = "[cyan]note:[/cyan]"


#: typer (>= 0.2x) shows a parameter's Python type ("<str>", "<int range>"); the names a
#: command-line user knows instead (click's), and nothing for a flag
_TYPE_METAVARS = {
    "str": "TEXT", "int": "INTEGER", "int range": "INTEGER", "float": "FLOAT", "float range": "FLOAT",
    "path": "PATH", "file": "FILE", "directory": "DIR", "list[str]": "TEXT", "list[int]": "INTEGER",
    "list[float]": "FLOAT", "list[path]": "PATH", "bool": "",
}


def _tidy_parameter(param: click.Parameter, ctx: click.Context) -> None:
    """Give ``param`` a readable metavar (once; its help text is left as written)."""
    if getattr(param, "_workbench_tidied", False):
        return
    param._workbench_tidied = True  # type: ignore[attr-defined]
    if getattr(param, "is_flag", False):
        if param.metavar is None:
            param.metavar = ""  # a flag takes no value
        return
    type_name = None
    if hasattr(param, "display_type"):  # typer's own type names; older typer already uses click's
        shown = str(param.display_type(ctx)).strip("<>")
        type_name = _TYPE_METAVARS.get(shown, shown.upper() if "|" not in shown else f"[{shown}]")
    if param.param_type_name == "argument":
        if param.metavar is None:
            param.metavar = (param.name or "").upper()  # name column and usage line
        if type_name is not None:  # the type column of an argument ignores its metavar
            param.display_type_rich = lambda ctx, shown=type_name: shown  # type: ignore[method-assign]
    elif type_name is not None and param.metavar is None:
        param.metavar = type_name


def reflow_paragraphs(text: str) -> str:
    r"""A command's help text (its docstring) with each paragraph on one line, so that the help
    wraps it once, at the terminal's width, instead of at the docstring's own line ends and then
    again at the edge. Paragraphs are separated by a blank line; one that starts with ``\b``
    (click's "do not rewrap" marker) is kept as written, and so is what follows a ``\f``.

    >>> reflow_paragraphs("One\n    two.\n\n    Three\n    four.")
    'One two.\n\nThree four.'
    """
    import inspect

    shown, cut, hidden = inspect.cleandoc(text).partition("\f")
    paragraphs = [" ".join(line.strip() for line in paragraph.splitlines()) if not paragraph.startswith("\b")
                  else paragraph for paragraph in shown.split("\n\n")]
    return "\n\n".join(paragraphs) + cut + hidden


class _TidyHelp:
    """Help that reads cleanly: ``--seed INTEGER [0<=x<=...]`` instead of ``<int range>``,
    no ``<bool>`` after flags, ``SOURCE`` instead of ``{source}``, square brackets in help
    texts printed as written, and the command's description wrapped once per paragraph
    (:func:`reflow_paragraphs`: typer >= 0.29 keeps a docstring's line ends after its first
    paragraph)."""

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)  # type: ignore[misc]
        for param in params:
            _tidy_parameter(param, ctx)
        return params

    def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # "[default: ...]" in a help text is text, not Rich markup: escaped while the help is
        # drawn, and restored after, for code that reads the help texts (the pipeline's options)
        written = {param: param.help for param in self.get_params(ctx) if getattr(param, "help", None)}
        for param, text in written.items():
            param.help = escape(text)  # type: ignore[attr-defined]
        described = self.help  # type: ignore[attr-defined]
        if described:
            self.help = reflow_paragraphs(described)  # type: ignore[attr-defined]
        try:
            with _whole_option_names():
                super().format_help(ctx, formatter)  # type: ignore[misc]
        finally:
            self.help = described  # type: ignore[attr-defined]
            for param, text in written.items():
                param.help = text  # type: ignore[attr-defined]


class _WholeNamesTable(Table):
    """typer's help table whose option names never shrink: on a narrow terminal (80 columns)
    only the type and help columns wrap, where rich would otherwise shorten every column
    alike and print ``--problems-spl…``. Typer offers no setting for its table's columns
    (only ``rich_utils.STYLE_OPTIONS_TABLE_*`` for the table as a whole).

    Typer's option rows are ``[required,] long names, short names, --no- long names, --no-
    short names, type, help``; a switch's ``--no-`` name goes under its name in the first
    column, so that the names take one column's width, not two, and the help keeps room."""

    def add_row(self, *renderables, **kwargs) -> None:  # type: ignore[override]
        cells = list(renderables)
        if len(cells) in (6, 7):
            first = len(cells) - 6
            names, negative = cells[first], cells[first + 2]
            if isinstance(names, Text) and isinstance(negative, Text) and negative.plain:
                cells[first] = Text.assemble(names, "\n", negative)
                cells[first + 2] = Text("")
        super().add_row(*cells, **kwargs)
        for column in self.columns[:-2]:  # the last two: the type (folds) and the help text (wraps)
            column.no_wrap = True
        # a word longer than the help column ("a,b,c") folds onto the next line, kept whole
        self.columns[-1].overflow = "fold"
        for part in getattr(cells[-1], "renderables", ()):  # typer's help cell: Columns of Texts
            if isinstance(part, Text):
                part.overflow = "fold"


@contextmanager
def _whole_option_names():
    """Draw typer's rich help with :class:`_WholeNamesTable` (its module-level ``Table``)."""
    import typer.rich_utils as rich_utils

    if getattr(rich_utils, "Table", None) is not Table:  # another typer layout: leave it alone
        yield
        return
    rich_utils.Table = _WholeNamesTable
    try:
        yield
    finally:
        rich_utils.Table = Table


class _WorkbenchGroup(_TidyHelp, TyperGroup):
    """Turns :class:`WorkbenchError` into a one-line ``Error: ...`` and exit status 1, and a Ctrl-C
    that no command handled itself into a one-line ``Interrupted`` and status 130 (143 after
    SIGTERM: :func:`workbench.cli.interrupts.interrupted_status`; docs/exit-status.md). Commands that keep rows (execute, score, run) say how to resume."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            command = ctx.invoked_subcommand or "the command"
            status = interrupted_status()
            typer.echo(f"{interrupted_word()}: {command} stopped before it finished (exit status {status}); outputs "
                       "it had begun to write may be incomplete: run it again", err=True)
            raise typer.Exit(status) from None
        except WorkbenchError as error:
            # typer >= 0.29 runs a vendored click, whose main loop does not catch
            # click.ClickException; typer.Exit is handled by every typer version.
            # An option the library names by its field is named here by its flag.
            message = error.render(flag_of) if isinstance(error, OptionError) else str(error)
            typer.echo(f"Error: {message}", err=True)
            raise typer.Exit(1) from error


def exit_with_verdict(failures: dict | None, where: str = "") -> None:
    """Print a finished run's failure verdict (the counts that decided it) and exit with its status.

    Args:
        failures: a :meth:`workbench.failures.FailureVerdict.as_dict` (``{}``: nothing judged).
        where: a prefix naming the stage (``"score: "``).

    Raises:
        typer.Exit: with the verdict's status when it is not 0 (see :mod:`workbench.failures`).
    """
    status = int((failures or {}).get("exit_status", 0))
    if status:
        err_console.print(f"[bold red]exit status {status}:[/bold red] {escape(where + failures['message'])}", soft_wrap=True)
        raise typer.Exit(status)


class _WorkbenchCommand(_TidyHelp, TyperCommand):
    """A command with :class:`_TidyHelp` and a usage line that names arguments plainly."""

    def collect_usage_pieces(self, ctx: click.Context) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = param.metavar or (param.name or "").upper()
                name = name if param.required else f"[{name}]"
                pieces.append(name + ("..." if param.nargs != 1 else ""))
        return pieces


class WorkbenchTyper(typer.Typer):
    """``typer.Typer`` for workbench's commands and command groups: one-line errors and
    clean help (see :class:`_TidyHelp`). Use it for a sub-group too (``workbench models``)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("cls", _WorkbenchGroup)
        super().__init__(*args, **kwargs)

    def command(self, *args, **kwargs):  # type: ignore[override]
        kwargs.setdefault("cls", _WorkbenchCommand)
        return super().command(*args, **kwargs)


app = WorkbenchTyper(
    name="workbench",
    help="Evaluation workbench for ML models of code: dedup, execute, score, correlate, bias, and all of them as one run.",
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
