"""What every scoring method shares: the sample, the result, the context, the method protocol."""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from workbench.data.samples import BaseSample, code_digest
from workbench.languages.spec import LanguagePlugin
from workbench.llm.client import Exchange, LLMClient, LLMParseError, Usage
from workbench.score.reading import (
    DEFAULT_SCORE_MODE,
    SCORE_LABELS,
    TOP_LOGPROBS,
    CombinedRead,
    ScoreRead,
    combine_reads,
    json_value_offset,
    joined_text,
    read_at,
)

#: per-sample statuses written in the ``status`` column; ``error`` is an unexpected exception
#: of a method on one sample (recorded by :func:`workbench.score.job.score_samples`, retried
#: by ``--retry-failed`` like the LLM failures)
STATUSES = ("ok", "llm_error", "parse_error", "budget_exceeded", "skipped", "error")


def distinct_references(texts: Iterable[str]) -> tuple[str, ...]:
    """The references a list-valued reference cell gives: its texts in order, without the blank ones
    (no reference) and without repeats (a text given again is the same reference: CoNaLa lists
    ``type(v)`` four times for one item), so that a cell holding one reference however often is
    scored and asked exactly as a text cell holding it.

    Args:
        texts: the cell's texts, in the data's order.

    Returns:
        the distinct non-blank texts, each where it first appears.
    """
    return tuple(dict.fromkeys(text for text in texts if text.strip()))


@dataclass(frozen=True)
class Sample(BaseSample):
    """One generated program and its reference (its ids and key:
    :class:`~workbench.data.samples.BaseSample`).

    Attributes:
        generation: the generated code (a body completing ``prompt`` when a prompt is given).
        reference: the reference code (same layout as ``generation``); with several
            references, the first that is not blank (the judges are shown them all:
            :meth:`ScoringMethod.references_shown`).
        prompt: the problem's prompt (signature and docstring), or ``""``.
        carried: input columns copied into the output rows (e.g. ``passed``).
        generation_null: the input's generation was null (missing): scored as empty code,
            and every row of the sample says so (``generation_note``).
        stop: the stop sequence that cut ``generation`` (``--stop``), or ``None``.
        from_problems: which of ``"prompt"`` and ``"reference"`` came from the problem set
            (``--problems``) rather than the data's own columns.
        language: the data's ``language`` cell (a loader fills it in for a folder of source
            files or an ICE-Score grade file), ``None`` when there is none; a run scores one
            language (:func:`workbench.data.language_column.run_language`).
        references: every reference of the sample, in the data's order, when its reference
            column holds lists (its distinct non-blank texts, :func:`distinct_references`; ``()`` for a text column, whose
            one reference is :attr:`reference`). The match-based methods (``chrf``) score
            against all of them (:attr:`all_references`), and the LLM judges are shown them all.
        position: the sample's 0-based place among its data's samples in file order (set by
            :func:`~workbench.score.job.load_samples`, whatever the selection's order), the order of
            ``scores_wide.jsonl``; ``None`` for a sample made otherwise (the order it is passed in).
        listed_references: how many non-blank texts its list-valued reference cell lists, a repeat counted
            each time: the references a workbench before :func:`distinct_references` showed the judges (a
            resume refuses the rows it left, :func:`~workbench.score.job._check_references_shown`); ``0``
            for a text column or a sample made otherwise (not known).
    """

    generation: str
    reference: str
    prompt: str = ""
    carried: dict[str, Any] = field(default_factory=dict)
    generation_null: bool = False
    stop: str | None = None
    from_problems: tuple[str, ...] = ()
    language: str | None = None
    references: tuple[str, ...] = ()
    position: int | None = None
    listed_references: int = 0

    @property
    def all_references(self) -> tuple[str, ...]:
        """Every reference to score against: :attr:`references` when the data gives a list,
        else the one :attr:`reference` (a tuple of one text)."""
        return self.references or (self.reference,)

    @property
    def generation_note(self) -> str | None:
        """Why the generation is no code, for the row (never silent), or ``None``."""
        if self.generation_null:
            return "the generation is null (missing): scored as empty code"
        if not self.generation.strip():
            cut = f" after cutting at the stop sequence {self.stop!r}" if self.stop else ""
            return f"the generation is empty{cut}: scored as empty code"
        return None

    @property
    def code_digest(self) -> str:
        """The ``code_sha256`` of the scored generation (as cut at ``--stop``; ``None`` when null):
        :func:`workbench.data.samples.code_digest` with no prompt, the digest ``workbench execute``
        records for it run after the problem's prompt (its default), so ``workbench correlate
        --results`` can refuse results of other generations."""
        return code_digest(None, None if self.generation_null else self.generation)

    @property
    def generation_program(self) -> str:
        """The whole generated program (prompt + body)."""
        return self.prompt + self.generation

    @property
    def reference_program(self) -> str:
        """The whole reference program (prompt + body)."""
        return self.prompt + self.reference


