"""The options of the single commands, as the pipeline sees them.

A pipeline section (``[dedup]``, ``[execute]``, ``[score]``, ``[correlate]``) accepts exactly
the options of its command: the keys are the commands' own parameter names (``--min-tokens``
is ``min_tokens``), read from the Click command that Typer builds, so a new CLI option gets
its config key without touching the pipeline. A stage runs its command through Click with
the argument list built here, so a config value goes through the same type conversion and
range checks as the same value typed on the command line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import click


@dataclass(frozen=True)
class CommandOption:
    """One option of a command.

    Attributes:
        key: the config key (the Click parameter name, e.g. ``min_tokens``).
        flag: the long flag (``--min-tokens``).
        off_flag: for ``--x/--no-x`` booleans, the ``--no-x`` flag; else None.
        is_flag: a boolean flag (takes no value).
        multiple: repeatable (a TOML list).
        default: the command's default.
        help: the option's help text.
    """

    key: str
    flag: str
    off_flag: str | None
    is_flag: bool
    multiple: bool
    default: Any
    help: str


def command(name: str) -> "click.Command":
    """The Click command of ``workbench <name>``.

    Raises:
        KeyError: no such command.
    """
    from workbench.cli import app  # the CLI package registers every command on import
    import typer

    group = typer.main.get_command(app)
    return group.commands[name]  # type: ignore[attr-defined]


def command_options(name: str) -> dict[str, CommandOption]:
    """Every option of ``workbench <name>`` by config key (``--help`` excluded)."""
    options: dict[str, CommandOption] = {}
    for param in command(name).params:
        # duck-typed: typer >= 0.29 builds its commands with a vendored copy of click
        if getattr(param, "param_type_name", None) != "option" or param.name is None or "--help" in param.opts:
            continue
        longs = [o for o in param.opts if o.startswith("--")] or list(param.opts)
        offs = [o for o in param.secondary_opts if o.startswith("--")]
        options[param.name] = CommandOption(
            key=param.name, flag=longs[0], off_flag=offs[0] if offs else None, is_flag=bool(param.is_flag),
            multiple=bool(param.multiple), default=param.default, help=param.help or "",
        )
    return options


def to_argv(name: str, values: Mapping[str, Any]) -> list[str]:
    """The command-line arguments that set ``values`` on ``workbench <name>``.

    Args:
        name: the command.
        values: config key -> value (``None`` leaves the command's default; a list repeats a
            repeatable option; ``True``/``False`` select ``--x`` / ``--no-x``).

    Returns:
        arguments, in the order of ``values``.

    Raises:
        KeyError: a key that is not an option of the command (its message lists the valid keys).
        ValueError: a list for an option that is not repeatable, or ``False`` for a flag that
            has no ``--no-`` form while its default is on.
    """
    options = command_options(name)
    argv: list[str] = []
    for key, value in values.items():
        if key not in options:
            raise KeyError(key)
        option = options[key]
        if value is None:
            continue
        if option.is_flag:
            if value:
                argv.append(option.flag)
            elif option.off_flag:
                argv.append(option.off_flag)
            elif option.default:
                raise ValueError(f"{key} cannot be switched off")
            continue
        if option.multiple and not isinstance(value, (list, tuple)):
            value = [value]
        if isinstance(value, (list, tuple)):
            if not option.multiple:
                raise ValueError(f"{key} takes one value, not a list")
            for item in value:
                argv.extend([option.flag, _text(item)])
            continue
        argv.extend([option.flag, _text(value)])
    return argv


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
