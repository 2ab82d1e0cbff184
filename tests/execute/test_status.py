"""The one status function (workbench.execute.status.decide_status): every rule on a table of
observations, and the same statuses from the conformance kit and from the sandbox of
``workbench execute`` on real programs (real /bin/sh and Python subprocesses, real sandbox)."""

from __future__ import annotations

import dataclasses
import os
import shutil
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

# real stderr of g++ 12, Node 20 and CPython 3.11 (file names shortened)
GPP_ERRORS = """program.cpp: In function 'long int f(long int)':
program.cpp:3:13: error: expected ';' before '}' token
    3 |     return x
      |             ^
      |             ;
    4 | }
      | ~
program.cpp:5:18: error: 'y' was not declared in this scope
"""
NODE_ASSERTION = """node:assert:90
  throw new AssertionError(obj);
  ^

AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:

1 !== 2

    at check (/tmp/work/program.js:12:10)
    at node:internal/main/run_main_module:28:49 {
  generatedMessage: true,
  code: 'ERR_ASSERTION',
  actual: 1,
  expected: 2,
  operator: 'strictEqual'
}

Node.js v20.20.2
"""
PYTHON_ASSERTION = """Traceback (most recent call last):
  File "/tmp/work/harness.py", line 336, in main
    check(guard(namespace[entry_point]))
  File "tests.py", line 10, in check
    assert candidate([]) == (0, 1)
           ^^^^^^^^^^^^^
AssertionError
"""
NODE_OOM = ("\n<--- Last few GCs --->\n\n<--- JS stacktrace --->\n\n"
            "FATAL ERROR: Reached heap limit Allocation failed - MemoryError\n----- Native stack trace -----\n\n"
            + "".join(f"{n:2}: 0x{n:07x} v8::internal::Heap::CollectGarbage(int) [node]\n" for n in range(1, 30)))

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
    # Node's report of its heap limit comes before a native stack trace longer than the kept tail (fix33)
    ("oom-marker-before-the-tail", dict(returncode=134, wrapper_reports_signals=True, stderr_tail=NODE_OOM[-300:],
     stderr_scan=NODE_OOM), "oom", 134, "SIGABRT",
     "memory limit reached: FATAL ERROR: Reached heap limit Allocation failed - MemoryError"),
    ("oom-then-the-watchdog", dict(returncode=-9, timed_out=True, duration_s=5.01, stderr_tail="MemoryError\n"),
     "oom", None, "SIGKILL", "memory limit reached: MemoryError (then killed after the 5.0 s timeout)"),
    ("oom-then-the-cpu-limit", dict(returncode=-24, stderr_tail="MemoryError\n"), "oom", None, "SIGXCPU",
     "then the CPU time limit ended the run"),
    ("build-output-is-no-oom", dict(returncode=0, build_failure=(0, "1"), stderr_tail="MemoryError"), "syntax_error",
     1, None, "failed with status 1: MemoryError"),
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
    # the line that says what failed, not a multi-line message's last line (fix33)
    ("node-assertion-says-what-failed", dict(returncode=1, stderr_tail=NODE_ASSERTION), "failed", 1, None,
     "exit status 1: AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: | 1 !== 2"),
    ("python-message-of-two-lines", dict(returncode=1, stderr_tail="Traceback (most recent call last):\n  File "
     "\"tests.py\", line 2, in check\nAssertionError: expected 1\ngot 2\n"), "failed", 1, None,
     "exit status 1: AssertionError: expected 1 | got 2"),
    ("python-bare-assertion-names-the-check", dict(returncode=1, stderr_tail=PYTHON_ASSERTION), "failed", 1, None,
     "exit status 1: AssertionError at tests.py, line 10: assert candidate([]) == (0, 1)"),
    ("build-failed", dict(returncode=0, build_failure=(0, "1")), "syntax_error", 1, None,
     "build step 'cc -o main main.c' failed with status 1"),
    # the detail quotes the compiler's first error, not only its status (fix33)
    ("build-failed-says-why", dict(returncode=0, build_failure=(0, "1"), stderr_scan=GPP_ERRORS), "syntax_error", 1,
     None, "build step 'cc -o main main.c' failed with status 1: program.cpp:3:13: error: expected ';' before '}' "
           "token | 3 | return x | 4 | }"),
    # the compiler itself ran out of memory under --memory-mb: no verdict that the code does not compile (verify34)
    ("build-out-of-memory", dict(returncode=0, build_failure=(0, "1"), stderr_scan=(
        "cc1plus: out of memory allocating 65536 bytes after a total of 180342784 bytes\n"
        "virtual memory exhausted: Cannot allocate memory\n")),
     "oom", 1, None, ("build step 'cc -o main main.c' ran out of memory (raise --memory-mb if the compiler needs "
                      "more): virtual memory exhausted: Cannot allocate memory")),
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


