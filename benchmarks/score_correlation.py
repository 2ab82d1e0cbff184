"""Correlation of ``workbench score`` rows with execution (pass/fail), for the closing report.

A stand-in until ``workbench correlate`` lands on this branch: corpus-level Kendall tau-b and
Pearson r between each method's score and ``passed``, with 95% percentile bootstrap CIs that
resample *tasks* (samples of one task are not independent; Efron and Tibshirani 1993, ch. 13).
Shipped columns of the input file (e.g. ``codebleu``, ``gpt35_nswr``) are reported on the same
samples for comparison.

Usage::

    python benchmarks/score_correlation.py runs/score_bench/*/scores.jsonl \
        --data runs/score_bench/samples.jsonl --column codebleu --column gpt35_nswr
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
from scipy import stats


def _corr(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    if np.all(x == x[0]) or np.all(y == y[0]):
        return float("nan"), float("nan")
    return float(stats.kendalltau(x, y, variant="b").statistic), float(stats.pearsonr(x, y).statistic)


def correlate(scores: list[float], passed: list[int], tasks: list[str], resamples: int = 2000, seed: int = 0) -> dict:
    """Return n, tasks, tau_b, pearson and their 95% task-bootstrap CIs."""
    x, y = np.asarray(scores, float), np.asarray(passed, float)
    tau, r = _corr(x, y)
    groups: dict[str, list[int]] = {}
    for index, task in enumerate(tasks):
        groups.setdefault(task, []).append(index)
    members = list(groups.values())
    rng = np.random.default_rng(seed)
    taus, rs = [], []
    for _ in range(resamples):
        picked = rng.integers(0, len(members), len(members))
        idx = np.concatenate([members[i] for i in picked])
        t, p = _corr(x[idx], y[idx])
        if not np.isnan(t):
            taus.append(t)
            rs.append(p)
    ci = lambda v: [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))] if v else [None, None]  # noqa: E731
    return {"n": len(x), "tasks": len(groups), "tau_b": tau, "tau_b_ci": ci(taus), "pearson": r, "pearson_ci": ci(rs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Kendall tau-b / Pearson of scores vs. passed, task-bootstrap CIs")
    parser.add_argument("scores", nargs="+", type=Path, help="scores.jsonl files of workbench score")
    parser.add_argument("--data", type=Path, required=True, help="the scored input file (with passed and shipped columns)")
    parser.add_argument("--column", action="append", default=[], help="a shipped score column to compare")
    args = parser.parse_args(argv)

    data = {(r["task_id"], str(r["sample_id"])): r for r in map(json.loads, args.data.open())}
    table = {}
    for path in args.scores:
        rows = [json.loads(line) for line in path.open() if line.strip()]
        for method in sorted({r["method"] for r in rows}):
            ok = [r for r in rows if r["method"] == method and r["status"] == "ok"]
            failed = sum(1 for r in rows if r["method"] == method and r["status"] != "ok")
            keys = [(r["task_id"], str(r["sample_id"])) for r in ok]
            result = correlate([r["score"] for r in ok], [data[k]["passed"] for k in keys], [k[0] for k in keys])
            table[method] = {**result, "not_ok": failed, "keys": keys}
    keys = sorted(set.intersection(*(set(v["keys"]) for v in table.values()))) if table else list(data)
    for column in args.column:
        table[f"{column} (shipped)"] = {
            **correlate([data[k][column] for k in keys], [data[k]["passed"] for k in keys], [k[0] for k in keys]),
            "not_ok": 0,
        }
    print(f"{'metric':<26}{'n':>5}{'tasks':>6}{'not ok':>7}  {'Kendall tau-b [95% CI]':<28}{'Pearson r [95% CI]':<28}")
    for name, v in table.items():
        fmt = lambda value, ci: "nan" if value != value else f"{value:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]"  # noqa: E731
        print(f"{name:<26}{v['n']:>5}{v['tasks']:>6}{v['not_ok']:>7}  {fmt(v['tau_b'], v['tau_b_ci']):<28}{fmt(v['pearson'], v['pearson_ci']):<28}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
