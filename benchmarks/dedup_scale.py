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


def measured_run(command: list[str]) -> tuple[dict, float, int, int]:
    """Run ``command``; return its JSON line, wall seconds, peak summed PSS and peak single RSS (KiB)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    peaks = [0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.25):
            sizes = [memory_kib(pid) for pid in descendants(process.pid)]
            peaks[0] = max(peaks[0], sum(p for p, _ in sizes))
            peaks[1] = max(peaks[1], max((r for _, r in sizes), default=0))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = process.communicate()
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])} failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1]), wall, peaks[0], peaks[1]


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


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--corpora", type=Path, default=Path(tempfile.gettempdir()) / "dupscale")
    parser.add_argument("--engines", nargs="+", default=["local", "spark"], choices=["local", "spark"])
    parser.add_argument("--spark-conf", action="append", default=[], help="KEY=VALUE for the Spark runs")
    args = parser.parse_args()
    print(f"# {os.cpu_count()} CPUs; load average 1/5/15 min shown before and after each run; spark conf {args.spark_conf}")
    for size in args.sizes:
        corpus = corpus_for(size, args.corpora)
        outputs = {}
        for engine in args.engines:
            out = Path(tempfile.mkdtemp(prefix=f"scale-{engine}-{size}-"))
            before = load()
            facts, wall, pss, rss = measured_run(
                [sys.executable, "-c", RUN, str(corpus / "corpus.jsonl"), str(out), engine, json.dumps(args.spark_conf)])
            outputs[engine] = out
            print(f"{size:>8} files  {engine:<5} {facts['files'] / wall:7.0f} files/s ({wall:7.1f} s wall)  "
                  f"peak PSS (tree) {pss / 1024:7.0f} MiB  peak RSS (one process) {rss / 1024:6.0f} MiB  "
                  f"clusters {facts['clusters']}  largest bucket {facts['largest_bucket']}  load {before} -> {load()}  "
                  f"steps (s) {facts['timings']}", flush=True)
        if len(outputs) == 2:
            print(f"{size:>8} files  parity (clusters.json, pairs.csv, removed.csv, splits, report without timings): "
                  f"{'identical' if same_outputs(outputs['local'], outputs['spark']) else 'DIFFERENT'}", flush=True)


if __name__ == "__main__":
    main()
