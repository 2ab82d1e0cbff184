"""Time ``workbench.correlate.correlate`` on the ICE-Score HumanEval-Python set:
3,220 rows x 6 metrics x 1,000 task resamples (issue 2's target: under 3 s on 2 cores).

Prints wall-clock and CPU seconds for the statistics alone (data already loaded) and for the
whole call including loading, the best of ``--repeat`` runs, and the load average so a reader
can tell a busy machine from a slow program. Also times the statistics with the completion-length
correlations (verbosity bias; lengths take many values, so the all-pairs concordance path) and
with continuous labels (the same path).

    python benchmarks/correlate_bench.py [--data PATH] [--resamples 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from workbench.correlate import correlate, correlate_table
from workbench.correlate.bootstrap import BootstrapSettings
from workbench.correlate.inputs import as_dataset, prepare_table

METRICS = ["codebleu", "codebertscore_f3", "bleu", "chrf", "gpt35_nswr", "gpt35_nsnr"]
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ice-score" / "humaneval_python_flat.jsonl"


def _best(function, repeat: int) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of that run)."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        function()
        run = (time.perf_counter() - wall, time.process_time() - cpu)
        best = min(best, run)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="ICE-Score flat jsonl (default: ../shared)")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    dataset, _ = as_dataset(args.data)
    table = prepare_table(dataset, metrics=METRICS, label="passed", task_column="task_id", sample_column="sample_id",
                          length_column="none")
    with_length = prepare_table(dataset, metrics=METRICS, label="passed", task_column="task_id", sample_column="sample_id",
                                length_column="generation")
    settings = BootstrapSettings(n_resamples=args.resamples, seed=0)
    print(f"data: {args.data.name}: {len(table.label)} rows, {len(table.task_ids)} tasks, {len(METRICS)} metrics, "
          f"{args.resamples} resamples; cores: {os.cpu_count()}; load average: {os.getloadavg()[0]:.1f}")

    wall, cpu = _best(lambda: correlate_table(table, settings), args.repeat)
    print(f"statistics (pooled + per-problem x 3 coefficients, CIs, 15 paired comparisons): {wall:.2f} s wall, {cpu:.2f} s CPU")
    wall, cpu = _best(lambda: correlate_table(with_length, settings), args.repeat)
    print(f"same, plus each metric and the label against completion length:      {wall:.2f} s wall, {cpu:.2f} s CPU")
    wall, cpu = _best(lambda: correlate(args.data, metrics=METRICS, n_resamples=args.resamples), args.repeat)
    print(f"whole correlate() call including loading the jsonl:                   {wall:.2f} s wall, {cpu:.2f} s CPU")

    # many distinct label values -> the all-pairs concordance path
    rng = np.random.default_rng(0)
    table.label = np.clip(table.label * 0.8 + rng.random(len(table.label)) * 0.2, 0, 1)
    wall, cpu = _best(lambda: correlate_table(table, settings), args.repeat)
    print(f"same, continuous labels (all-pairs concordance path):                 {wall:.2f} s wall, {cpu:.2f} s CPU")


if __name__ == "__main__":
    main()
