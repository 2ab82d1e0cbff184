"""The sandbox and the runner protocol, language-agnostic: RunSpecs whose "harness" is a
POSIX shell script, run for real under every isolation level this machine offers."""

from __future__ import annotations

import os

import pytest

from workbench.execute import isolation as isolation_module
from workbench.execute.isolation import IsolationLevel, SandboxUnavailableError, detect_isolation
from workbench.execute.limits import GiB, MiB, ResourceLimits
from workbench.execute.sandbox import Sandbox, new_token, step_script
from workbench.execute.sandbox_helpers import available_levels, sandbox_for
from workbench.execute.timeouts import calibrated_timeout
from workbench.languages.spec import RunSpec

LEVELS = available_levels()
IDS = [level.value for level in LEVELS]

# a harness that does what the protocol asks: token in on fd 3, out on fd 4 after "checks"
SH_HARNESS = 'read -r token <&3; exec 3<&-; {checks}\nprintf "%s\\n" "$token" >&4\n'


def sh_spec(checks: str = "true", **extra) -> RunSpec:
    fields = dict(
        files={"harness.sh": SH_HARNESS.format(checks=checks)},
        run=["/bin/sh", "harness.sh"],
        token_input_fd=3,
        pass_token_fd=4,
    )
    fields.update(extra)
    return RunSpec(**fields)


def run(spec: RunSpec, level=None, timeout_s: float = 30.0, token: str | None = None):
    token = token or new_token()
    return sandbox_for(level).run(spec, token, timeout_s)


def test_the_strongest_level_is_chosen():
    chosen = detect_isolation()
    assert chosen.level is LEVELS[0]
    assert chosen.description
    assert (chosen.warning is not None) == (chosen.level is IsolationLevel.RLIMITS)


def test_a_missing_bubblewrap_is_reported(monkeypatch):
    isolation_module._check_level.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        with pytest.raises(SandboxUnavailableError, match="bwrap.* not found on PATH"):
            detect_isolation("bubblewrap")
        assert detect_isolation().level is not IsolationLevel.BUBBLEWRAP
    finally:
        monkeypatch.undo()
        isolation_module._check_level.cache_clear()


def test_an_unknown_level_is_rejected():
    with pytest.raises(ValueError):
        detect_isolation("docker")


def test_the_unsandboxed_level_is_only_given_when_named():
    assert IsolationLevel.UNSANDBOXED not in LEVELS and detect_isolation().level is not IsolationLevel.UNSANDBOXED
    unsandboxed = detect_isolation("unsandboxed")
    assert unsandboxed.level is IsolationLevel.UNSANDBOXED and "trusted" in unsandboxed.warning
    assert not unsandboxed.user_per_slot


def test_the_unsandboxed_level_runs_as_the_calling_user_through_the_same_protocol():
    sandbox = sandbox_for(IsolationLevel.UNSANDBOXED)
    assert sandbox.max_slots is None and sandbox.uid_for_slot(0) is None
    outcome = run(sh_spec(checks=f'test "$(id -u)" = {os.getuid()}'), IsolationLevel.UNSANDBOXED)
    assert outcome.status == "passed", outcome
    assert run(sh_spec(checks="exit 0"), IsolationLevel.UNSANDBOXED).status == "error"


def test_execute_does_not_offer_the_unsandboxed_level():
    from typer.testing import CliRunner

    from workbench.cli import app

    result = CliRunner().invoke(app, ["execute", "x.jsonl", "-o", "out.jsonl", "--isolation", "unsandboxed"])
    assert result.exit_code != 0 and "--isolation" in result.output


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_token_after_checks_passes(level):
    outcome = run(sh_spec(), level)
    assert outcome.status == "passed", outcome
    assert outcome.passed and outcome.exit_code == 0


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_failing_checks_fail(level):
    outcome = run(sh_spec(checks="exit 1"), level)
    assert outcome.status == "failed" and not outcome.passed


