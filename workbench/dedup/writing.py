"""Writing a run's outputs: deduplicated splits, ``clusters.json`` (with ``cluster_shapes.csv``
beside it), ``pairs.csv``, the removal list, the skipped rows and the report.

``clusters.json`` is a JSON list of clusters, each a list of ids: the output format of
dpu-utils' ``deduplicationcli`` and Microsoft's near-duplicate-code-detector, so their
users' scripts read it unchanged; the shape of each cluster (diameter, chained) is in
``cluster_shapes.csv``, one line per cluster in the same order.

What a run writes is recorded in ``manifest.json``, and a rerun into the folder replaces only what
such a record names; the outputs are written into a staging folder and swapped in once all are
written (:mod:`workbench.dedup.output_folder`). ``kept.csv`` names every kept row with
its split, so the split of a kept row is known whatever form the splits take (``files/``
included).
"""

from __future__ import annotations

import csv
import datetime
import decimal
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import datasets

from workbench.data.loading import LoadedDataset, SkippedFile, select_rows
from workbench.dedup.config import OUTPUT_FORMATS
from workbench.dedup.detection import DedupResult, DuplicatePair
from workbench.dedup.output_folder import (
    MANIFEST,
    LocalFolder,
    hold_output_folder,
    planned_outputs,
    split_output_names,
    staged_outputs,
    write_manifest,
)
from workbench.dedup.skipped_rows import SKIPPED_COLUMNS, skipped_rows
from workbench.errors import DataError
from workbench.io import atomic_open, atomic_write

#: the columns the folder loader gives each source file (see workbench.data.loading)
SOURCE_FOLDER_COLUMNS = ["id", "path", "language", "content"]


def _source_folder(loaded: LoadedDataset) -> Path | None:
    """The folder of source files ``loaded`` was read from (its ids are the files' relative paths),
    or ``None`` for a table: a data file, or a folder of data files (``train.jsonl``, ``test.jsonl``)."""
    source = Path(loaded.source)
    return source if source.is_dir() and loaded.column_names == SOURCE_FOLDER_COLUMNS else None


def input_form(loaded: LoadedDataset) -> str:
    """Return the output format matching the input: ``files`` for a folder of source files,
    ``parquet`` for parquet data, else ``jsonl``."""
    if _source_folder(loaded) is not None:
        return "files"
    source = Path(loaded.source)
    if source.is_dir():
        return "parquet" if next(source.rglob("*.parquet"), None) is not None else "jsonl"
    return "parquet" if ".parquet" in source.suffixes else "jsonl"


def _json_value(value: object) -> object:
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def resolved_output_format(output_format: str, loaded: LoadedDataset) -> str:
    """``output_format`` with ``auto`` resolved to the input's form (:func:`input_form`).

    Raises:
        DataError: an unknown format.
    """
    if output_format not in OUTPUT_FORMATS:
        raise DataError(f"output_format must be one of {', '.join(OUTPUT_FORMATS)}, not {output_format!r}")
    return input_form(loaded) if output_format == "auto" else output_format


def write_outputs(
    result: DedupResult,
    loaded: LoadedDataset,
    report: dict,
    output_dir: str | Path,
    *,
    output_format: str = "jsonl",
    on_progress: Callable[[int], None] | None = None,
) -> dict[str, str]:
    """Write every output of a run into ``output_dir`` (created if needed).

    Args:
        result: the run; loaded: the dataset it ran on (its splits are filtered).
        report: the report from :func:`~workbench.dedup.duplication_report.build_report`.
        output_dir: the folder.
        output_format: ``auto`` (the input's form, see :func:`input_form`), ``jsonl``
            (``<split>.jsonl``), ``parquet`` (``<split>.parquet``), ``hf``
            (``datasets.DatasetDict.save_to_disk`` into ``dataset/``) or ``files``: each kept
            row's code as a file, ``files/<id>`` for a source folder (its ids are the files'
            relative paths, so ``files/`` mirrors the folder), ``files/<split>/<id>`` for a table
            (its train and test rows apart).
        on_progress: called with 1 after each split is written.

    The folder is held for the call, as a ``workbench dedup`` run holds it for the whole run
    (:func:`~workbench.dedup.output_folder.hold_output_folder`: an OS lock on ``.dedup.lock``), so
    that a second writer into it (a run, or another call) refuses rather than removing this one's
    staging folder or swapping its outputs over these.

    Returns:
        output name -> path of what was written.

    Raises:
        DataError: unknown ``output_format``, ``output_dir`` is a file, another process (or thread)
            is writing dedup outputs into it (one line naming it), or it holds a file this
            run would write that no earlier dedup run recorded writing
            (:func:`~workbench.dedup.output_folder.check_no_foreign_outputs`); with ``files``, a
            kept id that cannot be a file there (before any is written).
        OSError: a write or a removal failed (:func:`~workbench.dedup.job.run_dedup` says so as a
            DataError).
    """
    output_format = resolved_output_format(output_format, loaded)
    out = _output_folder(output_dir)
    with hold_output_folder(out):
        return write_into_held_folder(result, loaded, report, out, output_format=output_format,
                                      on_progress=on_progress)


