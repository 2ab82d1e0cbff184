"""Without --metric, correlate takes every numeric column except workbench's own bookkeeping
columns (flags, counts, seconds, ids that score and execute write); named, they still work."""

from __future__ import annotations

import json
import re
import random

from typer.testing import CliRunner

from workbench.cli import app
from workbench.correlate import CorrelateConfig, run_correlate
from workbench.correlate.inputs import BOOKKEEPING_COLUMNS
from workbench.execute.result_file import RESULT_COLUMNS
from workbench.score.job import ROW_COLUMNS, SAMPLE_COLUMNS

runner = CliRunner()


def _words(output: str) -> str:
    """The output as one line of words, without the boxes Rich draws round help and errors."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", output).split())

#: the other columns score and execute write: scores and reads of a score (metrics), the label, text
SCORE_LIKE = {"score", "score_spread", "score_read", "score_expected", "score_sampled", "score_argmax", "score_mass",
              "p_yes", "p_no", "passed"}
TEXT = {"method", "model", "scores", "status", "error", "subcodes", "reference_subcodes", "prompt_version", "variant",
        "model_identity", "score_mode", "score_distribution", "answers", "read_note", "stop_sequence",
        "generation_note", "detail", "stderr_tail", "language", "isolation", "code_sha256"}


def test_every_column_score_and_execute_write_is_classified():
    """A new column written by score or execute must be put in BOOKKEEPING_COLUMNS or here."""
    written = set(ROW_COLUMNS) | set(SAMPLE_COLUMNS) | set(RESULT_COLUMNS)
    assert written - BOOKKEEPING_COLUMNS - SCORE_LIKE - TEXT == set()
    assert not BOOKKEEPING_COLUMNS & (SCORE_LIKE | TEXT)
    assert {"generation_truncated", "seconds", "llm_seconds", "duration_s", "exit_code", "cost_usd"} <= BOOKKEEPING_COLUMNS


def _wide_table(tmp_path):
    """A scores_wide.jsonl as `workbench score` writes it: a method column, carried columns."""
    rng = random.Random(3)
    rows = []
    for task in range(8):
        for sample in range(6):
            passed = rng.random() < 0.5
            rows.append({"task_id": f"T/{task}", "sample_id": sample, "passed": int(passed),
                         "chrf": rng.random() + 0.3 * passed, "generation_truncated": rng.random() < 0.3,
                         "seconds": rng.random(), "llm_calls": rng.randrange(1, 3), "generation_note": None})
    path = tmp_path / "scores_wide.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_automatic_choice_leaves_out_bookkeeping_columns(tmp_path):
    report = run_correlate(str(_wide_table(tmp_path)), CorrelateConfig(resamples=100, length_column="none"))
    assert list(report.metrics) == ["chrf"]


def test_a_metric_column_with_some_text_cells_is_named_not_silently_dropped(tmp_path):
    # probe 27: 7 "error" cells of 48 made the column text, and it vanished from the default metrics
    rows = [json.loads(line) for line in _wide_table(tmp_path).read_text().splitlines()]
    for number, row in enumerate(rows):
        row["judge"] = "error" if number % 7 == 0 else row["chrf"] * 2
        row["completion"] = f"def f():\n    return {number}\n"  # text that is no metric: not named
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = run_correlate(str(path), CorrelateConfig(resamples=100, length_column="none"))
    assert list(report.metrics) == ["chrf"]
    said = [w for w in report.warnings if "not among the metrics chosen automatically" in w]
    assert len(said) == 1 and said[0].startswith("judge: ") and "7 of its 48 cells are not numbers (e.g. 'error')" in said[0]
    named = run_correlate(str(path), CorrelateConfig(metric=["judge"], resamples=100, length_column="none"))
    assert list(named.metrics) == ["judge"] and not any("automatically" in w for w in named.warnings)


def test_a_bookkeeping_column_named_with_m_is_correlated(tmp_path):
    path = _wide_table(tmp_path)
    result = runner.invoke(app, ["correlate", str(path), "-m", "chrf", "-m", "generation_truncated", "--resamples", "100",
                                 "--length-column", "none"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "generation_truncated" in result.output


def test_help_says_what_the_automatic_choice_takes():
    text = _words(runner.invoke(app, ["correlate", "--help"]).output)
    assert "bookkeeping columns (generation_truncated" in text and "name one with -m to use it" in text
