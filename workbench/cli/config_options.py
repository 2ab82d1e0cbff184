"""A command's options read from its job config class (:mod:`workbench.options`).

:func:`config_options` gives a command one option per field of the job's config class, with the
field's flag, default, help and range, and hands the command the built config. So no default
or help text is written here a second time; a command only adds its input argument, its output
paths and how it prints.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, Optional

import typer
from typer.models import ArgumentInfo

from workbench.options import (
    JobConfig,
    Option,
    OptionError,
    command_line_args,
    deprecated_names,
    flag_of,
    options_of,
    rename_deprecated,
)


def _typer_option(item: Option, extra_flags: tuple[str, ...]) -> Any:
    """The ``typer.Option`` of one config option."""
    declared = item.declared
    flags = (f"{item.flag}/{item.off_flag}",) if item.off_flag else (item.flag,)
    default = item.default
    if item.multiple:
        default = list(default) if default else None
        if default and item.kind is int and declared.commas:
            default = [str(value) for value in default]  # handed over as typed (below)
    elif declared.text is not None:
        default = item.text(default)
    if item.kind is float or (item.multiple and declared.commas and item.kind is int):
        # a number is handed over as typed, so the config reads the decimal that was written
        # (an exact threshold, workbench.thresholds) and splits "1,10,100"; the config checks the range
        return typer.Option(default, *flags, *extra_flags, help=item.help,
                            metavar=declared.metavar or item.kind.__name__.upper())
    # only closed bounds: click shows them ("[0<=x<=4294967295]"); open ones are the config's to check
    low = declared.min if declared.min is not None and not declared.min_open else None
    high = declared.max if declared.max is not None and not declared.max_open else None
    return typer.Option(default, *flags, *extra_flags, help=item.help, min=low, max=high, metavar=declared.metavar)


def _annotation(item: Option, optional: bool = False) -> Any:
    kind = str if item.kind is float or (item.multiple and item.declared.commas and item.kind is int) else item.kind
    if item.multiple:
        return Optional[list[kind]]  # type: ignore[valid-type]
    return Optional[kind] if item.optional or optional else kind


def _cli_default(item: Option) -> Any:
    """The value the command line hands over for an option that was not given."""
    if item.multiple:
        if item.default and item.kind is int and item.declared.commas:
            return [str(value) for value in item.default]
        return list(item.default) if item.default else None
    if item.kind is float and item.default is not None:
        return item.default  # typer hands the float default over as given
    return item.text(item.default) if item.declared.text is not None else item.default


def cli_values(config_class: type, params: Mapping[str, Any]) -> dict[str, Any]:
    """The config values among a command's parsed ``params``: a repeatable option given no
    value keeps its config default."""
    found = options_of(config_class)
    return {name: value for name, value in params.items()
            if name in found and not (found[name].multiple and not value)}


#: the parameter name of a deprecated alias flag (``--concurrency`` -> ``deprecated_concurrency``)
_ALIAS_PREFIX = "deprecated_"


def config_from_params(config_class: type, params: Mapping[str, Any],
                       extra_flags: Mapping[str, tuple[str, ...]] | None = None) -> Any:
    """The config built from a command's parsed ``params``.

    A deprecated alias flag (``--concurrency`` for ``--workers``) that was given sets its option,
    with a note on stderr naming the current flag.

    Args:
        extra_flags: the options' other flags (``--t0``), named in a message next to the main one.

    Raises:
        typer.BadParameter: the config refuses a value, or an alias and its option are both
            given (the message names the flags).
    """
    extra_flags = extra_flags or {}
    values = cli_values(config_class, params)
    given_aliases = {alias: params[_ALIAS_PREFIX + alias] for alias in deprecated_names(config_class)
                     if params.get(_ALIAS_PREFIX + alias) not in (None, [])}
    try:
        if given_aliases:
            found = options_of(config_class)
            # an option left at its default was not given: the alias sets it
            given = {name: value for name, value in values.items() if value != _cli_default(found[name])}
            renamed, notes = rename_deprecated(config_class, {**given, **given_aliases}, flag_of)
            values = {**values, **renamed}
            for note in notes:
                typer.echo(f"note: {note}", err=True)
        return config_class(**values)
    except OptionError as error:
        raise typer.BadParameter(error.render(lambda name: "/".join((flag_of(name), *extra_flags.get(name, ())))))\
            from None


def config_options(config_class: type, *, extra_flags: Mapping[str, tuple[str, ...]] | None = None) -> Callable:
    """Decorate a command that takes ``config``: it gets one option per field of ``config_class``.

    The command's own parameters (its input argument, output paths, printing switches) stay as
    written: arguments first, then the config's options in field order, then the command's own
    options.

    Args:
        config_class: the job's config class.
        extra_flags: more flags of an option, e.g. ``{"method": ("-m",), "set_threshold": ("--t0",)}``.
    """
    extra_flags = extra_flags or {}

    def decorate(command: Callable) -> Callable:
        hints = typing.get_type_hints(command)
        own = [p.replace(annotation=hints.get(p.name, p.annotation))
               for p in inspect.signature(command).parameters.values() if p.name != "config"]
        found = options_of(config_class)
        generated = [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=_annotation(item),
                              default=_typer_option(item, extra_flags.get(name, ())))
            for name, item in found.items()
        ]
        # former names, accepted for one release: hidden from --help, noted when used
        aliases = deprecated_names(config_class)
        generated += [
            inspect.Parameter(_ALIAS_PREFIX + alias, inspect.Parameter.KEYWORD_ONLY,
                              annotation=_annotation(found[name], optional=True),
                              default=typer.Option(None, flag_of(alias), hidden=True,
                                                   help=f"Deprecated: use {found[name].flag}."))
            for alias, name in aliases.items()
        ]
        arguments = [p for p in own if isinstance(p.default, ArgumentInfo) or p.default is inspect.Parameter.empty]
        rest = [p for p in own if p not in arguments]
        parameters = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in [*arguments, *generated, *rest]]

        @functools.wraps(command)
        def with_config(**params: Any) -> Any:
            values = {name: params.pop(name) for name in [*found, *(_ALIAS_PREFIX + a for a in aliases)]}
            return command(config=config_from_params(config_class, values, extra_flags), **params)

        with_config.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
        with_config.__annotations__ = {p.name: p.annotation for p in parameters}
        return with_config

    return decorate



def resume_command(command: str, argument: str, config: JobConfig, outputs: Mapping[str, str]) -> str:
    """The shell command that continues an interrupted run: ``workbench COMMAND ARGUMENT``, every
    option that differs from its default, the outputs, and ``--resume`` (never ``--overwrite``,
    which would throw the finished rows away).

    Args:
        command: ``"execute"`` or ``"score"``; argument: the input as given.
        config: the run's config; outputs: flag -> path (``{"--output": "out.jsonl"}``).

    Example:
        ``workbench score data.jsonl --method chrf --limit 20 --output score-out --resume``
    """
    import shlex

    found = options_of(type(config))
    values: dict[str, Any] = {}
    for name, item in found.items():
        value = getattr(config, name)
        if name in ("resume", "overwrite") or value == item.default:
            continue
        values[name] = list(value) if isinstance(value, tuple) else value
    values["resume"] = True
    names = {flag.lstrip("-").replace("-", "_"): flag for flag in outputs}
    values.update({name: outputs[flag] for name, flag in names.items()})
    return shlex.join(["workbench", command, argument, *command_line_args(type(config), values, names)])
