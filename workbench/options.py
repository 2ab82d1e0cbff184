"""Options of a job, declared once on its frozen config dataclass.

Every job has one config class (:class:`~workbench.dedup.DedupConfig`,
:class:`~workbench.execute.ExecutionConfig`, :class:`~workbench.score.config.ScoreConfig`,
:class:`~workbench.correlate.CorrelateConfig`) whose fields are declared with :func:`option`: the
default, the help text and the checks of one value (type, choices, range) sit on the field. The
constructor (:class:`JobConfig`) coerces and checks every field, then the class's own rules
between fields (``_check``); a bad value raises :class:`OptionError`, which names the field.

Everything else reads the fields instead of repeating them: ``workbench <job> --help`` (the flag
of field ``min_tokens`` is ``--min-tokens``, :func:`flag_of`), the keys of ``workbench run``'s
TOML tables (``[dedup] min_tokens``), the preflight of ``workbench run`` (it builds each stage's
config) and the command line recorded for each stage (:func:`command_line_args`). So adding an
option to a job is adding one field to its config class (and reading it where the job uses it),
e.g. on :class:`~workbench.score.config.ScoreConfig`::

    score_mode: str = option("expected", "expected (probability-weighted) or sampled.",
                             choices=("expected", "sampled"), recorded=True)

gives ``workbench score --score-mode``, ``[score] score_mode`` in ``workbench run`` (checked in
its preflight), and, being ``recorded``, a ``run.json`` entry that a resumed run must match.

Example:

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Toy(JobConfig):
...     rounds: int = option(3, "How many rounds.", min=1)
...     mode: str = option("fast", "fast or exact.", choices=("fast", "exact"))
>>> Toy(rounds="5").rounds
5
>>> Toy(mode="exakt")
Traceback (most recent call last):
...
workbench.options.OptionError: mode must be one of fast, exact, not 'exakt' (did you mean 'exact'?)
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.thresholds import decimal_float

#: the key of a field's metadata that holds its :class:`_Declared`
_METADATA_KEY = "workbench.option"

_KINDS = (bool, int, float, str, Path)


class OptionError(WorkbenchError):
    """An option value (or a combination of values) that a job cannot use.

    The message names the options as ``{name}`` placeholders, so each caller can name them
    its own way: the library by field (``min_tokens must be >= 1``), the command line by flag
    (``--min-tokens``, :func:`flag_of`), ``workbench run`` by table and key (``[dedup] min_tokens``).

    Args:
        template: the message, with ``{name}`` for each option it names.
        names: the option (field) names, the first being the one at fault.

    Advice that must say otherwise what to do in a config file ("drop --no-reference" on the
    command line, ``set [score] reference = true`` under ``workbench run``, where a preset may
    have set it) is worded when the error is raised, by :mod:`workbench.option_words`, which
    ``workbench run`` switches to config words while it builds a stage's config.
    """

    def __init__(self, template: str, *names: str):
        self.template = template
        self.names = names
        super().__init__(self.render())

    def render(self, name_of: Callable[[str], str] = str) -> str:
        """The message with each option named by ``name_of(field name)``."""
        text = self.template
        for name in self.names:
            text = text.replace("{" + name + "}", name_of(name))
        return text

    @property
    def name(self) -> str | None:
        """The option at fault (``None`` when none is named)."""
        return self.names[0] if self.names else None


def flag_of(name: str) -> str:
    """The command-line flag of option ``name``: ``min_tokens`` -> ``--min-tokens``."""
    return "--" + name.replace("_", "-")


def suggestion(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or an empty string."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class _Declared:
    """What :func:`option` puts into a field's metadata."""

    help: str
    choices: tuple[str, ...] | Callable[[], Iterable[str]] | None
    min: float | None
    max: float | None
    min_open: bool
    max_open: bool
    metavar: str | None
    parse: Callable[[Any], Any] | None
    text: Callable[[Any], str] | None
    recorded: bool
    aliases: tuple[str, ...] = ()
    commas: bool = True


