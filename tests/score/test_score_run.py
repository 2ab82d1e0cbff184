"""The scoring pipeline end to end on real ICE-Score rows. The LLM is litellm's own
``mock_response`` (a scripted responder per step, or a fixed failure), so every litellm
code path runs without a model; storage is a real embedded Chroma with real MiniLM."""

from __future__ import annotations

import functools
import json

import pytest

from workbench.errors import WorkbenchError
from workbench.io import read_jsonl
from workbench.score.config import ScoreConfig
from workbench.score.job import Columns, load_samples, score_samples

METHODS = ["dsa-cqe", "dsa-cqe-simplified", "ice-score", "chrf"]


@pytest.fixture
def run_kwargs(score_kwargs):
    """``score_samples``' keyword arguments (``score_kwargs``): every method, one retry."""
    return functools.partial(score_kwargs, method=METHODS, retries=1)


@pytest.fixture
def samples(ice_slice):
    return load_samples(ice_slice, Columns(generation="completion_multipl_e"))


def _traces(path):
    return {(t["task_id"], t["sample_id"], t["method"]): t for t in read_jsonl(path / "traces.jsonl")}


def test_all_methods_rows_traces_and_rerun_from_cache(tmp_path, samples, scripted, run_kwargs):
    report = score_samples(samples, **run_kwargs(scripted))
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert len(rows) == 16 and {r["status"] for r in rows} == {"ok"}
    by_method = {m: [r for r in rows if r["method"] == m] for m in METHODS}
    assert {r["score"] for r in by_method["dsa-cqe-simplified"]} == {2.0}
    assert {r["score"] for r in by_method["ice-score"]} == {3.0}
    assert all(0 < r["score"] < 1 for r in by_method["chrf"]) and all(r["model"] is None for r in by_method["chrf"])
    for row in rows:
        assert set(row) >= {"task_id", "sample_id", "method", "model", "score", "status", "subcodes", "llm_calls",
                            "tokens", "cost_usd", "seconds", "prompt_version", "passed"}
    dsa = by_method["dsa-cqe"]
    assert all(r["subcodes"] >= 1 and r["reference_subcodes"] >= 1 for r in dsa)
    assert report.statuses["dsa-cqe"] == {"ok": 4}
    assert report.usage["calls"] == sum(r["llm_calls"] for r in rows)

    traces = _traces(tmp_path / "out")
    # the reference of each task is analysed once, by the first of its samples
    for task in ("HumanEval/0", "HumanEval/12"):
        task_traces = [t["trace"] for k, t in traces.items() if k[0] == task and k[2] == "dsa-cqe"]
        fresh = [t for t in task_traces if t["reference"]["analysed_for_this_sample"]]
        assert len(fresh) == 1
        analysed = [e for e in fresh[0]["reference"]["exchanges"] if e["step"].startswith("analyse:reference")]
        assert len(analysed) == len(fresh[0]["reference"]["decomposition"]["subcodes"])
    # the trace holds the sub-code tree, prompts, responses, retrievals and storage updates
    trace = next(t["trace"] for k, t in traces.items() if k[2] == "dsa-cqe")
    generation = trace["generation"]
    assert generation["decomposition"]["subcodes"][0]["text"]
    assert generation["exchanges"][0]["messages"][-1]["content"].startswith("Analyse this") or "Analyse this" in generation["exchanges"][0]["messages"][-1]["content"]
    assert any(u["updates"] for u in generation["units"]) or any(u["updates"] for u in trace["reference"]["units"])
    updated = [u for u in trace["reference"]["units"] if u["updates"]]
    if updated:  # a name described earlier is retrieved exactly by a later sub-code that uses it
        name = updated[0]["updates"][0]["name"]
        later = [u for u in trace["reference"]["units"] if u["index"] > updated[0]["index"] and name in u["names"]]
        assert all(any(r["key"] == name and r["how"] == "exact" for r in u["retrievals"]) for u in later)
    assert trace["compare"][0]["response"]

    # rerun in a new folder with the same cache: zero LLM calls, identical scores
    again = score_samples(samples, **run_kwargs(scripted, output_dir=tmp_path / "again"))
    assert again.usage["calls"] == 0 and again.usage["cache_hits"] > 0
    rerun = read_jsonl(tmp_path / "again" / "scores.jsonl")
    key = lambda r: (r["task_id"], r["sample_id"], r["method"])  # noqa: E731
    assert {key(r): r["score"] for r in rerun} == {key(r): r["score"] for r in rows}


def test_n_samples_averages_and_reports_spread(tmp_path, samples, run_kwargs):
    def by_repeat(messages, schema):
        # the seed sent with repeat i is seed + i, so distinct repeats can differ
        return "Functional Correctness: 4"

    answers = iter(["1", "3", "2", "2", "4", "0"] * 4)
    report = score_samples(
        samples[:2], **run_kwargs(lambda m, s: next(answers), method=["ice-score"], n_samples=3, cache="off")
    )
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert [r["scores"] for r in rows] == [[1.0, 3.0, 2.0], [2.0, 4.0, 0.0]] or [r["scores"] for r in rows] == [[2.0, 4.0, 0.0], [1.0, 3.0, 2.0]]
    for row in rows:
        assert row["score"] == pytest.approx(sum(row["scores"]) / 3)
        assert row["score_spread"] == pytest.approx(1.0 if row["scores"][0] == 1.0 else 2.0)
    assert report.usage["calls"] == 6


