"""Columns typed over every part of every data file (workbench.data.file_types), not a JSON file's
first block or the first file's first chunk: real files of a few MB (11 MB where a single file must
span two of datasets' 10 MB chunks), read by the real ``datasets`` builders."""

from __future__ import annotations

import json

import datasets
import pytest

from workbench.data import load_records
from workbench.data.file_types import JSON_CHUNK_BYTES
from workbench.errors import DataError

PAD = "x" * 200  # ~230 bytes a line: 15,000 lines are 3.4 MB, past pyarrow's 1 MB first block


def _jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _dtypes(dataset, *columns):
    return {column: str(dataset.features[column].dtype) for column in columns}


def test_a_folder_files_late_float_and_late_text_after_nulls_widen(tmp_path):
    # b.jsonl's first MB held integers (and nulls) only: the type check read a.jsonl int64, b.jsonl int64, so
    # datasets cast b's late 0.5 to a's int64 ("Float value 0.500000 was truncated converting to int64") and its late
    # text to a's null column ("Couldn't cast array of type string to null")
    n = 15_000
    _jsonl(tmp_path / "d" / "a.jsonl", [{"id": i, "v": 1, "note": None, "p": PAD} for i in range(10)])
    _jsonl(tmp_path / "d" / "b.jsonl", [{"id": i, "v": 0.5 if i == n - 1 else 1, "note": "hi" if i == n - 1 else None,
                                         "p": PAD} for i in range(n)])
    train = load_records(tmp_path / "d").splits["train"]
    assert train.num_rows == n + 10 and _dtypes(train, "v", "note") == {"v": "float64", "note": "string"}
    assert train[-1]["v"] == 0.5 and train[-1]["note"] == "hi" and train[0]["v"] == 1.0


def test_a_clash_past_a_files_first_block_is_refused_not_cast_to_text(tmp_path):
    # a.jsonl's text and b.jsonl's nulls (its first MB) passed the check as "nulls beside text": b's late numbers
    # were cast to text silently (7 became "7")
    n = 15_000
    _jsonl(tmp_path / "d" / "a.jsonl", [{"id": i, "v": "t", "p": PAD} for i in range(10)])
    _jsonl(tmp_path / "d" / "b.jsonl", [{"id": i, "v": 7 if i == n - 1 else None, "p": PAD} for i in range(n)])
    with pytest.raises(DataError, match=r"column 'v' holds text in a\.jsonl but numbers in b\.jsonl: every file"):
        load_records(tmp_path / "d")


def test_one_file_past_datasets_first_chunk_reads_its_late_types_and_keys(tmp_path):
    # datasets types a JSON Lines file by its first 10 MB chunk and casts the later ones to it: a raw "Couldn't cast
    # array of type string to null", "Float value 0.500000 was truncated", "column names don't match" for a key
    # first written after 10 MB; ISO dates only in the later chunk were read as timestamps there
    n = JSON_CHUNK_BYTES // 230 + 2_000
    late = n - 100
    rows = [{"id": i, "note": "hi" if i >= late else None, "v": 0.5 if i >= late else 1,
             "when": "2024-01-02T03:04:05Z" if i >= late else "soon", "p": PAD}
            | ({"extra": "k"} if i >= late else {}) for i in range(n)]
    path = _jsonl(tmp_path / "big.jsonl", rows)
    assert path.stat().st_size > JSON_CHUNK_BYTES + (1 << 20)
    train = load_records(path).splits["train"]
    assert _dtypes(train, "note", "v", "when", "extra") == {"note": "string", "v": "float64", "when": "string",
                                                           "extra": "string"}
    assert train[-1] | {"p": ""} == {"id": n - 1, "note": "hi", "v": 0.5, "when": "2024-01-02T03:04:05Z", "p": "",
                                     "extra": "k"}
    assert train[0]["extra"] is None and train[0]["when"] == "soon"
    # text after 10 MB of numbers (a raw "Failed to parse string: '"high"' as a scalar of type int64"): one line
    # naming the file's first line of each kind (as the Spark engine names them), whether the later chunk holds
    # text only or numbers and text
    for mixed in (False, True):
        lines, size, first_text = [], 0, None
        for i in range(n):
            later = size > JSON_CHUNK_BYTES  # datasets' second chunk starts with the first line after 10 MB
            text = later and bool(i % 2 or not mixed)
            first_text = first_text or (i + 1 if text else None)
            lines.append(json.dumps({"id": i, "v": "high" if text else 1, "p": PAD}) + "\n")
            size += len(lines[-1])
        path.write_text("".join(lines))
        with pytest.raises(DataError) as refused:
            load_records(path)
        said = str(refused.value)
        assert "\n" not in said and first_text > 45_000, said
        assert said.startswith(f"{path}: column 'v' holds numbers at line 1 of big.jsonl but text at line "
                               f"{first_text:,}: a column must hold one type of value in every row"), said


