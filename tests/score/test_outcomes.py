"""``workbench score --results``: generations without a label take each sample's ``passed`` from
the results of ``workbench execute`` (real execution in the sandbox, real ``datasets`` loading,
chrF: no LLM), so ``--select stratified`` works on a user's own generations."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_humaneval
from workbench.errors import DataError
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.score.config import ScoreConfig
from workbench.score.job import select_samples


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """Two samples for each of three HumanEval tasks (the canonical solution and a wrong body),
    no sample column (both jobs number them 0, 1 per task), executed for real."""
    folder = tmp_path_factory.mktemp("outcomes")
    rows = []
    for problem in load_humaneval().select(range(3)):
        rows.append({"task_id": problem["task_id"], "completion": problem["canonical_solution"]})
        rows.append({"task_id": problem["task_id"], "completion": "    return None\n"})
    rows.reverse()  # the wrong sample first in each task: the selection must read the outcome, not the order
    generations = _jsonl(folder / "gens.jsonl", rows)
    results = folder / "results.jsonl"
    run_execute(generations, results, ExecutionConfig(timeout=30.0, workers=2, reference_cache=False))
    return generations, results


def test_each_sample_carries_its_execution_outcome(executed):
    generations, results = executed
    samples = select_samples(generations, ScoreConfig(method=["chrf"], generation_column="completion",
                                                      problems="humaneval", results=str(results)))
    assert [(s.task_id, s.sample_id, s.carried["passed"]) for s in samples][:2] == [
        ("HumanEval/2", 0, 0), ("HumanEval/2", 1, 1)]
    assert [s.carried["passed"] for s in samples] == [int(s.generation != "    return None\n") for s in samples]


def test_stratified_selection_from_the_results(executed):
    generations, results = executed
    config = ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                         results=str(results), select="stratified", limit=4)
    samples = select_samples(generations, config)
    assert len(samples) == 4 and len({s.task_id for s in samples}) == 2
    assert sorted(s.carried["passed"] for s in samples) == [0, 0, 1, 1]
    without = ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                          select="stratified", limit=4)
    with pytest.raises(DataError, match="stratify-column|passed"):
        select_samples(generations, without)


def test_results_replace_a_passed_column_and_samples_without_a_verdict_are_left_out_and_noted(tmp_path, executed):
    generations, results = executed
    rows = [json.loads(line) for line in generations.read_text().splitlines()]
    labelled = _jsonl(tmp_path / "labelled.jsonl", [{**row, "passed": 7} for row in rows])
    samples = select_samples(labelled, ScoreConfig(method=["chrf"], generation_column="completion",
                                                   problems="humaneval", results=str(results)))
    assert {s.carried["passed"] for s in samples} == {0, 1}
    kept = [row for row in map(json.loads, results.read_text().splitlines())
            if (row["task_id"], row["sample_id"]) != ("HumanEval/2", 0)]
    partial = _jsonl(tmp_path / "partial.jsonl", kept)
    notes: list[str] = []
    samples = select_samples(generations, ScoreConfig(method=["chrf"], generation_column="completion",
                                                      problems="humaneval", results=str(partial)), notes=notes)
    assert ("HumanEval/2", "0") not in {s.key for s in samples} and len(samples) == 5
    assert notes == [f"--results {partial}: 1 sample has no verdict there (no row, or status sandbox_error; the "
                     f"first: task 'HumanEval/2' sample '0') and was left out; 5 with one were selected from"]
    elsewhere = _jsonl(tmp_path / "elsewhere.jsonl", [{"task_id": "MBPP/1", "sample_id": 0, "passed": 1}])
    with pytest.raises(DataError, match=r"--results .*elsewhere.jsonl: no sample has a result there"):
        select_samples(generations, ScoreConfig(method=["chrf"], generation_column="completion",
                                                problems="humaneval", results=str(elsewhere)))
    broken = _jsonl(tmp_path / "broken.jsonl", [{"task_id": "HumanEval/2", "sample_id": 0, "passed": 1},
                                                {"task_id": "HumanEval/2", "sample_id": "0", "passed": 0}])
    with pytest.raises(DataError, match="lists task 'HumanEval/2' sample '0' twice"):
        select_samples(generations, ScoreConfig(method=["chrf"], generation_column="completion",
                                                problems="humaneval", results=str(broken)))
    with pytest.raises(DataError, match=r"--results .*nothing.jsonl"):
        select_samples(generations, ScoreConfig(method=["chrf"], generation_column="completion",
                                                problems="humaneval", results=str(tmp_path / "nothing.jsonl")))


def test_the_cli_scores_a_stratified_subset_of_executed_generations(tmp_path, executed):
    generations, results = executed
    out = tmp_path / "score"
    result = CliRunner().invoke(app, ["score", str(generations), "--generation-column", "completion", "--problems",
                                      "humaneval", "--results", str(results), "--select", "stratified", "--limit",
                                      "2", "-m", "chrf", "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert sorted(row["passed"] for row in rows) == [0, 1]
    assert json.loads((out / "run.json").read_text())["config"]["results"].endswith("results.jsonl")
    # a sample the results lack is left out, and the summary says so
    lacking = _jsonl(tmp_path / "lacking.jsonl", [json.loads(line) for line in results.read_text().splitlines()][1:])
    result = CliRunner().invoke(app, ["score", str(generations), "--generation-column", "completion", "--problems",
                                      "humaneval", "--results", str(lacking), "-m", "chrf", "-o", str(tmp_path / "s2")])
    assert result.exit_code == 0, result.output
    assert "1 sample has no verdict there" in " ".join(result.output.split())
    assert len((tmp_path / "s2" / "scores.jsonl").read_text().splitlines()) == 5


def test_results_of_other_data_are_noted_and_changed_verdicts_do_not_resume(tmp_path, executed):
    generations, results = executed
    rows = [json.loads(line) for line in generations.read_text().splitlines()]
    shuffled = _jsonl(tmp_path / "shuffled.jsonl", rows[::-1])  # same tasks, other numbering within each task
    notes: list[str] = []
    select_samples(shuffled, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                                         results=str(results)), notes=notes)
    assert any("its run executed" in note and "gens.jsonl, not the data scored here" in note for note in notes)
    notes.clear()
    select_samples(generations, ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                                            results=str(results)), notes=notes)
    assert notes == []
    # results with the same path but other verdicts: the stratified selection would change, so no resume
    copy = tmp_path / "results.jsonl"
    copy.write_text(results.read_text())
    args = ["score", str(generations), "--generation-column", "completion", "--problems", "humaneval", "--results",
            str(copy), "--select", "stratified", "--limit", "2", "-m", "chrf", "-o", str(tmp_path / "run")]
    assert CliRunner().invoke(app, args).exit_code == 0
    flipped = [{**row, "passed": 1 - row["passed"]} for row in map(json.loads, copy.read_text().splitlines())]
    _jsonl(copy, flipped)
    resumed = CliRunner().invoke(app, [*args, "--resume"])
    assert resumed.exit_code != 0 and "results_verdicts" in resumed.output


def test_notes_on_an_unbalanced_subset_and_on_generations_that_repeat_their_prompt(tmp_path, executed):
    from workbench.score.job import sample_notes

    generations, results = executed
    config = ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                         results=str(results), select="stratified", limit=6)
    from workbench.score.selection import balance_note

    notes: list[str] = []  # the selection's notes (where the data's outcomes are known): load_samples's
    samples = select_samples(generations, config, notes=notes)
    assert not any("--select stratified" in note for note in notes)  # 3 tasks x (pass, fail)
    one_outcome = [s for s in samples if s.carried["passed"] == 1]
    note = balance_note(one_outcome, "passed", 6, candidates=samples)
    assert note.startswith("--select stratified: no task in the subset has both a passing and a failing sample (the "
                           "data has too few tasks with both outcomes"), note
    programs = _jsonl(tmp_path / "programs.jsonl", [
        {"task_id": s.task_id, "completion": s.prompt + s.generation} for s in samples[:2]])
    whole = ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval")
    assert any(n.startswith("2 of 2 generations begin with their own prompt")
               for n in sample_notes(select_samples(programs, whole), whole))
    without = ScoreConfig(method=["chrf"], generation_column="completion", problems="humaneval",
                          select="stratified", limit=2)
    with pytest.raises(DataError, match="--results RESULTS.jsonl"):
        select_samples(generations, without)


def test_results_copied_out_of_their_run_folder_are_not_said_to_come_from_other_data(tmp_path):
    """The execute stage of workbench run records data kept in its run folder as <run folder>/data.jsonl.
    Its results and summary copied out of the folder (no execute/results.jsonl to find the folder by),
    other_source_note compared that text with the scored path and said "its run executed <run
    folder>/data.jsonl, not the data scored here", of the very same file. Where the folder cannot be
    known there is nothing to compare, as without a summary."""
    from workbench.score.outcomes import other_source_note

    data = tmp_path / "run" / "data.jsonl"
    data.parent.mkdir()
    data.write_text(json.dumps({"task_id": "t", "completion": "x"}) + "\n")
    copied = tmp_path / "elsewhere" / "results.jsonl"
    copied.parent.mkdir()
    copied.write_text(json.dumps({"task_id": "t", "sample_id": 0, "passed": True}) + "\n")
    (tmp_path / "elsewhere" / "results.summary.json").write_text(
        json.dumps({"settings": {"source": "<run folder>/data.jsonl"}}))
    assert other_source_note(copied, data) is None
    # in its run folder, the recorded data is found and compared: other data is still named
    placed = tmp_path / "run" / "execute" / "results.jsonl"
    placed.parent.mkdir()
    placed.write_text(copied.read_text())
    (placed.parent / "results.summary.json").write_text((tmp_path / "elsewhere" / "results.summary.json").read_text())
    assert other_source_note(placed, data) is None
    other = tmp_path / "other.jsonl"
    other.write_text(data.read_text())
    assert f"its run executed {data.resolve()}, not the data scored here" in other_source_note(placed, other)
