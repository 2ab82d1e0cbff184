"""Agreement of the Java / C++ plugin runners with the shipped execution labels.

For every sample of ``ice-score/humaneval_{java,cpp}_grade.json`` (161 tasks x 20 Codex
samples, MultiPL-E generations), build program = prompt + generated body + MultiPL-E test
harness (``multipl-e-codex-{lang}/problems.jsonl``), run it through the language plugin's
runner, and compare pass/fail with ``grade-N.execution``. Prints agreement, the confusion
matrix and the disagreements grouped by cause.

Execution: ``--executor sandbox`` runs each RunSpec in ``workbench execute``'s sandbox
(``workbench.execute.Sandbox``: bubblewrap, rlimits, the fd token protocol);
``--executor unsandboxed`` runs them in the same sandbox at its ``unsandboxed`` isolation
level (no isolation, as the calling user; same limits, timeout and status rules). The
programs are the published MultiPL-E generations, so running them unsandboxed is acceptable.

Data: the sets bundled in the package by default (``workbench/data/bundled/datasets.toml``:
``humaneval-codex-{lang}`` is the grade file verbatim, ``humaneval-{lang}`` the MultiPL-E problems,
each gzipped and byte for byte the file of ``../shared/data``); ``--data FOLDER`` (or the
``WORKBENCH_SHARED_DATA`` environment variable) reads a folder laid out as ``../shared/data`` instead.

Results are appended to ``--out/<lang>.jsonl`` as they finish, so an interrupted run
resumes where it stopped. Identical (task, body) pairs are run once.

Usage::

    python benchmarks/plugin_runner_agreement.py --language java --workers 2
    python benchmarks/plugin_runner_agreement.py --language cpp --limit-tasks 20
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import os
import re
import secrets
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from importlib import resources
from pathlib import Path

from workbench.data import BUNDLED
from workbench.languages import get_language

def read_data_text(data: Path | None, shared_path: str, bundled_name: str) -> str:
    """The text of one data file: ``data / shared_path`` (a folder laid out as ``../shared/data``), or
    with ``data`` None the bundled set ``bundled_name`` (a key of ``workbench.data.BUNDLED``), gunzipped:
    the same bytes. Raises ``OSError`` for a missing file under ``data``."""
    if data is None:
        filename, _split = BUNDLED[bundled_name]
        return gzip.decompress((resources.files("workbench.data") / "bundled" / filename).read_bytes()).decode("utf-8")
    return (data / shared_path).read_text(encoding="utf-8")


def load_samples(data: Path | None, language: str, limit_tasks: int | None) -> list[dict]:
    """Return one dict per (task, sample): task_id, sample, body, label, prompt, tests. ``data`` None
    reads the bundled sets (``humaneval-{language}``, ``humaneval-codex-{language}``)."""
    problems = {}
    for line in read_data_text(data, f"multipl-e-codex-{language}/problems.jsonl", f"humaneval-{language}").splitlines():
        row = json.loads(line)
        problems[row["task_id"]] = row
    grades = json.loads(read_data_text(data, f"ice-score/humaneval_{language}_grade.json", f"humaneval-codex-{language}"))
    grades.sort(key=lambda task: int(task["task_id"]))
    if limit_tasks:
        grades = grades[:limit_tasks]
    samples = []
    for task in grades:
        problem = problems[f"HumanEval/{task['task_id']}"]
        if problem["prompt"] != task["intent"]:
            raise SystemExit(f"prompt of HumanEval/{task['task_id']} differs from the grade file's intent")
        for key in sorted((k for k in task if k.isdigit()), key=int):
            samples.append(
                {
                    "task_id": problem["task_id"],
                    "sample": int(key),
                    "body": task[key],
                    "label": int(task[f"grade-{key}"]["execution"]),
                    "prompt": problem["prompt"],
                    "tests": problem["tests"],
                }
            )
    return samples


def classify(row: dict) -> str:
    """A short cause for a run's outcome, read from its status and stderr."""
    if row["status"] == "passed":
        return "passed"
    if row["status"] == "timeout":
        return "timeout"
    stderr = row["stderr_tail"]
    if row["status"] == "syntax_error":
        match = re.search(r"error: ([^\n]{0,60})", stderr)
        return "compile error: " + (match.group(1) if match else "?")
    if ("AssertionError" in stderr or "Assertion `" in stderr or "Assertion failed" in stderr
            or "workbench: assertion failed" in stderr):
        return "assertion failed"
    match = re.search(r"Exception in thread \"main\" ([\w.$]+)", stderr) or re.search(r"(\w+(?:Exception|Error))", stderr)
    if match:
        return "exception: " + match.group(1)
    if row["returncode"] is not None and row["returncode"] < 0:
        return f"signal {-row['returncode']}"
    return f"exit {row['returncode']}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--language", choices=["java", "cpp"], required=True)
    shared = os.environ.get("WORKBENCH_SHARED_DATA")
    parser.add_argument("--data", type=Path, default=Path(shared) if shared else None,
                        help="a folder laid out as ../shared/data (default: the sets bundled in the package)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/plugin_runner_agreement"))
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds per sample's run (the build has its own limit, RunSpec.build_timeout_s)")
    parser.add_argument("--limit-tasks", type=int, default=None)
    parser.add_argument("--executor", choices=["sandbox", "unsandboxed"], default="sandbox")
    parser.add_argument("--list-disagreements", action="store_true", help="print every disagreeing sample")
    parser.add_argument("--summary-only", action="store_true",
                        help="run nothing; summarise the samples already in --out (e.g. an interrupted run)")
    parser.add_argument("--no-precompiled-header", action="store_true",
                        help="C++: compile <bits/stdc++.h> in every build instead of once")
    parser.add_argument("--no-class-archive", action="store_true",
                        help="Java: start javac without the class-data-sharing archive of its own classes")
    args = parser.parse_args()

    plugin = get_language(args.language)
    runner = plugin.runner
    if args.language == "cpp" and not args.no_precompiled_header:
        import platformdirs
        from workbench_cpp.runner import CppRunner, build_precompiled_header

        cache = Path(platformdirs.user_cache_dir("workbench")) / "cpp-pch"
        runner = CppRunner(precompiled_header_dir=build_precompiled_header(cache))
        print(f"precompiled <bits/stdc++.h> in {runner.precompiled_header_dir}", flush=True)
    if args.language == "java" and not args.no_class_archive:
        import platformdirs
        from workbench_java.runner import JavaRunner, build_javac_class_archive

        cache = Path(platformdirs.user_cache_dir("workbench")) / "javac-cds"
        runner = JavaRunner(javac_class_archive=build_javac_class_archive(cache, JavaRunner().javac_options))
        print(f"javac class archive {runner.javac_class_archive}", flush=True)
    missing = runner.missing_toolchain()
    if missing:
        print(f"toolchain missing: {', '.join(missing)}", file=sys.stderr)
        return 2
    samples = load_samples(args.data, args.language, args.limit_tasks)
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / f"{args.language}.jsonl"
    done: dict[tuple[str, str], dict] = {}
    if results_path.exists():
        for line in results_path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            done[(row["task_id"], row["body"])] = row

    if args.summary_only:
        complete_tasks = {s["task_id"] for s in samples} - {
            s["task_id"] for s in samples if (s["task_id"], s["body"]) not in done
        }
        print(f"summary only: {len(complete_tasks)} of {len({s['task_id'] for s in samples})} tasks fully run", flush=True)
        samples = [s for s in samples if s["task_id"] in complete_tasks]
    todo: dict[tuple[str, str], dict] = {}
    for sample in samples:
        key = (sample["task_id"], sample["body"])
        if key not in done:
            todo.setdefault(key, sample)
    print(f"{args.language}: {len(samples)} samples, {len({(s['task_id'], s['body']) for s in samples})} distinct "
          f"programs, {len(todo)} still to run", flush=True)

    lock = threading.Lock()
    sandbox = None
    if todo and not args.summary_only:
        from workbench.languages.conformance.runner_check import sandbox_for_executor

        sandbox = sandbox_for_executor(args.executor)
        print(f"sandbox: {sandbox.isolation.description}", flush=True)
    # one sandbox slot (= one uid, swept after each sample) per worker thread
    slots = threading.local()
    next_slot = iter(range(args.workers))

    def run_one(sample: dict) -> dict:
        token = secrets.token_hex(16)
        program = runner.build_program(sample["prompt"], sample["body"], "completion")
        spec = runner.prepare(program, sample["tests"], None, token)
        if not hasattr(slots, "slot"):
            with lock:
                slots.slot = next(next_slot)
        outcome = sandbox.run(spec, token, args.timeout, slot=slots.slot)
        status, code, seconds, stderr = outcome.status, outcome.exit_code, outcome.duration_s, outcome.stderr_tail
        return {
            "task_id": sample["task_id"],
            "body": sample["body"],
            "status": status,
            "returncode": code,
            "seconds": round(seconds, 3),
            "stderr_tail": stderr[-500:],
        }

    if args.summary_only:
        todo = {}
    with ThreadPoolExecutor(max_workers=args.workers) as pool, open(results_path, "a", encoding="utf-8") as out:
        futures = [pool.submit(run_one, sample) for sample in todo.values()]
        for count, future in enumerate(as_completed(futures), 1):
            row = future.result()
            with lock:
                out.write(json.dumps(row) + "\n")
                out.flush()
                done[(row["task_id"], row["body"])] = row
            if count % 100 == 0:
                print(f"  {count}/{len(futures)} run", flush=True)

    agree = 0
    confusion: collections.Counter[tuple[int, int]] = collections.Counter()
    causes: collections.Counter[tuple[str, str]] = collections.Counter()
    listing: list[str] = []
    examples: dict[tuple[str, str], str] = {}
    seconds = []
    for sample in samples:
        row = done[(sample["task_id"], sample["body"])]
        predicted = int(row["status"] == "passed")
        confusion[(sample["label"], predicted)] += 1
        seconds.append(row["seconds"])
        if predicted == sample["label"]:
            agree += 1
        else:
            direction = "label pass, ours fail" if sample["label"] else "label fail, ours pass"
            cause = (direction, classify(row))
            causes[cause] += 1
            examples.setdefault(cause, f"{sample['task_id']} sample {sample['sample']}")
            listing.append(f"  {sample['task_id']} sample {sample['sample']}: {direction}: {cause[1]}")
    total = len(samples)
    print(f"\n== {args.language}: runner vs grade-N.execution ({args.executor}, timeout {args.timeout:g} s, "
          f"{args.workers} workers) ==")
    print(f"tasks: {len({s['task_id'] for s in samples})}")
    print(f"samples: {total}; agreement: {agree}/{total} = {100 * agree / total:.2f} %")
    print(f"labels pass: {sum(v for (l, _), v in confusion.items() if l)}; ours pass: "
          f"{sum(v for (_, p), v in confusion.items() if p)}")
    print("confusion (label, ours): " + ", ".join(f"{k}={v}" for k, v in sorted(confusion.items())))
    seconds.sort()
    print(f"seconds per program (build + run): median {seconds[len(seconds) // 2]:.2f}, max {seconds[-1]:.2f}")
    print("disagreements by cause:")
    for (direction, cause), count in causes.most_common():
        print(f"  {count:4d}  {direction}: {cause}  (e.g. {examples[(direction, cause)]})")
    if args.list_disagreements:
        print("every disagreement:")
        print("\n".join(listing))
    return 0


if __name__ == "__main__":
    sys.exit(main())
