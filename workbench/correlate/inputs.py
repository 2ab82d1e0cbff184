"""Turn one scores table, or a scores table plus an execution-results table, into the arrays
``correlate`` works on: rows grouped by task, a label in [0, 1] and one float array per metric.

Unusable values are never dropped silently: rows without a task id or label (and, in a join,
without a sample id) are counted,
metric values that are missing, non-numeric or infinite become NaN and are counted per metric,
and a label outside [0, 1], a non-numeric label, duplicate (task, sample) keys or a join without
overlap raise :class:`~workbench.errors.DataError` with examples.
"""

from __future__ import annotations

import dataclasses
import math
import os
from pathlib import Path
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import datasets
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from workbench.data import LoadedDataset, load_records, require_columns
from workbench.data.codegen_metrics_file import GRADE_SIDE_COLUMNS
from workbench.data.samples import check_unique, id_text
from workbench.data.task_order import canonical_codes
from workbench.errors import DataError, MissingColumnError
from workbench.option_words import in_config_words, option_named, option_set, option_value
from workbench.correlate.length import AUTO_LENGTH, GENERATION_COLUMNS, NO_LENGTH, LengthSource, find_generation_column, measure_lengths
from workbench.correlate.table import CorrelationTable, JoinSummary, RowExclusions
from workbench.formatting import count

#: what ``correlate`` accepts as a table
#: a pandas DataFrame is taken too (as its columns)
TableSource = str | os.PathLike[str] | LoadedDataset | datasets.Dataset | Mapping[str, Sequence[Any]]

#: the execution-status column of ``workbench execute`` results, summarised when present
STATUS_COLUMN = "status"
#: the digest of a row's code that execute and score rows record (:func:`workbench.data.samples.code_digest`)
CODE_DIGEST_COLUMN = "code_sha256"
_EXAMPLES = 5
_OK, _MISSING, _NON_NUMERIC, _NON_FINITE = 0, 1, 2, 3


def as_dataset(
    source: TableSource, *, splits: Iterable[str] | None = None, offline: bool = False
) -> tuple[datasets.Dataset, str]:
    """Load ``source`` as one ``datasets.Dataset`` (all selected splits concatenated).

    Args:
        source: a path, bundled name or hub id (through :func:`workbench.data.load_records`),
            a :class:`LoadedDataset`, a ``datasets.Dataset``, a pandas ``DataFrame`` or a mapping
            column -> values.
        splits: splits to keep (all when empty).
        offline: never contact the Hugging Face hub.

    Returns:
        ``(dataset, description of the source)``.

    Raises:
        DataError: unreadable or empty input (from the loader) or a table with no rows.
    """
    if type(source).__module__.startswith("pandas") and hasattr(source, "to_dict"):
        source = source.to_dict("list")  # a notebook's DataFrame: its columns, as a mapping
    if isinstance(source, datasets.Dataset):
        dataset, name = source, "the dataset"
    else:
        if isinstance(source, Mapping):
            # unequal lengths first: pyarrow's message for them ends in advice about types
            lengths = {str(name): len(values) for name, values in source.items() if hasattr(values, "__len__")}
            if len(set(lengths.values())) > 1:
                shown = ", ".join(f"{name} {length}" for name, length in lengths.items())
                raise DataError(f"the table: its columns have different lengths ({shown}); give every column one "
                                "value per row")
            try:
                table = datasets.Dataset.from_dict(dict(source))
            except (pa.ArrowException, TypeError, ValueError) as error:  # mixed types
                raise DataError(f"the table: its columns cannot be read ({error}); give each column one type") from error
            loaded, name = LoadedDataset("the table", {"train": table}), "the table"
        elif isinstance(source, LoadedDataset):
            loaded, name = source, source.source
        else:
            _refuse_a_score_folder(source)
            loaded = load_records(source, offline=offline)
            name = os.fspath(source)
        loaded = loaded.select_splits(splits)
        parts = list(loaded.splits.values())
        if not parts:
            raise DataError(f"{name}: no splits to read")
        try:
            dataset = parts[0] if len(parts) == 1 else datasets.concatenate_datasets(parts)
        except ValueError as error:  # splits with different columns
            raise DataError(f"{name}: its splits cannot be combined ({error}); pick one with {option_named('split')}") from error
    if len(dataset) == 0:
        raise DataError(f"{name}: the table has no rows")
    return dataset, name