@dataclass
class MethodResult:
    """The outcome of one method on one sample.

    Attributes:
        score: the mean of :attr:`scores`, or ``None`` when the status is not ``ok``.
        scores: one score per repeat (``--n-samples``).
        status: one of :data:`STATUSES`.
        error: a one-line reason when the status is not ``ok``.
        subcodes: sub-codes of the generation (DSA-CQE only).
        reference_subcodes: sub-codes of the reference, summed over several (DSA-CQE only);
            ``None`` when a reference's analysis failed (the row's own, or one remembered from an
            earlier sample of the task), whichever of several it was.
        parse_failures: sub-code analyses that stayed invalid after the repair turn
            (the sample is still scored; those sub-codes have no description).
        usage: LLM use for this sample and method.
        trace: the per-sample trace (sub-code tree, prompts, responses, retrievals, updates).
        read: how the LLM methods' score was read (expected or sampled, the distribution);
            ``None`` for methods without an LLM.
    """

    score: float | None = None
    scores: list[float] = field(default_factory=list)
    status: str = "ok"
    error: str | None = None
    subcodes: int | None = None
    reference_subcodes: int | None = None
    parse_failures: int = 0
    usage: Usage = field(default_factory=Usage)
    trace: dict[str, Any] = field(default_factory=dict)
    read: CombinedRead | None = None

    def finish(self, scores: list[float]) -> MethodResult:
        """Set :attr:`scores` and their mean; return self."""
        self.scores = list(scores)
        self.score = statistics.fmean(scores) if scores else None
        return self

    def finish_reads(self, reads: list[ScoreRead], score_mode: str) -> MethodResult:
        """Score from the reads of the repeats (:func:`~workbench.score.reading.combine_reads`); return self.

        Raises:
            LLMParseError: some repeats have no distribution and others no written value, so
                neither reading covers them all.
        """
        try:
            self.read = combine_reads(reads, score_mode)
        except ValueError as error:
            raise LLMParseError(f"the answers cannot all be read one way: {error}") from error
        return self.finish(self.read.scores)

    @property
    def spread(self) -> float | None:
        """Sample standard deviation of the repeats (0 for one repeat; ``None`` when unscored)."""
        if not self.scores:
            return None
        return statistics.stdev(self.scores) if len(self.scores) > 1 else 0.0


