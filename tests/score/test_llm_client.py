"""The LLM client. The LLM here is litellm's own ``mock_response`` (and ``mock_timeout``):
the real litellm path runs (usage, the local cost map) without a provider."""

from __future__ import annotations

import json
import math
import time

import pytest

from workbench.errors import WorkbenchError
from workbench.llm.cache import CacheMode, ResponseCache, cache_key
from workbench.llm.client import (
    BudgetExceededError,
    LLMCallError,
    LLMClient,
    LLMParseError,
    LLMSettings,
    LocalProviderMissingError,
    MissingCredentialsError,
    UnknownProviderError,
    extract_json,
    missing_credentials,
)

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 4}},
    "required": ["score"],
    "additionalProperties": False,
}
MESSAGES = [{"role": "user", "content": "rate this"}]


def _settings(**overrides) -> LLMSettings:
    return LLMSettings(**{"model": "gpt-4o-mini", "retry_wait_s": 0.01, **overrides})


def _key(**overrides) -> str:
    base = dict(
        provider="openai", model="gpt-4o-mini", messages=MESSAGES, params={"temperature": 0.2}, seed=0,
        schema=SCHEMA, prompt_version="abc", repeat=0, api_base=None,
    )
    return cache_key(**{**base, **overrides})


def test_cache_key_covers_every_component():
    base = _key()
    variants = [
        _key(provider="ollama"), _key(model="gpt-4o"), _key(messages=[{"role": "user", "content": "other"}]),
        _key(params={"temperature": 0.7}), _key(seed=1), _key(schema=None), _key(prompt_version="abd"),
        _key(repeat=1), _key(api_base="http://127.0.0.1:8080/v1"),
    ]
    assert len({base, *variants}) == len(variants) + 1
    assert _key() == base  # deterministic


def test_cache_hit_on_rerun_and_accounting(tmp_path):
    cache = ResponseCache(tmp_path)
    client = LLMClient(_settings(), cache, mock_response='{"score": 3}')
    assert client.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s") == {"score": 3}
    assert client.usage.calls == 1 and client.usage.cache_hits == 0
    assert client.usage.prompt_tokens > 0 and client.usage.cost_usd > 0  # gpt-4o-mini is in the local cost map
    # a new client (a rerun) is answered from the cache: no call, no cost
    again = LLMClient(_settings(), ResponseCache(tmp_path), mock_response='{"score": 0}')
    assert again.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s") == {"score": 3}
    assert again.usage.calls == 0 and again.usage.cache_hits == 1 and again.usage.cost_usd == 0
    # another repeat index is another answer
    assert again.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s", repeat=1) == {"score": 0}


@pytest.mark.parametrize(
    ("mode", "expect_score", "expect_calls", "stored_after"),
    [("rw", 3, 0, True), ("ro", 3, 0, True), ("refresh", 1, 1, True), ("off", 1, 1, False)],
)
def test_cache_modes(tmp_path, mode, expect_score, expect_calls, stored_after):
    LLMClient(_settings(), ResponseCache(tmp_path), mock_response='{"score": 3}').complete(
        MESSAGES, prompt_version="v", step="s"
    )
    client = LLMClient(_settings(), ResponseCache(tmp_path, mode), mock_response='{"score": 1}')
    text = client.complete(MESSAGES, prompt_version="v", step="s")
    assert json.loads(text)["score"] == expect_score and client.usage.calls == expect_calls
    if mode == "refresh":  # refresh overwrote the stored answer
        reader = LLMClient(_settings(), ResponseCache(tmp_path, CacheMode.RO), mock_response='{"score": 4}')
        assert json.loads(reader.complete(MESSAGES, prompt_version="v", step="s"))["score"] == 1


def test_ro_never_writes(tmp_path):
    client = LLMClient(_settings(), ResponseCache(tmp_path, "ro"), mock_response='{"score": 2}')
    client.complete(MESSAGES, prompt_version="v", step="s")
    assert len(ResponseCache(tmp_path)) == 0


