"""DSA-CQE simplified: the poster's single-step analysis, without decomposition.

Source: Xu et al., ISWC 2024 posters (CEUR-WS Vol-3828 paper 7), Sec. 2-3: the ablation
in which the LLM analyses the whole generation and reference at once. One call per
repeat (``prompts/dsa_cqe_simplified.txt``) returns both descriptions, the differences
and a 0-4 score (:data:`~workbench.score.schemas.SIMPLIFIED_SCHEMA`).

With ``final_step="p-correct"`` the call returns the descriptions and differences only
(``prompts/dsa_cqe_simplified_verdict.txt``) and a second turn asks the Yes/No question of
:mod:`workbench.score.verdict`; the score is then P(Yes), in [0, 1].

A sample with several references (a list-valued reference column) is shown them all in the one call,
as numbered alternatives any of which is correct, and the differences asked for are those from the
reference closest to the candidate (``prompts/dsa_cqe_simplified_references.txt``,
``dsa_cqe_simplified_verdict_references.txt``); a sample with one reference is asked exactly as before.
"""

from __future__ import annotations

from workbench.llm.client import Exchange, LLMError
from workbench.score.base import (
    MethodResult,
    Sample,
    ScoringContext,
    ScoringMethod,
    exchanges_as_dicts,
    score_by_repeated_answers,
)
from workbench.score.prompts import load_template, load_templates_or_problem, version_of
from workbench.score.schemas import SCORE_MAX, SCORE_MIN, SEMANTICS_SCHEMA, SIMPLIFIED_SCHEMA
from workbench.score.verdict import (
    DEFAULT_FINAL_STEP,
    FINAL_STEPS,
    SEVERAL_REFERENCES_QUESTION_FILE,
    load_question,
    question_text,
    verdict_after_comparison,
)


class DsaCqeSimplified(ScoringMethod):
    """Single-step DSA-CQE.

    Args:
        prompts_dir: a folder with ``dsa_cqe_simplified.txt`` (and, for the p-correct final
            step, ``dsa_cqe_simplified_verdict.txt`` and ``p_correct_question.txt``); for a sample
            with several references (a list-valued reference column), their several-references
            forms ``dsa_cqe_simplified_references.txt`` (p-correct final step:
            ``dsa_cqe_simplified_verdict_references.txt`` and ``p_correct_question_references.txt``),
            needed only when such a sample is scored (default: the shipped templates).
        final_step: ``"score"`` (a 0-4 score in the answer) or ``"p-correct"`` (P(Yes) read
            after the comparison).

    Raises:
        ValueError: an unknown ``final_step``.
    """

    name = "dsa-cqe-simplified"
    shows_all_references = True

    def __init__(self, prompts_dir: str | None = None, *, final_step: str = DEFAULT_FINAL_STEP):
        if final_step not in FINAL_STEPS:
            raise ValueError(f"final_step must be one of {', '.join(FINAL_STEPS)}, not {final_step!r}")
        self.final_step = final_step
        self.variant = f"final-step={final_step}"
        if final_step == "score":
            self.template = load_template("dsa_cqe_simplified.txt", prompts_dir)
            self.prompt_version = version_of(self.template)
            self.scale = (float(SCORE_MIN), float(SCORE_MAX))
            self.question = ""  # no verdict turn
            several_files: tuple[str, ...] = ("dsa_cqe_simplified_references.txt",)
        else:
            self.template = load_template("dsa_cqe_simplified_verdict.txt", prompts_dir)
            question = load_question(prompts_dir)
            self.question = question_text(question, reference=True)
            self.prompt_version = version_of(self.template, question)
            self.scale = (0.0, 1.0)
            several_files = ("dsa_cqe_simplified_verdict_references.txt", SEVERAL_REFERENCES_QUESTION_FILE)
        # several references: listed as numbered alternatives, compared with the closest
        several, self.several_references_problem = load_templates_or_problem(several_files, prompts_dir)
        self.several_template = several[0] if several else None
        self.several_question = question_text(several[1], reference=True) if len(several) > 1 else ""
        self.several_references_version = version_of(*several) if several else ""

    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        result = MethodResult()
        log: list[Exchange] = []
        references = self.references_shown(sample)
        common = {"language": context.language.name, "problem": sample.prompt, "generation": sample.generation}
        if len(references) > 1:  # every reference, as numbered alternatives
            messages = self.several_template.render(**common, references=list(references))
            question = self.several_question
        else:
            messages = self.template.render(**common, reference=sample.reference)
            question = self.question
        version = self.prompt_version_for(sample)
        try:
            if self.final_step == "score":
                score_by_repeated_answers(
                    messages, SIMPLIFIED_SCHEMA, context=context, prompt_version=version, step="simplified",
                    result=result, log=log, trace_key="answers",
                )
            else:
                verdict_after_comparison(
                    messages, SEMANTICS_SCHEMA, question=question, context=context,
                    prompt_version=version, step="simplified", result=result, log=log, trace_key="answers",
                )
        except LLMError as error:
            result.status, result.error = error.status, str(error)
        result.trace["exchanges"] = exchanges_as_dicts(log)
        return result
