"""Pipeline configuration: a TOML file, checked against the jobs' own config classes.

The file has a ``[run]`` table (output folder, stages, offline), a ``[data]`` table (the
dataset and its columns, shared by every stage) and one table per stage: ``[decontaminate]``
and ``[dedup]`` take the fields of :class:`~workbench.dedup.DedupConfig`, ``[execute]`` of
:class:`~workbench.execute.ExecutionConfig`, ``[score]`` of
:class:`~workbench.score.config.ScoreConfig`, ``[correlate]`` of
:class:`~workbench.correlate.CorrelateConfig` and ``[bias]`` of :class:`~workbench.bias.BiasConfig` (the same names as the commands' flags:
``--min-tokens`` is ``min_tokens``; see :mod:`workbench.options`). Each value is checked here
as its field checks it (type, choices, range); keys the pipeline sets itself (input, output
paths, resuming) are refused with a message, as is any unknown key or table. The rules between
fields are checked when the preflight builds each stage's config.

Command-line overrides use the same keys: ``--set score.limit=20`` (the value is read as a
TOML value, else as text that the option reads as its flag would: ``--set execute.pass_at_k=1,10``;
:class:`CommandLineText`). A number option refuses text from the file (``limit = "10"``).
"""

from __future__ import annotations

import copy
import difflib
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.bias.config import BiasConfig
from workbench.dedup.config import DedupConfig
from workbench.errors import WorkbenchError
from workbench.formatting import count
from workbench.execute.config import ExecutionConfig
from workbench.options import JobConfig, Option, OptionError, rename_deprecated, suggestion
from workbench.score.config import ScoreConfig
from workbench.thresholds import decimal_float
from workbench.correlate.config import LABEL_KINDS, CorrelateConfig


class ConfigError(WorkbenchError):
    """The pipeline configuration is invalid (unknown table or key, wrong type, bad override)."""


#: the stages in the order they run
STAGES = ("decontaminate", "dedup", "execute", "score", "score_all", "correlate", "correlate_all", "bias", "report")

#: the command of each configurable table
SECTION_COMMANDS = {"decontaminate": "dedup", "dedup": "dedup", "execute": "execute", "score": "score", "correlate": "correlate",
                    "bias": "bias"}

#: each command's config class: a table's keys are its fields
COMMAND_CONFIGS: dict[str, type[JobConfig]] = {
    "dedup": DedupConfig, "execute": ExecutionConfig, "score": ScoreConfig, "correlate": CorrelateConfig,
    "bias": BiasConfig,
}

#: the names each stage's command gets from the pipeline (input argument aside); never from the file:
#: config fields (``resume``, ``results``) and the command's own outputs and printing switches.
#: ``retry_failed`` goes with ``resume``: ``[run] retry_failed`` asks for it (:data:`RUN_KEYS`)
MANAGED_KEYS = {
    "dedup": {"output", "json_output", "progress", "decontaminate_only"},
    "execute": {"output", "resume", "overwrite", "json_output"},
    "score": {"output", "resume", "overwrite", "retry_failed", "quiet"},
    "correlate": {"results", "json_path", "plot_path"},
    "bias": {"results", "contamination", "json_path", "plot_path"},
}

#: options every stage takes from ``[data]`` (or ``[run]``), by command: option -> where it is set.
#: A stage table may not set them, or its rows would stop joining with the other stages' rows.
SHARED_KEYS = {
    "dedup": {"code_column": "[data] code_column", "id_column": "[data] id_column",
              "language": "[data] language", "split": "[data] split", "offline": "[run] offline"},
    "execute": {"task_column": "[data] task_column", "sample_column": "[data] sample_column",
                "completion_column": "[data] code_column", "language": "[data] language", "split": "[data] split",
                "stop": "[data] stop", "offline": "[run] offline"},
    # the judge scores the generation as it was executed: one stop setting for both stages
    "score": {"task_column": "[data] task_column", "sample_column": "[data] sample_column",
              "generation_column": "[data] code_column", "reference_column": "[data] reference_column",
              "prompt_column": "[data] prompt_column", "language": "[data] language", "split": "[data] split",
              "stop": "[data] stop", "offline": "[run] offline"},
    "correlate": {"task_column": "[data] task_column", "sample_column": "[data] sample_column",
                  "offline": "[run] offline"},
    "bias": {"id_column": "[data] id_column", "task_column": "[data] task_column", "offline": "[run] offline"},
}

