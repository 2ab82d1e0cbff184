"""Where the prompt before each completion comes from, declared (``--prompt-source``, ``[execute]
prompt_source``): the default job runs HumanEval's own prompts on purpose (the bundled ICE-Score
set's ``prompt`` column lacks e.g. HumanEval's imports), and a note that the generations' prompt
differs read to a new user as "the default config is wrong". Declaring ``problems`` drops the note;
leaving the choice undeclared keeps it; a wrong value and a contradictory pair are refused.
Real data (the bundled ``humaneval-codex-python`` set and HumanEval), real sandboxed runs, the
real CLI and ``workbench run`` on the shipped config."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.execute.result_file import read_results
from workbench.options import OptionError
from workbench.run import load_config, run_pipeline
from workbench.run.config import ConfigError

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "configs" / "humaneval.toml"
NOTE = "differs from the problems' prompt in 161 of 161 tasks (first: HumanEval/99)"
FIXED = dict(timeout=30.0, workers=2, reference_cache=False, limit=2, completion_column="completion_multipl_e")


def _flat(text: str) -> str:
    """``text`` on one line, without the box an error is printed in."""
    return " ".join(text.replace("│", " ").split())


def test_the_note_is_shown_until_the_problems_prompt_is_declared(tmp_path):
    """``workbench execute`` on the bundled ICE-Score set: without --prompt-source the note says the
    prompts differ and how to declare the choice; with --prompt-source problems the same programs
    run (same results) and no note is printed."""
    base = ["execute", "humaneval-codex-python", "--completion-column", "completion_multipl_e", "--limit", "2",
            "--timeout", "30", "-j", "2", "--no-reference-cache", "--no-progress"]
    undeclared = CliRunner().invoke(app, [*base, "-o", str(tmp_path / "undeclared.jsonl")])
    assert undeclared.exit_code == 0, undeclared.output
    text = _flat(undeclared.output)
    assert NOTE in text, text
    assert "pass --prompt-column prompt to run the prompt the generations carry" in text, text
    assert "or pass --prompt-source problems to keep the problems' prompt without this note" in text, text

    declared = CliRunner().invoke(app, [*base, "--prompt-source", "problems", "-o", str(tmp_path / "declared.jsonl")])
    assert declared.exit_code == 0, declared.output
    assert "differs from the problems' prompt" not in declared.output, declared.output
    outcome = {(r["task_id"], r["sample_id"]): r["status"] for r in read_results(tmp_path / "undeclared.jsonl")}
    assert outcome == {(r["task_id"], r["sample_id"]): r["status"] for r in read_results(tmp_path / "declared.jsonl")}
    assert len(outcome) == 2


def test_generations_with_a_prompt_column_run_the_carried_prompt(tmp_path):
    """``prompt_source="generations"`` with ``prompt_column`` runs what ``prompt_column`` alone runs,
    without the note (the library, on the bundled set)."""
    summary = run_execute("humaneval-codex-python", tmp_path / "g.jsonl",
                          ExecutionConfig(prompt_source="generations", prompt_column="prompt", **FIXED))
    assert summary.executed == 2
    assert not any("differs from the problems' prompt" in note for note in summary.notes)


def test_a_wrong_or_contradictory_prompt_source_is_refused(tmp_path):
    """A misspelt value is refused with the closest one; ``problems`` with a ``--prompt-column``
    and ``generations`` without one are refused before any sample runs, naming both options."""
    base = ["execute", "humaneval-codex-python", "--completion-column", "completion_multipl_e", "--limit", "1",
            "-o", str(tmp_path / "o.jsonl")]
    wrong = CliRunner().invoke(app, [*base, "--prompt-source", "problem"])
    assert wrong.exit_code == 2, wrong.output
    assert "--prompt-source must be one of problems, generations, not 'problem' (did you mean 'problems'?)" in \
        _flat(wrong.output), wrong.output
    both = CliRunner().invoke(app, [*base, "--prompt-source", "problems", "--prompt-column", "prompt"])
    assert both.exit_code == 2, both.output
    assert ("--prompt-source problems runs the problems' prompt, but --prompt-column prompt names a generations "
            "column to run instead: drop one of them") in _flat(both.output), both.output
    with pytest.raises(OptionError, match="name their column with --prompt-column"):
        ExecutionConfig(prompt_source="generations")
    assert not (tmp_path / "o.jsonl").exists()


def _execute_notes(config) -> list[str]:
    """The notes of the execute stage of ``config`` run alone (real sandbox, 2 samples)."""
    summaries = []

    def run_stage(plan, call):
        result = call()
        if plan.name == "execute":
            summaries.append(result)
        return result

    result = run_pipeline(config, run_stage=run_stage)
    assert {o.name: o.status for o in result.outcomes}["execute"] == "ran", [(o.name, o.detail) for o in result.outcomes]
    [summary] = summaries
    return [_flat(note) for note in summary.notes]


_FEW = ['run.stages=["execute"]', "execute.limit=2", "execute.timeout=30", "execute.workers=2",
        "execute.reference_cache=false"]


def test_the_shipped_config_declares_the_problems_prompt_and_gets_no_note(tmp_path):
    """`workbench run configs/humaneval.toml`: its execute stage said the generations' prompt differs
    in 161 of 161 tasks though the config chose HumanEval's prompts on purpose. The config now
    declares it; the same config without that line gets the note in the config's words."""
    shipped = load_config(SHIPPED, overrides=[f"run.output={tmp_path / 'shipped'}", *_FEW])
    assert shipped.sections["execute"]["prompt_source"] == "problems"
    assert not any("differs from the problems' prompt" in note for note in _execute_notes(shipped))

    undeclared_path = tmp_path / "undeclared.toml"
    text = SHIPPED.read_text(encoding="utf-8")
    assert text.count('prompt_source = "problems"\n') == 1
    undeclared_path.write_text(text.replace('prompt_source = "problems"\n', ""), encoding="utf-8")
    undeclared = load_config(undeclared_path, overrides=[f"run.output={tmp_path / 'undeclared'}", *_FEW])
    [note] = [note for note in _execute_notes(undeclared) if "differs from the problems' prompt" in note]
    assert NOTE in note, note
    assert ('or set [execute] prompt_source = "problems" (--set execute.prompt_source=problems) to keep the '
            "problems' prompt without this note") in note, note

    # declaring the choice changes no program: a run folder executed without it stays up to date
    again = run_pipeline(load_config(SHIPPED, overrides=[f"run.output={tmp_path / 'undeclared'}", *_FEW]))
    assert {o.name: o.status for o in again.outcomes}["execute"] == "up-to-date", \
        [(o.name, o.status, o.detail) for o in again.outcomes]


def test_a_wrong_prompt_source_in_a_config_is_refused(tmp_path):
    """A misspelt ``[execute] prompt_source`` is refused when the config is read; the shipped
    ``problems`` with an ``[execute] prompt_column`` by the preflight of ``workbench run --dry-run``,
    in the config's words, before any stage runs."""
    with pytest.raises(ConfigError) as refused:
        load_config(SHIPPED, overrides=[f"run.output={tmp_path / 'r'}", "execute.prompt_source=generation"])
    message = _flat(str(refused.value))
    assert "[execute] prompt_source must be one of problems, generations, not 'generation'" in message, message
    contradictory = CliRunner().invoke(app, ["run", str(SHIPPED), "--dry-run", "--output", str(tmp_path / "r"),
                                             "--set", "execute.prompt_column=prompt"])
    assert contradictory.exit_code == 1, contradictory.output  # a stage config refused by the preflight
    assert ('[execute] prompt_source = "problems" runs the problems\' prompt, but [execute] prompt_column = "prompt" '
            "names a generations column to run instead: drop one of them") in _flat(contradictory.output), \
        contradictory.output
    assert not (tmp_path / "r").exists()
