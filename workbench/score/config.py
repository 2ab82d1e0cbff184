"""The options of a scoring run (``workbench score``, ``[score]`` of ``workbench run``),
checked before any sample is scored.

The model options (``model``, ``temperature``, ``timeout``, ...) feed the LLM client's
:class:`~workbench.llm.client.LLMSettings` (:attr:`ScoreConfig.llm`); their defaults are that
class's defaults, read from it.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.data.stop_sequences import stop_help, stop_option_values
from workbench.failures import FailureLimit, failure_limit_text, parse_max_failures
from workbench.llm.cache import CacheMode
from workbench.llm.client import STRUCTURED_MODES, LLMSettings
from workbench.option_words import option_reset, option_value
from workbench.options import JobConfig, OptionError, option
from workbench.score.problems import ProblemSet
from workbench.score.reading import DEFAULT_SCORE_MODE, SCORE_MODES
from workbench.score.selection import SELECTIONS
from workbench.score.verdict import DEFAULT_FINAL_STEP, FINAL_STEPS

if TYPE_CHECKING:
    from workbench.score.base import ScoringMethod

#: ``cache`` values: how the LLM response cache is used (:class:`~workbench.llm.cache.CacheMode`)
CACHE_MODES: tuple[str, ...] = tuple(mode.value for mode in CacheMode)

#: the LLM client's defaults, which the model options share
_LLM_DEFAULTS = {item.name: item.default for item in dataclasses.fields(LLMSettings)}


def _method_names() -> tuple[str, ...]:
    from workbench.score.methods import METHODS

    return tuple(METHODS)


#: DSA-CQE's bound on one sub-code analysis answer, in tokens (``analysis_max_tokens``): about 1.5
#: times the longest analysis answer measured with qwen2.5-coder-1.5b (354 tokens, a function's
#: summary with its symbols; median ~110; benchmarks/results/score_bench.txt, 2026-12-01), so it
#: cuts only answers that run on (a JSON list repeated until ``max_tokens``, default 768)
DEFAULT_ANALYSIS_MAX_TOKENS = 512


def parse_method_limit(entry: str) -> tuple[str, int] | None:
    """One ``method_limit`` entry, ``"METHOD=N"`` (spaces around either part allowed), as
    ``(METHOD, N)``; ``None`` when it is not that with N >= 1 (N in ASCII digits: ``str.isdigit`` also takes
    ``²`` and ``①``, which ``int`` refuses). The one reading of the entries:
    :attr:`ScoreConfig.method_limits` checks them, ``workbench correlate`` reads them back from a
    score run's ``run.json`` (:func:`workbench.correlate.analysis.score_method_limits`)."""
    name, _, count = str(entry).partition("=")
    name, count = name.strip(), count.strip()
    if not name or not (count.isascii() and count.isdigit()) or int(count) < 1:
        return None
    return name, int(count)


def default_cache_dir() -> Path:
    """The LLM response cache of this user (``<workbench cache>/llm``: under ``$WORKBENCH_CACHE_DIR``
    when set, :func:`workbench.user_cache.user_cache_root`)."""
    from workbench.user_cache import user_cache_root

    return user_cache_root() / "llm"


