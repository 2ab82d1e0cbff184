"""The output folder of a Spark-read run (:mod:`workbench.dedup.spark_source`) given as a URI
Spark writes: ``s3a://``, ``hdfs://``, ``gs://``, ``abfss://``, ``file://`` ...

On a cluster the executors write the deduplicated splits where they run, so a local ``-o`` would
scatter part files over the workers' disks. With a URI, Spark writes the splits to ``<uri>/<split>/``
(:mod:`workbench.dedup.spark_writing`) and the driver's small outputs (``clusters.json``,
``pairs.csv``, ``removed.csv``, ``report.json`` ...) are written as for any run into a local staging
folder, then copied to ``<uri>/`` through Hadoop's file system for the scheme, from the session's
JVM: the same connector and ``spark.hadoop.*`` settings serve the input and the output.

Example::

    from workbench.dedup import DedupConfig, run_dedup

    run = run_dedup("s3a://bucket/corpus/", DedupConfig(engine="spark", id_column="id",
                    spark_conf=("spark.jars.packages=org.apache.hadoop:hadoop-aws:3.5.0",)),
                    output_dir="s3a://bucket/deduplicated/")
    run.written["clusters"]   # 's3a://bucket/deduplicated/clusters.json'
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.dedup.detection import DedupResult
from workbench.dedup.spark_source import unreadable_message
from workbench.dedup.output_folder import OPTIONAL_OUTPUTS
from workbench.dedup.writing import write_result_files
from workbench.errors import DataError


def check_output_folder(spark: Any, uri: str) -> None:
    """Check, before any long step, that Hadoop has a file system for ``uri``'s scheme here and
    that ``uri`` is not an existing file (one round trip to the store: it also tries the
    credentials and the bucket or name node). Nothing is created.

    Args:
        spark: the session (its Hadoop configuration carries the ``spark.hadoop.*`` settings).
        uri: the output folder, e.g. ``s3a://bucket/out/``.

    Raises:
        DataError: no file system for the scheme (naming the connector to add, as for an input:
            :func:`~workbench.dedup.spark_source.unreadable_message`), the store refused the
            look-up (Hadoop's reason), or ``uri`` is a file.
    """
    from py4j.protocol import Py4JError

    path = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(uri)
    try:
        system = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        is_file = system.exists(path) and not system.getFileStatus(path).isDirectory()
    except Py4JError as error:
        raise DataError(unreadable_message(spark, uri, error, action="write")) from None
    if is_file:
        raise DataError(f"{uri}: the output path exists and is not a folder")


def write_result_files_at(spark: Any, result: DedupResult, report: dict, uri: str, *,
                          skipped_files: Sequence = (), split_outputs: Sequence[str] = ()) -> dict[str, str]:
    """Write the small outputs of a run (:func:`~workbench.dedup.writing.write_result_files`)
    into a local staging folder, then copy them to ``uri`` (created if needed; files there of
    the same names replaced, and the optional outputs this run does not write removed, as a
    reused local folder is treated).

    Args:
        spark: the session; result, report: the run and its report dict.
        uri: the output folder (checked before by :func:`check_output_folder`).
        skipped_files: the data files found but not read (``unreadable.csv``).
        split_outputs: the split folders Spark writes there next, recorded in ``manifest.json``.

    Returns:
        output name -> the URI of the file written (``clusters`` -> ``<uri>/clusters.json`` ...).

    Raises:
        DataError: Hadoop could not write there (its reason; the local staging copy is gone).
    """
    base = uri.rstrip("/")
    with tempfile.TemporaryDirectory(prefix="workbench-dedup-") as staging:
        staged = write_result_files(result, report, staging, skipped_files=list(skipped_files),
                                    split_outputs=list(split_outputs))
        copy_to_uri(spark, {name: Path(path) for name, path in staged.items()}, base,
                    remove=[name for name in OPTIONAL_OUTPUTS if name not in {Path(p).name for p in staged.values()}])
    return {name: f"{base}/{Path(path).name}" for name, path in staged.items()}


def copy_to_uri(spark: Any, files: dict[str, Path], uri: str, remove: Sequence[str] = ()) -> None:
    """Copy local ``files`` into the folder ``uri`` under their own names, through Hadoop's
    ``FileSystem.copyFromLocalFile``, and delete the names in ``remove`` there.

    Args:
        spark: the session; files: name -> local file; uri: the folder (no trailing ``/``).
        remove: file names to delete in ``uri`` if present (a previous run's optional outputs).

    Raises:
        DataError: a copy or delete failed (Hadoop's reason).
    """
    from py4j.protocol import Py4JError

    gateway = spark.sparkContext._jvm
    folder = gateway.org.apache.hadoop.fs.Path(uri)
    try:
        # an instance of our own (not the cached one Spark's writers share), so turning off the
        # .crc files a local file system's create() writes beside a file does not touch Spark's
        system = gateway.org.apache.hadoop.fs.FileSystem.newInstance(folder.toUri(), spark.sparkContext._jsc.hadoopConfiguration())
    except Py4JError as error:
        raise DataError(unreadable_message(spark, uri, error, action="write")) from None
    try:
        system.setWriteChecksum(False)
        system.mkdirs(folder)
        for local in files.values():
            target = gateway.org.apache.hadoop.fs.Path(f"{uri}/{local.name}")
            system.copyFromLocalFile(False, True, gateway.org.apache.hadoop.fs.Path(local.resolve().as_uri()), target)
        for name in remove:
            system.delete(gateway.org.apache.hadoop.fs.Path(f"{uri}/{name}"), False)
    except Py4JError as error:
        raise DataError(f"{uri}: writing the outputs there failed ({_reason(error)})") from None
    finally:
        system.close()


def _reason(error: BaseException) -> str:
    """The first line of a py4j error that names a Java exception (the rest is the JVM's stack)."""
    lines = str(error).strip().splitlines()
    return next((line.strip() for line in lines if "Exception" in line), lines[0] if lines else repr(error))
