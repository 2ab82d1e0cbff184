"""Split names and empty files the local engine and ``--engine spark`` (local[2], the shared ``spark``
fixture, on a ``file://`` URI Spark reads itself) must name alike. Real JSON Lines and pyarrow Parquet
files in tmp_path, real ``datasets``, real Spark.

Found in leftovers38a (input loading):

* a sharded file whose split name holds a space or a dash (``data/my split-00000-of-00001.jsonl``):
  ``datasets`` raised a bare ``ValueError: Split name should match '^\\w+(\\.\\w+)*$'' ...`` on both engines;
* a single Parquet file with its columns and no rows was "the file has no rows (an empty JSON list, or a
  CSV with only a header)";
* (go39) a JSON Lines file of blank lines only was "the file has no rows (an empty JSON list, or a CSV with
  only a header)" on the local engine, "the file is empty" on Spark (an empty JSON list too);
* a float ``--split-column``: the local loader names a split ``str(value)`` (``inf``, ``-inf``,
  ``1e+20``), Spark cast it to text in Java's words (``Infinity``, ``-Infinity``, ``1.0E20``).
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.data.loading import load_records
from workbench.dedup import DedupConfig, run_dedup
from workbench.errors import DataError

sys.path.insert(0, str(Path(__file__).parent))
from refusals import both_refuse, refused_alike  # noqa: E402

CODE = "def f{k}(values):\n    total = 0\n    for v in values:\n        total += v * {k}\n    return total\n"


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def rows(n: int, first: int = 0, **more) -> list[dict]:
    return [{"id": f"r{k}", "content": CODE.format(k=k), **more} for k in range(first, first + n)]


SHARDED = ["data/my split-00000-of-00001.jsonl", "data/my-split-00000-of-00002.jsonl"]


@pytest.mark.parametrize("name", SHARDED)
def test_a_sharded_split_name_datasets_refuses_is_named_with_the_file_to_rename(tmp_path, name):
    folder = tmp_path / "corpus"
    jsonl(folder / name, rows(2))
    jsonl(folder / "data" / "train-00000-of-00001.jsonl", rows(2, 5))
    with pytest.raises(DataError) as refused:
        load_records(folder)
    split = name.removeprefix("data/").split("-0000")[0]
    renamed = name.replace(split, "my_split")
    assert str(refused.value) == (
        f"{folder}: the sharded data file {name} names the split {split!r}, a name datasets does not take (a "
        f"split's name is letters, digits and underscores, with dots between them); rename it to {renamed}"), \
        str(refused.value)


@pytest.mark.parametrize("name", SHARDED)
def test_a_sharded_split_name_datasets_refuses_is_refused_alike_on_spark(spark, tmp_path, name):
    folder = tmp_path / "corpus"
    jsonl(folder / name, rows(2))
    said = refused_alike(folder)
    assert f"rename it to {name.replace(name.removeprefix('data/').split('-0000')[0], 'my_split')}" in said, said


def test_a_split_column_value_with_a_space_is_a_split_on_both_engines(spark, tmp_path):
    # a split named by a cell (not by datasets' file rule) may hold a space: both engines name it and write it
    path = jsonl(tmp_path / "rows.jsonl", rows(2, split="my split") + rows(2, 5, split="test"))
    options = {"min_tokens": 1, "workers": 1, "split_column": "split", "output_format": "jsonl"}
    runs = {engine: run_dedup(source, DedupConfig(**options, engine=engine), output_dir=tmp_path / engine)
            for engine, source in (("local", str(path)), ("spark", path.as_uri()))}
    assert list(runs["local"].result.rows.split_ranges) == list(runs["spark"].result.rows.split_ranges) == [
        "my split", "test"]
    assert (tmp_path / "local" / "my split.jsonl").is_file() and (tmp_path / "spark" / "my split").is_dir()


def empty_parquet(path: Path) -> Path:
    """A Parquet file with its columns (id, content) and no rows."""
    pq.write_table(pa.Table.from_pylist(rows(1)).slice(0, 0), path)
    return path


@pytest.mark.parametrize(("name", "content", "said"), [
    ("blank.jsonl", "\n\n  \n", "the JSON Lines file has no rows (only blank lines)"),
    ("blank.jsonl.gz", "\n\t\n", "the JSON Lines file has no rows (only blank lines)"),
    ("blank.json", "\n\n", "the JSON file has no rows (only blank lines)"),
    ("list.json", "[ ]\n", "the JSON file has no rows (an empty JSON list)"),
    # leftover of session 40 (no change needed): both engines already said this of a file of {} lines
    ("objects.jsonl", "{}\n\n{ }\n", "the JSON Lines file has no rows (no JSON object with a field)"),
])
def test_a_json_file_of_no_rows_says_what_it_holds_alike_on_spark(spark, tmp_path, name, content, said):
    """go39: a JSON Lines file of blank lines only, given alone, was "the file has no rows (an empty JSON list, or
    a CSV with only a header)" on the local engine and "the file is empty" on Spark: neither was true."""
    path = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(path, "wt") as handle:
            handle.write(content)
    else:
        path.write_text(content)
    assert refused_alike(path) == f"{path}: {said}; pass a file with at least one record"


