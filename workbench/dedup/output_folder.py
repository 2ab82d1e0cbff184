"""The output folder of a dedup run: what the run writes there, what an earlier run wrote, and the
checks made before anything is written.

Every run records the names it writes at the top of the folder in ``manifest.json``
(:data:`MANIFEST`): its small outputs and its deduplicated splits (``train.jsonl``, ``files``,
``dataset``, a Spark run's ``train`` folder). A later run into the same folder

* refuses, before the search, to write over a file or folder that no such record names (a
  user's own ``train.jsonl`` or ``dataset/``): :func:`check_no_foreign_outputs`;
* writes its outputs into a hidden staging folder beside them and, only once all are written,
  swaps them in: what the earlier run recorded is taken away (all of it: a folder it recorded, such
  as ``files/``, goes whole), and a warning says which of those it replaces and which it removes
  because it does not write them again (a ``files/`` after a ``--output-format jsonl`` rerun):
  :func:`staged_outputs`. A run stopped before the swap (Ctrl-C, a failed write) leaves the earlier
  outputs as they were;
* leaves every other file alone.

The same rules hold for a local folder (:class:`LocalFolder`, a path or a ``file://`` URI) and a
folder given as a URI Spark writes (``s3a://``, ``hdfs://`` ...: its :class:`Folder` is
:class:`workbench.dedup.spark_output.HadoopFolder`, the same operations through Hadoop's FileSystem).

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
import os
import posixpath
import secrets
import shutil
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from workbench.errors import DataError
from workbench.io import atomic_write, unwritable_reason
from workbench.option_words import option_value, other_output_advice

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
#: schemes whose Hadoop rename copies the data (object stores): earlier outputs are deleted, not set aside
COPYING_RENAMES = ("s3", "s3a", "s3n", "gs", "wasb", "wasbs", "oss", "cos", "cosn", "obs")
#: the start of the name of the folder a run writes its outputs into before they are swapped in
#: (:func:`staged_outputs`): hidden, and never an output's name
STAGING_PREFIX = ".dedup-staging-"
#: the lock file a run into a local folder holds for its whole length (:func:`hold_output_folder`)
LOCK_FILE = ".dedup.lock"


def output_named(out: object) -> str:
    """The output folder as a refusal names it: ``--output runs/x`` on the command line, or in
    ``workbench run``'s words (:func:`~workbench.option_words.config_words`: the run sets the folder
    itself) ``the dedup stage's folder runs/x/dedup``."""
    return option_value("output", str(out))


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


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
        raise DataError(f"{output_named(out)} cannot be written ({reason}): nothing was searched; "
                        f"{other_output_advice('choose a folder you can write')}, or make this one writable")


@contextmanager
def hold_output_folder(out: Path) -> Iterator[None]:
    """Hold ``out`` (a local folder that exists) for one run: an OS file lock on ``out/.dedup.lock``
    (:data:`LOCK_FILE`, :func:`workbench.io.lock_exclusively`), taken at once or refused, so that a
    second run into the same folder cannot remove the first's live staging folder (the start-up
    clean-up of :func:`staged_outputs`) or swap its outputs over the first's. The lock goes with
    the process, even one killed by SIGKILL (whose empty lock file stays, harmless); the lock file
    is removed at the end of the run. A folder given as a URI
    Spark writes (``s3a://``, ``hdfs://``) is not locked: its stores have no such lock.

    Raises:
        DataError: another writer (a run, or a :func:`~workbench.dedup.writing.write_outputs` call)
            holds the lock: one line naming the folder, that process (its id, where Linux's
            ``/proc/locks`` tells it) and what to do. A lock file its holder removed just as this
            one opened it is tried once more, not refused.
    """
    from workbench.errors import WorkbenchError
    from workbench.io import lock_exclusively

    path = out / LOCK_FILE
    try:
        lock = lock_exclusively(path, "")
    except WorkbenchError:
        # a holder removes the file as it ends: a writer that opened it just before wins a flock on the removed
        # file, which filelock does not count as held. Once more, on the file now at the path: a live holder
        # refuses again, a finished one has left the folder free
        try:
            lock = lock_exclusively(path, "")
        except WorkbenchError:
            holder = _lock_holder(path)
            writer = "a `workbench dedup` run or a `write_outputs` call"
            by = f"process {holder}: {writer}" if holder is not None else writer
            raise DataError(f"{output_named(out)} is in use by another dedup writer ({by}): nothing was done; wait "
                            f"for it to finish (or stop it), or {other_output_advice('choose another -o folder')}"
                            ) from None
    try:
        yield
    finally:
        # removed while still held, so that a run leaves the folder as it found it; a run that opened
        # the file meanwhile finds its inode unlinked and tries once more, on a new file
        with suppress(OSError):
            path.unlink()
        lock.release()


