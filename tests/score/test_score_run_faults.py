"""Faults of a scoring run found in review: each test reproduces one defect. The LLM, where
one is needed, is litellm's own ``mock_response`` (a scripted responder, or a fixed failure);
storage is a real embedded Chroma in a temp dir with the real offline MiniLM."""

from __future__ import annotations

import pytest

from workbench.errors import WorkbenchError
from workbench.io import read_jsonl
from workbench.score.job import Columns, load_samples, score_samples


@pytest.mark.parametrize("column", ["chrf", "model"])
def test_a_carried_column_named_like_a_method_or_row_column_is_refused(tmp_path, ice_slice, column, score_kwargs):
    """No LLM. The ICE-Score file has ``chrf`` and ``model`` columns: carried, they used to
    overwrite our chrF score in scores_wide.jsonl (or be dropped silently from scores.jsonl)."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e", carry=("passed", column)))
    with pytest.raises(WorkbenchError, match=f"carry {column}: that name is"):
        score_samples(samples, **score_kwargs(method=["chrf", "ice-score"], mock_response="3"))
    assert not (tmp_path / "out" / "scores.jsonl").exists()


def test_carrying_the_shipped_columns_of_other_metrics_still_works(tmp_path, ice_slice, score_kwargs):
    """No LLM: chrF only; ``codebleu`` is not one of our methods, so it is carried as before."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e", carry=("passed", "codebleu")))
    score_samples(samples, **score_kwargs())
    wide = read_jsonl(tmp_path / "out" / "scores_wide.jsonl")
    assert len(wide) == 4 and all(0 <= r["chrf"] <= 1 and "codebleu" in r for r in wide)


def _failing_when(marker: str, scripted):
    """A litellm ``mock_response`` responder: a provider error for any analysis prompt that holds
    ``marker``, the scripted answers otherwise."""

    def respond(messages, schema):
        if schema is not None and "symbols" in schema["properties"] and marker in messages[-1]["content"]:
            return "litellm.InternalServerError"
        return scripted(messages, schema)

    return respond


def _only_in(program: str, other: str) -> str:
    return next(line.strip() for line in program.splitlines() if line.strip() and line not in other.splitlines())


def test_a_failed_reference_analysis_is_counted_and_traced_in_the_row_that_paid_for_it(tmp_path, ice_slice, scripted, score_kwargs):
    """The LLM is litellm's ``mock_response``: the analysis of the reference fails (provider error),
    everything else is scripted. The row that made the failed calls reports them and its trace
    holds them; the run's totals equal the sum of the rows."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))[:2]  # one task, two samples
    marker = _only_in(samples[0].reference_program, samples[0].generation_program + samples[1].generation_program)
    report = score_samples(samples, **score_kwargs(_failing_when(marker, scripted), method=["dsa-cqe"]))
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert [r["status"] for r in rows] == ["llm_error", "llm_error"]
    assert report.usage["calls"] >= 1
    assert sum(r["llm_calls"] for r in rows) == report.usage["calls"]
    traces = {t["sample_id"]: t["trace"] for t in read_jsonl(tmp_path / "out" / "traces.jsonl")}
    paid = next(r for r in rows if r["llm_calls"])
    reference = traces[paid["sample_id"]]["reference"]
    assert reference["analysed_for_this_sample"] is True
    assert any(e["error"] and "InternalServerError" in e["error"] for e in reference["exchanges"])


def test_a_failed_generation_analysis_keeps_its_exchanges_in_the_trace(tmp_path, ice_slice, scripted, score_kwargs):
    """The LLM is litellm's ``mock_response``: the generation's analysis fails at a sub-code that
    only the generation has; the trace keeps the sub-codes and exchanges up to the failure."""
    sample = load_samples(ice_slice, Columns(generation="completion_multipl_e"))[0]
    marker = _only_in(sample.generation_program, sample.reference_program)
    report = score_samples([sample], **score_kwargs(_failing_when(marker, scripted), method=["dsa-cqe"]))
    row = read_jsonl(tmp_path / "out" / "scores.jsonl")[0]
    assert row["status"] == "llm_error" and row["llm_calls"] == report.usage["calls"]
    assert row["subcodes"] >= 1
    generation = read_jsonl(tmp_path / "out" / "traces.jsonl")[0]["trace"]["generation"]
    assert generation["decomposition"]["subcodes"]
    assert generation["exchanges"][-1]["error"] and "InternalServerError" in generation["exchanges"][-1]["error"]


@pytest.mark.parametrize(
    ("option", "overrides"),
    [
        ("seed", {"seed": 7}),
        ("max_tokens", {"max_tokens": 64}),
        ("structured", {"structured": "json_object"}),
        ("k_nearest", {"k_nearest": 5}),
        ("embedding_model", {"embedding_model": "text-embedding-3-small"}),
        ("language", {"language": "java"}),
    ],
)
def test_resume_refuses_options_that_change_the_scores(tmp_path, ice_slice, option, overrides, score_kwargs):
    """The LLM is litellm's ``mock_response``. A resumed run with another seed, answer length,
    structured mode, retrieval depth, embedding model or language would mix two scorings in one
    scores.jsonl; it is refused, naming the option."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))[:2]
    score_samples(samples, **score_kwargs("3", method=["ice-score", "chrf"]))
    with pytest.raises(WorkbenchError, match=f"cannot resume.*{option}"):
        score_samples(samples, **score_kwargs("3", method=["ice-score", "chrf"], resume=True, **overrides))
    # the same options resume fine
    report = score_samples(samples, **score_kwargs("3", method=["ice-score", "chrf"], resume=True))
    assert report.rows_written == 0