def write_into_held_folder(result: DedupResult, loaded: LoadedDataset, report: dict, output_dir: str | Path, *,
                           output_format: str, on_progress: Callable[[int], None] | None = None) -> dict[str, str]:
    """:func:`write_outputs` into a folder the caller already holds
    (:func:`~workbench.dedup.output_folder.hold_output_folder`, as
    :func:`~workbench.dedup.job.run_dedup` does for its whole run: a second hold from the same
    process would be refused). Arguments, result and errors as :func:`write_outputs`'s."""
    output_format = resolved_output_format(output_format, loaded)
    split_names = split_output_names(output_format, result.rows.split_ranges)
    out = _output_folder(output_dir)
    planned = planned_outputs(split_names, groups=result.rows.groups is not None, reference=result.reference is not None)
    kept = {split: select_rows(loaded.splits[split], result.kept_indices(split)) for split in result.rows.split_ranges}
    with staged_outputs(out, result.rows.source, planned) as staging:
        stage = out / staging
        written = write_small_outputs(result, report, stage, skipped_files=loaded.skipped, split_outputs=split_names)
        with _quiet_datasets():
            if output_format == "files":
                source_root = _source_folder(loaded)
                _write_files(result, stage / "files", written, on_progress, source_root)
                if source_root is not None:
                    _copy_undecodable_files(loaded.skipped, source_root, stage / "files")
            else:
                _write_splits(kept, stage, output_format, written, on_progress)
    return swapped_paths(written, LocalFolder(out))


def _output_folder(output_dir: str | Path) -> Path:
    """``output_dir`` as a folder, created if needed.

    Raises:
        DataError: it is a file.
    """
    out = Path(output_dir)
    if out.exists() and not out.is_dir():
        raise DataError(f"{out}: the output path exists and is not a folder")
    out.mkdir(parents=True, exist_ok=True)
    return out


def swapped_paths(written: dict[str, str], folder) -> dict[str, str]:
    """``written`` (output name -> where it was staged) with each output where the swap put it: the
    name at the top of the staging folder, in ``folder`` (an :class:`~workbench.dedup.output_folder.Folder`)."""
    return {key: folder.path_of(Path(path).name) for key, path in written.items()}


