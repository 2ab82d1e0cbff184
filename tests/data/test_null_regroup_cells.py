"""A null (NaN, blank) cell in a column rows are regrouped or named by is refused in one line
naming the column and the row, not turned into the text ``"None"``: the split column
(``--split-column``), the id column(s) and the group column of ``workbench dedup``.
Real pyarrow Parquet files, the real loader (``datasets``) and the real CLI.

Found by the new-user pass newuser36: split = [train, train, null] wrote ``None.parquet`` and
suggested ``--test-split None``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data import load_records
from workbench.errors import DataError


def parquet(tmp_path, **columns) -> str:
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"code": ["x = 1", "y = 2", "z = 3"], **columns}), path)
    return str(path)


def test_a_null_split_cell_is_refused_naming_the_column_and_row(tmp_path):
    path = parquet(tmp_path, id=[1, 2, 3], split=["train", "train", None])
    with pytest.raises(DataError) as caught:
        load_records(path, split_column="split")
    message = str(caught.value)
    assert "1 row has no value in --split-column 'split'" in message and "row 3," in message, message
    assert "\n" not in message


def test_nan_split_cells_are_missing_too(tmp_path):
    # a blank split name ("", " ", "\t") is a missing one too (tests/dedup/test_spark_input_refusals.py)
    with pytest.raises(DataError,
                       match=r"2 rows have no value in --split-column 'split' \(null, NaN or blank; rows 1, 3,"):
        load_records(parquet(tmp_path, split=[None, "train", None]), split_column="split")
    with pytest.raises(DataError, match=r"1 row has no value in --split-column 'fold' .*row 2,"):
        load_records(parquet(tmp_path, fold=[1.0, float("nan"), 2.0]), split_column="fold")


def test_a_real_split_named_None_is_still_a_split(tmp_path):
    loaded = load_records(parquet(tmp_path, split=["train", "None", "None"]), split_column="split")
    assert sorted(loaded.splits) == ["None", "train"]


@pytest.mark.parametrize("options, column, expected", [
    (["--id-column", "id"], "id", "'id' (null, NaN or blank; row 1,"),  # row 1 of split test
    (["--id-column", "id,k"], "k", "'k' (null, NaN or blank; row 2,"),  # was the id '2:None'
    (["--id-column", "k2", "--group-column", "g"], "g", "'g' (null, NaN or blank; row 2,"),  # was a group None
])
def test_dedup_refuses_null_ids_and_groups(tmp_path, options, column, expected):
    path = parquet(tmp_path, id=[1, 2, None], k=["u", None, "v"], k2=["a", "b", "c"], g=["a", None, "b"],
                   split=["train", "train", "test"])
    result = CliRunner().invoke(app, ["dedup", path, "--split-column", "split", "--code-column", "code", *options,
                                      "-o", str(tmp_path / "out"), "--no-progress", "--workers", "1"],
                                terminal_width=400)
    assert result.exit_code != 0, result.output
    said = " ".join(result.output.split())
    assert expected in said and column in said, said
    assert not (tmp_path / "out" / "kept.csv").exists()


@pytest.mark.parametrize("options, expected", [
    ({"split_column": "split"}, "1 row has no value in --split-column 'split' (null, NaN or blank; row 3,"),
    ({"id_column": "id,k"}, "1 row has no value in --id-column 'id,k' (null, NaN or blank; row 2,"),
    ({"id_column": "k2", "group_column": "g"}, "1 row has no value in --group-column 'g' (null, NaN or blank; row 2,"),
])
def test_spark_refuses_them_alike_on_a_uri_it_reads(spark, tmp_path, options, expected):
    """A ``file://`` URI is read by Spark itself (``workbench.dedup.spark_source``), not the local loader."""
    from workbench.dedup import DedupConfig, run_dedup

    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"code": ["x = 1", "y = 2", "z = 3"], "id": [1, 2, 3], "k": ["u", None, "v"],
                             "k2": ["a", "b", "c"], "g": ["a", None, "b"], "split": ["train", "train", None]}),
                   tmp_path / "data" / "train.parquet")
    config = DedupConfig(code_column="code", engine="spark", spark_master="local[2]", workers=1,
                         **{"id_column": "id", **options})
    with pytest.raises(DataError) as caught:
        run_dedup((tmp_path / "data").as_uri(), config, output_dir=tmp_path / "out")
    assert expected in str(caught.value), str(caught.value)
