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
from ice_score_slice import write_config, write_generations

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
    data = write_generations(tmp_path / "gens.jsonl")  # 12 rows
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
    # the results the run gave the stage are named as the score and bias stages name them
    assert f"have a result in the execute stage's results {tmp_path / 'run' / 'execute' / 'results.jsonl'}" in message, message

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
    data = write_generations(tmp_path / "gens.jsonl")
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
    small = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
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

    data = write_generations(tmp_path / "gens.jsonl")
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


def _keep_results(results: dict):
    """A ``run_stage`` for :func:`run_pipeline` that keeps each stage's job result (its notes)."""
    def run_stage(plan, call):
        results[plan.name] = call()
        return results[plan.name]
    return run_stage


def test_dedup_notes_name_the_config_keys(tmp_path: Path) -> None:
    """A ``split`` column of two values and ``[dedup] set_threshold = 0.5`` (the LSH tuned for 0.6):
    the dedup stage's notes said "pass --split-column split" and "the set-Jaccard threshold --t0
    0.5 ... Tune the LSH below --t0 (--lsh-threshold ...) or set the bands directly
    (--lsh-bands/--lsh-rows)"."""
    data = write_generations(tmp_path / "gens.jsonl")
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    data.write_text("".join(json.dumps({**r, "split": "train" if n % 2 else "test"}) + "\n" for n, r in enumerate(rows)))
    config_path = _config(tmp_path, data, ["dedup"])
    config_path.write_text(config_path.read_text().replace('group_column = "task_id"',
                                                           'group_column = "task_id"\nset_threshold = 0.5'))
    results: dict = {}
    outcome = run_pipeline(load_config(config_path), run_stage=_keep_results(results))
    assert _outcomes(outcome)["dedup"][0] == "ran", _outcomes(outcome)
    notes = " ".join(results["dedup"].notes)
    assert "set [dedup] split_column = \"split\" (--set dedup.split_column=split) to use them as splits" in notes, notes
    assert "the set-Jaccard threshold [dedup] set_threshold = 0.5 with probability" in notes, notes
    assert ("Tune the LSH below [dedup] set_threshold ([dedup] lsh_threshold, e.g. 0.30) or set the bands directly "
            "([dedup] lsh_bands/[dedup] lsh_rows)") in notes, notes
    assert not any(flag in notes for flag in ("--split-column", "--t0", "--lsh", "pass ")), notes


def test_the_decontaminate_length_note_names_the_config_keys(tmp_path: Path) -> None:
    """Completions (function bodies) against HumanEval's prompt + solution: the note said "compare like
    with like: --against-code-column canonical_solution (the bodies), or --code-column
    prompt,COMPLETION"."""
    data = write_generations(tmp_path / "gens.jsonl")
    config_path = _config(tmp_path, data, ["decontaminate"])
    config_path.write_text(config_path.read_text() + '[decontaminate]\nagainst = "humaneval"\nmin_tokens = 5\n')
    outcome = run_pipeline(load_config(config_path))
    assert _outcomes(outcome)["decontaminate"][0] == "ran", _outcomes(outcome)
    report = json.loads((tmp_path / "run" / "decontaminate" / "report.json").read_text())
    note = report["contamination"]["length_note"]
    assert "the median reference row" in note, note
    assert ('compare like with like: [decontaminate] against_code_column = "canonical_solution" (the bodies), or '
            '[data] code_column = "prompt,COMPLETION" (whole programs)') in note, note
    assert "--" not in note, note


def test_execute_notes_name_the_config_keys(tmp_path: Path) -> None:
    """Completions that begin with HumanEval's prompt (whole programs): the execute stage's note said
    "pass --mode full to run each completion as the whole program"."""
    from workbench.data import load_records

    problems = {r["task_id"]: r["prompt"] for r in load_records("humaneval").one_split("split")}
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    data.write_text("".join(json.dumps({**r, "completion_multipl_e": problems[r["task_id"]] + r["completion_multipl_e"]})
                            + "\n" for r in rows))
    results: dict = {}
    outcome = run_pipeline(load_config(_config(tmp_path, data, ["execute"])), run_stage=_keep_results(results))
    assert _outcomes(outcome)["execute"][0] == "ran", _outcomes(outcome)
    notes = " ".join(results["execute"].notes)
    assert ('which [execute] mode = "completion" puts after the prompt' in notes
            and 'set [execute] mode = "full" (--set execute.mode=full) to run each completion as the whole program'
            in notes), notes
    assert "--mode" not in notes, notes


