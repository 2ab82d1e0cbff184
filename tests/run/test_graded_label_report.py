"""A run whose label is a human grade (``[data] label_kind = "graded"``) says so in its report and on
the terminal: "correlation with the grade 'grade'", not "with execution", no pass/fail split of the
scores, the grade's own row in the bias table is its mean grade (not pass@1).

Real run, no LLM: every 8th intent of Evtikhiev et al.'s bundled CoNaLa set (59 intents x 5 models),
written as JSON Lines with its reference list, deduplicated within each intent, chrF against all of an
intent's snippets, correlated with the grade next to the shipped BLEU column, bias, report.html.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bundled_data import write_conala_slice
from report_html import shown_text
from run_config import write_run_config
from workbench.cli import app
from workbench.run import load_config, run_pipeline

_CONFIG = {
    "run": {"stages": ["dedup", "score_all", "correlate_all", "bias", "report"]},
    "data": {"task_column": "task_id", "sample_column": "sample_id", "code_column": "generation",
             "reference_column": "references", "label_column": "grade", "label_kind": "graded"},
    "dedup": {"group_column": "task_id", "min_tokens": 5},
    "score": {"method": ["chrf"]},
    "correlate": {"metric": ["bleu"], "resamples": 100},
    "bias": {"resamples": 100},
}


@pytest.fixture(scope="module")
def graded_run(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("conala-run")
    source = folder / "conala-slice.jsonl"
    rows = write_conala_slice(source, 8, ("task_id", "sample_id", "prompt", "generation", "reference", "references",
                                          "grade", "bleu"))
    config = write_run_config(folder / "conala.toml", _CONFIG, output=folder / "run", source=source)
    result = run_pipeline(load_config(config))
    return {"folder": folder, "config": config, "result": result, "run": folder / "run", "rows": len(rows)}


def test_the_report_names_the_grade_not_execution(graded_run: dict) -> None:
    """Before: the headline read "correlation with execution", the bias tau-b "Correlation with execution:
    Kendall tau-b with grade", the grade's row "(pass@1)" and the distribution "by pass/fail"."""
    outcomes = {o.name: o.status for o in graded_run["result"].outcomes}
    assert {outcomes[n] for n in ("dedup", "score_all", "correlate_all", "bias", "report")} == {"ran"}, outcomes
    page = (graded_run["run"] / "report.html").read_text()
    text = shown_text(page)
    assert "Headline: correlation with the grade 'grade'" in text, text[:2000]
    assert "between each method's score and the grade 'grade', a graded label" in text
    assert "Correlation with the grade 'grade': Kendall τ-b with grade" in text
    assert "grade (the mean grade)" in text and "(pass@1)" not in text
    assert "Correlation with the grade 'grade' (no reference value was measured on these rows)" in text  # the forest plot
    assert "Score distribution by grade" in text and "Score distribution by pass/fail" not in text
    # nothing speaks of execution but the published HumanEval values' section, which is about execution
    assert not re.search("correlation with execution|execution label", text, re.I), text
    report = json.loads((graded_run["run"] / "report.json").read_text())
    assert report["label"]["kind"] == "graded" and report["label"]["noun"] == "the grade 'grade'"
    # no pass/fail split of the scores behind the page either: grades 0 and 1 are not fail and pass
    assert report["distributions"] == {} and report["dataset"]["label_kind"] == "graded"


def test_the_terminal_headline_names_the_grade(graded_run: dict) -> None:
    """``workbench run`` printed "correlation with execution" over the grade's tau-b. Rerun through the CLI:
    every stage is up to date, the report is rebuilt and the headline printed."""
    result = CliRunner().invoke(app, ["run", str(graded_run["config"]), "--no-progress"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "correlation with the grade 'grade' (pooled; 95% bootstrap CI over tasks)" in text, text[-3000:]
    assert "correlation with execution" not in text
