"""A sample's peak resident memory (``peak_rss_mib``) and what it decides: real samples that
allocate a known amount, run under every isolation level this machine has (and forked by the
worker's zygote where that applies), and the rules of ``decide_status`` that use the figure."""

from __future__ import annotations

import contextlib
import dataclasses
import os

import pytest

from sandbox_ways import ROOT, SYSTEM_PYTHON, WAY_IDS, WAYS  # each way a sample can be started here
from workbench.execute.isolation import IsolationLevel, detect_isolation
from workbench.execute.limits import MiB, ResourceLimits
from workbench.execute.result_file import memory_summary
from workbench.execute.sandbox import Sandbox, _meter_report, new_token, peak_meter
from workbench.execute.sandbox_helpers import available_levels
from workbench.execute.status import Observation, decide_status
from workbench.languages.python_runner import PythonTestRunner
from workbench.languages.spec import RunSpec

CHECK = "def check(candidate):\n    assert candidate() == 1\n"
TOUCH = "b = bytearray({mib} * 2**20); b[::4096] = b'x' * len(b[::4096])"


@contextlib.contextmanager
def started(level: IsolationLevel, forked: bool, limits: ResourceLimits | None = None):
    """A sandbox at ``level`` (``forked``: its samples forked by the worker's zygote) with ``limits``
    (None: ``ResourceLimits()``'s defaults) and a Python runner the sandbox uid can reach: yields the
    ``(box, runner, forked)`` that :func:`run` takes, and releases the box's workers on exit. Skips the
    test where no such Python exists."""
    box = Sandbox(detect_isolation(level), limits, reuse_interpreters=forked)
    runner = PythonTestRunner()
    if box.inaccessible_paths(runner.prepare("", "", None, "t")):  # a Python under /root: not for the sandbox uid
        if not os.path.exists(SYSTEM_PYTHON):
            pytest.skip(f"no Python reachable by the sandbox uid at level {level.value}")
        runner = PythonTestRunner(SYSTEM_PYTHON)
    try:
        yield box, runner, forked
    finally:
        box.release_workers()


@pytest.fixture(params=WAYS, ids=WAY_IDS)
def way(request):
    with started(*request.param) as started_way:
        yield started_way


def run(way, program: str, timeout_s: float = 60.0):
    box, runner, forked = way
    token = new_token()
    outcome = box.run(runner.prepare(program, CHECK, "f", token), token, timeout_s)
    assert box.reuses_interpreters == forked
    return outcome


def test_a_sample_that_allocates_300_mib_peaks_there(way):
    small = run(way, "def f():\n    return 1\n")
    big = run(way, f"def f():\n    {TOUCH.format(mib=300)}\n    return 1\n")
    assert small.status == big.status == "passed"
    if small.peak_rss_mib is None:  # only where neither the zygote nor GNU time can measure below our size
        assert not way[2] and peak_meter() is None
    else:
        assert small.peak_rss_mib < 60  # an interpreter, no more
    assert 300 <= big.peak_rss_mib < 300 + 60


def test_a_child_that_allocates_counts(way):
    """The figure is the largest of the sample's processes: a forked child's 300 MiB shows."""
    outcome = run(way, f"""
import os
def f():
    pid = os.fork()
    if pid == 0:
        {TOUCH.format(mib=300)}
        os._exit(0)
    os.waitpid(pid, 0)
    return 1
""")
    assert outcome.status == "passed"
    assert 300 <= outcome.peak_rss_mib < 300 + 60


def test_a_timed_out_sample_reports_what_it_held(way):
    """Killed at its timeout, its processes are reaped by no one who reports ``ru_maxrss``: their
    high-water marks are read just before the kill (6 s: room for a busy machine to allocate)."""
    outcome = run(way, f"import time\ndef f():\n    {TOUCH.format(mib=150)}\n    time.sleep(60)\n", timeout_s=6.0)
    assert outcome.status == "timeout"
    assert 150 <= outcome.peak_rss_mib < 150 + 60


def test_a_large_host_process_does_not_raise_the_figure(way):
    """A process started from workbench's starts with workbench's memory (ru_maxrss keeps it):
    the figure must be the sample's, not the host's."""
    ballast = bytearray(400 * MiB)
    ballast[::4096] = b"x" * len(ballast[::4096])
    outcome = run(way, "def f():\n    return 1\n")
    assert outcome.status == "passed"
    assert outcome.peak_rss_mib is None or outcome.peak_rss_mib < 60
    if peak_meter() is not None:
        assert outcome.peak_rss_mib is not None
    del ballast