@dataclass
class ScoringContext:
    """Everything a method needs besides the sample; shared by all worker threads.

    Attributes:
        language: the language plugin of the programs.
        llm: the LLM client (``None`` when only non-LLM methods run).
        n_samples: repeats of the final scoring call, averaged (``--n-samples``).
        score_mode: ``expected`` or ``sampled`` (:mod:`workbench.score.reading`).
        max_subcodes: the cap on sub-codes per program.
        k_nearest: nearest storage records retrieved per sub-code beyond exact name hits.
        storage_factory: returns the Semantic Storage (built on first use).
        run_key: isolates this run's storage scopes from other runs in the same store.
        keep_storage: keep each program's Chroma collection after scoring.
        analysis_max_tokens: DSA-CQE: the bound on each sub-code analysis answer, in tokens
            (:meth:`~workbench.llm.client.LLMClient.ask`'s ``answer_bound``), ``None`` for none.
    """

    language: LanguagePlugin
    llm: LLMClient | None = None
    n_samples: int = 1
    score_mode: str = DEFAULT_SCORE_MODE
    max_subcodes: int = 16
    k_nearest: int = 3
    storage_factory: Callable[[], Any] | None = None
    run_key: str = "run"
    keep_storage: bool = False
    analysis_max_tokens: int | None = None
    _storage: Any = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def top_logprobs(self) -> int | None:
        """What a final scoring call asks for: :data:`~workbench.score.reading.TOP_LOGPROBS`
        alternatives in ``expected`` mode, nothing in ``sampled`` mode."""
        return TOP_LOGPROBS if self.score_mode == "expected" else None

    @property
    def storage(self) -> Any:
        """The :class:`~workbench.score.storage.SemanticStorage` (opened once)."""
        with self._lock:
            if self._storage is None:
                if self.storage_factory is None:
                    raise RuntimeError("this method needs a Semantic Storage, but none was configured")
                self._storage = self.storage_factory()
            return self._storage


class ScoringMethod:
    """A scoring method. Subclasses set :attr:`name`, :attr:`scale`, :attr:`uses_llm`,
    and implement :meth:`score`; LLM methods also set :attr:`prompt_version`, and
    :attr:`variant` when options change what they ask."""

    name: ClassVar[str] = ""
    #: the declared score range, e.g. ``(0, 4)`` (an instance may set its own: a p-correct
    #: final step gives DSA-CQE a probability in [0, 1])
    scale: tuple[float, float] = (0.0, 1.0)
    uses_llm: ClassVar[bool] = True
    prompt_version: str = ""
    #: the options that shape the method's prompts (``"final-step=p-correct"``), ``""`` for none
    variant: str = ""
    #: the method compares with the reference (a sample without one is ``skipped``)
    needs_reference: bool = True
    #: the method cuts programs into sub-codes with the language plugin's ``subcode_node_types``
    #: (a plugin without the ``decompose`` capability is refused before any sample)
    needs_decomposition: ClassVar[bool] = False
    #: the method keeps its sub-codes in the Semantic Storage (:attr:`ScoringContext.storage`), so it
    #: needs the embedding model (``--embedding-model``; checked before any data is loaded)
    uses_embeddings: ClassVar[bool] = False
    #: the method scores against every reference of a sample (:attr:`Sample.all_references`) and
    #: keeps the best reference's score (``chrf``)
    uses_all_references: ClassVar[bool] = False
    #: the judge is shown every reference of a sample in one prompt, as numbered alternatives any of
    #: which is correct (:attr:`several_references_version`); a sample with one reference gets the
    #: one-reference prompt, unchanged. A method with neither this nor :attr:`uses_all_references`
    #: compares with one reference and refuses samples with several (:func:`check_several_references`).
    shows_all_references: ClassVar[bool] = False
    #: the prompt version of the several-references form (:attr:`shows_all_references`), ``""`` when
    #: the method has none or its templates cannot be read (:attr:`several_references_problem`)
    several_references_version: str = ""
    #: why the several-references form cannot be used (a template of ``--prompts-dir`` is missing),
    #: ``None`` when it can
    several_references_problem: str | None = None

    def references_shown(self, sample: Sample) -> tuple[str, ...]:
        """The references the method compares ``sample``'s generation with: none when it reads no
        reference (``p-correct --no-reference``), every non-blank reference when it uses them all
        (:attr:`uses_all_references`, :attr:`shows_all_references`), else the first; ``()`` when the
        sample has no reference (the row is ``skipped``). Its length is the rows' ``references_shown``."""
        if not self.needs_reference:
            return ()
        if self.uses_all_references or self.shows_all_references:
            return tuple(text for text in sample.all_references if text.strip())
        return (sample.reference,) if sample.reference.strip() else ()

    def prompt_version_for(self, sample: Sample) -> str:
        """The prompt version of the form ``sample`` is shown: :attr:`several_references_version` when
        the judge is shown several references, else :attr:`prompt_version` (the one-reference prompt,
        whose version, messages and cache keys are those of a run before several references existed)."""
        if self.shows_all_references and len(self.references_shown(sample)) > 1:
            return self.several_references_version
        return self.prompt_version

    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        """Score one sample; LLM failures are returned as a status, never raised."""
        raise NotImplementedError