def write_small_outputs(result: DedupResult, report: dict, folder: Path, *, skipped_files: list = (),
                        split_outputs: list[str] = ()) -> dict[str, str]:
    """Write the small outputs of a run into ``folder`` as it is (a staging folder:
    :func:`~workbench.dedup.output_folder.staged_outputs`; nothing there is checked):
    ``clusters.json``, ``cluster_shapes.csv``, ``pairs.csv`` (and ``cross_group_pairs.csv``,
    ``contamination.csv``), ``removed.csv``, ``kept.csv``, ``skipped.csv``, ``unreadable.csv``,
    ``report.json`` and ``manifest.json`` (recording them and ``split_outputs``: the names the
    caller writes the splits to next, :func:`~workbench.dedup.output_folder.split_output_names`);
    not the splits.

    Args:
        result, report: as :func:`write_outputs`; skipped_files: files the loader did not load.

    Returns:
        output name -> path of what was written (in ``folder``).

    Raises:
        OSError: a write failed.
    """
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    ids = result.rows.ids
    written: dict[str, str] = {}

    path = out / "clusters.json"
    atomic_write(path, json.dumps([[_json_value(ids[m]) for m in cluster] for cluster in result.clusters]))
    written["clusters"] = str(path)
    written["cluster_shapes"] = _write_shapes(out / "cluster_shapes.csv", result)

    written["pairs"] = _write_pairs(out / "pairs.csv", result.pairs, ids, ids)
    if result.rows.groups is not None:
        written["cross_group_pairs"] = _write_pairs(out / "cross_group_pairs.csv", result.cross_group_pairs, ids, ids)
    if result.reference is not None:
        path = out / "contamination.csv"
        with atomic_open(path, newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "split", "reference_id", "set_jaccard", "multiset_jaccard"])
            for p in result.contamination:
                writer.writerow([ids[p.a], result.rows.splits[p.a], result.reference.ids[p.b],
                                 f"{p.set_jaccard:.6f}", f"{p.multiset_jaccard:.6f}"])
        written["contamination"] = str(path)

    path = out / "removed.csv"
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(REMOVED_COLUMNS)
        for index in sorted(result.removed):
            removal = result.removed[index]
            other_ids = result.reference.ids if removal.reason == "contaminated" and result.reference else ids
            neighbour = result.neighbours[index]
            writer.writerow([ids[index], result.rows.splits[index], removal.reason, other_ids[removal.other],
                             other_ids[neighbour.row], neighbour.kind, f"{neighbour.set_jaccard:.6f}",
                             f"{neighbour.multiset_jaccard:.6f}", "" if neighbour.hops is None else neighbour.hops])
    written["removed"] = str(path)

    path = out / "kept.csv"
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(KEPT_COLUMNS)
        for index, (id_, split) in enumerate(zip(ids, result.rows.splits)):
            if index not in result.removed:
                writer.writerow([id_, split])
    written["kept"] = str(path)

    path = out / "skipped.csv"
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(SKIPPED_COLUMNS)
        for row in skipped_rows(result):
            writer.writerow([ids[row.index], result.rows.splits[row.index], row.reason, row.n_tokens, row.detail])
    written["skipped"] = str(path)

    if result.failures or skipped_files:
        # rows that could not be tokenized (kept in their split, never compared), and files of a source
        # folder that were not loaded: those of its languages that could not be decoded are kept in a
        # files/ output as they are (never compared), the rest (no plugin, hidden) are not part of it
        path = out / "unreadable.csv"
        kept_as_files = "files" in split_outputs
        with atomic_open(path, newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["id", "split", "reason"])
            for index, reason in result.failures.items():
                writer.writerow([ids[index], result.rows.splits[index], reason])
            for skipped in skipped_files:
                kept = "; never compared, kept in files/ as it is" if skipped.undecodable and kept_as_files else ""
                writer.writerow([skipped.path, skipped.split, f"not loaded: {skipped.reason}{kept}"])
        written["unreadable"] = str(path)

    path = out / "report.json"
    atomic_write(path, json.dumps(report, indent=2, default=str))
    written["report"] = str(path)
    # the record of what this run wrote: the files above (not every optional one) and the splits to come
    # the source as report.json records it (inside a `workbench run` folder: relative to it, run_dedup's run_dir)
    write_manifest(out, [Path(p).name for p in written.values()] + list(split_outputs),
                   report.get("source", result.rows.source))
    written["manifest"] = str(out / MANIFEST)
    return written