def test_sigkill_near_the_memory_ceiling_is_oom(way):
    """The kernel's OOM killer ends a sample with SIGKILL; near the ceiling that is ``oom`` (the
    ceiling is set low here, the sample sends itself the SIGKILL the OOM killer would)."""
    box = way[0]
    if box.isolation.level is IsolationLevel.NAMESPACES and peak_meter() is None:
        pytest.skip("without GNU time the sample is its PID namespace's init there: it cannot SIGKILL itself")
    box.memory_ceiling_bytes = 320 * MiB
    kill = "os.kill(os.getpid(), signal.SIGKILL)"
    near = run(way, f"import os, signal\ndef f():\n    {TOUCH.format(mib=300)}\n    {kill}\n")
    far = run(way, f"import os, signal\ndef f():\n    {kill}\n")
    if near.peak_rss_mib is None:
        assert not way[2] and peak_meter() is None
        pytest.skip("no GNU time here, and this test process has held more than the sample: not measurable")
    assert (near.status, near.signal) == ("oom", "SIGKILL")
    assert "OOM killer" in near.detail and "memory ceiling (320 MiB)" in near.detail
    assert (far.status, far.signal) == ("killed", "SIGKILL")


# -- the rules, on observations -------------------------------------------------------------------

SPEC = RunSpec(files={"h.sh": "true"}, run=["/bin/sh", "h.sh"], token_input_fd=3, pass_token_fd=4)


def seen(**fields) -> Observation:
    base = Observation(returncode=128 + 9, duration_s=1.0, timeout_s=10.0, wrapper_reports_signals=True,
                       memory_limit_bytes=4096 * MiB, memory_ceiling_bytes=16384 * MiB)
    return dataclasses.replace(base, **fields)


def test_sigkill_is_oom_only_near_a_bound():
    near_limit = decide_status(SPEC, "t", seen(peak_rss_kib=3900 * 1024))
    # RLIMIT_AS fails allocations and sends no signal: a SIGKILL near it alone is not called the OOM killer's
    assert near_limit.status == "killed" and "OOM killer" not in near_limit.detail, near_limit.detail
    assert "was near the memory limit (--memory-mb) (4096 MiB)" in near_limit.detail
    assert near_limit.peak_rss_mib == 3900.0
    near_ceiling = decide_status(SPEC, "t", seen(peak_rss_kib=15000 * 1024))
    assert near_ceiling.status == "oom" and "machine's memory ceiling (16384 MiB)" in near_ceiling.detail
    assert decide_status(SPEC, "t", seen(peak_rss_kib=1000 * 1024)).status == "killed"
    assert decide_status(SPEC, "t", seen(peak_rss_kib=None)).status == "killed"  # not measured: no guess
    small_ceiling = seen(peak_rss_kib=1000 * 1024, memory_ceiling_bytes=1024 * MiB)
    assert "machine's memory ceiling (1024 MiB)" in decide_status(SPEC, "t", small_ceiling).detail
    # another signal near the limit is not the OOM killer's
    assert decide_status(SPEC, "t", seen(returncode=128 + 11, peak_rss_kib=3900 * 1024)).status == "killed"


def test_a_timeout_near_the_limit_says_so():
    outcome = decide_status(SPEC, "t", seen(returncode=-9, timed_out=True, duration_s=10.0, peak_rss_kib=3900 * 1024))
    assert outcome.status == "timeout"
    assert "peak resident memory, 3900 MiB, was near the memory limit" in outcome.detail
    plain = decide_status(SPEC, "t", seen(returncode=-9, timed_out=True, duration_s=10.0, peak_rss_kib=50 * 1024))
    assert plain.detail == "killed after the 10.0 s timeout"


def test_the_meter_report_is_split_from_the_wrappers_messages():
    assert _meter_report(b"1468 0 0.25 0.50\n") == (1468, 0, 0.75, b"")
    assert _meter_report(b"bwrap: Can't mount proc\n1184 1 0.00 0.01\n") == (1184, 1, 0.01,
                                                                             b"bwrap: Can't mount proc\n")
    assert _meter_report(b"") == (None, None, None, b"")
    assert _meter_report(b"bwrap: died\n") == (None, None, None, b"bwrap: died\n")
    assert _meter_report(b"1468\n") == (None, None, None, b"1468\n")
    assert _meter_report(b"1468 0\n") == (None, None, None, b"1468 0\n")  # a line of another format