def _refuse_a_score_folder(source: Any) -> None:
    """A ``workbench score`` run folder is not a table: name the file to pass instead (read as a
    folder of data files it fails on its mixed JSON files with a long schema dump)."""
    if isinstance(source, (str, os.PathLike)) and Path(source).is_dir() and (Path(source) / "scores_wide.jsonl").is_file():
        raise DataError(f"{os.fspath(source)} is a workbench score run folder; pass its table of one row per sample: "
                        f"{Path(source) / 'scores_wide.jsonl'}")


def _arrow_column(dataset: datasets.Dataset, column: str) -> pa.ChunkedArray:
    values = dataset.with_format("arrow")[column]
    return values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])


def _python_values(dataset: datasets.Dataset, column: str) -> list[Any]:
    """A column's cells as Python values. A column of an extension type is decoded by
    ``datasets``: in JSONL, numbers mixed with a few texts (``0.5, "N/A"``) or int and text
    ids come as its ``Json`` feature, whose Arrow cells are JSON text (``'"N/A"'``)."""
    array = _arrow_column(dataset, column)
    if isinstance(array.type, pa.BaseExtensionType):
        return list(dataset[column])
    return array.to_pylist()


def _number_status(value: Any) -> tuple[float, int]:
    """``(number, status code)`` of one cell: numbers and booleans as they are, text through
    ``float()`` (surrounding blanks allowed), anything else (lists, dicts) non-numeric."""
    if value is None:
        return math.nan, _MISSING
    if isinstance(value, (bool, int, float)):
        number = float(value)
    elif isinstance(value, str):
        if not value.strip():
            return math.nan, _MISSING
        try:
            number = float(value)
        except ValueError:
            return math.nan, _NON_NUMERIC
    else:
        return math.nan, _NON_NUMERIC
    if math.isnan(number):
        return math.nan, _MISSING
    if math.isinf(number):
        return math.nan, _NON_FINITE
    return number, _OK