def test_correlate_length_note_names_the_config_key(tmp_path: Path) -> None:
    """``[correlate] length_column = "none"``: the correlation said "switched off (--length-column none)"."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    outcome = run_pipeline(load_config(_config(tmp_path, data, ["score_all", "correlate_all"],
                                               correlate='length_column = "none"')))
    assert _outcomes(outcome)["correlate_all"][0] == "ran", _outcomes(outcome)
    text = (tmp_path / "run" / "correlate" / "all.json").read_text()
    assert 'no length analysis: switched off ([correlate] length_column = \\"none\\")' in text, text[:2000]


def test_a_weaker_isolation_is_warned_of_in_config_terms(tmp_path: Path) -> None:
    """``[execute] isolation = "namespaces"`` where bubblewrap works: the preflight's warning said
    "(--isolation namespaces) ... Use --isolation auto"."""
    from workbench.execute.isolation import IsolationLevel, detect_isolation
    from workbench.run.preflight import run_preflight

    if detect_isolation().level is not IsolationLevel.BUBBLEWRAP:
        pytest.skip("bubblewrap does not work here: no stronger level to name")
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    # an interpreter every user can run: the weaker level refuses one under /root
    execute = 'isolation = "namespaces"\npython = "/usr/bin/python3"'
    preflight = run_preflight(load_config(_config(tmp_path, data, ["execute"], execute=execute)))
    warning = next(n for n in preflight.warnings if "namespaces" in n)
    assert ("was chosen ([execute] isolation = \"namespaces\")" in warning
            and "Use [execute] isolation = \"auto\" (or bubblewrap)" in warning), warning


def test_bias_notes_on_short_rows_name_the_dedup_key(tmp_path: Path) -> None:
    """``[dedup] min_tokens = 500``: every row is too short; bias said "(--min-tokens)", an option
    of ``workbench dedup`` that the run sets as ``[dedup] min_tokens``."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    config_path = _config(tmp_path, data, ["dedup", "score_all", "bias"])
    config_path.write_text(config_path.read_text().replace('group_column = "task_id"',
                                                           'group_column = "task_id"\nmin_tokens = 500'))
    outcome = run_pipeline(load_config(config_path))
    assert _outcomes(outcome)["bias"][0] == "ran", _outcomes(outcome)
    text = (tmp_path / "run" / "bias" / "report.json").read_text()
    assert "6 of the 6 joined rows were too short to be compared as token bags ([dedup] min_tokens; 6 of the " \
           "dedup run's 6)" in text, text[:3000]
    assert "--min-tokens" not in text


def test_the_failure_limit_is_named_as_the_config_sets_it() -> None:
    """A stage's failures above its limit said "too many failures (...; --max-failures 0.1)"."""
    from workbench.failures import check_failures, parse_max_failures
    from workbench.option_words import config_words

    counts = {"samples": (5, 5, 10)}
    limit = parse_max_failures("0.1")
    assert check_failures(counts, limit).message.endswith("; --max-failures 0.1)")
    with config_words(lambda name: f"[execute] {name}"):
        assert check_failures(counts, limit).message.endswith("; [execute] max_failures 0.1)")


def _results_listing_a_sample_twice(tmp_path: Path, data: Path) -> Path:
    """Real execution results of ``data`` (``workbench run`` with the execute stage), with their
    first row written twice."""
    config_path = write_config(tmp_path / "exec.toml", tmp_path / "exec-run", data, ["execute"],
                               "[execute]\nworkers = 2\n")
    assert _outcomes(run_pipeline(load_config(config_path)))["execute"][0] == "ran"
    lines = (tmp_path / "exec-run" / "execute" / "results.jsonl").read_text().splitlines()
    twice = tmp_path / "twice.jsonl"
    twice.write_text("\n".join([lines[0], *lines]) + "\n")
    return twice


