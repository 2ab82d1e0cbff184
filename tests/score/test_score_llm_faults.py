"""``workbench score`` against a failing judge: a scripted OpenAI-compatible server on 127.0.0.1
(the ``fake_openai`` fixture of conftest) that refuses, rate-limits, or answers with something
that is no answer. Each test checks that finished rows are kept, that the failure is recorded
per sample with a clear message, and what ``--resume`` does next. No real model is used."""

from __future__ import annotations

import json

import pytest

from workbench.errors import WorkbenchError
from workbench.io import read_jsonl
from workbench.score.job import Columns, load_samples, score_samples


def _samples(ice_slice):
    return load_samples(ice_slice, Columns(generation="completion_multipl_e"))


def _judge(fake_openai, **overrides) -> dict:
    """ICE-Score (one call per sample) with a served model at the scripted server, one sample at a time."""
    return {"method": ["ice-score"], "model": "openai/judge", "api_base": fake_openai.api_base, "retries": 1,
            "timeout": 5, **overrides}


def _status_reply(status: int, after: int):
    """A raw reply for the fake server: the first ``after`` requests answered as usual, then every
    request refused with ``status`` and an OpenAI-shaped error body."""
    seen = {"n": 0}

    def reply(handler) -> bool:
        seen["n"] += 1
        if seen["n"] <= after:
            return False
        payload = json.dumps({"error": {"message": f"scripted {status}", "type": "invalid_request_error"}}).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
        return True

    return reply


@pytest.mark.parametrize(("status", "words"), [
    (401, r"401 .*API key"),
    (403, r"403 .*access"),
    (404, r"404 .*--model .*--api-base"),
])
def test_a_refusal_every_call_would_get_stops_the_run_at_once(tmp_path, ice_slice, fake_openai, score_kwargs,
                                                              status, words):
    """Scripted server: two answers, then 401 (a revoked key), 403 or 404 (a model the server does
    not serve) on every request. Every later sample would fail alike, so the run stops at the first
    refusal with one clear error (it used to write an ``llm_error`` row for every sample, one call
    each); the finished rows are kept and a plain ``--resume`` scores the rest."""
    samples = _samples(ice_slice)
    fake_openai.raw = _status_reply(status, after=2)
    with pytest.raises(WorkbenchError, match=words) as raised:
        score_samples(samples, **score_kwargs(**_judge(fake_openai)))
    assert "\n" not in str(raised.value) and "--resume" in str(raised.value)
    assert fake_openai.count() == 3  # no call after the refusal, and the refusal is not retried
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert [r["status"] for r in rows] == ["ok", "ok"]
    assert json.loads((tmp_path / "out" / "run.json").read_text())["status"] == "failed"
    fake_openai.raw = None  # the key fixed: the resume scores only the two samples left
    report = score_samples(samples, **score_kwargs(**_judge(fake_openai), resume=True))
    assert report.resumed_rows == 2 and report.rows_written == 2 and fake_openai.count() == 5
    assert report.statuses == {"ice-score": {"ok": 4}}


def test_a_rate_limited_row_says_what_the_server_asked_and_what_was_waited(tmp_path, ice_slice, fake_openai,
                                                                           score_kwargs, monkeypatch):
    """Scripted server: the first sample's call gets 429 ``Retry-After: 0.3``, then 429
    ``Retry-After: 3600`` and fails (one retry); the second sample's gets 429 ``Retry-After: 3600``
    (beyond the cap, made 0.2 s here) and then its answer; the third is not rate-limited. Each row
    says, per answer that asked, how long it asked and how long the judge waited before the next
    attempt (``null``: it did not, no retry left); the Retry-After used to be only in the error
    text and run.json's total."""
    import workbench.llm.client as client_module

    monkeypatch.setattr(client_module, "MAX_BACKOFF_S", 0.2)
    samples = _samples(ice_slice)
    fake_openai.refusals = [(429, {"Retry-After": "0.3"}), (429, {"Retry-After": "3600"}),
                            (429, {"Retry-After": "3600"})]
    score_samples(samples[:3], **score_kwargs(**_judge(fake_openai), retry_wait=0.01))
    first, second, third = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert first["status"] == "llm_error" and "asked to wait 3600 s" in first["error"]
    # the first ask waited for, cut at the cap; the second not at all
    assert first["retry_after"] == [{"asked_s": 0.3, "waited_s": 0.2}, {"asked_s": 3600.0, "waited_s": None}]
    assert second["status"] == "ok", second["error"]
    assert second["retry_after"] == [{"asked_s": 3600.0, "waited_s": 0.2}]
    assert third["status"] == "ok" and third["retry_after"] is None
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["usage"]["retry_after_asks"] == 3


