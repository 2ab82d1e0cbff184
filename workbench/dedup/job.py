"""One call for the whole job: load, find duplicates, report, write (what the CLI runs)."""

from __future__ import annotations

import functools
import os
from collections import Counter
from concurrent.futures import Future
from dataclasses import dataclass, field
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path
from urllib.parse import unquote, urlparse

from workbench.data.loading import LoadedDataset, MixedColumnError, load_records, refuse_mixed_json_columns
from workbench.data.samples import SAMPLE_COLUMN
from workbench.dedup.config import DedupConfig, DedupConfigError
from workbench.dedup.detection import DedupResult, ProgressFactory, collector_paused, find_duplicates
from workbench.dedup.duplication_report import build_report
from workbench.dedup.output_folder import (
    LocalFolder,
    check_no_foreign_outputs,
    check_writable,
    describe_write_error,
    OutputsInPlace,
    hold_output_folder,
    input_root,
    output_named,
    planned_outputs,
    split_output_names,
    staged_outputs,
    uri_within,
)
from workbench.dedup.rows import DedupRows, collect_rows
from workbench.dedup.signatures import MinHashSetup, minhash_setup_in_background
from workbench.dedup.tokens import cell_encodings, code_encoding
from workbench.dedup.spark_jobs import run_job
from workbench.dedup.spark_source import is_spark_uri
from workbench.dedup.writing import (
    resolved_output_format,
    swapped_paths,
    write_into_held_folder,
    write_small_outputs,
)
from workbench.errors import PATH_TYPES, TABLE_HINT, DataError, MissingSplitError, require_argument, require_path
from workbench.option_words import option_named, option_set, option_value, other_output_advice
from workbench.resume_guard import shown_path


@dataclass
class DedupRun:
    """A finished run.

    Attributes:
        loaded: the input dataset (no splits for an input Spark read: its rows stay on the
            executors); result: what was found; report: the report dict;
        written: output name -> path, or URI for an output folder given as a URI (empty without
            an output folder);
        notes: what the user may have meant but did not ask for (e.g. a ``split`` column used as
            data, not as splits), one sentence each.
    """

    loaded: LoadedDataset
    result: DedupResult
    report: dict
    written: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __repr__(self) -> str:
        # the fields hold every file's tokens and pairs (a megabyte of text in a notebook): the headline only
        overall = self.report.get("overall", {})
        figures = ", ".join(f"{key}={overall[key]!r}" for key in ("files", "clusters", "duplicate_rows",
                                                                  "duplication_factor", "removed") if key in overall)
        return f"DedupRun(source={self.loaded.source!r}, {figures}, written={sorted(self.written)!r})"


def _say_cell_encodings(source: object, cells: dict[str, str]) -> None:
    """Say (at warning level) how many code cells were read in another encoding than UTF-8, a few
    by row (report.json's source_encodings lists them all), as a source folder's files are said."""
    import logging

    from workbench.data.text_encoding import read_in_fallback
    from workbench.formatting import count

    if not cells:
        return
    shown = ", ".join(f"{row} as {how}" for row, how in list(cells.items())[:3])
    more = f" and {len(cells) - 3} more" if len(cells) > 3 else ""
    # the advice only where --source-encoding changes a read: a byte-order mark names its own
    advice = (f"; where the fallback encoding is wrong, give the column's encoding with {option_named('source_encoding')}"
              if any(read_in_fallback(how) for how in cells.values()) else "")
    logging.getLogger("workbench.data.loading").warning(
        "%s: read %s of bytes in another encoding than UTF-8: %s%s%s", source, count(len(cells), "code cell"),
        shown, more, advice)


def _refuse_code_cell(error: MixedColumnError, code_columns: list[str]) -> None:
    """When the loader refused a code column for its two kinds of value in a file's rows, name the
    file's first line whose code cell is not text, in the Spark engine's words
    (:func:`workbench.dedup.spark_tasks.json_line_problem`: the same check runs on its executors),
    so that both engines refuse such a file (in a folder, or past its first 10 MB) alike; return
    for another column (the loader's own message stands).

    Raises:
        DataError: ``--code-column 'content' holds a cell that is not text at line 2 of <file>: '5' (int); ...``.
    """
    import gzip

    from workbench.dedup.rows import column_options
    from workbench.dedup.spark_tasks import json_line_problem

    options = column_options(code_columns, [])
    if error.column.split("/")[0] not in options.values():
        return
    opener = gzip.open if error.file.suffix.lower() == ".gz" else open
    with opener(error.file, "rt", encoding="utf-8-sig") as handle:  # Hadoop's line reader drops the mark too
        for index, line in enumerate(handle):
            found = json_line_problem(str(error.file), options, (line.rstrip("\r\n"), index))
            if found is not None:
                raise DataError(found[1]) from None


