"""Each metric's correlation with completion length (verbosity bias), n per metric and the
"not distinguishable from 0" marks: constructed data with known answers, column detection and
errors, the CLI and JSON, the run report, and the bundled ICE-Score set end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data import load_records
from workbench.errors import DataError, MissingColumnError
from workbench.report import build_report_data, render_html
from workbench.correlate import correlate
from workbench.correlate.combine import rank_mean
from workbench.correlate.length import count_tokens, measure_lengths

runner = CliRunner()
FIXTURE = Path(__file__).parents[1] / "fixtures" / "run-fixture"


def _verbose_table(n_tasks=40, seed=3):
    """A judge that rewards length and nothing else, an honest metric, and a length that tells
    nothing about passing: each task has four samples of lengths ``100 t + (1, 2, 3, 4) * 10``
    lines, labelled 0, 1, 1, 0, so length and label are exactly unrelated (tau-b 0 within every
    task and pooled, in every task resample). The judge's score is the length plus a little noise;
    the honest metric is the label plus noise that does not depend on length."""
    rng = np.random.default_rng(seed)
    rows = {"task_id": [], "sample_id": [], "passed": [], "completion": [], "verbose_judge": [], "honest": []}
    for t in range(n_tasks):
        for s, (size, label) in enumerate(zip((10, 20, 30, 40), (0, 1, 1, 0))):
            lines = 100 * t + size
            rows["task_id"].append(f"T{t}")
            rows["sample_id"].append(s)
            rows["passed"].append(label)
            rows["completion"].append("x = 1\n" * lines)
            rows["verbose_judge"].append(lines + rng.uniform(0, 0.5))
            # noise of one value per (task, label): the same for both samples of a label, so it
            # cannot prefer the long one
            rows["honest"].append(label + (0.1 * t if label else 0.0))
    return rows


def test_token_and_char_lengths():
    assert count_tokens("def f(x): return x+1") == 10
    assert count_tokens("a == b") == 4  # '==' is two single-character tokens
    lengths, missing, unit = measure_lengths(["ab c", None, ""], "chars", "c")
    assert unit == "chars" and lengths[0] == 4 and np.isnan(lengths[1]) and lengths[2] == 0 and missing.tolist() == [False, True, False]
    lengths, _, unit = measure_lengths([3, 7.5, None], "chars", "n")
    assert unit == "column value" and lengths[:2].tolist() == [3, 7.5]
    with pytest.raises(DataError, match="must hold the generated text"):
        measure_lengths(["a", 3], "chars", "mixed")
    with pytest.raises(DataError, match="finite number >= 0"):
        measure_lengths([3, -1], "chars", "n")


def test_length_correlation_known_answers_on_constructed_data():
    rows = _verbose_table()
    report = correlate(rows, metrics=["verbose_judge", "honest"], n_resamples=400)
    lengths = np.array([len(c) for c in rows["completion"]], dtype=float)
    assert report.length.source.column == "completion" and report.length.source.unit == "chars"
    assert report.length.source.detected is True
    judge = report.metrics["verbose_judge"].length
    assert judge.pooled["kendall"].value == pytest.approx(stats.kendalltau(rows["verbose_judge"], lengths).statistic)
    assert judge.pooled["kendall"].value == pytest.approx(1.0) and judge.pooled["kendall"].ci == pytest.approx((1.0, 1.0))
    # per problem: the mean of the within-task tau-b
    tasks = np.array(rows["task_id"])
    within = [stats.kendalltau(np.array(rows["verbose_judge"])[tasks == t], lengths[tasks == t]).statistic for t in dict.fromkeys(rows["task_id"])]
    assert judge.per_problem["kendall"].value == pytest.approx(np.mean(within))
    assert judge.n_samples == 160 and judge.n_tasks == 40
    # the honest metric does not track length within a task: its interval contains 0 and is marked
    honest = report.metrics["honest"].length
    assert honest.per_problem["kendall"].value == pytest.approx(0.0, abs=1e-12)
    assert honest.per_problem["kendall"].spans_zero is True
    # and the length's own correlation with the label is the reference: about 0 here
    execution = report.length.execution
    assert execution.pooled["kendall"].value == pytest.approx(0.0, abs=1e-12)
    assert execution.pooled["kendall"].ci == pytest.approx((0.0, 0.0), abs=1e-12) and execution.pooled["kendall"].spans_zero is True
    assert execution.per_problem["kendall"].value == pytest.approx(0.0, abs=1e-12)
    data = report.to_dict()
    assert data["metrics"]["verbose_judge"]["length"]["pooled"]["not_distinguishable_from_0"]["kendall"] is False
    assert data["metrics"]["honest"]["length"]["per_problem"]["not_distinguishable_from_0"]["kendall"] is True
    assert data["length"]["column"] == "completion" and data["length"]["with_execution"]["n_tasks"] == 40


def test_tokens_unit_and_a_numeric_length_column():
    rows = _verbose_table(n_tasks=10)
    tokens = correlate(rows, metrics=["honest"], length_unit="tokens", n_resamples=50).length
    assert tokens.source.unit == "tokens" and tokens.mean == pytest.approx(np.mean([count_tokens(c) for c in rows["completion"]]))
    rows["completion_tokens"] = [count_tokens(c) for c in rows["completion"]]
    numeric = correlate(rows, metrics=["honest"], length_column="completion_tokens", n_resamples=50)
    assert numeric.length.source.unit == "column value" and numeric.length.mean == pytest.approx(tokens.mean)
    # a numeric length column is not picked as a default metric
    assert "completion_tokens" not in correlate(rows, length_column="completion_tokens", n_resamples=20).metrics


def test_length_column_detection_and_errors():
    rows = _verbose_table(n_tasks=6)
    text = rows.pop("completion")
    # none of the generation names: the report says so, in the JSON and among the notes (not the warnings:
    # the default --length-column auto never asked for it by name, a new-user probe); nothing silent
    report = correlate(rows, metrics=["honest"], n_resamples=20)
    assert report.length.source is None and "no generation column" in report.length.note and "--length-column" in report.length.note
    assert any("no generation column" in n for n in report.notes)
    assert not any("length" in w for w in report.warnings), report.warnings
    assert report.to_dict()["length"]["note"] == report.length.note and report.metrics["honest"].length is None
    # switched off: said in the JSON, no warning
    off = correlate({**rows, "generation": text}, metrics=["honest"], length_column="none", n_resamples=20)
    assert "switched off" in off.length.note and not any("length" in w for w in off.warnings)
    # a named column that is not there is an error naming the option
    with pytest.raises(MissingColumnError, match="'code_text' not found \\(set it with --length-column\\)"):
        correlate({**rows, "generation": text}, metrics=["honest"], length_column="code_text", n_resamples=20)
    # missing texts are left out of the length correlations and counted
    partial = [None if i % 4 == 0 else t for i, t in enumerate(text)]
    report = correlate({**rows, "generation": partial}, metrics=["honest"], n_resamples=20)
    assert report.length.source.column == "generation" and report.length.missing == 6
    assert report.metrics["honest"].length.n_samples == 18 and report.metrics["honest"].n_samples == 24
    assert any("6 rows have no 'generation' value" in w for w in report.warnings)


def test_length_column_from_the_results_table(tmp_path):
    rows = _verbose_table(n_tasks=8)
    scores = [{"task_id": t, "sample_id": s, "honest": h} for t, s, h in zip(rows["task_id"], rows["sample_id"], rows["honest"])]
    results = [{"task_id": t, "sample_id": s, "passed": p, "completion": c}
               for t, s, p, c in zip(rows["task_id"], rows["sample_id"], rows["passed"], rows["completion"])]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))
    (tmp_path / "r.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results[::-1]))  # another order: the join matters
    report = correlate(tmp_path / "s.jsonl", results=tmp_path / "r.jsonl", metrics=["honest"], n_resamples=20)
    one_table = correlate(rows, metrics=["honest"], n_resamples=20)
    assert report.length.source.column == "completion"
    assert report.metrics["honest"].length.pooled["kendall"].value == pytest.approx(one_table.metrics["honest"].length.pooled["kendall"].value)


def test_cli_shows_length_column_n_and_zero_marks(tmp_path):
    rows = _verbose_table()
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(dict(zip(rows, values))) + "\n" for values in zip(*rows.values())))
    out = tmp_path / "r.json"
    result = runner.invoke(app, ["correlate", str(path), "-m", "honest", "-m", "verbose_judge", "--resamples", "200",
                                 "--json", str(out), "--length-unit", "tokens"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "τ-b with length" in text and "length (tokens)" in text and "length of 'completion' in tokens" in text
    assert "n 160, 40 tasks" in text
    assert "≈0: the 95% interval contains 0: not distinguishable from 0" in text
    # the verbose judge's correlation with passing is about 0 (length tells nothing about passing here)
    assert "verbose_judge: 160 samples from 40 tasks" in text and "not distinguishable from 0: pooled τ-b" in text
    report = json.loads(out.read_text())
    assert report["metrics"]["verbose_judge"]["pooled"]["not_distinguishable_from_0"]["kendall"] is True
    assert report["metrics"]["honest"]["pooled"]["not_distinguishable_from_0"]["kendall"] is False
    assert report["length"]["unit"] == "tokens"


def test_an_80_column_terminal_cuts_no_interval_and_no_name(tmp_path):
    """No LLM. Long metric names and the length column do not fit 80 columns side by side: the
    names fold onto a second line, the length correlations move to a table of their own, and every
    interval printed is whole (the JSON's values, digit for digit); a 200-column terminal keeps the
    length column in the main table."""
    rows = _verbose_table()
    rows["a_rather_long_judge_name/q1.5b"] = rows.pop("verbose_judge")
    path = tmp_path / "scores.jsonl"
    path.write_text("".join(json.dumps(dict(zip(rows, values))) + "\n" for values in zip(*rows.values())))
    out = tmp_path / "r.json"
    args = ["correlate", str(path), "-m", "honest", "-m", "a_rather_long_judge_name/q1.5b", "--resamples", "200",
            "--json", str(out), "--baseline", "honest"]
    narrow = runner.invoke(app, args, env={"COLUMNS": "80"})
    assert narrow.exit_code == 0, narrow.output
    # (datasets' own progress lines, on stderr, are not ours to wrap)
    printed = [line for line in narrow.output.replace("\r", "\n").splitlines() if "examples/s" not in line]
    assert not any("…" in line for line in printed) and max(map(len, printed)) <= 80
    assert "τ-b with completion length (verbosity bias)" in narrow.output
    report = json.loads(out.read_text())
    for name in ("honest", "a_rather_long_judge_name/q1.5b"):
        for block in (report["metrics"][name]["pooled"], report["metrics"][name]["length"]["pooled"]):
            low, high = block["kendall_ci"]
            assert f"[{low:.3f}, {high:.3f}]" in narrow.output
    assert "a_rather_long_judge_name/q1.5b" in "".join(narrow.output.split())  # folded, not cut
    wide = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert wide.exit_code == 0 and "verbosity bias)" not in wide.output and "τ-b with" in wide.output


def test_run_report_marks_states_n_and_shows_length(tmp_path):
    """The report reads the correlate JSON: n per method, ≈0 marks with 'not distinguishable from
    0', tau-b with length, the length row, combined judges and the paired comparisons."""
    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    rows = _verbose_table()
    report = correlate(rows, metrics=["honest", "verbose_judge"], combine=["mix=rank-mean:honest,verbose_judge"],
                       baselines=["honest"], n_resamples=200)
    report.write_json(run / "correlate" / "all.json")
    data = build_report_data(run)
    by_method = {m["method"]: m for m in data["headline"]}
    judge = by_method["verbose_judge"]["all"]
    assert judge["n_samples"] == 160 and judge["n_tasks"] == 40
    assert "pooled τ-b" in judge["not_distinguishable_from_0"]
    assert by_method["honest"]["all"]["not_distinguishable_from_0"] == []
    assert judge["length"]["pooled"]["kendall"] == pytest.approx(report.metrics["verbose_judge"].length.pooled["kendall"].value)
    assert by_method["mix"]["kind"] == "combined"
    assert data["length"]["all"]["with_execution"]["pooled"]["not_distinguishable_from_0"]["kendall"] is True
    html = render_html(json.loads(json.dumps(data)))
    headline = html[html.index('id="headline-table"'):html.index('<h2 id="llm"')]
    row = headline[headline.index("<b>verbose_judge</b>"):]
    row = row[: row.index("</tr>")]
    assert "not distinguishable from 0 (all): pooled τ-b" in row and "&asymp;0" in row
    assert "160<br><span class=\"muted small\">40 tasks" in row
    assert 'id="length-row"' in headline and "length of &#39;completion&#39; in chars" in headline
    assert "weights as declared" in headline and 'id="comparisons-all"' in headline


def test_humaneval_end_to_end_length_combination_and_baselines():
    """The bundled ICE-Score HumanEval-Python set (3,220 samples, 161 tasks): the shipped CodeBLEU
    and chrF and the GPT-3.5 judge, each against execution (the shipped label) and against the
    length of the generation; a combination declared in advance with its paired tests."""
    report = correlate("humaneval-codex-python", metrics=["gpt35_nswr"], baselines=["codebleu", "chrf"],
                       combine=["judge+codebleu=rank-mean:gpt35_nswr,codebleu"], length_column="completion_multipl_e",
                       n_resamples=300, offline=True)
    assert list(report.metrics) == ["gpt35_nswr", "codebleu", "chrf", "judge+codebleu"]
    # the published ICE-Score numbers (Zhuo 2024, table of Python results)
    assert round(report.metrics["codebleu"].pooled["kendall"].value, 3) == 0.303
    assert round(report.metrics["codebleu"].per_problem["kendall"].value, 3) == 0.272
    dataset = next(iter(load_records("humaneval-codex-python", offline=True).splits.values()))
    lengths = np.array([len(text) for text in dataset["completion_multipl_e"]], dtype=float)
    chrf = np.array(dataset["chrf"], dtype=float)
    assert report.metrics["chrf"].length.pooled["kendall"].value == pytest.approx(stats.kendalltau(chrf, lengths).statistic)
    combined = rank_mean([np.array(dataset["gpt35_nswr"], float), np.array(dataset["codebleu"], float)], [1, 1])
    tau = stats.kendalltau(combined, np.array(dataset["passed"], float)).statistic
    assert report.metrics["judge+codebleu"].pooled["kendall"].value == pytest.approx(tau)
    pairs = {(c.metric_a, c.metric_b): c for c in report.comparisons}
    assert set(pairs) == {("gpt35_nswr", "codebleu"), ("chrf", "codebleu"), ("judge+codebleu", "codebleu"),
                          ("gpt35_nswr", "chrf"), ("judge+codebleu", "chrf"), ("judge+codebleu", "gpt35_nswr")}
    # on these 3,220 rows the combination beats CodeBLEU clearly, pooled and per problem
    versus = pairs[("judge+codebleu", "codebleu")]
    assert versus.difference > 0.05 and versus.ci[0] > 0 and versus.p_value < 0.05
    assert versus.differences["per_problem"]["kendall"].difference > 0
    assert report.combinations["judge+codebleu"].combination.weights == (1.0, 1.0)