@pytest.mark.parametrize("damage", ["truncated", "empty", "missing"])
def test_a_damaged_cache_entry_is_a_miss_asked_again_and_replaced(tmp_path, damage):
    """A cache copied or written only in part (a full disk, a copy cut short) held a 200 KB answer's
    file cut short: every sample that met it ended as an ``error`` (``UnpicklingError: pickle data
    was truncated``), and ``--resume --retry-failed`` met it again. Now it is a miss: the model is
    asked again and the entry replaced. (diskcache keeps values over 32 KiB in files of their own.)"""
    long_answer = "Functional Correctness: 3 " + "x" * 200_000
    LLMClient(_settings(), ResponseCache(tmp_path), mock_response=long_answer).complete(
        MESSAGES, prompt_version="v", step="s")
    (stored,) = tmp_path.rglob("*.val")
    if damage == "missing":
        stored.unlink()
    else:
        stored.write_bytes(stored.read_bytes()[: 1000 if damage == "truncated" else 0])
    client = LLMClient(_settings(), ResponseCache(tmp_path), mock_response="Functional Correctness: 2")
    assert client.complete(MESSAGES, prompt_version="v", step="s") == "Functional Correctness: 2"
    assert client.usage.calls == 1 and client.usage.cache_hits == 0
    again = LLMClient(_settings(), ResponseCache(tmp_path), mock_response="Functional Correctness: 0")
    assert again.complete(MESSAGES, prompt_version="v", step="s") == "Functional Correctness: 2"
    assert again.usage.cache_hits == 1


def test_provider_errors_are_retried_a_bounded_number_of_times_and_never_cached(tmp_path):
    cache = ResponseCache(tmp_path)
    client = LLMClient(_settings(max_retries=2), cache, mock_response="litellm.InternalServerError")
    log = []
    with pytest.raises(LLMCallError, match="InternalServerError"):
        client.complete(MESSAGES, prompt_version="v", step="s", log=log)
    assert client.usage.calls == 3 and client.usage.errors == 3
    assert len(cache) == 0
    assert log[0].error and log[0].response is None


def test_bad_requests_are_not_retried():
    import litellm

    error = litellm.BadRequestError(message="bad", model="gpt-4o-mini", llm_provider="openai")
    client = LLMClient(_settings(max_retries=3), mock_response=error)
    with pytest.raises(LLMCallError):
        client.complete(MESSAGES, prompt_version="v", step="s")
    assert client.usage.calls == 1


def test_timeout_is_an_llm_error():
    client = LLMClient(_settings(timeout_s=0.2, max_retries=1), mock_response='{"score": 1}', extra_params={"mock_timeout": True})
    # litellm's mock sleeps the timeout then raises Timeout; the whole-call deadline fires at the same moment
    with pytest.raises(LLMCallError, match="Timeout|DeadlineExceeded"):
        client.complete(MESSAGES, prompt_version="v", step="s")
    assert client.usage.calls == 2


def test_one_repair_turn_then_parse_error():
    answers = iter(["I think it is fine.", '```json\n{"score": 2}\n```'])
    seen = []

    def responder(messages, schema):
        seen.append(messages)
        return next(answers)

    client = LLMClient(_settings(), mock_response=responder)
    log = []
    assert client.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s", log=log) == {"score": 2}
    assert [e.step for e in log] == ["s", "s:repair"]
    assert "not valid" in seen[1][-1]["content"] and seen[1][-2]["content"] == "I think it is fine."

    bad = LLMClient(_settings(), mock_response='{"score": 9}')
    with pytest.raises(LLMParseError, match="maximum"):
        bad.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s")
    assert bad.usage.calls == 2


def test_budget_stops_paid_calls():
    client = LLMClient(_settings(max_cost_usd=0.0), mock_response='{"score": 1}')
    with pytest.raises(BudgetExceededError):
        client.complete(MESSAGES, prompt_version="v", step="s")
    assert client.usage.calls == 0
    client = LLMClient(_settings(max_cost_usd=1e-6), mock_response='{"score": 1}')
    client.complete(MESSAGES, prompt_version="v", step="s")  # the first call spends past the budget
    with pytest.raises(BudgetExceededError):
        client.complete(MESSAGES, prompt_version="v", step="s2")


