"""The one status function (workbench.execute.status.decide_status): every rule on a table of
observations, and the same statuses from the conformance kit and from the sandbox of
``workbench execute`` on real programs (real /bin/sh and Python subprocesses, real sandbox)."""

from __future__ import annotations

import dataclasses
import os
import sys

import pytest

from workbench.execute import IsolationLevel, Sandbox, detect_isolation, new_token
from workbench.execute.isolation import interpreter_paths
from workbench.execute.sandbox_helpers import run_program
from workbench.execute.status import SANDBOX_ERROR, Observation, decide_status
from workbench.languages.conformance import RunnerCase, check_plugin
from workbench.languages.python_plugin import PythonLanguage
from workbench.languages.spec import SAMPLE_STATUSES, RunSpec, TestRunner

TOKEN = "0123456789abcdef0123456789abcdef"
SPEC = RunSpec(
    files={"h.sh": "true"}, run=["/bin/sh", "h.sh"], build=[["cc", "-o", "main", "main.c"]],
    token_input_fd=3, pass_token_fd=4, exit_statuses={3: "syntax_error", 4: "error"},
    out_of_memory_markers=("MemoryError",),
)

# (id, observation fields, expected status, exit code, signal, fragment of the detail)
TABLE = [
    ("passed", dict(returncode=0, delivered=TOKEN.encode() + b"\n"), "passed", 0, None, "reported success"),
    ("passed-whitespace-around-token", dict(returncode=0, delivered=b"  " + TOKEN.encode() + b" \n"),
     "passed", 0, None, "reported success"),
    ("failed", dict(returncode=1), "failed", 1, None, "exit status 1"),
    ("failed-after-token", dict(returncode=1, delivered=TOKEN.encode()), "failed", 1, None,
     "the checks passed but the program then exited with status 1"),
    ("missing-token", dict(returncode=0), "error", 0, None, "no success token arrived"),
    ("forged-token", dict(returncode=0, delivered=b"ffffffffffffffffffffffffffffffff\n"), "error", 0, None,
     "a wrong token arrived"),
    ("token-plus-extra-bytes", dict(returncode=0, delivered=b"extra\n" + TOKEN.encode() + b"\n"), "error", 0, None,
     "a wrong token arrived"),
    ("token-twice", dict(returncode=0, delivered=(TOKEN + "\n") .encode() * 2), "error", 0, None, "a wrong token"),
    ("timeout-watchdog", dict(returncode=-9, timed_out=True, duration_s=5.01), "timeout", None, "SIGKILL",
     "killed after the 5.0 s timeout"),
    ("timeout-beats-a-delivered-token", dict(returncode=0, timed_out=True, delivered=TOKEN.encode()),
     "timeout", None, "SIGKILL", "timeout"),
    ("cpu-limit", dict(returncode=-24), "timeout", None, "SIGXCPU", "CPU time limit exceeded"),
    ("sigkill-at-the-timeout", dict(returncode=-9, duration_s=5.0), "timeout", None, "SIGKILL", "CPU time limit"),
    ("sigkill-before-the-timeout", dict(returncode=-9, duration_s=0.5), "killed", None, "SIGKILL", "ended by SIGKILL"),
    ("oom-runner-marker", dict(returncode=1, stderr_tail="Traceback ...\nMemoryError\n"), "oom", 1, None,
     "memory limit reached"),
    ("oom-os-marker", dict(returncode=1, stderr_tail="sh: fork: Cannot allocate memory"), "oom", 1, None, "memory"),
    ("oom-beats-the-signal", dict(returncode=-6, stderr_tail="MemoryError"), "oom", None, "SIGABRT", "memory"),
    ("oom-marker-of-another-runtime", dict(returncode=1, stderr_tail="terminate: std::bad_alloc"), "failed", 1,
     None, "exit status 1"),
    ("passed-beats-oom-text", dict(returncode=0, delivered=TOKEN.encode(), stderr_tail="MemoryError"), "passed", 0,
     None, "success"),
    ("killed-by-signal", dict(returncode=-11), "killed", None, "SIGSEGV", "ended by SIGSEGV"),
    ("output-limit", dict(returncode=-25), "killed", None, "SIGXFSZ", "ended by SIGXFSZ"),
    ("unknown-signal-number", dict(returncode=-200), "killed", None, "signal 200", "ended by signal 200"),
    ("wrapper-reports-128-plus-signal", dict(returncode=139, wrapper_reports_signals=True), "killed", 139, "SIGSEGV",
     "ended by SIGSEGV"),
    ("plain-exit-139-without-wrapper", dict(returncode=139), "failed", 139, None, "exit status 139"),
    ("wrapper-sigkill-at-the-timeout", dict(returncode=137, wrapper_reports_signals=True, duration_s=5.0), "timeout",
     137, "SIGKILL", "CPU time limit"),
    ("mapped-exit-status", dict(returncode=3), "syntax_error", 3, None, "harness exit status 3"),
    ("mapped-exit-status-error", dict(returncode=4), "error", 4, None, "harness exit status 4"),
    # the detail quotes stderr's last line, so it says why without stderr_tail (probe23)
    ("mapped-exit-status-says-why", dict(returncode=4, stderr_tail="Traceback (most recent call last):\n  File "
     "\"program.py\", line 3\nNameError: name 'math' is not defined\n\n"), "error", 4, None,
     "harness exit status 4: NameError: name 'math' is not defined"),
    ("exit-status-says-why", dict(returncode=134, stderr_tail="main: main.cpp:9: int main(): Assertion `x == 5' "
     "failed.\n"), "failed", 134, None, "exit status 134: main: main.cpp:9: int main(): Assertion `x == 5' failed."),
    ("build-failed", dict(returncode=0, build_failure=(0, "1")), "syntax_error", 1, None,
     "build step 'cc -o main main.c' failed with status 1"),
    ("build-report-out-of-range", dict(returncode=0, build_failure=(7, "?")), "syntax_error", None, None,
     "build step 'build' failed"),
    ("build-timed-out", dict(returncode=-9, timed_out=True, build_timed_out=True, build_s=60.0), "timeout", None,
     "SIGKILL", "the build was killed after its own 60 s limit (RunSpec.build_timeout_s); the tests never ran"),
    ("build-cpu-limit", dict(returncode=0, build_failure=(0, "152"), build_s=61.0), "timeout", 152, None,
     "build step 'cc -o main main.c' reached its CPU time limit (60 s, RunSpec.build_timeout_s)"),
    ("build-compiler-not-found", dict(returncode=0, build_failure=(0, "127")), SANDBOX_ERROR, 127, None,
     "build step 'cc -o main main.c' could not be run in the sandbox (status 127: command not found)"),
    ("build-compiler-not-executable", dict(returncode=0, build_failure=(0, "126")), SANDBOX_ERROR, 126, None,
     "status 126: found but not executable"),
    ("not-started", dict(returncode=1, started=False, stderr_tail="bwrap: setting up uid map: Permission denied\n"),
     SANDBOX_ERROR, 1, None, "the sandbox (bubblewrap, bwrap) exited with status 1 before the program started: "
     "bwrap: setting up uid map"),
    ("not-started-by-signal", dict(returncode=-9, started=False), SANDBOX_ERROR, None, "SIGKILL",
     "was ended by SIGKILL before the program started"),
    ("not-started-in-time", dict(returncode=-9, started=False, timed_out=True), SANDBOX_ERROR, None, "SIGKILL",
     "did not start the program within the 5.0 s timeout"),
    ("not-started-beats-a-token", dict(returncode=0, started=False, delivered=TOKEN.encode()), SANDBOX_ERROR, 0,
     None, "before the program started"),
    ("launch-error", dict(returncode=-1, launch_error="could not start the sandbox (/usr/bin/bwrap): [Errno 2] gone"),
     SANDBOX_ERROR, None, None, "could not start the sandbox (/usr/bin/bwrap)"),
]


