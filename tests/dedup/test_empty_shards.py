"""Empty data files beside non-empty ones, and a sharded file name with an empty split name, on both
dedup engines (the local engine with real ``datasets``; ``--engine spark`` on the ``file://`` URI with
real Spark, the shared ``local[2]`` ``spark`` fixture). Real pyarrow Parquet, JSON Lines and CSV files
in tmp_path.

Found in session 37's review of the dedup inputs:

* a folder of Parquet shards where one shard has the columns but no rows (pyarrow writes it as one row
  group of zero rows; a normal outcome of sharded writers): Spark read it, the local engine failed with
  ``datasets``' "BatchSize must be greater than 0" (its Parquet builder reads each file in batches of
  the file's first row-group size, here 0);
* ``data/-00000-of-00001.jsonl`` (an empty split name in a sharded file name): ``--engine spark``
  crashed with a bare ``AssertionError`` from ``datasets``' split-name pattern.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.dedup import DedupConfig, run_dedup
from workbench.errors import DataError

sys.path.insert(0, str(Path(__file__).parent))
from refusals import both_refuse  # noqa: E402

#: three distinct functions, each twice: three exact-duplicate clusters
CODE = "def f{k}(values):\n    total = 0\n    for v in values:\n        total += v * {k}\n    return total\n"
ROWS = [{"id": f"r{k}", "content": CODE.format(k=k % 3)} for k in range(6)]


def clusters(run) -> list[list[str]]:
    """Each cluster as the sorted ids of its rows, the clusters sorted."""
    ids = run.result.rows.ids
    return sorted(sorted(ids[i] for i in cluster) for cluster in run.result.clusters)


def both_read(folder: Path) -> list[list[str]]:
    """The clusters of the local engine on ``folder``, checked to be Spark's on its URI."""
    local = run_dedup(str(folder), DedupConfig(min_tokens=1))
    on_spark = run_dedup(folder.as_uri(), DedupConfig(min_tokens=1, engine="spark"))
    assert clusters(local) == clusters(on_spark)
    assert local.report["overall"] == on_spark.report["overall"]
    return clusters(local)


EXPECTED = [["r0", "r3"], ["r1", "r4"], ["r2", "r5"]]


@pytest.mark.parametrize("where", ["last", "first"])
def test_a_parquet_shard_with_columns_and_no_rows_adds_no_rows(spark, tmp_path, where):
    folder = tmp_path / "data"
    folder.mkdir()
    table = pa.Table.from_pylist(ROWS)
    empty, full = ("train-00001-of-00002.parquet", "train-00000-of-00002.parquet")[:: 1 if where == "last" else -1]
    pq.write_table(table, folder / full)
    pq.write_table(table.slice(0, 0), folder / empty)
    assert pq.ParquetFile(folder / empty).metadata.row_group(0).num_rows == 0  # what datasets took as its batch size
    assert both_read(folder) == EXPECTED


def test_a_parquet_split_of_only_empty_shards_is_said_alike(spark, tmp_path):
    # the empty shard no longer fails datasets' reader: a split with no rows at all is still refused
    folder = tmp_path / "data"
    folder.mkdir()
    table = pa.Table.from_pylist(ROWS)
    pq.write_table(table, folder / "train.parquet")
    pq.write_table(table.slice(0, 0), folder / "test.parquet")
    with pytest.raises(DataError) as local:
        run_dedup(str(folder), DedupConfig(min_tokens=1))
    assert str(local.value) == f"{folder}: no rows in split 'test' (test.parquet); remove the empty files or add records"
    with pytest.raises(DataError) as on_spark:  # Spark names the file by its URI
        run_dedup(folder.as_uri(), DedupConfig(min_tokens=1, engine="spark"))
    assert f"no rows in split 'test' ({(folder / 'test.parquet').as_uri()})" in str(on_spark.value), on_spark.value


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("beside", [False, True])
def test_a_sharded_file_name_with_an_empty_split_name_is_refused_alike(spark, tmp_path, beside):
    folder = tmp_path / "source"
    jsonl(folder / "data" / "-00000-of-00001.jsonl", ROWS[:3])
    if beside:
        jsonl(folder / "data" / "train-00000-of-00001.jsonl", ROWS[3:])
    with pytest.raises(DataError) as local:
        run_dedup(str(folder), DedupConfig(min_tokens=1))
    with pytest.raises(DataError) as on_spark:
        run_dedup(folder.as_uri(), DedupConfig(min_tokens=1, engine="spark"))
    said = str(local.value)
    assert str(on_spark.value).replace(folder.as_uri(), str(folder)) == said
    # the words of the check on the split names read (workbench.dedup.job), naming the file
    assert said == (f"{folder}: a split named '' (empty), from a data file whose name gives an empty split name "
                    f"(data/-00000-of-00001.jsonl): its output would be a hidden file (.jsonl) that no loader reads "
                    f"back; give those rows a split name (or rename the file)")