#: the ``[data]`` keys and their meaning
DATA_KEYS = {
    "source": "dataset: a data file, folder, bundled name or Hugging Face hub id (required)",
    "split": "only this split (default: all)",
    "language": "language plugin of the code (default: the data's 'language' column, else python; execute and score "
                "refuse one that column contradicts, dedup gives it to the rows that name no language)",
    "task_column": "task id column (default: task_id)",
    "sample_column": "sample id column (default: sample_id; rows are numbered per task when absent)",
    "code_column": "generated code column (default: completion)",
    "reference_column": "reference solution column, for scoring (default: reference)",
    "prompt_column": "prompt column the code completes, shown to the judges (default: prompt when present); execute "
                     "runs each completion after the problem set's prompt unless [execute] prompt_column names one",
    "id_column": "unique row id for dedup: a column, or columns joined by commas (default: task_column,sample_column)",
    "label_column": "a shipped execution label (0/1) to compare with our execution, or the label when execute is off",
    "label_kind": "what label_column holds: \"outcome\" (0/1 or a pass ratio; default) or \"graded\" (a grade, "
                  "e.g. human grades 0-4); every stage that reads the label takes it (correlate, correlate_all, bias)",
    "stop": "stop sequences (a string or a list; a preset name such as \"humaneval\") at which execute and score "
            "cut each generation (default: none)",
}

#: the ``[run]`` keys and their meaning
RUN_KEYS = {
    "output": "run folder (default: runs/<config file name>)",
    "stages": f"stages to run, in this order: {', '.join(STAGES)} (default: all; not an empty list)",
    "offline": "never contact the Hugging Face hub (default: false)",
    "retry_failed": "score the failed rows (llm_error, ...) of a finished score stage again on this rerun, keeping "
                    "its finished rows (workbench run --retry-failed; default: false)",
}

#: why a managed key is refused, where the generic reason ("each stage writes into the run folder") is not it
_MANAGED_WHY = {
    "decontaminate_only": "the decontaminate stage passes it (its output drops only the rows that copy an against "
                          "row) and the dedup stage reports the in-set duplicates",
    "retry_failed": "to score a finished stage's failed rows again, rerun with --retry-failed ([run] retry_failed = "
                    "true) or --stage score",
}

_DATA_DEFAULTS = {
    "split": None, "language": None, "task_column": "task_id", "sample_column": "sample_id",
    "code_column": "completion", "reference_column": "reference", "prompt_column": None, "id_column": None,
    "label_column": None, "label_kind": None, "stop": None,
}

#: the stage tables whose ``label_kind`` describes ``[data] label_column`` where the run gives them that label
LABEL_KIND_TABLES = ("correlate", "bias")


@dataclass
class PipelineConfig:
    """A validated pipeline configuration.

    Attributes:
        output: the run folder.
        stages: enabled stages, in :data:`STAGES` order.
        offline: never contact the hub.
        retry_failed: score the failed rows of a finished score stage again (``[run] retry_failed``).
        data: the ``[data]`` table with defaults filled in.
        sections: per stage table (``decontaminate``, ``dedup``, ``execute``, ``score``,
            ``correlate``), the options as given (config key -> value).
        source_path: the TOML file, when it came from one.
        raw: the configuration as read and overridden (recorded in ``run.json``).
        notes: things to say before the run (a deprecated key that was used, and its new name).
    """

    output: Path
    stages: list[str]
    offline: bool
    data: dict[str, Any]
    sections: dict[str, dict[str, Any]]
    source_path: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    retry_failed: bool = False


class CommandLineText(str):
    """A ``--set`` value that TOML could not read (``--set execute.pass_at_k=1,10``): text typed on
    the command line, read as the command's flag reads its text (``1,10`` is ``[1, 10]``), where
    text in the file (``pass_at_k = "1,10"``) is refused for a number (:func:`_check_value`)."""