def _split_columns(value: str | list[str]) -> list[str]:
    return [c.strip() for c in value.split(",") if c.strip()] if isinstance(value, str) else list(value)


def run_dedup(
    source: str | LoadedDataset,
    config: DedupConfig | None = None,
    *,
    output_dir: str | Path | None = None,
    progress: ProgressFactory | None = None,
    run_dir: str | Path | None = None,
) -> DedupRun:
    """Load ``source``, deduplicate it (and decontaminate it against ``config.against``) and
    write the outputs: what ``workbench dedup`` runs.

    Args:
        source: a data file, folder, bundled name or hub id (see
            :func:`workbench.data.load_records`), or an already loaded dataset; with
            ``engine="spark"`` also a URI Spark reads itself (``file://``, ``s3a://``, ``hdfs://``,
            ``gs://``, ``abfss://`` ...: a JSON Lines or Parquet file, folder or glob), whose rows
            stay on the executors and whose deduplicated splits Spark writes
            (:mod:`workbench.dedup.spark_source`, :mod:`workbench.dedup.spark_writing`).
        config: the options (:class:`DedupConfig`; default: all defaults).
        output_dir: the folder for ``clusters.json``, ``pairs.csv``, ``removed.csv``,
            ``report.json`` and the deduplicated splits (nothing is written when ``None``); a
            ``file://`` URI is the local folder it names; with ``engine="spark"`` and a ``source``
            URI also a URI Spark writes (``s3a://``, ``hdfs://``, ``gs://`` ...: Spark writes the
            splits there, the small outputs are copied there, :mod:`workbench.dedup.spark_output`).
        progress: a progress-bar factory (see :func:`find_duplicates`).
        run_dir: the ``workbench run`` folder the job runs for (``None``: a job run on its own): a
            ``source`` inside it is recorded in ``report.json`` and ``manifest.json`` relative to it,
            as ``<run folder>/gens.jsonl`` (:func:`~workbench.resume_guard.shown_path`), so that the
            folder moved or copied does not name its old location.

    Returns:
        a :class:`DedupRun`: the loaded data, the result, the report dict and what was written
        (paths, or URIs under an ``output_dir`` URI).

    Raises:
        TypeError: ``source`` is not a path, name or :class:`LoadedDataset` (a DataFrame),
            ``output_dir`` not a path, or ``config`` not a :class:`DedupConfig`.
        DataError / MissingColumnError / MissingSplitError / LanguageNotFoundError /
            DedupConfigError: bad input, before the long steps start (a ``train_split`` or
            ``test_split`` other than the default that names no split is a DedupConfigError;
            an ``output_dir`` URI other than ``file://`` without ``engine="spark"`` and a
            ``source`` URI, or one without a file system here, is a DataError; so is an
            ``output_dir`` that cannot be created or written, or that holds a file this run
            would write that no earlier run recorded writing,
            :mod:`workbench.dedup.output_folder`), or a local one another run is writing (it is
            held for the whole run: :func:`~workbench.dedup.output_folder.hold_output_folder`). An
            output that fails to be written after the search is a DataError too, naming the file.
        SparkUnavailableError: ``engine="spark"`` without pyspark, Java 17+ or a reachable
            master, before the data is read (:func:`workbench.dedup.spark.check_spark`).
        SparkJobError: a Spark job failed.

    Example::

        from workbench import DedupConfig, run_dedup

        run = run_dedup("humaneval-codex-python",
                        DedupConfig(code_column="completion_multipl_e", group_column="task_id", against="humaneval"))
        print(run.report["overall"]["duplication_factor"], run.report["overall"]["clusters"])
    """
    config = config or DedupConfig()
    call = "run_dedup(source, config, output_dir=...)"
    require_argument(config, DedupConfig, "config", call)
    require_argument(source, (*PATH_TYPES, LoadedDataset), "source", call, hint=TABLE_HINT)
    require_path(output_dir, "output_dir", call, optional=True)
    if is_spark_uri(output_dir) and (urlparse(str(output_dir)).scheme.lower() == "file"
                                     or not (config.engine == "spark" and is_spark_uri(source))):
        # a file:// folder is the local folder it names, on either engine: the same checks and swap as a path
        output_dir = _local_path_of_uri(str(output_dir), _output_refusal(config))
    if config.engine == "spark":
        from workbench.dedup.spark import check_spark

        check_spark(config.spark_master)  # no pyspark / Java / master: say so before loading anything
    made: Path | None = None
    if output_dir is not None and not is_spark_uri(output_dir):
        out = Path(output_dir)
        if out.exists() and not out.is_dir():
            raise DataError(f"{out}: the output path exists and is not a folder")
        if isinstance(source, (str, os.PathLike)) and not is_spark_uri(source):
            _refuse_output_over_input(Path(source), out)
        elif is_spark_uri(source) and urlparse(str(source)).scheme.lower() == "file":
            _refuse_output_over_input(Path(_local_path_of_uri(str(source), "")), out)
        # (a SOURCE URI of another scheme, such as a viewfs:// mount of a local folder: once Spark resolves it)
        made = next((folder for folder in (*reversed(out.absolute().parents), out.absolute()) if not folder.exists()),
                    None)  # the first folder mkdir makes, removed again if the run is refused over its input
        try:  # now, not after the search: a path under a file, or one not writable
            out.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise DataError(f"{output_named(out)} cannot be created: {error.strerror or error}") from error
        check_writable(out)  # an existing read-only folder too
    swapped: list[dict[str, str]] = []  # the outputs, once swapped in
    # one run at a time into a local folder (either engine): a second refuses now, not at the swap
    held = hold_output_folder(out) if output_dir is not None and not is_spark_uri(output_dir) else nullcontext()
    try:
        with _said_in_place(swapped), held:
            return _dedup(source, config, output_dir, progress, swapped, run_dir)
    except OutputOverInputError:  # found once Spark resolved the SOURCE: leave no empty -o in the input folder
        if made is not None:
            _remove_empty_folders(made)
        raise


