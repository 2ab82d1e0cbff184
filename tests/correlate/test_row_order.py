"""The task bootstrap does not depend on the order of the input rows: tasks are numbered in one
canonical order (:func:`workbench.data.task_order.canonical_codes`), so a shuffled copy of a real
file (the bundled ICE-Score set, 40 of its tasks) gives the same intervals and p-values. Before,
tasks were numbered as they first appeared and a shuffle moved CodeBLEU's tau-b interval."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest

from workbench.correlate import correlate
from workbench.correlate.inputs import as_dataset, prepare_table
from workbench.data.task_order import canonical_order

BUNDLED = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"
COLUMNS = ("task_id", "sample_id", "passed", "codebleu", "chrf", "generation")


def _slice(n_tasks: int = 40) -> list[dict]:
    """The rows of the file's first ``n_tasks`` tasks (file order: HumanEval/99, /140, ...)."""
    with gzip.open(BUNDLED, "rt") as handle:
        rows = [{c: row[c] for c in COLUMNS} for row in map(json.loads, handle)]
    tasks = list(dict.fromkeys(row["task_id"] for row in rows))[:n_tasks]
    return [row for row in rows if row["task_id"] in set(tasks)]


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _report(path: Path) -> dict:
    data = correlate(path, metrics=["codebleu", "chrf"], sample_column="sample_id", n_resamples=400, seed=0,
                     combine=["both=rank-mean-cv:codebleu,chrf"]).to_dict()
    data.pop("source")
    return data


def test_shuffled_rows_give_the_same_intervals_and_p_values(tmp_path):
    rows = _slice()
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    first = _report(_jsonl(tmp_path / "a.jsonl", rows))
    second = _report(_jsonl(tmp_path / "b.jsonl", shuffled))
    pooled, again = first["metrics"]["codebleu"]["pooled"], second["metrics"]["codebleu"]["pooled"]
    assert again["kendall_ci"] == pooled["kendall_ci"]  # the audit's symptom, said first
    assert [c["p_value"] for c in second["comparisons"]] == [c["p_value"] for c in first["comparisons"]]
    assert second == first


def test_tasks_are_numbered_in_natural_order_of_their_ids(tmp_path):
    rows = _slice(12)
    dataset, _ = as_dataset(_jsonl(tmp_path / "a.jsonl", rows))
    table = prepare_table(dataset, metrics=["codebleu"], label="passed", task_column="task_id", sample_column="sample_id")
    assert table.task_ids == canonical_order(row["task_id"] for row in rows)
    numbers = [int(t.split("/")[1]) for t in table.task_ids]
    assert numbers == sorted(numbers)  # HumanEval/2 before HumanEval/10: digits compare as numbers
    assert list(table.row_task) == sorted(table.row_task)


@pytest.mark.parametrize("ids", [["b", "a10", "a2", "", "é", "A"], ["10", "9", "09", "x9y", "x10y"],
                                 [3, "3", "03", 10, "", "é2", "e10", 2.5, "٣"]])
def test_the_order_is_total_and_ignores_input_order(ids):
    orders = {tuple(canonical_order(random.Random(seed).sample(ids, len(ids)))) for seed in range(20)}
    (order,) = orders
    assert len(order) == len(ids) and set(order) == set(ids)
