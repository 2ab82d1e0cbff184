"""Hostile samples (issue 4): each must be contained, must not pass, and must leave the host
and the rest of the run unaffected. Real runner, real sandbox, real processes; the
strongest available isolation unless a test says otherwise."""

from __future__ import annotations

import os
import socket
import textwrap
import threading
import time

import pytest

from workbench.data.loading import load_humaneval
from workbench.execute.isolation import IsolationLevel, detect_isolation
from workbench.execute.processes import processes_of_uid
from workbench.execute.sandbox import new_token
from workbench.execute.sandbox_helpers import (
    available_levels,
    processes_with_cmdline,
    run_program,
    sandbox_for,
    zombie_children,
)
from workbench.languages.python_runner import PythonTestRunner

FINISH_S = 30.0  # generous: samples that must finish (small shared CI machine)
KILL_S = 2.0  # samples that must be killed
ROOT = os.geteuid() == 0
LEVELS = available_levels()
# The Python running the tests may live under /root (pyenv), out of reach of the sandbox
# uid below bubblewrap; the lower levels then run samples with the system Python.
SYSTEM_PYTHON = "/usr/bin/python3"


def runner_for(level) -> PythonTestRunner:
    runner = PythonTestRunner()
    if level not in (None, IsolationLevel.BUBBLEWRAP) and sandbox_for(level).inaccessible_paths(
        runner.prepare("", "", None, "t")
    ):
        if not os.path.exists(SYSTEM_PYTHON):
            pytest.skip(f"no Python reachable by the sandbox uid at level {level.value}")
        runner = PythonTestRunner(SYSTEM_PYTHON)
    return runner
NETWORK_ISOLATED = [level for level in LEVELS if level is not IsolationLevel.RLIMITS]


#: whether hostile samples are forked from a worker's pre-started interpreter (the default
#: under bubblewrap as root) or start an interpreter of their own; set per test by
#: ``interpreter_start``
REUSE = {"interpreters": True}


@pytest.fixture(autouse=True, params=["forked", "fresh"])
def interpreter_start(request):
    """Every hostile sample runs both ways where they differ (bubblewrap as root): forked by
    the worker's zygote, and in a sandbox and interpreter of its own."""
    level = getattr(request.node, "callspec", None) and request.node.callspec.params.get("level")
    forked = request.param == "forked"
    if not forked and (not ROOT or (level or LEVELS[0]) is not IsolationLevel.BUBBLEWRAP):
        pytest.skip("interpreters are reused only under bubblewrap as root: the same run as 'forked'")
    REUSE["interpreters"] = forked
    yield
    REUSE["interpreters"] = True


def humaneval(task_id: str) -> dict:
    return next(dict(row) for row in load_humaneval() if row["task_id"] == task_id)


def run(completion: str, *, task_id: str = "HumanEval/0", timeout_s: float = FINISH_S, level=None, token=None, slot=0):
    """Run HumanEval prompt + ``completion`` with the task's real tests."""
    row = humaneval(task_id)
    runner = runner_for(level)
    program = runner.build_program(row["prompt"], completion, "completion")
    return run_program(runner, program, row["test"], row["entry_point"], timeout_s=timeout_s, level=level,
                       token=token, slot=slot, reuse_interpreters=REUSE["interpreters"])


def body(code: str) -> str:
    """Indent ``code`` as a function body (the completion of a HumanEval prompt)."""
    return textwrap.indent(textwrap.dedent(code), "    ")


def assert_host_alive(level=None) -> None:
    """The run continues: a correct sample still passes right after."""
    outcome = run(humaneval("HumanEval/0")["canonical_solution"], level=level)
    assert outcome.status == "passed", outcome