def test_local_models_need_the_local_provider(monkeypatch):
    import sys

    import workbench.llm

    # a build without the optional provider module: importing it fails
    monkeypatch.setitem(sys.modules, "workbench.llm.local", None)
    monkeypatch.delattr(workbench.llm, "local", raising=False)
    with pytest.raises(LocalProviderMissingError, match="not installed"):
        LLMClient(LLMSettings("local/qwen2.5-coder-0.5b"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    LLMClient(LLMSettings("gpt-4o-mini"))  # other models do not need it


def test_extract_json_and_settings_validation():
    assert extract_json('Sure! {"a": 1} done') == {"a": 1}
    with pytest.raises(ValueError):
        extract_json("no json")
    with pytest.raises(ValueError, match="concurrency"):
        LLMSettings("gpt-4o-mini", concurrency=0)
    with pytest.raises(ValueError, match="structured"):
        LLMSettings("gpt-4o-mini", structured="xml")


def test_unknown_local_model_fails_before_any_call(tmp_path):
    """No LLM is called: the client refuses an unknown local alias or a missing .gguf at construction."""
    from workbench.errors import WorkbenchError
    from workbench.llm.client import LLMClient, LLMSettings

    with pytest.raises(WorkbenchError, match="unknown local model alias 'nosuch'"):
        LLMClient(LLMSettings(model="local/nosuch"))
    with pytest.raises(WorkbenchError, match="not found"):
        LLMClient(LLMSettings(model=f"local/{tmp_path / 'missing.gguf'}"))


def test_a_model_litellm_cannot_place_fails_before_any_call(monkeypatch):
    """litellm resolves the provider from the model string before each call (no network); a string it
    cannot resolve would make every sample an llm_error, so the client refuses it up front."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    for model, api_base in (("gpt-nonexistent-xyz", None), ("foo/bar-model", None), ("qwen15", "http://127.0.0.1:8080/v1")):
        with pytest.raises(UnknownProviderError, match=rf"the model '{model}'.*PROVIDER/NAME"):
            LLMClient(_settings(model=model, api_base=api_base))
    # what litellm.completion would accept is accepted: a provider given as a parameter, litellm's mock
    LLMClient(_settings(model="qwen15", api_base="http://127.0.0.1:8080/v1"), extra_params={"custom_llm_provider": "openai"})
    LLMClient(_settings(model="foo/bar-model"), mock_response="4")
    LLMClient(_settings(model="openai/qwen15", api_base="http://127.0.0.1:8080/v1"))


def test_a_missing_api_key_fails_before_any_call(monkeypatch):
    """No LLM is called: the credential preflight reads only the environment (litellm.validate_environment)."""
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OLLAMA_API_BASE", "AZURE_API_KEY", "AZURE_API_BASE",
                 "AZURE_API_VERSION"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MissingCredentialsError, match=r"'gpt-4o-mini' \(openai\) needs the environment variable OPENAI_API_KEY"):
        LLMClient(_settings())
    with pytest.raises(MissingCredentialsError, match="ANTHROPIC_API_KEY"):
        LLMClient(_settings(model="anthropic/claude-3-5-sonnet-20240620"))
    with pytest.raises(MissingCredentialsError, match="AZURE_API_BASE, AZURE_API_VERSION, AZURE_API_KEY"):
        LLMClient(_settings(model="azure/gpt-4o"))
    # an OpenAI-compatible server still needs some key on the client side; the message says so
    with pytest.raises(MissingCredentialsError, match="accepts any value"):
        LLMClient(_settings(model="openai/qwen", api_base="http://127.0.0.1:8080/v1"))
    assert missing_credentials(_settings(model="ollama/qwen2.5-coder")) == []  # default endpoint localhost:11434
    assert missing_credentials(_settings(model="azure/gpt-4o", api_base="https://x.example")) == [
        "AZURE_API_VERSION", "AZURE_API_KEY"]
    assert missing_credentials(_settings(model="local/qwen2.5-coder-0.5b")) == []  # in-process: no key
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    # AWS profiles / instance roles live outside the environment: no false alarm
    assert missing_credentials(_settings(model="bedrock/anthropic.claude-v2")) == []
    LLMClient(_settings(), mock_response='{"score": 1}')  # litellm's mock calls no provider: no key needed
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    LLMClient(_settings())
    LLMClient(_settings(model="openai/qwen", api_base="http://127.0.0.1:8080/v1"))


def test_mocked_answers_never_answer_a_real_call(tmp_path, fake_openai):
    """A dry run with litellm's ``mock_response`` and a real run against a real HTTP server (the
    fake OpenAI-compatible server of conftest) share one cache folder: the real run must ask
    the server, not get the mocked answer back."""
    fake_openai.answer = lambda body: '{"score": 1}'
    settings = _settings(model="openai/judge", api_base=fake_openai.api_base)
    mocked = LLMClient(settings, ResponseCache(tmp_path), mock_response='{"score": 4}')
    assert mocked.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s") == {"score": 4}
    real = LLMClient(settings, ResponseCache(tmp_path))
    assert real.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s") == {"score": 1}
    assert fake_openai.count() == 1 and real.usage.cache_hits == 0
    # and a rerun of the real call is free
    again = LLMClient(settings, ResponseCache(tmp_path))
    assert again.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s") == {"score": 1}
    assert fake_openai.count() == 1 and again.usage.cache_hits == 1


def test_extra_llm_parameters_are_part_of_the_cache_key(tmp_path):
    """The LLM is litellm's ``mock_response``. ``extra_params`` (e.g. ``top_k``) change the answer,
    so an answer cached without them must not be served with them (and the other way round)."""
    LLMClient(_settings(), ResponseCache(tmp_path), mock_response='{"score": 3}').complete(
        MESSAGES, prompt_version="v", step="s"
    )
    other = LLMClient(_settings(), ResponseCache(tmp_path), mock_response='{"score": 1}', extra_params={"top_k": 1})
    assert json.loads(other.complete(MESSAGES, prompt_version="v", step="s"))["score"] == 1
    assert other.usage.calls == 1
    same = LLMClient(_settings(), ResponseCache(tmp_path), mock_response='{"score": 0}', extra_params={"top_k": 1})
    assert json.loads(same.complete(MESSAGES, prompt_version="v", step="s"))["score"] == 1


def test_the_engine_of_a_local_model_is_part_of_the_cache_key(tmp_path, monkeypatch):
    """The LLM is litellm's ``mock_response``. Another in-process engine answers the same request
    differently (repeat-penalty window), so its cached answers must not be served for this one."""
    from workbench.llm import local

    settings = LLMSettings("local/smollm2-135m")
    first = LLMClient(settings, ResponseCache(tmp_path), mock_response='{"score": 3}')
    assert first._key_extra["engine"].startswith("llama.cpp server (xllamacpp ")
    first.complete(MESSAGES, prompt_version="v", step="s")
    monkeypatch.setattr(local, "engine_identity", lambda: "another engine 1.0")
    other = LLMClient(settings, ResponseCache(tmp_path), mock_response='{"score": 1}')
    assert json.loads(other.complete(MESSAGES, prompt_version="v", step="s"))["score"] == 1
    assert other.usage.calls == 1 and other.usage.cache_hits == 0


def test_the_cache_key_of_a_plain_call_is_stable():
    """No LLM. The key of a call without extras or mock is the one earlier versions computed, so
    caches filled before stay valid (value computed with the code of commit d9ed91c)."""
    assert _key() == "b6d2f6be4a01618d4c08e00a8fba6f4a4da7e2aaf58ef2179366c18dd70307cc"


def test_retries_work_with_every_tenacity_the_project_allows(monkeypatch):
    """The LLM is litellm's ``mock_response`` (a provider error). pyproject allows tenacity>=8.2,
    whose ``wait_exponential_jitter`` (9.0 and older) has no ``multiplier`` argument: with such a
    tenacity every call ended as ``TypeError`` without reaching the provider. Stand-in with the
    old signature, then the retries must still happen."""
    import tenacity

    def old_wait_exponential_jitter(initial=1, max=4.6e18, exp_base=2, jitter=1):  # tenacity 9.0.0's signature
        return tenacity.wait_fixed(0)

    monkeypatch.setattr(tenacity, "wait_exponential_jitter", old_wait_exponential_jitter)
    client = LLMClient(_settings(max_retries=2), mock_response="litellm.InternalServerError")
    with pytest.raises(LLMCallError, match="InternalServerError"):
        client.complete(MESSAGES, prompt_version="v", step="s")
    assert client.usage.calls == 3


def test_backoff_doubles_with_jitter_and_is_capped():
    """No LLM: the wait before retry n is retry_wait_s * 2**(n-1) plus up to retry_wait_s of jitter, at most 30 s."""
    from types import SimpleNamespace

    from workbench.llm.client import backoff_wait

    wait = backoff_wait(0.5)
    for attempt, low in ((1, 0.5), (2, 1.0), (3, 2.0), (10, 30.0)):
        values = [wait(SimpleNamespace(attempt_number=attempt)) for _ in range(50)]
        assert all(low <= v <= min(low + 0.5, 30.0) for v in values), (attempt, min(values), max(values))
    assert len({wait(SimpleNamespace(attempt_number=1)) for _ in range(20)}) > 1  # jittered


def test_logprobs_are_asked_returned_cached_and_keyed_apart(tmp_path, fake_openai, logprobs_content):
    """A scripted OpenAI-compatible server on 127.0.0.1 returns chosen log-probabilities."""
    fake_openai.answer = lambda body: "Yes"
    fake_openai.logprobs = lambda body, text: logprobs_content(["Yes"], {0: {"Yes": .7, "No": .3}})
    settings = LLMSettings("openai/fake", api_base=fake_openai.api_base, retry_wait_s=0.01)
    client = LLMClient(settings, ResponseCache(tmp_path))
    asked = client.ask(MESSAGES, prompt_version="v", step="s", top_logprobs=5, temperature=0.0, max_tokens=1)
    (token,) = asked.tokens
    assert token.token == "Yes" and dict(token.top)["No"] == pytest.approx(math.log(.3))
    body = fake_openai.requests[-1]
    assert (body["logprobs"], body["top_logprobs"], body["temperature"], body["max_tokens"]) == (True, 5, 0.0, 1)
    # the cache keeps them
    again = LLMClient(settings, ResponseCache(tmp_path)).ask(
        MESSAGES, prompt_version="v", step="s", top_logprobs=5, temperature=0.0, max_tokens=1)
    assert again.cached and again.tokens == asked.tokens and fake_openai.count() == 1
    # a call without them (or with other per-call values) is another cache entry, and asks for none
    plain = client.ask(MESSAGES, prompt_version="v", step="s")
    assert plain.tokens is None and "logprobs" not in fake_openai.requests[-1]
    client.ask(MESSAGES, prompt_version="v", step="s", top_logprobs=5, temperature=0.0, max_tokens=2)
    assert fake_openai.count() == 3


def test_a_provider_without_logprobs_gives_none(tmp_path, fake_openai):
    fake_openai.answer = lambda body: "3"  # the server sends no logprobs
    settings = LLMSettings("openai/fake", api_base=fake_openai.api_base, retry_wait_s=0.01)
    completion = LLMClient(settings).ask(MESSAGES, prompt_version="v", step="s", top_logprobs=20)
    assert completion.text == "3" and completion.tokens is None


def test_positive_logprobs_from_a_broken_server_are_not_read(tmp_path, fake_openai, logprobs_content):
    """Scripted server on 127.0.0.1: log-probabilities above 0 (probabilities above 1) are not valid."""
    fake_openai.answer = lambda body: "Yes"
    fake_openai.logprobs = lambda body, text: [
        {"token": "Yes", "logprob": 5.0, "top_logprobs": [{"token": "Yes", "logprob": 5.0}, {"token": "No", "logprob": 3.0}]}]
    settings = LLMSettings("openai/fake", api_base=fake_openai.api_base, retry_wait_s=0.01)
    assert LLMClient(settings).ask(MESSAGES, prompt_version="v", step="s", top_logprobs=5).tokens is None
    # an alternative above 0 is left out; the generated token's own valid value is kept
    fake_openai.logprobs = lambda body, text: [
        {"token": "Yes", "logprob": -0.1, "top_logprobs": [{"token": "Yes", "logprob": -0.1}, {"token": "No", "logprob": 2.0}]}]
    (token,) = LLMClient(settings).ask(MESSAGES, prompt_version="v", step="t", top_logprobs=5).tokens
    assert token.alternatives() == [("Yes", -0.1)]


def test_a_reply_without_choices_is_a_call_error_and_not_retried(fake_openai):
    """Scripted server on 127.0.0.1 answering 200 with ``"choices": []``."""
    fake_openai.no_choices = True
    settings = LLMSettings("openai/fake", api_base=fake_openai.api_base, retry_wait_s=0.01, max_retries=2)
    with pytest.raises(LLMCallError, match=r"the reply has no choices .*\(1 attempt, "):
        LLMClient(settings).ask(MESSAGES, prompt_version="v", step="s")
    assert fake_openai.count() == 1


def _request_key(client: LLMClient, **overrides) -> str:
    arguments = {"prompt_version": "v", "repeat": 0, "schema": SCHEMA, **overrides}
    return client.request_key(MESSAGES, **arguments)


def test_every_setting_that_changes_an_answer_changes_the_key_alone(monkeypatch):
    """No LLM (keys only). Issue 12, item 4: each setting, changed alone, gives another key."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    served = dict(model="openai/fake", api_base=None)

    def key(settings=None, extra=None, **call) -> str:
        client = LLMClient(_settings(**{**served, **(settings or {})}), mock_response="x", extra_params=extra)
        return _request_key(client, **call)

    base = key()
    variants = {
        "model": key({"model": "openai/other"}),
        "api_base": key({"api_base": "http://127.0.0.1:9/v1"}),
        "temperature": key({"temperature": 0.7}),
        "top_p": key({"top_p": 0.9}),
        "max_tokens": key({"max_tokens": 100}),
        "seed": key({"seed": 1}),
        "structured json_object": key({"structured": "json_object"}),
        "structured off": key({"structured": "off"}),
        "provider params": key(extra={"top_k": 40}),
        "prompt version": key(prompt_version="w"),
        "schema": key(schema={"type": "object"}),
        "repeat": key(repeat=1),
        "logprobs": key(top_logprobs=20),
        "call temperature": key(temperature=0.0),
        "call max_tokens": key(max_tokens=1),
    }
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    variants["endpoint from the environment"] = key()
    assert len({base, *variants.values()}) == len(variants) + 1, variants
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert key() == base


def test_the_context_window_from_the_environment_is_in_a_local_key(tmp_path, monkeypatch):
    """The LLM is litellm's ``mock_response`` on a ``local/`` model. Issue 12, item 4: an answer
    cached by a run with a 4,096-token context is not served to one with 256 tokens, nor back."""
    monkeypatch.delenv("WORKBENCH_LOCAL_N_CTX", raising=False)
    settings = LLMSettings("local/qwen2.5-coder-0.5b", retry_wait_s=0.01)
    full = LLMClient(settings, ResponseCache(tmp_path), mock_response='{"score": 3}')
    full.complete(MESSAGES, prompt_version="v", step="s")
    monkeypatch.setenv("WORKBENCH_LOCAL_N_CTX", "256")
    short = LLMClient(settings, ResponseCache(tmp_path), mock_response='{"score": 1}')
    assert json.loads(short.complete(MESSAGES, prompt_version="v", step="s"))["score"] == 1
    assert short.usage.calls == 1 and short.usage.cache_hits == 0
    # an explicit n_ctx is keyed as well, and the default context written out is the default
    explicit = LLMClient(settings, mock_response="x", extra_params={"n_ctx": 256})
    monkeypatch.setenv("WORKBENCH_LOCAL_N_CTX", "4096")
    default = LLMClient(settings, ResponseCache(tmp_path), mock_response='{"score": 0}')
    assert json.loads(default.complete(MESSAGES, prompt_version="v", step="s"))["score"] == 3
    # 256 tokens from the flag's keyword or from the environment is the same setting: one key
    assert _request_key(explicit) == _request_key(short) != _request_key(full)


def test_a_local_gguf_path_is_keyed_by_its_content(tmp_path, monkeypatch):
    """The LLM is litellm's ``mock_response``. Issue 12, item 4: a replaced ``.gguf`` file (same
    path) is not served the old file's answers; the same bytes elsewhere are the same model."""
    monkeypatch.delenv("WORKBENCH_LOCAL_N_CTX", raising=False)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(1000))
    cache = tmp_path / "cache"

    def ask(answer: str, path=model) -> LLMClient:
        client = LLMClient(LLMSettings(f"local/{path}"), ResponseCache(cache), mock_response=answer)
        client.complete(MESSAGES, prompt_version="v", step="s")
        return client

    assert ask('{"score": 3}').usage.calls == 1
    assert ask('{"score": 0}').usage.cache_hits == 1  # the same file: a hit
    model.write_bytes(b"GGUF" + bytes(999) + b"\x01")  # replaced in place
    replaced = ask('{"score": 1}')
    assert replaced.usage.calls == 1 and replaced.usage.cache_hits == 0
    copy = tmp_path / "copy.gguf"
    copy.write_bytes(model.read_bytes())
    assert LLMClient(LLMSettings(f"local/{copy}"), mock_response="x")._key_extra["model_sha256"] == \
        replaced._key_extra["model_sha256"]
    with pytest.raises(WorkbenchError, match="not found"):  # no file: no key that could be served
        LLMClient(LLMSettings(f"local/{tmp_path / 'gone.gguf'}"), mock_response="x")


