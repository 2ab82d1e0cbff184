"""Samples forked by a worker's pre-started interpreter (workbench.execute.zygote): what each
one still has of its own, and the per-sample path wherever the zygote cannot serve. Real
bubblewrap, real processes, the real Python runner; the hostile suite runs both ways too."""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time

import pytest

from workbench.execute.isolation import IsolationLevel, detect_isolation
from workbench.execute.processes import processes_of_uid
from workbench.execute.sandbox import Sandbox, new_token
from workbench.execute.sandbox_helpers import available_levels, processes_with_cmdline
from workbench.languages.python_runner import PythonTestRunner
from workbench.languages.spec import InvalidRunSpecError, RunSpec

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or IsolationLevel.BUBBLEWRAP not in available_levels(),
    reason="interpreters are reused only under bubblewrap as root",
)

RUNNER = PythonTestRunner()
CHECK = "def check(candidate):\n    assert candidate() == 1\n"


@pytest.fixture
def sandbox():
    box = Sandbox(detect_isolation(IsolationLevel.BUBBLEWRAP))
    yield box
    box.release_workers()


def run(sandbox: Sandbox, program: str, *, slot: int = 0, timeout_s: float = 30.0, **spec_changes):
    token = new_token()
    spec = RUNNER.prepare(program, CHECK, "f", token)
    if spec_changes:
        spec = dataclasses.replace(spec, **spec_changes)
    return sandbox.run(spec, token, timeout_s, slot=slot)


def test_a_forked_sample_is_alone_in_its_namespaces(sandbox):
    """It sees only its own processes, holds only its protocol fds, runs as the worker's user id
    with no capability and no_new_privs, in a fresh working directory holding its own files."""
    outcome = run(sandbox, """
import os, sys
def f():
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
    facts = {
        "pids": sorted(int(name) for name in os.listdir("/proc") if name.isdigit()),
        "fds": sorted(int(fd) for fd in os.listdir("/proc/self/fd")),
        "uid": os.getuid(), "caps": {status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
        "nnp": status["NoNewPrivs"].strip(), "files": sorted(os.listdir(".")), "cwd": os.getcwd(),
        "argv": sys.argv, "main": sys.modules["__main__"].__file__,
    }
    print("FACTS", repr(facts), file=sys.stderr)
    return 1
""")
    assert outcome.status == "passed", outcome
    assert sandbox.reuses_interpreters, sandbox.reuse_unavailable
    facts = eval(outcome.stderr_tail.split("FACTS", 1)[1].strip())  # our own repr of plain values
    assert facts["pids"] == [1, 2]  # its init and itself: not the zygote, not another sample
    assert facts["fds"] in ([0, 1, 2, 3, 4], [0, 1, 2, 4])  # the listing's own fd, the pass pipe
    assert facts["uid"] == sandbox.uid_for_slot(0)
    assert facts["caps"] == {"0000000000000000"} and facts["nnp"] == "1"
    # tests.py is gone: the harness read it and removed it before any candidate code ran
    assert facts["files"] == ["harness.py", "program.py"] and facts["cwd"] == "/tmp/work"
    assert facts["argv"][:1] == ["harness.py"] and facts["main"] == "/tmp/work/harness.py"


def test_nothing_of_a_forked_sample_runs_when_run_returns(sandbox):
    """The zygote answers once the sample's PID namespace is empty: daemons and background
    processes are gone when run returns, without any grace period or sweep."""
    marker = "5" + new_token()[:7].translate(str.maketrans("abcdef", "123456"))
    outcome = run(sandbox, f"""
import os, subprocess
def f():
    subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp("sleep", ["sleep", "{marker}1"])
        os._exit(0)
    return 1
""")
    assert outcome.status == "passed", outcome
    assert processes_with_cmdline(marker) == []
    assert processes_of_uid(sandbox.uid_for_slot(0)) == []


def test_what_one_sample_leaves_does_not_reach_the_next_on_its_worker(sandbox):
    """Each sample mounts its own /tmp (its working directory in it): files the previous
    sample of the same worker wrote there are not visible."""
    names = ["/tmp/left-by-a-sample", "/tmp/work/left-too"]
    writer = "def f():\n" + "".join(f"    open({name!r}, 'w').write('state')\n" for name in names) + "    return 1\n"
    reader = "import os\ndef f():\n    return 1 if not any(os.path.exists(n) for n in %r) else 0\n" % (names,)
    assert run(sandbox, writer).status == "passed"
    assert run(sandbox, reader).status == "passed"


def test_a_changed_environment_gets_its_own_zygote(sandbox):
    """The interpreter starts with the sample's environment (PYTHONHASHSEED and the like act
    at start-up): a spec with another environment is served by another zygote."""
    program = "import os\ndef f():\n    return 1 if os.environ['WB_PROBE'] == %r else 0\n"
    base = RUNNER.prepare("", CHECK, "f", "t").env
    for value in ("one", "two", "one"):
        outcome = run(sandbox, program % value, env={**base, "WB_PROBE": value})
        assert outcome.status == "passed", (value, outcome)


