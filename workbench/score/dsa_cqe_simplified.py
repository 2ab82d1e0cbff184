"""DSA-CQE simplified: the poster's single-step analysis, without decomposition.

Source: Xu et al., ISWC 2024 posters (CEUR-WS Vol-3828 paper 7), Sec. 2-3: the ablation
in which the LLM analyses the whole generation and reference at once. One call per
repeat (``prompts/dsa_cqe_simplified.txt``) returns both descriptions, the differences
and a 0-4 score (:data:`~workbench.score.schemas.SIMPLIFIED_SCHEMA`).
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
from workbench.score.prompts import load_template, version_of
from workbench.score.schemas import SCORE_MAX, SCORE_MIN, SIMPLIFIED_SCHEMA


class DsaCqeSimplified(ScoringMethod):
    """Single-step DSA-CQE. Args: ``prompts_dir``, a folder with ``dsa_cqe_simplified.txt``."""

    name = "dsa-cqe-simplified"
    scale = (float(SCORE_MIN), float(SCORE_MAX))

    def __init__(self, prompts_dir: str | None = None):
        self.template = load_template("dsa_cqe_simplified.txt", prompts_dir)
        self.prompt_version = version_of(self.template)

    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        result = MethodResult()
        log: list[Exchange] = []
        messages = self.template.render(
            language=context.language.name,
            problem=sample.prompt,
            reference=sample.reference,
            generation=sample.generation,
        )
        try:
            score_by_repeated_answers(
                messages, SIMPLIFIED_SCHEMA, context=context, prompt_version=self.prompt_version, step="simplified",
                result=result, log=log, trace_key="answers",
            )
        except LLMError as error:
            result.status, result.error = error.status, str(error)
        result.trace["exchanges"] = exchanges_as_dicts(log)
        return result