@pytest.mark.parametrize(("fields", "status", "exit_code", "signal", "detail"), [row[1:] for row in TABLE],
                         ids=[row[0] for row in TABLE])
def test_decide_status(fields, status, exit_code, signal, detail):
    seen = Observation(**{"duration_s": 0.123456, "timeout_s": 5.0, "launcher": "bubblewrap, bwrap", **fields})
    outcome = decide_status(SPEC, TOKEN, seen)
    assert (outcome.status, outcome.exit_code, outcome.signal) == (status, exit_code, signal), outcome
    assert detail in outcome.detail, outcome
    assert outcome.duration_s == round(seen.duration_s, 4) and outcome.timeout_s == 5.0
    assert outcome.build_s == seen.build_s
    assert outcome.passed == (status == "passed")


@pytest.mark.parametrize("stderr_tail", ["MemoryError\nTraceback ...\nAssertionError\n", "Cannot allocate memory\n"])
def test_a_failed_check_stays_failed_whatever_stderr_says_about_memory(stderr_tail):
    # probe 27: a wrong answer that printed "MemoryError" was reported as oom, not failed
    spec = dataclasses.replace(SPEC, exit_statuses={**SPEC.exit_statuses, 1: "failed"})
    seen = Observation(duration_s=0.1, timeout_s=5.0, launcher="bubblewrap, bwrap", returncode=1, stderr_tail=stderr_tail)
    assert decide_status(spec, TOKEN, seen).status == "failed"
    seen_error = dataclasses.replace(seen, returncode=2)  # an error, e.g. MemoryError raised in the checks
    assert decide_status(spec, TOKEN, seen_error).status == "oom"


def test_the_table_reaches_every_status():
    reached = {row[2] for row in TABLE}
    assert reached == {*SAMPLE_STATUSES, SANDBOX_ERROR}


