"""Per-task timeouts calibrated from the reference solution's runtime.

The rule is EvalPlus's (Liu et al., NeurIPS 2023; evalplus ``docs/execution.md``,
"Time Limits"): ``T = max(T_base, k * T_gt)`` with ``T_base = 4 s`` and ``k = 4`` by
default. EvalPlus profiles the ground-truth function calls; we time the reference
solution's sandboxed run (interpreter start-up and checks), the same quantity the sample's
timeout is compared against. A compiled language's build is not part of it: build commands
run under their own limit (``RunSpec.build_timeout_s``), so a compiler's start-up on a
loaded machine never eats a sample's time.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from workbench.execute.pool import run_in_slots
from workbench.execute.sandbox import Sandbox, new_token
from workbench.languages.spec import TestRunner

DEFAULT_TIMEOUT_FLOOR_S = 4.0
DEFAULT_TIMEOUT_FACTOR = 4.0
#: how long a reference solution may run while it is being timed
REFERENCE_TIMEOUT_S = 60.0


def calibrated_timeout(reference_s: float, floor_s: float = DEFAULT_TIMEOUT_FLOOR_S,
                       factor: float = DEFAULT_TIMEOUT_FACTOR) -> float:
    """Return ``max(floor_s, factor * reference_s)`` in seconds (EvalPlus's rule).

    Raises:
        ValueError: a negative time, a floor that is not positive, or a factor below 1.
    """
    if reference_s < 0 or floor_s <= 0 or factor < 1:
        raise ValueError(f"need reference_s >= 0, floor_s > 0, factor >= 1 (got {reference_s}, {floor_s}, {factor})")
    return max(floor_s, factor * reference_s)


@dataclass(frozen=True)
class ReferenceProblem:
    """What is needed to time one task's reference: ids and texts."""

    task_id: str
    program: str
    tests: str
    entry_point: str | None


@dataclass(frozen=True)
class TaskTimeout:
    """A task's timeout and where it came from.

    Attributes:
        task_id: the task.
        timeout_s: the timeout its samples run under.
        reference_s: the reference's measured wall time, or ``None`` if not measured.
        reference_status: the reference run's status (``"passed"`` expected), ``"cached"``
            when it came from the cache, or ``None`` if no reference was run.
        reference_detail: the reference run's one-sentence detail (why that status).
    """

    task_id: str
    timeout_s: float
    reference_s: float | None
    reference_status: str | None
    reference_detail: str = ""


class ReferenceTimeCache:
    """Measured reference times on disk (``diskcache``), keyed by everything that
    changes them: runner, interpreter, program, tests, entry point, isolation level.

    Args:
        directory: the cache folder, or ``None`` to cache nothing.
    """

    def __init__(self, directory: str | os.PathLike[str] | None):
        self._cache = None
        if directory is not None:
            import diskcache

            self._cache = diskcache.Cache(os.fspath(directory))

    @staticmethod
    def key(runner: TestRunner, problem: ReferenceProblem, isolation: str) -> str:
        parts = [type(runner).__qualname__, getattr(runner, "interpreter", ""), problem.program, problem.tests,
                 problem.entry_point or "", isolation]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def get(self, key: str) -> float | None:
        return None if self._cache is None else self._cache.get(key)

    def set(self, key: str, seconds: float) -> None:
        if self._cache is not None:
            self._cache.set(key, seconds)

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()


def calibrate_timeouts(
    problems: Iterable[ReferenceProblem],
    runner: TestRunner,
    sandbox: Sandbox,
    *,
    floor_s: float = DEFAULT_TIMEOUT_FLOOR_S,
    factor: float = DEFAULT_TIMEOUT_FACTOR,
    workers: int = 1,
    cache: ReferenceTimeCache | None = None,
    on_done: Callable[[TaskTimeout], None] | None = None,
) -> dict[str, TaskTimeout]:
    """Run each task's reference solution once in ``sandbox`` and derive its timeout.

    A reference that does not pass, or that the runner cannot prepare (status ``"error"``),
    gets the floor as timeout (its ``reference_status`` and detail say why, so the caller
    can warn; the task's samples then meet the same error one by one).

    Returns:
        task id -> :class:`TaskTimeout`.
    """
    problems = list(problems)
    cache = cache or ReferenceTimeCache(None)
    results: dict[str, TaskTimeout] = {}
    todo = []
    for problem in problems:
        cached = cache.get(cache.key(runner, problem, sandbox.isolation.level.value))
        if cached is not None:
            results[problem.task_id] = TaskTimeout(problem.task_id, calibrated_timeout(cached, floor_s, factor), cached, "cached")
            if on_done:
                on_done(results[problem.task_id])
        else:
            todo.append(problem)

    def measure(problem: ReferenceProblem, slot: int) -> TaskTimeout:
        token = new_token()
        try:
            spec = runner.prepare(problem.program, problem.tests, problem.entry_point, token)
        except Exception as error:  # a runner bug or a test it cannot wrap: this task's problem, not the run's
            return TaskTimeout(problem.task_id, floor_s, None, "error", f"the runner could not prepare the reference: {error}")
        outcome = sandbox.run(spec, token, REFERENCE_TIMEOUT_S, slot=slot)
        if outcome.passed:
            cache.set(cache.key(runner, problem, sandbox.isolation.level.value), outcome.duration_s)
            return TaskTimeout(problem.task_id, calibrated_timeout(outcome.duration_s, floor_s, factor),
                               outcome.duration_s, outcome.status)
        return TaskTimeout(problem.task_id, floor_s, outcome.duration_s, outcome.status, outcome.detail)

    for timeout in run_in_slots(todo, measure, workers, on_interrupt=sandbox.close):
        results[timeout.task_id] = timeout
        if on_done:
            on_done(timeout)
    return results
