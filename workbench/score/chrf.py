"""chrF between generation and reference, a match-based baseline with no LLM.

Source: Popović, "chrF: character n-gram F-score for automatic MT evaluation", WMT 2015;
computed with ``sacrebleu.sentence_chrf`` (character n-grams up to 6, beta 2, as in
ICE-Score's ``chrf`` column). Reported on 0-1 (sacrebleu's 0-100 divided by 100).
"""

from __future__ import annotations

from workbench.score.base import MethodResult, Sample, ScoringContext, ScoringMethod


class Chrf(ScoringMethod):
    """Sentence-level chrF of the generation against the reference, 0-1."""

    name = "chrf"
    scale = (0.0, 1.0)
    uses_llm = False
    prompt_version = ""

    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        import sacrebleu

        value = sacrebleu.sentence_chrf(sample.generation, [sample.reference]).score / 100.0
        return MethodResult().finish([value])
