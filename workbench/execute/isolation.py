"""Which isolation the machine allows, and the command line that applies it.

Three levels, strongest first (issue 4, "Isolation"):

``bubblewrap``
    ``bwrap`` with the root file system read-only, the user's files hidden (home, the
    current directory, ``/tmp``, ``/run`` ... are replaced by empty tmpfs mounts), a private
    size-limited ``/tmp`` that holds the working directory, fresh ``/proc`` and ``/dev``, and
    new network, PID, IPC and UTS namespaces (no network at all, not even loopback to the
    host). Run as root, bubblewrap sets up the mounts with its privileges, and the sample
    then runs as an unprivileged user id of its own with every capability dropped
    (``setpriv``); run as a normal user, bubblewrap uses an unprivileged user namespace.
``namespaces``
    ``unshare`` as an unprivileged user: new user, network, PID, mount (for ``/proc``), IPC
    and UTS namespaces. No network; files are protected only by the user id.
``rlimits``
    Resource limits and a process group only. The sample can use the network and touch
    every file its user id can; a visible warning says so.

A fourth level is never chosen by detection and only used when asked for by name:

``unsandboxed``
    No isolation at all, for trusted programs only (the conformance kit's own cases, a
    benchmark on published code): like ``rlimits``, but the sample runs as the calling
    user even as root (no per-worker user id), so it reaches every toolchain the caller
    can. Same runner, same limits, timeout, token pipes and status rules as the others.

The PID namespace of the first two levels also means the whole process tree dies with
the sandbox's first process: nothing a sample starts can outlive it.
"""

from __future__ import annotations

import enum
import functools
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from workbench.errors import WorkbenchError
from workbench.option_words import option_value

#: the working directory's path inside a bubblewrap sandbox
SANDBOX_WORKDIR = "/tmp/work"

#: system folders that must stay visible (a current directory above them is not hidden)
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/opt", "/var/lib", "/proc", "/sys", "/dev")

#: folders hidden behind empty tmpfs mounts under bubblewrap (plus $HOME and the current directory)
DEFAULT_HIDDEN_PATHS: tuple[str, ...] = ("/root", "/home", "/tmp", "/var/tmp", "/run", "/mnt", "/media", "/srv")

#: the first user id handed to worker slots when running as root (far above real accounts)
SANDBOX_UID_BASE = 2_000_000
#: user ids per block; one block per Sandbox, so concurrent workbench runs never share one
UID_BLOCK_SIZE = 256
#: how many blocks exist (2,000,000 + 4096 * 256 stays far below 2**31)
UID_BLOCKS = 4096


class SandboxUnavailableError(WorkbenchError):
    """The requested isolation level cannot be used on this machine."""


class IsolationLevel(str, enum.Enum):
    """Isolation levels, strongest first."""

    BUBBLEWRAP = "bubblewrap"
    NAMESPACES = "namespaces"
    RLIMITS = "rlimits"
    UNSANDBOXED = "unsandboxed"


#: the levels detection chooses from, strongest first (``unsandboxed`` is never chosen:
#: it must be asked for by name)
LEVEL_ORDER: tuple[IsolationLevel, ...] = (IsolationLevel.BUBBLEWRAP, IsolationLevel.NAMESPACES, IsolationLevel.RLIMITS)

UNSANDBOXED_WARNING = (
    "WARNING: isolation level 'unsandboxed': samples run with no isolation as the calling user "
    "(root included) and CAN reach the network and every file of that user. Only for trusted programs."
)

RLIMITS_WARNING = (
    "WARNING: no sandbox is available (neither bubblewrap nor unprivileged namespaces); samples run "
    "with resource limits only and CAN reach the network and every file of the user they run as. "
    "Install bubblewrap (Debian: apt-get install bubblewrap)."
)


CHOSEN_WEAKER_WARNING = (
    "WARNING: isolation level {level!r} was chosen ({chosen}) although {stronger!r} is available "
    "here; {what} Use {auto} (or {stronger}) for the stronger one."
)

