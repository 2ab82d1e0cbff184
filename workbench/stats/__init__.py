"""Correlating metric scores with execution results (the ``correlate`` job).

* :func:`run_correlate` -- the job (``workbench correlate``): :func:`correlate` with a
  :class:`CorrelateConfig`, writing the JSON report and the figure;
* :func:`correlate` -- the Python API: pooled and per-problem Kendall tau-b, Pearson r and
  Spearman rho, task-level bootstrap CIs, paired metric comparisons; returns a
  :class:`CorrelationReport` (``.to_dict()``, ``.write_json()``).
* :mod:`.correlation` -- point estimates (scipy), :mod:`.blocks` -- task-block statistics
  that make the bootstrap fast, :mod:`.bootstrap` -- resampling and intervals,
  :mod:`.inputs` -- loading, joining and validating tables, :mod:`.report` -- result objects,
  :mod:`.plot` -- the figure.
"""

from workbench.stats.analysis import correlate, correlate_table, run_correlate
from workbench.stats.bootstrap import BootstrapSettings
from workbench.stats.config import CorrelateConfig
from workbench.stats.correlation import kendall_tau_b, pearson_r, spearman_rho
from workbench.stats.report import (
    CorrelationCounts,
    CorrelationReport,
    Estimate,
    JoinSummary,
    MetricComparison,
    MetricResult,
    RowExclusions,
)

__all__ = [
    "BootstrapSettings",
    "CorrelateConfig",
    "CorrelationCounts",
    "CorrelationReport",
    "Estimate",
    "JoinSummary",
    "MetricComparison",
    "MetricResult",
    "RowExclusions",
    "correlate",
    "correlate_table",
    "kendall_tau_b",
    "pearson_r",
    "run_correlate",
    "spearman_rho",
]
