"""The wide score table ``workbench correlate`` reads, built from a run's ``scores.jsonl``
(the row files themselves are written by :class:`workbench.io.JsonlWriter`)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.data.samples import SampleKey, row_key
from workbench.io import atomic_open, read_jsonl

if TYPE_CHECKING:
    from workbench.score.base import Sample

#: the files of a ``workbench score`` run folder (described in :mod:`workbench.score.job`)
SCORES_FILE = "scores.jsonl"
WIDE_SCORES_FILE = "scores_wide.jsonl"
TRACES_FILE = "traces.jsonl"
RUN_FILE = "run.json"
#: the finished rows of samples a resumed run no longer selects (:func:`keep_current_rows`)
UNSELECTED_FILE = "scores.unselected.jsonl"


def unselected_path(scores_path: str | os.PathLike[str]) -> Path:
    """Where a resumed run keeps the finished rows of samples it no longer selects
    (:data:`UNSELECTED_FILE` next to ``scores.jsonl``)."""
    return Path(scores_path).with_name(UNSELECTED_FILE)


def keep_current_rows(scores_path: str | os.PathLike[str],
                      refresh: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                      selected: Callable[[dict[str, Any]], bool] | None = None) -> int:
    """Rewrite ``scores.jsonl`` with only the current row of each (task_id, sample_id, method).

    A run resumed with ``retry_failed`` appends the new row of a sample it scores again; the
    error row it replaces is then no longer current. Reading the file (pandas, ``jq``) would
    count that sample twice, so the superseded rows are dropped: the newest row of a key is
    kept where it stands, the file is replaced atomically (a crash leaves the old file, which
    the next resume or run rewrites the same way). The failed attempts' traces stay in
    ``traces.jsonl`` (one per attempt, the last being the current one).

    With ``selected`` (a resumed run), the rows it refuses (samples a smaller ``--limit`` no
    longer selects) move to :func:`unselected_path` (``scores.unselected.jsonl``) instead, and the
    rows set aside there by an earlier resume that ``selected`` accepts come back (older than
    the rows of ``scores.jsonl``): the tables hold the run's selection, and no finished row is
    lost. Each row is written to the file it moves to before it leaves the other, so a crash in
    between leaves a row in both files, which the next resume reads as one (the newest wins).

    Args:
        scores_path: the run's ``scores.jsonl`` (nothing is done when it is missing).
        refresh: gives a kept row as it is to be now (a resumed run's rows take the carried
            columns the samples hold now), returning the row itself when it is unchanged.
        selected: whether a row belongs to the run's selection (``None``: every row does, and
            the file set aside is neither read nor written).

    Returns:
        the number of rows this call moved out of ``scores.jsonl`` into the file set aside (0
        without ``selected``; rows an earlier call set aside that stay there are not counted).
    """
    aside = unselected_path(scores_path)
    earlier = list(read_jsonl(aside)) if selected is not None and aside.exists() else []
    if not os.path.exists(scores_path) and not earlier:
        return 0
    rows = list(read_jsonl(scores_path)) if os.path.exists(scores_path) else []
    combined = [*earlier, *rows]
    newest: dict[tuple[Any, ...], int] = {}
    for index, row in enumerate(combined):
        newest[(*row_key(row), row.get("method"))] = index
    kept = [combined[index] for index in sorted(newest.values())]
    outside: list[dict[str, Any]] = []
    moved = 0
    if selected is not None:
        outside = [row for row in kept if not selected(row)]
        kept = [row for row in kept if selected(row)]
        set_aside_before = {id(row) for row in earlier}
        moved = sum(id(row) not in set_aside_before for row in outside)
        if moved:
            # rows leaving scores.jsonl: in the file set aside (beside those it held) before they leave
            _write_rows(aside, [*earlier, *outside])
    if refresh is not None:
        kept = [refresh(row) for row in kept]
    if not (len(kept) == len(rows) and all(new is old for new, old in zip(kept, rows))):
        _write_rows(scores_path, kept)
    # rows coming back leave the file set aside only once scores.jsonl holds them
    if outside:
        _write_rows(aside, outside)
    elif selected is not None:
        aside.unlink(missing_ok=True)
    return moved


def _write_rows(path: str | os.PathLike[str], rows: list[dict[str, Any]]) -> None:
    """Replace ``path`` with ``rows`` as JSON Lines, atomically."""
    with atomic_open(path) as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def input_order(samples: Sequence[Sample]) -> dict[SampleKey, int]:
    """Each sample's place in its input, for :func:`write_wide_table`: its
    :attr:`~workbench.score.base.Sample.position` (file order, also for a ``--select stratified``
    pick), or, when a sample has none (samples made by hand), its index in ``samples``."""
    if all(sample.position is not None for sample in samples):
        return {sample.key: sample.position for sample in samples}  # type: ignore[misc]
    return {sample.key: index for index, sample in enumerate(samples)}


def write_wide_table(
    scores_path: str | os.PathLike[str], wide_path: str | os.PathLike[str], row_columns: tuple[str, ...],
    order: Mapping[SampleKey, int] | None = None,
) -> int:
    """Write one row per (task_id, sample_id) with one score column per method.

    ``scores.jsonl`` holds one row per (sample, method); ``workbench correlate`` wants one row
    per sample with a column per metric. A method's column is its ``score`` when the row's
    status is ``ok`` and ``null`` otherwise (so failures are counted as missing, never as 0);
    carried input columns (``passed``, ...; every column not in ``row_columns``) are kept. The
    newest row of a (task, sample, method) wins (:func:`keep_current_rows` leaves only that one).

    Args:
        scores_path: the run's ``scores.jsonl``.
        wide_path: the file to write (JSON Lines), replaced atomically.
        row_columns: the per-method columns of ``scores.jsonl`` (not carried into the table).
        order: each sample's input position (:func:`input_order`): the rows follow it, as users
            paste them next to their data, not ``scores.jsonl``'s order (the order the workers
            finished in, a resumed run's rows after the earlier ones); samples without a position
            follow, in ``scores.jsonl``'s order. ``None``: ``scores.jsonl``'s order.

    Returns:
        the number of rows written.
    """
    samples: dict[SampleKey, dict[str, Any]] = {}
    for row in read_jsonl(scores_path):
        key = row_key(row)
        wide = samples.setdefault(key, {"task_id": row["task_id"], "sample_id": row["sample_id"]})
        wide.update({k: v for k, v in row.items() if k not in row_columns})
        wide[row["method"]] = row["score"] if row.get("status") == "ok" else None
    rows = list(samples.items())
    if order is not None:
        last = len(order)
        rows.sort(key=lambda item: order.get(item[0], last))  # stable: the unplaced keep their order
    with atomic_open(wide_path) as handle:
        for _, wide in rows:
            handle.write(json.dumps(wide) + "\n")
    return len(samples)