def _past_first_chunk(path, row):
    """Write a JSON Lines file of ``row(i, later)`` lines over two of datasets' chunks (``later``: the line is in
    the second, which starts with the first line after 10 MB); return its line count."""
    lines, size, i = [], 0, 0
    while size < JSON_CHUNK_BYTES + (1 << 20):
        lines.append(json.dumps(row(i, size > JSON_CHUNK_BYTES)) + "\n")
        size += len(lines[-1])
        i += 1
    path.write_text("".join(lines))
    return i


def test_nested_columns_past_datasets_first_chunk_widen_or_are_refused_in_one_line(tmp_path):
    # a list of nulls (or an empty list, or an object whose field is null) in the first 10 MB and of text later:
    # datasets cast the later chunk to the first's type, "Couldn't cast array of type string to null"
    path = tmp_path / "big.jsonl"
    n = _past_first_chunk(path, lambda i, later: {"id": i, "tags": ["a", "b"] if later else [None],
                                                  "empty": ["x"] if later else [], "score": [0.5] if later else [1],
                                                  "meta": {"who": "me", "n": 2} if later else {"who": None}, "p": PAD})
    train = load_records(path).splits["train"]
    assert train.num_rows == n
    assert {column: repr(train.features[column]) for column in ("tags", "empty", "score", "meta")} == {
        "tags": "List(Value('string'))", "empty": "List(Value('string'))", "score": "List(Value('float64'))",
        "meta": "{'who': Value('string'), 'n': Value('int64')}"}
    assert train[0] | {"p": ""} == {"id": 0, "tags": [None], "empty": [], "score": [1.0], "meta": {"who": None, "n": None},
                                    "p": ""}
    assert train[-1] | {"p": ""} == {"id": n - 1, "tags": ["a", "b"], "empty": ["x"], "score": [0.5],
                                     "meta": {"who": "me", "n": 2}, "p": ""}
    # lists of numbers, then of text only: no type holds both (the file's first line of each, as the Spark engine
    # says it); in a folder, the two files' types
    n = _past_first_chunk(path, lambda i, later: {"id": i, "tags": ["a"] if later else [1], "p": PAD})
    with pytest.raises(DataError) as refused:
        load_records(path)
    said = str(refused.value)
    first_text = 1 + next(i for i, line in enumerate(path.read_text().splitlines()) if '"a"' in line)
    assert "\n" not in said and said.startswith(
        f"{path}: column 'tags' (at 'tags/[]') holds numbers at line 1 of big.jsonl but text at line {first_text:,}: "
        f"a column must hold one type of value in every row"), said
    folder = tmp_path / "d"
    _jsonl(folder / "a.jsonl", [{"id": 1, "tags": [1]}])
    _jsonl(folder / "b.jsonl", [{"id": 2, "tags": ["x"]}])
    with pytest.raises(DataError, match=r"column 'tags' holds lists of numbers in a\.jsonl but lists of text in "
                                        r"b\.jsonl: every file of a dataset must give a column one type"):
        load_records(folder)


def test_csv_files_past_datasets_first_10000_rows_read_their_late_types(tmp_path):
    # datasets reads a CSV file in chunks of 10,000 rows typed by pandas one by one, cast to the first: a raw
    # "Float value 0.500000 was truncated", "Failed to parse string: 't' as a scalar of type double"
    path = tmp_path / "x.csv"
    path.write_text("id,v,note\n" + "".join(f"{i},{0.5 if i > 12_000 else 1},{'t' if i > 12_000 else ''}\n"
                                            for i in range(12_010)))
    train = load_records(path).splits["train"]
    assert _dtypes(train, "v", "note") == {"v": "float64", "note": "string"}
    assert train[-1] == {"id": 12_009, "v": 0.5, "note": "t"} and train[0]["note"] is None
    path.write_text("id,v\n" + "".join(f"{i},{'high' if i > 12_000 else 1}\n" for i in range(12_010)))
    with pytest.raises(DataError, match=r"column 'v' holds numbers in x\.csv but text in x\.csv \(from row 10,001\)"):
        load_records(path)


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_files_of_other_columns_read_with_every_column_missing_ones_null(tmp_path, form):
    # datasets read a later file that lacks a column of the first with nulls there, but refused one with a column
    # the first lacks ("Couldn't cast ... because column names don't match"), in one split or across splits
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "d"
    folder.mkdir()
    files = {"train-00000-of-00002": [{"id": 1}], "train-00001-of-00002": [{"id": 2, "v": "x"}],
             "test": [{"id": 3, "w": 0.5}]}
    for name, rows in files.items():
        if form == "jsonl":
            _jsonl(folder / f"{name}.jsonl", rows)
        else:
            pq.write_table(pa.Table.from_pylist(rows), folder / f"{name}.parquet")
    loaded = load_records(folder)
    assert loaded.splits["train"].to_list() == [{"id": 1, "v": None, "w": None}, {"id": 2, "v": "x", "w": None}]
    assert loaded.splits["test"].to_list() == [{"id": 3, "v": None, "w": 0.5}]
    assert _dtypes(loaded.splits["test"], "id", "v", "w") == {"id": "int64", "v": "string", "w": "float64"}


