"""The vectorised task-block statistics and the bootstrap, checked against scipy.stats."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from workbench.correlate import blocks as blocks_module
from workbench.correlate import correlate
from workbench.correlate.blocks import TaskBlocks
from workbench.correlate.bootstrap import (
    BootstrapSettings,
    paired_p_value,
    percentile_interval,
    resampled_task_mean,
    task_resample_counts,
)
from workbench.correlate.correlation import per_problem_correlations, pooled_correlations


def _data(kind: str, seed: int = 1, n_tasks: int = 23):
    """Tasks of unequal size (1..14 rows) with ties in both columns."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 15, n_tasks)
    row_task = np.repeat(np.arange(n_tasks), sizes)
    n = len(row_task)
    x = np.round(rng.normal(size=n) + 0.3 * row_task / n_tasks, 2)  # rounding makes ties
    if kind == "judge":  # a 0-4 score and 0/1: both few-valued
        x = rng.integers(0, 5, n).astype(float)
        y = (rng.random(n) < 0.2 + 0.15 * x).astype(float)
    elif kind == "binary":
        y = (rng.random(n) < 0.4).astype(float)
    elif kind == "ratio":
        y = rng.integers(0, 6, n) / 5.0
    else:  # continuous: forces the all-pairs path
        y = rng.random(n)
    y[row_task == 2] = 1.0  # a constant-label task
    x[row_task == 3] = 0.5  # a constant-metric task
    return x, y, row_task


def _materialise(counts: np.ndarray, row_task: np.ndarray) -> np.ndarray:
    """Row indices of one resample, built the slow obvious way."""
    return np.concatenate([np.flatnonzero(row_task == t) for t in np.repeat(np.arange(len(counts)), counts.astype(int))])


@pytest.mark.parametrize("kind", ["binary", "ratio", "continuous", "judge"])
def test_pooled_and_resampled_match_scipy(kind):
    x, y, row_task = _data(kind)
    blocks = TaskBlocks.build(x, y, row_task)
    # each kind exercises one way of ranking resamples
    assert (blocks.joint_level_counts is not None) == (kind == "judge")
    assert (blocks.label_level_counts is not None) == (kind != "continuous")
    whole = blocks.resampled(np.ones((1, blocks.n_tasks)))
    expected = pooled_correlations(x, y)
    for name in ("kendall", "pearson", "spearman"):
        assert whole[name][0] == pytest.approx(expected[name], abs=1e-12)
    counts = task_resample_counts(blocks.n_tasks, BootstrapSettings(n_resamples=25, seed=3))
    resampled = blocks.resampled(counts)
    for b in range(len(counts)):
        rows = _materialise(counts[b], row_task)
        assert resampled["kendall"][b] == pytest.approx(stats.kendalltau(x[rows], y[rows]).statistic, abs=1e-12)
        assert resampled["spearman"][b] == pytest.approx(stats.spearmanr(x[rows], y[rows]).statistic, abs=1e-12)
        assert resampled["pearson"][b] == pytest.approx(stats.pearsonr(x[rows], y[rows]).statistic, abs=1e-10)


@pytest.mark.parametrize("kind", ["binary", "continuous"])
def test_small_chunks_give_the_same_blocks(monkeypatch, kind):
    x, y, row_task = _data(kind)
    reference = TaskBlocks.build(x, y, row_task)
    monkeypatch.setattr(blocks_module, "_PAIR_CHUNK", 40)  # many chunks; also forces the all-pairs path
    monkeypatch.setattr(blocks_module, "_RANK_CHUNK", 500)
    chunked = TaskBlocks.build(x, y, row_task)
    np.testing.assert_array_equal(chunked.concordance, reference.concordance)
    counts = task_resample_counts(reference.n_tasks, BootstrapSettings(n_resamples=30, seed=5))
    for name, values in chunked.resampled(counts).items():
        np.testing.assert_allclose(values, reference.resampled(counts)[name], atol=1e-12)


@pytest.mark.parametrize("kind", ["binary", "ratio", "continuous", "judge"])
def test_per_task_values_match_scipy(kind):
    x, y, row_task = _data(kind)
    within = per_problem_correlations(TaskBlocks.build(x, y, row_task))
    for t in range(row_task.max() + 1):
        xs, ys = x[row_task == t], y[row_task == t]
        defined = len(xs) > 1 and np.ptp(xs) > 0 and np.ptp(ys) > 0
        assert within.defined[t] == defined
        if defined:
            assert within.values["kendall"][t] == pytest.approx(stats.kendalltau(xs, ys).statistic, abs=1e-12)
            assert within.values["spearman"][t] == pytest.approx(stats.spearmanr(xs, ys).statistic, abs=1e-12)
            assert within.values["pearson"][t] == pytest.approx(stats.pearsonr(xs, ys).statistic, abs=1e-12)
        else:
            assert np.isnan(within.values["kendall"][t])
    assert within.constant_label >= 1 and within.constant_metric >= 1
    total_excluded = within.single_sample + within.constant_label + within.constant_metric
    assert within.n_tasks + total_excluded == row_task.max() + 1