def test_resumed_rows_count_only_what_this_run_would_have_scored(tmp_path, ice_slice, score_kwargs):
    """The LLM is litellm's ``mock_response``. Rows of a method no longer asked for, or of samples
    outside this run's selection (a smaller --limit), are not "already done" by this run; the
    latter are set aside in scores.unselected.jsonl and taken back by a resume that selects them."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    score_samples(samples, **score_kwargs("3", method=["ice-score", "chrf"]))
    report = score_samples(samples[:2], **score_kwargs("3", method=["chrf"], resume=True))
    assert report.resumed_rows == 2 and report.rows_written == 0
    # the tables hold this run's selection; the other samples' finished rows are set aside, not lost
    wide = read_jsonl(tmp_path / "out" / "scores_wide.jsonl")
    assert len(wide) == 2 and all(r["ice-score"] == 3.0 and r["chrf"] is not None for r in wide)
    assert len(read_jsonl(tmp_path / "out" / "scores.unselected.jsonl")) == 4  # 2 samples x 2 methods
    # selected again, they come back without scoring
    report = score_samples(samples, **score_kwargs("3", method=["chrf"], resume=True))
    assert report.resumed_rows == 4 and report.rows_written == 0
    wide = read_jsonl(tmp_path / "out" / "scores_wide.jsonl")
    assert len(wide) == 4 and all(r["ice-score"] == 3.0 and r["chrf"] is not None for r in wide)


def test_a_second_resume_at_the_same_smaller_selection_says_the_rows_stay_set_aside(tmp_path, ice_slice, score_kwargs):
    """fix33 notes item 3: a second ``--resume`` at the same lowered ``--limit`` said again that
    rows "are set aside", although it moved none (they already were). The count and the note say
    what moved; rows set aside earlier are said to stay there. The LLM is litellm's
    ``mock_response``."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    score_samples(samples, **score_kwargs("3", method=["ice-score", "chrf"]))
    lowered = score_samples(samples[:2], **score_kwargs("3", method=["ice-score", "chrf"], resume=True))
    assert lowered.set_aside_rows == 4
    [moved] = [note for note in lowered.notes if "set aside" in note]
    assert moved.startswith("4 finished rows of samples this run does not select (a smaller --limit or --method-limit) "
                            "are set aside in scores.unselected.jsonl"), moved
    again = score_samples(samples[:2], **score_kwargs("3", method=["ice-score", "chrf"], resume=True))
    assert again.set_aside_rows == 0 and again.rows_written == 0
    [stayed] = [note for note in again.notes if "set aside" in note]
    assert stayed.startswith("4 finished rows of samples this run does not select stay set aside in "
                             "scores.unselected.jsonl, where an earlier --resume put them"), stayed
    assert len(read_jsonl(tmp_path / "out" / "scores.unselected.jsonl")) == 4
    lower = score_samples(samples[:1], **score_kwargs("3", method=["ice-score", "chrf"], resume=True))
    assert lower.set_aside_rows == 2
    [both] = [note for note in lower.notes if "set aside" in note]
    assert both.startswith("2 finished rows of samples this run does not select (a smaller --limit or --method-limit) "
                           "are set aside in scores.unselected.jsonl, beside the 4 an earlier --resume put there"), both


