"""Loading records for every job: hub ids, local data files, folders of source files, bundled sets.

All paths end in :class:`LoadedDataset`, a mapping of split name -> ``datasets.Dataset``
plus the files that were found but not loaded (and why), so nothing is dropped silently.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import gzip
import io
import json
import logging
import math
import os
import re
import tomllib
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

import datasets
import numpy as np
import xxhash

from workbench.data.codegen_metrics_file import looks_like_codegen_metrics_grades, read_codegen_metrics_grades
from workbench.data.ice_score_file import looks_like_ice_score_grades, read_ice_score_grades
from workbench.data.json_lines import LONE_SURROGATE_ESCAPE, lone_surrogate, lone_surrogate_message, parse_line
from workbench.data.text_encoding import (
    DEFAULT_SOURCE_ENCODING,
    check_source_encoding,
    decode_source_file,
    require_utf8,
)
from workbench.errors import DataError, HubUnreachableError, MissingColumnError, MissingSplitError
from workbench.formatting import count
from workbench.network import endpoint_reachable

if TYPE_CHECKING:
    from workbench.languages.spec import LanguagePlugin

#: data-file suffixes and the ``datasets`` builder that reads them (``.gz`` is also accepted)
DATA_FILE_BUILDERS: Mapping[str, str] = {
    ".jsonl": "json",
    ".json": "json",
    ".parquet": "parquet",
    ".csv": "csv",
}

#: the builders that read text (their files must be UTF-8: :mod:`workbench.data.text_encoding`)
TEXT_BUILDERS = frozenset({"json", "csv"})

#: sub-folder names of a source-file folder that name a split
FOLDER_SPLIT_NAMES = frozenset({"train", "test", "validation", "valid", "val", "dev", "eval"})

def _bundled_index() -> dict[str, tuple[str, str]]:
    """Read ``workbench/data/bundled/datasets.toml``: ``{name: (file, split)}``.

    Raises:
        KeyError: an entry lacks ``file`` or ``split`` (a packaging fault, caught by the tests).
    """
    index = tomllib.loads((resources.files("workbench.data") / "bundled" / "datasets.toml").read_text("utf-8"))
    return {name: (entry["file"], entry["split"]) for name, entry in index.items()}


#: datasets that ship inside the package: name -> (file under workbench/data/bundled, split), read from
#: ``workbench/data/bundled/datasets.toml`` (the index is data: provenance in ``SOURCES.md`` beside it)
BUNDLED: Mapping[str, tuple[str, str]] = _bundled_index()

logger = logging.getLogger(__name__)


class _DropReaderErrors(logging.Filter):
    """``datasets``' CSV and JSON readers log the parser's error ("Failed to read file ...")
    and then raise it; workbench reports that error itself, as one :class:`DataError` naming
    the file and line, so the logged copy (a second, rawer message) is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.ERROR


for _reader in ("datasets.packaged_modules.csv.csv", "datasets.packaged_modules.json.json"):
    logging.getLogger(_reader).addFilter(_DropReaderErrors())

# a CSV folder read with widened types (_csv_features) gives pandas a dtype for every column and the
# zero-padded id columns a converter too: the converter is meant to win, as pandas says it does
warnings.filterwarnings("ignore", message="Both a converter and dtype were specified", module="datasets")


@dataclass(frozen=True)
class SkippedFile:
    """A file found in a source folder but not loaded.

    Attributes:
        path: the path relative to the folder (POSIX separators; a folder's ends with ``/``).
        reason: ``"binary"``, ``"not UTF-8 (byte offset 40), nor cp1252 (byte offset 52): ..."`` (0-based), ``"empty"``, ``"unreadable: ..."``,
            ``"no language plugin for .ext"``, ``"hidden ..."`` (a name starting with ``.``, or
            ``__pycache__``: one entry per hidden folder, whose files are not listed), ``"folder whose name
            starts with '__' ..."`` (in a folder of data files: one entry per such folder, which ``datasets`` reads
            no file in), ``"symbolic link to a folder (not followed)"``, ``"broken symbolic link"``.
        undecodable: a source file of a language the folder is read in whose bytes could not be
            taken as its text (empty, binary, another encoding): part of the source tree, never
            compared; a ``files/`` output keeps it as it is.
        no_split: a data file that no split reads (it names none while others do, or it is a
            metadata file: :mod:`workbench.data.data_file_splits`); its :attr:`split` is ``""``.
    """

    path: str
    reason: str
    undecodable: bool = False
    no_split: bool = False

    @property
    def split(self) -> str:
        """The split the file would have been in (its first folder, as the loader assigns splits),
        ``""`` for a data file no split reads."""
        return "" if self.no_split else folder_split(self.path)


def folder_split(relative: str) -> str:
    """The split of a file of a source folder from its relative POSIX path: its first folder,
    lower-cased, when that is one of :data:`FOLDER_SPLIT_NAMES` (``test/a.py`` and ``Test/a.py``
    -> ``test``; a ``Train/`` kept as typed would escape ``--train-split train`` and with it the
    cross-set policy), else ``"train"``."""
    return _split_folder(relative) or "train"


def _split_folder(relative: str) -> str | None:
    """The split folder a source file lies in (:func:`folder_split`), lower-cased, or ``None``."""
    first, inside, _ = relative.partition("/")
    return first.lower() if inside and first.lower() in FOLDER_SPLIT_NAMES else None


@dataclass
class LoadedDataset:
    """Records of one source, by split.

    Attributes:
        source: what the user passed (hub id, path or bundled name).
        splits: split name -> ``datasets.Dataset`` (insertion order is the source's order).
        skipped: files that were found but not loaded, with the reason.
        encodings: for a folder of source files, each file read in another encoding than UTF-8
            (its path relative to the folder, as its id) -> how (``"cp1252 (fallback)"``,
            ``"UTF-16 (byte-order mark)"``, ``"declared by the file"``:
            :func:`workbench.data.text_encoding.decode_source_file`); empty for data files.
    """

    source: str
    splits: dict[str, datasets.Dataset]
    skipped: list[SkippedFile] = field(default_factory=list)
    encodings: dict[str, str] = field(default_factory=dict)

    @property
    def column_names(self) -> list[str]:
        """Columns of the first split (every split of one source has the same columns)."""
        for dataset in self.splits.values():
            return list(dataset.column_names)
        return []

    @property
    def num_rows(self) -> int:
        """Total rows over all splits."""
        return sum(len(d) for d in self.splits.values())

    def require_columns(self, columns: Mapping[str, str | None]) -> None:
        """Check that every named column exists.

        Args:
            columns: CLI option -> column name (``{"--code-column": "content"}``);
                ``None`` values are skipped.

        Raises:
            MissingColumnError: the first column that does not exist, listing those that do.
        """
        for split_name, dataset in self.splits.items():
            require_columns(dataset, columns, where=f"split {split_name!r} of {self.source}")

    def with_numbered_samples(self, task_column: str, sample_column: str) -> LoadedDataset:
        """A copy whose splits gain ``sample_column``: 0, 1, ... per task in file order (splits in
        order), the numbering ``workbench execute`` and ``score`` give data without a sample id
        column (:class:`workbench.data.samples.SampleNumbering`), so ids built from the task and
        this column join their outputs. Unchanged when the column exists or the task column does not.
        """
        from workbench.data.samples import sample_numbers

        if sample_column in self.column_names or task_column not in self.column_names:
            return self
        # one numbering over the splits in order: a task's samples keep counting across splits
        numbers = iter(sample_numbers(task for dataset in self.splits.values() for task in dataset[task_column]))
        splits = {name: dataset.add_column(sample_column, [next(numbers) for _ in range(len(dataset))])
                  for name, dataset in self.splits.items()}
        return LoadedDataset(self.source, splits, list(self.skipped), dict(self.encodings))

    def select_splits(self, names: Iterable[str] | None) -> LoadedDataset:
        """Return a copy with only the named splits (all when ``names`` is empty or ``None``).

        Raises:
            MissingSplitError: a name is not a split; the message lists the splits there are.
        """
        wanted = list(names or [])
        if not wanted:
            return self
        for name in wanted:
            if name not in self.splits:
                raise MissingSplitError(name, list(self.splits))
        encodings = {path: how for path, how in self.encodings.items() if folder_split(path) in wanted}
        return LoadedDataset(self.source, {name: self.splits[name] for name in wanted}, self.skipped, encodings)

    def one_split(self, option: str | None = None) -> datasets.Dataset:
        """Return the split a one-split job reads: the only one, else ``test``.

        Args:
            option: the option that names a split, quoted in the error (default: ``split``'s,
                :func:`workbench.option_words.option_named`: ``--split``, ``[data] split`` under
                ``workbench run``).

        Raises:
            DataError: several splits and none is called ``test``; the message lists them and
                names ``option``.
        """
        if len(self.splits) == 1:
            return next(iter(self.splits.values()))
        if "test" in self.splits:
            return self.splits["test"]
        if option is None:
            from workbench.option_words import option_named

            option = option_named("split")
        raise DataError(f"{self.source}: it has the splits {', '.join(self.splits)}; name one with {option}")

    def concatenated(self, split_column: str = "split") -> datasets.Dataset:
        """Return all splits as one dataset with the split name in ``split_column``."""
        parts = []
        for name, dataset in self.splits.items():
            if split_column in dataset.column_names:
                dataset = dataset.remove_columns(split_column)
            parts.append(dataset.add_column(split_column, [name] * len(dataset)))
        if not parts:
            return datasets.Dataset.from_dict({split_column: []})
        return datasets.concatenate_datasets(parts)


