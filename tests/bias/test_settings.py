"""``workbench bias`` on corpora small enough to count by hand: each setting of Allamanis 2019
(Table 2), Δ (Table 3), Eq. 2's d, f̄ and β, clean vs contaminated rows; the dedup outputs are
made by the real ``run_dedup`` and read back from its files. Eq. 2's identity on random corpora."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from workbench.bias import BiasConfig, decompose, one_per_cluster, run_bias
from workbench.bias.settings import single_set_masks, train_test_masks
from workbench.errors import DataError


#: train A, B, C; test: two copies of A (cross-set), d three times (in-test), e, f
TRAIN_TEST = [
    ("A", "train", "a", None), ("B", "train", "b", None), ("C", "train", "c", None),
    ("t1", "test", "a", 1), ("t2", "test", "a", 1), ("t3", "test", "d", 0), ("t4", "test", "d", 1),
    ("t5", "test", "d", 1), ("t6", "test", "e", 0), ("t7", "test", "f", 1),
]


@pytest.fixture()
def train_test_output(tmp_path, corpus) -> Path:
    return corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(base)} for i, s, base, _ in TRAIN_TEST],
                 split_column="split")


def test_train_test_settings_by_hand(train_test_output):
    metrics = {"id": [i for i, *_ in TRAIN_TEST if _[2] is not None],
               "acc": [v for *_, v in TRAIN_TEST if v is not None]}
    report = run_bias(train_test_output, metrics, BiasConfig(metric=["acc"], resamples=50))
    analysis = report.duplication
    assert analysis.kind == "train_test"
    result = analysis.metrics["acc"]
    # fully biased: t1..t7 = 1,1,0,1,1,0,1
    assert result.settings["fully_biased"].value == pytest.approx(5 / 7)
    assert result.settings["fully_biased"].n_rows == 7
    # cross-set biased: in-test copies collapsed: t1 (its cluster keeps train A; first test member), t3 (kept), t6, t7
    assert result.settings["cross_set_biased"].value == pytest.approx(2 / 4)
    assert result.settings["cross_set_biased"].n_rows == 4
    # unbiased test: without t1's cluster, which has a train row: t3, t6, t7
    assert result.settings["unbiased_test"].value == pytest.approx(1 / 3)
    assert result.settings["unbiased_test"].n_rows == 3
    assert result.delta.value == pytest.approx(50.0)  # 100 (1/2 - 1/3) / (1/3)
    e = result.decomposition
    assert (e.n_d, e.n_x) == (7, 3)
    assert e.d == pytest.approx(4 / 7)
    assert e.f_bar == pytest.approx(1 / 3)
    assert e.beta == pytest.approx(1.0)  # t1, t2, t4, t5
    assert e.f_hat == pytest.approx(5 / 7)
    assert e.residual < 1e-12
    assert analysis.counts["test_rows_with_train_duplicate"] == 2
    assert report.contamination is None
    assert any("retrained" in note for note in analysis.notes)


def test_single_set_and_contamination_by_hand(tmp_path, corpus):
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("q")},
                                                           {"id": "REF/1", "content": corpus.code("zzz")}])
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE], against=str(reference))
    table = corpus.write_jsonl(tmp_path / "metrics.jsonl", [{"id": i, "acc": v} for i, _, v in corpus.SINGLE])
    report = run_bias(out, str(table), BiasConfig(metric=["acc"], resamples=50), json_path=tmp_path / "bias.json")
    result = report.duplication.metrics["acc"]
    assert report.duplication.kind == "single_set"
    assert result.settings["all_rows"].value == pytest.approx(4 / 6)
    assert result.settings["deduplicated"].value == pytest.approx(1.0)  # r1, r3, r4 kept
    assert result.delta.value == pytest.approx(100 * (4 / 6 - 1) / 1)
    e = result.decomposition
    assert (e.d, e.beta) == (pytest.approx(0.5), pytest.approx(1 / 3))  # removed: r2, r5, r6
    # contamination: r3 is a copy of REF/0
    contamination = report.contamination.metrics["acc"]
    assert report.contamination.ids["contaminated_ids"] == ["r3"]
    assert contamination.settings["clean"].value == pytest.approx(3 / 5)
    assert contamination.settings["contaminated"].value == pytest.approx(1.0)
    assert contamination.settings["contaminated"].n_rows == 1
    assert contamination.delta.value == pytest.approx(100 * (4 / 6 - 3 / 5) / (3 / 5))
    written = json.loads((tmp_path / "bias.json").read_text())
    assert written["contamination"]["contaminated_ids"] == ["r3"]
    assert written["duplication"]["metrics"]["acc"]["eq2"]["identity_residual"] < 1e-12
    # the JSON says over which rows d is computed, as the table and the HTML do
    assert written["duplication"]["metrics"]["acc"]["eq2"]["d_over"].startswith("all 6 rows with a value of the metric")


def test_unbiased_test_counts_the_test_rows_a_dedup_against_a_reference_drops(tmp_path, corpus):
    """Allamanis' unbiased test set removes duplicates within and across train and test only: a test row that
    copies the --against reference stays in it (docs/bias.md; the dedup's own test split drops it)."""
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("c")}])
    rows = [("A", "train", "a"), ("t1", "test", "a"), ("t2", "test", "c"), ("t3", "test", "d")]
    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b in rows],
                       split_column="split", against=str(reference))
    assert [json.loads(line)["id"] for line in (out / "test.jsonl").read_text().splitlines()] == ["t3"]
    report = run_bias(out, {"id": [i for i, *_ in rows], "acc": [1, 1, 1, 0]}, BiasConfig(metric=["acc"], resamples=40))
    unbiased = report.duplication.metrics["acc"].settings["unbiased_test"]
    assert unbiased.n_rows == 2 and unbiased.value == 0.5  # t2 (contaminated) and t3
    assert report.contamination.counts["contaminated_rows"] == 1


