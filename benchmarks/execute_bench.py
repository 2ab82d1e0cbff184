"""Benchmark and acceptance check for ``workbench execute``.

1. The 164 canonical HumanEval solutions (bundled set) must all pass.
2. The 3,220 ICE-Score HumanEval-Python samples (MultiPL-E prompt + ``completion_multipl_e``,
   tests from the bundled HumanEval): agreement of ``passed`` with the shipped label, and
   every disagreement with its status and reason.
3. Throughput in samples/s, with the isolation level in force.

Usage::

    python benchmarks/execute_bench.py [--workers N] [--limit N] [--isolation LEVEL]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from workbench.data.loading import load_humaneval
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.data.samples import sample_key
from workbench.execute.result_file import read_results

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "ice-score" / "humaneval_python_flat.jsonl"
MULTIPL_E = REPO.parent / "shared" / "data" / "multipl-e-codex-python"


def _last_line(text: str) -> str:
    lines = [line for line in (text or "").strip().splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


def canonical_check(workdir: Path, config: ExecutionConfig) -> None:
    problems = load_humaneval()
    generations = workdir / "canonical.jsonl"
    with open(generations, "w", encoding="utf-8") as handle:
        for row in problems:
            handle.write(json.dumps({"task_id": row["task_id"], "sample_id": 0, "completion": row["canonical_solution"]}) + "\n")
    output = workdir / "canonical_results.jsonl"
    summary = run_execute(generations, output, config)
    rows = read_results(output)
    passed = sum(r["passed"] for r in rows)
    print(f"canonical solutions: {passed}/{len(rows)} pass "
          f"({summary.samples_per_s:.2f} samples/s, isolation {summary.isolation.level.value})")
    for row in rows:
        if not row["passed"]:
            print(f"  NOT PASSING {row['task_id']}: {row['status']} {row['detail']} | {_last_line(row['stderr_tail'])}")


def agreement_check(data: Path, workdir: Path, config: ExecutionConfig, limit: int | None) -> None:
    labels = {}
    with open(data, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            labels[sample_key(row["task_id"], row["sample_id"])] = int(row["passed"])
    config.prompt_column = "prompt"
    config.completion_column = "completion_multipl_e"
    config.max_samples = limit
    output = workdir / "ice_score_results.jsonl"
    started = time.monotonic()
    summary = run_execute(data, output, config)
    wall = time.monotonic() - started
    rows = read_results(output)
    agree = [r for r in rows if r["passed"] == labels[sample_key(r["task_id"], r["sample_id"])]]
    disagreements = [r for r in rows if r["passed"] != labels[sample_key(r["task_id"], r["sample_id"])]]
    print(f"ICE-Score HumanEval-Python: {len(rows)} samples, agreement with the shipped labels "
          f"{len(agree)}/{len(rows)} = {100 * len(agree) / max(1, len(rows)):.2f} %")
    print(f"  ours pass {sum(r['passed'] for r in rows)}, labels pass {sum(labels[sample_key(r['task_id'], r['sample_id'])] for r in rows)}")
    print(f"  status counts: {summary.counts}")
    print(f"  throughput: {summary.samples_per_s:.2f} samples/s over {summary.executed} samples "
          f"({summary.elapsed_s:.1f} s execution, {summary.calibration_s:.1f} s timing references, {wall:.1f} s total), "
          f"workers {config.workers or os.cpu_count()}, isolation {summary.isolation.level.value}")
    print(f"  isolation: {summary.isolation.description}")
    for note in summary.notes:
        print(f"  note: {note}")
    explanations = explain(disagreements, data, workdir, config)
    print(f"  disagreements ({len(disagreements)}):")
    for row in sorted(disagreements, key=lambda r: (int(r["task_id"].split("/")[1]), int(r["sample_id"]))):
        key = sample_key(row["task_id"], row["sample_id"])
        print(f"    {row['task_id']} sample {row['sample_id']}: label {labels[key]}, ours {row['passed']} "
              f"({row['status']}, {row['duration_s']:.2f}s of {row['timeout_s']}s): {explanations.get(key, '?')}")
        print(f"        ours: {row['detail']} | {_last_line(row['stderr_tail'])}")


def explain(disagreements: list[dict], data: Path, workdir: Path, config: ExecutionConfig) -> dict:
    """Give each disagreement a reason: rerun it with MultiPL-E's own tests (the label's
    source), and look up MultiPL-E's recorded status for the sample."""
    if not disagreements or not (MULTIPL_E / "problems.jsonl").is_file():
        return {}
    keys = {sample_key(r["task_id"], r["sample_id"]) for r in disagreements}
    recorded = {}
    with gzip.open(MULTIPL_E / "completions.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            key = sample_key(row["task_id"], row["completion_id"])
            if key in keys:
                recorded[key] = f"{row['status']} ({_last_line(row.get('stderr_tail', ''))})"
    generations = workdir / "disagreements.jsonl"
    with open(data, encoding="utf-8") as source, open(generations, "w", encoding="utf-8") as target:
        for line in source:
            row = json.loads(line)
            if sample_key(row["task_id"], row["sample_id"]) in keys:
                target.write(line)

    def rerun(name: str, **columns) -> dict:
        config_rerun = ExecutionConfig(prompt_column="prompt", completion_column="completion_multipl_e",
                                       workers=config.workers, isolation=config.isolation, overwrite=True, **columns)
        output = workdir / f"disagreements_{name}.jsonl"
        run_execute(generations, output, config_rerun)
        return {sample_key(r["task_id"], r["sample_id"]): r for r in read_results(output)}

    again = rerun("rerun")  # the same HumanEval tests: is our result reproducible?
    multipl_e = rerun("multipl_e_tests", problems=str(MULTIPL_E / "problems.jsonl"), test_column="tests")
    reasons = {}
    for row in disagreements:
        key = sample_key(row["task_id"], row["sample_id"])
        if again[key]["passed"] != row["passed"]:
            reasons[key] = (f"not reproducible: a rerun gives {again[key]['status']}; "
                            f"MultiPL-E recorded {recorded.get(key, '?')}")
        elif multipl_e[key]["passed"] != row["passed"]:
            reasons[key] = (f"test suites differ: with MultiPL-E's tests it "
                            f"{'passes' if multipl_e[key]['passed'] else 'fails'} ({multipl_e[key]['status']}), as labelled")
        else:
            reasons[key] = (f"same result with MultiPL-E's tests ({multipl_e[key]['status']}); "
                            f"MultiPL-E recorded {recorded.get(key, '?')}")
    return reasons


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--limit", type=int, default=None, help="only the first N ICE-Score samples")
    parser.add_argument("--isolation", default="auto")
    parser.add_argument("--keep", type=Path, default=None, help="keep result files in this folder")
    parser.add_argument("--skip-canonical", action="store_true")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"data not found: {args.data}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        make = lambda: ExecutionConfig(workers=args.workers, isolation=args.isolation, overwrite=True)  # noqa: E731
        if not args.skip_canonical:
            canonical_check(workdir, make())
        agreement_check(args.data, workdir, make(), args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