def test_the_memory_summary_reads_old_rows_without_the_column():
    rows = [{"task_id": "t/0", "sample_id": 0, "passed": 1},  # written before peak_rss_mib existed
            {"task_id": "t/0", "sample_id": 1, "passed": 1, "peak_rss_mib": None},
            {"task_id": "t/1", "sample_id": 0, "passed": 0, "peak_rss_mib": 10.0},
            {"task_id": "t/1", "sample_id": 1, "passed": 0, "peak_rss_mib": 20.0},
            {"task_id": "t/2", "sample_id": 0, "passed": 0, "peak_rss_mib": 95.5}]
    summary = memory_summary(rows, 100 * MiB)
    assert summary == {"measured": 3, "unmeasured": 2, "median_peak_rss_mib": 20.0, "max_peak_rss_mib": 95.5,
                       "limit_mib": 100.0, "near_limit": 1, "near_limit_samples": ["t/2 0: 95.5 MiB"]}
    assert memory_summary(rows[:2], None)["median_peak_rss_mib"] is None



def test_execute_writes_the_column_and_the_summary(tmp_path):
    """End to end: every row has its figure, and the summary names the sample near --memory-mb."""
    import json

    from workbench.data.loading import load_humaneval
    from workbench.execute.job import ExecutionConfig, run_execute
    from workbench.execute.result_file import read_results, summary_path

    problems = load_humaneval().select(range(3))
    rows = [{"task_id": p["task_id"], "sample_id": 0, "completion": p["canonical_solution"]} for p in problems]
    body = rows[0]["completion"]
    rows[0]["completion"] = f"    {TOUCH.format(mib=465)}\n" + body  # 465 of 512 MiB: near the limit
    generations = tmp_path / "gen.jsonl"
    generations.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    output = tmp_path / "out.jsonl"
    summary = run_execute(generations, output, ExecutionConfig(timeout=60.0, workers=1, reference_cache=False,
                                                               memory_mb=512))
    results = {row["task_id"]: row for row in read_results(output)}
    assert all(row["status"] == "passed" for row in results.values()), results
    assert results["HumanEval/0"]["peak_rss_mib"] >= 465
    assert all(results[f"HumanEval/{i}"]["peak_rss_mib"] < 60 for i in (1, 2))
    memory = json.loads(summary_path(output).read_text())["memory"]
    assert memory == summary.memory
    assert memory["measured"] == 3 and memory["limit_mib"] == 512 and memory["near_limit"] == 1
    assert memory["near_limit_samples"][0].startswith("HumanEval/0 0: ")


def test_the_summary_compares_no_peak_with_a_limit_the_runner_turned_off(tmp_path, monkeypatch):
    """A runner that turns the address-space limit off (the Java plugin's: the JVM reserves
    address space) runs its samples with no limit: the summary's near_limit must not compare
    their peaks with --memory-mb, as the rows' statuses do not (a Python runner stands in)."""
    import json

    from workbench.data.loading import load_humaneval
    from workbench.execute import job
    from workbench.execute.job import ExecutionConfig, run_execute

    class Unlimited(PythonTestRunner):
        def prepare(self, program, tests, entry_point, token):
            spec = super().prepare(program, tests, entry_point, token)
            return dataclasses.replace(spec, limit_overrides={"address_space_bytes": None})

    monkeypatch.setattr(job, "_runner", lambda config: Unlimited(config.python))
    problem = load_humaneval().select(range(1))[0]
    completion = f"    {TOUCH.format(mib=480)}\n" + problem["canonical_solution"]  # above 90 % of 512 MiB
    generations = tmp_path / "gen.jsonl"
    generations.write_text(json.dumps({"task_id": problem["task_id"], "sample_id": 0, "completion": completion}) + "\n")
    summary = run_execute(generations, tmp_path / "out.jsonl",
                          ExecutionConfig(timeout=60.0, workers=1, reference_cache=False, memory_mb=512))
    assert summary.counts == {"passed": 1}
    assert summary.memory["max_peak_rss_mib"] >= 480
    assert summary.memory["limit_mib"] is None and summary.memory["near_limit"] == 0


