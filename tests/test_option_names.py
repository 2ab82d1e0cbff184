"""One name for one option across commands (issue 19 item 5): the shared concepts (parallelism,
progress bars, the language, list options) are the same flag on every command; the former
spellings are deprecated aliases that still work for one release, with a note. No LLM, no
execution: the commands' options are parsed and their configs built."""

from __future__ import annotations

import pytest
import typer

from workbench.cli import app
from workbench.cli.config_options import config_from_params
from workbench.correlate import CorrelateConfig
from workbench.dedup.config import DedupConfig
from workbench.execute.config import ExecutionConfig
from workbench.options import OptionError
from workbench.run.config import COMMAND_CONFIGS, ConfigError, build_config
from workbench.run.stages import plan_stages
from workbench.score.config import ScoreConfig

#: names that mean "how many at once" or "no progress bar" in other spellings: no job uses them
SYNONYMS = {"concurrency", "jobs", "n_jobs", "num_workers", "threads", "parallel", "quiet", "silent"}


def _command(name: str):
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


def _flags(name: str) -> set[str]:
    return {flag for param in _command(name).params for flag in (*param.opts, *param.secondary_opts)}


def _params(command: str, args: list[str]) -> dict:
    required = {"execute": ["--output", "out.jsonl"]}.get(command, [])
    with _command(command).make_context(command, ["INPUT", *required, *args]) as ctx:
        return dict(ctx.params)


@pytest.mark.parametrize("command", ["dedup", "execute", "score"])
def test_the_shared_concepts_have_one_flag_on_every_command(command):
    flags = _flags(command)
    assert {"--workers", "-j", "--no-progress", "--progress", "--language", "-l"} <= flags, command


def test_no_job_names_a_shared_concept_another_way():
    for command, config_class in COMMAND_CONFIGS.items():
        assert not SYNONYMS & set(config_class.options()), command


def test_the_former_concurrency_flag_still_sets_workers_with_a_note(capsys):
    config = config_from_params(ScoreConfig, _params("score", ["--method", "chrf", "--concurrency", "3"]))
    assert config.workers == 3 and config.parallel_samples == 3
    assert "--concurrency is deprecated and goes in the next release: use --workers" in capsys.readouterr().err
    assert config_from_params(ScoreConfig, _params("score", ["--method", "chrf", "-j", "2"])).workers == 2
    with pytest.raises(typer.BadParameter, match="--concurrency is the former name of --workers"):
        config_from_params(ScoreConfig, _params("score", ["--method", "chrf", "--concurrency", "3", "--workers", "2"]))


def test_the_former_flags_are_hidden_from_help():
    from typer.testing import CliRunner

    text = CliRunner().invoke(app, ["score", "--help"], terminal_width=200).output
    assert "--workers" in text and "--concurrency" not in text and "--quiet" not in text


def test_score_quiet_still_works_as_no_progress(tmp_path, bundled_data):
    from typer.testing import CliRunner

    data = bundled_data / "ice-score" / "humaneval_python_flat.jsonl"
    args = ["score", str(data), "--method", "chrf", "--limit", "2", "--generation-column", "completion_multipl_e",
            "-o", str(tmp_path / "o")]
    result = CliRunner().invoke(app, [*args, "-q"])
    assert result.exit_code == 0, result.output
    assert "--quiet/-q is deprecated" in result.output and "use --no-progress" in result.output
    result = CliRunner().invoke(app, [*args, "--no-progress", "--overwrite"])
    assert result.exit_code == 0 and "deprecated" not in result.output


def _score_stage(values: dict):
    raw = {"data": {"source": "humaneval-codex-python", "code_column": "completion"},
           "score": {"model": "local/x", **values}}
    config = build_config(raw)
    plans = {plan.name: plan for plan in plan_stages(config, {"task_id", "sample_id", "completion", "reference"})}
    return config, plans["score"]


def test_the_former_toml_key_still_sets_the_option_with_a_note():
    config, plan = _score_stage({"concurrency": 2})
    assert plan.config().workers == 2 and "--workers" in plan.argv and "--concurrency" not in plan.argv
    assert config.notes == ["[score] concurrency is deprecated and goes in the next release: use [score] workers "
                            "(one name per option across commands)"]
    with pytest.raises(ConfigError, match=r"\[score\] concurrency is the former name of \[score\] workers"):
        _score_stage({"concurrency": 2, "workers": 3})


