"""`workbench run` configuration: overrides, planning, and bad configs failing with a message
before any stage runs (that every job option is a config key: tests/test_job_options.py).
No LLM is involved in this module."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.errors import LanguageNotFoundError, MissingColumnError, WorkbenchError
from workbench.run.config import ConfigError, build_config, load_config, parse_override
from workbench.run.preflight import run_preflight
from workbench.run.stages import plan_stages

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CONFIG = REPO / "configs" / "humaneval.toml"


def test_unknown_keys_and_tables_are_refused_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match=r"did you mean 'min_tokens'"):
        build_config({"data": {"source": "humaneval"}, "dedup": {"min_token": 3}})
    with pytest.raises(ConfigError, match=r"unknown table \[scores\].*did you mean 'score'"):
        build_config({"data": {"source": "humaneval"}, "scores": {}})
    with pytest.raises(ConfigError, match="set by the pipeline"):
        build_config({"data": {"source": "humaneval"}, "score": {"output": "elsewhere"}})
    with pytest.raises(ConfigError, match="source is required"):
        build_config({"data": {}})
    with pytest.raises(ConfigError, match="unknown stage 'scoring'"):
        build_config({"data": {"source": "humaneval"}, "run": {"stages": ["scoring"]}})


def test_an_unknown_stage_key_names_its_closest_keys_and_where_the_list_is() -> None:
    """``--set score.limt=3`` printed all ~43 keys of [score]: the message now names the closest
    keys and points at the command's --help, which lists them all, in one line."""
    with pytest.raises(ConfigError) as caught:
        load_config(DEFAULT_CONFIG, overrides=["score.limt=3"])
    message = str(caught.value)
    assert message.startswith("[score] has no key 'limt' (did you mean 'limit'")
    assert "workbench score --help" in message and "\n" not in message
    assert "analyse_first" not in message and "prefix_reuse" not in message  # not the whole list
    with pytest.raises(ConfigError) as caught:  # nothing close: only the pointer
        build_config({"data": {"source": "humaneval"}, "decontaminate": {"zzz": 1}})
    assert str(caught.value) == ("[decontaminate] has no key 'zzz'; its keys are the options in "
                                 "`workbench dedup --help`, with _ for - (docs/run.md)")
    with pytest.raises(ConfigError, match=r"\[data\] has no key 'sorce' \(did you mean 'source'\?\); "
                                          r"keys of \[data\]: code_column, "):  # a short table still lists its keys
        build_config({"data": {"source": "humaneval", "sorce": "x"}})


def test_overrides_apply_after_the_file_and_parse_toml_values() -> None:
    assert parse_override("score.limit=20") == ("score", "limit", 20)
    assert parse_override("score.model=local/smollm2-135m") == ("score", "model", "local/smollm2-135m")
    assert parse_override('score.method=["chrf"]') == ("score", "method", ["chrf"])
    config = load_config(DEFAULT_CONFIG, overrides=["score.limit=20", "run.output=\"elsewhere\""])
    assert config.sections["score"]["limit"] == 20
    assert config.output == Path("elsewhere")
    with pytest.raises(ConfigError, match="TABLE.KEY=VALUE"):
        parse_override("limit")


def test_an_override_without_a_dot_says_what_it_lacks() -> None:
    """``--set score=1`` names a whole table (it was told "e.g. score.score"), ``--set limit=20`` a key
    without its table: each message names real keys."""
    with pytest.raises(ConfigError) as caught:
        parse_override("score=1")
    message = str(caught.value)
    assert "score is a whole table; set one key inside it, score.KEY=VALUE, e.g. score.method or score.model" in message
    # where the ~40 keys are, not all of them (fix33)
    assert message.endswith("(its keys are the options in `workbench score --help`, with _ for - (docs/run.md))")
    assert "score.score" not in message and "workers" not in message
    with pytest.raises(ConfigError, match=r"\(keys of \[run\]: output, stages, offline, retry_failed\)$"):
        parse_override("run=1")  # a short table lists its keys
    with pytest.raises(ConfigError, match=r"data is a whole table.*e\.g\. data\.source or data\.split"):
        parse_override("data=1")
    with pytest.raises(ConfigError, match=r"the key needs its table: execute\.limit or score\.limit$"):
        parse_override("limit=20")
    with pytest.raises(ConfigError, match=r"the key needs its table: data\.language$"):  # not a stage's own key
        parse_override("language=python")
    with pytest.raises(ConfigError, match=r"\(did you mean 'score'\?\); tables: run, data"):
        parse_override("scor=1")