def _lock_holder(path: Path) -> int | None:
    """The id of the process holding a ``flock`` on ``path``, from ``/proc/locks`` (Linux; ``None``
    elsewhere, or when the holder is not visible here, e.g. in another PID namespace)."""
    try:
        found = os.stat(path)
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    # e.g. "1: FLOCK  ADVISORY  WRITE 12345 00:2f:1234567 0 EOF": the device as hex major:minor, then the inode
    wanted = f"{os.major(found.st_dev):02x}:{os.minor(found.st_dev):02x}:{found.st_ino}"
    for line in lines:
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == wanted and fields[4].isdigit():
            return int(fields[4]) or None
    return None


class Folder(Protocol):
    """An output folder, seen through the few operations the checks and the swap need: on the local
    file system (:class:`LocalFolder`) or through Hadoop's FileSystem for a URI Spark writes
    (:class:`workbench.dedup.spark_output.HadoopFolder`). Names are relative to the folder
    (``train``, ``.dedup-staging-1a2b/train``).

    Attributes:
        where: the folder as the user gave it, for messages (a path or a URI).
        cheap_renames: a rename moves no data (a local or HDFS folder; not an object store, whose
            Hadoop rename copies): the earlier outputs are then set aside at once rather than
            deleted one by one while the folder is swapped.
    """

    where: str
    cheap_renames: bool

    def exists(self, name: str) -> bool: ...  # a link too, broken or not
    def is_dir(self, name: str) -> bool: ...  # a real folder (not a link to one)
    def children(self, name: str = "") -> list[str]: ...  # names in ``name`` (the folder itself by default)
    def read_text(self, name: str) -> str | None: ...  # ``None``: missing or unreadable
    def write_text(self, name: str, text: str) -> None: ...  # whole, replacing
    def make_dir(self, name: str) -> None: ...
    def remove(self, name: str) -> None: ...  # a file, or a folder with all it holds
    def rename(self, name: str, new: str) -> None: ...  # ``new`` must not exist; its folder must
    def path_of(self, name: str) -> str: ...  # what ``DedupRun.written`` names


