"""The DSA-CQE speed-ups that must not change scores: bounded answers (``answer_bound``),
identical requests asked once, the reference and identical sub-codes served from the cache.

The LLM is the fake OpenAI-compatible server of ``conftest`` (a real HTTP server on 127.0.0.1,
reached through litellm's ``openai/`` path), which honours ``max_tokens`` as a real server does
(words count as tokens: a longer answer is cut and ends with ``finish_reason`` ``"length"``), or
litellm's ``mock_response`` where named. Storage is a real embedded Chroma with real MiniLM.
"""

from __future__ import annotations

import json

import pytest

from workbench.io import read_jsonl
from workbench.llm.cache import ResponseCache
from workbench.llm.client import LLMClient, LLMParseError, LLMSettings
from workbench.score.job import Columns, load_samples, score_samples

SCHEMA = {
    "type": "object",
    "properties": {"description": {"type": "string"}},
    "required": ["description"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "describe x = 1"}]
#: 9 words, so 9 "tokens" at the fake server
ANSWER = json.dumps({"description": "it sets x to one and nothing else"})


def _client(fake_openai, cache_dir, **settings) -> LLMClient:
    return LLMClient(
        LLMSettings(model="openai/judge", api_base=fake_openai.api_base, retry_wait_s=0.01, max_retries=0, **settings),
        ResponseCache(cache_dir),
    )


def test_an_answer_ending_before_the_bound_is_the_unbounded_calls_answer_and_shares_its_key(tmp_path, fake_openai):
    fake_openai.answer = lambda body: ANSWER
    bounded = _client(fake_openai, tmp_path)
    log = []
    assert bounded.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s", answer_bound=20, log=log) == json.loads(ANSWER)
    assert fake_openai.requests[-1]["max_tokens"] == 20  # the bound went to the server
    assert log[0].truncated is False and bounded.usage.truncated_answers == 0
    # an unbounded client (the settings' max_tokens) is served the same answer from the cache
    unbounded = _client(fake_openai, tmp_path)
    assert unbounded.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s") == json.loads(ANSWER)
    assert unbounded.usage.calls == 0 and unbounded.usage.cache_hits == 1 and fake_openai.count() == 1


def test_an_unbounded_cached_answer_serves_a_bounded_call(tmp_path, fake_openai):
    fake_openai.answer = lambda body: ANSWER
    _client(fake_openai, tmp_path).complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s")
    bounded = _client(fake_openai, tmp_path)
    bounded.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s", answer_bound=20)
    assert bounded.usage.calls == 0 and fake_openai.count() == 1


def test_a_bound_at_or_above_max_tokens_changes_nothing(tmp_path, fake_openai):
    fake_openai.answer = lambda body: ANSWER
    client = _client(fake_openai, tmp_path, max_tokens=64)
    client.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s", answer_bound=64)
    assert fake_openai.requests[-1]["max_tokens"] == 64


def test_an_answer_cut_at_the_bound_is_flagged_counted_and_never_served_to_an_unbounded_call(tmp_path, fake_openai):
    fake_openai.answer = lambda body: ANSWER
    bounded = _client(fake_openai, tmp_path)
    log = []
    with pytest.raises(LLMParseError):  # both the answer and its repair are cut: invalid JSON
        bounded.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s", answer_bound=4, log=log)
    assert [e.truncated for e in log] == [True, True] and bounded.usage.truncated_answers == 2
    assert [r["max_tokens"] for r in fake_openai.requests] == [4, 4]
    # a rerun with the same bound is served the cut answers from the cache, still flagged
    again = _client(fake_openai, tmp_path)
    log = []
    with pytest.raises(LLMParseError):
        again.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s", answer_bound=4, log=log)
    assert again.usage.calls == 0 and [e.truncated for e in log] == [True, True] and again.usage.truncated_answers == 2
    # the unbounded call asks the server: a cut answer is not its answer
    unbounded = _client(fake_openai, tmp_path)
    assert unbounded.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s") == json.loads(ANSWER)
    assert unbounded.usage.calls == 1 and unbounded.usage.truncated_answers == 0


def test_an_answer_cut_at_max_tokens_is_counted_too(tmp_path, fake_openai):
    fake_openai.answer = lambda body: ANSWER
    client = _client(fake_openai, tmp_path, max_tokens=16)  # the CLI's smallest --max-tokens
    long = json.dumps({"description": " ".join(["word"] * 30)})
    fake_openai.answer = lambda body: long
    log = []
    client.complete(MESSAGES, prompt_version="v", step="s", log=log)
    assert log[0].truncated and client.usage.truncated_answers == 1


def test_a_one_token_read_is_not_counted_as_truncated(tmp_path, fake_openai):
    """p-correct's verdict asks for exactly one token (its distribution is the score): the length stop
    is the request. A longer answer stopped at the same kind of limit still counts (above)."""
    fake_openai.answer = lambda body: "Yes, it passes every test"
    for attempt in range(2):  # the server's answer, then the cached one
        client, log = _client(fake_openai, tmp_path), []
        client.ask(MESSAGES, prompt_version="v", step="verdict", max_tokens=1, log=log)
        assert client.usage.calls == 1 - attempt and client.usage.cache_hits == attempt
        assert log[0].truncated is False and client.usage.truncated_answers == 0
    assert fake_openai.requests[-1]["max_tokens"] == 1


def test_a_bound_below_one_token_is_refused(tmp_path, fake_openai):
    with pytest.raises(ValueError, match="answer_bound"):
        _client(fake_openai, tmp_path).ask(MESSAGES, prompt_version="v", step="s", answer_bound=0)