def test_default_config_plans_every_stage_with_the_bundled_data() -> None:
    config = load_config(DEFAULT_CONFIG)
    preflight = run_preflight(config)
    assert preflight.rows == 3220
    plans = {plan.name: plan for plan in plan_stages(config, preflight.columns)}
    assert all(plan.skip_reason is None for plan in plans.values())
    score = plans["score"].argv
    assert score[score.index("--limit") + 1] == str(config.sections["score"]["limit"])
    assert "--method" in plans["score_all"].argv and "--limit" not in plans["score_all"].argv
    assert plans["score_all"].argv[plans["score_all"].argv.index("--method") + 1] == "chrf"
    # shipped metrics are carried into the scored tables and correlated
    assert "codebleu" in plans["correlate"].argv and "--results" in plans["correlate"].argv


def test_stage_files_come_from_the_run_layout_and_are_recorded_in_run_json(tmp_path: Path) -> None:
    """The pipeline builds every stage's files from RunLayout (the report's table too) and
    run.json's plan names them, relative to the run folder."""
    from workbench.run.manifest import Manifest
    from workbench.run_layout import STAGE_OUTPUTS, STAGE_PARTIAL, RunLayout

    config = load_config(DEFAULT_CONFIG, overrides=[f"run.output={str(tmp_path / 'run')!r}"])
    plans = plan_stages(config, run_preflight(config).columns)
    layout = RunLayout(config.output)
    assert {p.name: p.outputs for p in plans} == {name: layout.outputs(name) for name in STAGE_OUTPUTS}
    assert {p.name: p.partial for p in plans if p.partial} == {name: layout.partial(name) for name in STAGE_PARTIAL}
    assert str(layout / RunLayout.EXECUTE_RESULTS) in next(p for p in plans if p.name == "execute").argv
    manifest = Manifest(config.output, config)
    manifest.record_plan(plans)
    manifest.save()
    recorded = json.loads((config.output / "run.json").read_text())["plan"]
    assert recorded["score"] == {"outputs": ["score/llm/scores_wide.jsonl"], "partial": ["score/llm/scores.jsonl"]}
    assert {name: tuple(entry["outputs"]) for name, entry in recorded.items()} == STAGE_OUTPUTS
    assert [p.name for p in (config.output).iterdir()] == ["run.json"]  # no temporary file left


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pipeline.toml"
    path.write_text(text)
    return path


def test_missing_column_fails_before_any_stage(tmp_path: Path) -> None:
    from workbench.run import run_pipeline

    path = _write(tmp_path, f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\n'
                            'code_column = "completion_multipl_e"\nreference_column = "solution"\n')
    with pytest.raises(MissingColumnError, match="'solution'.*reference_column"):
        run_pipeline(load_config(path))
    assert not (tmp_path / "run").exists()


def test_language_without_plugin_fails_before_any_stage(tmp_path: Path) -> None:
    from workbench.run import run_pipeline

    path = _write(tmp_path, f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\n'
                            'language = "cobol"\ncode_column = "completion_multipl_e"\n')
    with pytest.raises(LanguageNotFoundError, match="cobol"):
        run_pipeline(load_config(path))
    assert not (tmp_path / "run").exists()