def test_exit_zero_without_token_is_an_error():
    outcome = run(sh_spec(checks="exit 0"))
    assert outcome.status == "error"
    assert "no success token" in outcome.detail


def test_a_wrong_token_fails_even_with_exit_zero():
    spec = RunSpec(files={"h.sh": 'echo "guess" >&4\n'}, run=["/bin/sh", "h.sh"], token_input_fd=3, pass_token_fd=4)
    outcome = run(spec)
    assert outcome.status == "error" and "wrong token" in outcome.detail


def test_token_plus_garbage_fails():
    spec = sh_spec(checks='echo "extra" >&4')
    assert not run(spec).passed


def test_exit_statuses_map_to_sample_statuses():
    outcome = run(sh_spec(checks="exit 3", exit_statuses={3: "syntax_error"}))
    assert outcome.status == "syntax_error"


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_build_failure_is_a_syntax_error_and_builds_cannot_read_the_token(level):
    # the build step tries to read the token fd: it is closed for builds, so the step fails
    spec = sh_spec(build=[["/bin/sh", "-c", "cat <&3"]])
    outcome = run(spec, level)
    assert outcome.status == "syntax_error", outcome
    assert "cat <&3" in outcome.detail


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_a_compiler_the_sandbox_cannot_run_is_no_verdict_on_the_sample(level):
    spec = sh_spec(build=[["/nonexistent/toolchain/cc", "main.c"]])
    outcome = run(spec, level)
    assert (outcome.status, outcome.exit_code) == ("sandbox_error", 127), outcome
    assert "could not be run in the sandbox" in outcome.detail


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_build_outputs_are_visible_to_the_run(level):
    spec = sh_spec(checks="test -f built.txt || exit 1", build=[["/bin/sh", "-c", "echo ok > built.txt"]])
    assert run(spec, level).status == "passed"


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_a_slow_build_does_not_eat_the_runs_timeout(level):
    """A build longer than the sample's timeout (``javac`` on a loaded machine against the 4 s
    floor) once timed out correct samples: the build has a limit of its own, and the timeout
    starts when it is done. Both times are recorded."""
    spec = sh_spec(build=[["/bin/sh", "-c", "sleep 2.5"]])
    outcome = run(spec, level, timeout_s=1.5)
    assert outcome.status == "passed", outcome
    assert outcome.build_s >= 2.5 and outcome.duration_s < 1.5, outcome
    assert outcome.timeout_s == 1.5


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_a_build_past_its_own_limit_is_a_timeout_that_says_so(level):
    spec = sh_spec(build=[["/bin/sh", "-c", "sleep 30"]], build_timeout_s=1.0)
    outcome = run(spec, level, timeout_s=20)
    assert outcome.status == "timeout", outcome
    assert "the build was killed after its own 1 s limit" in outcome.detail
    assert 1.0 <= outcome.build_s < 10 and outcome.duration_s == 0.0


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_the_run_after_a_build_keeps_its_timeout_and_cpu_limit(level):
    slow = run(sh_spec(checks="sleep 30", build=[["true"]]), level, timeout_s=1.0)
    assert slow.status == "timeout" and "after the 1.0 s timeout" in slow.detail, slow
    assert 1.0 <= slow.duration_s < 10 and slow.build_s is not None
    # the CPU rlimit is the build's during the build, the run's (ceil(timeout) + 1 s) after it
    spin = run(sh_spec(checks="while :; do :; done", build=[["/bin/sh", "-c", "ulimit -t > build_cpu"]]),
               level, timeout_s=1.0)
    assert spin.status == "timeout", spin
    limits = run(sh_spec(checks='test "$(cat build_cpu)" = 61 && test "$(ulimit -t)" = 2 || exit 1',
                         build=[["/bin/sh", "-c", "ulimit -t > build_cpu"]]), level, timeout_s=1.0)
    assert limits.status == "passed", limits


