"""``workbench bias --label``: the Kendall tau-b of one setting minus another's, with a bootstrap
interval and p-value, recomputed here from numpy and scipy alone (never through workbench's
statistics; tests/scipy_bootstrap.py), as ``test_independent_check.py`` recomputes the means:

* paired (the settings share units: all rows vs one row per cluster, all rows vs clean rows): the
  draws ``numpy.random.default_rng(seed).multinomial(U, [1/U] * U, size=B)`` over the units of
  either setting in natural order of their ids, both tau-b (``scipy.stats.kendalltau``) on the
  rows of every drawn unit, repeated as often as it was drawn;
* unpaired (no shared unit: clean vs contaminated tasks): setting a on those draws over its own
  units, setting b on ``default_rng(SeedSequence(seed).spawn(1)[0])`` over its own units;
* the percentile interval of the differences, and ``min(1, 2 (min(#{d <= 0}, #{d >= 0}) + 1) / (B + 1))``.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from scipy_bootstrap import draws, kendall_tau_b, kept_rows, p_value, percentile_interval, resampled_tau, task_units
from workbench.bias import BiasConfig, run_bias
from workbench.cli import app
from workbench.formatting import fixed

BUNDLED = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"


def test_all_rows_minus_one_per_cluster_is_paired_on_a_real_slice(tmp_path):
    """Every 3rd task of the bundled ICE-Score set, deduplicated within each task by the real dedup."""
    seed, resamples, confidence = 5, 120, 0.9
    with gzip.open(BUNDLED, "rt") as handle:
        everything = [json.loads(line) for line in handle]
    keep = set(list(dict.fromkeys(row["task_id"] for row in everything))[::3])
    rows = [{k: row[k] for k in ("task_id", "sample_id", "completion_multipl_e", "passed", "codebleu")}
            for row in everything if row["task_id"] in keep]
    (tmp_path / "slice.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    runner = CliRunner()
    dedup = runner.invoke(app, ["dedup", str(tmp_path / "slice.jsonl"), "--code-column", "completion_multipl_e",
                                "--id-column", "task_id,sample_id", "--group-column", "task_id", "--min-tokens", "5",
                                "--no-progress", "-o", str(tmp_path / "dedup")])
    assert dedup.exit_code == 0, dedup.output
    bias = runner.invoke(app, ["bias", str(tmp_path / "dedup"), str(tmp_path / "slice.jsonl"), "-m", "codebleu",
                               "--id-column", "task_id,sample_id", "--task-column", "task_id", "--label", "passed",
                               "--resamples", str(resamples), "--seed", str(seed), "--confidence", str(confidence),
                               "--json", str(tmp_path / "bias.json")], terminal_width=120)
    assert bias.exit_code == 0, bias.output
    labels = [line.strip().split("  ")[0] for line in bias.output.splitlines()]  # the first column of each line
    at = labels.index("τ-b difference")
    assert labels[at:at + 4] == ["τ-b difference", "all rows", "− deduplicated", "(paired)"]
    got = json.loads((tmp_path / "bias.json").read_text())["duplication"]["metrics"]["codebleu"]
    [difference] = got["kendall_tau_b_differences"]

    kept = kept_rows(tmp_path / "dedup", rows)
    assert 0 < (~kept).sum()
    order, task = task_units(rows)
    x = np.array([row["codebleu"] for row in rows], dtype=float)
    y = np.array([row["passed"] for row in rows], dtype=float)
    counts = draws(len(order), resamples, np.random.default_rng(seed))
    every = resampled_tau(x, y, [np.flatnonzero(task == t) for t in range(len(order))], counts)
    one_per_cluster = resampled_tau(x, y, [np.flatnonzero((task == t) & kept) for t in range(len(order))], counts)
    differences = every - one_per_cluster

    assert (difference["a"], difference["b"], difference["paired"]) == ("all_rows", "deduplicated", True)
    assert difference["n_units_shared"] == len(order)
    assert difference["difference"] == pytest.approx(kendall_tau_b(x, y) - kendall_tau_b(x[kept], y[kept]), abs=1e-12)
    assert difference["ci"] == pytest.approx(percentile_interval(differences, confidence), abs=1e-9)
    assert difference["p_value"] == pytest.approx(p_value(differences), abs=1e-12)
    # the same draws as each setting's own interval: the settings cover the same tasks
    assert got["kendall_tau_b_with_label"]["all_rows"]["ci"] == pytest.approx(percentile_interval(every, confidence), abs=1e-9)
    assert got["kendall_tau_b_with_label"]["deduplicated"]["ci"] == pytest.approx(percentile_interval(one_per_cluster, confidence), abs=1e-9)


def test_clean_minus_contaminated_tasks_is_unpaired_and_says_so(tmp_path, corpus):
    """16 tasks of 6 samples; sample 0 of tasks 0-5 copies a reference function (6 contaminated
    tasks), and in every task sample 5 copies sample 4 (a duplicate cluster)."""
    seed, resamples, confidence = 2, 100, 0.95
    rng = np.random.default_rng(11)
    generations, table, reference = [], [], []
    for t in range(16):
        for s in range(6):
            base = f"ref{t}" if (s == 0 and t < 6) else f"t{t}s{4 if s == 5 else s}"
            row_id = f"T/{t}:{s}"
            generations.append({"id": row_id, "content": corpus.code(base)})
            passed = int(rng.random() < 0.5)
            table.append({"id": row_id, "task": f"T/{t}", "passed": passed,
                          "acc": float(rng.random() + 0.7 * passed + (0.3 if t < 6 else 0.0))})
        if t < 6:
            reference.append({"id": f"REF/{t}", "content": corpus.code(f"ref{t}")})
    against = corpus.write_jsonl(tmp_path / "reference.jsonl", reference)
    out = corpus.dedup(tmp_path, generations, against=str(against))
    metrics = corpus.write_jsonl(tmp_path / "metrics.jsonl", table)
    report = run_bias(out, str(metrics), BiasConfig(metric=["acc"], label="passed", task_column="task",
                                                    resamples=resamples, seed=seed, confidence=confidence),
                      json_path=tmp_path / "bias.json")
    assert len(report.contamination.ids["contaminated_ids"]) == 6
    written = json.loads((tmp_path / "bias.json").read_text())["contamination"]["metrics"]["acc"]
    by_pair = {(d["a"], d["b"]): d for d in written["kendall_tau_b_differences"]}

    x = np.array([row["acc"] for row in table])
    y = np.array([row["passed"] for row in table], dtype=float)
    task = np.array([int(row["task"].split("/")[1]) for row in table])  # T/0 ... T/15: natural order is numeric
    contaminated = np.array([row["id"] in {f"T/{t}:0" for t in range(6)} for row in table])
    bad_task = task < 6

    unpaired = by_pair[("contaminated_tasks", "clean_tasks")]
    assert unpaired["paired"] is False and unpaired["n_units_shared"] == 0
    assert unpaired["pairing"].startswith("unpaired: the settings share no unit")
    a_draws = draws(6, resamples, np.random.default_rng(seed))
    b_draws = draws(10, resamples, np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0]))
    differences = (resampled_tau(x, y, [np.flatnonzero(task == t) for t in range(6)], a_draws)
                   - resampled_tau(x, y, [np.flatnonzero(task == t) for t in range(6, 16)], b_draws))
    assert unpaired["difference"] == pytest.approx(kendall_tau_b(x[bad_task], y[bad_task]) - kendall_tau_b(x[~bad_task], y[~bad_task]), abs=1e-12)
    assert unpaired["ci"] == pytest.approx(percentile_interval(differences, confidence), abs=1e-9)
    assert unpaired["p_value"] == pytest.approx(p_value(differences), abs=1e-12)
    # setting a's draws are those of its own interval
    own = resampled_tau(x, y, [np.flatnonzero(task == t) for t in range(6)], a_draws)
    assert written["kendall_tau_b_with_label"]["contaminated_tasks"]["ci"] == pytest.approx(percentile_interval(own, confidence), abs=1e-9)

    paired = by_pair[("all_rows", "clean")]
    assert paired["paired"] is True and paired["n_units_shared"] == 16
    counts = draws(16, resamples, np.random.default_rng(seed))
    unit_rows = [np.flatnonzero(task == t) for t in range(16)]
    clean_rows = [np.flatnonzero((task == t) & ~contaminated) for t in range(16)]
    differences = resampled_tau(x, y, unit_rows, counts) - resampled_tau(x, y, clean_rows, counts)
    assert paired["difference"] == pytest.approx(kendall_tau_b(x, y) - kendall_tau_b(x[~contaminated], y[~contaminated]), abs=1e-12)
    assert paired["ci"] == pytest.approx(percentile_interval(differences, confidence), abs=1e-9)
    assert paired["p_value"] == pytest.approx(p_value(differences), abs=1e-12)

    # 6 contaminated rows: too few for an interval; the difference says which setting and why
    few = by_pair[("contaminated", "clean")]
    assert few["ci"] == [None, None] and few["p_value"] is None
    assert few["no_interval"].startswith("contaminated: only 6 samples")

    printed = CliRunner().invoke(app, ["bias", str(out), str(metrics), "-m", "acc", "--label", "passed", "--task-column",
                                       "task", "--resamples", str(resamples), "--seed", str(seed)], terminal_width=120)
    assert printed.exit_code == 0, printed.output
    assert "− clean tasks" in printed.output and "(unpaired)" in printed.output
    assert "unpaired (contaminated tasks − clean tasks): the settings share no task" in " ".join(printed.output.split())


def test_the_run_report_shows_each_tau_difference_with_itspercentile_interval(tmp_path):
    """The run fixture's bias stage rerun as its README says (so bias/report.json has the
    differences), but resampling clusters (its 3 tasks are too few for an interval): the report's
    tau-b table shows each difference with its interval, p and pairing."""
    import shutil

    from workbench.report import build_report_data, render_html

    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "run-fixture", run)
    run_bias(run / "dedup", str(run / "score" / "all" / "scores_wide.jsonl"),
             BiasConfig(metric=["passed", "chrf", "codebleu"], id_column="task_id,sample_id",
                        label="passed", results=str(run / "execute" / "results.jsonl"),
                        contamination=str(run / "decontaminate"), resamples=200),
             json_path=run / "bias" / "report.json")
    data = build_report_data(run)
    chrf = next(r for r in data["bias"]["rows"] if r["metric"] == "chrf")
    labels = [d["label"] for d in chrf["tau_differences"]]
    assert labels == ["all rows − one per cluster", "all rows − clean rows", "contaminated rows − clean rows"]
    first = chrf["tau_differences"][0]
    written = json.loads((run / "bias" / "report.json").read_text())["duplication"]["metrics"]["chrf"]
    assert first["value"] == written["kendall_tau_b_differences"][0]["difference"]
    html = render_html(data)
    import re

    table = re.search(r'<table id="bias-tau-table">(.*?)</table>', html, re.S).group(1)
    assert "&tau;-b differences" in table
    cell = re.findall(r'<td class="small tau-differences">(.*?)</td>', table, re.S)[0]  # chrf's row (passed, the label, has none)
    low, high = first["ci"]
    assert f"all rows − one per cluster: {fixed(first['value'], 3)}" in cell
    assert f"[{fixed(low, 3)}, {fixed(high, 3)}], p {fixed(first['p_value'], 3)}</span> (paired)" in cell
