"""The options of an execution run (``workbench execute``, ``[execute]`` of ``workbench run``),
checked before any sample runs."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from workbench.execute.isolation import LEVEL_ORDER
from workbench.execute.limits import RLIMIT_MAX, MiB, ResourceLimits
from workbench.execute.pass_at_k import DEFAULT_KS
from workbench.execute.timeouts import DEFAULT_TIMEOUT_FACTOR, DEFAULT_TIMEOUT_FLOOR_S
from workbench.data.stop_sequences import stop_help, stop_option_values
from workbench.failures import FailureLimit, failure_limit_text, parse_max_failures
from workbench.option_words import option_named, option_value
from workbench.options import JobConfig, OptionError, option

#: this many sandbox failures in a row end the run: the sandbox does not work here
DEFAULT_SANDBOX_FAILURE_LIMIT = 5

#: ``--isolation`` values: ``auto`` (the strongest available) or a level (never ``unsandboxed``
#: for model output: that level is the conformance kit's)
ISOLATION_CHOICES: tuple[str, ...] = ("auto", *(level.value for level in LEVEL_ORDER))

#: how a completion becomes a program
MODES: tuple[str, ...] = ("completion", "full")

#: ``--prompt-source`` values: where the prompt before each completion comes from
PROMPT_SOURCES: tuple[str, ...] = ("problems", "generations")


def default_reference_cache() -> str:
    """The folder where measured reference times are kept between runs
    (``<workbench cache>/reference-times``, :func:`workbench.user_cache.user_cache_root`)."""
    from workbench.user_cache import user_cache_root

    return os.path.join(user_cache_root(), "reference-times")


@dataclass(frozen=True)
class ExecutionConfig(JobConfig):
    """Options of an execution run.

    Every field is a ``workbench execute`` option (``timeout_factor`` is ``--timeout-factor``)
    and a key of the ``[execute]`` table of ``workbench run``; the constructor checks them all
    and raises :class:`~workbench.options.OptionError` naming the field.

    Attributes:
        problems: the problem set: a bundled name (``"humaneval"``), a data file or folder,
            or a hub id (see :func:`workbench.data.loading.load_records`).
        problems_split: which split of ``problems`` (default: its only split, or ``test``).
        language: the language plugin whose runner executes the samples; ``None`` (the
            default): the data's ``language`` column (generations and problems), else Python
            (:func:`workbench.data.language_column.run_language`). Given, it must agree with
            that column.
        mode: ``"completion"`` (prompt + completion) or ``"full"`` (completion is the program).
        stop: stop sequences or preset names (``humaneval``): each completion is cut at the
            first one before it runs, and its row says so (:mod:`workbench.data.stop_sequences`,
            :attr:`stop_sequences`).
        split: run only this split of the generations (default: every split, in order), as
            ``workbench score --split``; ``workbench run`` passes ``[data] split``.
        task_column / sample_column / completion_column: columns of the generations.
            A missing ``sample_column`` (left at its default) numbers samples per task.
        prompt_column: a generations column holding the prompt to prepend (default: the
            problem's prompt).
        prompt_source: where the prompt before each completion comes from, declared: ``"problems"``
            (the problem set's ``problem_prompt_column``; no ``prompt_column``) or ``"generations"``
            (``prompt_column``, which it requires). ``None`` (the default) leaves it to
            ``prompt_column``: the generations' prompt when that is given, else the problems', with
            a note where the generations carry a prompt of their own that differs
            (:func:`workbench.execute.job.load_samples`); declaring ``"problems"`` drops that note.
            It changes no program, so it is not recorded: ``prompt_column`` is.
        problem_task_column / problem_prompt_column / test_column / entry_point_column /
            reference_column: columns of the problems (``reference_column`` may be absent:
            then every task gets the floor timeout; an empty name means none).
        workers: parallel samples (default: twice the number of cores,
            :data:`~workbench.execute.job.WORKERS_PER_CORE`; ``0``: one per core, as
            ``dedup``'s ``workers = 0``).
        timeout: one fixed timeout in seconds for every sample (skips calibration).
        timeout_floor / timeout_factor: EvalPlus's ``max(floor, factor * reference)`` seconds.
        memory_mb / max_file_mb / max_processes / max_open_files / tmp_mb: the per-sample
            :class:`~workbench.execute.limits.ResourceLimits` (see :attr:`limits`).
        isolation: ``auto`` (the strongest available) or a level to require.
        resume / overwrite: what to do with an existing output file.
        offline: never contact the Hugging Face hub (the generations and problems, where hub
            ids, are read from the local cache).
        reference_cache / reference_cache_dir: keep measured reference times between runs,
            and where (default: the user cache folder).
        pass_at_k: the ks of the pass@k the summary reports (:mod:`workbench.execute.pass_at_k`);
            a k above some task's number of samples is left out with the reason.
        limit: run only the first N samples of the input (a resume runs those of them not yet
            finished, so an interrupted run ends with the same rows); the name ``score``
            uses too, formerly ``max_samples`` (``--max-samples``, ``[execute] max_samples``:
            deprecated aliases, still accepted for one release).
        repeat: run each sample this many times, one attempt after another in the same worker, and
            record every attempt's status (the row's ``attempts``); a sample whose statuses differ is
            ``flaky``. The row's ``status``, ``passed`` and the rest are its first attempt's, so
            pass@k counts the first attempt (what a run with ``repeat = 1`` records). Recorded: a
            resume with another value is refused.
        python: the interpreter of the Python runner (default: the one running workbench).
        reuse_interpreters: fork each sample from one pre-started interpreter per worker
            where that keeps the isolation (``bubblewrap`` as root, a runner that allows it:
            :mod:`workbench.execute.zygote`); ``False``: every sample starts its own sandbox
            and interpreter.
        sandbox_failure_limit: stop the run (``SandboxUnavailableError``) after this many
            samples or reference runs in a row failed in the sandbox itself.

    The options declared ``recorded`` change a finished row (the data, the columns, the mode,
    the timeouts, the limits, the language and interpreter): they are recorded in the summary
    file, and ``resume`` with other values is refused (:func:`workbench.execute.job.run_settings`).

    Example:

    >>> from workbench.execute import ExecutionConfig
    >>> config = ExecutionConfig(workers=2, timeout=10.0, isolation="rlimits")
    >>> config.limits.address_space_bytes // 2**20, config.isolation_level
    (4096, 'rlimits')
    """

    problems: str = option("humaneval", "Problem set with prompt / test / entry point columns (bundled name, file or hub id).", recorded=True)
    problems_split: str | None = option(None, "Split of the problem set (default: its only split, or 'test').", recorded=True)
    language: str | None = option(None, "Language plugin whose runner executes the samples (default: the data's "
                                  "'language' column, else python; given, it must agree with that column).",
                                  recorded=True)
    mode: str = option("completion", "'completion': prompt + completion; 'full': the completion is the whole program.",
                       choices=MODES, recorded=True)
    stop: tuple[str, ...] = option((), stop_help(), commas=False, metavar="SEQ|PRESET", recorded=True)
    split: str | None = option(None, "Only this split of the generations (default: all).", recorded=True)
    task_column: str = option("task_id", "Generations column with the task id.", recorded=True)
    sample_column: str = option("sample_id", "Generations column with the sample id (if absent: numbered per task).", recorded=True)
    completion_column: str = option("completion", "Generations column with the generated code.", recorded=True)
    prompt_column: str | None = option(None, "Generations column with the prompt to prepend (default: the problem's prompt).", recorded=True)
    prompt_source: str | None = option(
        None, "Where the prompt before each completion comes from: 'problems' (the problem set's prompt) or "
        "'generations' (--prompt-column). Default: the generations' with --prompt-column, else the problems', with a "
        "note where the generations carry a prompt that differs; 'problems' declares that choice (no note).",
        choices=PROMPT_SOURCES)
    problem_task_column: str = option("task_id", "Problems column with the task id.", recorded=True)
    problem_prompt_column: str = option("prompt", "Problems column with the prompt.", recorded=True)
    test_column: str = option("test", "Problems column with the test code.", recorded=True)
    entry_point_column: str | None = option("entry_point", "Problems column with the function under test.", recorded=True)
    reference_column: str | None = option(
        "canonical_solution", "Problems column with the reference solution (timeout calibration).", recorded=True)
    workers: int | None = option(None, "Parallel samples (default: twice the number of cores; 0 = one per core).", min=0)
    timeout: float | None = option(
        None, "One fixed timeout in seconds for every sample (skips calibration).", min=0.1, max=86400, recorded=True)
    timeout_floor: float = option(
        DEFAULT_TIMEOUT_FLOOR_S, "Calibrated timeout: max(floor, factor x reference time), seconds.", min=0.1, max=86400, recorded=True)
    timeout_factor: float = option(
        DEFAULT_TIMEOUT_FACTOR, "Calibrated timeout factor k (EvalPlus default 4).", min=1.0, max=1000, recorded=True)
    # at most what an rlimit holds (limits.RLIMIT_MAX): above it every sample's set-up failed (sandbox_error)
    memory_mb: int = option(4096, "Address-space limit per process, MiB.", min=64, max=RLIMIT_MAX // MiB, recorded=True)
    max_file_mb: int = option(64, "Largest file a sample may write, MiB.", min=1, max=RLIMIT_MAX // MiB, recorded=True)
    max_processes: int = option(64, "Processes/threads per sample.", min=1, max=RLIMIT_MAX, recorded=True)
    max_open_files: int = option(256, "Open files per process.", min=16, max=RLIMIT_MAX, recorded=True)
    tmp_mb: int = option(256, "Private /tmp (and disk quota) per sample under bubblewrap, MiB.", min=1, recorded=True)
    isolation: str = option(
        "auto", f"Isolation level: {', '.join(ISOLATION_CHOICES)} (auto: strongest available).", choices=ISOLATION_CHOICES)
    resume: bool = option(False, "Continue an interrupted run: skip samples already in --output.")
    overwrite: bool = option(False, "Replace an existing --output file.")
    offline: bool = option(False, "Never contact the Hugging Face hub (a hub id is read from the local cache).")
    reference_cache: bool = option(True, "Reuse measured reference times.")
    reference_cache_dir: Path | None = option(None, "Folder of the measured reference times (default: the user cache folder).")
    limit: int | None = option(None, "Run only the first N samples of the input (with --resume: those of them not finished).", min=1, aliases=("max_samples",))
    pass_at_k: tuple[int, ...] = option(
        DEFAULT_KS, "pass@k to report, for each k every task has k samples for (unbiased estimator, Chen et al. 2021).",
        min=1, metavar="K")
    repeat: int = option(
        1, "Run each sample N times and record every attempt's status (attempts); a sample whose statuses differ is "
        "flaky. The row's status, passed and pass@k are its first attempt's.", min=1, max=100, metavar="N",
        recorded=True)
    python: str | None = option(None, "Interpreter of the Python runner (default: the one running workbench).", recorded=True)
    reuse_interpreters: bool = option(
        True, "Fork each sample from a pre-started interpreter per worker where isolation allows (bubblewrap as root); "
        "off: every sample starts its own sandbox and interpreter.")
    max_failures: FailureLimit | None = option(
        None, "Exit with status 4 when more than N samples failed in the sandbox itself (sandbox_error), or more than this fraction (0.1 or 10%); "
        "a run where every sample failed exits with 3 either way.", parse=parse_max_failures, text=failure_limit_text,
        metavar="N|FRACTION")
    sandbox_failure_limit: int = option(
        DEFAULT_SANDBOX_FAILURE_LIMIT, "Stop the run after this many samples in a row failed in the sandbox itself.", min=1)

    def _check(self) -> None:
        # an empty column name means "none" (no entry point, no reference to calibrate with)
        for name in ("entry_point_column", "reference_column"):
            if getattr(self, name) == "":
                object.__setattr__(self, name, None)
        if self.resume and self.overwrite:
            raise OptionError("{resume} and {overwrite} exclude each other", "resume", "overwrite")
        if self.prompt_source == "problems" and self.prompt_column is not None:
            raise OptionError(f"{option_value('prompt_source', 'problems')} runs the problems' prompt, but "
                              f"{option_value('prompt_column', self.prompt_column)} names a generations column to run "
                              f"instead: drop one of them ({option_value('prompt_source', 'generations')} runs "
                              f"the generations' column)", "prompt_source", "prompt_column")
        if self.prompt_source == "generations" and self.prompt_column is None:
            raise OptionError(f"{option_value('prompt_source', 'generations')} runs the prompt the generations carry: "
                              f"name their column with {option_named('prompt_column')} (e.g. prompt)",
                              "prompt_source", "prompt_column")
        self.stop_sequences  # noqa: B018  (checks the values)

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        """``stop`` with presets expanded and escapes decoded.

        Raises:
            OptionError: an empty stop sequence.
        """
        return stop_option_values(self.stop)

    @property
    def limits(self) -> ResourceLimits:
        """The per-sample resource limits of these options."""
        return ResourceLimits(
            address_space_bytes=self.memory_mb * MiB, file_size_bytes=self.max_file_mb * MiB,
            processes=self.max_processes, open_files=self.max_open_files, tmpfs_bytes=self.tmp_mb * MiB,
        )

    @property
    def isolation_level(self) -> str | None:
        """The level to require, or ``None`` for the strongest available (``auto``)."""
        return None if self.isolation == "auto" else self.isolation

    @property
    def reference_cache_folder(self) -> str | None:
        """Where reference times are kept, or ``None`` when ``reference_cache`` is off."""
        if not self.reference_cache:
            return None
        return os.fspath(self.reference_cache_dir) if self.reference_cache_dir else default_reference_cache()