#: what each level leaves open, for :data:`CHOSEN_WEAKER_WARNING`
_WEAKER_RISKS = {
    "namespaces": "samples run without network but can READ every file the user they run as can.",
    "rlimits": "samples run with resource limits only and CAN reach the network and every file of the user "
               "they run as.",
}


NAMESPACES_WARNING = (
    "WARNING: bubblewrap is not available ({reason}); samples run in namespaces: no network, but they "
    "can READ every file the user they run as can. Install bubblewrap (Debian: apt-get install bubblewrap)."
)


@dataclass(frozen=True)
class Isolation:
    """The isolation in force for a run.

    Attributes:
        level: the :class:`IsolationLevel`.
        description: one line saying what the level does here (for logs and reports).
        unavailable: level -> why it could not be used (stronger levels that failed).
        runs_as_root: True when the workbench runs as root: each worker slot then runs
            its samples as a user id of its own (see :class:`UidBlock`), except at the
            ``unsandboxed`` level.
        requested: the level was chosen by name (``--isolation rlimits``), not detected.
        stronger_available: for a requested level, the strongest level that also works
            here when it is stronger than the one chosen, else ``None``.
    """

    level: IsolationLevel
    description: str
    unavailable: dict[str, str]
    runs_as_root: bool
    requested: bool = False
    stronger_available: IsolationLevel | None = None

    @property
    def warning(self) -> str | None:
        """The visible warning when the level is weaker than bubblewrap, else ``None``, saying why:
        ``unsandboxed`` always; a level chosen by name while a stronger one works here (that one
        is named); ``rlimits`` when nothing stronger works; ``namespaces`` when bubblewrap was
        tried and failed (not when the user asked for namespaces and bubblewrap does not work)."""
        if self.level is IsolationLevel.UNSANDBOXED:
            return UNSANDBOXED_WARNING
        if self.stronger_available is not None and self.level.value in _WEAKER_RISKS:
            return CHOSEN_WEAKER_WARNING.format(level=self.level.value, stronger=self.stronger_available.value,
                                                chosen=option_value("isolation", self.level.value),
                                                auto=option_value("isolation", "auto"),
                                                what=_WEAKER_RISKS[self.level.value])
        if self.level is IsolationLevel.RLIMITS:
            return RLIMITS_WARNING
        if self.level is IsolationLevel.NAMESPACES and IsolationLevel.BUBBLEWRAP.value in self.unavailable:
            return NAMESPACES_WARNING.format(reason=self.unavailable[IsolationLevel.BUBBLEWRAP.value])
        return None

    @property
    def user_per_slot(self) -> bool:
        """True when each worker slot runs its samples as a user id of its own (root, any
        level but ``unsandboxed``)."""
        return self.runs_as_root and self.level is not IsolationLevel.UNSANDBOXED

    @property
    def pid_namespace(self) -> bool:
        """True when each sample runs in a PID namespace of its own (``bubblewrap``,
        ``namespaces``): when the namespace's first process exits, the kernel kills every
        process left in it and waits for them to die before that process counts as exited
        (``zap_pid_ns_processes``, see pid_namespaces(7)), so a wrapper that saw its child
        exit leaves nothing behind."""
        return self.level in (IsolationLevel.BUBBLEWRAP, IsolationLevel.NAMESPACES)

    @property
    def isolates_files(self) -> bool:
        """True when the sample sees a read-only root with the user's files hidden."""
        return self.level is IsolationLevel.BUBBLEWRAP


@dataclass(frozen=True)
class LaunchPlan:
    """How to start one sandboxed command.

    Attributes:
        argv: the full command line (wrapper + ``sh -c`` step script).
        cwd: the host directory to start in.
        user: the uid ``subprocess.Popen`` switches to before exec, or ``None``.
        workdir: the working directory as the sample sees it.
    """

    argv: list[str]
    cwd: str
    user: int | None
    workdir: str