class LocalFolder:
    """A :class:`Folder` on the local file system."""

    cheap_renames = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.where = str(path)

    def exists(self, name: str) -> bool:
        path = self.path / name
        return path.exists() or path.is_symlink()

    def is_dir(self, name: str) -> bool:
        path = self.path / name
        return path.is_dir() and not path.is_symlink()

    def children(self, name: str = "") -> list[str]:
        return sorted(child.name for child in (self.path / name).iterdir())

    def read_text(self, name: str) -> str | None:
        try:
            return (self.path / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def write_text(self, name: str, text: str) -> None:
        atomic_write(self.path / name, text)

    def make_dir(self, name: str) -> None:
        (self.path / name).mkdir(parents=True, exist_ok=True)

    def remove(self, name: str) -> None:
        path = self.path / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()

    def rename(self, name: str, new: str) -> None:
        os.rename(self.path / name, self.path / new)

    def path_of(self, name: str) -> str:
        return str(self.path / name)


def _folder(out: Path | str | Folder) -> Folder:
    return LocalFolder(out) if isinstance(out, (str, os.PathLike)) else out


def previous_outputs(out: Path | Folder) -> tuple[set[str], str | None]:
    """What an earlier dedup run recorded it wrote into ``out``.

    Args:
        out: the output folder (a path, or a :class:`Folder`).

    Returns:
        ``(names, source)``: the top-level names (empty when no run's record is there) and the
        source that run read (``None`` when unknown).
    """
    folder = _folder(out)
    try:
        manifest = json.loads(folder.read_text(MANIFEST) or "null")
    except ValueError:
        manifest = None
    if isinstance(manifest, dict) and manifest.get("written_by") == WRITER and isinstance(manifest.get("outputs"), list):
        return {str(name) for name in manifest["outputs"]}, manifest.get("source")
    return _legacy_outputs(folder)


def _legacy_outputs(folder: Folder) -> tuple[set[str], str | None]:
    """The names a dedup run from before :data:`MANIFEST` wrote, known from its ``report.json``."""
    try:
        report = json.loads(folder.read_text("report.json") or "null")
    except ValueError:
        return set(), None
    if not isinstance(report, dict) or not isinstance(report.get("splits"), dict) or "parameters" not in report:
        return set(), None
    splits = [str(split) for split in report["splits"]]
    names = {*SMALL_OUTPUTS, *OPTIONAL_OUTPUTS} - {"kept.csv"}
    names |= set(split_output_names("jsonl", splits)) | set(split_output_names("parquet", splits))
    names |= {name for name in split_output_names("spark", splits) if _is_spark_output_folder(folder, name)}
    return names, report.get("source")


def _is_spark_output_folder(folder: Folder, name: str) -> bool:
    """Whether ``name`` is a folder Spark wrote: only ``part-*`` files and Spark's markers
    (``_SUCCESS``, ``.crc`` checksums); any other file means someone else's folder."""
    if not folder.is_dir(name):
        return False
    names = folder.children(name)
    return bool(names) and all(child.startswith(("part-", "_", ".part-", "._")) for child in names)


def check_no_foreign_outputs(out: Path | Folder, planned: Iterable[str], source: object = None) -> None:
    """Refuse to write over a file or folder of ``out`` that no earlier dedup run recorded writing,
    or one that holds the run's input (``out/files/`` read again as ``SOURCE``).

    Args:
        out: the output folder (a path, or a :class:`Folder`); planned: the names this run may
            write (:func:`planned_outputs`); source: the run's input (a path: one inside ``out``).

    Raises:
        DataError: naming those files and the ways out (a fresh ``-o``, or moving them away).
    """
    folder = _folder(out)
    if folder.is_dir(""):
        _refuse(folder, planned, previous_outputs(folder)[0], source)


def _refuse_foreign(folder: Folder, planned: Iterable[str], ours: set[str]) -> None:
    """:func:`check_no_foreign_outputs` given what earlier runs recorded (``ours``)."""
    foreign = sorted(name for name in planned if name not in ours and folder.exists(name))
    if foreign:
        shown = ", ".join(foreign[:6]) + (f" and {len(foreign) - 6} more" if len(foreign) > 6 else "")
        raise DataError(f"{output_named(folder.where)} holds {shown}, which this run would write, and no record of an "
                        f"earlier `workbench dedup` run there ({MANIFEST}) says it wrote them: they are not replaced. "
                        f"{_capitalized(other_output_advice('choose a fresh -o folder'))}, or move them away (nothing was "
                        f"searched)")


def _refuse_holding_input(folder: Folder, planned: Iterable[str], source: object) -> None:
    """Refuse to replace an earlier output that holds the input of this run (:func:`_holds`)."""
    holding = [name for name in planned if folder.exists(name) and _holds(folder, name, source)]
    if holding:
        raise DataError(f"{output_named(folder.where)}: {holding[0]} holds this run's input {source}, and this run "
                        f"would replace it: {other_output_advice('choose another -o folder')}, or copy the input "
                        f"elsewhere (nothing was replaced)")


@contextmanager
def staged_outputs(out: Path | Folder, source: object, planned: Iterable[str] = ()) -> Iterator[str]:
    """Write a run's outputs into a staging folder inside ``out`` and swap them in only when all
    of them are written, so that a run interrupted (Ctrl-C) or failed while writing leaves the
    earlier run's outputs as they were and none of its own in their place.

    The block writes every output, ``manifest.json`` included, into the folder named by the yielded
    name (``.dedup-staging-<random>``: a hidden name, in the same folder, so on the same file
    system). When it ends without an error, :func:`_swap_in` makes the folder this run's; when it
    raises (``KeyboardInterrupt`` too) the staging folder is removed, as far as it can be (Spark's
    cancelled tasks may still be writing into it: whatever stays is removed by the next run into
    ``out``). Staging folders an interrupted run left are removed first, but one holding the
    earlier outputs of a swap cut off outright (:func:`_remove_stale_staging`).

    Args:
        out: the output folder (created if needed): a path, or a :class:`Folder`.
        source: the run's input, recorded in the manifest and named in the warning.
        planned: the names the run may write (:func:`planned_outputs`), checked before anything
            is written (:func:`check_no_foreign_outputs`).

    Yields:
        the staging folder's name inside ``out``.

    Raises:
        DataError: ``planned`` or a name the run wrote is there and no earlier run recorded it (a
            file made during the search), or holds the input (then the staging folder is removed
            and nothing is replaced); a rename or write of the swap failed (:func:`_swap_in`: what
            the folder holds then is said).
        OSError: a removal or write before the swap failed (through Hadoop: a DataError with its reason).
        KeyboardInterrupt: as it came; :class:`OutputsInPlace` once the swap was complete.
    """
    folder = _folder(out)
    folder.make_dir("")
    check_no_foreign_outputs(folder, planned, source)
    _remove_stale_staging(folder)
    staging = f"{STAGING_PREFIX}{secrets.token_hex(4)}"
    folder.make_dir(staging)
    try:
        yield staging
        names = [name for name in folder.children(staging) if name != MANIFEST and not name.startswith(".")]
        ours, previous_source = previous_outputs(folder)
        _refuse(folder, names, ours, source)  # files made in the folder during the run: nothing replaced
    except BaseException:
        _remove_staging(folder, staging)
        raise
    _swap_in(folder, staging, names, ours, previous_source, source)


def _remove_staging(folder: Folder, staging: str) -> None:
    """Remove ``staging`` as far as it can be: the run's own error is the one to show (Spark's
    cancelled tasks may still be writing into it; the next run removes what stays)."""
    try:
        folder.remove(staging)
    except (OSError, DataError) as error:
        logger.debug("the staging folder %s stays: %s", folder.path_of(staging), error)


#: inside a staging folder: the earlier outputs a swap set aside (:func:`_swap_in`)
ASIDE = ".replaced"


def _remove_stale_staging(folder: Folder) -> None:
    """Remove the staging folders earlier runs left (interrupted while writing), but one that
    holds earlier outputs a swap set aside and was killed before it could put them back (a
    SIGKILL, a power cut): that one is kept, and said at warning level."""
    for name in folder.children():
        if not name.startswith(STAGING_PREFIX):
            continue
        aside = f"{name}/{ASIDE}"
        if folder.is_dir(aside) and folder.children(aside):
            logger.warning("%s: %s holds outputs of an earlier run set aside by a swap that was cut off (%s): it is "
                           "kept; move back what you need from it, then delete it", folder.where, name,
                           ", ".join(folder.children(aside)))
        else:
            folder.remove(name)


def _refuse(folder: Folder, names: Iterable[str], ours: set[str], source: object) -> None:
    """Refuse ``names`` that are there and are no earlier run's (:func:`_refuse_foreign`) or hold
    the input (:func:`_refuse_holding_input`)."""
    names = list(names)
    _refuse_foreign(folder, names, ours)
    _refuse_holding_input(folder, names, source)


def _swap_in(folder: Folder, staging: str, names: list[str], ours: set[str], previous_source: str | None,
             source: object) -> None:
    """Make ``folder`` hold the outputs ``names`` that ``staging`` holds: what an earlier run
    recorded writing (``ours``, of ``previous_source``) is set aside (what this run writes again is
    replaced, the rest removed), said at warning level, the staged outputs are moved in, their
    manifest last, and the staging folder is removed. Nothing is removed that holds this run's
    input ``source``.

    Where renames are cheap the earlier outputs are moved into ``<staging>/.replaced`` and deleted
    with it at the end, so a swap cut off part-way (a rename that fails, a Ctrl-C) is undone: the
    earlier outputs and their manifest are put back, this run's outputs taken away (:func:`_undo_swap`).
    On an object store they are deleted one by one and a failure leaves the swap part-done (said).

    Raises:
        DataError: a rename or write failed (the earlier outputs put back: said), or the swap was
            cut off (a failure, a Ctrl-C) and the undo failed too (where the earlier outputs are).
        KeyboardInterrupt: as it came, once the swap is undone; :class:`OutputsInPlace` (one) when
            it came once the swap was complete (while the staging folder was removed).
    """
    present = sorted(name for name in ours if name != MANIFEST and folder.exists(name)
                     and not _holds(folder, name, source))
    earlier_manifest = folder.read_text(MANIFEST)
    aside = f"{staging}/{ASIDE}"
    set_aside: list[str] = []
    moved_in: list[str] = []
    try:
        if present:
            # the record first, so that a failure below leaves every name still recorded
            write_manifest(folder, sorted(set(names) | set(present)), source)
            if folder.cheap_renames:
                folder.make_dir(aside)
            for name in present:
                if folder.cheap_renames:  # at once; deleted with the staging folder, after the swap
                    folder.rename(name, f"{aside}/{name}")
                    set_aside.append(name)
                else:
                    folder.remove(name)
        for name in names:
            folder.rename(f"{staging}/{name}", name)
            moved_in.append(name)
        folder.write_text(MANIFEST, folder.read_text(f"{staging}/{MANIFEST}") or "")  # over the record above
    except BaseException as error:
        if not folder.cheap_renames:  # what was deleted cannot be put back: say where things are
            if isinstance(error, (OSError, DataError)):
                raise DataError(f"{output_named(folder.where)}: swapping in this run's outputs stopped part-way ({error}): "
                                f"the earlier outputs it had deleted are gone, this run's "
                                f"{', '.join(moved_in) or 'outputs'} {'are' if moved_in else 'are not'} in place"
                                f"{f', the rest in {folder.path_of(staging)}' if moved_in else ''}: rerun to write "
                                f"them all") from error
            raise
        stuck = _undo_swap(folder, staging, set_aside, moved_in, earlier_manifest)
        if stuck is not None:  # neither a Ctrl-C's "nothing was replaced" nor "as they were" would be true
            raise DataError(f"{output_named(folder.where)}: swapping in this run's outputs failed "
                            f"({error or type(error).__name__}) and could not be undone ({stuck})") from error
        if isinstance(error, (OSError, DataError)):
            raise DataError(f"{output_named(folder.where)}: swapping in this run's outputs failed ({error}); the earlier "
                            f"outputs are as they were and this run's were removed: rerun once the folder can be "
                            f"written") from error
        raise
    try:  # the outputs are in place: what follows must not say otherwise, nor lose them
        if present:
            replaced = [name for name in present if name in names]
            removed = [name for name in present if name not in names]
            logger.warning("%s held the outputs of an earlier dedup run (of %s): %s%s", folder.where,
                           previous_source or "another source",
                           f"replaced {', '.join(replaced)}" if replaced else "nothing replaced",
                           f"; removed {', '.join(removed)} (this run does not write them)" if removed else "")
        _remove_swapped_staging(folder, staging, bool(set_aside))
    except KeyboardInterrupt:
        raise OutputsInPlace({name: folder.path_of(name) for name in [*names, MANIFEST]}) from None


#: inside a staging folder: the earlier outputs of a finished swap, to delete (never kept: :func:`_remove_stale_staging`)
DISCARDED = ".discarded"


def _remove_swapped_staging(folder: Folder, staging: str, set_aside: bool) -> None:
    """Remove ``staging`` once its swap is complete. What it set aside is first renamed
    :data:`DISCARDED`, so that a removal cut short (a file that cannot be deleted, a Ctrl-C) leaves
    no ``.replaced`` for the next run to keep as a cut-off swap's; that run removes the rest. A
    failure is said at warning level: the run's outputs are in place all the same."""
    try:
        if set_aside:
            folder.rename(f"{staging}/{ASIDE}", f"{staging}/{DISCARDED}")
        folder.remove(staging)
    except (OSError, DataError) as error:
        logger.warning("%s: this run's outputs are in place, but its staging folder %s could not be removed (%s): "
                       "the next run into it removes it", folder.where, folder.path_of(staging), error)


def _undo_swap(folder: Folder, staging: str, set_aside: list[str], moved_in: list[str],
               earlier_manifest: str | None) -> str | None:
    """Undo a swap cut off part-way (:func:`_swap_in`): the outputs ``moved_in`` go back into
    ``staging``, those ``set_aside`` come back, the earlier manifest is written again (or the one
    the swap wrote removed) and the staging folder is removed. When this fails too the staging
    folder stays, with what it set aside (the next run keeps it: :func:`_remove_stale_staging`).

    Returns:
        ``None`` when undone, else why not (the failure's text), for the caller's error.
    """
    still_aside = list(set_aside)
    try:
        for name in moved_in:
            folder.rename(name, f"{staging}/{name}")
        for name in set_aside:
            folder.rename(f"{staging}/{ASIDE}/{name}", name)
            still_aside.remove(name)
        if earlier_manifest is not None:
            folder.write_text(MANIFEST, earlier_manifest)
        elif folder.exists(MANIFEST):
            folder.remove(MANIFEST)
    except (OSError, DataError) as error:
        return (f"{error}: the earlier outputs {', '.join(still_aside) or '(none)'} are in "
                f"{folder.path_of(f'{staging}/{ASIDE}')}, where the next run keeps them: move back what you need, "
                f"then delete {folder.path_of(staging)}")
    _remove_staging(folder, staging)
    return None


def _holds(folder: Folder, name: str, source: object) -> bool:
    """Whether the run's input (a path, a ``file://`` URI, or on a Hadoop ``folder`` a URI Spark
    reads, compared where Hadoop puts both: ``HadoopFolder.holds``; a glob from its folder on:
    :func:`input_root`) lies in ``name`` of ``folder``."""
    if source is None:
        return False
    if not isinstance(folder, LocalFolder):
        holds = getattr(folder, "holds", None)  # a HadoopFolder: where Hadoop puts both (its mounts)
        return holds(name, str(source)) if holds is not None else uri_within(str(source), folder.path_of(name))
    where = urlparse(str(source))
    path = unquote(where.path) if where.scheme.lower() == "file" else str(source)
    try:
        return input_root(Path(path)).resolve().is_relative_to((folder.path / name).resolve())
    except (OSError, ValueError):
        return False


#: characters that make a SOURCE a glob pattern (Spark's and Hadoop's: ``*.jsonl``, ``part-?``, ``[ab]``, ``{a,b}``)
GLOB_CHARACTERS = frozenset("*?[{")


def before_glob(parts: Sequence[str]) -> list[str]:
    """The parts of a path before the first that holds a glob character."""
    kept: list[str] = []
    for part in parts:
        if GLOB_CHARACTERS & set(part):
            break
        kept.append(part)
    return kept


def input_root(source: Path) -> Path:
    """``source``, or for a glob that names no path (``data/*.jsonl``) the folder it matches in (``data``)."""
    if source.exists() or not GLOB_CHARACTERS & set(str(source)):
        return source
    return Path(*before_glob(source.parts)) if before_glob(source.parts) else Path(".")


def uri_within(inner: str, outer: str) -> bool:
    """Whether the URI ``inner`` is ``outer`` or lies in it: the same scheme and authority and a
    path under ``outer``'s, compared as written (``.``, ``//``, ``..`` and a trailing ``/`` taken
    away, each cut at a glob: ``data/*.jsonl`` is ``data``; a host's default port or an alias is
    not known here)."""
    def split(uri: str) -> tuple[str, str, list[str]]:
        parsed = urlparse(uri)
        path = posixpath.normpath(unquote(parsed.path) or "/")
        return parsed.scheme.lower(), parsed.netloc.lower(), before_glob([part for part in path.split("/") if part])

    scheme, authority, parts = split(inner)
    outer_scheme, outer_authority, outer_parts = split(outer)
    return (scheme, authority) == (outer_scheme, outer_authority) and parts[:len(outer_parts)] == outer_parts


def write_manifest(out: Path | Folder, names: Sequence[str], source: object) -> None:
    """Record ``names`` as written by this run (:data:`MANIFEST`) in ``out`` (a path or a :class:`Folder`)."""
    record = {"written_by": WRITER, "source": str(source), "outputs": sorted(set(names) | {MANIFEST})}
    _folder(out).write_text(MANIFEST, json.dumps(record, indent=2) + "\n")


def interrupted_message(output: object, status: int = 130, word: str = "Interrupted") -> str:
    """What a dedup run stopped by Ctrl-C (or SIGTERM) leaves, for the CLI's one line (exit status ``status``:
    130, 143 after SIGTERM; ``word`` begins it: ``Interrupted``, ``Interrupted by SIGTERM``).

    A run writes nothing into ``-o`` but through :func:`staged_outputs`: an interruption before the
    swap removes the staging folder and replaces nothing, one during the swap undoes it
    (:func:`_swap_in`). So the folder holds what it held before.

    Args:
        output: the ``-o`` as given (a path or URI), or ``None`` (nothing is written).
    """
    head = f"{word}: dedup stopped before it finished (exit status {status}); "
    if output is None:
        return head + "no -o was given, so nothing was written: run it again"
    if urlparse(str(output)).scheme.lower() in COPYING_RENAMES:
        head += ("if it was not swapping in its outputs at the end (on an object store that deletes the earlier "
                 "ones, then copies the new ones in, and is not undone), ")
    return (head + f"nothing in -o {output} was replaced: it holds what it held before (an earlier run's outputs, or "
            f"none), as a run writes its outputs into a staging folder ({STAGING_PREFIX}*) and swaps them in only once "
            f"all are written; its staging folder, if it had begun one, was removed (files Spark's cancelled tasks wrote "
            f"into it after that are removed by the next run into {output}): run it again")


class OutputsInPlace(KeyboardInterrupt):
    """A Ctrl-C that came once a run's outputs were swapped in (while its staging folder was
    removed, its notes were made, Spark stopped or the lock was released): a :class:`KeyboardInterrupt` all the same, whose
    ``written`` (output name -> path or URI) are complete and in place."""

    def __init__(self, written: dict[str, str]) -> None:
        super().__init__()
        self.written = written


def interrupted_after_run_message(output: object, written: dict[str, str], status: int = 130,
                                  word: str = "Interrupted") -> str:
    """What a dedup run stopped by Ctrl-C (or SIGTERM) once its outputs were swapped in leaves (while it
    ended, or its notes or report were printed), for the CLI's one line (exit status ``status``, begun
    with ``word``, as :func:`interrupted_message`).

    Args:
        output: the ``-o`` as given (a path or URI), or ``None``; written: output name -> path
            (:attr:`workbench.dedup.job.DedupRun.written`, :class:`OutputsInPlace`).
    """
    if output is None or not written:
        return (f"{word}: dedup had finished (exit status {status}); only the printing of its report was cut short: "
                "no -o was given, so nothing was written (run it again to see the report)")
    return (f"{word}: dedup had written its outputs (exit status {status}): its {len(written)} outputs are complete "
            f"and in place in -o {output} (report.json holds the report); only what came after (its notes, the "
            f"printed report) was cut short")


def describe_write_error(out: object, error: OSError) -> DataError:
    """A :class:`DataError` for an output that could not be written after the search: staged, so
    nothing in ``out`` was replaced (:func:`staged_outputs`)."""
    where = f" ({error.filename})" if getattr(error, "filename", None) else ""
    return DataError(f"the outputs cannot be written to {out}: {error.strerror or error}{where}; the search finished, "
                     f"but nothing in {out} was replaced (the outputs are swapped in only once all are written): "
                     f"rerun with a writable -o folder")

