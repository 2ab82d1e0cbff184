"""``--timeout`` is a deadline for the whole LLM call, not for the time between bytes.

The LLM is a scripted OpenAI-compatible server on 127.0.0.1 (``fake_openai`` of conftest)
reached through litellm's real HTTP path; it plays a stuck provider that sends one byte every
0.2 s for 30 s before its answer. Without a whole-call deadline each such call lasts 30 s and
ends ``ok``; with it, the call is abandoned after ``timeout`` seconds and recorded as an
``llm_error`` naming the deadline, the attempts and the time taken.
"""

from __future__ import annotations

import json

import pytest

from workbench.io import read_jsonl
from workbench.llm.client import LLMCallError, LLMClient, LLMSettings
from workbench.llm.deadline import DeadlineExceeded, call_with_deadline, worst_case_seconds
from workbench.score.job import Columns, load_samples, score_samples

MESSAGES = [{"role": "user", "content": "rate this"}]


def _client(fake_openai, **overrides) -> LLMClient:
    settings = LLMSettings(**{"model": "openai/stuck", "api_base": fake_openai.api_base, "timeout_s": 1.0,
                              "max_retries": 0, "retry_wait_s": 0.01, **overrides})
    return LLMClient(settings)


def _stuck(fake_openai, headers: bool = False) -> None:
    fake_openai.trickle_s = 0.2
    fake_openai.trickle_for_s = 30.0
    fake_openai.trickle_headers = headers


@pytest.mark.parametrize("headers", [False, True], ids=["body-trickles", "headers-trickle"])
def test_a_server_that_trickles_bytes_cannot_hold_a_call_past_its_timeout(fake_openai, headers):
    _stuck(fake_openai, headers)
    client = _client(fake_openai)
    with pytest.raises(LLMCallError, match=r"deadline of 1 s.*\(1 attempt, [0-9.]+ s in all\)"):
        client.complete(MESSAGES, prompt_version="v", step="s")
    assert fake_openai.count() == 1
    assert client.usage.calls == 1 and client.usage.errors == 1


def test_an_abandoned_attempt_is_retried_and_the_error_counts_every_attempt(fake_openai):
    _stuck(fake_openai)
    client = _client(fake_openai, max_retries=1)
    log = []
    with pytest.raises(LLMCallError, match=r"\(2 attempts, [0-9.]+ s in all\)") as raised:
        client.complete(MESSAGES, prompt_version="v", step="s", log=log)
    assert isinstance(raised.value.__cause__, DeadlineExceeded)
    assert fake_openai.count() == 2
    # the trace keeps the cause and the seconds the call held the sample
    assert "DeadlineExceeded" in log[0].error and log[0].seconds >= 2 * 1.0


def test_a_server_that_answers_in_time_is_not_affected(fake_openai):
    fake_openai.answer = lambda body: "4"
    fake_openai.trickle_s, fake_openai.trickle_for_s = 0.01, 0.05
    assert _client(fake_openai, timeout_s=20.0).complete(MESSAGES, prompt_version="v", step="s") == "4"


def test_a_scored_sample_on_a_stuck_server_ends_as_llm_error_with_its_cause(tmp_path, ice_slice, fake_openai, score_kwargs):
    """The whole `score` path: every ICE-Score row is an llm_error naming the deadline; chrF is unaffected."""
    _stuck(fake_openai)
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))[:2]
    report = score_samples(samples, **score_kwargs(
        None, method=["ice-score", "chrf"], model="openai/stuck", api_base=fake_openai.api_base, timeout=1.0,
        n_samples=1, score_mode="sampled", cache="off",
    ))
    rows = [r for r in read_jsonl(tmp_path / "out" / "scores.jsonl") if r["method"] == "ice-score"]
    assert report.statuses["ice-score"] == {"llm_error": 2} and report.statuses["chrf"] == {"ok": 2}
    assert all("deadline of 1 s" in r["error"] and "1 attempt" in r["error"] for r in rows)


def test_a_remote_embedding_model_gets_the_same_deadline(fake_openai):
    from workbench.score.embeddings import EmbeddingCallError, LiteLLMEmbedder

    _stuck(fake_openai)
    embedder = LiteLLMEmbedder("openai/embed", api_base=fake_openai.api_base, timeout_s=1.0, max_retries=0)
    with pytest.raises(EmbeddingCallError, match="deadline of 1 s"):
        embedder.embed(["x = 1"])


def test_call_with_deadline_passes_values_and_errors_through():
    assert call_with_deadline(lambda: json.loads("[1]"), 5.0, what="json") == [1]
    with pytest.raises(json.JSONDecodeError):
        call_with_deadline(lambda: json.loads("{"), 5.0, what="json")
    with pytest.raises(ValueError, match="> 0"):
        call_with_deadline(lambda: 1, 0, what="x")


def test_the_documented_bound_of_one_call_with_retries():
    # 3 attempts of 5 s, own backoff before retry 1 at most 1+1 s, before retry 2 at most 2+1 s
    assert worst_case_seconds(5.0, 2, 1.0, 30.0, retry_after=False) == 20.0
    assert worst_case_seconds(120.0, 2, 1.0, 30.0, retry_after=False) == 365.0
    assert worst_case_seconds(10.0, 6, 10.0, 30.0, retry_after=False) == 70.0 + 20 + 30 * 5
    # a server's Retry-After may stretch every wait to the cap (retry34: it was not counted)
    assert worst_case_seconds(5.0, 2, 1.0, 30.0) == 15.0 + 2 * 30
    assert worst_case_seconds(120.0, 2, 1.0, 30.0) == 420.0
    assert LLMSettings(model="gpt-4o-mini", timeout_s=5, max_retries=2, retry_wait_s=1).worst_case_seconds() == 75.0
    assert LLMSettings(model="local/qwen2.5-coder-0.5b", timeout_s=5, max_retries=2,
                       retry_wait_s=1).worst_case_seconds() == 20.0


_ABANDONED_IN_PYDANTIC = """
import sys, time
from typing import Annotated
from pydantic import AfterValidator, TypeAdapter
from workbench.llm.deadline import DeadlineExceeded, call_with_deadline

# the OpenAI SDK builds its response objects with pydantic-core (Rust); a slow validator keeps an
# abandoned call inside those Rust frames, as a 200 KB answer with its log-probabilities did; its short
# sleeps give up the GIL and take it again, as a long parse does, so it wakes during the shutdown
slow = TypeAdapter(Annotated[int, AfterValidator(lambda value: [time.sleep(0.01) for _ in range(3000)] and value)])
try:
    call_with_deadline(lambda: slow.validate_python(1), 0.2, what="openai/judge")
except DeadlineExceeded:
    pass
sys.argv = ["workbench", "score", sys.argv[1], "--method", "chrf"]
from workbench.cli import main
main()
"""


def test_a_call_abandoned_inside_rust_code_does_not_abort_the_command_at_exit(tmp_path):
    """No LLM: the abandoned call is a pydantic validation held by a slow validator (what a huge answer's
    parsing in the OpenAI SDK was when a scored run ended). CPython's shutdown unwinds such a daemon
    thread through Rust frames and the process aborted with status 134 ("FATAL: exception not
    rethrown") instead of the command's own status; here that is 1, for data that does not exist."""
    import subprocess
    import sys

    script = tmp_path / "abandon.py"
    script.write_text(_ABANDONED_IN_PYDANTIC)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "missing.jsonl")], capture_output=True, check=False,
                          text=True, timeout=60)
    assert "FATAL" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr
    assert "Error:" in done.stderr