def default_hidden_paths() -> list[str]:
    """Return the folders hidden under bubblewrap: :data:`DEFAULT_HIDDEN_PATHS`, ``$HOME``
    and the current directory (where ``.env`` files with API keys tend to live), unless the
    current directory contains system folders."""
    paths = list(DEFAULT_HIDDEN_PATHS)
    home = os.path.expanduser("~")
    paths.append(home)
    cwd = os.getcwd()
    if not any(_is_within(system, cwd) for system in _SYSTEM_DIRS):
        paths.append(cwd)
    existing = []
    for path in paths:
        real = os.path.realpath(path)
        if real != "/" and os.path.isdir(real) and real not in existing:
            existing.append(real)
    return existing


def _is_within(path: str, folder: str) -> bool:
    """True when ``path`` is ``folder`` or lies below it."""
    folder = folder.rstrip("/") or "/"
    return path == folder or path.startswith(folder + "/") or folder == "/"


def bubblewrap_argv(
    command: Sequence[str],
    *,
    uid: int | None,
    files: Iterable[tuple[int, str]],
    read_only_paths: Iterable[str],
    hidden_paths: Iterable[str],
    tmpfs_bytes: int,
    info_fd: int | None = None,
    keep_capabilities: Sequence[str] | None = None,
    meter: Sequence[str] = (),
) -> list[str]:
    """Return the ``bwrap`` command line that runs ``command`` in :data:`SANDBOX_WORKDIR`.

    Args:
        command: the argv to run inside.
        uid: the user id to switch to inside (root mode, needs ``setpriv``), or ``None``
            to use an unprivileged user namespace as the current user.
        files: ``(fd, name)`` pairs: bubblewrap copies each fd's content to
            ``SANDBOX_WORKDIR/name`` (the fds must be inherited by bwrap).
        read_only_paths: host paths re-exposed read-only when they lie under a hidden path.
        hidden_paths: host folders replaced by empty tmpfs mounts.
        tmpfs_bytes: size of the private ``/tmp``.
        info_fd: an inherited fd where bubblewrap writes its JSON facts about the sandbox
            (``child-pid``: the host pid of the namespace's first process, ``pid-namespace``),
            or ``None``.
        keep_capabilities: root only, for a worker's interpreter zygote
            (:mod:`workbench.execute.zygote`): ``command`` runs as root with these
            capabilities and no other (no ``setpriv``: it drops to the sample's user id per
            sample itself), and without ``--die-with-parent`` (bwrap would die with the
            *thread* that started it; the zygote ends when its control socket closes).
        meter: a command prefix that runs first inside, as bwrap's own user (root: before
            ``setpriv``): GNU time, whose report of the sample's peak memory goes to bwrap's
            stderr (:func:`workbench.execute.sandbox.peak_meter`).
    """
    hidden = sorted({os.path.realpath(p) for p in hidden_paths} | {"/tmp"}, key=len)
    argv = [_tool("bwrap"), "--ro-bind", "/", "/"]
    for path in hidden:
        if path == "/tmp":
            argv += ["--perms", "1777", "--size", str(tmpfs_bytes), "--tmpfs", "/tmp"]
        elif os.path.isdir(path):
            argv += ["--tmpfs", path]
    exposed: set[str] = set()
    made: set[str] = set()
    for path in sorted({os.path.realpath(p) for p in read_only_paths}, key=len):
        if not os.path.exists(path) or any(_is_within(path, done) for done in exposed):
            continue
        under = [h for h in hidden if _is_within(path, h)]
        if under:
            # bubblewrap creates missing mount points 0700; the sample's uid must traverse them
            top = max(under, key=len)
            ancestors = []
            parent = os.path.dirname(path)
            while parent != top and _is_within(parent, top):
                ancestors.append(parent)
                parent = os.path.dirname(parent)
            for folder in reversed(ancestors):
                if folder not in made:
                    argv += ["--perms", "0755", "--dir", folder]
                    made.add(folder)
            argv += ["--ro-bind", path, path]
            exposed.add(path)
    argv += ["--perms", "0777", "--dir", SANDBOX_WORKDIR]
    made_dirs = {SANDBOX_WORKDIR}
    for fd, name in files:
        parent = os.path.dirname(f"{SANDBOX_WORKDIR}/{name}")
        parts = []
        while parent not in made_dirs:
            parts.append(parent)
            parent = os.path.dirname(parent)
        for folder in reversed(parts):
            argv += ["--perms", "0777", "--dir", folder]
            made_dirs.add(folder)
        argv += ["--perms", "0644", "--file", str(fd), f"{SANDBOX_WORKDIR}/{name}"]
    argv += [
        "--proc", "/proc",
        "--dev", "/dev",
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--new-session", "--chdir", SANDBOX_WORKDIR,
    ]
    if info_fd is not None:
        argv += ["--info-fd", str(info_fd)]
    if keep_capabilities is not None:
        argv += ["--cap-drop", "ALL"]
        for capability in keep_capabilities:
            argv += ["--cap-add", capability]
        return argv + ["--"] + list(command)
    argv.insert(argv.index("--new-session"), "--die-with-parent")
    if uid is None:
        argv += ["--unshare-user", "--cap-drop", "ALL", "--"]
        return argv + list(meter) + list(command)
    return argv + ["--"] + list(meter) + setpriv_argv(uid) + list(command)


