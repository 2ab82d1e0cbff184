"""``workbench correlate`` through the real Typer app: tables, --json, --plot, error messages."""

from __future__ import annotations

import json

import numpy as np

from typer.testing import CliRunner

from workbench.cli import app

runner = CliRunner()


def test_correlate_on_the_java_grade_file_writes_json_and_plot(bundled_data, tmp_path):
    report_path, plot_path = tmp_path / "report.json", tmp_path / "fig" / "correlate.png"
    result = runner.invoke(
        app,
        [
            "correlate", str(bundled_data / "ice-score" / "humaneval_java_grade.json"),
            "-m", "codebleu", "-m", "gpt35_nswr", "--resamples", "200", "--seed", "9",
            "--json", str(report_path), "--plot", str(plot_path),
        ],
        env={"COLUMNS": "220"},
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # Rich wraps long lines
    assert "codebleu" in text and "Paired bootstrap" in text
    assert "200 resamples of whole tasks, seed 9" in text
    report = json.loads(report_path.read_text())
    codebleu = report["metrics"]["codebleu"]
    # published ICE-Score Java numbers: corpus tau .293, example tau .355
    assert round(codebleu["pooled"]["kendall"], 3) == 0.293
    assert round(codebleu["per_problem"]["kendall"], 3) == 0.355
    assert report["counts"]["samples"] == 3219 and report["bootstrap"]["seed"] == 9
    assert report["comparisons"][0]["metric_a"] == "codebleu"
    data = plot_path.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 20_000


def test_two_table_mode_from_the_cli(two_tables):
    scores, results = two_tables(6, lambda task, sample: (task, sample) != (0, 0), status="ok")
    result = runner.invoke(app, ["correlate", str(scores), "--results", str(results), "-m", "m", "--resamples", "50"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())  # Rich wraps long lines
    assert "29 matched; 1 score row without a result, 0 result rows without scores" in text
    assert "warning: join: 1 score row had no execution result and is left out" in text, text


def test_results_beyond_the_scored_subset_are_no_warning(tmp_path):
    """The default job's subset correlation (40 scored rows of 3,220 executed) warned "join: 0 score
    rows had no execution result and 3180 result rows had no scores; they are left out": scores of a
    subset join part of the results by design. Real ICE-Score rows: 4 of 12 scored."""
    from ice_score_slice import task_rows

    rows = [r for r in task_rows()][:12]
    scores, results = tmp_path / "scores.jsonl", tmp_path / "results.jsonl"
    scores.write_text("".join(json.dumps({k: r[k] for k in ("task_id", "sample_id", "codebleu")}) + "\n"
                              for r in rows[::3]))
    results.write_text("".join(json.dumps({k: r[k] for k in ("task_id", "sample_id", "passed")}) + "\n" for r in rows))
    result = runner.invoke(app, ["correlate", str(scores), "--results", str(results), "-m", "codebleu",
                                 "--resamples", "50"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "4 matched; 0 score rows without a result, 8 result rows without scores" in text, text
    assert "join:" not in text, text


def test_one_task_is_counted_in_the_singular(tmp_path):
    """The default job with ``--set score.limit=2`` correlated 2 samples of one task and said "2
    samples from 1 tasks; per-problem mean over 1 tasks". Real ICE-Score rows of HumanEval/0."""
    from ice_score_slice import task_rows

    rows = [r for r in task_rows() if r["task_id"] == "HumanEval/0"]
    picked = [next(r for r in rows if str(r["passed"]) == "1"), next(r for r in rows if str(r["passed"]) == "0")]
    data = tmp_path / "one_task.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in picked))
    result = runner.invoke(app, ["correlate", str(data), "-m", "codebleu", "--resamples", "50"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "codebleu: 2 samples from 1 task; per-problem mean over 1 task (left out:" in text, text


def test_bad_input_is_a_one_line_error(tmp_path):
    path = tmp_path / "scores.jsonl"
    path.write_text(json.dumps({"task_id": "T0", "sample_id": 0, "passed": 1, "bleu": 0.3}) + "\n")
    result = runner.invoke(app, ["correlate", str(path), "-m", "codebleu"])
    assert result.exit_code == 1
    assert "Error: column 'codebleu' not found (set it with --metric); the data has: task_id, sample_id, passed, bleu" in result.stderr
    assert "Traceback" not in result.output


def test_help_names_the_options():
    result = runner.invoke(app, ["correlate", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in ("--metric", "--label", "--results", "--task-column", "--sample-column", "--resamples", "--seed", "--json", "--plot"):
        assert option in result.output


def test_plot_handles_ratio_labels_and_undefined_values(tmp_path):
    from workbench.correlate import correlate
    from workbench.correlate.plot import plot_report

    rng = np.random.default_rng(0)
    ratio = {
        "task_id": [f"T{i // 4}" for i in range(40)],
        "m": rng.random(40).tolist(),
        "judge": rng.integers(0, 5, 40).tolist(),
        "passed": (rng.integers(0, 5, 40) / 4).tolist(),
    }
    path = plot_report(correlate(ratio, n_resamples=20), tmp_path / "ratio.svg")
    assert path.read_text().lstrip().startswith("<?xml")
    constant = {**ratio, "passed": [1] * 40}  # every correlation undefined: still a figure, no crash
    path = plot_report(correlate(constant, metrics=["m"], n_resamples=20), tmp_path / "constant.png")
    assert path.read_bytes().startswith(b"\x89PNG")


def test_plot_when_the_bootstrap_interval_excludes_the_estimate(tmp_path):
    """One task with two samples: every resample is that task, so the interval is [-1, -1] while
    scipy's Spearman rho is -0.9999999999999999, just outside it; the figure must not fail
    (matplotlib refuses negative error-bar lengths)."""
    from workbench.correlate import correlate
    from workbench.correlate.plot import plot_report

    table = {"task_id": ["T0", "T0"], "m": [0.2, 0.9], "passed": [1, 0]}
    report = correlate(table, n_resamples=50)
    path = plot_report(report, tmp_path / "one-task.png")
    assert path.read_bytes().startswith(b"\x89PNG")


def test_a_score_run_folder_or_its_long_table_says_which_file_to_pass(tmp_path):
    folder = tmp_path / "score"
    folder.mkdir()
    long_rows = [{"task_id": "T0", "sample_id": s, "method": "p-correct", "score": s / 4, "passed": s % 2}
                 for s in range(4)]
    (folder / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in long_rows))
    (folder / "scores_wide.jsonl").write_text("".join(
        json.dumps({"task_id": "T0", "sample_id": s, "p-correct": s / 4, "passed": s % 2}) + "\n" for s in range(4)))
    (folder / "run.json").write_text("{}")
    result = runner.invoke(app, ["correlate", str(folder), "-m", "p-correct"])
    assert result.exit_code == 1 and "is a workbench score run folder" in " ".join(result.stderr.split())
    assert "scores_wide.jsonl" in result.stderr and "Traceback" not in result.output
    long = runner.invoke(app, ["correlate", str(folder / "scores.jsonl"), "-m", "p-correct"])
    assert long.exit_code == 1 and "pass the scores_wide.jsonl next to it" in " ".join(long.stderr.split())


def test_a_folder_for_json_or_plot_is_refused_before_the_bootstrap(tmp_path):
    """``--json out/`` crashed after the whole bootstrap (a rename onto a folder), and ``--plot out/``
    wrote ``./out.png``: both are refused first, with one line (real CLI, real data file)."""
    import json as json_module

    from typer.testing import CliRunner

    from workbench.cli import app

    rows = [{"task_id": f"T{t}", "sample_id": s, "passed": int(s == 0), "m": 0.1 * s + t} for t in range(6) for s in range(2)]
    data = tmp_path / "s.jsonl"
    data.write_text("".join(json_module.dumps(r) + "\n" for r in rows))
    (tmp_path / "out").mkdir()
    for flag, value in (("--json", str(tmp_path / "out")), ("--plot", str(tmp_path / "new") + "/")):
        result = CliRunner().invoke(app, ["correlate", str(data), "-m", "m", flag, value])
        assert result.exit_code != 0 and "is a folder; give a file name" in result.output, result.output
        assert "Traceback" not in result.output
    assert not (tmp_path / "new.png").exists()


def test_an_interrupted_plot_leaves_no_figure_of_an_earlier_run(tmp_path, interrupted_plot):
    """The JSON is written before the figure; a figure from an earlier run must not stay beside the new JSON
    (the run report would show it)."""
    import pytest

    import workbench.correlate.plot as plot_module
    from workbench.correlate import CorrelateConfig, run_correlate

    table = tmp_path / "scores.jsonl"
    table.write_text("".join(json.dumps({"task_id": f"T{t}", "sample_id": s, "passed": int(s > 1), "m": s + t / 10})
                             + "\n" for t in range(6) for s in range(4)))
    json_path, plot_path = interrupted_plot(plot_module, "plot_report")
    with pytest.raises(KeyboardInterrupt):
        run_correlate(str(table), CorrelateConfig(metric=("m",), resamples=50), json_path=json_path, plot_path=plot_path)
    assert json.loads(json_path.read_text())["metrics"]["m"]
    assert not plot_path.exists()


def test_a_table_without_a_generation_column_gets_a_note_not_a_warning_on_length(tmp_path):
    """The length analysis runs by default (``--length-column auto``); a table with no generation
    column was told "warning: no length analysis: ..." although nobody asked for one (a new-user
    probe). It is a note-level line now, once; the JSON keeps ``length.note``."""
    rng = np.random.default_rng(0)
    rows = [{"task_id": f"t{t}", "sample_id": s, "passed": bool(rng.random() < 0.5), "m": float(rng.random())}
            for t in range(6) for s in range(4)]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = runner.invoke(app, ["correlate", str(data), "-m", "m", "--label", "passed", "--resamples", "50",
                                 "--json", str(tmp_path / "report.json")], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "note: no length analysis:" in text, text
    assert "warning: no length analysis" not in text and text.count("no length analysis") == 1, text
    report = json.loads((tmp_path / "report.json").read_text())
    assert "no generation column" in report["length"]["note"]
    assert not any("length" in w for w in report["warnings"]), report["warnings"]