def option(
    default: Any,
    help: str,
    *,
    choices: Iterable[str] | Callable[[], Iterable[str]] | None = None,
    min: float | None = None,
    max: float | None = None,
    min_open: bool = False,
    max_open: bool = False,
    metavar: str | None = None,
    parse: Callable[[Any], Any] | None = None,
    text: Callable[[Any], str] | None = None,
    recorded: bool = False,
    aliases: Iterable[str] = (),
    commas: bool = True,
) -> Any:
    """Declare a job option: a dataclass field with its default, help and checks.

    The field's annotation gives its type: ``bool``, ``int``, ``float``, ``str`` or ``Path``,
    ``X | None`` when it may be unset, ``tuple[X, ...]`` for a repeatable option (a TOML list).

    Args:
        default: the default value (a tuple for a repeatable option).
        help: one or two sentences for ``--help`` (also the meaning of the TOML key).
        choices: the allowed values (or a function returning them, read when checked).
        min, max: the allowed range of a number; ``min_open``/``max_open`` exclude the bound.
        metavar: the value's name in ``--help`` (default: its type).
        parse: for an option whose value is not one scalar (``lsh_weights``): turns the text
            form (or a sequence) into the value; raises ``ValueError`` with what is wrong.
        text: the text form of a ``parse`` option's value (for ``--help`` and command lines).
        recorded: the job records the value with its results and refuses to resume results
            made with another one (an option that changes the scores: ``run.json`` of a score run).
        aliases: former names of the option (``concurrency`` of ``workers``), still accepted
            for one release as deprecated: ``--concurrency`` on the command line and
            ``[score] concurrency`` in ``workbench run``, each with a note naming the new one
            (:func:`rename_deprecated`). One concept has one name across commands.
        commas: for a repeatable option: a value with commas is several values
            (``--carry passed,difficulty`` is ``--carry passed --carry difficulty``), as for
            every list option; ``False`` where one value holds commas itself (``--combine``).

    Returns:
        a :func:`dataclasses.field`.
    """
    if choices is not None and not callable(choices):
        choices = tuple(choices)
    declared = _Declared(help, choices, min, max, min_open, max_open, metavar, parse, text, recorded,
                         tuple(aliases), commas)
    return dataclasses.field(default=default, metadata={_METADATA_KEY: declared})