def test_score_results_messages_name_the_config_key_under_run_and_the_flag_in_workbench_score(tmp_path: Path) -> None:
    """A ``[score] results`` file listing a sample twice: the score_all stage of ``workbench run``
    said "--results PATH: it lists task ... twice", an option the run command does not take; it
    names ``[score] results``. ``workbench score --results`` keeps its flag. Real execution, real
    chrF through the Typer app of both commands."""
    from typer.testing import CliRunner

    from workbench.cli import app

    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    twice = _results_listing_a_sample_twice(tmp_path, data)
    config_path = _config(tmp_path, data, ["score_all"])
    config_path.write_text(config_path.read_text().replace('method = ["chrf"]',
                                                           f'method = ["chrf"]\nresults = "{twice}"'))
    ran = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"], terminal_width=400)
    said = _flat(ran.output)
    assert ran.exit_code == 1, ran.output
    assert f'[score] results = "{twice}": it lists task' in said, said
    assert f"--results {twice}:" not in said, said  # (the stage's recorded command line has its --results)

    scored = CliRunner().invoke(app, ["score", str(data), "-m", "chrf", "--results", str(twice), "-o",
                                      str(tmp_path / "score-out"), "--generation-column", "completion_multipl_e",
                                      "--no-progress"], terminal_width=400)
    said = _flat(scored.output)
    assert scored.exit_code == 1, scored.output
    assert f"--results {twice}: it lists task" in said, said
    assert "[score]" not in said, said