@pytest.mark.parametrize("level", LEVELS, ids=[lvl.value for lvl in LEVELS])
def test_fork_bomb_is_contained(level):
    start = time.monotonic()
    outcome = run(body("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
    """), timeout_s=KILL_S, level=level)
    assert not outcome.passed
    assert outcome.status in {"timeout", "killed", "error"}
    assert time.monotonic() - start < KILL_S + 20
    if ROOT:
        uid = sandbox_for(level, REUSE["interpreters"]).uid_for_slot(0)
        deadline = time.monotonic() + 5  # killed processes may take a moment to be reaped
        while processes_of_uid(uid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert processes_of_uid(uid) == []
    assert zombie_children() == []
    assert_host_alive(level)


@pytest.mark.parametrize("level", LEVELS, ids=[lvl.value for lvl in LEVELS])
def test_infinite_loop_times_out(level):
    outcome = run(body("while True:\n    pass\n"), timeout_s=KILL_S, level=level)
    assert outcome.status == "timeout"
    assert KILL_S <= outcome.duration_s < KILL_S + 5


def test_20_gb_allocation_is_oom():
    outcome = run(body("x = bytearray(20 * 1024 ** 3)\nreturn True\n"))
    assert outcome.status == "oom", outcome
    assert "MemoryError" in outcome.stderr_tail


def test_writing_1_gb_to_disk_is_stopped(tmp_path):
    # one file: RLIMIT_FSIZE (64 MiB) stops it; many files: the 256 MiB private /tmp is full
    one_file = run(body("""
        with open("big.bin", "wb") as f:
            for _ in range(1024):
                f.write(b"x" * (1 << 20))
        return True
    """))
    assert not one_file.passed
    assert "File too large" in one_file.stderr_tail or "No space left" in one_file.stderr_tail, one_file
    many_files = run(body("""
        for i in range(1024):
            with open(f"part{i}.bin", "wb") as f:
                f.write(b"x" * (1 << 20))
        return True
    """))
    assert not many_files.passed
    if detect_isolation().level is IsolationLevel.BUBBLEWRAP:
        assert "No space left" in many_files.stderr_tail, many_files
    assert_host_alive()


@pytest.mark.parametrize("level", LEVELS, ids=[lvl.value for lvl in LEVELS])
def test_deleting_the_users_home_fails(tmp_path, monkeypatch, level):
    if not ROOT and level is IsolationLevel.RLIMITS:
        pytest.skip("rlimits-only as a normal user cannot protect that user's files (documented)")
    decoy = tmp_path / "decoy-home"
    (decoy / ".ssh").mkdir(parents=True)
    (decoy / ".ssh" / "id_ed25519").write_text("decoy key")
    (decoy / "notes.txt").write_text("keep me")
    monkeypatch.setenv("HOME", str(decoy))
    outcome = run(body(f"""
        import os, shutil
        for target in (os.path.expanduser("~"), {str(decoy)!r}, {str(decoy / "notes.txt")!r}):
            try:
                if os.path.isdir(target):
                    shutil.rmtree(target)
                else:
                    os.remove(target)
            except OSError as error:
                print("blocked", target, error)
        return True
    """), level=level)
    assert not outcome.passed
    assert (decoy / "notes.txt").read_text() == "keep me"
    assert (decoy / ".ssh" / "id_ed25519").exists()


@pytest.mark.parametrize("level", NETWORK_ISOLATED, ids=[lvl.value for lvl in NETWORK_ISOLATED])
def test_socket_to_a_host_listener_is_refused(level):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.2)
    port = listener.getsockname()[1]
    accepted = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            accepted.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        outcome = run(body(f"""
            import socket
            s = socket.create_connection(("127.0.0.1", {port}), timeout=3)
            s.sendall(b"escaped")
            return True
        """), level=level)
    finally:
        stop.set()
        thread.join(2)
        listener.close()
    assert accepted == []
    assert not outcome.passed
    assert outcome.status == "error"
    assert "Error" in outcome.stderr_tail  # ConnectionRefusedError / OSError: Network is unreachable


@pytest.mark.parametrize("level", LEVELS, ids=[lvl.value for lvl in LEVELS])
def test_planted_api_key_is_not_readable(monkeypatch, level):
    if not ROOT and level is IsolationLevel.RLIMITS:
        pytest.skip("rlimits-only as a normal user shares the user's /proc (documented)")
    planted = "sk-planted-" + new_token()
    monkeypatch.setenv("OPENAI_API_KEY", planted)
    outcome = run(body("""
        import os
        found = [f"{k}={v}" for k, v in os.environ.items()]
        for pid in [os.getppid(), 1] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    found.append(f.read().decode(errors="replace"))
            except Exception:  # OSError, or the harness refusing /proc/*/environ
                pass
        raise RuntimeError("FOUND " + " | ".join(found)[-900:])
    """), level=level)
    assert not outcome.passed
    assert "FOUND" in outcome.stderr_tail
    assert planted not in outcome.stderr_tail
    assert "OPENAI_API_KEY" not in outcome.stderr_tail


@pytest.mark.parametrize("exit_call", ["import sys; sys.exit(0)", "import os; os._exit(0)", "raise SystemExit(0)",
                                       "import os; os.kill(os.getpid(), 9)"])
@pytest.mark.parametrize("where", ["module", "function"])
def test_exit_before_the_checks_does_not_pass(exit_call, where):
    if where == "module":
        completion = "    return False\n" + exit_call + "\n"
    else:
        completion = body(exit_call)
    outcome = run(completion)
    assert not outcome.passed
    assert outcome.status in {"error", "killed"}, outcome


#: a candidate that answers from the tests' own asserts: it looks for the tests' file in the working
#: folder and the folder above it, reads each ``candidate(ARGS) == WANT`` and returns WANT for its ARGS
READS_THE_TESTS = body("""
    import os, re
    places = [*os.walk(".")]
    for above in os.walk(".."):  # the folder above, not below it (where it is readable)
        places.append(above)
        break
    for folder, _, names in places:
        for name in names:
            try:
                with open(os.path.join(folder, name)) as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError):
                continue
            for args, want in re.findall(r"candidate\\((.*)\\) == (.*)", text):
                if eval("(" + args + ",)") == (numbers, threshold):
                    return eval(want)
    return None
""")


@pytest.mark.parametrize("level", LEVELS, ids=[lvl.value for lvl in LEVELS])
def test_reading_the_tests_file_to_answer_does_not_pass(level):
    """The harness reads the tests before any candidate code runs and removes their file: a
    candidate that found ``tests.py`` beside its program answered every assert and passed
    (HumanEval's execution.py and evalplus keep the tests in memory; probe 40). A failing check
    still quotes its line from the tests' text."""
    outcome = run(READS_THE_TESTS, level=level)
    assert not outcome.passed and outcome.status == "failed", outcome
    assert "AssertionError at tests.py, line 10: assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True" in \
        outcome.detail, outcome
    assert_host_alive(level)


def test_monkeypatching_check_and_assert_does_not_pass():
    outcome = run(body("""
        return False
    """) + textwrap.dedent("""
        import builtins, sys
        def check(candidate):
            pass
        builtins.check = check
        builtins.AssertionError = type("AssertionError", (Exception,), {})
        builtins.abs = lambda x: 0
        builtins.isinstance = lambda *a: True
        sys.excepthook = lambda *a: None
        import __main__
        __main__.check = check
    """))
    assert outcome.status == "failed", outcome


def test_patched_builtins_do_not_fool_the_tests():
    # HumanEval/2 checks abs(candidate(x) - expected) < 1e-6; a patched abs must not help
    outcome = run(body("""
        import builtins
        builtins.abs = lambda x: 0
        return 42.0
    """), task_id="HumanEval/2")
    assert outcome.status == "failed", outcome


def test_replaying_a_previous_runs_token_does_not_pass():
    row = humaneval("HumanEval/0")
    old_token = new_token()
    first = run(row["canonical_solution"], token=old_token)
    assert first.passed
    outcome = run(body(f"""
        import os, sys
        for fd in range(3, 10):
            try:
                os.write(fd, b"{old_token}\\n")
            except OSError:
                pass
        print("{old_token}")
        print("{old_token}", file=sys.stderr)
        with open("pass_token", "w") as f:
            f.write("{old_token}")
        return False
    """))
    assert not outcome.passed
    assert outcome.status == "failed"


def test_reaching_into_the_harness_does_not_pass():
    # walk frames to the harness, try its success event, scan memory with gc; then exit 0
    outcome = run(body("""
        import gc, os, sys
        attempts = []
        frame = sys._getframe()
        while frame is not None:
            try:
                sys.audit("workbench.pass")
            except RuntimeError as error:
                attempts.append(str(error))
            frame = frame.f_back
        try:
            gc.get_objects()
        except RuntimeError as error:
            attempts.append(str(error))
        os.symlink("/proc/self/mem", "m")
        os.symlink("/proc/self", "s")
        os.path.realpath = lambda path, **kw: "/harmless"  # the harness must not rely on it
        for path in ("/proc/self/mem", "../../proc/self/mem", "m", "s/mem", "/proc/thread-self/mem"):
            try:
                open(path, "rb")
                attempts.append("OPENED " + path)
            except (RuntimeError, OSError) as error:
                attempts.append(str(error))
        print(attempts, file=sys.stderr)
        sys.stderr.flush()
        os._exit(0)
    """))
    assert not outcome.passed
    assert outcome.status == "error"
    assert "not allowed" in outcome.stderr_tail
    assert "OPENED" not in outcome.stderr_tail


@pytest.mark.parametrize("level", LEVELS, ids=[lvl.value for lvl in LEVELS])
def test_background_processes_do_not_outlive_the_sample(level):
    marker = f"31{new_token()[:6].translate(str.maketrans('abcdef', '123456'))}"
    outcome = run(body(f"""
        import os, subprocess
        subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
        if os.fork() == 0:          # classic daemon: fork, setsid, fork
            os.setsid()
            if os.fork() == 0:
                os.execvp("sleep", ["sleep", "{marker}"])
            os._exit(0)
        return True
    """), level=level)
    assert not outcome.passed
    deadline = time.monotonic() + 5
    while processes_with_cmdline(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert processes_with_cmdline(marker) == []
    assert zombie_children() == []


@pytest.mark.parametrize("level", LEVELS, ids=[lvl.value for lvl in LEVELS])
def test_no_fd_of_the_parent_is_left_to_forge_the_memory_report(level):
    # A sample holds stdin, stdout, stderr and the pass-token pipe (fd 4) only. GNU time's report
    # pipe (peak KiB, exit status, CPU seconds) was still open at a high fd on the per-sample path:
    # digits written there without a newline were prefixed to GNU time's own line, so a sample
    # that killed itself read as an out-of-memory kill with a peak of thousands of TiB.
    outcome = run(body("""
        import os, signal, sys
        held = []
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd > 4:
                try:
                    os.write(fd, b"999999999999")
                    held.append(f"{fd} -> {os.readlink('/proc/self/fd/' + name)}")
                except OSError:
                    pass
        sys.stderr.write("held: " + repr(held) + "\\n")
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)
    """), level=level)
    assert "held: []" in outcome.stderr_tail, outcome
    assert outcome.status == "killed" and outcome.signal == "SIGKILL", outcome
    assert outcome.peak_rss_mib is None or outcome.peak_rss_mib < 4096, outcome


@pytest.mark.parametrize("level", LEVELS, ids=[lvl.value for lvl in LEVELS])
def test_killing_the_parent_leaves_the_run_going(level):
    if not ROOT and level is IsolationLevel.RLIMITS:
        pytest.skip("rlimits-only as a normal user can signal the user's own processes (documented)")
    outcome = run(body("""
        import os, signal
        for target in (os.getppid(), 1, -1):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        return True
    """), level=level)
    assert not outcome.passed
    assert_host_alive()


@pytest.mark.parametrize("trick", [
    "class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n        return False\n",
    "class AlwaysEqual(int):\n    __eq__ = lambda self, other: True\n",
    "AlwaysEqual = type('AlwaysEqual', (), {'__eq__': slice, '__bool__': lambda self: True})\n",
])
@pytest.mark.parametrize("task_id, value", [
    ("HumanEval/0", "AlwaysEqual()"),                    # checks candidate(...) == True / False
    ("HumanEval/8", "(AlwaysEqual(), AlwaysEqual())"),   # checks candidate(...) == (sum, product)
])
def test_always_equal_return_values_do_not_pass(trick, task_id, value):
    # without the harness's return guard each of these would pass every assert
    completion = "    return _cheat()\n\n" + trick + f"def _cheat():\n    return {value}\n"
    outcome = run(completion, task_id=task_id)
    assert not outcome.passed, outcome
    assert "comparison or conversion it redefined" in outcome.stderr_tail, outcome


def test_changing_the_return_guard_through_the_harness_frames_does_not_pass():
    # probe 27: the guard's closure cells were reachable from sys._getframe(1).f_locals, and
    # registering the cheat's class as "known" there made an always-equal value pass
    outcome = run("    return AE()\n" + textwrap.dedent("""
        import sys
        class AE:
            def __eq__(self, other):
                return True
        cells = lambda f: {n: c.cell_contents for n, c in zip(f.__code__.co_freevars, f.__closure__)}
        reached = []
        for get_frame in (lambda: sys._getframe(1), lambda: sys.exc_info()[2].tb_frame.f_back):
            try:
                try:
                    raise KeyError
                except KeyError:
                    frame = get_frame()
                guard = frame.f_locals["guard"]
                cells(cells(cells(guard)["inspect"])["suspicious"])["known_classes"][id(AE)] = (AE, [])
                reached.append("REACHED")
            except Exception as error:
                reached.append(str(error))
        print(reached, file=sys.stderr)
    """))
    assert not outcome.passed, outcome
    assert "REACHED" not in outcome.stderr_tail
    assert "access to call frames is not allowed" in outcome.stderr_tail


@pytest.mark.parametrize("patch", [
    "import os\nCheat = type(os.environ)\n",
    "Cheat = type(__spec__) if __spec__ is not None else type(__loader__)\n",
])
def test_patching_a_class_that_existed_before_does_not_pass(patch):
    # probe 27: the guard trusted every class that existed when the harness started
    completion = "    return object.__new__(Cheat)\n\n" + patch + (
        "Cheat.__eq__ = lambda self, other: True\nCheat.__ne__ = lambda self, other: False\n"
        "Cheat.__bool__ = lambda self: True\n")
    outcome = run(completion)
    assert not outcome.passed, outcome
    assert "comparison or conversion it redefined" in outcome.stderr_tail, outcome


@pytest.mark.parametrize("task_id, answer, shadow", [
    ("HumanEval/4", "123.0", "abs = lambda x: 0"),   # checks abs(candidate(x) - expected) < 1e-6
    ("HumanEval/2", "0.5", "abs = lambda x: 0"),
])
def test_shadowing_a_builtin_at_top_level_does_not_pass(task_id, answer, shadow):
    # probe 27: the tests ran in a copy of the program's globals, where `abs` shadows the builtin
    outcome = run(body(f"return {answer}") + "\n" + shadow + "\n", task_id=task_id)
    assert outcome.status == "failed", outcome


def test_frames_and_builtin_names_used_the_ordinary_way_still_pass():
    # namedtuple, typing and enum ask for the caller's frame and carry on without it; a
    # program's own helper named like a builtin is still what the program itself calls
    outcome = run(body("""
        return _has_close(numbers, threshold)
    """) + textwrap.dedent("""
        import collections, enum, logging, typing
        Pair = collections.namedtuple("Pair", "a b")
        T = typing.TypeVar("T")
        class Colour(enum.Enum):
            RED = 1
        Flag = enum.Enum("Flag", "ON OFF")
        logging.getLogger("sample").warning("logged")
        def max(values):
            return sorted(values)[-1]
        def _has_close(numbers, threshold):
            ordered = sorted(numbers)
            gaps = [Pair(a, b) for a, b in zip(ordered, ordered[1:])]
            return any(abs(p.b - p.a) < threshold for p in gaps) and max([1, 2]) == 2
    """))
    assert outcome.status == "passed", outcome


def test_own_classes_without_comparison_tricks_and_numpy_values_still_pass():
    outcome = run(body("""
        import numpy as np
        class Helper:
            def __init__(self, values):
                self.values = values
        h = Helper(sorted(numbers))
        return np.bool_(any(abs(a - b) < threshold for a, b in zip(h.values, h.values[1:])))
    """))
    assert outcome.status == "passed", outcome


BELOW_BUBBLEWRAP = [level for level in LEVELS if level is not IsolationLevel.BUBBLEWRAP]


@pytest.mark.skipif(not ROOT, reason="only as root does each slot run as a user id of its own")
@pytest.mark.parametrize("level", BELOW_BUBBLEWRAP, ids=[lvl.value for lvl in BELOW_BUBBLEWRAP])
def test_files_left_in_shared_temp_folders_do_not_reach_the_next_sample(level):
    """Below bubblewrap /tmp and /dev/shm are the host's. A file one sample wrote there kept its
    user id, so the same correct code on another slot failed with PermissionError (a verdict
    that depended on an earlier sample), and the files stayed after the run."""
    names = [f"{folder}/workbench-leftover-{new_token()[:12]}" for folder in ("/tmp", "/dev/shm")]
    code = "".join(f"with open({name!r}, 'w') as handle:\n    handle.write('state')\n" for name in names)
    completion = humaneval("HumanEval/0")["canonical_solution"]
    try:
        for slot in (0, 1, 0):
            outcome = run(body(code) + completion, level=level, slot=slot)
            assert outcome.status == "passed", (slot, outcome)
            assert [name for name in names if os.path.lexists(name)] == []
    finally:
        for name in names:
            if os.path.lexists(name):
                os.remove(name)


# under `unshare --map-root-user` the sample is root of its own user namespace, with
# CAP_SYS_PTRACE there: non-dumpable does not stop it (the token protocol's audit hook still does)
WITHOUT_CAPABILITIES = [level for level in LEVELS if level is not IsolationLevel.NAMESPACES]


@pytest.mark.parametrize("level", WITHOUT_CAPABILITIES, ids=[lvl.value for lvl in WITHOUT_CAPABILITIES])
def test_the_harness_memory_is_out_of_reach_of_the_samples_own_processes(level):
    """The harness makes itself non-dumpable before any candidate code: a process the sample
    starts (not under the harness's audit hook) cannot read the harness's /proc files, where
    the token lives in memory."""
    completion = body("""
        import os, subprocess, sys
        done = subprocess.run(["cat", f"/proc/{os.getpid()}/environ"], capture_output=True)
        print("READ" if done.returncode == 0 else "REFUSED", file=sys.stderr)
        sys.stderr.flush()
        assert False
    """)
    outcome = run(completion, level=level)
    assert outcome.status == "failed", outcome
    assert "REFUSED" in outcome.stderr_tail and "READ\n" not in outcome.stderr_tail, outcome


def test_a_sample_sees_what_site_gives_without_running_it():
    """Samples start with -S; the harness restores site's sys.path, prefixes and builtins
    (measured once per interpreter), so imports and exit() behave as under site."""
    import json
    import subprocess
    import sys

    expected = json.loads(subprocess.run(
        [sys.executable, "-I", "-c", "import json, sys; print(json.dumps([sys.prefix, [p for p in sys.path if p]]))"],
        capture_output=True, text=True, check=True).stdout)
    completion = body("""
        import json, sys
        print("SITE " + json.dumps([sys.prefix, sys.path, sys.flags.no_site, callable(exit), callable(help)]),
              file=sys.stderr)
        sys.stderr.flush()
        assert False
    """)
    outcome = run(completion)
    line = next(line for line in outcome.stderr_tail.splitlines() if line.startswith("SITE "))
    prefix, path, no_site, has_exit, has_help = json.loads(line[5:])
    assert [prefix, path] == expected and no_site == 1 and has_exit and has_help
