"""Combined judges (``--combine``), paired comparisons pooled and per problem, ``--baseline``:
known answers on constructed data, the fitted (cross-validated) variant, errors, the CLI."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import DataError
from workbench.correlate import correlate
from workbench.correlate.combine import Combination, CombinationError, fractional_ranks, rank_mean
from workbench.correlate.fitted import cross_validated_rank_mean, weight_grid

runner = CliRunner()


# -- the combination itself ---------------------------------------------------------------------


def test_rank_mean_known_answer_with_ties():
    a = np.array([1.0, 2.0, 2.0, 3.0])  # ranks 1, 2.5, 2.5, 4
    b = np.array([4.0, 3.0, 2.0, 1.0])  # ranks 4, 3, 2, 1
    assert fractional_ranks(a).tolist() == [0.25, 0.625, 0.625, 1.0]
    assert rank_mean([a, b], [1, 1]).tolist() == [0.625, 0.6875, 0.5625, 0.625]
    # weights 3:1 -> (3 r_a + r_b) / 4 / n
    assert rank_mean([a, b], [3, 1]) == pytest.approx([(3 * 1 + 4) / 16, (3 * 2.5 + 3) / 16, (3 * 2.5 + 2) / 16, (3 * 4 + 1) / 16])
    # scale-free: any monotone transform of a member gives the same combination
    assert rank_mean([np.exp(a), b * 100], [3, 1]).tolist() == rank_mean([a, b], [3, 1]).tolist()


def _dense(values) -> list[int]:
    """Dense ranks: equal values share one, and the order is kept."""
    order = {v: i for i, v in enumerate(sorted(set(values)))}
    return [order[v] for v in values]


def _exact_rank_mean(columns, weights) -> list[Fraction]:
    """The definition in exact arithmetic: sum_i w_i rank_i / (n sum_i w_i), weights as typed (decimal)."""
    w = [Fraction(str(x)) for x in weights]
    ranks = [[Fraction(r) for r in stats.rankdata(c)] for c in columns]
    n = len(columns[0])
    return [sum(wi * r[j] for wi, r in zip(w, ranks)) / (n * sum(w)) for j in range(n)]


def test_rank_mean_ties_stay_ties():
    """Rows whose weighted rank sums are equal get one value, bit for bit. Floating point once split
    them (ranks (2, 4) and (3, 3) of 5 gave 0.6000000000000001 and 0.6): Kendall tau-b and Spearman
    then ranked a tie by rounding noise (the ICE-Score set, codebleu + gpt35_nswr at equal weights:
    2,783 distinct values where there are 2,761, pooled tau-b 0.4030069 instead of 0.4030079)."""
    a, b = np.arange(1.0, 6.0), np.array([1.0, 4, 3, 2, 5])
    out = rank_mean([a, b], [1, 1])
    assert out[1] == out[2] == 0.6
    y = np.array([0.0, 1, 0, 0, 1])
    exact = np.array([float(v) for v in _exact_rank_mean([a, b], [1, 1])])
    assert stats.kendalltau(out, y).statistic == stats.kendalltau(exact, y).statistic
    rng = np.random.default_rng(4)
    for weights in ([1, 1], [2, 1], [0.3, 0.7], [0.1, 0.3], [1, 1, 1], [0.2, 0.35, 0.45]):
        columns = [rng.integers(0, 6, 300).astype(float) for _ in weights]
        got = rank_mean(columns, weights)
        want = _exact_rank_mean(columns, weights)
        assert _dense(got.tolist()) == _dense(want), weights
        assert got == pytest.approx([float(v) for v in want], abs=1e-15)


def test_rank_mean_leaves_out_rows_a_member_lacks_and_ranks_the_rest():
    a = np.array([0.1, np.nan, 0.3, 0.2])
    b = np.array([5.0, 6.0, np.nan, 7.0])
    out = rank_mean([a, b], [1, 1])
    assert np.isnan(out[1]) and np.isnan(out[2])
    # rows 0 and 3 only: a ranks 1, 2; b ranks 1, 2 (of 2)
    assert out[0] == pytest.approx(0.5) and out[3] == pytest.approx(1.0)


@pytest.mark.parametrize(
    "text, members, weights",
    [
        ("both=rank-mean:p_correct,codebleu", ("p_correct", "codebleu"), (1.0, 1.0)),
        ("w = rank-mean : a, b, c, 2, 1, 1", ("a", "b", "c"), (2.0, 1.0, 1.0)),
        ("f=rank-mean-cv:a,b", ("a", "b"), None),
    ],
)
def test_parse(text, members, weights):
    combination = Combination.parse(text)
    assert combination.members == members and combination.weights == weights


@pytest.mark.parametrize(
    "text, message",
    [
        ("rank-mean:a,b", "cannot read"),
        ("x=rank-mean", "cannot read"),
        ("x=borda:a,b", "unknown method 'borda'"),
        ("x=rank-mean:a", "at least two"),
        ("x=rank-mean:a,a", "twice"),
        ("x=rank-mean:a,b,1", "2 metrics but 1 weights"),
        ("x=rank-mean:a,b,1,-1", "positive"),
        ("x=rank-mean:a,1,b,1", "names come first"),
        ("x=rank-mean:a,,b", "empty item"),
        ("x=rank-mean-cv:a,b,1,1", "fits its weights"),
        ("a=rank-mean:a,b", "its own members"),
    ],
)
def test_parse_errors_say_what_is_wrong(text, message):
    with pytest.raises(CombinationError, match=message):
        Combination.parse(text)


# -- constructed data ---------------------------------------------------------------------------


def _table(n_tasks=40, per_task=6, seed=1):
    """Per task: a label, a strong metric (label + noise), a weak one (label + more noise) and pure noise."""
    rng = np.random.default_rng(seed)
    rows = {"task_id": [], "sample_id": [], "passed": [], "strong": [], "weak": [], "noise": []}
    for t in range(n_tasks):
        for s in range(per_task):
            label = int(rng.random() < 0.5)
            rows["task_id"].append(f"T{t}")
            rows["sample_id"].append(s)
            rows["passed"].append(label)
            rows["strong"].append(label + rng.normal(0, 0.5))
            rows["weak"].append(label + rng.normal(0, 2.0))
            rows["noise"].append(rng.normal())
    return rows


def test_combination_is_evaluated_like_a_metric_and_compared_with_each_member():
    rows = _table()
    report = correlate(rows, metrics=["strong"], combine=["mix=rank-mean:strong,weak,3,1"], n_resamples=300,
                       length_column="none")
    # the member not named as a metric is added; the combination comes last
    assert list(report.metrics) == ["strong", "weak", "mix"]
    expected = rank_mean([np.array(rows["strong"]), np.array(rows["weak"])], [3, 1])
    tau = stats.kendalltau(expected, rows["passed"]).statistic
    assert report.metrics["mix"].pooled["kendall"].value == pytest.approx(tau, abs=1e-12)
    summary = report.combinations["mix"]
    assert "weights as declared (strong 0.75, weak 0.25), not fitted" in summary.weights_note
    assert "only if they were fixed before the data was seen" in summary.weights_note
    pairs = {(c.metric_a, c.metric_b) for c in report.comparisons}
    assert ("mix", "strong") in pairs and ("mix", "weak") in pairs  # the combination first: mix minus member
    data = report.to_dict()["combinations"]["mix"]
    assert data["weights_source"] == "declared" and data["weights"] == [3.0, 1.0]
    assert data["declaration"] == "mix=rank-mean:strong,weak,3,1"  # as typed, not normalised
    assert {c["metric_b"] for c in data["against_members"]} == {"strong", "weak"}


def test_paired_difference_sign_ci_and_p_on_constructed_data():
    rows = _table(n_tasks=60)
    report = correlate(rows, metrics=["strong", "noise"], n_resamples=500, length_column="none")
    (comparison,) = report.comparisons
    assert (comparison.metric_a, comparison.metric_b) == ("strong", "noise")
    for level in ("pooled", "per_problem"):
        for coefficient in ("kendall", "pearson", "spearman"):
            d = comparison.differences[level][coefficient]
            assert d.difference == pytest.approx(d.value_a - d.value_b)
            assert d.difference > 0.3 and d.ci[0] > 0  # strong beats noise, the interval excludes 0
            assert d.p_value < 0.01
    # the per-problem values are each metric's own per-problem estimates
    assert comparison.differences["per_problem"]["kendall"].value_a == report.metrics["strong"].per_problem["kendall"].value
    # reversed order: the same difference with the opposite sign
    reverse = correlate(rows, metrics=["noise", "strong"], n_resamples=500, length_column="none").comparisons[0]
    assert reverse.difference == pytest.approx(-comparison.difference)
    assert reverse.ci[1] < 0 and reverse.p_value == pytest.approx(comparison.p_value)


def test_a_metric_against_a_monotone_copy_of_itself_differs_by_exactly_zero():
    rows = _table()
    rows["copy"] = [2 * v + 1 for v in rows["strong"]]
    comparison = correlate(rows, metrics=["strong", "copy"], n_resamples=200, length_column="none").comparisons[0]
    for level in ("pooled", "per_problem"):
        d = comparison.differences[level]["kendall"]
        assert d.difference == pytest.approx(0.0, abs=1e-12) and d.ci == pytest.approx((0.0, 0.0), abs=1e-12)
        assert d.p_value == 1.0
    kendall = comparison.to_dict()["differences"]["pooled"]["kendall"]
    assert kendall["not_distinguishable_from_0"] is True and kendall["ci_spans_0"] is True


def test_baselines_limit_the_comparisons():
    rows = _table()
    report = correlate(rows, metrics=["strong", "weak", "noise"], baselines=["noise", "weak"], n_resamples=100,
                       length_column="none")
    pairs = [(c.metric_a, c.metric_b) for c in report.comparisons]
    assert pairs == [("strong", "noise"), ("weak", "noise"), ("strong", "weak")]
    assert report.to_dict()["baselines"] == ["noise", "weak"]
    # a baseline not among the metrics is added to them
    assert "noise" in correlate(rows, metrics=["strong"], baselines=["noise"], n_resamples=50, length_column="none").metrics


def test_comparison_on_the_rows_both_metrics_have():
    rows = _table()
    rows["partial"] = [None if i % 3 == 0 else v for i, v in enumerate(rows["strong"])]
    report = correlate(rows, metrics=["noise", "partial"], n_resamples=100, length_column="none")
    (comparison,) = report.comparisons
    keep = [i for i in range(len(rows["noise"])) if i % 3]
    tau_noise = stats.kendalltau([rows["noise"][i] for i in keep], [rows["passed"][i] for i in keep]).statistic
    assert comparison.n_samples == len(keep) and comparison.kendall_a == pytest.approx(tau_noise)


def test_combination_errors_name_the_problem():
    rows = _table()
    with pytest.raises(DataError, match="'strong'.*not found"):
        correlate({k: v for k, v in rows.items() if k != "strong"}, combine=["m=rank-mean:strong,weak"], length_column="none")
    with pytest.raises(CombinationError, match="already has a column"):
        correlate(rows, combine=["noise=rank-mean:strong,weak"], length_column="none")
    with pytest.raises(DataError, match="baseline 'nope'"):
        from workbench.correlate import correlate_table
        from workbench.correlate.bootstrap import BootstrapSettings
        from workbench.correlate.inputs import as_dataset, prepare_table

        dataset, _ = as_dataset(rows)
        table = prepare_table(dataset, metrics=["strong"], label="passed", task_column="task_id", sample_column="sample_id",
                              length_column="none")
        correlate_table(table, BootstrapSettings(n_resamples=10), baselines=["nope"])


# -- weights fitted with task-level cross-validation ----------------------------------------------


def test_weight_grid_covers_the_simplex():
    grid = weight_grid(2)
    assert grid.shape == (21, 2) and np.allclose(grid.sum(axis=1), 1.0) and [0.0, 1.0] in grid.tolist()
    assert weight_grid(3).shape == (231, 3)
    with pytest.raises(CombinationError, match="2 to 6"):
        weight_grid(7)


def test_cross_validated_weights_favour_the_informative_member_and_never_see_the_held_out_labels():
    rows = _table(n_tasks=50)
    columns = [np.array(rows["strong"]), np.array(rows["noise"])]
    label = np.array(rows["passed"], dtype=float)
    tasks = np.array([int(t[1:]) for t in rows["task_id"]])
    fitted = cross_validated_rank_mean(columns, label, tasks, folds=5, seed=0)
    assert fitted.folds == 5 and len(fitted.fold_weights) == 5
    assert all(w[0] >= 0.8 for w in fitted.fold_weights)  # most weight on the strong member in every fold
    assert not np.isnan(fitted.values).any()
    # each held-out value is the fold's weights applied to the ranks
    ranks = np.vstack([fractional_ranks(c) for c in columns])
    for fold, weights in enumerate(fitted.fold_weights):
        rows_of_fold = np.flatnonzero(np.isin(tasks, fitted.fold_tasks[fold]))
        assert np.allclose(fitted.values[rows_of_fold], np.array(weights) @ ranks[:, rows_of_fold])
    # flipping every label of fold 0's tasks leaves fold 0's weights as they were: fitted on the other folds
    flipped = label.copy()
    held_out = np.isin(tasks, fitted.fold_tasks[0])
    flipped[held_out] = 1 - flipped[held_out]
    again = cross_validated_rank_mean(columns, flipped, tasks, folds=5, seed=0)
    assert again.fold_weights[0] == fitted.fold_weights[0]
    # while the labels do steer the fit: flip them all and every fold turns away from the strong member
    inverted = cross_validated_rank_mean(columns, 1 - label, tasks, folds=5, seed=0)
    assert all(w[0] < 0.5 for w in inverted.fold_weights)


def test_cross_validated_values_keep_exact_ties():
    """Out-of-fold values tie exactly where the fold's grid weights give equal rank sums (0.35 r_a +
    0.65 r_b in floating point split such ties), and so does the tau-b that picks the weights."""
    rng = np.random.default_rng(7)
    tasks = np.repeat(np.arange(30), 10)
    columns = [rng.integers(0, 5, 300).astype(float), rng.integers(0, 7, 300).astype(float)]
    label = (rng.random(300) < 0.2 + 0.3 * columns[0] / 4 + 0.3 * columns[1] / 6).astype(float)
    fitted = cross_validated_rank_mean(columns, label, tasks, folds=5, seed=1)
    assert (0.4, 0.6) in fitted.fold_weights  # weights whose floating-point rank sums split ties
    for fold, weights in enumerate(fitted.fold_weights):
        rows = np.flatnonzero(np.isin(tasks, fitted.fold_tasks[fold]))
        exact = _exact_rank_mean(columns, [round(w, 10) for w in weights])
        assert _dense(fitted.values[rows].tolist()) == _dense([exact[i] for i in rows]), weights


def test_fitted_combination_is_reported_as_fitted():
    rows = _table(n_tasks=30)
    report = correlate(rows, metrics=["strong", "noise"], combine=["cv=rank-mean-cv:strong,noise"], n_resamples=100,
                       length_column="none")
    data = report.to_dict()["combinations"]["cv"]
    assert data["weights_source"] == "fitted" and data["folds"] == 5 and len(data["fold_weights"]) == 5
    assert "FITTED on these rows with 5-fold task-level cross-validation" in data["weights_note"]
    # which declaration, and what to do instead (a probe got only "needs at least 5 tasks, got 1")
    with pytest.raises(CombinationError, match=r"combination 'cv' \(rank-mean-cv\): .*needs at least 5 tasks, got 3; "
                                               r"declare the weights instead: cv=rank-mean:strong,noise"):
        correlate(_table(n_tasks=3), combine=["cv=rank-mean-cv:strong,noise"], length_column="none")


# -- the CLI ------------------------------------------------------------------------------------


def test_cli_combine_and_baseline_reach_the_table_and_the_json(tmp_path):
    rows = _table()
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(dict(zip(rows, values))) + "\n" for values in zip(*rows.values())))
    out = tmp_path / "report.json"
    result = runner.invoke(
        app,
        ["correlate", str(path), "-m", "weak", "-m", "noise", "--combine", "both=rank-mean:strong,weak",
         "--baseline", "noise", "--resamples", "100", "--json", str(out), "--length-column", "none"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "combination both = rank-mean of strong, weak: weights as declared (strong 0.5, weak 0.5), not fitted" in text
    assert "baselines noise" in text and "per-problem" in text
    report = json.loads(out.read_text())
    assert set(report["metrics"]) == {"weak", "noise", "strong", "both"}
    pairs = {(c["metric_a"], c["metric_b"]) for c in report["comparisons"]}
    assert pairs == {("weak", "noise"), ("strong", "noise"), ("both", "noise"), ("both", "strong"), ("both", "weak")}
    assert set(report["comparisons"][0]["differences"]) == {"pooled", "per_problem"}

    bad = runner.invoke(app, ["correlate", str(path), "--combine", "both=rank-mean:strong", "--length-column", "none"])
    assert bad.exit_code == 2 and "needs at least two metrics" in " ".join(bad.stderr.split())
    assert "--combine" in bad.stderr and "Traceback" not in bad.output


def test_the_config_checks_each_declaration_and_names_the_field():
    from workbench.options import OptionError
    from workbench.correlate import CorrelateConfig

    config = CorrelateConfig(combine=["a=rank-mean:x,y", "b=rank-mean-cv:x,y"], baseline=["x"])
    assert [c.name for c in config.combinations()] == ["a", "b"] and config.baseline == ("x",)
    with pytest.raises(OptionError, match="combine: cannot read the combination 'x,y'"):
        CorrelateConfig(combine=["x,y"])
    with pytest.raises(OptionError, match="two combinations are named alike"):
        CorrelateConfig(combine=["a=rank-mean:x,y", "a=rank-mean:x,z"])
    with pytest.raises(OptionError, match="length_unit must be one of chars, tokens, not 'words'"):
        CorrelateConfig(length_unit="words")


def test_a_constant_member_is_named_in_the_note() -> None:
    """A member with one value on every complete row adds nothing: the combination is the other member."""
    rows = _table()
    table = dict(rows, flat=[0.5] * len(rows["strong"]))
    report = correlate(table, metrics=["strong"], combine=["mix=rank-mean:strong,flat"], n_resamples=100,
                       length_column="none")
    assert "'flat' takes one value" in report.combinations["mix"].weights_note
    assert report.metrics["mix"].pooled["kendall"].value == pytest.approx(report.metrics["strong"].pooled["kendall"].value)
    assert "takes one value" not in correlate(rows, metrics=["strong"], combine=["mix=rank-mean:strong,weak"],
                                              n_resamples=100, length_column="none").combinations["mix"].weights_note
