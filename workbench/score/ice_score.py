"""ICE-Score, reference-based (the baseline DSA-CQE compares itself with).

Source: Zhuo, "ICE-Score: Instructing Large Language Models to Evaluate Code", EACL
Findings 2024, Sec. 3: the LLM reads the problem, the reference code and the code
snippet and rates functional correctness 0-4 ("scores ONLY"); the "w/ ref., no steps"
variant that is ``gpt35_nswr`` in the shipped data. The answer is free text, as in the
original; the score is the first integer 0-4 in it (:func:`parse_ice_score`). An answer
without one gets one repair turn, then a ``parse_error``.
"""

from __future__ import annotations

import re

from workbench.llm.client import Exchange, LLMError, LLMParseError
from workbench.score.base import MethodResult, Sample, ScoringContext, ScoringMethod, exchanges_as_dicts
from workbench.score.prompts import load_template, version_of
from workbench.score.schemas import SCORE_MAX, SCORE_MIN

_SCORE = re.compile(r"(?<![\d.])([0-4])(?:\.0+)?(?![\d.]*\d)")
#: a scale written out ("(0-4)", "0 to 4", "0–4"): its ends are not scores; a small model
#: often echoes the criterion with its scale, and the "0" was once read as its score
_RANGE = re.compile(r"(?<![\d.])\d+(?:\.\d+)?\s*(?:-|\u2013|to)\s*\d+(?:\.\d+)?(?![\d.])", re.IGNORECASE)


def parse_ice_score(text: str) -> int | None:
    """Return the first standalone integer 0-4 in an ICE-Score answer, or ``None``.

    ``"3"`` -> 3; ``"Functional Correctness: 4"`` -> 4; ``"score 2.0"`` -> 2;
    ``"Functional Correctness (0-4): 3"`` -> 3 (a written-out scale is skipped);
    ``"10"``, ``"4.5"`` or ``"Functional Correctness (0-4)"`` -> ``None`` (no score on the
    scale: the caller's repair turn asks again).
    """
    match = _SCORE.search(_RANGE.sub(" ", text))
    return int(match.group(1)) if match else None


class IceScore(ScoringMethod):
    """ICE-Score with reference. Args: ``prompts_dir``, a folder with ``ice_score.txt``."""

    name = "ice-score"
    scale = (float(SCORE_MIN), float(SCORE_MAX))

    def __init__(self, prompts_dir: str | None = None):
        self.template = load_template("ice_score.txt", prompts_dir)
        self.prompt_version = version_of(self.template)

    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        result = MethodResult()
        log: list[Exchange] = []
        messages = self.template.render(problem=sample.prompt, reference=sample.reference, generation=sample.generation)
        scores = []
        try:
            for repeat in range(context.n_samples):
                scores.append(float(self._ask(messages, repeat, context, result, log)))
            result.finish(scores)
        except LLMError as error:
            result.status, result.error = error.status, str(error)
        result.trace["exchanges"] = exchanges_as_dicts(log)
        return result

    def _ask(self, messages, repeat, context: ScoringContext, result: MethodResult, log) -> int:
        llm = context.llm
        answer = llm.complete(
            messages, prompt_version=self.prompt_version, step="ice-score", repeat=repeat, usage=result.usage, log=log
        )
        score = parse_ice_score(answer)
        if score is not None:
            return score
        repair = [
            *messages,
            {"role": "assistant", "content": answer},
            {"role": "user", "content": "Answer with the score only: one integer from 0 to 4."},
        ]
        answer = llm.complete(
            repair, prompt_version=self.prompt_version, step="ice-score:repair", repeat=repeat, usage=result.usage, log=log
        )
        score = parse_ice_score(answer)
        if score is None:
            raise LLMParseError(f"ice-score: no score 0-4 in the answer after one repair turn: {answer[:120]!r}")
        return score
