"""``workbench execute``: run generated code against tests in a sandbox.

Python API::

    from workbench.execution import ExecutionConfig, run_execute
    summary = run_execute("generations.jsonl", "results.jsonl", ExecutionConfig())

Modules: :mod:`~workbench.execution.isolation` (which sandbox, its command line),
:mod:`~workbench.execution.limits` (rlimits), :mod:`~workbench.execution.processes`
(killing process trees), :mod:`~workbench.execution.sandbox` (one sample),
:mod:`~workbench.execution.status` (a sample's status from what the sandbox observed),
:mod:`~workbench.execution.timeouts` (evalplus-style calibration),
:mod:`~workbench.execution.result_file` (jsonl rows, resume),
:mod:`~workbench.execution.config` (the options) and
:mod:`~workbench.execution.job` (the whole run: data, workers, progress; imported on use,
since it pulls in ``datasets``).
"""

from workbench.execution.config import ExecutionConfig
from workbench.execution.isolation import Isolation, IsolationLevel, SandboxUnavailableError, detect_isolation
from workbench.execution.limits import ResourceLimits
from workbench.execution.sandbox import Sandbox, new_token
from workbench.execution.status import SampleOutcome

__all__ = [
    "ExecutionConfig",
    "Isolation",
    "IsolationLevel",
    "ResourceLimits",
    "SampleOutcome",
    "Sandbox",
    "SandboxUnavailableError",
    "detect_isolation",
    "new_token",
    "run_execute",
]


def __getattr__(name: str):
    # the job module imports `datasets`; only a caller that runs a job pays for it
    if name == "run_execute":
        from workbench.execution.job import run_execute

        return run_execute
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