def value_kind(value: Any) -> str:
    """What a cell holds, in the words of its file rather than of ``datasets``' feature types:
    ``"text"``, ``"numbers"``, ``"true/false values"``, ``"lists"``, ``"objects"``, ``"bytes"``,
    else the Python type's name (``"datetime"``)."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):  # before int: a bool is an int
        return "true/false values"
    if isinstance(value, (int, float, np.number)):
        return "numbers"
    if isinstance(value, (list, tuple, np.ndarray)):
        return "lists"
    if isinstance(value, dict):
        return "objects"
    if isinstance(value, bytes):
        return "bytes"
    return type(value).__name__


def _as_written(value: Any) -> str:
    """A cell as its file would show it (``123``, ``["a"]``, ``true``), cut to 60 characters."""
    try:
        text = json.dumps(value.tolist() if isinstance(value, np.ndarray) else value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def describe_non_text(dataset: datasets.Dataset, column: str, option: str, where: str) -> str:
    """The first words of an error for a column that should hold text and does not, in the
    file's terms: ``"--generation-column 'x' holds numbers, not text, in 1 of 6 rows of the
    generations (g.jsonl) (e.g. 123 in row 5)"``; for a JSON-typed column whose every cell reads
    as text or null, that a bare NaN or Infinity is the likely cause (``datasets`` reads those as
    null but types the column as JSON); for another typed column of nulls only, its type.

    Args:
        dataset: the table; column: the column; option: the option that names it;
        where: what the table is (``"the generations (gens.jsonl)"``); rows count from 1 in it.
    """
    try:
        cells = dataset[column]
    except Exception:  # an unreadable column: the message does without an example
        return f"{option} {column!r} does not hold text (in {where})"
    odd = [(number, value) for number, value in enumerate(cells, start=1)
           if value is not None and not isinstance(value, (str, bytes))]
    feature = dataset.features[column]
    if not odd and type(feature).__name__ != "Json":  # a typed column of nulls (a Parquet int64): no NaN to blame
        typed = feature.dtype if isinstance(feature, datasets.Value) else str(feature)
        return (f"{option} {column!r} holds no text: every one of its {count(len(cells), 'cell')} is null, in a "
                f"column typed {typed} (in {where})")
    if not odd:
        return (f"{option} {column!r} does not hold text (in {where}): every cell reads as text or null, so a NaN "
                f"or Infinity written bare in some row (not JSON; write null for a missing value) is the likely cause")
    kinds = list(dict.fromkeys(value_kind(value) for _, value in odd))
    number, first = odd[0]
    return (f"{option} {column!r} holds {' and '.join(kinds)}, not text, in {len(odd)} of {count(len(cells), 'row')} "
            f"of {where} (e.g. {_as_written(first)} in row {number})")


def require_text_columns(dataset: datasets.Dataset, columns: Mapping[str, str | None], where: str) -> None:
    """Raise :class:`DataError` for a named column that does not hold text (or only nulls): a
    number or a list would otherwise be turned into its ``repr`` and read as code.

    Args:
        dataset: the table; columns: option -> column name (``None``: not used, skipped);
        where: what the table is, for the message (``"the generations (gens.jsonl)"``).

    Raises:
        DataError: naming the option, what the column holds in the file's terms (numbers,
            lists, ...), how many rows and the first such cell with its row (:func:`describe_non_text`).
    """
    for option, column in columns.items():
        if column is None:
            continue
        feature = dataset.features[column]
        if not (isinstance(feature, datasets.Value) and feature.dtype in ("string", "large_string", "null")):
            raise DataError(
                f"{describe_non_text(dataset, column, option, where)}; one row per sample with its code as a string "
                f"is expected (a null for a missing one; flatten a list of completions per task first)"
            )


#: ``datasets`` feature types of a column that may hold several texts per row: lists, and JSON
#: (a JSON Lines column with a string in some rows and a list in others)
_LIST_FEATURES = frozenset({"List", "LargeList", "Sequence", "Json"})


def holds_text_lists(dataset: datasets.Dataset, column: str) -> bool:
    """Whether ``column`` is typed as lists (or as JSON: strings in some rows, lists in others)
    rather than as text: a column whose rows may each give several texts (several references
    of one sample); its cells are read by :func:`text_list_cells`."""
    return type(dataset.features[column]).__name__ in _LIST_FEATURES


def text_list_cells(dataset: datasets.Dataset, column: str, option: str, where: str, *,
                    noun: str = "reference") -> list[tuple[str, ...]]:
    """The cells of a column that gives each row one text or several: a string is one text, a list
    of strings is its texts in order, a null is none (an empty tuple), as is an empty list.

    Args:
        dataset: the table; column: the column (:func:`holds_text_lists`); option: the option
        that names it (``--reference-column``); where: what the table is, for the message
        (``"the generations (gens.jsonl)"``); rows count from 1 in it; noun: what a text is,
        for the message's remedy.

    Returns:
        one tuple of texts per row, in row order.

    Raises:
        DataError: some cell is neither text, nor a list of texts, nor null (a number, an object,
            a list holding a number or a null), naming how many rows, and the first one with its row.
    """
    cells = dataset[column]
    texts: list[tuple[str, ...]] = []
    odd: list[tuple[int, Any]] = []
    for number, value in enumerate(cells, start=1):
        if value is None:
            texts.append(())
        elif isinstance(value, str):
            texts.append((value,))
        elif isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
            texts.append(tuple(value))
        else:
            odd.append((number, value))
            texts.append(())
    if odd:
        kinds = list(dict.fromkeys(
            "lists holding " + " and ".join(dict.fromkeys("nulls" if item is None else value_kind(item)
                                                          for item in value if not isinstance(item, str)))
            if isinstance(value, (list, tuple)) else value_kind(value) for _, value in odd))
        number, first = odd[0]
        raise DataError(
            f"{option} {column!r} holds {' and '.join(kinds)} in {len(odd)} of {count(len(cells), 'row')} of {where} "
            f"(e.g. {_as_written(first)} in row {number}); give each row its {noun} as a string or its "
            f"{noun}s as a list of strings")
    return texts


def require_columns(dataset: datasets.Dataset, columns: Mapping[str, str | None], where: str = "the data") -> None:
    """Raise :class:`MissingColumnError` if any of ``columns`` (option -> name) is missing."""
    available = list(dataset.column_names)
    for option, column in columns.items():
        if column is not None and column not in available:
            error = MissingColumnError(column, available, option)
            error.args = (f"{error.args[0]} (in {where})",)
            raise error


def load_records(
    source: str | os.PathLike[str],
    *,
    config: str | None = None,
    splits: Iterable[str] | None = None,
    split_column: str | None = None,
    offline: bool = False,
    extensions: Iterable[str] | None = None,
    language: str | None = None,
    source_encoding: str = DEFAULT_SOURCE_ENCODING,
) -> LoadedDataset:
    """Load a dataset from a bundled name, a local file or folder, or a Hugging Face hub id.

    Args:
        source: a bundled name (``"humaneval"``, ``"humaneval-codex-python"``, ``"humaneval-codex-java"``,
            ``"humaneval-codex-cpp"``, ``"humaneval-java"``, ``"humaneval-cpp"``, ``"conala-all-grades"``,
            ``"conala-human-grades"``; see
            :data:`BUNDLED` and ``workbench/data/bundled/SOURCES.md``); a ``.jsonl``/``.json``/
            ``.parquet``/``.csv`` file (``.gz`` for the text formats); an ICE-Score grade file
            (``humaneval_<lang>_grade.json``, detected by its layout and flattened to one row per
            sample, split ``"test"``; see :mod:`workbench.data.ice_score_file`); a CoNaLa human-grade
            file of Evtikhiev et al. (``conala-{all,human}-grades.json``, detected by its layout, one row
            per item and model, split ``"test"``; :mod:`workbench.data.codegen_metrics_file`); a folder of such data files
            (split names from file names, as ``datasets`` infers them, each split's files in path order;
            a file that names no split while others do is listed in ``skipped`` and said:
            :mod:`workbench.data.data_file_splits`); a folder of source
            files (one record per file; the split is the first sub-folder when it is one of
            :data:`FOLDER_SPLIT_NAMES`, else ``"train"``); or a hub id ``owner/name``.
        config: the hub dataset's configuration name.
        splits: keep only these splits (all when empty).
        split_column: if given, rows are regrouped into splits by this column's value
            (for one table that holds several splits).
        offline: never contact the hub (``HF_HUB_OFFLINE``); a hub id then loads from the
            local cache or fails.
        extensions: for source-file folders, the file suffixes to load (default: every
            suffix an installed language plugin handles).
        language: for source-file folders, the language (name, alias or extension: the
            command's ``--language``) given the files whose extension several installed plugins
            claim, when it is one of them; such files are an error otherwise.
        source_encoding: for source-file folders, the encoding of a file that is not UTF-8 and
            declares none (no byte-order mark, no coding cookie): a codec name Python knows
            (``cp1252``, the default; ``latin-1``, ``gbk``, ``shift_jis``). The files read so are
            in :attr:`LoadedDataset.encodings` (:mod:`workbench.data.text_encoding`).

    Returns:
        a :class:`LoadedDataset`.

    Raises:
        DataError: empty file, unknown file type, unreadable data, a data file of a folder whose
            name names two splits.
        HubUnreachableError: a hub id while the hub cannot be reached (fails in seconds).
        MissingSplitError / MissingColumnError: ``splits`` / ``split_column`` not present.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise DataError(
            f"a data source is a path, a bundled name or a hub id (str or os.PathLike), not {type(source).__name__}; "
            "write a table to a file first (pandas: df.to_json('data.jsonl', orient='records', lines=True)); "
            "correlate and bias also take a pandas DataFrame, a datasets.Dataset or a dict of columns")
    text = os.fspath(source)
    path = Path(text).expanduser()
    if text in BUNDLED and not path.exists():
        loaded = _load_bundled(text)
    elif path.is_file():
        loaded = _load_data_file(path)
    elif path.is_dir():
        loaded = _load_folder(path, extensions, language, source_encoding)
    elif path.is_symlink():
        raise DataError(broken_link_message(text, path))
    elif _looks_like_path(text):
        raise DataError(f"{text}: no such file or folder")
    else:
        loaded = _load_hub(text, config=config, offline=offline)
    if split_column is not None:
        loaded = _regroup_by_column(loaded, split_column)
    return loaded.select_splits(splits)


def load_humaneval() -> datasets.Dataset:
    """Return the 164 bundled HumanEval problems (Chen et al. 2021; MIT licence).

    Columns: ``task_id``, ``prompt``, ``canonical_solution``, ``test``, ``entry_point``.
    """
    return load_records("humaneval").splits["test"]


# -- the loaders ----------------------------------------------------------------------------


def _load_bundled(name: str) -> LoadedDataset:
    filename, split = BUNDLED[name]
    with resources.as_file(resources.files("workbench.data") / "bundled" / filename) as file:
        if looks_like_ice_score_grades(file):
            return LoadedDataset(name, {split: read_ice_score_grades(file)})
        if looks_like_codegen_metrics_grades(file):
            return LoadedDataset(name, {split: read_codegen_metrics_grades(file)})
        dataset = _read_data_files("json", {split: str(file)})
    return LoadedDataset(name, dataset)


def _builder_for(path: Path) -> str | None:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return DATA_FILE_BUILDERS.get(suffixes[-1]) if suffixes else None


def _load_data_file(path: Path) -> LoadedDataset:
    builder = _builder_for(path)
    if builder is None:
        known = ", ".join(DATA_FILE_BUILDERS)
        raise DataError(f"{path}: unknown data file type; expected one of {known} (optionally .gz), or a folder")
    if builder == "parquet" and path.suffix.lower() == ".gz":
        raise DataError(f"{path}: gzipped Parquet is not readable; Parquet compresses internally, pass the .parquet file")
    if path.stat().st_size == 0:
        raise DataError(f"{path}: the file is empty")
    if builder in TEXT_BUILDERS:
        require_utf8(path)  # datasets would read bad bytes silently and fail later, on the row
    if looks_like_ice_score_grades(path):
        # one object per task with "N"/"grade-N"/"<metric>-N" keys: flatten to one row per sample
        return LoadedDataset(str(path), {"test": read_ice_score_grades(path)})
    if looks_like_codegen_metrics_grades(path):
        # Evtikhiev et al.'s CoNaLa grades: one object per item with "<model>"/"grade-<model>" keys
        return LoadedDataset(str(path), {"test": read_codegen_metrics_grades(path)})
    return LoadedDataset(str(path), _read_data_files(builder, {"train": str(path)}))


def _read_data_files(builder: str, data_files: Mapping[str, str | list[str]]) -> dict[str, datasets.Dataset]:
    files = ", ".join(str(v) for v in data_files.values())
    # datasets reads data_files as glob patterns: a literal path with [ ] * ? (a run folder
    # named "run [1]") must be escaped, or it matches nothing
    patterns = {split: [glob.escape(f) for f in ([v] if isinstance(v, str) else v)] for split, v in data_files.items()}
    paths = [Path(f) for v in data_files.values() for f in ([v] if isinstance(v, str) else v)]
    return _build(builder, patterns, label=files, failure=f"cannot read {files} as {builder}", files=paths)


def _reason(error: BaseException) -> str:
    """What is wrong with the file: datasets wraps the parser's error in a ``DatasetGenerationError``
    that says only "An error occurred while generating the dataset"; the parser's own message
    (pyarrow's "JSON parse error: ... in row 1", pandas' "EOF inside string starting at row 1")
    is its cause, so it is added."""
    cause = error.__cause__
    if isinstance(error, datasets.exceptions.DatasetGenerationError) and cause is not None and str(cause):
        return f"{error} ({type(cause).__name__}: {cause})"
    return str(error)


def _build(
    source: str, data_files: dict[str, str | list[str]], *, label: str, failure: str,
    files: Sequence[Path] = (), folder: Path | None = None,
) -> dict[str, datasets.Dataset]:
    """Run the ``datasets`` builder for ``source`` and return its splits, refusing empty ones.

    What ``datasets.load_dataset`` does, in its steps, so that a split with no rows (``[]``,
    a CSV with only a header) is reported as such rather than as datasets' "Instruction
    'train' corresponds to no data".

    Args:
        source: a builder name (``"json"``); data_files: split -> its files (glob-escaped).
        label: the file or folder as the user named it (for the messages); folder: the folder
            ``label`` names, the data files' names relative to it (an empty split is named with
            its files); ``None`` for one file.
        failure: the message's start when datasets cannot read the data.
        files: the data files read; their columns are typed over their whole length
            (:func:`_column_features`) and read with one type each; when datasets fails, each
            is checked for the usual faults (:func:`file_problem`), so the message names the
            file and line.

    Raises:
        DataError: a column of two kinds of value over the files' parts, CSV files of other
            columns (:func:`_column_features`); what is wrong and where (a line that is not
            JSON, a CSV row with another number of fields), else ``failure`` plus datasets'
            reason for a malformed file; or "has no rows" naming the files of each empty split;
            a Parquet file with no columns (:data:`COLUMNLESS_PARQUET`), before reading. A Parquet
            file with its columns and no rows adds no rows (:func:`_parquet_batch_size`).
    """
    options: dict[str, Any] = {}
    survey = None
    if files and all(_builder_for(file) == "csv" for file in files):
        from workbench.data.file_types import survey_csv

        # only an empty cell is missing: pandas' default NA words ("NA", "None", "null", "N/A" ...)
        # are code and ids here (a completion "None", a task "NA"), never silently null
        options.update(keep_default_na=False, na_values=[""])
        survey = survey_csv(files)
        if survey.padded:  # pandas would read "007" as 7: an id that then matches nothing
            options["converters"] = {column: _text_or_none for column in survey.padded}
    if source == "parquet" and files:
        for file in files:  # read without columns, it would now be a file of no rows
            problem = _parquet_problem(file)
            if problem is not None:
                raise DataError(f"cannot read {file}: {problem}")
        batch_size = _parquet_batch_size(files)
        if batch_size is not None:
            options["batch_size"] = batch_size
    features, schemas, fieldless = _column_features(label, source, files, folder, survey) if files else (None, None, ())
    if features is not None:
        options["features"] = features
        if survey is not None:
            exact = _csv_cells(features, survey)
            if exact:
                options["converters"] = {**options.get("converters", {}), **exact}
    dated: set[str] = set()
    if files and all(_builder_for(file) == "json" for file in files):
        from workbench.data.json_dates import text_date_features

        # ISO dates stay text, as Spark reads them (a date first seen after the first block too)
        dated, date_features = text_date_features(files, schemas)
        if date_features is not None:
            if features is not None:  # the widened types (numbers, nulls) with the date columns as text
                date_features = features.copy()
                for column in dated:
                    date_features[column] = datasets.Value("string")
            options["features"] = date_features
    restored: dict[str, datasets.Dataset] | None = None
    try:
        from workbench.data.json_dates import refuse_rewritten_dates, restore_date_text

        try:
            builder = datasets.load_dataset_builder(source, data_files=data_files, **options)
            builder.download_and_prepare()
            if "features" in options:
                restored = {name: restore_date_text(split, builder.config.data_files[name], dated)
                            for name, split in builder.as_dataset().items()}
        except Exception:
            if "features" not in options:
                raise
            # given features turn off datasets' own reading of a column of mixed objects (or numbers beside the
            # dates) as JSON: read as datasets reads, dates as timestamps
            options.pop("features")
            builder = datasets.load_dataset_builder(source, data_files=data_files, **options)
            builder.download_and_prepare()
        if restored is None:
            refuse_rewritten_dates(label, builder.info.features, dated)
    except DataError:
        raise
    except Exception as error:  # datasets raises many types for malformed files
        for file in files:
            problem = file_problem(file)
            if problem is not None:
                raise DataError(f"cannot read {file}: {problem}") from error
        raise DataError(f"{failure}: {_reason(error)}") from error
    split_infos = builder.info.splits or {}
    # a split whose JSON Lines files hold no object with a field ({} lines) has no rows, as Spark reads it; read
    # beside splits of records (with their features) its {} lines would be rows of nulls
    unfielded = {glob.escape(str(file)) for file in fieldless}
    empty = [name for name, info in split_infos.items()
             if not info.num_examples or set(_split_patterns(data_files, name)) <= unfielded]
    if empty:
        if folder is None and source == "parquet":  # no JSON list or CSV header to blame: say what the file holds
            raise DataError(empty_parquet_message(label, list(builder.info.features or {})))
        raise DataError(_no_rows_message(label, builder.config.data_files or {}, empty, folder is None))
    try:
        return restored if restored is not None else dict(builder.as_dataset())
    except Exception as error:
        raise DataError(f"{failure}: {error}") from error


def _split_patterns(data_files: Mapping[str, str | list[str]], split: str) -> list[str]:
    """The (glob-escaped) files of ``split`` in :func:`_build`'s ``data_files``; a split of none is never fieldless."""
    found = data_files.get(split) or [None]
    return [found] if isinstance(found, str) else list(found)


def _parquet_batch_size(files: Sequence[Path]) -> int | None:
    """The batch size to give ``datasets``' Parquet builder, or ``None`` for its own.

    The builder reads each file in batches of the size of the file's first row group; pyarrow writes
    a table with its columns and no rows (an empty shard of a sharded writer) as one row group of
    zero rows, so the builder asks for batches of 0 and pyarrow refuses ("BatchSize must be greater
    than 0"). Where a file starts with such a row group, the largest row group of all the files is
    the size (at least 1): each row group is still read in one batch, and the empty one adds no rows,
    as Spark reads it. A footer that cannot be read is left to the reader's own error.

    Args:
        files: the Parquet files read (paths).

    Returns:
        Rows per batch, or ``None`` when every file's first row group has rows (or it has none).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    sizes: list[int] = []
    starts_empty = False
    for file in files:
        try:
            metadata = pq.read_metadata(file)
        except (OSError, pa.ArrowException):
            continue
        groups = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
        starts_empty = starts_empty or (bool(groups) and groups[0] == 0)
        sizes.extend(groups)
    return max([1, *sizes]) if starts_empty else None


def _text_or_none(value: str) -> str | None:
    """A CSV cell kept as text; an empty cell is missing, as pandas reads it elsewhere."""
    return value if value != "" else None


def _whole_or_none(value: str) -> int | None:
    """A CSV cell of an integer column (``1``, or ``1.0`` from a file whose empty cells made it
    floats); an empty cell is missing."""
    if value == "":
        return None
    try:
        return int(value)
    except ValueError:
        return int(float(value))


def _bool_or_none(value: str) -> bool | None:
    """A CSV cell of a true/false column, in pandas' words (``True``, ``false``, ``TRUE``); an
    empty cell is missing."""
    return None if value == "" else value.lower() == "true"


#: the converters of the CSV columns whose widened type pandas cannot hold a missing cell in
_CSV_CELLS = {"int64": _whole_or_none, "bool": _bool_or_none}


def _csv_cells(features: datasets.Features, survey: Any) -> dict[str, Any]:
    """Column -> converter for the CSV columns typed int64 or bool (:func:`_csv_features`) that may
    hold an empty cell: given as pandas dtypes, those hold no missing cell ("Integer column has NA
    values"), so they are converted by hand (the converter wins over the dtype), an empty cell to null
    as elsewhere. An integer column with no empty cell in any chunk (the survey's ``"int"``) keeps
    pandas' fast dtype; zero-padded columns keep their text converter.

    Args:
        features: the types the CSV files are read with; survey: their
            :class:`~workbench.data.file_types.CsvSurvey`.
    """
    def empty_cells(column: str) -> bool:
        return any(kind != "int" for chunks in survey.classes.values() for kind in chunks.get(column, ()))

    return {column: _CSV_CELLS[feature.dtype] for column, feature in features.items()
            if column not in survey.padded and isinstance(feature, datasets.Value) and feature.dtype in _CSV_CELLS
            and (feature.dtype == "bool" or empty_cells(column))}


#: a Parquet file with no columns, in both dedup engines' words (after ``cannot read <file>: ``)
COLUMNLESS_PARQUET = ("the Parquet file has no columns (an empty schema, as pyarrow writes a table without columns); "
                      "write it with its columns, or remove it")


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """What makes a CSV or JSON data file unreadable, with its 1-based line number as an
    editor shows it, or a Parquet file (:data:`COLUMNLESS_PARQUET`: ``datasets`` says only
    "BatchSize must be greater than 0"); ``None`` when no check finds a fault (the file may
    still fail for another reason, e.g. a column whose values change type).

    The parsers' own messages do not say it: pyarrow reports a JSON Lines file cut off in
    line 6 as "Invalid encoding in string. in row 5", pandas a ``;``-separated CSV as
    "Expected 1 fields in line 3, saw 2".

    Example::

        file_problem("scores.jsonl")
        # 'line 6 is not valid JSON: Unterminated string starting at: column 13; ...'
    """
    path = Path(path)
    builder = _builder_for(path)
    if builder == "parquet":
        return _parquet_problem(path)
    if builder not in TEXT_BUILDERS:
        return None
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8-sig", newline="") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError, EOFError):
        return None  # unreadable or not UTF-8: the generic message (require_utf8 ran before)
    return _json_problem(text) if builder == "json" else _csv_problem(text)


def _parquet_problem(path: Path) -> str | None:
    """:data:`COLUMNLESS_PARQUET` for a Parquet file whose footer holds no column, else ``None``
    (a footer that cannot be read: the reader's own error says why)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowException):
        return None
    return COLUMNLESS_PARQUET if not schema.names else None


def _json_problem(text: str) -> str | None:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        whole = error
    else:
        # one JSON document (a .json list, or JSON Lines of one line): valid unless it holds a lone surrogate
        lone = lone_surrogate(document) if "\\u" in text else None
        if lone is None:
            return None
        number = next((n for n, line in enumerate(text.split("\n"), start=1) if LONE_SURROGATE_ESCAPE.search(line)),
                      None)
        return lone_surrogate_message(f"line {number}" if number is not None else "the file", lone)
    lines = text.split("\n")  # line numbers as an editor counts them
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        return None
    try:
        json.loads(first)
    except json.JSONDecodeError:
        # not JSON Lines: one document (a .json list) with a fault
        return f"line {whole.lineno} is not valid JSON: {whole.msg}: column {whole.colno}"
    for number, line in enumerate(lines, start=1):
        _, problem = parse_line(line, f"line {number}")
        if problem is not None:
            return problem
    return None


def _csv_problem(text: str) -> str | None:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    header_line = start = last = 1
    try:
        while True:
            start = reader.line_num + 1  # a row may span lines (a quoted newline): name its first
            row = next(reader, None)
            if row is None:
                break
            if not row:
                continue  # a blank line
            last = start
            if header is None:
                header, header_line = row, start
                continue
            if len(row) != len(header):
                first = text.split("\n", 1)[0]
                separator = next((s for s in (";", "\t", "|") if s in first and "," not in first), None)
                hint = (f"is the file {'tab' if separator == chr(9) else separator}-separated? " if separator
                        else "does a field hold a comma without double quotes around it? ")
                return (f"rows have different numbers of fields; {hint}The header (line {header_line}) has "
                        f"{len(header)}, line {start} has {len(row)}. A CSV file must be comma-separated "
                        f"(a field with a comma in double quotes): convert it, e.g. with pandas "
                        f"read_csv(path, sep=...).to_csv(new_path, index=False), or pass JSON Lines")
    except csv.Error as error:
        return f"line {start} is not valid CSV: {error}"
    if text.count('"') % 2:
        # an unclosed quote runs to the end of the file: it is in the last row read
        return f"line {last} opens a quoted field (\") that is never closed; close it or remove the quote"
    return None


#: why a folder's broken symbolic link is not read (``unreadable.csv``, both dedup engines)
BROKEN_LINK_REASON = "broken symbolic link"


def broken_link_message(where: str, link: str | os.PathLike[str]) -> str:
    """The one line refusing a SOURCE that is a broken symbolic link, on both dedup engines (and every loader):
    ``<source>: a broken symbolic link (to missing.jsonl, which does not exist); fix the link or pass the file it
    should name``.

    Args:
        where: the source as the user named it (a path; the URI on Spark); link: the link's path on this machine.
    """
    return (f"{where}: a broken symbolic link (to {os.readlink(link)}, which does not exist); fix the link or pass "
            f"the file it should name")


def only_broken_links_message(where: str, links: Sequence[str]) -> str:
    """The one line refusing a folder whose only entries to read are broken symbolic links, on both dedup engines:
    ``<folder>: no file to read there, only broken symbolic links (gone.jsonl, sub/x.jsonl); fix or remove them``.

    Args:
        where: the folder as the user named it (a path; the URI on Spark); links: the links' paths below it, in order.
    """
    shown = ", ".join(links[:3]) + (" ..." if len(links) > 3 else "")
    return f"{where}: no file to read there, only broken symbolic links ({shown}); fix or remove them"


def empty_parquet_message(where: str, columns: Sequence[str]) -> str:
    """The one line refusing a Parquet file given alone that has its columns and no rows (pyarrow writes one for an
    empty table), on both dedup engines: ``<file>: the Parquet file has no rows (its columns: id, content); ...``.

    Args:
        where: the file as the user named it (a path; the URI on Spark); columns: its columns, in the file's order.
    """
    listed = ", ".join(columns[:8]) + (f" and {len(columns) - 8} more" if len(columns) > 8 else "")
    return f"{where}: the Parquet file has no rows (its columns: {listed}); pass a file with at least one row"


def json_no_rows_message(where: str, name: str, lines: Iterable[str]) -> str:
    """The one line refusing a JSON or JSON Lines file given alone that holds no row, on both dedup engines, saying
    what it holds: ``<file>: the JSON Lines file has no rows (only blank lines); pass a file with at least one
    record``, or ``(an empty JSON list)``.

    Args:
        where: the file as the user named it (a path; the URI on Spark). name: its name, for the format: ``.json``
            (before an optional ``.gz``) is JSON, any other JSON Lines (Spark reads a file of another name as JSON
            Lines with ``--input-format json``).
        lines: the file's lines with all whitespace taken out (each distinct one at least once); none for a file
            of no bytes. Only blank ones: ``only blank lines``; only brackets (``[]``, or ``[`` and ``]`` on two
            lines): ``an empty JSON list``; else ``no JSON object with a field``.
    """
    suffixes = [suffix.lower() for suffix in PurePath(name).suffixes]
    if suffixes[-1:] == [".gz"]:
        suffixes.pop()
    form = "JSON" if suffixes[-1:] == [".json"] else "JSON Lines"
    held = set(lines)
    if not held:
        return f"{where}: the file is empty"
    marks = set("".join(held))
    holds = ("only blank lines" if not marks else "an empty JSON list" if marks <= set("[]")
             else "no JSON object with a field")
    return f"{where}: the {form} file has no rows ({holds}); pass a file with at least one record"


def _compact_lines(path: Path) -> set[str]:
    """The distinct lines of a text file (gzipped when its name ends in ``.gz``), whitespace taken out."""
    opener = gzip.open if path.suffix.lower() == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        return {"".join(line.split()) for line in handle}


def _no_rows_message(label: str, data_files: Mapping[str, Iterable[str]], empty: list[str], one_file: bool) -> str:
    if one_file:
        if _builder_for(Path(label)) == "csv":
            return f"{label}: the CSV file has no rows (only a header); pass a file with at least one record"
        return json_no_rows_message(label, label, _compact_lines(Path(label)))

    def files_of(split: str) -> str:
        found = data_files.get(split) or []
        names = [found] if isinstance(found, str) else [str(f) for f in found]
        return ", ".join(os.path.basename(name) for name in names) or split

    where = "; ".join(f"split {name!r} ({files_of(name)})" for name in empty)
    return f"{label}: no rows in {where}; remove the empty files or add records"


def _load_folder(path: Path, extensions: Iterable[str] | None, language: str | None = None,
                 source_encoding: str = DEFAULT_SOURCE_ENCODING) -> LoadedDataset:
    saved = _saved_dataset(path)
    if saved is not None:
        return saved
    entries: list[Path] = []
    # hidden files and folders (.git/, .env, __pycache__/) are not read, and listed: never silently left out
    hidden: list[SkippedFile] = []
    for p in sorted(path.rglob("*")):
        relative = p.relative_to(path)
        if not _is_hidden(relative):
            entries.append(p)
        elif not _is_hidden(relative.parent):  # one entry for a hidden folder, none for its files
            hidden.append(_hidden_entry(p, relative))
    files = [p for p in entries if p.is_file()]
    # rglob does not follow a link to a folder (nor can it read a broken link): listed, never silently left out
    links = [SkippedFile(p.relative_to(path).as_posix(),
                         "symbolic link to a folder (not followed)" if p.is_dir() else BROKEN_LINK_REASON)
             for p in entries if p.is_symlink() and not p.is_file()]
    if not files:
        hidden, special = _hidden_in_special_folders(hidden)
        raise DataError(nothing_read_message(str(path), links + hidden + special))
    builders = {p: _builder_for(p) for p in files}
    data_files = [p for p in files if builders[p] is not None]
    others = [p for p in files if builders[p] is None]
    if data_files and others and not extensions:
        # a dataset snapshot carries a README.md (or a LICENSE) beside its data files: those are
        # read as data; source files among data files leave it open which the user means
        from workbench.languages.registry import language_for_path

        sources = [p for p in others if language_for_path(p.relative_to(path).as_posix(), prefer=language) is not None]
        if sources:
            raise DataError(
                f"{path}: the folder holds both data files ({_some(data_files, path)}) and source files "
                f"({_some(sources, path)}), so it is neither a dataset nor a source folder: pass the data files "
                f"(a file, or a folder of them) or a folder of source files alone"
            )
    if data_files and (not others or not extensions):
        from workbench.data.data_file_splits import NOT_DATA_REASON, SPECIAL_FOLDER_REASON, special_folder

        # datasets reads no file in a folder named __* (__extra/): one entry for the folder, in no split, also for
        # one that holds only links (whose entries it stands for below)
        special_of = {p: special_folder(p.relative_to(path).as_posix()) for p in files}
        hidden, special_hidden = _hidden_in_special_folders(hidden)
        special = [SkippedFile(name, SPECIAL_FOLDER_REASON, no_split=True)
                   for name in dict.fromkeys([*special_of.values(), *(special_folder(e.path) for e in links),
                                              *(entry.path for entry in special_hidden)]) if name]
        if special and all(special_of[p] for p in data_files):
            raise DataError(f"{path}: every data file is in a folder whose name starts with '__' "
                            f"({', '.join(entry.path for entry in special[:3])}), and datasets reads no file in one; "
                            f"rename the folder without the leading '__', or pass the folder itself")
        data_files = [p for p in data_files if special_of[p] is None]
        others = [p for p in others if special_of[p] is None]
        splits, not_read = _load_data_folder(path, data_files, builders)

        skipped = [SkippedFile(p.relative_to(path).as_posix(), NOT_DATA_REASON, no_split=True) for p in others]
        # datasets reads none of them: no hidden file, no link to a folder (nor a broken link)
        links = [replace(entry, no_split=True) for entry in links if special_folder(entry.path) is None]
        hidden = sorted([replace(entry, no_split=True) for entry in hidden] + special, key=lambda entry: entry.path)
        return LoadedDataset(str(path), splits, skipped=not_read + skipped + links + hidden)
    loaded = _load_source_folder(path, files, extensions, language, source_encoding)
    loaded.skipped[:0] = links
    loaded.skipped.extend(hidden)
    return loaded


#: the file ``datasets``' ``save_to_disk`` writes at the top of a saved ``DatasetDict`` / ``Dataset``
_SAVED_MARKERS = ("dataset_dict.json", "state.json")


def _saved_dataset(path: Path) -> LoadedDataset | None:
    """A folder ``datasets``' ``save_to_disk`` wrote (``workbench dedup --output-format hf``'s
    ``dataset/``), read with ``load_from_disk``: its ``.arrow`` files are the data, and its
    ``state.json`` no row (the folder rule would read that as the data). A ``Dataset`` is one
    split, ``train``. ``None`` for another folder (one without ``.arrow`` files is read file by
    file, as before: a data file may be called ``state.json``).

    Raises:
        DataError: the folder has the marker and ``.arrow`` files but cannot be read as a saved dataset.
    """
    if not any((path / marker).is_file() for marker in _SAVED_MARKERS):
        return None
    if next(path.rglob("*.arrow"), None) is None:  # save_to_disk's rows are .arrow files, in the split folders
        return None
    try:
        saved = datasets.load_from_disk(str(path))
    except Exception as error:  # noqa: BLE001 - datasets raises many types for a damaged folder
        raise DataError(f"{path}: a folder datasets' save_to_disk wrote ({' or '.join(_SAVED_MARKERS)}) that cannot "
                        f"be read back: {_reason(error)}") from error
    splits = dict(saved) if isinstance(saved, datasets.DatasetDict) else {"train": saved}
    return LoadedDataset(str(path), splits)


def _load_data_folder(path: Path, files: list[Path], builders: Mapping[Path, str | None]
                      ) -> tuple[dict[str, datasets.Dataset], list[SkippedFile]]:
    """Read a folder's data files into their splits, each split's files in path order
    (:func:`~workbench.data.data_file_splits.folder_splits`, the rule the Spark engine reads a
    folder by), with the files not read: those that name no split while others do (also said at
    warning level: :func:`~workbench.data.data_file_splits.say_unread`) and ``datasets``' metadata
    files.

    Raises:
        DataError: data files of two formats (:func:`~workbench.data.data_file_splits.mixed_formats_message`,
            the Spark engine's words); a file named for two splits; a file that is not UTF-8 or cannot be read (see :func:`_build`).
    """
    from workbench.data.data_file_splits import (
        METADATA_REASON,
        UNMATCHED_REASON,
        folder_splits,
        mixed_formats_message,
        say_unread,
    )

    relative = {p.relative_to(path).as_posix(): p for p in files}
    mixed = mixed_formats_message(str(path), {name: builders[file] for name, file in relative.items()})
    if mixed is not None:
        raise DataError(mixed)
    found = folder_splits(relative, where=str(path))
    read = [name for names in found.splits.values() for name in names]
    builder = _folder_builder([builders[relative[name]] for name in read])
    say_unread(str(path), found.unmatched)
    data_files = {split: [relative[name] for name in names] for split, names in found.splits.items()}
    chosen = [file for names in data_files.values() for file in names]
    for file in chosen:
        if builder in TEXT_BUILDERS:
            require_utf8(file)
    splits = _build(builder, {split: [glob.escape(str(f)) for f in names] for split, names in data_files.items()},
                    label=str(path), failure=f"cannot read the data files in {path}", files=chosen, folder=path)
    not_read = ([SkippedFile(name, UNMATCHED_REASON, no_split=True) for name in found.unmatched]
                + [SkippedFile(name, METADATA_REASON, no_split=True) for name in found.metadata])
    return splits, not_read


def _column_features(where: str, builder: str, files: Sequence[Path], folder: Path | None,
                     survey: Any = None) -> tuple[datasets.Features | None, list[Any] | None, frozenset[Path]]:
    """The types to read ``files`` with, each column typed over every part of every file (the
    chunks ``datasets`` reads: :mod:`workbench.data.file_types`), so that neither a later part's
    values are cast to an earlier part's type silently nor the read fails with a raw cast error.
    The rule and its words are the Spark engine's too (:mod:`workbench.data.column_types`).

    * a column of two kinds of value (text in ``train.parquet``, integers in ``test.parquet``;
      numbers in a file's first 10 MB, text later) is refused;
    * a column of one kind but several types (integers in one part, floats in another; nulls only
      in one, text in another) is read as the wider type
      (:func:`~workbench.data.column_types.widened_types`, as the Spark engine reads it);
    * JSON Lines and Parquet files (or parts) of other columns are read with every column, a
      missing one as nulls (``datasets``' own reading of a later file that lacks a column of the
      first, and Spark's JSON reader's); CSV files of other headers are refused (``datasets``
      reads a CSV folder with one header).

    Args:
        where: the file or folder as the user named it; builder: ``json``, ``parquet`` or
            ``csv``; files: the files in the order they are read; folder: the folder the files'
            names in messages are relative to (``None``: one file, named by its name);
            survey: for CSV, :func:`workbench.data.file_types.survey_csv` of ``files``.

    Returns:
        ``(features, part schemas, fieldless files)``: the features (``None``: ``datasets``' own
        reading is right); for JSON Lines, the Arrow schema of every part in order (``None`` when a
        part cannot be typed here: ``datasets`` reads its own way); and the JSON Lines files none of
        whose parts has a column (only ``{}`` or blank lines: no rows, as Spark reads them; read
        with other files' features, ``datasets`` would make each ``{}`` a row of nulls), else empty.

    Raises:
        DataError: naming the column, both files (or parts) and both kinds; or a JSON Lines
            file whose rows hold two kinds in a column past its first chunk, or in a folder of
            several files, naming the file's first line of each kind
            (:func:`~workbench.data.column_types.mixed_message`); or, for CSV, the files and the
            columns one has and the other lacks.
    """
    from workbench.data.column_types import (clash_message, field_clash_message, first_clash, first_field_clash,
                                             first_item_clash, mixed_message, widened_types)
    from workbench.data.file_types import MixedPart, json_part_schemas

    def name(file: Path) -> str:
        return file.relative_to(folder).as_posix() if folder is not None else file.name

    if builder == "csv":
        return _csv_features(where, files, name, survey), None, frozenset()
    if builder == "parquet" and len(files) < 2:
        return None, None, frozenset()  # one file has one schema
    parts: list[tuple[str, Any]] = []
    fieldless: set[Path] = set()
    for file in files:
        try:
            found = json_part_schemas(file, name(file)) if builder == "json" else None
        except MixedPart as mixed:
            if mixed.first and len(files) == 1:  # datasets reads the rows' own values (JSON objects): the job's
                parts.append((name(file), _file_schema(builder, file)))  # checks, and dedup's, say what they take
                continue
            found = _first_mixed_line(file, mixed.column)
            if found is not None:  # the file's first line of each kind, as the Spark engine names them
                raise MixedColumnError(mixed_message(where, mixed.column, name(file), found), mixed.column,
                                       file) from None
            raise DataError(f"{where}: column {mixed.column!r} holds two kinds of value in {mixed.part} (pyarrow: "
                            f"changed from {mixed.change}), which datasets reads only when they show in a file's "
                            f"first 10 MB (and then as JSON text); write {mixed.column.split('/')[0]!r} as one type "
                            f"in every row (e.g. all text)") from None
        parts += found or [(name(file), _file_schema(builder, file))]
        if builder == "json" and found and not any(schema.names for _, schema in found):
            fieldless.add(file)
    typed = [(part, _type_names(builder, schema)) for part, schema in parts if schema is not None]
    # lists of numbers beside lists of text, an object's field of two kinds: both engines refuse them in these words
    clash = first_clash(typed) or first_item_clash(typed)
    field = first_field_clash(typed) if clash is None else None
    if field is not None:
        path, first, _, later, _ = field
        base = first.split(" (from ", 1)[0]
        file = next((file for file in files if name(file) == base), None)
        if builder == "json" and later.startswith(f"{base} (from ") and file is not None:
            found = _first_mixed_line(file, path)  # two kinds in one file's rows: as the Spark engine says it
            if found is not None:
                raise MixedColumnError(mixed_message(where, path, base, found), path, file)
        raise DataError(field_clash_message(where, field))
    if clash is not None:
        column, first, kind, later, _ = clash
        base = first.split(" (from ", 1)[0]
        file = next((file for file in files if name(file) == base), None)
        if builder == "json" and later.startswith(f"{base} (from ") and file is not None:
            path = f"{column}/[]" if kind.startswith("lists of ") else column
            found = _first_mixed_line(file, path)  # two kinds in one file's rows: as the Spark engine says it
            if found is not None:
                raise MixedColumnError(mixed_message(where, path, base, found), path, file)
        raise DataError(clash_message(where, clash))
    known = [schema for _, schema in parts if schema is not None]
    if len(known) < len(parts):
        return None, None, frozenset(fieldless)  # a part pyarrow cannot type: datasets' reading, and its error
    widened = widened_types(typed)
    columns = list(dict.fromkeys(column for schema in known for column in schema.names))
    by_name = {name(file): file for file in files}
    nested = _nested_types(where, [(part, schema) for part, schema in parts if schema is not None],
                           lambda part: by_name.get(part.split(" (from ", 1)[0]) if builder == "json" else None)
    if not widened and not nested and all(schema.names == columns for schema in known):
        return None, known, frozenset(fieldless)
    import pyarrow as pa

    # "string": a JSON date column widened with nulls, which no part's schema types as text
    plain = {"double": pa.float64(), "int64": pa.int64(), "string": pa.string()}

    def target(column: str) -> pa.DataType:
        held = [schema.field(column).type for schema in known if column in schema.names]
        if column in widened:
            return plain.get(widened[column]) or next(kind for kind in held if str(kind) == widened[column])
        if column in nested:
            return nested[column]
        return next((kind for kind in held if not pa.types.is_null(kind)), held[0])

    first = known[0]
    fields = [pa.field(column, target(column)) for column in columns]
    return datasets.Features.from_arrow_schema(pa.schema(fields, metadata=first.metadata)), known, frozenset(fieldless)


class MixedColumnError(DataError):
    """A JSON Lines file's column holds two kinds of value in its rows
    (:func:`workbench.data.column_types.mixed_message`), refused while loading (past the file's first
    10 MB, or in a folder of several files). A job that holds the column to its own rule rewords it:
    ``workbench dedup`` names a code column's first line that is not text, as its Spark engine does.

    Attributes:
        column: the column, or pyarrow's path of a nested one (``"tags/[]"``); file: the file.
    """

    def __init__(self, message: str, column: str, file: Path) -> None:
        super().__init__(message)
        self.column, self.file = column, file


def _first_mixed_line(file: Path, column: str) -> tuple[str, int, str, int] | None:
    """:func:`workbench.data.json_lines.first_mixed_line` of a JSON Lines file (``.gz`` too); ``None``
    when it cannot be read (the read itself says why)."""
    from workbench.data.json_lines import first_mixed_line

    opener = gzip.open if file.suffix.lower() == ".gz" else open
    try:
        with opener(file, "rt", encoding="utf-8-sig") as handle:
            return first_mixed_line(handle, column)
    except (OSError, UnicodeDecodeError, EOFError):
        return None


def refuse_mixed_json_columns(loaded: LoadedDataset, columns: Iterable[str]) -> None:
    """Refuse a JSON Lines column whose rows hold two kinds of value (numbers in some, text in
    others) in a file's first 10 MB, which ``datasets`` reads as JSON objects (``1`` and ``"x"``
    kept as such) but Spark's JSON reader as text (``"1"``): ``workbench dedup`` calls it on both
    engines, so that they read the same files alike (past the first 10 MB the loader refuses such a
    column itself, :func:`_column_features`). Other jobs check their own columns' kinds.

    Args:
        loaded: what :func:`load_records` loaded from a local file or folder (a hub id or a bundled
            set is not checked); columns: the columns to leave to the caller's own check (the code
            columns, whose message says each row's code must be text).

    Raises:
        DataError: :func:`workbench.data.column_types.mixed_message`, for the first such column
            (in name order, as the Spark engine takes them) in the first file (in path order) that holds it.
    """
    from workbench.data.column_types import mixed_message

    left = set(columns)
    mixed = sorted({column for dataset in loaded.splits.values() for column, feature in dataset.features.items()
                    if "Json(" in repr(feature) and column not in left})  # Json, or a List of Json items
    root = Path(loaded.source).expanduser()
    if not mixed or not root.exists():
        return
    files = ([root] if root.is_file() else
             [p for p in sorted(root.rglob("*")) if p.is_file() and _builder_for(p) == "json"
              and not _is_hidden(p.relative_to(root))])
    for column in mixed:
        for file in files:
            for path in (column, f"{column}/[]"):
                found = _first_mixed_line(file, path)
                if found is not None:
                    name = file.name if root.is_file() else file.relative_to(root).as_posix()
                    raise DataError(mixed_message(loaded.source, path, name, found))


def _nested_types(where: str, parts: Sequence[tuple[str, Any]], json_file: Any = lambda part: None) -> dict[str, Any]:
    """The list, object and map columns whose inner types differ between parts (``datasets``' 10 MB
    chunks, or files), unified to one type: a list of nulls in one part and of text in another is a
    list of text, integers and floats inside are floats, an object's fields are those of every
    part (pyarrow's ``unify_schemas``, ``promote_options="permissive"``; Spark's JSON reader reads
    such a column so too). ``datasets`` would cast every part to the first's type (``Couldn't
    cast array of type string to null``).

    Args:
        where: the file or folder as the user named it; parts: ``(part name, Arrow schema)`` in
            the order read (:func:`workbench.data.file_types.json_part_schemas`); json_file: part
            name -> its JSON Lines file (``None`` for another format), to name lines in the message.

    Returns:
        column -> its unified Arrow type, for the nested columns of several types only.

    Raises:
        DataError: inner types of two kinds (a list of numbers in one part, of text in a later
            one), naming the column, both parts and both types, in one line.
    """
    import pyarrow as pa

    from workbench.data.column_types import mixed_message

    unified: dict[str, Any] = {}
    for column in dict.fromkeys(name for _, schema in parts for name in schema.names):
        held = [(part, schema.field(column).type) for part, schema in parts if column in schema.names]
        if not any(pa.types.is_nested(kind) for _, kind in held) or len({str(kind) for _, kind in held}) == 1:
            continue
        first, kind = held[0]
        for part, other in held[1:]:
            try:
                schemas = [pa.schema([pa.field(column, kind)]), pa.schema([pa.field(column, other)])]
                before, kind = kind, pa.unify_schemas(schemas, promote_options="permissive").field(column).type
            except (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
                file = json_file(part)
                if file is not None and file == json_file(first):  # two parts of one file: as the Spark engine says it
                    found = _first_mixed_line(file, f"{column}/[]") if pa.types.is_list(other) else None
                    if found is not None:
                        base = first.split(" (from ", 1)[0]
                        raise MixedColumnError(mixed_message(where, f"{column}/[]", base, found), f"{column}/[]",
                                               file) from None
                raise DataError(f"{where}: column {column!r} holds {kind} in {first} but {other} in {part} (pyarrow's "
                                f"types; their inner values are of two kinds): a column must hold one type of value "
                                f"throughout (else the read fails, or one part's values would be silently turned into "
                                f"the other's type); write {column!r} as one type in every row") from None
            if kind != before:
                first = part  # the part that made the type what it is (a list of text after a list of nulls)
        unified[column] = kind
    return unified


def _csv_features(where: str, files: Sequence[Path], name: Any, survey: Any) -> datasets.Features | None:
    """:func:`_column_features` for CSV files, which carry no types: each chunk of each file is
    typed as the reader types it (pandas, with only empty cells missing and zero-padded numbers as
    text), a column of empty cells only being nulls; pandas types them only when the survey
    (one pass of Python's ``csv`` module) finds a column whose class changes. Returns then every
    column's type, widened where the parts' types differ (else ``None``: datasets' reading);
    raises :class:`DataError` for a column of two kinds, or for files of other headers."""
    from workbench.data.column_types import clash_message, first_clash, widened_types
    from workbench.data.file_types import csv_needs_typing, csv_part_types

    headers = [(file, survey.headers[file]) for file in files if file in survey.headers]
    if headers:
        first, columns = headers[0]
        for file, header in headers[1:]:
            missing = [column for column in columns if column not in header]
            extra = [column for column in header if column not in columns]
            if missing or extra:
                said = " and ".join(part for part in (
                    f"lacks {', '.join(map(repr, missing))}, which {name(first)} has" if missing else "",
                    f"has {', '.join(map(repr, extra))}, which {name(first)} has not" if extra else "") if part)
                raise DataError(f"{where}: the CSV files have other columns: {name(file)} {said}: a folder's CSV files are read with one header; give every file "
                                f"the same header (an empty cell for a missing value), or convert them to JSON Lines "
                                f"(a key missing from a file is read as null)")
    if len(headers) < len(files) or not csv_needs_typing(survey):
        return None  # each column one class throughout (or a file unreadable: the read says why)
    typed: list[tuple[str, dict[str, str]]] = []
    for file in files:
        parts = csv_part_types(file, name(file), survey.padded, _text_or_none)
        if parts is None:
            return None  # a file pandas cannot read: the read itself says why
        typed += parts
    clash = first_clash(typed)
    if clash is not None:
        raise DataError(clash_message(where, clash))
    widened = widened_types(typed)
    # every column's type is given, widened or not: datasets' own reading takes the first chunk's, where
    # pandas reads an integer column with an empty cell (or none but empty ones) as floats: ids 1.0
    values = {"double": "float64", "int64": "int64", "string": "string", "bool": "bool", "null": "float64"}

    def value(column: str) -> datasets.Value:
        held = [types[column] for _, types in typed if types[column] != "null"]
        kind = widened.get(column) or (held[0] if held else "null")
        return datasets.Value(values.get(kind, "string"))

    return datasets.Features({column: value(column) for column in typed[0][1]})


def _file_schema(builder: str, file: Path) -> Any:
    """The Arrow schema of one Parquet file (its footer) or JSON Lines file (its first block, as
    pyarrow infers it); ``None`` when pyarrow cannot tell (a JSON document, a broken file: the
    read itself reports those)."""
    import pyarrow as pa

    try:
        if builder == "parquet":
            import pyarrow.parquet as pq

            return pq.read_schema(file)
        import pyarrow.json as pj

        with pa.input_stream(str(file), compression="detect") as stream:
            return pj.open_json(stream).schema
    except (pa.ArrowException, OSError, ValueError):
        return None


def _type_names(builder: str, schema: Any) -> dict[str, str]:
    """Column -> Arrow type name of a schema (what :mod:`workbench.data.column_types` reads)."""
    import pyarrow as pa

    from workbench.data.json_dates import is_date_type

    # pandas' categories are text; an ISO date in JSON is read as the text it is (json_dates), as Spark reads it
    types = {column.name: str(column.type.value_type if pa.types.is_dictionary(column.type) else column.type)
             for column in schema}
    return {name: "string" if builder == "json" and is_date_type(kind) else kind for name, kind in types.items()}


#: the order ``datasets`` prefers a folder's format in when as many files are of each
_BUILDER_PREFERENCE = ("parquet", "json", "csv")


def _folder_builder(builders: list[str | None]) -> str:
    """The builder of a folder's data files: the most common, ``parquet`` then ``json`` then
    ``csv`` on a draw (``datasets``' choice)."""
    counts = {b: builders.count(b) for b in _BUILDER_PREFERENCE}
    return max(_BUILDER_PREFERENCE, key=lambda b: (counts[b], -_BUILDER_PREFERENCE.index(b)))


def _some(files: list[Path], root: Path, shown: int = 3) -> str:
    """``"a.jsonl, b.jsonl and 4 more"``: a few of ``files``, relative to ``root``."""
    names = ", ".join(p.relative_to(root).as_posix() for p in files[:shown])
    return names + (f" and {len(files) - shown} more" if len(files) > shown else "")


def _hidden_entry(path: Path, relative: Path, *, no_split: bool = False) -> SkippedFile:
    """The :class:`SkippedFile` of a hidden file or folder (one entry for a folder and its files;
    a folder's path ends with ``/``).

    Args:
        path: the file or folder (asked only whether it is a folder); relative: its path below the source.
        no_split: it is in a folder of data files, where ``datasets`` reads no hidden file into any split
            (its ``_is_unrequested_hidden_file_or_is_inside_unrequested_hidden_dir``): its split is ``""``, as
            a ``README.md``'s is; else (a source folder) the split of its first folder.
    """
    if not path.is_dir():
        return SkippedFile(relative.as_posix(), "hidden file (name starts with '.')", no_split=no_split)
    reason = ("hidden folder (__pycache__, compiled files): its files are not read" if path.name == "__pycache__"
              else "hidden folder (name starts with '.'): its files are not read")
    return SkippedFile(relative.as_posix() + "/", reason, no_split=no_split)


def _hidden_in_special_folders(hidden: list[SkippedFile]) -> tuple[list[SkippedFile], list[SkippedFile]]:
    """The entries of hidden files and folders of a folder (:func:`_hidden_entry`) apart from those inside a
    folder named ``__*`` (``__extra/.x.jsonl``), which are that folder's, as on Spark: one entry for the folder
    (:data:`~workbench.data.data_file_splits.SPECIAL_FOLDER_REASON`, in no split), also when it holds nothing
    else; ``__pycache__/`` itself stays a hidden folder.

    Returns:
        (the other hidden entries, in their order; the ``__*`` folders' entries, each once, in order met).
    """
    from workbench.data.data_file_splits import SPECIAL_FOLDER_REASON, special_folder

    inside = {entry.path: special_folder(entry.path) for entry in hidden}
    inside = {name: folder for name, folder in inside.items() if folder is not None and folder != name}
    return ([entry for entry in hidden if entry.path not in inside],
            [SkippedFile(name, SPECIAL_FOLDER_REASON, no_split=True) for name in dict.fromkeys(inside.values())])


def nothing_read_message(source: str, left_out: Sequence[SkippedFile]) -> str:
    """The refusal of a folder of which no file is read, in the words of both dedup engines (the local loader's
    :func:`load_dataset` and Spark's :func:`workbench.dedup.spark_source.list_files`): ``the folder has no
    files``, or the files and folders it holds that are left out, as ``skipped_files`` would list them.

    Args:
        source: the folder as the user named it (a path, or a URI on Spark).
        left_out: the entries of what is there and is not read (hidden files and folders, folders named
            ``__*``, links to folders), in any order; empty: the folder holds no file.

    Returns:
        one line: ``/data: no file there is read: .x.jsonl (hidden file (name starts with '.')); give the
        data files names that are read, or pass the folder that holds them`` (at most 3 entries named, by path);
        for nothing but broken symbolic links, :func:`only_broken_links_message` (named in ``left_out``'s order).
    """
    if not left_out:
        return f"{source}: the folder has no files"
    if all(entry.reason == BROKEN_LINK_REASON for entry in left_out):
        return only_broken_links_message(source, [entry.path for entry in left_out])
    entries = sorted(left_out, key=lambda entry: entry.path)
    shown = ", ".join(f"{entry.path} ({entry.reason})" for entry in entries[:3])
    more = f", and {len(entries) - 3} more" if len(entries) > 3 else ""
    return (f"{source}: no file there is read: {shown}{more}; give the data files names that are read, or pass the "
            f"folder that holds them")


def _is_hidden(relative: Path) -> bool:
    return any(part.startswith(".") or part == "__pycache__" for part in relative.parts)


def _load_source_folder(root: Path, files: list[Path], extensions: Iterable[str] | None,
                        language: str | None = None, source_encoding: str = DEFAULT_SOURCE_ENCODING) -> LoadedDataset:
    from workbench.languages.registry import language_for_path

    check_source_encoding(source_encoding)
    encodings: dict[str, str] = {}
    wanted = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in extensions} if extensions else None
    rows: dict[str, dict[str, list]] = {}
    skipped: list[SkippedFile] = []
    for file in files:
        relative = file.relative_to(root).as_posix()
        suffix = file.suffix.lower()
        plugin = language_for_path(relative, prefer=language)
        if wanted is not None and suffix not in wanted:
            skipped.append(SkippedFile(relative, f"extension {suffix or '(none)'} not selected"))
            continue
        if wanted is None and plugin is None:
            skipped.append(SkippedFile(relative, f"no language plugin for {suffix or 'files without extension'}"))
            continue
        content, encoding, reason = _read_source_file(file, plugin, source_encoding)
        if reason is not None:
            skipped.append(SkippedFile(relative, reason, undecodable=not reason.startswith("unreadable")))
            continue
        if encoding is not None:
            encodings[relative] = encoding
        split = folder_split(relative)
        columns = rows.setdefault(split, {"id": [], "path": [], "language": [], "content": []})
        columns["id"].append(relative)
        columns["path"].append(str(file))
        columns["language"].append(plugin.name if plugin else "")
        columns["content"].append(content)
    if not rows:
        reasons = "; ".join(f"{s.path}: {s.reason}" for s in skipped[:5])
        raise DataError(f"{root}: no loadable source files ({reasons})")
    _warn_files_outside_split_folders(root, [id_ for columns in rows.values() for id_ in columns["id"]])
    _say_encodings(root, encodings)
    splits = {name: datasets.Dataset.from_dict(columns) for name, columns in rows.items()}
    return LoadedDataset(str(root), splits, skipped, encodings)


def _say_encodings(root: Path, encodings: Mapping[str, str]) -> None:
    """Say (at warning level) which source files were read in another encoding than UTF-8, a few by
    name: a fallback encoding is an assumption the user should see (``report.json`` lists them all).
    The advice to give the right one with ``--source-encoding`` follows only where a file was read
    in the fallback encoding (not for a byte-order mark or a coding cookie, which it does not change)."""
    from workbench.data.text_encoding import read_in_fallback

    if not encodings:
        return
    shown = ", ".join(f"{path} as {how}" for path, how in list(encodings.items())[:3])
    more = f" and {len(encodings) - 3} more" if len(encodings) > 3 else ""
    advice = ("; where the fallback encoding is wrong, give the files' own with --source-encoding"
              if any(read_in_fallback(how) for how in encodings.values()) else "")
    logger.warning("%s: read %s in another encoding than UTF-8: %s%s%s", root,
                   count(len(encodings), "source file"), shown, more, advice)


def _warn_files_outside_split_folders(root: Path, relatives: list[str]) -> None:
    """Say (at warning level) when a folder with split folders (``train/``, ``test/`` ...) also
    holds source files outside them: by the folder rule (:func:`folder_split`) they are read as the
    ``train`` split, which is what a repository with a ``test/`` folder means, but a stray file at
    the root of a ``train/`` + ``test/`` corpus would silently join the training set."""
    in_split_folders: list[str] = []
    outside: list[str] = []
    for relative in relatives:
        (in_split_folders if _split_folder(relative) else outside).append(relative)
    if not in_split_folders or not outside:
        return
    folders = sorted({r.partition("/")[0] + "/" for r in in_split_folders})
    shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
    those, them, they = ("it is", "it", "it is") if len(outside) == 1 else ("those are", "them", "they are")
    logger.warning("%s has split folders (%s) and %s outside them (%s): %s read as the 'train' split. Move %s "
                   "into a split folder, or out of %s, if %s not training files", root, ", ".join(folders),
                   count(len(outside), "source file"), shown, those, them, root, they)


def _read_source_file(file: Path, plugin: LanguagePlugin | None,
                      source_encoding: str = DEFAULT_SOURCE_ENCODING) -> tuple[str | None, str | None, str | None]:
    """Return ``(text, encoding, None)`` or ``(None, None, reason)`` for one source file, decoded
    by :func:`workbench.data.text_encoding.decode_source_file` (UTF-8, a byte-order mark, the
    language's own declaration such as Python's coding cookie, else ``source_encoding``);
    ``encoding`` is ``None`` for UTF-8."""
    try:
        data = file.read_bytes()
    except OSError as error:
        return None, None, f"unreadable: {error.strerror or error}"
    decoded = decode_source_file(data, plugin, source_encoding)
    return decoded.text, decoded.encoding, decoded.reason


_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def _looks_like_path(text: str) -> bool:
    """True when ``text`` cannot be a hub id (``owner/name``), so it must be a missing path."""
    return _HUB_ID.match(text) is None or _builder_for(Path(text)) is not None


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """Return True when a TCP connection to the Hugging Face endpoint opens within ``timeout_s``."""
    from huggingface_hub import constants

    return endpoint_reachable(constants.ENDPOINT, timeout_s)


@contextlib.contextmanager
def _hub_offline(switch: bool) -> Iterator[None]:
    """The hub switched off for one load, then left as it was: a notebook's own hub calls after a
    load that found the hub unreachable (a network blip) are not switched off for good.
    ``datasets`` and ``huggingface_hub`` read the environment at import time, so both the
    variables and their constants are set (and restored)."""
    if not switch:
        yield
        return
    import huggingface_hub.constants

    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    saved_env = {name: os.environ.get(name) for name in names}
    saved = (huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE)
    os.environ.update(dict.fromkeys(names, "1"))
    huggingface_hub.constants.HF_HUB_OFFLINE = datasets.config.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        huggingface_hub.constants.HF_HUB_OFFLINE, datasets.config.HF_HUB_OFFLINE = saved


def _load_hub(repo_id: str, *, config: str | None, offline: bool) -> LoadedDataset:
    unreachable = offline or datasets.config.HF_HUB_OFFLINE or not hub_reachable()
    try:
        with _hub_offline(unreachable):
            loaded = datasets.load_dataset(repo_id, config)
    except Exception as error:
        if unreachable:
            why = "offline mode is on" if offline else "the Hugging Face hub is unreachable"
            raise HubUnreachableError(
                f"cannot load {repo_id!r}: {why} and it is not in the local cache. "
                f"Pass a local file instead (e.g. a .jsonl, .parquet or .csv file, or a folder), "
                f"or download it where the hub is reachable and pass the saved folder."
                + ("" if "/" in repo_id else f" Bundled datasets: {', '.join(BUNDLED)}.")
            ) from error
        raise DataError(f"cannot load {repo_id!r} from the Hugging Face hub: {error}") from error
    return LoadedDataset(repo_id, dict(loaded))


def select_rows(dataset: datasets.Dataset, indices: Sequence[int]) -> datasets.Dataset:
    """Return ``dataset.select(indices)`` with a fingerprint from one XXH3-128 digest of the
    parent fingerprint and the indices' bytes.

    ``select`` would otherwise fingerprint the call by pickling the index list with dill
    (16 ms for 17k indices against 2.6 ms in all here; dedup selects twice per split).
    The fingerprint stays a deterministic function of the parent and the indices, as
    ``datasets``' own is, so cache files named by it stay correct.

    Args:
        dataset: the dataset; indices: row numbers (0-based) to keep, in order.
    """
    digest = xxhash.xxh3_128_hexdigest(np.asarray(indices, dtype=np.int64).tobytes(), seed=0)
    fingerprint = xxhash.xxh3_128_hexdigest(f"{dataset._fingerprint}:select:{digest}".encode())
    return dataset.select(indices, new_fingerprint=fingerprint)


def refuse_missing_cells(values: Sequence[Any], column: str, option: str, where: str, need: str, *,
                         blank: bool = True) -> None:
    """Raise :class:`DataError` when some of ``values`` (one column's cells, in row order) is missing:
    null, a float NaN or blank text (as a missing task id is in ``execute``), which ``str()`` would
    turn into a split, id or group named ``"None"``, ``"nan"`` or ``""``.

    Args:
        values: the cells; column: the column's name; option: the option that named it
            (``--split-column``); where: the data's name for the message; need: why each row
            needs a value (``"each row goes to the split its value names"``); blank: whether blank
            text (empty or whitespace only, ``" "``, ``"\\t"``) is missing too.

    Raises:
        DataError: one line naming the column, how many rows and the first five (counting from 1).
    """
    from workbench.data.samples import id_text

    def absent(value: Any) -> bool:
        return id_text(value) is None if blank else value is None or (isinstance(value, float) and math.isnan(value))

    missing = [number for number, value in enumerate(values, start=1) if absent(value)]
    if missing:
        raise DataError(missing_cells_message(len(missing), missing[:5], column, option, where, need, blank=blank))


def missing_cells_message(rows: int, first: Sequence[int], column: str, option: str, where: str, need: str, *,
                          blank: bool = True) -> str:
    """The one line :func:`refuse_missing_cells` raises, for a caller that counted the rows itself
    (the Spark engine, whose rows are counted on the executors).

    Args:
        rows: how many rows have no value; first: the row numbers of the first of them (counting
            from 1; at most five are shown, with ``...`` when ``rows`` is more); column, option,
            where, need, blank: as :func:`refuse_missing_cells`.
    """
    what = "null, NaN or blank" if blank else "null or NaN"
    shown = ", ".join(map(str, first[:5])) + (" ..." if rows > 5 else "")
    one = rows == 1
    return (f"{where}: {count(rows, 'row')} {'has' if one else 'have'} no value in {option} {column!r} "
            f"({what}; {'row' if one else 'rows'} {shown}, counting from 1); {need}, so fill "
            f"{'it' if one else 'them'} in or drop {'that row' if one else 'those rows'}")


#: why each row needs a ``--split-column`` value (:func:`refuse_missing_cells`' ``need``), on both dedup engines
SPLIT_CELL_NEED = "each row goes to the split its value names"


def _regroup_by_column(loaded: LoadedDataset, split_column: str) -> LoadedDataset:
    merged = loaded.concatenated(split_column="__source_split__") if len(loaded.splits) > 1 else None
    dataset = merged if merged is not None else next(iter(loaded.splits.values()))
    from workbench.option_words import option_named

    require_columns(dataset, {option_named("split_column"): split_column}, where=loaded.source)
    # as one Arrow column: iterating ``dataset[column]`` formats row by row (seconds for 20k rows)
    cells = dataset.with_format("arrow")[split_column].to_pylist()
    # a null is no split: str() would make it a split named "None", indistinguishable from a real one; a blank
    # one ("", " ", "\t") a split no option can name and an output file no loader reads back (" .jsonl")
    refuse_missing_cells(cells, split_column, option_named("split_column"), loaded.source, SPLIT_CELL_NEED)
    values = [str(v) for v in cells]
    order: dict[str, list[int]] = {}
    for index, value in enumerate(values):
        order.setdefault(value, []).append(index)
    splits = {name: select_rows(dataset, indices) for name, indices in order.items()}
    if merged is not None:
        splits = {name: d.remove_columns("__source_split__") for name, d in splits.items()}
    return LoadedDataset(loaded.source, splits, loaded.skipped)