@dataclass(frozen=True)
class Option:
    """One option of a job config, as the command line and ``workbench run`` see it.

    Attributes:
        name: the field name, which is also the TOML key (``min_tokens``).
        help: the help text.
        default: the field's default.
        kind: the type of one value: ``bool``, ``int``, ``float``, ``str`` or ``Path``.
        multiple: repeatable (a tuple of values).
        optional: may be ``None`` (unset).
        declared: the rest of what :func:`option` was given (choices, range, parse, text).
    """

    name: str
    help: str
    default: Any
    kind: type
    multiple: bool
    optional: bool
    declared: _Declared

    @property
    def flag(self) -> str:
        """``--name-with-dashes``."""
        return flag_of(self.name)

    @property
    def off_flag(self) -> str | None:
        """``--no-x`` for a switch that is on by default, else ``None``."""
        return "--no-" + self.flag[2:] if self.kind is bool and self.default is True else None

    @property
    def is_switch(self) -> bool:
        """A boolean flag (takes no value on the command line)."""
        return self.kind is bool and not self.multiple

    def choices(self) -> tuple[str, ...] | None:
        """The allowed values, or ``None`` when any value of the type is allowed."""
        choices = self.declared.choices
        return tuple(choices()) if callable(choices) else choices

    def text(self, value: Any) -> Any:
        """``value`` as the command line writes it (only a ``parse`` option differs)."""
        return self.declared.text(value) if self.declared.text and value is not None else value

    def coerce(self, value: Any, error: type[OptionError] = OptionError) -> Any:
        """``value`` in this option's type, checked.

        Text is read as the type (``"20"`` for an int, as on the command line), an int is a
        float where a float is asked for, one value is a one-item tuple for a repeatable option.

        Raises:
            OptionError (or ``error``): the value does not fit, naming the option.
        """
        name = "{" + self.name + "}"
        if value is None:
            if self.optional:
                return None
            raise error(f"{name} needs a value", self.name)
        if isinstance(value, Mapping):
            raise error(f"{name} takes {'values' if self.multiple else 'a value'}, not a table: {value!r}", self.name)
        if self.declared.parse is not None:
            try:
                return self.declared.parse(value)
            except (TypeError, ValueError) as problem:
                raise error(f"{name} {problem}", self.name) from None
        if self.multiple:
            items = list(value) if isinstance(value, (list, tuple)) else [value]
            for item in items:
                if isinstance(item, (list, tuple, Mapping)):
                    raise error(f"{name} takes a list of values, not a nested {type(item).__name__}: {value!r}",
                                self.name)
            if self.declared.commas and self.kind in (str, int, float):  # "1,10,100" from a command line
                # "" (or ",") names nothing: not "all", which an absent option means (`--split ""`)
                empty = next((item for item in items if isinstance(item, str) and not item.replace(",", "").strip()),
                             None)
                if empty is not None:
                    raise error(f"{name} takes one or more values, not an empty one ({empty!r}); leave it out for all",
                                self.name)
                items = [piece for item in items
                         for piece in ([p.strip() for p in item.split(",") if p.strip()] if isinstance(item, str) else [item])]
            return tuple(self._check(self._item(item, error), error) for item in items)
        if isinstance(value, (list, tuple)):
            raise error(f"{name} takes one value, not a list: {list(value)!r}", self.name)
        return self._check(self._item(value, error), error)

    def _item(self, value: Any, error: type[OptionError]) -> Any:
        name = "{" + self.name + "}"
        if self.kind is bool:
            if not isinstance(value, bool):
                raise error(f"{name} is a switch: true or false, not {value!r}", self.name)
            return value
        if isinstance(value, bool):
            raise error(f"{name} takes {_KIND_WORDS[self.kind]}, not {value!r}", self.name)
        if self.kind in (int, float):
            if isinstance(value, str):
                try:
                    return int(value.strip()) if self.kind is int else decimal_float(value)
                except ValueError as problem:
                    if self.kind is float and "significant digits" in str(problem):
                        raise error(f"{name}: {problem}", self.name) from None
                    raise error(f"{name} must be {_KIND_WORDS[self.kind]}, not {value!r}", self.name) from None
            if isinstance(value, int) or (self.kind is float and isinstance(value, float)):
                return self.kind(value)
            raise error(f"{name} must be {_KIND_WORDS[self.kind]}, not {value!r}", self.name)
        if self.kind is Path:
            if isinstance(value, (str, os.PathLike)):
                return Path(value)
            raise error(f"{name} must be a path, not {value!r}", self.name)
        if isinstance(value, (int, float, str)):  # a number where text is asked for is its text, as on the command line
            return str(value)
        if isinstance(value, os.PathLike):  # a notebook's pathlib.Path for a file option (--against, --results)
            return os.fspath(value)
        raise error(f"{name} must be text, not {value!r}", self.name)

    def _check(self, value: Any, error: type[OptionError]) -> Any:
        name = "{" + self.name + "}"
        choices = self.choices()
        if choices is not None and value not in choices:
            raise error(f"{name} must be one of {', '.join(choices)}, not {value!r}{suggestion(value, choices)}",
                        self.name)
        declared = self.declared
        if isinstance(value, float) and not math.isfinite(value):  # nan, inf: no option can use them
            bounded = declared.min is not None or declared.max is not None
            raise error(f"{name} must be a finite number{' ' + self.range_text() if bounded else ''}, not {value!r}",
                        self.name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and (
            (declared.min is not None and (value < declared.min or (declared.min_open and value == declared.min)))
            or (declared.max is not None and (value > declared.max or (declared.max_open and value == declared.max)))
        ):
            raise error(f"{name} must be {self.range_text()}, not {value!r}", self.name)
        return value

    def range_text(self) -> str:
        """The allowed range in words: ``>= 1``, ``in (0, 1]``; an integer option's bounds in full
        (``in [0, 4294967295]``, not ``4.29497e+09``)."""
        low, high = (None if bound is None else int(bound) if self.kind is int else f"{bound:g}"
                     for bound in (self.declared.min, self.declared.max))
        if low is not None and high is not None:
            return f"in {'(' if self.declared.min_open else '['}{low}, {high}{')' if self.declared.max_open else ']'}"
        if low is not None:
            return f"{'>' if self.declared.min_open else '>='} {low}"
        return f"{'<' if self.declared.max_open else '<='} {high}"


_KIND_WORDS = {int: "an integer", float: "a number", str: "text", Path: "a path", bool: "true or false"}

_OPTIONS_CACHE: dict[type, dict[str, Option]] = {}


def options_of(config_class: type) -> dict[str, Option]:
    """Every option of a job config class, by name, in field order.

    Raises:
        TypeError: a field declared without :func:`option`, or of a type options cannot take.
    """
    cached = _OPTIONS_CACHE.get(config_class)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(config_class)
    found: dict[str, Option] = {}
    for item in dataclasses.fields(config_class):
        declared = item.metadata.get(_METADATA_KEY)
        if declared is None:
            raise TypeError(f"{config_class.__name__}.{item.name} is not declared with workbench.options.option()")
        kind, multiple, optional = _kind_of(hints[item.name], config_class.__name__, item.name)
        if declared.parse is not None:
            kind, multiple = str, False  # the command line and TOML give its text form
        found[item.name] = Option(item.name, declared.help, item.default, kind, multiple, optional, declared)
    _OPTIONS_CACHE[config_class] = found
    return found


def _kind_of(annotation: Any, owner: str, name: str) -> tuple[type, bool, bool]:
    """(type of one value, repeatable, may be None) of a field annotation."""
    optional = False
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        optional = type(None) in args
        rest = [a for a in args if a is not type(None)]
        annotation = rest[0] if len(rest) == 1 else annotation
        args = typing.get_args(annotation)
    multiple = typing.get_origin(annotation) is tuple
    if multiple:
        annotation = args[0]
    if annotation not in _KINDS and not multiple:
        # a value of another shape (e.g. tuple[float, float]) needs option(parse=..., text=...)
        return str, False, optional
    if annotation not in _KINDS:
        raise TypeError(f"{owner}.{name}: an option holds bool, int, float, str or Path values, not {annotation!r}")
    return annotation, multiple, optional


def deprecated_names(config_class: type) -> dict[str, str]:
    """Former option names of a job config still accepted (``option(aliases=...)``): alias -> field name."""
    return {alias: name for name, item in options_of(config_class).items() for alias in item.declared.aliases}


def rename_deprecated(config_class: type, values: Mapping[str, Any],
                      name_of: Callable[[str], str] = str) -> tuple[dict[str, Any], list[str]]:
    """Replace deprecated option names in ``values`` by the current ones.

    Args:
        config_class: the job's config class.
        values: option name (or former name) -> value.
        name_of: how a name is shown (``flag_of`` on the command line, ``[score] x`` in TOML).

    Returns:
        (the values under current names, one note per former name used).

    Raises:
        OptionError: a former name and its current name both given.
    """
    aliases = deprecated_names(config_class)
    renamed: dict[str, Any] = {}
    notes = []
    for key, value in values.items():
        name = aliases.get(key)
        if name is None:
            renamed[key] = value
            continue
        if name in values:
            raise OptionError(f"{{{key}}} is the former name of {{{name}}}: give {{{name}}} only", key, name)
        renamed[name] = value
        notes.append(f"{name_of(key)} is deprecated and goes in the next release: use {name_of(name)} "
                     f"(one name per option across commands)")
    return renamed, notes


class JobConfig:
    """Base of the job config dataclasses: checks every :func:`option` field on construction.

    A subclass is a ``@dataclass(frozen=True)`` whose fields are all declared with
    :func:`option`; it may override ``_check`` for rules between fields (raising
    :class:`OptionError` or its ``_error`` subclass) and set ``_error`` to its own
    :class:`OptionError` subclass.
    """

    #: the error class raised for a bad value (a subclass of :class:`OptionError`)
    _error = OptionError

    def __post_init__(self) -> None:
        for name, item in options_of(type(self)).items():
            object.__setattr__(self, name, item.coerce(getattr(self, name), self._error))
        self._check()

    def _check(self) -> None:
        """Rules between fields; a subclass raises :class:`OptionError` naming them."""

    @classmethod
    def options(cls) -> dict[str, Option]:
        """Every option of this job by name (see :func:`options_of`)."""
        return options_of(cls)

    def recorded_value(self, name: str) -> Any:
        """Field ``name`` as JSON holds it (a tuple as a list, a path as text, a ``parse``
        option's value in its text form)."""
        value = getattr(self, name)
        item = self.options()[name]
        if item.declared.text is not None:
            return item.text(value)
        if isinstance(value, tuple):
            return [os.fspath(v) if isinstance(v, Path) else v for v in value]
        return os.fspath(value) if isinstance(value, Path) else value

    def effective_options(self) -> dict[str, Any]:
        """Every option of this config, defaults included, as JSON holds it
        (:meth:`recorded_value`): what a run records so that the settings behind its results
        (``limit``, ``select``, ``method_limit`` ...) can be read back."""
        return {name: self.recorded_value(name) for name in self.options()}


def command_line_args(config_class: type, values: Mapping[str, Any], extra_flags: Mapping[str, str] = {}) -> list[str]:
    """The ``workbench <job>`` arguments that set ``values`` (what ``workbench run`` records).

    Args:
        config_class: the job's config class.
        values: option name -> value, in the order to write them. ``None`` leaves the default;
            a list repeats a repeatable option; ``True``/``False`` select ``--x`` / ``--no-x``.
        extra_flags: flags of names that are not options (the output paths), e.g.
            ``{"output": "--output"}``.

    Returns:
        the arguments, in the order of ``values``.

    Raises:
        KeyError: a name that is neither an option nor in ``extra_flags``.
        ValueError: ``False`` for a switch that is on by default and has no ``--no-`` form.
    """
    known = options_of(config_class)
    argv: list[str] = []
    for name, value in values.items():
        if value is None:
            continue
        if name in extra_flags:
            argv.extend([extra_flags[name], _text(value)])
            continue
        item = known[name]
        if item.is_switch:
            if value:
                argv.append(item.flag)
            elif item.off_flag:
                argv.append(item.off_flag)
            elif item.default:
                raise ValueError(f"{name} cannot be switched off")
            continue
        if item.multiple:
            for one in value if isinstance(value, (list, tuple)) else [value]:
                argv.extend([item.flag, _text(one)])
            continue
        argv.extend([item.flag, _text(item.text(value) if not isinstance(value, str) else value)])
    return argv


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
