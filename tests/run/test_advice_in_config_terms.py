"""What a stage advises under ``workbench run`` names the config keys the user can set
(``[correlate] allow_partial_join = true``, ``--set correlate.allow_partial_join=true``), not the
flags of ``workbench correlate`` / ``bias`` / ``score``, which the run command does not take; the
commands themselves keep their flags. Real sandboxed execution, real chrF, correlation, dedup and
bias on a slice of the bundled ICE-Score set (no LLM; the score stage's note on rows set aside,
which needs a judge, is tested in ``test_run_plan.py`` with its scripted one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ice_score_slice import TASKS, task_rows, write_config
from workbench.run import load_config, run_pipeline

_TABLES = """[execute]
workers = 2
{execute}
[score]
method = ["chrf"]
[correlate]
metric = ["codebleu"]
resamples = 100
{correlate}
[bias]
resamples = 100
{bias}
"""


def _generations(path: Path, *, per_outcome: int = 2) -> Path:
    """Real ICE-Score rows of three tasks: ``per_outcome`` passing and failing samples each."""
    rows = task_rows()
    picked = []
    for task in TASKS:
        mine = [r for r in rows if r["task_id"] == task]
        picked += [r for r in mine if str(r["passed"]) == "1"][:per_outcome]
        picked += [r for r in mine if str(r["passed"]) == "0"][:per_outcome]
    path.write_text("".join(json.dumps(r) + "\n" for r in picked))
    return path


def _outcomes(result) -> dict[str, tuple[str, str | None]]:
    return {o.name: (o.status, o.detail) for o in result.outcomes}


def _config(tmp_path: Path, data: Path, stages: list[str], execute: str = "", correlate: str = "",
            bias: str = "") -> Path:
    return write_config(tmp_path / "c.toml", tmp_path / "run", data, stages,
                        _TABLES.format(execute=execute, correlate=correlate, bias=bias))


def _flat(text: str | None) -> str:
    return " ".join((text or "").split())


def test_correlate_refusing_a_partial_join_names_the_config_key(tmp_path: Path) -> None:
    """Executing 2 of 12 scored rows: correlate_all refused the join with "pass --allow-partial-join"
    and "check the files and --task-column / --sample-column"; the key is set in the config, and
    set so the stage correlates the 2 rows."""
    data = _generations(tmp_path / "gens.jsonl")  # 12 rows
    stages = ["execute", "score_all", "correlate_all"]
    result = run_pipeline(load_config(_config(tmp_path, data, stages, execute="limit = 2")))
    status, message = _outcomes(result)["correlate_all"]
    message = _flat(message)
    assert status == "failed", message
    assert "only 2 of the 12 score rows" in message, message
    assert ("check the files and [data] task_column / [data] sample_column, or set [correlate] allow_partial_join "
            "= true (--set correlate.allow_partial_join=true) if the results really lack most of the scored "
            "samples") in message, message
    assert "--allow-partial-join" not in message and "--task-column" not in message

    done = run_pipeline(load_config(tmp_path / "c.toml", overrides=["correlate.allow_partial_join=true"]))
    assert _outcomes(done)["correlate_all"][0] == "ran", _outcomes(done)


def _edit_one_completion(data: Path) -> None:
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    rows[0]["completion_multipl_e"] += "    # edited after execute ran\n"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_correlate_refusing_other_code_names_the_config_keys(tmp_path: Path) -> None:
    """The data edited after execute ran and score_all rerun on it (``--stage``): the scores and the
    results differ in code_sha256 for one row. The refusal said "or other --stop settings" and "or
    --allow-partial-join to leave out the 1 row", the warning of the correlation that leaves it out
    "(--allow-partial-join)"."""
    data = _generations(tmp_path / "gens.jsonl")
    config_path = _config(tmp_path, data, ["execute", "score_all", "correlate_all"])
    first = run_pipeline(load_config(config_path))
    assert all(_outcomes(first)[name][0] == "ran" for name in ["execute", "score_all", "correlate_all"]), \
        _outcomes(first)
    _edit_one_completion(data)

    result = run_pipeline(load_config(config_path), only=["score_all", "correlate_all"])
    status, message = _outcomes(result)["correlate_all"]
    message = _flat(message)
    assert status == "failed" and "differ in code_sha256" in message, message
    assert "or other [data] stop settings" in message, message
    assert ("or set [correlate] allow_partial_join = true (--set correlate.allow_partial_join=true) to leave out "
            "the 1 row of other code") in message, message
    assert "--allow-partial-join" not in message and "--stop" not in message

    partial = run_pipeline(load_config(config_path, overrides=["correlate.allow_partial_join=true"]),
                           only=["correlate_all"])
    assert _outcomes(partial)["correlate_all"][0] == "ran", _outcomes(partial)
    report = json.loads((tmp_path / "run" / "correlate" / "all.json").read_text())
    warning = next(w for w in report["warnings"] if "code_sha256" in w)
    assert warning.endswith("they are left out ([correlate] allow_partial_join)"), warning


def test_bias_refusing_a_partial_join_names_the_config_key(tmp_path: Path) -> None:
    """dedup ran on 6 rows, then the data grew to 18 and score_all and bias ran on it (``--stage``):
    bias refused the join with "pass --allow-partial-join" and "ids from --id-column"."""
    small = _generations(tmp_path / "gens.jsonl", per_outcome=1)
    data = tmp_path / "gens.jsonl"
    config_path = _config(tmp_path, data, ["dedup", "score_all", "bias"])
    assert _outcomes(run_pipeline(load_config(config_path), only=["dedup"]))["dedup"][0] == "ran"
    # 18 rows: the 6 the dedup saw and 12 it never saw (the same samples under other task ids)
    rows = [json.loads(line) for line in small.read_text().splitlines()]
    more = [{**r, "task_id": r["task_id"] + suffix} for suffix in ("-copy", "-x") for r in rows]
    data.write_text("".join(json.dumps(r) + "\n" for r in [*rows, *more]))
    result = run_pipeline(load_config(config_path), only=["score_all", "bias"])
    status, message = _outcomes(result)["bias"]
    message = _flat(message)
    assert status == "failed" and "rows join the dedup output" in message, message
    assert "(ids from [data] id_column task_id,sample_id" in message, message
    assert "set [bias] allow_partial_join = true (--set bias.allow_partial_join=true) if the metric table" in message
    assert "--allow-partial-join" not in message and "--id-column" not in message


def test_the_cli_commands_keep_their_flags(tmp_path: Path) -> None:
    """The words switch only inside a stage of ``workbench run``: ``workbench correlate`` still
    says "pass --allow-partial-join"."""
    from typer.testing import CliRunner

    from workbench.cli import app

    data = _generations(tmp_path / "gens.jsonl")
    run_pipeline(load_config(_config(tmp_path, data, ["execute", "score_all"], execute="limit = 2")))
    run = tmp_path / "run"
    result = CliRunner().invoke(app, ["correlate", str(run / "score" / "all" / "scores_wide.jsonl"), "--results",
                                      str(run / "execute" / "results.jsonl"), "-m", "chrf", "--resamples", "100"])
    assert result.exit_code == 1, result.output
    assert "--task-column / --sample-column, or pass --allow-partial-join if" in _flat(result.output), result.output


@pytest.mark.parametrize("staying, words", [(0, "a smaller --limit or --method-limit"), (3, "an earlier --resume")])
def test_the_score_note_keeps_the_flags_outside_a_run(staying: int, words: str) -> None:
    from workbench.score.job import _set_aside_note

    assert words in _set_aside_note(2, staying)[0]
