"""workbench.data.samples: the sample key, per-task numbering and duplicate checks, and that
``execute``, ``score`` and the report number the same file the same way (real loading)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.data.samples import (
    BaseSample,
    DuplicateSampleError,
    MissingIdError,
    SampleNumbering,
    check_unique,
    id_text,
    number_samples,
    resolve_sample_column,
    row_key,
    sample_key,
)
from workbench.errors import DataError


def test_ids_compare_as_text():
    assert sample_key("HumanEval/0", 3) == sample_key("HumanEval/0", 3.0) == sample_key(" HumanEval/0 ", "3")
    assert sample_key("T", 3.5) == ("T", "3.5")
    assert sample_key(None, 1) == (None, "1")
    assert row_key({"task_id": "T", "sample_id": 2, "x": 1}) == ("T", "2")
    assert BaseSample("T", 4).key == ("T", "4")


def test_missing_sample_ids_are_numbered_per_task_in_file_order():
    rows = [{"task": "B"}, {"task": "A"}, {"task": "B"}, {"task": 7}, {"task": "A"}, {"task": "B"}]
    numbered = [(task, sample) for task, sample, _ in number_samples(rows, "task", None)]
    assert numbered == [("B", 0), ("A", 0), ("B", 1), ("7", 0), ("A", 1), ("B", 2)]
    given = [(task, sample) for task, sample, _ in number_samples([{"task": "A", "id": "x"}], "task", "id")]
    assert given == [("A", "x")]
    numbering = SampleNumbering()
    assert [numbering.next_id(t) for t in ("A", "A", 1, "1")] == [0, 1, 0, 1]  # tasks compared as text


def test_an_absent_default_sample_column_means_numbering():
    assert resolve_sample_column(["task_id", "code"], "sample_id") is None
    assert resolve_sample_column(["task_id", "sample_id"], "sample_id") == "sample_id"
    assert resolve_sample_column(["task_id"], "my_id") == "my_id"  # named on purpose: the caller's error
    assert resolve_sample_column(["task_id", "sample_id"], None) is None


def test_duplicate_keys_are_counted_and_named():
    keys = [("T", "0"), ("T", "1"), ("T", "0"), ("U", "0"), ("T", "0"), ("U", "0"), (None, "0"), (None, "0")]
    with pytest.raises(DuplicateSampleError, match=r"the data: 3 rows repeat a \(task, id\) key .*\(T, 0\), \(U, 0\)"
                                                  r".*\(fix it\)") as caught:
        check_unique(keys, where="the data", columns=("task", "id"), hint="fix it")
    assert caught.value.duplicates == [("T", "0"), ("U", "0")]
    assert isinstance(caught.value, DataError)
    check_unique([sample_key("T", 0), sample_key("T", 1.0), (None, "0"), (None, "0")], where="x")  # no error


def _generations(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return str(path)


ROWS = [  # no sample_id column: both jobs number 0, 1, ... per task
    {"task_id": "HumanEval/1", "completion": "    return 1\n", "generation": "    return 1\n", "reference": "r"},
    {"task_id": "HumanEval/0", "completion": "    return 0\n", "generation": "    return 0\n", "reference": "r"},
    {"task_id": "HumanEval/1", "completion": "    return 2\n", "generation": "    return 2\n", "reference": "r"},
]


def test_execute_score_and_the_report_number_one_file_alike(tmp_path):
    from workbench.execute.job import ExecutionConfig
    from workbench.execute.job import load_samples as load_execution_samples
    from workbench.report.run_folder import _add_keys
    from workbench.score.job import load_samples as load_scoring_samples

    source = _generations(tmp_path / "gen.jsonl", ROWS)
    notes: list[str] = []
    executed = [s.key for s in load_execution_samples(source, ExecutionConfig(), notes)]
    scored = [s.key for s in load_scoring_samples(source)]
    report_rows = [dict(r) for r in ROWS]
    _add_keys(report_rows, "task_id", "sample_id")
    assert executed == scored == [row_key(r) for r in report_rows] == [
        ("HumanEval/1", "0"), ("HumanEval/0", "0"), ("HumanEval/1", "1")]
    assert "numbered 0, 1, ... per task" in notes[0]


def test_both_loaders_refuse_a_repeated_sample_id(tmp_path):
    from workbench.execute.job import ExecutionConfig
    from workbench.execute.job import load_samples as load_execution_samples
    from workbench.score.job import load_samples as load_scoring_samples

    rows = [{**row, "sample_id": 5 if i != 1 else 6} for i, row in enumerate(ROWS)]
    rows[2]["sample_id"] = 5.0  # the same id once read as a float
    source = _generations(tmp_path / "dup.jsonl", rows)
    with pytest.raises(DuplicateSampleError, match=r"1 row repeats .*\(HumanEval/1, 5\).*twice"):
        load_execution_samples(source, ExecutionConfig(), [])
    with pytest.raises(DuplicateSampleError, match=r"1 row repeats .*\(HumanEval/1, 5\).*--sample-column"):
        load_scoring_samples(source)


def test_a_missing_id_is_none_never_the_text_none_or_nan():
    for missing in (None, float("nan"), "", "  "):
        assert id_text(missing) is None
        assert sample_key(missing, missing) == (None, None)
    assert id_text("None") == "None" and id_text(0.0) == "0"  # text as written is kept


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_both_loaders_refuse_rows_without_a_task_id_naming_them(tmp_path, suffix):
    """A null, NaN (a CSV/parquet gap in a number column) or blank task id was read as the task
    "None" / "nan" / "": score scored it silently, execute called it an unknown task."""
    import pandas as pd

    from workbench.execute.job import ExecutionConfig
    from workbench.execute.job import load_samples as load_execution_samples
    from workbench.score.job import load_samples as load_scoring_samples

    rows = [dict(row) for row in ROWS * 2]
    rows[1]["task_id"], rows[3]["task_id"], rows[4]["task_id"] = None, "", " "
    source = tmp_path / f"gen{suffix}"
    if suffix == ".jsonl":
        _generations(source, rows)
    else:  # number task ids with a gap: the reader makes the column float, the gap NaN
        frame = pd.DataFrame([{**row, "task_id": float(i) if (row["task_id"] or "").strip() else None} for i, row in enumerate(rows)])
        frame.to_csv(source, index=False) if suffix == ".csv" else frame.to_parquet(source)
    for load in (lambda: load_execution_samples(str(source), ExecutionConfig(), []),
                 lambda: load_scoring_samples(str(source))):
        with pytest.raises(MissingIdError, match=r"3 rows have no task id in --task-column 'task_id' .*rows 2, 4, 5,") as error:
            load()
        assert error.value.rows == [2, 4, 5] and error.value.column == "task_id" and "None" not in str(error.value) and "nan" not in str(error.value)


def test_both_loaders_refuse_blank_and_null_sample_ids(tmp_path):
    """Blank sample ids are missing ones (keyed ``(task, None)``, so never compared as
    duplicates): score wrote one row for two such samples; both loaders now name the rows."""
    from workbench.execute.job import ExecutionConfig
    from workbench.execute.job import load_samples as load_execution_samples
    from workbench.score.job import load_samples as load_scoring_samples

    rows = [{**row, "sample_id": sample} for row, sample in zip(ROWS, [None, "", " "])]
    source = _generations(tmp_path / "gen.jsonl", rows)
    for load in (lambda: load_execution_samples(source, ExecutionConfig(), []), lambda: load_scoring_samples(source)):
        with pytest.raises(MissingIdError, match=r"3 rows have no sample id in column 'sample_id' \(rows 1, 2, 3\)"):
            load()
