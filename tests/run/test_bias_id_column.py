"""The bias stage of `workbench run` on data with an id column of its own (`[data] id_column`):
dedup keys rows by it, while execute's results and score's table key them by task and sample.
Real dedup, sandboxed execution, chrF and bias; no LLM."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.data import load_records
from workbench.run import load_config, run_pipeline


def _generations(path: Path, tasks: int = 4) -> Path:
    """Per HumanEval task: its canonical solution twice (a duplicate pair, both pass) and a wrong body."""
    problems = next(iter(load_records("humaneval").splits.values()))
    rows = []
    for task in problems.select(range(tasks)):
        for sample, gen in enumerate([task["canonical_solution"], task["canonical_solution"], "    return None\n"]):
            rows.append({"problem": task["task_id"], "completion_id": sample, "gen": gen,
                         "uid": f"u{len(rows)}"})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_bias_runs_with_a_custom_id_column_and_joins_pass_at_1_through_task_and_sample(tmp_path: Path) -> None:
    """newuser34: `id_column = "uid"` failed the bias stage: "scores_wide.jsonl: column 'uid' not found"
    (score's table did not carry it), and execute's results have no uid either."""
    data = _generations(tmp_path / "gens_uid.jsonl")
    config = tmp_path / "uid.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["dedup", "execute", "score_all", "bias"]\n'
                      f'[data]\nsource = "{data}"\nlanguage = "python"\ntask_column = "problem"\n'
                      'sample_column = "completion_id"\ncode_column = "gen"\nid_column = "uid"\n'
                      '[dedup]\ngroup_column = "problem"\nmin_tokens = 1\n[execute]\nproblems = "humaneval"\n'
                      '[score]\nmethod = ["chrf"]\nproblems = "humaneval"\n[bias]\nresamples = 100\n')
    result = run_pipeline(load_config(config))
    outcomes = {o.name: (o.status, o.detail) for o in result.outcomes}
    assert outcomes["bias"][0] == "ran", outcomes
    bias = json.loads((tmp_path / "run" / "bias" / "report.json").read_text())
    assert bias["join"]["joined"] == 12 and bias["join"]["id_columns"] == ["uid"]
    passed = bias["duplication"]["metrics"]["passed"]["settings"]
    # every canonical solution passes and every `return None` fails: 8 of 12 rows, joined by uid
    assert passed["all_rows"]["value"] == 8 / 12 and passed["all_rows"]["n_rows"] == 12, passed
    assert passed["deduplicated"]["n_rows"] == 8 and passed["deduplicated"]["value"] == 0.5, passed
    assert bias["bootstrap"]["unit"] == "task" and not bias["warnings"], bias["warnings"]


def test_bias_with_a_custom_id_column_and_no_scored_table_is_skipped_up_front(tmp_path: Path) -> None:
    """Without score_all nothing joins execute's task_id:sample_id to the uid of the dedup: the stage
    is skipped with that reason in the plan, not failed after execution."""
    data = _generations(tmp_path / "gens_uid.jsonl", tasks=1)
    config = tmp_path / "uid.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["dedup", "execute", "bias"]\n'
                      f'[data]\nsource = "{data}"\nlanguage = "python"\ntask_column = "problem"\n'
                      'sample_column = "completion_id"\ncode_column = "gen"\nid_column = "uid"\n'
                      '[dedup]\nmin_tokens = 1\n[execute]\nproblems = "humaneval"\n')
    result = run_pipeline(load_config(config), only=["dedup"])
    status, detail = {o.name: (o.status, o.detail) for o in result.outcomes}["bias"]
    assert status == "skipped" and "no [data] id_column 'uid'" in detail and "cheap [score] method" in detail, detail
