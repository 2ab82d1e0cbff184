"""Ctrl-C outside a command's own handling: while the command line starts (imports its command
modules, a second or more) and once the exit status is decided (the interpreter shutting down).

A command turns a Ctrl-C into its one ``Interrupted`` line and exit status 130
(docs/exit-status.md). Without this module a Ctrl-C in the two windows around it ends the process
by the signal itself (a Python caller sees return code -2) or with a traceback: Python kills itself
with SIGINT on a ``KeyboardInterrupt`` that reaches the top, and it restores SIGINT's default action
late in its shutdown (``_PySignal_Fini``), so a Ctrl-C while the heap is torn down kills it, also
right after a command said ``Interrupted`` (a second Ctrl-C) or finished its work.

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


def started_as_command() -> bool:
    """Whether this process is the ``workbench`` command line (its console script, or
    ``python -m workbench``), not a program or test that imports :mod:`workbench.cli`."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None:
        return spec.name == "workbench.__main__"
    return Path(getattr(main, "__file__", None) or "").name in ("workbench", "workbench.exe")


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
        keep_status_on_late_ctrl_c(130)  # a second Ctrl-C, while the message is printed or the process exits
        print("Interrupted: workbench stopped while it started, before it did anything (exit status 130)",
              file=sys.stderr)
        raise SystemExit(130) from None


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


def _late_ctrl_c(signum: int, frame: object) -> None:
    global _late_ctrl_cs
    _late_ctrl_cs += 1
    status = _decided if _decided is not None else 130
    if _late_ctrl_cs == 1:
        with suppress(Exception):
            print(f"workbench is ending (exit status {status}); Ctrl-C again to end it at once", file=sys.stderr,
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


atexit.register(_ignore_ctrl_c_at_teardown)
