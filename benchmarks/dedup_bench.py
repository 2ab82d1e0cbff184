#!/usr/bin/env python3
"""Benchmark ``workbench dedup`` against dpu-utils' ``DuplicateDetector`` on the synthetic corpus.

Prints, from one run: end-to-end files/s and peak memory (max RSS) of both tools on the
same corpus, their ratio, and each tool's clusters compared with the brute-force truth
and with each other (pair precision / recall, as ``compare_clusters.py`` computes them), and
the seconds of each stage of workbench's best run (interpreter start, imports, loading,
tokens and signatures, exact pre-pass, LSH, verification, clusters, report and writing).

* workbench: ``run_dedup`` on ``corpus.jsonl`` -- load, tokenize (tree-sitter), exact
  pre-pass, MinHash/LSH, exact verification, union-find, write every output.
* dpu-utils: ``DuplicateDetector`` on the pre-tokenized ``tokens/corpus.jsonl.gz`` (it does
  not tokenize), in its own virtual environment (not a project dependency). It keeps only
  tokens that look like identifiers, so each token is given to it as an identifier-shaped
  surrogate (``_<n>``, one per distinct token): it then applies the same rule to the same
  token bags (set Jaccard >= 0.8, multiset Jaccard >= 0.7, >= 20 tokens).

Each tool runs in a fresh subprocess; times are the subprocess's wall clock, including
imports. With ``--repeat N`` the tools take N turns (workbench, then dpu-utils, per turn),
each turn's times and ratio are printed, and each tool's best time is compared. Usage::

    python3 /work/shared/bench/make_dup_corpus.py --out /tmp/dupcorpus20k --n 20000 --seed 7
    python3 /work/shared/bench/brute_force_truth.py /tmp/dupcorpus20k
    python3 -m venv /tmp/dpu-venv && /tmp/dpu-venv/bin/pip install dpu-utils
    python benchmarks/dedup_bench.py /tmp/dupcorpus20k --dpu-python /tmp/dpu-venv/bin/python
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

OURS = r"""
import json, resource, sys, time
start = time.perf_counter()
import workbench
from workbench.dedup import DedupConfig, run_dedup
import workbench.dedup.job as job
imported = time.perf_counter()
stages = {"load": 0.0, "report + write": 0.0}

def timed_step(stage, function):
    # the steps run_dedup calls around the search, timed where run_dedup looks them up
    def wrapper(*args, **kwargs):
        clock = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            stages[stage] += time.perf_counter() - clock
    return wrapper

for name, stage in (("load_records", "load"), ("collect_rows", "load"), ("_load_reference", "load"),
                    ("build_report", "report + write"), ("write_outputs", "report + write")):
    setattr(job, name, timed_step(stage, getattr(job, name)))
corpus, out, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
run = run_dedup(corpus, DedupConfig(code_column="content", id_column="id", split_column="split", workers=workers,
                                    output_format="jsonl"), output_dir=out)
elapsed = time.perf_counter() - start
peak_kib = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"seconds_in_process": elapsed, "imports": imported - start, "stages": stages,
                  "files": run.report["overall"]["files"], "peak_kib": peak_kib,
                  "code": workbench.__path__[0],
                  "timings": run.report["timings_s"], "lsh": run.report["lsh"], "work": run.report["work"],
                  "cluster_shape": {k: v for k, v in run.report["cluster_shape"].items() if k != "definition"}}))
"""

DPU = r"""
import gzip, json, resource, sys, time
start = time.perf_counter()
from dpu_utils.codeutils.deduplication import DuplicateDetector
tokens_file, out = sys.argv[1], sys.argv[2]
surrogates = {}
detector = DuplicateDetector(set_similarity_threshold=0.8, multiset_similarity_threshold=0.7, min_num_tokens_per_document=20)
files = 0
with gzip.open(tokens_file, "rt") as handle:
    for line in handle:
        row = json.loads(line)
        files += 1
        detector.add_file(row["filename"], ["_%d" % surrogates.setdefault(t, len(surrogates)) for t in row["tokens"]])
