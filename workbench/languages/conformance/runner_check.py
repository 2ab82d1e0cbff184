"""The runner check of the conformance kit, and :func:`run_spec` for plugin tests.

Live runs go through the very sandbox of ``workbench execute``
(:class:`workbench.execute.Sandbox`), at its strongest isolation or at the
``unsandboxed`` level (trusted programs only); either way the status comes from
:func:`workbench.execute.status.decide_status`, so a runner judged right here is judged
the same way under ``workbench execute``.

Example (a plugin's own test)::

    from workbench.execute import new_token
    from workbench.languages.conformance import run_spec

    token = new_token()
    outcome = run_spec(runner.prepare(program, tests, None, token), token, timeout_s=60)
    assert outcome.passed, outcome.detail
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from workbench.execute import IsolationLevel, ResourceLimits, Sandbox, SampleOutcome, detect_isolation, new_token
from workbench.languages.spec import SAMPLE_STATUSES, InvalidRunSpecError, LanguagePlugin, RunSpec, TestRunner

#: how live runs may execute (see :func:`check_runner`)
EXECUTORS: tuple[str, ...] = ("auto", "sandbox", "unsandboxed")


@dataclass(frozen=True)
class RunnerCase:
    """One program the plugin's runner must judge correctly.

    Attributes:
        program: the candidate program (already prompt + completion).
        tests: the test code in the problem set's layout (e.g. a MultiPL-E harness).
        expect_pass: whether the program passes the tests.
        entry_point: passed through to :meth:`TestRunner.prepare`.
        description: shown in failure messages (``"exit(0) before asserts"``).
        expect_status: optionally, the exact status the run must end with (one of
            :data:`~workbench.languages.spec.SAMPLE_STATUSES`, e.g. ``"oom"`` for a program
            that allocates without bound); ``None`` checks pass / fail only.

    Raises:
        ValueError: ``expect_status`` is unknown or contradicts ``expect_pass``.
    """

    program: str
    tests: str
    expect_pass: bool
    entry_point: str | None = None
    description: str = ""
    expect_status: str | None = None

    def __post_init__(self) -> None:
        if self.expect_status is None:
            return
        if self.expect_status not in SAMPLE_STATUSES:
            raise ValueError(f"RunnerCase.expect_status must be one of {SAMPLE_STATUSES}, not {self.expect_status!r}")
        if (self.expect_status == "passed") != self.expect_pass:
            raise ValueError(f"RunnerCase.expect_status {self.expect_status!r} contradicts expect_pass={self.expect_pass}")


def sandbox_for_executor(executor: str, limits: ResourceLimits | None = None) -> Sandbox:
    """Return the :class:`~workbench.execute.Sandbox` live runs use for ``executor``:
    ``"auto"`` and ``"sandbox"`` -> the strongest isolation this machine offers (what
    ``workbench execute`` picks), ``"unsandboxed"`` -> the ``unsandboxed`` level.

    Args:
        executor: one of :data:`EXECUTORS`.
        limits: :class:`~workbench.execute.ResourceLimits` (default: ``workbench execute``'s).

    Raises:
        ValueError: an unknown ``executor``.
    """
    if executor not in EXECUTORS:
        raise ValueError(f"executor must be one of {', '.join(map(repr, EXECUTORS))}, not {executor!r}")
    level = IsolationLevel.UNSANDBOXED if executor == "unsandboxed" else None
    return Sandbox(detect_isolation(level), limits)


def run_spec(spec: RunSpec, token: str, timeout_s: float = 60.0, *, executor: str = "unsandboxed") -> SampleOutcome:
    """Run one :class:`RunSpec` through ``workbench execute``'s sandbox and return its
    :class:`~workbench.execute.SampleOutcome` (status, exit code, signal, stderr tail, why).

    The default ``executor="unsandboxed"`` runs with no isolation, as the calling user:
    only for trusted programs (the kit's own cases, published reference solutions).
    Untrusted model output belongs in ``executor="sandbox"``.

    Args:
        spec: what to write, build and run (from the runner's ``prepare``).
        token: the token given to ``prepare`` (e.g. from :func:`workbench.execute.new_token`).
        timeout_s: wall-clock seconds for the run (the build has its own limit, ``spec.build_timeout_s``).
        executor: one of :data:`EXECUTORS` (see :func:`sandbox_for_executor`).
    """
    return sandbox_for_executor(executor).run(spec, token, timeout_s)


def check_runner(
    plugin: LanguagePlugin,
    runner_cases: Sequence[RunnerCase],
    execute: bool = True,
    timeout_s: float = 60.0,
    executor: str = "auto",
) -> tuple[list[str], str | None]:
    """Check the plugin's test runner statically and, when its toolchain is present, on ``runner_cases``.

    Args:
        plugin: the plugin under test.
        runner_cases: programs with tests, at least one passing and one failing.
        execute: run the cases live (else only the static checks).
        timeout_s: wall-clock limit of each live run, in seconds.
        executor: how live runs execute: ``"auto"`` or ``"sandbox"`` (the sandbox of
            ``workbench execute`` at the strongest isolation here), or ``"unsandboxed"``
            (the same sandbox at its ``unsandboxed`` level: trusted cases only).

    Returns:
        (problems, reason the live runs were skipped or ``None``).
    """
    runner = plugin.runner
    if runner is None:
        return [], "plugin has no runner"
    problems = _runner_problems(runner)
    missing = runner.missing_toolchain()
    if not any(case.expect_pass for case in runner_cases) or all(case.expect_pass for case in runner_cases):
        problems.append("give runner_cases with at least one passing and one failing program")
    for number, case in enumerate(runner_cases):
        problems.extend(f"{_label(number, case)}: {problem}" for problem in _prepare_problems(runner, case))
    if problems or not execute:
        return problems, None if execute else "live runs disabled"
    if missing:
        return problems, f"toolchain missing: {', '.join(missing)}"
    sandbox = sandbox_for_executor(executor)
    for number, case in enumerate(runner_cases):
        problem = _live_problem(runner, case, sandbox, timeout_s)
        if problem:
            problems.append(f"{_label(number, case)}: {problem}")
    return problems, None


def _label(number: int, case: RunnerCase) -> str:
    return f"runner case {number}" + (f" ({case.description})" if case.description else "")


def _runner_problems(runner: TestRunner) -> list[str]:
    """The runner's own attributes: toolchain, ``build_program`` modes and ``toolchain_spec``."""
    problems = []
    toolchain = runner.toolchain
    if isinstance(toolchain, str) or not isinstance(toolchain, tuple) or not toolchain:
        problems.append(f"runner.toolchain must be a non-empty tuple of executable names, got {toolchain!r}")
    missing = runner.missing_toolchain()
    if not isinstance(missing, list) or not all(isinstance(item, str) for item in missing):
        problems.append(f"missing_toolchain() must return a list of str, got {missing!r}")
    if runner.build_program("PROMPT", "BODY", "completion") != "PROMPTBODY":
        problems.append("build_program(prompt, completion, 'completion') must be prompt + completion")
    if runner.build_program("PROMPT", "WHOLE", "full") != "WHOLE":
        problems.append("build_program(prompt, completion, 'full') must be the completion alone")
    try:
        runner.build_program("P", "C", "no-such-mode")
        problems.append("build_program with an unknown mode must raise ValueError")
    except ValueError:
        pass
    # workbench execute checks this spec before any sample runs: if it raises, nothing runs
    try:
        spec = runner.toolchain_spec(new_token())
    except InvalidRunSpecError as error:  # the spec's own fault, whoever built it
        invalid = str(error).removeprefix("invalid RunSpec: ")
        if type(runner).toolchain_spec is TestRunner.toolchain_spec:
            problems.append(f"prepare() returns an invalid RunSpec (toolchain_spec() prepares an empty program "
                            f"with it): {invalid}")
        else:
            problems.append(f"toolchain_spec() returns an invalid RunSpec: {invalid}")
    except Exception as error:  # noqa: BLE001 - e.g. a prepare() that needs real tests
        problems.append(f"toolchain_spec() raised {type(error).__name__}: {error} (workbench execute calls it "
                        f"before any sample runs; override it when prepare() needs real tests)")
    else:
        if not isinstance(spec, RunSpec):
            problems.append(f"toolchain_spec() must return a RunSpec, got {type(spec).__name__}")
    return problems


def _prepare_problems(runner: TestRunner, case: RunnerCase) -> list[str]:
    """``prepare`` for two tokens: a valid :class:`RunSpec` (it validates itself) that
    carries the token where the harness, and only the harness, can get it."""
    token_a, token_b = new_token(), new_token()
    try:
        spec = runner.prepare(case.program, case.tests, case.entry_point, token_a)
        other = runner.prepare(case.program, case.tests, case.entry_point, token_b)
    except Exception as error:  # noqa: BLE001 - an invalid RunSpec raises here too
        return [f"prepare() raised {type(error).__name__}: {error}"]
    if not isinstance(spec, RunSpec):
        return [f"prepare() must return a RunSpec, got {type(spec).__name__}"]
    problems = _token_carrier_problems(spec, token_a)
    if spec.token_input_fd is None and spec == other:
        problems.append("prepare() ignores the token (same RunSpec for two tokens)")
    return problems


def _token_carrier_problems(spec: RunSpec, token: str) -> list[str]:
    """Step 2 of the token protocol: the token reaches the harness by exactly one road."""
    carriers = [*spec.files.values(), *dict(spec.env).values(), *spec.run, *(arg for command in spec.build for arg in command)]
    carried = any(token in text for text in carriers)
    if spec.token_input_fd is None and not carried:
        return ["the token appears in no file, env value or run argument, and no token_input_fd is set: "
                "the harness cannot know it"]
    if spec.token_input_fd is not None and carried:
        return ["the token travels over token_input_fd but is also written into files/env/argv, "
                "where the candidate can read it"]
    return []


def _live_problem(runner: TestRunner, case: RunnerCase, sandbox: Sandbox, timeout_s: float) -> str | None:
    """Run ``case`` once in ``sandbox``; return why its outcome is wrong, or ``None``."""
    token = new_token()
    outcome = sandbox.run(runner.prepare(case.program, case.tests, case.entry_point, token), token, timeout_s)
    if outcome.passed == case.expect_pass and case.expect_status in (None, outcome.status):
        return None
    expected = case.expect_status or ("pass" if case.expect_pass else "fail")
    output = f"{outcome.detail} {outcome.stderr_tail}".strip()
    return (f"expected {expected}, got {outcome.status} (exit {outcome.exit_code}, "
            f"{sandbox.isolation.level.value}); stderr: {output[-400:]!r}")