def _tool(name: str) -> str:
    """The wrapper ``name`` as found on this process's ``PATH`` (where detection found it),
    else the bare name (the samples' ``PATH`` is searched at launch)."""
    return shutil.which(name) or name


def setpriv_argv(uid: int) -> list[str]:
    """Return the ``setpriv`` prefix that drops to ``uid``/``uid`` with no groups, no
    capabilities (inheritable, bounding, ambient) and ``no_new_privs`` (no setuid binaries)."""
    return [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
    ]


def namespaces_argv(command: Sequence[str], init: Sequence[str] = ()) -> list[str]:
    """Return the ``unshare`` command line (run as an unprivileged user) for ``command``.

    Args:
        command: the argv to run in the new namespaces.
        init: a command prefix that becomes the PID namespace's first process (its init) and
            runs ``command`` as its child: GNU time, whose ``%x`` says how that child ended.
            Needed because ``unshare --fork`` (util-linux 2.38) passes its child's death by
            ``SIGKILL`` on as exit status 1 ("sigprocmask unblock failed": it re-raises the
            child's signal after ``signal(SIGKILL, SIG_DFL)``, which fails with ``EINVAL``),
            and because a namespace's init ignores every signal it has no handler for that
            comes from inside (``SIGXCPU`` of its soft CPU limit included). Below such an init
            a ``SIGKILL`` (the hard CPU limit's, the OOM killer's) ends the child, and the
            init exits with 128 + 9, which ``unshare`` passes on.
    """
    return [
        _tool("unshare"), "--user", "--map-root-user", "--net", "--pid", "--fork", "--kill-child",
        "--mount-proc", "--ipc", "--uts", "--",
    ] + list(init) + list(command)


def interpreter_paths() -> list[str]:
    """Return the folders the running Python needs (prefixes and site-packages), for
    ``RunSpec.read_only_paths``."""
    import site
    import sys

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))}
    try:
        paths.update(site.getsitepackages())
    except AttributeError:  # some embedded builds lack it
        pass
    paths.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    return sorted(p for p in paths if p and os.path.isdir(p))


def _probe(argv: list[str], user: int | None, cwd: str) -> str | None:
    """Run ``argv``; return ``None`` when it exits 0 within 20 s, else the reason."""
    try:
        done = subprocess.run(
            argv, cwd=cwd, user=user, stdin=subprocess.DEVNULL, capture_output=True, timeout=20, env=_probe_env()
        )
    except (OSError, subprocess.SubprocessError) as error:
        return f"{type(error).__name__}: {error}"
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return tail[0]
    return None


def _probe_env() -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def _missing(*tools: str) -> str | None:
    missing = [tool for tool in tools if shutil.which(tool) is None]
    return f"{', '.join(missing)} not found on PATH" if missing else None


