"""One call for the whole job: load, find duplicates, report, write (what the CLI runs)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

from workbench.data.loading import LoadedDataset, load_records
from workbench.dedup.config import DedupConfig
from workbench.dedup.pipeline import DedupResult, ProgressFactory, collector_paused, find_duplicates
from workbench.dedup.report import build_report
from workbench.dedup.rows import DedupRows, collect_rows
from workbench.dedup.signatures import minhash_setup_in_background
from workbench.dedup.writing import OUTPUT_FORMATS, write_outputs
from workbench.errors import DataError, MissingSplitError


@dataclass
class DedupRun:
    """A finished run.

    Attributes:
        loaded: the input dataset; result: what was found; report: the report dict;
        written: output name -> path (empty without an output folder).
    """

    loaded: LoadedDataset
    result: DedupResult
    report: dict
    written: dict[str, str] = field(default_factory=dict)


def _split_columns(value: str | list[str]) -> list[str]:
    return [c.strip() for c in value.split(",") if c.strip()] if isinstance(value, str) else list(value)


def run_dedup(
    source: str | LoadedDataset,
    *,
    code_column: str | list[str] = "content",
    id_column: str | list[str] | None = None,
    split_column: str | None = None,
    splits: Iterable[str] | None = None,
    language: str = "python",
    config: DedupConfig | None = None,
    against: str | None = None,
    against_code_column: str | list[str] | None = None,
    against_id_column: str | None = None,
    output_dir: str | Path | None = None,
    output_format: str = "auto",
    offline: bool = False,
    progress: ProgressFactory | None = None,
) -> DedupRun:
    """Load ``source``, deduplicate it and write the outputs.

    Args:
        source: a data file, folder, bundled name or hub id (see
            :func:`workbench.data.load_records`), or an already loaded dataset.
        code_column: the code column, or a comma-separated list / list of columns to join.
        id_column: unique id column, or comma-separated columns joined with ``":"``
            (default ``id`` when present, else ``<split>/<row>``).
        split_column: a column naming each row's split (for one table holding several).
        splits: only these splits (all when empty).
        language: language of rows without a ``language`` column value.
        config: the :class:`DedupConfig` (its ``group_column`` is read from the data).
        against: a reference dataset for decontamination (e.g. ``humaneval``).
        against_code_column: its code column(s) (default: ``prompt,canonical_solution``
            for the bundled HumanEval, else ``code_column``).
        against_id_column: its id column (default ``task_id`` when present, else ``id``).
        output_dir: where to write outputs (nothing is written when ``None``).
        output_format: ``auto`` (the input's form), ``jsonl``, ``parquet``, ``hf`` or ``files``.
        offline: never contact the Hugging Face hub.
        progress: a progress-bar factory (see :func:`find_duplicates`).

    Raises:
        DataError / MissingColumnError / MissingSplitError / LanguageNotFoundError /
        DedupConfigError: bad input, before the long steps start (a ``train_split`` or
        ``test_split`` other than the default that names no split is a MissingSplitError).
    """
    config = config or DedupConfig()
    if output_dir is not None:
        out = Path(output_dir)
        if out.exists() and not out.is_dir():
            raise DataError(f"{out}: the output path exists and is not a folder")
    if output_format not in OUTPUT_FORMATS:
        raise DataError(f"output format must be one of {', '.join(OUTPUT_FORMATS)}, not {output_format!r}")
    # loading and writing, like the search, build many objects that are never in a cycle
    with collector_paused():
        # datasketch's import and the LSH tuning run in a helper process while the data loads
        minhash = minhash_setup_in_background(
            config.num_perm, config.seed, config.lsh_threshold, config.lsh_weights, config.lsh_params
        )
        if isinstance(source, LoadedDataset):
            loaded = source.select_splits(splits)
        else:
            loaded = load_records(source, split_column=split_column, splits=splits, offline=offline)
        rows = collect_rows(
            loaded, code_column=_split_columns(code_column),
            id_column=_split_columns(id_column) if id_column is not None else None, language=language,
            group_column=config.group_column,
        )
        if len(rows) == 0:
            raise DataError(f"{loaded.source}: the dataset has no rows")
        _check_policy_splits(config, list(rows.split_ranges))
        reference: DedupRows | None = None
        if against is not None:
            reference = _load_reference(against, against_code_column, against_id_column, code_column, language, offline)
        result = find_duplicates(rows, config, reference=reference, progress=progress, minhash=minhash)
        report = build_report(result, skipped_files=loaded.skipped)
        written: dict[str, str] = {}
        if output_dir is not None:
            with (progress or _null)("write outputs", len(loaded.splits)) as advance:
                written = write_outputs(result, loaded, report, output_dir, output_format=output_format, on_progress=advance)
        return DedupRun(loaded, result, report, written)


def _check_policy_splits(config: DedupConfig, present: list[str]) -> None:
    """Refuse a train/test split name the user chose that is not a split of the data.

    The default names (``train``, ``test``) may be absent: a single-split dataset, or one
    whose splits have other names, is deduplicated without the cross-set policy.

    Raises:
        MissingSplitError: naming the option and listing the splits there are.
    """
    defaults = {f.name: f.default for f in fields(DedupConfig)}
    for option, attribute in (("--train-split", "train_split"), ("--test-split", "test_split")):
        name = getattr(config, attribute)
        if name not in present and name != defaults[attribute]:
            error = MissingSplitError(name, present)
            error.args = (f"{option}: {error.args[0]}",)
            raise error


def _null(description: str, total: int):
    from workbench.dedup.pipeline import _no_progress

    return _no_progress(description, total)


def _load_reference(
    against: str,
    code_column: str | list[str] | None,
    id_column: str | None,
    default_code_column: str | list[str],
    language: str,
    offline: bool,
) -> DedupRows:
    reference = load_records(against, offline=offline)
    columns = reference.column_names
    if code_column is None:
        if {"prompt", "canonical_solution"} <= set(columns):  # HumanEval-style problems
            code_column = ["prompt", "canonical_solution"]
        else:
            code_column = default_code_column
    if id_column is None:
        id_column = "task_id" if "task_id" in columns else None
    return collect_rows(reference, code_column=_split_columns(code_column), id_column=id_column, language=language)
