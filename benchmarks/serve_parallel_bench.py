"""Throughput of one served local model with 1, 2 or 4 llama.cpp slots on this machine's cores.

Question: does a server that decodes several requests at once (``workbench models serve --parallel N``, the
``--workers`` of ``workbench score`` keeping N requests in flight) finish a batch of judge calls sooner than one
slot answering them in turn? On a CPU, generation reads every weight once per step whichever number of sequences
the step carries, so a batched step can cost less than N single steps; prompt evaluation is already batched and
gains nothing.

For each slot count P, in a fresh subprocess (so one model is loaded at a time): ``workbench.llm.serve.serve`` on
127.0.0.1 with P slots and ``--threads`` threads, one warm-up request, then ``--requests`` chat requests (a HumanEval
task, a Codex completion of it from the bundled ICE-Score set, and the request to analyse it step by step: the shape
of a ``p-correct --analyse-first`` or DSA-CQE analysis call) sent by P client threads at once, each generating
exactly ``--gen-tokens`` tokens (``ignore_eos``, temperature 0) so every P does the same work. Printed per P: wall
seconds for the batch, generated tokens per second over the batch, median seconds per request, prompt tokens per
request, and the speed-up against P = 1. Medians over ``--rounds`` batches.

Usage: ``python benchmarks/serve_parallel_bench.py [--model qwen2.5-coder-1.5b] [--parallel 1 --parallel 2]
[--requests 4] [--gen-tokens 128] [--rounds 2] [--threads 2] [--json out.json]``. Run it on a quiet machine: on
2 cores anything else running changes the figures (the load average is printed before and after).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

BUNDLED = Path(__file__).resolve().parents[1] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"
QUESTION = ("Analyse step by step whether the candidate solution behaves exactly like a correct solution of the "
            "problem on every valid input. Go through the code line by line.")


def requests_from_bundled(count: int) -> list[list[dict[str, str]]]:
    """``count`` chat conversations: the first ``count`` distinct tasks of the bundled ICE-Score set, one Codex
    completion each, with :data:`QUESTION`."""
    conversations, seen = [], set()
    with gzip.open(BUNDLED, "rt") as handle:
        for line in handle:
            row = json.loads(line)
            if row["task_id"] in seen:
                continue
            seen.add(row["task_id"])
            code = row["prompt"] + row["completion_multipl_e"]
            conversations.append([{"role": "system", "content": "You are a careful reviewer of Python code."},
                                  {"role": "user", "content": f"{QUESTION}\n\n```python\n{code}\n```"}])
            if len(conversations) == count:
                break
    return conversations


def one_setting(model: str, parallel: int, threads: int, requests: int, gen_tokens: int, rounds: int) -> dict:
    """Serve ``model`` with ``parallel`` slots and time ``rounds`` batches of ``requests`` calls (see the module
    docstring). Returns the figures as a dict."""
    from workbench.llm.serve import serve

    served = serve(model, port=0, parallel=parallel, n_threads=threads)
    conversations = requests_from_bundled(requests)
    client = httpx.Client(base_url=served.base_url, headers={"Authorization": f"Bearer {served.api_key}"},
                          timeout=3600)

    def call(messages: list[dict[str, str]]) -> tuple[float, int, int]:
        started = time.perf_counter()
        response = client.post("/chat/completions", json={
            "model": served.model, "messages": messages, "max_tokens": gen_tokens, "temperature": 0,
            "ignore_eos": True, "cache_prompt": False})
        response.raise_for_status()
        usage = response.json()["usage"]
        return time.perf_counter() - started, usage["prompt_tokens"], usage["completion_tokens"]

    call(conversations[0])  # warm-up: first-call allocations are not what a batch costs
    walls, latencies, prompt_tokens, generated = [], [], [], []
    for _ in range(rounds):
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            answers = list(pool.map(call, conversations))
        walls.append(time.perf_counter() - started)
        latencies += [seconds for seconds, _, _ in answers]
        prompt_tokens += [tokens for _, tokens, _ in answers]
        generated.append(sum(tokens for _, _, tokens in answers))
    served.stop()
    wall = statistics.median(walls)
    return {"model": model, "parallel": parallel, "threads": threads, "requests": requests,
            "gen_tokens": gen_tokens, "rounds": rounds, "batch_wall_s": wall,
            "generated_tokens_per_s": statistics.median(generated) / wall,
            "median_request_s": statistics.median(latencies),
            "median_prompt_tokens": statistics.median(prompt_tokens), "walls": walls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="alias of `workbench models` or a .gguf path")
    parser.add_argument("--parallel", type=int, action="append", help="slot counts (repeatable; default 1, 2, 4)")
    parser.add_argument("--requests", type=int, default=4, help="calls per batch")
    parser.add_argument("--gen-tokens", type=int, default=128, help="tokens each call generates")
    parser.add_argument("--rounds", type=int, default=2, help="batches per slot count (median)")
    parser.add_argument("--threads", type=int, default=2, help="llama.cpp threads")
    parser.add_argument("--json", help="write the rows here")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child: one slot count
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one_setting(args.model, args.one, args.threads, args.requests, args.gen_tokens, args.rounds)))
        return
    print(f"load average before: {os.getloadavg()}", flush=True)
    rows = []
    for parallel in args.parallel or [1, 2, 4]:
        child = subprocess.run(
            [sys.executable, __file__, "--one", str(parallel), "--model", args.model, "--requests", str(args.requests),
             "--gen-tokens", str(args.gen_tokens), "--rounds", str(args.rounds), "--threads", str(args.threads)],
            capture_output=True, text=True, check=True)
        rows.append(json.loads(child.stdout.strip().splitlines()[-1]))
    base = rows[0]["batch_wall_s"] if rows[0]["parallel"] == 1 else None
    print(f"{args.model}, {args.threads} threads, {args.requests} requests x {args.gen_tokens} generated tokens, "
          f"median of {args.rounds} batches")
    print("slots | batch wall s | generated tok/s | median s/request | prompt tokens/request | speed-up vs 1 slot")
    for row in rows:
        speedup = f"{base / row['batch_wall_s']:.2f}x" if base else "-"
        print(f"{row['parallel']:>5} | {row['batch_wall_s']:>12.1f} | {row['generated_tokens_per_s']:>15.1f} | "
              f"{row['median_request_s']:>16.1f} | {row['median_prompt_tokens']:>21.0f} | {speedup:>8}")
    print(f"load average after: {os.getloadavg()}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
