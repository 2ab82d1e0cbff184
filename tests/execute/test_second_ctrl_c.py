"""A second Ctrl-C while the first one's clean-up kills the running samples still ends every
sample. Real signals (SIGINT sent to this process, in the main thread, as a terminal sends it),
a real sandbox, real sleeping samples found in ``/proc``.

The second SIGINT is sent from inside the interrupt clean-up, so it lands in it every time: before
the fix it raised ``KeyboardInterrupt`` there, the sandbox was never closed, the worker pool never
shut down, and the samples slept on to their timeout."""

from __future__ import annotations

import os
import secrets
import signal
import threading
import time

import pytest

from process_watch import alive, processes_with_argument, start_time
from workbench.execute.pool import run_in_slots
from workbench.execute.sandbox import Sandbox, new_token
from workbench.languages.python_runner import PythonTestRunner

CHECK = "def check(candidate):\n    candidate()\n"


def test_a_second_ctrl_c_during_the_clean_up_still_ends_every_sample() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    markers = [f"{1000 + secrets.randbelow(10**6)}.{secrets.randbelow(10**6):06d}" for _ in range(2)]
    sandbox, runner = Sandbox(), PythonTestRunner()

    def work(marker: str, slot: int):
        token = new_token()
        program = f"def f():\n    import subprocess\n    subprocess.run(['sleep', '{marker}'])\n"
        return sandbox.run(runner.prepare(program, CHECK, "f", token), token, 120.0, slot=slot)

    watched: dict[int, str] = {}

    def first_ctrl_c() -> None:  # once both samples sleep: the first Ctrl-C
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = [pid for marker in markers for pid in processes_with_argument(marker)]
            if len(found) == len(markers):
                watched.update({pid: start_time(pid) for pid in found})
                break
            time.sleep(0.1)
        os.kill(os.getpid(), signal.SIGINT)

    def clean_up() -> None:  # the second Ctrl-C arrives while the first one's clean-up runs
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)  # the handler runs in this (main) thread, at the next instruction
        sandbox.close()

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=first_ctrl_c, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            for _ in run_in_slots(markers, work, 2, on_interrupt=clean_up):
                pass
        assert len(watched) == len(markers), "the samples never started"
        deadline = time.monotonic() + 20  # poll: whether they end, not how fast
        while any(alive(pid, started) for pid, started in watched.items()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid, started in watched.items() if alive(pid, started)], "samples ran on"
    finally:
        signal.signal(signal.SIGINT, previous)
        sandbox.close()