# -- the chain GNU time / bwrap / the step shell still dies with workbench ----------------------------

ORPHAN = """
import os, sys
from workbench.execute.isolation import detect_isolation
from workbench.execute.sandbox import Sandbox, new_token
from workbench.languages.python_runner import PythonTestRunner
box = Sandbox(detect_isolation("bubblewrap"), reuse_interpreters=False)
runner = PythonTestRunner(sys.argv[1]) if sys.argv[1] else PythonTestRunner()
token = new_token()
program = "import os\\ndef f():\\n    os.execv('/bin/sleep', ['sleep', '%s'])\\n" % os.environ["SLEEP_MARKER"]
print("started", flush=True)
box.run(runner.prepare(program, "def check(candidate):\\n    candidate()\\n", "f", token), token, 600)
"""


def _running(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
            with open(f"/proc/{name}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in argv and state != "Z":
            found.append(int(name))
    return found


@pytest.mark.skipif(IsolationLevel.BUBBLEWRAP not in available_levels(), reason="needs bubblewrap")
def test_a_killed_workbench_takes_its_bubblewrap_samples_with_it():
    """bwrap --die-with-parent: when workbench dies (SIGKILL: no clean-up of its own runs), its samples
    die too. GNU time between workbench and bwrap, and a step shell that is the namespace's first
    process after setpriv changed its user id, must not break that chain."""
    import random
    import signal
    import subprocess
    import sys
    import time

    marker = f"{random.randint(10**6, 10**7)}.5"  # the sample's `sleep` argument: finds its process
    runner = PythonTestRunner()
    python = SYSTEM_PYTHON if Sandbox(detect_isolation("bubblewrap")).inaccessible_paths(
        runner.prepare("", "", None, "t")) else ""
    # the marker goes by the environment: in argv it would name this host process too
    host = subprocess.Popen([sys.executable, "-c", ORPHAN, python], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "SLEEP_MARKER": marker})
    try:
        assert host.stdout.readline().strip() == "started"
        deadline = time.monotonic() + 60
        while not _running(marker) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _running(marker), "the sample never started"
    finally:
        host.send_signal(signal.SIGKILL)
        host.wait()
    deadline = time.monotonic() + 10
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = _running(marker)
    for pid in left:  # do not leave it behind for the next test
        os.kill(pid, signal.SIGKILL)
    assert not left, "the sample outlived the workbench that started it"


def test_a_gnu_time_first_on_path_in_a_hidden_folder_is_not_the_meter(way, tmp_path, monkeypatch):
    """A GNU time of the user's own (a conda env's, under /home or /tmp) comes first on PATH: under
    bubblewrap GNU time runs inside the sandbox, where that folder is hidden. The meter is the
    system's, and every sample still runs."""
    import shutil

    from workbench.execute import sandbox as sandbox_module

    if shutil.which("time", path="/usr/local/bin:/usr/bin:/bin") is None:
        pytest.skip("no GNU time in the system folders")
    own = tmp_path / "bin"
    own.mkdir()
    shutil.copy2(shutil.which("time", path="/usr/local/bin:/usr/bin:/bin"), own / "time")
    monkeypatch.setenv("PATH", f"{own}:{os.environ['PATH']}")
    sandbox_module.peak_meter.cache_clear()
    try:
        outcome = run(way, "def f():\n    return 1\n")
    finally:
        sandbox_module.peak_meter.cache_clear()
    assert outcome.status == "passed", outcome.detail
    assert outcome.peak_rss_mib is not None and outcome.peak_rss_mib < 60


FORGE = """def f():
    import os, signal
    for name in os.listdir('/proc'):
        try:
            with open(f'/proc/{name}/cmdline', 'rb') as handle:
                argv = handle.read().split(b'\\0')
            if os.path.basename(argv[0]) == b'time':  # the peak meter's, and the namespaces level's init
                with open(f'/proc/{name}/fd/2', 'w') as report:
                    report.write('1000000000 0 0.00 0.00\\n')
        except OSError:
            pass
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.skipif(not ROOT, reason="as a normal user GNU time runs as the sample's own user: documented as forgeable")
def test_a_sample_cannot_forge_its_peak_into_an_oom_as_root(way):
    """As root GNU time is out of the sample's reach at every level (inside bubblewrap it runs as
    root; below it, as the sample's user id, but started by a change of user id, so not dumpable:
    its ``/proc/PID/fd`` is closed to the sample): a sample that writes a huge figure into GNU
    time's report and then ends by SIGKILL stays ``killed`` with its own small peak."""
    outcome = run(way, FORGE)
    assert (outcome.status, outcome.signal) == ("killed", "SIGKILL"), (outcome.status, outcome.detail,
                                                                       outcome.peak_rss_mib)
    assert outcome.peak_rss_mib is None or outcome.peak_rss_mib < 1000


