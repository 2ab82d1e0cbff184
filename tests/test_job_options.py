"""One source of truth per job option: each field of each job config is a command-line option
(same flag, default and help) and a key of its ``workbench run`` table (or set from ``[data]`` /
by the pipeline), a value set either way reaches the job's config alike, the command line a
stage records rebuilds the same config, and a typo in any key or choice fails before any stage
runs. No LLM, no execution."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import typer

from workbench.cli import app
from workbench.cli.config_options import config_from_params as cli_config
from workbench.options import Option, OptionError, flag_of
from workbench.run import run_pipeline
from workbench.run.config import (
    COMMAND_CONFIGS,
    DATA_KEYS,
    MANAGED_KEYS,
    RUN_KEYS,
    SECTION_COMMANDS,
    SHARED_KEYS,
    ConfigError,
    build_config,
    load_config,
)
from workbench.run.stages import plan_stages

REPO = Path(__file__).resolve().parents[1]
#: the dataset columns the planner is told about (none of the optional ones: nothing is carried)
COLUMNS = {"task_id", "sample_id", "completion", "reference", "prompt"}
#: what each table needs besides the key under test, in TOML and on the command line
TABLE_BASE: dict[str, dict[str, Any]] = {"decontaminate": {"against": "humaneval"}, "score": {"model": "local/x"}}
CLI_BASE: dict[str, list[str]] = {"decontaminate": ["--against", "humaneval"], "score": ["--model", "local/x"]}
#: the stage whose config a table feeds
TABLE_STAGE = {"decontaminate": "decontaminate", "dedup": "dedup", "execute": "execute", "score": "score",
               "correlate": "correlate", "bias": "bias"}
#: fields that only make sense together (a combination or baseline names correlated metrics)
COMPANIONS: dict[str, dict[str, Any]] = {"lsh_bands": {"lsh_rows": 4}, "lsh_rows": {"lsh_bands": 4},
                                         "combine": {"metric": ["x-value", "y-value"]},
                                         "baseline": {"metric": ["x-value", "y-value"]},
                                         "method_limit": {"method": ["dsa-cqe", "chrf"]},
                                         # read by p-correct only: refused for a run without it
                                         "reference": {"method": ["p-correct"]},
                                         "analyse_first": {"method": ["p-correct"]},
                                         # bias: a label kind declares what the label is, so it needs one
                                         "label_kind": {"label": "grade"}}
#: values of a particular form (the rest take :func:`_other_value`)
VALUES: dict[str, Any] = {"combine": ["both=rank-mean:x-value,y-value"], "method_limit": ["dsa-cqe=2"],
                         "max_failures": "10%", "spark_conf": ["spark.executor.memory=2g"],
                         "resamples": 500}  # a percentile interval needs at least 40 at 95 %
#: what ``workbench run`` sets where the command line has a plain default: the code column is
#: carried into the score tables and is correlate's length column (verbosity bias)
PIPELINE_DEFAULTS: dict[tuple[str, str], Any] = {("score", "carry"): ("completion",),
                                                 ("correlate", "length_column"): "completion",
                                                 # bias: pass@1 from the execution results, and its correlations
                                                 ("bias", "metric"): ("passed",), ("bias", "label"): "passed"}
TABLE_KEYS = [(table, name) for table, command in SECTION_COMMANDS.items()
              for name in COMMAND_CONFIGS[command].options()]


def _click_command(name: str):
    return typer.main.get_command(app).commands[name]  # type: ignore[attr-defined]


def _cli_params(command: str, args: list[str]) -> dict[str, Any]:
    """The parsed parameters of ``workbench <command> INPUT args`` (nothing runs)."""
    required = {"execute": ["--output", "out.jsonl"], "bias": ["METRICS"]}.get(command, [])
    click_command = _click_command(command)
    with click_command.make_context(command, ["INPUT", *required, *args]) as ctx:
        return dict(ctx.params)


def _stage_config(table: str, values: dict[str, Any]):
    """The config the ``workbench run`` stage of ``table`` builds from ``values`` in that table."""
    raw = {"data": {"source": "humaneval-codex-python", "code_column": "completion"}, table: values}
    plans = {plan.name: plan for plan in plan_stages(build_config(raw), COLUMNS)}
    return plans[TABLE_STAGE[table]].config()


def _other_value(item: Option) -> Any:
    """A valid value of ``item`` other than its default (a list for a repeatable option)."""
    if item.kind is bool:
        return not item.default
    choices = item.choices()
    if choices:
        picked = [c for c in choices if c not in (item.default if item.multiple else (item.default,))]
        return picked[:2] if item.multiple else picked[0]
    if item.declared.parse is not None:
        return "0.3,0.7"
    if item.kind in (int, float):
        low, high = item.declared.min, item.declared.max
        if item.kind is float and low is not None and high is not None:
            value = (low + high) / 2
        else:
            value = item.kind((low or 0) + 3) if item.default != (low or 0) + 3 else item.kind((low or 0) + 4)
        return [value] if item.multiple else value
    return ["x-value", "y-value"] if item.multiple else "x-value"


def _cli_args(item: Option, value: Any) -> list[str]:
    if item.kind is bool:
        return [item.flag] if value else [item.off_flag or ""]
    if item.multiple:
        return [arg for one in value for arg in (item.flag, str(one))]
    return [item.flag, str(value)]


def test_every_field_is_a_cli_option_with_its_flag_default_and_help() -> None:
    for command, config_class in COMMAND_CONFIGS.items():
        params = {p.name: p for p in _click_command(command).params}
        defaults = _cli_params(command, [])  # parsed only: no config is built
        for name, item in config_class.options().items():
            param = params[name]
            assert item.flag in param.opts, (command, name)
            if item.off_flag:
                assert item.off_flag in param.secondary_opts, (command, name)
            assert param.help == item.help, (command, name)
            cli_default = defaults[name]
            if item.multiple:
                # numbers come as typed ("--pass-at-k 1,10,100"): the config reads them
                assert (item.coerce(cli_default) if cli_default else ()) == (item.default or ()), (command, name)
            elif item.kind is float:  # handed over as typed (exact thresholds); the config reads it
                assert item.coerce(cli_default) == item.default, (command, name)
            else:
                assert cli_default == item.text(item.default), (command, name)


@pytest.mark.parametrize("table, name", TABLE_KEYS)
def test_every_field_is_reachable_from_a_table_with_the_cli_default(table: str, name: str) -> None:
    command = SECTION_COMMANDS[table]
    config_class = COMMAND_CONFIGS[command]
    item = config_class.options()[name]
    raw = {"data": {"source": "humaneval-codex-python"}, table: {name: VALUES.get(name, _other_value(item))}}
    if name in MANAGED_KEYS[command]:
        with pytest.raises(ConfigError, match="set by the pipeline"):
            build_config(raw)
        return
    if name in SHARED_KEYS[command]:
        with pytest.raises(ConfigError, match="set it once as"):
            build_config(raw)
        table_name, key = SHARED_KEYS[command][name].strip("[").split("] ")
        assert key in {"data": DATA_KEYS, "run": RUN_KEYS}[table_name]
        return
    base = TABLE_BASE.get(table, {})
    cli_default = cli_config(config_class, _cli_params(command, CLI_BASE.get(table, [])))
    toml_default = _stage_config(table, dict(base))
    assert getattr(cli_default, name) == getattr(config_class(**base), name)
    if (table, name) == ("correlate", "metric"):  # the pipeline correlates its scoring methods (+ the shipped ones)
        assert toml_default.metric == ("dsa-cqe",)
    elif (table, name) in PIPELINE_DEFAULTS:
        assert getattr(toml_default, name) == PIPELINE_DEFAULTS[table, name], (table, name)
    else:
        assert getattr(toml_default, name) == getattr(cli_default, name), (table, name)

    value = VALUES.get(name, _other_value(item))
    companions = COMPANIONS.get(name, {})
    toml = _stage_config(table, {**base, **companions, name: value})
    extra = [arg for key, one in companions.items() for arg in _cli_args(config_class.options()[key], one)]
    cli = cli_config(config_class, _cli_params(command, [*CLI_BASE.get(table, []), *extra, *_cli_args(item, value)]))
    expected = item.coerce(value)
    if table == "correlate" and name == "metric":
        # [correlate] metric names the shipped columns, correlated after the scoring methods
        assert toml.metric[-len(expected):] == expected and cli.metric == expected
    elif (table, name) == ("score", "carry"):  # the code column is carried after the ones named
        assert toml.carry == (*expected, "completion") and cli.carry == expected
    else:
        assert getattr(toml, name) == getattr(cli, name) == expected, (table, name)


def test_a_stage_command_line_rebuilds_its_config() -> None:
    """``run.json`` records each stage's command line: parsed by that command, it gives the
    config the stage ran with."""
    config = load_config(REPO / "configs" / "humaneval.toml")
    columns = COLUMNS | {"completion_multipl_e", "passed", "codebleu", "codebertscore_f1", "codebertscore_f3",
                         "gpt35_nswr", "gpt35_nsnr"}
    plans = [plan for plan in plan_stages(config, columns) if plan.command and not plan.skip_reason]
    assert {plan.name for plan in plans} >= {"decontaminate", "dedup", "execute", "score", "score_all", "correlate"}
    for plan in plans:
        click_command = _click_command(plan.command)
        with click_command.make_context(plan.command, list(plan.argv)) as ctx:
            parsed = cli_config(COMMAND_CONFIGS[plan.command], ctx.params)
        assert parsed == plan.config(), plan.name


@pytest.mark.parametrize("table, name", TABLE_KEYS)
def test_a_typo_in_any_table_key_fails_when_the_config_is_read(tmp_path: Path, table: str, name: str) -> None:
    typo = name[:-1] if len(name) > 3 else name + "x"
    path = tmp_path / "typo.toml"
    path.write_text(f'[data]\nsource = "humaneval-codex-python"\n[{table}]\n{typo} = 1\n')
    with pytest.raises(ConfigError, match=rf"\[{table}\] has no key '{typo}'"):
        load_config(path)


CHOICE_KEYS = [(table, name) for table, name in TABLE_KEYS
               if COMMAND_CONFIGS[SECTION_COMMANDS[table]].options()[name].choices()
               and name not in SHARED_KEYS[SECTION_COMMANDS[table]]]


def test_the_choice_options_include_the_ones_users_mistype() -> None:
    named = {name for _, name in CHOICE_KEYS}
    assert {"isolation", "mode", "cache", "structured", "method", "select", "keep", "cross_set", "output_format"} <= named


@pytest.mark.parametrize("table, name", CHOICE_KEYS)
def test_a_typo_in_any_choice_fails_before_any_stage_runs(tmp_path: Path, table: str, name: str) -> None:
    item = COMMAND_CONFIGS[SECTION_COMMANDS[table]].options()[name]
    typo = "x" + (item.choices() or ("",))[0]
    value = f'["{typo}"]' if item.multiple else f'"{typo}"'
    path = tmp_path / "typo.toml"
    path.write_text(f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\n'
                    f'code_column = "completion_multipl_e"\n[{table}]\n{name} = {value}\n')
    with pytest.raises(ConfigError, match=rf"\[{table}\] {name} must be one of .*not '{typo}'"):
        run_pipeline(load_config(path))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("tables, message", [
    ('[score]\nmethod = ["ice-score"]\n', r"stage score: \[score\] model is required by an LLM method"),
    ("[dedup]\nlsh_bands = 4\n", r"stage dedup: give both \[dedup\] lsh_bands and \[dedup\] lsh_rows"),
    ('[execute]\nresume = true\n', r"\[execute\] resume: set by the pipeline"),
])
def test_a_rule_between_fields_fails_in_the_preflight(tmp_path: Path, tables: str, message: str) -> None:
    """The rules the config classes check between fields apply to ``workbench run`` too: the
    preflight builds every stage's config before the first stage starts."""
    path = tmp_path / "rule.toml"
    path.write_text(f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\n'
                    f'code_column = "completion_multipl_e"\n{tables}')
    with pytest.raises(ConfigError, match=message):
        run_pipeline(load_config(path))
    assert not (tmp_path / "run").exists()


