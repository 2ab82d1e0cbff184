"""The output folder of a Spark-read run (:mod:`workbench.dedup.spark_source`) given as a URI
Spark writes: ``s3a://``, ``hdfs://``, ``gs://``, ``abfss://`` ... (a ``file://`` URI is the local
folder it names, :mod:`workbench.dedup.output_folder`'s :class:`~workbench.dedup.output_folder.LocalFolder`).

On a cluster the executors write the deduplicated splits where they run, so a local ``-o`` would
scatter part files over the workers' disks. With a URI, Spark writes the splits to
``<uri>/<staging>/<split>/`` (:mod:`workbench.dedup.spark_writing`) and the driver's small outputs
(``clusters.json``, ``pairs.csv``, ``removed.csv``, ``report.json`` ...) are written as for any run
into a local temporary folder, then copied to ``<uri>/<staging>/`` through Hadoop's file system for
the scheme, from the session's JVM: the same connector and ``spark.hadoop.*`` settings serve the
input and the output. The folder is then protected and swapped as a local one is
(:func:`~workbench.dedup.output_folder.staged_outputs`): :class:`HadoopFolder` gives those rules
Hadoop's ``FileSystem`` operations (``exists``, ``listStatus``, ``delete``, ``rename``).

Example::

    from workbench.dedup import DedupConfig, run_dedup

    run = run_dedup("s3a://bucket/corpus/", DedupConfig(engine="spark", id_column="id",
                    spark_conf=("spark.jars.packages=org.apache.hadoop:hadoop-aws:3.5.0",)),
                    output_dir="s3a://bucket/deduplicated/")
    run.written["clusters"]   # 's3a://bucket/deduplicated/clusters.json'
"""

from __future__ import annotations

import posixpath
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from workbench.dedup.detection import DedupResult
from workbench.dedup.output_folder import COPYING_RENAMES, before_glob, uri_within
from workbench.dedup.spark_source import unreadable_message
from workbench.dedup.writing import write_small_outputs
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


def resolved_location(spark: Any, uri: str) -> str:
    """Where Hadoop's file system for ``uri`` puts it: ``FileSystem.resolvePath`` of the deepest
    path on the way that exists (a mount, such as ``viewfs://``, names its target; a folder not
    made yet keeps its remaining parts), the path cut at a glob (``data/*.jsonl`` is ``data``).
    A location on the local file system is given as a ``file://`` URI of its path with links
    resolved (:meth:`pathlib.Path.resolve`), so that it compares with a local path.

    Args:
        spark: the session (its Hadoop configuration carries the mount tables and ``spark.hadoop.*``).
        uri: a SOURCE or output URI (``viewfs://t/d/out``, ``file:///data/*.jsonl``, ``s3a://b/k``).

    Returns:
        the resolved URI (``file:///tmp/x/out``); ``uri`` as written, but cut at a glob, when Hadoop
        cannot look it up (no connector here, a refused look-up: said by the read or write later).
    """
    from py4j.protocol import Py4JError

    parsed = urlparse(uri)
    # not unquoted: Hadoop's Path takes the text literally (``a%20b`` is a folder of that name, as
    # Spark reads and writes it); only the URI Hadoop gives back below is %-encoded
    parts = before_glob([part for part in posixpath.normpath(parsed.path or "/").split("/") if part])
    written = f"{parsed.scheme}://{parsed.netloc}/{'/'.join(parts)}"
    jvm = spark.sparkContext._jvm
    try:
        path = jvm.org.apache.hadoop.fs.Path(written)
        system = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        rest: list[str] = []
        while not system.exists(path) and path.getParent() is not None:
            rest.insert(0, str(path.getName()))
            path = path.getParent()
        found = urlparse(str(system.resolvePath(path).toUri().toString()))
    except Py4JError:
        return written
    if found.scheme.lower() == "file":
        return Path(unquote(found.path)).resolve().joinpath(*rest).as_uri()
    return f"{found.scheme}://{found.netloc}{posixpath.join(unquote(found.path) or '/', *rest)}"