def test_keys_of_pinned_aliases_at_the_default_context_are_unchanged(monkeypatch):
    """No LLM (keys only). A registry alias is a content identity (its sha256 is pinned and
    checked before use), so at the default context its key is the one earlier versions computed:
    caches filled before (the fidelity runs') stay valid."""
    from workbench.llm.local import engine_identity

    monkeypatch.delenv("WORKBENCH_LOCAL_N_CTX", raising=False)
    for alias in ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"):
        settings = LLMSettings(f"local/{alias}")
        client = LLMClient(settings)
        earlier = cache_key(provider="local", model=settings.model, api_base=None, messages=MESSAGES,
                            params=settings.sampling_params(), seed=settings.seed, schema=SCHEMA,
                            prompt_version="v", repeat=0, extra={"engine": engine_identity()})
        assert _request_key(client) == earlier


def test_a_server_that_is_not_there_says_so_not_only_internal_server_error(monkeypatch):
    """newuser34: `--model openai/foo --api-base http://127.0.0.1:9/v1` (nothing listens there) was
    reported as "InternalServerError: ... OpenAIException - Connection error.", which reads like a
    server answering 500. Real litellm and socket against a closed port on 127.0.0.1; no LLM."""
    import socket

    monkeypatch.setenv("OPENAI_API_KEY", "none")
    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api_base = f"http://127.0.0.1:{port}/v1"
    settings = LLMSettings("openai/foo", api_base=api_base, retry_wait_s=0.01, max_retries=0, timeout_s=20)
    with pytest.raises(LLMCallError, match=rf"cause: ConnectionRefusedError: .*refused at {api_base}"):
        LLMClient(settings).ask(MESSAGES, prompt_version="v", step="s")


