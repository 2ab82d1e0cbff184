"""probe 30: what the preflight of `workbench run` checks, and says, in the config's own terms:
one credential check shared with `workbench score` (Ollama's endpoint has a default), a missing
file named by the key that gave it, duplicate sample keys and task ids unknown to the problem set
refused before decontaminate and dedup run, an empty `[run] stages`, numbers given as text. Real
preflight on small files written here (no LLM is called, no stage runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.run.config import ConfigError, build_config
from workbench.run.preflight import run_preflight


def _generations(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_data_language_the_data_contradicts_is_said_grammatically(tmp_path: Path) -> None:
    """'... [data] source (x.jsonl) name python in the 'language' column': a singular subject
    with a plural verb."""
    data = _generations(tmp_path / "g.jsonl", [
        {"task_id": "HumanEval/0", "sample_id": 0, "completion": "    return True\n", "language": "python"}])
    config = build_config({"run": {"output": str(tmp_path / "run"), "stages": ["score_all"]},
                           "data": {"source": str(data), "language": "java"},
                           "score": {"method": ["chrf"], "problems": "humaneval"}})
    with pytest.raises(ConfigError) as caught:
        run_preflight(config)
    message = _flat(str(caught.value))
    assert f"[data] language java contradicts the data: [data] source ({data}) rows name python in the " \
           "'language' column (1 row)" in message, message


def _score_config(tmp_path: Path, **score: object) -> dict:
    return {"run": {"output": str(tmp_path / "run"), "stages": ["score"]},
            "data": {"source": "humaneval-codex-python", "code_column": "completion_multipl_e"},
            "score": {"method": ["p-correct"], "select": "first", "limit": 2, **score}}


def test_the_preflight_checks_a_model_as_workbench_score_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`workbench run --model ollama/llama3` failed with "missing credentials OLLAMA_API_BASE" while
    `workbench score` accepted it (Ollama's endpoint defaults to localhost:11434, docs/score.md):
    one check, workbench.llm.client's, for both."""
    from workbench.llm.client import LLMSettings, MissingCredentialsError, UnknownProviderError, check_credentials

    for name in ("OLLAMA_API_BASE", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    run_preflight(build_config(_score_config(tmp_path, model="ollama/llama3")))  # no error: the default endpoint
    with pytest.raises(MissingCredentialsError) as caught:
        run_preflight(build_config(_score_config(tmp_path, model="openai/gpt-4o-mini")))
    with pytest.raises(MissingCredentialsError) as expected:  # the very message workbench score gives
        check_credentials(LLMSettings("openai/gpt-4o-mini"))
    assert str(caught.value) == f"[score] model: {expected.value}"
    with pytest.raises(UnknownProviderError, match=r"\[score\] model: litellm cannot tell which provider"):
        run_preflight(build_config(_score_config(tmp_path, model="gpt-4o-mni")))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("stages, tables, key", [
    (["dedup"], {"data": {"source": "{missing}"}}, "[data] source"),
    (["decontaminate"], {"decontaminate": {"against": "{missing}"}}, "[decontaminate] against"),
    (["execute"], {"execute": {"problems": "{missing}"}}, "[execute] problems"),
    (["score_all"], {"score": {"method": ["chrf"], "problems": "{missing}"}}, "[score] problems"),
])
def test_a_missing_file_is_named_by_the_key_that_gave_it(tmp_path: Path, stages: list[str], tables: dict,
                                                         key: str) -> None:
    """"Error: /tmp/nope.jsonl: no such file or folder" said nothing of where the path was set."""
    missing = str(tmp_path / "nope.jsonl")
    data = _generations(tmp_path / "g.jsonl", [  # no reference column: score takes it from its problems
        {"task_id": "HumanEval/0", "sample_id": 0, "completion": "    return True\n"}])
    raw: dict = {"run": {"output": str(tmp_path / "run"), "stages": stages}, "data": {"source": str(data)}}
    for table, values in tables.items():
        raw[table] = {**raw.get(table, {}), **{k: missing if v == "{missing}" else v for k, v in values.items()}}
    with pytest.raises(Exception) as caught:
        run_preflight(build_config(raw))
    assert _flat(str(caught.value)) == f"{key}: {missing}: no such file or folder"


@pytest.mark.parametrize("stage, table", [("score_all", "score"), ("execute", "execute")])
def test_a_problem_set_lacking_a_column_is_named_in_config_words_and_its_path_kept(tmp_path: Path, stage: str,
                                                                                   table: str) -> None:
    """Problems that lack the column a stage reads: the error names the key that sets it
    (``[score] problem_reference_column``, ``[execute] test_column``) and gives the problems' path
    as the user wrote it. The preflight turned every ``--flag`` of the message into a config key
    with a pattern, the path's folder ``--limit`` included ("/tmp/x/[score] limit/problems.jsonl")."""
    folder = tmp_path / "--limit"  # a folder name that reads like a flag of both commands
    folder.mkdir()
    problems = _generations(folder / "problems.jsonl", [{"task_id": "HumanEval/0", "prompt": "def f():\n"}])
    data = _generations(tmp_path / "g.jsonl", [
        {"task_id": "HumanEval/0", "sample_id": 0, "completion": "    return True\n"}])
    values = {"method": ["chrf"], "problems": str(problems)} if table == "score" else {"problems": str(problems)}
    raw = {"run": {"output": str(tmp_path / "run"), "stages": [stage]}, "data": {"source": str(data)}, table: values}
    with pytest.raises(Exception) as caught:
        run_preflight(build_config(raw))
    message = _flat(str(caught.value))
    if table == "score":
        assert message == (f"[score] problems: {problems}: column 'canonical_solution' not found (set it with [score] "
                           f"problem_reference_column); the data has: task_id, prompt (in split 'train' of {problems})")
    else:
        assert message == (f"[execute] problems: column 'test' not found (set it with [execute] test_column); the data "
                           f"has: task_id, prompt (in the problems ({problems}))")


def _rows(*keys: tuple[str, int]) -> list[dict]:
    return [{"task_id": task, "sample_id": sample, "completion": f"    return {n}  # a completion long enough\n"}
            for n, (task, sample) in enumerate(keys)]


def test_duplicate_sample_keys_fail_before_decontaminate_and_dedup_run(tmp_path: Path) -> None:
    """Duplicate (task, sample) keys passed the preflight: decontaminate and dedup failed with "Pass a
    unique column with --id-column" (an option the pipeline sets itself), then execute and score_all."""
    from workbench.run import run_pipeline

    data = _generations(tmp_path / "g.jsonl", _rows(("HumanEval/0", 0), ("HumanEval/0", 1), ("HumanEval/0", 0)))
    raw = {"run": {"output": str(tmp_path / "run"), "stages": ["decontaminate", "dedup", "execute"]},
           "data": {"source": str(data)}, "decontaminate": {"against": "humaneval",
                                                             "against_code_column": "canonical_solution"}}
    with pytest.raises(Exception) as caught:
        run_pipeline(build_config(raw))
    message = _flat(str(caught.value))
    assert message.startswith(f"[data] source ({data}): 1 row repeats a (task_id, sample_id) key"), message
    assert "e.g. (HumanEval/0, 0)" in message and "[data] sample_column" in message and "--" not in message
    assert not (tmp_path / "run").exists()  # no stage ran
    # an id column of one's own ([data] id_column, dedup's) is checked as dedup checks it, in config terms
    data = _generations(tmp_path / "g2.jsonl", _rows(("HumanEval/0", 0), ("HumanEval/0", 1)))
    raw = {"run": {"output": str(tmp_path / "run"), "stages": ["dedup"]},
           "data": {"source": str(data), "id_column": "task_id"}}
    with pytest.raises(Exception, match=r"ids must be unique, but 1 id of column 'task_id' occurs more than "
                                        r"once: 'HumanEval/0'\. Pass a unique column with \[data\] id_column"):
        run_preflight(build_config(raw))


def test_task_ids_the_problem_set_lacks_fail_before_any_stage(tmp_path: Path) -> None:
    """A task id the problems lack passed the preflight; execute and score_all failed after
    decontaminate and dedup had run, naming --problems."""
    data = _generations(tmp_path / "g.jsonl", _rows(("HumanEval/0", 0), ("HumanEval/999", 0)))
    base = {"run": {"output": str(tmp_path / "run")}, "data": {"source": str(data)}}
    with pytest.raises(ConfigError) as caught:
        run_preflight(build_config({**base, "run": {**base["run"], "stages": ["dedup", "execute"]}}))
    message = _flat(str(caught.value))
    assert message.startswith(f"1 task id of [data] source ({data}) is not in [execute] problems (humaneval): "
                              "'HumanEval/999'"), message
    assert "--" not in message
    # the score stages take the reference from [score] problems (the data has none): the same check
    with pytest.raises(ConfigError) as caught:
        run_preflight(build_config({**base, "run": {**base["run"], "stages": ["score_all"]},
                                    "score": {"method": ["chrf"], "problems": "humaneval"}}))
    message = _flat(str(caught.value))
    assert message.startswith(f"1 task id of [data] source ({data}) is not in [score] problems (humaneval): "
                              "'HumanEval/999'"), message
    assert "--" not in message
    assert not (tmp_path / "run").exists()


def test_an_empty_stage_list_is_refused(tmp_path: Path) -> None:
    """`stages = []` ran nothing and exited 0 without a word."""
    raw = {"run": {"output": str(tmp_path / "run"), "stages": []}, "data": {"source": "humaneval-codex-python"}}
    with pytest.raises(ConfigError, match=r"\[run\] stages is empty: no stage would run; list the stages to run"):
        build_config(raw)
    with pytest.raises(ConfigError, match=r"\[run\] stages is empty"):
        build_config({**raw, "run": {"output": str(tmp_path / "run")}}, overrides=["run.stages=[]"])


@pytest.mark.parametrize("table, key, text, words", [
    ("score", "limit", "10", "an integer"),
    ("execute", "timeout_factor", "4", "a number"),
    ("correlate", "confidence", "0.9", "a number"),
])
def test_a_number_written_as_text_is_refused(tmp_path: Path, table: str, key: str, text: str, words: str) -> None:
    """`limit = "10"` and `timeout_factor = "4"` were accepted (read as the command line reads its
    text), and `"4"` and `4.0` then gave the stage different keys."""
    raw = {"run": {"output": str(tmp_path / "run")}, "data": {"source": "humaneval-codex-python"}, table: {key: text}}
    with pytest.raises(ConfigError) as caught:
        build_config(raw)
    assert str(caught.value) == f"[{table}] {key} must be {words}, not {text!r} (text: write {key} = {text} without quotes)"
    with pytest.raises(ConfigError, match=rf"\[{table}\] {key} must be {words}, not '{text}'"):
        build_config({**raw, table: {}}, overrides=[f'{table}.{key}="{text}"'])  # a TOML string on --set too
    # the command line's own text is read as its flag reads it: --set score.limit=10 is 10
    assert build_config({**raw, table: {}}, overrides=[f"{table}.{key}={text}"]).sections[table][key] == float(text)


def test_a_number_list_written_as_text_is_refused_but_set_reads_it_as_its_flag(tmp_path: Path) -> None:
    raw = {"run": {"output": str(tmp_path / "run")}, "data": {"source": "humaneval-codex-python"}}
    with pytest.raises(ConfigError, match=r"\[execute\] pass_at_k must be a list of integers, not '1,10' \(text: "
                                          r"write pass_at_k = \[1, 10\]\)"):
        build_config({**raw, "execute": {"pass_at_k": "1,10"}})
    with pytest.raises(ConfigError, match=r"\[execute\] pass_at_k must be a list of integers, not \['1', '10'\]"):
        build_config({**raw, "execute": {"pass_at_k": ["1", "10"]}})
    # as --pass-at-k 1,10 reads it
    assert build_config(raw, overrides=["execute.pass_at_k=1,10"]).sections["execute"]["pass_at_k"] == [1, 10]
    assert build_config(raw, overrides=["execute.pass_at_k=[1, 10]"]).sections["execute"]["pass_at_k"] == [1, 10]


def test_an_integer_and_its_float_give_one_stage_key(tmp_path: Path) -> None:
    """`timeout_factor = 4` and `4.0` are one setting: one stage key, so a rerun is up to date."""
    from workbench.run.stages import plan_stages

    def key_argv(value: object) -> list[str]:
        raw = {"run": {"output": str(tmp_path / "run")}, "data": {"source": "humaneval-codex-python"},
               "execute": {"timeout_factor": value}}
        plans = plan_stages(build_config(raw), {"task_id", "sample_id", "completion", "reference", "prompt"})
        return next(plan for plan in plans if plan.name == "execute").key_argv()

    assert key_argv(4) == key_argv(4.0)
    assert "4.0" in key_argv(4)


def _without_the_several_references_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Four rows, those of tasks t1 and t3 with two references (t0 and t2 one), and a prompts folder
    with ``ice_score.txt`` but no ``ice_score_references.txt``. Returns ``(prompts folder, config(**score))``:
    a run config of the score stage only (ICE-Score, an OpenAI model that is never called)."""
    import shutil

    from workbench.score.prompts import default_prompts_dir

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    shutil.copy(Path(default_prompts_dir()) / "ice_score.txt", prompts)
    rows = [{"task_id": f"t{task}", "sample_id": 0, "generation": "x = sorted(a)\n",
             "references": ["x = sorted(a)\n", "a.sort(); x = a\n"][:1 + task % 2]} for task in range(4)]
    data = _generations(tmp_path / "g.jsonl", rows)

    def config(**score: object):
        return build_config({"run": {"output": str(tmp_path / "run"), "stages": ["score"]},
                             "data": {"source": str(data), "code_column": "generation", "reference_column": "references",
                                      "prompt_column": None},
                             "score": {"method": ["ice-score"], "model": "openai/gpt-4o-mini", "prompts_dir": str(prompts),
                                       **score}})

    return prompts, config


def test_a_prompts_folder_without_the_several_references_template_is_refused_in_preflight(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers37: with a list-valued ``[data] reference_column`` (several references per row, as
    configs/conala.toml reads) and a ``[score] prompts_dir`` made before ``ice_score_references.txt``
    existed, the preflight passed and the score stage refused the run when it started, after the stages
    before it. The preflight now says it, as the score stage does (its words, the key of the run)."""
    import shutil

    from workbench.errors import WorkbenchError
    from workbench.score.prompts import default_prompts_dir

    prompts, config = _without_the_several_references_template(tmp_path, monkeypatch)

    with pytest.raises(WorkbenchError) as caught:
        run_preflight(config())
    message = _flat(str(caught.value))
    assert "ice_score_references.txt" in message and "2 of 4 rows" in message, message
    assert "[score] prompts_dir" in message, message
    shutil.copy(Path(default_prompts_dir()) / "ice_score_references.txt", prompts)
    run_preflight(config())  # the template there: nothing to say


def test_the_several_references_check_counts_the_rows_the_score_stage_scores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers38: the preflight counted the rows with several references over all the data's rows
    (``2 of 4 rows of [data] source``), also where ``[score] limit`` / ``select`` leaves them out of
    the scored subset, and refused a run the score stage would have taken. It now counts the rows
    the score stage will score, as the score stage does when it starts. Real preflight on a small
    file and a prompts folder without ``ice_score_references.txt`` (no LLM is called, no stage runs)."""
    from workbench.errors import WorkbenchError

    _, config = _without_the_several_references_template(tmp_path, monkeypatch)  # t1 and t3: two references

    run_preflight(config(select="first", limit=1))  # the one scored row (t0) has one reference: nothing to refuse
    with pytest.raises(WorkbenchError) as caught:
        run_preflight(config(select="first", limit=3))  # t0, t1, t2: one of the three has two
    message = _flat(str(caught.value))
    assert "ice_score_references.txt" in message and "1 of 3 rows [score] selects" in message, message
    with pytest.raises(WorkbenchError) as caught:
        run_preflight(config())  # no limit: every row
    message = _flat(str(caught.value))
    assert "2 of 4 rows of [data] source" in message, message


def _counting_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The sources :func:`workbench.data.loading.load_records` is asked for from now on (it still loads them)."""
    from workbench.data import loading

    asked: list[str] = []
    real = loading.load_records

    def counted(source, *args, **kwargs):
        asked.append(str(source))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(loading, "load_records", counted)
    return asked


def test_the_preflight_reads_the_data_once_for_the_several_references_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers39a: with a ``[score] limit``, the several-references check chose the scored rows with
    ``select_samples``, which read ``[data] source`` a second time, after the preflight had read it.
    It now selects them from the data the preflight read. Real preflight and selection on a small file
    (no LLM is called, no stage runs); the loader is counted, not replaced."""
    from workbench.errors import WorkbenchError

    _, config = _without_the_several_references_template(tmp_path, monkeypatch)
    asked = _counting_loads(monkeypatch)
    with pytest.raises(WorkbenchError) as caught:
        run_preflight(config(select="first", limit=3))  # the selection is still what counts: 1 of 3 rows
    assert "1 of 3 rows [score] selects" in _flat(str(caught.value))
    assert asked == [str(tmp_path / "g.jsonl")], asked


def test_the_preflight_selects_the_scored_subset_once_for_an_execute_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers39a: an ``[execute] limit`` made the preflight read ``[data] source`` twice more (every
    sample, then the scored subset) to say which scored samples execute misses. It now reads the data
    once and selects from it. Real preflight on a slice of the bundled ICE-Score set (an OpenAI model
    that is never called)."""
    from ice_score_slice import write_config, write_generations

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    data = write_generations(tmp_path / "gens.jsonl")  # 3 tasks, 2 passing and 2 failing samples each
    config_path = write_config(tmp_path / "c.toml", tmp_path / "run", data, ["execute", "score", "correlate", "report"],
                               """[execute]
limit = 2
[score]
method = ["ice-score"]
model = "openai/gpt-4o-mini"
limit = 4
select = "stratified"
""")
    from workbench.run import load_config

    asked = _counting_loads(monkeypatch)
    preflight = run_preflight(load_config(config_path))
    assert any("[execute] limit = 2 runs the first 2 rows" in warning for warning in preflight.warnings), preflight.warnings
    assert asked.count(str(data)) == 1, asked


def test_the_preflight_reads_the_score_problems_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers40a (closing39): with ``[score] problems`` supplying the references, the preflight read the
    problem texts for its task check, and ``select_samples`` read them again for each selection it made
    (here the ``[execute] limit`` check: every sample, then the scored subset): three reads of one problem
    set. The selections now take the texts the preflight read. Real preflight on a slice of the bundled
    ICE-Score set without its reference column, the bundled HumanEval problems (an OpenAI model that is
    never called); :func:`~workbench.score.problems.load_problem_texts` is counted, not replaced."""
    from ice_score_slice import write_config, write_generations

    from workbench.run import load_config
    from workbench.score import problems

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    data = write_generations(tmp_path / "gens.jsonl", drop=("reference",))
    config_path = write_config(tmp_path / "c.toml", tmp_path / "run", data, ["execute", "score", "correlate", "report"],
                               """[execute]
limit = 2
[score]
method = ["ice-score"]
model = "openai/gpt-4o-mini"
problems = "humaneval"
limit = 4
select = "stratified"
""")
    read: list[tuple] = []
    real = problems.load_problem_texts

    def counted(problem_set, **parts):
        read.append((problem_set.source, tuple(sorted(parts.items()))))
        return real(problem_set, **parts)

    monkeypatch.setattr(problems, "load_problem_texts", counted)
    preflight = run_preflight(load_config(config_path))
    # the selections still took their references from the problems: the check ran on the scored samples
    assert any("[execute] limit = 2 runs the first 2 rows" in warning for warning in preflight.warnings), preflight.warnings
    assert read == [("humaneval", (("prompt", False), ("reference", True)))], read


def test_the_several_references_check_does_not_select_from_execution_results_the_run_replaces(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers40a (closing39): a score stage stratified on the run's own execution results, with a ``[score]
    limit``, had the several-references check select its subset from ``execute/results.jsonl`` as an earlier
    run left it, also where the execute stage runs again (here it executed 2 rows under an ``[execute] limit``
    since dropped): the 2 rows with a verdict there have one reference each, so the preflight passed, the run
    executed every row, and the score stage, selecting 4 of 6 from the new results, refused its start. Results
    the run replaces are not there yet: the check counts on every row of the data. Real sandboxed execution of
    2 rows of the bundled ICE-Score set, then the real preflight (an OpenAI model that is never called)."""
    import shutil

    from ice_score_slice import write_config, write_generations

    from workbench.errors import WorkbenchError
    from workbench.run import load_config, run_pipeline
    from workbench.score.prompts import default_prompts_dir

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    prompts = tmp_path / "prompts"  # made before ice_score_references.txt existed
    prompts.mkdir()
    shutil.copy(Path(default_prompts_dir()) / "ice_score.txt", prompts)
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1, drop=("passed",))
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    # the first task's two rows (the 2 executed first) have one reference; the other tasks' rows two
    for index, row in enumerate(rows):
        row["references"] = [row["reference"]] + (["    pass\n"] if index >= 2 else [])
    _generations(data, rows)
    config_path = write_config(tmp_path / "c.toml", tmp_path / "run", data, ["execute"], f"""[execute]
limit = 2
[score]
method = ["ice-score"]
model = "openai/gpt-4o-mini"
prompts_dir = "{prompts}"
limit = 4
select = "stratified"
""")
    config_path.write_text(config_path.read_text().replace('label_column = "passed"\n', 'reference_column = "references"\n'))
    run_pipeline(load_config(config_path))
    assert len((tmp_path / "run" / "execute" / "results.jsonl").read_text().splitlines()) == 2

    with pytest.raises(WorkbenchError) as caught:  # execute runs again, on every row
        run_preflight(load_config(config_path, overrides=['run.stages=["execute", "score", "report"]',
                                                          'execute.limit=6']))
    message = _flat(str(caught.value))
    assert "ice_score_references.txt" in message and "4 of 6 rows of [data] source" in message, message
    # ... and once the execute stage is up to date, on the subset selected from its results
    run_pipeline(load_config(config_path, overrides=["execute.limit=6"]))
    with pytest.raises(WorkbenchError) as caught:
        run_preflight(load_config(config_path, overrides=['run.stages=["execute", "score", "report"]',
                                                          'execute.limit=6']))
    message = _flat(str(caught.value))
    assert "of 4 rows [score] selects" in message, message
