"""``workbench run``: dedup, execute, score and correlate as one resumable pipeline.

Modules: :mod:`~workbench.run.config` (the TOML file and overrides; a table's keys are
its job config's fields, :mod:`workbench.options`),
:mod:`~workbench.run.stages` (each stage: its job, config, input and outputs),
:mod:`~workbench.run.preflight` (fail fast before any stage),
:mod:`~workbench.run.runner` (run, skip, resume),
:mod:`~workbench.run.manifest` (``run.json``: stage keys, recorded files, what is up to date).
"""

from workbench.run.config import ConfigError, PipelineConfig, build_config, load_config
from workbench.run.runner import RunResult, StageError, run_pipeline

__all__ = ["ConfigError", "PipelineConfig", "RunResult", "StageError", "build_config", "load_config", "run_pipeline"]
