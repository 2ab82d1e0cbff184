"""Which samples a scoring run looks at: ``--select stratified`` on the real bundled ICE-Score
set, and the rows written before an interrupt (no LLM: chrF only)."""

from __future__ import annotations

from collections import Counter

import pytest

from workbench.errors import DataError
from workbench.score.base import Sample
from workbench.io import read_jsonl
from workbench.score.config import ScoreConfig
from workbench.score.job import Columns, load_samples, score_samples
from workbench.score.selection import stratified_subset

COLUMNS = Columns(generation="completion_multipl_e")


@pytest.fixture(scope="module")
def everything() -> list[Sample]:
    return load_samples("humaneval-codex-python", COLUMNS)


def test_stratified_subset_covers_tasks_and_both_outcomes(everything: list[Sample]) -> None:
    picked = load_samples("humaneval-codex-python", COLUMNS, limit=100, select="stratified")
    assert len(picked) == 100 and len({(s.task_id, s.sample_id) for s in picked}) == 100
    per_task = Counter(s.task_id for s in picked)
    assert len(per_task) == 50 and set(per_task.values()) == {2}
    for task in per_task:  # one passing and one failing sample of each task
        assert sorted(int(s.carried["passed"]) for s in picked if s.task_id == task) == [0, 1]
    first = load_samples("humaneval-codex-python", COLUMNS, limit=100)
    assert len({s.task_id for s in first}) < 10  # what "the first N" would have given


def test_stratified_subset_is_seeded_and_nested(everything: list[Sample]) -> None:
    small = stratified_subset(everything, 10, seed=3)
    large = stratified_subset(everything, 40, seed=3)
    assert large[:10] == small  # raising the limit only adds samples
    assert stratified_subset(everything, 10, seed=3) == small
    assert stratified_subset(everything, 10, seed=4) != small


def test_stratified_subset_returns_everything_when_the_budget_is_larger() -> None:
    samples = [Sample(task_id=f"T{i % 2}", sample_id=i, generation="x", reference="y", carried={"passed": i % 3 == 0})
               for i in range(7)]
    assert sorted(s.sample_id for s in stratified_subset(samples, 100)) == list(range(7))


def test_stratified_subset_needs_a_numeric_label() -> None:
    samples = [Sample(task_id="T", sample_id=0, generation="x", reference="y", carried={"passed": "yes"})]
    with pytest.raises(DataError, match="cannot stratify on 'passed'"):
        stratified_subset(samples, 1)
    with pytest.raises(DataError, match="needs the 'outcome' column"):
        stratified_subset(samples, 1, label="outcome")


def test_interrupted_run_still_writes_the_wide_table(tmp_path, everything: list[Sample]) -> None:
    seen: list[dict] = []

    def stop_after_three(row: dict) -> None:
        seen.append(row)
        if len(seen) == 3:
            raise KeyboardInterrupt

    config = ScoreConfig(method=["chrf"], workers=1)
    with pytest.raises(KeyboardInterrupt):
        score_samples(everything[:10], config, tmp_path / "out", on_row=stop_after_three)
    wide = read_jsonl(tmp_path / "out" / "scores_wide.jsonl")
    written = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert 3 <= len(wide) == len(written) < 10  # a worker may finish the sample it had started
    assert all(row["chrf"] is not None for row in wide)


def _sample(task: str, number: int, passed: int) -> Sample:
    return Sample(task_id=task, sample_id=number, generation="pass", reference="pass", carried={"passed": passed})


@pytest.mark.parametrize(("limit", "expected"), [
    (41, "--select stratified: 20 of the 21 tasks in the subset have both a passing and a failing sample; the other "
         "task has one sample only, as --limit 41 is odd (its pair is cut): use an even --limit"),
    (3, "--select stratified: 1 of the 2 tasks in the subset has both a passing and a failing sample; the other task "
        "has one sample only, as --limit 3 is odd (its pair is cut): use an even --limit"),
    (1, "--select stratified: the subset's one task has one sample only, as --limit 1 is odd (its pair is cut): use "
        "an even --limit"),
])
def test_balance_note_names_an_odd_limit_in_good_grammar(everything: list[Sample], limit: int, expected: str) -> None:
    """An odd --limit cuts the last task's pair: the note says so, with counts in their grammatical number
    (it read "the other 1 have one outcome only (the data has too few tasks ...)", which was untrue too)."""
    from workbench.score.selection import balance_note

    picked = stratified_subset(everything, limit)
    assert balance_note(picked, limit=limit, candidates=everything) == expected
    assert balance_note(stratified_subset(everything, limit + 1), limit=limit + 1) is None


