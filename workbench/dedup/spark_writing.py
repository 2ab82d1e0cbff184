"""The deduplicated splits of a Spark-read input (:mod:`workbench.dedup.spark_source`), written by
Spark: the rows, read again on the executors with their row index, anti-joined with the removed
rows' indices, one folder of part files per split (``<split>/part-*.parquet`` or ``.json``).
The small outputs (``clusters.json``, ``pairs.csv``, ``removed.csv``, ``report.json``) are the
driver's, as for any run (:func:`workbench.dedup.writing.write_small_outputs`; copied to an output
URI by :mod:`workbench.dedup.spark_output`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from workbench.dedup.detection import DedupResult
from workbench.dedup.spark_jobs import run_job
from workbench.dedup.spark_source import INDEX, SPLIT, SparkSource
from workbench.errors import DataError

#: ``--output-format`` values Spark writes, and the Spark writer of each
SPARK_OUTPUT_FORMATS = {"parquet": "parquet", "jsonl": "json"}


def spark_output_format(output_format: str, source: SparkSource) -> str:
    """``parquet`` or ``jsonl``: ``auto`` is the input's format.

    Raises:
        DataError: ``hf`` or ``files``, which Spark does not write.
    """
    if output_format == "auto":
        return "parquet" if source.input_format == "parquet" else "jsonl"
    if output_format not in SPARK_OUTPUT_FORMATS:
        raise DataError(f"--output-format {output_format}: a Spark-read input's splits are written by Spark as "
                        f"parquet or jsonl folders; pass --output-format parquet or jsonl")
    return output_format


def write_spark_splits(spark: Any, source: SparkSource, result: DedupResult, output_dir: str | Path,
                       output_format: str, on_progress: Callable[[int], None] | None = None) -> dict[str, str]:
    """Write the kept rows of each split with Spark into ``output_dir/<split>/`` (replaced if there).

    Args:
        spark: the session; source: the input as read; result: the run (its ``removed`` rows).
        output_dir: the output folder, a local path or a URI Spark writes to.
        output_format: ``parquet`` or ``jsonl`` (see :func:`spark_output_format`).
        on_progress: called with 1 after each split.

    Returns:
        ``split:<name>`` -> the folder written.

    Raises:
        SparkJobError: a write failed (names the split).
    """
    from pyspark.sql import functions as F

    removed = spark.createDataFrame([(index,) for index in sorted(result.removed)], f"{INDEX} long")
    kept = source.frame.join(F.broadcast(removed), on=INDEX, how="left_anti")
    several = len(result.rows.split_ranges) > 1
    if several:
        # the rows are indexed in Python from a read of every input file, which Spark cannot prune by split (a
        # --split-column's splits are in every file): kept once, else each split's write reads the whole input
        from pyspark import StorageLevel

        kept = kept.persist(StorageLevel.MEMORY_AND_DISK)
    columns = [c for c in source.frame.columns if c not in (INDEX, SPLIT)]
    written: dict[str, str] = {}
    base = str(output_dir).rstrip("/")
    try:
        for split in result.rows.split_ranges:
            folder = f"{base}/{split.replace('/', '_')}"
            rows = kept.where(F.col(SPLIT) == split).sortWithinPartitions(INDEX).select(*columns)
            # Spark's JSON writer drops null fields by default; the local engine (and the input) keep them
            writer = rows.write.mode("overwrite").option("ignoreNullFields", "false")
            run_job(f"write split {split}", lambda: getattr(writer, SPARK_OUTPUT_FORMATS[output_format])(folder))
            written[f"split:{split}"] = folder
            if on_progress:
                on_progress(1)
    finally:
        if several:
            kept.unpersist()
    return written