def _remove_empty_folders(top: Path) -> None:
    """Remove ``top`` and the folders in it, if they hold no file."""
    for folder in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with suppress(OSError):
            folder.rmdir()
    with suppress(OSError):
        top.rmdir()


@contextmanager
def _said_in_place(swapped: list[dict[str, str]]):
    """A Ctrl-C once the outputs were swapped in (``swapped`` holds them: while the notes are made,
    Spark stops or the lock is released) becomes :class:`OutputsInPlace`, so that it is not said
    as one that replaced nothing."""
    try:
        yield
    except KeyboardInterrupt as interrupt:
        if swapped and not isinstance(interrupt, OutputsInPlace):
            raise OutputsInPlace(swapped[-1]) from None
        raise


def _dedup(source: str | LoadedDataset, config: DedupConfig, output_dir: str | Path | None,
           progress: ProgressFactory | None, swapped: list[dict[str, str]],
           run_dir: str | Path | None = None) -> DedupRun:
    """:func:`run_dedup` once its arguments and a local output folder were checked (and the folder
    held); the outputs, once swapped in, are appended to ``swapped``."""
    if is_spark_uri(source):
        if config.engine == "spark":
            return _run_dedup_spark_source(str(source), config, output_dir, progress, swapped)
        source = _local_path_of_uri(str(source), "{uri}: a {scheme}:// URI is read by Spark only: "
                                                 f"add {option_value('engine', 'spark')} (or copy the data to a local path)")
    # loading and writing, like the search, build many objects that are never in a cycle
    with collector_paused():
        minhash = _minhash_in_background(config)
        splits = config.split or None
        if isinstance(source, LoadedDataset):
            loaded = source.select_splits(splits)
        else:
            try:
                loaded = load_records(source, split_column=config.split_column, splits=splits, offline=config.offline,
                                      language=config.language, source_encoding=config.source_encoding)
            except MixedColumnError as error:  # a code column: its own words, as the Spark engine says them
                _refuse_code_cell(error, _split_columns(config.code_column))
                raise
        id_columns = _split_columns(config.id_column) if config.id_column is not None else None
        loaded, numbered_id_column = _number_samples_if_asked(loaded, id_columns)
        rows = collect_rows(
            loaded, code_column=_split_columns(config.code_column),
            id_column=id_columns,
            language=config.language, group_column=config.group_column,
        )
        _refuse_empty_split_name(loaded.source, rows.split_ranges, config.split_column)
        # a JSON Lines column of two kinds of value in its rows: Spark would read it as text (the same check there)
        refuse_mixed_json_columns(loaded, _split_columns(config.code_column))
        # bias must know whether the sample ids are the data's or numbers made from its row order
        rows.numbered_id_column = numbered_id_column
        if len(rows) == 0:
            raise DataError(f"{loaded.source}: the dataset has no rows")
        _check_policy_splits(config, list(rows.split_ranges))
        reference: DedupRows | None = None
        if config.against is not None:
            reference = _load_reference(config)
        if output_dir is not None:
            output_format = resolved_output_format(config.output_format, loaded)  # once: `auto` looks at the input
            # a file of the folder this run would write over, that no earlier run wrote: refused before the search
            names = split_output_names(output_format, rows.split_ranges)
            check_no_foreign_outputs(Path(output_dir), planned_outputs(names, groups=rows.groups is not None,
                                                                       reference=reference is not None), loaded.source)
        if config.engine == "spark":
            from workbench.dedup.spark import find_duplicates_spark

            result = find_duplicates_spark(rows, config, reference=reference, progress=progress, minhash=minhash)
        else:
            result = find_duplicates(rows, config, reference=reference, progress=progress, minhash=minhash)
        cells = cell_encodings(rows.ids, ((row, how) for row, code in enumerate(rows.codes)
                                          if (how := code_encoding(code, config.source_encoding)) is not None))
        _say_cell_encodings(loaded.source, cells)
        report = build_report(result, skipped_files=loaded.skipped, source_encodings={**loaded.encodings, **cells})
        if run_dir is not None and isinstance(report.get("source"), str):
            # as recorded (report.json, and manifest.json after it): inside the run folder relative to it;
            # the checks of the output folder compare the source as loaded (the manifest's is only said)
            report["source"] = shown_path(report["source"], run_dir)
        written: dict[str, str] = {}
        if output_dir is not None:
            with (progress or _null)("write outputs", len(loaded.splits)) as advance:
                try:
                    # the folder is held since the start of the run (run_dedup)
                    written = write_into_held_folder(result, loaded, report, output_dir, output_format=output_format,
                                                     on_progress=advance)
                except OSError as error:  # a full disk, a folder made read-only during the search
                    raise describe_write_error(output_dir, error) from error
                swapped.append(written)
        notes = [note for note in (_split_column_note(loaded, config), _cross_set_splits_note(loaded, config),
                                   _lsh_recall_note(report, config),
                                   _language_note(rows, config), _input_format_note(loaded, config)) if note]
        return DedupRun(loaded, result, report, written, notes)


