"""The table ``correlate`` works on, and the record of preparing it.

:func:`workbench.correlate.inputs.prepare_table` turns one scores table, or a scores table joined
with execution results, into a :class:`CorrelationTable`; it records, per metric, the rows each
column left out (:class:`RowExclusions`) and, in two-table mode, how the tables were joined
(:class:`JoinSummary`). :mod:`workbench.correlate.analysis` computes on the table and
:class:`~workbench.correlate.results.CorrelationReport` carries it and reports both records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from workbench.correlate.json_ready import json_ready
from workbench.correlate.length import LengthSource


@dataclass(frozen=True)
class RowExclusions:
    """Rows left out of one column's statistics, by reason.

    Attributes:
        missing: null, empty or NaN values.
        non_numeric: text that does not parse as a number.
        non_finite: +-inf.
        examples: up to five ``{"row", "task_id", "value"}`` records, for the message.
    """

    missing: int = 0
    non_numeric: int = 0
    non_finite: int = 0
    examples: tuple[dict[str, Any], ...] = ()

    @property
    def total(self) -> int:
        return self.missing + self.non_numeric + self.non_finite

    def to_dict(self) -> dict[str, Any]:
        return json_ready(
            {
                "total": self.total,
                "missing": self.missing,
                "non_numeric": self.non_numeric,
                "non_finite": self.non_finite,
                "examples": list(self.examples),
            }
        )


@dataclass(frozen=True)
class JoinSummary:
    """How a scores table and an execution-results table were joined on (task, sample).

    Attributes:
        key: the join columns ``(task column, sample column)``.
        score_rows, result_rows: rows in each table.
        matched: keys found in both.
        unmatched_scores: score rows with a task id and a sample id and no execution result (left out,
            counted); a score row without a task id has no key to join and is counted as a row without a
            task id (:attr:`CorrelationTable.excluded_missing_task`), as without results, and one with a
            task id but no sample id as a row without a sample id
            (:attr:`CorrelationTable.excluded_missing_sample`).
        unmatched_results: result rows with no scores (left out, counted).
        examples: up to three unmatched keys per side (``scores_without_results``,
            ``results_without_scores``), and up to three ``[task id, row number from 1]`` of score rows
            without a sample id (``scores_without_sample_id``).
        status_counts: for matched rows, how many have each value of the results' ``status``
            column (``workbench execute`` writes e.g. ``passed``/``failed``/``timeout``), if any.
        label_disagreements: when the scores carry a label column of their own, ``(rows where it
            differs from the results' label, matched rows where both have one)``; the results'
            label is the one used.
        code_mismatches: key matches left out because the two rows record different code
            (``code_sha256``: the scores are of other generations than the results ran), only
            with ``--allow-partial-join`` (else refused); not in ``matched``.
    """

    key: tuple[str, str]
    score_rows: int
    result_rows: int
    matched: int
    unmatched_scores: int
    unmatched_results: int
    examples: dict[str, list[list[str]]] = field(default_factory=dict)
    status_counts: dict[str, int] | None = None
    label_disagreements: tuple[int, int] | None = None
    code_mismatches: int = 0

    def to_dict(self) -> dict[str, Any]:
        return json_ready(
            {
                "key": list(self.key),
                "score_rows": self.score_rows,
                "result_rows": self.result_rows,
                "matched": self.matched,
                "unmatched_scores": self.unmatched_scores,
                "unmatched_results": self.unmatched_results,
                "examples": self.examples,
                "status_counts": self.status_counts,
                "label_disagreements": None if self.label_disagreements is None else list(self.label_disagreements),
                "code_mismatches": self.code_mismatches,
            }
        )


@dataclass
class CorrelationTable:
    """Rows ready for correlation, grouped by task; within a task by sample id (input order without one).

    Attributes:
        task_ids: ``(T,)`` task ids in canonical order (:func:`workbench.data.task_order.canonical_codes`:
            a natural sort, whatever the order of the rows), the order the task bootstrap numbers them in.
        row_task: ``(n,)`` index into ``task_ids``, non-decreasing.
        label: ``(n,)`` labels: in [0, 1] for an outcome label, any finite number for a graded one.
        metrics: metric name -> ``(n,)`` values, NaN where unusable.
        exclusions: metric name -> :class:`RowExclusions`.
        rows: rows read (matched rows after a join).
        excluded_missing_label, excluded_missing_task: rows left out before grouping.
        excluded_missing_sample: score rows with a task id and no sample id, left out of a join
            (no key to join); 0 without results, where the sample id only detects duplicates.
        join: the join summary in two-table mode.
        lengths: ``(n,)`` completion lengths (NaN where missing), or ``None`` when not measured.
        length_source: where the lengths came from.
        length_note: why there are no lengths (``None`` when there are).
        label_kind: ``"outcome"`` (0/1 or pass ratios) or ``"graded"`` (declared with ``--label-kind graded``).
    """

    task_ids: list[str]
    row_task: np.ndarray
    label: np.ndarray
    metrics: dict[str, np.ndarray]
    exclusions: dict[str, RowExclusions]
    rows: int
    excluded_missing_label: int
    excluded_missing_task: int
    join: JoinSummary | None = None
    excluded_missing_sample: int = 0
    lengths: np.ndarray | None = None
    length_source: LengthSource | None = None
    length_note: str | None = None
    label_kind: str = "outcome"

    @property
    def graded_label(self) -> bool:
        """Whether the label is a grade (no pass/fail reading), as declared."""
        return self.label_kind == "graded"

    @property
    def binary_label(self) -> bool:
        """Whether the label is a 0/1 execution outcome (a graded label never is, even on 0/1 values)."""
        return not self.graded_label and bool(np.all((self.label == 0.0) | (self.label == 1.0)))