def _write_files(result: DedupResult, root: Path, written: dict[str, str], on_progress,
                 source_root: Path | None = None) -> None:
    """Write each kept row's code to ``root/<id>`` for a source folder ``source_root`` (its ids are
    the files' relative paths, whose first folder is the split), else to ``root/<split>/<id>``: a
    table's train and test rows must stay apart (``HumanEval/11:3`` may be a train or a test row).

    A kept file of the source folder is copied byte for byte: its text was decoded as its language
    reads it (a PEP 263 cookie, a byte-order mark), and writing that text back as UTF-8 would change
    what the file says. Rows without such a file are written as UTF-8 text.

    Raises:
        DataError: an id that cannot be a file there (:func:`_file_targets`), before any is written.
    """
    from workbench.dedup.tokens import decode_code

    kept = {split: [i for i in range(start, stop) if i not in result.removed]
            for split, (start, stop) in result.rows.split_ranges.items()}
    if source_root is not None:
        targets = _file_targets({i: str(result.rows.ids[i]) for rows in kept.values() for i in rows}, root.resolve())
    else:
        targets = {}
        for split, rows in kept.items():
            safe = split.replace("/", "_")
            targets.update(_file_targets({i: str(result.rows.ids[i]) for i in rows}, (root / safe).resolve(),
                                         f"files/{safe}/"))
    for split, rows in kept.items():
        for index in rows:
            target = targets[index]
            target.parent.mkdir(parents=True, exist_ok=True)
            original = source_root / str(result.rows.ids[index]) if source_root is not None else None
            if original is not None and original.is_file():
                shutil.copyfile(original, target)
                continue
            text, _ = decode_code(result.rows.codes[index], result.config.source_encoding)
            if text is not None:
                target.write_text(text, encoding="utf-8")
            elif isinstance(result.rows.codes[index], bytes):
                target.write_bytes(result.rows.codes[index])
        if on_progress:
            on_progress(1)
    written["files"] = str(root)


def _copy_undecodable_files(skipped: list[SkippedFile], source_root: Path, root: Path) -> None:
    """Copy the source files the loader could not decode (empty, binary, another encoding) into
    ``root`` at their paths, byte for byte: they were never compared, so nothing says they are
    duplicates, and a ``files/`` tree without them would lose part of the source, as a data file's
    unreadable rows stay in their split. Listed in ``unreadable.csv`` as such."""
    base = root.resolve()
    for file in skipped:
        if not file.undecodable:
            continue
        original, target = source_root / file.path, (base / file.path).resolve()
        if base in target.parents and original.is_file() and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(original, target)


def _file_targets(ids: dict[int, str], base: Path, where: str = "files/") -> dict[int, Path]:
    """Return row index -> the resolved file each kept id names under ``base``, refusing, before
    any file is written, ids that cannot each be a file there: one that leads outside it
    (``../x.py``, ``/etc/x``) or one that is the folder of another (``a`` and ``a/b``). ``where``
    names ``base`` in the messages (``files/`` or ``files/<split>/``).

    Raises:
        DataError: naming the first such id and the way out (``--output-format jsonl``).
    """
    resolved: dict[int, Path] = {}
    for index, id_ in ids.items():
        target = (base / id_).resolve()
        if base not in target.parents:
            raise DataError(f"id {id_!r} does not name a file inside the output's {where} folder (it leads to {target}); "
                            f"--output-format files writes each kept row to {where}<id>: use --output-format jsonl")
        resolved[index] = target
    targets = set(resolved.values())
    for target in targets:
        for parent in target.parents:
            if parent == base:
                break
            if parent in targets:
                raise DataError(f"ids {parent.relative_to(base).as_posix()!r} and {target.relative_to(base).as_posix()!r} "
                                f"cannot both be files (the first would be the second's folder); use --output-format jsonl")
    return resolved


@contextmanager
def _quiet_datasets() -> Iterator[None]:
    # datasets draws its own tqdm bars per file; ours (``on_progress``) already cover the step
    was_enabled = datasets.utils.logging.is_progress_bar_enabled()
    datasets.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            datasets.utils.logging.enable_progress_bar()


def _write_splits(kept: dict, out: Path, output_format: str, written: dict[str, str], on_progress) -> None:
    if output_format == "hf":
        path = out / "dataset"
        datasets.DatasetDict(kept).save_to_disk(str(path))
        written["dataset"] = str(path)
        if on_progress:
            on_progress(len(kept))
        return
    for split, dataset in kept.items():
        safe = split.replace("/", "_")
        if output_format == "jsonl":
            path = out / f"{safe}.jsonl"
            try:
                write_json_lines(dataset, path)
            except (UnicodeEncodeError, TypeError, ValueError) as error:
                raise DataError(
                    f"cannot write split {split!r} as JSON Lines ({error}): use --output-format parquet or hf "
                    f"(clusters.json, pairs.csv and the report are written)"
                ) from error
        else:
            path = out / f"{safe}.parquet"
            dataset.to_parquet(str(path))
        written[f"split:{split}"] = str(path)
        if on_progress:
            on_progress(1)