def parse_numbers(dataset: datasets.Dataset, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Read a column as floats.

    Numbers and booleans are taken as they are; text is parsed with ``float()`` (surrounding
    blanks allowed), so a CSV column, or a JSONL column of numbers, with a few ``"N/A"``
    cells still works.

    Returns:
        ``(values, status)``: ``(n,)`` floats (NaN where unusable) and ``(n,)`` codes
        0 = ok, 1 = missing (null, empty text, NaN), 2 = non-numeric, 3 = +-inf.
    """
    array = _arrow_column(dataset, column)
    kind = array.type
    if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind) or pa.types.is_null(kind):
        values = pc.cast(array, pa.float64()).to_numpy(zero_copy_only=False).astype(np.float64, copy=True)
        status = np.where(np.isnan(values), _MISSING, _OK)
        status[np.isinf(values)] = _NON_FINITE
    else:  # text, mixed-type (JSON) cells, lists, structs: cell by cell
        cells = [_number_status(value) for value in _python_values(dataset, column)]
        values = np.array([number for number, _ in cells], dtype=np.float64)
        status = np.array([code for _, code in cells], dtype=np.int64)
    values[status != _OK] = np.nan
    return values, status


def _key_texts(dataset: datasets.Dataset, column: str) -> list[str | None]:
    """Column values as join keys (:func:`workbench.data.samples.id_text`: ``3``, ``3.0`` and
    ``"3"`` all become ``"3"``)."""
    return [id_text(value) for value in _python_values(dataset, column)]


def _check_unique(tasks: list[str | None], samples: list[str | None], columns: tuple[str, str], where: str) -> None:
    check_unique(zip(tasks, samples), where=where, columns=columns,
                 hint=f"remove the duplicates, or name the right columns with {option_named('task_column')} / "
                      f"{option_named('sample_column')}")


def _missing_label(label: str, available: list[str], where: str) -> MissingColumnError:
    """The error for a score table without the label column and no execution results to join:
    besides naming the column (``--label``), the usual fix is the results of ``workbench execute``
    (``--results``), whose ``passed`` column is the label; under ``workbench run`` (a results
    option no key sets) the execute stage, whose results the run then joins itself."""
    results = option_named("results", plain="")
    if results:
        join = f"join the execution results of `workbench execute` with {results} (their 'passed' is the label)"
    else:
        join = "add the execute stage to [run] stages, whose results give the label"
    error = MissingColumnError(label, list(available), hint=f"set it with {option_named('label')}, or {join}")
    error.args = (f"{error.args[0]} (in {where})",)
    return error


def _parse_label(dataset: datasets.Dataset, label: str, tasks: list[str | None], where: str,
                 label_kind: str = "outcome") -> tuple[np.ndarray, np.ndarray]:
    """``(values, missing)`` of the label; raises on non-numeric or infinite labels and, for an
    ``"outcome"`` label, on values outside [0, 1] (a graded label may be any finite number)."""
    values, status = parse_numbers(dataset, label)
    check_label(values, status, lambda: _python_values(dataset, label), label, label_kind, where,
                lambda i: f"row {i} ({tasks[i]})")
    return values, status == _MISSING


def label_named(label: str) -> str:
    """How a message names the label column: ``label column 'grade'``; under ``workbench run``
    (:func:`~workbench.option_words.config_words`) also where the run took it from, which may be
    no key of the stage's own table: ``label column 'grade' ([data] label_column)``, ``(the
    execute stage's label)`` or ``([correlate] label)`` only where the config sets that key."""
    if in_config_words():
        return f"label column {label!r} ({option_named('label')})"
    return f"label column {label!r}"


def check_label(values: np.ndarray, status: np.ndarray, cells: Callable[[], list[Any]], label: str, label_kind: str,
                where: str, row_text: Callable[[int], str]) -> None:
    """The checks of a label column, one for ``correlate`` and ``bias``: every cell a finite number
    (or empty), and for an ``"outcome"`` label (0/1 or a pass ratio) within [0, 1]; a graded label
    (``label_kind="graded"``, e.g. human grades 0-4) may be any finite number.

    Args:
        values, status: ``(n,)`` the column as :func:`parse_numbers` reads it.
        cells: the column's raw cells (called only to show a bad one).
        label: the column's name; label_kind: ``"outcome"`` or ``"graded"``.
        where: the table, for the message.
        row_text: row index -> how the message names the row (``row 3 (HumanEval/1)``).

    Raises:
        DataError: naming the column (and, under ``workbench run``, where the label was set:
            :func:`label_named`), up to 3 bad rows with their values, and for a value outside
            [0, 1] how to declare a grade (``--label-kind graded``).
    """
    bad_text = np.flatnonzero((status == _NON_NUMERIC) | (status == _NON_FINITE))
    if bad_text.size:
        raw = cells()
        shown = ", ".join(f"{row_text(int(i))}: {raw[i]!r}" for i in bad_text[:3])
        wanted = "finite numbers (a graded label)" if label_kind == "graded" else "numbers (0/1 or a pass ratio in [0, 1])"
        raise DataError(
            f"{where}: {label_named(label)} must hold {wanted}; "
            f"{count(bad_text.size, 'row')} {'does' if bad_text.size == 1 else 'do'} not, e.g. {shown}"
        )
    outside = np.flatnonzero((status == _OK) & ((values < 0.0) | (values > 1.0)))
    if outside.size and label_kind != "graded":
        shown = ", ".join(f"{row_text(int(i))}: {values[i]:g}" for i in outside[:3])
        raise DataError(
            f"{where}: {label_named(label)} must be 0/1 or a pass ratio in [0, 1]; "
            f"{count(outside.size, 'row')} {'is' if outside.size == 1 else 'are'} outside, e.g. {shown}; "
            f"if it is a grade (human grades 0-4, say), declare it with {option_value('label_kind', 'graded')}"
        )


def _exclusions(status: np.ndarray, raw_column: list[Any] | None, tasks: list[str], input_rows: np.ndarray) -> RowExclusions:
    """Counts by reason, with examples naming the row of the scores input (0-based)."""
    bad = np.flatnonzero(status != _OK)
    examples = tuple(
        {"row": int(input_rows[i]), "task_id": tasks[i], "value": None if raw_column is None else _jsonable(raw_column[i])}
        for i in bad[:_EXAMPLES]
    )
    return RowExclusions(
        missing=int(np.count_nonzero(status == _MISSING)),
        non_numeric=int(np.count_nonzero(status == _NON_NUMERIC)),
        non_finite=int(np.count_nonzero(status == _NON_FINITE)),
        examples=examples,
    )


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return repr(value)[:80]


def _join(
    scores: datasets.Dataset,
    results: datasets.Dataset,
    task_column: str,
    sample_column: str,
    names: tuple[str, str],
    allow_partial: bool = False,
    compare_code: bool = True,
) -> tuple[np.ndarray, np.ndarray, JoinSummary, int, int]:
    """Row indices ``(score_rows, result_rows)`` of matching (task, sample) keys, the summary, how
    many score rows have no task id (an empty cell: no key to join, counted as rows without a task id,
    as without results, not as score rows without a result), and how many have a task id but no
    sample id (null, NaN or blank: no key to join either, counted as rows without a sample id;
    the summary's ``examples["scores_without_sample_id"]`` holds the first three as ``[task, row
    number from 1]``).

    A key match whose two rows both record a ``code_sha256`` (:func:`workbench.data.samples.code_digest`)
    and record different ones pairs a score of some code with the verdict on other code (two
    models' generations of one dataset): it is refused, or with ``allow_partial`` left out and
    counted (``code_mismatches``). Rows where either side lacks the digest (older files) join
    on the key alone; ``compare_code=False`` (results whose digests cover a ``--prompt-column``
    prompt, which score's do not) compares none.

    Raises:
        DataError: no key joins (no score row with a task id has a sample id, or none of their
            keys is in the results); some joined rows record different code and ``allow_partial``
            is off, or all of them do; or fewer than half of the score rows join and
            ``allow_partial`` is off (result rows without scores are fine: a scored subset of
            the executed samples).
    """
    key = (task_column, sample_column)
    score_keys = list(zip(_key_texts(scores, task_column), _key_texts(scores, sample_column)))
    result_keys = list(zip(_key_texts(results, task_column), _key_texts(results, sample_column)))
    _check_unique(*map(list, zip(*score_keys)), key, names[0])
    _check_unique(*map(list, zip(*result_keys)), key, names[1])
    result_index = {k: i for i, k in enumerate(result_keys) if None not in k}
    score_rows, result_rows, unmatched_scores = [], [], []
    without_task = 0
    without_sample: list[tuple[str, int]] = []  # (task, row number from 1)
    for row, k in enumerate(score_keys):
        if k[0] is None:
            without_task += 1
            continue
        if k[1] is None:
            without_sample.append((k[0], row + 1))
            continue
        match = result_index.get(k)
        if match is None:
            unmatched_scores.append(k)
        else:
            score_rows.append(row)
            result_rows.append(match)
    matched = set(result_rows)
    unmatched_results = [k for i, k in enumerate(result_keys) if i not in matched]
    # rows of other code have a key match: counted as such, not as rows without a result
    score_rows, result_rows, mismatches = drop_other_code(scores, results, score_rows, result_rows, score_keys,
                                                          names, allow_partial, compare_code)
    examples = {
        "scores_without_results": [list(map(str, k)) for k in unmatched_scores[:3]],
        "results_without_scores": [list(map(str, k)) for k in unmatched_results[:3]],
        "scores_without_sample_id": [[task, str(number)] for task, number in without_sample[:3]],
    }
    keyed = len(score_keys) - without_task
    if keyed and len(without_sample) == keyed:
        raise DataError(
            f"none of the {count(keyed, 'score row')} of {names[0]} with a task id has a sample id in "
            f"{sample_column!r} (null, NaN or blank): the join with {names[1]} is on ({task_column}, {sample_column}); "
            f"fill the sample ids in, or name the sample id column with {option_named('sample_column')}"
        )
    if not score_rows:
        raise DataError(
            f"no ({task_column}, {sample_column}) key of {names[0]} is in {names[1]}: the join is empty. "
            f"Keys look like {score_keys[:2]} in the scores and {result_keys[:2]} in the results; "
            f"check the files, or set the key columns with {option_named('task_column')} / "
            f"{option_named('sample_column')}"
        )
    # mostly unmatched score rows mean another dataset or ids numbered another way: the few
    # colliding ids pair a score with another sample's verdict (refused as --dedup and bias do)
    if len(unmatched_scores) > len(score_rows) and not allow_partial:
        shown = ", ".join(f"({t}, {s})" for t, s in unmatched_scores[:3])
        raise DataError(
            f"only {len(score_rows)} of the {len(score_keys)} score rows of {names[0]} have a result in {names[1]} "
            f"(without one e.g. {shown}): such a join usually means scores of another dataset or sample ids "
            f"numbered another way, and the ids that do collide pair scores with other samples' verdicts; check "
            f"the files and {option_named('task_column')} / {option_named('sample_column')}, or "
            f"{option_set('allow_partial_join')} if the results really lack most of the scored samples"
        )
    summary = JoinSummary(
        key=key,
        score_rows=len(score_keys),
        result_rows=len(result_keys),
        matched=len(score_rows),
        unmatched_scores=len(unmatched_scores),
        unmatched_results=len(unmatched_results),
        examples=examples,
        code_mismatches=mismatches,
    )
    return (np.asarray(score_rows, dtype=np.int64), np.asarray(result_rows, dtype=np.int64), summary, without_task,
            len(without_sample))


def drop_other_code(scores: datasets.Dataset, results: datasets.Dataset, score_rows: list[int],
                    result_rows: list[int], score_keys: list[tuple[Any, Any]], names: tuple[str, str],
                    allow_partial: bool, compare: bool, *, partial_option: str | None = "allow_partial_join",
                    ) -> tuple[list[int], list[int], int]:
    """The joined row pairs less those whose ``code_sha256`` differs (see :func:`_join`), and how
    many were left out.

    ``partial_option``: the option (field name) the message suggests setting to leave the pairs
    of other code out, worded by :func:`~workbench.option_words.option_set` (``pass
    --allow-partial-join``, or a config key under ``workbench run``); ``None``: a caller without
    one, such as ``workbench score --results``.

    Raises:
        DataError: some pairs differ and ``allow_partial`` is off, or every pair differs.
    """
    if not compare or CODE_DIGEST_COLUMN not in scores.column_names or CODE_DIGEST_COLUMN not in results.column_names:
        return score_rows, result_rows, 0
    score_digests, result_digests = scores[CODE_DIGEST_COLUMN], results[CODE_DIGEST_COLUMN]
    differs = [bool(isinstance(a := score_digests[s], str) and isinstance(b := result_digests[r], str) and a and b and a != b)
               for s, r in zip(score_rows, result_rows)]
    mismatches = sum(differs)
    if not mismatches:
        return score_rows, result_rows, 0
    task, sample = score_keys[score_rows[differs.index(True)]]
    what = (f"{mismatches} of the {len(score_rows)} joined rows of {names[0]} and {names[1]} differ in "
            f"{CODE_DIGEST_COLUMN} (e.g. ({task}, {sample})): the scores and the results are of different code "
            f"(another model's or another run's generations of the same ids, or other {option_named('stop')} "
            f"settings)")
    if mismatches == len(score_rows) or (partial_option is None and not allow_partial):
        raise DataError(f"{what}; pass the results of the same generations")
    if not allow_partial:
        raise DataError(f"{what}; pass the results of the same generations, or {option_set(partial_option)} to "
                        f"leave out the {count(mismatches, 'row')} of other code and correlate the rest")
    kept = [i for i, other in enumerate(differs) if not other]
    return [score_rows[i] for i in kept], [result_rows[i] for i in kept], mismatches


#: workbench's own columns that hold numbers or booleans but score no completion: the flags,
#: counts, seconds, cost, scale bounds and ids that ``workbench score`` writes (``scores.jsonl``
#: and the carried columns of ``scores_wide.jsonl``: :data:`workbench.score.job.ROW_COLUMNS`,
#: :data:`~workbench.score.job.SAMPLE_COLUMNS`) and ``workbench execute`` writes
#: (:data:`workbench.execute.result_file.RESULT_COLUMNS`). The automatic metric choice (no
#: ``--metric``) leaves them out; named with ``--metric`` they are correlated like any column.
#: ``tests/correlate/test_metric_choice.py`` fails when either job writes a column not classified here.
BOOKKEEPING_COLUMNS = frozenset({
    # ids
    "task_id", "sample_id",
    # workbench score: the scale's bounds, per-row counts, tokens, cost and time, the --stop flag
    "scale_min", "scale_max", "parse_failures", "truncated_answers", "llm_calls", "cache_hits", "prompt_tokens",
    "completion_tokens", "tokens", "cost_usd", "seconds", "llm_seconds", "retry_after", "generation_truncated",
    "references_shown",
    # workbench execute: time, peak memory, limits and how the process ended; --repeat's attempts and flaky flag
    "duration_s", "timeout_s", "build_s", "peak_rss_mib", "exit_code", "signal", "attempts", "flaky",
})


#: the human-grade columns of a CoNaLa grade file (:mod:`workbench.data.codegen_metrics_file`) other
#: than the grade itself: its graders' count and spread, the reference's grade; they judge no metric, so the automatic
#: metric choice leaves them out too (named with ``--metric``, they are correlated like any column)
GRADE_COLUMNS = GRADE_SIDE_COLUMNS


def numeric_columns(dataset: datasets.Dataset, exclude: Iterable[str]) -> list[str]:
    """Columns of a numeric or boolean type, except ``exclude``, workbench's own
    :data:`BOOKKEEPING_COLUMNS` and the human-grade columns :data:`GRADE_COLUMNS` (the default metric list)."""
    skip = set(exclude) | BOOKKEEPING_COLUMNS | GRADE_COLUMNS
    out = []
    for name, feature in dataset.features.items():
        dtype = getattr(feature, "dtype", "")
        if name not in skip and (dtype.startswith(("int", "uint", "float")) or dtype == "bool"):
            out.append(name)
    return out


def mostly_numeric_text_columns(dataset: datasets.Dataset, exclude: Iterable[str]) -> dict[str, tuple[int, int, Any]]:
    """Columns that :func:`numeric_columns` leaves out for their type but whose cells are mostly
    numbers (a JSON Lines metric with a few ``"error"`` cells is read as text): name ->
    ``(cells that are not numbers, cells with a value, the first such cell)``; for a note, as the
    automatic metric choice does not take them.

    "Mostly": at least half of the cells with a value parse as finite numbers.
    """
    skip = set(exclude) | BOOKKEEPING_COLUMNS | GRADE_COLUMNS
    found: dict[str, tuple[int, int, Any]] = {}
    for name, feature in dataset.features.items():
        dtype = getattr(feature, "dtype", "")
        if name in skip or dtype.startswith(("int", "uint", "float")) or dtype == "bool":
            continue
        if not isinstance(feature, datasets.Value) and type(feature).__name__ != "Json":
            continue  # lists and structs are no metric
        _, status = parse_numbers(dataset, name)
        present = int(np.count_nonzero(status != _MISSING))
        numbers = int(np.count_nonzero(status == _OK))
        if present and numbers < present and numbers * 2 >= present:
            first = next(i for i, code in enumerate(status) if code not in (_OK, _MISSING))
            found[name] = (present - numbers, present, _python_values(dataset, name)[first])
    return found


def _require_metrics(scores: datasets.Dataset, metrics: Sequence[str], hints: Mapping[str, str], where: str) -> None:
    """Raise :class:`MissingColumnError` for the first metric that is not a column of ``scores``."""
    for metric in metrics:
        if metric in hints and metric not in scores.column_names:
            error = MissingColumnError(metric, scores.column_names, hint=hints[metric])
            error.args = (f"{error.args[0]} (in {where})",)
            raise error
        if metric not in scores.column_names and {"method", "score"} <= set(scores.column_names):
            # scores.jsonl holds one row per (sample, method): the methods are values, not columns
            raise MissingColumnError(metric, scores.column_names, hint=(
                "this looks like a scores.jsonl (one row per sample and method); pass the scores_wide.jsonl next "
                "to it, which has a column per method"))
        require_columns(scores, {option_named("metric"): metric}, where=where)


def prepare_table(
    scores: datasets.Dataset,
    *,
    metrics: Sequence[str],
    label: str,
    task_column: str,
    sample_column: str | None,
    results: datasets.Dataset | None = None,
    names: tuple[str, str] = ("the scores", "the results"),
    length_column: str | None = AUTO_LENGTH,
    length_unit: str = "chars",
    metric_hints: Mapping[str, str] | None = None,
    allow_partial_join: bool = False,
    compare_code: bool = True,
    label_kind: str = "outcome",
) -> CorrelationTable:
    """Validate, join and group the input.

    Args:
        scores: the table with ``task_column`` and the ``metrics`` (and ``label`` in one-table mode).
        metrics: metric columns, at least one.
        label: the execution label column (in ``results`` when given, else in ``scores``).
        task_column: the task id column (in both tables).
        sample_column: the sample id column; required with ``results`` (join key); in one-table
            mode it is only used to reject duplicate (task, sample) keys, and ``None`` skips that.
        results: the execution-results table for two-table mode.
        names: how the two inputs are named in messages.
        length_column: the generation column whose length is correlated with each metric (in
            the scores, else in the results table): a column name, ``"auto"`` (the first of
            :data:`~workbench.correlate.length.GENERATION_COLUMNS` present; when none is, the table
            says so in ``length_note``) or ``"none"``/``None`` (no length analysis).
        length_unit: ``"chars"`` or ``"tokens"`` (see :mod:`workbench.correlate.length`).
        metric_hints: metric -> the hint of its missing-column message, for a metric that
            ``--metric`` does not name (``"the --combine declaration both=rank-mean:a,b names it"``);
            the others say "set it with --metric".
        allow_partial_join: go on when fewer than half of the score rows have a result, and
            leave out (counted) joined rows whose ``code_sha256`` differs rather than refuse.
        compare_code: compare the two sides' ``code_sha256`` where both have one (see
            :func:`_join`); off for results whose digests cover a ``--prompt-column`` prompt.
        label_kind: ``"outcome"`` (labels in [0, 1]) or ``"graded"`` (any finite number).

    Returns:
        a :class:`CorrelationTable`.

    Raises:
        MissingColumnError: a named column is absent (the message lists those present).
        DataError: bad labels, duplicate keys, an empty join or one where fewer than half of the
            score rows join (unless ``allow_partial_join``), joined rows of different code
            (:func:`_join`), no usable rows, a length column
            that holds neither text nor numbers.
    """
    if not metrics:
        raise DataError(f"no metric columns given (name them with {option_named('metric')})")
    for metric in metrics:
        for role, name, column in (("the label", "label", label), ("the task column", "task_column", task_column),
                                   ("the sample column", "sample_column", sample_column)):
            if metric == column:
                # each named where it was set: under workbench run the label may be [data] label_column
                raise DataError(f"{metric!r} is named as a metric ({option_named('metric')}) and is {role} "
                                f"({option_named(name)}): a column cannot be both; leave it out of "
                                f"{option_named('metric')}")
    if len(set(metrics)) != len(metrics):
        raise DataError(f"a metric is named twice in {list(metrics)}")
    join = None
    unkeyed = 0  # score rows without a task id that a join with results leaves out before the table
    unkeyed_samples = 0  # score rows with a task id and without a sample id, likewise
    if results is None:
        require_columns(scores, {option_named("task_column"): task_column}, where=names[0])
        if label not in scores.column_names:
            raise _missing_label(label, scores.column_names, names[0])
        require_columns(scores, {option_named("sample_column"): sample_column}, where=names[0])
        _require_metrics(scores, metrics, metric_hints or {}, where=names[0])
        tasks = _key_texts(scores, task_column)
        if sample_column is not None:
            _check_unique(tasks, _key_texts(scores, sample_column), (task_column, sample_column), names[0])
        label_values, label_missing = _parse_label(scores, label, tasks, names[0], label_kind)
        table = scores
        input_rows = np.arange(len(scores))
        matched_results = None
    else:
        if sample_column is None:
            raise DataError(f"joining scores with execution results needs a sample id column "
                            f"({option_named('sample_column')})")
        require_columns(scores, {option_named("task_column"): task_column,
                                 option_named("sample_column"): sample_column}, where=names[0])
        _require_metrics(scores, metrics, metric_hints or {}, where=names[0])
        require_columns(results, {option_named("task_column"): task_column, option_named("sample_column"): sample_column},
                        where=names[1])
        if label not in results.column_names:
            named = option_named("label")
            # a flag or a config key is set "with"; the words of a label the run set itself ("the execute
            # stage's label") only say where the column was meant to be, as workbench bias says it
            error = (MissingColumnError(label, results.column_names, named) if named.startswith(("--", "["))
                     else MissingColumnError(label, results.column_names, hint=named))
            error.args = (f"{error.args[0]} (in {names[1]})",)
            raise error
        score_rows, result_rows, join, unkeyed, unkeyed_samples = _join(
            scores, results, task_column, sample_column, names, allow_partial=allow_partial_join,
            compare_code=compare_code)
        table = scores.select(score_rows)
        input_rows = score_rows
        matched_results = results.select(result_rows)
        if STATUS_COLUMN in matched_results.column_names:
            statuses = Counter(str(s) for s in matched_results[STATUS_COLUMN])
            join = dataclasses.replace(join, status_counts=dict(statuses.most_common()))
        tasks = _key_texts(table, task_column)
        label_values, label_missing = _parse_label(matched_results, label, tasks, names[1], label_kind)
        if label in table.column_names:
            # a scores file with a label of its own (ICE-Score's `passed`) that the results contradict
            own, own_status = parse_numbers(table, label)
            both = (own_status == _OK) & ~label_missing
            differ = int(np.count_nonzero(both & (own != label_values)))
            join = dataclasses.replace(join, label_disagreements=(differ, int(np.count_nonzero(both))))
    length_table = table if results is None else _length_table(table, matched_results, length_column)
    task_missing = np.array([t is None for t in tasks], dtype=bool)
    keep = ~label_missing & ~task_missing
    if not keep.any():
        raise DataError(
            f"no usable rows: {count(int(label_missing.sum()), 'row')} {'lacks' if int(label_missing.sum()) == 1 else 'lack'} "
            f"the label {label!r} and "
            f"{int(task_missing.sum())} {'lacks' if int(task_missing.sum()) == 1 else 'lack'} the task id {task_column!r}"
        )
    kept = np.flatnonzero(keep)
    # tasks numbered in one order whatever the order of the rows: the draws are per task number
    task_ids, task_codes = canonical_codes([tasks[i] for i in kept])
    codes = np.array(task_codes, dtype=np.int64)
    if sample_column is None:
        grouping = np.argsort(codes, kind="stable")
    else:  # within a task by sample id, so sums over rows are made in one order (equal to the last bit)
        samples = _key_texts(table, sample_column)
        grouping = np.lexsort((np.array(canonical_codes([samples[i] for i in kept])[1], dtype=np.int64), codes))
    rows = kept[grouping]
    row_task = codes[grouping]
    kept_tasks = [tasks[i] for i in rows]
    metric_values: dict[str, np.ndarray] = {}
    exclusions: dict[str, RowExclusions] = {}
    for metric in metrics:
        values, status = parse_numbers(table, metric)
        values, status = values[rows], status[rows]
        raw = _python_values(table, metric) if np.any(status != _OK) else None
        metric_values[metric] = values
        exclusions[metric] = _exclusions(
            status, [raw[i] for i in rows] if raw is not None else None, kept_tasks, input_rows[rows]
        )
    where = names[0] if results is None else f"{names[0]} or {names[1]}"
    lengths, length_source, length_note = _lengths(length_table, length_column, length_unit, where)
    return CorrelationTable(
        task_ids=task_ids,
        row_task=row_task,
        label=label_values[rows],
        metrics=metric_values,
        exclusions=exclusions,
        rows=len(table) + unkeyed + unkeyed_samples,
        excluded_missing_label=int((label_missing & ~task_missing).sum()),
        excluded_missing_task=int(task_missing.sum()) + unkeyed,
        excluded_missing_sample=unkeyed_samples,
        join=join,
        lengths=None if lengths is None else lengths[rows],
        length_source=length_source,
        length_note=length_note,
        label_kind=label_kind,
    )


def _length_table(scores: datasets.Dataset, results: datasets.Dataset, length_column: str | None) -> datasets.Dataset:
    """The matched table that holds the length column: the scores first, else the results."""
    if length_column in (None, NO_LENGTH):
        return scores
    if length_column == AUTO_LENGTH:
        return scores if find_generation_column(scores.column_names) or not find_generation_column(results.column_names) else results
    return scores if length_column in scores.column_names or length_column not in results.column_names else results


def _lengths(
    table: datasets.Dataset, length_column: str | None, unit: str, where: str
) -> tuple[np.ndarray | None, LengthSource | None, str | None]:
    """``(lengths of every row of table, source, note)``; the note says why there are none."""
    if length_column in (None, NO_LENGTH):
        return None, None, f"no length analysis: switched off ({option_value('length_column', NO_LENGTH)})"
    detected = length_column == AUTO_LENGTH
    column = find_generation_column(table.column_names) if detected else length_column
    if column is None:
        return None, None, (
            f"no length analysis: {where} has no generation column (looked for "
            f"{', '.join(GENERATION_COLUMNS)}); name it with {option_value('length_column', 'COLUMN')}, or switch it "
            f"off with {option_value('length_column', NO_LENGTH)}"
        )
    require_columns(table, {option_named("length_column"): column}, where=where)
    lengths, _, used_unit = measure_lengths(_python_values(table, column), unit, column)
    return lengths, LengthSource(column=column, unit=used_unit, detected=detected), None
