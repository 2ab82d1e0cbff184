"""Time ``load_records`` on realistic data files, to see what typing every column over whole files
(:mod:`workbench.data.file_types`) costs: MultiPL-E Codex-Python completions (32,200 rows) repeated
into a ~70 MB JSON Lines file, the same rows as a folder of 8 JSON Lines shards, as one CSV file
and as a folder of 4 CSV shards. Each load starts from an empty ``datasets`` cache (a cached load
would not parse the files at all).

Prints, per case, the best wall-clock and the CPU seconds of that run (all threads: pyarrow
parses in several) over ``--repeat`` runs, and the type scan alone, with the load average, so a
reader can tell a busy machine from a slow program. Run it with one checkout, then another, on
``PYTHONPATH`` to compare:

    python benchmarks/loading_bench.py [--copies 4] [--repeat 3] [--work /tmp/loading-bench]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multipl-e-codex-python" / "completions.jsonl.gz"


def write_inputs(data: Path, work: Path, copies: int) -> dict[str, Path]:
    """The benchmark's files under ``work`` (made once): case name -> file or folder."""
    import pandas as pd

    with gzip.open(data, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    table = [dict(row, id=f"{copy}:{row['task_id']}:{row['completion_id']}") for copy in range(copies) for row in rows]
    cases = {"jsonl file": work / "one.jsonl", "jsonl folder (8 shards)": work / "jsonl",
             "csv file": work / "one.csv", "csv folder (4 shards)": work / "csv"}
    if all(path.exists() for path in cases.values()):
        return cases
    work.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(row) + "\n" for row in table]
    cases["jsonl file"].write_text("".join(lines))
    cases["jsonl folder (8 shards)"].mkdir(exist_ok=True)
    step = -(-len(lines) // 8)
    for shard in range(8):
        (cases["jsonl folder (8 shards)"] / f"train-{shard:05d}-of-00008.jsonl").write_text(
            "".join(lines[shard * step:(shard + 1) * step]))
    frame = pd.DataFrame(table)
    frame.to_csv(cases["csv file"], index=False)
    cases["csv folder (4 shards)"].mkdir(exist_ok=True)
    step = -(-len(frame) // 4)
    for shard in range(4):
        frame.iloc[shard * step:(shard + 1) * step].to_csv(
            cases["csv folder (4 shards)"] / f"train-{shard:05d}-of-00004.csv", index=False)
    return cases


def size_mb(path: Path) -> float:
    files = [path] if path.is_file() else list(path.iterdir())
    return sum(file.stat().st_size for file in files) / 1e6


def timed(function, repeat: int, cache: Path) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of that run), each run on an empty ``datasets`` cache."""
    import datasets

    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        datasets.config.HF_DATASETS_CACHE = cache
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    return best


def _scan(name: str, files: list[Path]):
    """The type scan of the checkout under test alone (``None`` for a checkout without it)."""
    try:
        from workbench.data import file_types
    except ImportError:
        return None
    if name.startswith("jsonl"):
        return lambda: [file_types.json_part_schemas(file, file.name) for file in files]
    return lambda: file_types.survey_csv(files)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--copies", type=int, default=4, help="times the 32,200 completions are repeated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "loading-bench")
    args = parser.parse_args()
    import datasets

    datasets.disable_progress_bars()
    import workbench
    from workbench.data import load_records

    cases = write_inputs(args.data, args.work, args.copies)
    cache = args.work / "hf-cache"
    print(f"workbench from {Path(workbench.__file__).parent}; datasets {datasets.__version__}; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name, path in cases.items():
        rows = load_records(path).num_rows  # warm the imports; the timed runs start from an empty cache
        wall, cpu = timed(lambda path=path: load_records(path), args.repeat, cache)
        line = f"{name:24s} {size_mb(path):6.1f} MB {rows:7d} rows  load {wall:6.2f} s wall {cpu:6.2f} s CPU"
        scan = _scan(name, [path] if path.is_file() else sorted(path.iterdir()))
        if scan is not None:
            scan_wall, scan_cpu = timed(scan, args.repeat, cache)
            line += f"  (type scan alone {scan_wall:5.2f} s wall {scan_cpu:5.2f} s CPU)"
        print(line, flush=True)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