def _input_format_note(loaded: LoadedDataset, config: DedupConfig) -> str | None:
    """A note when ``--input-format`` was set but the driver loaded the SOURCE (a local path,
    bundled name or hub id): the option is for a SOURCE URI Spark reads, and was not used (the
    report's ``parameters.input_format`` is then ``null``, ``input_format_requested`` what was given)."""
    if config.input_format == DedupConfig.options()["input_format"].default:
        return None
    return (f"{option_value('input_format', config.input_format)} was not used: it is the format of a SOURCE URI "
            f"Spark reads ({option_value('engine', 'spark')} with file://, s3a:// ...); {loaded.source} was loaded by the driver, which reads the "
            f"format from the file names")


#: columns that usually hold a row's split, named in a note when the data was read as one split
SPLIT_LIKE_COLUMNS = ("split", "set", "partition", "fold")


def _language_note(rows: DedupRows, config: DedupConfig) -> str | None:
    """A note when ``--language`` was set but rows carry other languages of their own (a source
    folder's files take theirs from the extension): the option does not restrict the run to its
    language. It is the language of rows that name none, and it decides a file extension that
    several plugins claim (said when its plugin has such an extension)."""
    default = DedupConfig.options()["language"].default
    if config.language == default:
        return None
    from workbench.languages.registry import canonical_language, extension_claimants, get_language

    chosen = canonical_language(config.language)
    counts = Counter(rows.languages)
    others = {name: n for name, n in counts.items() if name != chosen}
    if not others:
        return None
    shown = ", ".join(f"{name} {n}" for name, n in counts.most_common())
    decides = ""
    if counts.get(chosen):
        shared = {ext: extension_claimants(ext) for ext in get_language(chosen).extensions}
        shared = {ext: names for ext, names in shared.items() if len(names) > 1}
        if shared:
            decides = (", and it decides the extension(s) several plugins claim ("
                       + "; ".join(f"{ext}: {', '.join(names)}" for ext, names in shared.items()) + f") for {chosen}")
    return (f"{option_value('language', config.language)} is the language of rows that do not name one{decides}; the "
            f"other rows name their own ({shown}; a source folder's files take theirs from the extension), and each "
            f"was tokenized in its own language: {option_named('language')} does not restrict the run to {chosen}")


#: a miss probability at t0 above this is said on stderr (the defaults: 4.9e-05)
LSH_MISS_NOTE_ABOVE = 0.01