def test_a_config_refuses_bad_values_naming_the_field_and_the_cli_names_the_flag() -> None:
    from typer.testing import CliRunner

    from workbench.execute import ExecutionConfig

    with pytest.raises(OptionError, match="isolation must be one of auto, .*not 'bubblewarp' "
                                          r"\(did you mean 'bubblewrap'\?\)"):
        ExecutionConfig(isolation="bubblewarp")
    result = CliRunner().invoke(app, ["execute", "gen.jsonl", "-o", "out.jsonl", "--isolation", "bubblewarp"])
    assert result.exit_code == 2 and "--isolation must be one of" in result.output


def test_recorded_options_are_read_from_the_declaration() -> None:
    from dataclasses import dataclass

    from workbench.options import JobConfig, option

    @dataclass(frozen=True)
    class Toy(JobConfig):
        mode: str = option("expected", "How the score is read.", choices=("expected", "sampled"), recorded=True)
        folders: tuple[Path, ...] = option((), "Folders.")

    assert Toy.options()["mode"].declared.recorded and not Toy.options()["folders"].declared.recorded
    assert Toy(folders=["a", Path("b")]).recorded_value("folders") == ["a", "b"]


def test_job_configs_are_frozen_and_their_fields_all_declared() -> None:
    for config_class in COMMAND_CONFIGS.values():
        assert config_class.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert len(config_class.options()) == len(dataclasses.fields(config_class))
        assert all(item.help for item in config_class.options().values())
        assert all(flag_of(name) == item.flag for name, item in config_class.options().items())