# -- Retry-After (retry34) ----------------------------------------------------------------------
def _gaps(fake_openai) -> list[float]:
    """Seconds between the requests' arrivals, measured by the server."""
    return [b - a for a, b in zip(fake_openai.arrivals, fake_openai.arrivals[1:])]


def _retrying(fake_openai, **overrides) -> LLMSettings:
    return LLMSettings("openai/fake", api_base=fake_openai.api_base, **{"retry_wait_s": 0.01, "max_retries": 2, **overrides})


def test_a_429_with_retry_after_is_waited_for_then_the_call_succeeds(fake_openai):
    """Scripted OpenAI-compatible server on 127.0.0.1: 429 with ``Retry-After: 2``, then 200. The
    client retried after 0.01-0.02 s (its own backoff), three attempts in 1.6 s against
    ``Retry-After: 1``; it must wait the 2 s the server asked for (arrivals timed by the server)."""
    fake_openai.refusals = [(429, {"Retry-After": "2"})]
    client = LLMClient(_retrying(fake_openai))
    assert client.complete(MESSAGES, prompt_version="v", step="s") == "3"
    assert fake_openai.count() == 2
    (gap,) = _gaps(fake_openai)
    assert 1.9 <= gap < 6, gap
    # the summary says how long the client waited because the server asked (beyond its own backoff)
    assert client.usage.retry_after_wait_s == 2.0
    assert client.usage.calls == 2 and client.usage.errors == 1


