"""A Hugging Face-style dataset folder (``data/train-00000-of-00001.parquet``,
``data/validation-...``, ``data/test-...``, ``README.md``) is read as its three splits and its
``README.md`` is listed in ``unreadable.csv`` as not a data file with an empty split: it is in no
split (the train split holds no unreadable row; report.json counts none), as the other files no split
reads are listed. A new-user probe found it listed under ``train``."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from unique_functions import make_function
from workbench.dedup import DedupConfig, run_dedup


def test_readme_of_a_dataset_folder_is_listed_in_no_split(tmp_path: Path) -> None:
    folder = tmp_path / "snapshot"
    (folder / "data").mkdir(parents=True)
    for n, split in enumerate(("train", "validation", "test")):
        rows = [{"id": f"{split}-{i}", "content": make_function(random.Random(10 * n + i), f"f{n}_{i}")} for i in range(3)]
        pq.write_table(pa.Table.from_pylist(rows), folder / "data" / f"{split}-00000-of-00001.parquet")
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n---\n# a dataset card\n")
    out = tmp_path / "out"
    run = run_dedup(str(folder), DedupConfig(workers=1), output_dir=out)
    assert list(run.report["splits"]) == ["train", "validation", "test"]
    assert run.report["splits"]["train"]["files"] == 3 and run.report["splits"]["train"]["failed"] == 0
    with open(out / "unreadable.csv") as handle:
        listed = {row["id"]: row for row in csv.DictReader(handle)}
    assert listed["README.md"]["reason"].startswith("not loaded: not a data file")
    assert listed["README.md"]["split"] == "", listed["README.md"]
