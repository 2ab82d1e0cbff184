"""Correlating metric scores with execution results (the ``correlate`` job).

* :func:`run_correlate` -- the job (``workbench correlate``): :func:`correlate` with a
  :class:`CorrelateConfig`, writing the JSON report and the figure;
* :func:`correlate` -- the Python API: pooled and per-problem Kendall tau-b, Pearson r and
  Spearman rho, task-level bootstrap CIs, paired metric comparisons (pooled and per problem),
  each metric's correlation with completion length (verbosity bias), combined judges; returns a
  :class:`CorrelationReport` (``.to_dict()``, ``.write_json()``).
* :mod:`.correlation` -- point estimates (scipy), :mod:`.blocks` -- task-block statistics
  that make the bootstrap fast, :mod:`.bootstrap` -- resampling and intervals,
  :mod:`.inputs` -- loading, joining and validating tables, :mod:`.table` -- the prepared
  table and what preparing it left out, :mod:`.length` -- completion
  lengths, :mod:`.combine` -- combined judges (rank means), :mod:`.fitted` -- their
  cross-validated weights, :mod:`.results` -- result objects, :mod:`.plot` -- the figure.
"""

from workbench.lazy_exports import lazy_exports

__all__ = [
    "BootstrapSettings",
    "Combination",
    "CombinationSummary",
    "CorrelateConfig",
    "CorrelationCounts",
    "CorrelationReport",
    "Estimate",
    "JoinSummary",
    "LengthCorrelation",
    "LengthSummary",
    "MetricComparison",
    "MetricResult",
    "PairedDifference",
    "RowExclusions",
    "correlate",
    "correlate_table",
    "kendall_tau_b",
    "pearson_r",
    "run_correlate",
    "spearman_rho",
]

# What each name is imported from: loaded on first use (PEP 562), so that importing the package
# (the CLI does, for its options) does not import datasets, pandas and scipy.
_EXPORTS = {
    "BootstrapSettings": "workbench.correlate.bootstrap",
    "Combination": "workbench.correlate.combine",
    "CombinationSummary": "workbench.correlate.results",
    "CorrelateConfig": "workbench.correlate.config",
    "CorrelationCounts": "workbench.correlate.results",
    "CorrelationReport": "workbench.correlate.results",
    "Estimate": "workbench.correlate.results",
    "JoinSummary": "workbench.correlate.table",
    "LengthCorrelation": "workbench.correlate.results",
    "LengthSummary": "workbench.correlate.results",
    "MetricComparison": "workbench.correlate.results",
    "MetricResult": "workbench.correlate.results",
    "PairedDifference": "workbench.correlate.results",
    "RowExclusions": "workbench.correlate.table",
    "correlate": "workbench.correlate.analysis",
    "correlate_table": "workbench.correlate.analysis",
    "kendall_tau_b": "workbench.correlate.correlation",
    "pearson_r": "workbench.correlate.correlation",
    "run_correlate": "workbench.correlate.analysis",
    "spearman_rho": "workbench.correlate.correlation",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