def test_provider_error_is_recorded_and_the_run_continues(tmp_path, samples, run_kwargs):
    report = score_samples(samples, **run_kwargs("litellm.InternalServerError"))
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert len(rows) == 16
    llm_rows = [r for r in rows if r["method"] != "chrf"]
    assert {r["status"] for r in llm_rows} == {"llm_error"} and all(r["score"] is None for r in llm_rows)
    assert all("InternalServerError" in r["error"] for r in llm_rows)
    assert {r["status"] for r in rows if r["method"] == "chrf"} == {"ok"}
    assert report.statuses["ice-score"] == {"llm_error": 4} and report.statuses["chrf"] == {"ok": 4}
    assert report.usage["errors"] > 0


def test_timeout_is_recorded(tmp_path, samples, run_kwargs):
    report = score_samples(
        samples[:2],
        **run_kwargs("{}", timeout=0.1, retries=0, method=["ice-score", "chrf"],
                  extra_llm_params={"mock_timeout": True}),
    )
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert [r["status"] for r in rows if r["method"] == "ice-score"] == ["llm_error", "llm_error"]
    # litellm's mock sleeps the timeout then raises Timeout; the whole-call deadline fires at the same moment
    assert all("Timeout" in r["error"] or "DeadlineExceeded" in r["error"] for r in rows if r["method"] == "ice-score")
    assert report.statuses["chrf"] == {"ok": 2}


def test_non_json_is_a_parse_error_after_one_repair(tmp_path, samples, run_kwargs):
    report = score_samples(samples[:2], **run_kwargs("I cannot answer in JSON, sorry.", method=["dsa-cqe-simplified", "ice-score"]))
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert {r["status"] for r in rows} == {"parse_error"}
    assert all(r["llm_calls"] == 2 for r in rows)  # the answer and one repair turn
    assert report.statuses == {"dsa-cqe-simplified": {"parse_error": 2}, "ice-score": {"parse_error": 2}}
    # a parse error is an answer, not an error: it is cached, the rerun repeats it without calls
    again = score_samples(samples[:2], **run_kwargs("{}", method=["ice-score"], output_dir=tmp_path / "b"))
    assert again.usage["calls"] == 0


def test_dsa_cqe_subcode_parse_failures_still_score(tmp_path, samples, scripted, run_kwargs):
    def flaky(messages, schema):
        if schema is not None and "symbols" in schema["properties"]:
            return "not json"
        return scripted(messages, schema)

    score_samples(samples[:1], **run_kwargs(flaky, method=["dsa-cqe"]))
    row = read_jsonl(tmp_path / "out" / "scores.jsonl")[0]
    assert row["status"] == "ok" and row["parse_failures"] == row["subcodes"] + row["reference_subcodes"]


def test_budget_exceeded_rows(tmp_path, samples, scripted, run_kwargs):
    report = score_samples(samples, **run_kwargs(scripted, max_cost=0.00001, method=["ice-score"]))
    statuses = report.statuses["ice-score"]
    assert statuses.get("ok", 0) >= 1 and statuses.get("budget_exceeded", 0) >= 1


def test_resume_skips_finished_rows_and_refuses_changed_options(tmp_path, samples, scripted, run_kwargs):
    score_samples(samples[:2], **run_kwargs(scripted, method=["ice-score", "chrf"]))
    with pytest.raises(WorkbenchError, match="pass resume to continue that run or overwrite"):
        score_samples(samples, **run_kwargs(scripted, method=["ice-score", "chrf"]))
    report = score_samples(samples, **run_kwargs(scripted, method=["ice-score", "chrf"], resume=True, cache="off"))
    assert report.resumed_rows == 4 and report.rows_written == 4 and report.usage["calls"] == 2
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    keys = [(r["task_id"], r["sample_id"], r["method"]) for r in rows]
    assert len(keys) == len(set(keys)) == 8
    with pytest.raises(WorkbenchError, match="n_samples"):
        score_samples(samples, **run_kwargs(scripted, method=["ice-score"], resume=True, n_samples=2))


def test_retry_failed_rescoring(tmp_path, samples, scripted, run_kwargs):
    score_samples(samples[:2], **run_kwargs("litellm.InternalServerError", method=["ice-score"], cache="off"))
    report = score_samples(samples[:2], **run_kwargs(scripted, method=["ice-score"], resume=True, retry_failed=True))
    assert report.rows_written == 2 and report.statuses["ice-score"] == {"ok": 2}


