"""Input the local engine and ``--engine spark`` (on a ``file://`` URI Spark reads itself; local[2], the
shared ``spark`` fixture) must refuse alike: the same one line, the source named as each engine names it
(a path locally, the URI on Spark). Real pyarrow Parquet files and JSON Lines in tmp_path, real
``datasets`` and real Spark.

Found in session 36's review of the dedup inputs:

* a NaN ``--split-column`` cell: the local engine refused it, Spark made it a split named ``NaN``;
* a blank split name (``" "``, ``"\\t"``): both engines made a split no one can name on the command line
  (an output ``" .jsonl"``); now refused as a missing value, as a blank id or group cell is (the
  empty name ``""`` with them);
* a Parquet file with no columns (pyarrow writes one for a table without columns): Spark failed with a
  raw Java ``IndexOutOfBoundsException`` beside other files and said "the file is empty" alone; the
  local engine said ``datasets``' "BatchSize must be greater than 0".
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.dedup import DedupConfig, run_dedup

sys.path.insert(0, str(Path(__file__).parent))
from refusals import refused_alike  # noqa: E402

CODE = "def f{k}(values):\n    total = 0\n    for v in values:\n        total += v * {k}\n    return total\n"
NEED = "each row goes to the split its value names"


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("form", ["parquet", "jsonl"])
def test_a_nan_split_cell_is_refused_alike(spark, tmp_path, form):
    rows = [{"id": f"r{k}", "content": CODE.format(k=k), "split": [1.0, 2.0, float("nan"), 1.0][k]} for k in range(4)]
    if form == "parquet":
        path = tmp_path / "rows.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:  # json.dumps writes the literal NaN, which both readers take as a number
        path = jsonl(tmp_path / "rows.jsonl", rows)
    said = refused_alike(path, split_column="split")
    assert said == (f"{path}: 1 row has no value in --split-column 'split' (null, NaN or blank; row 3, counting "
                    f"from 1); {NEED}, so fill it in or drop that row")


@pytest.mark.parametrize("blank", [" ", "\t", ""])
def test_a_blank_split_name_is_refused_alike_naming_the_row(spark, tmp_path, blank):
    path = jsonl(tmp_path / "rows.jsonl", [{"id": f"r{k}", "content": CODE.format(k=k),
                                            "split": blank if k == 1 else "train"} for k in range(4)])
    said = refused_alike(path, split_column="split")
    assert said == (f"{path}: 1 row has no value in --split-column 'split' (null, NaN or blank; row 2, counting "
                    f"from 1); {NEED}, so fill it in or drop that row")


def test_missing_split_cells_are_counted_over_the_files_and_blocks_alike(spark, tmp_path):
    # two files read in many small blocks each: the rows are numbered over the files in the order both read them
    folder = tmp_path / "data"
    folder.mkdir()
    bad = {7: None, 120: " ", 180: "\t", 301: "", 333: None, 555: " "}  # 1-based over train then test
    rows = [{"id": f"r{k}", "content": CODE.format(k=k) + "#" * 80,
             "split": bad.get(k + 1, "train" if k % 3 else "test")} for k in range(600)]
    jsonl(folder / "test.jsonl", rows[300:])  # read second: train first, as datasets orders splits
    jsonl(folder / "train.jsonl", rows[:300])
    before = spark.conf.get("spark.sql.files.maxPartitionBytes")
    spark.conf.set("spark.sql.files.maxPartitionBytes", "8192")
    try:
        said = refused_alike(folder, split_column="split")
    finally:
        spark.conf.set("spark.sql.files.maxPartitionBytes", before)
    assert said == (f"{folder}: 6 rows have no value in --split-column 'split' (null, NaN or blank; rows 7, 120, 180, "
                    f"301, 333 ..., counting from 1); {NEED}, so fill them in or drop those rows")


def test_a_nan_among_nulls_in_a_parquet_split_column(spark, tmp_path):
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": [f"r{k}" for k in range(5)], "content": [CODE.format(k=k) for k in range(5)],
                             "split": [1.0, None, 2.0, float("nan"), 1.0]}), path)
    said = refused_alike(path, split_column="split")
    assert said.startswith(f"{path}: 2 rows have no value in --split-column 'split' (null, NaN or blank; rows 2, 4,")


@pytest.mark.parametrize("option", ["id_column", "group_column"])
def test_blank_ids_and_groups_were_already_refused_alike(spark, tmp_path, option):
    # checked in the same review: a blank id or group cell is a missing one on both engines (no change needed)
    path = jsonl(tmp_path / "rows.jsonl", [{"id": f"r{k}", "content": CODE.format(k=k), "g": "\t" if k == 2 else "a",
                                            "k": " " if k == 3 else f"k{k}"} for k in range(4)])
    column = {"id_column": "k", "group_column": "g"}[option]
    said = refused_alike(path, **{option: column})
    assert f"no value in --{option.replace('_', '-')} '{column}' (null, NaN or blank; row " in said, said


def columnless(path: Path) -> Path:
    """A Parquet file of a table without columns (pyarrow writes one row group of no column chunks)."""
    pq.write_table(pa.table({"a": [1, 2]}).drop(["a"]), path)
    return path


def good(path: Path, first: int = 0) -> Path:
    pq.write_table(pa.table({"id": [f"r{first}", f"r{first + 1}"], "split": ["train", "test"],
                             "content": [CODE.format(k=first), CODE.format(k=first + 1)]}), path)
    return path


@pytest.mark.parametrize("case", ["one file", "a split's only file", "a shard beside another", "with --split-column"])
def test_a_parquet_file_without_columns_is_named_alike(spark, tmp_path, case):
    folder = tmp_path / "data"
    folder.mkdir()
    options = {}
    if case == "one file":
        bad = columnless(folder / "rows.parquet")
        source = bad
    else:
        source = folder
        if case == "a split's only file":
            good(folder / "train.parquet")
            bad = columnless(folder / "test.parquet")
        else:
            good(folder / "train-00000-of-00002.parquet")
            bad = columnless(folder / "train-00001-of-00002.parquet")
            options = {"split_column": "split"} if case == "with --split-column" else {}
    said = refused_alike(source, folder=folder, **options)
    assert said.startswith(f"cannot read {bad}: the Parquet file has no columns"), said


@pytest.mark.parametrize("form", ["parquet", "jsonl"])
def test_a_boolean_split_column_names_the_splits_alike(spark, tmp_path, form):
    # review38b: the local loader names a split str(value) ("True"), Spark's cast made it "true": other split
    # names in the report and other output files (true.jsonl beside the local engine's True.jsonl)
    rows = [{"id": f"r{k}", "content": CODE.format(k=k % 2), "is_test": k >= 2} for k in range(4)]
    if form == "parquet":
        path = tmp_path / "rows.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        path = jsonl(tmp_path / "rows.jsonl", rows)
    found = {}
    for engine, source in (("local", str(path)), ("spark", path.as_uri())):
        run = run_dedup(source, DedupConfig(min_tokens=1, engine=engine, split_column="is_test"),
                        output_dir=tmp_path / engine)
        found[engine] = ({name: split["files"] for name, split in run.report["splits"].items()},
                         sorted(p.name for p in (tmp_path / engine).iterdir() if p.stem in ("True", "False")))
    assert found["local"] == ({"False": 2, "True": 2}, [f"False.{form}", f"True.{form}"])
    assert found["spark"][0] == found["local"][0]
