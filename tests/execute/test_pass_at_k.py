"""pass@k (Chen et al. 2021, Sec. 2.1): the unbiased estimator against its closed form and brute
force, the ks a task set supports, the task-bootstrap interval, and the execute command's summary
(real sandboxed runs of real HumanEval problems)."""

from __future__ import annotations

import itertools
import json
from math import comb

import numpy as np
import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_humaneval
from workbench.execute.pass_at_k import pass_at_k, pass_at_k_one_task


@pytest.mark.parametrize("n,c,k", [(20, 0, 1), (20, 7, 1), (20, 7, 5), (20, 7, 10), (200, 3, 100), (10, 10, 10),
                                   (5, 1, 5), (200, 199, 1)])
def test_one_task_equals_the_closed_form(n, c, k):
    assert pass_at_k_one_task(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)


def test_one_task_equals_the_fraction_of_k_subsets_with_a_pass():
    """The estimator's meaning: of all k-subsets of the n samples, the share holding a passing one."""
    outcomes = [1, 0, 0, 1, 0, 0, 0]
    for k in range(1, len(outcomes) + 1):
        subsets = list(itertools.combinations(outcomes, k))
        assert pass_at_k_one_task(len(outcomes), sum(outcomes), k) == pytest.approx(
            sum(any(s) for s in subsets) / len(subsets))


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="1 <= k <= n"):
        pass_at_k_one_task(5, 1, 6)
    with pytest.raises(ValueError, match="0 <= c <= n"):
        pass_at_k_one_task(5, 6, 1)
    with pytest.raises(ValueError, match="k >= 1"):
        pass_at_k([{"task_id": "a", "passed": 1}], [0])


def _rows(outcomes_per_task):
    return [{"task_id": task, "passed": passed} for task, outcomes in outcomes_per_task.items() for passed in outcomes]


def test_mean_over_tasks_and_ks_that_some_task_cannot_support():
    """pass@1 is the mean of the tasks' pass rates (not passed / samples); a k above a task's
    sample count is omitted with the reason, as HumanEval's evaluation does."""
    rows = _rows({"a": [1, 1, 0, 0], "b": [0, 0, 0, 0, 0, 0, 0, 1], "c": [True, False, False, False]})
    report = pass_at_k(rows, (1, 2, 4, 10))
    values = {v.k: v for v in report.values}
    assert values[1].estimate == pytest.approx((2 / 4 + 1 / 8 + 1 / 4) / 3)
    assert values[4].estimate == pytest.approx((1 - comb(2, 4) / comb(4, 4) + 1 - comb(7, 4) / comb(8, 4) + 1) / 3)
    assert values[2].tasks == 3
    assert report.omitted == {10: "3 of the 3 tasks have fewer than 10 samples (min 4)"}
    assert report.samples_per_task == (4, 8)
    assert pass_at_k([], (1,)).omitted == {1: "no results"}


def test_task_bootstrap_interval_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(3)
    rows = _rows({f"t{i}": list(rng.random(10) < p) for i, p in enumerate(rng.random(40))})
    first, second = pass_at_k(rows, (1, 5)), pass_at_k(rows, (1, 5))
    assert first == second
    for value in first.values:
        assert value.low < value.estimate < value.high
        assert value.high - value.low < 0.5
    # the rule correlate and bias follow: no interval from fewer than 5 tasks (probe23: 2 tasks gave one)
    two_tasks = pass_at_k(_rows({"a": [1, 0, 0], "b": [1, 1, 0]}), (1,)).values[0]
    assert two_tasks.low is None and two_tasks.high is None
    assert two_tasks.no_interval.startswith("only 2 tasks contribute (an interval needs at least 5")
    same = pass_at_k(_rows({t: [1, 0] for t in "abcdef"}), (1,)).values[0]
    assert same.low is None and same.no_interval.startswith("every task has the same value")


def test_pass_at_1_interval_is_the_one_bias_gives_the_same_rows():
    """One task bootstrap for the whole tool: pass@1 of the bundled ICE-Score labels (0.4168) has
    the interval ``workbench bias`` prints for ``passed`` on all rows, mean over tasks (the draws
    ``default_rng(0).multinomial(T, [1/T] * T, size=1000)`` of correlate and bias, tasks in natural
    order of their ids, percentile). With ``scipy.stats.bootstrap``'s own draws pass@1 got [0.3714,
    0.4649] where bias gave [0.3702, 0.4637] (tasks then numbered in file order; [0.3695, 0.4627] in
    natural order): one figure, two intervals in one run report."""
    from workbench.bias.intervals import UnitBootstrap, unit_indices
    from workbench.correlate.bootstrap import BootstrapSettings
    from workbench.data import load_records

    rows = list(next(iter(load_records("humaneval-codex-python", offline=True).splits.values())))
    rows = [{"task_id": row["task_id"], "passed": row["passed"]} for row in rows]
    value = pass_at_k(rows, (1, 10)).values[0]
    units = unit_indices([row["task_id"] for row in rows])
    passed = np.array([float(row["passed"]) for row in rows])
    bias = UnitBootstrap(units, BootstrapSettings(n_resamples=1000, seed=0)).task_mean(passed, np.ones(len(rows), bool))
    assert value.estimate == pytest.approx(bias.value, abs=1e-12)
    assert (value.low, value.high) == pytest.approx((bias.low, bias.high), abs=1e-12)
    assert (round(value.low, 4), round(value.high, 4)) == (0.3695, 0.4627)


