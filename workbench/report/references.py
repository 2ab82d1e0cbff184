"""Published correlation values the report draws next to ours (the forest plot's reference marks).

Every value carries its source. Levels follow :mod:`workbench.correlate`: ``pooled`` is one
correlation over all samples (ICE-Score's "corpus level"), ``per_problem`` the mean of the
within-task correlations (ICE-Score's "example level": per task over its 20 samples, then the
nanmean over tasks).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

#: the published HumanEval-Python set the ICE-Score numbers were measured on
ICE_SCORE_DATASET = "HumanEval-Python, MultiPL-E davinci-0.8-keep generations, 20 samples/task (161 tasks)"

ICE_SCORE_SOURCE = (
    "Zhuo, ICE-Score (EACL Findings 2024), HumanEval-Python vs execution; numbers printed in the stored "
    "outputs of terryyz/ice-score @ 4e45c6dc compute_results.ipynb "
    "(../shared/data/ice-score/published_correlations_ice_score.csv)"
)
ICE_SCORE_RECOMPUTED_SOURCE = (
    "recomputed by us with scipy from ../shared/data/ice-score/humaneval_python_flat.jsonl "
    "(recomputed_correlations_python.csv); ICE-Score's notebook printed no Pearson r for HumanEval, "
    "so these are not published values"
)
DSA_CQE_SOURCE = (
    "Xu, Zhang, Zhang, Han, Decompositional Semantic Analysis for LLM-based Code Quality Evaluation, "
    "ISWC 2024 posters (CEUR-WS Vol-3828, paper 7), abstract: GPT-3.5-turbo on HumanEval vs execution; "
    "the abstract does not say whether the correlation is pooled or per problem"
)


@dataclass(frozen=True)
class ReferenceValue:
    """One published (or, where marked, recomputed) correlation with execution.

    Attributes:
        method: the report's method/column name it belongs next to (``"dsa-cqe"``, ``"chrf"``, ...).
        label: what was measured, as the source names it.
        coefficient: ``"kendall"`` (tau; tau-b in scipy) or ``"pearson"``.
        level: ``"pooled"``, ``"per_problem"`` or ``"unspecified"``.
        value: the coefficient.
        published: False for values we recomputed from the published data (not in the source).
        source: the citation.
    """

    method: str
    label: str
    coefficient: str
    level: str
    value: float
    published: bool
    source: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ice(method: str, label: str, per_problem: float, pooled: float, coefficient: str = "kendall",
         published: bool = True) -> list[ReferenceValue]:
    source = ICE_SCORE_SOURCE if published else ICE_SCORE_RECOMPUTED_SOURCE
    return [
        ReferenceValue(method, label, coefficient, "per_problem", per_problem, published, source),
        ReferenceValue(method, label, coefficient, "pooled", pooled, published, source),
    ]


REFERENCE_CORRELATIONS: tuple[ReferenceValue, ...] = (
    ReferenceValue("dsa-cqe", "DSA-CQE poster, GPT-3.5-turbo", "kendall", "unspecified", 0.553, True, DSA_CQE_SOURCE),
    ReferenceValue("dsa-cqe", "DSA-CQE poster, GPT-3.5-turbo", "pearson", "unspecified", 0.594, True, DSA_CQE_SOURCE),
    *_ice("gpt35_nswr", "ICE-Score GPT-3.5 (w/ ref.)", 0.318, 0.425),
    *_ice("ice-score", "ICE-Score GPT-3.5 (w/ ref.)", 0.318, 0.425),
    *_ice("gpt35_nsnr", "ICE-Score GPT-3.5 (w/o ref.)", 0.279, 0.294),
    *_ice("chrf", "chrF", 0.262, 0.328),
    *_ice("codebleu", "CodeBLEU", 0.272, 0.303),
    *_ice("codebertscore_f1", "CodeBERTScore-F1 (w/o S.)", 0.237, 0.322),
    *_ice("codebertscore_f3", "CodeBERTScore-F3 (w/o S.)", 0.265, 0.360),
    *_ice("gpt35_nswr", "ICE-Score GPT-3.5 (w/ ref.)", 0.320, 0.427, "pearson", published=False),
    *_ice("ice-score", "ICE-Score GPT-3.5 (w/ ref.)", 0.320, 0.427, "pearson", published=False),
    *_ice("gpt35_nsnr", "ICE-Score GPT-3.5 (w/o ref.)", 0.275, 0.264, "pearson", published=False),
    *_ice("codebleu", "CodeBLEU", 0.349, 0.395, "pearson", published=False),
    *_ice("codebertscore_f3", "CodeBERTScore-F3 (w/o S.)", 0.352, 0.418, "pearson", published=False),
)
"""Reference correlations with execution pass/fail on HumanEval.

* DSA-CQE poster (Xu et al., ISWC 2024 posters, CEUR-WS Vol-3828 paper 7, abstract):
  GPT-3.5-turbo, HumanEval: Kendall .553, Pearson .594 (level not stated). Drawn next to our
  ``dsa-cqe``.
* ICE-Score (Zhuo, EACL Findings 2024), HumanEval-Python, from the stored outputs of
  terryyz/ice-score @ 4e45c6dc ``compute_results.ipynb`` (our copy:
  ``../shared/data/ice-score/published_correlations_ice_score.csv``, HumanEval rows also in
  ``tests/fixtures/ice_score_published_humaneval.csv``): Kendall tau, example level (= per problem)
  / corpus level (= pooled). GPT-3.5 with reference, no reasoning (``gpt35_nswr``, the shipped
  column and the closest setting to our ``ice-score`` method) .318 / .425; without reference
  (``gpt35_nsnr``) .279 / .294; chrF .262 / .328; CodeBLEU .272 / .303; CodeBERTScore-F1
  (w/o source) .237 / .322; CodeBERTScore-F3 .265 / .360.
* Pearson r for the ICE-Score set was not printed by the notebook; the values we recomputed
  from the published data (``recomputed_correlations_python.csv``) are marked
  ``published=False``: ``gpt35_nswr`` .320 / .427, ``gpt35_nsnr`` .275 / .264, CodeBLEU
  .349 / .395, CodeBERTScore-F3 .352 / .418.
"""


def references_for(method: str) -> list[ReferenceValue]:
    """Return the reference values drawn next to ``method`` (possibly none)."""
    return [value for value in REFERENCE_CORRELATIONS if value.method == method]