def test_retry_after_ms_is_read_before_retry_after(fake_openai):
    """Scripted server: 503 with ``retry-after-ms: 1500`` (OpenAI's header, read first by its SDK)
    and a coarser ``Retry-After: 3``, then 200."""
    fake_openai.refusals = [(503, {"retry-after-ms": "1500", "Retry-After": "3"})]
    assert LLMClient(_retrying(fake_openai)).complete(MESSAGES, prompt_version="v", step="s") == "3"
    (gap,) = _gaps(fake_openai)
    assert 1.4 <= gap < 2.8, gap


def test_retry_after_as_an_http_date(fake_openai):
    """Scripted server: 429 with ``Retry-After`` as an HTTP-date 3 s ahead (whole seconds, so 2-3 s
    from the answer), then 200."""
    from email.utils import formatdate

    fake_openai.refusals = [(429, {"Retry-After": formatdate(time.time() + 3, usegmt=True)})]
    assert LLMClient(_retrying(fake_openai)).complete(MESSAGES, prompt_version="v", step="s") == "3"
    (gap,) = _gaps(fake_openai)
    assert 1.5 <= gap < 5, gap


def test_a_retry_after_beyond_the_cap_waits_the_cap_and_the_error_says_what_was_asked(fake_openai, monkeypatch):
    """Scripted server: 429 with ``Retry-After: 3600`` on every attempt. Each wait stops at the cap
    (:data:`MAX_BACKOFF_S`, made 1 s here), so the documented bound (``worst_case_seconds``)
    holds; the row's error says the server asked for 3600 s."""
    import workbench.llm.client as client_module

    monkeypatch.setattr(client_module, "MAX_BACKOFF_S", 1.0)
    fake_openai.refusals = [(429, {"Retry-After": "3600"})] * 3
    settings = _retrying(fake_openai, max_retries=2, timeout_s=5)
    client = LLMClient(settings)
    started = time.monotonic()
    with pytest.raises(LLMCallError, match=r"RateLimitError.*\(3 attempts, .* s in all, 2\.0 s of it waiting as the "
                                           r"server asked \(Retry-After\)\); the server asked to wait 3600 s"):
        client.complete(MESSAGES, prompt_version="v", step="s")
    assert all(0.9 <= gap < 3 for gap in _gaps(fake_openai)), _gaps(fake_openai)
    assert time.monotonic() - started <= settings.worst_case_seconds()


