"""``workbench execute``: run generated code against tests in a sandbox.

Python API::

    from workbench.execute import ExecutionConfig, run_execute
    summary = run_execute("generations.jsonl", "results.jsonl", ExecutionConfig())

Modules: :mod:`~workbench.execute.isolation` (which sandbox, its command line),
:mod:`~workbench.execute.limits` (rlimits), :mod:`~workbench.execute.processes`
(killing process trees), :mod:`~workbench.execute.sandbox` (one sample),
:mod:`~workbench.execute.zygote` (a worker's pre-started interpreter that forks its samples;
:mod:`~workbench.execute.zygote_server` runs inside its sandbox),
:mod:`~workbench.execute.status` (a sample's status from what the sandbox observed),
:mod:`~workbench.execute.timeouts` (evalplus-style calibration),
:mod:`~workbench.execute.result_file` (jsonl rows, resume),
:mod:`~workbench.execute.config` (the options) and
:mod:`~workbench.execute.job` (the whole run: data, workers, progress; imported on use,
since it pulls in ``datasets``).
"""

from workbench.execute.config import ExecutionConfig
from workbench.execute.isolation import Isolation, IsolationLevel, SandboxUnavailableError, detect_isolation
from workbench.execute.limits import ResourceLimits
from workbench.execute.sandbox import Sandbox, new_token
from workbench.execute.status import SampleOutcome

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
        from workbench.execute.job import run_execute

        return run_execute
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
