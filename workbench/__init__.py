"""workbench: an evaluation workbench for machine-learning models of code.

Four jobs share one set of loaders (:mod:`workbench.data`), language plugins
(:mod:`workbench.languages`) and reports. Each job has one config class, whose fields are its
options (the same on the command line and in a ``workbench run`` table), and one entry function:

=============  =======================  ===================  ===================================
job            config                   entry function       does
=============  =======================  ===================  ===================================
dedup          :class:`DedupConfig`     :func:`run_dedup`    exact and near duplicates (Allamanis 2019)
execute        :class:`ExecutionConfig` :func:`run_execute`  generated code against tests, sandboxed
score          :class:`ScoreConfig`     :func:`run_score`    DSA-CQE and baselines (LLM judges, chrF)
correlate      :class:`CorrelateConfig` :func:`run_correlate` scores against execution results
bias           :class:`BiasConfig`      :func:`run_bias`     duplication / contamination bias of a metric
report         (the run folder)         :func:`write_report` report.json and report.html of a run
=============  =======================  ===================  ===================================

:func:`run_pipeline` runs them all from a TOML file (:func:`load_config`).

Example::

    from workbench import DedupConfig, run_dedup

    run = run_dedup("humaneval-codex-python",
                    DedupConfig(code_column="completion_multipl_e", group_column="task_id"))
    print(run.report["overall"]["duplication_factor"])

Everything listed in ``__all__`` is the public API; the modules behind it may change.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: public name -> the module that defines it (imported on first use: a job's module pulls in
#: heavy libraries that ``import workbench`` alone should not pay for)
_EXPORTS = {
    "WorkbenchError": "workbench.errors",
    "OptionError": "workbench.options",
    "DedupConfig": "workbench.dedup.config",
    "run_dedup": "workbench.dedup.job",
    "ExecutionConfig": "workbench.execute.config",
    "run_execute": "workbench.execute.job",
    "ScoreConfig": "workbench.score.config",
    "run_score": "workbench.score.job",
    "CorrelateConfig": "workbench.correlate.config",
    "run_correlate": "workbench.correlate.analysis",
    "BiasConfig": "workbench.bias.config",
    "run_bias": "workbench.bias.job",
    "write_report": "workbench.report",
    "PipelineConfig": "workbench.run.config",
    "load_config": "workbench.run.config",
    "run_pipeline": "workbench.run.runner",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