def test_contamination_from_a_second_dedup_output(tmp_path, corpus):
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("s")}])
    rows = [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE]
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    in_set = corpus.dedup(tmp_path / "a", rows)
    against = corpus.dedup(tmp_path / "b", rows, against=str(reference))
    metrics = {"id": [i for i, *_ in corpus.SINGLE], "acc": [v for *_, v in corpus.SINGLE]}
    report = run_bias(in_set, metrics, BiasConfig(metric=["acc"], contamination=str(against), resamples=40))
    assert report.contamination.ids["contaminated_ids"] == ["r4", "r5", "r6"]
    assert report.contamination.metrics["acc"].settings["clean"].value == pytest.approx(2 / 3)
    with pytest.raises(DataError, match="not run with --against"):
        run_bias(in_set, metrics, BiasConfig(metric=["acc"], contamination=str(in_set)))


def test_too_short_counts_are_of_the_joined_rows(tmp_path, corpus):
    """A metric table over part of a dedup run: the too-short counts and notes are of its joined rows
    (read from skipped.csv), with the dedup run's count beside them (they counted the run's rows before)."""
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("s")}])
    short = [{"id": f"x{n}", "content": f"return {n}"} for n in range(4)]  # 2 tokens, under --min-tokens
    rows = [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE] + short
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    in_set = corpus.dedup(tmp_path / "a", rows)
    against = corpus.dedup(tmp_path / "b", rows, against=str(reference))
    # the six long rows and one of the four short ones have a metric value
    metrics = {"id": [i for i, *_ in corpus.SINGLE] + ["x0"], "acc": [v for *_, v in corpus.SINGLE] + [1]}
    report = run_bias(in_set, metrics, BiasConfig(metric=["acc"], contamination=str(against), resamples=40))
    counts = report.contamination.counts
    assert (counts["joined"], counts["rows_not_checked_too_short"], counts["dedup_run_rows_not_checked_too_short"]) \
        == (7, 1, 4)
    assert any(note.startswith("1 of the 7 joined rows was too short to be compared with the reference "
                               "(--min-tokens; 4 of the dedup run's 10)") for note in report.contamination.notes)
    assert any(note.startswith("1 of the 7 joined rows was too short to be compared as token bags "
                               "(--min-tokens; 4 of the dedup run's 10): 0 of them are in clusters")
               for note in report.duplication.notes)
    # a folder written before skipped.csv: the joined count is not known, and the note says so
    (against / "skipped.csv").unlink()
    report = run_bias(in_set, metrics, BiasConfig(metric=["acc"], contamination=str(against), resamples=40))
    assert report.contamination.counts["rows_not_checked_too_short"] is None
    assert any("how many of the 7 joined rows is not known" in note for note in report.contamination.notes)


