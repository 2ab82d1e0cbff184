"""``--engine spark`` input that Spark reads itself: a ``file://``, ``s3a://``, ``hdfs://``,
``gs://``, ``abfss://`` ... URI of a JSON Lines or Parquet file, folder or glob. The rows' texts
stay on the executors; the driver gets one small record per row (id, split, group, language).

Row order (the row index every output is built on), the local loader's order for the same files:

* the files read, and their order: the file-named splits by the rule the local loader reads a
  folder by (:func:`workbench.data.data_file_splits.folder_splits`, ``datasets``' rule:
  ``train-00000-of-00002.parquet``, ``data/test/...``; a file named alone, or files that name no
  split: ``train``) in ``datasets``' split order, each split's files in path order; files that
  name no split while others do are not read, said and listed as the local loader does
  (:func:`split_files`); with ``--split-column`` too, whose splits are then the column's values
  in order of first appearance over those files (as the local loader regroups a table);
* a column typed differently by the files but of one kind (integers and floats; nulls only and
  text) is read as one wider type (:func:`workbench.data.column_types.widened_types`), as the
  local loader reads it; two kinds are refused, and so are data files of two formats;
* inside a file, the rows in file order: Spark reads a file in blocks (``_metadata.file_block_start``)
  and each block whole, in order, inside one partition; so a running count per (split, file,
  block) in each partition is the row's position there, and the driver lays the blocks out in
  (split, file path, block start) order (:func:`read_rows`). Parquet and JSON Lines alike; no
  ``monotonically_increasing_id`` and no shuffle of the rows is needed.

Example::

    from workbench.dedup import DedupConfig, run_dedup

    run_dedup("s3a://bucket/corpus/", DedupConfig(engine="spark", id_column="id",
              spark_conf=("spark.jars.packages=org.apache.hadoop:hadoop-aws:3.5.0",)), output_dir="out/")
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote

from workbench.data.data_file_splits import (
    METADATA_REASON,
    NOT_DATA_REASON,
    SPECIAL_FOLDER_REASON,
    UNMATCHED_REASON,
    FolderSplits,
    folder_splits,
    mixed_formats_message,
    say_unread,
)
from workbench.data.column_types import (
    clash_message,
    field_clash_message,
    first_clash,
    first_field_clash,
    first_item_clash,
    kind_of,
    widened_types,
)
from workbench.data.language_column import language_value
from workbench.data.loading import (
    BROKEN_LINK_REASON,
    COLUMNLESS_PARQUET,
    SPLIT_CELL_NEED,
    SkippedFile,
    broken_link_message,
    empty_parquet_message,
    json_no_rows_message,
    missing_cells_message,
    nothing_read_message,
    refuse_missing_cells,
    value_kind,
)
from workbench.dedup.rows import LANGUAGE_COLUMN, DedupRows, _check_unique, column_options
from workbench.dedup.spark_jobs import SparkJobError, run_job
from workbench.errors import DataError, MissingColumnError, MissingSplitError
from workbench.formatting import count
from workbench.option_words import option_named

#: the formats Spark reads here, by file suffix (``.gz`` stripped first)
SUFFIX_FORMATS = {".parquet": "parquet", ".jsonl": "json", ".json": "json"}
#: what a URI scheme needs on the classpath, for the message when Spark has no file system for it
CONNECTORS = {
    "s3a": "the hadoop-aws package: --spark-conf spark.jars.packages=org.apache.hadoop:hadoop-aws:{hadoop}",
    "s3": "the hadoop-aws package and the s3a:// scheme: --spark-conf spark.jars.packages="
          "org.apache.hadoop:hadoop-aws:{hadoop}, and write s3a:// for s3://",
    "gs": "the Cloud Storage connector: --spark-conf spark.jars=gcs-connector-hadoop3-latest.jar --spark-conf "
          "spark.hadoop.fs.gs.impl=com.google.cloud.hadoop.fs.gcs.GoogleHadoopFileSystem",
    "abfss": "the hadoop-azure package: --spark-conf spark.jars.packages=org.apache.hadoop:hadoop-azure:{hadoop}",
    "abfs": "the hadoop-azure package: --spark-conf spark.jars.packages=org.apache.hadoop:hadoop-azure:{hadoop}",
    "wasbs": "the hadoop-azure package: --spark-conf spark.jars.packages=org.apache.hadoop:hadoop-azure:{hadoop}",
}
#: helper columns the read adds (dropped before the splits are written)
SPLIT, FILE, BLOCK, INDEX = "_wb_split", "_wb_file", "_wb_block", "_wb_index"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def is_spark_uri(source: object) -> bool:
    """``source`` is a URI with a scheme (``file://``, ``s3a://``, ``hdfs://`` ...) for Spark to read
    (``http(s)://`` and ``hf://`` stay with the local loader)."""
    if not isinstance(source, str):
        return False
    match = _SCHEME.match(source)
    return match is not None and match.group(1).lower() not in ("http", "https", "hf")


@dataclass
class SparkSource:
    """Rows Spark read, indexed in the local loader's order.

    Attributes:
        rows: the driver's :class:`DedupRows` (ids, splits, languages, groups; ``codes`` empty:
            the texts stay on the executors, see :class:`SomeCodes`).
        frame: the rows as a DataFrame, every input column plus ``_wb_split`` and ``_wb_index``
            (what the deduplicated splits are written from; a second read of the input).
        items: an RDD of ``(index, code, language, group)`` (what the tokenizer takes).
        keyed: the persisted read the items come from.
        input_format: ``parquet`` or ``json``.
        files: the data files read, in order.
        skipped: the data files found but not read (relative to the folder), as the local
            loader lists them (:attr:`workbench.data.loading.LoadedDataset.skipped`).
    """

    rows: DedupRows
    frame: Any
    items: Any
    keyed: Any
    input_format: str
    files: list[str]
    skipped: list[SkippedFile] = field(default_factory=list)

    def release(self) -> None:
        """Unpersist what the read keeps on the executors."""
        self.keyed.unpersist()


class SomeCodes:
    """The code cells the driver holds of a Spark-read input: only those it asked for (rows below
    ``min_tokens`` for the identical-text pass, rows parsed with errors for ``skipped.csv``).

    Args:
        codes: row index -> code cell; n: the number of rows.
    """

    def __init__(self, codes: dict[int, Any], n: int) -> None:
        self.codes, self.n = codes, n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, index: int) -> Any:
        try:
            return self.codes[index]
        except KeyError:
            raise KeyError(f"row {index}'s text was not brought to the driver (it stays on the executors)") from None


# ---------------------------------------------------------------- listing and checking the input


@dataclass
class Listing:
    """What :func:`list_files` found: ``format`` (``parquet`` or ``json``), the file URIs sorted,
    the folder (``root``, ending in ``/``) the split names are read relative to, and whether the
    source named one file (``one_file``: it is ``train``, as the local loader reads a file alone)."""

    format: str
    files: list[str]
    root: str
    one_file: bool
    skipped: list[SkippedFile] = field(default_factory=list)


def list_files(spark: Any, source: str, input_format: str = "auto") -> Listing:
    """The data files under ``source`` (a file, a folder, searched recursively, or a glob), sorted,
    listed through Hadoop's file system for its scheme: quick, and before any long step.

    Returns:
        a :class:`Listing`.

    Raises:
        DataError: no file system for the scheme (naming the connector to add), nothing at
            ``source``, no data files, or files of mixed or unknown formats.
    """
    from py4j.protocol import Py4JError

    gateway = spark.sparkContext._jvm
    path = gateway.org.apache.hadoop.fs.Path(source)
    try:
        system = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        found = system.globStatus(path)
        files: list[str] = []
        root = None
        for status in found or []:
            if status.isDirectory():
                root = status.getPath().toString() if len(found) == 1 else None
                listing = system.listFiles(status.getPath(), True)
                while listing.hasNext():
                    files.append(listing.next().getPath().toString())
            else:
                files.append(status.getPath().toString())
    except Py4JError as error:
        raise DataError(unreadable_message(spark, source, error)) from None
    if not found:
        local = _local_path(source)
        if local is not None and os.path.islink(local):  # as the local loader says it
            raise DataError(broken_link_message(source, local))
        raise DataError(f"{source}: no such file or folder (Spark's file system for it found nothing there)")
    prefix = (root.rstrip("/") + "/") if root else _common_folder(files)
    # a link first where the local loader meets it first (a link named __linked is no __* folder to it)
    files, links = _not_through_links(sorted(files), prefix, underscore=input_format != "auto")
    files, skipped = _not_hidden(files, prefix, underscore=input_format != "auto")
    if root is not None:  # a folder's broken links, which Hadoop's listing leaves out without a word
        links, skipped = _with_broken_links(prefix, links, skipped, underscore=input_format != "auto")
    skipped[:0] = links  # the local loader's order: links, then the hidden files
    if not files:  # in the local loader's words: its broken links alone, what is there and left out, or an empty folder
        raise DataError(nothing_read_message(source, skipped))
    saved = next((name for name in ("dataset_dict.json", "state.json") if prefix + name in files), None)
    if saved is not None and any(file.endswith(".arrow") for file in files):  # the local loader's load_from_disk
        raise DataError(f"{source}: a folder datasets' save_to_disk wrote ({saved}): its rows are in .arrow files, "
                        f"which Spark does not read; dedup it with the local engine (without --engine spark), or "
                        f"write it as Parquet or JSON Lines first")
    if input_format == "auto":
        kinds = {file: _format_of(file) for file in files}
        unknown = [file for file, kind in kinds.items() if kind is None]
        # a dataset snapshot's README.md or LICENSE beside its data files: listed and not read, as the local
        # loader does; a CSV or source file, or a folder of no data file at all, is refused with advice
        refused = [file for file in unknown if _refused_beside_data(file)]
        if unknown and (len(unknown) == len(files) or refused):
            raise DataError(_unknown_format_message(source, (refused or unknown)[0]))
        files = [file for file in files if kinds[file] is not None]
        skipped[:0] = [SkippedFile(file[len(prefix):], NOT_DATA_REASON, no_split=True) for file in unknown]
        kinds = {file: kinds[file] for file in files}
        # the local loader's refusal in its words; datasets' metadata files (dataset_info.json) are not data
        mixed = mixed_formats_message(source, {file[len(prefix):]: kind for file, kind in kinds.items()})
        if mixed is not None:
            raise DataError(mixed)
        from datasets.data_files import FILES_TO_IGNORE

        data = [kind for file, kind in kinds.items() if file.rsplit("/", 1)[-1] not in FILES_TO_IGNORE]
        input_format = Counter(data or kinds.values()).most_common(1)[0][0]
    return Listing(input_format, files, prefix, one_file=len(found) == 1 and not found[0].isDirectory(),
                   skipped=skipped)


def _local_path(source: str) -> str | None:
    """The path a ``file:`` URI names on this machine (``None`` for another scheme)."""
    from urllib.parse import urlparse

    parsed = urlparse(source)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def _suffix(file: str) -> str:
    """The lower-cased suffix of a file URI's name, ``.gz`` aside (``x.CSV.gz`` -> ``.csv``); ``""`` for none."""
    name = file.rsplit("/", 1)[-1]
    stem = name[:-3] if name.lower().endswith(".gz") else name
    return ("." + stem.rsplit(".", 1)[-1].lower()) if "." in stem else ""


def _refused_beside_data(file: str) -> bool:
    """A file Spark does not read that a folder of data files must not hold either: a CSV file (the
    local loader would read it) or a source file (the local loader refuses a folder mixing them)."""
    suffix = _suffix(file)
    if suffix == ".csv":
        return True
    from workbench.languages.registry import extension_claimants

    return bool(suffix) and bool(extension_claimants(suffix))


def _unknown_format_message(source: str, file: str) -> str:
    """What to say of a file Spark does not read here: what Spark reads, and for a CSV file or a
    source file (which the local loader reads) where to give it instead."""
    from urllib.parse import unquote, urlparse

    name = file.rsplit("/", 1)[-1]
    suffix = _suffix(file)
    if suffix == ".csv":
        what = "a CSV file"
    else:
        from workbench.languages.registry import extension_claimants

        what = f"a source file ({name})" if suffix and extension_claimants(suffix) else None
    said = (f"{source}: cannot tell the format of {shown_uri(file)}" + (f" ({what})" if what else "")
            + ": Spark reads JSON Lines and Parquet here (.jsonl, .json, .parquet, optionally .gz; for other names "
              "pass --input-format json or parquet)")
    if what is None:
        return said
    parsed = urlparse(source)
    if parsed.scheme.lower() == "file" and parsed.netloc in ("", "localhost"):
        where = f"give its local path ({unquote(parsed.path).rstrip('/') or '/'}) instead of the URI"
    else:
        where = "copy it to a local path, or convert it to JSON Lines or Parquet"
    return (f"{said}; CSV files and folders of source files are read by the local loader (the driver loads "
            f"them, with --engine spark too): {where}")


def unreadable_message(spark: Any, source: str, error: BaseException, action: str = "read") -> str:
    """What to say when Spark cannot open ``source``: its reason, and for a scheme without a file
    system the connector it needs (``s3a://`` -> hadoop-aws, with this Spark's Hadoop version).

    Args:
        spark: the session; source: the URI; error: what Hadoop raised (through py4j).
        action: ``read`` (an input) or ``write`` (an output folder,
            :mod:`workbench.dedup.spark_output`): the verb of the message.

    Returns:
        one line: ``<uri>: Spark cannot <action> s3a:// here: it needs the hadoop-aws package: ...``.
    """
    reason = str(error).strip().splitlines()
    cause = next((line for line in reason if "Exception" in line), reason[0] if reason else repr(error))
    scheme = (_SCHEME.match(source).group(1) if _SCHEME.match(source) else "").lower()
    missing = ("No FileSystem for scheme" in str(error) or "ClassNotFoundException" in str(error)
               or "UnsupportedFileSystemException" in str(error))
    if missing:
        try:
            hadoop = spark.sparkContext._jvm.org.apache.hadoop.util.VersionInfo.getVersion()
        except Exception:  # py4j: the version is only a hint
            hadoop = "<your Spark's Hadoop version>"
        needs = CONNECTORS.get(scheme, f"a Hadoop file system for {scheme}:// on Spark's classpath (spark.jars.packages)")
        return f"{source}: Spark cannot {action} {scheme}:// here: it needs {needs.format(hadoop=hadoop)} ({cause.strip()})"
    return f"{source}: Spark cannot {action} it ({cause.strip()})"


def _format_of(file: str) -> str | None:
    name = file.rsplit("/", 1)[-1].lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return next((kind for suffix, kind in SUFFIX_FORMATS.items() if name.endswith(suffix)), None)


def _not_hidden(files: list[str], prefix: str, *, underscore: bool) -> tuple[list[str], list[SkippedFile]]:
    """The files to read, and the hidden ones, listed as the local loader lists them in a folder of data
    files (:func:`workbench.data.loading._hidden_entry`, in no split): a name starting with ``.``
    (``.part-0.crc``, ``.git/``) or ``__pycache__``, and a folder named ``__*`` (``__extra/``: ``datasets`` reads
    no file in one, :data:`~workbench.data.data_file_splits.SPECIAL_FOLDER_REASON`); one entry for a hidden
    folder, none for its files. With
    ``underscore`` (``--input-format`` given: every file is read as data), names starting with
    ``_`` (Spark's ``_SUCCESS``, ``_temporary/``) are hidden too, and listed.

    Args:
        files: the file URIs, sorted; prefix: the folder they are relative to.
    """
    from workbench.data.loading import _hidden_entry

    kept: list[str] = []
    skipped: dict[str, SkippedFile] = {}
    for file in files:
        relative = file[len(prefix):] if file.startswith(prefix) else file.rsplit("/", 1)[-1]
        parts = [part for part in relative.split("/") if part]
        hidden = _hidden_at(parts, underscore)
        if hidden is None:
            kept.append(file)
            continue
        name = "/".join(parts[:hidden + 1])
        if name not in skipped:
            folder = hidden + 1 < len(parts)
            if folder and parts[hidden].startswith("__") and parts[hidden] != "__pycache__":
                entry = SkippedFile(name + "/", SPECIAL_FOLDER_REASON, no_split=True)
            else:
                # Spark reads data files alone: a hidden one is in no split, as in the local loader's data folder
                entry = _hidden_entry(_Named(parts[hidden], folder), PurePosixPath(name), no_split=True)
                if parts[hidden].startswith("_") and parts[hidden] != "__pycache__":  # with --input-format
                    entry = SkippedFile(entry.path, entry.reason.replace(
                        "name starts with '.'", "name starts with '_', with --input-format"), no_split=True)
            skipped[name] = entry
    return kept, list(skipped.values())


def _hidden_at(parts: list[str], underscore: bool) -> int | None:
    """The index of the first of ``parts`` (a file's path below the folder, its name last) that hides the file
    (:func:`_not_hidden`), or ``None``: a name starting with ``.``, ``__pycache__``, with ``underscore`` a name
    starting with ``_``, or a folder named ``__*`` (not the file's own name: datasets reads no file in such a
    folder, nor does the local loader)."""
    return next((n for n, part in enumerate(parts) if part.startswith(".") or part == "__pycache__"
                 or (underscore and part.startswith("_")) or (part.startswith("__") and n + 1 < len(parts))), None)


def _not_through_links(files: list[str], prefix: str, *, underscore: bool = False) -> tuple[list[str], list[SkippedFile]]:
    """The files to read, and the symbolic links to folders they were found through, listed as the local loader
    lists them in a folder of data files (in no split): Hadoop's local file system follows a link to a folder,
    where the local loader (and ``datasets``) reads no file through one. Only ``file:`` URIs hold such links.
    A file whose path is hidden (:func:`_hidden_at`) before its link, or at it by a name hidden as such (``.x``,
    not ``__x``: the local loader sees a link there, not a folder), is left to :func:`_not_hidden`.

    Args:
        files: the file URIs, sorted; prefix: the folder they are relative to; underscore: as for
            :func:`_not_hidden`.

    Returns:
        the files not under a link (with those left to :func:`_not_hidden`), and one ``symbolic link to a folder
        (not followed)`` entry per link.
    """
    import os
    from urllib.parse import urlparse

    if not prefix.startswith("file:"):
        return files, []
    base = unquote(urlparse(prefix).path)
    kept: list[str] = []
    links: dict[str, SkippedFile] = {}
    is_link = functools.lru_cache(maxsize=None)(lambda relative: os.path.islink(os.path.join(base, relative)))
    for file in files:
        relative = file[len(prefix):].split("/") if file.startswith(prefix) else []
        parts = relative[:-1]
        through = next((n for n in range(len(parts)) if is_link(unquote("/".join(parts[:n + 1])))), None)
        hidden = None if through is None else _hidden_at(relative, underscore)
        if through is None or (hidden is not None and (hidden < through or hidden == through and (
                not parts[through].startswith("__") or parts[through] == "__pycache__" or underscore))):
            kept.append(file)
            continue
        name = unquote("/".join(parts[:through + 1]))
        links.setdefault(name, SkippedFile(name, "symbolic link to a folder (not followed)", no_split=True))
    return kept, list(links.values())


def _with_broken_links(prefix: str, links: list[SkippedFile], hidden: list[SkippedFile], *, underscore: bool
                       ) -> tuple[list[SkippedFile], list[SkippedFile]]:
    """``(links, hidden)`` with the broken symbolic links of a ``file:`` folder added, listed as the local loader
    lists them in a folder of data files (:func:`workbench.data.loading._load_folder`, in no split): Hadoop's local
    file system lists no broken link, where the local loader lists each as ``broken symbolic link`` (a hidden one as
    hidden). The folder is walked without following a link to a folder, as the local loader's listing is.

    Args:
        prefix: the folder's URI, ending with ``/``; links: :func:`_not_through_links`' entries; hidden:
            :func:`_not_hidden`'s entries; underscore: as :func:`_not_hidden` (``--input-format`` given).

    Returns:
        the links, the broken ones among them, in the local loader's path order (a broken link in a folder named
        ``__*`` is not listed itself: the folder is, once, as the local loader lists it); the hidden entries, with
        those of hidden broken links (and of hidden or ``__*`` folders that hold such links), sorted by path as the
        local loader sorts them (unchanged when there are none).
    """
    from urllib.parse import urlparse

    if not prefix.startswith("file:"):
        return links, hidden
    base = unquote(urlparse(prefix).path)
    broken: list[str] = []
    folders = [""]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(os.path.join(base, folder)) as found:
                entries = list(found)
        except OSError:  # a folder that cannot be listed: Hadoop's listing says so, or reads what it can
            continue
        for entry in entries:
            relative = f"{folder}{entry.name}"
            if entry.is_symlink():
                if not entry.is_file() and not entry.is_dir():  # no target (or no file nor folder)
                    broken.append(relative)
            elif entry.is_dir(follow_symlinks=False):
                folders.append(relative + "/")
    if not broken:
        return links, hidden
    # Spark's rule for hidden names and folders named __* (its listing's own entries), the local loader's words
    kept, hidden_more = _not_hidden(sorted(prefix + relative for relative in broken), prefix, underscore=underscore)
    known = {entry.path for entry in hidden}
    # a folder named __* that holds a broken link is listed once, as the local loader lists a __* folder for any
    # entry in it (its links included)
    added = [entry for entry in hidden_more if entry.path not in known]
    links = sorted(links + [SkippedFile(file[len(prefix):], BROKEN_LINK_REASON, no_split=True) for file in kept],
                   key=lambda entry: entry.path.split("/"))
    return links, (sorted(hidden + added, key=lambda entry: entry.path) if added else hidden)


@dataclass
class _Named:
    """A path's name and whether it is a folder (what :func:`~workbench.data.loading._hidden_entry` asks)."""

    name: str
    folder: bool

    def is_dir(self) -> bool:
        return self.folder


def _common_folder(files: list[str]) -> str:
    folders = [file.rsplit("/", 1)[0] + "/" for file in files]
    common = folders[0] if folders else ""
    for folder in folders[1:]:
        while not folder.startswith(common):
            common = common.rstrip("/").rsplit("/", 1)[0] + "/"
    return common


def split_files(files: list[str], root: str, *, one_file: bool = False, where: str = "") -> FolderSplits:
    """Split name -> its files in the order they are read, by the rule the local loader reads a
    folder of data files by (:func:`workbench.data.data_file_splits.folder_splits`, run on the
    files' paths below ``root``): ``train-00000-of-00002.parquet`` and ``test-00000-of-00001.parquet``
    are ``train`` and ``test``; files that name no split are ``train`` when no file names one, and
    not read when another does; a split's files in path order; splits in ``datasets``' order
    (train, validation, test, then the rest).

    Args:
        files: the file URIs; root: their folder (ending in ``/``); one_file: the source named
            one file (``train``, whatever its name); where: the source URI, for the messages.

    Raises:
        DataError: a file named for two splits; a sharded file name with an empty split name.
    """
    return folder_splits(files, root=root, one_file=one_file, where=where)


# ---------------------------------------------------------------- reading


def read_rows(spark: Any, source: str, *, code_column: list[str], id_column: list[str] | None,
              language: str, group_column: str | None, split_column: str | None, splits: list[str] | None,
              input_format: str = "auto", progress: Any = None) -> SparkSource:
    """Read ``source`` with Spark and index its rows in the local loader's order (see the module).

    Args:
        spark: the session. source: the URI.
        code_column, id_column, language, group_column: as :func:`~workbench.dedup.rows.collect_rows`.
        split_column: the column naming each row's split, or None (splits from the file names).
        splits: keep only these splits (all when empty). input_format: ``auto``, ``parquet`` or ``json``.
        progress: a progress-bar factory (see :func:`~workbench.dedup.find_duplicates`).

    Returns:
        a :class:`SparkSource`.

    Raises:
        DataError: Spark cannot read ``source`` (see :func:`list_files`), the JSON is not JSON
            Lines, no rows, ids not unique. MissingColumnError: a named column is missing (the
            local loader's wording, listing the columns). MissingSplitError: a split in ``splits``
            is not there.
    """
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    from workbench.dedup import spark_tasks as tasks
    from workbench.dedup.detection import _no_progress

    progress = progress or _no_progress
    listing = list_files(spark, source, input_format)
    input_format, files, root = listing.format, listing.files, listing.root
    # the files the local loader reads, in its order, with --split-column too (it regroups the rows of the
    # file-named splits, taken in datasets' split order): not every listed file in path order
    found = split_files(files, root, one_file=listing.one_file, where=source)
    by_split: dict[str | None, list[str]] = dict(found.splits)
    if split_column:
        by_split = {None: [file for names in found.splits.values() for file in names]}
    unread = [file[len(root):] for file in found.unmatched]
    say_unread(source, unread)  # in the local loader's words
    skipped = ([SkippedFile(name, UNMATCHED_REASON, no_split=True) for name in unread]
               + [SkippedFile(file[len(root):], METADATA_REASON, no_split=True) for file in found.metadata])
    if not any(by_split.values()):
        raise DataError(f"{source}: no data files to read there (only files that name no split, or datasets' "
                        f"metadata files: {', '.join((unread + [f[len(root):] for f in found.metadata])[:3])})")
    skipped += listing.skipped  # files that are no data files, then the hidden ones (the local loader's order)
    # each block's place: its file's in the order read (Spark names a file URL-encoded: %20 for a space)
    file_order = {file: number for number, file in enumerate(f for names in by_split.values() for f in names)}
    code_options = column_options(list(code_column), [])
    frames, suspects, typed, mixed, nested, unmerged = [], [], {}, {}, {}, False
    fieldless: set[str] = set()  # JSON Lines files of only {} lines (and blank ones): a split of such files is empty
    blank: list[tuple[str, list[str]]] = []  # splits of JSON files with no line but blank ones
    for split, names in by_split.items():
        frame, merged = _read_merged(spark, source, input_format, names)
        unmerged = unmerged or not merged  # a split's Parquet files of two types of a column
        if not frame.columns:  # JSON files with no line but blank ones; Parquet files with no columns
            if input_format == "parquet":
                raise DataError(f"cannot read {shown_uri(names[0])}: {COLUMNLESS_PARQUET}")
            # every such split is named, as the local loader names them; with --split-column (the files read as
            # one, so every file is blank) the file-named splits it reads before it regroups the rows
            blank += [(split, names)] if split is not None else list(found.splits.items())
            continue
        if input_format == "json":
            surveyed = [c for c in frame.columns if c != "_corrupt_record"]
            suspect, types, mixed_in, nested_in, fieldless_in = survey_json_lines(spark, names, code_options, surveyed)
            fieldless |= fieldless_in
            suspects.append((names, suspect, "_corrupt_record" in frame.columns))
            typed.update(types)
            mixed.update(mixed_in)
            nested.update(nested_in)
        # the file metadata is a column of the scan: taken before the splits' reads are unioned
        frames.append(frame.select("*", F.col("_metadata.file_path").alias(FILE),
                                   F.col("_metadata.file_block_start").alias(BLOCK)))
    if blank:
        raise DataError(_empty_message(spark, source, blank, files, input_format, listing.one_file))
    # a column of two kinds of value over the files (the local loader's check, in its words), before any line's fault
    if input_format == "json":
        in_order = [(file[len(root):], typed[file]) for file in file_order if file in typed]
        clash = first_clash(in_order) or first_item_clash(in_order)
        field = None if clash is not None else first_field_clash((file[len(root):], nested[file])
                                                             for file in file_order if file in nested)
        if field is not None:  # an object's field of numbers in one file, of text in another: Spark merges into text
            raise DataError(field_clash_message(source, field))
        if clash is None and len(frames) > 1:
            frames = _typed_null_columns(frames, [[typed.get(file, {}) for file in names] for names in by_split.values()])
    elif (first_clash((split, _frame_types(frame)) for split, frame in zip(by_split, frames))
          or unmerged
          or (len(file_order) > 1 and any(_nested(frame) for frame in frames))):
        footers = _parquet_schemas(spark, list(file_order))
        typed = [(file[len(root):], types) for file, types in footers.items() if types is not None]
        clash = first_clash(typed) or first_item_clash(typed)
        field = first_field_clash(typed) if clash is None else None
        if field is not None:  # the local loader's check and words (Spark reads one file's type, or fails)
            raise DataError(field_clash_message(source, field))
        widened = widened_types(typed) if clash is None and len(typed) == len(footers) else {}
        nested = _nested_targets(typed) if clash is None and len(typed) == len(footers) else {}
        if nested:  # lists of nulls beside lists of text, integers beside floats inside: their union, as locally
            widened.update({column: "nested" for column in nested})
        if widened:  # integers and floats, nulls and text over the files: one column, as the local loader reads it
            targets = _spark_targets(spark, source, footers, widened)
            frames = [_widened_read(spark, source, names, footers, targets) for names in by_split.values()]
    else:
        clash = None
    if clash is not None:
        raise DataError(clash_message(source, clash))
    for names, suspect, corrupt in suspects:
        if suspect is not None:
            report_json_line(spark, suspect, code_options)
        if corrupt:  # a line Spark's parser refuses and Python's takes
            raise DataError(f"{source}: a line of {', '.join(map(shown_uri, names[:3]))} is not a JSON object (JSON "
                            f"Lines expected: one object per line)")
    # a column of two kinds of value in a file's rows (not a code column: its own check above), which Spark would
    # read as text: refused as the local engine refuses it (refuse_mixed_json_columns), columns in name order
    code_names = set(code_options.values())
    for column in sorted({column for columns in mixed.values() for column in columns
                          if column.split("/")[0] not in code_names}):
        for file in file_order:
            if column in mixed.get(file, ()):
                report_mixed_column(spark, source, file, root, column)
    # every column of every file, a split's missing one as nulls (the local loader's reading, and datasets')
    frames = _all_columns(frames)
    columns = [c for c in frames[0].columns if c not in (FILE, BLOCK)]
    if id_column is None and "id" in columns:
        id_column = ["id"]
    required: dict[str, str | None] = dict(column_options(list(code_column), list(id_column or [])))
    required.update({"--group-column": group_column, "--split-column": split_column})
    for option, column in required.items():
        if column is not None and column not in columns:
            _refuse_empty_parquet(spark, source, input_format, listing.one_file, found.splits, files, columns)
            error = MissingColumnError(column, columns, option)
            error.args = (f"{error.args[0]} (in {source})",)
            raise error
    try:
        for frame in frames:  # each split's read: a union would cast one split's numbers to another's text
            _require_code_text(frame, code_options)
    except SparkJobError as error:
        _refuse_columnless_parquet(spark, input_format, list(file_order))
        _refuse_parquet_clash(spark, error, source, list(file_order), root)
        raise
    except DataError:
        _refuse_empty_parquet(spark, source, input_format, listing.one_file, found.splits, files, columns)
        raise
    frames = [frame.select(*columns, (F.lit(split) if split is not None else _split_names(frame, split_column))
                           .alias(SPLIT), FILE, BLOCK) for split, frame in zip(by_split, frames)]
    frame = functools.reduce(lambda a, b: a.unionByName(b), frames)
    code = F.col(code_column[0]) if len(code_column) == 1 else F.concat(*map(F.col, code_column))
    # concat_ws skips a null part: a row with a null part has no id (refused below), as locally
    id_value = (F.col(id_column[0]) if len(id_column or []) == 1 else
                F.when(functools.reduce(lambda a, b: a | b, (F.col(c).isNull() for c in id_column)), F.lit(None))
                .otherwise(F.concat_ws(":", *(F.col(c).cast("string") for c in id_column))) if id_column else F.lit(None))
    language_cell = F.col(LANGUAGE_COLUMN) if LANGUAGE_COLUMN in columns else F.lit(None)
    group_value = F.col(group_column) if group_column else F.lit(None)
    # (split, file, block, row) positions on the executors, then the small per-row facts to the driver
    keyed = (frame.select(SPLIT, FILE, BLOCK, code.alias("code"), id_value.alias("id"),
                          language_cell.alias("language"), group_value.alias("group"))
             .rdd.mapPartitions(tasks.block_positions).persist(StorageLevel.MEMORY_AND_DISK))
    with progress("spark: read input", 1) as advance:
        try:
            blocks = run_job("read input", keyed.mapPartitions(tasks.block_facts).collect)
        except SparkJobError as error:
            keyed.unpersist()
            # a Parquet file with no columns beside others: Spark's footer reader fails (IndexOutOfBoundsException)
            _refuse_columnless_parquet(spark, input_format, list(file_order))
            _refuse_parquet_clash(spark, error, source, list(file_order), root)
            raise
        advance(1)
    if not blocks:
        keyed.unpersist()
        if listing.one_file and input_format == "parquet":  # the local loader's words for a Parquet file of no rows
            raise DataError(empty_parquet_message(source, columns))
        if not listing.one_file and found.splits:  # a folder: each split of no rows named, as the local loader does
            raise DataError(_empty_message(spark, source, list(found.splits.items()), files, input_format, False))
        raise DataError(f"{source}: the input has no rows")
    layout = _layout(blocks, None if split_column else list(by_split), file_order)
    # the file-named splits of no rows (Parquet files with their columns and no rows; JSON ones have no columns:
    # refused above, unless --split-column read them with the others, where a split of {} lines is rows of
    # nulls to Spark): the local loader reads those splits before it regroups the rows by the column, and
    # refuses each of no rows
    read = {unquote(key[1]) for key in layout.facts} - {unquote(file) for file in fieldless}
    empty = [(split, names) for split, names in found.splits.items() if not any(name in read for name in names)]
    if empty:
        keyed.unpersist()
        raise DataError(_empty_message(spark, source, empty, files, input_format, listing.one_file))
    if split_column:
        _refuse_missing_splits(source, split_column, layout, keyed, file_order)
    if splits:
        for name in splits:
            if name not in layout.order:
                keyed.unpersist()
                raise MissingSplitError(name, layout.order)
        layout = layout.only(splits)
    offsets = spark.sparkContext.broadcast(layout.offsets)
    items = (keyed.filter(functools.partial(tasks.has_offset, offsets))
             .map(functools.partial(tasks.indexed_item, offsets, language)))
    ids, split_names, languages, groups, ranges = [], [], [], [] if group_column else None, {}
    for split in layout.order:
        start = len(ids)
        for key in layout.blocks_of[split]:
            facts = layout.facts[key]
            ids.extend(facts.ids)
            languages.extend(language_value(value) or language for value in facts.languages)
            if groups is not None:
                groups.extend(facts.groups)
        n = len(ids) - start
        if not id_column:
            ids[start:] = [f"{split}/{i}" for i in range(n)]
        try:  # the local loader's refusals, in its words (rows counted within the split)
            if id_column:
                refuse_missing_cells(ids[start:], ",".join(id_column), option_named("id_column"),
                                     f"{source} (split {split!r})", "each row's id names it in the outputs")
            if groups is not None:
                refuse_missing_cells(groups[start:], group_column, option_named("group_column"),
                                     f"{source} (split {split!r})", "rows are grouped by its value")
        except DataError:
            keyed.unpersist()
            raise
        split_names.extend([split] * n)
        ranges[split] = (start, start + n)
    _check_unique(ids, ",".join(id_column or []) or None)
    rows = DedupRows(source, ids, split_names, SomeCodes({}, len(ids)), languages, groups, ranges,
                     tuple(id_column or ()))
    # the whole rows with their index, for the written splits: read again when they are written
    indexed = spark.createDataFrame(frame.rdd.mapPartitions(functools.partial(tasks.indexed_rows, offsets)),
                                    frame.drop(FILE, BLOCK).schema.add(INDEX, "long"))
    return SparkSource(rows, indexed, items, keyed, input_format, [f for names in by_split.values() for f in names],
                       skipped)


def shown_uri(file: str) -> str:
    """A file as a URI for a message: Hadoop's ``file:/data/x.jsonl`` as ``file:///data/x.jsonl``."""
    return re.sub(r"^file:/(?!/)", "file:///", file)


def _read_split(spark: Any, source: str, input_format: str, names: list[str]) -> Any:
    """``spark.read`` of one split's files (:func:`_read_merged`'s read)."""
    return _read_merged(spark, source, input_format, names)[0]


def _read_merged(spark: Any, source: str, input_format: str, names: list[str]) -> tuple[Any, bool]:
    """``spark.read`` of one split's files, and whether its Parquet files' schemas merge
    (``mergeSchema``, one job over their footers): ``False`` when two of them give a column two
    types (Spark then types the read by one file and fails, or not, only when the rows are read),
    ``True`` otherwise (one file, or JSON Lines).

    Raises:
        DataError: two columns whose names differ only in case while Spark matches names
            case-insensitively (``spark.sql.caseSensitive=false``, its default): Spark calls it
            ``COLUMN_ALREADY_EXISTS``; the local loader keeps both columns.
        SparkJobError: any other failure of the read.
    """
    if input_format == "parquet" and len(names) > 1:
        try:  # every file's columns: Spark types a Parquet read by one of its files, leaving others' columns out
            return run_job("read input", lambda: spark.read.format(input_format).option("mergeSchema", "true")
                           .load(list(names))), True
        except SparkJobError:
            pass  # a column of two types over the files: read as Spark reads, and refused or widened after
    try:
        return run_job("read input", lambda: spark.read.format(input_format).load(list(names))), \
            not (input_format == "parquet" and len(names) > 1)
    except SparkJobError as error:
        clash = re.search(r"COLUMN_ALREADY_EXISTS\] The column `([^`]*)`", str(error))
        if clash is None or spark.conf.get("spark.sql.caseSensitive", "false").lower() == "true":
            raise
        raise DataError(f"{source}: columns whose names differ only in case ('{clash.group(1)}' and another spelling "
                        f"of it): Spark matches column names case-insensitively (spark.sql.caseSensitive=false, its "
                        f"default), the local loader tells them apart; rename one of them in the data, or pass "
                        f"--spark-conf spark.sql.caseSensitive=true") from None


def _refuse_empty_parquet(spark: Any, source: str, input_format: str, one_file: bool,
                          splits: dict[str | None, list[str]], files: list[str], columns: list[str]) -> None:
    """Refuse the Parquet splits of no rows as the local loader does, which says so before it looks for a
    column: called on the way to refusing a column (missing, or a code column not text), so that both engines
    name the same fault first. One count a split (Parquet's footers hold the row counts); nothing for JSON
    Lines (its files of no rows have no columns: refused when read).

    Args:
        source: the SOURCE as given; input_format: ``parquet`` or ``json``; one_file: SOURCE is one file;
        splits: the file-named splits' file URIs (the local loader reads them before a ``--split-column``
        regroups them); files: every data file listed; columns: the data's columns, in order.

    Raises:
        DataError: ``<file>: the Parquet file has no rows (its columns: ...)`` (:func:`empty_parquet_message`)
            for a file given alone, else ``no rows in split 'test' (...)`` (:func:`_empty_message`).
    """
    if input_format != "parquet":
        return
    try:
        empty = [(split, names) for split, names in splits.items()
                 if run_job("read input", lambda names=names: spark.read.format("parquet").load(list(names)).count()) == 0]
    except SparkJobError:  # files Spark cannot count: the column's refusal stands
        return
    if empty and one_file:
        raise DataError(empty_parquet_message(source, columns))
    if empty:
        raise DataError(_empty_message(spark, source, empty, files, input_format, one_file))


def _empty_message(spark: Any, source: str, empty: list[tuple[str, list[str]]], files: list[str],
                   input_format: str, one_file: bool) -> str:
    """What to say of the splits whose files hold no line but blank ones, or are Parquet files of no rows (the
    local loader's words, naming every such split in the order read). One JSON Lines file is read once more as
    text, to say what it holds as the local loader does (:func:`json_no_rows_message`: no bytes, only blank
    lines, an empty JSON list).

    Args:
        spark: the session; source: the SOURCE as given; empty: ``(split, its file URIs)`` of each file-named
            split of no rows (with ``--split-column`` too, as the local loader reads them); files: every data
            file listed; input_format: ``json`` or ``parquet``; one_file: SOURCE is one file (a folder holding
            one file names its split, as the local loader does).
    """
    if one_file and input_format == "json":
        from pyspark.sql import functions as F

        def compact_lines() -> list[str]:  # a few distinct lines, whitespace taken out (Java's \s, as str.split)
            text = spark.read.text(files[0]).select(F.regexp_replace("value", r"\s+", "").alias("line"))
            return [row.line for row in text.distinct().limit(5).collect()]

        return json_no_rows_message(shown_uri(files[0]), files[0], run_job("read input", compact_lines))
    if one_file:
        return f"{shown_uri(files[0])}: the file is empty"

    def listed(names: list[str]) -> str:
        return ", ".join(map(shown_uri, names[:3])) + (" ..." if len(names) > 3 else "")

    which = "; ".join(f"split {split!r} ({listed(names)})" for split, names in empty)
    return f"{source}: no rows in {which}; remove the empty files or add records"


def survey_json_lines(spark: Any, files: list[str], code_columns: dict[str, str], columns: list[str]) -> tuple[
        str | None, dict[str, dict[str, str]], dict[str, list[str]], dict[str, dict[str, list[str]]], set[str]]:
    """One pass over the lines of JSON Lines ``files`` on the executors, for what the local loader
    refuses and Spark's reader would take (in its default PERMISSIVE mode): a line that is not JSON
    (a ``_corrupt_record``), one that is a list (Spark makes a row of each of its objects) or
    another value but an object or ``null``, a lone UTF-16 surrogate escape (Spark makes it ``?``),
    a code cell that is a number, list or object (Spark makes it its JSON text, and deduplicates it
    as code); :func:`report_json_line` then names the line. It gives the first file with a
    suspect line (``try_parse_json`` fails, not an object, a lone surrogate escape by regex, a code
    cell that is not text by ``schema_of_variant``), and the type of each of ``columns`` in each
    file (for :func:`workbench.data.column_types.first_clash`: Spark's reader would merge a number
    column of one file and a text column of another into text).

    Args:
        spark: the session; files: the files (URIs as listed); code_columns: option -> code
            column; columns: the columns whose types are wanted.

    Returns:
        ``(file or None, {file: {column: type}}, {file: [column]}, {file: {column: [type]}}, {file})``, a
        file as listed; the fifth holds the files whose every line but blank ones is an object without a
        field (``{}``: rows of nulls to Spark's reader beside files with columns, no rows to the local
        loader, which reads such a file's split as empty); the fourth gives the variant type names of every row's lists and objects
        (for :func:`workbench.data.column_types.first_field_clash`); a column
        whose lines in a file hold two kinds of value (or only nulls) is left out of that file's
        types, and one of two kinds is listed in the third (:func:`report_mixed_column`), as is
        a column of lists of several types, as ``"tags/[]"`` (their items may be of two kinds).
    """
    from pyspark.sql import functions as F

    from workbench.data.column_types import item_kind, kind_of
    from workbench.data.json_lines import LONE_SURROGATE_PATTERN

    value, trimmed = F.col("value"), F.trim(F.col("value"))
    parsed = F.try_parse_json(value)

    def kind(column: str) -> Any:  # a missing key: null, not suspect
        return F.schema_of_variant(F.try_variant_get(parsed, "$[" + json.dumps(column) + "]", "variant"))

    suspect = parsed.isNull() | (~trimmed.startswith("{") & (trimmed != "null")) | value.rlike(LONE_SURROGATE_PATTERN)
    for column in code_columns.values():
        suspect = suspect | ~kind(column).isin("STRING", "NULL")
    lines = spark.read.text(list(files)).where(trimmed != "")
    fieldless = trimmed.rlike(r"^\{\s*\}$")  # {} with any whitespace inside
    found = run_job("check JSON lines", lines.groupBy(F.col("_metadata.file_path").alias("file")).agg(
        F.max(suspect.cast("int")).alias("suspect"), F.min(fieldless.cast("int")).alias("fieldless"),
        *(F.collect_set(kind(c)).alias(f"k{n}") for n, c in enumerate(columns))).collect)
    listed = {unquote(file): file for file in files}
    suspects = sorted(row["file"] for row in found if row["suspect"])
    types: dict[str, dict[str, str]] = {}
    mixed: dict[str, list[str]] = {}
    nested: dict[str, dict[str, list[str]]] = {}
    for row in found:
        file = listed.get(unquote(row["file"]), unquote(row["file"]))
        types[file], nested[file] = {}, {}
        for n, column in enumerate(columns):
            nested[file][column] = sorted(name for name in row[f"k{n}"] if kind_of(name) in ("lists", "objects"))
            named = {kind_of(name): name for name in row[f"k{n}"]}
            named.pop(None, None)
            items = {item_kind(name): name for name in row[f"k{n}"] if kind_of(name) == "lists"}
            items.pop(None, None)
            if len(named) > 1:
                mixed.setdefault(file, []).append(column)
            elif len(items) > 1:  # lists of numbers in some rows, of text in others
                mixed.setdefault(file, []).append(f"{column}/[]")
            elif len(named) == 1:  # a list's type by its items where some are lists of nulls only
                types[file][column] = next(iter(items.values()), next(iter(named.values())))
    fields_none = {listed.get(unquote(row["file"]), unquote(row["file"])) for row in found if row["fieldless"]}
    return (suspects[0] if suspects else None), types, mixed, nested, fields_none


def report_mixed_column(spark: Any, source: str, file: str, root: str, column: str) -> None:
    """Name the first line of each kind of a column :func:`survey_json_lines` found two kinds of
    value in, in one file (numbered line by line, ``textFile().zipWithIndex()``), in the local
    loader's words (:func:`workbench.data.column_types.mixed_message`): Spark's JSON reader would
    read the column as text (``5`` as ``"5"``), where the local loader reads the rows' own values
    or refuses the column past the file's first 10 MB.

    Raises:
        DataError: ``<source>: column 'v' holds numbers at line 1 of x.jsonl but text at line 3: ...``.
    """
    from workbench.data.column_types import mixed_message
    from workbench.dedup import spark_tasks as tasks

    kinds = spark.sparkContext.textFile(file).zipWithIndex().map(functools.partial(tasks.line_kinds_at, column))
    held = run_job("check JSON lines", lambda: kinds.filter(tasks.has_kinds).takeOrdered(1, key=tasks.line_index))
    if not held:
        return
    index, found = held[0]
    if len(found) > 1:
        other = (index, found)
    else:
        later = run_job("check JSON lines", lambda: kinds.filter(functools.partial(tasks.holds_other_kind, found[0]))
                        .takeOrdered(1, key=tasks.line_index))
        if not later:
            return
        other = later[0]
    second = next(kind for kind in other[1] if kind != found[0])
    raise DataError(mixed_message(source, column, unquote(file[len(root):]), (found[0], index + 1, second, other[0] + 1)))


def report_json_line(spark: Any, first: str, code_columns: dict[str, str]) -> None:
    """Read the file :func:`survey_json_lines` flagged again, numbered line by line
    (``textFile().zipWithIndex()``, in file order), and name the first line the local loader's own
    check refuses (:func:`~workbench.dedup.spark_tasks.json_line_problem`).

    Raises:
        DataError: ``line 4 of file:///data/x.jsonl is not valid JSON: ...`` (the local loader's
            words, with the file's URI), or ``--code-column 'content' holds a cell that is not text
            at line 4 of ...``; a file whose first line opens a JSON document (``[``) is said to be
            no JSON Lines at all.
    """
    from workbench.dedup import spark_tasks as tasks

    where = shown_uri(first)
    numbered = spark.sparkContext.textFile(first).zipWithIndex()
    found = run_job("check JSON lines", lambda: numbered.map(functools.partial(tasks.json_line_problem, where, code_columns))
                    .filter(tasks.found).take(1))
    if not found:
        return  # flagged, but the local loader's check takes it (an escaped backslash before "ud800")
    _, problem, document = found[0]
    if document:
        raise DataError(f"{where} is not JSON Lines ({problem.split(';')[0]}): Spark reads .json and .jsonl files as "
                        f"JSON Lines, one object per line; a JSON document (a list of objects) is read by the local "
                        f"loader: give its local path, or convert it to JSON Lines")
    raise DataError(problem)


def _frame_types(frame: Any) -> dict[str, str]:
    """Column -> Spark type name of a split's read (its helper columns left out)."""
    return {f.name: f.dataType.simpleString() for f in frame.schema.fields if f.name not in (FILE, BLOCK)}


def _type_tree(name: str) -> Any:
    """A type name of :func:`_parquet_type_name` as a tree: ``("list", item)``, ``("struct", [(field, type)])``
    or the leaf's name."""
    from workbench.data.column_types import _top_level

    name = name.strip()
    if name.startswith("list<item: ") and name.endswith(">"):
        return ("list", _type_tree(name[len("list<item: "):-1]))
    if name.startswith("struct<") and name.endswith(">"):
        return ("struct", [(field.split(":", 1)[0].strip(), _type_tree(field.split(":", 1)[1]))
                           for field in _top_level(name[len("struct<"):-1], ",") if ":" in field])
    return name


#: a leaf's name (pyarrow's, from a footer) -> its Spark type; a leaf of nulls only in every file is text
_SPARK_LEAVES = {"int8": "tinyint", "int16": "smallint", "int32": "int", "int64": "bigint", "uint8": "smallint",
                 "uint16": "int", "uint32": "bigint", "float": "float", "double": "double", "string": "string",
                 "bool": "boolean", "binary": "binary", "null": "string", "date": "date", "timestamp": "timestamp"}


def _union(a: Any, b: Any) -> Any:
    """Two :func:`_type_tree` trees as one (pyarrow's permissive unification): nulls take the other's
    type, integers and floats are doubles, lists unify their items, objects of the same fields their
    fields; ``None`` where this cannot (objects of other fields: Spark's merged schema reads those)."""
    if a == b or b == "null":
        return a
    if a == "null":
        return b
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "list":
        item = _union(a[1], b[1])
        return None if item is None else ("list", item)
    if isinstance(a, tuple) and isinstance(b, tuple) and a[0] == b[0] == "struct":
        if [f for f, _ in a[1]] != [f for f, _ in b[1]]:
            return None
        fields = [(f, _union(x, y)) for (f, x), (_, y) in zip(a[1], b[1])]
        return None if any(t is None for _, t in fields) else ("struct", fields)
    if isinstance(a, str) and isinstance(b, str) and kind_of(a) == kind_of(b) == "numbers":
        return "double" if "int" not in a or "int" not in b else "int64"
    return None


def _spark_ddl(tree: Any) -> str | None:
    """A :func:`_type_tree` tree as a Spark type (``array<string>``, ``struct<`a`:bigint>``); ``None`` for a leaf
    Spark's cast is not known here."""
    if isinstance(tree, tuple) and tree[0] == "list":
        item = _spark_ddl(tree[1])
        return None if item is None else f"array<{item}>"
    if isinstance(tree, tuple):
        fields = [(f, _spark_ddl(t)) for f, t in tree[1]]
        return None if any(t is None for _, t in fields) else "struct<" + ",".join(
            f"`{f}`:{t}" for f, t in fields) + ">"
    return _SPARK_LEAVES.get(tree)


def _nested_targets(typed: list[tuple[str, dict[str, str]]]) -> dict[str, str]:
    """The list and object columns whose inner types the Parquet files give otherwise but of one kind
    (a list of nulls in one file and of text in another; integers and floats inside), as the Spark
    type of their union, which the local loader reads them as (pyarrow's ``unify_schemas``); Spark
    types a split by one file and fails on another's (``PARQUET_COLUMN_DATA_TYPE_MISMATCH``)."""
    names: dict[str, list[str]] = {}
    for _, types in typed:
        for column, name in types.items():
            names.setdefault(column, []).append(name)
    targets = {}
    for column, held in names.items():
        if len(set(held)) == 1 or not any(name.startswith(("list<", "struct<")) for name in held):
            continue
        tree = _type_tree(held[0])
        for name in held[1:]:
            tree = None if tree is None else _union(tree, _type_tree(name))
        ddl = _spark_ddl(tree) if tree is not None else None
        if ddl is not None:
            targets[column] = ddl
    return targets


def _nested(frame: Any) -> bool:
    """Whether a read has a list, object or map column (whose inner types the files may give otherwise)."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    return any(isinstance(f.dataType, (ArrayType, MapType, StructType)) for f in frame.schema.fields)


def _typed_null_columns(frames: list[Any], types: list[list[dict[str, str]]]) -> list[Any]:
    """Splits' JSON reads whose column of nulls only takes the type another split's values give it:
    Spark's JSON reader types a column with no value in a split's files as text, and the union of
    the splits would then turn the other split's numbers into text, where the local loader reads
    them as numbers (:func:`~workbench.data.column_types.widened_types`).

    Args:
        frames: each split's read; types: for each split, each file's column -> type name
            (:func:`survey_json_lines`; a column of nulls only in a file is not in it).

    Returns:
        the reads, those with such a column cast (its cells are nulls either way).
    """
    from pyspark.sql import functions as F

    held = [set().union(*files) if files else set() for files in types]
    typed = []
    for number, frame in enumerate(frames):
        for column in frame.columns:
            source = next((n for n, columns in enumerate(held) if column in columns), None)
            if column not in held[number] and source is not None and column in frames[source].columns:
                target = frames[source].schema[column].dataType
                if frame.schema[column].dataType != target:
                    frame = frame.withColumn(column, F.lit(None).cast(target))
        typed.append(frame)
    return typed


def _spark_targets(spark: Any, source: str, footers: dict[str, dict[str, str] | None],
                   widened: dict[str, str]) -> dict[str, Any]:
    """Column -> the Spark type :func:`_widened_read` casts it to: ``double`` or ``bigint`` for
    numbers, else the type Spark reads from the first file whose footer gives the column
    ``widened``'s type (any split's: a split may hold only nulls in it)."""
    targets: dict[str, Any] = {}
    nested = _nested_targets([(file, types) for file, types in footers.items() if types is not None])
    for column, name in widened.items():
        if name == "nested":
            targets[column] = nested[column]
        elif name in ("double", "int64"):
            targets[column] = "double" if name == "double" else "bigint"
        else:
            file = next(file for file, types in footers.items() if (types or {}).get(column) == name)
            targets[column] = _read_split(spark, source, "parquet", [file]).schema[column].dataType
    return targets


def _widened_read(spark: Any, source: str, names: list[str], footers: dict[str, dict[str, str] | None],
                  targets: dict[str, Any]) -> Any:
    """One split's Parquet files read as one table whose ``widened`` columns have one type
    (:func:`~workbench.data.column_types.widened_types`: ``double`` for integers and floats, the
    other files' type for a column of nulls only). Spark types a read by one of its files and
    cannot read another file's ``bigint`` as ``double`` (nor a null column, which it reads as
    ``int``, as text), so the files are read in groups of one footer each, their columns cast,
    and the groups unioned (the row order comes from each row's file and block, not the plan).

    Args:
        spark: the session; source: the URI (for messages); names: the split's files;
        footers: file -> column -> type name (:func:`_parquet_types`); targets: column -> Spark
        type (:func:`_spark_targets`).

    Returns:
        the split's rows with the file and block columns (``_wb_file``, ``_wb_block``).
    """
    from pyspark.sql import functions as F

    groups: dict[tuple, list[str]] = {}
    for file in names:
        groups.setdefault(tuple(sorted((footers[file] or {}).items())), []).append(file)
    reads = {key: _read_split(spark, source, "parquet", files) for key, files in groups.items()}
    parts = []
    for key, frame in reads.items():
        footer = dict(key)
        cells = [(F.lit(None).cast(targets[c]) if footer.get(c) == "null" else F.col(c).cast(targets[c])).alias(c)
                 if c in targets else F.col(c) for c in frame.columns]
        parts.append(frame.select(*cells, F.col("_metadata.file_path").alias(FILE),
                                  F.col("_metadata.file_block_start").alias(BLOCK)))
    return functools.reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), parts)


def _all_columns(frames: list[Any]) -> list[Any]:
    """The splits' reads with every column any of them has, in order of first appearance (the
    local loader's order: the first file's columns first), a split's missing column as nulls of
    the type the first split that has it gives it; as the local loader reads files of other
    columns (:func:`workbench.data.loading._column_features`)."""
    from pyspark.sql import functions as F

    names = list(dict.fromkeys(c for frame in frames for c in frame.columns if c not in (FILE, BLOCK)))
    if all([c for c in frame.columns if c not in (FILE, BLOCK)] == names for frame in frames):
        return frames
    kinds = {}
    for frame in frames:
        for column in frame.schema.fields:
            kinds.setdefault(column.name, column.dataType)
    return [frame.select(*(F.col(c) if c in frame.columns else F.lit(None).cast(kinds[c]).alias(c) for c in names),
                         FILE, BLOCK) for frame in frames]


def _parquet_clash(spark: Any, files: list[str], root: str) -> tuple[str, str, str, str, str] | None:
    """:func:`~workbench.data.column_types.first_clash` over the Parquet files' own schemas (their
    footers, read on the driver through Hadoop: only when a clash is known or suspected)."""
    return first_clash((file[len(root):], types) for file, types in _parquet_schemas(spark, files).items()
                       if types is not None)


def _refuse_columnless_parquet(spark: Any, input_format: str, files: list[str]) -> None:
    """After a failed read of Parquet files: raise the local loader's refusal of the first file with
    no columns (Spark's footer reader fails on it with an ``IndexOutOfBoundsException`` when other
    files give the read its columns), its footers read on the driver; return when none has none.

    Raises:
        DataError: ``cannot read <uri>: the Parquet file has no columns ...``
            (:data:`~workbench.data.loading.COLUMNLESS_PARQUET`).
    """
    from concurrent.futures import ThreadPoolExecutor

    from py4j.protocol import Py4JError

    if input_format != "parquet":
        return
    jvm = spark.sparkContext._jvm
    configuration = spark.sparkContext._jsc.hadoopConfiguration()
    # the footer without its row groups: ParquetFileReader.open (what _parquet_types reads with) fails on them too
    skip = jvm.org.apache.parquet.format.converter.ParquetMetadataConverter.SKIP_ROW_GROUPS

    def columnless(file: str) -> bool:
        try:
            found = jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(jvm.org.apache.hadoop.fs.Path(file),
                                                                              configuration)
            footer = jvm.org.apache.parquet.hadoop.ParquetFileReader.readFooter(found, skip)
            return footer.getFileMetaData().getSchema().getFieldCount() == 0
        except Py4JError:
            return False  # not readable at all: Spark's own error

    with ThreadPoolExecutor(max(1, min(FOOTER_THREADS, len(files))), thread_name_prefix="parquet-footer") as pool:
        for file, empty in zip(files, pool.map(columnless, files)):
            if empty:
                raise DataError(f"cannot read {shown_uri(file)}: {COLUMNLESS_PARQUET}") from None


def _refuse_parquet_clash(spark: Any, error: BaseException, source: str, files: list[str], root: str) -> None:
    """Turn Spark's failure to read one split's Parquet files of two types
    (``PARQUET_COLUMN_DATA_TYPE_MISMATCH``: it types a split by one of its files) into the
    local loader's refusal naming the column, the files and the kinds; return when it is another
    failure (the caller raises it)."""
    said = f"{error} {error.__cause__ or ''}"
    if "PARQUET_COLUMN_DATA_TYPE_MISMATCH" not in said and "SchemaColumnConvertNotSupported" not in said:
        return
    clash = _parquet_clash(spark, files, root)
    if clash is not None:
        raise DataError(clash_message(source, clash)) from None


#: threads reading Parquet footers at once on the driver (:func:`_parquet_schemas`): each read is a few
#: round trips to the JVM and, on an object store, a request or two of its latency
FOOTER_THREADS = 16


def _parquet_schemas(spark: Any, files: list[str]) -> dict[str, dict[str, str] | None]:
    """Each Parquet file's column types (:func:`_parquet_types`), the footers read through Hadoop
    on the driver by :data:`FOOTER_THREADS` threads at once (py4j gives each Python thread a JVM
    thread of its own), the JVM's classes and the Hadoop configuration looked up once.

    Args:
        spark: the session; files: the file URIs as listed.

    Returns:
        file -> column -> type name (``None`` for a file whose footer cannot be read), in the
        order of ``files``.
    """
    from concurrent.futures import ThreadPoolExecutor

    jvm = spark.sparkContext._jvm
    classes = (jvm.org.apache.parquet.hadoop.util.HadoopInputFile, jvm.org.apache.hadoop.fs.Path,
               jvm.org.apache.parquet.hadoop.ParquetFileReader, spark.sparkContext._jsc.hadoopConfiguration(),
               _schema_mapper(jvm))
    if len(files) < 2:
        return {file: _parquet_types(spark, file, classes) for file in files}
    with ThreadPoolExecutor(min(FOOTER_THREADS, len(files)), thread_name_prefix="parquet-footer") as pool:
        return dict(zip(files, pool.map(lambda file: _parquet_types(spark, file, classes), files)))


def _parquet_types(spark: Any, file: str, classes: tuple | None = None) -> dict[str, str] | None:
    """Column -> a type name :func:`~workbench.data.column_types.kind_of` reads, from one Parquet
    file's footer; ``None`` when it cannot be read (the read itself says why). ``classes``: the
    JVM's ``HadoopInputFile``, ``Path`` and ``ParquetFileReader``, the Hadoop configuration and
    :func:`_schema_mapper`'s mapper, looked up by the caller for many files (:func:`_parquet_schemas`),
    else here.

    The schema comes over as Parquet's own text of it (``MessageType.toString``: a few calls to the
    JVM a file, where walking its fields took some 7 a column), read by :func:`_schema_fields`, and
    as its structure (:func:`_exact_names`: the schema object serialized, its names exact). The text
    names a field's logical type after its name without quoting it, so a column named ``x (STRING)``
    reads as ``x`` annotated STRING: where the names the text gives are not the schema's own (top level
    and nested), or the text does not read back at all (a name holding ``;``, ``{`` or a line break),
    the fields are walked one call at a time instead."""
    from py4j.protocol import Py4JError

    jvm = spark.sparkContext._jvm
    try:
        input_file, path, file_reader, configuration, mapper = classes or (
            jvm.org.apache.parquet.hadoop.util.HadoopInputFile, jvm.org.apache.hadoop.fs.Path,
            jvm.org.apache.parquet.hadoop.ParquetFileReader, spark.sparkContext._jsc.hadoopConfiguration(),
            _schema_mapper(jvm))
        reader = file_reader.open(input_file.fromPath(path(file), configuration))
        try:
            schema = reader.getFooter().getFileMetaData().getSchema()
            fields = _schema_fields(schema.toString())
            if fields is None or _field_names(fields) != _exact_names(mapper, schema):
                fields = [_java_field(column) for column in schema.getFields()]
        finally:
            reader.close()
        return {column.name: _parquet_type_name(column) for column in fields}
    except Py4JError:
        return None


def _schema_mapper(jvm: Any) -> Any:
    """A Jackson ``ObjectMapper`` (Spark's own Jackson) for :func:`_exact_names`, set to serialize an object with no
    properties as ``{}`` (a logical type annotation such as STRING has none), as Parquet's
    ``ParquetMetadata.toJSON`` sets its own; ``None`` when this JVM has no Jackson (the fields are then walked)."""
    from py4j.protocol import Py4JError

    try:
        databind = jvm.com.fasterxml.jackson.databind
        return databind.ObjectMapper().configure(databind.SerializationFeature.FAIL_ON_EMPTY_BEANS, False)
    except Py4JError:
        return None


#: a schema's field names as nested tuples: ``(name, None)`` for a primitive, ``(name, (fields ...))`` for a group
_Names = tuple


def _exact_names(mapper: Any, schema: Any) -> _Names | None:
    """The field names of a Parquet schema (``org.apache.parquet.schema.MessageType``, over py4j) from its
    structure, not its text: the object serialized to JSON by ``mapper`` (:func:`_schema_mapper`) in one call to
    the JVM, each field's ``name`` exact (JSON-escaped), ``primitive`` telling a leaf from a group.

    Returns:
        :data:`_Names` of the top-level fields, in order; ``None`` when the schema cannot be serialized so (the
        caller then walks its fields).
    """
    from py4j.protocol import Py4JError

    if mapper is None:
        return None

    def names(fields: list[dict]) -> _Names:
        return tuple((f["name"], None if f["primitive"] else names(f["fields"])) for f in fields)

    try:
        return names(json.loads(mapper.writeValueAsString(schema))["fields"])
    except (Py4JError, ValueError, KeyError, TypeError):
        return None


def _field_names(fields: tuple[_Field, ...]) -> _Names:
    """:func:`_schema_fields`' fields as :data:`_Names`, to compare with :func:`_exact_names`."""
    return tuple((f.name, None if f.fields is None else _field_names(f.fields)) for f in fields)


@dataclass(frozen=True)
class _Field:
    """A Parquet schema's field: its name, physical type (``INT32``, ``BINARY``, ... ``""`` for a
    group), logical type annotation as Parquet writes it (``STRING``, ``INTEGER(8,true)``, ``LIST``,
    ``""`` for none), and its fields (``None`` for a primitive)."""

    name: str
    physical: str
    annotation: str
    fields: tuple[_Field, ...] | None


#: a line of Parquet's schema text: ``optional int32 n (INTEGER(8,true)) = 3;``, ``optional group tags (LIST) {``
_SCHEMA_LINE = re.compile(r"^\s*(?:required|optional|repeated) (?P<kind>group|[a-z0-9_]+)(?:\(\d+\))? "
                          r"(?P<name>[^(){};=\n]+?)(?: \((?P<annotation>[A-Z_]+(?:\([^()]*\))?)\))?(?: = \d+)?"
                          r"(?P<end>;| \{)$")


def _schema_fields(text: str) -> tuple[_Field, ...] | None:
    """The top-level fields of Parquet's text of a schema (``message schema { ... }``), as
    :class:`_Field` trees; ``None`` when a line does not read as a field (a name holding a
    character Parquet's text leaves ambiguous)."""
    lines = text.strip().splitlines()
    if len(lines) < 2 or not lines[0].startswith("message ") or not lines[0].endswith("{") or lines[-1].strip() != "}":
        return None
    stack: list[tuple[dict[str, str], list[_Field]]] = [({}, [])]
    for line in lines[1:-1]:
        if line.strip() == "}":
            if len(stack) < 2:
                return None
            head, fields = stack.pop()
            stack[-1][1].append(_Field(head["name"], "", head["annotation"], tuple(fields)))
            continue
        found = _SCHEMA_LINE.match(line)
        if found is None or (found["kind"] == "group") != (found["end"] == " {"):
            return None
        if found["kind"] == "group":
            stack.append(({"name": found["name"], "annotation": found["annotation"] or ""}, []))
        else:
            stack[-1][1].append(_Field(found["name"], found["kind"].upper(), found["annotation"] or "", None))
    return tuple(stack[0][1]) if len(stack) == 1 else None


def _java_field(column: Any) -> _Field:
    """A Parquet footer's field (``org.apache.parquet.schema.Type``, over py4j) as a :class:`_Field`."""
    annotation = column.getLogicalTypeAnnotation()
    said = annotation.toString() if annotation is not None else ""
    if not column.isPrimitive():
        return _Field(column.getName(), "", said, tuple(_java_field(f) for f in column.asGroupType().getFields()))
    return _Field(column.getName(), column.asPrimitiveType().getPrimitiveTypeName().name(), said, None)


def _parquet_type_name(column: _Field) -> str:
    """A Parquet footer's field as pyarrow names its type: ``int64``, ``null`` (pyarrow's column
    of nulls, annotated UNKNOWN), ``list<item: string>``, ``struct<a: int64, b: string>``, ``map``."""
    said = column.annotation.upper()
    if column.fields is not None:
        head = said.split("(")[0]
        fields = column.fields
        if head == "LIST" and len(fields) == 1:
            repeated = fields[0]  # the three-level list (a group of one element), or a legacy two-level one
            inner = repeated.fields or ()
            item = inner[0] if len(inner) == 1 else repeated
            return f"list<item: {_parquet_type_name(item)}>"
        if head in ("MAP", "MAP_KEY_VALUE"):
            return "map"
        return "struct<" + ", ".join(f"{f.name}: {_parquet_type_name(f)}" for f in fields) + ">"
    physical = column.physical
    sized = re.match(r"INTEGER\((\d+),\s*(TRUE|FALSE)\)", said)  # INTEGER(8,true): int8, as pyarrow names it
    if sized:
        return f"{'' if sized.group(2) == 'TRUE' else 'u'}int{sized.group(1)}"
    return _PARQUET_TYPES.get(said.split("(")[0], _PARQUET_TYPES.get(physical, physical))


#: a Parquet logical type (else its physical type) -> a type name :func:`kind_of` reads
_PARQUET_TYPES = {"STRING": "string", "ENUM": "string", "JSON": "string", "UUID": "fixed_size_binary",
                  "DECIMAL": "decimal", "DATE": "date", "TIME": "time", "TIMESTAMP": "timestamp", "INTEGER": "int64",
                  "INT": "int64", "LIST": "list", "MAP": "map", "BINARY": "binary",
                  "FIXED_LEN_BYTE_ARRAY": "fixed_size_binary", "INT32": "int32", "INT64": "int64", "INT96": "timestamp",
                  "FLOAT": "float", "DOUBLE": "double", "BOOLEAN": "bool", "GROUP": "struct",
                  # pyarrow writes a column of nulls only as INT32 annotated UNKNOWN (Spark reads it as int)
                  "UNKNOWN": "null", "NULL": "null"}


def _require_code_text(frame: Any, code_columns: dict[str, str]) -> None:
    """Refuse a code column Spark typed other than text (Parquet's numbers; JSON Lines are checked
    line by line before, :func:`survey_json_lines`), as the local engine refuses it.

    Raises:
        DataError: ``--code-column 'content' holds numbers (Spark read bigint), not text; e.g. 1 in <file>: ...``.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, CharType, NullType, StringType, VarcharType

    for option, column in code_columns.items():
        kind = frame.schema[column].dataType
        if isinstance(kind, (StringType, BinaryType, NullType, VarcharType, CharType)):
            continue
        row = run_job("read input", frame.where(F.col(column).isNotNull()).select(column, FILE).first)
        value = row[0].asDict() if row and hasattr(row[0], "asDict") else row[0] if row else None
        # the file's words (numbers, lists, objects), as the local engine says it; Spark's type beside them
        held = f"{value_kind(value)} (Spark read {kind.simpleString()})" if row else kind.simpleString()
        example = f"; e.g. {str(value)[:60]} in {shown_uri(row[1])}" if row else ""
        raise DataError(f"{option} {column!r} holds {held}, not text{example}: each row's code must be "
                        f"a string (a number, list or object in some row makes the whole column non-text); fix those "
                        f"rows or name the column that holds the code")


def _split_names(frame: Any, column: str) -> Any:
    """A split column's values as the local loader names the splits (``str(value)``); a null stays
    null, and so does a float NaN (Spark's cast would name it ``NaN``; the local loader refuses it:
    :func:`_refuse_missing_splits`); a boolean is ``True``/``False``, as Python writes it (Spark's
    cast would name the splits ``true``/``false``). A float column's cells are named by Python on the
    executors (:func:`~workbench.dedup.spark_tasks.float_split_name`: ``inf``, ``1e+20``), as Spark's
    cast writes Java's words (``Infinity``, ``1.0E20``)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType, DoubleType, FloatType

    from workbench.dedup import spark_tasks as tasks

    cell = F.col(column)
    kind = frame.schema[column].dataType
    if isinstance(kind, (DoubleType, FloatType)):
        # useArrow=False: the pickled row-at-a-time UDF, whatever spark.sql.execution.pythonUDF.arrow.enabled says,
        # and no guess at a pandas UDF from the function's type hints (Spark warned it could not infer one)
        return F.udf(tasks.float_split_name, "string", useArrow=False)(cell)
    if isinstance(kind, BooleanType):
        return F.when(cell, F.lit("True")).when(~cell, F.lit("False"))  # a null: no branch, null
    return cell.cast("string")


def _no_split(split: str | None) -> bool:
    """A split name that is no name: null (a null or NaN cell) or blank (``""``, ``" "``, ``"\\t"``),
    as :func:`~workbench.data.loading.refuse_missing_cells` judges a cell."""
    return split is None or not split.strip()


def _refuse_missing_splits(source: str, column: str, layout: _Layout, keyed: Any, file_order: dict[str, int]) -> None:
    """Raise :class:`DataError` when rows have no split (a null, NaN or blank ``--split-column``
    cell) in the local loader's words (:func:`~workbench.data.loading.refuse_missing_cells`),
    the rows counted from 1 over the files in the order both engines read them; ``keyed`` (the
    persisted rows) is released first.

    A row's number is the rows of the (file, block)s before its own, in (file's place, block
    start) order, plus its place in its block; those places come from one small job over the
    persisted rows of the blocks that hold the first five such rows (the error path only)."""
    from workbench.dedup import spark_tasks as tasks

    missing = [key for split, keys in layout.blocks_of.items() if _no_split(split) for key in keys]
    if not missing:
        return
    place = {path: file_order[unquote(path)] for path in {key[1] for key in layout.facts}}
    sizes: dict[tuple, int] = {}
    for key, facts in layout.facts.items():
        block = (place[key[1]], key[2])
        sizes[block] = sizes.get(block, 0) + len(facts.ids)
    before, at = {}, 0
    for block in sorted(sizes):
        before[block], at = at, at + sizes[block]
    # the blocks of the first five rows without a split: all such keys of the first blocks holding five of them
    wanted, held = set(), 0
    for block in sorted({(place[key[1]], key[2]) for key in missing}):
        if held >= 5:
            break
        keys = [key for key in missing if (place[key[1]], key[2]) == block]
        wanted.update(keys)
        held += sum(len(layout.facts[key].ids) for key in keys)
    try:
        places = (keyed.filter(functools.partial(tasks.key_in, wanted))
                  .map(functools.partial(tasks.block_place, {key[1]: place[key[1]] for key in wanted})))
        first = run_job("read input", functools.partial(places.takeOrdered, 5))
    finally:
        keyed.unpersist()
    rows = sum(len(layout.facts[key].ids) for key in missing)
    numbers = [before[(file, start)] + position + 1 for file, start, position in first]
    raise DataError(missing_cells_message(rows, numbers, column, option_named("split_column"), source,
                                          SPLIT_CELL_NEED))


@dataclass
class _Layout:
    """The blocks of each split in row order and where each starts in the row index."""

    order: list[str]
    blocks_of: dict[str, list[tuple]]
    facts: dict[tuple, Any]

    @property
    def offsets(self) -> dict[tuple, int]:
        offsets, at = {}, 0
        for split in self.order:
            for key in self.blocks_of[split]:
                offsets[key] = at
                at += len(self.facts[key].ids)
        return offsets

    def only(self, splits: list[str]) -> _Layout:
        """The named splits, in the order named (as the local loader selects them)."""
        return _Layout(list(dict.fromkeys(splits)), self.blocks_of, self.facts)


def _layout(blocks: list[Any], split_order: list[str] | None, file_order: dict[str, int]) -> _Layout:
    """Order the (split, file, block) records: blocks by (file, block start) inside a split, the
    files in ``file_order`` (listed URI -> its place; the split's files in path order); splits in
    ``split_order`` (from the file names) or, for ``--split-column``, by their first row (as the
    local loader regroups a table).

    Raises:
        SparkJobError: a block's rows came from two partitions (Spark reads a block whole in one
            task; the positions would collide otherwise), or from a file that was not listed.
    """
    facts: dict[tuple, Any] = {}
    for block in blocks:
        if block.key in facts:
            raise SparkJobError(f"the rows of {block.key[1]} (block at byte {block.key[2]}) came from two partitions; "
                                f"the row order cannot be recovered")
        facts[block.key] = block
    # Spark's _metadata.file_path is the file's Hadoop path URL-encoded (a space as %20, % as %25)
    place = {path: file_order.get(unquote(path)) for path in {key[1] for key in facts}}
    unknown = sorted(path for path, number in place.items() if number is None)
    if unknown:
        raise SparkJobError(f"Spark read rows from {unknown[0]}, which is not among the files listed; "
                            f"the row order cannot be recovered")
    blocks_of: dict[str, list[tuple]] = {}
    for key in sorted(facts, key=lambda key: (place[key[1]], key[2])):
        blocks_of.setdefault(key[0], []).append(key)
    if split_order is None:
        first = {split: min((place[key[1]], key[2], facts[key].first) for key in keys)
                 for split, keys in blocks_of.items()}
        split_order = sorted(blocks_of, key=lambda split: first[split])
    return _Layout([split for split in split_order if split in blocks_of], blocks_of, facts)


def iter_codes(source: SparkSource, wanted: Any) -> Iterator[tuple[int, Any]]:
    """``(index, code)`` of the rows ``wanted`` (a broadcast bool array by row) from the executors."""
    from workbench.dedup import spark_tasks as tasks

    yield from run_job("texts of short rows", source.items.filter(functools.partial(tasks.item_wanted, wanted))
                       .map(tasks.item_code).collect)