def _lsh_recall_note(report: dict, config: DedupConfig) -> str | None:
    """A note when the LSH bands/rows would miss a pair right at ``--t0`` more often than
    :data:`LSH_MISS_NOTE_ABOVE`: each missed pair is a duplicate never verified (e.g. ``--t0 0.5``
    with the bands tuned for the default 0.6 misses 45% of such pairs). The probability is
    ``(1 - t0**r)**b`` (Mining of Massive Datasets, Sec. 3.4.2).

    The advice fits the cause: with ``b * r <= num_perm`` the lowest miss is ``(1 - t0)**num_perm``
    (``num_perm`` bands of one row), so when even that is too high only more permutations help;
    bands and rows given by hand are changed by hand; else the tuning threshold is lowered."""
    lsh = report.get("lsh") or {}
    miss = lsh.get("miss_probability_at_set_threshold")
    if miss is None or miss <= LSH_MISS_NOTE_ABOVE:
        return None
    t0 = config.set_threshold
    bands_rows = f"{option_named('lsh_bands')}/{option_named('lsh_rows')}"
    how = (f"tuned for Jaccard {lsh['tuned_for_threshold']}" if lsh.get("tuned_for_threshold") is not None
           else f"set with {bands_rows}")
    said = (f"the LSH bands/rows ({lsh['bands']} x {lsh['rows']}, {how}) miss a pair at the set-Jaccard threshold "
            f"{option_value('set_threshold', t0, flag='--t0')} with probability {miss:.2f}: such duplicates are never "
            "verified")
    best = (1.0 - t0) ** config.num_perm
    num_perm = option_named("num_perm")
    if best > LSH_MISS_NOTE_ABOVE:
        return (f"{said}. {option_value('num_perm', config.num_perm)} is too few permutations for that: no bands/rows "
                f"of {config.num_perm} do better than {best:.2f} ({config.num_perm} bands of 1 row); raise {num_perm} "
                f"(default {DedupConfig.options()['num_perm'].default})")
    if config.lsh_params is not None:
        return f"{said}. Use more bands or fewer rows per band ({bands_rows}, bands x rows <= {num_perm})"
    suggested = max(0.05, t0 - 0.2)
    t0_named = option_named("set_threshold", flag="--t0")
    if config.lsh_threshold > suggested + 1e-9:
        return (f"{said}. Tune the LSH below {t0_named} ({option_named('lsh_threshold')}, e.g. {suggested:.2f}) or set "
                f"the bands directly ({bands_rows})")
    return (f"{said}. {option_value('lsh_threshold', config.lsh_threshold)} is already below {t0_named}: raise "
            f"{num_perm} for more bands (default {DedupConfig.options()['num_perm'].default}) or set more bands of "
            f"fewer rows ({bands_rows})")


def _split_column_note(loaded: LoadedDataset, config: DedupConfig) -> str | None:
    """A note when one-split data has a column that looks like the split of each row and
    ``--split-column`` was not given: then the run has no train/test split, so no in-train,
    in-test or cross-set figures, which is easy to miss."""
    if config.split_column is not None or len(loaded.splits) != 1:
        return None
    (only, dataset), = loaded.splits.items()
    for column in SPLIT_LIKE_COLUMNS:
        if column not in dataset.column_names:
            continue
        values = sorted({str(v) for v in dataset.with_format("arrow")[column].unique().to_pylist()})
        if len(values) < 2:
            continue
        shown = ", ".join(values[:5]) + (", ..." if len(values) > 5 else "")
        return (f"the data was read as one split ({only!r}) but its column {column!r} holds {len(values)} values "
                f"({shown}): {option_set('split_column', column)} to use them as splits (the in-train, in-test and "
                f"cross-set duplicates need a {config.train_split!r} and a {config.test_split!r} split)")
    return None


def _cross_set_splits_note(loaded: LoadedDataset, config: DedupConfig) -> str | None:
    """A note when the data has several splits but none named ``config.train_split`` or
    ``config.test_split`` (``train`` and ``validation``): the report then has no in-train, in-test
    or cross-set figures, although rows of one split may have been removed as copies of another's.
    Names the option to set, with the other split as its value where only one is left to pick."""
    splits = list(loaded.splits)
    if len(splits) < 2:
        return None
    missing = [(name, split) for name, split in (("train_split", config.train_split), ("test_split", config.test_split))
               if split not in splits]
    if not missing:
        return None
    said = ", ".join(splits)
    lacking = " or ".join(repr(split) for _, split in missing)
    others = [split for split in splits if split not in (config.train_split, config.test_split)]
    if len(missing) == 1 and len(others) == 1:
        how = option_set(missing[0][0], others[0])
    else:
        how = f"name {'it' if len(missing) == 1 else 'them'} with " + " and ".join(option_named(n) for n, _ in missing)
    return (f"no split is named {lacking} (the splits are {said}): {how} for the in-train, in-test and "
            "cross-set duplicates")


def _number_samples_if_asked(loaded: LoadedDataset, id_columns: list[str] | None) -> tuple[LoadedDataset, str | None]:
    """``--id-column TASK,sample_id`` on data without a ``sample_id`` column numbers the samples of
    each task 0, 1, ... in file order, as ``workbench execute`` and ``score`` do
    (:func:`workbench.data.samples.resolve_sample_column`), so the dedup's ids are the keys of
    their outputs and ``workbench bias`` can join them; the deduplicated splits carry the column.

    Returns:
        ``(loaded, column)``: the data (with the column when it was numbered) and the column made
        by numbering (``sample_id``), ``None`` when every id column was read from the data (the
        report's ``parameters.numbered_id_column``).
    """
    if not id_columns or len(id_columns) != 2 or id_columns[1] != SAMPLE_COLUMN:
        return loaded, None
    numbered = loaded.with_numbered_samples(id_columns[0], SAMPLE_COLUMN)
    return numbered, (SAMPLE_COLUMN if numbered is not loaded else None)  # the same object: nothing numbered