def test_a_zero_byte_json_lines_shard_adds_no_rows_alike(spark, tmp_path):
    # checked in the same review: read alike before this change too (a guard, not a fix)
    folder = tmp_path / "data"
    jsonl(folder / "train-00000-of-00002.jsonl", ROWS)
    (folder / "train-00001-of-00002.jsonl").write_bytes(b"")
    assert both_read(folder) == EXPECTED


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_csv_shards_beside_a_header_only_or_a_zero_byte_one(spark, tmp_path, engine):
    # a folder of CSV files is read by the local loader on either engine (Spark reads no CSV): a header-only
    # shard adds no rows; a zero-byte one has no header, so it is refused as a file of other columns, in one line
    folder = tmp_path / "data"
    folder.mkdir()
    with open(folder / "train-00000-of-00002.csv", "w", newline="") as out:
        writer = csv.DictWriter(out, ["id", "content"])
        writer.writeheader()
        writer.writerows(ROWS)
    (folder / "train-00001-of-00002.csv").write_text("id,content\n")
    assert clusters(run_dedup(str(folder), DedupConfig(min_tokens=1, engine=engine))) == EXPECTED
    (folder / "train-00001-of-00002.csv").write_bytes(b"")
    with pytest.raises(DataError) as refused:
        run_dedup(str(folder), DedupConfig(min_tokens=1, engine=engine))
    assert str(refused.value).startswith(f"{folder}: the CSV files have other columns: train-00001-of-00002.csv "
                                         f"lacks 'id', 'content', which train-00000-of-00002.csv has"), refused.value


# Found in session 38's review (review38b): the file-named splits' emptiness was checked on Spark only without
# --split-column, and only the first empty split was named.

@pytest.mark.parametrize("form", ["parquet", "jsonl"])
def test_an_empty_file_named_split_with_a_split_column_is_refused_alike(spark, tmp_path, form):
    # --split-column regroups the rows, but the local loader reads the folder's file-named splits first and
    # refuses one of no rows; Spark read the files as one table and went on (6 rows in train and test)
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{**row, "split": "train" if k < 4 else "test"} for k, row in enumerate(ROWS)]
    if form == "parquet":
        table = pa.Table.from_pylist(rows)
        pq.write_table(table, folder / "train.parquet")
        pq.write_table(table.slice(0, 0), folder / "test.parquet")
    else:
        jsonl(folder / "train.jsonl", rows)
        (folder / "test.jsonl").write_text("\n\n")
    local, on_spark = both_refuse(folder, split_column="split")
    assert local == (f"{folder}: no rows in split 'test' (test.{form}); remove the empty files or add "
                     "records")
    assert on_spark == (f"{folder.as_uri()}: no rows in split 'test' ({(folder / f'test.{form}').as_uri()}); "
                                   "remove the empty files or add records")


def test_every_empty_split_is_named_alike(spark, tmp_path):
    folder = tmp_path / "data"
    folder.mkdir()
    table = pa.Table.from_pylist(ROWS)
    pq.write_table(table, folder / "train.parquet")
    for name in ("validation", "test"):
        pq.write_table(table.slice(0, 0), folder / f"{name}.parquet")
    local, on_spark = both_refuse(folder)
    assert local == (f"{folder}: no rows in split 'validation' (validation.parquet); split 'test' "
                     "(test.parquet); remove the empty files or add records")
    uri = folder.as_uri()
    assert on_spark == (f"{uri}: no rows in split 'validation' ({uri}/validation.parquet); split 'test' "
                                   f"({uri}/test.parquet); remove the empty files or add records")


def test_json_lines_files_of_blank_lines_only_with_a_split_column_name_their_splits_alike(spark, tmp_path):
    """review39a: every file blank with --split-column: Spark said 'no rows in the data files (...)' where the
    local engine, which reads the file-named splits before it regroups the rows, names each split."""
    folder = tmp_path / "blank"
    folder.mkdir()
    (folder / "train.jsonl").write_text("\n\n")
    (folder / "test.jsonl").write_text("\n")
    local, on_spark = both_refuse(folder, split_column="split")
    assert local == (f"{folder}: no rows in split 'train' (train.jsonl); split 'test' (test.jsonl); "
                     "remove the empty files or add records")
    uri = folder.as_uri()
    assert on_spark == (f"{uri}: no rows in split 'train' ({uri}/train.jsonl); split 'test' "
                                   f"({uri}/test.jsonl); remove the empty files or add records")
