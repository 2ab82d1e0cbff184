"""Generations without a sample id column (a task id and a completion, as ``workbench execute``
takes them): dedup numbers each task's samples as execute and score do, its deduplicated split
carries the numbers, and bias joins every row of the same file by (task, numbered sample). Real
dedup (tree-sitter tokens, MinHash LSH, verification) and real bias on a JSONL file."""

from __future__ import annotations

import json

from workbench.bias import BiasConfig, run_bias
from workbench.dedup import DedupConfig, run_dedup

_BODY = "    total = 0\n    for value in values:\n        total += value * {k}\n    return total + {k}\n"


def test_dedup_and_bias_join_on_numbered_samples(tmp_path):
    rows = []
    for t in range(6):
        for s in range(3):
            # sample 0 and 1 of a task are the same code (a duplicate); sample 2 differs by task
            code = _BODY.format(k=t) if s < 2 else f"    return sorted(values)[{t}] * {s + t}\n" * (t + 1)
            rows.append({"task_id": f"Task/{t}", "completion": code, "chrf": 0.1 * t + 0.01 * s})
    data = tmp_path / "gens.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "dedup"
    run = run_dedup(str(data), DedupConfig(code_column="completion", id_column="task_id,sample_id", min_tokens=1),
                    output_dir=out)
    clusters = json.loads((out / "clusters.json").read_text())
    assert ["Task/3:0", "Task/3:1"] in clusters  # the numbers are the ones execute and score give
    kept = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert {r["sample_id"] for r in kept} <= {0, 1, 2} and "Task/0" in {r["task_id"] for r in kept}
    assert run.report["parameters"]["id_column"] == "task_id,sample_id"

    report = run_bias(out, str(data), BiasConfig(metric=["chrf"], id_column="task_id,sample_id", task_column="task_id",
                                                 resamples=100))
    assert (report.join.joined, report.join.unjoined) == (18, 0)