def test_rows_that_do_not_join_are_counted_and_listed(train_test_output):
    metrics = {"id": ["t1", "t3", "nowhere", "t6"], "acc": [1, 0, 1, 0]}
    report = run_bias(train_test_output, metrics, BiasConfig(metric=["acc"], resamples=40))
    assert report.join.joined == 3
    assert report.join.unjoined == 1
    assert report.join.unjoined_ids == ["nowhere"]
    assert report.join.dedup_rows_without_metric == 10 - 3
    assert any("nowhere" in warning for warning in report.warnings)
    assert report.duplication.metrics["acc"].settings["fully_biased"].n_rows == 3


def test_nothing_joins_is_an_error_that_shows_both_kinds_of_id(train_test_output):
    with pytest.raises(DataError, match="none of its 2 rows joins"):
        run_bias(train_test_output, {"id": ["x1", "x2"], "acc": [1, 0]}, BiasConfig(metric=["acc"]))


def test_a_non_numeric_metric_names_the_column_and_the_first_bad_row(train_test_output):
    metrics = {"id": ["t1", "t3", "t6", "t7"], "acc": ["1", "0.5", "high", "n/a"]}
    with pytest.raises(DataError, match=r"metric column 'acc' must hold numbers, but row 3 \(counting from 1; id 't6'\) is not a number: 'high'"):
        run_bias(train_test_output, metrics, BiasConfig(metric=["acc"]))


def test_empty_cells_are_counted_not_dropped_silently(train_test_output):
    metrics = {"id": ["t1", "t3", "t6", "t7"], "acc": [1.0, None, 0.0, 1.0]}
    result = run_bias(train_test_output, metrics, BiasConfig(metric=["acc"], resamples=40)).duplication.metrics["acc"]
    assert result.missing == 1
    assert result.settings["fully_biased"].n_rows == 3


def test_a_folder_that_is_not_a_dedup_output(tmp_path):
    with pytest.raises(DataError, match="not a `workbench dedup` output folder"):
        run_bias(tmp_path, {"id": ["a"], "acc": [1]}, BiasConfig(metric=["acc"]))


def test_task_bootstrap_and_label_correlation(tmp_path, corpus):
    rng = random.Random(3)
    rows, metrics = [], {"id": [], "task": [], "score": [], "passed": []}
    for task in range(12):
        for sample in range(6):
            base = f"t{task}s{sample % 4}"  # samples 4 and 5 copy samples 0 and 1
            rows.append({"id": f"T{task}:{sample}", "content": corpus.code(base)})
            passed = rng.random() < 0.5
            metrics["id"].append(f"T{task}:{sample}")
            metrics["task"].append(f"T{task}")
            metrics["passed"].append(int(passed))
            metrics["score"].append(round(rng.random() * 0.5 + 0.5 * passed, 3))
    out = corpus.dedup(tmp_path, rows)
    report = run_bias(out, metrics, BiasConfig(metric=["passed", "score"], task_column="task", label="passed",
                                               resamples=100))
    assert report.bootstrap["unit"] == "task"
    result = report.duplication.metrics["score"]
    assert result.settings["deduplicated"].n_rows == 48 and result.settings["deduplicated"].n_units == 12
    low, high = result.settings["all_rows"].low, result.settings["all_rows"].high
    assert low < result.settings["all_rows"].value < high
    tau = result.correlation["all_rows"]
    assert 0.3 < tau.value <= 1.0 and tau.low <= tau.value <= tau.high
    assert "passed" not in report.duplication.metrics["passed"].correlation  # not against itself