def test_offline_hub_id_fails_before_any_stage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.run import run_pipeline

    # the hub is unreachable in this test whatever the machine's network: a closed local port
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    path = _write(tmp_path, f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "someone/code-dataset"\n')
    with pytest.raises(WorkbenchError, match="someone/code-dataset"):
        run_pipeline(load_config(path))
    assert not (tmp_path / "run").exists()


def test_run_offline_reaches_every_stage_that_loads_data() -> None:
    """``[run] offline`` reached the dedup stage (and correlate, bias) only: execute and score asked the hub."""
    config = load_config(DEFAULT_CONFIG, overrides=["run.offline=true"])
    plans = {plan.name: plan for plan in plan_stages(config, run_preflight(config).columns)}
    for name in ("dedup", "execute", "score", "score_all"):  # the stages that read [data] source
        assert "--offline" in plans[name].argv, name
    plain = {plan.name: plan for plan in plan_stages(load_config(DEFAULT_CONFIG), run_preflight(config).columns)}
    assert not any("--offline" in plan.argv for plan in plain.values() if plan.command)


def test_score_no_prompt_in_a_config_with_a_data_prompt_column_still_runs() -> None:
    """``workbench score`` refuses ``--no-prompt`` with ``--prompt-column`` (fix33 item 3); in the
    pipeline ``[data] prompt_column`` is shared (the preset sets it), so ``[score] no_prompt``
    leaves it out of the score stages' command lines instead of failing the preflight."""
    config = load_config(DEFAULT_CONFIG, overrides=["score.no_prompt=true"])
    assert config.data["prompt_column"] == "prompt"
    plans = {plan.name: plan for plan in plan_stages(config, run_preflight(config).columns)}
    for name in ("score", "score_all"):
        assert "--no-prompt" in plans[name].argv and "--prompt-column" not in plans[name].argv, plans[name].argv
        assert plans[name].config().prompt_column is None and plans[name].config().no_prompt


def test_unknown_method_and_missing_model_fail_before_any_stage(tmp_path: Path) -> None:
    from workbench.run import run_pipeline

    base = f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n'
    with pytest.raises(ConfigError, match=r"\[score\] method must be one of .*, not 'bleurt'"):
        run_pipeline(load_config(_write(tmp_path, base + '[score]\nmethod = ["bleurt"]\n')))
    with pytest.raises(ConfigError, match="model is required"):
        run_pipeline(load_config(_write(tmp_path, base + '[score]\nmethod = ["ice-score"]\n')))
    with pytest.raises(WorkbenchError, match="no-such-model"):
        run_pipeline(load_config(_write(tmp_path, base + '[score]\nmethod = ["ice-score"]\nmodel = "local/no-such-model"\n')))
    assert not (tmp_path / "run").exists()


def test_a_shipped_metric_named_like_a_scoring_method_fails_before_any_stage(tmp_path: Path) -> None:
    """No LLM (chrF only). The bundled file has a ``chrf`` column; carried into the score tables
    it would clash with our chrF method's column, so the score stage would refuse it after
    dedup and execute had run. The preflight says so first."""
    from workbench.run import run_pipeline

    base = f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n'
    with pytest.raises(ConfigError, match=r"\[correlate\] metric 'chrf'.*\[score\] method"):
        run_pipeline(load_config(_write(tmp_path, base + '[score]\nmethod = ["chrf"]\n[correlate]\nmetric = ["chrf", "codebleu"]\n')))
    assert not (tmp_path / "run").exists()


def test_a_bad_combination_or_baseline_fails_before_any_stage(tmp_path: Path) -> None:
    from workbench.run import run_pipeline

    base = (f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\n'
            'code_column = "completion_multipl_e"\n[score]\nmethod = ["chrf"]\n[correlate]\nmetric = ["codebleu"]\n')
    with pytest.raises(ConfigError, match=r"\[correlate\] combine: .*needs at least two metrics"):
        run_pipeline(load_config(_write(tmp_path, base + 'combine = ["x=rank-mean:chrf"]\n')))
    with pytest.raises(ConfigError, match=r"\['bleurt'\] is neither a \[score\] method nor a \[correlate\] metric"):
        run_pipeline(load_config(_write(tmp_path, base + 'combine = ["x=rank-mean:chrf,bleurt"]\n')))
    with pytest.raises(ConfigError, match=r"\[correlate\] baseline 'bleu': \['bleu'\] is neither.*"
                                          r"drop the declarations with --set 'correlate.baseline=\[\]'"):
        run_pipeline(load_config(_write(tmp_path, base + 'baseline = ["bleu"]\n')))
    assert not (tmp_path / "run").exists()


def test_a_combination_of_an_unscored_method_is_left_out_with_a_note(tmp_path: Path) -> None:
    """The preset's ``p-correct+codebleu`` after ``--set 'score.method=["chrf"]'``: a note, not
    an error; the correlate stages get no combination; a typo of a member stays an error that
    says how to drop the declarations."""
    chrf_only = ['score.method=["chrf"]', f'run.output="{tmp_path / "run"}"']
    config = load_config(DEFAULT_CONFIG, overrides=chrf_only)
    preflight = run_preflight(config)
    assert ("[correlate] combine 'p-correct+codebleu=rank-mean:p-correct,codebleu' is left out: p-correct is not in "
            "[score] method (chrf); add it there to correlate it, or drop the declarations with "
            "--set 'correlate.combine=[]'") in preflight.notes
    plans = {plan.name: plan for plan in preflight.plans}
    assert plans["correlate_all"].values.get("combine") is None and plans["correlate"].skip_reason
    assert "--combine" not in plans["correlate_all"].command_line()
    typo = load_config(DEFAULT_CONFIG, overrides=[*chrf_only, 'correlate.combine=["j=rank-mean:p-corect,codebleu"]'])
    with pytest.raises(ConfigError, match=r"\['p-corect'\] is neither .*--set 'correlate.combine=\[\]'"):
        run_preflight(typo)


def test_stop_is_set_once_in_data_for_execute_and_score(tmp_path: Path) -> None:
    """Issue 12, item 8: the judge scores the generation as it was executed."""
    config = load_config(DEFAULT_CONFIG, overrides=['data.stop="humaneval"'])
    assert config.data["stop"] == ["humaneval"]
    plans = {plan.name: plan for plan in plan_stages(config, run_preflight(config).columns)}
    for name in ("execute", "score", "score_all"):
        argv = plans[name].argv
        assert argv[argv.index("--stop") + 1] == "humaneval", name
        assert plans[name].config().stop_sequences == ("\ndef ", "\nclass ", "\nif ", "\nprint(", "\n#", "\nassert ")
    assert "--stop" not in plans["dedup"].argv
    # a list of sequences, as TOML writes a newline
    config = build_config({"data": {"source": "humaneval", "stop": ["\ndef ", "\n```"]}})
    assert config.data["stop"] == ["\ndef ", "\n```"]
    with pytest.raises(ConfigError, match=r"\[execute\] stop: set it once as \[data\] stop"):
        build_config({"data": {"source": "humaneval"}, "execute": {"stop": "humaneval"}})
    with pytest.raises(ConfigError, match=r"\[score\] stop: set it once as \[data\] stop"):
        build_config({"data": {"source": "humaneval"}, "score": {"stop": "humaneval"}})
    with pytest.raises(ConfigError, match=r"\[data\] stop takes a list of values"):
        build_config({"data": {"source": "humaneval", "stop": [["\ndef "]]}})
    # an empty stop sequence fails before any stage, named as the config names it
    from workbench.run import run_pipeline

    bad = build_config({"data": {"source": "humaneval-codex-python", "code_column": "completion_multipl_e", "stop": ""},
                        "run": {"output": str(tmp_path / "run")}, "score": {"method": ["chrf"]}})
    with pytest.raises(ConfigError, match=r"\[data\] stop must not be empty"):
        run_pipeline(bad)
    assert not (tmp_path / "run").exists()


def test_own_generations_are_stratified_on_the_runs_execution(tmp_path: Path) -> None:
    """A generations file with a task id and a completion only (no label, no prompt, no reference):
    the score stage takes the prompt and reference from ``[score] problems`` and its stratified
    subset from the execute stage's results."""
    from workbench.data.loading import load_humaneval

    rows = [{"task_id": p["task_id"], "completion": p["canonical_solution"]} for p in load_humaneval().select(range(3))]
    (tmp_path / "gens.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    text = (f'[data]\nsource = {str(tmp_path / "gens.jsonl")!r}\ncode_column = "completion"\n'
            f'[score]\nmethod = ["chrf", "p-correct"]\nmodel = "local/smollm2-135m"\nproblems = "humaneval"\n'
            f'select = "stratified"\nlimit = 4\n[run]\noutput = {str(tmp_path / "run")!r}\n')
    config = load_config(_write(tmp_path, text))
    plans = {plan.name: plan for plan in plan_stages(config, run_preflight(config).columns)}
    score = plans["score"]
    assert score.after == ["execute"]
    assert score.argv[score.argv.index("--results") + 1] == str(tmp_path / "run" / "execute" / "results.jsonl")
    assert "--results" not in plans["score_all"].argv  # every row: nothing to select
    # dedup and bias key the rows by (task, numbered sample), as execute and score do: bias runs
    assert plans["bias"].skip_reason is None
    for name in ("dedup", "bias"):
        assert plans[name].argv[plans[name].argv.index("--id-column") + 1] == "task_id,sample_id", name
    # results the user names are used as they are: the preflight does not ask the data for the label
    named = load_config(_write(tmp_path, text + 'stages = ["score"]\n').parent / "pipeline.toml",
                        overrides=[f"score.results={str(tmp_path / 'mine.jsonl')!r}"])
    assert {plan.name: plan for plan in plan_stages(named, run_preflight(named).columns)}["score"].skip_reason is None
    # without the execute stage the label must be in the data, as before
    no_execute = load_config(_write(tmp_path, text + 'stages = ["score"]\n'))
    with pytest.raises(MissingColumnError, match="stratify_column"):
        run_preflight(no_execute)
    # a reference column named on purpose must exist even with [score] problems (probe23: a typo was
    # silently replaced by HumanEval's canonical solutions)
    typo = load_config(_write(tmp_path, text.replace('code_column = "completion"\n',
                                                     'code_column = "completion"\nreference_column = "ref"\n')))
    with pytest.raises(MissingColumnError, match=r"column 'ref' not found \(set it with \[data\] reference_column\)"):
        run_preflight(typo)


def test_options_that_cannot_change_outputs_are_not_in_the_stage_key(tmp_path: Path) -> None:
    """probe23: another [execute] workers made the execute stage (and all after it) stale, so every
    sample ran again. The workers, caches and failure budgets are left out of the key; an option
    that changes verdicts (the timeout factor) is not."""
    from workbench.run.manifest import _stage_key

    text = (f'[run]\noutput = "{tmp_path / "run"}"\n[data]\nsource = "humaneval-codex-python"\n'
            'code_column = "completion_multipl_e"\n[score]\nmethod = ["chrf"]\n')

    def keys(*overrides: str) -> dict[str, str]:
        config = load_config(_write(tmp_path, text), overrides=list(overrides))
        return {plan.name: _stage_key(plan, {}) for plan in plan_stages(config, run_preflight(config).columns)
                if plan.command is not None}

    base = keys()
    assert keys("execute.workers=3", "execute.max_failures=5", "execute.reuse_interpreters=false",
                "dedup.workers=1") == base
    changed = keys("execute.timeout_factor=6")
    assert changed["execute"] != base["execute"] and changed["dedup"] == base["dedup"]
    # the command recorded and shown keeps every option
    config = load_config(_write(tmp_path, text), overrides=["execute.workers=3"])
    [execute] = [plan for plan in plan_stages(config, run_preflight(config).columns) if plan.name == "execute"]
    assert "--workers" in execute.argv and "--workers" not in execute.key_argv()


@pytest.mark.parametrize(("overrides", "undo"), [
    ([], "set [score] reference = true"),
    (["score.reference=true", "score.analyse_first=true"], "set [score] analyse_first = false"),
    (["score.reference=true", "score.final_step=p-correct"], 'set [score] final_step = "score"'),
])
def test_a_judge_option_no_method_reads_is_refused_with_the_config_key_to_undo_it(
        overrides: list[str], undo: str) -> None:
    """fix33 leftover 3: on the shipped preset (``reference = false``), ``--set 'score.method=[...]'``
    without p-correct was refused with "... or drop the option", which says nothing in config
    terms: the message names the key and the value that turns the option off (`workbench score`
    keeps "drop the option": tests/score/test_cli.py). No stage runs (--dry-run)."""
    from typer.testing import CliRunner

    from workbench.cli import app

    args = ["run", str(DEFAULT_CONFIG), "--dry-run", "--set", 'score.method=["ice-score","chrf"]']
    for override in overrides:
        args += ["--set", override]
    result = CliRunner().invoke(app, args, terminal_width=300)
    text = " ".join(result.output.split())
    assert result.exit_code != 0 and "stage score: [score] " in text, text
    assert f"add p-correct to [score] method or {undo}" in text or f"to [score] method or {undo}" in text, text
    assert "drop the option" not in text and "(--no-reference)" not in text, text


@pytest.mark.parametrize(("options", "drop"), [
    (["--no-reference"], "add p-correct to --method/-m or drop --no-reference (ice-score"),
    (["--analyse-first"], "add p-correct to --method/-m or drop --analyse-first"),
    (["--final-step", "p-correct"], "add one of them to --method/-m or drop --final-step p-correct"),
])
def test_workbench_score_says_which_flag_to_drop(tmp_path: Path, options: list[str], drop: str) -> None:
    """The command-line words of the same refusals (fix33 leftover 3): drop the flag, named (it said
    "drop the option"), and no config key. Real ``workbench score`` through the Typer app; it
    refuses before any row is read."""
    from typer.testing import CliRunner

    from workbench.cli import app

    data = tmp_path / "gens.jsonl"
    data.write_text('{"task_id": "t", "completion": "pass", "reference": "pass"}\n')
    result = CliRunner().invoke(app, ["score", str(data), "-m", "ice-score", "-m", "chrf", "--model", "gpt-4o-mini",
                                      *options, "-o", str(tmp_path / "out")], terminal_width=400)
    text = " ".join(result.output.replace("│", " ").split())  # the error box's lines joined
    assert result.exit_code == 2, result.output
    assert drop in text, text
    assert "[score]" not in text and " = " not in text, text


@pytest.mark.parametrize(("language", "rows"), [("java", 3219), ("cpp", 3220)])
def test_the_java_and_cpp_configs_plan_every_stage_on_the_bundled_data_from_any_folder(
        language: str, rows: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/humaneval-java.toml (javauser35: no shipped config ran the pipeline on Java) and
    configs/humaneval-cpp.toml name the bundled sets (humaneval-codex-java, humaneval-java, ...): planned
    from a folder with no ../shared/data beside it (bundle36: the Java config's paths were that folder, so
    a pip-installed workbench could not run it)."""
    monkeypatch.chdir(tmp_path)
    config = load_config(REPO / "configs" / f"humaneval-{language}.toml")
    preflight = run_preflight(config)
    assert preflight.rows == rows  # 161 tasks x 20; Java's HumanEval/148 has 19 samples
    plans = {plan.name: plan for plan in plan_stages(config, preflight.columns)}
    assert all(plan.skip_reason is None for plan in plans.values())
    execute = plans["execute"].argv
    assert execute[execute.index("--language") + 1] == language
    assert execute[execute.index("--test-column") + 1] == "tests"
    assert execute[execute.index("--problems") + 1] == f"humaneval-{language}"
    decontaminate = plans["decontaminate"].argv
    assert decontaminate[decontaminate.index("--against") + 1] == f"humaneval-codex-{language}"
    assert decontaminate[decontaminate.index("--against-id-column") + 1] == "task_id,sample_id"
    assert decontaminate[decontaminate.index("--against-code-column") + 1] == "reference"
    score = plans["score"].argv
    assert score[0] == f"humaneval-codex-{language}"
    assert "--no-reference" in score and score[score.index("--generation-column") + 1] == "generation"
    assert "codebleu" in plans["correlate_all"].argv and "--results" in plans["correlate_all"].argv


def test_the_conala_config_plans_the_human_graded_study_on_the_bundled_data_from_any_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/conala.toml: Evtikhiev et al.'s human-graded CoNaLa set (bundled, 472 intents x 5 models)
    planned from a folder with no shared data beside it: dedup within each intent, chrF against every
    reference snippet (the list column), the grade declared once ([data] label_kind) reaching both
    stages that read it, no execute and no LLM stage."""
    monkeypatch.chdir(tmp_path)
    config = load_config(REPO / "configs" / "conala.toml")
    preflight = run_preflight(config)
    assert preflight.rows == 2360
    plans = {plan.name: plan for plan in plan_stages(config, preflight.columns)}
    ran = {name for name, plan in plans.items() if plan.skip_reason is None}
    assert ran == {"dedup", "score_all", "correlate_all", "bias", "report"}, {n: p.skip_reason for n, p in plans.items()}
    dedup = plans["dedup"].argv
    assert dedup[dedup.index("--group-column") + 1] == "task_id" and dedup[dedup.index("--min-tokens") + 1] == "5"
    score = plans["score_all"].argv
    assert score[0] == "conala-all-grades" and score[score.index("--reference-column") + 1] == "references"
    assert score[score.index("--method") + 1] == "chrf" and "--carry" in score
    for name in ("correlate_all", "bias"):
        argv = plans[name].argv
        assert argv[argv.index("--label") + 1] == "grade", name
        assert argv[argv.index("--label-kind") + 1] == "graded", name
        assert "--results" not in argv, name
    assert plans["correlate_all"].argv[plans["correlate_all"].argv.index("--baseline") + 1] == "bleu"
