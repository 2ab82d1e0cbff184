"""Refusing a resume whose settings differ from the ones the finished rows were made with.

A resumed run keeps the rows already written and adds the missing ones. If a setting that
changes a row's value (the data source, a column, a timeout, a model) differs from the earlier
run's, the output would silently mix two runs, and its mean would be neither's. So each job
records these settings with its results (``workbench score``: ``run.json``'s ``config``;
``workbench execute``: the summary file's ``settings``), and a resume compares them first.

Which options count is declared once on the job's config class, with
``option(..., recorded=True)`` (:func:`workbench.options.option`). What may legitimately
differ on a resume (a larger ``--limit``, ``--workers``, ``--max-failures``, progress options)
is simply not recorded. A record written by an older version lacks some settings: those are not
checked, so old run folders still resume.

Example:

>>> previous = {"generation_column": "generation", "source": "/data/a.jsonl"}
>>> current = {"generation_column": "reference", "source": "/data/a.jsonl"}
>>> resume_changes(previous, current)
[('generation_column', 'generation', 'reference')]
>>> try:
...     check_resume_settings(previous, current, made_with="the run folder was scored with",
...                           record="out/run.json")
... except ResumeMismatchError as error:  # caught, so the example reads the same run as a file or a module
...     print(error)  # doctest: +ELLIPSIS
cannot resume: the run folder was scored with other settings (out/run.json): generation_column 'generation' -> 'reference'; ...
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from workbench.option_words import start_over_advice
from workbench.options import OptionError

#: the record key of the data a run read (not an option: the command's argument)
SOURCE_KEY = "source"


class ResumeMismatchError(OptionError):
    """A resume asked with settings that differ from the run's record.

    The message names each changed setting with its recorded and new value (an option as
    ``{name}``, so the command line shows its flag) and says how to proceed.

    Attributes:
        changes: ``(setting, recorded value, new value)`` for each difference, in record order.
    """

    def __init__(self, template: str, names: tuple[str, ...], changes: list[tuple[str, Any, Any]]):
        super().__init__(template, *names)
        self.changes = changes


def source_identity(source: str | os.PathLike[str]) -> str:
    """The data source as a run records it: an existing local path made absolute (so
    ``data.jsonl`` and ``./data.jsonl`` are one source), else the name as given (a bundled
    name or a hub id).

    Args:
        source: what the command was given.

    Returns:
        the text to record and compare.
    """
    text = os.fspath(source)
    return str(Path(text).resolve()) if os.path.exists(text) else text


#: how a record names the run folder of ``workbench run``: a path inside it is recorded relative to
#: it (:func:`recorded_path`), so the folder moved or copied resumes; the stage keys name it so too
RUN_FOLDER = "<run folder>"


def recorded_path(path: str | os.PathLike[str], run_dir: str | os.PathLike[str] | None = None) -> str:
    """A path setting (the data source, the problem set, execution results) as a run records it:
    :func:`source_identity`, except that a local path inside ``run_dir`` (the ``workbench run``
    folder the job writes into) is recorded relative to it, as ``<run folder>/execute/results.jsonl``,
    so that the folder moved (``mv``), copied (``cp -a``) or named otherwise is the same setting.
    A path outside it stays absolute: moved, it is another setting.

    Args:
        path: what the job was given.
        run_dir: the run folder (``None``: a job run on its own; every path as :func:`source_identity`).

    Returns:
        the text to record and compare.
    """
    identity = source_identity(path)
    if run_dir is None or not os.path.exists(os.fspath(path)):
        return identity
    return run_folder_relative(Path(identity), Path(run_dir).resolve()) or identity


def shown_path(path: str | os.PathLike[str], run_dir: str | os.PathLike[str] | None) -> str:
    """A path as a job's output names it (correlate's ``source``, bias's ``dedup_output``, the
    execute summary's ``output``, score's ``run.json`` ``paths``): inside ``run_dir`` (the
    ``workbench run`` folder) relative to it, as ``<run folder>/dedup``, so the outputs of the
    folder moved (``mv``) or copied (``cp -a``) do not name its old location; anything else as
    given (a path outside the folder, a bundled name, a hub id).

    Args:
        path: a path (it need not exist yet: an output file), or a name.
        run_dir: the run folder (``None``: a job run on its own; ``path`` as given).

    Returns:
        the text to write.
    """
    text = os.fspath(path)
    if run_dir is None or not (os.path.isabs(text) or os.path.exists(text)):
        return text
    return run_folder_relative(Path(text).resolve(), Path(run_dir).resolve()) or text


def run_folder_relative(path: Path, root: Path) -> str | None:
    """``path`` (absolute) as ``<run folder>/...`` when it lies inside ``root`` (absolute), else ``None``."""
    try:
        relative = path.relative_to(root).as_posix()
    except ValueError:
        return None
    return RUN_FOLDER if relative == "." else f"{RUN_FOLDER}/{relative}"


def resolved_path(recorded: Any, run_dir: str | os.PathLike[str] | None) -> Any:
    """A path a record holds (:func:`recorded_path`) as a path to read now: ``<run folder>/...``
    inside ``run_dir``; anything else as it is (also a ``<run folder>`` path without ``run_dir``)."""
    if not isinstance(recorded, str) or run_dir is None:
        return recorded
    if recorded == RUN_FOLDER:
        return str(Path(run_dir))
    if recorded.startswith(f"{RUN_FOLDER}/"):
        return str(Path(run_dir) / recorded[len(RUN_FOLDER) + 1:])
    return recorded


def rebase_recorded_paths(previous: Mapping[str, Any], keys: Iterable[str], roots: Iterable[Path]) -> dict[str, Any]:
    """A record written before paths inside the run folder were recorded relative to it
    (:func:`recorded_path`), with those paths in the relative form, so that it compares equal to a
    record made now: each absolute path of ``keys`` that lies inside one of ``roots`` (the run folder
    where the record was written, where known, and the run folder now).

    Args:
        previous: the recorded settings.
        keys: the settings that are paths (``source``, ``problems``, ``results``).
        roots: absolute run folders, tried in order.

    Returns:
        a copy of ``previous``.
    """
    rebased = dict(previous)
    roots = [root for root in roots if root.is_absolute()]
    for key in keys:
        value = rebased.get(key)
        if isinstance(value, str) and os.path.isabs(value):
            rebased[key] = next((shown for root in roots if (shown := run_folder_relative(Path(value), root))), value)
    return rebased


def record_roots(then: Any, now: str | os.PathLike[str], run_dir: str | os.PathLike[str]) -> list[Path]:
    """The run folders a record may have named its paths in (:func:`rebase_recorded_paths`): the
    one it was written in, where the record gives the path of a file it wrote (``then``: the file
    that is at ``now`` in ``run_dir`` today: score's ``run.json``, execute's results),
    and ``run_dir``.

    Args:
        then: the path the record holds for that file, absolute or relative to the working
            directory (as a relative ``[run] output`` records it); anything else: unknown.
        now: where that file is now; run_dir: the run folder now.

    Returns:
        absolute folders, the one it was written in first.
    """
    root = Path(run_dir).resolve()
    try:
        tail = Path(now).resolve().relative_to(root).as_posix()
    except ValueError:
        tail = None
    # a relative recorded path (a relative [run] output) names the folder from the working directory,
    # as the run that wrote it did
    written_in = (folder_holding(os.path.abspath(then), tail)
                  if tail and isinstance(then, str) and then and not then.startswith(RUN_FOLDER) else None)
    return [*([written_in] if written_in is not None else []), root]


def folder_holding(path: str | os.PathLike[str], tail: str) -> Path | None:
    """The folder in which ``path`` is ``tail`` (``/``-separated): ``runs/x`` for
    ``runs/x/execute/results.jsonl`` and ``execute/results.jsonl``; ``None`` when ``path`` does not
    end so."""
    parts, ending = Path(path).parts, Path(tail).parts
    if not ending or len(parts) <= len(ending) or parts[-len(ending):] != ending:
        return None
    return Path(*parts[:-len(ending)])


def implied_run_dir(previous: Mapping[str, Any], current: Mapping[str, Any], keys: Iterable[str],
                    output: str | os.PathLike[str]) -> Path | None:
    """The ``workbench run`` folder a record was made in, for a job run on its own (no ``run_dir``)
    that resumes it, e.g. the command line ``run.json`` records for the stage, rerun by hand: a
    path setting the record holds as ``<run folder>/execute/results.jsonl`` and this run gives as
    ``/home/me/runs/x/execute/results.jsonl`` names ``/home/me/runs/x``, where ``output`` (the
    file or folder the job writes) lies inside it. Compared there, the two are one setting.

    Args:
        previous: the recorded settings; current: this run's (paths as :func:`source_identity`).
        keys: the settings that are paths (``source``, ``problems``, ``results``).
        output: what the job writes (its results file, its run folder's ``run.json``).

    Returns:
        the absolute run folder, or ``None`` when no setting names one that holds ``output``.
    """
    written = Path(output).resolve()
    for key in keys:
        old, new = previous.get(key), current.get(key)
        if not (isinstance(old, str) and old.startswith(f"{RUN_FOLDER}/") and isinstance(new, str)
                and os.path.isabs(new)):
            continue
        root = folder_holding(new, old[len(RUN_FOLDER) + 1:])
        if root is not None and root in written.parents:
            return root
    return None


def resume_changes(previous: Mapping[str, Any], current: Mapping[str, Any],
                   keys: Iterable[str] | None = None) -> list[tuple[str, Any, Any]]:
    """The settings that differ between a run's record and a resume.

    Args:
        previous: the recorded settings (JSON values: lists, not tuples).
        current: this run's settings, as JSON holds them.
        keys: the settings to compare (default: every key of ``current``). A key missing from
            ``previous`` (a record written before it was recorded) is not compared.

    Returns:
        ``(key, recorded value, new value)`` for each difference; ``stop`` values compared and given
        in their typed form (``\\n`` for a newline: :func:`_as_typed`).
    """
    changes = []
    for key in (current.keys() if keys is None else keys):
        if key in previous and key in current:
            old, new = _as_typed(key, previous[key]), _as_typed(key, current[key])
            if _plain(old) != _plain(new):
                changes.append((key, old, new))
    return changes


def _as_typed(key: str, value: Any) -> Any:
    """A ``stop`` value as compared and shown: each entry in its typed form
    (:func:`~workbench.data.stop_sequences.typed_stop`), so a real newline (TOML's ``"\\n"``) and the
    escape ``\\n`` typed on a command line are one setting, and the refusal writes the escape; any
    other value as it is."""
    if key != "stop" or not isinstance(value, (list, tuple)):
        return value
    from workbench.data.stop_sequences import typed_stop

    return [typed_stop(entry) if isinstance(entry, str) else entry for entry in value]


def check_resume_settings(previous: Mapping[str, Any], current: Mapping[str, Any], *, made_with: str,
                          record: str, keys: Iterable[str] | None = None, options: Iterable[str] = (),
                          defaults: Mapping[str, str] | None = None) -> None:
    """Refuse a resume whose settings differ from the recorded ones, in one line: what changed
    (``--timeout 30.0 -> 10.0``; a switch as its flags, ``--reference -> --no-reference``; a list left empty
    as the option left out, ``without --stop -> --stop humaneval``) and the two ways out (the same options, or
    a fresh output).

    Args:
        previous: the recorded settings of the run being resumed.
        current: this run's settings.
        made_with: the start of the message: what was made with the recorded settings
            (``"the run folder was scored with"``).
        record: the file that holds the record, for the message.
        keys: the settings to compare (default: every key of ``current``).
        options: the keys that are options of the job's config (named ``{key}`` in the message,
            so the command line shows ``--generation-column``); any other key (``source``) is
            named as it is. A mapping of them to their :class:`~workbench.options.Option`
            (``ScoreConfig.options()``) also says how a list value is written (see :func:`_shown`).
        defaults: for a setting whose unset value (``None``) stands for a behaviour, the words for
            it (``{"timeout": "calibrated per task: ..."}``), shown as ``the default (...)``; any
            other unset value is ``the default``.

    Raises:
        ResumeMismatchError: naming every changed setting with both values, and what to do.
    """
    changes = resume_changes(previous, current, keys)
    if not changes:
        return
    declared = options if isinstance(options, Mapping) else {}
    options = set(options)
    defaults = dict(defaults or {})
    parts = []
    for key, old, new in changes:
        label = "{" + key + "}" if key in options else ("data source" if key == SOURCE_KEY else key)
        switch = declared.get(key)
        if getattr(switch, "is_switch", False) and isinstance(old, bool) and isinstance(new, bool):
            parts.append(_switch_change(key, switch, old, new))
            continue
        commas = getattr(getattr(declared.get(key), "declared", None), "commas", True)
        if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)) and not (old and new):
            # an empty list is the option left out (as a switch's absence): "--stop none" would be a value
            def given(value: list[Any] | tuple[Any, ...]) -> str:
                return f"{label} {_shown(value, None, commas)}" if value else f"without {label}"

            parts.append(f"{given(old)} -> {given(new)}")
            continue
        parts.append(f"{label} {_shown(old, defaults.get(key), commas)} -> {_shown(new, defaults.get(key), commas)}")
    names = tuple(key for key, _, _ in changes if key in options)
    template = (f"cannot resume: {made_with} other settings ({record}): {'; '.join(parts)}; {start_over_advice()}")
    raise ResumeMismatchError(template, names, changes)


def _switch_change(key: str, switch: Any, old: bool, new: bool) -> str:
    """A changed switch as the user sets it: on the command line its flag for each value
    (``--reference -> --no-reference``; a switch with one flag is that flag or its absence:
    ``without --no-prompt -> --no-prompt``), not Python's ``False -> True``; inside
    :func:`~workbench.option_words.config_words` (``workbench run``) the config key, ``{key}``,
    with TOML's values (``[score] reference true -> false``).

    Args:
        key: the option's field name; switch: its :class:`~workbench.options.Option` (``is_switch``);
        old, new: the recorded and the new value.
    """
    from workbench.option_words import in_config_words

    if in_config_words():
        return "{" + key + "}" + f" {str(old).lower()} -> {str(new).lower()}"

    def typed(value: bool) -> str:
        if switch.off_flag is not None:  # --reference/--no-reference
            return switch.flag if value else switch.off_flag
        return switch.flag if value else f"without {switch.flag}"

    return f"{typed(old)} -> {typed(new)}"


def _shown(value: Any, default: str | None = None, commas: bool = True) -> str:
    r"""A setting's value in the message: ``None`` is an option left unset (its default behaviour,
    e.g. a calibrated timeout: ``default`` says which), not the text "None"; a list is written as
    the command line gives it, not as a Python list: its entries shell-quoted, joined by commas for an option that splits a value at commas
    (``--method chrf,ice-score``) and by spaces for one given once per entry (``commas=False``:
    ``--stop humaneval '\n\n'`` for ``--stop humaneval --stop '\n\n'``); a newline, tab or carriage
    return inside an entry as its escape (a ``stop`` entry comes in its typed form already: :func:`_as_typed`).

    (``none`` when empty; :func:`check_resume_settings` writes an empty list as the option left out,
    ``without --stop``, since ``--stop none`` gives the value "none").

    >>> _shown([]), _shown(["chrf", "ice-score"]), _shown(["humaneval", "x y"], commas=False)
    ('none', 'chrf,ice-score', "humaneval 'x y'")
    """
    if value is None:
        return f"the default ({default})" if default else "the default"
    if isinstance(value, (list, tuple)):
        import shlex

        if not value:
            return "none"
        if commas:
            return shlex.quote(_one_line(",".join(str(entry) for entry in value)))
        return " ".join(shlex.quote(_one_line(str(entry))) for entry in value)
    return repr(value)


def _one_line(text: str) -> str:
    """``text`` with a newline, tab or carriage return written as its escape, so the refusal stays one line."""
    return text.replace("\n", "\\n").replace("\t", "\\t").replace("\r", "\\r")


def _plain(value: Any) -> Any:
    """A value as JSON gives it back (a tuple is a list), so a record read from disk compares
    equal to the same settings in memory."""
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value
