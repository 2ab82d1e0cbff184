"""Helpers for testing runners and the sandbox (used by workbench's own tests, and by
language-plugin authors to run their runner's hostile-sample checks the same way).

Everything here is real: the runner's ``prepare``, the detected sandbox, subprocesses.
"""

from __future__ import annotations

import functools
import os

from workbench.execution.isolation import IsolationLevel, SandboxUnavailableError, detect_isolation
from workbench.execution.sandbox import Sandbox, SampleOutcome, new_token
from workbench.languages.spec import TestRunner


@functools.cache
def available_levels() -> tuple[IsolationLevel, ...]:
    """Return the isolation levels that work on this machine, strongest first."""
    levels = []
    for level in IsolationLevel:
        try:
            detect_isolation(level)
        except SandboxUnavailableError:
            continue
        levels.append(level)
    return tuple(levels)


@functools.cache
def sandbox_for(level: IsolationLevel | None = None) -> Sandbox:
    """Return a shared :class:`Sandbox` at ``level`` (strongest available for ``None``)."""
    return Sandbox(detect_isolation(level))


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
) -> SampleOutcome:
    """Prepare ``program`` with ``runner`` and run it once in the sandbox.

    Args:
        token: the run's token (a fresh one by default; pass an old one to replay it).
    """
    token = token or new_token()
    spec = runner.prepare(program, tests, entry_point, token)
    return sandbox_for(level).run(spec, token, timeout_s, slot=slot)


def _proc_stat(pid: str) -> list[bytes] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None


def processes_with_cmdline(marker: str) -> list[int]:
    """Return live (non-zombie) pids whose command line contains ``marker``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read()
        except OSError:
            continue
        fields = _proc_stat(name)
        if marker.encode() in cmdline and fields and fields[0] != b"Z":
            found.append(int(name))
    return found


def zombie_children() -> list[int]:
    """Return zombie processes whose parent is the calling process."""
    own = str(os.getpid()).encode()
    return [
        int(name) for name in os.listdir("/proc")
        if name.isdigit() and (fields := _proc_stat(name)) and fields[0] == b"Z" and fields[1] == own
    ]