def test_without_a_pidfd_the_build_and_the_run_are_waited_for_by_polling(monkeypatch):
    """An old kernel (no ``pidfd_open``): one wait serves the build's end and the run's exit."""

    def no_pidfd(pid):
        raise OSError(38, "Function not implemented")

    monkeypatch.setattr(os, "pidfd_open", no_pidfd)
    built = run(sh_spec(build=[["/bin/sh", "-c", "sleep 0.3"]]), timeout_s=5)
    assert built.status == "passed" and built.build_s >= 0.3, built
    assert run(sh_spec(build=[["false"]])).status == "syntax_error"
    assert run(sh_spec(checks="sleep 30", build=[["true"]]), timeout_s=1.0).status == "timeout"
    assert run(sh_spec(checks="sleep 30"), timeout_s=1.0).status == "timeout"
    assert run(sh_spec()).status == "passed"


def test_a_spec_without_build_records_no_build_time():
    outcome = run(sh_spec())
    assert outcome.status == "passed" and outcome.build_s is None


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_token_file_protocol(level):
    spec = RunSpec(
        files={"h.sh": 'read -r t <&3; exec 3<&-; printf "%s" "$t" > result.token\n', "sub/dir/data.txt": "x"},
        run=["/bin/sh", "h.sh"],
        token_input_fd=3,
        pass_token_file="result.token",
    )
    assert run(spec, level).status == "passed"


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_environment_is_scrubbed_stdin_closed_and_workdir_fresh(level, monkeypatch):
    monkeypatch.setenv("WORKBENCH_TEST_SECRET", "planted-secret-value")
    checks = (
        'env >&2; pwd >&2; if read -r line; then echo "STDIN OPEN" >&2; fi; '
        'test -z "$(ls | grep -v harness.sh)" || exit 1; touch leftover'
    )
    outcome = run(sh_spec(checks=checks), level)
    assert outcome.status == "passed", outcome
    assert "planted-secret-value" not in outcome.stderr_tail
    assert "STDIN OPEN" not in outcome.stderr_tail
    assert f"HOME={outcome.stderr_tail.splitlines()[-1]}" in outcome.stderr_tail  # HOME is the workdir
    workdir = outcome.stderr_tail.strip().splitlines()[-1]
    if level is not IsolationLevel.BUBBLEWRAP:
        assert not os.path.exists(workdir)  # removed afterwards
    # a second run starts empty again (the first one left a file behind)
    assert run(sh_spec(checks=checks), level).status == "passed"


def test_bubblewrap_root_is_read_only_and_home_hidden():
    if IsolationLevel.BUBBLEWRAP not in LEVELS:
        pytest.skip("bubblewrap not available")
    home = os.path.expanduser("~")
    checks = (
        f'if touch /usr/wb-probe 2>/dev/null; then exit 1; fi; '
        f'if [ -n "$(ls -A {home} 2>/dev/null)" ]; then exit 1; fi; '
        f'if [ -n "$(ls -A {os.getcwd()} 2>/dev/null)" ]; then exit 1; fi'
    )
    assert run(sh_spec(checks=checks), IsolationLevel.BUBBLEWRAP).status == "passed"


def test_timeout_kills_and_reports():
    outcome = run(sh_spec(checks="sleep 60"), timeout_s=1.0)
    assert outcome.status == "timeout"
    assert 1.0 <= outcome.duration_s < 10


def test_file_size_limit_holds():
    # head writes 100 MiB into a file: RLIMIT_FSIZE (64 MiB) stops it
    spec = sh_spec(checks="head -c 104857600 /dev/zero > big || exit 7")
    outcome = run(spec)
    assert not outcome.passed


@pytest.mark.parametrize(
    "bad",
    [
        dict(files={"../escape": "x"}),
        dict(files={"/abs": "x"}),
        dict(token_input_fd=4),
        dict(pass_token_fd=12),
        dict(pass_token_fd=None),
        dict(exit_statuses={1: "exploded"}),
    ],
)
def test_malformed_specs_are_rejected(bad):
    with pytest.raises(ValueError):
        run(sh_spec(**bad))


