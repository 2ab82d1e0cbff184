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