def test_a_folder_of_one_blank_json_lines_file_names_its_split_alike(spark, tmp_path):
    """go39: Spark took a folder holding one data file for that file given alone ("the file is empty")."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "train.jsonl").write_text("\n\n")
    local, on_spark = both_refuse(folder)
    assert local == f"{folder}: no rows in split 'train' (train.jsonl); remove the empty files or add records"
    uri = folder.as_uri()
    assert on_spark == f"{uri}: no rows in split 'train' ({uri}/train.jsonl); remove the empty files or add records"


@pytest.mark.parametrize(("which", "split_column"), [("train", None), ("test", None), ("test", "split")])
def test_a_split_of_json_objects_without_fields_is_refused_alike(spark, tmp_path, which, split_column):
    """leftover of session 40: a folder whose one split's file holds only {} lines (rows with no column) beside a
    split of records: Spark refused it ("no rows in split"), the local engine read it as rows of nulls and deduplicated
    the rest (exit 0, an output split of empty records). Both now refuse it, as a file of {} lines given alone is;
    with --split-column too, where Spark read the file with the others (its {} lines rows of nulls, refused as
    rows without a split value) and both engines refuse a file-named split of no rows before they regroup."""
    folder = tmp_path / "corpus"
    other = "test" if which == "train" else "train"
    jsonl(folder / f"{other}.jsonl", [{"content": CODE.format(k=k), "split": ["train", "test"][k % 2]}
                                      for k in range(3)])
    (folder / f"{which}.jsonl").write_text("{}\n\n{ }\n")
    local, on_spark = both_refuse(folder, **({"split_column": split_column} if split_column else {}))
    assert local == f"{folder}: no rows in split {which!r} ({which}.jsonl); remove the empty files or add records"
    uri = folder.as_uri()
    assert on_spark == (f"{uri}: no rows in split {which!r} ({uri}/{which}.jsonl); remove the empty files or add "
                        "records")


def test_a_folder_of_parquet_files_of_no_rows_names_its_splits_alike(spark, tmp_path):
    """review40: as a folder of one blank JSON Lines file (go39), a folder whose Parquet files have their columns and
    no rows names its splits on the local engine; Spark said "the input has no rows"."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    empty_parquet(folder / "train.parquet")
    with pytest.raises(DataError) as local:
        run_dedup(str(folder), DedupConfig(min_tokens=1))
    assert str(local.value) == f"{folder}: no rows in split 'train' (train.parquet); remove the empty files or add records"
    with pytest.raises(DataError) as on_spark:
        run_dedup(folder.as_uri(), DedupConfig(min_tokens=1, engine="spark"))
    uri = folder.as_uri()
    assert str(on_spark.value) == f"{uri}: no rows in split 'train' ({uri}/train.parquet); remove the empty files or add records"