def test_limit_overrides():
    limits = ResourceLimits()
    assert limits.with_overrides({"address_space_bytes": None}).address_space_bytes is None
    assert limits.with_overrides({"processes": 8}).processes == 8
    with pytest.raises(ValueError, match="unknown resource limit"):
        limits.with_overrides({"gpus": 1})
    with pytest.raises(ValueError):
        ResourceLimits(address_space_bytes=-1)
    with pytest.raises(ValueError):
        ResourceLimits(tmpfs_bytes=10)
    pairs = dict(ResourceLimits(address_space_bytes=GiB, file_size_bytes=MiB).rlimits(2.5))
    import resource

    assert pairs[resource.RLIMIT_AS] == GiB and pairs[resource.RLIMIT_FSIZE] == MiB
    assert pairs[resource.RLIMIT_CPU] == 4  # ceil(2.5) + 1


def test_step_script_closes_token_fds_for_builds():
    script = step_script(sh_spec(build=[["make", "all"]]), status_fd=5, fd_moves={3: 21, 4: 22, 5: 23})
    assert script.splitlines()[1:4] == ["exec 3<&21 21<&-", "exec 4<&22 22<&-", "exec 5<&23 23<&-"]
    assert "make all 3<&- 4<&- </dev/null" in script
    built = step_script(sh_spec(build=[["make", "all"]]), status_fd=5, fd_moves={3: 21, 4: 22, 5: 23}, built_fd=24,
                        run_limit_lines=["ulimit -t 2"])
    assert "make all 3<&- 4<&- 24<&- </dev/null" in built  # the build cannot report itself done
    lines = built.splitlines()
    assert lines.index("printf . >&24; exec 24>&-") < lines.index("ulimit -t 2") < len(lines) - 1
    assert "exec 5>&-" in script
    assert script.rstrip().endswith("exec /bin/sh harness.sh")


def test_calibrated_timeout_is_evalplus_rule():
    assert calibrated_timeout(0.1) == 4.0  # the floor
    assert calibrated_timeout(2.0) == 8.0  # k * reference
    assert calibrated_timeout(1.0, floor_s=1.0, factor=3.0) == 3.0
    with pytest.raises(ValueError):
        calibrated_timeout(1.0, factor=0.5)


