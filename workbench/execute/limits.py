"""Per-sample resource limits (POSIX rlimits) applied to every sandboxed process."""

from __future__ import annotations

import dataclasses
import math
import resource
from collections.abc import Mapping
from dataclasses import dataclass

MiB = 1024 * 1024
GiB = 1024 * MiB


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
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"ResourceLimits.{item.name} must be a non-negative int or None, not {value!r}")
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
            raise ValueError(f"unknown resource limit(s) {unknown}; known: {sorted(known)}")
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


def apply_rlimits(pairs: list[tuple[int, int]]) -> None:
    """Set each rlimit's soft and hard value, never above the current hard limit.

    Runs in the forked child before ``exec`` (no allocation-heavy work, no locks).
    """
    for kind, value in pairs:
        _soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        # CPU: SIGXCPU at the soft limit (reported as a timeout), SIGKILL one second later
        ceiling = value + 1 if kind == resource.RLIMIT_CPU else value
        if hard != resource.RLIM_INFINITY:
            ceiling = min(ceiling, hard)
        resource.setrlimit(kind, (value, ceiling))
