"""Killing the running samples when workbench itself dies (SIGKILL, SIGTERM, a crash).

Under bubblewrap a sample dies with workbench by itself (``bwrap --die-with-parent``; a
worker's zygote ends when its control socket closes). At the ``namespaces``, ``rlimits`` and
``unsandboxed`` levels nothing did: each sample runs in a session of its own, so it outlived a
killed workbench and slept on to its CPU limit or for ever.

A parent-death signal (``PR_SET_PDEATHSIG``) is not enough there: it is sent when the *thread*
that forked the child ends, not the process; it is cleared by a change of user id and not
inherited by a fork, and the sample's tree is several processes deep (GNU time, ``unshare``,
the step shell, the sample and whatever it started, in sessions of their own). So a
:class:`Guardian` process is started once per :class:`~workbench.execute.sandbox.Sandbox`
(at those levels, on its first sample), in a session of its own and deaf to ``SIGINT``,
``SIGTERM``, ``SIGHUP`` and ``SIGQUIT``. Workbench tells it over a pipe which samples are
running (process group, user id as root, the run's environment tag). The kernel closes that
pipe when the workbench *process* ends, however it ends; the guardian then kills every sample
still registered: its process group, every process of its user id (root), every process
carrying its environment tag (:mod:`workbench.execute.processes`), and exits. On a normal end the
pipe closes with nothing registered and the guardian just exits.

Run as a script (``python -I -S guardian.py``) it is the guardian itself: it imports only the
standard library and :mod:`workbench.execute.processes` (loaded from this folder by path, so
the interpreter does not import workbench).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import weakref

#: every Guardian of this process, for :func:`_forget_in_forked_child`
_ALL: weakref.WeakSet[Guardian] = weakref.WeakSet()


class Guardian:
    """The workbench side: starts the guardian process and keeps it told which samples run.

    Thread-safe. Each message is one line shorter than ``PIPE_BUF``, written with one
    ``write``, so lines of several threads never interleave.

    Example::

        guardian = Guardian()
        guardian.watch(proc.pid, uid, "WORKBENCH_SANDBOX_RUN=3f2a...")  # after Popen
        ...                                                            # the sample is over
        guardian.release(proc.pid)
        guardian.stop()                                                # at the end of the run
    """

    def __init__(self, hold: tuple[int, ...] = ()) -> None:
        """``hold``: file descriptors the guardian keeps open until it exits, e.g. the lock of the
        :class:`~workbench.execute.isolation.UidBlock` whose user ids the samples run as: an
        ``flock`` lasts while any descriptor of it is open, so the block stays taken until the
        guardian killed what ran under those user ids (a workbench started after this one died
        cannot take the block while the guardian still kills every process of its user ids)."""
        self._hold = tuple(hold)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._write: int | None = None
        self._closed = False
        _ALL.add(self)

    def _started(self) -> int | None:
        """The pipe to a running guardian, started on first use; ``None`` when it cannot start
        (the samples then run as before, without it), and after :meth:`close`."""
        if self._write is not None or self._closed:
            return self._write
        read_end, write_end = os.pipe()  # close-on-exec: no sample inherits the write end
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__)],
                stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True, pass_fds=self._hold, cwd="/",
            )
        except (OSError, subprocess.SubprocessError):
            os.close(write_end)
            return None
        finally:
            os.close(read_end)
        self._write = write_end
        return write_end

    def _say(self, line: str, *, start: bool = False) -> None:
        with self._lock:
            fd = self._started() if start else self._write
            if fd is not None:
                with contextlib.suppress(OSError):  # a guardian that died: the samples still end normally
                    os.write(fd, line.encode() + b"\n")

    def watch(self, pgid: int, uid: int | None, run_tag: str) -> None:
        """Register a started sample: ``pgid`` its process group (its leader's pid), ``uid`` the
        user id it runs as (root mode) or ``None``, ``run_tag`` its ``NAME=value`` environment tag."""
        self._say(f"+ {pgid} {uid if uid is not None else '-'} {run_tag}", start=True)

    def release(self, pgid: int) -> None:
        """Forget the sample of process group ``pgid``: it is over and swept (a guardian stopped
        since, by :meth:`stop`, is not started again for this)."""
        self._say(f"- {pgid}")

    def stop(self) -> None:
        """Close the pipe; the guardian kills what is still registered (nothing, after a run
        whose samples all ended) and exits. A later :meth:`watch` starts a new one."""
        with self._lock:
            if self._write is not None:
                os.close(self._write)
                self._write = None
            proc, self._proc = self._proc, None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)


    def close(self) -> None:
        """:meth:`stop`, and never start again: for a closed
        :class:`~workbench.execute.sandbox.Sandbox`, whose last samples (started just before it was
        closed, and killed by it) may still call :meth:`watch`, which would otherwise start a
        guardian that lived on, idle, until the Sandbox was garbage-collected."""
        with self._lock:
            self._closed = True
        self.stop()


def _forget_in_forked_child() -> None:
    """In a child forked without ``exec`` (``multiprocessing``'s ``fork``, a library's worker): close
    its copies of the guardians' write ends (close-on-exec does not apply to a fork), or the
    guardian would not see the end of its input while the child lived, not even when workbench
    died; the child does not run samples of its parent's, nor stop its parent's guardian."""
    for guardian in list(_ALL):
        guardian._lock = threading.Lock()  # another thread of the parent may have held it at the fork
        if guardian._write is not None:
            with contextlib.suppress(OSError):
                os.close(guardian._write)
        guardian._write, guardian._proc = None, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_forked_child)


def _serve() -> None:  # pragma: no cover - runs in the guardian process (tested end to end)
    import importlib.util
    import signal

    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGPIPE):
        signal.signal(number, signal.SIG_IGN)
    found = importlib.util.spec_from_file_location(
        "workbench_guardian_processes", os.path.join(os.path.dirname(os.path.abspath(__file__)), "processes.py"))
    processes = importlib.util.module_from_spec(found)
    found.loader.exec_module(processes)

    running: dict[int, tuple[int | None, str]] = {}
    for raw in sys.stdin.buffer:
        parts = raw.decode("utf-8", "replace").split()
        if len(parts) == 4 and parts[0] == "+" and parts[1].isdigit():
            running[int(parts[1])] = (int(parts[2]) if parts[2].isdigit() else None, parts[3])
        elif len(parts) == 2 and parts[0] == "-" and parts[1].isdigit():
            running.pop(int(parts[1]), None)
    # end of input: workbench closed the pipe or is dead; nothing registered may run on
    for pgid in running:
        processes.kill_process_group(pgid)
    for uid, tag in running.values():
        with contextlib.suppress(Exception):
            if uid is not None and os.geteuid() == 0:
                processes.kill_all_of_uid(uid)
                processes.sweep(lambda uid=uid: processes.processes_of_uid(uid))
            processes.sweep(lambda tag=tag: processes.processes_with_env_tag(tag))


if __name__ == "__main__":
    _serve()
