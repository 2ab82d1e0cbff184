"""The output folder of a dedup run: what the run writes there, what an earlier run wrote, and the
checks made before anything is written.

Every run records the names it writes at the top of the folder in ``manifest.json``
(:data:`MANIFEST`): its small outputs and its deduplicated splits (``train.jsonl``, ``files``,
``dataset``, a Spark run's ``train`` folder). A later run into the same folder

* refuses, before the search, to write over a file or folder that no such record names (a
  user's own ``train.jsonl`` or ``dataset/``): :func:`check_no_foreign_outputs`;
* removes what the earlier run recorded (all of it: a folder it recorded, such as ``files/``, goes
  whole), saying at warning level which of those it replaces and which it removes because it
  does not write them again (a ``files/`` after a ``--output-format jsonl`` rerun): :func:`take_over`;
* leaves every other file alone.

An output folder of a workbench from before the manifest is recognised by its ``report.json``
(a dedup report: ``splits`` and ``parameters``): the names such a run always wrote (the small
outputs, ``<split>.jsonl`` / ``.parquet`` and a Spark run's part-file folders) count as its; a
``files/`` or ``dataset/`` there is not known to be its and is left alone (or, when this run would
write it, refused).

:func:`check_writable` probes the folder with a file created and removed, so that a read-only
folder is refused before the search rather than after it.
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from workbench.errors import DataError
from workbench.io import atomic_write, unwritable_reason

logger = logging.getLogger("workbench.dedup.writing")

#: the record of what a run wrote, at the top of its output folder
MANIFEST = "manifest.json"
#: the small outputs every run writes (``manifest.json`` too)
SMALL_OUTPUTS = ("clusters.json", "cluster_shapes.csv", "pairs.csv", "removed.csv", "skipped.csv", "kept.csv",
                 "report.json")
#: outputs written only by some runs: with ``--group-column``, with ``--against``, with unreadable rows
OPTIONAL_OUTPUTS = ("cross_group_pairs.csv", "contamination.csv", "unreadable.csv")
#: what a manifest says wrote it
WRITER = "workbench dedup"


def split_output_names(output_format: str, splits: Iterable[str]) -> list[str]:
    """The top-level names the deduplicated splits take in the output folder.

    Args:
        output_format: ``jsonl``, ``parquet``, ``hf`` (``dataset/``), ``files`` (``files/``) or
            ``spark`` (a folder of part files per split, as the Spark engine writes them).
        splits: the split names (a ``/`` in a name becomes ``_``).

    Returns:
        the names, e.g. ``["train.jsonl", "test.jsonl"]`` or ``["files"]``.
    """
    safe = [split.replace("/", "_") for split in splits]
    if output_format in ("jsonl", "parquet"):
        return [f"{name}.{output_format}" for name in safe]
    if output_format == "hf":
        return ["dataset"]
    if output_format == "files":
        return ["files"]
    if output_format == "spark":
        return safe
    raise DataError(f"unknown output format {output_format!r}")


def planned_outputs(split_names: Sequence[str], *, groups: bool, reference: bool) -> list[str]:
    """Every top-level name a run may write: :data:`SMALL_OUTPUTS`, ``cross_group_pairs.csv``
    (``groups``), ``contamination.csv`` (``reference``), ``unreadable.csv`` (known only after
    tokenizing, so always counted), the splits' ``split_names`` and :data:`MANIFEST`."""
    optional = [name for name, wanted in zip(OPTIONAL_OUTPUTS, (groups, reference, True)) if wanted]
    return [*SMALL_OUTPUTS, *optional, *split_names, MANIFEST]


def check_writable(out: Path) -> None:
    """Refuse an output folder that cannot be written (a file is created there and removed:
    :func:`workbench.io.unwritable_reason`), before the search rather than after it.

    Raises:
        DataError: naming the folder and the reason (``Permission denied``, a read-only file system).
    """
    reason = unwritable_reason(out)
    if reason is not None:
        raise DataError(f"--output {out} cannot be written ({reason}): nothing was searched; choose a folder you can "
                        f"write, or make this one writable")


def previous_outputs(out: Path) -> tuple[set[str], str | None]:
    """What an earlier dedup run recorded it wrote into ``out``.

    Returns:
        ``(names, source)``: the top-level names (empty when no run's record is there) and the
        source that run read (``None`` when unknown).
    """
    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        manifest = None
    if isinstance(manifest, dict) and manifest.get("written_by") == WRITER and isinstance(manifest.get("outputs"), list):
        return {str(name) for name in manifest["outputs"]}, manifest.get("source")
    return _legacy_outputs(out)


