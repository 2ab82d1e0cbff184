"""One row per near-duplicate cluster: the rows ``workbench correlate --dedup DIR`` correlates
next to all rows, so a user sees whether duplicated generations moved a judge's tau.

A cluster of ``workbench dedup``'s ``clusters.json`` counts once, with the row the dedup kept
(Allamanis 2019, Sec. 2: one file per cluster; :func:`workbench.bias.settings.one_per_cluster`);
a cluster whose kept row is not in the table drops out (no removed member stands in); a row in
no cluster stays. Rows are matched to the dedup's ids as ``workbench dedup --id-column``
built them (default: the task and sample columns joined with ``:``, what ``workbench run`` uses).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import datasets
import numpy as np

from workbench.errors import DataError, MissingColumnError
from workbench.option_words import option_named, option_set, option_value


@dataclass(frozen=True)
class ClusterSelection:
    """Which rows stand for their clusters.

    Attributes:
        dedup_output: the dedup folder.
        id_columns: the columns the row ids were built from.
        rows: rows of the table; kept: rows left (one per cluster and every row in no cluster).
        rows_in_clusters: rows in a cluster; clusters: clusters with a row here.
        unknown_ids: rows whose id the dedup output does not have (kept: not known duplicates).
        clusters_without_kept_row: clusters with a row here but not the row the dedup kept; they drop
            out (the rows the dedup removed never stand in), as a kept row with an empty cell drops out
            of that metric.
        absent_kept_rows: up to 3 ids of those kept rows, for the note (not in :meth:`to_dict`).
        positions: the 0-based positions in the table of the rows kept, ascending (not in :meth:`to_dict`).
    """

    dedup_output: str
    id_columns: tuple[str, ...]
    rows: int
    kept: int
    rows_in_clusters: int
    clusters: int
    unknown_ids: int
    clusters_without_kept_row: int = 0
    positions: tuple[int, ...] = field(default=(), repr=False, compare=False)
    absent_kept_rows: tuple[str, ...] = field(default=(), repr=False, compare=False)

    def to_dict(self) -> dict:
        fields = {k: v for k, v in self.__dict__.items() if k not in ("positions", "absent_kept_rows")}
        return {**fields, "id_columns": list(self.id_columns), "rows_left_out": self.rows - self.kept}

    def kept_among_first(self, n: int) -> int:
        """How many of the table's first ``n`` rows are kept: where a method has values on the first
        ``n`` rows only (a score run's ``method_limit``), the kept rows it has values on, by design.

        Example:
            >>> ClusterSelection("dd", ("task_id",), 5, 3, 2, 1, 0, positions=(0, 2, 4)).kept_among_first(3)
            2
        """
        return int(np.searchsorted(np.asarray(self.positions, dtype=np.int64), n, side="left"))


def one_row_per_cluster(dataset: datasets.Dataset, dedup_output: str | os.PathLike[str],
                        id_columns: Sequence[str], *,
                        allow_partial_join: bool = False) -> tuple[datasets.Dataset, ClusterSelection]:
    """The rows of ``dataset`` with each near-duplicate cluster collapsed to one row.

    Args:
        dataset: the scores table.
        dedup_output: a ``workbench dedup -o`` folder.
        id_columns: the column(s) whose values (joined with ``:``) are the dedup's row ids.
        allow_partial_join: go on when more rows are unknown to the dedup output than known
            (``workbench bias``'s rule; by default a DataError).

    Returns:
        ``(the selected rows, what was selected)``.

    Raises:
        MissingColumnError: an id column is absent; DataError: the folder is not a dedup output,
            or no row's id is in it (the ids were built another way), or fewer than half of them
            are and ``allow_partial_join`` is off.
    """
    from workbench.bias.dedup_output import read_dedup_output
    from workbench.bias.metric_table import row_id
    from workbench.bias.settings import one_per_cluster

    for column in id_columns:
        if column not in dataset.column_names:
            raise MissingColumnError(column, dataset.column_names, option_named("dedup_id_column"))
    output = read_dedup_output(dedup_output)
    cells = [dataset.with_format("arrow")[c].to_pylist() for c in id_columns]
    ids = [row_id(parts) or "" for parts in zip(*cells)]
    cluster = np.array([output.cluster_of.get(i, -1) for i in ids], dtype=np.int64)
    position = np.array([output.position_of.get(i, 0) for i in ids], dtype=np.int64)
    # the keeper the dedup recorded, as workbench bias reads it (a decontamination keeps more than one row)
    kept = np.array([output.is_cluster_row(i) for i in ids], dtype=bool)
    strangers = [i for i, c in zip(ids, cluster) if c < 0 and output.split_of(i, id_columns) is None]
    unknown = len(strangers)
    if unknown == len(ids):
        theirs = next(iter(output.cluster_of), None) or next(iter(output.removed), None)
        shown = f"; its ids look like {theirs!r}" if theirs else ""
        made_with = f" (it was made with {option_value('id_column', output.id_column)})" if output.id_column else ""
        raise DataError(f"{dedup_output}: none of the table's row ids is in this dedup output (ids from "
                        f"{','.join(id_columns)}, e.g. {ids[0]!r}{shown}{made_with}); set {option_named('dedup_id_column')} as "
                        f"the dedup's {option_named('id_column')}, and check that the ids are written alike (007 vs 7)")
    # a mostly unknown table (007 vs 7) would keep every unknown row as unique: a "deduplicated"
    # correlation that is the undeduplicated one; refused as workbench bias refuses it
    if unknown > len(ids) - unknown and not allow_partial_join:
        shown = ", ".join(repr(i) for i in strangers[:3])
        raise DataError(f"{dedup_output}: only {len(ids) - unknown} of the table's {len(ids)} row ids are in this dedup "
                        f"output (ids from {','.join(id_columns)}; unknown e.g. {shown}); such a join usually means ids "
                        f"written another way (007 vs 7) or another dataset: check {option_named('dedup_id_column')}, or "
                        f"{option_set('allow_partial_join')} if the table really has rows the dedup never saw")
    # only the row the dedup kept stands for its cluster: a cluster whose kept row is absent from the table
    # drops out, as one whose kept row has an empty cell drops out of that metric (docs/correlate.md); a
    # member the dedup removed never stands in (one_per_cluster takes one row of an id listed twice). A row
    # in no cluster stays, also one the dedup removed as contaminated (--against), as workbench bias counts it
    chosen = one_per_cluster(cluster, position, kept, kept | (cluster < 0))
    positions = np.flatnonzero(chosen).tolist()
    present = set(np.unique(cluster[cluster >= 0]).tolist())
    represented = set(np.unique(cluster[chosen & (cluster >= 0)]).tolist())
    # (a cluster the dedup kept no row of, every member contaminated, is no absent kept row)
    absent = [output.kept_of_cluster[c] for c in sorted(present - represented) if output.kept_of_cluster[c] is not None]
    selection = ClusterSelection(
        dedup_output=str(dedup_output), id_columns=tuple(id_columns), rows=len(ids), kept=int(chosen.sum()),
        rows_in_clusters=int(np.count_nonzero(cluster >= 0)), clusters=int(np.unique(cluster[cluster >= 0]).size),
        unknown_ids=unknown, clusters_without_kept_row=len(absent), positions=tuple(positions),
        absent_kept_rows=tuple(str(row) for row in absent[:3]),
    )
    return dataset.select(positions), selection
