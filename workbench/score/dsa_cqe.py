"""DSA-CQE: Decompositional Semantic Analysis for Code Quality Evaluation.

Source: Xu, Zhang, Zhang, Han, "Decompositional Semantic Analysis for LLM-based Code
Quality Evaluation", ISWC 2024 posters (CEUR-WS Vol-3828, paper 7), Sec. 2; extended as
HuCoSC (arXiv 2412.00314). The poster reports Kendall .553 / Pearson .594 against
execution on HumanEval with GPT-3.5-turbo at temperature 0.2.

Per program (generation, and the reference once per task):

1. **Decomposition** (:func:`workbench.score.decompose.decompose`): sub-codes of the
   eight kinds, bounded, in post-order (inner before outer, siblings in source order).
2. **Semantic Storage** (:mod:`workbench.score.storage`): before each sub-code, the
   stored descriptions of the names it defines and uses (exact) plus the nearest records
   (embedding) are retrieved; after it, the LLM's descriptions of the names it touched are
   written back. One isolated Chroma collection per program.
3. **Analysis**: one LLM call per sub-code (``prompts/dsa_cqe_analyse.txt``), answering
   :data:`~workbench.score.schemas.ANALYSIS_SCHEMA`.

Then **comparison and score** (``prompts/dsa_cqe_compare.txt``): the two semantic
summaries (and codes) go to the LLM, which lists the differences and scores functional
correctness on ICE-Score's 0-4 scale; ``n_samples`` repeats are averaged. With
``final_step="p-correct"`` the comparison lists the differences only
(``prompts/dsa_cqe_compare_verdict.txt``) and a second turn asks the Yes/No question of
:mod:`workbench.score.verdict`: the score is P(Yes), in [0, 1].

Several references (a list-valued reference column, e.g. CoNaLa's snippets; the poster has one):
each is decomposed and analysed as one reference is (once per task and reference text, with the
calls and cache keys of a run in which it is the only one), and the comparison
(``prompts/dsa_cqe_compare_references.txt``, ``dsa_cqe_compare_verdict_references.txt``) lists every
reference with its part-by-part semantics as numbered alternatives, asking for the differences from
the closest; one call, as for one reference. A sample with one reference is compared exactly as before.
``reference_subcodes`` is then the sum over the references; a row whose reference analysis failed
(for this sample or, remembered, for an earlier one of the task) records ``None``, whichever
reference failed, never the sum of those before it.

Our choices where the poster is silent: post-order analysis, so a loop or function is
analysed with its inner parts already described; only names the sub-code really defines
or uses may be updated (an answer naming other symbols is recorded but not stored); a
sub-code whose analysis stays invalid after the repair turn is recorded as a parse
failure and the program is still scored; a program with no sub-code is analysed whole.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any

from workbench.llm.client import Exchange, LLMError, LLMParseError, Usage
from workbench.score.base import (
    MethodResult,
    Sample,
    ScoringContext,
    ScoringMethod,
    exchanges_as_dicts,
    score_by_repeated_answers,
)
from workbench.score.decompose import Decomposition, decompose
from workbench.score.prompts import load_template, load_templates_or_problem, version_of
from workbench.score.schemas import ANALYSIS_SCHEMA, COMPARE_SCHEMA, DIFFERENCES_SCHEMA, SCORE_MAX, SCORE_MIN
from workbench.score.verdict import (
    DEFAULT_FINAL_STEP,
    FINAL_STEPS,
    SEVERAL_REFERENCES_QUESTION_FILE,
    load_question,
    question_text,
    verdict_after_comparison,
)


@dataclass(frozen=True)
class _Unit:
    """What one analysis call is about: a sub-code, or the whole program when there is none."""

    index: int
    kind: str
    text: str
    start_line: int
    end_line: int
    names: tuple[str, ...]


@dataclass
class ProgramSemantics:
    """The analysed semantics of one program.

    Attributes:
        decomposition: the sub-codes.
        units: per analysed unit: its sub-code view, ``description`` (``None`` if its
            analysis failed), ``retrievals``, ``updates`` and ``ignored_symbols``.
        symbols: the final symbol descriptions in the storage (name -> text).
        parse_failures: units whose analysis stayed invalid.
        exchanges: the LLM calls made for it.
        usage: the LLM use of the analysis.
    """

    decomposition: Decomposition
    units: list[dict[str, Any]]
    symbols: dict[str, str]
    parse_failures: int
    exchanges: list[Exchange] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)

    def summary(self) -> str:
        """The text the comparison step sees: one line per unit, then the symbols."""
        lines = []
        for unit in self.units:
            lines_span = f"lines {unit['lines'][0]}-{unit['lines'][1]}"
            description = unit["description"] or "(not analysed)"
            lines.append(f"- {unit['kind']} ({lines_span}): {description}")
        if self.symbols:
            lines.append("Names: " + "; ".join(f"{name}: {text}" for name, text in self.symbols.items()))
        return "\n".join(lines) or "- (nothing to analyse)"

    def trace(self) -> dict[str, Any]:
        return {
            "decomposition": self.decomposition.as_dict(),
            "units": self.units,
            "symbols": self.symbols,
            "parse_failures": self.parse_failures,
            "exchanges": exchanges_as_dicts(self.exchanges),
        }


class DsaCqe(ScoringMethod):
    """The full DSA-CQE method (decomposition, Semantic Storage, analysis, comparison).

    Args:
        prompts_dir: a folder with ``dsa_cqe_analyse.txt`` and ``dsa_cqe_compare.txt``
            (and, for the p-correct final step, ``dsa_cqe_compare_verdict.txt`` and
            ``p_correct_question.txt``); for a sample with several references (a list-valued
            reference column), the comparison's several-references form
            ``dsa_cqe_compare_references.txt`` (p-correct final step:
            ``dsa_cqe_compare_verdict_references.txt`` and ``p_correct_question_references.txt``),
            needed only when such a sample is scored (default: the shipped templates).
        final_step: ``"score"`` (the comparison gives a 0-4 score) or ``"p-correct"``
            (P(Yes) read after the comparison).

    The reference of a task is analysed once per run (per task and reference text);
    samples of the same task wait for it rather than analyse it again.

    Raises:
        ValueError: an unknown ``final_step``.
    """

    name = "dsa-cqe"
    needs_decomposition = True
    uses_embeddings = True
    shows_all_references = True

    def __init__(self, prompts_dir: str | None = None, *, final_step: str = DEFAULT_FINAL_STEP):
        if final_step not in FINAL_STEPS:
            raise ValueError(f"final_step must be one of {', '.join(FINAL_STEPS)}, not {final_step!r}")
        self.final_step = final_step
        self.variant = f"final-step={final_step}"
        self.analyse_template = load_template("dsa_cqe_analyse.txt", prompts_dir)
        self.compare_template = load_template("dsa_cqe_compare.txt", prompts_dir)
        # the analysis calls keep the version they had before final steps existed, so both final
        # steps (and caches filled earlier) share the analyses
        self.analysis_version = version_of(self.analyse_template, self.compare_template)
        if final_step == "score":
            self.prompt_version = self.analysis_version
            self.scale = (float(SCORE_MIN), float(SCORE_MAX))
            self.question = ""  # no verdict turn
        else:
            self.compare_template = load_template("dsa_cqe_compare_verdict.txt", prompts_dir)
            question = load_question(prompts_dir)
            self.question = question_text(question, reference=True)
            self.prompt_version = version_of(self.analyse_template, self.compare_template, question)
            self.scale = (0.0, 1.0)
        # several references: each analysed as one is, compared in one call as numbered alternatives
        several_files = (("dsa_cqe_compare_references.txt",) if final_step == "score"
                         else ("dsa_cqe_compare_verdict_references.txt", SEVERAL_REFERENCES_QUESTION_FILE))
        several, self.several_references_problem = load_templates_or_problem(several_files, prompts_dir)
        self.several_compare_template = several[0] if several else None
        self.several_question = question_text(several[1], reference=True) if len(several) > 1 else ""
        self.several_references_version = version_of(self.analyse_template, *several) if several else ""
        self._references: dict[tuple[str, str], ProgramSemantics | LLMError] = {}
        self._reference_locks: dict[tuple[str, str], threading.Lock] = {}
        self._locks_lock = threading.Lock()

    # -- the method ------------------------------------------------------------------------
    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        result = MethodResult()
        log: list[Exchange] = []
        shown = self.references_shown(sample)
        several = len(shown) > 1
        texts = shown if several else (sample.reference,)
        try:
            analysed: list[ProgramSemantics] = []

            def count_subcodes(semantics: ProgramSemantics) -> None:
                """Summed over several references; set back to ``None`` when a reference's analysis fails (below)."""
                result.reference_subcodes = (result.reference_subcodes or 0) + len(semantics.decomposition.subcodes)

            def keep(entry: dict[str, Any]) -> None:
                """A reference's trace: ``trace["references"][i]`` with several, else ``trace["reference"]`` as before."""
                if several:
                    result.trace.setdefault("references", []).append(entry)
                else:
                    result.trace["reference"] = entry

            for text in texts:
                try:
                    reference, fresh = self.reference_semantics(sample, context, text)
                except LLMError as error:
                    # this sample's own analysis of the reference failed: its calls and exchanges are
                    # this row's (a remembered failure of an earlier sample carries none). The row records
                    # no reference_subcodes, whichever reference failed and wherever: the sum of the
                    # references before it would read as the count of all of them (the trace keeps the
                    # decompositions made)
                    result.reference_subcodes = None
                    partial = getattr(error, "semantics", None)
                    if partial is not None:
                        result.usage.add(partial.usage)
                        result.parse_failures += partial.parse_failures
                        keep({**partial.trace(), "analysed_for_this_sample": True})
                    raise
                if fresh:  # this sample paid for the reference analysis
                    result.usage.add(reference.usage)
                    result.parse_failures += reference.parse_failures
                count_subcodes(reference)
                keep({**reference.trace(), "analysed_for_this_sample": fresh})
                analysed.append(reference)
            try:
                generation = self.analyse_program(
                    sample.generation_program,
                    role="generation",
                    scope_key=_scope_key(context.run_key, sample.task_id, str(sample.sample_id), "generation"),
                    context=context,
                    usage=result.usage,
                )
            except LLMError as error:
                partial = getattr(error, "semantics", None)
                if partial is not None:  # its calls are already in result.usage
                    result.subcodes = len(partial.decomposition.subcodes)
                    result.parse_failures += partial.parse_failures
                    result.trace["generation"] = partial.trace()
                raise
            result.subcodes = len(generation.decomposition.subcodes)
            result.parse_failures += generation.parse_failures
            result.trace["generation"] = generation.trace()
            common = {"language": context.language.name, "problem": sample.prompt, "generation": sample.generation,
                      "generation_semantics": generation.summary()}
            if several:
                messages = self.several_compare_template.render(
                    **common, references=[{"code": text, "semantics": semantics.summary()}
                                          for text, semantics in zip(texts, analysed)])
                question = self.several_question
            else:
                messages = self.compare_template.render(**common, reference=sample.reference,
                                                        reference_semantics=analysed[0].summary())
                question = self.question
            version = self.prompt_version_for(sample)
            if self.final_step == "score":
                score_by_repeated_answers(
                    messages, COMPARE_SCHEMA, context=context, prompt_version=version, step="compare",
                    result=result, log=log, trace_key="differences", trace_value=lambda answer: answer["differences"],
                )
            else:
                verdict_after_comparison(
                    messages, DIFFERENCES_SCHEMA, question=question, context=context,
                    prompt_version=version, step="compare", result=result, log=log,
                    trace_key="differences", trace_value=lambda answer: answer["differences"],
                )
        except LLMError as error:
            result.status, result.error = error.status, str(error)
        result.trace["compare"] = exchanges_as_dicts(log)
        return result

    # -- the reference, once per task -----------------------------------------------------------
    def reference_semantics(self, sample: Sample, context: ScoringContext,
                            reference: str | None = None) -> tuple[ProgramSemantics, bool]:
        """Return the semantics of a reference of ``sample`` and whether this call computed them.

        Args:
            reference: one of the sample's references (a body completing its prompt, as
                :attr:`Sample.reference`); default :attr:`Sample.reference`.

        Raises:
            LLMError: the reference analysis failed (remembered: later samples of the task
                get the same error without new calls).
        """
        program = sample.reference_program if reference is None else sample.prompt + reference
        digest = hashlib.sha256(program.encode("utf-8")).hexdigest()[:16]
        key = (sample.task_id, digest)
        with self._locks_lock:
            lock = self._reference_locks.setdefault(key, threading.Lock())
        with lock:
            known = self._references.get(key)
            if isinstance(known, LLMError):
                raise type(known)(f"the reference analysis of {sample.task_id} failed earlier: {known}")
            if known is not None:
                return known, False
            usage = Usage()
            try:
                semantics = self.analyse_program(
                    program,
                    role="reference",
                    scope_key=_scope_key(context.run_key, sample.task_id, "reference", digest),
                    context=context,
                    usage=usage,
                )
            except LLMError as error:
                partial = getattr(error, "semantics", None)
                if partial is not None:
                    partial.usage = usage
                self._references[key] = error
                raise
            semantics.usage = usage
            self._references[key] = semantics
            return semantics, True

    # -- steps 1-3 for one program ---------------------------------------------------------------
    def analyse_program(
        self, program: str, *, role: str, scope_key: str, context: ScoringContext, usage: Usage
    ) -> ProgramSemantics:
        """Decompose ``program`` and analyse its sub-codes with the Semantic Storage.

        Args:
            program: the whole program.
            role: ``"generation"`` or ``"reference"`` (for trace step names).
            scope_key: the storage scope (one isolated collection).
            context: the run's context.
            usage: counters to add this analysis's LLM use to.

        Raises:
            LLMCallError / BudgetExceededError: a call failed (parse failures are recorded);
                the error's ``semantics`` attribute holds the :class:`ProgramSemantics` up to
                the failure (decomposition, units analysed, exchanges), for the trace.
        """
        decomposition = decompose(program, context.language, context.max_subcodes)
        units = _units(decomposition)
        scope = context.storage.scope(scope_key)
        log: list[Exchange] = []
        analysed: list[dict[str, Any]] = []
        parse_failures = 0
        try:
            for unit in units:
                retrievals = scope.retrieve(list(unit.names), unit.text, context.k_nearest)
                messages = self.analyse_template.render(
                    language=context.language.name,
                    kind=unit.kind,
                    start_line=unit.start_line,
                    end_line=unit.end_line,
                    code=unit.text,
                    problem="",
                    known=[{"name": r.key, "description": r.description} for r in retrievals if r.how == "exact"],
                    related=[{"key": r.key, "description": r.description} for r in retrievals if r.how == "nearest"],
                )
                record: dict[str, Any] = {
                    "index": unit.index,
                    "kind": unit.kind,
                    "lines": [unit.start_line, unit.end_line],
                    "names": list(unit.names),
                    "retrievals": [r.as_dict() for r in retrievals],
                    "description": None,
                    "updates": [],
                    "ignored_symbols": [],
                }
                analysed.append(record)
                asked = len(log)
                try:
                    answer = context.llm.complete_json(
                        messages,
                        ANALYSIS_SCHEMA,
                        prompt_version=self.analysis_version,
                        step=f"analyse:{role}:{unit.index}",
                        usage=usage,
                        log=log,
                        answer_bound=context.analysis_max_tokens,
                    )
                except LLMParseError as error:
                    parse_failures += 1
                    record["error"] = str(error)
                    continue
                finally:
                    # an answer cut at its token limit is said on its unit, not only in the exchange
                    record["truncated"] = any(exchange.truncated for exchange in log[asked:])
                record["description"] = answer["description"]
                allowed = set(unit.names)
                accepted = [(s["name"], s["description"]) for s in answer["symbols"] if s["name"] in allowed]
                record["ignored_symbols"] = [s["name"] for s in answer["symbols"] if s["name"] not in allowed]
                updates = scope.record_analysis(unit.index, unit.kind, unit.text, answer["description"], accepted)
                record["updates"] = [update.as_dict() for update in updates]
            symbols = scope.symbols()
        except LLMError as error:
            error.semantics = ProgramSemantics(decomposition, analysed, {}, parse_failures, log)
            raise
        finally:
            if not context.keep_storage:
                scope.drop()
        return ProgramSemantics(decomposition, analysed, symbols, parse_failures, log)


def _scope_key(*parts: str) -> str:
    """One Semantic Storage scope per program. A JSON list, not a "/"-joined path: ids may hold
    "/" (``HumanEval/0``), and task "a" sample "b/c" must not meet task "a/b" sample "c"."""
    return json.dumps(parts, ensure_ascii=False)


def _units(decomposition: Decomposition) -> list[_Unit]:
    if decomposition.subcodes:
        return [
            _Unit(s.index, s.kind.value, s.text, s.start_line, s.end_line, tuple(s.names))
            for s in decomposition.subcodes
        ]
    program = decomposition.program
    return [_Unit(0, "Program", program, 1, max(1, program.count("\n") + 1), ())]