def _legacy_outputs(out: Path) -> tuple[set[str], str | None]:
    """The names a dedup run from before :data:`MANIFEST` wrote, known from its ``report.json``."""
    try:
        report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return set(), None
    if not isinstance(report, dict) or not isinstance(report.get("splits"), dict) or "parameters" not in report:
        return set(), None
    splits = [str(split) for split in report["splits"]]
    names = {*SMALL_OUTPUTS, *OPTIONAL_OUTPUTS} - {"kept.csv"}
    names |= set(split_output_names("jsonl", splits)) | set(split_output_names("parquet", splits))
    names |= {name for name in split_output_names("spark", splits) if _is_spark_output_folder(out / name)}
    return names, report.get("source")


def _is_spark_output_folder(path: Path) -> bool:
    """Whether ``path`` is a folder Spark wrote: only ``part-*`` files and Spark's markers
    (``_SUCCESS``, ``.crc`` checksums); any other file means someone else's folder."""
    if not path.is_dir() or path.is_symlink():
        return False
    names = [child.name for child in path.iterdir()]
    return bool(names) and all(name.startswith(("part-", "_", ".part-", "._")) for name in names)


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def check_no_foreign_outputs(out: Path, planned: Iterable[str]) -> None:
    """Refuse to write over a file or folder of ``out`` that no earlier dedup run recorded writing.

    Args:
        out: the output folder; planned: the names this run may write (:func:`planned_outputs`).

    Raises:
        DataError: naming those files and the ways out (a fresh ``-o``, or moving them away).
    """
    if out.is_dir():
        _refuse_foreign(out, planned, previous_outputs(out)[0])


def _refuse_foreign(out: Path, planned: Iterable[str], ours: set[str]) -> None:
    """:func:`check_no_foreign_outputs` given what earlier runs recorded (``ours``)."""
    foreign = sorted(name for name in planned if name not in ours and _exists(out / name))
    if foreign:
        shown = ", ".join(foreign[:6]) + (f" and {len(foreign) - 6} more" if len(foreign) > 6 else "")
        raise DataError(f"--output {out} holds {shown}, which this run would write, and no record of an earlier "
                        f"`workbench dedup` run there ({MANIFEST}) says it wrote them: they are not replaced. Choose a "
                        f"fresh -o folder, or move them away (nothing was searched)")


def take_over(out: Path, planned: Sequence[str], source: object) -> None:
    """Make ``out`` this run's: remove what an earlier run recorded writing (what this run writes
    again is replaced, the rest removed), saying so at warning level, then record ``planned`` in
    :data:`MANIFEST`. Nothing is removed from a folder that holds this run's input ``source``.

    Raises:
        DataError: a name this run writes is there and no earlier run recorded it
            (:func:`check_no_foreign_outputs`).
        OSError: a removal or the manifest write failed.
    """
    ours, previous_source = previous_outputs(out)
    _refuse_foreign(out, planned, ours)
    present = sorted(name for name in ours if name != MANIFEST and _exists(out / name))
    if present and not _holds(out, source):
        # the record first, so that a failure below leaves every name still recorded
        write_manifest(out, sorted(set(planned) | set(present)), source)
        for name in present:
            path = out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
        replaced = [name for name in present if name in planned]
        removed = [name for name in present if name not in planned]
        logger.warning("%s held the outputs of an earlier dedup run (of %s): %s%s", out, previous_source or "another source",
                       f"replaced {', '.join(replaced)}" if replaced else "nothing replaced",
                       f"; removed {', '.join(removed)} (this run does not write them)" if removed else "")
    write_manifest(out, planned, source)


def _holds(out: Path, source: object) -> bool:
    """Whether the run's input lies in ``out`` (then nothing of it is removed)."""
    try:
        return Path(str(source)).resolve().is_relative_to(out.resolve())
    except (OSError, ValueError):
        return False


def write_manifest(out: Path, names: Sequence[str], source: object) -> None:
    """Record ``names`` as written by this run (:data:`MANIFEST`)."""
    record = {"written_by": WRITER, "source": str(source), "outputs": sorted(set(names) | {MANIFEST})}
    atomic_write(out / MANIFEST, json.dumps(record, indent=2) + "\n")


def describe_write_error(out: object, error: OSError) -> DataError:
    """A :class:`DataError` for an output that could not be written after the search."""
    where = f" ({error.filename})" if getattr(error, "filename", None) else ""
    return DataError(f"the outputs cannot be written to {out}: {error.strerror or error}{where}; the search finished but "
                     f"its outputs are incomplete: rerun with a writable -o folder")