def test_a_second_run_on_the_same_folder_is_refused_while_the_first_runs(tmp_path, ice_slice, score_kwargs):
    """No LLM (chrF only). Two processes scoring one folder at once would both score the
    unfinished samples (duplicate rows, double cost), or one --overwrite would truncate the
    rows the other appends; the folder is locked for the length of a run."""
    from filelock import FileLock

    from workbench.score.job import LOCK_FILE

    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    (tmp_path / "out").mkdir()
    with FileLock(str(tmp_path / "out" / LOCK_FILE)):  # as another process's run holds it
        with pytest.raises(WorkbenchError, match="another .*score.* is using"):
            score_samples(samples, **score_kwargs(resume=True))
    assert not (tmp_path / "out" / "scores.jsonl").exists()
    score_samples(samples, **score_kwargs())  # released: the folder is usable again
    assert len(read_jsonl(tmp_path / "out" / "scores.jsonl")) == 4


def test_a_second_run_is_refused_in_the_words_of_the_command_that_runs_it(tmp_path, ice_slice, score_kwargs):
    """leftovers40d: the refusal of a second run on a folder another run is scoring said "use another
    --output" also in workbench run (its score stage: two workbench run commands on one run folder), which
    takes no --output: its run folder is [run] output. No LLM (chrF only); a real file lock held here."""
    from filelock import FileLock

    from workbench.option_words import config_words
    from workbench.score.job import LOCK_FILE

    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    (tmp_path / "out").mkdir()
    with FileLock(str(tmp_path / "out" / LOCK_FILE)):  # as another process's run holds it
        with pytest.raises(WorkbenchError) as raised:
            score_samples(samples, **score_kwargs())
        assert str(raised.value).endswith("wait for it to finish (or stop it), or use another --output"), raised.value
        with config_words(lambda name: None), pytest.raises(WorkbenchError) as raised:
            score_samples(samples, **score_kwargs())
        assert str(raised.value).endswith("wait for it to finish (or stop it), or use another [run] output"), \
            raised.value


def test_an_embedding_provider_failing_mid_run_is_a_per_sample_llm_error(tmp_path, ice_slice, scripted, fake_openai, score_kwargs):
    """The chat LLM is litellm's ``mock_response`` (scripted); the embeddings come from a real
    HTTP server (the fake OpenAI-compatible server of conftest) through litellm, which starts
    answering 500 after a few requests. The samples it hits are recorded as llm_error and the
    run goes on; it used to stop the whole run."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    fake_openai.embeddings_fail_after = 4
    report = score_samples(samples, **score_kwargs(
        scripted, method=["dsa-cqe", "chrf"], embedding_model="openai/embed",
        embedding_api_base=fake_openai.api_base,
    ))
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert len(rows) == 8 and report.statuses["chrf"] == {"ok": 4}
    failed = [r for r in rows if r["method"] == "dsa-cqe" and r["status"] == "llm_error"]
    assert failed and all("embed" in r["error"] for r in failed)
    assert {r["status"] for r in rows if r["method"] == "dsa-cqe"} <= {"ok", "llm_error"}


def test_an_embedding_model_that_never_answers_stops_the_run_before_any_dsa_cqe_row(tmp_path, ice_slice, scripted, fake_openai, score_kwargs):
    """As above, but the embedding server fails from the first request: a configuration problem,
    so the run stops with a clear error instead of writing an llm_error row per sample."""
    from workbench.score.embeddings import EmbeddingError

    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    fake_openai.embeddings_fail_after = 0
    with pytest.raises(EmbeddingError, match="openai/embed"):
        score_samples(samples, **score_kwargs(
            scripted, method=["dsa-cqe"], embedding_model="openai/embed",
            embedding_api_base=fake_openai.api_base,
        ))
    assert read_jsonl(tmp_path / "out" / "scores.jsonl") == []


def test_storage_scopes_of_different_samples_never_share_a_collection(tmp_path, scripted, score_kwargs):
    """The LLM is litellm's ``mock_response`` (scripted); storage is a real embedded Chroma.
    Task and sample ids may hold "/" (``HumanEval/0``): task "a" sample "b/c" and task "a/b"
    sample "c" used to map to one collection, so one program's analysis could reset or read
    the other's records (with --workers > 1, at the same time)."""
    import chromadb

    from workbench.score.base import Sample

    program = "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"
    samples = [Sample("a", "b/c", program, program), Sample("a/b", "c", program, program)]
    score_samples(samples, **score_kwargs(scripted, method=["dsa-cqe"], keep_storage=True))
    assert [r["status"] for r in read_jsonl(tmp_path / "out" / "scores.jsonl")] == ["ok", "ok"]
    client = chromadb.PersistentClient(path=str(tmp_path / "out" / "chroma"))
    scopes = sorted(c.metadata["scope"] for c in client.list_collections())
    assert len(scopes) == 4, scopes  # two generations and the reference of each task