def test_limit_and_stop_notes_of_execute_and_score_name_the_config_keys(tmp_path: Path) -> None:
    """``[execute] limit = 9`` on 6 samples, a ``[data] stop`` sequence that
    cuts each generation: the notes said "--limit 9 is above the 6 samples" and "cut at a stop
    sequence (--stop)", flags the run command does not take. Real execution and chrF; the
    commands' own words are in tests/execute/test_job.py and tests/score."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    config_path = _config(tmp_path, data, ["execute", "score_all"], execute="limit = 9")
    config_path.write_text(config_path.read_text().replace('label_column = "passed"', 'label_column = "passed"\nstop = ["\\nif __name__"]'))
    results: dict = {}
    outcome = run_pipeline(load_config(config_path), run_stage=_keep_results(results))
    assert _outcomes(outcome)["execute"][0] == "ran", _outcomes(outcome)
    assert _outcomes(outcome)["score_all"][0] == "ran", _outcomes(outcome)
    executed = " ".join(results["execute"].notes)
    assert "[execute] limit = 9 is above the 6 samples in the input" in executed, executed
    assert "cut at a stop sequence ([data] stop)" in executed, executed
    scored = " ".join(results["score_all"].notes)
    assert "cut at a stop sequence ([data] stop) before scoring" in scored, scored
    assert "--stop" not in executed + scored and "--limit" not in executed + scored, executed + scored


@pytest.mark.parametrize("stages, bias, words", [
    (["execute", "dedup", "bias"], "", "the execute stage's label"),  # the run sets passed, from execute's results
    (["dedup", "bias"], "", "[data] label_column"),  # the run takes the data's label column
    (["execute", "dedup", "bias"], 'label = "passed"', "[bias] label"),  # set by the user
])
def test_the_bias_label_is_named_for_who_set_it(tmp_path: Path, stages: list[str], bias: str, words: str) -> None:
    """The bias stage's messages named its label ``[bias] label`` where the run set it itself
    (``passed`` from the execute stage's results, or ``[data] label_column``) and no config key
    ``[bias] label`` was written. Planned on a real config (the messages that name the label, a
    column missing from the execute stage's results or the metric table, need files the run did
    not write: the preflight and the score stage's carry keep the label column there)."""
    from workbench.option_words import option_named
    from workbench.run.stages import plan_stages

    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    config = load_config(_config(tmp_path, data, stages, bias=bias))
    plan = next(p for p in plan_stages(config, set(json.loads(data.read_text().splitlines()[0]))) if p.name == "bias")
    assert plan.skip_reason is None, plan.skip_reason
    with plan.words():
        assert option_named("label") == words
        assert option_named("resamples") == "[bias] resamples"
        if words.startswith("the execute"):  # no setting to name: the words say where the column was meant to be
            from workbench.bias.metric_table import read_metric_table
            from workbench.errors import MissingColumnError

            with pytest.raises(MissingColumnError) as caught:
                read_metric_table(str(data), metrics=["pass"], id_columns=["task_id", "sample_id"],
                                  flags={"pass": option_named("label")})
            assert "column 'pass' not found (the execute stage's label); the data has:" in str(caught.value)


@pytest.mark.parametrize("blocked", ["execute", "bias"])
def test_a_file_where_a_stage_folder_goes_is_refused_before_any_stage_in_config_words(tmp_path: Path,
                                                                                      blocked: str) -> None:
    """A run folder with a file named like a stage's folder (``run/execute``, ``run/bias``): the
    stage failed after the others had run with "--output run/execute/results.jsonl: ... choose
    another path" / "--json run/bias/report.json: ...", options the run sets itself and its
    command does not take. The preflight refuses it, naming ``[run] output``, before any stage."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    config_path = _config(tmp_path, data, ["execute", "dedup", "score_all", "bias"])
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / blocked).write_text("notes\n")
    with pytest.raises(Exception) as caught:
        run_pipeline(load_config(config_path))
    message = _flat(str(caught.value))
    assert message == (f"[run] output {tmp_path / 'run'}: {tmp_path / 'run' / blocked} exists and is not a folder; "
                       "choose another path"), message
    assert not (tmp_path / "run" / "dedup").exists()  # no stage ran


@pytest.mark.parametrize("stages, correlate, words", [
    (["execute", "score_all", "correlate_all"], "", "the execute stage's label"),  # passed, from execute's results
    (["score_all", "correlate_all"], "", "[data] label_column"),  # the run takes the data's label column
    (["execute", "score_all", "correlate_all"], 'label = "passed"', "[correlate] label"),  # set by the user
])
def test_the_correlate_label_is_named_for_who_set_it(tmp_path: Path, stages: list[str], correlate: str,
                                                     words: str) -> None:
    """The correlate stages' messages named their label ``[correlate] label`` (a key nobody wrote)
    where the run set it itself: ``[data] label_column``, or execute's ``passed``; as the bias
    stage names its label. Planned on a real config (both correlate stages)."""
    from workbench.option_words import option_named
    from workbench.run.stages import plan_stages

    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    config = load_config(_config(tmp_path, data, ["score", *stages], correlate=correlate))
    plans = {p.name: p for p in plan_stages(config, set(json.loads(data.read_text().splitlines()[0])))}
    for name in ("correlate", "correlate_all"):
        with plans[name].words():
            assert option_named("label") == words, name
            assert option_named("resamples") == "[correlate] resamples"
            # both correlate stages name the execute stage's results as the score and bias stages do
            assert option_named("results", plain="") == ("the execute stage's results" if "execute" in stages else ""), name


def _graded_generations(path: Path) -> Path:
    """The slice with a 0-4 grade of each row (from its pass/fail and its CodeBLEU: any grade will do)."""
    rows = [json.loads(line) for line in write_generations(path).read_text().splitlines()]
    for row in rows:
        row["grade"] = 2 * int(row["passed"]) + round(2 * float(row["codebleu"]))
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _graded_config(tmp_path: Path, data: Path, stages: list[str]) -> Path:
    return write_config(tmp_path / "g.toml", tmp_path / "run", data, stages, """min_tokens = 5
[correlate]
metric = ["codebleu"]
resamples = 100
[bias]
resamples = 100
""", label_column="grade")


def test_a_grade_in_data_label_column_is_named_there_by_correlate_and_bias(tmp_path: Path) -> None:
    """``[data] label_column = "grade"`` (0-4) without ``label_kind``: the correlate stage said
    "label column 'grade' must be 0/1 ...", which reads as the stage's own label, and a grade that is
    also a ``[correlate] metric`` was "used as a metric and as the label / task / sample column".
    Each names where the label came from and the key that declares a grade, in each stage's table;
    declared graded, both stages run."""
    data = _graded_generations(tmp_path / "gens.jsonl")
    config = _graded_config(tmp_path, data, ["correlate_all", "dedup", "bias"])
    result = run_pipeline(load_config(config))
    status, message = _outcomes(result)["correlate_all"]
    message = _flat(message)
    assert status == "failed", message
    assert "label column 'grade' ([data] label_column) must be 0/1 or a pass ratio in [0, 1]" in message, message
    # one declaration serves every stage that reads the label: each stage's advice names [data] label_kind
    assert 'declare it with [data] label_kind = "graded"' in message, message
    status, message = _outcomes(result)["bias"]
    message = _flat(message)
    assert status == "failed", message
    assert "label column 'grade' ([data] label_column) must be 0/1 or a pass ratio in [0, 1]" in message, message
    assert 'declare it with [data] label_kind = "graded"' in message, message

    both = run_pipeline(load_config(config, overrides=['correlate.metric=["codebleu", "grade"]',
                                                       'correlate.label_kind="graded"']), only=["correlate_all"])
    message = _flat(_outcomes(both)["correlate_all"][1])
    assert ("'grade' is named as a metric ([correlate] metric) and is the label ([data] label_column): a column "
            "cannot be both; leave it out of [correlate] metric") in message, message

    graded = run_pipeline(load_config(config, overrides=['correlate.label_kind="graded"', 'bias.label_kind="graded"']))
    assert _outcomes(graded)["correlate_all"][0] == "ran" and _outcomes(graded)["bias"][0] == "ran", _outcomes(graded)
    written = json.loads((tmp_path / "run" / "bias" / "report.json").read_text())
    assert (written["label"], written["label_kind"]) == ("grade", "graded")
    assert json.loads((tmp_path / "run" / "correlate" / "all.json").read_text())["counts"]["label_kind"] == "graded"


@pytest.mark.parametrize("declared", [
    ['data.label_kind="graded"'],  # once, for every stage that reads [data] label_column
    ['correlate.label_kind="graded"'],  # the old key of one stage: bias takes it too
    ['bias.label_kind="graded"'],  # and the other way round
    ['data.label_kind="graded"', 'correlate.label_kind="graded"', 'bias.label_kind="graded"'],  # all agree
])
def test_a_grade_in_data_label_column_is_declared_once_for_correlate_and_bias(tmp_path: Path,
                                                                              declared: list[str]) -> None:
    """A grade as ``[data] label_column`` had to be declared twice, ``[correlate] label_kind`` and ``[bias]
    label_kind``; with only the first, the bias stage failed ("declare it with [bias] label_kind"). One
    declaration reaches every stage that reads the label: both run and write a graded report. Real dedup,
    correlation and bias on the graded slice."""
    data = _graded_generations(tmp_path / "gens.jsonl")
    result = run_pipeline(load_config(_graded_config(tmp_path, data, ["correlate_all", "dedup", "bias"]),
                                      overrides=declared))
    outcomes = _outcomes(result)
    assert outcomes["correlate_all"][0] == "ran" and outcomes["bias"][0] == "ran", outcomes
    written = json.loads((tmp_path / "run" / "bias" / "report.json").read_text())
    assert (written["label"], written["label_kind"]) == ("grade", "graded")
    assert json.loads((tmp_path / "run" / "correlate" / "all.json").read_text())["counts"]["label_kind"] == "graded"


@pytest.mark.parametrize("declared, words", [
    (['data.label_kind="graded"', 'bias.label_kind="outcome"'],
     "[data] label_kind = 'graded' and [bias] label_kind = 'outcome' contradict each other"),
    (['correlate.label_kind="graded"', 'bias.label_kind="outcome"'],
     "[correlate] label_kind = 'graded' and [bias] label_kind = 'outcome' contradict each other"),
])
def test_contradicting_label_kinds_are_refused_when_the_config_is_read(tmp_path: Path, declared: list[str],
                                                                       words: str) -> None:
    """Two declarations of what ``[data] label_column`` holds that differ: one stage would take the grade
    as a grade and the other refuse it (or worse, take it as a pass ratio); refused before any stage,
    naming both keys and the one to keep."""
    from workbench.run.config import ConfigError

    data = _graded_generations(tmp_path / "gens.jsonl")
    with pytest.raises(ConfigError) as caught:
        load_config(_graded_config(tmp_path, data, ["correlate_all", "dedup", "bias"]), overrides=declared)
    message = str(caught.value)
    assert words in message and "declare it once, as [data] label_kind" in message, message


def test_data_label_kind_is_checked(tmp_path: Path) -> None:
    """``[data] label_kind`` takes the kinds of ``--label-kind`` and needs ``[data] label_column``."""
    from workbench.run.config import ConfigError

    data = _graded_generations(tmp_path / "gens.jsonl")
    config = _graded_config(tmp_path, data, ["correlate_all"])
    with pytest.raises(ConfigError, match=r"\[data\] label_kind must be one of outcome, graded, not 'grade' "
                                          r"\(did you mean 'graded'\?\)"):
        load_config(config, overrides=['data.label_kind="grade"'])
    with pytest.raises(ConfigError, match=r"\[data\] label_kind 'graded' declares what \[data\] label_column holds"):
        load_config(config, overrides=['data.label_kind="graded"', 'data.label_column=""'])


#: the way around an output another run is writing, as workbench run words it (other_output_advice)
RUN_OTHER_OUTPUT = "use another [run] output"


def test_a_second_run_writing_the_execute_results_is_refused_in_the_runs_words(tmp_path: Path) -> None:
    """fd40: the execute stage, while another run writes its results file (two workbench run commands on
    one run folder: here a real file lock held on it, as that run's execute stage holds it), said "or
    write to another --output", an option workbench run does not take. Nothing ran; no LLM, no sandbox."""
    from filelock import FileLock

    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    results = tmp_path / "run" / "execute" / "results.jsonl"
    results.parent.mkdir(parents=True)
    with FileLock(str(results.with_name(f".{results.name}.lock"))):
        result = run_pipeline(load_config(_config(tmp_path, data, ["execute"])))
    status, message = _outcomes(result)["execute"]
    message = _flat(message)
    assert status == "failed", message
    assert message == (f"another workbench execute run is writing {results}; wait for it to finish (or stop it), "
                       f"or {RUN_OTHER_OUTPUT}"), message
    assert not results.exists()


def _dedup_refusal(tmp_path: Path, data: Path) -> str:
    result = run_pipeline(load_config(_config(tmp_path, data, ["dedup"])))
    status, message = _outcomes(result)["dedup"]
    assert status == "failed", message
    message = _flat(message)
    assert "--output" not in message and "-o " not in message, message
    return message


def test_a_dedup_stage_folder_another_writer_holds_is_refused_in_the_runs_words(tmp_path: Path) -> None:
    """fd40: the dedup stage, while another dedup writer holds its folder (a real file lock on
    run/dedup/.dedup.lock), said "--output run/dedup is in use ... or choose another -o folder"."""
    from filelock import FileLock

    from workbench.dedup.output_folder import LOCK_FILE

    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    folder = tmp_path / "run" / "dedup"
    folder.mkdir(parents=True)
    with FileLock(str(folder / LOCK_FILE)):
        message = _dedup_refusal(tmp_path, data)
    assert message.startswith(f"the dedup stage's folder {folder} is in use by another dedup writer ("), message
    assert message.endswith(f"nothing was done; wait for it to finish (or stop it), or {RUN_OTHER_OUTPUT}"), message


def test_a_dedup_stage_folder_holding_foreign_files_is_refused_in_the_runs_words(tmp_path: Path) -> None:
    """fd40: a file of the user's where the dedup stage writes its split (run/dedup/train.jsonl, no
    manifest): "--output run/dedup holds train.jsonl ... Choose a fresh -o folder"."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    folder = tmp_path / "run" / "dedup"
    folder.mkdir(parents=True)
    (folder / "train.jsonl").write_text("mine\n")
    message = _dedup_refusal(tmp_path, data)
    assert message.startswith(f"the dedup stage's folder {folder} holds train.jsonl, which this run would write"), \
        message
    assert message.endswith(f"they are not replaced. {RUN_OTHER_OUTPUT[0].upper()}{RUN_OTHER_OUTPUT[1:]}, or move "
                            f"them away (nothing was searched)"), message
    assert (folder / "train.jsonl").read_text() == "mine\n"


def test_a_run_folder_inside_the_input_folder_is_refused_in_the_runs_words(tmp_path: Path) -> None:
    """fd40: [data] source a folder, [run] output inside it: the dedup stage said "--output run/dedup lies
    inside the input folder ...; choose a folder outside ..."."""
    source = tmp_path / "data"
    source.mkdir()
    data = write_generations(source / "gens.jsonl", per_outcome=1)
    config = write_config(tmp_path / "c.toml", source / "run", source, ["dedup"],
                          _TABLES.format(execute="", correlate="", bias=""))
    result = run_pipeline(load_config(config))
    status, message = _outcomes(result)["dedup"]
    message = _flat(message)
    assert status == "failed", message
    assert data.exists()
    assert message == (f"the dedup stage's folder {source / 'run' / 'dedup'} lies inside the input folder {source}: "
                       f"dedup would write its splits over the input (or into it, to be read as input by the next "
                       f"run); {RUN_OTHER_OUTPUT} outside {source}"), message


def test_the_other_dedup_output_refusals_name_the_stage_folder_in_the_runs_words(tmp_path: Path) -> None:
    """fd40: the refusals of a dedup output folder that cannot be written (/sys, to root too), that holds the input, or that is the input file's folder, as the dedup
    stage's words make them (the real plan's, from plan_stages) and as workbench dedup keeps them."""
    from workbench.dedup.job import _refuse_output_over_input
    from workbench.dedup.output_folder import check_no_foreign_outputs, check_writable, write_manifest
    from workbench.errors import DataError
    from workbench.run.stages import plan_stages

    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    config = load_config(_config(tmp_path, data, ["dedup"]))
    plan = {p.name: p for p in plan_stages(config, set(json.loads(data.read_text().splitlines()[0])))}["dedup"]
    read_only = Path("/sys")  # sysfs: Permission denied, to root too
    files = tmp_path / "out" / "files"
    files.mkdir(parents=True)
    (files / "a.py").write_text("x = 1\n")
    write_manifest(tmp_path / "out", ["files"], "an earlier source")  # an earlier run's files/, read again as input
    cases = [
        (lambda: check_writable(read_only),
         f"{read_only} cannot be written (", "): nothing was searched; choose a folder you can write, or make this "
                                              "one writable", f"): nothing was searched; {RUN_OTHER_OUTPUT}, or make "
                                                              f"this one writable"),
        (lambda: check_no_foreign_outputs(tmp_path / "out", ["files"], files),
         f"{tmp_path / 'out'}: files holds this run's input {files}, and this run would replace it: ",
         "choose another -o folder, or copy the input elsewhere (nothing was replaced)",
         f"{RUN_OTHER_OUTPUT}, or copy the input elsewhere (nothing was replaced)"),
        (lambda: _refuse_output_over_input(data, tmp_path),
         f"{tmp_path} is the folder of the input file {data.name}: its split files could replace the input; ",
         f"choose another folder (e.g. {tmp_path / 'dedup'})", RUN_OTHER_OUTPUT),
    ]
    for call, middle, plain_end, run_end in cases:
        with pytest.raises(DataError) as raised:
            call()
        assert str(raised.value).startswith(f"--output {middle}") and str(raised.value).endswith(plain_end), raised.value
        with plan.words(), pytest.raises(DataError) as raised:
            call()
        message = str(raised.value)
        assert message.startswith(f"the dedup stage's folder {middle}") and message.endswith(run_end), message
