"""A score table without the label column and no execution results: the message said "column
'passed' not found (set it with --label)" and nothing of ``--results``, the usual fix (a score run
of generations that carry no pass/fail: the label comes from ``workbench execute``). On the command
line it names ``--results``; under ``workbench run`` the execute stage, as no key sets the results.
Real ICE-Score rows (without their ``passed``), real chrF, the real CLI and pipeline; no LLM."""

from __future__ import annotations

from pathlib import Path

import pytest
from ice_score_slice import write_config, write_generations
from typer.testing import CliRunner

from workbench.cli import app
from workbench.correlate import correlate
from workbench.data import load_records
from workbench.errors import MissingColumnError
from workbench.run import load_config
from workbench.run.stages import plan_stages


def _flat(text: str | None) -> str:
    return " ".join((text or "").replace("│", " ").split())


def test_the_cli_names_results_when_the_scores_have_no_label(tmp_path: Path) -> None:
    data = write_generations(tmp_path / "gens.jsonl", drop=("passed",))
    result = CliRunner().invoke(app, ["correlate", str(data), "--metric", "codebleu"])
    assert result.exit_code != 0
    message = _flat(result.output)
    assert ("column 'passed' not found (set it with --label, or join the execution results of `workbench execute` "
            "with --results (their 'passed' is the label))") in message, message
    assert "the data has: task_id" in message and f"(in {data})" in message, message


def test_under_workbench_run_the_message_names_the_execute_stage(tmp_path: Path) -> None:
    """In a correlate stage's words (its plan's, from a config whose stages leave execute out) the
    hint names the stage to add, not a ``--results`` flag ``workbench run`` does not take (the run's
    preflight refuses most such configs before; this is the job's own wording)."""
    data = write_generations(tmp_path / "gens.jsonl", drop=("passed",))
    config = load_config(write_config(tmp_path / "c.toml", tmp_path / "run", data, ["score_all", "correlate_all"],
                                      '[score]\nmethod = ["chrf"]\n[correlate]\nmetric = ["codebleu"]\n'))
    [plan] = [p for p in plan_stages(config, set(load_records(data).column_names)) if p.name == "correlate_all"]
    assert "results" not in plan.values  # the run joins no execution results here
    with pytest.raises(MissingColumnError) as refused, plan.words():
        correlate(str(data), metrics=["codebleu"], label="passed")
    message = _flat(str(refused.value))
    # the run took the label from [data] label_column (write_config sets it): named there, not [correlate] label
    assert ("column 'passed' not found (set it with [data] label_column, or add the execute stage to [run] stages, "
            "whose results give the label)") in message, message
    assert "[correlate] label" not in message, message
    assert "--results" not in message and "--label" not in message, message