def test_resample_counts_draw_whole_tasks_reproducibly():
    settings = BootstrapSettings(n_resamples=200, seed=7)
    counts = task_resample_counts(17, settings)
    assert counts.shape == (200, 17)
    assert np.all(counts.sum(axis=1) == 17)
    np.testing.assert_array_equal(counts, task_resample_counts(17, settings))
    assert not np.array_equal(counts, task_resample_counts(17, BootstrapSettings(n_resamples=200, seed=8)))


def test_interval_is_over_tasks_not_rows():
    # One distinct row per task, repeated 10 times: a task bootstrap sees exactly the same
    # resampled Pearson r as on the one-row-per-task table; a row bootstrap would be narrower.
    rng = np.random.default_rng(0)
    n_tasks = 40
    x = rng.normal(size=n_tasks)
    y = (x + rng.normal(size=n_tasks) > 0).astype(float)
    single = {"task_id": [f"T{i}" for i in range(n_tasks)], "s": x.tolist(), "passed": y.tolist()}
    repeated = {key: [v for v in values for _ in range(10)] for key, values in single.items()}
    repeated["sample_id"] = list(range(10)) * n_tasks
    a = correlate(single, metrics=["s"], n_resamples=300, seed=11)
    b = correlate(repeated, metrics=["s"], n_resamples=300, seed=11)
    assert b.metrics["s"].pooled["pearson"].ci == pytest.approx(a.metrics["s"].pooled["pearson"].ci, abs=1e-12)
    assert b.metrics["s"].n_samples == 10 * a.metrics["s"].n_samples


def test_percentile_interval_and_p_value():
    values = np.concatenate([np.arange(1, 101, dtype=float), [np.nan]])
    low, high = percentile_interval(values, 0.9)
    assert low == pytest.approx(np.percentile(np.arange(1, 101), 5)) and high == pytest.approx(np.percentile(np.arange(1, 101), 95))
    assert np.isnan(percentile_interval(np.array([np.nan]), 0.95)[0])
    assert paired_p_value(np.full(999, 0.1)) == pytest.approx(2 / 1000)  # never 0
    assert paired_p_value(np.zeros(50)) == 1.0
    assert paired_p_value(np.linspace(-1, 1, 101)) == 1.0


def test_resampled_task_mean_skips_undefined_tasks():
    values = np.array([0.2, np.nan, 0.6])
    defined = ~np.isnan(values)
    counts = np.array([[1, 1, 1], [0, 3, 0], [2, 0, 1]], dtype=float)
    means = resampled_task_mean(counts, values, defined)
    assert means[0] == pytest.approx(0.4)
    assert np.isnan(means[1])
    assert means[2] == pytest.approx((0.4 + 0.6) / 3)


def test_bad_settings_are_rejected():
    with pytest.raises(ValueError, match="n_resamples"):
        BootstrapSettings(n_resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        BootstrapSettings(confidence=1.5)


@pytest.mark.parametrize("kind", ["binary", "continuous", "judge"])
def test_direct_resampling_agrees_with_task_blocks(kind):
    from workbench.correlate.direct import DirectTaskStatistics

    x, y, row_task = _data(kind)
    blocks, direct = TaskBlocks.build(x, y, row_task), DirectTaskStatistics.build(x, y, row_task)
    counts = task_resample_counts(blocks.n_tasks, BootstrapSettings(n_resamples=20, seed=2))
    for name, values in direct.resampled(counts).items():
        np.testing.assert_allclose(values, blocks.resampled(counts)[name], atol=1e-10)
    a, b = per_problem_correlations(blocks), per_problem_correlations(direct)
    np.testing.assert_array_equal(a.defined, b.defined)
    assert (a.single_sample, a.constant_label, a.constant_metric) == (b.single_sample, b.constant_label, b.constant_metric)
    for name in ("kendall", "pearson", "spearman"):
        np.testing.assert_allclose(a.values[name], b.values[name], atol=1e-12)


def test_huge_inputs_switch_to_direct_resampling(monkeypatch):
    x, y, row_task = _data("binary")
    data = {"task_id": [f"T{t}" for t in row_task], "m": x.tolist(), "passed": y.tolist()}
    expected = correlate(data, metrics=["m"], n_resamples=30, seed=1)
    monkeypatch.setattr(blocks_module, "MAX_TASK_ROW_CELLS", 10)
    assert not TaskBlocks.fits(x, y, row_task.max() + 1)
    direct = correlate(data, metrics=["m"], n_resamples=30, seed=1)
    for level in ("pooled", "per_problem"):
        for name in ("kendall", "pearson", "spearman"):
            got, want = getattr(direct.metrics["m"], level)[name], getattr(expected.metrics["m"], level)[name]
            assert got.value == pytest.approx(want.value, abs=1e-10)
            assert got.ci == pytest.approx(want.ci, abs=1e-10)
