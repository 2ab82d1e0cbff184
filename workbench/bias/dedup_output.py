"""Reading a ``workbench dedup`` output folder: which rows are duplicates of which, in which split.

Only the documented output files are read (``docs/dedup.md``, "Outputs"), never the dedup code's
internals, so any engine that writes the same files works:

* ``report.json``: the splits, the train/test split names (``parameters``), whether the train
  and test splits both exist (``cross_set``), the ``--against`` reference (``contamination``);
* ``clusters.json``: a list of clusters, each a list of row ids, members in input order;
* ``cluster_shapes.csv`` (when there): its ``kept`` column, the row each cluster kept (the one
  ``--keep`` and the cross-set policy chose; a decontamination records there the row a dedup keeps);
* ``removed.csv``: ``id, split, reason, duplicate_of`` of every dropped row: the members of a
  cluster not in it are the row the cluster keeps (none when all were contaminated); a run with
  ``--against --decontaminate-only`` (a decontamination, ``report.json``'s
  ``contamination.decontaminate_only``) drops the contaminated rows only, so its clusters keep every
  other member;
* ``contamination.csv`` (with ``--against``): ``id, split, reference_id, ...``;
* ``kept.csv``: ``id, split`` of every row the dedup kept, the record of a kept row's split;
* ``skipped.csv`` (when there): ``id, reason`` of the rows under ``--min-tokens`` (reasons
  ``too_short`` and ``empty``), to count how many of the joined rows were too short to compare;
* in a folder without ``kept.csv`` (written before it existed): the deduplicated splits
  (``<split>.jsonl`` / ``<split>.parquet`` / ``dataset/``), only their id column(s), read only
  when the split of a kept row is needed. Such a folder's ``files/`` records no split: with two
  or more splits the split of a kept row cannot be told, and that is an error, not a guess.

Ids are compared as text (:func:`workbench.data.samples.id_text`: ``3`` and ``"3"`` are one id).

Example::

    from workbench.bias.dedup_output import read_dedup_output
    output = read_dedup_output("out/")            # a `workbench dedup ... -o out/` folder
    output.cluster_of["HumanEval/19:26"], output.kept_of_cluster[0], output.contaminated
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from workbench.bias.metric_table import row_id
from workbench.data.samples import id_text
from workbench.errors import DataError
from workbench.formatting import count

#: the files every dedup output folder holds (``docs/dedup.md``)
REQUIRED_FILES = ("report.json", "clusters.json", "removed.csv")


@dataclass
class DedupOutput:
    """What a dedup output folder says about its rows.

    Attributes:
        folder: the folder.
        report: ``report.json``, parsed.
        clusters: each cluster's member ids (text), in ``clusters.json`` order (input order).
        cluster_of: id -> index into :attr:`clusters` (only ids in a cluster).
        position_of: id -> its place in its cluster's member list (only ids in a cluster).
        removed: id -> ``(split, reason)`` of each dropped row (``removed.csv``).
        kept_of_cluster: cluster index -> the id the dedup kept: ``cluster_shapes.csv``'s ``kept``, the
            row ``--keep`` and the cross-set policy chose (a decontamination, ``--decontaminate-only``,
            keeps every member that is not contaminated and records there the one a dedup keeps; a
            folder without that file: its first member that is not contaminated), ``None`` when every
            member was dropped (all contaminated).
        contaminated: id -> the reference ids it duplicates (``contamination.csv``; empty without
            ``--against``).
        splits: the split names of the data (``report.json`` ``splits``).
        train_split / test_split: the names the dedup used for Allamanis' train and test sets.
        has_train_test: both splits exist (``report.json`` has ``cross_set``).
        has_reference: the run had ``--against`` (``report.json`` has ``contamination``).
        unreadable: id -> reason of each row or source file the dedup could not read
            (``unreadable.csv``; empty when the run wrote none). These are in no output split.
        too_short: ids of the rows under ``--min-tokens`` (``skipped.csv`` reasons ``too_short``
            and ``empty``); ``None`` for a folder without ``skipped.csv`` (written before it).
    """

    folder: Path
    report: dict
    clusters: list[list[str]]
    cluster_of: dict[str, int]
    position_of: dict[str, int]
    removed: dict[str, tuple[str, str]]
    kept_of_cluster: list[str | None]
    contaminated: dict[str, list[str]]
    splits: list[str]
    train_split: str
    test_split: str
    has_train_test: bool
    has_reference: bool
    unreadable: dict[str, str] = field(default_factory=dict)
    too_short: set[str] | None = None
    #: ``kept.csv``: id -> split of each row the dedup kept (``None`` for a folder without it)
    kept_split: dict[str, str] | None = field(default=None, repr=False)
    _split_of_kept: dict[str, str] | None = field(default=None, repr=False)
    #: whether the splits of the kept rows are on record: ``True`` with ``kept.csv``; without it,
    #: whether a deduplicated split file was found (known after the first :meth:`split_of`)
    split_files_found: bool | None = None

    def is_cluster_row(self, row_id: str) -> bool:
        """Whether a one-row-per-cluster count takes row ``row_id``: its cluster's kept row
        (:attr:`kept_of_cluster`), or a row in no cluster that the dedup did not drop.

        The one reading of the keeper for ``workbench bias`` and ``workbench correlate --dedup``: on a
        dedup folder it is every clustered row not in ``removed.csv``; on a decontamination, which keeps
        every row that is not contaminated, only the keeper ``cluster_shapes.csv`` records.

        Args:
            row_id: the row's id as text.

        Returns:
            ``True`` for the cluster's kept row or a kept row outside clusters.
        """
        cluster = self.cluster_of.get(row_id)
        if cluster is None:
            return row_id not in self.removed
        return self.kept_of_cluster[cluster] == row_id

    def example_ids(self, limit: int = 3) -> tuple[str, list[str]]:
        """Some ids of the dedup's rows, for a message about ids that do not join.

        Args:
            limit: the most ids returned.

        Returns:
            ``(the file they come from, up to limit ids in its order)``: the kept rows of
            ``kept.csv`` first (every row a dedup did not drop, clustered or not), else the
            dropped rows of ``removed.csv``, else the members of ``clusters.json``; ``("", [])``
            when the folder lists no row at all.
        """
        for name, ids in (("kept.csv", self.kept_split or {}), ("removed.csv", self.removed),
                          ("clusters.json", [i for cluster in self.clusters for i in cluster])):
            if ids:
                return name, list(ids)[:limit]
        return "", []

    @property
    def id_column(self) -> str | None:
        """The column(s) the dedup read its row ids from, comma-separated as its ``--id-column``
        (``report.json`` ``parameters.id_column``); ``None`` for position ids or an older report."""
        return (self.report.get("parameters") or {}).get("id_column")

    @property
    def reference(self) -> str | None:
        """The ``--against`` dataset's name, or ``None``."""
        return self.report["contamination"]["reference"] if self.has_reference else None

    @property
    def rows(self) -> int:
        """Rows of the dedup run (``report.json``: ``overall.files``, else the splits' sum; 0 when it has neither)."""
        overall = self.report.get("overall")
        if isinstance(overall, dict) and overall.get("files"):
            return int(overall["files"])
        return sum(int(split.get("files", 0)) for split in self.report["splits"].values() if isinstance(split, dict))

    @property
    def rows_outside_files(self) -> int | None:
        """Rows of the dedup run in no cluster and not removed (:attr:`rows` less the ids the files
        name), ``None`` when the report has no row count."""
        if not self.rows:
            return None
        return max(0, self.rows - len(set(self.cluster_of) | set(self.removed)))

    @property
    def rows_not_checked(self) -> int:
        """Rows too short to be compared with the reference (counted as clean; 0 without ``--against``)."""
        return int(self.report["contamination"].get("rows_not_checked_too_short", 0)) if self.has_reference else 0

    def too_short_among(self, ids: Sequence[str]) -> int | None:
        """How many of ``ids`` (e.g. the rows joined to a metric table) the dedup found too short
        to compare as token bags (:attr:`too_short`); ``None`` when the folder has no ``skipped.csv``."""
        return None if self.too_short is None else sum(1 for row in ids if row in self.too_short)

    def split_of(self, row_id: str, id_columns: Sequence[str] = ()) -> str | None:
        """The split of row ``row_id``, or ``None`` when the dedup never saw the row.

        A dropped row's split is in ``removed.csv``, a kept row's in ``kept.csv``. A folder written
        before ``kept.csv`` existed: from the deduplicated split files (read once, with
        ``id_columns`` joined by ``:`` as ``workbench dedup --id-column`` joins them), or from a
        default id ``<split>/<row>``.

        Args:
            row_id: the row's id as text.
            id_columns: the id column(s) of the data (the dedup's ``--id-column``), to find kept
                rows in the deduplicated split files.

        Raises:
            DataError: a folder of several splits without ``kept.csv`` lacks every deduplicated
                split file or has only ``files/`` (which records no split), so the split of a
                kept row cannot be told.
        """
        if row_id in self.removed:
            return self.removed[row_id][0]
        if self.kept_split is not None:
            return self.kept_split.get(row_id)
        if self._split_of_kept is None:
            found, self.split_files_found = _kept_row_splits(self.folder, self.splits, id_columns)
            # ids built from other columns than the dedup's are not its ids: the rows its
            # clusters kept must be among them
            kept = [k for k in self.kept_of_cluster if k is not None]
            self._split_of_kept = found if not kept or any(k in found for k in kept) else {}
        found = self._split_of_kept.get(row_id)
        if found is not None:
            return found
        if not self.split_files_found and len(self.splits) == 1:
            # a folder without its deduplicated split (e.g. trimmed): a kept row cannot be told
            # from a row the dedup never saw; with one split it is taken as a row of that split
            return self.splits[0]
        head, _, number = row_id.partition("/")
        if head in self.splits and number.isdigit() and int(number) < self.report["splits"][head].get("files", 0):
            return head
        if not self.split_files_found and len(self.splits) > 1:
            # a kept row of a train/test corpus: only the missing split files say in which split it is
            raise DataError(f"{self.folder}: the dedup output has the splits {', '.join(self.splits)} but none of its "
                            f"deduplicated split files ({', '.join(s.replace('/', '_') + '.jsonl' for s in self.splits)}, "
                            f".parquet or dataset/), so the split of a row it kept (e.g. {row_id!r}) cannot be told; "
                            "restore them or run `workbench dedup` again")
        return None