clusters = [sorted(c) for c in detector.compute_duplicates()]
json.dump(clusters, open(out, "w"))
elapsed = time.perf_counter() - start
print(json.dumps({"seconds_in_process": elapsed, "files": files, "peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def timed(command: list[str], env: dict | None = None) -> tuple[float, dict]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{command[0]} failed:\n{done.stderr[-3000:]}")
    return wall, json.loads(done.stdout.strip().splitlines()[-1])


def _describe(package_dir: str) -> str:
    """The workbench package that ran, with its git commit when it is a checkout."""
    done = subprocess.run(["git", "-C", package_dir, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", package_dir, "status", "--porcelain"], capture_output=True, text=True)
    if done.returncode != 0:
        return package_dir
    return f"{package_dir} (git {done.stdout.strip()}{', uncommitted changes' if dirty.stdout.strip() else ''})"


#: the stage table's rows: (label, where the seconds come from); worker CPU rows are the
#: tokenizer processes' CPU seconds summed (they run in parallel, inside "tokens + signatures")
STAGES = [
    ("interpreter start", "start"), ("imports", "imports"), ("load (read, rows)", "load"),
    ("tokens + signatures (wall)", "tokenize_minhash"), ("  tree-sitter tokens (worker CPU)", "tokens_cpu"),
    ("  signatures (worker CPU)", "signatures_cpu"), ("exact pre-pass", "exact"), ("LSH", "lsh_index"),
    ("exact text (short files)", "exact_text"), ("verification", "verify"), ("clusters", "clusters"),
    ("cluster shapes", "shape"), ("report + write", "report + write"),
    ("other", "other"),
]


def stage_table(wall: float, run: dict) -> str:
    """The seconds of each stage of one workbench run (see :data:`STAGES`), largest marked."""
    steps = dict(run["timings"])
    seconds = {"start": wall - run["seconds_in_process"], "imports": run["imports"], **run["stages"], **steps}
    counted = [k for k in ("start", "imports", "load", "tokenize_minhash", "exact", "lsh_index", "exact_text", "verify",
                           "clusters", "shape", "report + write")]
    seconds["other"] = wall - sum(seconds.get(k, 0.0) for k in counted)
    largest = max(counted + ["other"], key=lambda k: seconds.get(k, 0.0))
    lines = [f"  {'stage':<34} {'seconds':>8} {'share':>6}"]
    for label, key in STAGES:
        if key not in seconds:
            lines.append(f"  {label:<34} {'n/a':>8}")
            continue
        share = "" if key.endswith("_cpu") else f"{100 * seconds[key] / wall:5.1f}%"
        lines.append(f"  {label:<34} {seconds[key]:8.3f} {share:>6}{'  <- largest' if key == largest else ''}")
    lines.append(f"  {'total (wall)':<34} {wall:8.3f}")
    return "\n".join(lines)


def pairs(clusters: list[list[str]]) -> set[tuple[str, str]]:
    return {tuple(sorted(p)) for c in clusters for p in itertools.combinations(c, 2)}


def compare(name: str, predicted: list, truth: list) -> str:
    p, t = pairs(predicted), pairs(truth)
    tp = len(p & t)
    return (f"{name}: clusters {len(predicted)} vs {len(truth)}; pair precision {tp / max(1, len(p)):.4f} "
            f"recall {tp / max(1, len(t)):.4f} ({len(p)} vs {len(t)} pairs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a make_dup_corpus.py output folder")
    parser.add_argument("--dpu-python", default="/tmp/dpu-venv/bin/python", help="python of a venv with dpu-utils")
    parser.add_argument("--workers", type=int, default=0, help="workbench tokenizer processes (0 = one per CPU)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="turns (one run of each tool per turn); each tool's best wall time is reported")
    args = parser.parse_args()
    corpus = args.corpus
    truth_file = corpus / "truth_clusters.json"
    truth = json.loads(truth_file.read_text()) if truth_file.exists() else None

    print(f"corpus {corpus}; cpus available: {len(os.sched_getaffinity(0))}; load average {os.getloadavg()[0]:.1f}")
    dpu_python = Path(args.dpu_python)
    if not dpu_python.exists():
        print(f"dpu-utils: skipped ({dpu_python} not found; create a venv with dpu-utils and pass --dpu-python)")
    with tempfile.TemporaryDirectory() as tmp:
        out, dpu_out = Path(tmp) / "ours", Path(tmp) / "dpu_clusters.json"
        ours_runs, dpu_runs = [], []
        # the tools take turns, so that a change in the machine's load hits both alike
        for turn in range(1, args.repeat + 1):
            ours_runs.append(timed([sys.executable, "-c", OURS, str(corpus / "corpus.jsonl"), str(out), str(args.workers)]))
            line = f"run {turn}: workbench {ours_runs[-1][0]:.2f} s (load average after {os.getloadavg()[0]:.1f})"
            if dpu_python.exists():
                dpu_runs.append(timed([str(dpu_python), "-c", DPU, str(corpus / "tokens" / "corpus.jsonl.gz"), str(dpu_out)]))
                line += (f", dpu-utils {dpu_runs[-1][0]:.2f} s (load average after {os.getloadavg()[0]:.1f}); "
                         f"ratio {dpu_runs[-1][0] / ours_runs[-1][0]:.2f}x")
            print(line)
        ours_wall, ours = min(ours_runs, key=lambda r: r[0])
        ours_clusters = json.loads((out / "clusters.json").read_text())
        with open(out / "cluster_shapes.csv", newline="") as handle:  # the token rule's clusters, as the truth's
            kinds = [shape["kind"] for shape in csv.DictReader(handle)]
        ours_clusters = [cluster for cluster, kind in zip(ours_clusters, kinds) if kind == "tokens"]
        files = ours["files"]
        lsh = ours["lsh"]
        print(f"workbench code: {_describe(ours['code'])}")
        print(f"workbench dedup (best of {args.repeat}): {files} files in {ours_wall:.2f} s wall = "
              f"{files / ours_wall:.0f} files/s; peak RSS {ours['peak_kib'] / 1024:.0f} MiB; steps (s) {ours['timings']}")
        print(stage_table(ours_wall, ours))
        print(f"  LSH: num_perm={lsh['num_perm']} bands={lsh['bands']} rows={lsh['rows']} tuned for "
              f"{lsh['tuned_for_threshold']} weights {lsh['weights_false_positive_false_negative']}; scheme "
              f"{lsh['scheme']}, {lsh['token_hash']}, datasketch {lsh['datasketch_version']}; work {ours['work']}")
        print(f"  cluster shape: {ours['cluster_shape']}")
        if truth is not None:
            print("  " + compare("workbench vs truth", ours_clusters, truth))
        if not dpu_runs:
            return
        dpu_wall, dpu = min(dpu_runs, key=lambda r: r[0])
        dpu_clusters = json.loads(dpu_out.read_text())
        print(f"dpu-utils DuplicateDetector (best of {args.repeat}): {dpu['files']} files in {dpu_wall:.2f} s wall = "
              f"{dpu['files'] / dpu_wall:.0f} files/s; peak RSS {dpu['peak_kib'] / 1024:.0f} MiB (pre-tokenized input)")
        if truth is not None:
            print("  " + compare("dpu-utils vs truth", dpu_clusters, truth))
        print("  " + compare("workbench vs dpu-utils", ours_clusters, dpu_clusters))
        identical = sorted(map(sorted, ours_clusters)) == sorted(map(sorted, dpu_clusters))
        print(f"speed ratio workbench / dpu-utils (best runs): {(files / ours_wall) / (dpu['files'] / dpu_wall):.2f}x; "
              f"identical clusters: {identical}")

if __name__ == "__main__":
    main()
