"""Cost and speed of ``workbench score`` per method, with a real local model.

For each LLM method (``dsa-cqe``, ``dsa-cqe-simplified``, ``ice-score``) it scores the same
N samples of the ICE-Score HumanEval-Python file and prints, per sample: LLM calls,
tokens, seconds; and for the run: wall seconds, seconds inside LLM calls and the share of
wall time spent outside LLM calls (decomposition, Chroma, embeddings, bookkeeping).

Samples: tasks in file order that have both passing and failing samples; per task one
passing and one failing sample (so N/2 tasks). Each method runs in its own folder under
``--output`` and is resumable (rerun the same command to continue an interrupted run).
The response cache is off unless ``--cache-dir`` is given, so the figures are real calls.

For each method it also prints where the seconds go, per step (``analyse:reference``,
``analyse:generation``, ``compare``, ...): calls, cache hits, answers cut at their limit, prompt
tokens evaluated and reused (llama.cpp's ``cache_n``), completion tokens, seconds in the calls and,
for ``local/`` models, llama.cpp's own split into prompt evaluation and generation, plus the
longest answer of the step (what an answer bound is sized from). Each reference's analysis counts
for the sample that paid for it only.

Before/after comparisons run the same rows as named variants, back to back, each with its own
ScoreConfig options, then ``--compare`` prints them side by side with the scores compared row by
row.

Usage::

    python benchmarks/score_bench.py --model local/qwen2.5-coder-0.5b --samples 20
    # DSA-CQE before and after its speed-ups (issue 15), same 4 rows:
    python benchmarks/score_bench.py --model local/qwen2.5-coder-1.5b --samples 4 --max-tokens 768 \
        --methods dsa-cqe dsa-cqe-simplified --output runs/bench --variant before --option analysis_max_tokens=0
    python benchmarks/score_bench.py --model local/qwen2.5-coder-1.5b --samples 4 --max-tokens 768 \
        --methods dsa-cqe dsa-cqe-simplified --output runs/bench --variant after --option prefix_reuse=true
    python benchmarks/score_bench.py --output runs/bench --compare before after
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "ice-score" / "humaneval_python_flat.jsonl"


def pick_rows(path: Path, n: int) -> list[dict]:
    """Return ``n`` rows: one passing and one failing sample per task, tasks in file order."""
    by_task: dict[str, list[dict]] = {}
    for line in path.open():
        row = json.loads(line)
        by_task.setdefault(row["task_id"], []).append(row)
    picked: list[dict] = []
    for rows in by_task.values():
        passing = [r for r in rows if r["passed"] == 1]
        failing = [r for r in rows if r["passed"] == 0]
        if passing and failing:
            picked.extend([passing[0], failing[0]])
        if len(picked) >= n:
            break
    return picked[:n]


def summarize(method: str, scored: list[dict]) -> dict:
    """Per-sample means of one method's ``scores.jsonl`` rows (calls, tokens, seconds) and the
    share of the per-sample time spent outside LLM calls."""
    llm_s = sum(r["llm_seconds"] for r in scored)
    total_s = sum(r["seconds"] for r in scored)
    return {
        "method": method,
        "samples": len(scored),
        "tasks": len({r["task_id"] for r in scored}),
        "ok": sum(r["status"] == "ok" for r in scored),
        "calls_per_sample": statistics.fmean(r["llm_calls"] for r in scored),
        "tokens_per_sample": statistics.fmean(r["tokens"] for r in scored),
        "prompt_tokens_per_sample": statistics.fmean(r["prompt_tokens"] for r in scored),
        "completion_tokens_per_sample": statistics.fmean(r["completion_tokens"] for r in scored),
        "seconds_per_sample": statistics.fmean(r["seconds"] for r in scored),
        "outside_llm_share": (1 - llm_s / total_s) if total_s else None,
    }


def _exchanges(node) -> list[dict]:
    """Every LLM exchange recorded anywhere in a trace (dicts with ``step`` and ``cached``)."""
    if isinstance(node, dict):
        if "step" in node and "cached" in node and "messages" in node:
            return [node]
        return [e for value in node.values() for e in _exchanges(value)]
    if isinstance(node, list):
        return [e for value in node for e in _exchanges(value)]
    return []


def step_of(step: str) -> str:
    """The step group of an exchange: ``analyse:reference``, ``analyse:generation``, ``compare``,
    ``compare:verdict``, ``simplified``...; repairs count with their step (and apart, in ``repairs``)."""
    parts = [p for p in step.split(":") if p != "repair" and not p.isdigit()]
    return ":".join(parts[:2])


def step_breakdown(traces_path: Path, method: str) -> dict[str, dict]:
    """Per step group, the per-sample means over one method's traces: calls (real and cached),
    prompt tokens evaluated and reused (llama.cpp ``cache_n``), completion tokens, truncated
    answers, seconds in the call, and of them llama.cpp's prompt-evaluation and generation
    seconds (``local/`` models only)."""
    traces = [t for t in (json.loads(line) for line in traces_path.open()) if t["method"] == method]
    totals: dict[str, dict] = {}
    longest: dict[str, list[int]] = {}
    for trace in traces:
        body = dict(trace["trace"])
        # a copy of the analysis an earlier sample of the task paid for is not this sample's cost:
        # one reference's under "reference", several under "references" (one entry each, multiref37)
        if not (body.get("reference") or {}).get("analysed_for_this_sample", True):
            body.pop("reference")
        if "references" in body:
            body["references"] = [entry for entry in body["references"]
                                  if entry.get("analysed_for_this_sample", True)]
        for exchange in _exchanges(body):
            group = totals.setdefault(step_of(exchange["step"]), dict.fromkeys(
                ("calls", "cache_hits", "repairs", "truncated", "prompt_tokens", "reused_prompt_tokens",
                 "completion_tokens", "seconds", "prompt_eval_s", "generation_s"), 0.0))
            if exchange["cached"]:
                group["cache_hits"] += 1
                continue
            timings = exchange.get("timings") or {}
            group["calls"] += 1
            group["repairs"] += ":repair" in exchange["step"]
            group["truncated"] += bool(exchange.get("truncated"))
            group["prompt_tokens"] += exchange.get("prompt_tokens", 0)
            group["reused_prompt_tokens"] += timings.get("cache_n", 0)
            group["completion_tokens"] += exchange.get("completion_tokens", 0)
            longest.setdefault(step_of(exchange["step"]), []).append(exchange.get("completion_tokens", 0))
            group["seconds"] += exchange.get("seconds", 0.0)
            group["prompt_eval_s"] += timings.get("prompt_ms", 0.0) / 1000
            group["generation_s"] += timings.get("predicted_ms", 0.0) / 1000
    n = max(1, len(traces))
    steps = {step: {k: round(v / n, 2) for k, v in group.items()} for step, group in sorted(totals.items())}
    for step, lengths in longest.items():  # not a mean: what sizes a step's answer bound
        steps[step]["longest_answer"] = max(lengths)
    if steps:
        steps["total"] = {k: round(sum(g.get(k, 0) for g in steps.values()), 2) for k in next(iter(steps.values()))
                          if k != "longest_answer"}
    return steps


def print_steps(method: str, steps: dict[str, dict]) -> None:
    print(f"{method}: per sample, by step (prompt eval / generation seconds from llama.cpp's timings)")
    print(f"  {'step':<22}{'calls':>6}{'hits':>6}{'trunc':>6}{'prompt tok':>11}{'reused':>8}{'compl tok':>10}"
          f"{'s':>8}{'prompt s':>9}{'gen s':>8}{'longest':>8}")
    for step, g in steps.items():
        print(f"  {step:<22}{g['calls']:>6.2f}{g['cache_hits']:>6.2f}{g['truncated']:>6.2f}{g['prompt_tokens']:>11.0f}"
              f"{g['reused_prompt_tokens']:>8.0f}{g['completion_tokens']:>10.0f}{g['seconds']:>8.1f}"
              f"{g['prompt_eval_s']:>9.1f}{g['generation_s']:>8.1f}{g.get('longest_answer', ''):>8}")


def print_table(results: list[dict]) -> None:
    header = f"{'method':<20}{'n':>4}{'ok':>4}{'calls/smp':>10}{'tokens/smp':>11}{'s/smp':>9}{'outside LLM':>13}"
    print(header)
    for r in results:
        share = "-" if r["outside_llm_share"] is None else f"{r['outside_llm_share']:.1%}"
        print(f"{r['method']:<20}{r['samples']:>4}{r['ok']:>4}{r['calls_per_sample']:>10.1f}"
              f"{r['tokens_per_sample']:>11.0f}{r['seconds_per_sample']:>9.1f}{share:>13}")


def from_run(scores_path: Path, methods: list[str], n: int) -> int:
    """Summarise the first ``n`` samples of each method in an existing ``scores.jsonl``
    (e.g. a long ``workbench score`` run), instead of scoring again."""
    import os

    rows = [json.loads(line) for line in scores_path.read_text().splitlines() if line.strip()]
    results = []
    for method in methods:
        # llm_calls counts real calls only (cache hits are counted apart): a row served wholly
        # from the cache says nothing about cost
        mine = [r for r in rows if r["method"] == method and r.get("llm_calls", 0) > 0][:n]
        if mine:
            results.append(summarize(method, mine))
    print(f"from {scores_path} (first {n} samples per method with real LLM calls); load now {os.getloadavg()[0]:.1f}")
    for r in results:
        print(json.dumps(r))
    print()
    print_table(results)
    return 0


def _option(text: str) -> tuple[str, object]:
    """``name=value`` of a ScoreConfig field (value read as JSON when it parses: true, 256, null)."""
    name, _, value = text.partition("=")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def compare_variants(output: Path, variants: list[str]) -> int:
    """Print the summaries and step breakdowns of earlier variant runs side by side, and whether
    their scores are equal sample by sample."""
    summaries = {}
    for variant in variants:
        summaries[variant] = json.loads((output / variant / "summary.json").read_text())
    for variant, results in summaries.items():
        print(f"== {variant}: {results[0].get('options', {})}, load average at start {results[0].get('load_at_start')}")
        print_table(results)
        for r in results:  # from the traces, so a summary written by an older version counts the same way
            print_steps(r["method"], step_breakdown(output / variant / r["method"] / "traces.jsonl", r["method"]))
        print()
    first, *others = variants
    # the machine is shared: seconds measured at different loads do not compare. Each variant's
    # work (prompt tokens evaluated, tokens generated) priced at the first variant's measured
    # rates (llama.cpp's timings) does.
    for method in [r["method"] for r in summaries[first]]:
        base = step_breakdown(output / first / method / "traces.jsonl", method).get("total")
        if not base or not base["prompt_eval_s"] or not base["generation_s"]:
            continue
        prompt_rate = (base["prompt_tokens"] - base["reused_prompt_tokens"]) / base["prompt_eval_s"]
        generation_rate = base["completion_tokens"] / base["generation_s"]
        print(f"{method}: at {first}'s rates ({prompt_rate:.1f} prompt tok/s evaluated, {generation_rate:.1f} tok/s "
              "generated), seconds per sample in llama.cpp:")
        for variant in variants:
            total = step_breakdown(output / variant / method / "traces.jsonl", method).get("total")
            evaluated = total["prompt_tokens"] - total["reused_prompt_tokens"]
            estimate = evaluated / prompt_rate + total["completion_tokens"] / generation_rate
            print(f"  {variant:<10} {evaluated:>7.0f} prompt tokens evaluated ({total['reused_prompt_tokens']:.0f} reused), "
                  f"{total['completion_tokens']:>6.0f} generated: {estimate:7.1f} s (measured {total['seconds']:.1f} s)")
    for other in others:
        for method in {r["method"] for r in summaries[first]}:
            a = {(r["task_id"], str(r["sample_id"])): r["score"] for r in
                 (json.loads(x) for x in (output / first / method / "scores.jsonl").open())}
            b = {(r["task_id"], str(r["sample_id"])): r["score"] for r in
                 (json.loads(x) for x in (output / other / method / "scores.jsonl").open())}
            common = sorted(set(a) & set(b))
            same = sum(a[k] == b[k] for k in common)
            print(f"{method}: {first} vs {other}: {same} of {len(common)} scores equal"
                  + "".join(f"\n  {k}: {a[k]} vs {b[k]}" for k in common if a[k] != b[k]))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--methods", nargs="+", default=["ice-score", "dsa-cqe-simplified", "dsa-cqe"])
    parser.add_argument("--output", type=Path, default=Path("runs/score_bench"))
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--max-subcodes", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--variant", default=None,
                        help="name of this run's variant: results go to OUTPUT/VARIANT/METHOD (e.g. before, after)")
    parser.add_argument("--option", action="append", type=_option, default=[], metavar="NAME=VALUE",
                        help="a ScoreConfig field for this variant (repeatable), e.g. prefix_reuse=true")
    parser.add_argument("--compare", nargs="+", default=None, metavar="VARIANT",
                        help="print earlier variants' summaries and step breakdowns side by side, and compare scores")
    parser.add_argument("--from-run", type=Path, default=None,
                        help="summarise this existing scores.jsonl instead of scoring (first --samples per method)")
    args = parser.parse_args(argv)
    if args.from_run:
        return from_run(args.from_run, args.methods, args.samples)
    if args.compare:
        return compare_variants(args.output, args.compare)

    import os

    from workbench.score.config import ScoreConfig
    from workbench.io import read_jsonl
    from workbench.score.job import Columns, load_samples, score_samples

    rows = pick_rows(args.data, args.samples)
    output = args.output / args.variant if args.variant else args.output
    output.mkdir(parents=True, exist_ok=True)
    subset = output / "samples.jsonl"
    subset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    samples = load_samples(subset, Columns(generation="completion_multipl_e"))
    options = dict(args.option)
    load_at_start = round(os.getloadavg()[0], 2)
    print(f"{len(samples)} samples from {len({s.task_id for s in samples})} tasks; model {args.model}; "
          f"options {options}; load average {load_at_start}", flush=True)

    results = []
    for method in args.methods:
        out = output / method
        started = time.perf_counter()
        report = score_samples(
            samples,
            ScoreConfig(
                method=[method], model=args.model, max_tokens=args.max_tokens, timeout=600,
                workers=args.workers, cache_dir=args.cache_dir, cache="rw" if args.cache_dir else "off",
                max_subcodes=args.max_subcodes, resume=(out / "scores.jsonl").exists(), **options,
            ),
            out,
            on_row=lambda row: print(
                f"  {row['method']} {row['task_id']}#{row['sample_id']}: {row['status']} score={row['score']} "
                f"calls={row['llm_calls']} tokens={row['tokens']} {row['seconds']:.1f}s", flush=True
            ),
        )
        scored = [r for r in read_jsonl(out / "scores.jsonl") if r["method"] == method]
        wall = time.perf_counter() - started
        results.append({**summarize(method, scored), "this_invocation_wall_s": wall,
                        "this_invocation_outside_llm_share": report.outside_llm_share,
                        "options": options, "load_at_start": load_at_start,
                        "load_at_end": round(os.getloadavg()[0], 2),
                        "steps": step_breakdown(out / "traces.jsonl", method)})
        print(json.dumps(results[-1]), flush=True)

    print()
    print_table(results)
    for r in results:
        print_steps(r["method"], r["steps"])
    (output / "summary.json").write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