def test_balance_note_blames_the_data_when_it_lacks_mixed_tasks() -> None:
    from workbench.score.selection import balance_note

    mixed = [_sample("a", 0, 1), _sample("a", 1, 0)]
    one_task = [_sample("b", 0, 1), _sample("b", 1, 1)]
    two_tasks = one_task + [_sample("c", 0, 0), _sample("c", 1, 0)]
    why = ("the data has too few tasks with both outcomes for this --limit, and a task with one outcome adds nothing "
           "to per-problem correlations")
    picked = stratified_subset(mixed + one_task, 4)
    assert balance_note(picked, limit=4) == ("--select stratified: 1 of the 2 tasks in the subset has both a passing "
                                             f"and a failing sample; the other task has one outcome only ({why})")
    picked = stratified_subset(mixed + two_tasks, 6)
    assert balance_note(picked, limit=6) == ("--select stratified: 1 of the 3 tasks in the subset has both a passing "
                                             f"and a failing sample; the other 2 tasks have one outcome only ({why})")
    assert balance_note(stratified_subset(two_tasks, 4), limit=4) == (
        f"--select stratified: no task in the subset has both a passing and a failing sample ({why})")
    # with an odd limit but a task of one outcome in the data: the data is the cause
    picked = stratified_subset(mixed + two_tasks, 5)
    assert "the other 2 tasks have one outcome only" in balance_note(picked, limit=5)


def test_an_odd_limit_is_not_blamed_for_a_task_of_one_outcome_in_the_data() -> None:
    """--limit 3 on one mixed task and one task whose samples all pass picks the mixed pair and one
    sample of the other task; the note said "the other task has one sample only, as --limit 3 is odd
    (its pair is cut): use an even --limit", but --limit 4 gives it two passing samples: still one
    outcome. The odd limit is named only where the cut task has both outcomes in the data."""
    from workbench.score.selection import balance_note

    mixed = [_sample("a", 0, 1), _sample("a", 1, 0)]
    one_outcome = [_sample("b", 0, 1), _sample("b", 1, 1)]
    picked = stratified_subset(mixed + one_outcome, 3)
    assert [s.task_id for s in picked] == ["a", "a", "b"]
    note = balance_note(picked, limit=3, candidates=mixed + one_outcome)
    assert "is odd" not in note and "the other task has one outcome only (the data has too few tasks" in note, note
    assert "the other task has one outcome only" in balance_note(stratified_subset(mixed + one_outcome, 4), limit=4)
    # the same pick where the cut task has a failing sample too: the odd limit is the cause
    cut = mixed + [_sample("b", 0, 1), _sample("b", 1, 0)]
    assert "as --limit 3 is odd (its pair is cut)" in balance_note(stratified_subset(cut, 3), limit=3, candidates=cut)


def test_the_run_notes_no_odd_limit_for_a_task_of_one_outcome(tmp_path) -> None:
    """The same through workbench score's own notes (chrF, no LLM): the data's tasks are known there."""
    import json

    from workbench.score.job import run_score

    rows = [{"task_id": "a", "generation": "x = 1", "reference": "x = 1", "passed": 1},
            {"task_id": "a", "generation": "x = 2", "reference": "x = 1", "passed": 0},
            {"task_id": "b", "generation": "y = 1", "reference": "y = 1", "passed": 1},
            {"task_id": "b", "generation": "y = 1", "reference": "y = 1", "passed": 1}]
    data = tmp_path / "gens.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    report = run_score(str(data), ScoreConfig(method=["chrf"], limit=3, select="stratified", no_prompt=True),
                       tmp_path / "out")
    [note] = [n for n in report.notes if n.startswith("--select stratified")]
    assert "is odd" not in note and "one outcome only" in note, note
