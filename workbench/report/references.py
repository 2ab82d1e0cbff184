"""Published correlation values the report draws next to ours (the forest plot's reference marks).

Every value carries its source. Levels follow :mod:`workbench.correlate`: ``pooled`` is one
correlation over all samples (ICE-Score's "corpus level"), ``per_problem`` the mean of the
within-task correlations (ICE-Score's "example level": per task over its 20 samples, then the
nanmean over tasks).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

#: the published HumanEval-Python set the ICE-Score numbers were measured on (DSA-CQE follows
#: ICE-Score on it: ../shared/data/SOURCES.md, section 2)
ICE_SCORE_DATASET = "HumanEval-Python, MultiPL-E davinci-0.8-keep generations, 20 samples/task (161 tasks)"
#: its rows and tasks: a reference value stands only next to an estimate on all of them
ICE_SCORE_ROWS, ICE_SCORE_TASKS = 3220, 161
#: :func:`rows_digest` of that set (the bundled ``humaneval-codex-python``)
ICE_SCORE_ROWS_DIGEST = "7432f2edfbfd6bce"
#: the shipped column that identifies the set's rows (ICE-Score's own GPT-3.5 grade)
ICE_SCORE_ID_COLUMN = "gpt35_nswr"

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
        column: the shipped column of the ICE-Score set the value was measured on (``None`` for
            the DSA-CQE poster): on other rows of that set, this column's correlation on the
            same rows is the like-for-like reference (:func:`reference_marks`).
    """

    method: str
    label: str
    coefficient: str
    level: str
    value: float
    published: bool
    source: str
    column: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ice(method: str, label: str, per_problem: float, pooled: float, coefficient: str = "kendall",
         published: bool = True) -> list[ReferenceValue]:
    source = ICE_SCORE_SOURCE if published else ICE_SCORE_RECOMPUTED_SOURCE
    column = ICE_SCORE_ID_COLUMN if method == "ice-score" else method
    return [
        ReferenceValue(method, label, coefficient, "per_problem", per_problem, published, source, column),
        ReferenceValue(method, label, coefficient, "pooled", pooled, published, source, column),
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


def rows_digest(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """A digest of a dataset's rows as the ICE-Score set identifies them: each (task, sample) with
    its shipped :data:`ICE_SCORE_ID_COLUMN` grade, sorted (the recipe of
    :func:`~workbench.score.outcomes.outcomes_digest`); ``None`` when a row lacks the grade or an
    id, or two rows share one.

    Example:
        >>> rows_digest([{"task_id": "HumanEval/0", "sample_id": 3, "gpt35_nswr": 4}]) is not None
        True
        >>> rows_digest([{"task_id": "HumanEval/0", "sample_id": 3}]) is None
        True
    """
    from workbench.data.samples import sample_key
    from workbench.score.outcomes import outcomes_digest

    grades: dict[tuple[str, str], str] = {}
    for row in rows:
        grade = row.get(ICE_SCORE_ID_COLUMN)
        key = sample_key(row.get("task_id"), row.get("sample_id"))
        if isinstance(grade, bool) or not isinstance(grade, (int, float)) or not math.isfinite(grade) \
                or None in key or key in grades:
            return None
        grades[key] = f"{float(grade):g}"
    return outcomes_digest(grades) if grades else None


def is_published_set(rows: Iterable[Mapping[str, Any]] | None) -> bool:
    """Whether ``rows`` are the rows the reference values were measured on (the ICE-Score
    HumanEval-Python set, :data:`ICE_SCORE_ROWS_DIGEST`)."""
    return rows is not None and rows_digest(rows) == ICE_SCORE_ROWS_DIGEST


def _levels(summary: Mapping[str, Any] | None) -> Iterable[tuple[str, str, float]]:
    for level in ("pooled", "per_problem"):
        block = (summary or {}).get(level) or {}
        for coefficient in ("kendall", "pearson"):
            value = block.get(coefficient)
            if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                yield level, coefficient, float(value)


def reference_marks(method: str, scope: str, summary: Mapping[str, Any] | None,
                    scope_summaries: Mapping[str, Mapping[str, Any] | None],
                    on_published_set: bool) -> tuple[list[dict[str, Any]], str | None]:
    """The reference values drawn next to one estimate (a method on one scope), like for like.

    A published value stands only next to an estimate on the rows it was measured on: all
    :data:`ICE_SCORE_ROWS` rows of the ICE-Score set. On fewer rows of that set (the stratified
    subset the LLM methods score) the published value is no reference, as the selection alone moves
    tau-b (the shipped ``gpt35_nswr`` column: .428 on all rows, .325 on average, sd .115, over
    random one-pass-one-fail subsets of 20 tasks); the value's shipped :attr:`~ReferenceValue.column`
    correlated on the *same* rows is drawn instead, when this run correlated it there (same n
    samples and tasks). On other data, nothing is drawn.

    Args:
        method: the method; scope: ``"subset"`` or ``"all"``.
        summary: the estimate's headline summary (``n_samples``, ``n_tasks``, levels), or ``None``.
        scope_summaries: method -> headline summary of every method correlated on this scope.
        on_published_set: the run's data is the ICE-Score set (:func:`is_published_set`).

    Returns:
        ``(marks, note)``: marks as :meth:`ReferenceValue.to_dict` plus ``kind`` (``published``,
        ``recomputed``: on the same rows as the source; ``same rows``: the shipped column on this
        estimate's rows, from this run's correlate output); ``note`` says why the published values
        are not drawn (``None`` when they are, or the method has none).
    """
    references = references_for(method)
    if not references or not summary:
        return [], None
    n_samples, n_tasks = summary.get("n_samples"), summary.get("n_tasks")
    if on_published_set and n_samples == ICE_SCORE_ROWS and n_tasks == ICE_SCORE_TASKS:
        return [{**r.to_dict(), "kind": "published" if r.published else "recomputed"} for r in references], None
    if not on_published_set:
        return [], (f"this run's data is not the set they were measured on ({ICE_SCORE_DATASET}, "
                    f"{ICE_SCORE_ROWS:,} rows)")
    marks: list[dict[str, Any]] = []
    for column in dict.fromkeys(r.column for r in references if r.column and r.column != method):
        other = scope_summaries.get(column)
        if not other or other.get("n_samples") != n_samples or other.get("n_tasks") != n_tasks:
            continue
        label = next(r.label for r in references if r.column == column)
        for level, coefficient, value in _levels(other):
            marks.append({"method": method, "label": f"{label}: shipped {column} column on the same {n_samples} rows",
                          "coefficient": coefficient, "level": level, "value": value, "published": False,
                          "source": f"this run's correlate/{scope}.json, metric {column}", "column": column,
                          "kind": "same rows"})
    note = (f"estimated on {n_samples} of the {ICE_SCORE_ROWS:,} rows they were measured on"
            + (" (a subset of them: which rows are chosen alone moves τ-b)" if scope == "subset" else ""))
    if marks:
        note += f"; drawn instead: the shipped {marks[0]['column']} column on the same rows"
    return marks, note
