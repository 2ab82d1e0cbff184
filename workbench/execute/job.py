"""A whole ``workbench execute`` run: load generations and problems, calibrate timeouts,
run every sample in the sandbox on parallel workers, append result rows as they finish.

Notebook use::

    from workbench import ExecutionConfig, run_execute
    summary = run_execute("generations.jsonl", "results.jsonl", ExecutionConfig(workers=2))
    print(summary.pass_at_1, summary.isolation.level)
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from workbench.data.language_column import DEFAULT_LANGUAGE, LANGUAGE_COLUMN, language_value, run_language
from workbench.data.loading import load_records, require_text_columns
from workbench.data.repeated_prompt import repeated_prompt_note
from workbench.data.samples import BaseSample, check_unique, code_digest, number_samples, resolve_sample_column
from workbench.data.stop_sequences import truncate_generation
from workbench.errors import PATH_TYPES, TABLE_HINT, DataError, WorkbenchError, reject_swapped, require_argument, require_path
from workbench.execute.config import DEFAULT_SANDBOX_FAILURE_LIMIT, ExecutionConfig
from workbench.execute.isolation import Isolation, IsolationLevel, SandboxUnavailableError, detect_isolation
from workbench.execute.limits import MiB, ResourceLimits, applied_limits, memory_ceiling_bytes
from workbench.execute.pool import run_in_slots
from workbench.execute.pass_at_k import PassAtKReport, pass_at_k
from workbench.execute.result_file import (ResultWriter, flaky_summary, memory_summary, pass_at_1, read_results,
                                           status_counts, summary_path)
from workbench.execute.sandbox import Sandbox, new_token
from workbench.execute.status import SANDBOX_ERROR, SampleOutcome
from workbench.execute.timeouts import ReferenceProblem, ReferenceTimeCache, TaskTimeout, calibrate_timeouts
from workbench.failures import check_failures
from workbench.io import atomic_write, lock_exclusively, require_output_folder
from workbench.languages.registry import canonical_language, get_language
from workbench.languages.spec import RunSpec, TestRunner
from workbench.options import OptionError
from workbench.resume_guard import (SOURCE_KEY, check_resume_settings, implied_run_dir, rebase_recorded_paths,
                                    record_roots, recorded_path, shown_path)
from workbench.formatting import count
from workbench.option_words import (
    option_given,
    option_named,
    option_set,
    option_value,
    other_output_advice,
    resume_advice,
)


@dataclass(frozen=True)
class Problem:
    """One task of the problem set (``language``: its ``language`` cell, ``None`` when the
    problems have no such column or the cell is empty)."""

    task_id: str
    prompt: str
    tests: str
    entry_point: str | None
    reference: str | None
    language: str | None = None


@dataclass(frozen=True)
class Sample(BaseSample):
    """One generation to execute (its ids and key: :class:`~workbench.data.samples.BaseSample`).

    Attributes:
        completion: the generated code, or ``None`` (recorded as an ``error`` row, never run);
            after :func:`apply_stop_sequences`, cut at the first stop sequence.
        prompt: the prompt to put before it, or ``None`` for the problem's own prompt.
        stop: the stop sequence that cut ``completion``, or ``None`` when it is whole.
        language: the generations' ``language`` cell (a loader fills it in for a folder of
            source files or an ICE-Score grade file), ``None`` when there is none.
    """

    completion: str | None
    prompt: str | None
    stop: str | None = None
    language: str | None = None

    @property
    def code_digest(self) -> str:
        """The first 16 hex digits of the SHA-256 of what runs (the prompt of the generations, if
        any, and the completion as cut): a finished row records it, so a resume notices a
        generations file edited since (:func:`changed_since_run`)."""
        return code_digest(self.prompt, self.completion)


@dataclass
class ExecutionSummary:
    """What a run did.

    Attributes:
        output: the results file.
        isolation: the isolation in force.
        total: samples in the input; skipped_finished: already in the output (resume);
        executed: samples run now (rows written); sandbox_errors: samples the sandbox
        failed to start (no row written, so ``--resume`` runs them again).
        elapsed_s: wall time of the sample phase; samples_per_s: ``executed / elapsed_s``.
        calibration_s: wall time spent timing reference solutions.
        counts: status -> rows over the whole output file; pass_at_1 over it too.
        pass_at_k: pass@k over the whole output file for the asked ks, with task-bootstrap
            intervals (:func:`workbench.execute.pass_at_k.pass_at_k`), or ``None`` before the run.
        notes: things the user should know (numbered sample ids, failing references ...).
        failures: the verdict on this run's samples (:func:`workbench.failures.check_failures`:
            failed = not run by the sandbox, usable = run), what the command's exit status is.
        limits: the resource limits as samples got them here (field -> ``{"flag", "asked",
            "applied", "lowered"}``, :func:`workbench.execute.limits.applied_limits`): a hard
            limit of this machine below the option lowers them, and a note says so once.
        memory_ceiling_bytes: the cgroup memory ceiling of this machine (a container's
            ``--memory``), or ``None``.
        memory: the samples' peak resident memory over the whole output file
            (:func:`~workbench.execute.result_file.memory_summary`: median, max, those near
            ``--memory-mb``), or empty before the run.
        settings: what the rows were run with (:func:`run_settings`), which ``--resume`` must
            match (:func:`check_resume`).
        flaky: the samples run several times (``repeat``) whose attempts did not all end alike,
            over the whole output file (:func:`~workbench.execute.result_file.flaky_summary`), or
            empty before the run.
        announced_notes: how many of the first ``notes`` went to ``on_note`` before any sample
            ran (:func:`run_execute`), so a printer shows only the rest at the end; not in
            :meth:`as_dict`.

    It is also written next to the results file (:func:`~workbench.execute.result_file.summary_path`),
    so the isolation and the limits a results file was made under stay with it.
    """

    output: str
    isolation: Isolation
    total: int = 0
    skipped_finished: int = 0
    executed: int = 0
    sandbox_errors: int = 0
    elapsed_s: float = 0.0
    calibration_s: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)
    pass_at_1: float | None = None
    pass_at_k: PassAtKReport | None = None
    notes: list[str] = field(default_factory=list)
    failures: dict[str, Any] = field(default_factory=dict)
    limits: dict[str, dict[str, Any]] = field(default_factory=dict)
    memory_ceiling_bytes: int | None = None
    memory: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    flaky: dict[str, Any] = field(default_factory=dict)
    announced_notes: int = 0

    def as_dict(self) -> dict[str, Any]:
        """The summary as JSON holds it (``--json`` and the summary file)."""
        return {
            "output": self.output, "isolation": self.isolation.level.value,
            "isolation_description": self.isolation.description,
            "isolation_requested": self.isolation.requested,
            "isolation_stronger_available": (self.isolation.stronger_available.value
                                             if self.isolation.stronger_available else None),
            "limits": self.limits, "memory_ceiling_bytes": self.memory_ceiling_bytes, "memory": self.memory,
            "total": self.total, "skipped_finished": self.skipped_finished, "executed": self.executed,
            "sandbox_errors": self.sandbox_errors, "elapsed_s": round(self.elapsed_s, 3),
            "samples_per_s": round(self.samples_per_s, 3), "calibration_s": round(self.calibration_s, 3),
            "counts": self.counts, "pass_at_1": self.pass_at_1, "flaky": self.flaky,
            "pass_at_k": None if self.pass_at_k is None else self.pass_at_k.as_dict(),
            "notes": self.notes, "failures": self.failures,
            "settings": self.settings,
        }

    @property
    def exit_status(self) -> int:
        """0, 3 (no sample of this run could be run) or 4 (sandbox errors above ``max_failures``)."""
        return int(self.failures.get("exit_status", 0))

    @property
    def samples_per_s(self) -> float:
        return self.executed / self.elapsed_s if self.elapsed_s > 0 else 0.0


class SandboxFailureGuard:
    """Tells sandbox failures apart from verdicts and ends a run whose sandbox does not work.

    Args:
        isolation: the isolation in force (named in the error).
        limit: consecutive sandbox failures that end the run.

    Attributes:
        count: sandbox failures seen in all; first_detail: the first one's detail.
    """

    def __init__(self, isolation: Isolation, limit: int = DEFAULT_SANDBOX_FAILURE_LIMIT):
        self.isolation = isolation
        self.limit = limit
        self.count = 0
        self.in_a_row = 0
        self.first_detail: str | None = None

    def record(self, status: str | None, detail: str = "") -> bool:
        """Note one finished run; return True when it was a sandbox failure.

        Raises:
            SandboxUnavailableError: ``limit`` sandbox failures in a row.
        """
        if status != SANDBOX_ERROR:
            self.in_a_row = 0
            return False
        self.count += 1
        self.in_a_row += 1
        self.first_detail = self.first_detail or detail
        if self.in_a_row >= self.limit:
            raise SandboxUnavailableError(
                f"the sandbox failed {self.in_a_row} times in a row, so the run stopped: {detail}. "
                f"No result was recorded for those samples. Fix the sandbox or choose another isolation "
                f"level (in force: {self.isolation.level.value}), then {resume_advice()}."
            )
        return True

    def note(self) -> str | None:
        """A line for the summary when some samples were not run, else ``None``."""
        if not self.count:
            return None
        return (f"{count(self.count, 'run')} failed in the sandbox itself and {'was' if self.count == 1 else 'were'} "
                f"not counted (no result row): "
                f"{self.first_detail}; {resume_advice()} to run those samples again")


def load_problems(config: ExecutionConfig, notes: list[str] | None = None) -> dict[str, Problem]:
    """Return task id -> :class:`Problem` from ``config.problems``.

    The entry point is optional: problems without the default ``entry_point`` column (MultiPL-E's,
    whose tests call the function themselves) get none, and ``notes`` says so; a column named
    with ``entry_point_column`` must exist.

    Args:
        config: the run's options.
        notes: where to add lines for the summary (e.g. that there is no entry point).

    Raises:
        DataError / MissingColumnError: unreadable problems, missing columns, duplicate ids.
    """
    from workbench.data.loading import require_columns

    splits = [config.problems_split] if config.problems_split else None
    dataset = load_records(config.problems, splits=splits, offline=config.offline).one_split(option_named("problems_split"))
    reference = config.reference_column if config.reference_column in dataset.column_names else None
    entry_point = config.entry_point_column
    if entry_point == ExecutionConfig.entry_point_column and entry_point not in dataset.column_names:
        entry_point = None  # the default names a column that only HumanEval's layout needs
        if notes is not None:
            notes.append(f"the problems have no {config.entry_point_column!r} column: the tests run without an entry "
                         f"point, so they must call the function themselves (as MultiPL-E's do); HumanEval-style "
                         f"tests that only define check(candidate) need one ({option_named('entry_point_column')})")
    require_columns(
        dataset,
        {
            option_named("problem_task_column"): config.problem_task_column,
            option_named("problem_prompt_column"): config.problem_prompt_column,
            option_named("test_column"): config.test_column,
            option_named("entry_point_column"): entry_point,
        },
        where=f"the problems ({config.problems})",
    )
    require_text_columns(
        dataset,
        {
            option_named("problem_prompt_column"): config.problem_prompt_column,
            option_named("test_column"): config.test_column,
            option_named("entry_point_column"): entry_point,
            option_named("reference_column"): reference,
        },
        where=f"the problems ({config.problems})",
    )
    has_language = LANGUAGE_COLUMN in dataset.column_names
    problems: dict[str, Problem] = {}
    for row in dataset:
        task_id = str(row[config.problem_task_column])
        if task_id in problems:
            raise DataError(f"the problems ({config.problems}) list task {task_id!r} twice")
        problems[task_id] = Problem(
            task_id=task_id,
            prompt=row[config.problem_prompt_column] or "",
            tests=row[config.test_column] or "",
            entry_point=row[entry_point] if entry_point else None,
            reference=row[reference] if reference else None,
            language=language_value(row[LANGUAGE_COLUMN]) if has_language else None,
        )
    return problems


def load_samples(source: str, config: ExecutionConfig, notes: list[str],
                 problems: Mapping[str, Problem] | None = None) -> list[Sample]:
    """Return the generations as :class:`Sample` s, in file order.

    With ``problems``, no ``--prompt-column`` and no ``--prompt-source`` (the prompt's source left
    undeclared), a generations column named like the problems' prompt column whose text differs
    from the problem's prompt for some task is noted in ``notes``: the programs run with the
    problem's prompt, not the one the generations carry (MultiPL-E's prompts differ from
    HumanEval's, e.g. in an ``import`` a completion relies on). ``--prompt-source problems``
    declares that choice: no note.

    Raises:
        DataError / MissingColumnError: unreadable file, missing columns, duplicate
            ``(task_id, sample_id)`` pairs.
    """
    from workbench.data.loading import require_columns

    loaded = load_records(source, splits=[config.split] if config.split else None, offline=config.offline)
    dataset = loaded.concatenated() if len(loaded.splits) > 1 else next(iter(loaded.splits.values()))
    sample_column = resolve_sample_column(dataset.column_names, config.sample_column, ExecutionConfig.sample_column)
    if sample_column is None:
        notes.append(f"the generations have no {config.sample_column!r} column: samples are numbered 0, 1, ... per task in file order")
    require_columns(
        dataset,
        {
            option_named("task_column"): config.task_column,
            option_named("sample_column"): sample_column,
            option_named("completion_column"): config.completion_column,
            option_named("prompt_column"): config.prompt_column,
        },
        where=f"the generations ({source})",
    )
    require_text_columns(
        dataset,
        {option_named("completion_column"): config.completion_column, option_named("prompt_column"): config.prompt_column},
        where=f"the generations ({source})",
    )
    if (problems is not None and config.prompt_column is None and config.prompt_source is None
            and config.problem_prompt_column in dataset.column_names):
        note = _unused_prompt_note(dataset, config, problems)
        if note:
            notes.append(note)
    has_language = LANGUAGE_COLUMN in dataset.column_names
    columns = [c for c in (config.task_column, sample_column, config.completion_column, config.prompt_column,
                           LANGUAGE_COLUMN if has_language else None) if c]
    samples: list[Sample] = []
    for task_id, sample_id, row in number_samples(
        dataset.select_columns(list(dict.fromkeys(columns))), config.task_column, sample_column,
        where=f"the generations ({source})",
    ):
        completion = row[config.completion_column]
        prompt = row[config.prompt_column] if config.prompt_column else None
        samples.append(Sample(task_id, sample_id, None if completion is None else str(completion), prompt,
                              language=language_value(row[LANGUAGE_COLUMN]) if has_language else None))
    # a row without a task or sample id was refused by number_samples (MissingIdError)
    check_unique((s.key for s in samples), where=f"the generations ({source})",
                 columns=(config.task_column, sample_column or "numbered sample id"),
                 hint="sample ids must be unique per task")
    return samples


def _repeated_prompt_note(samples: list[Sample], problems: Mapping[str, Problem]) -> str | None:
    """The note for completions that begin with the prompt they are appended to (whole programs,
    whose prompt ``--mode completion`` would run twice), or ``None``; counted before any sample runs."""
    return repeated_prompt_note(
        ((s.prompt if s.prompt is not None else problems[s.task_id].prompt, s.completion) for s in samples),
        noun="completion",
        consequence=f"which {option_value('mode', 'completion')} puts after the prompt (prompt + completion), so each "
                    "program holds the prompt's code twice (a compile error in many languages; Python redefines the "
                    "function)",
        remedy=f"{option_set('mode', 'full')} to run each completion as the whole program",
    )


def _unused_prompt_note(dataset: Any, config: ExecutionConfig, problems: Mapping[str, Problem]) -> str | None:
    """The note for generations that carry a prompt unlike the problem's, or ``None`` (trailing
    whitespace is not a difference)."""
    column = config.problem_prompt_column
    differing: dict[str, None] = {}
    compared: set[str] = set()
    for task_id, prompt in zip(dataset[config.task_column], dataset[column]):
        task_id = str(task_id)
        problem = problems.get(task_id)
        if problem is None or not isinstance(prompt, str) or task_id in compared:
            continue
        compared.add(task_id)
        if prompt.rstrip() != problem.prompt.rstrip():
            differing[task_id] = None
    if not differing:
        return None
    first = next(iter(differing))
    return (f"the generations' {column!r} column differs from the problems' prompt in {len(differing)} of "
            f"{count(len(compared), 'task')} (first: {first}); each program is the problems' prompt + the completion: "
            f"{option_set('prompt_column', column)} to run the prompt the generations carry (the one their model "
            f"completed), or {option_set('prompt_source', 'problems')} to keep the problems' prompt without this note")


def execution_language(config: ExecutionConfig, generation_languages: Iterable[str | None],
                       problems: Mapping[str, Problem], generations: str | os.PathLike[str]) -> str:
    """The language whose runner executes a run's samples: ``config.language`` when given, else
    the one the data's ``language`` column names (the generations' and the problems'), else Python
    (:func:`workbench.data.language_column.run_language`).

    Args:
        config: the run's options; generation_languages: the generations' ``language`` cells
            (:attr:`Sample.language`); problems: the problem set (:func:`load_problems`);
            generations: the generations' source (named in messages).

    Returns:
        the canonical language name.

    Raises:
        DataError: the data names several languages (Java generations with Python problems).
        OptionError: ``config.language`` contradicts the data's language.
    """
    return run_language(config.language, {
        f"the generations ({os.fspath(generations)})": generation_languages,
        f"the problems ({config.problems})": [problem.language for problem in problems.values()],
    })


def _runner(config: ExecutionConfig) -> TestRunner:
    """The test runner of ``config.language`` (a resolved name: :func:`execution_language`).

    Raises:
        WorkbenchError: the plugin has no runner, or its toolchain is missing; OptionError:
            ``python`` set for another language.
    """
    plugin = get_language(config.language or DEFAULT_LANGUAGE)
    if plugin.runner is None:
        raise WorkbenchError(f"the {plugin.name} plugin cannot execute code (it has no test runner); "
                             f"`workbench languages` lists the languages with the execute capability")
    runner = plugin.runner
    if config.python is not None:
        if plugin.name != "python":
            raise OptionError(f"{{python}} applies to the Python runner only, not to {plugin.name}", "python")
        from workbench.languages.python_runner import PythonTestRunner

        runner = PythonTestRunner(config.python)
    missing = runner.missing_toolchain()
    if missing:
        where = ", ".join(f"{tool} (not found)" if "/" in tool else f"{tool} on PATH" for tool in missing)
        raise WorkbenchError(f"the {plugin.name} runner needs {where}")
    return runner


def _preflight(runner: TestRunner, sandbox: Sandbox) -> RunSpec:
    """Fail before any sample runs when the sandbox's user cannot reach the toolchain
    (:meth:`~workbench.languages.spec.TestRunner.toolchain_spec`: the executables and
    read-only paths every sample uses; nothing is run). Returns that spec."""
    try:
        spec = runner.toolchain_spec(new_token())
    except Exception as error:  # a plugin bug: no sample could be prepared either
        raise WorkbenchError(
            f"the {type(runner).__name__} cannot describe its toolchain (toolchain_spec() raised "
            f"{type(error).__name__}: {error}); this is a bug of the language plugin") from error
    blocked = sandbox.inaccessible_paths(spec)
    if not blocked:
        return spec
    level = sandbox.isolation.level
    if level is IsolationLevel.BUBBLEWRAP:
        remedy = "make it readable by every user (chmod o+rx), or use an interpreter every user can run"
    else:
        remedy = ("install bubblewrap (as root: apt-get install bubblewrap), which keeps a private parent folder usable, "
                  "or use an interpreter every user can run")
    raise SandboxUnavailableError(
        f"the sandboxed user cannot use {', '.join(blocked)} at isolation level {level.value} "
        f"(a private folder such as /root on the way): {remedy} ({option_set('python', '/usr/bin/python3')})."
    )


def check_sandbox(config: ExecutionConfig) -> Isolation:
    """The isolation a run of ``config`` would use, checked the way the run checks it, running nothing.

    For a caller that must fail before other work starts (``workbench run``'s preflight): the
    runner's toolchain is installed and reachable by the sandbox's user.

    ``config.language`` is the resolved language (:func:`execution_language`); ``None`` checks
    the Python runner.

    Returns:
        the :class:`Isolation` in force (its ``warning`` says when it is weaker than bubblewrap).

    Raises:
        SandboxUnavailableError: the required level does not work here, or the sandboxed user
            cannot reach the toolchain (one sentence saying what to install or which option to set).
        WorkbenchError: the language has no runner or its toolchain is missing.
    """
    runner = _runner(config)
    isolation = detect_isolation(config.isolation_level)
    _preflight(runner, Sandbox(isolation, config.limits))
    return isolation


#: default workers per core. A sample's wall time is not all CPU: a sample that loops runs out
#: its timeout asleep or spinning on one core, and starting a sandbox waits on the kernel. On
#: 2 cores, 400 ICE-Score samples took 47.7 s wall with 2 workers, 39.2 s with 3, 28.9 s with 4
#: and 27.8 s with 6, at the same CPU (22-24 s; load 7-13 from other jobs, two rounds, issue 21):
#: the gain flattens at two per core.
WORKERS_PER_CORE = 2


def planned_workers(config: ExecutionConfig, sandbox: Sandbox) -> int:
    """Return how many samples run at once: ``config.workers``, one per core for ``0``, else
    :data:`WORKERS_PER_CORE` per core; the last two never more than the sandbox has worker
    slots (as root, one user id each: see :attr:`Sandbox.max_slots`).

    Raises:
        WorkbenchError: ``config.workers`` exceeds the sandbox's slots (before any sample runs).
    """
    most = sandbox.max_slots
    if config.workers == 0:  # one per core, as dedup's 0
        wanted = os.cpu_count() or 1
        return wanted if most is None else min(wanted, most)
    if config.workers is not None:
        if most is not None and config.workers > most:
            raise OptionError(
                f"{{workers}} {config.workers}: at most {most} samples can run at once when workbench runs as "
                f"root (each worker runs its samples as a user id of its own, from a block of {most})", "workers",
            )
        return config.workers
    wanted = WORKERS_PER_CORE * (os.cpu_count() or 1)
    return wanted if most is None else min(wanted, most)


def apply_stop_sequences(samples: list[Sample], problems: dict[str, Problem], stops: tuple[str, ...]) -> list[Sample]:
    """Cut each sample's completion at the first of ``stops`` (Chen et al. 2021, Sec. 3.2;
    :func:`workbench.data.stop_sequences.truncate_generation`), searching after the prompt when
    a whole-program completion repeats it. The cut is recorded on the sample (``stop``).

    Args:
        samples: the loaded samples; problems: task id -> :class:`Problem` (for the prompt).
        stops: the stop sequences (``config.stop_sequences``); none: the samples as they are.
    """
    if not stops:
        return samples
    cut_samples = []
    for sample in samples:
        if sample.completion is None:
            cut_samples.append(sample)
            continue
        prompt = sample.prompt if sample.prompt is not None else problems[sample.task_id].prompt
        cut = truncate_generation(sample.completion, stops, prompt)
        cut_samples.append(dataclasses.replace(sample, completion=cut.text, stop=cut.stop))
    return cut_samples


def result_row(sample: Sample, outcome: SampleOutcome, language: str, isolation: Isolation,
               attempts: list[SampleOutcome] | None = None) -> dict[str, Any]:
    """Return the result row for ``sample`` (see :data:`~workbench.execute.result_file.RESULT_COLUMNS`).

    Args:
        sample: the sample; outcome: its (first) attempt's outcome, whose status, detail, times
            and memory the row holds; language / isolation: the run's.
        attempts: every attempt's outcome in order (``outcome`` first) when it was run several
            times (``repeat``): ``attempts`` holds their statuses and ``flaky`` whether they
            differ; ``None`` or one attempt: ``attempts`` is ``[status]`` and ``flaky`` ``None``
            (not tested).
    """
    attempts = attempts or [outcome]
    statuses = [attempt.status for attempt in attempts]
    return {
        "task_id": sample.task_id,
        "sample_id": sample.sample_id,
        "passed": int(outcome.passed),
        "status": outcome.status,
        "duration_s": outcome.duration_s,
        "timeout_s": round(outcome.timeout_s, 3),
        "build_s": outcome.build_s,
        "peak_rss_mib": outcome.peak_rss_mib,
        "exit_code": outcome.exit_code,
        "signal": outcome.signal,
        "detail": outcome.detail,
        "stderr_tail": outcome.stderr_tail,
        "language": language,
        "isolation": isolation.level.value,
        "generation_truncated": sample.stop is not None,
        "stop_sequence": sample.stop,
        "code_sha256": sample.code_digest,
        "attempts": statuses,
        "flaky": len(set(statuses)) > 1 if len(statuses) > 1 else None,
    }


def changed_since_run(samples: list[Sample], recorded: Mapping[Any, str | None]) -> list[Sample]:
    """The samples whose finished row (``recorded``: key -> its ``code_sha256``) was run on other
    code than they hold now: the generations file was edited after the run. Rows of an older
    version without the digest are not compared."""
    return [s for s in samples if recorded.get(s.key) is not None and recorded[s.key] != s.code_digest]


def run_execute(
    generations: str | os.PathLike[str],
    output: str | os.PathLike[str],
    config: ExecutionConfig | None = None,
    *,
    on_start: Callable[[str, int], None] | None = None,
    on_result: Callable[[dict[str, Any]], None] | None = None,
    sandbox: Sandbox | None = None,
    on_note: Callable[[str], None] | None = None,
    run_dir: str | os.PathLike[str] | None = None,
) -> ExecutionSummary:
    """Execute every generation against its task's tests and append result rows to ``output``:
    what ``workbench execute`` runs.

    Args:
        generations: a generations file/folder/hub id with task id, sample id, completion.
        output: the jsonl results file (appended row by row).
        config: the :class:`ExecutionConfig` (defaults: bundled HumanEval, Python).
        on_start: called with a phase name (``"calibrate"``, ``"execute"``) and its size.
        on_result: called with each result row (and each calibrated timeout as a row
            with ``"phase": "calibrate"``) for progress display.
        sandbox: a prepared :class:`Sandbox` (default: detected isolation, ``config.limits``).
        on_note: called with each note known before any sample runs (on the input, the resume,
            the sandbox and its limits: a repeated prompt, null completions ...), before the
            reference timing and the samples, so a long run is not waited out to learn of it;
            the summary still holds every note (``announced_notes`` counts these).
        run_dir: the ``workbench run`` folder that ``output`` lies in (``None``: a job on its own):
            the generations and problems inside it are recorded relative to it
            (:func:`run_settings`), so the folder moved or copied resumes, and the summary file
            names ``output`` so (``<run folder>/execute/results.jsonl``; the summary returned
            names it as given).

    Returns:
        an :class:`ExecutionSummary`.

    Raises:
        ResumeMismatchError: ``resume`` with settings other than the summary file of ``output``
            records (:func:`check_resume`); ``output`` is left as it was.
        WorkbenchError (DataError, MissingColumnError, SandboxUnavailableError, OptionError ...)
        for bad input, before any sample runs. ``KeyboardInterrupt`` after killing the running
        samples; every finished row is already in ``output``.

    Example::

        from workbench import ExecutionConfig, run_execute

        summary = run_execute("humaneval-codex-python", "results.jsonl",
                              ExecutionConfig(completion_column="completion_multipl_e", limit=20))
        print(summary.pass_at_1, summary.counts)
    """
    config = config or ExecutionConfig()
    reject_swapped(output, "output", PATH_TYPES, config, "config", ExecutionConfig, "run_execute(generations, output, config)",
                   "run_execute takes its output before its config, unlike run_score")
    require_argument(config, ExecutionConfig, "config", "run_execute(generations, output, config)")
    require_argument(output, (str, os.PathLike), "output", "run_execute(generations, output, config)")
    require_path(generations, "generations", "run_execute(generations, output, config)", hint=TABLE_HINT)
    # two runs appending to one results file would interleave their rows: the second is refused
    require_output_folder(Path(output).parent, f"--output {os.fspath(output)}")
    Path(output).parent.mkdir(parents=True, exist_ok=True)
    lock = lock_exclusively(
        Path(output).with_name(f".{Path(output).name}.lock"),
        f"another workbench execute run is writing {os.fspath(output)}; wait for it to finish (or stop it), "
        f"or {other_output_advice('write to another --output')}")
    try:
        return _run_execute_locked(generations, output, config, on_start=on_start, on_result=on_result,
                                   sandbox=sandbox, on_note=on_note, run_dir=run_dir)
    finally:
        lock.release()


def _run_execute_locked(
    generations: str | os.PathLike[str],
    output: str | os.PathLike[str],
    config: ExecutionConfig,
    *,
    on_start: Callable[[str, int], None] | None,
    on_result: Callable[[dict[str, Any]], None] | None,
    sandbox: Sandbox | None,
    on_note: Callable[[str], None] | None = None,
    run_dir: str | os.PathLike[str] | None = None,
) -> ExecutionSummary:
    """:func:`run_execute` with the output's lock held (same arguments, returns and errors)."""
    notes: list[str] = []
    problems = load_problems(config, notes)
    samples = load_samples(os.fspath(generations), config, notes, problems)
    # one language for the run, the data's unless given (Java is never run by the Python runner);
    # canonical, so ``-l py`` and ``-l python`` are one setting in the rows and on resume
    config = dataclasses.replace(
        config, language=execution_language(config, [s.language for s in samples], problems, generations))
    settings = run_settings(generations, config, run_dir)
    if config.resume:
        notes.extend(check_resume(output, settings, run_dir))
    runner = _runner(config)
    unknown = sorted({s.task_id for s in samples} - problems.keys())
    if unknown:
        shown = ", ".join(repr(t) for t in unknown[:5])
        raise DataError(
            f"{count(len(unknown), 'task id')} of the generations {'is' if len(unknown) == 1 else 'are'} not in the "
            f"problems ({config.problems}): {shown}"
            f"{' ...' if len(unknown) > 5 else ''}; name the matching problem set with {option_named('problems')}"
        )
    # a task without tests would check nothing after the program, and every sample would pass
    untested = sorted({s.task_id for s in samples if not problems[s.task_id].tests.strip()})
    if untested:
        shown = ", ".join(repr(t) for t in untested[:5])
        raise DataError(
            f"{count(len(untested), 'task')} {'has' if len(untested) == 1 else 'have'} no tests (column "
            f"{config.test_column!r} is empty): {shown}"
            f"{' ...' if len(untested) > 5 else ''}; nothing could fail, so no verdict would mean anything"
        )
    samples = apply_stop_sequences(samples, problems, config.stop_sequences)
    if config.mode == "completion":
        note = _repeated_prompt_note(samples[: config.limit] if config.limit is not None else samples, problems)
        if note:
            notes.append(note)
    own_sandbox = sandbox is None
    if sandbox is None:
        isolation = detect_isolation(config.isolation_level)
        sandbox = Sandbox(isolation, config.limits, reuse_interpreters=config.reuse_interpreters)
    isolation = sandbox.isolation
    toolchain = _preflight(runner, sandbox)
    workers = planned_workers(config, sandbox)

    writer = ResultWriter(output, resume=config.resume, overwrite=config.overwrite)
    changed = changed_since_run(samples, writer.code_digests)
    if changed:
        writer.close()
        shown = ", ".join(f"{s.task_id}:{s.sample_id}" for s in changed[:5])
        raise DataError(
            f"cannot resume: {count(len(changed), 'finished row')} of {output} {'was' if len(changed) == 1 else 'were'} "
            f"run on other code than the generations "
            f"hold now (first: {shown}{' ...' if len(changed) > 5 else ''}): the generations file was edited since. "
            f"Pass --overwrite instead of --resume to run everything again, or write to a new --output")
    other_repeat = sorted({n for key, n in writer.attempt_counts.items() if n != config.repeat})
    if other_repeat:
        writer.close()
        made = " or ".join("once" if n == 1 else f"{n} times" for n in other_repeat)
        raise DataError(
            f"cannot resume: rows of {output} were run {made} each, "
            f"this run asks {option_value('repeat', config.repeat)}: a row would not say whether its sample is "
            f"flaky the way the others do. Resume with {option_value('repeat', other_repeat[0])}, write to a new "
            f"--output, or pass --overwrite instead of --resume")
    sample_keys = {s.key for s in samples}
    strangers = [key for key in writer.finished if key not in sample_keys]
    if strangers:
        writer.close()
        shown = ", ".join(f"{task}:{sample}" for task, sample in strangers[:5])
        raise DataError(
            f"cannot resume: {count(len(strangers), 'row')} of {output} {'is' if len(strangers) == 1 else 'are'} for "
            f"samples the generations do not have "
            f"(first: {shown}{' ...' if len(strangers) > 5 else ''}): it holds another run's results. Write to a "
            f"new --output, or pass --overwrite instead of --resume to replace it")
    _record_settings(output, settings, resume=config.resume)
    summary = ExecutionSummary(os.fspath(output), isolation, total=len(samples), notes=notes, settings=settings)
    if isolation.warning:
        notes.insert(0, isolation.warning)
    _note_applied_limits(sandbox.limits, summary)
    guard = SandboxFailureGuard(isolation, config.sandbox_failure_limit)
    try:
        # --limit N is the first N samples of the input, finished or not: an interrupted run
        # resumed with the same --limit ends with the rows an uninterrupted one has
        chosen = samples
        if config.limit is not None:
            if config.limit > len(samples):
                notes.append(f"{option_value('limit', config.limit)} is above the {count(len(samples), 'sample')} in the input: "
                             f"{'it' if len(samples) == 1 else 'all of them'}")
            chosen = samples[: config.limit]
        todo = [s for s in chosen if s.key not in writer.finished]
        summary.skipped_finished = len(chosen) - len(todo)
        nulls = sum(s.completion is None for s in todo)
        empties = sum(s.completion is not None and not s.completion.strip() for s in todo)
        if nulls or empties:
            notes.append(f"{nulls} null and {empties} empty {'completion' if empties == 1 else 'completions'} "
                         f"of the {len(todo)} run now: a null one is "
                         f"an error row without running, an empty one runs as it is (the prompt alone)")
        if config.stop:
            truncated = sum(s.stop is not None for s in todo)
            notes.append(f"{truncated} of {count(len(todo), 'completion')} run now {'was' if truncated == 1 else 'were'} "
                         f"cut at a stop sequence ({option_named('stop')}); "
                         f"their rows say generation_truncated and stop_sequence")
        if on_note is not None:  # what is known about the input now, not after the long part
            for note in notes:
                on_note(note)
            summary.announced_notes = len(notes)
        timeouts = _timeouts(todo, problems, runner, sandbox, config, workers, summary, on_start, on_result, guard)
        if on_start:
            on_start("execute", len(todo))
        started = time.monotonic()

        def execute(sample: Sample, slot: int) -> dict[str, Any]:
            # --repeat: one attempt after another in the same worker; a sandbox failure ends them (no row)
            attempts: list[SampleOutcome] = []
            while len(attempts) < config.repeat and not (attempts and attempts[-1].sandbox_failed):
                attempts.append(_run_sample(sample, problems[sample.task_id], runner, sandbox, config,
                                            timeouts[sample.task_id].timeout_s, slot))
            failed = next((attempt for attempt in attempts if attempt.sandbox_failed), attempts[0])
            return result_row(sample, failed, config.language, isolation, attempts)

        for row in run_in_slots(todo, execute, workers, on_interrupt=sandbox.close):
            if guard.record(row["status"], row["detail"]):
                summary.sandbox_errors += 1  # not a verdict on the sample: no row
            else:
                writer.write(row)
                summary.executed += 1
            if on_result:
                on_result(row)
        summary.elapsed_s = time.monotonic() - started
    finally:
        writer.close()
        if own_sandbox:
            sandbox.release_workers()  # the workers' pre-started interpreters, if any
    if sandbox.reuse_unavailable:
        notes.append(f"each sample started its own interpreter: the per-worker one could not start here "
                     f"({sandbox.reuse_unavailable})")
    if guard.note():
        notes.append(guard.note())
    rows = read_results(output)
    summary.counts = status_counts(rows)
    summary.pass_at_1 = pass_at_1(rows)
    summary.flaky = flaky_summary(rows)
    applied = summary.limits.get("address_space_bytes", {}).get("applied", config.memory_mb * MiB)
    if "address_space_bytes" in toolchain.limit_overrides:  # the runner's own, as its rows' statuses used
        applied = toolchain.limit_overrides["address_space_bytes"]  # None: off (the JVM reserves address space)
    summary.memory = memory_summary(rows, applied)  # the limit as samples got it (a hard limit may lower it)
    summary.pass_at_k = pass_at_k(rows, config.pass_at_k)
    attempted = summary.executed + summary.sandbox_errors
    summary.failures = check_failures({"samples": (summary.sandbox_errors, summary.executed, attempted)},
                                      config.max_failures).as_dict()
    # the results as the file names them: inside a workbench run folder relative to it (<run folder>/...)
    atomic_write(summary_path(output), json.dumps({**summary.as_dict(), "output": shown_path(output, run_dir)},
                                                  indent=2))
    return summary