def _run_dedup_spark_source(source: str, config: DedupConfig, output_dir: str | Path | None,
                            progress: ProgressFactory | None, swapped: list[dict[str, str]]) -> DedupRun:
    """:func:`run_dedup` for a URI Spark reads: read, search and write the splits in one Spark session;
    the driver holds the small per-row records, never the texts (but those of the rows below
    ``min_tokens`` and of rows parsed with errors). The output folder, a local one or a URI Spark
    writes (:class:`~workbench.dedup.spark_output.HadoopFolder`, checked first), is checked before
    the search as a local one is (:func:`~workbench.dedup.output_folder.check_no_foreign_outputs`)
    and gets the outputs through a staging folder swapped in at the end
    (:func:`~workbench.dedup.output_folder.staged_outputs`)."""
    from workbench.dedup import spark_tasks
    from workbench.dedup.spark import find_duplicates_spark, spark_session
    from workbench.dedup.spark_output import HadoopFolder, check_output_folder
    from workbench.dedup.spark_source import read_rows
    from workbench.dedup.spark_writing import spark_output_format

    output_uri = str(output_dir) if is_spark_uri(output_dir) else None
    with collector_paused(), spark_session(config) as spark:
        if output_uri is not None:
            check_output_folder(spark, output_uri)  # a missing connector: now, not after the search
            if uri_within(output_uri, source):
                _refuse_overlap(output_uri, source, inside=not uri_within(source, output_uri))
        if output_dir is not None:
            _refuse_output_over_spark_input(spark, source, output_dir)
        folder = None if output_dir is None else (
            LocalFolder(output_dir) if output_uri is None else HadoopFolder(spark, output_uri))
        minhash = _minhash_in_background(config)
        try:
            read = read_rows(spark, source, code_column=_split_columns(config.code_column),
                             id_column=_split_columns(config.id_column) if config.id_column is not None else None,
                             language=config.language, group_column=config.group_column,
                             split_column=config.split_column, splits=list(config.split) or None,
                             input_format=config.input_format, progress=progress)
            try:
                _refuse_empty_split_name(source, read.rows.split_ranges, config.split_column)
                output_format = spark_output_format(config.output_format, read)
                _check_policy_splits(config, list(read.rows.split_ranges))
                reference = _load_reference(config) if config.against is not None else None
                split_names = split_output_names("spark", read.rows.split_ranges)
                planned = planned_outputs(split_names, groups=read.rows.groups is not None,
                                          reference=reference is not None)
                if folder is not None:
                    check_no_foreign_outputs(folder, planned, source)
                result = find_duplicates_spark(read.rows, config, reference=reference, progress=progress,
                                               minhash=minhash, spark=spark, source=read)
                cells = cell_encodings(read.rows.ids, run_job("read input", read.items.map(functools.partial(spark_tasks.item_encoding, fallback=config.source_encoding))
                                                              .filter(spark_tasks.has_encoding).collect))
                _say_cell_encodings(source, cells)
                report = build_report(result, skipped_files=read.skipped, input_format=read.input_format,
                                      source_encodings=cells)
                written: dict[str, str] = {}
                if folder is not None:
                    written = _write_spark_outputs(spark, folder, read, result, report, planned, split_names,
                                                   output_format, progress)
                    swapped.append(written)
            finally:
                read.release()
        finally:
            if isinstance(folder, HadoopFolder):
                folder.close()
        notes = [note] if (note := _lsh_recall_note(report, config)) else []
        if output_uri is not None:
            notes.append(_unlocked_note(output_uri))
        return DedupRun(LoadedDataset(source, {}), result, report, written, notes)


def _unlocked_note(output_uri: str) -> str:
    """The note of a run into a folder Hadoop writes: unlike a local one
    (:func:`~workbench.dedup.output_folder.hold_output_folder`), it is not locked (object stores and
    HDFS have no lock a run could take and lose with its process), so two runs at once are not refused."""
    scheme = urlparse(output_uri).scheme.lower()
    return (f"-o {output_uri} is not locked: a folder written through Hadoop's file system ({scheme}://) has no lock "
            f"here, so a second run into it at the same time is not refused and would mix its outputs with this "
            f"run's: start one run at a time per -o")


def _write_spark_outputs(spark, folder, read, result: DedupResult, report: dict, planned: list[str],
                         split_names: list[str], output_format: str, progress: ProgressFactory | None) -> dict[str, str]:
    """The outputs of a Spark-read run, into a staging folder of ``folder`` swapped in at the end:
    the small outputs by the driver (into a local folder, or copied through Hadoop's file system),
    then the splits by Spark. Returns output name -> where it is after the swap."""
    from workbench.dedup.spark_output import write_result_files_at
    from workbench.dedup.spark_writing import write_spark_splits

    source = read.rows.source
    try:
        with staged_outputs(folder, source, planned) as staging:
            if isinstance(folder, LocalFolder):
                stage = folder.path / staging
                written = write_small_outputs(result, report, stage, skipped_files=read.skipped,
                                              split_outputs=split_names)
                splits_at = stage.resolve().as_uri()
            else:
                written = write_result_files_at(result, report, folder, staging, skipped_files=read.skipped,
                                                split_outputs=split_names)
                splits_at = folder.path_of(staging)
            with (progress or _null)("spark: write splits", len(read.rows.split_ranges)) as advance:
                written.update(write_spark_splits(spark, read, result, splits_at, output_format, on_progress=advance))
    except OSError as error:
        raise describe_write_error(folder.where, error) from error
    return swapped_paths(written, folder)