# -- the kit and the sandbox agree, on real programs --------------------------------------------------

PYTHON = os.path.realpath(sys.executable)
# the protocol as a /bin/sh harness: token in on fd 3, the "checks" (the program), token out on fd 4
HARNESS = 'read -r token <&3; exec 3<&-\n{program}\nprintf "%s\\n" "$token" >&4\n'


class ShellRunner(TestRunner):
    """The program is shell lines the harness runs between reading the token and writing it."""

    toolchain = ("/bin/sh",)

    def prepare(self, program, tests, entry_point, token):
        return RunSpec(files={"h.sh": HARNESS.format(program=program)}, run=["/bin/sh", "h.sh"], token_input_fd=3,
                       pass_token_fd=4, exit_statuses={3: "syntax_error"}, out_of_memory_markers=("MemoryError",),
                       read_only_paths=tuple(interpreter_paths()))


class ShellPlugin(PythonLanguage):
    runner = ShellRunner()


# (description, program, status, signal); default limits: 4 GiB address space, 64 MiB per file
REAL_CASES = [
    ("checks pass", "true", "passed", None),
    ("a check fails", "exit 1", "failed", None),
    ("exit 0 before the checks", "exit 0", "error", None),
    ("forged token", f"echo {'f' * 32} >&4; exit 0", "error", None),
    ("extra bytes before the token", "echo extra >&4", "error", None),
    ("harness exit status mapped", "exit 3", "syntax_error", None),
    ("allocates 8 GiB", f"exec {PYTHON} -c 'bytearray(8 << 30)'", "oom", None),
    ("segfaults", f"exec {PYTHON} -c 'import ctypes; ctypes.string_at(0)'", "killed", "SIGSEGV"),
    # at the namespaces level the program is PID 1 of its namespace, which the kernel's
    # SIGXFSZ cannot kill: the write fails instead (a failed exit), so this case needs
    # bubblewrap or no namespace
    ("writes past the file size limit", "exec head -c 70000000 /dev/zero > big.bin", "killed", "SIGXFSZ"),
]
TIMEOUT_CASE = ("sleeps past the timeout", "sleep 30", "timeout", "SIGKILL")


def _case(description, program, status, signal) -> RunnerCase:
    return RunnerCase(program, "", expect_pass=status == "passed", description=description, expect_status=status)


def _sandboxes() -> dict[str, Sandbox]:
    """``workbench execute``'s default (the strongest level) and the unsandboxed level."""
    return {"sandbox": Sandbox(detect_isolation()), "unsandboxed": Sandbox(detect_isolation("unsandboxed"))}


@pytest.mark.parametrize("executor", ["sandbox", "unsandboxed"])
def test_the_kit_and_the_sandbox_give_the_same_status(executor):
    sandbox = _sandboxes()[executor]
    if sandbox.isolation.level is IsolationLevel.NAMESPACES:
        pytest.skip("the file size case needs bubblewrap or no PID namespace (see REAL_CASES)")
    report = check_plugin(ShellPlugin(), [], checks=("runner",), runner_cases=[_case(*c) for c in REAL_CASES],
                          executor=executor, timeout_s=30)
    assert report.ok and not report.skipped, str(report)
    for description, program, status, signal in REAL_CASES:
        outcome = run_program(ShellRunner(), program, "", None, timeout_s=30, level=sandbox.isolation.level)
        assert (outcome.status, outcome.signal) == (status, signal), (description, outcome)


@pytest.mark.parametrize("executor", ["sandbox", "unsandboxed"])
def test_the_kit_and_the_sandbox_agree_on_a_timeout(executor):
    sandbox = _sandboxes()[executor]
    cases = [_case(*REAL_CASES[0]), _case(*TIMEOUT_CASE)]
    report = check_plugin(ShellPlugin(), [], checks=("runner",), runner_cases=cases, executor=executor, timeout_s=2)
    assert report.ok, str(report)
    token = new_token()
    outcome = sandbox.run(ShellRunner().prepare(TIMEOUT_CASE[1], "", None, token), token, 2)
    assert (outcome.status, outcome.signal) == TIMEOUT_CASE[2:], outcome


def test_the_kit_reports_a_status_other_than_expected():
    cases = [_case(*REAL_CASES[0]), RunnerCase("exit 1", "", expect_pass=False, expect_status="oom",
                                               description="claims oom")]
    report = check_plugin(ShellPlugin(), [], checks=("runner",), runner_cases=cases, executor="unsandboxed")
    assert any("(claims oom): expected oom, got failed" in p for p in report.problems["runner"]), str(report)


def test_a_runner_case_cannot_expect_a_contradiction():
    with pytest.raises(ValueError, match="contradicts expect_pass"):
        RunnerCase("true", "", expect_pass=False, expect_status="passed")
    with pytest.raises(ValueError, match="must be one of"):
        RunnerCase("true", "", expect_pass=False, expect_status="crashed")
