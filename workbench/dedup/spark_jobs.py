"""Running one Spark job of ``--engine spark`` and the error a failed one becomes.

Shared by the Spark engine (:mod:`workbench.dedup.spark`), its reader
(:mod:`workbench.dedup.spark_source`) and its writer (:mod:`workbench.dedup.spark_writing`): every
Spark action they run goes through :func:`run_job`, so a failure on the executors or in the JVM is
one :class:`SparkJobError` naming the stage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.errors import WorkbenchError


class SparkJobError(WorkbenchError):
    """A Spark job failed (an executor error, a lost cluster); the message names the stage."""


def run_job(stage: str, job: Callable[[], Any]) -> Any:
    """Run a Spark action; a failed job becomes a :class:`SparkJobError` naming the stage.

    Args:
        stage: what the job does, in words (``"read input"``), for the message.
        job: calls the Spark action (``frame.collect``, ``lambda: frame.write.parquet(path)``).

    Returns:
        what ``job`` returns.

    Raises:
        SparkJobError: ``job`` raised a py4j error (from the JVM) or an error of pyspark's own:
            one line, ``Spark job '<stage>' failed: <first line of the error>``.
        Exception: any other error of ``job``, unchanged (a bug, or a DataError the job raised).
    """
    from py4j.protocol import Py4JError

    try:
        return job()
    except Py4JError as error:
        message = str(error).strip().splitlines()
        raise SparkJobError(f"Spark job '{stage}' failed: {message[0] if message else error}") from error
    except Exception as error:
        if type(error).__module__.startswith("pyspark"):
            raise SparkJobError(f"Spark job '{stage}' failed: {str(error).splitlines()[0]}") from error
        raise