def parse_override(text: str) -> tuple[str, str, Any]:
    """Split ``table.key=value`` into its parts; the value is read as TOML when it can be, else
    it is :class:`CommandLineText`.

    Raises:
        ConfigError: no ``=`` or no ``table.`` prefix (a bare table name gets a few of its keys,
            a bare key the tables that have it).
    """
    if "=" not in text:
        raise ConfigError(f"--set {text!r}: expected TABLE.KEY=VALUE, e.g. score.limit=20")
    name, value_text = text.split("=", 1)
    if "." not in name:
        raise ConfigError(f"--set {text!r}: {_missing_table_or_key(name.strip())}")
    table, key = (part.strip() for part in name.split(".", 1))
    try:
        value = tomllib.loads(f"value = {value_text}", parse_float=_toml_float)["value"]
    except tomllib.TOMLDecodeError:
        value = CommandLineText(value_text)  # a bare word: text, as a flag's
    return table, key, value


def table_keys(table: str) -> list[str]:
    """The keys a table of the file takes (``[run]``, ``[data]`` or a stage's, in field order;
    without the keys the pipeline sets or takes from ``[data]``/``[run]``); ``[]`` for no table."""
    if table == "run":
        return list(RUN_KEYS)
    if table == "data":
        return list(DATA_KEYS)
    command = SECTION_COMMANDS.get(table)
    if command is None:
        return []
    skip = MANAGED_KEYS[command] | set(SHARED_KEYS[command])
    return [key for key in COMMAND_CONFIGS[command].options() if key not in skip]


def _missing_table_or_key(name: str) -> str:
    """What a ``--set NAME=VALUE`` without a dot lacks: a key inside the table ``NAME``
    (``--set score=1``), or the table of the key ``NAME`` (``--set limit=20``)."""
    tables = ["run", "data", *SECTION_COMMANDS]
    if name in tables:
        keys = table_keys(name)
        return (f"{name} is a whole table; set one key inside it, {name}.KEY=VALUE, e.g. "
                f"{name}.{keys[0]} or {name}.{keys[1]} ({_where_keys_are(name, keys)})")
    holders = [table for table in tables if name in table_keys(table)]
    if holders:
        return f"the key needs its table: {' or '.join(f'{table}.{name}' for table in holders)}"
    return f"expected TABLE.KEY=VALUE, e.g. score.limit=20{suggestion(name, tables)}; tables: {', '.join(tables)}"


def _toml_float(text: str) -> float:
    """A TOML float, refused when it has more digits than a float keeps (a threshold such as
    ``0.30000000000000001`` would silently become 0.3; :func:`workbench.thresholds.decimal_float`)."""
    try:
        return decimal_float(text.replace("_", ""))
    except ValueError as problem:
        raise ConfigError(f"the number {problem}") from None


def table_error(table: str, error: OptionError) -> ConfigError:
    """``error`` (a config field's complaint) as a :class:`ConfigError` naming ``[table] key``."""
    return ConfigError(error.render(lambda name: f"[{table}] {name}"))


def _check_keys(table: str, given: Mapping[str, Any], allowed: Iterable[str], managed: Iterable[str] = (),
                shared: Mapping[str, str] | None = None) -> list[tuple[str, str, str]]:
    """Check the keys of ``[table]``: a key the pipeline sets or one set once elsewhere is refused
    at once; the unknown keys are returned, for :func:`_refuse_unknown_keys` to name all of them.

    Returns:
        ``(table, key, suggestion)`` of each unknown key, suggestion `` (did you mean 'x'?)`` or ``""``.

    Raises:
        ConfigError: a key the pipeline sets, or one of the keys every stage reads from ``[data]``.
    """
    allowed = sorted(allowed)
    unknown = []
    for key in given:
        if key in managed:
            why = _MANAGED_WHY.get(key)
            raise ConfigError(f"[{table}] {key}: set by the pipeline; {why}" if why else
                              f"[{table}] {key}: set by the pipeline (each stage writes into the run folder)")
        if shared and key in shared:
            raise ConfigError(f"[{table}] {key}: set it once as {shared[key]}, which every stage reads "
                              "(a per-stage value would stop its rows joining the other stages' rows)")
        if key not in allowed:
            unknown.append((table, key, _closest_keys(key, allowed)))
    return unknown