@dataclass(frozen=True)
class ScoreConfig(JobConfig):
    """Options of a scoring run.

    Every field is a ``workbench score`` option (``max_subcodes`` is ``--max-subcodes``) and a
    key of the ``[score]`` table of ``workbench run``; the constructor checks them all and
    raises :class:`~workbench.options.OptionError` naming the field.

    Attributes:
        method: method names (``dsa-cqe``, ``dsa-cqe-simplified``, ``ice-score``, ``ice-score-usefulness``,
            ``p-correct``, ``chrf``).
        model: any litellm model, or ``local/<alias>``; required by an LLM method.
        api_base: endpoint of an OpenAI-compatible server.
        task_column / sample_column / generation_column / reference_column / prompt_column:
            input columns (``prompt_column`` default: ``prompt`` when present); a list-valued
            ``reference_column`` gives several references per sample (docs/score.md, Several
            references).
        no_prompt: ignore the prompt column (generation and reference are whole programs).
        problems / problems_split / problem_task_column / problem_prompt_column /
            problem_reference_column: a problem set that supplies, by task id, the prompt and
            the reference solution where the data has no such column
            (:mod:`workbench.score.problems`).
        offline: never contact the Hugging Face hub (a hub id is read from the local cache).
        results: a ``workbench execute`` results file whose ``passed`` each sample carries
            (:mod:`workbench.score.outcomes`).
        stop: stop sequences or preset names (``humaneval``): each generation is cut at the
            first one before it is scored, as ``workbench execute --stop`` cuts it before it
            runs (:mod:`workbench.data.stop_sequences`); the references are kept whole.
        carry: input columns copied into each row (default: ``passed`` when present).
        split: only this split.
        limit / select / stratify_column / select_seed: score only ``limit`` samples, the
            first ones or a stratified subset (:func:`~workbench.score.selection.stratified_subset`).
        method_limit: ``"METHOD=N"`` entries: METHOD scores only the first N of the selected
            samples (:attr:`method_limits`). A stratified selection's prefix is itself a
            stratified selection, so a slow judge gets a smaller subset of the same design.
        language: language plugin name of the programs; ``None`` (the default): the data's
            ``language`` column, else Python (:func:`workbench.data.language_column.run_language`).
            Given, it must agree with that column.
        n_samples: repeats of the final LLM scoring call, averaged.
        max_subcodes: DSA-CQE's cap on sub-codes per program.
        k_nearest: nearest storage records per sub-code.
        temperature / max_tokens / seed / timeout / retries / retry_wait / max_cost /
            structured: the LLM call (see :class:`~workbench.llm.client.LLMSettings`).
        workers: samples scored in parallel and LLM calls in flight (default 4; 1 for a
            ``local/`` model, which runs one call at a time): :attr:`parallel_samples`. The
            name every command uses for its parallelism (``--workers`` / ``-j``); the former
            ``concurrency`` (``--concurrency``) is a deprecated alias.
        cache_dir / cache: the response cache folder (default: the user cache folder) and
            its mode (``rw`` / ``ro`` / ``refresh`` / ``off``).
        embedding_model / embedding_api_base: ``None`` (offline all-MiniLM-L6-v2) or a
            litellm embedding model and its endpoint.
        chroma_host / chroma_port: a Chroma server; default an embedded store in the run folder.
        keep_storage: keep every program's Chroma collection.
        prompts_dir: a folder of prompt templates (default: shipped), the shipped file names,
            the ``*_references.txt`` forms for samples with several references.
        resume: keep ``scores.jsonl`` and skip what is in it; retry_failed: with ``resume``,
            score error rows again; overwrite: replace an existing run folder's results.
        score_mode: how the LLM methods' scores are read (:mod:`workbench.score.reading`):
            ``expected``, the expectation over the score tokens' probabilities (G-Eval, Liu et
            al. 2023, Sec. 2.3), falling back to the sampled answers where the provider returns
            no log-probabilities (counted in ``run.json`` and the summary); or ``sampled``.
        final_step: ``dsa-cqe`` and ``dsa-cqe-simplified``: ``score`` (0-4 in the comparison) or
            ``p-correct`` (P(Yes) asked after the comparison, :mod:`workbench.score.verdict`).
        reference: ``p-correct``: show the judge the reference solution.
        analyse_first: ``p-correct``: the model analyses before the Yes/No turn (CodeJudge).
        analysis_max_tokens: DSA-CQE: the bound on each sub-code analysis answer (0: none but
            ``max_tokens``). An answer ending sooner is the unbounded call's answer (decoding
            does not depend on the limit) and is cached under its key; an answer cut at the bound
            is counted in the row's ``truncated_answers`` and its unit says ``truncated``.
        prefix_reuse: ``local/`` models: reuse the KV state of the prompt prefix shared with the
            previous call (see :class:`~workbench.llm.client.LLMSettings`); part of the cache key.

    Example:

    >>> from workbench.score.config import ScoreConfig
    >>> config = ScoreConfig(method=["ice-score", "chrf"], model="local/qwen2.5-coder-0.5b")
    >>> config.parallel_samples, config.llm.temperature
    (1, 0.2)
    >>> ScoreConfig(method=["ice-score"])
    Traceback (most recent call last):
    ...
    workbench.options.OptionError: model is required by an LLM method (e.g. local/qwen2.5-coder-0.5b or gpt-4o-mini)
    """

    method: tuple[str, ...] = option(
        ("dsa-cqe",), "dsa-cqe, dsa-cqe-simplified, ice-score, ice-score-usefulness, p-correct, chrf; repeat for several.",
        choices=_method_names)
    model: str | None = option(
        None, "Any litellm model (gpt-4o-mini, ollama/..., openai/NAME with --api-base) or local/ALIAS.")
    api_base: str | None = option(None, "Endpoint of an OpenAI-compatible server (vLLM, llama.cpp).")
    task_column: str = option("task_id", "Column with the task id.", recorded=True)
    sample_column: str = option(
        "sample_id", "Sample id column (unique within a task); if the data has no such column, the samples are "
        "numbered 0, 1, ... per task in file order, as workbench execute numbers them.", recorded=True)
    generation_column: str = option("generation", "For the ICE-Score file use completion_multipl_e.", recorded=True)
    reference_column: str = option(
        "reference", "Column with the reference solution; a list-valued column gives several references "
        "(chrf scores against all, the LLM judges are shown all: docs/score.md).", recorded=True)
    prompt_column: str | None = option(
        None, "Default: 'prompt' when present; generation and reference then complete it.", recorded=True)
    no_prompt: bool = option(False, "Ignore the prompt column: generation and reference are whole programs.", recorded=True)
    stop: tuple[str, ...] = option((), stop_help(), commas=False, metavar="SEQ|PRESET", recorded=True)
    carry: tuple[str, ...] | None = option(None, "Input columns copied into each row (default: passed, when present).")
    problems: str | None = option(
        None, "Problem set (bundled name such as humaneval, a file or a hub id) whose prompt and reference solution a "
        "sample takes, by its task id, where the data has no prompt or reference column (as workbench execute takes "
        "the prompt).", recorded=True)
    problems_split: str | None = option(None, "Split of --problems (default: its only split, or 'test').", recorded=True)
    problem_task_column: str = option("task_id", "Problems column with the task id.", recorded=True)
    problem_prompt_column: str = option("prompt", "Problems column with the prompt.", recorded=True)
    problem_reference_column: str = option(
        "canonical_solution", "Problems column with the reference solution.", recorded=True)
    offline: bool = option(False, "Never contact the Hugging Face hub (a hub id is read from the local cache).")
    split: str | None = option(None, "Only this split.", recorded=True)
    limit: int | None = option(None, "Score only N samples (see --select).", min=1)
    select: str = option(
        "first", "Which N samples: first (file order) or stratified (spread over tasks and pass/fail).", choices=SELECTIONS)
    stratify_column: str = option("passed", "Outcome column (0/1 or pass ratio) for --select stratified.")
    results: str | None = option(
        None, "Execution results of workbench execute (JSON Lines): each sample carries its 'passed', joined by task "
        "and sample id (replacing a data column of that name), for --select stratified and for correlate.",
        recorded=True)
    select_seed: int = option(0, "Seed of --select stratified.", min=0)
    method_limit: tuple[str, ...] | None = option(
        None, "METHOD=N: score METHOD on the first N selected samples only (repeatable), e.g. dsa-cqe=8 for the "
        "slowest judge; the first N of --select stratified are a stratified subset too.")
    language: str | None = option(None, "Language plugin of the programs (default: the data's 'language' column, "
                                  "else python; given, it must agree with that column).")
    n_samples: int = option(
        1, "Repeat the final scoring call k times; the score is the mean, the spread is reported.", min=1)
    max_subcodes: int = option(16, "DSA-CQE: most sub-codes analysed per program.", min=1)
    k_nearest: int = option(3, "DSA-CQE: nearest storage records retrieved per sub-code.", min=0)
    temperature: float = option(_LLM_DEFAULTS["temperature"], "Sampling temperature (DSA-CQE reported 0.2).", min=0)
    max_tokens: int = option(_LLM_DEFAULTS["max_tokens"], "Longest answer, in tokens.", min=16)
    seed: int = option(_LLM_DEFAULTS["seed"], "Sampling seed (for providers that take one).")
    timeout: float = option(
        _LLM_DEFAULTS["timeout_s"], "Deadline in seconds of one LLM call attempt, for the whole answer (not between bytes); then it is abandoned and retried. A call takes at most timeout x (retries + 1) + backoff.", min=0.0, min_open=True)
    retries: int = option(_LLM_DEFAULTS["max_retries"], "Retries of a transient LLM failure (backoff with jitter).", min=0)
    retry_wait: float = option(
        _LLM_DEFAULTS["retry_wait_s"], "Seconds before the first retry; doubles per retry (with jitter). A 429/503 whose Retry-After asks for longer gets it; each wait at most 30.",
        min=0.0)
    workers: int | None = option(
        None, "Samples in parallel and LLM calls in flight (default 4; 1 for local/ models).", min=1,
        aliases=("concurrency",))
    max_cost: float | None = option(
        None, "Budget in USD (litellm's local cost map); later samples get budget_exceeded.", min=0.0)
    structured: str = option(
        _LLM_DEFAULTS["structured"], "json_schema, json_object or off (answers are validated in every case).",
        choices=STRUCTURED_MODES)
    cache_dir: Path | None = option(None, "LLM response cache (default: the user cache folder).")
    cache: str = option(CacheMode.RW.value, "rw, ro, refresh or off.", choices=CACHE_MODES)
    embedding_model: str | None = option(
        None, "Default: offline all-MiniLM-L6-v2; or any litellm embedding model.")
    embedding_api_base: str | None = option(None, "Endpoint of the embedding model.")
    chroma_host: str | None = option(None, "Use a Chroma server instead of the embedded store.")
    chroma_port: int = option(8000, "Port of the Chroma server.")
    keep_storage: bool = option(False, "Keep each program's Chroma collection.")
    prompts_dir: Path | None = option(
        None, "Your own prompt templates (same file names as prompts/; the *_references.txt forms serve "
        "samples with several references).")
    resume: bool = option(False, "Continue a run: samples already in scores.jsonl are not scored again.")
    retry_failed: bool = option(False, "With --resume: score rows with an error status again.")
    overwrite: bool = option(False, "Replace the results in an existing run folder.")
    max_failures: FailureLimit | None = option(
        None, "Exit with status 4 when more than N rows of one method failed (llm_error, parse_error, budget_exceeded, error), or more than this fraction (0.1 or 10%); "
        "a run where every row of a method failed exits with 3 either way.", parse=parse_max_failures, text=failure_limit_text,
        metavar="N|FRACTION")
    # -- how the LLM judges ask and read (issues 15 and 20) --
    score_mode: str = option(
        DEFAULT_SCORE_MODE,
        "expected: the probability-weighted score over the score tokens (G-Eval), from token log-probabilities; "
        "where the provider returns none, the mean of --n-samples answers (the summary says so). "
        "sampled: the written score.", choices=SCORE_MODES, recorded=True)
    final_step: str = option(
        DEFAULT_FINAL_STEP, "dsa-cqe, dsa-cqe-simplified: score (0-4 in the comparison) or p-correct "
        "(P(Yes) asked after the comparison).", choices=FINAL_STEPS, recorded=True)
    reference: bool = option(True, "p-correct: show the judge the reference solution (without it, P(Yes) agreed better with execution on two of the three languages measured and as well on the third: benchmarks/results/preregistered_noref.md).", recorded=True)
    analyse_first: bool = option(
        False, "p-correct: the model writes its analysis, then a second turn asks Yes/No (CodeJudge).", recorded=True)

    # -- speed (issue 15): what changes only how fast the same questions are answered --
    analysis_max_tokens: int = option(
        DEFAULT_ANALYSIS_MAX_TOKENS, "DSA-CQE: longest sub-code analysis answer, in tokens (an answer ending "
        "sooner is the unbounded answer, cached as such; a cut one is counted in truncated_answers); "
        "0: only --max-tokens.", min=0, recorded=True)
    prefix_reuse: bool = option(
        False, "local/ models: reuse the KV state of the prompt prefix shared with the previous call "
        "(llama.cpp cache_prompt; faster, the answers differ slightly, so it is part of the cache key).",
        recorded=True)

    def _check(self) -> None:
        if not self.method:
            raise OptionError(f"no {{method}} given; choose {', '.join(_method_names())}", "method")
        if self.uses_llm and not self.model:
            raise OptionError(
                "{model} is required by an LLM method (e.g. local/qwen2.5-coder-0.5b or gpt-4o-mini)", "model")
        if self.prefix_reuse and not (self.model or "").startswith("local/"):
            raise OptionError("{prefix_reuse} works with local/ models only (a model server reuses prefixes "
                              "by its own setting)", "prefix_reuse")
        self._check_judge_options()
        if self.retry_failed and not self.resume:
            raise OptionError("{retry_failed} only makes sense with {resume}", "retry_failed", "resume")
        if self.no_prompt and self.prompt_column:  # one would be silently ignored
            raise OptionError("{no_prompt} ignores the prompt column and {prompt_column} names one; pass one of them",
                              "no_prompt", "prompt_column")
        self.method_limits  # noqa: B018  (parses and checks the entries)
        self.stop_sequences  # noqa: B018  (checks the values)
        if self.resume and self.overwrite:
            raise OptionError(
                "{resume} keeps the rows of the run folder and {overwrite} replaces them; pass one of them",
                "resume", "overwrite")

    def _check_judge_options(self) -> None:
        """A judge option that no method of the run reads is refused, not ignored: ``-m ice-score
        --no-reference`` would otherwise score with the reference (ICE-Score's reference-free
        variant is not implemented), silently."""
        methods = ", ".join(dict.fromkeys(self.method))
        # the command line drops the option; a config (the shipped preset sets reference = false)
        # sets the key back to its default (option_reset words both)
        if not self.reference and "p-correct" not in self.method:
            ice = (" (ice-score is ICE-Score's reference-based prompt, the shipped gpt35_nswr; the reference-free "
                   "gpt35_nsnr is not implemented)" if "ice-score" in self.method else "")
            raise OptionError(f"{option_value('reference', False)} is read by p-correct only, and this run's methods "
                              f"({methods}) do not read it; add p-correct to {{method}} or "
                              f"{option_reset('reference', False, True)}{ice}", "reference", "method")
        if self.analyse_first and "p-correct" not in self.method:
            raise OptionError(f"{option_value('analyse_first', True)} is read by p-correct only; this run's methods "
                              f"({methods}) do not read it: add p-correct to {{method}} or "
                              f"{option_reset('analyse_first', True, False)}", "analyse_first", "method")
        if self.final_step != DEFAULT_FINAL_STEP and not {"dsa-cqe", "dsa-cqe-simplified"} & set(self.method):
            raise OptionError(f"{option_value('final_step', self.final_step)} is read by dsa-cqe and dsa-cqe-simplified "
                              f"only; this run's methods ({methods}) do not read it: add one of them to {{method}} or "
                              f"{option_reset('final_step', self.final_step, DEFAULT_FINAL_STEP)}", "final_step", "method")

    @property
    def method_limits(self) -> dict[str, int]:
        """``method_limit`` as {method: N}: that method scores the first N selected samples.

        Raises:
            OptionError: an entry that is not ``METHOD=N`` with N >= 1, a method that is not in
                ``method``, or a method given twice.
        """
        limits: dict[str, int] = {}
        for entry in self.method_limit or ():
            parsed = parse_method_limit(entry)
            if parsed is None:
                raise OptionError(f"{{method_limit}} {entry!r}: expected METHOD=N with N >= 1, e.g. dsa-cqe=8",
                                  "method_limit")
            name, count = parsed
            if name not in self.method:
                raise OptionError(f"{{method_limit}} {entry!r}: {name!r} is not one of this run's methods "
                                  f"({', '.join(self.method)})", "method_limit")
            if name in limits:
                raise OptionError(f"{{method_limit}} gives {name!r} twice", "method_limit")
            limits[name] = count
        return limits

    @property
    def problem_set(self) -> ProblemSet | None:
        """``problems`` and its columns as a :class:`~workbench.score.problems.ProblemSet` (``None``: no problem set)."""
        if self.problems is None:
            return None
        return ProblemSet(self.problems, self.problems_split, self.problem_task_column, self.problem_prompt_column,
                          self.problem_reference_column, self.offline)

    def make_methods(self) -> list[ScoringMethod]:
        """One instance of each method of this run, in ``--method`` order, with this run's options.

        Raises:
            WorkbenchError: an unknown method or a bad option or prompt template.
        """
        from workbench.score.methods import make_method

        return [make_method(name, self.prompts_dir, final_step=self.final_step, reference=self.reference,
                            analyse_first=self.analyse_first)
                for name in dict.fromkeys(self.method)]

    @property
    def needs_reference(self) -> bool:
        """Whether a method of this run reads the reference solution (each method says so:
        :attr:`~workbench.score.base.ScoringMethod.needs_reference`).

        Raises:
            WorkbenchError: as :meth:`make_methods`.
        """
        return any(method.needs_reference for method in self.make_methods())

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        """``stop`` with presets expanded and escapes decoded.

        Raises:
            OptionError: an empty stop sequence.
        """
        return stop_option_values(self.stop)

    @property
    def uses_llm(self) -> bool:
        """Whether a method of this run calls a model."""
        from workbench.score.methods import METHODS

        return any(METHODS[name].uses_llm for name in self.method)

    @property
    def uses_embeddings(self) -> bool:
        """Whether a method of this run needs the embedding model (the Semantic Storage of ``dsa-cqe``)."""
        from workbench.score.methods import METHODS

        return any(METHODS[name].uses_embeddings for name in self.method)

    @property
    def parallel_samples(self) -> int:
        """Samples scored at once: ``workers``, else 1 for a ``local/`` model (one call at a
        time in this process) and the LLM client's default otherwise."""
        if self.workers is not None:
            return self.workers
        return 1 if self.model and self.model.startswith("local/") else _LLM_DEFAULTS["concurrency"]

    @property
    def llm(self) -> LLMSettings | None:
        """The LLM client settings, or ``None`` when no method of this run calls a model."""
        if not self.uses_llm:
            return None
        return LLMSettings(
            model=self.model or "", api_base=self.api_base, temperature=self.temperature, max_tokens=self.max_tokens,
            seed=self.seed, timeout_s=self.timeout, max_retries=self.retries, retry_wait_s=self.retry_wait,
            concurrency=self.parallel_samples, max_cost_usd=self.max_cost, structured=self.structured,
            prefix_reuse=self.prefix_reuse,
        )

    @property
    def response_cache_dir(self) -> Path | None:
        """The response cache folder, or ``None`` when ``cache`` is ``off``."""
        if self.cache == CacheMode.OFF.value:
            return None
        return Path(os.fspath(self.cache_dir)) if self.cache_dir else default_cache_dir()
