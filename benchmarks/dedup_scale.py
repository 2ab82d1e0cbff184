#!/usr/bin/env python3
"""``workbench dedup`` at scale: the local engine and ``--engine spark`` (``local[2]``) on synthetic
corpora of growing size, with files/s, peak memory and parity of the outputs.

For each size N the corpus is ``../shared/bench/make_dup_corpus.py --n N --seed 7`` (generated
into ``--corpora`` once). Each engine runs ``run_dedup`` end to end (load, tokens, signatures,
exact pre-pass, LSH, verification, clusters, every output) in a fresh subprocess; the parent
samples the memory of that subprocess and all its descendants every 0.25 s (tokenizer workers;
for Spark the JVM and its Python workers) from ``/proc``: the peak of the summed PSS
(proportional set size: a page shared by k processes counts 1/k in each, so the sum is the real
total) and the peak RSS of the largest single process. Parity: ``clusters.json``, ``pairs.csv``
and ``removed.csv`` compared byte for byte, and ``report.json`` without its timings. The load
average is printed next to every figure (the machine is shared). Usage::

    python benchmarks/dedup_scale.py --sizes 20000 100000 --corpora /tmp/dupscale \\
        --spark-conf spark.driver.memory=4g | tee benchmarks/results/dedup_scale.txt

``--engines spark spark-uri`` compares the Spark engine with the corpus loaded by the driver and read
by Spark itself (a ``file://`` URI: the texts stay on the executors, Spark writes the splits); the
peak RSS of the run's own process is then the driver's Python.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED_BENCH = Path(os.environ.get("WORKBENCH_SHARED", REPO.parent / "shared")) / "bench"

RUN = r"""
import json, sys, time
start = time.perf_counter()
from workbench.dedup import DedupConfig, run_dedup
corpus, out, engine, conf = sys.argv[1], sys.argv[2], sys.argv[3], tuple(json.loads(sys.argv[4]))
if engine == "spark-uri":  # Spark reads the file itself: the texts never reach this (the driver's) process
    from pathlib import Path
    corpus, engine = Path(corpus).resolve().as_uri(), "spark"
config = DedupConfig(code_column="content", id_column="id", split_column="split", workers=2, output_format="jsonl",
                     engine=engine, spark_master="local[2]", spark_conf=conf)
run = run_dedup(corpus, config, output_dir=out)
print(json.dumps({"seconds_in_process": time.perf_counter() - start, "files": run.report["overall"]["files"],
                  "clusters": run.report["overall"]["clusters"], "timings": run.report["timings_s"],
                  "largest_bucket": run.report["work"]["largest_bucket"]}))
