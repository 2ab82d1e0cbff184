"""A sample's status, decided from what the sandbox observed: the one place the pass-token
protocol of :class:`~workbench.languages.spec.RunSpec` is judged.

:func:`decide_status` is pure (no I/O, no clock): the sandbox gathers an
:class:`Observation` of one run (exit status, signal, what arrived on the pass-token
channel, the build report, the stderr tail, whether the watchdog fired) and hands it
over. ``workbench execute`` and the plugin conformance kit both run samples through
:class:`~workbench.execute.sandbox.Sandbox`, so both get their statuses from here.

Example::

    from workbench.execute.status import Observation, decide_status
    from workbench.languages.spec import RunSpec

    spec = RunSpec(files={"h.sh": "..."}, run=["/bin/sh", "h.sh"], pass_token_fd=4)
    seen = Observation(returncode=0, duration_s=0.1, timeout_s=5.0, delivered=b"tok\\n")
    decide_status(spec, "tok", seen).status        # 'passed'
    decide_status(spec, "other", seen).status      # 'error': exit 0 without the token
"""

from __future__ import annotations

import contextlib
import shlex
import signal
from dataclasses import dataclass

from workbench.languages.spec import RunSpec

#: the OS's own allocation-failure message; each runner adds its runtime's markers
#: (``RunSpec.out_of_memory_markers``)
OS_OUT_OF_MEMORY_MARKERS: tuple[str, ...] = ("Cannot allocate memory",)

#: the status of a sample the sandbox itself failed to start (the wrapper, ``setpriv`` or
#: the step shell never reached the program). Not a verdict on the candidate: such samples
#: are not written as result rows (see :mod:`workbench.execute.job`), and runners cannot
#: claim it (it is not one of :data:`~workbench.languages.spec.SAMPLE_STATUSES`).
SANDBOX_ERROR = "sandbox_error"


@dataclass(frozen=True)
class SampleOutcome:
    """What happened to one sample.

    Attributes:
        status: one of :data:`~workbench.languages.spec.SAMPLE_STATUSES`, or
            :data:`SANDBOX_ERROR` when the sandbox failed before the program started.
        duration_s: wall-clock seconds of the run, the span ``timeout_s`` limits: from the end
            of the build (the sandbox's start, for a spec without build commands) to exit or kill.
        exit_code: the exit status of the sandbox's command (``None`` when killed by us).
        signal: the signal name that ended it (``"SIGKILL"``, ``"SIGXCPU"`` ...), or ``None``.
        stderr_tail: the last characters of stderr (build stderr for a compile error).
        detail: one human sentence on why this status.
        timeout_s: the timeout the sample ran under.
        build_s: wall-clock seconds from the sandbox's start to the end of the build commands
            (their own limit: ``RunSpec.build_timeout_s``), or ``None`` for a spec without any.
    """

    status: str
    duration_s: float
    exit_code: int | None
    signal: str | None
    stderr_tail: str
    detail: str
    timeout_s: float
    build_s: float | None = None

    @property
    def passed(self) -> bool:
        """True only for ``status == "passed"``."""
        return self.status == "passed"

    @property
    def sandbox_failed(self) -> bool:
        """True when the sandbox, not the candidate, is why the sample did not run."""
        return self.status == SANDBOX_ERROR


@dataclass(frozen=True)
class Observation:
    """What the sandbox saw of one run, before any judgement.

    Attributes:
        returncode: ``Popen.returncode`` of the sandbox's first process (negative: ended
            by that signal number).
        duration_s: wall-clock seconds of the run (after the build) to exit or kill.
        timeout_s: the wall-clock timeout the run had.
        timed_out: True when the watchdog killed the run at ``timeout_s`` (or the build at its
            own limit: ``build_timed_out``).
        build_s: wall-clock seconds the build commands took, or ``None`` without any.
        build_timed_out: True when the watchdog killed the build at ``RunSpec.build_timeout_s``.
        started: False when the step script's start byte never arrived: the sandbox's own
            set-up (``bwrap``, ``unshare``, ``setpriv``) failed before any candidate code.
        delivered: the bytes that arrived on the pass-token channel (fd or file).
        build_failure: ``(index of the build command, its exit status as reported)`` when a
            build command failed, else ``None``.
        stderr_tail: the last characters of stderr.
        wrapper_reports_signals: True when a wrapper (``bwrap``, ``unshare``) stands between
            the sandbox and the program and reports a child ended by signal N as exit
            status 128 + N.
        launcher: who started the program, for a sandbox failure's message
            (``"bubblewrap, bwrap"``).
        launch_error: set when the sandbox's command could not even be executed: the
            sentence saying why (it names the command and the ``OSError``).
    """

    returncode: int
    duration_s: float
    timeout_s: float
    timed_out: bool = False
    started: bool = True
    delivered: bytes = b""
    build_failure: tuple[int, str] | None = None
    stderr_tail: str = ""
    wrapper_reports_signals: bool = False
    launcher: str = "sandbox"
    launch_error: str | None = None
    build_s: float | None = None
    build_timed_out: bool = False


