"""Ctrl-C outside a command's own handling: while the command line starts (imports its command
modules, a second or more) and once the exit status is decided (the interpreter shutting down).

A command turns a Ctrl-C into its one ``Interrupted`` line and exit status 130
(docs/exit-status.md). Without this module a Ctrl-C in the two windows around it ends the process
by the signal itself (a Python caller sees return code -2) or with a traceback: Python kills itself
with SIGINT on a ``KeyboardInterrupt`` that reaches the top, and it restores SIGINT's default action
late in its shutdown (``_PySignal_Fini``), so a Ctrl-C while the heap is torn down kills it, also
right after a command said ``Interrupted`` (a second Ctrl-C) or finished its work.

SIGTERM, what a batch scheduler (SLURM) or ``timeout`` sends first, ends a command as Ctrl-C does
(:func:`end_sigterm_as_ctrl_c`: Python's own :func:`signal.default_int_handler` raises the
``KeyboardInterrupt``), with exit status 143 (128 + 15) instead of 130; without it the process died
by the signal, its finished rows unflushed and its run.json left saying ``running``.

Standard library only: it is imported before the command modules.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

#: the exit status the command decided (set by :func:`keep_status_on_late_ctrl_c`); None before
_decided: int | None = None
#: the Ctrl-Cs that came since (:func:`_late_ctrl_c`)
_late_ctrl_cs = 0
#: the signal that interrupted the command first (SIGINT or SIGTERM; :func:`_interrupt`), None before
_first_signal: int | None = None


def started_as_command() -> bool:
    """Whether this process is the ``workbench`` command line (its console script, or
    ``python -m workbench``), not a program or test that imports :mod:`workbench.cli`."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None:
        return spec.name == "workbench.__main__"
    return Path(getattr(main, "__file__", None) or "").name in ("workbench", "workbench.exe")


def end_sigterm_as_ctrl_c() -> None:
    """From now on SIGTERM raises ``KeyboardInterrupt`` in the main thread as SIGINT does, so a
    command ends as after a Ctrl-C (finished rows kept, run.json says ``interrupted``, the resume
    advice printed), with exit status 143 (:func:`interrupted_status`). Which signal came first is
    recorded for that; SIGINT keeps Python's handler, wrapped. A signal that is ignored (SIG_IGN, as
    a background shell leaves SIGINT) or has a handler of its own stays as it is. Call it in the
    ``workbench`` command only (a program that imports the library keeps its own handling); in a
    thread other than the main one it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _interrupt)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    global _first_signal
    if _first_signal is None:
        _first_signal = signum
    signal.default_int_handler(signum, frame)  # raises KeyboardInterrupt


def interrupted_status() -> int:
    """The exit status of an interrupted command: 128 + the signal that interrupted it first, that is
    130 for Ctrl-C (SIGINT, also a ``KeyboardInterrupt`` raised without a signal) and 143 for SIGTERM
    (docs/exit-status.md)."""
    return 128 + (_first_signal or signal.SIGINT)


def interrupted_by() -> str:
    """The interruption's name in a message: ``"Ctrl-C"``, or ``"SIGTERM"`` when that came first."""
    return "SIGTERM" if _first_signal == signal.SIGTERM else "Ctrl-C"


def interrupted_word() -> str:
    """``"Interrupted"``, or ``"Interrupted by SIGTERM"``: how a command's interrupted line begins."""
    return "Interrupted by SIGTERM" if _first_signal == signal.SIGTERM else "Interrupted"


@contextmanager
def ctrl_c_while_starting() -> Iterator[None]:
    """Around the imports of the command line: a Ctrl-C there ends the ``workbench`` command with
    one line and exit status 130 (nothing was done yet). Where :mod:`workbench.cli` is imported by
    another program the ``KeyboardInterrupt`` goes on as it came.

    Raises:
        SystemExit: 130, after a Ctrl-C, in the ``workbench`` command.
        KeyboardInterrupt: as it came, elsewhere.
    """
    try:
        yield
    except KeyboardInterrupt:
        if not started_as_command():
            raise
        status = interrupted_status()
        keep_status_on_late_ctrl_c(status)  # a second Ctrl-C, while the message is printed or the process exits
        print(f"{interrupted_word()}: workbench stopped while it started, before it did anything (exit status {status})",
              file=sys.stderr)
        raise SystemExit(status) from None


def exit_status_of(stop: SystemExit) -> int:
    """The status a process ends with for ``stop`` (as Python does: None is 0, an int is itself,
    anything else (a message) is 1)."""
    code = stop.code
    if code is None:
        return 0
    return code if isinstance(code, int) else 1


def keep_status_on_late_ctrl_c(status: int) -> None:
    """From now on a Ctrl-C does not change the exit status ``status``: the command has finished,
    or said it was interrupted. The first one while the interpreter shuts down (joins worker
    threads, runs exit functions) is said and otherwise ignored, so that the cleanups go on; a
    second one ends the process at once with ``status`` (its output flushed), for an exit that
    hangs. Once the exit functions ran (:func:`_ignore_ctrl_c_at_teardown`) SIGINT is ignored, as
    Python would otherwise give it back its default action, death by the signal. Call it from the
    main thread (elsewhere it does nothing)."""
    global _decided, _late_ctrl_cs
    if threading.current_thread() is not threading.main_thread():
        return
    _decided, _late_ctrl_cs = status, 0
    signal.signal(signal.SIGINT, _late_ctrl_c)
    if signal.getsignal(signal.SIGTERM) is _interrupt:
        signal.signal(signal.SIGTERM, _late_ctrl_c)


def _late_ctrl_c(signum: int, frame: object) -> None:
    global _late_ctrl_cs
    _late_ctrl_cs += 1
    status = _decided if _decided is not None else 128 + signum
    if _late_ctrl_cs == 1:
        again = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
        with suppress(Exception):
            print(f"workbench is ending (exit status {status}); {again} again to end it at once", file=sys.stderr,
                  flush=True)
        return
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    os._exit(status)


def _ignore_ctrl_c_at_teardown() -> None:
    # atexit runs its functions last-registered first: registered when the command line is
    # imported, this runs after those of the modules the commands import later (multiprocessing's,
    # the pools'), that is once only the flush and the teardown of the heap are left
    if _decided is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if signal.getsignal(signal.SIGTERM) is _late_ctrl_c:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)


atexit.register(_ignore_ctrl_c_at_teardown)