def test_identical_requests_in_flight_at_once_ask_the_server_once(tmp_path, fake_openai):
    """Four threads send one request together (four samples with the same sub-code): the
    first asks the server (which takes 0.5 s), the others wait and are served from the cache."""
    import threading

    fake_openai.answer = lambda body: ANSWER
    fake_openai.delay_s = 0.5
    client = _client(fake_openai, tmp_path, concurrency=4)
    logs = [[] for _ in range(4)]
    threads = [threading.Thread(target=client.complete, args=(MESSAGES,),
                                kwargs={"prompt_version": "v", "step": "s", "log": log}) for log in logs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake_openai.count() == 1
    assert client.usage.calls == 1 and client.usage.cache_hits == 3
    assert sorted(log[0].cached for log in logs) == [False, True, True, True]
    assert client._in_flight == {}


# -- DSA-CQE ---------------------------------------------------------------------------------------
def _answer_as_scripted(scripted):
    """The fake server answers each DSA-CQE step as ``scripted_answer`` does (its schema from
    the request's ``response_format``)."""

    def answer(body):
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        return scripted(body["messages"], schema)

    return answer


@pytest.fixture
def samples(ice_slice):
    return load_samples(ice_slice, Columns(generation="completion_multipl_e"))


def _dsa_run(score_kwargs, fake_openai, out, **options):
    return score_kwargs(method=["dsa-cqe"], model="openai/judge", api_base=fake_openai.api_base, score_mode="sampled",
                        output_dir=out, **options)


def test_dsa_cqe_analyses_cut_at_the_bound_are_recorded_on_the_unit_and_the_row(
        tmp_path, samples, scripted, fake_openai, score_kwargs):
    fake_openai.answer = _answer_as_scripted(scripted)
    score_samples(samples[:1], **_dsa_run(score_kwargs, fake_openai, tmp_path / "cut", analysis_max_tokens=3))
    row = read_jsonl(tmp_path / "cut" / "scores.jsonl")[0]
    trace = read_jsonl(tmp_path / "cut" / "traces.jsonl")[0]["trace"]
    units = trace["generation"]["units"] + trace["reference"]["units"]
    assert all(u["truncated"] and u["description"] is None for u in units)  # every analysis was cut
    assert row["status"] == "ok" and row["parse_failures"] == len(units)
    assert row["truncated_answers"] == 2 * len(units)  # each answer and its repair
    analyses = [e for e in trace["generation"]["exchanges"] if e["step"].startswith("analyse")]
    assert analyses and all(e["truncated"] for e in analyses)
    compare = trace["compare"][0]
    assert compare["truncated"] is False  # the bound is the analyses' only


def test_dsa_cqe_with_a_bound_above_its_answers_scores_as_without_and_reuses_their_cache(
        tmp_path, samples, scripted, fake_openai, score_kwargs):
    fake_openai.answer = _answer_as_scripted(scripted)
    score_samples(samples, **_dsa_run(score_kwargs, fake_openai, tmp_path / "unbounded", analysis_max_tokens=0))
    calls = fake_openai.count()
    score_samples(samples, **_dsa_run(score_kwargs, fake_openai, tmp_path / "bounded", analysis_max_tokens=200))
    assert fake_openai.count() == calls  # every call of the bounded run came from the unbounded run's cache
    key = lambda r: (r["task_id"], r["sample_id"])  # noqa: E731
    unbounded = {key(r): r["score"] for r in read_jsonl(tmp_path / "unbounded" / "scores.jsonl")}
    bounded = read_jsonl(tmp_path / "bounded" / "scores.jsonl")
    assert {key(r): r["score"] for r in bounded} == unbounded
    assert all(r["truncated_answers"] == 0 for r in bounded)


def test_dsa_cqe_reference_analysis_is_served_from_the_cache_when_a_run_resumes(
        tmp_path, samples, scripted, score_kwargs):
    """The LLM is litellm's ``mock_response`` (``scripted_answer``). A resumed run (a new
    process) analyses a task's reference again only on paper: every call is a cache hit."""
    first_of_each_task = [samples[0], samples[2]]
    run = dict(method=["dsa-cqe"], score_mode="sampled")
    score_samples(first_of_each_task, **score_kwargs(scripted, **run))
    score_samples(samples, **score_kwargs(scripted, resume=True, **run))
    traces = {(t["task_id"], t["sample_id"]): t["trace"] for t in read_jsonl(tmp_path / "out" / "traces.jsonl")}
    for sample in (samples[1], samples[3]):
        reference = traces[(sample.task_id, sample.sample_id)]["reference"]
        assert reference["analysed_for_this_sample"] is True  # a new process: the memo is empty
        assert reference["exchanges"] and all(e["cached"] for e in reference["exchanges"])


def test_dsa_cqe_identical_generations_get_their_analyses_from_the_cache(tmp_path, samples, scripted, score_kwargs):
    """The LLM is litellm's ``mock_response``. Two samples with the same generation text: the
    second's sub-code analyses (same text, same retrieved context) are all cache hits."""
    import dataclasses

    twin = dataclasses.replace(samples[0], sample_id="twin")
    score_samples([samples[0], twin], **score_kwargs(scripted, method=["dsa-cqe"], score_mode="sampled"))
    traces = {t["sample_id"]: t["trace"] for t in read_jsonl(tmp_path / "out" / "traces.jsonl")}
    original = traces[samples[0].sample_id]["generation"]["exchanges"]
    copy = traces["twin"]["generation"]["exchanges"]
    assert original and not any(e["cached"] for e in original)
    assert [e["messages"] for e in copy] == [e["messages"] for e in original]
    assert all(e["cached"] for e in copy)