def test_a_timeout_kills_the_forked_sample_at_its_timeout(sandbox):
    started = time.monotonic()
    outcome = run(sandbox, "def f():\n    while True:\n        pass\n", timeout_s=1.5)
    assert outcome.status == "timeout", outcome
    assert 1.5 <= outcome.duration_s < 5 and time.monotonic() - started < 10
    assert run(sandbox, "def f():\n    return 1\n").status == "passed"  # the worker goes on


def test_a_worker_whose_zygote_died_gets_a_new_one(sandbox):
    assert run(sandbox, "def f():\n    return 1\n").status == "passed"
    zygote = sandbox._zygotes[0]
    signal.pidfd_send_signal(zygote._init_pidfd, signal.SIGKILL)  # its whole sandbox ends
    time.sleep(0.2)
    assert run(sandbox, "def f():\n    return 1\n").status == "passed"
    assert sandbox._zygotes[0] is not zygote


def test_closing_the_sandbox_kills_a_running_forked_sample():
    sandbox = Sandbox(detect_isolation(IsolationLevel.BUBBLEWRAP))
    marker = "6" + new_token()[:7].translate(str.maketrans("abcdef", "123456"))
    outcomes = []
    worker = threading.Thread(target=lambda: outcomes.append(
        run(sandbox, f"import subprocess\ndef f():\n    subprocess.run(['sleep', '{marker}'])\n    return 1\n",
            timeout_s=60)))
    worker.start()
    deadline = time.monotonic() + 30
    while not processes_with_cmdline(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with_cmdline(marker), "the sample did not start"
    sandbox.close()
    worker.join(30)
    assert outcomes and not outcomes[0].passed, outcomes
    assert processes_with_cmdline(marker) == []


def test_a_zygote_that_cannot_start_leaves_the_per_sample_path(monkeypatch):
    """Where the zygote's probe fails (here: without CAP_SYS_ADMIN it cannot make a sample's
    namespaces), samples start their own sandbox and interpreter, and the reason is kept."""
    import workbench.execute.zygote as zygote

    monkeypatch.setattr(zygote, "ZYGOTE_CAPABILITIES", ("CAP_SETUID", "CAP_SETGID"))
    sandbox = Sandbox(detect_isolation(IsolationLevel.BUBBLEWRAP))
    try:
        assert run(sandbox, "def f():\n    return 1\n").status == "passed"
        assert not sandbox.reuses_interpreters
        assert "Operation not permitted" in sandbox.reuse_unavailable
        assert run(sandbox, "def f():\n    return 2\n").status == "failed"
    finally:
        sandbox.release_workers()


def test_python_main_must_name_a_file_that_run_runs():
    files = {"h.py": "", "other.py": ""}
    good = dict(files=files, run=["python3", "-S", "h.py"], token_input_fd=3, pass_token_fd=4)
    assert RunSpec(**good, python_main="h.py").python_main == "h.py"
    with pytest.raises(InvalidRunSpecError, match="python_main"):
        RunSpec(**good, python_main="missing.py")
    with pytest.raises(InvalidRunSpecError, match="python_main"):
        RunSpec(**good, python_main="other.py")
    with pytest.raises(InvalidRunSpecError, match="build"):
        RunSpec(**good, python_main="h.py", build=[["true"]])
    with pytest.raises(InvalidRunSpecError, match="pass_token_fd"):
        RunSpec(files=files, run=["python3", "h.py"], pass_token_file="t", python_main="h.py")


def test_toolchain_folders_under_tmp_stay_importable_in_a_forked_sample(sandbox):
    """A venv or a clone in a temp folder (as a CI clone under /tmp) is re-exposed read-only
    in each sample's fresh /tmp: a module first imported by the sample itself is found, and
    the sample cannot write there."""
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="workbench-toolchain-", dir="/tmp")
    try:
        os.chmod(folder, 0o755)
        with open(os.path.join(folder, "lazy_toolchain_module.py"), "w") as handle:
            handle.write("VALUE = 1\n")
        os.chmod(os.path.join(folder, "lazy_toolchain_module.py"), 0o644)
        token = new_token()
        spec = RUNNER.prepare(f"""
import sys
def f():
    sys.path.insert(0, {folder!r})
    import lazy_toolchain_module
    try:
        open({folder!r} + "/written.py", "w")
    except OSError:
        return lazy_toolchain_module.VALUE
    return 0
""", CHECK, "f", token)
        spec = dataclasses.replace(spec, read_only_paths=(*spec.read_only_paths, folder))
        outcome = sandbox.run(spec, token, 30.0, slot=0)
        assert outcome.status == "passed", outcome
        assert sandbox.reuses_interpreters, sandbox.reuse_unavailable
        assert not os.path.exists(os.path.join(folder, "written.py"))
    finally:
        shutil.rmtree(folder)
