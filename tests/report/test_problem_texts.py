"""The report shows the prompt and reference a judge saw when they came from ``[score] problems``
(a generations file with only ``task_id`` and ``completion``), read from the real bundled
HumanEval through the real loader."""

from __future__ import annotations

import json

from workbench.report.run_folder import RunFolder, load_dataset


def _folder(tmp_path, rows):
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return RunFolder(tmp_path)


def test_prompt_and_reference_come_from_the_problem_set(tmp_path):
    folder = _folder(tmp_path, [{"task_id": "HumanEval/0", "completion": "    return True\n"},
                                {"task_id": "HumanEval/999", "completion": "    pass\n"}])
    config = {"data": {"source": "gens.jsonl", "code_column": "completion"}, "score": {"problems": "humaneval"}}
    dataset = load_dataset(folder, config)
    first = dataset.rows[0]
    assert first[dataset.columns["prompt"]].startswith("from typing import List")
    assert "for idx, elem in enumerate(numbers)" in first[dataset.columns["reference"]]
    assert dataset.rows[1][dataset.columns["reference"]] == ""  # not in the problem set: empty, not an error
    assert folder.problems == []


def test_the_data_own_columns_win_and_a_bad_problem_set_is_recorded(tmp_path):
    own = [{"task_id": "HumanEval/0", "completion": "x", "prompt": "P", "reference": "R"}]
    dataset = load_dataset(_folder(tmp_path, own), {"score": {"problems": "humaneval"}})
    assert (dataset.rows[0][dataset.columns["prompt"]], dataset.rows[0][dataset.columns["reference"]]) == ("P", "R")
    folder = _folder(tmp_path, [{"task_id": "HumanEval/0", "completion": "x"}])
    dataset = load_dataset(folder, {"score": {"problems": str(tmp_path / "missing.jsonl")}})
    assert dataset.rows is not None
    assert any("[score] problems could not be read" in p for p in folder.problems)


def test_without_a_data_language_the_report_takes_the_rows_language_as_the_stages_did(tmp_path):
    """Probe 29 follow-up: execute and score take the data's language column when [data] language is
    unset, so the report's code views must not call that code Python."""
    rows = [{"task_id": "HumanEval/0", "completion": "return true;", "language": "toy"}]
    assert load_dataset(_folder(tmp_path, rows), {"data": {"code_column": "completion"}}).columns["language"] == "toy"
    assert load_dataset(_folder(tmp_path, rows), {"data": {"language": "python"}}).columns["language"] == "python"
    mixed = [*rows, {"task_id": "HumanEval/1", "completion": "x", "language": "other"}]
    assert load_dataset(_folder(tmp_path, mixed), {"data": {}}).columns["language"] == "python"