def test_pass_at_k_does_not_depend_on_the_order_of_the_rows():
    """``workbench execute`` writes results in completion order, so two runs of one job with several
    workers hold the same rows in other orders: the bundled ICE-Score labels, shuffled, give the same
    estimates and the same intervals, to the last bit (tasks numbered in one canonical order)."""
    import random

    from workbench.data import load_records

    rows = list(next(iter(load_records("humaneval-codex-python", offline=True).splits.values())))
    rows = [{"task_id": row["task_id"], "passed": row["passed"]} for row in rows]
    shuffled = rows[:]
    random.Random(5).shuffle(shuffled)
    assert pass_at_k(shuffled, (1, 10)) == pass_at_k(rows, (1, 10))
    assert pass_at_k(list(reversed(rows)), (1, 10)) == pass_at_k(rows, (1, 10))


def test_execute_reports_pass_at_k_in_its_summary(tmp_path):
    """Two tasks x 3 samples (real HumanEval problems, sandboxed): the summary file and --json hold
    pass@1 and pass@3; pass@10 is left out with the reason. The CLI takes "1,3" and a repeated flag."""
    problems = {row["task_id"]: row for row in load_humaneval().select(range(2))}
    rows = []
    for task_id, passing in (("HumanEval/0", 2), ("HumanEval/1", 0)):
        for sample in range(3):
            code = problems[task_id]["canonical_solution"] if sample < passing else "    return None\n"
            rows.append({"task_id": task_id, "sample_id": sample, "completion": code})
    generations = tmp_path / "gen.jsonl"
    generations.write_text("".join(json.dumps(r) + "\n" for r in rows))
    output = tmp_path / "results.jsonl"
    result = CliRunner().invoke(app, ["execute", str(generations), "-o", str(output), "--timeout", "30",
                                      "--pass-at-k", "1,3", "--pass-at-k", "10", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "results.summary.json").read_text())
    assert summary["pass_at_k"]["values"]["1"]["estimate"] == pytest.approx((2 / 3 + 0) / 2)
    assert summary["pass_at_k"]["values"]["3"]["estimate"] == pytest.approx((1 + 0) / 2)
    assert summary["pass_at_k"]["omitted"] == {"10": "2 of the 2 tasks have fewer than 10 samples (min 3)"}
    assert summary["pass_at_1"] == pytest.approx(summary["pass_at_k"]["values"]["1"]["estimate"])
    table = CliRunner().invoke(app, ["execute", str(generations), "-o", str(output), "--resume", "--no-progress",
                                     "--timeout", "30"])
    assert "pass@1" in table.output and "0.3333" in table.output and "pass@100" in table.output


@pytest.mark.parametrize("label", [0.5, "false", "true", None, 2, -1, float("nan"), [1]])
def test_a_label_that_is_not_a_verdict_is_a_clear_error(label):
    """``int(bool(...))`` would count a ratio 0.5 or the string "false" as a pass: refused, naming the row."""
    from workbench.errors import DataError
    from workbench.execute.result_file import pass_at_1

    rows = [{"task_id": "t/0", "sample_id": 0, "passed": 1}, {"task_id": "t/0", "sample_id": 1, "passed": label}]
    for measure in (pass_at_k, pass_at_1):
        with pytest.raises(DataError) as caught:
            measure(rows)
        message = str(caught.value)
        assert "row 1" in message and "t/0" in message and repr(label) in message and "0/1" in message
        assert "\n" not in message


def test_labels_that_are_verdicts_count_as_written():
    rows = [{"task_id": "t", "sample_id": i, "passed": label}
            for i, label in enumerate([True, False, 1, 0, 1.0, 0.0, np.int64(1), np.bool_(False)])]
    assert pass_at_k(rows, (1,)).values[0].estimate == pytest.approx(4 / 8)


def test_the_summary_counts_one_task_in_the_singular(tmp_path):
    """One task x 2 samples (real HumanEval problem, sandboxed): the pass@1 row says "1 task", not
    "1 tasks" (a count is written with formatting.count everywhere)."""
    problem = load_humaneval().select(range(1))[0]
    rows = [{"task_id": "HumanEval/0", "sample_id": s, "completion": problem["canonical_solution"]} for s in range(2)]
    generations = tmp_path / "gen.jsonl"
    generations.write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = CliRunner().invoke(app, ["execute", str(generations), "-o", str(tmp_path / "r.jsonl"), "--timeout", "30",
                                      "--no-progress"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())  # the table may wrap a cell
    assert "1 task" in text and "1 tasks" not in text