def test_works_when_the_parent_has_no_fds_3_to_9(tmp_path):
    # the protocol fds must not depend on what the calling process has open
    import subprocess
    import sys

    script = (
        "import os\n"
        "for fd in range(3, 10):\n"
        "    try:\n"
        "        os.close(fd)\n"
        "    except OSError:\n"
        "        pass\n"
        "from workbench.execute.sandbox import Sandbox, new_token\n"
        "from workbench.languages.spec import RunSpec\n"
        f"spec = RunSpec(files={{'h.sh': {SH_HARNESS.format(checks='true')!r}}}, run=['/bin/sh', 'h.sh'],"
        " token_input_fd=3, pass_token_fd=4, build=[['true']])\n"
        "token = new_token()\n"
        "print(Sandbox().run(spec, token, 30).status)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, close_fds=True)
    assert done.stdout.strip() == "passed", done.stderr[-2000:]


@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_every_process_of_the_sample_gets_the_limits(level):
    """The step script sets the rlimits (no preexec_fn, so the sandbox starts with vfork): a
    process the sample starts sees exactly the soft and hard values of ResourceLimits."""
    limits = ResourceLimits(address_space_bytes=3 * GiB, file_size_bytes=5 * MiB, processes=40, open_files=100)
    wanted = {"Max address space": (3 * GiB, 3 * GiB), "Max file size": (5 * MiB, 5 * MiB),
              "Max open files": (100, 100), "Max cpu time": (11, 12), "Max core file size": (0, 0)}
    if os.geteuid() == 0:  # as a user the sample's limit is 40 + the processes the user runs already
        wanted["Max processes"] = (40, 40)
    checks = " && ".join(
        f"sh -c 'grep \"^{name} \" /proc/self/limits' | grep -Eq '^{name} +{soft} +{hard} '"
        for name, (soft, hard) in wanted.items()
    )
    sandbox = Sandbox(detect_isolation(level), limits)
    token = new_token()
    assert sandbox.run(sh_spec(checks=checks + " || exit 9"), token, 10.0).status == "passed"


def test_limits_that_cannot_be_set_are_a_sandbox_failure():
    """A limit above the hard one would be capped, never skipped; a ulimit line that fails
    ends the step script before its start byte, so the run is a sandbox error, not a verdict."""
    from workbench.execute.limits import ulimit_commands

    lines = ulimit_commands(ResourceLimits().rlimits(4.0))
    assert lines[0] == "set +o posix" and all(line.endswith("|| exit 125") for line in lines[1:])
    script = step_script(sh_spec(), status_fd=None, fd_moves={3: 21, 4: 22}, started_fd=23,
                         limit_lines=["{ ulimit -n nonsense; } || exit 125"])
    assert script.index("ulimit -n nonsense") < script.index("printf . >&23")


@pytest.mark.parametrize("level", [lvl for lvl in LEVELS if lvl is not IsolationLevel.RLIMITS],
                         ids=[lvl.value for lvl in LEVELS if lvl is not IsolationLevel.RLIMITS])
def test_nothing_of_a_finished_sample_runs_when_run_returns(level):
    """No sweep follows a sample whose PID namespace ended: under bubblewrap the run waits for
    the namespace's init (bwrap exits before it while the sample's daemons live), so by the
    time ``run`` returns the daemons are gone, with no grace period."""
    from workbench.execute.sandbox_helpers import processes_with_cmdline

    marker = "4" + new_token()[:7].translate(str.maketrans("abcdef", "123456"))
    checks = f"(setsid sleep {marker} </dev/null >/dev/null 2>&1 &) ; (sleep {marker}1 </dev/null >/dev/null 2>&1 &)"
    outcome = run(sh_spec(checks=checks), level)
    assert outcome.status == "passed", outcome
    assert processes_with_cmdline(marker) == []


def test_the_wait_for_a_namespace_end_trusts_only_bubblewraps_own_facts():
    from workbench.execute.sandbox import _wait_for_namespace_end

    assert _wait_for_namespace_end(b"", 1.0) is False
    assert _wait_for_namespace_end(b"not json", 1.0) is False
    assert _wait_for_namespace_end(b'{"child-pid": 1}', 1.0) is False  # no namespace named
    # a live process that is not in the named namespace: the init it stood for is long gone
    own_namespace = os.stat(f"/proc/{os.getpid()}/ns/pid").st_ino
    assert _wait_for_namespace_end(f'{{"child-pid": {os.getpid()}, "pid-namespace": {own_namespace + 1}}}'.encode(),
                                   1.0) is True
    # a live process in that namespace that does not exit: not established, the caller sweeps
    facts = f'{{"child-pid": {os.getpid()}, "pid-namespace": {own_namespace}}}'
    assert _wait_for_namespace_end(facts.encode() + b'{"child-pid": 1, "pid-namespace": 2}', 0.2) is False


@pytest.mark.parametrize("build", [False, True], ids=["interpreted", "compiled"])
@pytest.mark.parametrize("level", LEVELS, ids=IDS)
def test_a_sample_holds_no_fd_but_the_protocols(level, build):
    # The run command gets stdin, stdout, stderr and the token fds (3, 4) only: every other fd the
    # parent handed the wrappers (bwrap's --info-fd, the start and build-done bytes, the build
    # report, GNU time's report pipe, the stderr log) is closed before it runs. ls opens the
    # listed folder at fd 3, closed by the harness after reading the token.
    listing = 'test "$(ls /proc/self/fd | tr "\\n" " ")" = "0 1 2 3 4 " || { ls -l /proc/self/fd >&2; exit 1; }'
    spec = sh_spec(checks=listing, build=[["/bin/true"]] if build else [])
    outcome = run(spec, level)
    assert outcome.status == "passed", outcome
