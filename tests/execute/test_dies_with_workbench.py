"""A killed ``workbench execute`` leaves no sample running, at every isolation level here.

Real subprocesses: ``workbench execute`` is started on a sample that runs ``sleep`` with a
unique argument for far longer than the test, the sleep (and the harness that started it)
is found in ``/proc``, workbench is killed (SIGKILL: nothing of it runs any more; SIGTERM: ended as
by Ctrl-C, exit status 143), and the test polls until those processes are gone. Before the
guardian (``workbench.execute.guardian``) the ``namespaces`` and ``rlimits`` samples slept on.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from process_watch import alive, parent, processes_with_argument, start_time
from sandbox_ways import ROOT, SYSTEM_PYTHON, WAY_IDS, WAYS  # (isolation level, reuse interpreters)
from workbench.execute import guardian as guardian_module
from workbench.execute.isolation import IsolationLevel


@contextlib.contextmanager
def _execute_a_sleeping_sample(tmp_path: Path, *options: str):
    """Start ``workbench execute`` (``-j 1``, a 600 s timeout, ``options`` added) on one sample that runs
    ``sleep`` with a unique argument, and wait up to 180 s for that sleep to show in ``/proc``. Yields
    ``(workbench, found)``: the ``Popen`` (stderr piped) and the pids of processes with that argument
    (empty if the sample never started). On exit kills workbench if it still runs, and every sleeper
    left: never one behind a failed test."""
    marker = f"{1000 + secrets.randbelow(10**6)}.{secrets.randbelow(10**6):06d}"  # sleep's seconds, unique
    completion = f"    import subprocess\n    subprocess.run(['sleep', '{marker}'])\n    return None\n"
    generations = tmp_path / "gens.jsonl"
    generations.write_text(json.dumps({"task_id": "HumanEval/0", "sample_id": 0, "completion": completion}) + "\n")
    command = [sys.executable, "-m", "workbench", "execute", str(generations), "-o", str(tmp_path / "out.jsonl"),
               "--timeout", "600", "-j", "1", "--no-progress", *options]
    workbench = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 180
        found: list[int] = []
        while not found and workbench.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            found = processes_with_argument(marker)
        yield workbench, found
    finally:
        if workbench.poll() is None:
            workbench.kill()
            workbench.wait()
        for pid in processes_with_argument(marker):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("kill_with", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
@pytest.mark.parametrize(("level", "forked"), WAYS, ids=WAY_IDS)
def test_samples_die_with_a_killed_workbench(tmp_path: Path, level, forked, kill_with) -> None:
    options = ["--isolation", level.value]
    if not forked:
        options.append("--no-reuse-interpreters")
    if ROOT and level is not IsolationLevel.BUBBLEWRAP:  # this venv's Python may lie under /root
        options += ["--python", SYSTEM_PYTHON]
    with _execute_a_sleeping_sample(tmp_path, *options) as (workbench, found):
        ended = workbench.poll() is not None
        assert found, f"the sample never started: {workbench.poll()} {workbench.stderr.read() if ended else ''}"
        sleeper = found[0]
        sample = [sleeper] + [pid for pid in [parent(sleeper)] if pid]  # the sleep and the harness that ran it
        watched = {pid: start_time(pid) for pid in sample}
        watched = {pid: started for pid, started in watched.items() if started is not None}
        assert sleeper in watched
        workbench.send_signal(kill_with)
        workbench.wait(timeout=60)
        deadline = time.monotonic() + 20  # poll: how fast is not the question, whether at all is
        while any(alive(pid, started) for pid, started in watched.items()) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = [pid for pid, started in watched.items() if alive(pid, started)]
        assert not left, f"still running after workbench was killed ({level.value}): {left}"


def test_the_guardian_kills_what_is_registered_when_its_pipe_closes_and_nothing_else() -> None:
    """The guardian's contract, with real processes: at the end of its input it kills each process
    group still registered (with its environment tag), and leaves a released one alone."""
    from workbench.execute.guardian import Guardian

    started = []
    for index in range(2):
        tag = f"WORKBENCH_SANDBOX_RUN=guardiantest{secrets.token_hex(4)}{index}"
        name, _, value = tag.partition("=")
        started.append((subprocess.Popen(["sleep", "600"], start_new_session=True, env={name: value}), tag))
    (released, released_tag), (registered, registered_tag) = started
    guardian = Guardian()
    try:
        guardian.watch(released.pid, None, released_tag)
        guardian.watch(registered.pid, None, registered_tag)
        guardian.release(released.pid)
        guardian.stop()  # as the kernel closes the pipe when workbench dies
        assert registered.wait(timeout=20) == -signal.SIGKILL
        assert released.poll() is None
    finally:
        for process, _ in started:
            process.kill()
            process.wait()


def _guardian_of(workbench_pid: int) -> int | None:
    """The pid of the guardian that ``workbench_pid`` started (its child running guardian.py)."""
    for pid in processes_with_argument(os.path.abspath(guardian_module.__file__)):
        if parent(pid) == workbench_pid:
            return pid
    return None


def _guardians_of(workbench_pid: int) -> set[int]:
    """The pids of every guardian that ``workbench_pid`` started and that still runs."""
    return {pid for pid in processes_with_argument(os.path.abspath(guardian_module.__file__))
            if parent(pid) == workbench_pid}


def _block_is_taken(uid: int) -> bool:
    """Whether the uid block holding ``uid`` is owned (its lock file is flocked) by some process."""
    import fcntl
    import tempfile

    from workbench.execute.isolation import SANDBOX_UID_BASE, UID_BLOCK_SIZE

    block = (uid - SANDBOX_UID_BASE) // UID_BLOCK_SIZE
    with open(os.path.join(tempfile.gettempdir(), f"workbench-sandbox-uids-{block}.lock"), "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@pytest.mark.skipif(not ROOT, reason="user ids per worker (and their blocks) exist only as root")
def test_a_killed_workbench_keeps_its_uid_block_until_the_guardian_killed_its_samples(tmp_path: Path) -> None:
    """The block of user ids is owned by an flock that the kernel dropped with the killed workbench,
    while its samples still ran under those user ids until the guardian killed them: a workbench
    started meanwhile could take the same block, and the old guardian's kill of every process of
    the user id would hit the new run's samples. The guardian holds the lock until it is done.
    Shown without timing: the guardian is stopped (SIGSTOP) while workbench is killed."""
    with _execute_a_sleeping_sample(tmp_path, "--isolation", "rlimits", "--python", SYSTEM_PYTHON) as (workbench, found):
        guardian = None
        try:
            assert found, f"the sample never started: {workbench.poll()} {workbench.stderr.read() if workbench.poll() is not None else ''}"
            sleeper, started = found[0], start_time(found[0])
            with open(f"/proc/{sleeper}/status") as handle:
                uid = next(int(line.split()[1]) for line in handle if line.startswith("Uid:"))
            guardian = _guardian_of(workbench.pid)
            assert guardian is not None
            os.kill(guardian, signal.SIGSTOP)
            workbench.kill()
            workbench.wait(timeout=60)
            assert alive(sleeper, started)  # the guardian has not run yet: the sample still runs as uid
            assert _block_is_taken(uid), "the uid block was free while its samples still ran"
            os.kill(guardian, signal.SIGCONT)
            deadline = time.monotonic() + 20
            while alive(sleeper, started) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not alive(sleeper, started)
        finally:
            if guardian is not None:
                with contextlib.suppress(OSError):
                    os.kill(guardian, signal.SIGCONT)


def test_a_forked_child_does_not_keep_the_guardian_from_its_end_of_input() -> None:
    """A process forked without ``exec`` (``multiprocessing``'s default start method on Linux, a
    library's worker) inherits every descriptor, close-on-exec ones too: holding the guardian's
    write end, it kept the guardian from ever reading the end of its input, so samples outlived a
    killed workbench while such a child lived, and :meth:`Guardian.stop` waited 30 s for nothing.
    The write end is closed in forked children."""
    from workbench.execute.guardian import Guardian

    tag = f"WORKBENCH_SANDBOX_RUN=guardianfork{secrets.token_hex(4)}"
    name, _, value = tag.partition("=")
    sample = subprocess.Popen(["sleep", "600"], start_new_session=True, env={name: value})
    guardian = Guardian()
    child = None
    try:
        guardian.watch(sample.pid, None, tag)
        child = os.fork()
        if child == 0:  # a worker of the library's user: it lives on and never touches the guardian
            try:
                time.sleep(120)
            finally:
                os._exit(0)
        guardian.stop()  # as the kernel closes the pipe when workbench dies
        assert sample.wait(timeout=20) == -signal.SIGKILL
    finally:
        if child:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        sample.kill()
        sample.wait()


def test_a_closed_sandbox_starts_no_guardian() -> None:
    """A sample started just before :meth:`Sandbox.close` registers with the guardian after it:
    ``close`` stopped the guardian, and that ``watch`` started a new one, which lived on, idle,
    until the Sandbox was garbage-collected. Real samples and processes at the ``rlimits`` level;
    ``close`` is made to run exactly between the sample's start and its ``watch`` (no timing)."""
    from workbench.execute.isolation import detect_isolation
    from workbench.execute.sandbox import Sandbox, new_token
    from workbench.languages.python_runner import PythonTestRunner

    box = Sandbox(detect_isolation(IsolationLevel.RLIMITS), reuse_interpreters=False)
    runner = PythonTestRunner(SYSTEM_PYTHON if ROOT and os.path.exists(SYSTEM_PYTHON) else None)
    watch = box._guardian.watch

    def close_first(*args) -> None:
        box.close()  # kills the sample just started, stops the guardian
        watch(*args)

    box._guardian.watch = close_first
    before = _guardians_of(os.getpid())  # other tests' Sandboxes in this process may hold theirs
    token = new_token()
    spec = runner.prepare("def f():\n    import time\n    time.sleep(600)\n",
                          "def check(candidate):\n    candidate()\n", "f", token)
    try:
        outcome = box.run(spec, token, 600.0)
        assert outcome.status != "passed" and outcome.duration_s < 600, outcome.detail  # close() ended it
        assert _guardians_of(os.getpid()) <= before, "a guardian runs for a closed Sandbox"
    finally:
        box.release_workers()
