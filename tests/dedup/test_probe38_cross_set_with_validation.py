"""Probe 38: ``--cross-set`` decides which copy a cluster spanning the train and test splits keeps
(docs/dedup.md, Method step 5: "keeps a train copy (``--cross-set remove-test``) or a test copy
(``--cross-set remove-train``)"). When the cluster also holds a row of a third split (a Hugging Face
dataset's ``validation``), ``remove-train`` keeps the validation copy instead and removes the test
copy, so the test split loses a row the policy says it keeps (13 of 99 clusters on 60 tasks of the
ICE-Score set split 3/1/1 by sample). Real ``datasets`` reading of a folder of Parquet files."""

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