@functools.cache
def _check_level(level: IsolationLevel) -> str | None:
    """Return ``None`` when ``level`` works here (by running a probe), else why not."""
    root = os.geteuid() == 0
    # the probe runs `true` as the last uid of the range, which no block hands out
    probe_uid = SANDBOX_UID_BASE + UID_BLOCKS * UID_BLOCK_SIZE if root else None
    if level is IsolationLevel.BUBBLEWRAP:
        reason = _missing("bwrap", "setpriv") if root else _missing("bwrap")
        if reason:
            return reason
        argv = bubblewrap_argv(
            ["/bin/sh", "-c", "test -w . && test ! -e /proc/1/environ -o -r /proc/self/status"],
            uid=probe_uid, files=(), read_only_paths=(), hidden_paths=default_hidden_paths(), tmpfs_bytes=16 << 20,
        )
        return _probe(argv, None, "/")
    if level is IsolationLevel.NAMESPACES:
        reason = _missing("unshare")
        if reason:
            return reason
        return _probe(namespaces_argv(["/bin/sh", "-c", "true"]), probe_uid, "/")
    return None


def _uid_is_free(uid: int) -> bool:
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return True
    return False


def detect_isolation(require: IsolationLevel | str | None = None) -> Isolation:
    """Return the strongest isolation that works on this machine (probed once per process).

    Args:
        require: use exactly this level (for tests and for users who want to fail
            rather than fall back), or ``None`` for the strongest available of
            :data:`LEVEL_ORDER`. ``"unsandboxed"`` is always available and only given
            when named here.

    Raises:
        SandboxUnavailableError: ``require`` names a level that does not work here, with
            the reason (e.g. "bwrap not found on PATH").
    """
    wanted = IsolationLevel(require) if require is not None else None
    root = os.geteuid() == 0
    if wanted is IsolationLevel.UNSANDBOXED:
        return Isolation(wanted, describe(wanted, root), {}, root)
    unavailable: dict[str, str] = {}
    for level in LEVEL_ORDER:
        if wanted is not None and level is not wanted:
            continue
        reason = _check_level(level)
        if reason is None:
            if wanted is None:
                return Isolation(level, describe(level, root), unavailable, root)
            # chosen by name: is a stronger level available? (the warning must say so, not "none is")
            stronger = next((other for other in LEVEL_ORDER[:LEVEL_ORDER.index(level)] if _check_level(other) is None),
                            None)
            return Isolation(level, describe(level, root), unavailable, root, requested=True,
                             stronger_available=stronger)
        unavailable[level.value] = reason
        if wanted is not None:
            raise SandboxUnavailableError(f"isolation level {level.value!r} is not available: {reason}")
    raise AssertionError("the rlimits level is always available")  # pragma: no cover


def describe(level: IsolationLevel, root: bool) -> str:
    """One line saying what ``level`` does on this machine."""
    who = "a per-worker unprivileged uid, all capabilities dropped" if root else "the current user in a user namespace"
    if level is IsolationLevel.BUBBLEWRAP:
        return (
            f"bubblewrap: read-only root, home/cwd/tmp hidden, private size-limited /tmp, no network, "
            f"own PID/IPC/UTS namespaces, {who}"
        )
    if level is IsolationLevel.NAMESPACES:
        who = "a per-worker unprivileged uid" if root else "the current user"
        return f"namespaces (unshare): no network, own user/PID/mount/IPC/UTS namespaces, {who}; files readable"
    if level is IsolationLevel.UNSANDBOXED:
        return "unsandboxed: resource limits and a process group as the calling user; no isolation (trusted code only)"
    who = "a per-worker unprivileged uid" if root else "the current user (files and network reachable)"
    return f"rlimits only: resource limits and a process group, {who}"