@pytest.mark.parametrize("status", [128 + 9, 128 + 24])
def test_a_sample_that_exits_with_128_plus_n_was_not_ended_by_signal_n(way, status):
    """GNU time (and the zygote's init, and bubblewrap's) pass a child's death by signal N on as exit
    status 128 + N; a sample that exits with 137 or 152 itself was read as SIGKILL (``killed``) or
    SIGXCPU (``timeout``), at the ``rlimits`` level only since GNU time wraps every sample. GNU time's
    ``%x`` (0 for a signal) and the zygote's init tell the two apart."""
    outcome = run(way, f"def f():\n    import os\n    os._exit({status})\n")
    assert (outcome.status, outcome.signal, outcome.exit_code) == ("failed", None, status), outcome.detail


def test_a_sample_that_sends_itself_sigxcpu_at_once_is_killed_not_timed_out(way):
    """``SIGXCPU`` is the CPU-time limit's (``timeout``) only when the sample ran long enough to
    use that much CPU on this machine's cores; a sample that sends it to itself after a few
    milliseconds was ``timeout`` ("CPU time limit exceeded"): a forged verdict. (At ``namespaces``
    without GNU time the sample is its namespace's init, which ignores it.)"""
    outcome = run(way, "def f():\n    import os, signal\n    os.kill(os.getpid(), signal.SIGXCPU)\n    return 1\n")
    if way[0].isolation.level is IsolationLevel.NAMESPACES and peak_meter() is None:
        assert outcome.status == "passed", outcome.detail
    else:
        assert (outcome.status, outcome.signal) == ("killed", "SIGXCPU"), outcome.detail
        assert "CPU time limit" in outcome.detail  # it says why it is not the limit's


def test_a_sample_that_burns_its_cpu_time_is_still_timed_out_by_sigxcpu():
    """The rule above keeps a real ``RLIMIT_CPU``: a run that lasted long enough for its CPU limit."""
    spec = PythonTestRunner().prepare("def f():\n    return 1\n", CHECK, "f", "t" * 32)
    seen = Observation(returncode=-24, duration_s=3.5, timeout_s=3.0, cpu_limit_s=4.0, cpu_count=2)
    assert decide_status(spec, "t" * 32, seen).status == "timeout"
    unknown = Observation(returncode=-24, duration_s=0.01, timeout_s=3.0)  # no limit known: as before
    assert decide_status(spec, "t" * 32, unknown).status == "timeout"
    soon = Observation(returncode=-24, duration_s=0.01, timeout_s=3.0, cpu_limit_s=4.0, cpu_count=2)
    assert decide_status(spec, "t" * 32, soon).status == "killed"


def test_sigxcpu_is_judged_by_the_cpu_time_used_when_it_was_measured():
    """With the CPU time measured (GNU time's ``%U`` + ``%S``, the zygote's ``wait4``), a ``SIGXCPU``
    is the limit's only when the sample used (about) its CPU limit, however long it lasted: one after
    3.5 s of sleep with 0.05 CPU seconds was sent; one at 4 (or 2.9) CPU seconds is the limit's. Unmeasured,
    the wall-time rule above still applies."""
    spec = PythonTestRunner().prepare("def f():\n    return 1\n", CHECK, "f", "t" * 32)
    slept = Observation(returncode=-24, duration_s=3.5, timeout_s=3.0, cpu_limit_s=4.0, cpu_count=2, cpu_s=0.05)
    outcome = decide_status(spec, "t" * 32, slept)
    assert (outcome.status, outcome.signal) == ("killed", "SIGXCPU")
    assert "0.05 CPU seconds" in outcome.detail and "4 s CPU time limit" in outcome.detail, outcome.detail
    spun = dataclasses.replace(slept, cpu_s=4.01)
    assert decide_status(spec, "t" * 32, spun).status == "timeout"
    # the kernel's tick-sampled CPU time, which the limit is checked against, runs ahead of wait4's
    # exact one: a spinning sample got the limit's SIGXCPU at 0.73 of its measured CPU limit here
    sampled = dataclasses.replace(slept, cpu_s=2.9)
    assert decide_status(spec, "t" * 32, sampled).status == "timeout"