def test_resume_and_overwrite_together_are_refused(tmp_path, ice_slice, score_kwargs):
    """No LLM (chrF only). --resume kept the rows and --overwrite was ignored without a word;
    the two contradict each other, so the run refuses before touching the folder."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    score_samples(samples[:2], **score_kwargs())
    with pytest.raises(WorkbenchError, match="resume keeps the rows .* overwrite replaces them"):
        score_samples(samples, **score_kwargs(resume=True, overwrite=True))
    assert len(read_jsonl(tmp_path / "out" / "scores.jsonl")) == 2


def test_a_resumed_run_announces_what_is_done_and_what_is_left(tmp_path, ice_slice, score_kwargs):
    """No LLM (chrF only). The CLI's progress bar counted only the rows scored now, so a resumed
    run ended at e.g. 2/8 as if rows were missing; on_start tells it (to score, already done)."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    score_samples(samples[:3], **score_kwargs())
    seen, rows = [], []
    score_samples(samples, **score_kwargs(resume=True), on_start=lambda todo, done: seen.append((todo, done)),
                  on_row=rows.append)
    assert seen == [(1, 3)] and len(rows) == 1


def test_duplicate_samples_given_to_the_library_are_refused(tmp_path, ice_slice, score_kwargs):
    """No LLM (chrF only). load_samples refuses duplicate (task, sample) pairs, but a notebook
    user can build the list by hand: the duplicate was scored twice (two rows for one key)."""
    from workbench.errors import DataError

    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    with pytest.raises(DataError, match="duplicate sample"):
        score_samples([*samples, samples[1]], **score_kwargs())
    assert not (tmp_path / "out" / "scores.jsonl").exists()


def test_an_option_declared_recorded_joins_run_json_and_the_resume_check(tmp_path, ice_slice, score_kwargs, monkeypatch):
    """No LLM (chrF only). A new option that changes the scores (e.g. a scoring mode) is declared
    on ScoreConfig with ``option(..., recorded=True)``; that alone puts it in run.json's config
    and makes a resume with another value fail. Simulated with ``select_seed`` as such an option."""
    import json

    from workbench.score import job

    monkeypatch.setattr(job, "RECORDED_OPTIONS", ("select_seed",))
    monkeypatch.setattr(job, "SCORE_CHANGING_OPTIONS", (*job.SCORE_CHANGING_OPTIONS, "select_seed"))
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))[:2]
    score_samples(samples, **score_kwargs(select_seed=3))
    assert json.loads((tmp_path / "out" / "run.json").read_text())["config"]["select_seed"] == 3
    with pytest.raises(WorkbenchError, match="cannot resume.*select_seed 3 -> 4"):
        score_samples(samples, **score_kwargs(select_seed=4, resume=True))


@pytest.mark.parametrize("model, message", [
    ("local/nosuch", "unknown local model alias 'nosuch'"),
    ("foo/bar-model", "cannot tell which provider serves the model 'foo/bar-model'"),
])
def test_an_unusable_model_is_refused_before_the_data_loads(tmp_path, model, message):
    """No LLM is called. ``run_score`` checks the model first: the source here does not exist, so
    the model's error (not the data's) shows the check came before the load; it used to come after
    loading, tens of seconds later on a large source (a new-user probe, session 17)."""
    from workbench.score.config import ScoreConfig
    from workbench.score.job import run_score

    config = ScoreConfig(method=["ice-score"], model=model)
    with pytest.raises(WorkbenchError, match=message):
        run_score(tmp_path / "no-such-data.jsonl", config, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    # a run without an LLM method does not check the model at all: here the data's error comes first
    with pytest.raises(WorkbenchError) as error:
        run_score(tmp_path / "no-such-data.jsonl", ScoreConfig(method=["chrf"], model=model), tmp_path / "out")
    assert message not in str(error.value)
