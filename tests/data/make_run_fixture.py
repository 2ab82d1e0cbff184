"""Trim a real run folder into ``tests/data/run-fixture`` (kept under 300 KB).

The source is a run folder built by the real commands (dedup, dedup --against humaneval,
execute, score with the local model smollm2-135m, correlate) on the first 10 HumanEval tasks of
the ICE-Score set. Kept: the tasks of the LLM-scored subset, all 20 samples each. Trimmed:
code and raw LLM answers of rows without a view, stderr of rows without a view (400 chars),
prompt/response text in traces (300 chars each), the carried dataset columns of
score/all/scores.jsonl (they stay in scores_wide.jsonl). The stage reports
(dedup/decontaminate report.json, execute/summary.json, correlate/*.json) are the originals,
computed on all 200 rows; the row files hold the kept tasks only.

Usage: python tests/data/make_run_fixture.py SOURCE_RUN [TARGET]
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from workbench.score.job import ROW_COLUMNS

TEXT_COLUMNS = ("prompt", "generation", "completion_multipl_e", "reference")
DROPPED_COLUMNS = ("raw_gpt35_nsnr", "raw_gpt35_nswr")
TRACE_TEXT_CHARS = 300
STDERR_CHARS = 400
COPIED = (
    "dedup/report.json", "dedup/clusters.json", "dedup/pairs.csv", "dedup/removed.csv", "dedup/cross_group_pairs.csv",
    "decontaminate/report.json", "decontaminate/clusters.json", "decontaminate/pairs.csv",
    "decontaminate/removed.csv", "decontaminate/contamination.csv",
    "execute/summary.json", "score/llm/run.json", "score/all/run.json",
    "correlate/subset.json", "correlate/all.json",
)


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def clip(text, limit):
    if not isinstance(text, str) or len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} characters cut for the test fixture]"


def clip_trace(value):
    """Clip every prompt/response string in a trace, recursively."""
    if isinstance(value, dict):
        return {k: (clip(v, TRACE_TEXT_CHARS) if k in ("content", "response") else clip_trace(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [clip_trace(v) for v in value]
    return value


def main(source: Path, target: Path) -> None:
    subset = rows(source / "score/subset.jsonl")
    viewed = {(r["task_id"], str(r["sample_id"])) for r in subset}
    tasks = {task for task, _ in viewed}

    def kept(row):
        return row["task_id"] in tasks

    def key(row):
        return (row["task_id"], str(row["sample_id"]))

    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    data = []
    for row in filter(kept, rows(source / "data.jsonl")):
        row = {k: v for k, v in row.items() if k not in DROPPED_COLUMNS}
        if key(row) not in viewed:
            row = {k: v for k, v in row.items() if k not in TEXT_COLUMNS}
        data.append(row)
    write(target / "data.jsonl", data)
    write(target / "score/subset.jsonl", [{k: v for k, v in r.items() if k not in DROPPED_COLUMNS} for r in subset])
    results = []
    for row in filter(kept, rows(source / "execute/results.jsonl")):
        if key(row) not in viewed:
            row["stderr_tail"] = clip(row.get("stderr_tail"), STDERR_CHARS)
        results.append(row)
    write(target / "execute/results.jsonl", results)
    for name in ("scores.jsonl", "scores_wide.jsonl"):
        write(target / "score/llm" / name, rows(source / "score/llm" / name))
    write(target / "score/all/scores_wide.jsonl", list(filter(kept, rows(source / "score/all/scores_wide.jsonl"))))
    # the carried dataset columns of score/all/scores.jsonl repeat data.jsonl (kept in scores_wide)
    write(target / "score/all/scores.jsonl",
          [{k: v for k, v in r.items() if k in ROW_COLUMNS} for r in filter(kept, rows(source / "score/all/scores.jsonl"))])
    write(target / "score/llm/traces.jsonl", [clip_trace(t) for t in rows(source / "score/llm/traces.jsonl")])
    for relative in COPIED:
        if (source / relative).exists():
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / relative, target / relative)
    size = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
    print(f"{target}: {len(tasks)} tasks, {len(data)} rows, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else Path(__file__).parent / "run-fixture")
