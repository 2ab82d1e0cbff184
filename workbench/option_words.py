"""How a job's advice names an option: in the words of whoever runs the job.

A job's messages tell the user which option to set ("pass --allow-partial-join", "a smaller
--limit"). On the command line (and from Python) that is the option's flag; under ``workbench
run`` the stage's options come from a config file, whose keys are ``[correlate]
allow_partial_join`` and ``--set correlate.allow_partial_join=true``, and a flag the run command
does not take would be advice nobody can follow. :func:`config_words` switches the words for
the messages built while a stage runs (``workbench.run.stages.StagePlan.run`` sets it);
:func:`option_named` and :func:`option_set` word them. A context variable, so nothing between
the runner and the message has to pass the words along (errors raised deep in a job, and the
notes it returns, are built while the stage runs, in the runner's thread).

Example:

>>> option_set("allow_partial_join")
'pass --allow-partial-join'
>>> with config_words(lambda name: f"[correlate] {name}"):
...     option_set("allow_partial_join")
'set [correlate] allow_partial_join = true (--set correlate.allow_partial_join=true)'
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from workbench.options import _text, flag_of

#: the config key of an option (``[correlate] allow_partial_join``), or ``None`` for one the
#: config does not set (the run sets it itself); unset: the command line's flags
_KEY_OF: ContextVar[Callable[[str], str | None] | None] = ContextVar("workbench_option_words", default=None)

#: ``[table] key`` as :func:`config_words`'s key function writes it
_KEY = re.compile(r"\[(\w+)\] (\w+)")


@contextmanager
def config_words(key_of: Callable[[str], str | None]) -> Iterator[None]:
    """Within the block, messages name options by config key: ``key_of(field name)`` gives the
    key (``"[correlate] allow_partial_join"``), or ``None`` for an option the config does not
    set (a message then uses its plain words, see :func:`option_named`)."""
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


def option_value(name: str, value: Any, *, flag: str | None = None) -> str:
    """Option ``name`` with the value ``value``, as a message names the setting: ``--mode full``
    (``flag`` as in :func:`option_named`), or inside :func:`config_words` ``[execute] mode =
    "full"`` (a TOML line)."""
    key = _config_key(name)
    if key is None:
        return f"{flag or flag_of(name)} {_text(value)}"
    return f"{key} = {json.dumps(value)}"


def resume_advice() -> str:
    """How to resume an interrupted job: ``rerun with --resume``, or inside :func:`config_words`
    (``workbench run`` resumes an unfinished stage itself) ``rerun the same command``."""
    return "rerun the same command (the stage resumes)" if in_config_words() else "rerun with --resume"


def option_set(name: str, value: Any = True) -> str:
    """The advice to give option ``name`` the value ``value``: ``pass --allow-partial-join``
    (``pass --limit 5``), or inside :func:`config_words` ``set [correlate] allow_partial_join =
    true (--set correlate.allow_partial_join=true)``, the TOML line and its command-line override."""
    key = _config_key(name)
    if key is None:
        flag = flag_of(name)
        return f"pass {flag}" if value is True else f"pass {flag} {_text(value)}"
    literal = json.dumps(value)  # a TOML literal for a bool, number or plain string
    found = _KEY.fullmatch(key)
    # --set reads a value that is no TOML value as text: no quotes for the shell to keep
    override = f" (--set {found.group(1)}.{found.group(2)}={_text(value)})" if found else ""
    return f"set {key} = {literal}{override}"
