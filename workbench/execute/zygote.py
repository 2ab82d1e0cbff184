"""Reusing an interpreter's start-up across samples: one pre-started "zygote" per worker.

Starting a sample the usual way (:meth:`~workbench.execute.sandbox.Sandbox.run`: a new
``bwrap``, ``setpriv``, the step shell, a new Python) cost about 19 ms of CPU a sample, most
of it the sandbox's set-up and the interpreter's start-up (issue 21). A runner whose program
is a Python script that may run in a pre-started interpreter (``RunSpec.python_main``) can
instead be served by a :class:`Zygote`: one bubblewrap sandbox per worker slot, started
once, holding that interpreter (same options, same environment), which forks each sample
into namespaces of its own (:mod:`workbench.execute.zygote_server` runs inside and says
how, step by step).

What each sample still gets of its own: a PID namespace (its init's death kills every
process it started: fork bombs, daemons), a mount namespace with a fresh size-limited
``/tmp`` (its working directory) and a fresh ``/proc`` that shows only its own processes,
an IPC namespace, its own session, the rlimits, the worker's unprivileged user id with no
capabilities and ``no_new_privs``, a rebuilt environment, and the token pipes of the
:class:`~workbench.languages.spec.RunSpec` protocol. Shared with the worker's earlier and
later samples (never with a running one: a worker runs one sample at a time, and the
previous one's namespace is empty before the next starts): the network namespace (empty:
loopback only), the UTS namespace, the read-only root file system and the interpreter's
state at fork time (the zygote imports only C modules and reads no token: the token stays
in its pipe, which only the sample's harness reads).

Only as root (the zygote needs ``CAP_SYS_ADMIN``, ``CAP_SETUID``/``CAP_SETGID`` and
``CAP_SETPCAP`` in the init user namespace to build each sample's namespaces and to drop to
the worker's user id; bubblewrap grants it those four, nothing else) and only at the
``bubblewrap`` level. Elsewhere, and where the zygote's own start-up probe fails, samples
take the per-sample path.

Example (as root, with bubblewrap; the Python runner's specs set ``python_main``)::

    from workbench.execute import Sandbox, new_token
    from workbench.languages.python_runner import PythonTestRunner
    sandbox, token = Sandbox(), new_token()
    spec = PythonTestRunner().prepare("def f():\n    return 1\n",
                                      "def check(c):\n    assert c() == 1\n", "f", token)
    sandbox.run(spec, token, 10.0, slot=0).status      # 'passed', forked by slot 0's zygote
    sandbox.reuses_interpreters                         # True (False: see reuse_unavailable)
    sandbox.release_workers()                           # the zygotes end with their sandboxes
"""

from __future__ import annotations

import array
import contextlib
import functools
import marshal
import os
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources

from workbench.execute.isolation import bubblewrap_argv

#: the capabilities the zygote keeps (bubblewrap drops every other one)
ZYGOTE_CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")

#: how long a zygote may take to start and pass its probe
_START_S = 30.0
#: how long after a sample's timeout the zygote's answer is waited for before the worker's
#: sandbox is torn down (the zygote kills the sample at the timeout itself)
_ANSWER_GRACE_S = 10.0


class ZygoteUnavailableError(RuntimeError):
    """The zygote could not be started here (its probe says why): use the per-sample path."""


class ZygoteLostError(RuntimeError):
    """The zygote stopped answering during a sample (its sandbox was torn down)."""


@dataclass(frozen=True)
class ZygoteAnswer:
    """How one sample ended, as the zygote saw it.

    Attributes:
        returncode: as ``Popen.returncode`` of a wrapper: the init's exit status (128 + N
            when the sample ended by signal N), or ``-N`` when the init was killed by N (the
            zygote kills it at the timeout).
        timed_out: the zygote killed the sample at its timeout.
        duration_s: seconds from the fork of the sample's init to its end.
        peak_rss_kib: the sample's peak resident memory in KiB (the largest ``ru_maxrss`` in
            its PID namespace that the zygote could see), or ``None`` (an older answer without it).
        sample_signal: the signal that ended the sample's own process, 0 when it exited by
            itself (then a ``returncode`` of 128 + N is its own exit status, not signal N), or
            ``None`` when unknown (killed at the timeout, an older answer).
        cpu_s: user and system CPU seconds of the sample's processes that were reaped (all of
            them unless killed at the timeout), or ``None`` (an older answer without it).
    """

    returncode: int
    timed_out: bool
    duration_s: float
    peak_rss_kib: int | None = None
    sample_signal: int | None = None
    cpu_s: float | None = None


