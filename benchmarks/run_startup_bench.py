"""Start-up time of ``workbench run``: the work before the first stage (preflight, stage keys, plan).

Times, in one process after the imports are warm (so the figures are the start-up work itself, not
Python's imports), the median of ``--repeats`` tries of:

* ``dry-run``: :func:`~workbench.run.preflight.run_preflight` (``dry_run=True``) and
  :func:`~workbench.run.runner.preview`, what ``workbench run --dry-run`` does;
* ``run``: :func:`~workbench.run.runner.run_pipeline` up to its first stage's ``start`` event (stopped
  there with ``KeyboardInterrupt``, so no stage runs), in a fresh run folder each try.

No LLM is called: the score stage's model is replaced by ``openai/gpt-4o-mini`` with a dummy key (the
stage never starts). Usage::

    python benchmarks/run_startup_bench.py configs/humaneval.toml --repeats 5
    python benchmarks/run_startup_bench.py configs/conala.toml --set 'score.method=["ice-score"]' \\
        --set 'run.stages=["score","report"]' --set score.limit=40
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path


class _FirstStage(KeyboardInterrupt):
    """Raised at the first stage's start: the start-up is over."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("--set", action="append", default=[], dest="overrides")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "sk-benchmark-not-a-key")

    from workbench.run import load_config, run_pipeline
    from workbench.run.preflight import run_preflight
    from workbench.run.runner import preview

    overrides = ['score.model="openai/gpt-4o-mini"', *args.overrides]

    def config_in(folder: Path):
        return load_config(args.config, overrides=[*overrides, f'run.output="{folder}"'])

    def dry_run(folder: Path) -> None:
        config = config_in(folder)
        preview(config, run_preflight(config, dry_run=True))

    def start_up(folder: Path) -> None:
        def stop(plan, event: str) -> None:
            if event == "start":
                raise _FirstStage

        try:
            run_pipeline(config_in(folder), on_stage=stop)
        except _FirstStage:
            return
        raise AssertionError("no stage started")

    with tempfile.TemporaryDirectory() as temporary:
        dry_run(Path(temporary) / "warm")  # imports, the data's first load
        for name, job in (("dry-run", dry_run), ("run", start_up)):
            seconds = []
            for attempt in range(args.repeats):
                began = time.perf_counter()
                job(Path(temporary) / f"{name}-{attempt}")
                seconds.append(time.perf_counter() - began)
            print(f"{name}: median {statistics.median(seconds):.3f} s over {args.repeats} "
                  f"(min {min(seconds):.3f}, max {max(seconds):.3f})")


if __name__ == "__main__":
    main()
