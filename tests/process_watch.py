"""Finding a test's own processes in ``/proc`` and telling whether they still run, for the tests
that kill workbench (or interrupt it) and check that its samples ended."""

from __future__ import annotations

import os


def processes_with_argument(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv:
            found.append(int(name))
    return found


def start_time(pid: int) -> str | None:
    """Field 22 of ``/proc/PID/stat`` (start time): tells a process from a later one with its pid."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def alive(pid: int, started: str) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return start_time(pid) == started and state != "Z"


def parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("PPid:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None
