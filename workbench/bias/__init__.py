"""``workbench bias``: how much duplicates and benchmark contamination move a reported metric.

Joins the per-row values of any metric (pass@1's ``passed``, an accuracy, a loss, a judge's
score) to a ``workbench dedup`` output folder by row id and reports:

* for a train/test corpus, the metric in the test settings of Allamanis 2019 (Table 2: fully
  biased, cross-set biased, unbiased test), their relative difference Δ (Table 3) and the
  duplication factor d, unbiased estimate f̄ and duplication bias β of Eq. 2 (Sec. 2), with the
  identity ``f̂ = (1 - d) f̄ + d β`` checked on the numbers;
* for one set of rows (a benchmark's generations), the metric on all rows and on one row per
  duplicate cluster;
* with a reference (``workbench dedup --against``), the metric on clean and on contaminated rows
  (and tasks), as GPT-3 (Brown et al. 2020, App. C) reports a benchmark's clean subset;

each value with a task- or cluster-level bootstrap interval and the rows behind it, and, with a
label column, each metric's Kendall tau-b with it in every setting.

Modules: :mod:`.dedup_output` reads the dedup folder, :mod:`.metric_table` the metric table,
:mod:`.settings` says which rows each setting counts and computes Eq. 2, :mod:`.intervals` the
bootstrap, :mod:`.job` runs it all, :mod:`.results` holds the report, :mod:`.plot` draws it.

Example::

    from workbench.bias import BiasConfig, run_bias
    report = run_bias("out/", "results.jsonl", BiasConfig(metric=["passed"], id_column="task_id,sample_id"))
    report.to_dict()["duplication"]["metrics"]["passed"]["eq2"]
"""

from workbench.lazy_exports import lazy_exports

__all__ = [
    "Analysis",
    "BiasConfig",
    "BiasReport",
    "DedupOutput",
    "Decomposition",
    "Interval",
    "JoinCounts",
    "MetricBias",
    "MetricTable",
    "UnitBootstrap",
    "decompose",
    "one_per_cluster",
    "read_dedup_output",
    "read_metric_table",
    "relative_difference",
    "row_id",
    "run_bias",
]

# What each name is imported from: loaded on first use (PEP 562), so that importing the package
# (the CLI does, for its options) does not import datasets, pandas and scipy.
_EXPORTS = {
    "Analysis": "workbench.bias.results",
    "BiasConfig": "workbench.bias.config",
    "BiasReport": "workbench.bias.results",
    "Decomposition": "workbench.bias.settings",
    "DedupOutput": "workbench.bias.dedup_output",
    "Interval": "workbench.bias.intervals",
    "JoinCounts": "workbench.bias.results",
    "MetricBias": "workbench.bias.results",
    "MetricTable": "workbench.bias.metric_table",
    "UnitBootstrap": "workbench.bias.intervals",
    "decompose": "workbench.bias.settings",
    "one_per_cluster": "workbench.bias.settings",
    "read_dedup_output": "workbench.bias.dedup_output",
    "read_metric_table": "workbench.bias.metric_table",
    "relative_difference": "workbench.bias.settings",
    "row_id": "workbench.bias.metric_table",
    "run_bias": "workbench.bias.job",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
