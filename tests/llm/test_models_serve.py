"""``workbench models serve``: a real OpenAI-compatible HTTP server on 127.0.0.1 in a subprocess,
with the real SmolLM2-135M model, called through litellm's ordinary ``openai/`` HTTP path.

The served answer must equal the in-process ``local/`` answer for the same request (same
engine, same defaults), the key must be required, and a server killed and restarted on the
same port must answer again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import litellm
import pytest

from workbench.llm import local, models

pytestmark = [pytest.mark.slow, pytest.mark.llm]

MESSAGES = [{"role": "user", "content": "Count from 1 to 10, separated by commas."}]


@pytest.fixture(scope="module", autouse=True)
def smollm2() -> None:
    models.pull("smollm2-135m", progress=False)
    local.register()


def _start(*options: str) -> tuple[subprocess.Popen, dict]:
    process = subprocess.Popen(
        [sys.executable, "-m", "workbench", "models", "serve", "smollm2-135m", "--json", "--threads", "1", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "WORKBENCH_AUTO_PULL": "0"},
    )
    line = process.stdout.readline()  # printed once the model is loaded and the port is bound
    if not line:
        process.kill()
        raise AssertionError(f"serve printed nothing; stderr:\n{process.stderr.read()[-3000:]}")
    return process, json.loads(line)


def _get(url: str, key: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _ask(info: dict, **params) -> litellm.ModelResponse:
    return litellm.completion(
        model=info["litellm_model"], api_base=info["base_url"], api_key=info["api_key"], messages=MESSAGES,
        num_retries=0, timeout=120, **params,
    )


def test_served_model_answers_like_the_in_process_one_and_survives_a_restart() -> None:
    process, info = _start("--api-key", "test-key-123")
    try:
        assert info["base_url"].startswith("http://127.0.0.1:") and info["base_url"].endswith("/v1")
        assert info["model"] == "smollm2-135m" and info["litellm_model"] == "openai/smollm2-135m"
        assert info["api_key"] == "test-key-123"
        root = info["base_url"].removesuffix("/v1")
        assert _get(root + "/health")[0] == 200
        assert _get(info["base_url"] + "/models")[0] == 401  # no key
        assert _get(info["base_url"] + "/models", "wrong")[0] == 401
        status, body = _get(info["base_url"] + "/models", "test-key-123")
        assert status == 200 and "smollm2-135m" in body.decode()

        served = _ask(info, temperature=0, max_tokens=20, logprobs=True, top_logprobs=3)
        in_process = litellm.completion(model="local/smollm2-135m", messages=MESSAGES, temperature=0, max_tokens=20,
                                        logprobs=True, top_logprobs=3, n_threads=1)
        assert served.choices[0].message.content == in_process.choices[0].message.content
        assert served.usage.completion_tokens == in_process.usage.completion_tokens == 20
        served_tokens = served.choices[0].logprobs.content
        assert [t.token for t in served_tokens] == [t.token for t in in_process.choices[0].logprobs.content]
        assert len(served_tokens[0].top_logprobs) == 3
        assert served_tokens[0].logprob == pytest.approx(in_process.choices[0].logprobs.content[0].logprob, abs=1e-4)

        # killed without warning, restarted on the same port: clients find it again
        port = root.rsplit(":", 1)[1]
        process.kill()
        process.wait(timeout=30)
        with pytest.raises((litellm.APIConnectionError, litellm.InternalServerError)):  # both retried by LLMClient
            _ask(info, temperature=0, max_tokens=4)
        process, again = _start("--api-key", "test-key-123", "--port", port)
        assert again["base_url"] == info["base_url"]
        assert _ask(info, temperature=0, max_tokens=20).choices[0].message.content == served.choices[0].message.content
    finally:
        process.kill()
        process.wait(timeout=30)


def test_serve_makes_a_key_and_stops_cleanly_on_sigterm() -> None:
    process, info = _start()
    try:
        assert len(info["api_key"]) >= 24  # random, printed once
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        answer = _ask(info, temperature=0, max_tokens=30,
                      response_format={"type": "json_schema", "json_schema": {"name": "n", "schema": schema}})
        assert isinstance(json.loads(answer.choices[0].message.content)["n"], int)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()
        process.wait(timeout=30)


def test_serve_rejects_a_taken_port_in_one_line() -> None:
    process, info = _start()
    try:
        port = info["base_url"].removesuffix("/v1").rsplit(":", 1)[1]
        second = subprocess.run(
            [sys.executable, "-m", "workbench", "models", "serve", "smollm2-135m", "--port", port, "--threads", "1"],
            capture_output=True, text=True, timeout=120, env={**os.environ, "WORKBENCH_AUTO_PULL": "0"},
        )
        assert second.returncode == 1, second.stderr
        assert "Error: " in second.stderr and "port" in second.stderr
    finally:
        process.kill()
        process.wait(timeout=30)