def test_retry_after_is_read_from_every_place_litellm_keeps_the_headers():
    """No LLM: litellm's exceptions built as litellm builds them (the httpx response kept as
    ``response`` and ``litellm_response_headers``); bad or negative values are no request."""
    import httpx
    import litellm

    from workbench.llm.client import retry_after_seconds

    def error(headers, cls=litellm.RateLimitError):
        response = httpx.Response(429, headers=headers, request=httpx.Request("POST", "http://127.0.0.1/v1"))
        return cls("slow down", llm_provider="openai", model="m", response=response)

    assert retry_after_seconds(error({"Retry-After": "2"})) == 2.0
    assert retry_after_seconds(error({"retry-after": "1.5"})) == 1.5
    assert retry_after_seconds(error({"Retry-After-Ms": "250", "Retry-After": "9"})) == 0.25
    assert retry_after_seconds(error({"Retry-After": "soon"})) is None
    assert retry_after_seconds(error({"Retry-After": "-3"})) is None
    assert retry_after_seconds(error({})) is None
    assert retry_after_seconds(error({"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT"})) == 0.0  # in the past
    bare = litellm.RateLimitError("slow down", llm_provider="openai", model="m")
    assert retry_after_seconds(bare) is None
    bare.litellm_response_headers = httpx.Headers({"retry-after": "4"})
    assert retry_after_seconds(bare) == 4.0
    assert retry_after_seconds(ValueError("no response")) is None


