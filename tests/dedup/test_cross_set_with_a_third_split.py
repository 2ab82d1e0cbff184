"""``--cross-set`` decides which copy a cluster spanning the train and test splits keeps
(docs/dedup.md, Method step 5: "keeps a train copy (``--cross-set remove-test``) or a test copy
(``--cross-set remove-train``)"), also when the cluster holds a row of a third split (a Hugging Face
dataset's ``validation``, a source folder's ``dev/``): that copy is removed. A new-user probe found
``remove-train`` keeping the validation copy and removing the test copy (13 of 99 clusters on 60
tasks of the ICE-Score set split 3/1/1 by sample); the default ``remove-test`` kept a ``dev/`` copy
of a source folder (folders are read in name order: ``dev`` before ``train``). Real ``datasets``
reading of a folder of Parquet files, a real source folder."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from unique_functions import make_function
from workbench.dedup import DedupConfig, run_dedup


def _three_split_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "snapshot"
    (folder / "data").mkdir(parents=True)
    shared = make_function(random.Random(0), "shared")
    for n, split in enumerate(("train", "validation", "test")):
        rows = [{"id": f"{split}-copy", "content": shared},
                {"id": f"{split}-own", "content": make_function(random.Random(100 + n), f"own_{split}")}]
        pq.write_table(pa.Table.from_pylist(rows), folder / "data" / f"{split}-00000-of-00001.parquet")
    return folder


@pytest.mark.parametrize("policy, kept_split", [("remove-train", "test"), ("remove-test", "train")])
def test_a_cluster_spanning_train_validation_and_test_keeps_the_copy_the_policy_names(tmp_path, policy, kept_split):
    out = tmp_path / "out"
    run_dedup(str(_three_split_folder(tmp_path)), DedupConfig(workers=1, cross_set=policy), output_dir=out)
    with open(out / "kept.csv") as handle:
        kept = {row["id"] for row in csv.DictReader(handle)}
    copies = {"train-copy", "validation-copy", "test-copy"}
    assert kept & copies == {f"{kept_split}-copy"}, sorted(kept)


def _source_folder(tmp_path: Path, split_folders: tuple[str, ...]) -> Path:
    folder = tmp_path / "src"
    shared = make_function(random.Random(0), "shared")
    for n, split in enumerate(split_folders):
        (folder / split).mkdir(parents=True)
        (folder / split / "copy.py").write_text(shared)
        (folder / split / "own.py").write_text(make_function(random.Random(200 + n), f"own_{split}"))
    return folder


@pytest.mark.parametrize("policy, kept_split", [("remove-test", "train"), ("remove-train", "test")])
def test_a_cluster_of_dev_train_and_test_files_keeps_the_copy_the_policy_names(tmp_path, policy, kept_split):
    # dev/ is read first; with --keep first it used to be kept under the default remove-test
    out = tmp_path / "out"
    run_dedup(str(_source_folder(tmp_path, ("dev", "test", "train"))), DedupConfig(workers=1, cross_set=policy),
              output_dir=out)
    with open(out / "kept.csv") as handle:
        kept = {row["id"] for row in csv.DictReader(handle)}
    assert kept & {"dev/copy.py", "test/copy.py", "train/copy.py"} == {f"{kept_split}/copy.py"}, sorted(kept)


def test_a_cluster_of_dev_and_train_files_has_no_cross_set_rule(tmp_path):
    # documented: without a test copy --keep first keeps the first file read (dev/), --keep train-first the train one
    kept = {}
    for keep in ("first", "train-first"):
        out = tmp_path / keep
        run_dedup(str(_source_folder(tmp_path / f"in-{keep}", ("dev", "train"))), DedupConfig(workers=1, keep=keep),
                  output_dir=out)
        with open(out / "kept.csv") as handle:
            kept[keep] = {row["id"] for row in csv.DictReader(handle)} & {"dev/copy.py", "train/copy.py"}
    assert kept == {"first": {"dev/copy.py"}, "train-first": {"train/copy.py"}}
