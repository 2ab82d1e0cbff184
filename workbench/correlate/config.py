"""The options of a correlation (``workbench correlate``, ``[correlate]`` of ``workbench run``)."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.errors import DataError
from workbench.options import JobConfig, OptionError, option
from workbench.correlate.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, resamples_problem
from workbench.correlate.combine import Combination
from workbench.correlate.length import AUTO_LENGTH, GENERATION_COLUMNS, LENGTH_UNITS

#: the kinds of label: an execution outcome in [0, 1], or a grade on any numeric scale
LABEL_KINDS: tuple[str, ...] = ("outcome", "graded")


@dataclass(frozen=True)
class CorrelateConfig(JobConfig):
    """Options of a correlation of metric scores with execution results.

    Every field is a ``workbench correlate`` option (``resamples`` is ``--resamples``) and a key
    of the ``[correlate]`` table of ``workbench run``; the constructor checks them all and
    raises :class:`~workbench.options.OptionError` naming the field.

    Attributes:
        metric: metric columns; empty: every numeric column except label, task, sample, length
            and workbench's own bookkeeping columns (:data:`~workbench.correlate.inputs.BOOKKEEPING_COLUMNS`).
        label: the label column: by default an execution label, 0/1 or a pass ratio in [0, 1].
        label_kind: ``"outcome"`` (default: the label must lie in [0, 1], so a grade column named by
            mistake is an error) or ``"graded"`` (any finite number: an ordinal or continuous grade,
            such as human grades on a 0-4 scale; no pass rate or pass/fail means are reported).
        results: an execution-results table to join on task + sample id; the label is then
            read from it.
        task_column / sample_column: the id columns (both tables; ``sample_column`` default
            ``sample_id``: the join key, and used to reject duplicate keys).
        split: splits of the scores table to use (all when empty).
        resamples / seed / confidence: the task-level bootstrap
            (:class:`~workbench.correlate.bootstrap.BootstrapSettings`).
        offline: never contact the Hugging Face hub.
        length_column / length_unit: verbosity bias, each metric against the length of the
            generated code (:mod:`workbench.correlate.length`): the column (``auto``: found by name;
            ``none``: off) and ``chars`` or ``tokens``.
        dedup / dedup_id_column: a dedup output folder whose clusters are collapsed to one row
            each for a second, deduplicated report (:mod:`workbench.correlate.per_cluster`), and
            the columns of its row ids; allow_partial_join: go on when fewer than half of the rows
            join it, or fewer than half of the score rows join ``results`` (else a DataError).
        combine / baseline: comparisons: combined judges declared in advance
            (:mod:`workbench.correlate.combine`, ``NAME=rank-mean:a,b[,w_a,w_b]``) and the metrics
            every other one is compared with (empty: every pair).

    Example:

    >>> from workbench.correlate import CorrelateConfig
    >>> CorrelateConfig(metric=["codebleu", "chrf"], resamples=200).metric
    ('codebleu', 'chrf')
    """

    metric: tuple[str, ...] = option(
        (), "Metric column; repeat for several. Default: every numeric or boolean column except label, task, sample, "
        "length and workbench's own bookkeeping columns (generation_truncated, seconds, llm_seconds, token counts, "
        "cost_usd, llm_calls, scale_min/max, duration_s, exit_code ...: docs/correlate.md); name one with -m to use it.")
    label: str = option("passed", "Label column: an execution label, 0/1 or a pass ratio in [0, 1] "
                        "(or, with --label-kind graded, any numeric grade).")
    label_kind: str = option(
        "outcome", "What the label is: 'outcome' (0/1 or a pass ratio in [0, 1]; anything outside is an error) or "
        "'graded' (an ordinal or continuous grade, e.g. human grades 0-4: any finite number).",
        choices=LABEL_KINDS)
    results: str | None = option(
        None, "Execution results table (e.g. `workbench execute` output) to join on task + sample id; "
        "the label is then read from it.")
    task_column: str = option("task_id", "Task id column (both tables).")
    sample_column: str | None = option(
        None, "Sample id column (both tables). Default sample_id: the join key, and used to reject duplicate keys.")
    split: tuple[str, ...] = option((), "Split of the scores table to use; repeatable. Default: all.")
    resamples: int = option(DEFAULT_RESAMPLES, "Bootstrap resamples of whole tasks; at least 2 / (1 - confidence), 40 at 95%, "
                            "so that each tail of the percentile interval holds a resample.", min=1)
    seed: int = option(0, "Seed of the bootstrap resampling.", min=0, max=2**32 - 1)
    confidence: float = option(DEFAULT_CONFIDENCE, "Confidence level of the intervals.", min=0.5, max=0.999)
    offline: bool = option(False, "Never contact the Hugging Face hub.")
    # -- verbosity bias: each metric against the length of the generated code
    length_column: str = option(
        AUTO_LENGTH, "Generated-code column whose length each metric is correlated with (a judge's verbosity bias): "
        f"'auto' = the first of {', '.join(GENERATION_COLUMNS)} present (the output says when there is none); "
        "a numeric column is taken as the length itself; 'none' = no length analysis.")
    length_unit: str = option(
        "chars", "Length of a text column: chars (characters) or tokens (lexical tokens: words and single punctuation marks).",
        choices=LENGTH_UNITS)
    # -- comparisons: combined judges and baselines
    combine: tuple[str, ...] = option(
        (), "A combined judge, evaluated like a metric and compared with each member: "
        "NAME=rank-mean:METRIC_A,METRIC_B[,W_A,W_B] (weighted mean of ranks; weights fixed before the data is seen, "
        "equal when omitted) or NAME=rank-mean-cv:METRIC_A,METRIC_B (weights fitted with 5-fold task-level "
        "cross-validation, reported as fitted). Repeatable.", commas=False)
    baseline: tuple[str, ...] = option(
        (), "Compare every other metric with this one (paired bootstrap of the difference, pooled and per problem); "
        "repeatable, e.g. --baseline codebleu --baseline chrf. Default: every pair of metrics.")

    # -- duplicates: every coefficient also on one row per near-duplicate cluster
    dedup: str | None = option(
        None, "A `workbench dedup -o` folder: every coefficient is also computed on one row per near-duplicate cluster "
        "(the row the dedup kept), next to all rows, to show whether duplicated generations moved the correlation.")
    dedup_id_column: str | None = option(
        None, "The dedup's --id-column: column(s), comma-separated, whose values joined with ':' are its row ids "
        "[default: the task and sample columns].")
    allow_partial_join: bool = option(
        False, "Go on when fewer than half of the score rows join the --results, or with --dedup the dedup output (by "
        "default an error, as in workbench bias: such a join usually means ids built another way, 007 vs 7, or another "
        "dataset).")

    def _check(self) -> None:
        problem = resamples_problem(self.resamples, self.confidence)
        if problem is not None:
            raise OptionError(f"{{resamples}}: {problem}", "resamples", "confidence")
        names = []
        for text in self.combine:
            try:
                names.append(Combination.parse(text).name)
            except DataError as error:
                raise OptionError(f"{{combine}}: {error}", "combine") from None
        if len(set(names)) != len(names):
            raise OptionError(f"{{combine}}: two combinations are named alike: {names}", "combine")

    def combinations(self) -> list[Combination]:
        """The :attr:`combine` declarations, parsed."""
        return [Combination.parse(text) for text in self.combine]