def test_every_list_option_takes_comma_separated_values():
    """``--carry passed,difficulty`` was read as one column named "passed,difficulty"."""
    params = _params("score", ["--method", "chrf,ice-score", "--model", "local/x", "--carry", "passed,difficulty"])
    config = config_from_params(ScoreConfig, params)
    assert config.carry == ("passed", "difficulty") and config.method == ("chrf", "ice-score")
    assert ScoreConfig(method="chrf", carry=["a, b", "c"]).carry == ("a", "b", "c")
    correlate = CorrelateConfig(metric=["x,y", "z"], split="train,test")
    assert correlate.metric == ("x", "y", "z") and correlate.split == ("train", "test")
    # a value that holds commas itself stays one value
    combined = CorrelateConfig(metric=["x", "y"], combine=["both=rank-mean:x,y"])
    assert combined.combine == ("both=rank-mean:x,y",)
    _, plan = _score_stage({"carry": "passed,difficulty"})
    assert plan.config().carry[:2] == ("passed", "difficulty")


def test_a_former_name_and_its_option_together_are_refused_by_the_library():
    from workbench.options import rename_deprecated

    with pytest.raises(OptionError, match="concurrency is the former name of workers"):
        rename_deprecated(ScoreConfig, {"concurrency": 1, "workers": 2})
    assert rename_deprecated(ScoreConfig, {"workers": 2}) == ({"workers": 2}, [])


def test_execute_takes_limit_as_score_does_and_max_samples_as_a_deprecated_alias(capsys):
    """``workbench execute --limit 5`` failed with "Possible options: --timeout": the option
    was ``--max-samples`` there and ``--limit`` in ``score``."""
    assert "--limit" in _flags("execute") & _flags("score")
    assert config_from_params(ExecutionConfig, _params("execute", ["--limit", "5"])).limit == 5
    assert "deprecated" not in capsys.readouterr().err
    assert config_from_params(ExecutionConfig, _params("execute", ["--max-samples", "5"])).limit == 5
    assert "--max-samples is deprecated and goes in the next release: use --limit" in capsys.readouterr().err
    with pytest.raises(typer.BadParameter, match="--max-samples is the former name of --limit"):
        config_from_params(ExecutionConfig, _params("execute", ["--max-samples", "5", "--limit", "3"]))
    from typer.testing import CliRunner

    text = CliRunner().invoke(app, ["execute", "--help"], terminal_width=200).output
    assert "--limit" in text and "--max-samples" not in text


def test_the_former_execute_max_samples_key_still_sets_limit_with_a_note():
    raw = {"data": {"source": "humaneval-codex-python", "code_column": "completion"}, "execute": {"max_samples": 5}}
    config = build_config(raw)
    plans = {plan.name: plan for plan in plan_stages(config, {"task_id", "sample_id", "completion", "reference"})}
    assert plans["execute"].config().limit == 5 and "--limit" in plans["execute"].argv
    assert config.notes == ["[execute] max_samples is deprecated and goes in the next release: use [execute] limit "
                            "(one name per option across commands)"]


def test_workers_0_is_one_per_core_in_execute_as_in_dedup(monkeypatch):
    """``-j 0`` was an error in execute and "one per CPU" in dedup; score counts LLM requests
    in flight, where 0 has no meaning, so it still needs 1 or more (docs/run.md)."""
    import os

    from workbench.execute.isolation import detect_isolation
    from workbench.execute.job import planned_workers
    from workbench.execute.sandbox import Sandbox

    execute = config_from_params(ExecutionConfig, _params("execute", ["-j", "0"]))
    assert execute.workers == 0 and DedupConfig().workers == 0
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    sandbox = Sandbox(detect_isolation())
    assert planned_workers(execute, sandbox) == 6
    assert planned_workers(ExecutionConfig(), sandbox) == 12  # the default: two per core
    with pytest.raises(typer.BadParameter, match="greater than or equal to 1"):
        config_from_params(ScoreConfig, _params("score", ["--method", "chrf", "-j", "0"]))
