"""The options of a bias analysis (``workbench bias``, ``[bias]`` of ``workbench run``)."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.correlate.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, resamples_problem
from workbench.correlate.config import LABEL_KINDS
from workbench.options import JobConfig, OptionError, option


@dataclass(frozen=True)
class BiasConfig(JobConfig):
    """Options of a duplication / contamination bias analysis of per-row metrics.

    Every field is a ``workbench bias`` option (``id_column`` is ``--id-column``) and a key of
    the ``[bias]`` table of ``workbench run``; the constructor checks them all and raises
    :class:`~workbench.options.OptionError` naming the field.

    Attributes:
        metric: the per-row metric columns (pass@1's ``passed``, an accuracy, a loss, a score).
        id_column: the row id: one column, or comma-separated columns joined with ``:``, exactly
            as the dedup's ``--id-column`` made the ids (``task_id,sample_id`` ->
            ``HumanEval/0:17``); ``None``: the columns the dedup output records in its
            ``report.json`` (``parameters.id_column``), else ``id``.
        task_column: a task column: the bootstrap then resamples whole tasks, and the
            contamination split also compares clean with contaminated tasks; without it, whole
            duplicate clusters are resampled.
        label: a label column: each metric's Kendall tau-b with it is also computed in every
            setting (:mod:`workbench.correlate`); by default an execution label, 0/1 or a pass ratio.
        label_kind: ``"outcome"`` (default: the label must lie in [0, 1], so a grade column named by
            mistake is an error) or ``"graded"`` (any finite number: an ordinal or continuous grade,
            such as human grades on a 0-4 scale); the same option and checks as
            :class:`~workbench.correlate.CorrelateConfig`'s.
        results: an execution results table joined on the row id (``workbench execute``'s
            ``results.jsonl``): :attr:`label`, and a metric named like it, are read from it.
        contamination: a second dedup output folder (a run with ``--against``) whose
            ``contamination.csv`` names the contaminated rows; default: the dedup output's own.
        split: splits of the metric table to read (all when empty).
        resamples / seed / confidence: the bootstrap.
        offline: never contact the Hugging Face hub.

    Example:

    >>> from workbench.bias import BiasConfig
    >>> BiasConfig(metric=["passed", "codebleu"], id_column="task_id,sample_id").metric
    ('passed', 'codebleu')
    >>> BiasConfig(confidence=2)
    Traceback (most recent call last):
    ...
    workbench.options.OptionError: confidence must be in [0.5, 0.999], not 2.0
    """

    metric: tuple[str, ...] = option((), "Per-row metric column (e.g. passed for pass@1, an accuracy, a loss); repeatable.")
    id_column: str | None = option(
        None, "Row id column, or comma-separated columns joined with ':' exactly as `workbench dedup --id-column` "
        "made the ids (e.g. task_id,sample_id). Default: the id columns the dedup output was made with (its "
        "report.json), else id.")
    task_column: str | None = option(
        None, "Task id column: the bootstrap resamples whole tasks (default: whole duplicate clusters), and the "
        "contamination split also compares clean with contaminated tasks.")
    label: str | None = option(
        None, "Label column: an execution label, 0/1 or a pass ratio in [0, 1] (or, with --label-kind graded, any "
        "numeric grade): each metric's Kendall tau-b with it is also computed in every setting (all rows vs "
        "deduplicated, clean vs contaminated).")
    label_kind: str = option(
        "outcome", "What the label is: 'outcome' (0/1 or a pass ratio in [0, 1]; anything outside is an error) or "
        "'graded' (an ordinal or continuous grade, e.g. human grades 0-4: any finite number), as in workbench correlate.",
        choices=LABEL_KINDS)
    results: str | None = option(
        None, "Execution results table (e.g. `workbench execute` output) joined on the row id: the label, and a metric "
        "named like the label (pass@1's passed), are read from it.")
    contamination: str | None = option(
        None, "Another `workbench dedup --against` output folder whose contamination.csv names the contaminated rows "
        "(default: the dedup output's own, when it was run with --against).")
    split: tuple[str, ...] = option((), "Split of the metric table to read; repeatable. Default: all.")
    resamples: int = option(DEFAULT_RESAMPLES, "Bootstrap resamples of whole tasks or clusters; at least 2 / (1 - confidence), "
                            "40 at 95%, so that each tail of the percentile interval holds a resample.", min=1)
    seed: int = option(0, "Seed of the bootstrap resampling.", min=0, max=2**32 - 1)
    confidence: float = option(DEFAULT_CONFIDENCE, "Confidence level of the intervals.", min=0.5, max=0.999)
    offline: bool = option(False, "Never contact the Hugging Face hub.")
    allow_partial_join: bool = option(
        False, "Go on when fewer than half of the metric rows join the dedup output (by default an error: such a "
        "join usually pairs rows of another dataset, or ids numbered differently, with the wrong rows).")

    def _check(self) -> None:
        problem = resamples_problem(self.resamples, self.confidence)
        if problem is not None:
            raise OptionError(f"{{resamples}}: {problem}", "resamples", "confidence")
        if self.label_kind != "outcome" and self.label is None:
            raise OptionError(f"{{label_kind}} {self.label_kind} declares what the label is: set {{label}} too (e.g. grade)",
                              "label_kind", "label")
        if self.results is not None and self.label is None:
            raise OptionError("{results} gives the label: set {label} too (e.g. passed)", "results", "label")

    @property
    def id_columns(self) -> list[str]:
        """:attr:`id_column` split at its commas (empty when it is ``None``)."""
        return [c.strip() for c in (self.id_column or "").split(",") if c.strip()]
