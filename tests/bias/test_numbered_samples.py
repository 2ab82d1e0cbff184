"""Generations without a sample id column (a task id and a completion, as ``workbench execute``
takes them): dedup numbers each task's samples as execute and score do, its deduplicated split
carries the numbers, and bias joins every row of the same file by (task, numbered sample). Real
dedup (tree-sitter tokens, MinHash LSH, verification) and real bias on a JSONL file."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest

from workbench.bias import BiasConfig, run_bias
from workbench.dedup import DedupConfig, run_dedup
from workbench.errors import DataError

_BODY = "    total = 0\n    for value in values:\n        total += value * {k}\n    return total + {k}\n"


def _dedup_by_task_and_sample(tmp_path, rows):
    """Write ``rows`` to ``gens.jsonl`` and deduplicate it with ``--id-column task_id,sample_id`` into
    ``tmp_path/dedup``; returns ``(the data file, the run)``."""
    data = tmp_path / "gens.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = run_dedup(str(data), DedupConfig(code_column="completion", id_column="task_id,sample_id", min_tokens=1),
                    output_dir=tmp_path / "dedup")
    return data, run


def test_dedup_and_bias_join_on_numbered_samples(tmp_path):
    rows = []
    for t in range(6):
        for s in range(3):
            # sample 0 and 1 of a task are the same code (a duplicate); sample 2 differs by task
            code = _BODY.format(k=t) if s < 2 else f"    return sorted(values)[{t}] * {s + t}\n" * (t + 1)
            rows.append({"task_id": f"Task/{t}", "completion": code, "chrf": 0.1 * t + 0.01 * s})
    data, run = _dedup_by_task_and_sample(tmp_path, rows)
    out = tmp_path / "dedup"
    clusters = json.loads((out / "clusters.json").read_text())
    assert ["Task/3:0", "Task/3:1"] in clusters  # the numbers are the ones execute and score give
    kept = [json.loads(line) for line in (out / "train.jsonl").read_text().splitlines()]
    assert {r["sample_id"] for r in kept} <= {0, 1, 2} and "Task/0" in {r["task_id"] for r in kept}
    assert run.report["parameters"]["id_column"] == "task_id,sample_id"

    report = run_bias(out, str(data), BiasConfig(metric=["chrf"], id_column="task_id,sample_id", task_column="task_id",
                                                 resamples=100))
    assert (report.join.joined, report.join.unjoined) == (18, 0)


def test_a_metric_table_numbered_by_its_order_against_real_sample_ids_is_refused(tmp_path):
    """probe 29: the dedup read real sample ids; a metric table without the column, its rows shuffled, was
    numbered 0, 1, 2 per task in its own order: every id joined (3 of 3 per task) and each value was paired
    with another row. The two kinds of ids are told apart by report.json (parameters.numbered_id_column)."""
    rows = [{"task_id": f"Task/{t}", "sample_id": s, "completion": _BODY.format(k=t) if s < 2 else f"x = {t}\n",
             "passed": int(s == 0)} for t in range(4) for s in range(3)]
    data, run = _dedup_by_task_and_sample(tmp_path, rows)
    assert run.report["parameters"]["numbered_id_column"] is None
    shuffled = rows[:]
    random.Random(3).shuffle(shuffled)
    numbered = tmp_path / "numbered.jsonl"  # the same rows without their sample ids, in another order
    numbered.write_text("".join(json.dumps({"task_id": r["task_id"], "passed": r["passed"]}) + "\n" for r in shuffled))
    config = BiasConfig(metric=["passed"], task_column="task_id", resamples=100)
    for attempt in (config, dataclasses.replace(config, allow_partial_join=True)):
        with pytest.raises(DataError, match=r"numbered.jsonl has no sample_id column, so its rows were numbered per task "
                                            r"in its row order .* read real sample_id values from its data.*Give the "
                                            r"metric table its sample_id column"):
            run_bias(tmp_path / "dedup", str(numbered), attempt)
    # the full table (with its sample ids), in any order, joins every row
    with_ids = tmp_path / "with_ids.jsonl"
    with_ids.write_text("".join(json.dumps(r) + "\n" for r in shuffled))
    assert run_bias(tmp_path / "dedup", str(with_ids), config).join.joined == 12


def test_numbered_ids_on_both_sides_and_real_ids_after_numbering_join(tmp_path):
    """What the docs promise: data without sample ids numbered by dedup joins a metric table numbered the same
    way (the same file), and a table that carries the numbers as a column (execute's results)."""
    rows = [{"task_id": f"Task/{t}", "completion": _BODY.format(k=t) if s < 2 else f"x = {t}\n", "passed": int(s == 0)}
            for t in range(4) for s in range(3)]
    data, run = _dedup_by_task_and_sample(tmp_path, rows)
    assert run.report["parameters"]["numbered_id_column"] == "sample_id"
    config = BiasConfig(metric=["passed"], task_column="task_id", resamples=100)
    assert run_bias(tmp_path / "dedup", str(data), config).join.joined == 12
    results = tmp_path / "results.jsonl"  # execute writes the numbers it gave as a sample_id column
    results.write_text("".join(json.dumps({"task_id": r["task_id"], "sample_id": k % 3, "passed": r["passed"]}) + "\n"
                               for k, r in enumerate(rows)))
    assert run_bias(tmp_path / "dedup", str(results), config).join.joined == 12


def test_a_mostly_unjoined_metric_table_of_an_older_dedup_is_refused_and_the_numbering_is_named(tmp_path):
    """The dedup read real sample ids (0, 5, 9 per task) and its report.json comes from a workbench that did
    not record how its ids were made; a metric table without the column numbers its rows 0, 1, 2 per task,
    so only sample 0 joins, and 1 and 2 name no row (in the probe, other rows): fewer than half join, so bias
    refuses rather than report figures over wrongly paired rows, and names the numbering;
    --allow-partial-join goes on, with the warning."""
    rows = [{"task_id": f"Task/{t}", "sample_id": s, "completion": _BODY.format(k=t) if s < 9 else f"x = {t}\n",
             "passed": int(s == 0)} for t in range(4) for s in (0, 5, 9)]
    data, _ = _dedup_by_task_and_sample(tmp_path, rows)
    report_path = tmp_path / "dedup" / "report.json"
    older = json.loads(report_path.read_text())
    del older["parameters"]["numbered_id_column"]
    report_path.write_text(json.dumps(older))
    numbered = tmp_path / "numbered.jsonl"  # the same rows without their sample ids
    numbered.write_text("".join(json.dumps({"task_id": r["task_id"], "passed": r["passed"]}) + "\n" for r in rows))
    config = BiasConfig(metric=["passed"], task_column="task_id", resamples=100)
    with pytest.raises(DataError, match=r"only 4 of its 12 rows join .* numbered per task in file order"):
        run_bias(tmp_path / "dedup", str(numbered), config)
    report = run_bias(tmp_path / "dedup", str(numbered), dataclasses.replace(config, allow_partial_join=True))
    assert (report.join.joined, report.join.unjoined) == (4, 8)
    assert any("8 metric rows have an id the dedup output does not have" in w for w in report.warnings)
    # the full table (with its sample ids) joins every row
    assert run_bias(tmp_path / "dedup", str(data), config).join.joined == 12


def test_results_join_by_execute_task_id_and_sample_id_when_the_data_names_them_otherwise(tmp_path):
    """newuser34: generations whose task and sample columns are ``problem`` and ``completion_id``:
    dedup with ``--id-column problem,completion_id``, bias with that id on the data and execute's
    results, which always name them ``task_id`` and ``sample_id``, failed with "column 'problem' not
    found (set it with --id-column)" on the results: no --id-column could join both tables."""
    rows = [{"problem": f"Task/{t}", "completion_id": s, "completion": _BODY.format(k=t) if s < 2 else f"x = {t}\n",
             "chrf": 0.1 * t + 0.01 * s} for t in range(6) for s in range(3)]
    data = tmp_path / "gens.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run_dedup(str(data), DedupConfig(code_column="completion", id_column="problem,completion_id", min_tokens=1),
              output_dir=tmp_path / "dedup")
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps({"task_id": r["problem"], "sample_id": r["completion_id"],
                                           "passed": int(r["completion_id"] == 0)}) + "\n" for r in rows))
    report = run_bias(tmp_path / "dedup", str(data), BiasConfig(
        metric=["passed", "chrf"], id_column="problem,completion_id", task_column="problem", label="passed",
        results=str(results), resamples=100))
    assert (report.join.joined, report.join.unjoined) == (18, 0)
    passed = report.duplication.metrics["passed"]
    assert passed.missing == 0 and passed.settings["all_rows"].value == pytest.approx(6 / 18)
    assert report.duplication.metrics["chrf"].correlation  # tau-b with the results' label
