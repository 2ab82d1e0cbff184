"""Time the Spark engine's read of a folder of many small Parquet files
(:func:`workbench.dedup.spark_source.read_rows`), to see what the driver spends on the files'
footers (their schemas) before and during the read.

Makes (once, under ``--work``) ``--files`` Parquet shards (``train-00000-of-00500.parquet`` ...) of
the MultiPL-E Codex-Python completions (32,200 rows, about 64 a file) in two forms: ``flat`` (the
file's own columns) and ``nested`` (a ``licenses`` list-of-text column beside them, as The Stack's
``max_stars_repo_licenses``; a list column makes the engine compare the files' nested types). Then,
in one local Spark session (``local[2]``, started once, not timed), prints for each form over
``--repeat`` reads the best and median wall-clock of the whole ``read_rows`` and of the driver's
parts of it that touch the footers (each function's own total inside the read):

* ``_parquet_schemas``: every file's footer read on the driver (a list column, a type clash), wall-clock;
* ``_parquet_types``: one footer's read, summed over the files (over threads where they run at once);
* ``_mixed_parquet``: Spark's ``mergeSchema`` of a split's files again (one job over the footers);
* ``_read_split`` / ``_read_merged``: ``spark.read`` of a split (its schema: a job over the footers).

Parts a checkout does not have print as absent. Run it with one checkout, then another, on
``PYTHONPATH`` to compare:

    python benchmarks/spark_parquet_folder_bench.py [--files 500] [--repeat 3] [--work /tmp/spark-parquet-bench]
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import statistics
import sys
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multipl-e-codex-python" / "completions.jsonl.gz"
TIMED = ("_parquet_schemas", "_parquet_types", "_mixed_parquet", "_read_split", "_read_merged")


def write_folders(data: Path, work: Path, files: int) -> dict[str, Path]:
    """The two folders of ``files`` shards each under ``work`` (made once): form -> folder."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folders = {form: work / f"{form}-{files}" for form in ("flat", "nested")}
    if all((folder / ".complete").exists() for folder in folders.values()):
        return folders
    with gzip.open(data, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    for row in rows:
        row["id"] = f"{row['task_id']}:{row['completion_id']}"
    for form, folder in folders.items():
        folder.mkdir(parents=True, exist_ok=True)
        for shard in range(files):
            part = rows[shard * len(rows) // files:(shard + 1) * len(rows) // files]
            if form == "nested":
                part = [dict(row, licenses=["MIT"] if n % 3 else ["MIT", "Apache-2.0"]) for n, row in enumerate(part)]
            pq.write_table(pa.Table.from_pylist(part), folder / f"train-{shard:05d}-of-{files:05d}.parquet")
        (folder / ".complete").write_text("")
    return folders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--work", type=Path, default=Path("/tmp/spark-parquet-bench"))
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    import workbench
    from workbench.dedup import spark_source

    folders = write_folders(args.data, args.work, args.files)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path(workbench.__file__).parents[1]),
                                                             os.environ.get("PYTHONPATH")]))
    spark = (SparkSession.builder.master("local[2]").appName("parquet folder bench")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spent: dict[str, float] = {}

    def timed(name, function):
        @functools.wraps(function)
        def wrapper(*a, **k):
            start = time.perf_counter()
            try:
                return function(*a, **k)
            finally:
                spent[name] = spent.get(name, 0.0) + time.perf_counter() - start
        return wrapper

    present = [name for name in TIMED if hasattr(spark_source, name)]
    for name in present:
        setattr(spark_source, name, timed(name, getattr(spark_source, name)))
    print(f"workbench from {Path(workbench.__file__).parent}; {args.files} files a form; "
          f"load average {os.getloadavg()[0]:.2f}")
    for form, folder in folders.items():
        totals, parts = [], {name: [] for name in present}
        for run in range(args.repeat + 1):  # the first read warms the JVM's code and the file cache
            spent.clear()
            start = time.perf_counter()
            source = spark_source.read_rows(spark, folder.as_uri() + "/", code_column=["completion"],
                                            id_column=["id"], language="python", group_column=None,
                                            split_column=None, splits=None)
            elapsed = time.perf_counter() - start
            rows = len(source.rows.ids)
            source.keyed.unpersist()
            if run:
                totals.append(elapsed)
                for name in present:
                    parts[name].append(spent.get(name, 0.0))
        print(f"{form} ({rows} rows): read_rows best {min(totals):6.2f} s  median {statistics.median(totals):6.2f} s")
        for name in TIMED:
            if name in parts:
                print(f"    {name:16s} best {min(parts[name]):6.2f} s  median {statistics.median(parts[name]):6.2f} s")
            else:
                print(f"    {name:16s} absent")
    spark.stop()


if __name__ == "__main__":
    main()
