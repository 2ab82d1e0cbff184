"""A slice of the bundled ICE-Score set and a ``workbench run`` config on it, for the tests of
what the pipeline plans on a run folder (tests/run/test_run_plan.py, test_stage_files.py)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

BUNDLED = Path(__file__).resolve().parents[1] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"
TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/12")


def task_rows() -> list[dict]:
    """The bundled rows of :data:`TASKS`, in file order."""
    return [row for row in map(json.loads, gzip.open(BUNDLED, "rt")) if row["task_id"] in TASKS]


def write_generations(path: Path, *, per_outcome: int = 2, drop: tuple[str, ...] = ()) -> Path:
    """Write real ICE-Score rows of :data:`TASKS` to ``path`` (JSON Lines): ``per_outcome``
    passing and failing samples each, without the columns in ``drop``."""
    picked = []
    rows = task_rows()
    for task in TASKS:
        mine = [r for r in rows if r["task_id"] == task]
        picked += [r for r in mine if str(r["passed"]) == "1"][:per_outcome]
        picked += [r for r in mine if str(r["passed"]) == "0"][:per_outcome]
    path.write_text("".join(json.dumps({k: v for k, v in r.items() if k not in drop}) + "\n" for r in picked))
    return path


def write_config(path: Path, run: Path, data: Path, stages: list[str], tables: str, label_column: str = "passed") -> Path:
    """A config at ``path`` running ``stages`` on ``data`` (its code in ``completion_multipl_e``,
    the label ``label_column``, dedup grouped by task) into ``run``, with the further ``tables``
    (TOML text that goes on in the ``[dedup]`` table)."""
    path.write_text(f"""
[run]
output = "{run}"
stages = {json.dumps(stages)}
[data]
source = "{data}"
code_column = "completion_multipl_e"
label_column = "{label_column}"
[dedup]
group_column = "task_id"
{tables}""")
    return path