def test_csv_files_of_other_headers_are_refused_in_one_line_naming_them(tmp_path):
    # datasets' raw "Schema at index 1 was different: id: int64 v: large_string vs id: int64"
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "train.csv").write_text("id,v\n1,x\n")
    (folder / "test.csv").write_text("id,w\n2,y\n")
    with pytest.raises(DataError) as refused:
        load_records(folder)
    assert str(refused.value).startswith(
        f"{folder}: the CSV files have other columns: test.csv lacks 'v', which train.csv has and has 'w', which "
        f"train.csv has not: a folder's CSV files are read with one header"), str(refused.value)


def test_a_csv_folder_of_one_type_per_column_is_not_parsed_by_pandas_to_type_it(tmp_path, monkeypatch):
    # the folder's types came from a whole pandas read of every file beside datasets' own: now from the csv-module
    # pass that finds zero-padded ids, pandas only when a column's kind changes between chunks or files
    from workbench.data import file_types

    calls = []
    real = file_types.csv_part_types
    monkeypatch.setattr(file_types, "csv_part_types", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "train.csv").write_text("id,code,score\n007,x = 1,1\n008,y,2\n")
    (folder / "test.csv").write_text("id,code,score\n009,z,3\n010,w,4\n")
    loaded = load_records(folder)
    assert calls == [] and loaded.splits["test"]["id"] == ["009", "010"]
    assert loaded.splits["train"].features["score"] == datasets.Value("int64")
    (folder / "test.csv").write_text("id,code,score\n009,z,0.5\n")
    assert load_records(folder).splits["test"]["score"] == [0.5] and calls == ["train.csv", "test.csv"]


def test_csv_integer_ids_with_an_empty_cell_in_the_first_chunk_stay_integers(tmp_path):
    # pandas reads an integer column with an empty cell (or empty cells only) as floats: typed int64 since review34,
    # the chunks then needed no widening and datasets took the first chunk's float64 for every later one, ids 1.0
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.csv").write_text("id,code\n1,x\n,y\n")
    (folder / "b.csv").write_text("id,code\n3,z\n4,w\n")
    train = load_records(folder).splits["train"]
    assert [repr(v) for v in train["id"]] == ["1", "None", "3", "4"] and _dtypes(train, "id") == {"id": "int64"}
    (folder / "a.csv").write_text("id,code\n,x\n,y\n")
    assert [repr(v) for v in load_records(folder).splits["train"]["id"]] == ["None", "None", "3", "4"]
    path = tmp_path / "x.csv"  # one file: its first 10,000 rows hold the empty cell, the next chunk none
    path.write_text("id,flag\n" + "".join(f"{'' if i == 5 else i},{'' if i == 6 else i % 2 == 0}\n"
                                          for i in range(12_010)))
    train = load_records(path).splits["train"]
    assert _dtypes(train, "id", "flag") == {"id": "int64", "flag": "bool"}
    assert train["id"][4:7] == [4, None, 6] and train["flag"][5:8] == [False, None, False] and train[-1]["id"] == 12_009


def test_an_objects_field_of_two_kinds_over_the_files_is_refused_naming_its_path(tmp_path):
    # refused in pyarrow's words ("holds struct<n: int64> in train.jsonl but struct<n: string>"), which the Spark
    # engine (whose JSON reader merged the field into text) cannot say; now a path and two kinds, on both engines
    from workbench.data.column_types import first_field_clash, nested_kinds

    (tmp_path / "train.jsonl").write_text(json.dumps({"id": "a", "meta": {"n": 1, "tags": [None]}}) + "\n")
    (tmp_path / "test.jsonl").write_text(json.dumps({"id": "b", "meta": {"n": "x", "tags": ["y"]}}) + "\n")
    with pytest.raises(DataError) as error:
        load_records(str(tmp_path))
    assert str(error.value).startswith(f"{tmp_path}: column 'meta' (at 'meta/n') holds numbers in train.jsonl but text "
                                       f"in test.jsonl: every file of a dataset must give a column one type, inside "
                                       f"its objects too"), error.value
    # Arrow's, Spark's and Spark's variant schema's names alike
    names = ("struct<n: int64, t: list<item: null>>", "struct<n:bigint,t:array<void>>", "OBJECT<n: BIGINT, t: ARRAY<VOID>>")
    assert [nested_kinds(name, "m") for name in names] == [{"m/n": "numbers", "m/t": "lists", "m/t/[]": None}] * 3
    # two kinds of a field within one file's rows are that file's own check's, not a clash between files
    files = [("a", {"m": ["OBJECT<n: BIGINT>", "OBJECT<n: STRING>"]}), ("b", {"m": "OBJECT<n: STRING>"})]
    assert first_field_clash(files) is None
