"""The per-row metric values a bias analysis reads, joined to a dedup output by row id.

Any table the loaders read works (:func:`workbench.data.load_records`): ``workbench execute``
results (``passed``), a ``workbench score`` table, or a user's own per-file accuracy / loss /
BLEU column. Each row's id is built as ``workbench dedup --id-column`` builds it (one column's
value, or several columns' values joined with ``:``), so the rows join the dedup's ids.

Nothing is dropped silently: a metric row whose id the dedup never saw is counted and listed
(:attr:`MetricTable.unjoined`), an empty cell is counted per metric (``missing``), and a cell that
is not a number (text, a list, infinity) is an error that names the column and the first bad row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from workbench.data.samples import SAMPLE_COLUMN, id_text, sample_numbers
from workbench.errors import DataError, MissingColumnError
from workbench.formatting import count
from workbench.option_words import option_named, option_value

#: how many unjoined ids a report lists
LISTED_IDS = 20


def row_id(parts: Sequence[object]) -> str | None:
    """A row's id from its id cells, as ``workbench dedup`` builds it: one cell as text, several
    joined with ``:`` (``("HumanEval/0", 17)`` -> ``"HumanEval/0:17"``); ``None`` if a cell is empty.

    Example:

    >>> row_id(["HumanEval/0", 17]), row_id([3.0]), row_id([None])
    ('HumanEval/0:17', '3', None)
    """
    if any(p is None for p in parts):
        return None
    if len(parts) == 1:
        return id_text(parts[0])
    return ":".join(str(p) for p in parts)


@dataclass
class MetricTable:
    """Metric values by row id.

    Attributes:
        source: where the table came from (for messages).
        ids: ``(n,)`` row ids (text), unique.
        values: metric name -> ``(n,)`` floats, NaN where the cell is empty.
        missing: metric name -> how many cells were empty.
        tasks: ``(n,)`` task ids (text) when a task column was read, else ``None``.
        rows: rows read; without_id: rows whose id cells were empty (left out, counted).
        numbered_samples: the table has no ``sample_id`` column, so its rows were numbered per
            task in file order to build ``TASK:sample_id`` ids.
        aliases: ``(n,)`` each row's id built from ``alias_columns`` (e.g. ``task_id:sample_id``,
            to join ``workbench execute`` results that lack the id column), ``None`` where a
            cell is empty; ``None`` when not asked for or the table lacks those columns.
    """

    source: str
    ids: list[str]
    values: dict[str, np.ndarray]
    missing: dict[str, int]
    tasks: list[str] | None
    rows: int
    without_id: int
    numbered_samples: bool = False
    aliases: list[str | None] | None = None


def read_metric_table(
    source: object,
    *,
    metrics: Sequence[str],
    id_columns: Sequence[str],
    task_column: str | None = None,
    splits: Sequence[str] | None = None,
    offline: bool = False,
    flags: Mapping[str, str] | None = None,
    alias_columns: Sequence[str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> MetricTable:
    """Read the metric columns of a table, keyed by row id.

    Args:
        source: a path, bundled name, hub id, :class:`~workbench.data.LoadedDataset`,
            ``datasets.Dataset`` or mapping column -> values (as :func:`workbench.correlate.correlate` takes).
        metrics: the metric columns (none when the only one, the label, comes from ``--results``:
            :func:`workbench.bias.job.run_bias` checks that one is named).
        id_columns: the column(s) whose values make the row id (the dedup's ``--id-column``);
            ``(TASK, "sample_id")`` on a table without ``sample_id`` numbers each task's samples
            0, 1, ... in row order, as ``workbench dedup``, ``execute`` and ``score`` do.
        task_column: a task id column for a task-level bootstrap (``None``: not read).
        splits: splits of the table to read (all when empty).
        offline: never contact the Hugging Face hub.
        flags: the option that named a column of ``metrics``, for messages (default ``--metric``;
            e.g. ``{"passed": "--label"}``).
        alias_columns: columns whose values make a second id per row (:attr:`MetricTable.aliases`);
            ignored when the table lacks one of them.
        labels: column of ``metrics`` -> its label kind (``"outcome"`` or ``"graded"``): that
            column is the label and is checked as ``workbench correlate`` checks one
            (:func:`workbench.correlate.inputs.check_label`: finite numbers, within [0, 1] for an
            outcome), its messages calling it the label column.

    Returns:
        a :class:`MetricTable`.

    Raises:
        MissingColumnError: a named column is absent (the message lists those present).
        DataError: duplicate ids, a metric cell that is not a finite number
            (naming the column, the row and the value), a label of ``labels`` that fails its
            checks (naming the column, the rows and their values), an empty task cell (naming the
            row), an empty table.
    """
    from workbench.correlate.inputs import as_dataset, check_label, parse_numbers

    dataset, name = as_dataset(source, splits=splits, offline=offline)
    numbered = False
    if (len(id_columns) == 2 and id_columns[1] == SAMPLE_COLUMN and SAMPLE_COLUMN not in dataset.column_names
            and id_columns[0] in dataset.column_names):
        # no sample id column: number each task's samples in file order, as dedup, execute and score do
        dataset = dataset.add_column(SAMPLE_COLUMN, sample_numbers(dataset[id_columns[0]]))
        numbered = True
    present = dataset.column_names
    for column, flag in [*((m, (flags or {}).get(m) or option_named("metric")) for m in metrics),
                         *((c, option_named("id_column")) for c in id_columns),
                         *([(task_column, option_named("task_column"))] if task_column else [])]:
        if column not in present:
            # a flag or a config key is set "with"; the words of an option the run set itself are no
            # setting ("the execute stage's label"): they only say where the column was meant to be
            error = (MissingColumnError(column, present, flag) if flag.startswith(("--", "["))
                     else MissingColumnError(column, present, hint=flag))
            error.args = (f"{name}: {error.args[0]}",)  # which table: the metrics, or the --results
            raise error
    cells = [dataset.with_format("arrow")[c].to_pylist() for c in id_columns]
    ids = [row_id(parts) for parts in zip(*cells)]
    keep = np.array([i is not None for i in ids], dtype=bool)
    repeated = [i for i, times in Counter(i for i in ids if i is not None).items() if times > 1]
    if repeated:
        raise DataError(f"{name}: {count(len(repeated), 'row id')} of {option_value('id_column', ','.join(id_columns))} "
                        f"{'occurs' if len(repeated) == 1 else 'occur'} more than once "
                        f"(e.g. {', '.join(map(repr, repeated[:3]))}); the join with the dedup output needs unique ids")
    values: dict[str, np.ndarray] = {}
    missing: dict[str, int] = {}
    for metric in metrics:
        numbers, status = parse_numbers(dataset, metric)
        if metric in (labels or {}):  # the label: correlate's checks and words, rows named as here
            check_label(numbers, status, lambda: dataset[metric], metric, labels[metric], name,
                        lambda i: f"row {i + 1} (counting from 1; id {ids[i]!r})")
        bad = np.flatnonzero(status >= 2)  # 2: not a number, 3: infinite
        if bad.size:
            first = int(bad[0])
            shown = dataset[first][metric]
            what = "is infinite" if status[first] == 3 else "is not a number"
            raise DataError(f"{name}: metric column {metric!r} must hold numbers, but row {first + 1} "
                            f"(counting from 1; id {ids[first]!r}) {what}: {shown!r} ({count(bad.size, 'such row', 'such rows')}); bias "
                            "averages every row, so empty such cells (missing values are counted) or fix them")
        values[metric] = numbers[keep]
        missing[metric] = int(np.count_nonzero(np.isnan(values[metric])))
    tasks = None
    if task_column:
        every_task = [id_text(t) for t in dataset.with_format("arrow")[task_column].to_pylist()]
        # a row without a task cannot be resampled with its task nor called a clean or a contaminated task
        empty = [index for index, (task, k) in enumerate(zip(every_task, keep)) if k and not task]
        if empty:
            first = empty[0]
            raise DataError(f"{name}: {option_named('task_column')} {task_column!r} is empty in {count(len(empty), 'row')}, first row {first + 1} "
                            f"(counting from 1; id {ids[first]!r}); give every row its task, or leave {option_named('task_column')} out to resample "
                            "duplicate clusters")
        tasks = [t for t, k in zip(every_task, keep) if k]
    aliases = None
    if alias_columns and set(alias_columns) <= set(present):
        alias_cells = [dataset.with_format("arrow")[c].to_pylist() for c in alias_columns]
        aliases = [row_id(parts) for parts, k in zip(zip(*alias_cells), keep) if k]
    return MetricTable(source=name, ids=[i for i in ids if i is not None], values=values, missing=missing,
                       tasks=tasks, rows=len(ids), without_id=int(np.count_nonzero(~keep)), numbered_samples=numbered,
                       aliases=aliases)