def test_a_retry_after_shorter_than_the_own_backoff_counts_as_waited(tmp_path, ice_slice, fake_openai, score_kwargs):
    """Scripted server: 429 ``Retry-After: 0`` then the answer; the client's own backoff (0.05 s)
    is longer than asked, so the row says it waited that long."""
    fake_openai.refusals = [(429, {"Retry-After": "0"})]
    score_samples(_samples(ice_slice)[:1], **score_kwargs(**_judge(fake_openai), retry_wait=0.05))
    [row] = read_jsonl(tmp_path / "out" / "scores.jsonl")
    [wait] = row["retry_after"]
    assert row["status"] == "ok" and wait["asked_s"] == 0.0 and 0.05 <= wait["waited_s"] <= 0.1


@pytest.mark.parametrize("value", ["-5", "soon", "inf"])
def test_an_unreadable_retry_after_is_no_request(tmp_path, ice_slice, fake_openai, score_kwargs, value):
    """Scripted server: 429 with a negative, a word or an infinite ``Retry-After``, then the answer:
    the client's own backoff applies and the row records no request."""
    fake_openai.refusals = [(429, {"Retry-After": value})]
    score_samples(_samples(ice_slice)[:1], **score_kwargs(**_judge(fake_openai)))
    [row] = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert row["status"] == "ok" and row["retry_after"] is None and fake_openai.count() == 2


def _cut_reply(requests: set[int]):
    """A raw reply for the fake server: requests numbered in ``requests`` (1, 2, ...) get a 200
    whose body stops after 20 of its bytes, then the connection closes; the others are answered."""
    seen = {"n": 0}

    def reply(handler) -> bool:
        import socket

        seen["n"] += 1
        if seen["n"] not in requests:
            return False
        payload = b'{"id": "x", "object": "chat.completion", "choices": []}'
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload[:20])
        handler.wfile.flush()
        handler.connection.shutdown(socket.SHUT_RDWR)
        handler.close_connection = True
        return True

    return reply


def test_a_connection_closed_mid_body_is_retried_recorded_and_resumed_alone(tmp_path, ice_slice, fake_openai,
                                                                            score_kwargs):
    """Scripted server: both attempts of the second sample's call (requests 2 and 3) get a body cut
    after 20 bytes and a closed connection. The row is an ``llm_error`` whose error says what
    happened (it said only ``InternalServerError ... Connection error.``, which reads like a
    server's 500); the other rows are kept, and ``--resume --retry-failed`` asks again for that
    sample alone."""
    samples = _samples(ice_slice)
    fake_openai.raw = _cut_reply({2, 3})
    score_samples(samples, **score_kwargs(**_judge(fake_openai)))
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert [r["status"] for r in rows] == ["ok", "llm_error", "ok", "ok"]
    assert "(2 attempts" in rows[1]["error"]
    assert "peer closed connection without sending complete message body" in rows[1]["error"], rows[1]["error"]
    assert fake_openai.count() == 5
    report = score_samples(samples, **score_kwargs(**_judge(fake_openai), resume=True, retry_failed=True))
    assert report.retried_rows == 1 and report.rows_written == 1 and fake_openai.count() == 6
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok"}


def test_a_200_answer_in_html_is_a_clear_per_sample_error(tmp_path, ice_slice, fake_openai, score_kwargs):
    """Scripted server: a reverse proxy's HTML page with status 200 instead of the JSON answer, for
    every request. Each row is an ``llm_error`` quoting the page; no score is read from it."""
    def html(handler) -> bool:
        page = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.send_header("Content-Length", str(len(page)))
        handler.end_headers()
        handler.wfile.write(page)
        return True

    fake_openai.raw = html
    report = score_samples(_samples(ice_slice)[:2], **score_kwargs(**_judge(fake_openai)))
    assert report.statuses == {"ice-score": {"llm_error": 2}}
    row = read_jsonl(tmp_path / "out" / "scores.jsonl")[0]
    assert "502 Bad Gateway" in row["error"] and row["score"] is None


def test_after_a_refusal_the_client_sends_no_further_request(fake_openai):
    """Scripted server refusing with 401. A worker that starts its next sample before the run's main
    thread has seen the refusal must not send another request (with ``--workers 1`` the run sent a
    fourth request now and then, each worker one more with more workers): the client stops itself."""
    from workbench.llm.client import CallsStopped, LLMClient, LLMSettings, ProviderRefusedError

    fake_openai.raw = _status_reply(401, after=0)
    client = LLMClient(LLMSettings("openai/judge", api_base=fake_openai.api_base, retry_wait_s=0.01))
    messages = [{"role": "user", "content": "Is it correct?"}]
    with pytest.raises(ProviderRefusedError) as refused:
        client.complete(messages, prompt_version="v", step="s")
    assert refused.value.status == 401
    with pytest.raises(CallsStopped):
        client.complete(messages + [{"role": "user", "content": "again"}], prompt_version="v", step="s")
    assert fake_openai.count() == 1