def test_the_library_never_imports_the_command_line() -> None:
    package = REPO / "workbench"
    offenders = []
    for path in package.rglob("*.py"):
        relative = path.relative_to(package)
        if relative.parts[0] == "cli" or relative.name == "__main__.py":
            continue
        if relative.as_posix() == "languages/conformance/commands.py":
            # the conformance kit's end-to-end helpers run the command line for plugin tests, as a user types it;
            # (they import workbench.cli inside their functions, only when a plugin test calls them)
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{relative}: {name}" for name in names if name == "workbench.cli" or name.startswith("workbench.cli.")]
    assert offenders == []


def test_the_public_api_is_exported_from_the_package() -> None:
    import workbench

    for name in workbench.__all__:
        assert getattr(workbench, name) is not None, name
    assert {"DedupConfig", "run_dedup", "ExecutionConfig", "run_execute", "ScoreConfig", "run_score",
            "CorrelateConfig", "run_correlate", "write_report", "run_pipeline", "load_config"} <= set(workbench.__all__)
    for name in ("run_dedup", "run_execute", "run_score", "run_correlate", "write_report", "run_pipeline"):
        assert "Example" in (getattr(workbench, name).__doc__ or ""), name


def test_the_config_examples_run() -> None:
    """The docstring examples of the config classes, of :mod:`workbench.options` and of
    :mod:`workbench.resume_guard` (doctest)."""
    import doctest

    import workbench.dedup.config
    import workbench.execute.config
    import workbench.options
    import workbench.resume_guard
    import workbench.score.config
    import workbench.correlate.config

    for module in (workbench.options, workbench.dedup.config, workbench.execute.config, workbench.score.config,
                   workbench.correlate.config, workbench.resume_guard):
        failed, tried = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert tried > 0 and failed == 0, module.__name__