# -- what the detail says, on real programs (fix33) --------------------------------------------------

def _run_in_sandbox(spec: RunSpec, token: str, timeout_s: float = 30):
    return Sandbox(detect_isolation()).run(spec, token, timeout_s)


def test_a_failed_build_quotes_the_compilers_first_error():
    """A real compile step (CPython's py_compile) that fails: the detail names the error, not only
    the status (it once said only "build step '... py_compile program.py' failed with status 1")."""
    token = new_token()
    spec = RunSpec(files={"program.py": "def f(:\n    return 1\n", "h.sh": "true"}, run=["/bin/sh", "h.sh"],
                   build=[[PYTHON, "-m", "py_compile", "program.py"]], pass_token_fd=4,
                   read_only_paths=tuple(interpreter_paths()))
    outcome = _run_in_sandbox(spec, token)
    assert outcome.status == "syntax_error", outcome
    assert outcome.detail.startswith("build step ") and "failed with status 1: SyntaxError: " in outcome.detail, outcome


# a runtime that reports running out of memory, then writes a native stack trace longer than the
# kept stderr tail and aborts (Node's "JavaScript heap out of memory", exit status 134)
REPORTS_OOM_THEN_ABORTS = """import os, sys
try:
    bytearray(8 << 30)
except MemoryError:
    sys.stderr.write("FATAL ERROR: Allocation failed - MemoryError\\n")
    sys.stderr.write("".join(f"{n:3}: 0x{n:08x} v8::internal::Heap::CollectGarbage [node]\\n" for n in range(60)))
    sys.stderr.flush()
    os.abort()
"""
# the same report, then a runtime that never ends (it is killed at the timeout)
REPORTS_OOM_THEN_HANGS = """import sys, time
try:
    bytearray(8 << 30)
except MemoryError:
    sys.stderr.write("FATAL ERROR: Allocation failed - MemoryError\\n")
    sys.stderr.flush()
    time.sleep(60)
"""


@pytest.mark.parametrize(("program", "timeout_s", "signal"), [(REPORTS_OOM_THEN_ABORTS, 30, "SIGABRT"),
                                                              (REPORTS_OOM_THEN_HANGS, 2, "SIGKILL")],
                         ids=["report-then-abort", "report-then-timeout"])
def test_a_runtimes_own_out_of_memory_report_is_oom(program, timeout_s, signal):
    token = new_token()
    spec = ShellRunner().prepare(f"exec {PYTHON} oom.py", "", None, token)
    spec = dataclasses.replace(spec, files={**spec.files, "oom.py": program})
    outcome = _run_in_sandbox(spec, token, timeout_s)
    assert (outcome.status, outcome.signal) == ("oom", signal), outcome
    assert "memory limit reached: FATAL ERROR: Allocation failed - MemoryError" in outcome.detail, outcome


def test_a_python_assertion_names_the_check_that_failed():
    """Python's bare ``AssertionError`` (the last stderr line) is joined by the check's source line."""
    from workbench.languages.python_runner import PythonTestRunner

    outcome = run_program(PythonTestRunner(), "def f():\n    return 1\n", "def check(candidate):\n"
                          "    assert candidate() == 1\n    assert candidate() == 2\n", "f", timeout_s=30)
    assert outcome.status == "failed", outcome
    assert outcome.detail.endswith("AssertionError at tests.py, line 3: assert candidate() == 2"), outcome