# at namespaces the sample was its namespace's init: it ignored the soft limit's SIGXCPU, the hard
# limit's SIGKILL ended it, and unshare (util-linux 2.38.1) turned that into "unshare: sigprocmask
# unblock failed: Invalid argument", exit status 1: `failed`. GNU time is the init there now.
SPIN_WAYS = [pytest.param(level, forked, id=way_id) for (level, forked), way_id in zip(WAYS, WAY_IDS)]


@pytest.mark.parametrize(("level", "forked"), SPIN_WAYS)
def test_a_sample_that_spins_past_its_cpu_limit_is_still_timed_out(level, forked):
    """A real ``RLIMIT_CPU`` (1 CPU second, a 60 s timeout): ``SIGXCPU`` after the sample used it
    is still ``timeout``, at every way a sample starts."""
    with started(level, forked, ResourceLimits(cpu_seconds=1)) as way:
        outcome = run(way, "def f():\n    while True:\n        pass\n")
    assert outcome.status == "timeout" and "CPU time limit exceeded" in outcome.detail, outcome.detail


@pytest.mark.parametrize(("level", "forked"), SPIN_WAYS)
def test_a_sample_that_sleeps_then_sends_itself_sigxcpu_is_killed(level, forked):
    """A ``SIGXCPU`` the sample sends itself after sleeping 1.5 s with a 2 CPU-second limit: the
    wall time alone (1.5 s x 2 cores + 1 s of slack >= 2 s) let it pass for the limit's
    (``timeout``), though the sample used a few hundredths of a CPU second. The CPU time GNU time
    (or the zygote's ``wait4``) measured, under half the limit, says it was sent: ``killed``, at every
    way a sample starts.
    (At ``namespaces`` without GNU time the sample is its namespace's init, which ignores it.)"""
    program = "import os, signal, time\ndef f():\n    time.sleep(1.5)\n    os.kill(os.getpid(), signal.SIGXCPU)\n"
    with started(level, forked, ResourceLimits(cpu_seconds=2)) as way:
        outcome = run(way, program)
    if level is IsolationLevel.NAMESPACES and peak_meter() is None:
        assert outcome.status == "passed", outcome.detail
        return
    assert (outcome.status, outcome.signal) == ("killed", "SIGXCPU"), outcome.detail
    assert "CPU" in outcome.detail and outcome.duration_s >= 1.5, outcome.detail


@pytest.mark.parametrize(("level", "forked"), SPIN_WAYS)
def test_a_sample_that_ignores_sigxcpu_is_ended_by_the_hard_cpu_limit(level, forked):
    """The hard ``RLIMIT_CPU`` (one CPU second above the soft one) ends a sample that ignores the
    soft limit's ``SIGXCPU`` with the kernel's ``SIGKILL``: at ``namespaces`` that was ``failed``
    (util-linux 2.38.1's ``unshare`` exits 1 after its child's SIGKILL)."""
    program = "import signal\ndef f():\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n    while True:\n        pass\n"
    with started(level, forked, ResourceLimits(cpu_seconds=1)) as way:
        outcome = run(way, program)
    assert (outcome.status, outcome.signal) == ("timeout", "SIGKILL"), outcome.detail
    assert "CPU time limit exceeded" in outcome.detail and "hard limit" in outcome.detail, outcome.detail


