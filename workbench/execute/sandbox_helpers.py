"""Helpers for tests of runners and of the sandbox (used by workbench's own tests, and by
language-plugin authors to run their runner's hostile-sample checks the same way): the
isolation levels this machine offers, a shared sandbox per level, one program run through
a runner, and the processes a run left behind. (The plugin conformance kit is
:mod:`workbench.languages.conformance`.)

Everything here is real: the runner's ``prepare``, the detected sandbox, subprocesses.
"""

from __future__ import annotations

import functools
import os

from workbench.execute.isolation import LEVEL_ORDER, IsolationLevel, SandboxUnavailableError, detect_isolation
from workbench.execute.processes import proc_file
from workbench.execute.sandbox import Sandbox, new_token
from workbench.execute.status import SampleOutcome
from workbench.languages.spec import TestRunner


@functools.cache
def available_levels() -> tuple[IsolationLevel, ...]:
    """Return the sandboxing isolation levels that work on this machine, strongest first
    (never ``unsandboxed``, which is always there and isolates nothing)."""
    levels = []
    for level in LEVEL_ORDER:
        try:
            detect_isolation(level)
        except SandboxUnavailableError:
            continue
        levels.append(level)
    return tuple(levels)


@functools.cache
def sandbox_for(level: IsolationLevel | None = None, reuse_interpreters: bool = True) -> Sandbox:
    """Return a shared :class:`Sandbox` at ``level`` (strongest available for ``None``);
    ``reuse_interpreters=False``: every sample starts its own interpreter, where a per-worker
    zygote would otherwise fork it (see :mod:`workbench.execute.zygote`)."""
    return Sandbox(detect_isolation(level), reuse_interpreters=reuse_interpreters)


def run_program(
    runner: TestRunner,
    program: str,
    tests: str,
    entry_point: str | None,
    *,
    timeout_s: float,
    level: IsolationLevel | None = None,
    token: str | None = None,
    slot: int = 0,
    reuse_interpreters: bool = True,
) -> SampleOutcome:
    """Prepare ``program`` with ``runner`` and run it once in the sandbox.

    Args:
        token: the run's token (a fresh one by default; pass an old one to replay it).
        reuse_interpreters: see :func:`sandbox_for`.
    """
    token = token or new_token()
    spec = runner.prepare(program, tests, entry_point, token)
    return sandbox_for(level, reuse_interpreters).run(spec, token, timeout_s, slot=slot)


def _proc_stat(pid: str) -> list[bytes] | None:
    data = proc_file(pid, "stat")
    return data.rsplit(b")", 1)[1].split() if data is not None else None


def processes_with_cmdline(marker: str) -> list[int]:
    """Return live (non-zombie) pids whose command line contains ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        cmdline = proc_file(name, "cmdline")
        fields = _proc_stat(name)
        if cmdline is not None and marker.encode() in cmdline and fields and fields[0] != b"Z":
            found.append(int(name))
    return found


def zombie_children() -> list[int]:
    """Return zombie processes whose parent is the calling process."""
    own = str(os.getpid()).encode()
    return [
        int(name) for name in os.listdir("/proc")
        if name.isdigit() and (fields := _proc_stat(name)) and fields[0] == b"Z" and fields[1] == own
    ]