#: options of :class:`ExecutionConfig` declared ``recorded``: they change a finished row
RECORDED_OPTIONS = tuple(name for name, item in ExecutionConfig.options().items() if item.declared.recorded)


def run_settings(generations: str | os.PathLike[str], config: ExecutionConfig,
                 run_dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The settings behind a run's rows, as the summary file's ``settings`` records them.

    Args:
        generations: what the run reads its completions from.
        config: the run's options.
        run_dir: the ``workbench run`` folder the results lie in: the generations and problems
            inside it are recorded relative to it (:func:`~workbench.resume_guard.recorded_path`).

    Returns:
        ``source`` (the generations, :func:`~workbench.resume_guard.recorded_path`: a source
        identity, ``<run folder>/...`` inside ``run_dir``) and every option declared ``recorded``
        (:data:`RECORDED_OPTIONS`) as JSON holds it, ``problems`` recorded so too. What only changes which samples run or how fast
        (``limit``, ``workers``, ``max_failures``) is not among them.
    """
    settings: dict[str, Any] = {SOURCE_KEY: recorded_path(generations, run_dir)}
    settings.update({name: config.recorded_value(name) for name in RECORDED_OPTIONS})
    settings["problems"] = recorded_path(config.problems, run_dir)
    return settings


def check_resume(output: str | os.PathLike[str], settings: dict[str, Any],
                 run_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """Refuse to resume a results file made with other settings (:func:`run_settings`).

    The settings are read from the summary file next to ``output``
    (:func:`~workbench.execute.result_file.summary_path`). A results file without rows, or
    without a summary, has nothing to compare; a summary written before settings were recorded
    (an older version) is resumed as before, with a note. A setting the record lacks is not
    compared.

    Args:
        output: the results file to resume.
        settings: this run's settings (:func:`run_settings`).
        run_dir: as :func:`run_settings`: a summary of an earlier version, which records the
            paths inside the run folder as absolute paths, is read with them relative to the folder
            it was written in (from the results path it records) or to this one. ``None`` (a job
            on its own) resuming a ``workbench run`` folder's results (the stage's command line
            rerun by hand): the folder is found from a ``<run folder>/...`` path of the summary
            (:func:`~workbench.resume_guard.implied_run_dir`), and ``settings`` names the paths
            inside it so too.

    Returns:
        notes for the summary (at most one line).

    Raises:
        ResumeMismatchError: naming every changed setting with its recorded and new value, and
            how to proceed (the same values, a new ``--output``, or ``--overwrite``).
    """
    path = summary_path(output)
    if not os.path.exists(output) or not os.path.getsize(output) or not path.exists():
        return []
    try:
        summary = json.loads(path.read_text())
        previous = summary.get("settings")
    except (OSError, ValueError, AttributeError):
        summary = previous = None
    if not isinstance(previous, dict):
        return [f"{path} records no settings (written by an older workbench): the rows already in {output} "
                f"are kept without checking that they were run with the same options"]
    if "repeat" not in previous:  # recorded before --repeat existed: each sample ran once
        previous = {**previous, "repeat": 1}
    if run_dir is not None:  # an earlier version recorded the paths inside the run folder as absolute
        previous = rebase_recorded_paths(previous, (SOURCE_KEY, "problems"), record_roots(
            summary.get("output") if isinstance(summary, dict) else None, output, run_dir))
    elif (root := implied_run_dir(previous, settings, (SOURCE_KEY, "problems"), output)) is not None:
        # workbench execute run by hand on a workbench run's folder (the stage's recorded command line):
        # its paths inside the folder are the summary's <run folder>/... ones, and are recorded so again
        settings.update(rebase_recorded_paths(settings, (SOURCE_KEY, "problems"), [root]))
    if isinstance(previous.get("language"), str):  # recorded as typed before names were made canonical
        previous = {**previous, "language": canonical_language(previous["language"])}
    floor, factor = settings.get("timeout_floor"), settings.get("timeout_factor")
    calibrated = (f"calibrated per task: max({floor:g} s, {factor:g} x the reference solution's time)"
                  if isinstance(floor, (int, float)) and isinstance(factor, (int, float)) else "calibrated per task")
    check_resume_settings(previous, settings, made_with=f"the rows of {output} were run with", record=str(path),
                          options=ExecutionConfig.options(), defaults={"timeout": calibrated})
    return []


def _record_settings(output: str | os.PathLike[str], settings: dict[str, Any], *, resume: bool) -> None:
    """Put ``settings`` into the summary file before any sample runs, so that a run
    interrupted before its summary is written still tells a resume what its rows were run with.

    Args:
        output: the results file.
        settings: this run's :func:`run_settings`.
        resume: keep the rest of the earlier summary (the rows it counted are kept) until this
            run's summary replaces it; otherwise the file holds the settings only.
    """
    path = summary_path(output)
    record: Any = {}
    if resume and path.exists():
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            record = {}
    record = record if isinstance(record, dict) else {}
    atomic_write(path, json.dumps({**record, "settings": settings}, indent=2))


def _note_applied_limits(limits: ResourceLimits, summary: ExecutionSummary) -> None:
    """Record the limits as samples get them, and say once where the machine gives less than asked."""
    applied = applied_limits(limits)
    summary.limits = {name: item.as_dict() for name, item in applied.items()}
    summary.notes.extend(item.note() for item in applied.values() if item.lowered)
    ceiling = memory_ceiling_bytes()
    summary.memory_ceiling_bytes = ceiling
    memory = applied["address_space_bytes"].applied
    if ceiling is not None and (memory is None or ceiling < memory):
        summary.notes.append(
            f"this machine's memory ceiling (cgroup) is {ceiling / MiB:g} MiB, below the {memory / MiB:g} MiB "
            f"address space samples may use ({option_named('memory_mb')}): a sample above it is ended by the kernel's OOM killer "
            f"(oom or killed) before its own limit" if memory is not None else
            f"this machine's memory ceiling (cgroup) is {ceiling / MiB:g} MiB: a sample above it is ended by the "
            f"kernel's OOM killer")


def _timeouts(todo, problems, runner, sandbox, config, workers, summary, on_start, on_result,
              guard: SandboxFailureGuard) -> dict[str, TaskTimeout]:
    task_ids = sorted({s.task_id for s in todo})
    if config.timeout is not None:
        return {t: TaskTimeout(t, config.timeout, None, None) for t in task_ids}
    with_reference = [problems[t] for t in task_ids if problems[t].reference is not None]
    result = {t: TaskTimeout(t, config.timeout_floor, None, None) for t in task_ids}
    bare = len(task_ids) - len(with_reference)
    if bare:
        summary.notes.append(
            f"{count(bare, 'task')} {'has' if bare == 1 else 'have'} no reference solution "
            f"(column {config.reference_column!r}): {'it uses' if bare == 1 else 'they use'} the floor timeout {config.timeout_floor:g} s"
        )
    if not with_reference:
        return result
    if on_start:
        on_start("calibrate", len(with_reference))
    references = [
        ReferenceProblem(p.task_id, runner.build_program(p.prompt, p.reference, "completion"), p.tests, p.entry_point)
        for p in with_reference
    ]
    cache = ReferenceTimeCache(config.reference_cache_folder)
    started = time.monotonic()

    def on_done(timeout: TaskTimeout) -> None:
        guard.record(timeout.reference_status, timeout.reference_detail)  # raises when the sandbox is broken
        if on_result:
            on_result({"phase": "calibrate", "task_id": timeout.task_id})

    try:
        calibrated = calibrate_timeouts(
            references, runner, sandbox, floor_s=config.timeout_floor, factor=config.timeout_factor,
            workers=workers, cache=cache, on_done=on_done,
        )
    finally:
        cache.close()
    summary.calibration_s = time.monotonic() - started
    failing = sorted(t.task_id for t in calibrated.values()
                     if t.reference_status not in ("passed", "cached", SANDBOX_ERROR))
    if failing:
        note = (f"the reference solution does not pass for {count(len(failing), 'task')} ({', '.join(failing[:5])}"
                f"{' ...' if len(failing) > 5 else ''}): {'it uses' if len(failing) == 1 else 'they use'} the floor timeout")
        # no reference compiles: most likely problems in another language than the runner's
        if len(failing) == len(calibrated) and all(t.reference_status == "syntax_error" for t in calibrated.values()):
            note += (f"; every reference is a syntax error as {config.language}: if the problems are in another "
                     f"language, {option_given('language')} (or give the data a 'language' column)")
        summary.notes.append(note)
    result.update(calibrated)
    return result


def _run_sample(sample: Sample, problem: Problem, runner: TestRunner, sandbox: Sandbox, config: ExecutionConfig,
                timeout_s: float, slot: int) -> SampleOutcome:
    if sample.completion is None:
        return SampleOutcome("error", 0.0, None, None, "", "the generation has no completion (null)", timeout_s)
    prompt = sample.prompt if sample.prompt is not None else problem.prompt
    try:
        program = runner.build_program(prompt, sample.completion, config.mode)
        token = new_token()
        spec = runner.prepare(program, problem.tests, problem.entry_point, token)
    except Exception as error:  # a runner bug must not end the run: record it on the sample
        return SampleOutcome("error", 0.0, None, None, "", f"the runner could not prepare this sample: {error}", timeout_s)
    return sandbox.run(spec, token, timeout_s, slot=slot)

