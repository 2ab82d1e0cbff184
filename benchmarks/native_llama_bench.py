"""Prebuilt xllamacpp wheel vs a natively compiled one (``setup.sh --native-llama``): speed and answers.

Runs the same requests through ``workbench.llm.local.chat`` under two Python interpreters (two
virtual environments that differ only in their ``xllamacpp`` build), interleaved A/B/B/A... so
that the load of a shared machine falls on both alike, and prints per build the medians of
llama.cpp's own timings (prompt tokens evaluated per second, tokens generated per second) and,
per prompt, whether the two builds gave the same answer and how far apart the score token's
log-probabilities are.

Each round, for one build, a fresh process loads the model (load time excluded) and makes:

* an ICE-Score request (``prompts/ice_score.txt``, a real HumanEval sample of the ICE-Score
  file), ``temperature`` 0, ``max_tokens`` 8, ``top_logprobs`` 20: the score token's
  distribution (the score mode ``expected`` reads) and the prompt evaluation rate;
* a DSA-CQE-simplified request (``prompts/dsa_cqe_simplified.txt``) of about 1,300-1,600
  prompt tokens, free text (no schema, so both builds decode the same way), ``max_tokens``
  ``--gen-tokens``: the generation rate.

Round r uses the r-th of the chosen rows, so the answers compared are several prompts, and the
rates are paired per round (same prompts for both builds).

Usage::

    python benchmarks/native_llama_bench.py --python-a /work/venv/bin/python \\
        --python-b /work/venv-native/bin/python --model qwen2.5-coder-1.5b --rounds 3
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "ice-score" / "humaneval_python_flat.jsonl"
SCORE_TOKENS = ("0", "1", "2", "3", "4")


def _row_size(row: dict) -> int:
    return len(row["prompt"]) + len(row["reference"]) + len(row["generation"])


def pick_rows(path: Path, rounds: int) -> tuple[list[dict], list[dict]]:
    """Rows for the ICE-Score requests (about 600-1,100 prompt tokens) and the long ones.

    Returns:
        (short, long): ``rounds`` rows each, chosen deterministically by size from the file.
    """
    rows = [json.loads(line) for line in path.open()]
    rows.sort(key=lambda row: (_row_size(row), row["task_id"], row["sample_id"]))
    short = [row for row in rows if 500 <= _row_size(row) <= 2200]
    long = [row for row in rows if 2800 <= _row_size(row) <= 3800]
    step_short, step_long = max(1, len(short) // rounds), max(1, len(long) // rounds)
    return short[::step_short][:rounds], long[::step_long][:rounds]


def _score_distribution(logprobs: dict | None) -> dict[str, float]:
    """log p of each score token among the top alternatives at the first score-token position."""
    for entry in (logprobs or {}).get("content") or ():
        if entry["token"].strip() in SCORE_TOKENS:
            return {top["token"].strip(): top["logprob"] for top in entry.get("top_logprobs") or ()
                    if top["token"].strip() in SCORE_TOKENS}
    return {}


def child(args: argparse.Namespace) -> None:
    """One build, one round: load the model, make the two requests, print one JSON line each."""
    sys.path.insert(0, str(ROOT))
    from workbench.llm import local
    from workbench.score.prompts import load_template

    short, long = pick_rows(Path(args.data), args.rounds)
    ice, simplified = load_template("ice_score.txt"), load_template("dsa_cqe_simplified.txt")
    started = time.perf_counter()
    local.load_model(args.model, n_threads=args.threads)
    load_s = time.perf_counter() - started
    import xllamacpp

    build = {"engine": local.engine_identity(), "system_info": xllamacpp.get_system_info().strip(), "load_s": load_s}
    row = short[args.round]
    requests = [
        ("ice-score", row, ice.render(problem=row["prompt"], reference=row["reference"], generation=row["generation"]),
         {"max_tokens": 8, "logprobs": True, "top_logprobs": 20}),
    ]
    row = long[args.round]
    requests.append(("simplified-free", row, simplified.render(
        language="python", problem=row["prompt"], reference=row["reference"], generation=row["generation"]),
        {"max_tokens": args.gen_tokens}))
    for kind, row, messages, options in requests:
        cpu_started = time.process_time()  # every thread of this process, llama.cpp's included
        answer = local.chat(args.model, messages, n_threads=args.threads, temperature=0.0, seed=0, **options)
        cpu_s = time.process_time() - cpu_started
        timings = answer["timings"]
        print(json.dumps({
            **build, "kind": kind, "round": args.round, "row": f'{row["task_id"]}#{row["sample_id"]}',
            "prompt_n": timings.get("prompt_n"), "prompt_ms": timings.get("prompt_ms"),
            "predicted_n": timings.get("predicted_n"), "predicted_ms": timings.get("predicted_ms"),
            "cpu_s": cpu_s,
            "text": answer["choices"][0]["message"]["content"],
            "score_logprobs": _score_distribution(answer["choices"][0]["logprobs"]),
        }), flush=True)


def _load() -> float:
    return os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python-a", default=sys.executable, help="interpreter of build A (the prebuilt wheel)")
    parser.add_argument("--python-b", help="interpreter of build B (the native build)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gen-tokens", type=int, default=128)
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--output", help="append every call's JSON line here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--round", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if not args.python_b:
        parser.error("--python-b is required")
    builds = {"A": args.python_a, "B": args.python_b}
    results: list[dict] = []
    loads: list[float] = []
    for round_ in range(args.rounds):
        order = ("A", "B") if round_ % 2 == 0 else ("B", "A")
        for name in order:
            loads.append(_load())
            command = [builds[name], __file__, "--child", "--round", str(round_), "--model", args.model,
                       "--rounds", str(args.rounds), "--threads", str(args.threads),
                       "--gen-tokens", str(args.gen_tokens), "--data", args.data]
            environment = {**os.environ, "PYTHONPATH": str(ROOT)}
            done = subprocess.run(command, capture_output=True, text=True, env=environment, check=False)
            if done.returncode:
                sys.exit(f"build {name} round {round_} failed:\n{done.stderr[-3000:]}")
            for line in done.stdout.splitlines():
                if line.startswith("{"):
                    record = {**json.loads(line), "build": name, "load_before": loads[-1]}
                    results.append(record)
                    print(f"round {round_} {name} {record['kind']:16} prompt {record['prompt_n']:5} tok "
                          f"{1000 * record['prompt_n'] / record['prompt_ms']:6.1f} tok/s  gen {record['predicted_n']:4} tok "
                          f"{1000 * record['predicted_n'] / max(record['predicted_ms'], 1e-9):6.1f} tok/s  load {loads[-1]:.1f}",
                          flush=True)
                    if args.output:
                        with open(args.output, "a") as handle:
                            handle.write(json.dumps(record) + "\n")
    report(results, loads, args.model)


def report(results: list[dict], loads: list[float], model: str) -> None:
    """Medians per build and kind, paired ratios, and the answer comparison."""
    print(f"\n{model}: load average (1 min) before each process: median {statistics.median(loads):.1f}, "
          f"range {min(loads):.1f}-{max(loads):.1f}")
    for name in ("A", "B"):
        mine = [r for r in results if r["build"] == name]
        if mine:
            print(f"build {name}: {mine[0]['engine']}\n  {mine[0]['system_info']}")
    for kind, rate in (("ice-score", "prompt"), ("simplified-free", "prompt"), ("simplified-free", "predicted")):
        per_build = {}
        for name in ("A", "B"):
            per_build[name] = {r["round"]: 1000 * r[f"{rate}_n"] / r[f"{rate}_ms"]
                               for r in results if r["build"] == name and r["kind"] == kind and r[f"{rate}_ms"]}
        rounds = sorted(set(per_build["A"]) & set(per_build["B"]))
        if not rounds:
            continue
        ratios = [per_build["B"][r] / per_build["A"][r] for r in rounds]
        label = "prompt eval" if rate == "prompt" else "generation"
        print(f"{kind:16} {label:11} tok/s: A median {statistics.median(per_build['A'].values()):6.1f}, "
              f"B median {statistics.median(per_build['B'].values()):6.1f}; B/A paired per round "
              + ", ".join(f"{x:.2f}" for x in ratios) + f" (median {statistics.median(ratios):.2f})")
    print("answers, build A vs build B (same prompt, temperature 0, seed 0):")
    for kind in ("ice-score", "simplified-free"):
        for round_ in sorted({r["round"] for r in results}):
            a = [r for r in results if r["build"] == "A" and r["kind"] == kind and r["round"] == round_]
            b = [r for r in results if r["build"] == "B" and r["kind"] == kind and r["round"] == round_]
            if not (a and b):
                continue
            a, b = a[0], b[0]
            line = f"  {kind:16} {a['row']:18} text {'equal' if a['text'] == b['text'] else 'DIFFERENT'}"
            common = sorted(set(a["score_logprobs"]) & set(b["score_logprobs"]))
            if common:
                deltas = [abs(a["score_logprobs"][t] - b["score_logprobs"][t]) for t in common]
                pa = {t: math.exp(a["score_logprobs"][t]) for t in common}
                pb = {t: math.exp(b["score_logprobs"][t]) for t in common}
                ea = sum(int(t) * p for t, p in pa.items()) / sum(pa.values())
                eb = sum(int(t) * p for t, p in pb.items()) / sum(pb.values())
                line += (f"; score tokens {','.join(common)}: max |d logprob| {max(deltas):.4f}, "
                         f"expected score {ea:.4f} vs {eb:.4f}")
            print(line)


if __name__ == "__main__":
    main()