@pytest.mark.skipif(shutil.which("node") is None, reason="node missing")
def test_a_node_assertion_names_what_failed():
    """Node's ``assert.strictEqual``: the AssertionError line and its message, not ``Node.js v20...``."""
    token = new_token()
    node = os.path.realpath(shutil.which("node"))
    spec = ShellRunner().prepare(f"exec {node} check.js", "", None, token)
    spec = dataclasses.replace(spec, files={**spec.files, "check.js": 'require("assert").strictEqual(1, 2);\n'},
                               read_only_paths=(*spec.read_only_paths, os.path.dirname(node)),
                               limit_overrides={"address_space_bytes": None})
    outcome = _run_in_sandbox(spec, token)
    assert outcome.status == "failed", outcome
    assert "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: | 1 !== 2" in outcome.detail, outcome


@pytest.mark.skipif(shutil.which("node") is None, reason="node missing")
def test_nodes_heap_out_of_memory_is_oom():
    """Node reports its heap limit, then ~2 KB of native stack trace, then aborts (status 134): with
    the runner's marker it is ``oom`` (it was ``killed``: the report lay before the kept tail)."""
    token = new_token()
    node = os.path.realpath(shutil.which("node"))
    spec = ShellRunner().prepare(f"exec {node} --max-old-space-size=64 grow.js", "", None, token)
    spec = dataclasses.replace(spec, files={**spec.files, "grow.js": "const a = [];\n"
                                            "for (;;) a.push(new Array(1e6).fill(1.5));\n"},
                               read_only_paths=(*spec.read_only_paths, os.path.dirname(node)),
                               out_of_memory_markers=("JavaScript heap out of memory",))
    outcome = _run_in_sandbox(spec, token)
    assert outcome.status == "oom", outcome
    assert "JavaScript heap out of memory" in outcome.detail and "JavaScript heap" not in outcome.stderr_tail, outcome


def test_the_detail_line_rules_in_detail():
    """What :func:`last_error_line` and :func:`first_build_error` pick (fix33)."""
    from workbench.execute.status import first_build_error, last_error_line

    # a harness's own verdict stands alone, even after an exception line the candidate printed
    said = last_error_line("ValueError: printed by the candidate\nworkbench: assertion failed: f(1) == 2\n")
    assert said == "workbench: assertion failed: f(1) == 2"
    assert last_error_line("") is None and last_error_line("}\n" * 5000) == "}"
    assert len(last_error_line("AssertionError: " + "x" * 500)) == 200
    # a compiler's "error:" report wins over a context line that merely names an error
    assert first_build_error("program.cpp: In function 'int error_count()':\nprogram.cpp:3:5: error: boom\n"
                             "    3 | x\n      | ^\nprogram.cpp:4:1: error: second\n") == "program.cpp:3:5: error: boom | 3 | x"
    assert first_build_error("Problem.java:5: error: ';' expected\n        return x\n                ^\n1 error\n") \
        == "Problem.java:5: error: ';' expected | return x"
    assert first_build_error("") is None and len(first_build_error("error: " + "y" * 900)) == 300


@pytest.mark.parametrize(("limit_bytes", "said"), [
    (64 << 20, "64 MiB"), (1_000_000 << 20, "1,000,000 MiB"), (123_456_789 << 20, "123,456,789 MiB"),
    (3 << 19, "1.5 MiB"), (1000, "1,000 bytes")])
def test_the_file_size_limit_is_written_as_a_person_writes_it(limit_bytes, said):
    # leftovers38a: the limit was written with :g, so --max-file-mb 1000000 read "1e+06 MiB file-size limit"
    seen = Observation(duration_s=0.1, timeout_s=5.0, launcher="bubblewrap, bwrap", returncode=-25,
                       file_size_limit_bytes=limit_bytes)
    outcome = decide_status(SPEC, TOKEN, seen)
    assert outcome.detail.startswith(f"ended by SIGXFSZ: a file it wrote reached the {said} file-size limit "
                                     f"(RLIMIT_FSIZE)"), outcome.detail
