"""Ctrl-C as a terminal sends it (SIGINT), or SIGTERM as a batch scheduler (SLURM) or ``timeout``
sends it first, for the tests of what an interrupted command keeps and says."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path


def jsonl_rows(path: Path) -> list[dict]:
    """The complete rows of a jsonl file being written (a half-written last line is left out)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().endswith("}")]


def interrupt_after_rows(command: list[str], rows: Callable[[], list], at_least: int = 2, wait_s: float = 120,
                         exit_timeout_s: float = 60, signum: int = signal.SIGINT) -> tuple[int, str]:
    """Start ``command``, send it ``signum`` (SIGINT unless told) once ``rows()`` holds ``at_least`` rows;
    return (exit status, stderr).

    Fails the test when the command ends by itself before that, or no rows come within ``wait_s`` seconds.
    """
    # a child inherits an ignored SIGINT from a background shell: restore the default, as a terminal has
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + wait_s
    while len(rows()) < at_least and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.poll() is None, process.communicate()
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=exit_timeout_s)
    return process.returncode, stderr
