"""Run one :class:`~workbench.languages.spec.RunSpec` in isolation and classify the result.

Per sample: a fresh working directory (bubblewrap's private tmpfs, or a host temporary
folder removed afterwards), stdin closed, a scrubbed environment, rlimits, its own
process group and session, the pass-token pipes of the runner protocol, a wall-clock
timeout after which the whole process tree is killed, and the certainty that nothing of the
sample still runs when :meth:`Sandbox.run` returns: its PID namespace is known to have ended,
or a sweep kills whatever it left running (and, as root below bubblewrap, the files its user
id left in the host's shared temporary folders are removed).

Under bubblewrap as root, a spec with ``RunSpec.python_main`` is forked by its worker's
pre-started interpreter instead (:mod:`workbench.execute.zygote`), with the same protocol
fds, limits, environment and status rules.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import resource
import secrets
import select
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from workbench.execute.guardian import Guardian
from workbench.execute.isolation import (
    SANDBOX_WORKDIR,
    UID_BLOCK_SIZE,
    Isolation,
    IsolationLevel,
    SandboxUnavailableError,
    UidBlock,
    default_hidden_paths,
    detect_isolation,
    plan_launch,
)
from workbench.execute.limits import ResourceLimits, oom_guard_bytes, soft_and_hard, ulimit_commands
from workbench.execute.processes import (
    kill_all_of_uid,
    kill_process_group,
    largest_high_water_kib,
    processes_of_uid,
    processes_with_env_tag,
    reap_with_usage,
    sweep,
)
from workbench.execute.status import STDERR_SCAN_BYTES, Observation, SampleOutcome, decide_status
from workbench.execute.zygote import Zygote, ZygoteKey, ZygoteLostError, ZygoteUnavailableError
from workbench.languages.spec import RunSpec

#: the environment every sample starts from (nothing of the parent's is passed on)
BASE_ENV: Mapping[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
}

#: name of the per-run environment tag used to find a sample's stray processes
RUN_TAG_VARIABLE = "WORKBENCH_SANDBOX_RUN"

#: parent-side fds handed to the child are moved at or above this number; the step script
#: moves them to the runner's numbers (3..9), which never clobbers one of them
_HIGH_FD = 20

#: the step script needs bash: POSIX sh cannot name fds above 9
BASH = shutil.which("bash") or "/bin/bash"

#: how much of stderr is read back
_TAIL_BYTES = 8192

#: world-writable folders of the host that a sample below bubblewrap can write into
SHARED_TEMP_FOLDERS: tuple[str, ...] = ("/tmp", "/var/tmp", "/dev/shm")

def _larger(*values: int | None) -> int | None:
    known = [value for value in values if value is not None]
    return max(known) if known else None


#: where :func:`peak_meter` looks for GNU time
METER_PATH = "/usr/local/bin:/usr/bin:/bin"


@functools.cache
def peak_meter() -> str | None:
    """The path of GNU ``time``, which the per-sample path runs the sample's step script under
    (inside bubblewrap, as its first command; around the wrapper at the other levels) to learn
    the sample's peak resident memory, or ``None`` when this machine has none in :data:`METER_PATH`
    (Debian package ``time``).

    Why a meter: ``ru_maxrss`` of a process started from this one includes this process's own
    memory (a fork copies it, a vfork shares it, and ``exec`` keeps the larger figure), so
    ``wait4`` on the wrapper would report at least workbench's own size. GNU time's child starts
    from GNU time's few pages instead, and GNU time reports that child's ``ru_maxrss`` (``%M``,
    KiB). Without it the wrapper's own figure is used where it exceeds this process's size. Its
    ``%x`` (the child's exit status, 0 when a signal ended it) tells a sample that exited with
    128 + N itself from one that signal N ended: GNU time exits with 128 + N for both.
    """
    # the system's, not the first on this PATH: a user's own (a conda env's, under /root or /home) is
    # hidden under bubblewrap and out of reach of a sample's user id as root, and would fail every sample
    found = shutil.which("time", path=METER_PATH)
    if found is None:
        return None
    try:  # exactly as samples use it: a time without --quiet (GNU time 1.7) or --format would fail each one
        said = subprocess.run([found, *METER_OPTIONS, "true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return found if said.returncode == 0 and _meter_report(said.stderr)[0] is not None else None


#: GNU time's options: its report is one line, ``"<peak KiB> <exit status> <user CPU s> <system CPU s>"``
#: (``%M %x %U %S``)
METER_OPTIONS = ("--quiet", "--format", "%M %x %U %S")


def _meter_report(said: bytes) -> tuple[int | None, int | None, float | None, bytes]:
    """``(peak KiB, exit status, CPU seconds, everything else)`` of what GNU time's stderr got: its
    ``%M %x %U %S`` line comes last (the exit status is the child's, 0 when a signal ended it; the
    CPU seconds are user + system of the child and what it reaped); the lines before it are the
    wrappers' own messages (a ``bwrap`` that could not set up)."""
    lines = said.rstrip(b"\n").split(b"\n")
    fields = lines[-1].split() if lines else []
    if (len(fields) == 4 and all(field.isdigit() for field in fields[:2])
            and all(field.replace(b".", b"", 1).isdigit() for field in fields[2:])):
        rest = b"\n".join(lines[:-1])
        return (int(fields[0]), int(fields[1]), float(fields[2]) + float(fields[3]),
                rest + b"\n" if rest else b"")
    return None, None, None, said


#: GNU time's options as the ``namespaces`` level's init (:func:`~workbench.execute.isolation.namespaces_argv`):
#: its report is one line, ``"<exit status>"`` (``%x``: the child's, 0 when a signal ended it)
INIT_METER_OPTIONS = ("--quiet", "--format", "%x")


def _init_report(said: bytes) -> tuple[int | None, bytes]:
    """``(exit status, everything else)`` of what the ``namespaces`` level's init (GNU time with
    :data:`INIT_METER_OPTIONS`) left before the outer meter's line: its last line that is a lone
    number (``None`` without one). The init runs in the sample's namespaces, so a sample can write
    there too; what it can change is only its own ``killed`` against ``failed`` (it is not the
    init, so it can end itself by any signal or exit with any status anyway), never the peak
    (the outer meter's, out of its sight) nor ``passed``."""
    lines = said.rstrip(b"\n").split(b"\n") if said else []
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip().isdigit():
            rest = b"\n".join(lines[:index] + lines[index + 1:])
            return int(lines[index].strip()), rest + b"\n" if rest else b""
    return None, said


def _cpu_limits_s(limits: ResourceLimits, timeout_s: float) -> dict[str, float | None]:
    """The run's soft and hard ``RLIMIT_CPU`` in seconds as :class:`Observation` fields
    (``cpu_limit_s``, ``cpu_hard_limit_s``): :meth:`ResourceLimits.rlimits` through
    :func:`soft_and_hard` (at most this process's hard limit, which the sample inherits; the hard
    one a second above the soft one); both ``None`` without a CPU limit."""
    cpu = [(soft, hard) for kind, soft, hard in soft_and_hard(limits.rlimits(timeout_s)) if kind == resource.RLIMIT_CPU]
    soft, hard = (float(cpu[0][0]), float(cpu[0][1])) if cpu else (None, None)
    return {"cpu_limit_s": soft, "cpu_hard_limit_s": hard}


def _stop_zygotes(zygotes: dict[int, Zygote]) -> None:
    while zygotes:
        _slot, zygote = zygotes.popitem()
        zygote.stop()


def new_token() -> str:
    """Return a fresh per-run token (128 random bits, hex)."""
    return secrets.token_hex(16)


def _high(fd: int) -> int:
    """Move ``fd`` to a number >= :data:`_HIGH_FD` (close-on-exec) and return it."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, _HIGH_FD)
    os.close(fd)
    return moved


def step_script(
    spec: RunSpec,
    status_fd: int | None,
    file_token_fd: int | None = None,
    fd_moves: Mapping[int, int] | None = None,
    started_fd: int | None = None,
    limit_lines: Iterable[str] = (),
    built_fd: int | None = None,
    run_limit_lines: Iterable[str] = (),
    stderr_fd: int | None = None,
) -> str:
    """Return the ``bash`` script that places the protocol fds, sets the resource limits,
    runs the build commands, then the run command.

    ``fd_moves`` (child fd number -> inherited fd number, >= 20) are applied first: the
    pipes arrive at high numbers (so that nothing of the parent's is clobbered) and are
    moved to the runner's numbers here. Then ``limit_lines``
    (:func:`~workbench.execute.limits.ulimit_commands`) set the rlimits every process of
    the sample inherits. Then one byte is written to ``started_fd`` (an
    inherited high fd), which is closed at once: a run whose byte never arrived failed in
    the sandbox's own set-up (``bwrap``, ``unshare``, ``setpriv``, the limits), before any
    candidate code, and no candidate can take that byte back. Build commands run with the token fds
    closed; the first failing one writes ``"<index> <status>"`` to ``status_fd`` and the script exits
    0. When they all succeeded, one byte goes to ``built_fd`` (an inherited high fd, closed at
    once): the run's own timeout starts there. Then ``run_limit_lines`` lower the limits that
    were set for the build (its CPU time) to the run's. The status fd is closed before the run
    command, so the candidate cannot fake a compile error report. With a ``pass_token_file``, the script copies that file to
    ``file_token_fd`` after the run (the working directory may be a tmpfs that vanishes
    with the sandbox); otherwise the run command replaces the shell (``exec``). With ``stderr_fd``
    (an inherited high fd), stderr is moved there first: the script's own stderr was the memory
    meter's report pipe (:func:`peak_meter`), which nothing of the sample may hold.
    """
    lines = ["set -u"]
    if stderr_fd is not None:
        lines.insert(0, f"exec 2>&{stderr_fd} {stderr_fd}>&-")
    for target, source in sorted((fd_moves or {}).items()):
        lines.append(f"exec {target}<&{source} {source}<&-")
    lines.extend(limit_lines)
    if started_fd is not None:
        lines.append(f"printf . >&{started_fd}; exec {started_fd}>&-")
    closers = " ".join(
        f"{fd}<&-" for fd in (spec.token_input_fd, spec.pass_token_fd, file_token_fd, built_fd) if fd is not None
    )
    for index, command in enumerate(spec.build):
        lines.append(f"{shlex.join(command)} {closers} </dev/null")
        lines.append(f'rc=$?; if [ "$rc" -ne 0 ]; then echo "{index} $rc" >&{status_fd}; exit 0; fi')
    if built_fd is not None:
        lines.append(f"printf . >&{built_fd}; exec {built_fd}>&-")
    lines.extend(run_limit_lines)
    if status_fd is not None:
        lines.append(f"exec {status_fd}>&-")
    if file_token_fd is None:
        lines.append(f"exec {shlex.join(spec.run)}")
    else:
        lines.append(f"{shlex.join(spec.run)} {file_token_fd}>&-")
        lines.append("rc=$?")
        lines.append(f"cat -- {shlex.quote(spec.pass_token_file)} >&{file_token_fd} 2>/dev/null")
        lines.append('exit "$rc"')
    return "\n".join(lines) + "\n"


def _sample_environment(spec: RunSpec, workdir: str, temp_dir: str, run_tag: str) -> dict[str, str]:
    """The sample's whole environment: :data:`BASE_ENV`, its folders, the runner's ``env``
    and the run's tag (``NAME=value``, last so that no runner can drop it)."""
    env = dict(BASE_ENV)
    env.update({"HOME": workdir, "TMPDIR": temp_dir, "PWD": workdir})
    env.update(spec.env)
    name, _, value = run_tag.partition("=")
    env[name] = value
    return env


def _memfd_with(text: str) -> int:
    """Return a high, close-on-exec memory file holding ``text``, positioned at its start."""
    fd = _high(os.memfd_create("workbench-file", os.MFD_CLOEXEC))
    os.write(fd, text.encode("utf-8", errors="surrogateescape"))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _free_fd(used: Iterable[int | None]) -> int:
    taken = {fd for fd in used if fd is not None}
    return next(fd for fd in range(3, 10) if fd not in taken)


def _read_available(fd: int, limit: int = 65536) -> bytes:
    os.set_blocking(fd, False)
    chunks, total = [], 0
    while total < limit:
        try:
            chunk = os.read(fd, limit - total)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _tail(handle, limit_chars: int) -> str:
    handle.flush()
    size = handle.seek(0, os.SEEK_END)
    handle.seek(max(0, size - _TAIL_BYTES))
    text = handle.read().decode("utf-8", errors="replace")
    return text[-limit_chars:]


def _scan(handle) -> str:
    """What the judge reads of stderr (:attr:`~workbench.execute.status.Observation.stderr_scan`):
    its first and last :data:`~workbench.execute.status.STDERR_SCAN_BYTES`, all of it when shorter."""
    handle.flush()
    size = handle.seek(0, os.SEEK_END)
    handle.seek(0)
    if size <= 2 * STDERR_SCAN_BYTES:
        return handle.read().decode("utf-8", errors="replace")
    head = handle.read(STDERR_SCAN_BYTES)
    handle.seek(size - STDERR_SCAN_BYTES)
    tail = handle.read()
    return (head.decode("utf-8", errors="replace") + "\n[...]\n" + tail.decode("utf-8", errors="replace"))


def _wait_without_reaping(pid: int, timeout_s: float, built_read: int | None = None) -> str:
    """Wait until child ``pid`` exits, leaving it unreaped (a zombie keeps its pid and
    process-group id reserved), or, with ``built_read``, until the step script reports its
    build done (a byte there), or until ``timeout_s`` passes.

    Uses a pidfd (Linux >= 5.3): no polling delay, no race with pid reuse; on an older
    kernel it polls ``waitid(WNOWAIT)``.

    Returns:
        ``"built"`` (the byte arrived on ``built_read``, even if the child has exited since),
        ``"exited"`` (the child exited, without that byte) or ``"timeout"``.
    """
    deadline = time.monotonic() + timeout_s
    try:
        pidfd: int | None = os.pidfd_open(pid)
    except (AttributeError, OSError):  # old kernel: fall back to waitid(WNOWAIT) polling
        pidfd = None
    poller = select.poll()
    for fd in (pidfd, built_read):
        if fd is not None:
            poller.register(fd, select.POLLIN)
    delay = 0.001
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return "timeout"
            wait_s = remaining if pidfd is not None else min(remaining, delay)
            delay = min(delay * 2, 0.02)
            events = dict(poller.poll(max(1, int(wait_s * 1000))))
            if built_read is not None and built_read in events:
                if _read_available(built_read, limit=1):
                    return "built"
                poller.unregister(built_read)  # closed without the byte: only the exit is left to see
                built_read = None
            exited = (pidfd in events if pidfd is not None
                      else os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None)
            if exited:
                return "built" if built_read is not None and _read_available(built_read, limit=1) else "exited"
    finally:
        if pidfd is not None:
            os.close(pidfd)


#: how long the end of a bubblewrap PID namespace is waited for (its init was killed already)
_NAMESPACE_END_S = 10.0


def _wait_for_namespace_end(info: bytes, timeout_s: float, *, kill_first: bool = False) -> bool:
    """Wait until the PID namespace that ``bwrap --info-fd`` described in ``info`` is empty:
    until its first process (``child-pid``) has exited, which the kernel lets happen only
    after every other process of the namespace is gone.

    The pid is pinned with a pidfd and checked to still belong to that namespace
    (``pid-namespace``, the inode of ``/proc/PID/ns/pid``): a pid that is gone or now names
    another process means the init exited long ago, and so did its namespace. Only the first
    JSON object is read (bwrap writes it before any sample code runs; bytes appended after it
    change nothing). With ``kill_first``, that process is sent ``SIGKILL`` first (once shown to
    be it): the namespace then ends at once, whether or not the process would have died with
    ``bwrap``.

    Returns:
        True when the namespace is known to be empty; False when that could not be
        established within ``timeout_s`` seconds or ``info`` is unusable (the caller sweeps).
    """
    try:
        facts, _ = json.JSONDecoder().raw_decode(info.decode("utf-8", errors="replace").lstrip())
        pid, namespace = int(facts["child-pid"]), int(facts["pid-namespace"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return False
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True  # the init was reaped: its namespace ended before that
    except (AttributeError, OSError):
        return False
    try:
        try:
            if os.stat(f"/proc/{pid}/ns/pid").st_ino != namespace:
                return True  # the pid was reused: our init is long gone
        except FileNotFoundError:
            return True  # exited and reaped between the pidfd and the check
        except OSError:
            return False
        if kill_first:
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(int(timeout_s * 1000)))
    finally:
        os.close(pidfd)


def _usable_by_others(path: str, *, check_parents: bool) -> bool:
    """True when a user who is neither owner nor in the group can read ``path`` (and
    traverse its parents, when ``check_parents``)."""
    import stat

    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return False
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) or mode & stat.S_IXUSR else 0)
    if mode & need != need:
        return False
    if check_parents:
        parent = os.path.dirname(real)
        while parent != "/":
            try:
                if not os.stat(parent).st_mode & stat.S_IXOTH:
                    return False
            except OSError:
                return False
            parent = os.path.dirname(parent)
    return True


class Sandbox:
    """Runs :class:`RunSpec` s under the strongest isolation available. Thread-safe:
    one ``Sandbox`` serves all worker threads, each passing its own ``slot``.

    Args:
        isolation: from :func:`~workbench.execute.isolation.detect_isolation`
            (detected when ``None``).
        limits: the :class:`ResourceLimits` (a runner's ``limit_overrides`` apply on top).
        hidden_paths: folders hidden under bubblewrap (default: home, cwd, /tmp, /run ...).
        temp_root: where host working directories go for the levels below bubblewrap.
        stderr_tail_chars: how much of stderr a result keeps.
        reuse_interpreters: serve specs with ``python_main`` from one pre-started
            interpreter per worker slot (:mod:`workbench.execute.zygote`), where it applies
            (``bubblewrap`` as root); ``False``: every sample starts its own sandbox and
            interpreter.
    """

    def __init__(
        self,
        isolation: Isolation | None = None,
        limits: ResourceLimits | None = None,
        *,
        hidden_paths: Iterable[str] | None = None,
        temp_root: str | None = None,
        stderr_tail_chars: int = 1000,
        reuse_interpreters: bool = True,
    ):
        self.isolation = isolation or detect_isolation()
        self.limits = limits or ResourceLimits()
        self.hidden_paths = list(hidden_paths) if hidden_paths is not None else None
        self.temp_root = temp_root
        self.stderr_tail_chars = stderr_tail_chars
        self._lock = threading.Lock()
        self._running: dict[int, subprocess.Popen] = {}
        self._closed = False
        self._uids = UidBlock() if self.isolation.user_per_slot else None
        self._samples_root: str | None = None
        self.reuse_interpreters = reuse_interpreters
        #: why interpreters are not reused here (the zygote's probe failed), else None
        self.reuse_unavailable: str | None = None
        self._zygotes: dict[int, Zygote] = {}
        #: kills the running samples if this process dies (levels below bubblewrap, which has
        #: --die-with-parent): started on the first such sample, see :mod:`~workbench.execute.guardian`
        #: it holds the uid block's lock too, so the block stays taken until it killed what ran under it
        self._guardian = Guardian(hold=(self._uids.fileno(),) if self._uids is not None else ())
        weakref.finalize(self, self._guardian.stop)
        #: what the kernel's OOM killer guards here (:func:`~workbench.execute.limits.oom_guard_bytes`)
        self.memory_ceiling_bytes = oom_guard_bytes()
        weakref.finalize(self, _stop_zygotes, self._zygotes)

    def _host_temp_root(self) -> str:
        """The folder that holds host working directories (levels below bubblewrap).

        As root, samples run under other user ids, so the folder and its parents must be
        traversable by others (on some machines ``/tmp`` is 0700): the first usable of
        ``temp_root``, the system temp folder, ``/var/tmp`` and ``/dev/shm`` gets a 0711
        sub-folder (traversable, not listable) for this sandbox.
        """
        if self._uids is None:
            return self.temp_root or tempfile.gettempdir()
        if self._samples_root is None:
            candidates = [c for c in (self.temp_root, tempfile.gettempdir(), "/var/tmp", "/dev/shm") if c]
            usable = [c for c in candidates if os.path.isdir(c) and _usable_by_others(c, check_parents=True)]
            if not usable:
                raise SandboxUnavailableError(
                    f"no temporary folder that the sandbox user can reach (tried {', '.join(candidates)}); "
                    f"pass temp_root= a folder with o+x on it and its parents"
                )
            root = tempfile.mkdtemp(prefix="workbench-sandbox-", dir=usable[0])
            os.chmod(root, 0o711)
            weakref.finalize(self, shutil.rmtree, root, True)
            self._samples_root = root
        return self._samples_root

    @property
    def max_slots(self) -> int | None:
        """The most worker slots this sandbox can serve at once: as root, one per user id of
        its :class:`UidBlock` (:data:`~workbench.execute.isolation.UID_BLOCK_SIZE`);
        ``None`` (no limit) otherwise."""
        return UID_BLOCK_SIZE if self._uids is not None else None

    def uid_for_slot(self, slot: int) -> int | None:
        """Return the user id worker ``slot`` runs samples as (root mode), else ``None``."""
        return self._uids.uid(slot) if self._uids is not None else None

    def inaccessible_paths(self, spec: RunSpec) -> list[str]:
        """Return the toolchain paths of ``spec`` (its ``read_only_paths`` and the absolute
        executables of its run and build commands) the sample's user id cannot use.

        As root, samples run under a user id of their own; an interpreter under
        ``/root`` (pyenv, a venv) is then out of its reach: below bubblewrap because a
        parent folder is private, under bubblewrap only if the folder itself is.
        """
        if self._uids is None:
            return []
        bubblewrap = self.isolation.level is IsolationLevel.BUBBLEWRAP
        paths = list(spec.read_only_paths)
        paths += [command[0] for command in (spec.run, *spec.build) if command and os.path.isabs(command[0])]
        return [p for p in paths if not _usable_by_others(p, check_parents=not bubblewrap)]

    # -- public ------------------------------------------------------------------------------
    def run(self, spec: RunSpec, token: str, timeout_s: float, *, slot: int = 0) -> SampleOutcome:
        """Run ``spec`` once and return its :class:`SampleOutcome`. Never raises for
        anything the sample does (:func:`~workbench.execute.status.decide_status` decides
        the status); raises ``ValueError`` for a bad ``timeout_s`` and
        ``SandboxUnavailableError`` once :meth:`close` was called. (A malformed ``spec``
        cannot reach here: :class:`RunSpec` validates itself when built.)

        Args:
            spec: from a runner's ``prepare``.
            token: the token given to ``prepare`` (from :func:`new_token`).
            timeout_s: wall-clock seconds for the run, from the end of the build commands
                (which have their own limit, ``spec.build_timeout_s``).
            slot: the worker slot (0 .. workers-1); selects the user id when root.
        """
        if not isinstance(spec, RunSpec):
            raise TypeError(f"spec must be a RunSpec, not {type(spec).__name__}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, not {timeout_s}")
        if self._closed:
            # not an outcome: a verdict here would be recorded for a sample that never ran
            raise SandboxUnavailableError(
                "this Sandbox was closed (the run it served was interrupted); create a new Sandbox"
            )
        limits = self.limits.with_overrides(spec.limit_overrides)
        with _RunResources() as res:
            return self._run(spec, token, timeout_s, slot, limits, res)

    def close(self) -> None:
        """Kill every running sample (on interrupt) and refuse new ones (:meth:`run` then
        raises). Only unreaped leaders are in the running set, so no reused pid is ever
        signalled; a worker's zygote is torn down with its whole sandbox."""
        self._closed = True
        with self._lock:
            running = list(self._running)
        for pid in running:
            kill_process_group(pid)
        self._guardian.close()  # a sample started just before (and killed above) starts no new one
        self.release_workers()

    def release_workers(self) -> None:
        """Stop the workers' pre-started interpreters (:mod:`~workbench.execute.zygote`), if
        any, and the guardian that would kill running samples if this process died; a later
        sample starts them again. Call it when a run is over."""
        _stop_zygotes(self._zygotes)
        self._guardian.stop()

    @property
    def reuses_interpreters(self) -> bool:
        """True when samples with ``RunSpec.python_main`` are served by a per-worker zygote:
        asked for, at the ``bubblewrap`` level, as root, and the zygote's probe passed."""
        return (self.reuse_interpreters and self.isolation.level is IsolationLevel.BUBBLEWRAP
                and self._uids is not None and self.reuse_unavailable is None)

    # -- internals ---------------------------------------------------------------------------
    def _run(self, spec, token, timeout_s, slot, limits, res: _RunResources) -> SampleOutcome:
        if spec.python_main is not None and self.reuses_interpreters:
            zygote = self._zygote_for(slot, spec, limits)
            if zygote is not None:
                return self._run_forked(zygote, spec, token, timeout_s, slot, limits, res)
        bubblewrap = self.isolation.level is IsolationLevel.BUBBLEWRAP
        uid = self.uid_for_slot(slot)
        pipes = _ProtocolPipes.open(spec, token, res)
        child_fds = pipes.child_fds

        file_fds: list[tuple[int, str]] = []
        host_workdir = None
        if bubblewrap:  # bubblewrap copies each file from an fd into its private tmpfs
            file_fds = [(res.keep(_memfd_with(text)), name) for name, text in spec.files.items()]
        else:
            host_workdir = res.make_workdir(self._host_temp_root(), spec.files, uid)
        info_read = info_fd = None
        if bubblewrap:  # where bwrap says which host pid its PID namespace's first process has
            read_end, write_end = os.pipe()
            info_read, info_fd = res.keep(read_end), res.keep(_high(write_end))

        extra = 0
        if uid is None and limits.processes is not None:
            extra = len(processes_of_uid(os.getuid()))  # NPROC counts the whole user id
        # the build has a limit of its own: its CPU rlimit is the build's, lowered to the run's after it
        build_s = spec.build_timeout_s if spec.build else 0.0
        limit_lines = ulimit_commands(limits.rlimits(max(timeout_s, build_s), extra_processes=extra))
        run_limit_lines: list[str] = []
        if spec.build:
            run_cpu = [pair for pair in limits.rlimits(timeout_s) if pair[0] == resource.RLIMIT_CPU]
            run_limit_lines = ulimit_commands(run_cpu)[1:]  # without its "set +o posix", set already
        read_end, write_end = os.pipe()
        started_read = res.keep(read_end)
        started_fd = res.keep(_high(write_end))
        built_read = built_fd = None
        if spec.build:  # the step script's "build done" byte: the run's timeout starts there
            read_end, write_end = os.pipe()
            built_read, built_fd = res.keep(read_end), res.keep(_high(write_end))
        stderr = res.log_file(self.temp_root)
        meter = peak_meter()
        meter_argv = [meter, *METER_OPTIONS] if meter is not None else []
        # at namespaces GNU time is also the namespace's init, so that the sample's death by SIGKILL
        # reaches us as 137 (unshare makes it 1) and %x tells that from an exit with 137
        namespaces = self.isolation.level is IsolationLevel.NAMESPACES
        init_argv = [meter, *INIT_METER_OPTIONS] if meter is not None and namespaces else []
        report_read = report_write = log_fd = None
        if meter is not None:  # GNU time reports the peak on what it takes for stderr; the script moves off it
            read_end, write_end = os.pipe()
            report_read, report_write = res.keep(read_end), res.keep(_high(write_end))
            log_fd = res.keep(_high(os.dup(stderr.fileno())))
        script = step_script(spec, pipes.status_fd, pipes.file_token_fd, child_fds, started_fd, limit_lines,
                             built_fd, run_limit_lines, stderr_fd=log_fd)
        plan = plan_launch(
            self.isolation,
            [BASH, "--noprofile", "--norc", "-c", script],
            uid=uid,
            host_workdir=host_workdir,
            files=file_fds,
            read_only_paths=spec.read_only_paths,
            hidden_paths=self.hidden_paths,
            tmpfs_bytes=limits.tmpfs_bytes,
            info_fd=info_fd,
            # GNU time runs inside bubblewrap, as root before setpriv, below bwrap's init: the init dies
            # with bwrap (--die-with-parent) and bwrap with this process, so a killed workbench leaves no
            # sample running. Outside, as bwrap's parent, it would keep bwrap alive; and a namespace's
            # first process that setpriv gave the sample's user id cannot get a parent-death signal
            # from bwrap (which holds no capability to signal another user id).
            meter=meter_argv,
            init=init_argv,
        )
        run_tag = f"{RUN_TAG_VARIABLE}={secrets.token_hex(8)}"
        env = _sample_environment(spec, plan.workdir, "/tmp" if bubblewrap else plan.workdir, run_tag)
        stdout = res.output_sink()  # never read: a solution that prints 70 MiB still passes
        own_ends = [started_fd] + [fd for fd in (info_fd, built_fd, report_write, log_fd) if fd is not None]
        # GNU time's report pipe reaches the child as its stderr (fd 2, which the step script moves off)
        # and nowhere else: kept at its high number too, it stayed open in the sample, whose digits
        # written there prefixed GNU time's line and forged its peak memory (and an `oom` status)
        pass_fds = sorted((set(child_fds.values()) | {fd for fd, _ in file_fds} | set(own_ends)) - {report_write})
        start = time.monotonic()
        try:
            with self._lock:
                if self._closed:  # close() ran since run() checked: it kills only what it found running
                    raise SandboxUnavailableError(
                        "this Sandbox was closed (the run it served was interrupted); create a new Sandbox")
                proc = subprocess.Popen(
                    plan.argv if bubblewrap else [*meter_argv, *plan.argv],
                    cwd=plan.cwd,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=stdout,
                    stderr=report_write if meter else stderr,
                    start_new_session=True,
                    pass_fds=pass_fds,
                    user=plan.user,
                    group=plan.user,
                    extra_groups=[] if plan.user is not None else None,
                )
                self._running[proc.pid] = proc
            if not bubblewrap:  # bwrap --die-with-parent ends a sample with us; below it, the guardian does
                self._guardian.watch(proc.pid, uid, run_tag)
            # a child forked from this process starts with our memory, and ru_maxrss keeps that
            own_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        except (OSError, subprocess.SubprocessError) as error:
            failed = f"could not start the sandbox ({plan.argv[0]}): {error}"
            return decide_status(spec, token, Observation(-1, 0.0, timeout_s, launch_error=failed))
        res.close_child_ends(child_fds.values(), [fd for fd, _ in file_fds], own_ends)
        timed_out = True  # until the wait says otherwise (an interrupt kills the run)
        build_timed_out, build_duration = False, None
        live_peak = None
        try:
            run_start = start
            phase = "built"
            if built_read is not None:
                phase = _wait_without_reaping(proc.pid, spec.build_timeout_s, built_read)
                run_start = time.monotonic()
                build_duration = run_start - start
                build_timed_out = phase == "timeout"
            if phase == "built":
                timed_out = _wait_without_reaping(proc.pid, timeout_s) == "timeout"
            else:  # the build failed (the status pipe says how) or ran out of its time
                timed_out = build_timed_out
            duration = time.monotonic() - run_start if phase == "built" else 0.0
            if timed_out:  # what is killed now is reaped by no one who reports its memory: read it live
                live_peak = largest_high_water_kib(
                    processes_of_uid(uid) if uid is not None else processes_with_env_tag(run_tag))
            # The leader is not reaped yet, so its pid (= the group id) cannot have been
            # reused: killing the group now can only hit this sample's processes.
            kill_process_group(proc.pid)
        finally:
            with self._lock:
                self._running.pop(proc.pid, None)
            returncode, reaped_peak = reap_with_usage(proc)
            if not self._tree_is_gone(returncode, timed_out, info_read):
                self._sweep(uid, run_tag)
            if not bubblewrap:
                self._guardian.release(proc.pid)
            if uid is not None and not bubblewrap:
                remove_files_of_uid(uid, (*SHARED_TEMP_FOLDERS, tempfile.gettempdir()))
        started = bool(_read_available(started_read, limit=1))
        if report_read is not None:
            peak, meter_exit, cpu_s, said = _meter_report(_read_available(report_read))
            if init_argv:  # the outer meter's child is unshare, which passes on its init's status: the init's %x
                meter_exit, said = _init_report(said) if meter_exit is not None else (None, said)
            # GNU time could not exec what it runs; the step script never started (a sample that wrote
            # such a line into the report through /proc, as the same user, and exited 127 did start)
            if returncode in (126, 127) and b": cannot run " in said and not started:
                why = said.decode(errors="replace").strip().splitlines()[-1].split(": cannot run ", 1)[1]
                failed = f"could not start the sandbox ({plan.argv[0]}): {why}"
                return decide_status(spec, token, Observation(-1, 0.0, timeout_s, launch_error=failed))
            if said:  # the wrappers' own messages (bwrap, setpriv, time): they belong to stderr
                stderr.seek(0, os.SEEK_END)
                stderr.write(said)
        else:  # our own memory is a floor on the wrapper's ru_maxrss: a figure at it says nothing
            peak = reaped_peak if reaped_peak is not None and reaped_peak > own_kib else None
            meter_exit = cpu_s = None
        # the wrappers (GNU time too) report a child killed by signal N as exit status 128 + N, and
        # so a child that exited with 128 + N itself; GNU time's %x tells them apart where its child is
        # the sample's process (the run command replaced the step shell: no pass_token_file)
        reports_signals = meter is not None or self.isolation.level in (IsolationLevel.BUBBLEWRAP,
                                                                        IsolationLevel.NAMESPACES)
        if meter_exit is not None and pipes.file_token_fd is None and returncode > 128 and meter_exit == returncode:
            reports_signals = False

        return self._judge(
            spec, token, pipes, started_read, stderr, started=started, returncode=returncode, duration_s=duration,
            timeout_s=timeout_s, timed_out=timed_out, build_failure=pipes.build_failure(),
            build_s=build_duration, build_timed_out=build_timed_out,
            peak_rss_kib=_larger(peak, live_peak), memory_limit_bytes=limits.address_space_bytes,
            memory_ceiling_bytes=self.memory_ceiling_bytes, **_cpu_limits_s(limits, timeout_s),
            cpu_s=cpu_s, wrapper_reports_signals=reports_signals, file_size_limit_bytes=limits.file_size_bytes,
            launcher=f"{self.isolation.level.value}, {os.path.basename(plan.argv[0])}",
        )

    def _zygote_for(self, slot: int, spec: RunSpec, limits: ResourceLimits) -> Zygote | None:
        """The running zygote of ``slot`` for ``spec``'s interpreter, started (again) when
        there is none, it ended, or it serves another interpreter; ``None`` when the zygote
        cannot run here (then :attr:`reuse_unavailable` says why, and every later sample
        takes the per-sample path)."""
        script = spec.run.index(spec.python_main, 1)
        env = _sample_environment(spec, SANDBOX_WORKDIR, "/tmp", f"{RUN_TAG_VARIABLE}=zygote")
        hidden = self.hidden_paths if self.hidden_paths is not None else default_hidden_paths()
        key = ZygoteKey(tuple(spec.run[:script]), tuple(sorted(env.items())), tuple(spec.read_only_paths),
                        limits.tmpfs_bytes, tuple(hidden))
        with self._lock:  # left in place while in use: close() must find it to kill its sample
            zygote = self._zygotes.get(slot)
        if zygote is not None and zygote.key == key and zygote.alive():
            return zygote
        if zygote is not None:
            with self._lock:
                if self._zygotes.get(slot) is zygote:
                    del self._zygotes[slot]
            zygote.stop()
        zygote = Zygote(key, self.uid_for_slot(slot), self.temp_root)
        try:
            zygote.start()
        except ZygoteUnavailableError as error:
            self.reuse_unavailable = str(error)
            return None
        with self._lock:
            if self._closed:
                zygote.stop()
                raise SandboxUnavailableError(
                    "this Sandbox was closed (the run it served was interrupted); create a new Sandbox"
                )
            self._zygotes[slot] = zygote
        return zygote

    def _run_forked(self, zygote: Zygote, spec, token, timeout_s, slot, limits, res: _RunResources) -> SampleOutcome:
        """Run ``spec`` in a process forked by the worker's zygote (see
        :mod:`workbench.execute.zygote`): same protocol fds, limits, environment and status
        rules as :meth:`_run`; the zygote answers once the sample's PID namespace is empty."""
        pipes = _ProtocolPipes.open(spec, token, res)
        read_end, write_end = os.pipe()
        started_read, started_write = res.keep(read_end), res.keep(_high(write_end))
        stdout = res.output_sink()  # never read: a solution that prints 70 MiB still passes
        stderr = res.log_file(self.temp_root)
        names = {spec.token_input_fd: "token", spec.pass_token_fd: "pass"}
        by_name = {names[target]: fd for target, fd in pipes.child_fds.items()}
        if "token" not in by_name:
            by_name["token"] = res.keep(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        fds = {**by_name, "started": started_write, "stdout": stdout.fileno(), "stderr": stderr.fileno()}
        run_tag = f"{RUN_TAG_VARIABLE}={secrets.token_hex(8)}"
        script = spec.run.index(spec.python_main, 1)
        request = {
            "files": list(spec.files.items()),
            "script": spec.python_main,
            "argv": list(spec.run[script:]),
            "env": _sample_environment(spec, SANDBOX_WORKDIR, "/tmp", run_tag),
            "rlimits": soft_and_hard(limits.rlimits(timeout_s)),
            "uid": self.uid_for_slot(slot),
            "tmpfs_bytes": limits.tmpfs_bytes,
            "timeout_ms": max(1, int(timeout_s * 1000)),
            "fds": {target: name for target, name in names.items() if target is not None},
        }
        start = time.monotonic()
        try:
            answer = zygote.run(request, fds, timeout_s)
            returncode, timed_out, duration = answer.returncode, answer.timed_out, answer.duration_s
            peak, sample_signal, cpu_s = answer.peak_rss_kib, answer.sample_signal, answer.cpu_s
        except ZygoteLostError as error:  # its sandbox was torn down: nothing of the sample runs
            duration, peak, sample_signal, cpu_s = time.monotonic() - start, None, None, None
            returncode, timed_out = -signal.SIGKILL, duration >= timeout_s
            stderr.write(f"\nworkbench: {error}\n".encode())
        finally:
            res.close_child_ends(pipes.child_fds.values(), [started_write])
        return self._judge(
            spec, token, pipes, started_read, stderr, returncode=returncode, duration_s=duration,
            timeout_s=timeout_s, timed_out=timed_out, peak_rss_kib=peak,
            memory_limit_bytes=limits.address_space_bytes, memory_ceiling_bytes=self.memory_ceiling_bytes,
            **_cpu_limits_s(limits, timeout_s), cpu_s=cpu_s, file_size_limit_bytes=limits.file_size_bytes,
            # the sample's init exits with 128 + N for signal N, and with the sample's own status,
            # 128 + N included, when it exited: the init's report (sample_signal 0) tells which
            wrapper_reports_signals=sample_signal != 0,
            launcher="bubblewrap, zygote",
        )

    def _judge(self, spec, token, pipes, started_read, stderr, *, build_failure=None, started=None,
               **seen) -> SampleOutcome:
        """Read what the sample left on its channels (start byte, pass token, stderr) and decide its
        status (:func:`decide_status`); ``seen`` holds the rest of the :class:`Observation`, and
        ``started`` whether the start byte arrived when the caller read it already."""
        observation = Observation(
            started=bool(_read_available(started_read, limit=1)) if started is None else started,
            delivered=_read_available(pipes.pass_read),
            build_failure=build_failure,
            stderr_tail=_tail(stderr, self.stderr_tail_chars),
            stderr_scan=_scan(stderr),
            stderr_bytes=stderr.seek(0, os.SEEK_END),
            **seen,
        )
        return decide_status(spec, token, observation)

    def _tree_is_gone(self, returncode: int, timed_out: bool, info_read: int | None) -> bool:
        """True when nothing the sample started can still run, so no sweep is needed.

        In a PID namespace (:attr:`Isolation.pid_namespace`) nothing outlives the namespace's
        first process: when it exits, the kernel kills every other process of the namespace
        and waits until they are all gone before that first process counts as exited
        (``zap_pid_ns_processes``, pid_namespaces(7)).

        - ``bubblewrap``: ``bwrap`` exits as soon as its init reports the command's exit,
          while the init may still be waiting for the sample's daemons (``--die-with-parent``
          then kills it). So the init itself is waited for: its host pid comes from
          ``--info-fd`` (``info_read``), and a pidfd turns readable once it exited, which is
          once its namespace is empty. This holds after a timeout too. The process is killed
          here first (:func:`_wait_for_namespace_end`'s ``kill_first``).
        - ``namespaces``: ``unshare --fork`` exits only after reaping its child, the
          namespace's first process, so a wrapper that exited by itself (status >= 0) left an
          empty namespace. One killed by us or by a signal gets the sweep.
        - ``rlimits``/``unsandboxed``: no namespace, always the sweep.
        """
        if self.isolation.level is IsolationLevel.BUBBLEWRAP:
            return info_read is not None and _wait_for_namespace_end(_read_available(info_read), _NAMESPACE_END_S,
                                                                     kill_first=True)
        return self.isolation.pid_namespace and not timed_out and returncode >= 0

    def _sweep(self, uid: int | None, run_tag: str) -> None:
        with self._lock:
            protect = frozenset(self._running)
        if uid is not None:
            kill_all_of_uid(uid)
            sweep(lambda: processes_of_uid(uid), protect=protect)
        sweep(lambda: processes_with_env_tag(run_tag), protect=protect)

@dataclass
class _ProtocolPipes:
    """The pipes of one run's token protocol (see :class:`RunSpec`), parent ends kept in
    the run's resources.

    Attributes:
        child_fds: child fd number -> the parent's fd (>= :data:`_HIGH_FD`) placed there.
        pass_read: where the pass token arrives.
        file_token_fd: with ``pass_token_file``: the child fd the step script copies the
            file to, else ``None``.
        status_fd, status_read: the child fd of the build report and its read end (only
            with build commands).
    """

    child_fds: dict[int, int]
    pass_read: int
    file_token_fd: int | None = None
    status_fd: int | None = None
    status_read: int | None = None

    @classmethod
    def open(cls, spec: RunSpec, token: str, res: _RunResources) -> _ProtocolPipes:
        child_fds: dict[int, int] = {}
        if spec.token_input_fd is not None:
            read_end, write_end = os.pipe()
            os.write(write_end, token.encode() + b"\n")
            os.close(write_end)
            child_fds[spec.token_input_fd] = res.keep(_high(read_end))
        file_token_fd = None
        target = spec.pass_token_fd
        if target is None:  # file protocol: the step script copies the file here
            target = file_token_fd = _free_fd([spec.token_input_fd])
        read_end, write_end = os.pipe()
        pipes = cls(child_fds, res.keep(read_end), file_token_fd)
        child_fds[target] = res.keep(_high(write_end))
        if spec.build:
            pipes.status_fd = _free_fd([spec.token_input_fd, spec.pass_token_fd, file_token_fd])
            read_end, write_end = os.pipe()
            pipes.status_read = res.keep(read_end)
            child_fds[pipes.status_fd] = res.keep(_high(write_end))
        return pipes

    def build_failure(self) -> tuple[int, str] | None:
        """After the run: ``(index, exit status)`` of the build command that failed, from the
        step script's ``"<index> <status>"`` report, or ``None``."""
        if self.status_read is None:
            return None
        report = _read_available(self.status_read).decode(errors="replace").split()
        if not report:
            return None
        return (int(report[0]) if report[0].isdigit() else 0), (report[1] if len(report) > 1 else "?")


class _RunResources:
    """fds, log files and a working directory of one run, all released on exit."""

    def __init__(self) -> None:
        self.fds: list[int] = []
        self.files: list = []
        self.workdir: str | None = None

    def __enter__(self) -> _RunResources:
        return self

    def keep(self, fd: int) -> int:
        self.fds.append(fd)
        return fd

    def close_child_ends(self, *groups: Iterable[int]) -> None:
        for group in groups:
            for fd in group:
                if fd in self.fds:
                    self.fds.remove(fd)
                    with contextlib.suppress(OSError):
                        os.close(fd)

    def output_sink(self):
        """Where a sample's standard output goes: ``/dev/null``. Nothing reads it, and a regular
        file would count against the sample's file-size limit (``--max-file-mb``), failing a correct
        solution that prints much (HumanEval's execution.py and evalplus discard it too)."""
        handle = open(os.devnull, "wb")  # noqa: SIM115 (closed with the other files)
        self.files.append(handle)
        return handle

    def log_file(self, temp_root: str | None):
        handle = tempfile.TemporaryFile(dir=temp_root, prefix="workbench-log-")
        self.files.append(handle)
        return handle

    def make_workdir(self, temp_root: str | None, files: Mapping[str, str], uid: int | None) -> str:
        self.workdir = tempfile.mkdtemp(prefix="workbench-sample-", dir=temp_root)
        for name, text in files.items():
            path = os.path.join(self.workdir, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8", errors="surrogateescape") as handle:
                handle.write(text)
        if uid is not None:
            for folder, dirs, names in os.walk(self.workdir):
                os.chown(folder, uid, uid)
                for name in names:
                    os.chown(os.path.join(folder, name), uid, uid)
        return self.workdir

    def __exit__(self, *exc) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        for handle in self.files:
            with contextlib.suppress(OSError):
                handle.close()
        if self.workdir is not None:
            _remove_tree(self.workdir)


def remove_files_of_uid(uid: int, folders: Iterable[str]) -> int:
    """Remove what user id ``uid`` owns at the top of each of ``folders`` (a sample's files
    in ``/tmp``, ``/dev/shm`` ...), so the next sample on that slot, or on another, meets none
    of them: a file one sample left under a fixed name made the same correct code fail on
    another slot (it could not open the file for writing). Only for a sandbox user id
    (root mode), whose files are the samples' alone; call it after the uid's processes died.

    Returns:
        how many entries were removed (folders count once).
    """
    import stat

    removed = 0
    for folder in dict.fromkeys(os.path.realpath(f) for f in folders):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if info.st_uid != uid:
                continue
            if stat.S_ISDIR(info.st_mode):
                _remove_tree(entry.path)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
            removed += 1
    return removed


def _remove_tree(path: str) -> None:
    """Remove a working directory even if the sample took permissions away inside it.

    A folder the sample made unreadable or unwritable (``chmod 000 .`` included) is given
    back ``rwx`` for its owner and removed again, once. Only folders inside ``path`` are
    ever changed: the folder that holds ``path`` is shared (``/tmp``, or the sandbox's
    samples folder that other samples must still reach); a file's mode is never changed
    (removing a file needs its folder writable, not the file, and the file may be a hard
    link to one outside); a symbolic link is never followed. Never raises: what cannot be
    removed stays.
    """
    root = os.path.abspath(path)
    retried: set[str] = set()

    def inside(target: str) -> bool:
        return target == root or target.startswith(root + os.sep)

    def open_up(folder: str) -> bool:
        """Give ``folder`` rwx for its owner if it is a real folder inside ``root``."""
        if not inside(folder) or os.path.islink(folder) or not os.path.isdir(folder):
            return False
        with contextlib.suppress(OSError):
            os.chmod(folder, 0o700)
            return True
        return False

    def on_error(func, target, _exc):
        target = os.path.abspath(target)
        open_up(os.path.dirname(target))
        if open_up(target):
            # a folder that could not be opened, listed or emptied: remove it afresh (once,
            # so a folder that stays unreadable cannot loop)
            if target not in retried:
                retried.add(target)
                shutil.rmtree(target, onerror=on_error)
        elif func in (os.unlink, os.rmdir):
            with contextlib.suppress(OSError):
                func(target)

    shutil.rmtree(path, onerror=on_error)
