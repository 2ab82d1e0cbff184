"""chrF between generation and reference, a match-based baseline with no LLM.

Source: Popović, "chrF: character n-gram F-score for automatic MT evaluation", WMT 2015;
computed with ``sacrebleu.sentence_chrf`` (character n-grams up to 6, beta 2, as in
ICE-Score's ``chrf`` column). Reported on 0-1 (sacrebleu's 0-100 divided by 100).

Several references (a reference column of lists, :attr:`Sample.all_references`): sacrebleu's
multi-reference chrF, which takes, for the sentence, the match statistics of the reference with the
best chrF (``CHRF._compute_segment_statistics`` of sacrebleu 2.x), so the score is the highest
single-reference chrF among the references. Evtikhiev et al. ("Out of the BLEU", JSS 2023) scored
their CoNaLa set this way (``sentence_chrf(generation, snippets)`` in codegen-metrics
``02-compute-metrics.ipynb``); one reference gives the same call as before, the same number.
"""

from __future__ import annotations

from workbench.score.base import MethodResult, Sample, ScoringContext, ScoringMethod


class Chrf(ScoringMethod):
    """Sentence-level chrF of the generation against its references (the best one), 0-1."""

    name = "chrf"
    scale = (0.0, 1.0)
    uses_llm = False
    uses_all_references = True
    prompt_version = ""

    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        import sacrebleu

        value = sacrebleu.sentence_chrf(sample.generation, list(sample.all_references)).score / 100.0
        return MethodResult().finish([value])
