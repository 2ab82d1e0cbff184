"""A sample's status, decided from what the sandbox observed: the one place the pass-token
protocol of :class:`~workbench.languages.spec.RunSpec` is judged.

:func:`decide_status` is pure (no I/O, no clock): the sandbox gathers an
:class:`Observation` of one run (exit status, signal, what arrived on the pass-token
channel, the build report, the stderr tail, whether the watchdog fired) and hands it
over. ``workbench execute`` and the plugin conformance kit both run samples through
:class:`~workbench.execute.sandbox.Sandbox`, so both get their statuses from here.

Example::

    from workbench.execute.status import Observation, decide_status
    from workbench.formatting import count
from workbench.formatting import count
from workbench.languages.spec import RunSpec

    spec = RunSpec(files={"h.sh": "..."}, run=["/bin/sh", "h.sh"], pass_token_fd=4)
    seen = Observation(returncode=0, duration_s=0.1, timeout_s=5.0, delivered=b"tok\\n")
    decide_status(spec, "tok", seen).status        # 'passed'
    decide_status(spec, "other", seen).status      # 'error': exit 0 without the token
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shlex
import signal
from dataclasses import dataclass

from workbench.formatting import count
from workbench.languages.spec import RunSpec
from workbench.option_words import option_named

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
        peak_rss_mib: the sample's peak resident memory in MiB (1 MiB = 2**20 bytes, rounded
            to 0.1): the largest high-water mark of any one of its processes
            (:attr:`Observation.peak_rss_kib`), or ``None`` when it could not be measured.
    """

    status: str
    duration_s: float
    exit_code: int | None
    signal: str | None
    stderr_tail: str
    detail: str
    timeout_s: float
    build_s: float | None = None
    peak_rss_mib: float | None = None

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
        stderr_tail: the last characters of stderr (what the result row keeps).
        stderr_scan: what the judge reads of stderr: its first and last
            :data:`STDERR_SCAN_BYTES` (all of it when shorter), decoded. It is searched for
            out-of-memory markers (a runtime's report can lie before a long native stack trace,
            Node's does), the build's first error and the program's error line; empty: the
            judge reads ``stderr_tail``.
        wrapper_reports_signals: True when a wrapper (``bwrap``, ``unshare``) stands between
            the sandbox and the program and reports a child ended by signal N as exit
            status 128 + N.
        launcher: who started the program, for a sandbox failure's message
            (``"bubblewrap, bwrap"``).
        launch_error: set when the sandbox's command could not even be executed: the
            sentence saying why (it names the command and the ``OSError``).
        peak_rss_kib: peak resident set size in KiB of the largest process of the sample (its
            build commands included): ``ru_maxrss`` of the reaped process tree (``wait4``), or
            at a timeout the largest ``VmHWM`` of its processes still running; ``None``: unknown.
        memory_limit_bytes: the address-space limit (``RLIMIT_AS``) the sample ran under, or ``None``.
        memory_ceiling_bytes: the memory the kernel's OOM killer guards here (the cgroup's
            ceiling, else the machine's RAM), or ``None``.
        cpu_limit_s: the run's ``RLIMIT_CPU`` in CPU seconds, or ``None`` (unknown). A ``SIGXCPU``
            after under half of it in CPU time (``cpu_s``, :data:`SENT_SIGXCPU_CPU_SHARE`) was sent (by the sample to itself), not the limit's;
            without ``cpu_s``: one before ``cpu_limit_s / cpu_count`` seconds (a process uses at
            most ``duration_s`` CPU seconds per core).
        cpu_hard_limit_s: the run's hard ``RLIMIT_CPU`` in CPU seconds, whose ``SIGKILL`` ends a
            sample that ignored the soft limit's ``SIGXCPU``; ``None``: ``cpu_limit_s`` + 1
            (:func:`workbench.execute.limits.soft_and_hard`'s rule).
        cpu_count: the cores a sample can use here; ``None``: ``os.cpu_count()``.
        cpu_s: user and system CPU seconds the sample's reaped processes used (GNU time's
            ``%U`` + ``%S``, ``wait4`` of a forked sample's init), build commands included, or
            ``None`` (unknown: no GNU time, killed at the timeout).
        stderr_bytes: the size in bytes of the captured stderr (a file), or ``None`` (unknown).
        file_size_limit_bytes: the file-size limit (``RLIMIT_FSIZE``, ``--max-file-mb``) in bytes
            the sample ran under, or ``None``. A stderr at least this large reached it
            (:func:`stderr_hit_file_size_limit`).
    """

    returncode: int
    duration_s: float
    timeout_s: float
    timed_out: bool = False
    started: bool = True
    delivered: bytes = b""
    build_failure: tuple[int, str] | None = None
    stderr_tail: str = ""
    stderr_scan: str = ""
    wrapper_reports_signals: bool = False
    launcher: str = "sandbox"
    launch_error: str | None = None
    build_s: float | None = None
    build_timed_out: bool = False
    peak_rss_kib: int | None = None
    memory_limit_bytes: int | None = None
    memory_ceiling_bytes: int | None = None
    cpu_limit_s: float | None = None
    cpu_hard_limit_s: float | None = None
    cpu_count: int | None = None
    cpu_s: float | None = None
    stderr_bytes: int | None = None
    file_size_limit_bytes: int | None = None


#: a peak resident memory at or above this share of the memory limit or ceiling counts as
#: "near" it: a SIGKILL near the machine's ceiling is taken for the kernel's OOM killer (``oom``)
NEAR_MEMORY_SHARE = 0.9
#: how a detail names the memory the kernel's OOM killer guards (the cgroup's ceiling, else the RAM)
MACHINE_CEILING = "the machine's memory ceiling"


def near_memory_bound(seen: Observation) -> tuple[str, int] | None:
    """``(what, bytes)`` of the bound the sample's peak resident memory came near
    (>= :data:`NEAR_MEMORY_SHARE` of it): ``"the machine's memory ceiling"`` or ``"the memory
    limit (--memory-mb)"``; ``None`` when neither, or the peak is unknown."""
    if seen.peak_rss_kib is None:
        return None
    peak = seen.peak_rss_kib * 1024
    bounds = [(MACHINE_CEILING, seen.memory_ceiling_bytes),
              (f"the memory limit ({option_named('memory_mb')})", seen.memory_limit_bytes)]
    near = [(what, size) for what, size in bounds if size and peak >= NEAR_MEMORY_SHARE * size]
    return min(near, key=lambda pair: pair[1]) if near else None


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / (1 << 20):.0f} MiB"


#: exit statuses of the POSIX shell for a command it could not run (a missing or unusable
#: toolchain, not a compile error of the sample)
_NOT_RUN_STATUSES = {126: "found but not executable", 127: "command not found"}


def signal_name(number: int) -> str:
    """Return the name of signal ``number`` (``"SIGKILL"``), or ``"signal N"`` when unknown."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def stderr_hit_file_size_limit(seen: Observation) -> bool:
    """Whether the sample's captured stderr reached its file-size limit (``RLIMIT_FSIZE``): its
    size is at least the limit. The kernel writes a file up to the limit and fails the write that
    would pass it (``EFBIG``, after ``SIGXFSZ``), so a stderr cut by the limit is exactly that
    large; what the sandbox appends afterwards (its wrappers' messages) only adds to it."""
    return (seen.stderr_bytes is not None and seen.file_size_limit_bytes is not None
            and seen.stderr_bytes >= seen.file_size_limit_bytes)


def decide_status(spec: RunSpec, token: str, seen: Observation) -> SampleOutcome:
    """Return the :class:`SampleOutcome` of a run of ``spec`` that the sandbox observed as ``seen``.

    The rules, first match wins (the token protocol is :class:`RunSpec`'s, steps 1-4):

    1. the sandbox could not be launched, or the program never started -> :data:`SANDBOX_ERROR`
       (not a verdict on the sample);
    2. the watchdog fired -> ``timeout`` (the detail says whether the build, at its own limit,
       or the run was killed), or ``oom`` when the run's stderr already holds an out-of-memory
       marker (the runtime said it ran out of memory; ending took it past the timeout);
    3. a build command failed -> ``syntax_error`` (a compile error; the detail quotes the build's
       first error, :func:`first_build_error`), unless the shell could not
       run it at all (status 126 or 127) -> :data:`SANDBOX_ERROR`, or it reached its CPU limit
       (``SIGXCPU``, status 152) -> ``timeout``, or the build's stderr holds the OS's out-of-memory
       message (:data:`OS_OUT_OF_MEMORY_MARKERS`: the compiler hit the memory limit) -> ``oom``;
    4. ``SIGXCPU`` (the CPU rlimit), or ``SIGKILL`` at or after the timeout -> ``timeout`` (``oom``
       with a marker, as in 2); a ``SIGXCPU`` the sample sent to itself -> ``killed``: one after
       under half its CPU limit in CPU time (:attr:`Observation.cpu_s` below
       :data:`SENT_SIGXCPU_CPU_SHARE` x :attr:`Observation.cpu_limit_s`), or, the CPU time unmeasured, too soon for the limit
       on this machine's cores (at most one CPU second per second and core);
    5. exit status 0 and exactly the token (surrounding whitespace aside) arrived -> ``passed``;
    6. stderr holds an out-of-memory marker (the OS's or ``spec.out_of_memory_markers``) -> ``oom``,
       unless the exit status is one ``spec.exit_statuses`` calls ``failed`` (a check failed: a
       verdict on the code, whatever the program printed before);
    6b. ``SIGKILL`` (before the timeout) with a peak resident memory at or near the machine's memory
       ceiling (:func:`near_memory_bound`) -> ``oom`` (the kernel's OOM killer); near ``--memory-mb``
       only, it stays ``killed`` (the rlimit fails allocations, it sends no signal), the detail
       saying how near;
    6c. ``SIGKILL`` (before the timeout) after the sample used at least half its hard CPU time
       limit in CPU time (:attr:`Observation.cpu_s` >= :data:`SENT_SIGKILL_CPU_SHARE` x
       :attr:`Observation.cpu_hard_limit_s`, a runner without build commands): the hard
       ``RLIMIT_CPU``'s, one second above the soft one, after a sample that ignored the soft
       limit's ``SIGXCPU`` -> ``timeout``; one after less (a sample that sent it to itself) stays ``killed``;
    7. ended by a signal (``SIGSEGV``, ``SIGXFSZ`` at the output size limit ...) -> ``killed``;
    8. the exit status is listed in ``spec.exit_statuses`` -> that status;
    9. the token arrived but the exit status is not 0 -> ``failed``;
    10. exit status 0 without the token (none, a guess, a stale or forged one) -> ``error``;
    11. any other exit status -> ``failed``.

    A timeout's detail adds the peak resident memory when it was near a bound (a slow allocation
    that the clock ended first). A failure's detail quotes the line of stderr that says what failed (:func:`last_error_line`).
    When stderr reached the file-size limit (:func:`stderr_hit_file_size_limit`) and the sample did
    not pass, the status stays (the program's own write failed under the limit and it ended so), but
    the detail says which limit and the option that raises it instead of quoting the flood's last line
    (``harness exit status 2: its stderr reached the 64 MiB file-size limit (RLIMIT_FSIZE); writes past it
    fail, raise it with --max-file-mb``).

    Args:
        spec: the run's :class:`RunSpec` (its build commands, exit statuses and
            out-of-memory markers take part).
        token: the run's token (32 hex characters from the sandbox).
        seen: the :class:`Observation`.

    Returns:
        the outcome; ``duration_s`` and ``build_s`` rounded to 0.1 ms, ``peak_rss_mib`` to 0.1 MiB.
    """
    decided = _decide_status(spec, token, seen)
    if decided.status in ("passed", SANDBOX_ERROR) or not stderr_hit_file_size_limit(seen):
        return decided
    how = re.split(r"[:;]", decided.detail, maxsplit=1)[0]  # "harness exit status 2", "ended by SIGXFSZ"
    return dataclasses.replace(decided, detail=f"{how}: its stderr reached the {_limit_words(seen.file_size_limit_bytes)}")


def _limit_words(limit_bytes: int) -> str:
    """``64 MiB file-size limit (RLIMIT_FSIZE); writes past it fail, raise it with --max-file-mb``.

    The size as ``--max-file-mb`` takes it, in MiB with thousands separators (``1,000,000 MiB``, where
    ``:g`` wrote ``1e+06 MiB``); a limit of a fraction of a MiB (set through the API) to 0.01 MiB
    (``1.5 MiB``), or in bytes below 0.01 MiB (``1,000 bytes``)."""
    return (f"{_size_words(limit_bytes)} file-size limit (RLIMIT_FSIZE); writes past it fail, "
            f"raise it with {option_named('max_file_mb')}")


def _size_words(n_bytes: int) -> str:
    """``n_bytes`` as a person writes it: ``64 MiB``, ``1,000,000 MiB``, ``1.5 MiB``, ``1,000 bytes``."""
    mib = n_bytes / (1 << 20)
    if n_bytes % (1 << 20) == 0:
        return f"{n_bytes >> 20:,} MiB"
    if mib >= 0.01:
        return f"{mib:,.2f}".rstrip("0").rstrip(".") + " MiB"
    return f"{n_bytes:,} bytes"


def _decide_status(spec: RunSpec, token: str, seen: Observation) -> SampleOutcome:
    """The rules of :func:`decide_status`, before the file-size limit's note."""
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
    peak_mib = None if seen.peak_rss_kib is None else round(seen.peak_rss_kib / 1024, 1)
    near = near_memory_bound(seen)
    near_words = "" if near is None else (f"; its peak resident memory, {_mib(seen.peak_rss_kib * 1024)}, "
                                          f"was near {near[0]} ({_mib(near[1])})")

    def outcome(status: str, detail: str, exit_code: int | None = code, ended_by: str | None = sig) -> SampleOutcome:
        return SampleOutcome(status, round(seen.duration_s, 4), exit_code, ended_by, seen.stderr_tail, detail,
                             seen.timeout_s, build_s, peak_mib)

    if seen.timed_out and seen.build_timed_out:
        return outcome("timeout", f"the build was killed after its own {spec.build_timeout_s:g} s limit "
                                  f"(RunSpec.build_timeout_s); the tests never ran", None, "SIGKILL")
    stderr = seen.stderr_scan or seen.stderr_tail
    markers = OS_OUT_OF_MEMORY_MARKERS + tuple(spec.out_of_memory_markers)
    memory_line = _line_with_marker(stderr, markers) if seen.build_failure is None else None
    if seen.timed_out:
        if memory_line is not None:
            return outcome("oom", f"memory limit reached: {memory_line} (then killed after the "
                                  f"{seen.timeout_s:.1f} s timeout)", None, "SIGKILL")
        return outcome("timeout", f"killed after the {seen.timeout_s:.1f} s timeout{near_words}", None, "SIGKILL")
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
        # the compiler's own allocation failure under --memory-mb (g++: "virtual memory exhausted: Cannot
        # allocate memory"): the limit, not the code; only the OS's words, as a runtime's (MemoryError,
        # std::bad_alloc) can be a compile error quoting the source
        out_of_memory = _line_with_marker(stderr, OS_OUT_OF_MEMORY_MARKERS)
        if out_of_memory is not None:
            return outcome("oom", f"build step {command!r} ran out of memory (raise {option_named('memory_mb')} if the compiler "
                                  f"needs more): {out_of_memory}", status, None)
        said = first_build_error(stderr)
        return outcome("syntax_error", f"build step {command!r} failed with status {reported}"
                                       + (f": {said}" if said else ""), status, None)
    if sig == "SIGXCPU" and seen.cpu_limit_s is not None and seen.cpu_s is not None \
            and seen.cpu_s < SENT_SIGXCPU_CPU_SHARE * seen.cpu_limit_s:
        return outcome("killed", f"ended by SIGXCPU after {seen.cpu_s:.2f} CPU seconds ({seen.duration_s:.2f} s), "
                                 f"far below its {seen.cpu_limit_s:g} s CPU time limit: the signal was sent, "
                                 f"not the limit's")
    if sig == "SIGXCPU" and not _cpu_limit_reachable(seen):
        cores = seen.cpu_count or os.cpu_count() or 1
        return outcome("killed", f"ended by SIGXCPU after {seen.duration_s:.2f} s, too soon to have used its "
                                 f"{seen.cpu_limit_s:g} s CPU time limit on {count(cores, 'core')}: the signal "
                                 f"was sent, not the limit's")
    if sig == "SIGXCPU" or (sig == "SIGKILL" and seen.duration_s >= seen.timeout_s):
        if memory_line is not None:
            return outcome("oom", f"memory limit reached: {memory_line} (then the CPU time limit ended the run)")
        return outcome("timeout", f"CPU time limit exceeded{near_words}")
    token_ok = seen.delivered.strip() == token.encode()
    if token_ok and seen.returncode == 0:
        return outcome("passed", "the harness reported success", 0, None)
    check_failed = sig is None and spec.exit_statuses.get(code) == "failed"
    if not check_failed and memory_line is not None:
        return outcome("oom", f"memory limit reached: {memory_line}")
    ceiling = seen.memory_ceiling_bytes
    if sig == "SIGKILL" and peak_mib is not None and ceiling and seen.peak_rss_kib * 1024 >= NEAR_MEMORY_SHARE * ceiling:
        # nobody but the kernel's OOM killer sends it there; near --memory-mb alone it is not the
        # limit's doing (RLIMIT_AS makes an allocation fail, it never kills): said, not classed oom
        return outcome("oom", f"ended by SIGKILL with a peak resident memory of {_mib(seen.peak_rss_kib * 1024)}, "
                              f"at or near {MACHINE_CEILING} ({_mib(ceiling)}): the kernel's OOM killer")
    hard_cpu_s = _cpu_hard_limit_s(seen)
    if (sig == "SIGKILL" and not spec.build and seen.cpu_s is not None and hard_cpu_s is not None
            and seen.cpu_s >= SENT_SIGKILL_CPU_SHARE * hard_cpu_s):
        # the soft limit's SIGXCPU was ignored (or handled): the hard limit, a second later, sends SIGKILL
        # (at once when this process's own hard limit capped both at one value)
        ignored = (f"; its soft limit's SIGXCPU, at {seen.cpu_limit_s:g} s, was ignored"
                   if seen.cpu_limit_s is not None and seen.cpu_limit_s < hard_cpu_s else "")
        return outcome("timeout", f"CPU time limit exceeded: ended by SIGKILL after {seen.cpu_s:.1f} CPU seconds, "
                                  f"the hard limit's ({hard_cpu_s:g} s{ignored}){near_words}")
    if sig == "SIGXFSZ" and seen.file_size_limit_bytes is not None:
        return outcome("killed", f"ended by SIGXFSZ: a file it wrote reached the {_limit_words(seen.file_size_limit_bytes)}")
    if sig is not None:
        return outcome("killed", f"ended by {sig}{near_words}")
    if code in spec.exit_statuses:
        said = last_error_line(stderr)
        return outcome(spec.exit_statuses[code], f"harness exit status {code}" + (f": {said}" if said else ""),
                       ended_by=None)
    if token_ok:
        return outcome("failed", f"the checks passed but the program then exited with status {code}", ended_by=None)
    if code == 0:
        why = "a wrong token arrived" if seen.delivered.strip() else "no success token arrived"
        return outcome("error", f"exited with status 0 before the checks completed ({why})", 0, None)
    said = last_error_line(stderr)
    return outcome("failed", f"exit status {code}" + (f": {said}" if said else ""), ended_by=None)


#: a ``SIGXCPU`` after less than this share of the sample's ``RLIMIT_CPU`` in measured CPU time
#: (:attr:`Observation.cpu_s`) was sent by the sample, not by the limit. Not 1: the kernel checks the
#: limit against the tick-sampled user + system time (``check_process_timers``,
#: kernel/time/posix-cpu-timers.c), while ``wait4`` (GNU time's ``%U`` + ``%S``) reports the scheduler's
#: exact run time, which can be well below it: a sample spinning into a 1 s limit got the limit's
#: ``SIGXCPU`` at 0.73 to 0.99 measured CPU seconds on a loaded 2-core machine (load 8, every way a
#: sample starts). A sample that sleeps or exits at once uses a few hundredths of a second.
SENT_SIGXCPU_CPU_SHARE = 0.5
#: a ``SIGKILL`` before the timeout is the hard ``RLIMIT_CPU``'s (``timeout``) when the sample used at
#: least this share of that hard limit in measured CPU time; after less it was sent (``killed``). The
#: kernel checks the hard limit against the same tick-sampled time as the soft one, with the same gap:
#: samples that ignored ``SIGXCPU`` and spun into a 3 s soft / 4 s hard limit got its ``SIGKILL`` at
#: 2.86 to 3.88 measured CPU seconds (44 runs, 2-core machine at load 13 to 17, every way a sample
#: starts), 4 of them under the soft limit, which the old threshold (the soft limit) called
#: ``killed``; into 2 s / 3 s at 2.39 to 2.90. A sample that sends itself ``SIGKILL`` at once has used
#: a few hundredths of a second (docs/execute.md, "Timeouts").
SENT_SIGKILL_CPU_SHARE = SENT_SIGXCPU_CPU_SHARE


def _cpu_hard_limit_s(seen: Observation) -> float | None:
    """The run's hard ``RLIMIT_CPU`` in CPU seconds: :attr:`Observation.cpu_hard_limit_s`, else one
    second above the soft limit (:func:`workbench.execute.limits.soft_and_hard`); ``None`` when
    neither is known."""
    if seen.cpu_hard_limit_s is not None:
        return seen.cpu_hard_limit_s
    return None if seen.cpu_limit_s is None else seen.cpu_limit_s + 1


def _cpu_limit_reachable(seen: Observation) -> bool:
    """Whether the run lasted long enough to use its CPU time limit: at most one CPU second per
    wall-clock second and core (1 s of slack for the step shell's own time before the run);
    True when the limit is unknown."""
    if seen.cpu_limit_s is None:
        return True
    cores = seen.cpu_count or os.cpu_count() or 1
    return seen.duration_s * cores + 1.0 >= seen.cpu_limit_s


#: the longest stderr line a ``detail`` quotes
DETAIL_LINE_CHARS = 200

#: the longest excerpt of a failed build's stderr a ``detail`` quotes (its first error and the
#: lines that follow it)
DETAIL_BUILD_CHARS = 300

#: how much of stderr's start and end the judge reads (:attr:`Observation.stderr_scan`)
STDERR_SCAN_BYTES = 8192

# A line that starts an exception report: Python's "NameError: ...", "AssertionError", Node's
# "AssertionError [ERR_ASSERTION]: ...", Java's "java.lang.AssertionError: ..." (also after
# "Exception in thread "main" " or "Caused by: ").
_EXCEPTION_LINE = re.compile(
    r'^(?:Exception in thread "[^"]*" |Caused by: |Uncaught )?'
    r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*(?:Error|Exception|Interrupt|Exit)\b(?: \[[^\]]*\])?(?::|$)"
)
# a stack frame or traceback heading (JavaScript/Java "    at f (file:1:2)", Python's
# '  File "x.py", line 3, in f', Java's "... 4 more", a native frame " 3: 0x10ea6aa f [node]")
_FRAME_LINE = re.compile(r'^\s+at\s|^\s*File "[^"]*", line \d+|^\s*\.\.\. \d+ more$|^Traceback \(most recent call'
                         r"|^\s*\d+: 0x[0-9a-f]+ |^-{3,} [^-]* -{3,}$")
# lines that say nothing: Node's closing "Node.js v20.1.0", a caret or tilde marker, a bracket alone
_NOISE_LINE = re.compile(r"^Node\.js v\d|^[\s^~{}\[\](),;|]*$")
# a compiler's or checker's error line: "x.cpp:3:5: error: ...", "Main.java:5: error: ...",
# "SyntaxError: ...", "error[E0308]: ...", "fatal error: ..."
_BUILD_ERROR_LINE = re.compile(r"\berror\b|Error\b", re.IGNORECASE)
# how far back the line that opened an error object's dump is looked for (Node's have ~10 lines)
_DUMP_LINES = 40
# a compiler's own error report: "error:", "fatal error:", "error[E0308]:", "SyntaxError:", "error TS2322:"
_BUILD_ERROR_REPORT = re.compile(r"error(?:\[[^\]]*\]| TS\d+)?:", re.IGNORECASE)
# how many lines after a build's first error line the detail adds (the source excerpt)
_BUILD_CONTEXT_LINES = 2


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _says_nothing(line: str) -> bool:
    return not line.strip() or bool(_NOISE_LINE.match(line)) or bool(_FRAME_LINE.match(line))


def last_error_line(stderr_tail: str) -> str | None:
    """The line of a sample's stderr that says what failed, cut to :data:`DETAIL_LINE_CHARS`, or
    ``None`` when stderr is empty. So ``detail`` says why without opening ``stderr_tail``.

    It is the last line that says something: stack frames, Node's closing ``Node.js v20...``, an
    error object's ``{ ... }`` dump and caret or bracket lines are passed over. When that line
    continues an exception's message (Node's ``assert`` diff, a Python message of several lines),
    the exception's line leads, the continuation joined with `` | ``
    (``AssertionError [ERR_ASSERTION]: Expected values to be strictly equal: | 1 !== 2``); a Python
    exception without a message (a bare ``AssertionError``) gets the failing source line and its
    place (``AssertionError at tests.py, line 10: assert candidate([]) == (0, 1)``). Otherwise
    (a harness's or a compiler's last word; always for a harness's own ``workbench: ...`` verdict,
    such as ``workbench: assertion failed: ...``) it is that line.
    """
    lines = [line.rstrip() for line in stderr_tail.splitlines()]
    end = len(lines) - 1
    while end >= 0:
        if lines[end].strip() == "}":  # a JavaScript error object's dump: back to the line that opened it
            opened = next((i for i in range(end - 1, max(-1, end - _DUMP_LINES), -1) if lines[i].endswith("{")), None)
            if opened is not None:
                lines[opened] = lines[opened][:-1].rstrip()  # Node puts the "{" after the last frame
                end = opened
                continue
        if not _says_nothing(lines[end]):
            break
        end -= 1
    if end < 0:
        last = next((line.strip() for line in reversed(lines) if line.strip()), None)
        return None if last is None else _cut(last, DETAIL_LINE_CHARS)
    said = _exception_with_message(lines, end)
    return _cut(said, DETAIL_LINE_CHARS)


def _exception_with_message(lines: list[str], end: int) -> str:
    """``lines[end]`` (a line that says something) with the exception line whose message it
    continues, or a bare Python exception with the source line above it."""
    header = None
    if lines[end].startswith("workbench: "):  # a harness's own verdict line stands alone
        return lines[end].strip()
    for index in range(end, max(-1, end - 30), -1):  # a message of up to 30 lines
        if _FRAME_LINE.match(lines[index]):
            break
        if _EXCEPTION_LINE.match(lines[index].strip()) and not lines[index].startswith(" "):
            header = index
            break
    if header is None:
        return lines[end].strip()
    header_line = lines[header].strip()
    if header == end and header_line.endswith(("Error", "Exception")) and ":" not in header_line:
        source = _python_source_above(lines, header)
        if source is not None:
            return f"{header_line} at {source}"
    parts = [header_line] + [" ".join(line.split()) for line in lines[header + 1 : end + 1] if not _says_nothing(line)]
    return " | ".join(parts)


def _python_source_above(lines: list[str], index: int) -> str | None:
    """``'tests.py, line 10: assert ...'`` for the innermost frame of the Python traceback that
    ends at ``lines[index]``, or ``None`` when the lines above are not such a frame."""
    above = [i for i in range(index - 1, max(-1, index - 5), -1) if not _NOISE_LINE.match(lines[i])]
    if len(above) < 2:
        return None
    source, frame = lines[above[0]], lines[above[1]]
    where = re.match(r'^\s*File "([^"]*)", line (\d+)', frame)
    if where is None or _FRAME_LINE.match(source):
        return None
    return f"{where.group(1)}, line {where.group(2)}: {source.strip()}"


def first_build_error(stderr: str) -> str | None:
    """The first error a failed build reported, with up to two lines after it (the source
    excerpt; caret lines and stack frames left out), joined with `` | `` and cut to
    :data:`DETAIL_BUILD_CHARS`; the first lines of stderr when none names an error; ``None``
    for an empty stderr.

    Example: g++'s ``program.cpp:3:5: error: expected ';' before '}' token | 3 | }``; javac's
    ``Problem.java:5: error: ';' expected | return x``; ``node --check``'s
    ``SyntaxError: Unexpected token ';'``.
    """
    lines = [line.rstrip() for line in stderr.splitlines()]
    meaningful = [index for index, line in enumerate(lines) if not _says_nothing(line)]
    if not meaningful:
        return None
    first = next((index for index in meaningful if _BUILD_ERROR_REPORT.search(lines[index])),
                 next((index for index in meaningful if _BUILD_ERROR_LINE.search(lines[index])), meaningful[0]))
    kept = [first]
    for index in meaningful:
        if index <= first:
            continue
        if len(kept) > _BUILD_CONTEXT_LINES or index - first > 2 * _BUILD_CONTEXT_LINES:
            break
        if _BUILD_ERROR_LINE.search(lines[index]):  # the next error (or javac's "1 error"): not this one's excerpt
            break
        kept.append(index)
    return _cut(" | ".join(" ".join(lines[index].split()) for index in kept), DETAIL_BUILD_CHARS)


def _line_with_marker(stderr: str, markers: tuple[str, ...]) -> str | None:
    """The first stderr line holding one of ``markers`` (stripped, cut to :data:`DETAIL_LINE_CHARS`),
    or ``None``."""
    for line in stderr.splitlines():
        if any(marker in line for marker in markers):
            return _cut(line.strip(), DETAIL_LINE_CHARS)
    return None


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


__all__ = [
    "NEAR_MEMORY_SHARE", "SENT_SIGXCPU_CPU_SHARE", "SENT_SIGKILL_CPU_SHARE", "OS_OUT_OF_MEMORY_MARKERS", "SANDBOX_ERROR", "Observation", "SampleOutcome", "decide_status",
    "first_build_error", "last_error_line", "near_memory_bound", "signal_name",
]