#: exit statuses of the POSIX shell for a command it could not run (a missing or unusable
#: toolchain, not a compile error of the sample)
_NOT_RUN_STATUSES = {126: "found but not executable", 127: "command not found"}


def signal_name(number: int) -> str:
    """Return the name of signal ``number`` (``"SIGKILL"``), or ``"signal N"`` when unknown."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def decide_status(spec: RunSpec, token: str, seen: Observation) -> SampleOutcome:
    """Return the :class:`SampleOutcome` of a run of ``spec`` that the sandbox observed as ``seen``.

    The rules, first match wins (the token protocol is :class:`RunSpec`'s, steps 1-4):

    1. the sandbox could not be launched, or the program never started -> :data:`SANDBOX_ERROR`
       (not a verdict on the sample);
    2. the watchdog fired -> ``timeout`` (the detail says whether the build, at its own limit,
       or the run was killed);
    3. a build command failed -> ``syntax_error`` (a compile error), unless the shell could not
       run it at all (status 126 or 127) -> :data:`SANDBOX_ERROR`, or it reached its CPU limit
       (``SIGXCPU``, status 152) -> ``timeout``;
    4. ``SIGXCPU`` (the CPU rlimit), or ``SIGKILL`` at or after the timeout -> ``timeout``;
    5. exit status 0 and exactly the token (surrounding whitespace aside) arrived -> ``passed``;
    6. stderr holds an out-of-memory marker (the OS's or ``spec.out_of_memory_markers``) -> ``oom``,
       unless the exit status is one ``spec.exit_statuses`` calls ``failed`` (a check failed: a
       verdict on the code, whatever the program printed before);
    7. ended by a signal (``SIGSEGV``, ``SIGXFSZ`` at the output size limit ...) -> ``killed``;
    8. the exit status is listed in ``spec.exit_statuses`` -> that status;
    9. the token arrived but the exit status is not 0 -> ``failed``;
    10. exit status 0 without the token (none, a guess, a stale or forged one) -> ``error``;
    11. any other exit status -> ``failed``.

    Args:
        spec: the run's :class:`RunSpec` (its build commands, exit statuses and
            out-of-memory markers take part).
        token: the run's token (32 hex characters from the sandbox).
        seen: the :class:`Observation`.

    Returns:
        the outcome; ``duration_s`` and ``build_s`` rounded to 0.1 ms.
    """
    code: int | None = seen.returncode
    sig = None
    if seen.launch_error is not None or not seen.started:
        return _sandbox_failure(seen)
    if seen.returncode < 0:
        sig, code = signal_name(-seen.returncode), None
    elif seen.returncode > 128 and seen.wrapper_reports_signals:
        with contextlib.suppress(ValueError):
            sig = signal.Signals(seen.returncode - 128).name

    build_s = None if seen.build_s is None else round(seen.build_s, 4)

    def outcome(status: str, detail: str, exit_code: int | None = code, ended_by: str | None = sig) -> SampleOutcome:
        return SampleOutcome(status, round(seen.duration_s, 4), exit_code, ended_by, seen.stderr_tail, detail,
                             seen.timeout_s, build_s)

    if seen.timed_out and seen.build_timed_out:
        return outcome("timeout", f"the build was killed after its own {spec.build_timeout_s:g} s limit "
                                  f"(RunSpec.build_timeout_s); the tests never ran", None, "SIGKILL")
    if seen.timed_out:
        return outcome("timeout", f"killed after the {seen.timeout_s:.1f} s timeout", None, "SIGKILL")
    if seen.build_failure is not None:
        step, reported = seen.build_failure
        command = shlex.join(spec.build[step]) if 0 <= step < len(spec.build) else "build"
        status = int(reported) if reported.isdigit() else None
        if status in _NOT_RUN_STATUSES:  # the shell could not run the compiler: no verdict on the sample
            return outcome(SANDBOX_ERROR, f"build step {command!r} could not be run in the sandbox (status {status}: "
                                          f"{_NOT_RUN_STATUSES[status]}); the toolchain is not reachable there",
                           status, None)
        if status == 128 + signal.SIGXCPU:  # bash's status for a command ended by SIGXCPU
            return outcome("timeout", f"build step {command!r} reached its CPU time limit "
                                      f"({spec.build_timeout_s:g} s, RunSpec.build_timeout_s)", status, None)
        return outcome("syntax_error", f"build step {command!r} failed with status {reported}", status, None)
    if sig == "SIGXCPU" or (sig == "SIGKILL" and seen.duration_s >= seen.timeout_s):
        return outcome("timeout", "CPU time limit exceeded")
    token_ok = seen.delivered.strip() == token.encode()
    if token_ok and seen.returncode == 0:
        return outcome("passed", "the harness reported success", 0, None)
    check_failed = sig is None and spec.exit_statuses.get(code) == "failed"
    if not check_failed and any(
        marker in seen.stderr_tail for marker in OS_OUT_OF_MEMORY_MARKERS + tuple(spec.out_of_memory_markers)
    ):
        return outcome("oom", "memory limit reached")
    if sig is not None:
        return outcome("killed", f"ended by {sig}")
    if code in spec.exit_statuses:
        said = last_error_line(seen.stderr_tail)
        return outcome(spec.exit_statuses[code], f"harness exit status {code}" + (f": {said}" if said else ""),
                       ended_by=None)
    if token_ok:
        return outcome("failed", f"the checks passed but the program then exited with status {code}", ended_by=None)
    if code == 0:
        why = "a wrong token arrived" if seen.delivered.strip() else "no success token arrived"
        return outcome("error", f"exited with status 0 before the checks completed ({why})", 0, None)
    said = last_error_line(seen.stderr_tail)
    return outcome("failed", f"exit status {code}" + (f": {said}" if said else ""), ended_by=None)


#: the longest stderr line a ``detail`` quotes
DETAIL_LINE_CHARS = 200


def last_error_line(stderr_tail: str) -> str | None:
    """The last non-empty line of a sample's stderr (Python's exception line, ``NameError: name
    'math' is not defined``; a compiler's or a harness's last word), cut to
    :data:`DETAIL_LINE_CHARS`, or ``None`` when stderr is empty. So ``detail`` says why without
    opening ``stderr_tail``."""
    lines = [line.strip() for line in stderr_tail.splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[-1]
    return line if len(line) <= DETAIL_LINE_CHARS else line[: DETAIL_LINE_CHARS - 3] + "..."


def _sandbox_failure(seen: Observation) -> SampleOutcome:
    """The outcome of a run whose program never started: the sandbox's own error."""
    if seen.launch_error is not None:
        return SampleOutcome(SANDBOX_ERROR, round(seen.duration_s, 4), None, None, "", seen.launch_error,
                             seen.timeout_s)
    returncode = seen.returncode
    last = next((line.strip() for line in reversed(seen.stderr_tail.splitlines()) if line.strip()), "")
    if seen.timed_out:
        why = f"did not start the program within the {seen.timeout_s:.1f} s timeout"
    elif returncode < 0:
        why = f"was ended by {signal_name(-returncode)} before the program started"
    else:
        why = f"exited with status {returncode} before the program started"
    detail = f"the sandbox ({seen.launcher}) {why}" + (f": {last}" if last else "")
    code = returncode if returncode >= 0 else None
    sig = signal_name(-returncode) if returncode < 0 else None
    return SampleOutcome(SANDBOX_ERROR, round(seen.duration_s, 4), code, sig, seen.stderr_tail, detail, seen.timeout_s)


__all__ = ["OS_OUT_OF_MEMORY_MARKERS", "SANDBOX_ERROR", "Observation", "SampleOutcome", "decide_status", "signal_name"]