def score_by_repeated_answers(
    messages: list[dict[str, str]],
    schema: Mapping[str, Any],
    *,
    context: ScoringContext,
    prompt_version: str,
    step: str,
    result: MethodResult,
    log: list[Exchange],
    trace_key: str,
    trace_value: Callable[[dict[str, Any]], Any] = lambda answer: answer,
) -> MethodResult:
    """The final comparison/score step of DSA-CQE (Xu et al., ISWC 2024 posters, Sec. 2) and
    its simplified form: one structured call repeated ``context.n_samples`` times, each
    answer's ``score`` read and the values averaged. The scale is our declared one,
    ICE-Score's 0-4 functional correctness (Zhuo, EACL Findings 2024, Sec. 3), so the LLM
    methods share one scale. In ``expected`` mode the value of an answer is the expectation
    over the labels 0-4 at the token of its ``score`` field (G-Eval, Liu et al. 2023, Sec. 2.3;
    :mod:`workbench.score.reading`), the written score when no log-probabilities came back.

    Args:
        messages: the rendered comparison prompt (the same for every repeat; repeats are
            distinct cache entries and seeds).
        schema: the answer's JSON schema; it must have an integer ``score``.
        context: the run's context (its ``llm``, ``n_samples`` and ``score_mode``).
        prompt_version / step: for the cache key and the trace.
        result: receives the usage, ``trace[trace_key]`` (one ``trace_value(answer)`` per
            answer, appended as they arrive, so a failing repeat keeps the earlier ones),
            ``trace["reads"]`` and, when every repeat answered, the scores, their mean and
            the read (:attr:`MethodResult.read`).
        log: the exchanges of the sample's trace.

    Returns:
        ``result``.

    Raises:
        LLMError: a repeat failed (call, parse or budget); ``result`` is then unscored.
    """
    def one_repeat(repeat: int) -> tuple[dict[str, Any], ScoreRead]:
        answer, completion = context.llm.ask_json(
            messages, schema, prompt_version=prompt_version, step=step, repeat=repeat, usage=result.usage, log=log,
            top_logprobs=context.top_logprobs,
        )
        offset = json_value_offset(joined_text(completion.tokens), "score", schema) if completion.tokens else None
        return answer, read_at(completion.tokens, offset, sampled=float(answer["score"]), labels=SCORE_LABELS)

    return collect_repeated_reads(result, context, one_repeat, trace_key=trace_key, trace_value=trace_value)


def collect_repeated_reads(
    result: MethodResult,
    context: ScoringContext,
    one_repeat: Callable[[int], tuple[dict[str, Any], ScoreRead]],
    *,
    trace_key: str,
    trace_value: Callable[[dict[str, Any]], Any] = lambda answer: answer,
) -> MethodResult:
    """Run ``one_repeat(repeat)`` for each of ``context.n_samples`` repeats and score ``result``
    from the reads (:meth:`MethodResult.finish_reads`).

    Each repeat's structured answer goes to ``result.trace[trace_key]`` (as ``trace_value(answer)``)
    and its read to ``result.trace["reads"]`` as it arrives, so a failing repeat keeps the earlier ones.

    Returns:
        ``result``.

    Raises:
        LLMError: from ``one_repeat`` or :meth:`MethodResult.finish_reads`; ``result`` is then unscored.
    """
    kept = result.trace.setdefault(trace_key, [])
    traced_reads = result.trace.setdefault("reads", [])
    reads = []
    for repeat in range(context.n_samples):
        answer, read = one_repeat(repeat)
        kept.append(trace_value(answer))
        reads.append(read)
        traced_reads.append(read.as_dict())
    return result.finish_reads(reads, context.score_mode)


def exchanges_as_dicts(log: list[Exchange]) -> list[dict[str, Any]]:
    """Return the exchanges of a trace as JSON-ready dicts."""
    return [exchange.__dict__.copy() for exchange in log]