def _refuse_output_over_input(source: Path, out: Path) -> None:
    """Refuse an output folder that is the input folder, lies inside it, or holds the input file:
    the split files (``train.jsonl`` ...) and the clean-up of a previous run's outputs would replace
    the input, and the removed rows would be gone for good (a rerun would also read the outputs as input).
    A glob SOURCE (``data/*.jsonl``, read by Spark) counts as the folder it matches in.

    Raises:
        DataError: naming the clash and what to do.
    """
    source = input_root(source)
    if not source.exists():
        return  # a hub id or a bundled name: nothing local to overwrite
    source, out = source.resolve(), out.resolve()
    if source.is_dir() and (same := _same_folder_on_the_way(out, source)) is not None:
        _refuse_overlap(out, source, inside=same != out)
    if source.is_file() and _same_folder_on_the_way(out, source.parent) == out:
        advice = other_output_advice(f"choose another folder (e.g. {out / 'dedup'})")
        raise OutputOverInputError(f"{output_named(out)} is the folder of the input file {source.name}: its split "
                                   f"files could replace the input; {advice}")


def _refuse_output_over_spark_input(spark, source: str, output: str | Path) -> None:
    """:func:`_refuse_output_over_input` for a SOURCE URI Spark reads, compared where Hadoop's file
    systems put both (:func:`~workbench.dedup.spark_output.resolved_location`): a ``viewfs://`` -o
    mounted on the local input folder, a local -o inside a ``viewfs://`` SOURCE's folder, two mount
    tables onto one folder. Locations on the local file system are compared as local paths (links
    resolved; the same folder under two paths, a bind mount, too); others as URIs. Not seen: two
    stores that hold the same data under different names (an NFS export and its server's disk, an
    ``s3a://`` bucket and a FUSE mount of it).

    Raises:
        DataError: naming the clash as :func:`_refuse_output_over_input` does, and where the
            given -o and SOURCE are.
    """
    from workbench.dedup.spark_output import resolved_location

    out_at = resolved_location(spark, str(output)) if is_spark_uri(output) else Path(output).resolve().as_uri()
    source_at = resolved_location(spark, source)
    local = [unquote(urlparse(at).path) for at in (out_at, source_at) if urlparse(at).scheme.lower() == "file"]
    try:
        if len(local) == 2:
            _refuse_output_over_input(Path(local[1]), Path(local[0]))
        elif uri_within(out_at, source_at):
            _refuse_overlap(out_at, source_at, inside=not uri_within(source_at, out_at))
    except OutputOverInputError as error:
        pairs = (("-o", str(output), out_at), ("SOURCE", source, source_at))
        mapped = [f"{name} {given} is {at}" for name, given, at in pairs
                  if is_spark_uri(given) and urlparse(given).scheme.lower() != "file"]
        raise OutputOverInputError(f"{error} ({'; '.join(mapped)} through Hadoop's file system)" if mapped
                                   else str(error)) from None


def _same_folder_on_the_way(out: Path, folder: Path) -> Path | None:
    """``out`` or the folder above it (both resolved) that is ``folder``: the same path, or the same
    folder under another path (the same device and inode: a bind mount of it); ``None`` when none is."""
    for candidate in (out, *out.parents):
        if candidate == folder:
            return candidate
        try:
            if os.path.samefile(candidate, folder):
                return candidate
        except OSError:  # not made yet
            continue
    return None


class OutputOverInputError(DataError):
    """``-o`` is the input folder, lies in it, or is the folder of the input file (:func:`_refuse_overlap`)."""


def _refuse_overlap(out: object, source: object, *, inside: bool) -> None:
    """Refuse ``out``, the input folder ``source`` (or, ``inside``, a folder in it).

    Raises:
        OutputOverInputError: always, naming the clash and what to do.
    """
    where = f"lies inside the input folder {source}" if inside else "is the input folder"
    raise OutputOverInputError(f"{output_named(out)} {where}: dedup would write its splits over the input (or into "
                               f"it, to be read as input by the next run); {other_output_advice('choose a folder')} "
                               f"outside {source}")


