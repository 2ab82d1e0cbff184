"""The options of a correlation (``workbench correlate``, ``[correlate]`` of ``workbench run``)."""

from __future__ import annotations

from dataclasses import dataclass

from workbench.options import JobConfig, option
from workbench.stats.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES


@dataclass(frozen=True)
class CorrelateConfig(JobConfig):
    """Options of a correlation of metric scores with execution results.

    Every field is a ``workbench correlate`` option (``resamples`` is ``--resamples``) and a key
    of the ``[correlate]`` table of ``workbench run``; the constructor checks them all and
    raises :class:`~workbench.options.OptionError` naming the field.

    Attributes:
        metric: metric columns; empty: every numeric column except label, task and sample.
        label: the execution label column: 0/1 or a pass ratio in [0, 1].
        results: an execution-results table to join on task + sample id; the label is then
            read from it.
        task_column / sample_column: the id columns (both tables; ``sample_column`` default
            ``sample_id``: the join key, and used to reject duplicate keys).
        split: splits of the scores table to use (all when empty).
        resamples / seed / confidence: the task-level bootstrap
            (:class:`~workbench.stats.bootstrap.BootstrapSettings`).
        offline: never contact the Hugging Face hub.

    Example:

    >>> from workbench.stats import CorrelateConfig
    >>> CorrelateConfig(metric=["codebleu", "chrf"], resamples=200).metric
    ('codebleu', 'chrf')
    """

    metric: tuple[str, ...] = option(
        (), "Metric column; repeat for several. Default: every numeric column except label/task/sample.")
    label: str = option("passed", "Execution label column: 0/1 or a pass ratio in [0, 1].")
    results: str | None = option(
        None, "Execution results table (e.g. `workbench execute` output) to join on task + sample id; "
        "the label is then read from it.")
    task_column: str = option("task_id", "Task id column (both tables).")
    sample_column: str | None = option(
        None, "Sample id column (both tables). Default sample_id: the join key, and used to reject duplicate keys.")
    split: tuple[str, ...] = option((), "Split of the scores table to use; repeatable. Default: all.")
    resamples: int = option(DEFAULT_RESAMPLES, "Bootstrap resamples of whole tasks.", min=1)
    seed: int = option(0, "Seed of the bootstrap resampling.", min=0, max=2**32 - 1)
    confidence: float = option(DEFAULT_CONFIDENCE, "Confidence level of the intervals.", min=0.5, max=0.999)
    offline: bool = option(False, "Never contact the Hugging Face hub.")
