"""Which split each data file of a folder is read into, in which order, and which files no split
reads: the one rule the local loader (:mod:`workbench.data.loading`) and the Spark engine's reader
(:mod:`workbench.dedup.spark_source`) share, so both engines read the same rows in the same order.

The split of a file is the one ``datasets`` gives it in a local folder of data files (its own
``get_data_patterns``, run on the files' paths in an in-memory file system): a sharded
``data/train-00000-of-00002.parquet``, else a split keyword as a word of the file's name or of
one of its folders (``train``/``training``; ``validation``/``valid``/``dev``/``val``;
``test``/``testing``/``eval``/``evaluation``), else, when no file names a split, ``train`` for all.
Splits come in ``datasets``' order (train, validation, test, then the rest).

Where this differs from ``datasets.load_dataset(folder)``:

* a split's files are read in the order of their paths (relative to the folder, code point
  order: ``dev.jsonl`` before ``validation.jsonl``, ``eval-1.jsonl`` before ``test.jsonl``), not
  in the order of ``datasets``' patterns (which changes between its versions);
* a data file that names no split while others do (``other.jsonl`` beside ``train.jsonl``) is not
  read by ``datasets`` either, but here it is listed and said (:func:`say_unread`), never dropped
  silently;
* a file whose name names two splits (``train_test.jsonl``), which ``datasets`` reads into both,
  is refused;
* a sharded file whose split name ``datasets`` does not take (``data/my split-00000-of-00001.jsonl``), on
  which it fails with a bare ``ValueError``, is refused naming the file and the name to rename it to.

Example::

    folder_splits(["dev.jsonl", "validation.jsonl", "train.jsonl", "notes.jsonl"])
    # FolderSplits(splits={'train': ['train.jsonl'], 'validation': ['dev.jsonl', 'validation.jsonl']},
    #              unmatched=['notes.jsonl'], metadata=[])
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from workbench.errors import DataError
from workbench.formatting import count

#: why a data file that names no split is not read (a :class:`~workbench.data.loading.SkippedFile` reason)
UNMATCHED_REASON = "its name names no split while other files' names do (train, validation, test: datasets' rule)"
#: why one of ``datasets``' metadata files (``config.json``, ``dataset_info.json`` ...) is not read
METADATA_REASON = "a metadata file of a dataset folder (datasets does not read it as data)"
#: why a file of a folder of data files that is no data file (a README.md, a LICENSE) is not read
NOT_DATA_REASON = "not a data file (the folder is read as a dataset)"
#: why the files in a folder named ``__*`` of a folder of data files are not read (one entry for the folder)
SPECIAL_FOLDER_REASON = "folder whose name starts with '__' (datasets reads no file in it): its files are not read"

logger = logging.getLogger(__name__)


@dataclass
class FolderSplits:
    """The splits of a folder's data files.

    Attributes:
        splits: split name -> its files in the order they are read (path order), splits in
            ``datasets``' order; each file as the caller named it.
        unmatched: files that name no split while others do (not read), in path order.
        metadata: ``datasets``' metadata files (``config.json``, ``dataset_infos.json`` ...),
            never read as data.
    """

    splits: dict[str, list[str]]
    unmatched: list[str] = field(default_factory=list)
    metadata: list[str] = field(default_factory=list)


def folder_splits(paths: Iterable[str], *, root: str = "", one_file: bool = False, where: str = "") -> FolderSplits:
    """Assign each data file of a folder to its split (the rule of the module).

    Args:
        paths: the data files (relative POSIX paths, or URIs), each starting with ``root``.
        root: the folder's prefix of every path (``""`` for relative paths, ``s3a://b/data/``);
            the rule is applied to the paths below it.
        one_file: the source named one file (not a folder): it is ``train``, whatever its name,
            as the local loader reads a file given alone.
        where: the folder as the user named it (a path, or the URI on Spark), for the messages.

    Returns:
        a :class:`FolderSplits` holding the paths as given.

    Raises:
        DataError: a file whose name names two splits (``train_test.jsonl``), naming it; a sharded file
            name with an empty split name (``data/-00000-of-00001.jsonl``, :func:`empty_split_name_message`), or
            with one ``datasets`` does not take (``data/my split-00000-of-00001.jsonl``,
            :func:`_refuse_unnamable_sharded_split`).
    """
    paths = sorted(set(paths), key=lambda path: path[len(root):])
    if one_file or not paths:
        return FolderSplits({"train": paths} if paths else {})
    _refuse_empty_sharded_split([path[len(root):] for path in paths], where)
    _refuse_unnamable_sharded_split([path[len(root):] for path in paths], where)
    import fsspec
    from datasets.data_files import DataFilesDict, get_data_patterns

    memory = fsspec.filesystem("memory")
    base = f"/workbench-splits-{uuid.uuid4().hex}"
    named = {f"{base}/{path[len(root):]}": path for path in paths}
    try:
        for name in named:
            memory.pipe(name, b"")
        try:
            patterns = get_data_patterns(f"memory://{base}")
        except FileNotFoundError:  # only metadata files: nothing to read
            patterns = {}
        resolved = DataFilesDict.from_patterns(patterns, base_path=f"memory://{base}") if patterns else {}
        found = {str(split): {named[name.removeprefix("memory://")] for name in names}
                 for split, names in resolved.items()}
    finally:
        memory.rm(base, recursive=True)
    _refuse_files_in_two_splits(found, root)
    read = set().union(*found.values()) if found else set()
    from datasets.data_files import FILES_TO_IGNORE

    metadata = [path for path in paths if path not in read and path.rsplit("/", 1)[-1] in FILES_TO_IGNORE]
    unmatched = [path for path in paths if path not in read and path not in metadata]
    return FolderSplits({split: [path for path in paths if path in files] for split, files in found.items() if files},
                        unmatched, metadata)


def special_folder(relative: str) -> str | None:
    """The folder of a data file that ``datasets`` reads no file in: the first folder of its path whose name
    starts with ``__`` (``datasets``' ``_is_inside_unrequested_special_dir``; a file named so, ``__train.jsonl``,
    is read).

    Args:
        relative: the file's POSIX path below the folder of data files (``__extra/deep/test.jsonl``).

    Returns:
        that folder's path, ending with ``/`` (``__extra/``), or ``None`` when no folder of the path is so named.
    """
    parts = relative.split("/")[:-1]
    special = next((n for n, part in enumerate(parts) if part.startswith("__")), None)
    return None if special is None else "/".join(parts[:special + 1]) + "/"


def empty_split_name_message(where: str, cause: str) -> str:
    """The one line refusing a split named ``''`` (both engines, a split column's cells or a file name).

    Args:
        where: the source as the user named it (a path, or the URI on Spark); cause: where the empty
            name came from (``"rows whose --split-column 'split' is empty"``).
    """
    return (f"{where}: a split named '' (empty), from {cause}: its output would be a hidden file (.jsonl) that no "
            f"loader reads back; give those rows a split name (or rename the file)")


def _refuse_empty_sharded_split(names: list[str], where: str) -> None:
    """Refuse a data file that ``datasets``' sharded pattern (``data/{split}-00000-of-00001.*``) takes with an
    empty split name (``data/-00000-of-00001.jsonl``): ``datasets`` fails on it with a bare
    ``AssertionError`` (its glob matches the name, its ``{split}`` pattern, needing a character, does not).

    Args:
        names: the data files' paths relative to the folder (POSIX); where: as :func:`folder_splits`.

    Raises:
        DataError: :func:`empty_split_name_message`, naming the first such file.
    """
    import fnmatch
    import posixpath

    from datasets.data_files import ALL_SPLIT_PATTERNS
    from datasets.utils.py_utils import string_to_dict

    for pattern in ALL_SPLIT_PATTERNS:
        glob = pattern.replace("{split}", "*")
        for name in names:  # as many folders as the pattern: its * then matches no "/"
            if (name.count("/") == glob.count("/") and fnmatch.fnmatchcase(name, glob)
                    and string_to_dict(posixpath.basename(name), posixpath.basename(pattern)) is None):
                raise DataError(empty_split_name_message(
                    where, f"a data file whose name gives an empty split name ({name})"))


def _refuse_unnamable_sharded_split(names: list[str], where: str) -> None:
    """Refuse a sharded data file (``data/{split}-00000-of-00001.*``) whose split name ``datasets`` does not
    take as a split's name (letters, digits and underscores, dots between them: its ``_split_re``), such as
    ``data/my split-00000-of-00001.jsonl`` or ``data/my-split-00000-of-00001.jsonl``: ``datasets`` fails on the
    whole folder with a bare ``ValueError: Split name should match ...``, on both engines.

    Args:
        names: the data files' paths relative to the folder (POSIX); where: as :func:`folder_splits`.

    Raises:
        DataError: one line naming the first such file (path order), its split name and the name to rename it
            to (each run of other characters an underscore: ``data/my_split-00000-of-00001.jsonl``).
    """
    import fnmatch
    import posixpath
    import re

    from datasets.data_files import ALL_SPLIT_PATTERNS, _split_re
    from datasets.utils.py_utils import string_to_dict

    for name in sorted(names):
        for pattern in ALL_SPLIT_PATTERNS:  # as datasets finds them: the glob, then the {split} part of the match
            if name.count("/") != pattern.count("/") or not fnmatch.fnmatchcase(name, pattern.replace("{split}", "*")):
                continue
            parts = string_to_dict(name, pattern)
            if parts is None or not parts["split"] or re.match(_split_re, parts["split"]):
                continue
            split = parts["split"]
            renamed = re.sub(r"\W+", "_", split).strip("_") or "train"
            folder, base = posixpath.split(name)
            fixed = posixpath.join(folder, renamed + base[len(split):])
            raise DataError(f"{where}: the sharded data file {name} names the split {split!r}, a name datasets does "
                            f"not take (a split's name is letters, digits and underscores, with dots between them); "
                            f"rename it to {fixed}")


def _refuse_files_in_two_splits(found: dict[str, set[str]], root: str) -> None:
    splits_of: dict[str, list[str]] = {}
    for split, files in found.items():
        for path in files:
            splits_of.setdefault(path, []).append(split)
    twice = sorted((path, splits) for path, splits in splits_of.items() if len(splits) > 1)
    if twice:
        path, splits = twice[0]
        more = f" (and {count(len(twice) - 1, 'more such file')})" if len(twice) > 1 else ""
        raise DataError(f"{path[len(root):]}: its name names the splits {' and '.join(splits)} (datasets would read "
                        f"its rows into each){more}; rename it so that its name names one split (train, validation "
                        f"or test), or move it out of the folder")


def say_unread(where: str, unmatched: list[str]) -> None:
    """Say (at warning level) that the data files ``unmatched`` name no split and are not read,
    how a file's split is named, and how to have them read. Both engines say it in these words.

    Args:
        where: the folder as the user gave it (a path, a URI); unmatched: the files, relative to it.
    """
    if not unmatched:
        return
    n = len(unmatched)
    shown = ", ".join(unmatched[:5]) + (f" and {n - 5} more" if n > 5 else "")
    folder, _, name = unmatched[0].rpartition("/")
    example = f"{folder}/train-{name}" if folder else f"train-{name}"
    files, them = ("data file names", "it") if n == 1 else ("data files name", "them")
    logger.warning(
        f"{where}: {n} {files} no split and {'is' if n == 1 else 'are'} not read: {shown}. A data file's split is a "
        f"word of its name or of a folder it is in: train or training; validation, valid, dev or val; test, testing, "
        f"eval or evaluation (train.jsonl, test-00000-of-00001.parquet, dev/part.jsonl); once one file names a "
        f"split, files that name none are left out. To read {them}, rename {them} to name a split (e.g. {example}) "
        f"or move {them} into a split's folder; to leave {them} out, move {them} out of the folder. Listed with the "
        f"files not read (dedup: unreadable.csv and report.json's skipped_files)")


#: a data-file format (the ``datasets`` builder, Spark's reader) as a message names it
FORMAT_NAMES = {"parquet": "Parquet", "json": "JSON", "csv": "CSV"}


def mixed_formats_message(where: str, formats: Mapping[str, str | None]) -> str | None:
    """The refusal of a folder whose data files are of several formats (``train.parquet`` beside
    ``extra.jsonl``), in words both engines use: ``datasets`` reads one format per folder (its most
    common one, leaving the others out) and Spark one reader per read, so neither may guess which
    files the user meant. ``datasets``' metadata files (``dataset_info.json`` ...) are no data and
    are left out of the comparison.

    Args:
        where: the folder or URI as the user gave it; formats: each data file (relative to
            ``where``, in path order) -> its format (``parquet``, ``json``, ``csv``; ``None``: not a
            data file, left out).

    Returns:
        one line naming each format (the most common first) with its count and first file, and
        what to do; ``None``
        when the files are of one format.
    """
    from datasets.data_files import FILES_TO_IGNORE

    by_format: dict[str, list[str]] = {}
    for name, kind in formats.items():
        if kind is not None and name.rsplit("/", 1)[-1] not in FILES_TO_IGNORE:
            by_format.setdefault(kind, []).append(name)
    if len(by_format) < 2:
        return None
    # the most common format first (the one the folder is most likely meant in), then by first file
    ordered = sorted(by_format.items(), key=lambda item: -len(item[1]))
    parts = [f"{count(len(names), FORMAT_NAMES.get(kind, kind) + ' file')} ({names[0]}"
             + (", ..." if len(names) > 1 else "") + ")" for kind, names in ordered]
    listed = ", ".join(parts[:-1]) + " and " + parts[-1]
    return (f"{where}: holds data files of {len(by_format)} formats, {listed}: a dataset's files are read with one "
            f"reader, one format per folder; convert them to one format (e.g. all Parquet or all JSON Lines), or "
            f"move the files of the other format out of the folder")