def _refuse_unknown_keys(unknown: list[tuple[str, str, str]], allowed: Mapping[str, list[str]]) -> None:
    """Refuse every unknown key at once, in one line: one key as ``[score] has no key 'limt' (did
    you mean 'limit'?); <where the keys are>``, several as ``3 unknown keys: [data] 'sorce' (did
    you mean 'source'?), [dedup] 'min_token' (...), ...; <where each table's keys are>``.

    Args:
        unknown: ``(table, key, suggestion)`` as :func:`_check_keys` returns them, in file order.
        allowed: each table's allowed keys.

    Raises:
        ConfigError: when ``unknown`` is not empty.
    """
    if not unknown:
        return
    if len(unknown) == 1:
        table, key, close = unknown[0]
        raise ConfigError(f"[{table}] has no key {key!r}{close}; {_where_keys_are(table, allowed[table])}")
    named = ", ".join(f"[{table}] {key!r}{close}" for table, key, close in unknown)
    tables = list(dict.fromkeys(table for table, _key, _close in unknown))
    where = "; ".join(_where_keys_are(table, allowed[table]).replace("its keys", f"keys of [{table}]", 1)
                      for table in tables)
    raise ConfigError(f"{count(len(unknown), 'unknown key')}: {named}; {where}")


def _closest_keys(key: str, allowed: list[str]) -> str:
    """`` (did you mean 'a' or 'b'?)`` for up to three keys close to ``key`` (difflib's ratio), or ``""``."""
    close = difflib.get_close_matches(key, allowed, n=3)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(name) for name in close)}?)"


def _where_keys_are(table: str, allowed: list[str]) -> str:
    """Where the keys of ``table`` are listed: a stage table's ~40 keys are its command's options
    (its ``--help`` lists them), so they are pointed to rather than printed; ``[run]`` and
    ``[data]`` are short and listed here."""
    command = SECTION_COMMANDS.get(table)
    if command is None:
        return f"keys of [{table}]: {', '.join(allowed)}"
    return f"its keys are the options in `workbench {command} --help`, with _ for - (docs/run.md)"


def _check_value(table: str, option: Option, value: Any) -> Any:
    """The value in the shape the command line would get it: a list for a repeatable option
    (a single value becomes a one-item list), the value itself otherwise; checked as its field
    checks it (type, choices, range), so a typo fails when the file is read. A number is one of
    its field's type (``timeout_factor = 4`` is ``4.0``, as ``4.0`` is: one setting, one stage
    key); text where a number is asked for is refused (``limit = "10"``), except the command
    line's own (:class:`CommandLineText`: ``--set score.limit=010``).

    Raises:
        ConfigError: a value the field refuses, naming ``[table] key``.
    """
    number = option.kind in (int, float)  # a parse= option is text (options_of), never a number here
    if number:
        _refuse_text(table, option, value)
    try:
        coerced = option.coerce(value)
    except OptionError as error:
        raise table_error(table, error) from None
    if number:
        return list(coerced) if option.multiple else coerced
    if isinstance(value, CommandLineText):
        value = str(value)  # the marker has done its work
    if option.multiple:
        return list(value) if isinstance(value, (list, tuple)) else [value]
    return value


def _refuse_text(table: str, option: Option, value: Any) -> None:
    """Refuse text (other than the command line's) in a number option: TOML has numbers.

    Raises:
        ConfigError: ``[score] limit must be an integer, not '10' (text: write limit = 10 without quotes)``.
    """
    items = value if isinstance(value, (list, tuple)) else [value]
    if not any(isinstance(item, str) and not isinstance(item, CommandLineText) for item in items):
        return
    words = "an integer" if option.kind is int else "a number"
    if option.multiple:
        words = "a list of integers" if option.kind is int else "a list of numbers"
    message = f"[{table}] {option.name} must be {words}, not {value!r}"
    pieces = [p.strip() for item in items for p in (str(item).split(",") if option.multiple else [str(item)])]
    try:
        numbers = [option.kind(p) for p in pieces]
    except ValueError:
        raise ConfigError(message) from None
    if option.multiple:
        shown = ", ".join(str(n) for n in numbers)
        raise ConfigError(f"{message} (text: write {option.name} = [{shown}])")
    raise ConfigError(f"{message} (text: write {option.name} = {pieces[0]} without quotes)")


