"""``workbench execute``: run generated code against tests in a sandbox.

Python API::

    from workbench.execution import ExecutionConfig, execute_generations
    summary = execute_generations("generations.jsonl", "results.jsonl", ExecutionConfig())

Modules: :mod:`~workbench.execution.isolation` (which sandbox, its command line),
:mod:`~workbench.execution.limits` (rlimits), :mod:`~workbench.execution.processes`
(killing process trees), :mod:`~workbench.execution.sandbox` (one sample),
:mod:`~workbench.execution.status` (a sample's status from what the sandbox observed),
:mod:`~workbench.execution.timeouts` (evalplus-style calibration),
:mod:`~workbench.execution.results` (jsonl rows, resume) and
:mod:`~workbench.execution.job` (the whole run: data, workers, progress).
"""

from workbench.execution.isolation import Isolation, IsolationLevel, SandboxUnavailableError, detect_isolation
from workbench.execution.limits import ResourceLimits
from workbench.execution.sandbox import Sandbox, new_token
from workbench.execution.status import SampleOutcome

__all__ = [
    "Isolation",
    "IsolationLevel",
    "ResourceLimits",
    "SampleOutcome",
    "Sandbox",
    "SandboxUnavailableError",
    "detect_isolation",
    "new_token",
]
