"""Time and size of the run report on a run folder.

Prints the seconds to collect the data and to render the page, and the sizes of report.json and
report.html (the page must stay reasonable for a 3,220-row run: only the LLM-scored subset gets a
per-sample view).

Usage: python benchmarks/report_bench.py RUN_DIR [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from workbench.report import build_report_data, render_html, write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    collect, render = [], []
    for _ in range(args.repeat):
        began = time.perf_counter()
        data = build_report_data(args.run_dir)
        collect.append(time.perf_counter() - began)
        began = time.perf_counter()
        render_html(json.loads(json.dumps(data, default=str)))
        render.append(time.perf_counter() - began)
    began = time.perf_counter()
    json_path, html_path = write_report(args.run_dir)
    total = time.perf_counter() - began
    print(f"run folder: {args.run_dir}")
    print(f"rows: {data['counts']['data_rows']}, executed: {data['counts']['executed']}, "
          f"sample views: {data['counts']['views']}, methods: {len(data['headline'])}")
    print(f"collect: median {statistics.median(collect):.2f} s; render: median {statistics.median(render):.2f} s "
          f"({args.repeat} runs); write_report: {total:.2f} s")
    print(f"report.json: {json_path.stat().st_size / 1024:.0f} KiB; report.html: {html_path.stat().st_size / 1024:.0f} KiB "
          f"({html_path.stat().st_size / max(1, data['counts']['views']) / 1024:.1f} KiB per view incl. the fixed part)")


if __name__ == "__main__":
    main()