def test_a_csv_file_of_only_a_header_is_said_to_be_one(tmp_path):
    path = tmp_path / "header.csv"
    path.write_text("id,content\n")
    with pytest.raises(DataError) as refused:
        run_dedup(str(path), DedupConfig(min_tokens=1))
    assert str(refused.value) == f"{path}: the CSV file has no rows (only a header); pass a file with at least one record"


def test_a_parquet_file_of_no_rows_is_said_to_be_one(tmp_path):
    path = empty_parquet(tmp_path / "rows.parquet")
    with pytest.raises(DataError) as refused:
        load_records(path)
    assert str(refused.value) == (f"{path}: the Parquet file has no rows (its columns: id, content); pass a file "
                                  f"with at least one row"), str(refused.value)


def test_a_parquet_file_of_no_rows_is_refused_alike_on_spark(spark, tmp_path):
    path = empty_parquet(tmp_path / "rows.parquet")
    assert refused_alike(path).startswith(f"{path}: the Parquet file has no rows")


def test_a_parquet_input_of_no_rows_is_refused_before_its_columns_on_spark(spark, tmp_path):
    """review39a: the local loader refuses a Parquet split of no rows before it looks for a column; Spark
    looked at the columns first and said the code column was missing, or not text, where the local engine said
    the file (or the split) had no rows."""
    alone = tmp_path / "alone.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "r1", "text": "def f(): pass"}]).slice(0, 0), alone)
    assert refused_alike(alone).startswith(f"{alone}: the Parquet file has no rows (its columns: id, text)")
    numbers = tmp_path / "numbers.parquet"
    pq.write_table(pa.Table.from_pylist([{"id": "r1", "content": 5}]).slice(0, 0), numbers)
    assert refused_alike(numbers).startswith(f"{numbers}: the Parquet file has no rows (its columns: id, content)")
    folder = tmp_path / "corpus"
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist([{"id": f"r{k}", "text": CODE.format(k=k)} for k in range(3)]),
                   folder / "train.parquet")
    pq.write_table(pa.Table.from_pylist([{"id": "x", "text": CODE.format(k=9)}]).slice(0, 0), folder / "test.parquet")
    with pytest.raises(DataError, match=r"no rows in split 'test' \(test.parquet\)"):
        run_dedup(str(folder), DedupConfig(min_tokens=1))
    with pytest.raises(DataError, match=r"no rows in split 'test' \(" + re.escape((folder / "test.parquet").as_uri())):
        run_dedup(folder.as_uri(), DedupConfig(min_tokens=1, engine="spark"))


FLOATS = [1.0, float("inf"), float("-inf"), 1e20, 1.5e-5, 12345678.0, 0.1, 1.0]


@pytest.mark.parametrize("form", ["jsonl", "parquet", "parquet float32"])
def test_float_split_names_are_the_same_on_both_engines(spark, tmp_path, form):
    table = rows(len(FLOATS))
    for row, value in zip(table, FLOATS):
        row["split"] = value
    if form == "jsonl":  # json.dumps writes inf as the literal Infinity, which both readers take as a number
        path = jsonl(tmp_path / "rows.jsonl", table)
    else:
        kind = pa.float32() if form == "parquet float32" else pa.float64()
        path = tmp_path / "rows.parquet"
        pq.write_table(pa.Table.from_pylist(table, schema=pa.schema(
            [("id", pa.string()), ("content", pa.string()), ("split", kind)])), path)
    options = {"min_tokens": 1, "workers": 1, "split_column": "split", "output_format": "jsonl"}
    runs = {engine: run_dedup(source, DedupConfig(**options, engine=engine), output_dir=tmp_path / engine)
            for engine, source in (("local", str(path)), ("spark", path.as_uri()))}
    names = {engine: list(run.result.rows.split_ranges) for engine, run in runs.items()}
    assert names["local"] == names["spark"], names
    cells = pa.Table.from_pylist(table).column("split").cast(kind if form != "jsonl" else pa.float64()).to_pylist()
    assert names["local"] == list(dict.fromkeys(str(value) for value in cells))  # str(value): inf, -inf, 1e+20
    for engine in runs:
        assert (tmp_path / engine / "kept.csv").read_text() == (tmp_path / "local" / "kept.csv").read_text()