# -- replies without text (retry34) -------------------------------------------------------------
def test_a_reply_with_null_content_says_so_and_is_not_cached(tmp_path, fake_openai):
    """Scripted server answering 200 with ``"content": null``. It was taken as the text ``''``:
    a parse error quoting ``''`` after a repair turn, cached, so every rerun replayed it. It is a
    call error now, as a reply without choices: not retried, not cached (a rerun asks again)."""
    fake_openai.message = lambda body: {"role": "assistant", "content": None}
    settings = _retrying(fake_openai)
    with pytest.raises(LLMCallError, match=r"the reply has no text \(content null, finish_reason 'stop'\)"):
        LLMClient(settings, ResponseCache(tmp_path)).complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s")
    assert fake_openai.count() == 1
    fake_openai.message = lambda body: None
    fake_openai.answer = lambda body: '{"score": 3}'
    again = LLMClient(settings, ResponseCache(tmp_path))
    assert again.complete_json(MESSAGES, SCHEMA, prompt_version="v", step="s") == {"score": 3}
    assert fake_openai.count() == 2 and again.usage.cache_hits == 0


def test_a_reply_holding_a_tool_call_names_it(fake_openai):
    """Scripted server answering 200 with a tool call and no text."""
    fake_openai.message = lambda body: {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "get_score", "arguments": "{}"}}]}
    client = LLMClient(_retrying(fake_openai))
    with pytest.raises(LLMCallError, match=r"the reply holds a tool call \(get_score\) instead of text"):
        client.complete(MESSAGES, prompt_version="v", step="s")
    assert fake_openai.count() == 1
    assert client.usage.prompt_tokens == 11  # a billed answer: its tokens are counted


def test_errors_that_differ_only_in_waits_count_as_one_failure_reason():
    """No LLM: the run's most common error groups rows whose errors differ only in the attempts,
    seconds and Retry-After waits the client appends (``failure_reasons``)."""
    from workbench.score.job import failure_reasons

    errors = [
        "m: RateLimitError: slow down (3 attempts, 61.2 s in all, 60.0 s of it waiting as the server asked "
        "(Retry-After)); the server asked to wait 3600 s (Retry-After), more than the 30 s one wait may last: run again later",
        "m: RateLimitError: slow down (3 attempts, 60.9 s in all, 59.9 s of it waiting as the server asked "
        "(Retry-After)); the server asked to wait 3599.5 s (Retry-After), more than the 30 s one wait may last: run again later",
        "m: RateLimitError: slow down (3 attempts, 2.2 s in all)",
    ]
    rows = [{"method": "ice-score", "status": "llm_error", "error": error} for error in errors]
    assert failure_reasons(rows)["ice-score"]["count"] == 3