def _minhash_in_background(config: DedupConfig) -> Future[MinHashSetup]:
    """datasketch's import and the LSH tuning for ``config``, in a helper process while the data loads."""
    return minhash_setup_in_background(
        config.num_perm, config.seed, config.lsh_threshold, config.lsh_weights, config.lsh_params
    )


def _local_path_of_uri(uri: str, refusal: str) -> str:
    """The local path a ``file://`` URI names (``file:///data/x.jsonl`` -> ``/data/x.jsonl``), for
    a source or an output folder the driver reads or writes itself.

    Args:
        uri: the URI; refusal: the message for any other scheme (``{uri}`` and ``{scheme}`` filled in).

    Raises:
        DataError: any other scheme (``s3a://``, ``hdfs://`` ...: only Spark reads and writes
            those, through its file systems; ``refusal`` says how), or a ``file://`` URI naming a host.
    """
    parsed = urlparse(uri)
    if parsed.scheme.lower() != "file":
        raise DataError(refusal.format(uri=uri, scheme=parsed.scheme))
    if parsed.netloc not in ("", "localhost"):
        raise DataError(f"{uri}: a file:// URI names a host ({parsed.netloc}); only a local path is taken here")
    return unquote(parsed.path)


def _output_refusal(config: DedupConfig) -> str:
    """The message for an output URI the driver would have to write (see :func:`_local_path_of_uri`)."""
    if config.engine != "spark":
        return ("-o {uri}: a {scheme}:// output folder is written by Spark only: add --engine spark "
                "(with a SOURCE Spark reads, a URI) or give -o a local folder")
    return ("-o {uri}: with --engine spark, a {scheme}:// output folder is written by Spark for a SOURCE Spark "
            "reads itself (a URI: file://, s3a://, hdfs:// ...); a local path, bundled name or hub id is "
            "loaded and written by the driver: give -o a local folder, or the SOURCE as a URI")


def _refuse_empty_split_name(source: str, splits: dict, split_column: str | None) -> None:
    """Refuse a split named ``''``: its output would be the hidden file ``.jsonl`` (or folder ``/``),
    which no loader reads back.

    Raises:
        DataError: naming where the empty name came from (the split column, or the file names).
    """
    if "" not in splits:
        return
    from workbench.data.data_file_splits import empty_split_name_message

    cause = (f"rows whose {option_named('split_column')} {split_column!r} is empty" if split_column else
             "a data file whose name gives an empty split name (such as -00000-of-00001.jsonl)")
    raise DataError(empty_split_name_message(source, cause))


def _check_policy_splits(config: DedupConfig, present: list[str]) -> None:
    """Refuse a train/test split name the user chose that is not a split of the data.

    The default names (``train``, ``test``) may be absent: a single-split dataset, or one
    whose splits have other names, is deduplicated without the cross-set policy.

    Raises:
        DedupConfigError: naming the field and listing the splits there are.
    """
    options = DedupConfig.options()
    for attribute in ("train_split", "test_split"):
        name = getattr(config, attribute)
        if name not in present and name != options[attribute].default:
            raise DedupConfigError("{%s}: %s" % (attribute, MissingSplitError(name, present)), attribute)


def _null(description: str, total: int):
    from workbench.dedup.detection import _no_progress

    return _no_progress(description, total)


#: the message for an ``--against`` URI the driver cannot read (see :func:`_local_path_of_uri`)
AGAINST_REFUSAL = ("--against {uri}: the --against data is loaded by the driver, on either engine (a local path, a "
                   "file:// URI, a bundled name or a hub id; it is small: the rows to decontaminate against); "
                   "a {scheme}:// URI is read by Spark only for SOURCE: copy it to a local path")


def _load_reference(config: DedupConfig) -> DedupRows:
    """The rows of ``config.against``, with its code and id columns (defaults for HumanEval-like data).

    Raises:
        DataError: ``config.against`` is a URI other than ``file://`` (:data:`AGAINST_REFUSAL`), or
            as :func:`~workbench.data.load_records` and :func:`~workbench.dedup.rows.collect_rows`.
    """
    against = config.against
    if is_spark_uri(against):
        against = _local_path_of_uri(against, AGAINST_REFUSAL)
    reference = load_records(against, offline=config.offline, source_encoding=config.source_encoding)
    columns = reference.column_names
    code_column: str | list[str] | None = config.against_code_column
    if code_column is None:
        if {"prompt", "canonical_solution"} <= set(columns):  # HumanEval-style problems
            code_column = ["prompt", "canonical_solution"]
        else:
            code_column = config.code_column
    id_column: str | list[str] | None = config.against_id_column
    if id_column is None:
        id_column = "task_id" if "task_id" in columns else None
    else:  # several comma-separated columns, joined with ':', as --id-column takes them
        id_column = _split_columns(id_column)
    return collect_rows(reference, code_column=_split_columns(code_column), id_column=id_column, language=config.language,
                        code_option=option_named("against_code_column"),
                        id_option=option_named("against_id_column"))
