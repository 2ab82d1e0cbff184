"""Per-sample resource limits (POSIX rlimits) applied to every sandboxed process."""

from __future__ import annotations

import dataclasses
import math
import resource
from collections.abc import Mapping
from dataclasses import dataclass

MiB = 1024 * 1024
GiB = 1024 * MiB
#: the largest rlimit value ``setrlimit`` takes here (``rlim_t`` read as a signed 64-bit C integer by
#: Python's ``resource`` module, which raises ``OverflowError`` above it; bash's ``ulimit`` says
#: "limit out of range"): a limit above it could never be set, so it is refused when asked for
RLIMIT_MAX = 2**63 - 1


@dataclass(frozen=True)
class ResourceLimits:
    """Limits for one sample. ``None`` means unlimited (the parent's limit is kept).

    Every limit is an rlimit, so it holds per process (``RLIMIT_NPROC`` per user id);
    the sandbox gives each worker slot its own user id when it runs as root, so one
    sample's processes never count against another's.

    Attributes:
        address_space_bytes: ``RLIMIT_AS``; an allocation beyond it fails (Python raises
            ``MemoryError``, reported as ``oom``). Default 4 GiB.
        file_size_bytes: ``RLIMIT_FSIZE``, the largest file a sample may write (stdout
            and stderr included). Default 64 MiB.
        processes: ``RLIMIT_NPROC``, processes and threads of the sample's user id.
            Default 64: stops a fork bomb, leaves room for a test that starts a pool.
        open_files: ``RLIMIT_NOFILE``. Default 256.
        cpu_seconds: ``RLIMIT_CPU`` per process; ``None`` here means "derive it from the
            timeout" (ceil(timeout) + 1 s), so a busy loop dies even if the wall-clock
            watchdog were late.
        core_bytes: ``RLIMIT_CORE``; 0 so a crashing sample leaves no core file.
        tmpfs_bytes: size of the sample's private ``/tmp`` (its working directory lies in
            it) under bubblewrap, which is also its disk quota. Default 256 MiB. Lower
            isolation levels have no quota beyond ``file_size_bytes`` per file.
    """

    address_space_bytes: int | None = 4 * GiB
    file_size_bytes: int | None = 64 * MiB
    processes: int | None = 64
    open_files: int | None = 256
    cpu_seconds: int | None = None
    core_bytes: int | None = 0
    tmpfs_bytes: int = 256 * MiB

    def __post_init__(self) -> None:
        """Check each limit.

        Raises:
            ValueError: a negative or non-integer limit, an rlimit above :data:`RLIMIT_MAX`, or a
                ``tmpfs_bytes`` below 1 MiB.
        """
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"ResourceLimits.{item.name} must be a non-negative int or None, not {value!r}")
            if value is not None and item.name != "tmpfs_bytes" and value > RLIMIT_MAX:
                raise ValueError(f"ResourceLimits.{item.name} must be at most {RLIMIT_MAX} (the largest rlimit), "
                                 f"not {value!r}; None means unlimited")
        if self.tmpfs_bytes is None or self.tmpfs_bytes < MiB:
            raise ValueError("ResourceLimits.tmpfs_bytes must be at least 1 MiB")

    def with_overrides(self, overrides: Mapping[str, int | None]) -> ResourceLimits:
        """Return a copy with the named fields replaced (a runner's ``RunSpec.limit_overrides``).

        Raises:
            ValueError: an unknown field name.
        """
        known = {item.name for item in dataclasses.fields(self)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise ValueError(f"unknown resource {'limit' if len(unknown) == 1 else 'limits'} {unknown}; known: {sorted(known)}")
        return dataclasses.replace(self, **dict(overrides))

    def rlimits(self, timeout_s: float, *, extra_processes: int = 0) -> list[tuple[int, int]]:
        """Return ``(resource, value)`` pairs to set in the child for a run with ``timeout_s``.

        Args:
            timeout_s: the wall-clock timeout in seconds (sets the CPU limit when
                ``cpu_seconds`` is ``None``).
            extra_processes: added to ``processes`` (the processes the user id already
                runs, when the sandbox cannot give the sample a user id of its own).
        """
        cpu = self.cpu_seconds if self.cpu_seconds is not None else math.ceil(timeout_s) + 1
        pairs = [
            (resource.RLIMIT_AS, self.address_space_bytes),
            (resource.RLIMIT_FSIZE, self.file_size_bytes),
            (resource.RLIMIT_NPROC, None if self.processes is None else self.processes + extra_processes),
            (resource.RLIMIT_NOFILE, self.open_files),
            (resource.RLIMIT_CPU, cpu),
            (resource.RLIMIT_CORE, self.core_bytes),
        ]
        return [(kind, value) for kind, value in pairs if value is not None]


def soft_and_hard(pairs: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """Return ``(resource, soft, hard)`` for each pair, never above this process's hard limit
    (which a child inherits and cannot raise).

    CPU gets a hard limit one second above the soft one: ``SIGXCPU`` at the soft limit
    (reported as a timeout), ``SIGKILL`` a second later.
    """
    triples = []
    for kind, value in pairs:
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        ceiling = value + 1 if kind == resource.RLIMIT_CPU else value
        if hard != resource.RLIM_INFINITY:
            ceiling = min(ceiling, hard)
        triples.append((kind, value, ceiling))
    return triples


def apply_rlimits(pairs: list[tuple[int, int]]) -> None:
    """Set each rlimit's soft and hard value (:func:`soft_and_hard`) in this process."""
    for kind, soft, hard in soft_and_hard(pairs):
        resource.setrlimit(kind, (soft, hard))


#: rlimit -> (bash ``ulimit`` option, its unit in bytes or 1); bash outside POSIX mode counts
#: ``-f`` and ``-c`` in 1024-byte blocks (its manual, "ulimit")
_ULIMIT_OPTIONS = {
    resource.RLIMIT_AS: ("-v", 1024),
    resource.RLIMIT_FSIZE: ("-f", 1024),
    resource.RLIMIT_NPROC: ("-u", 1),
    resource.RLIMIT_NOFILE: ("-n", 1),
    resource.RLIMIT_CPU: ("-t", 1),
    resource.RLIMIT_CORE: ("-c", 1024),
}


def ulimit_commands(pairs: list[tuple[int, int]]) -> list[str]:
    """Return the ``bash`` lines that set ``pairs`` (:meth:`ResourceLimits.rlimits`) in the
    shell that starts a sample, so that every process of the sample inherits them.

    Setting them there, not in a ``preexec_fn``, lets ``subprocess`` start the sandbox with
    ``vfork`` instead of copying the whole (large) workbench process with ``fork`` for every
    sample. Sizes are rounded down to whole KiB (the unit of ``ulimit -v`` / ``-f`` / ``-c``).
    Each line sets both limits to the hard value, then lowers the soft one where it differs; a
    limit that cannot be set exits 125 (before the step script's start byte: a sandbox failure).

    Raises:
        ValueError: an rlimit that has no ``ulimit`` option here.

    Example:

    >>> import resource
    >>> ulimit_commands([(resource.RLIMIT_NOFILE, 256)])[-1]
    '{ ulimit -n 256; } || exit 125'
    """
    lines = ["set +o posix"]  # POSIXLY_CORRECT in a runner's env would make -f count 512-byte blocks
    for kind, soft, hard in soft_and_hard(pairs):
        if kind not in _ULIMIT_OPTIONS:
            raise ValueError(f"no ulimit option for rlimit {kind}")
        flag, unit = _ULIMIT_OPTIONS[kind]

        def shown(value: int) -> str:
            return "unlimited" if value == resource.RLIM_INFINITY else str(value // unit)

        # without -H/-S both limits are set at once (-H alone fails while the soft one is higher)
        command = f"ulimit {flag} {shown(hard)}"
        if soft != hard:
            command += f" && ulimit -S {flag} {shown(soft)}"
        lines.append(f"{{ {command}; }} || exit 125")
    return lines


#: the limits a user sets, by option: (ResourceLimits field, rlimit, the option's flag, unit in bytes or 1)
_ASKED_LIMITS = (
    ("address_space_bytes", resource.RLIMIT_AS, "--memory-mb", MiB),
    ("file_size_bytes", resource.RLIMIT_FSIZE, "--max-file-mb", MiB),
    ("processes", resource.RLIMIT_NPROC, "--max-processes", 1),
    ("open_files", resource.RLIMIT_NOFILE, "--max-open-files", 1),
)

#: where a container's memory ceiling is read (cgroup v2, then v1)
CGROUP_MEMORY_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


@dataclass(frozen=True)
class AppliedLimit:
    """One resource limit as a sample gets it, next to what was asked.

    Attributes:
        name: the :class:`ResourceLimits` field (``address_space_bytes``).
        flag: the option that asks for it (``--memory-mb``).
        asked: the value asked (bytes or a count), ``None`` for unlimited.
        applied: the value in force in the sample: ``asked`` capped at this process's hard
            limit, which a sandboxed child inherits and cannot raise (:func:`apply_rlimits`).
        unit: 1 MiB for sizes, 1 for counts (for messages).
    """

    name: str
    flag: str
    asked: int | None
    applied: int | None
    unit: int

    @property
    def lowered(self) -> bool:
        """The sample gets less than was asked."""
        return self.applied is not None and (self.asked is None or self.applied < self.asked)

    def as_dict(self) -> dict[str, object]:
        return {"flag": self.flag, "asked": self.asked, "applied": self.applied, "lowered": self.lowered}

    def note(self) -> str:
        """The sentence that says the limit was lowered, and why."""
        def shown(value: int | None) -> str:
            if value is None:
                return "unlimited"
            return f"{value / self.unit:g} MiB" if self.unit == MiB else str(value)

        from workbench.option_words import option_named

        return (f"{option_named(self.flag[2:].replace('-', '_'))}: samples get {shown(self.applied)}, not the {shown(self.asked)} asked: this process's "
                f"hard limit (ulimit) is lower, and a sandbox cannot raise it; results that hit this limit "
                f"(oom, killed) differ from a machine without it")


def applied_limits(limits: ResourceLimits) -> dict[str, AppliedLimit]:
    """The user-set limits as a sample gets them here (hard rlimits of this process applied).

    Args:
        limits: the asked :class:`ResourceLimits`.

    Returns:
        field name -> :class:`AppliedLimit`, for ``address_space_bytes``, ``file_size_bytes``,
        ``processes`` and ``open_files``.
    """
    found = {}
    for name, kind, flag, unit in _ASKED_LIMITS:
        asked = getattr(limits, name)
        hard = resource.getrlimit(kind)[1]
        hard = None if hard == resource.RLIM_INFINITY else hard
        applied = asked if hard is None else hard if asked is None else min(asked, hard)
        found[name] = AppliedLimit(name, flag, asked, applied, unit)
    return found


def memory_ceiling_bytes(files: tuple[str, ...] = CGROUP_MEMORY_FILES) -> int | None:
    """The memory ceiling of this machine's cgroup (a container's ``--memory``), or ``None``.

    A sample above it is ended by the kernel's OOM killer, whatever its address-space limit.
    """
    for path in files:
        try:
            text = open(path).read().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:  # v1 reports "no limit" as a huge number
            return int(text)
        return None
    return None


def oom_guard_bytes(files: tuple[str, ...] = CGROUP_MEMORY_FILES, meminfo: str = "/proc/meminfo") -> int | None:
    """The memory the kernel's OOM killer guards for a sample here: the cgroup's ceiling
    (:func:`memory_ceiling_bytes`), else the machine's RAM (``MemTotal`` of ``meminfo``), else
    ``None``. A sample ended by ``SIGKILL`` with a peak resident memory near it was, in all
    likelihood, ended by the OOM killer (:func:`~workbench.execute.status.near_memory_bound`).
    """
    ceiling = memory_ceiling_bytes(files)
    if ceiling is not None:
        return ceiling
    try:
        with open(meminfo) as handle:
            for line in handle:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024  # the kernel reports kB (KiB)
    except (OSError, ValueError, IndexError):
        pass
    return None