"""


def descendants(root: int) -> list[int]:
    """``root`` and every process below it (from ``/proc/*/stat``)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as handle:
                    parent = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, []))
    return found


def memory_kib(pid: int) -> tuple[int, int]:
    """(PSS, RSS) of one process in KiB, from ``/proc/PID/smaps_rollup``; (0, 0) once it is gone."""
    pss = rss = 0
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    pss = int(line.split()[1])
                elif line.startswith("Rss:"):
                    rss = int(line.split()[1])
    except OSError:
        pass
    return pss, rss


def measured_run(command: list[str]) -> tuple[dict, float, int, int, int]:
    """Run ``command``; return its JSON line, wall seconds, peak summed PSS, peak single RSS and the peak
    RSS of the command's own process (for a Spark run: the driver's Python) (KiB)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    peaks = [0, 0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            pids = descendants(process.pid)
            sizes = [memory_kib(pid) for pid in pids]
            peaks[0] = max(peaks[0], sum(p for p, _ in sizes))
            peaks[1] = max(peaks[1], max((r for _, r in sizes), default=0))
            peaks[2] = max(peaks[2], sizes[0][1] if sizes else 0)  # descendants() lists the root first

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1]), wall, peaks[0], peaks[1], peaks[2]


def corpus_for(size: int, corpora: Path) -> Path:
    folder = corpora / f"dupcorpus{size}"
    if not (folder / "corpus.jsonl").exists():
        subprocess.run([sys.executable, str(SHARED_BENCH / "make_dup_corpus.py"), "--out", str(folder),
                        "--n", str(size), "--seed", "7"], check=True, capture_output=True)
    return folder


def same_outputs(left: Path, right: Path) -> bool:
    names = ["clusters.json", "pairs.csv", "removed.csv", "train.jsonl", "test.jsonl"]
    if not all(filecmp.cmp(left / n, right / n, shallow=False) for n in names):
        return False
    reports = [json.loads((folder / "report.json").read_text()) for folder in (left, right)]
    for report in reports:
        report.pop("timings_s")
    return reports[0] == reports[1]


def same_kept_rows(left: Path, right: Path) -> bool:
    """The small outputs byte for byte, the report without timings and source, and the kept rows
    ((id, content) per split) of a local split file against a folder of Spark's part files."""
    if not all(filecmp.cmp(left / n, right / n, shallow=False) for n in ["clusters.json", "pairs.csv", "removed.csv"]):
        return False
    reports = [json.loads((folder / "report.json").read_text()) for folder in (left, right)]
    for report in reports:
        report.pop("timings_s"), report.pop("source")
    if reports[0] != reports[1]:
        return False

    def rows(path: Path) -> set:
        files = sorted(path.glob("part-*.json")) if path.is_dir() else [path]
        return {(row["id"], row["content"]) for file in files for row in map(json.loads, file.read_text().splitlines())}

    return all(rows(left / f"{split}.jsonl") == rows(right / split) for split in ("train", "test"))


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--corpora", type=Path, default=Path(tempfile.gettempdir()) / "dupscale")
    parser.add_argument("--engines", nargs="+", default=["local", "spark"], choices=["local", "spark", "spark-uri"],
                        help="spark: the driver loads the corpus; spark-uri: Spark reads it (file://) and writes the splits")
    parser.add_argument("--spark-conf", action="append", default=[], help="KEY=VALUE for the Spark runs")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="the output folder of an earlier local-engine run on the same corpus (one size only): "
                             "compared with instead of running the local engine again (a 1M-file local run takes ~45 min)")
    args = parser.parse_args()
    if args.baseline is not None and (len(args.sizes) != 1 or "local" in args.engines):
        parser.error("--baseline stands for the local run of one size: give one --sizes and leave 'local' out of --engines")
    print(f"# {os.cpu_count()} CPUs; load average 1/5/15 min shown before and after each run; spark conf {args.spark_conf}")
    for size in args.sizes:
        corpus = corpus_for(size, args.corpora)
        outputs = {} if args.baseline is None else {"local": args.baseline}
        if args.baseline is not None:
            print(f"{size:>8} files  local (baseline, not rerun): {args.baseline}", flush=True)
        for engine in args.engines:
            out = Path(tempfile.mkdtemp(prefix=f"scale-{engine}-{size}-"))
            before = load()
            facts, wall, pss, rss, driver = measured_run(
                [sys.executable, "-c", RUN, str(corpus / "corpus.jsonl"), str(out), engine, json.dumps(args.spark_conf)])
            outputs[engine] = out
            print(f"{size:>8} files  {engine:<5} {facts['files'] / wall:7.0f} files/s ({wall:7.1f} s wall)  "
                  f"peak PSS (tree) {pss / 1024:7.0f} MiB  peak RSS (one process) {rss / 1024:6.0f} MiB  "
                  f"peak RSS (the run's own process{', the Spark driver' if engine != 'local' else ''}) "
                  f"{driver / 1024:6.0f} MiB  "
                  f"clusters {facts['clusters']}  largest bucket {facts['largest_bucket']}  load {before} -> {load()}  "
                  f"steps (s) {facts['timings']}", flush=True)
        if "local" in outputs and "spark" in outputs:
            print(f"{size:>8} files  parity (clusters.json, pairs.csv, removed.csv, splits, report without timings): "
                  f"{'identical' if same_outputs(outputs['local'], outputs['spark']) else 'DIFFERENT'}", flush=True)
        base = outputs.get("local", outputs.get("spark"))
        if "spark-uri" in outputs and base is not None:
            print(f"{size:>8} files  parity of spark-uri (clusters.json, pairs.csv, removed.csv, report without timings "
                  f"and source, kept rows per split): "
                  f"{'identical' if same_kept_rows(base, outputs['spark-uri']) else 'DIFFERENT'}", flush=True)


if __name__ == "__main__":
    main()
