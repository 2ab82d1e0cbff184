"""Correlating metric scores with execution results (the ``correlate`` job).

* :func:`run_correlate` -- the job (``workbench correlate``): :func:`correlate` with a
  :class:`CorrelateConfig`, writing the JSON report and the figure;
* :func:`correlate` -- the Python API: pooled and per-problem Kendall tau-b, Pearson r and
  Spearman rho, task-level bootstrap CIs, paired metric comparisons (pooled and per problem),
  each metric's correlation with completion length (verbosity bias), combined judges; returns a
  :class:`CorrelationReport` (``.to_dict()``, ``.write_json()``).
* :mod:`.correlation` -- point estimates (scipy), :mod:`.blocks` -- task-block statistics
  that make the bootstrap fast, :mod:`.bootstrap` -- resampling and intervals,
  :mod:`.inputs` -- loading, joining and validating tables, :mod:`.length` -- completion
  lengths, :mod:`.combine` -- combined judges (rank means), :mod:`.fitted` -- their
  cross-validated weights, :mod:`.report` -- result objects, :mod:`.plot` -- the figure.
"""

from workbench.correlate.analysis import correlate, correlate_table, run_correlate
from workbench.correlate.bootstrap import BootstrapSettings
from workbench.correlate.combine import Combination
from workbench.correlate.config import CorrelateConfig
from workbench.correlate.correlation import kendall_tau_b, pearson_r, spearman_rho
from workbench.correlate.results import (
    CombinationSummary,
    CorrelationCounts,
    CorrelationReport,
    Estimate,
    JoinSummary,
    LengthCorrelation,
    LengthSummary,
    MetricComparison,
    MetricResult,
    PairedDifference,
    RowExclusions,
)

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
