"""``workbench bias`` does not depend on the order of the metric table's rows: its units (tasks, or
duplicate clusters and the rows in none) are numbered in one canonical order, so a shuffled copy
of a real slice of the bundled ICE-Score set, joined to one real dedup output, gives the same
report (values, intervals, tau-b) to the last bit. Before, units were numbered as they first
appeared in the table and a shuffle moved the intervals."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app

BUNDLED = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"
METRICS = ("passed", "codebleu", "gpt35_nswr")


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Every 6th task of the bundled set (27 tasks x 20 samples), deduplicated within tasks, and
    the same rows shuffled."""
    folder = tmp_path_factory.mktemp("order")
    with gzip.open(BUNDLED, "rt") as handle:
        rows = [json.loads(line) for line in handle]
    keep = set(list(dict.fromkeys(row["task_id"] for row in rows))[::6])
    rows = [{key: row[key] for key in ("task_id", "sample_id", "completion_multipl_e", *METRICS)}
            for row in rows if row["task_id"] in keep]
    _write(folder / "slice.jsonl", rows)
    random.Random(11).shuffle(rows)
    _write(folder / "shuffled.jsonl", rows)
    dedup = CliRunner().invoke(app, ["dedup", str(folder / "slice.jsonl"), "--code-column", "completion_multipl_e",
                                     "--id-column", "task_id,sample_id", "--group-column", "task_id", "--min-tokens", "5",
                                     "--no-progress", "-o", str(folder / "dedup")])
    assert dedup.exit_code == 0, dedup.output
    return folder


def _bias(folder: Path, table: str, by_task: bool) -> dict:
    out = folder / f"{table}.{by_task}.json"
    result = CliRunner().invoke(app, ["bias", str(folder / "dedup"), str(folder / table),
                                      *[a for m in METRICS for a in ("-m", m)], "--id-column", "task_id,sample_id",
                                      *(["--task-column", "task_id"] if by_task else []), "--label", "passed",
                                      "--resamples", "200", "--json", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    return report


def _without_sources(value):
    """The report with the metric table's path taken out (the one thing that differs)."""
    if isinstance(value, dict):
        return {k: _without_sources(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_sources(v) for v in value]
    return value.replace("shuffled.jsonl", "slice.jsonl") if isinstance(value, str) else value


@pytest.mark.parametrize("by_task", [True, False], ids=["tasks", "clusters"])
def test_shuffled_metric_rows_give_the_same_report(folder, by_task):
    first, second = _bias(folder, "slice.jsonl", by_task), _bias(folder, "shuffled.jsonl", by_task)
    setting = first["duplication"]["metrics"]["codebleu"]
    again = second["duplication"]["metrics"]["codebleu"]
    assert again == setting  # the audit's symptom first: one metric's intervals
    assert _without_sources(second) == _without_sources(first)