@pytest.mark.parametrize("seed", range(20))
def test_eq2_identity_on_random_corpora(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    cluster = np.where(rng.random(n) < 0.4, rng.integers(0, max(1, n // 5), n), -1)
    position = rng.permutation(n)
    kept = rng.random(n) < 0.5
    values = rng.normal(size=n) * rng.choice([1e-3, 1.0, 1e3])
    eligible = rng.random(n) < 0.95
    for masks, d_name, x_name in [
        (single_set_masks(cluster, position, kept, eligible), "all_rows", "deduplicated"),
        (train_test_masks(rng.random(n) < 0.6, cluster, position, kept, rng.random(n) < 0.3, eligible),
         "fully_biased", "unbiased_test"),
    ]:
        e = decompose(values, masks[d_name], masks[x_name])
        if e.n_d and e.n_x:
            assert abs(e.f_hat - ((1 - e.d) * e.f_bar + (e.d * e.beta if e.n_d > e.n_x else 0.0))) < 1e-12 * max(1.0, abs(e.f_hat))
            assert e.residual < 1e-12 * max(1.0, abs(e.f_hat))
        # one row per cluster among the eligible rows
        chosen = masks[x_name]
        assert np.all(np.bincount(cluster[chosen & (cluster >= 0)]) <= 1)


def test_one_per_cluster_prefers_the_kept_row_then_the_first():
    cluster = np.array([0, 0, 0, 1, 1, -1])
    position = np.array([0, 1, 2, 0, 1, 0])
    kept = np.array([False, True, False, True, False, True])
    every = np.ones(6, dtype=bool)
    assert one_per_cluster(cluster, position, kept, every).tolist() == [False, True, False, True, False, True]
    # the kept row of cluster 1 not eligible: its first eligible member stands for it
    eligible = np.array([True, False, True, False, True, True])
    assert one_per_cluster(cluster, position, kept, eligible).tolist() == [True, False, False, False, True, True]


def test_relative_difference_is_undefined_for_a_zero_baseline():
    from workbench.bias import relative_difference

    assert math.isnan(relative_difference(0.5, 0.0))
    assert relative_difference(0.25, 0.5) == pytest.approx(-50.0)


def test_the_mean_over_tasks_counts_each_task_once(tmp_path, corpus):
    # task A: a1, its copy a2, a3; task B: b1
    rows = [("a1", "A", "x", 1), ("a2", "A", "x", 1), ("a3", "A", "y", 0), ("b1", "B", "z", 0)]
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, _, base, _ in rows])
    metrics = {"id": [r[0] for r in rows], "task": [r[1] for r in rows], "passed": [r[3] for r in rows]}
    result = run_bias(out, metrics, BiasConfig(metric=["passed"], task_column="task", resamples=40)).duplication.metrics["passed"]
    assert result.settings["all_rows"].value == pytest.approx(2 / 4)
    assert result.task_means["all_rows"].value == pytest.approx((2 / 3 + 0) / 2)
    assert result.settings["deduplicated"].value == pytest.approx(1 / 3)  # a1, a3, b1
    assert result.task_means["deduplicated"].value == pytest.approx((1 / 2 + 0) / 2)


def test_identical_short_stubs_collapse_to_one_row(tmp_path, corpus):
    """Three stubs of identical text after whitespace normalisation, below --min-tokens (an
    exact_text cluster of the dedup), and two distinct functions: one row per cluster keeps the
    first stub (0), p and q. all rows: 3/5; deduplicated: (0 + 1 + 1) / 3; d = 2/5, β = 1/2."""
    rows = [("s1", "    pass\n", 0), ("p", corpus.code("p"), 1), ("s2", "    pass   \r\n\r\n", 1),
            ("q", corpus.code("q"), 1), ("s3", "    pass", 0)]
    out = corpus.dedup(tmp_path, [{"id": i, "content": text} for i, text, _ in rows])
    assert json.loads((out / "clusters.json").read_text()) == [["s1", "s2", "s3"]]
    table = corpus.write_jsonl(tmp_path / "metrics.jsonl", [{"id": i, "acc": v} for i, _, v in rows])
    report = run_bias(out, str(table), BiasConfig(metric=["acc"], resamples=40))
    result = report.duplication.metrics["acc"]
    assert result.settings["all_rows"].value == pytest.approx(3 / 5)
    assert result.settings["deduplicated"].value == pytest.approx(2 / 3)
    assert (result.decomposition.d, result.decomposition.beta) == (pytest.approx(2 / 5), pytest.approx(1 / 2))
    assert any("3 of them are in clusters of identical text" in note for note in report.duplication.notes)