#: rows formatted and encoded at a time by :func:`write_json_lines`
JSON_LINES_BATCH = 1000


def write_json_lines(dataset: datasets.Dataset, path: str | Path) -> None:
    """Write ``dataset`` to ``path`` as JSON Lines (atomically), every value as ``datasets`` read it.

    Each row is ``json.dumps`` of the row ``datasets`` decodes (columns in order, compact
    separators, UTF-8 text unescaped), so a float is written as its shortest repr (the same
    double read back: ``0.12345678901234568``, never rounded to 10 digits as pandas' ``to_json``
    does), an integer as its digits, NaN and Infinity as the literals ``NaN``, ``Infinity``,
    ``-Infinity`` (what Python's ``json`` writes and reads, and ``datasets``, pandas and Spark read;
    not ``null``), a JSON-typed column (``datasets``' ``Json``) as its values. A date or time is
    written in ISO 8601 (``2020-01-02T03:04:05``: the text it was read from, where Arrow took a
    JSON string for a timestamp), a ``Decimal`` as its digits in a string (exact).

    Args:
        dataset: the rows; path: the file (replaced).

    Raises:
        TypeError: a value JSON has no form for (bytes, an image); the file is not written.
        UnicodeEncodeError: a string that is not Unicode text (a lone surrogate).
    """
    with atomic_open(path, "w", newline="\n") as handle:
        for batch in dataset.iter(batch_size=JSON_LINES_BATCH):
            columns = list(batch)
            lines = (json.dumps(dict(zip(columns, values)), ensure_ascii=False, separators=(",", ":"),
                                default=_json_scalar) for values in zip(*batch.values()))
            handle.write("\n".join(lines) + "\n")


def _json_scalar(value: object) -> object:
    """The JSON form of a value ``json`` does not write itself (its ``default``)."""
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(f"a {type(value).__name__} value has no JSON form")


#: the columns of ``removed.csv``: the row, why it is dropped, the kept row (or reference row) of
#: ``duplicate_of``, and the verified neighbour it is a copy of (cluster_shape.Neighbour)
REMOVED_COLUMNS = ("id", "split", "reason", "duplicate_of", "neighbour", "neighbour_kind", "set_jaccard",
                   "multiset_jaccard", "hops_to_kept")
#: the columns of ``kept.csv``: every row the run kept (in no cluster, or its cluster's kept row), in input order
KEPT_COLUMNS = ("id", "split")
#: the columns of ``cluster_shapes.csv``
SHAPE_COLUMNS = ("cluster", "size", "kind", "multisets", "kept", "diameter", "diameter_exact", "chained", "edges")


def _write_shapes(path: Path, result: DedupResult) -> str:
    """One line per cluster of ``clusters.json`` (same order; ``cluster`` is its 0-based index)."""
    ids = result.rows.ids
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(SHAPE_COLUMNS)
        for number, (cluster, keeper, shape) in enumerate(zip(result.clusters, result.keepers, result.shapes)):
            chained = shape.chained
            writer.writerow([number, shape.size, shape.kind, shape.multisets, "" if keeper is None else ids[keeper],
                             shape.diameter, str(shape.diameter_exact).lower(),
                             "" if chained is None else str(chained).lower(), "" if shape.edges is None else shape.edges])
    return str(path)


def _write_pairs(path: Path, pairs: list[DuplicatePair], ids_a: list, ids_b: list) -> str:
    with atomic_open(path, newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id_a", "id_b", "set_jaccard", "multiset_jaccard", "kind"])
        for p in pairs:
            writer.writerow([ids_a[p.a], ids_b[p.b], f"{p.set_jaccard:.6f}", f"{p.multiset_jaccard:.6f}", p.kind])
    return str(path)