def check_stage_names(names: Iterable[str]) -> list[str]:
    """The stage names of ``--stage``, checked.

    Raises:
        ConfigError: a name that is not in :data:`STAGES` (with the closest one).
    """
    names = list(names)
    for name in names:
        if name not in STAGES:
            raise ConfigError(f"unknown stage {name!r}{suggestion(name, STAGES)}; stages: {', '.join(STAGES)}")
    return names


def build_config(raw: Mapping[str, Any], *, overrides: Iterable[str] = (), source_path: Path | None = None,
                 default_output: Path | None = None) -> PipelineConfig:
    """Validate a configuration mapping (as read from TOML) and apply overrides.

    Args:
        raw: tables ``run``, ``data`` and the stage tables.
        overrides: ``table.key=value`` strings, applied in order after the file.
        source_path: the file it came from (for messages and ``run.json``).
        default_output: run folder when ``[run] output`` is not set.

    Returns:
        a :class:`PipelineConfig`.

    Raises:
        ConfigError: unknown table or key, a key the pipeline sets, a missing ``data.source``,
            an unknown stage, or a value of the wrong kind.
    """
    merged: dict[str, Any] = copy.deepcopy(dict(raw))
    for override in overrides:
        table, key, value = parse_override(override)
        if not isinstance(merged.setdefault(table, {}), dict):
            raise ConfigError(f"--set {override!r}: {table} is not a table")
        merged[table][key] = value
    known_tables = {"run", "data", *SECTION_COMMANDS}
    for table, value in merged.items():
        if table not in known_tables:
            raise ConfigError(f"unknown table [{table}]{suggestion(table, known_tables)}; tables: {', '.join(sorted(known_tables))}")
        if not isinstance(value, dict):
            raise ConfigError(f"{table} must be a table ([{table}]), not a {type(value).__name__}")

    run = merged.get("run", {})
    unknown = _check_keys("run", run, RUN_KEYS)
    unknown += _check_keys("data", merged.get("data", {}), DATA_KEYS)
    allowed = {"run": sorted(RUN_KEYS), "data": sorted(DATA_KEYS)}
    notes: list[str] = []
    given_keys: dict[str, dict[str, Any]] = {}
    for table, command_name in SECTION_COMMANDS.items():  # every table's keys before any value: all typos at once
        try:  # a former key name (``[score] concurrency``) is read as its option, with a note
            given, renamed = rename_deprecated(COMMAND_CONFIGS[command_name], dict(merged.get(table, {})),
                                               lambda name, table=table: f"[{table}] {name}")
        except OptionError as error:
            raise table_error(table, error) from None
        notes.extend(renamed)
        options = COMMAND_CONFIGS[command_name].options()
        managed, shared = MANAGED_KEYS[command_name], SHARED_KEYS[command_name]
        allowed[table] = sorted(key for key in options if key not in managed and key not in shared)
        unknown += _check_keys(table, given, allowed[table], managed, shared)
        given_keys[table] = given
    _refuse_unknown_keys(unknown, allowed)
    data = {**_DATA_DEFAULTS, **merged.get("data", {})}
    if not data.get("source"):
        raise ConfigError("[data] source is required (a data file, folder, bundled name or hub id)")
    for key, value in data.items():
        if key == "stop":
            data[key] = _check_value("data", ExecutionConfig.options()["stop"], value) if value is not None else None
            continue
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"[data] {key} must be a string, not {value!r}")

    stages = run.get("stages", list(STAGES))
    if isinstance(stages, str):
        stages = [stages]
    if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages):
        raise ConfigError(f"[run] stages must be a list of stage names ({', '.join(STAGES)}), not {stages!r}")
    if not stages:
        raise ConfigError(f"[run] stages is empty: no stage would run; list the stages to run ({', '.join(STAGES)}), "
                          "or leave [run] stages out to run them all")
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        raise ConfigError(f"[run] stages: unknown stage {unknown[0]!r}{suggestion(unknown[0], STAGES)}; stages: {', '.join(STAGES)}")
    stages = [s for s in STAGES if s in stages]

    sections: dict[str, dict[str, Any]] = {}
    for table, command_name in SECTION_COMMANDS.items():
        options = COMMAND_CONFIGS[command_name].options()
        sections[table] = {key: _check_value(table, options[key], value) for key, value in given_keys[table].items()}

    output = run.get("output")
    if output is not None and (not isinstance(output, str) or not output.strip()):
        raise ConfigError(f"[run] output must be a folder path (a string), not {output!r}")
    if output is None:
        output = default_output or Path("runs") / (source_path.stem if source_path else "run")
    offline = run.get("offline", False)
    if not isinstance(offline, bool):
        raise ConfigError(f"[run] offline must be true or false, not {offline!r}")
    retry_failed = run.get("retry_failed", False)
    if not isinstance(retry_failed, bool):
        raise ConfigError(f"[run] retry_failed must be true or false, not {retry_failed!r}")
    _check_label_kind(data, sections)
    return PipelineConfig(
        output=Path(output), stages=stages, offline=offline, data=data, sections=sections,
        source_path=source_path, raw=merged, notes=notes, retry_failed=retry_failed,
    )


