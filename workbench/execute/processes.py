"""Killing a sample's whole process tree, including processes that left its process group.

A sample may start background processes, double-fork daemons that call ``setsid``, or
fork-bomb. Under bubblewrap and ``unshare`` the PID namespace already kills everything
with the sandbox's first process (the sandbox waits for that, see
``Sandbox._tree_is_gone``); at the ``rlimits`` level, and under the others where the
namespace's end cannot be shown (a wrapper killed by a signal), this module finds what is
left by the sample's own user id (root mode) or by a per-run environment tag, kills it and
reaps what is still our child. Orphans that
were re-parented go to the host's PID 1, which reaps them.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import time

def kill_process_group(pgid: int) -> None:
    """Send SIGKILL to process group ``pgid`` (missing group: nothing to do)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def proc_file(pid: int | str, name: str) -> bytes | None:
    """Return the bytes of ``/proc/<pid>/<name>``, or ``None`` when the process is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/{name}", "rb") as handle:
            return handle.read()
    except OSError:
        return None


def _status_fields(pid: int) -> dict[str, str]:
    fields = {}
    try:
        with open(f"/proc/{pid}/status", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
    except OSError:
        pass
    return fields


def processes_of_uid(uid: int) -> list[int]:
    """Return the pids whose real user id is ``uid``."""
    found = []
    for pid in _pids():
        uids = _status_fields(pid).get("Uid", "").split()
        if uids and uids[0] == str(uid):
            found.append(pid)
    return found


def processes_with_env_tag(tag: str) -> list[int]:
    """Return the pids whose initial environment contains ``tag`` (``NAME=value``).

    Only processes of our own user (or all, as root) are readable; a process that
    replaced its environment with ``execve`` is not found, hence the uid sweep as root.
    """
    needle = tag.encode()
    found = []
    own = os.getpid()
    for pid in _pids():
        if pid == own:
            continue
        data = proc_file(pid, "environ")
        if data is not None and needle in data.split(b"\0"):
            found.append(pid)
    return found


def kill_all_of_uid(uid: int, rounds: int = 20) -> int:
    """Kill every process of ``uid`` with ``kill(-1, SIGKILL)`` issued *as* that uid (root only).

    The kernel walks the whole process table in one call, so a fork bomb cannot outrun it
    the way it outruns a kill-by-pid loop; repeated until the uid has no live process.

    Returns:
        how many rounds it took (0: nothing was running).
    """
    import subprocess

    for round_number in range(rounds):
        if not [pid for pid in processes_of_uid(uid) if not is_zombie(pid)]:
            return round_number
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            subprocess.run(
                ["kill", "-s", "KILL", "--", "-1"], user=uid, group=uid, extra_groups=[],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10,
                env={"PATH": "/usr/bin:/bin"},
            )
        time.sleep(0.01)
    return rounds


def largest_high_water_kib(pids) -> int | None:
    """The largest resident-memory high-water mark (``VmHWM`` of ``/proc/<pid>/status``, KiB)
    among the live processes ``pids``, or ``None`` when none could be read (gone, zombies).
    Read just before a timed-out sample is killed: a killed process tree is reaped by nobody
    who could report its ``ru_maxrss``."""
    peaks = []
    for pid in pids:
        value = _status_fields(pid).get("VmHWM", "").split()
        if value and value[0].isdigit():
            peaks.append(int(value[0]))
    return max(peaks) if peaks else None


def reap_with_usage(proc) -> tuple[int, int | None]:
    """Reap ``proc`` (a :class:`subprocess.Popen`) with ``os.wait4`` and return
    ``(returncode, ru_maxrss in KiB)``: the peak resident memory of the largest process among
    ``proc`` and every descendant reaped under it (Linux's ``ru_maxrss`` of a waited child is
    the maximum over that child and its own waited-for children, not a sum).
    ``proc.returncode`` is set as ``Popen.wait`` would set it; the usage is ``None`` when
    ``proc`` had been reaped already."""
    if proc.returncode is not None:
        return proc.returncode, None
    while True:
        try:
            _pid, status, usage = os.wait4(proc.pid, 0)
        except InterruptedError:
            continue
        except ChildProcessError:  # reaped elsewhere: Popen's own rule
            return proc.wait(), None
        proc.returncode = os.waitstatus_to_exitcode(status)
        return proc.returncode, usage.ru_maxrss


def parent_of(pid: int) -> int | None:
    """Return the parent pid of ``pid``, or ``None`` if it is gone."""
    value = _status_fields(pid).get("PPid")
    return int(value) if value else None


def is_zombie(pid: int) -> bool:
    """True when ``pid`` exists and is a zombie (exited, not yet reaped)."""
    return _status_fields(pid).get("State", "").startswith("Z")


def sweep(find, *, rounds: int = 50, protect: frozenset[int] = frozenset()) -> int:
    """Kill every process ``find()`` returns until it returns none; reap our own children.

    Args:
        find: a callable returning pids (e.g. ``lambda: processes_of_uid(uid)``).
        rounds: at most this many passes (a fork bomb keeps forking while we kill).
        protect: pids never to kill (live sandboxes of other workers).

    Returns:
        the number of processes killed.
    """
    killed = 0
    own = os.getpid()
    for _ in range(rounds):
        pids = [pid for pid in find() if pid not in protect and pid != own]
        alive = [pid for pid in pids if not is_zombie(pid)]
        for pid in alive:
            killed += _kill_if_still(pid, find)
        for pid in pids:
            if parent_of(pid) == own:
                reap(pid)
        if not alive:
            break
        time.sleep(0.01)
    return killed


def _kill_if_still(pid: int, find) -> int:
    """SIGKILL ``pid`` only if it is still the process ``find`` reported (pid reuse safe).

    The pidfd pins the process: if it exits and its pid is reused after the check, the
    signal goes to the dead process (ESRCH), never to the newcomer.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except (ProcessLookupError, PermissionError):
        return 0
    except (AttributeError, OSError):  # no pidfd support: a small reuse window remains
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
            return 1
        return 0
    try:
        if pid not in find():
            return 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            return 1
        return 0
    finally:
        os.close(pidfd)


def reap(pid: int, timeout_s: float = 2.0) -> None:
    """Wait for our child ``pid`` to be reaped (it was killed), without blocking forever.

    Blocks on a pidfd (readable once the child exited) instead of polling ``waitpid``.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (AttributeError, OSError):  # no pidfd support: poll
        _reap_polling(pid, timeout_s)
        return
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.poll(int(timeout_s * 1000))
    finally:
        os.close(pidfd)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _reap_polling(pid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return
        except OSError as error:  # pragma: no cover - EINTR is retried by Python
            if error.errno != errno.EINTR:
                return
            continue
        if done == pid or time.monotonic() > deadline:
            return
        time.sleep(0.005)