def read_dedup_output(folder: str | os.PathLike[str]) -> DedupOutput:
    """Read a ``workbench dedup -o FOLDER`` output folder.

    Args:
        folder: the folder.

    Returns:
        a :class:`DedupOutput`.

    Raises:
        DataError: the folder or one of :data:`REQUIRED_FILES` is missing, or a file is not in
            the documented format (the message names the file and what is wrong).
    """
    root = Path(folder)
    if not root.is_dir():
        raise DataError(f"{root}: no such dedup output folder (give the -o folder of `workbench dedup`)")
    missing = [name for name in REQUIRED_FILES if not (root / name).is_file()]
    if missing:
        raise DataError(f"{root}: not a `workbench dedup` output folder: {', '.join(missing)} missing")
    try:
        report = json.loads((root / "report.json").read_text(encoding="utf-8"))
        clusters_raw = json.loads((root / "clusters.json").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DataError(f"{root}: report.json or clusters.json cannot be read ({error})") from error
    if not isinstance(report, dict) or not isinstance(report.get("splits"), dict):
        raise DataError(f"{root / 'report.json'}: no 'splits' table; is this a `workbench dedup` report?")
    if not isinstance(clusters_raw, list) or not all(isinstance(c, list) for c in clusters_raw):
        raise DataError(f"{root / 'clusters.json'}: expected a JSON list of clusters, each a list of ids")
    clusters = [[id_text(member) for member in cluster] for cluster in clusters_raw]
    cluster_of: dict[str, int] = {}
    # a place per member, looked up once: a list search per row is quadratic in a cluster's size
    position_of: dict[str, int] = {}
    for index, cluster in enumerate(clusters):
        for position, member in enumerate(cluster):
            if member in cluster_of:
                raise DataError(f"{root / 'clusters.json'}: id {member!r} is in two clusters")
            cluster_of[member] = index
            position_of[member] = position
    removed = {row["id"]: (row["split"], row["reason"])
               for row in _read_csv(root / "removed.csv", ("id", "split", "reason"))}
    kept_of_cluster = []
    # a decontamination (--against --decontaminate-only) keeps every row that is not contaminated: its clusters
    # describe the in-set duplication and keep all their other rows (one of them counts as the cluster's,
    # one_per_cluster); a report of the version before the flag says so by its clusters' kept_rows
    contamination = report.get("contamination") if isinstance(report.get("contamination"), dict) else None
    largest = report.get("largest_clusters") if isinstance(report.get("largest_clusters"), list) else []
    decontamination = contamination is not None and bool(contamination.get(
        "decontaminate_only", any(isinstance(c, dict) and "kept_rows" in c for c in largest)))
    recorded = _recorded_keepers(root, clusters, removed)
    for index, cluster in enumerate(clusters):
        kept = [member for member in cluster if member not in removed]
        if len(kept) > 1 and not decontamination:
            raise DataError(f"{root}: cluster of {cluster[0]!r} keeps {len(kept)} rows ({', '.join(kept[:3])}); "
                            "removed.csv should list all but one")
        # the keeper the dedup chose (--keep, the cross-set policy), as cluster_shapes.csv records it; a
        # decontamination keeps its other members too. A folder without that file: the one row kept
        # (a decontamination's first member that is not contaminated)
        kept_of_cluster.append(recorded[index] if recorded is not None else (kept[0] if kept else None))
    contaminated: dict[str, list[str]] = {}
    if (root / "contamination.csv").is_file():
        for row in _read_csv(root / "contamination.csv", ("id", "reference_id")):
            contaminated.setdefault(row["id"], []).append(row["reference_id"])
    unreadable: dict[str, str] = {}
    if (root / "unreadable.csv").is_file():
        unreadable = {row["id"]: row["reason"] for row in _read_csv(root / "unreadable.csv", ("id", "reason"))}
    too_short = None
    if (root / "skipped.csv").is_file():
        too_short = {row["id"] for row in _read_csv(root / "skipped.csv", ("id", "reason"))
                     if row["reason"] in ("too_short", "empty")}
    kept_split = None
    if (root / "kept.csv").is_file():
        kept_split = {row["id"]: row["split"] for row in _read_csv(root / "kept.csv", ("id", "split"))}
    parameters = report.get("parameters") or {}
    return DedupOutput(
        folder=root, report=report, clusters=clusters, cluster_of=cluster_of, position_of=position_of, removed=removed,
        kept_of_cluster=kept_of_cluster, contaminated=contaminated, splits=list(report["splits"]),
        train_split=str(parameters.get("train_split", "train")), test_split=str(parameters.get("test_split", "test")),
        has_train_test="cross_set" in report, has_reference="contamination" in report, unreadable=unreadable, too_short=too_short,
        kept_split=kept_split, split_files_found=True if kept_split is not None else None,
    )


def _recorded_keepers(root: Path, clusters: list[list[str]], removed: dict[str, tuple[str, str]]) -> list[str | None] | None:
    """The row each cluster kept, from ``cluster_shapes.csv``'s ``kept`` column (``None`` for a cluster
    whose rows were all contaminated), in ``clusters.json`` order; ``None`` when the folder has no such file
    (written before it) or the file has no ``kept`` column.

    Raises:
        DataError: the file has another number of lines than ``clusters.json`` has clusters, or names as
            kept a row that is not in its cluster or that ``removed.csv`` lists.
    """
    path = root / "cluster_shapes.csv"
    if not path.is_file():
        return None
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if "kept" not in (reader.fieldnames or []):
                return None
            lines = [row["kept"] for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise DataError(f"{path}: cannot be read ({error})") from error
    if len(lines) != len(clusters):
        raise DataError(f"{path}: {count(len(lines), 'line')} for the {count(len(clusters), 'cluster')} of clusters.json; "
                        "both come from one run: run `workbench dedup` again")
    keepers: list[str | None] = []
    for cluster, kept in zip(clusters, lines):
        keeper = id_text(kept) if kept != "" else None
        if keeper is not None and (keeper not in cluster or keeper in removed):
            where = "removed.csv lists it" if keeper in cluster else f"it is not in the cluster of {cluster[0]!r}"
            raise DataError(f"{path}: kept row {keeper!r} of a cluster cannot be its kept row: {where}; "
                            "run `workbench dedup` again")
        keepers.append(keeper)
    return keepers


def _read_csv(path: Path, required: Sequence[str]) -> list[dict[str, str]]:
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            absent = [c for c in required if c not in (reader.fieldnames or [])]
            if absent:
                raise DataError(f"{path}: {'column' if len(absent) == 1 else 'columns'} {', '.join(absent)} missing; it has "
                                f"{reader.fieldnames}")
            return [{k: (id_text(v) if k in ("id", "reference_id", "duplicate_of") else v) for k, v in row.items()}
                    for row in reader]
    except (OSError, UnicodeDecodeError, csv.Error) as error:
        raise DataError(f"{path}: cannot be read ({error})") from error


def _kept_row_splits(root: Path, splits: Sequence[str], id_columns: Sequence[str]) -> tuple[dict[str, str], bool]:
    """(id -> split of the rows in the deduplicated split files (the kept rows), whether any split file was found)."""
    found: dict[str, str] = {}
    files_root = root / "files"
    if files_root.is_dir():
        if len(splits) > 1:
            # a table's rows of every split went to files/<id> alike, and a source folder's path need
            # not name its split: which split a file is in was not recorded
            raise DataError(f"{root}: the dedup output has the splits {', '.join(splits)} and its kept rows only as "
                            "files/, without kept.csv (written by a workbench from before it): the split of a row the "
                            "dedup kept cannot be told; run `workbench dedup` again (it writes kept.csv)")
        for path in files_root.rglob("*"):
            if path.is_file():
                found[path.relative_to(files_root).as_posix()] = splits[0]
        return found, True
    columns = list(id_columns) or ["id"]
    any_file = False
    for split in splits:
        dataset = _split_dataset(root, split)
        any_file = any_file or dataset is not None
        if dataset is None or not set(columns) <= set(dataset.column_names):
            continue
        cells = [dataset.with_format("arrow")[c].to_pylist() for c in columns]
        for parts in zip(*cells):
            found[row_id(parts) or ""] = split
    return found, any_file


def _split_dataset(root: Path, split: str):
    import datasets

    safe = split.replace("/", "_")
    if (root / f"{safe}.jsonl").is_file():
        return datasets.Dataset.from_json(str(root / f"{safe}.jsonl"))
    if (root / f"{safe}.parquet").is_file():
        return datasets.Dataset.from_parquet(str(root / f"{safe}.parquet"))
    if (root / "dataset").is_dir():
        return datasets.load_from_disk(str(root / "dataset")).get(split)
    return None