def _check_label_kind(data: dict[str, Any], sections: Mapping[str, Mapping[str, Any]]) -> None:
    """Check ``[data] label_kind`` (one of the label kinds ``workbench correlate --label-kind`` takes) and
    that no declaration of the kind of ``[data] label_column`` contradicts another: ``[data] label_kind``,
    ``[correlate] label_kind`` and ``[bias] label_kind`` (the last two where their table takes its label
    from ``[data] label_column``, i.e. sets no ``label`` of its own to another column) must agree.

    Raises:
        ConfigError: an unknown kind, or two declarations that differ, naming both keys.
    """
    kind = data.get("label_kind")
    if kind is not None:
        choices = LABEL_KINDS
        if kind not in choices:
            raise ConfigError(f"[data] label_kind must be one of {', '.join(choices)}, not {kind!r}"
                              f"{suggestion(kind, choices)}")
        if not data.get("label_column"):
            raise ConfigError(f"[data] label_kind {kind!r} declares what [data] label_column holds: set [data] "
                              "label_column too (e.g. grade)")
    declared = [("[data] label_kind", kind)] if kind is not None else []
    for table in LABEL_KIND_TABLES:
        section = sections.get(table, {})
        own_label = section.get("label")
        if section.get("label_kind") is not None and (own_label is None or own_label == data.get("label_column")):
            declared.append((f"[{table}] label_kind", section["label_kind"]))
    for key, value in declared[1:]:
        first_key, first = declared[0]
        if value != first:
            raise ConfigError(f"{first_key} = {first!r} and {key} = {value!r} contradict each other for the label "
                              f"[data] label_column {data.get('label_column')!r}; declare it once, as [data] label_kind "
                              f"(and drop {key})")


def load_config(path: str | Path, *, overrides: Iterable[str] = ()) -> PipelineConfig:
    """Read and validate a pipeline TOML file.

    Args:
        path: the ``.toml`` file.
        overrides: ``table.key=value`` strings (see :func:`parse_override`).

    Raises:
        ConfigError: the file is missing or not valid TOML, or :func:`build_config` rejects it.
    """
    if isinstance(overrides, str):  # one override given bare would be read letter by letter
        raise TypeError(f"load_config(path, overrides=[...]): overrides is a list of TABLE.KEY=VALUE strings, "
                        f"not one string; write overrides=[{overrides!r}]")
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path} is a folder; give the config file (TOML), e.g. configs/humaneval.toml")
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"), parse_float=_toml_float)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: not valid TOML: {error}") from None
    return build_config(raw, overrides=overrides, source_path=path)
