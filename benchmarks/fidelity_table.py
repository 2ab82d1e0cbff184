"""The fidelity table (issues 15 and 20) as Markdown, from a ``workbench correlate --json`` report.

Prints two tables: per metric, n (tasks), pooled Kendall tau-b and Pearson r, the per-problem
tau-b and the tau-b with completion length (each with its task-bootstrap interval); then the
paired bootstrap differences in tau-b of every ``--baseline`` comparison, pooled and per problem,
with their p-values. Intervals that are absent (too few tasks) print as "n/a".

Usage::

    python benchmarks/fidelity_table.py fidelity-100.correlate.json > fidelity-100.md
"""

from __future__ import annotations

import json
import sys
from typing import Any


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _interval(bounds: list[float] | None) -> str:
    return "" if not bounds or None in bounds else f" [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def metric_rows(report: dict[str, Any]) -> list[str]:
    """One Markdown row per metric of ``report["metrics"]``."""
    rows = ["| metric | n (tasks) | pooled τ-b [95% CI] | pooled r [95% CI] | per-problem τ-b (tasks) | τ-b with length |",
            "|---|---|---|---|---|---|"]
    for name, metric in report["metrics"].items():
        pooled, per_problem = metric["pooled"], metric["per_problem"]
        length = (metric.get("length") or {}).get("pooled") or {}
        rows.append(
            f"| {name} | {metric['n_samples']} ({metric['n_tasks']}) "
            f"| {_number(pooled['kendall'])}{_interval(pooled.get('kendall_ci'))} "
            f"| {_number(pooled['pearson'])}{_interval(pooled.get('pearson_ci'))} "
            f"| {_number(per_problem['kendall'])}{_interval(per_problem.get('kendall_ci'))} ({per_problem.get('n_tasks')}) "
            f"| {_number(length.get('kendall'))}{_interval(length.get('kendall_ci'))} |")
    return rows


def comparison_rows(report: dict[str, Any]) -> list[str]:
    """One Markdown row per paired comparison of ``report["comparisons"]`` (difference in tau-b)."""
    rows = ["| A | B | pooled A − B [95% CI] | p | per-problem A − B [95% CI] | p |", "|---|---|---|---|---|---|"]
    for comparison in report.get("comparisons") or []:
        cells = []
        for level in ("pooled", "per_problem"):
            kendall = comparison["differences"][level]["kendall"]
            difference, p_value = kendall.get("difference"), kendall.get("p_value")
            cells.append("n/a | n/a" if difference is None else
                         f"{difference:+.3f}{_interval(kendall.get('difference_ci'))} | {_number(p_value)}")
        rows.append(f"| {comparison['metric_a']} | {comparison['metric_b']} | {cells[0]} | {cells[1]} |")
    return rows


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        report = json.load(handle)
    print("\n".join([*metric_rows(report), "", "Paired bootstrap differences in Kendall τ-b (A − B, same resampled tasks):",
                     "", *comparison_rows(report)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