@functools.cache
def server_source() -> str:
    """The text of :mod:`workbench.execute.zygote_server` (run with ``python -c``)."""
    return resources.files("workbench.execute").joinpath("zygote_server.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class ZygoteKey:
    """What a worker's zygote was started for; a sample with another key needs another one.

    Attributes:
        interpreter: the ``run`` argv before the script (interpreter and its options).
        env: the sample environment the interpreter starts with (sorted items).
        read_only_paths: the toolchain folders re-exposed read-only.
        tmpfs_bytes: the size of each sample's ``/tmp``.
        hidden_paths: the folders bubblewrap hides.
    """

    interpreter: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    read_only_paths: tuple[str, ...]
    tmpfs_bytes: int
    hidden_paths: tuple[str, ...]


class Zygote:
    """One worker slot's pre-started interpreter in a bubblewrap sandbox of its own.

    Args:
        key: the :class:`ZygoteKey` (interpreter, environment, paths, ``/tmp`` size).
        uid: the worker's user id the samples drop to.
        temp_root: where the zygote's own log goes.

    Raises:
        ZygoteUnavailableError: (:meth:`start`) bubblewrap or the zygote's probe failed.
    """

    def __init__(self, key: ZygoteKey, uid: int, temp_root: str | None = None):
        self.key = key
        self.uid = uid
        self.temp_root = temp_root
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self._init_pidfd: int | None = None
        self._log = None
        self._stopping = threading.Lock()  # close() on interrupt may race a worker's own stop

    # -- life cycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the sandbox and the interpreter, and wait for the probe's answer."""
        host_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        info_read, info_write = os.pipe()
        child_fd = _high(child_end.detach())
        info_fd = _high(info_write)
        settings = marshal.dumps({"uid": self.uid, "tmpfs_bytes": self.key.tmpfs_bytes,
                                  "keep": _folders_under_tmp(self.key.read_only_paths)}).hex()
        command = [*self.key.interpreter, "-c", server_source(), str(child_fd), settings]
        argv = bubblewrap_argv(
            command, uid=None, files=(), read_only_paths=self.key.read_only_paths, hidden_paths=self.key.hidden_paths,
            tmpfs_bytes=1 << 20, info_fd=info_fd, keep_capabilities=ZYGOTE_CAPABILITIES,
        )
        self._log = tempfile.TemporaryFile(dir=self.temp_root, prefix="workbench-zygote-")
        self._control = host_end
        try:
            self._proc = subprocess.Popen(
                argv, cwd="/", env=dict(self.key.env), stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                start_new_session=True, pass_fds=(child_fd, info_fd),
            )
        except (OSError, subprocess.SubprocessError) as error:
            self.stop()
            raise ZygoteUnavailableError(f"could not start bwrap: {error}") from error
        finally:
            os.close(child_fd)
            os.close(info_fd)
        try:
            self._init_pidfd = _init_pidfd(info_read)
        finally:
            os.close(info_read)
        answer = self._answer(_START_S)
        if answer != b"READY":
            why = answer.decode("utf-8", "replace")[5:] if answer.startswith(b"FAIL ") else self._log_tail()
            self.stop()
            raise ZygoteUnavailableError(why or "the zygote did not start")

    def alive(self) -> bool:
        """True while the zygote can take a request (its sandbox runs, its socket is open)."""
        proc, control = self._proc, self._control  # stop() from another thread may clear them
        if proc is None or control is None or proc.poll() is not None:
            return False
        try:
            poller = select.poll()
            poller.register(control, select.POLLIN | select.POLLRDHUP)
            return not poller.poll(0)  # nothing pending: an idle zygote says nothing
        except (OSError, ValueError):
            return False

    def stop(self) -> None:
        """Tear the worker's sandbox down: its PID namespace's init is killed, so every
        process in it (the zygote, a running sample) dies; returns once that init is gone."""
        with self._stopping:
            self._stop()

    def _stop(self) -> None:
        if self._init_pidfd is not None:
            _kill_and_wait(self._init_pidfd)
            os.close(self._init_pidfd)
            self._init_pidfd = None
        if self._control is not None:
            self._control.close()
            self._control = None
        if self._proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait()
            self._proc = None
        if self._log is not None:
            self._log.close()
            self._log = None

    # -- one sample ----------------------------------------------------------------------------
    def run(self, request: Mapping, fds: Mapping[str, int], timeout_s: float) -> ZygoteAnswer:
        """Have the zygote run one sample.

        Args:
            request: the body (``files``, ``script``, ``argv``, ``env``, ``rlimits``,
                ``uid``, ``tmpfs_bytes``, ``timeout_ms``, ``fds``: child fd -> one of the
                names below), ``marshal``-able.
            fds: ``token``, ``pass``, ``started``, ``stdout``, ``stderr`` -> fds of ours,
                handed over (the caller still closes its copies).
            timeout_s: the sample's timeout (the zygote enforces it).

        Raises:
            ZygoteLostError: no answer in time, or the zygote is gone (the worker's sandbox
                is then torn down: nothing of the sample runs on).
        """
        body = os.memfd_create("workbench-request", os.MFD_CLOEXEC)
        try:
            data = marshal.dumps(dict(request))
            view = memoryview(data)
            while view:
                view = view[os.write(body, view):]
            names = ("token", "pass", "started", "stdout", "stderr")
            handed = array.array("i", [body, *(fds[name] for name in names)])
            control = self._control
            try:
                if control is None:
                    raise OSError("the zygote was stopped")
                control.sendmsg([b"R"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, handed)])
            except OSError as error:
                self.stop()
                raise ZygoteLostError(f"the zygote is gone: {error}") from error
        finally:
            os.close(body)
        answer = self._answer(timeout_s + _ANSWER_GRACE_S)
        parts = answer.split()
        if len(parts) not in (3, 4, 5, 6) or not all(part.lstrip(b"-").isdigit() for part in parts):
            why = answer.decode("utf-8", "replace") or "no answer"
            self.stop()
            raise ZygoteLostError(f"the zygote did not answer ({why[:300]})")
        status, timed_out, micros = (int(part) for part in parts[:3])
        returncode = os.waitstatus_to_exitcode(status)
        peak = int(parts[3]) if len(parts) >= 4 else None
        sample_signal = int(parts[4]) if len(parts) >= 5 and int(parts[4]) >= 0 else None
        cpu_s = int(parts[5]) / 1e6 if len(parts) == 6 else None
        return ZygoteAnswer(returncode, bool(timed_out), micros / 1e6, peak, sample_signal, cpu_s)

    def _answer(self, timeout_s: float) -> bytes:
        """The zygote's next message, or ``b""`` when none came within ``timeout_s``."""
        control = self._control  # stop() from another thread (an interrupt) may clear it meanwhile
        if control is None:
            return b""
        try:
            poller = select.poll()
            poller.register(control, select.POLLIN)
            if not poller.poll(int(timeout_s * 1000)):
                return b""
            return control.recv(65536)
        except (OSError, ValueError):  # closed by stop(): the zygote is gone
            return b""

    def _log_tail(self) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0)
        lines = self._log.read().decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else ""