class HadoopFolder:
    """A :class:`~workbench.dedup.output_folder.Folder` at a URI, through Hadoop's ``FileSystem``
    for its scheme (an instance of its own, closed by :meth:`close`: not the cached one Spark's
    writers share, so turning off the ``.crc`` files a local-like file system writes beside a file
    does not touch Spark's).

    Args:
        spark: the session (its Hadoop configuration carries the ``spark.hadoop.*`` settings).
        uri: the folder, e.g. ``s3a://bucket/out/`` (checked by :func:`check_output_folder`).

    Raises:
        DataError: no file system for the scheme, or an operation failed (Hadoop's reason).
    """

    def __init__(self, spark: Any, uri: str) -> None:
        from py4j.protocol import Py4JError

        self.where = uri
        self.uri = uri.rstrip("/")
        self._spark = spark
        self._jvm = spark.sparkContext._jvm
        self.cheap_renames = urlparse(uri).scheme.lower() not in COPYING_RENAMES
        try:
            self._system = self._jvm.org.apache.hadoop.fs.FileSystem.newInstance(
                self._path("").toUri(), spark.sparkContext._jsc.hadoopConfiguration())
            self._system.setWriteChecksum(False)
        except Py4JError as error:
            raise DataError(unreadable_message(spark, uri, error, action="write")) from None

    def path_of(self, name: str) -> str:
        return f"{self.uri}/{name}" if name else self.uri

    def holds(self, name: str, source: str) -> bool:
        """Whether the run's input ``source`` (a URI; a glob from its folder on) lies in ``name``,
        compared where Hadoop's file systems put both (:func:`resolved_location`, as the check of
        the output over the input does): a ``file://`` SOURCE in this ``viewfs://`` folder, or
        one seen through another mount table, is in it. Local locations are compared as paths
        (links resolved), others as URIs (:func:`~workbench.dedup.output_folder.uri_within`)."""
        inner, outer = resolved_location(self._spark, source), resolved_location(self._spark, self.path_of(name))
        if urlparse(inner).scheme.lower() == urlparse(outer).scheme.lower() == "file":
            return Path(unquote(urlparse(inner).path)).is_relative_to(Path(unquote(urlparse(outer).path)))
        return uri_within(inner, outer)

    def _path(self, name: str) -> Any:
        return self._jvm.org.apache.hadoop.fs.Path(self.path_of(name))

    def _call(self, what: str, name: str, action: Any) -> Any:
        from py4j.protocol import Py4JError

        try:
            return action()
        except Py4JError as error:
            raise DataError(f"{self.path_of(name)}: {what} failed ({_reason(error)})") from None

    def exists(self, name: str) -> bool:
        return bool(self._call("looking it up", name, lambda: self._system.exists(self._path(name))))

    def is_dir(self, name: str) -> bool:
        return self.exists(name) and bool(self._call("looking it up", name,
                                                     lambda: self._system.getFileStatus(self._path(name)).isDirectory()))

    def children(self, name: str = "") -> list[str]:
        found = self._call("listing it", name, lambda: self._system.listStatus(self._path(name)))
        return sorted(status.getPath().getName() for status in found)

    def read_text(self, name: str) -> str | None:
        from py4j.protocol import Py4JError

        try:
            if not self._system.exists(self._path(name)):
                return None
            stream = self._system.open(self._path(name))
            try:
                return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
            finally:
                stream.close()
        except Py4JError:
            return None

    def write_text(self, name: str, text: str) -> None:
        def write() -> None:
            stream = self._system.create(self._path(name), True)
            try:
                stream.write(bytearray(text.encode("utf-8")))
            finally:
                stream.close()

        self._call("writing it", name, write)

    def make_dir(self, name: str) -> None:
        self._call("creating it", name, lambda: self._system.mkdirs(self._path(name)))

    def remove(self, name: str) -> None:
        self._call("deleting it", name, lambda: self._system.delete(self._path(name), True))

    def rename(self, name: str, new: str) -> None:
        if not self._call(f"renaming it to {self.path_of(new)}", name,
                          lambda: self._system.rename(self._path(name), self._path(new))):
            raise DataError(f"{self.path_of(name)}: renaming it to {self.path_of(new)} failed (Hadoop said no)")

    def copy_in(self, local: Path, name: str) -> None:
        """Copy the local file ``local`` to ``name`` (``FileSystem.copyFromLocalFile``, replacing)."""
        source = self._jvm.org.apache.hadoop.fs.Path(local.resolve().as_uri())
        self._call("copying it there", name, lambda: self._system.copyFromLocalFile(False, True, source, self._path(name)))

    def close(self) -> None:
        self._system.close()


def write_result_files_at(result: DedupResult, report: dict, folder: HadoopFolder, staging: str, *,
                          skipped_files: Sequence = (), split_outputs: Sequence[str] = ()) -> dict[str, str]:
    """Write the small outputs of a run (:func:`~workbench.dedup.writing.write_small_outputs`)
    into a local temporary folder, then copy them into ``staging`` of ``folder`` (the staging
    folder of :func:`~workbench.dedup.output_folder.staged_outputs`).

    Args:
        result, report: the run and its report dict; folder: the output folder; staging: the
            staging folder's name in it. skipped_files: the data files found but not read (``unreadable.csv``).
        split_outputs: the split folders Spark writes there next, recorded in ``manifest.json``.

    Returns:
        output name -> the URI of the file staged (``clusters`` -> ``<uri>/<staging>/clusters.json`` ...).

    Raises:
        DataError: Hadoop could not write there (its reason; the local copy is gone).
    """
    written: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="workbench-dedup-") as local:
        staged = write_small_outputs(result, report, Path(local), skipped_files=list(skipped_files),
                                     split_outputs=list(split_outputs))
        for key, path in staged.items():
            name = f"{staging}/{Path(path).name}"
            folder.copy_in(Path(path), name)
            written[key] = folder.path_of(name)
    return written


def _reason(error: BaseException) -> str:
    """The first line of a py4j error that names a Java exception (the rest is the JVM's stack)."""
    lines = str(error).strip().splitlines()
    return next((line.strip() for line in lines if "Exception" in line), lines[0] if lines else repr(error))