def test_a_sigkill_is_the_hard_cpu_limits_only_after_the_cpu_time_was_used():
    """Rule 6c of ``decide_status``, on observations: a SIGKILL before the timeout is the hard
    ``RLIMIT_CPU``'s (``timeout``) only when the sample's processes used at least the CPU limit;
    near the memory ceiling it stays the OOM killer's; CPU time unknown, or a runner with build
    commands (whose CPU time counts too), it stays ``killed``."""
    spun = seen(cpu_s=2.0, cpu_limit_s=1.0, duration_s=2.1)
    assert decide_status(SPEC, "t", spun).status == "timeout"
    assert "CPU time limit exceeded" in decide_status(SPEC, "t", spun).detail
    assert decide_status(SPEC, "t", dataclasses.replace(spun, cpu_s=0.5)).status == "killed"
    assert decide_status(SPEC, "t", dataclasses.replace(spun, cpu_s=None)).status == "killed"
    assert decide_status(SPEC, "t", dataclasses.replace(spun, cpu_limit_s=None)).status == "killed"
    assert decide_status(SPEC, "t", dataclasses.replace(spun, peak_rss_kib=15000 * 1024)).status == "oom"
    assert decide_status(SPEC, "t", dataclasses.replace(spun, returncode=128 + 11)).status == "killed"
    built = dataclasses.replace(SPEC, build=[["/bin/true"]])
    assert decide_status(built, "t", spun).status == "killed"


def test_a_sigkill_is_the_hard_cpu_limits_after_half_that_limit_in_measured_cpu_time():
    """The kernel checks the hard ``RLIMIT_CPU`` against tick-sampled CPU time, which runs ahead of
    the exact time GNU time (``%U`` + ``%S``) and ``wait4`` report: samples that ignored ``SIGXCPU``
    and spun into the limits of a 2 s timeout (3 s soft, 4 s hard) were ended by its ``SIGKILL`` at
    3.12 to 3.86 measured CPU seconds, and under more load below the soft limit: the old rule (at least
    the soft limit) called those ``killed``. Half the hard limit decides now, as half the soft limit
    does for ``SIGXCPU``; a ``SIGKILL`` the sample sent itself at once stays ``killed``."""
    spun = seen(cpu_s=2.9, cpu_limit_s=3.0, duration_s=9.0, timeout_s=60.0)  # the hard limit a second above
    outcome = decide_status(SPEC, "t", spun)
    assert (outcome.status, outcome.signal) == ("timeout", "SIGKILL"), outcome.detail
    assert "after 2.9 CPU seconds, the hard limit's (4 s" in outcome.detail, outcome.detail
    assert decide_status(SPEC, "t", dataclasses.replace(spun, cpu_s=2.0)).status == "timeout"
    sent = decide_status(SPEC, "t", dataclasses.replace(spun, cpu_s=0.04, duration_s=0.1))
    assert (sent.status, sent.signal) == ("killed", "SIGKILL"), sent.detail
    assert decide_status(SPEC, "t", dataclasses.replace(spun, cpu_s=1.9)).status == "killed"
    # a hard limit of this process can cap the sample's at its soft one: that one decides
    capped = dataclasses.replace(spun, cpu_hard_limit_s=3.0)
    assert decide_status(SPEC, "t", dataclasses.replace(capped, cpu_s=1.6)).status == "timeout"
    assert decide_status(SPEC, "t", dataclasses.replace(capped, cpu_s=1.4)).status == "killed"


@pytest.mark.parametrize(("level", "forked"), SPIN_WAYS)
def test_a_sample_that_ignores_sigxcpu_under_a_timeouts_cpu_limits_is_timed_out(level, forked):
    """The CPU limits of a 2 s timeout (``ceil(2) + 1`` = 3 s soft, 4 s hard; a 60 s timeout here, so
    the wall clock never ends the run first on a loaded machine): a sample that ignores ``SIGXCPU``
    and spins is ended by the hard limit's ``SIGKILL``, ``timeout``, though the CPU time measured
    can fall below the soft limit (the kernel's tick-sampled time runs ahead); one that sends
    itself ``SIGKILL`` at once stays ``killed``. At every way a sample starts."""
    spin = "import signal\ndef f():\n    signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n    while True:\n        pass\n"
    sent = "import os, signal\ndef f():\n    os.kill(os.getpid(), signal.SIGKILL)\n"
    with started(level, forked, ResourceLimits(cpu_seconds=3)) as way:
        spun, killed = run(way, spin), run(way, sent)
    assert (spun.status, spun.signal) == ("timeout", "SIGKILL"), spun.detail
    assert "CPU time limit exceeded" in spun.detail and "hard limit" in spun.detail, spun.detail
    assert (killed.status, killed.signal) == ("killed", "SIGKILL"), killed.detail