def _high(fd: int) -> int:
    import fcntl

    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 20)
    os.close(fd)
    return moved


def _init_pidfd(info_read: int) -> int | None:
    """A pidfd of the worker sandbox's init, whose host pid ``bwrap --info-fd`` names (its
    first JSON object, written before the zygote runs), checked to be in the PID namespace
    bubblewrap named; ``None`` when that cannot be shown (the sandbox is then torn down
    through bwrap alone)."""
    import json

    poller = select.poll()
    poller.register(info_read, select.POLLIN)
    data = b""
    deadline = time.monotonic() + _START_S
    while time.monotonic() < deadline and poller.poll(max(0, int((deadline - time.monotonic()) * 1000))):
        chunk = os.read(info_read, 4096)
        if not chunk:
            return None
        data += chunk
        try:
            facts, _ = json.JSONDecoder().raw_decode(data.decode("utf-8", "replace").lstrip())
            pid, namespace = int(facts["child-pid"]), int(facts["pid-namespace"])
        except (ValueError, KeyError, TypeError):
            continue
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return None
        try:
            if os.stat(f"/proc/{pid}/ns/pid").st_ino == namespace:
                return pidfd
        except OSError:
            pass
        os.close(pidfd)
        return None
    return None


def _kill_and_wait(pidfd: int, timeout_s: float = 10.0) -> None:
    """SIGKILL the process of ``pidfd`` (a sandbox's init) and wait until it exited, which
    the kernel allows only once every other process of its PID namespace is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.poll(int(timeout_s * 1000))


def _folders_under_tmp(paths: tuple[str, ...]) -> list[str]:
    """The outermost real paths of ``paths`` that lie under ``/tmp``: each forked sample mounts
    its own ``/tmp``, and these are bound into it again (a venv or a clone in a temp folder)."""
    under = sorted({os.path.realpath(p) for p in paths if os.path.commonpath([os.path.realpath(p), "/tmp"]) == "/tmp"})
    outermost: list[str] = []
    for path in under:
        if path != "/tmp" and not any(path.startswith(kept + "/") for kept in outermost):
            outermost.append(path)
    return outermost