class UidBlock:
    """A block of :data:`UID_BLOCK_SIZE` user ids owned by this process while it lives.

    Ownership is an exclusive ``flock`` on ``<tmp>/workbench-sandbox-uids-<n>.lock``, so
    two workbench runs on one machine (two users, two CI jobs) never run samples under
    the same user id, and one run's sweep of leftover processes never kills the other's. A
    :class:`~workbench.execute.sandbox.Sandbox`'s guardian holds the lock too (:meth:`fileno`),
    so the block of a killed workbench stays taken until its samples are killed.

    Raises:
        SandboxUnavailableError: every block is taken, or a block's first uid is a real account.
    """

    def __init__(self, lock_dir: str | None = None):
        import fcntl
        import tempfile

        folder = lock_dir or tempfile.gettempdir()
        for block in range(UID_BLOCKS):
            path = os.path.join(folder, f"workbench-sandbox-uids-{block}.lock")
            handle = open(path, "a+")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                handle.close()
                continue
            self._handle = handle
            self.base = SANDBOX_UID_BASE + block * UID_BLOCK_SIZE
            if not _uid_is_free(self.base):
                raise SandboxUnavailableError(f"user id {self.base} (a sandbox uid) belongs to a real account")
            return
        raise SandboxUnavailableError(f"all {UID_BLOCKS} sandbox uid blocks are in use (lock files in {folder})")

    def uid(self, slot: int) -> int:
        """Return the user id of worker ``slot`` (0 <= slot < :data:`UID_BLOCK_SIZE`)."""
        if not 0 <= slot < UID_BLOCK_SIZE:
            raise ValueError(f"slot must be in 0..{UID_BLOCK_SIZE - 1}, not {slot}")
        return self.base + slot

    def fileno(self) -> int:
        """The descriptor of the lock file: the block is owned while it (or a copy in a child
        process, e.g. the :class:`~workbench.execute.guardian.Guardian`) is open."""
        return self._handle.fileno()

    def release(self) -> None:
        """Give the block back (also happens when the process exits)."""
        if not self._handle.closed:
            self._handle.close()


def plan_launch(
    isolation: Isolation,
    command: Sequence[str],
    *,
    uid: int | None,
    host_workdir: str | None,
    files: Iterable[tuple[int, str]] = (),
    read_only_paths: Iterable[str] = (),
    hidden_paths: Iterable[str] | None = None,
    tmpfs_bytes: int = 256 << 20,
    info_fd: int | None = None,
    meter: Sequence[str] = (),
    init: Sequence[str] = (),
) -> LaunchPlan:
    """Return the :class:`LaunchPlan` that runs ``command`` under ``isolation``.

    Args:
        isolation: from :func:`detect_isolation`.
        command: the argv to run in the working directory.
        uid: the user id to run as (root mode), or ``None`` for the current user.
        host_workdir: the host folder used as working directory by the levels below
            bubblewrap (``None`` under bubblewrap, whose working directory is in its tmpfs).
        files: ``(fd, name)`` pairs copied in by bubblewrap.
        read_only_paths: see :func:`bubblewrap_argv`.
        hidden_paths: folders to hide (default :func:`default_hidden_paths`).
        tmpfs_bytes: size of bubblewrap's private ``/tmp``.
        info_fd: see :func:`bubblewrap_argv` (ignored by the other levels).
        meter: see :func:`bubblewrap_argv` (ignored by the other levels, which the caller
            starts under it).
        init: ``namespaces`` only: the namespace's init, see :func:`namespaces_argv`.
    """
    if isolation.level is IsolationLevel.BUBBLEWRAP:
        argv = bubblewrap_argv(
            command,
            uid=uid,
            files=files,
            read_only_paths=read_only_paths,
            hidden_paths=default_hidden_paths() if hidden_paths is None else hidden_paths,
            tmpfs_bytes=tmpfs_bytes,
            info_fd=info_fd,
            meter=meter,
        )
        return LaunchPlan(argv, "/", None, SANDBOX_WORKDIR)
    if host_workdir is None:
        raise ValueError("levels below bubblewrap need a host working directory")
    if isolation.level is IsolationLevel.NAMESPACES:
        return LaunchPlan(namespaces_argv(command, init), host_workdir, uid, host_workdir)
    return LaunchPlan(list(command), host_workdir, uid, host_workdir)


__all__ = [
    "DEFAULT_HIDDEN_PATHS",
    "Isolation",
    "IsolationLevel",
    "LEVEL_ORDER",
    "LaunchPlan",
    "SANDBOX_WORKDIR",
    "SandboxUnavailableError",
    "UidBlock",
    "default_hidden_paths",
    "detect_isolation",
    "interpreter_paths",
    "plan_launch",
]

