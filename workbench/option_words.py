"""How a job's advice names an option: in the words of whoever runs the job.

A job's messages tell the user which option to set ("pass --allow-partial-join", "a smaller
--limit"). On the command line (and from Python) that is the option's flag; under ``workbench
run`` the stage's options come from a config file, whose keys are ``[correlate]
allow_partial_join`` and ``--set correlate.allow_partial_join=true``, and a flag the run command
does not take would be advice nobody can follow; an option the run sets itself (score's
``results``: the execute stage's ``execute/results.jsonl``) is named for what it is, as the user
passed no such option at all. :func:`config_words` switches the words for the messages built
while a stage builds its config, runs and prints (``workbench.run.stages.StagePlan.words``);
:func:`option_named`, :func:`option_given`, :func:`option_value`, :func:`option_set`, :func:`option_reset`,
:func:`resume_advice`, :func:`start_over_advice` and :func:`retry_failed_advice` word them. This is the one place that
decides a message's option words: a job's config checks (``ScoreConfig._check``) word their
advice here too, and ``workbench run`` prints the score stage's retry advice from here. A
context variable, so nothing between the runner and the message has to pass the words along
(errors raised deep in a job, and the notes it returns, are built while the stage runs, in the
runner's thread).

Example:

>>> option_set("allow_partial_join")
'pass --allow-partial-join'
>>> with config_words(lambda name: f"[correlate] {name}"):
...     option_set("allow_partial_join")
'set [correlate] allow_partial_join = true (--set correlate.allow_partial_join=true)'
>>> option_reset("reference", False, True)
'drop --no-reference'
>>> with config_words(lambda name: f"[score] {name}"):
...     option_reset("reference", False, True)
'set [score] reference = true (--set score.reference=true)'
>>> with config_words({"results": "the execute stage's results"}.get):
...     option_value("results", "runs/x/execute/results.jsonl")
"the execute stage's results runs/x/execute/results.jsonl"
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from workbench.options import _text, flag_of

#: the config key of an option (``[correlate] allow_partial_join``), the words for one the run
#: sets itself (``the execute stage's results``), or ``None`` for one no key sets; unset: the
#: command line's flags
_KEY_OF: ContextVar[Callable[[str], str | None] | None] = ContextVar("workbench_option_words", default=None)

#: ``[table] key`` as :func:`config_words`'s key function writes it
_KEY = re.compile(r"\[(\w+)\] (\w+)")


@contextmanager
def config_words(key_of: Callable[[str], str | None]) -> Iterator[None]:
    """Within the block, messages name options by config key.

    Args:
        key_of: field name -> the config key (``"[correlate] allow_partial_join"``, written
            ``[table] key``), other words for an option the run sets itself (``"the execute
            stage's results"``: no key to set, so :func:`option_set` falls back to the flag), or
            ``None`` for an option the config does not set (a message then uses its plain
            words, see :func:`option_named`).
    """
    token = _KEY_OF.set(key_of)
    try:
        yield
    finally:
        _KEY_OF.reset(token)


def _config_key(name: str) -> str | None:
    key_of = _KEY_OF.get()
    return None if key_of is None else key_of(name)


def in_config_words() -> bool:
    """Whether messages are worded for a config file (inside :func:`config_words`)."""
    return _KEY_OF.get() is not None


def option_named(name: str, plain: str | None = None, *, flag: str | None = None) -> str:
    """Option ``name`` (a config field, ``task_column``) as a message names it: its flag
    (``--task-column``; ``flag`` where the command line spells it otherwise, ``--t0``), or inside
    :func:`config_words` its config key (``[data] task_column``); where the config does not set
    it, ``plain`` (default: the flag)."""
    flag = flag or flag_of(name)
    if not in_config_words():
        return flag
    return _config_key(name) or (plain if plain is not None else flag)


def _flag_value(name: str, value: Any, flag: str | None) -> str:
    """``--mode full``; a switch's ``True`` is ``--reference``, its ``False`` ``--no-reference``."""
    flag = flag or flag_of(name)
    if value is True:
        return flag
    if value is False:
        return "--no-" + flag[2:]
    return f"{flag} {_text(value)}"


def option_given(name: str) -> str:
    """The advice to give option ``name`` a value the message cannot know: ``pass --language``,
    or inside :func:`config_words` ``set [data] language``."""
    key = _config_key(name)
    if key is None or not _KEY.fullmatch(key):
        return f"pass {flag_of(name)}"
    return f"set {key}"


def option_value(name: str, value: Any, *, flag: str | None = None) -> str:
    """Option ``name`` with the value ``value``, as a message names the setting: ``--mode full``
    (``--no-reference`` for a switch turned off; ``flag`` as in :func:`option_named`), or inside
    :func:`config_words` ``[execute] mode = "full"`` (a TOML line), or for an option the run sets
    itself its words and the value (``the execute stage's results /runs/x/execute/results.jsonl``)."""
    key = _config_key(name)
    if key is None:
        return _flag_value(name, value, flag)
    if not _KEY.fullmatch(key):
        return f"{key} {_text(value)}"
    return f"{key} = {json.dumps(value)}"


def resume_advice() -> str:
    """How to resume an interrupted job: ``rerun with --resume``, or inside :func:`config_words`
    (``workbench run`` resumes an unfinished stage itself) ``rerun the same command``."""
    return "rerun the same command (the stage resumes)" if in_config_words() else "rerun with --resume"


def start_over_advice() -> str:
    """The two ways out of a resume refused for settings that differ from the recorded ones:
    ``pass the same options as before to continue, or start over in a fresh --output (or with
    --overwrite instead of --resume)``, or inside :func:`config_words` (``workbench run`` resumes
    and overwrites a stage itself) the recorded values, a fresh ``[run] output`` or ``--force``
    (:func:`fresh_start_advice`)."""
    if in_config_words():
        return f"set the recorded values again to continue, or {fresh_start_advice()}"
    return f"pass the same options as before to continue, or {fresh_start_advice()}"


def fresh_start_advice() -> str:
    """The way out of a resume that no option can continue (rows the folder holds were made otherwise):
    ``start over in a fresh --output (or with --overwrite instead of --resume)``, or inside
    :func:`config_words` ``start over in a fresh [run] output (or rerun the same workbench run command
    with --force; with --stage, that stage only)``."""
    if in_config_words():
        return ("start over in a fresh [run] output (or rerun the same workbench run command with --force; with "
                "--stage, that stage only)")
    return "start over in a fresh --output (or with --overwrite instead of --resume)"


def other_output_advice(plain: str = "use another --output") -> str:
    """The way around an output another run is writing now, or one that cannot take this run's outputs:
    ``plain`` (default ``use another --output``; a command's own words, ``choose another -o folder``),
    or inside :func:`config_words` (``workbench run`` writes its stages' folders under its own) ``use
    another [run] output``."""
    return "use another [run] output" if in_config_words() else plain


def retry_failed_advice() -> tuple[str, str]:
    """How to score a score run's failed rows again, and how to ask the LLM again past its cache
    (parse errors are cached answers): ``("continue with --resume --retry-failed", "add --cache
    refresh")`` on the command line; inside :func:`config_words` ``workbench run``'s own
    ``--retry-failed`` (it refuses ``[score] resume`` and ``retry_failed``, which it sets itself)
    and a one-off ``--set score.cache=refresh``, as a config key set to ``refresh`` would ask
    again on every later run."""
    key = _config_key("cache")
    found = _KEY.fullmatch(key) if key is not None else None
    if found is None:
        return "continue with --resume --retry-failed", "add --cache refresh"
    return ("rerun the same workbench run command with --retry-failed ([run] retry_failed = true)",
            f"add --set {found.group(1)}.cache=refresh")


def option_set(name: str, value: Any = True) -> str:
    """The advice to give option ``name`` the value ``value``: ``pass --allow-partial-join``
    (``pass --limit 5``, ``pass --no-reference``), or inside :func:`config_words` ``set
    [correlate] allow_partial_join = true (--set correlate.allow_partial_join=true)``, the TOML
    line and its command-line override."""
    key = _config_key(name)
    found = _KEY.fullmatch(key) if key is not None else None
    if found is None:  # no key sets it (the run's own option included): the flag
        return f"pass {_flag_value(name, value, None)}"
    literal = json.dumps(value)  # a TOML literal for a bool, number or plain string
    # --set reads a value that is no TOML value as text: no quotes for the shell to keep
    return f"set {key} = {literal} (--set {found.group(1)}.{found.group(2)}={_text(value)})"


def option_reset(name: str, given: Any, default: Any) -> str:
    """The advice to undo option ``name``'s value ``given`` (a setting that has no effect here,
    refused rather than ignored): ``drop --no-reference`` (``drop --final-step p-correct``) on
    the command line, where leaving the option out gives its default; inside
    :func:`config_words` ``set [score] reference = true (--set score.reference=true)``, its
    ``default``, as a config file or preset may be what set it."""
    key = _config_key(name)
    if key is None or not _KEY.fullmatch(key):
        return f"drop {_flag_value(name, given, None)}"
    return option_set(name, default)