def test_after_retry_failed_the_long_file_has_one_current_row_per_sample(tmp_path, samples, scripted, run_kwargs):
    """Issue 12, item 9. The LLM is litellm's ``mock_response``: first a provider error on every
    call, then the scripted answers. After ``--resume --retry-failed`` a user reading
    ``scores.jsonl`` with pandas counts each (sample, method) once, with its new status."""
    import pandas as pd

    out = tmp_path / "out"
    score_samples(samples[:3], **run_kwargs("litellm.InternalServerError", method=["ice-score", "chrf"], cache="off"))
    before = pd.read_json(out / "scores.jsonl", lines=True)
    assert len(before) == 6 and set(before[before.method == "ice-score"].status) == {"llm_error"}
    score_samples(samples[:3], **run_kwargs(scripted, method=["ice-score", "chrf"], resume=True, retry_failed=True))
    after = pd.read_json(out / "scores.jsonl", lines=True)
    assert len(after) == 6 and not after.duplicated(["task_id", "sample_id", "method"]).any()
    assert set(after.status) == {"ok"} and after.groupby("method").size().to_dict() == {"chrf": 3, "ice-score": 3}
    # the chrf rows were not scored again: they are the first run's, unchanged
    assert before[before.method == "chrf"].score.tolist() == after[after.method == "chrf"].score.tolist()
    # the wide table agrees, and every attempt's trace is kept (3 failed, 3 ok, 3 chrf)
    wide = read_jsonl(out / "scores_wide.jsonl")
    assert len(wide) == 3 and all(w["ice-score"] is not None for w in wide)
    traces = read_jsonl(out / "traces.jsonl")
    assert sorted(t["status"] for t in traces if t["method"] == "ice-score") == ["llm_error"] * 3 + ["ok"] * 3


def test_bad_columns_and_options(tmp_path, ice_slice):
    from workbench.errors import MissingColumnError

    with pytest.raises(MissingColumnError, match="--generation-column"):
        load_samples(ice_slice, Columns(generation="nope"))
    # bad options fail when the config is built, naming the field
    with pytest.raises(WorkbenchError, match="model is required by an LLM method"):
        ScoreConfig(method=["ice-score"])
    with pytest.raises(WorkbenchError, match="method must be one of .*not 'bleu'"):
        ScoreConfig(method=["bleu"])


def test_loaded_samples_complete_the_prompt(ice_slice):
    import ast

    sample = load_samples(ice_slice, Columns(generation="completion_multipl_e"))[0]
    assert sample.prompt and sample.carried == {"passed": 1}
    ast.parse(sample.generation_program)
    ast.parse(sample.reference_program)
    raw = json.loads(ice_slice.read_text().splitlines()[0])
    assert sample.sample_id == raw["sample_id"]


def test_empty_reference_is_skipped_not_dropped(tmp_path, samples, scripted, run_kwargs):
    from dataclasses import replace

    broken = [replace(samples[0], reference="  \n"), samples[1]]
    report = score_samples(broken, **run_kwargs(scripted, method=["ice-score", "chrf"]))
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert len(rows) == 4
    assert [r["status"] for r in rows if r["sample_id"] == samples[0].sample_id] == ["skipped", "skipped"]
    assert report.statuses["ice-score"] == {"skipped": 1, "ok": 1}


def test_method_limit_scores_a_prefix_of_the_selection_and_resume_extends_it(tmp_path, samples, scripted, run_kwargs):
    started = []
    limited = run_kwargs(scripted, method=["ice-score", "chrf"], method_limit=["ice-score=1"])
    report = score_samples(samples, **limited, on_start=lambda todo, done: started.append((todo, done)))
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    scored = {(r["sample_id"], r["method"]) for r in rows}
    assert {m for _, m in scored} == {"ice-score", "chrf"}
    assert [s for s, m in scored if m == "ice-score"] == [samples[0].sample_id]  # the first selected sample only
    assert len([s for s, m in scored if m == "chrf"]) == len(samples)
    assert started == [(len(samples) + 1, 0)] and report.rows_written == len(samples) + 1
    assert report.usage["calls"] == 1
    # raising the limit on resume adds the next samples, nothing twice
    more = run_kwargs(scripted, method=["ice-score", "chrf"], method_limit=["ice-score=3"], resume=True)
    report = score_samples(samples, **more)
    keys = [(r["sample_id"], r["method"]) for r in read_jsonl(tmp_path / "out" / "scores.jsonl")]
    assert len(keys) == len(set(keys)) == len(samples) + 3 and report.rows_written == 2


@pytest.mark.parametrize("entry, message", [
    ("ice-score", "expected METHOD=N"), ("ice-score=0", "expected METHOD=N"), ("dsa-cqe=2", "not one of this run's"),
    # review38b: digits str.isdigit() takes and int() refuses (a superscript two) raised a bare ValueError
    ("ice-score=\u00b2", "expected METHOD=N"), ("ice-score=\u2460", "expected METHOD=N"),
])
def test_method_limit_errors_name_the_option(entry, message):
    with pytest.raises(WorkbenchError, match=message):
        ScoreConfig(method=["ice-score", "chrf"], model="gpt-4o-mini", method_limit=[entry])
    with pytest.raises(WorkbenchError, match="twice"):
        ScoreConfig(method=["ice-score"], model="gpt-4o-mini", method_limit=["ice-score=1", "ice-score=2"])
