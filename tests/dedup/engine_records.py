"""What report.json records of the engine that made it (``parameters.engine`` and, for Spark, its
settings and ``work.spark_partitions``), taken away where a Spark run's report is compared with the
local engine's."""

from __future__ import annotations

#: the report's parameters only a Spark run records
ENGINE_SETTINGS = ("spark_master", "spark_partitions", "input_format", "input_format_requested", "spark_conf")


def without_engine(report: dict) -> dict:
    """``report`` (changed in place and returned) without the records of its engine."""
    for key in ("engine", *ENGINE_SETTINGS):
        report["parameters"].pop(key, None)
    report["work"].pop("spark_partitions", None)
    return report
