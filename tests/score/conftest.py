"""Fixtures for the scoring tests: a small real-data slice and a fake OpenAI-compatible server.

The fake server is a real HTTP server on 127.0.0.1 speaking the OpenAI chat-completions
protocol; litellm reaches it as ``openai/<name>`` with ``api_base``, exactly as it reaches
vLLM or a llama.cpp server. Its answers are set by each test, and so are the token
log-probabilities it returns (``logprobs``: OpenAI's ``choices[0].logprobs.content`` layout).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


class FakeOpenAI:
    """State of the fake server: what to answer, how slowly, and what it received."""

    def __init__(self):
        self.delay_s = 0.0
        self.status = 200
        self.answer = lambda body: "3"
        #: request body -> True where this request answers 500 (besides ``status``)
        self.fail = lambda body: False
        #: (request body, answer text) -> OpenAI ``logprobs.content`` list, or None for none
        self.logprobs = lambda body, text: None
        self.requests: list[dict] = []
        #: when each request arrived, ``time.monotonic()`` on the server side
        self.arrivals: list[float] = []
        #: how the first requests are refused, in order: (status, extra headers) each, e.g.
        #: ``(429, {"Retry-After": "2"})``; the requests after them are answered as usual
        self.refusals: list[tuple[int, dict[str, str]]] = []
        #: request body -> the assistant message to send instead of the answer's text (a tool
        #: call, ``"content": None``), or None for the usual ``{"role": "assistant", "content": text}``
        self.message = lambda body: None
        #: answer 200 with an empty ``choices`` list (a filtered or overloaded server)
        self.no_choices = False
        #: a stuck or overloaded server: with ``trickle_s`` > 0 the answer is sent one byte every
        #: ``trickle_s`` seconds, preceded by ``trickle_for_s`` seconds of JSON whitespace (the
        #: headers trickle too when ``trickle_headers``); ``stopped`` ends every trickle at teardown
        self.trickle_s = 0.0
        self.trickle_for_s = 30.0
        self.trickle_headers = False
        self.stopped = threading.Event()
        #: embedding requests beyond this many answer 500 (None: never)
        self.embeddings_fail_after: int | None = None
        self.embedding_requests = 0
        #: request handler -> True when it wrote its own reply (raw bytes: HTML, a body cut short,
        #: nothing at all); None or False: the usual reply
        self.raw = None
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def count(self) -> int:
        with self.lock:
            return len(self.requests)


def _handler(state: FakeOpenAI):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            with state.lock:
                state.requests.append(body)
                state.arrivals.append(time.monotonic())
                refusal = state.refusals.pop(0) if state.refusals else None
            if refusal is not None:
                self._refuse(*refusal)
                return
            if state.raw is not None and state.raw(self):
                return
            if state.delay_s:
                time.sleep(state.delay_s)
            if self.path.endswith("/embeddings"):
                self._embeddings(body)
                return
            if state.status != 200 or state.fail(body):
                payload = json.dumps({"error": {"message": "fake failure", "type": "server_error"}}).encode()
                self.send_response(state.status if state.status != 200 else 500)
            else:
                text = state.answer(body)
                finish, completion_tokens = "stop", 3
                # max_tokens honoured as a real server does, counting words as tokens: the answer
                # is cut there and says so
                words = text.split(" ")
                if body.get("max_tokens") and len(words) > body["max_tokens"]:
                    text, finish, completion_tokens = " ".join(words[: body["max_tokens"]]), "length", body["max_tokens"]
                message = state.message(body) or {"role": "assistant", "content": text}
                choice = {"index": 0, "message": message, "finish_reason": finish}
                content = state.logprobs(body, text) if body.get("logprobs") else None
                if content is not None:
                    choice["logprobs"] = {"content": content}
                payload = json.dumps(
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "fake"),
                        "choices": [] if state.no_choices else [choice],
                        "usage": {"prompt_tokens": 11, "completion_tokens": completion_tokens,
                                  "total_tokens": 11 + completion_tokens},
                    }
                ).encode()
                self.send_response(200)
            if state.trickle_s and state.status == 200 and not state.fail(body):
                self._trickle(payload)
                return
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            try:
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _refuse(self, status: int, headers: dict[str, str]) -> None:
            payload = json.dumps({"error": {"message": f"fake refusal {status}", "type": "rate_limit_error"}}).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _trickle(self, payload: bytes) -> None:
            # leading whitespace keeps the body valid JSON however long the trickle lasts
            body = b" " * int(state.trickle_for_s / state.trickle_s) + payload
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            head = b"".join(self._headers_buffer) + b"\r\n"
            self._headers_buffer = []
            slow = (head if state.trickle_headers else b"") + body
            try:
                if not state.trickle_headers:
                    self.wfile.write(head)
                    self.wfile.flush()
                for index in range(len(slow)):
                    if state.stopped.wait(state.trickle_s):
                        return
                    self.wfile.write(slow[index:index + 1])
                    self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _embeddings(self, body):
            with state.lock:
                state.embedding_requests += 1
                failing = state.embeddings_fail_after is not None and state.embedding_requests > state.embeddings_fail_after
            texts = body.get("input") or []
            texts = [texts] if isinstance(texts, str) else texts
            if failing:
                payload = json.dumps({"error": {"message": "fake embedding failure", "type": "server_error"}}).encode()
                self.send_response(500)
            else:
                # a deterministic 8-d vector per text (bytes of its SHA-256)
                vectors = [[b / 255 for b in hashlib.sha256(str(t).encode()).digest()[:8]] for t in texts]
                payload = json.dumps({
                    "object": "list", "model": body.get("model", "fake"),
                    "data": [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)],
                    "usage": {"prompt_tokens": len(texts), "total_tokens": len(texts)},
                }).encode()
                self.send_response(200)
                if state.trickle_s:
                    self._trickle(payload)
                    return
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


@pytest.fixture
def fake_openai(monkeypatch):
    state = FakeOpenAI()
    state.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=state.server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    yield state
    state.stopped.set()
    state.server.shutdown()
    state.server.server_close()


def token_logprobs(pieces, alternatives=None):
    """An OpenAI ``logprobs.content`` list spelling ``"".join(pieces)``.

    Args:
        pieces: the generated tokens' texts, in order.
        alternatives: token index -> {text: probability} at that position (the generated
            token gets its own probability from there when listed, else 0.9); other positions
            report only the generated token.
    """
    alternatives = alternatives or {}
    content = []
    for index, piece in enumerate(pieces):
        top = alternatives.get(index, {piece: 0.9})
        content.append({
            "token": piece,
            "logprob": math.log(top.get(piece, 0.9)),
            "bytes": list(piece.encode()),
            "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in top.items()],
        })
    return content


@pytest.fixture
def ice_slice(bundled_data, tmp_path):
    """Real ICE-Score rows: 2 tasks x 2 samples (one passing, one failing each), as a .jsonl file."""
    rows = [json.loads(line) for line in (bundled_data / "ice-score" / "humaneval_python_flat.jsonl").open()]
    picked = []
    for task in ("HumanEval/0", "HumanEval/12"):
        of_task = [r for r in rows if r["task_id"] == task]
        picked.append(next(r for r in of_task if r["passed"] == 1))
        picked.append(next(r for r in of_task if r["passed"] == 0))
    path = tmp_path / "slice.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked))
    return path


_ASSIGNED = re.compile(r"^\s*([A-Za-z_]\w*)\s*[+\-*/]?=", re.MULTILINE)


def scripted_answer(messages, schema) -> str:
    """A deterministic stand-in for an LLM (used through litellm's ``mock_response``): it answers
    each step in its schema and describes the names a sub-code assigns."""
    text = messages[-1]["content"]
    if schema is None:
        return "Functional Correctness: 3"
    properties = schema["properties"]
    if "symbols" in properties:
        code = text.split("```")[-2] if text.count("```") >= 2 else text
        names = list(dict.fromkeys(_ASSIGNED.findall(code)))[:3]
        return json.dumps(
            {"description": f"code of {len(code.splitlines())} lines", "symbols": [{"name": n, "description": f"holds {n}"} for n in names]}
        )
    if "reference_semantics" in properties:
        answer = {"reference_semantics": "r", "candidate_semantics": "c", "differences": [], "score": 2}
    else:
        answer = {"differences": ["none"], "score": 4 if "return" in text else 1}
    # the p-correct final steps ask for the comparison without a score
    return json.dumps({key: value for key, value in answer.items() if key in properties})


@pytest.fixture
def logprobs_content():
    """:func:`token_logprobs`, for the fake server's ``logprobs``."""
    return token_logprobs


@pytest.fixture
def scripted():
    """:func:`scripted_answer`, for ``mock_response``."""
    return scripted_answer


@pytest.fixture
def score_kwargs(tmp_path):
    """Builds the keyword arguments of ``score_samples``: the config (a mocked gpt-4o-mini, one
    sample at a time, no retry, fast backoff, a response cache in ``tmp_path``), the run folder
    ``tmp_path/out`` and the mocked answers (``mock``). Config fields and ``output_dir`` /
    ``extra_llm_params`` are overridden by keyword."""
    from workbench.score.config import ScoreConfig

    def make(mock=None, **overrides) -> dict:
        run = {"output_dir": tmp_path / "out", "mock_response": mock}
        for key in ("output_dir", "mock_response", "extra_llm_params"):
            if key in overrides:
                run[key] = overrides.pop(key)
        options = {"method": ["chrf"], "model": "gpt-4o-mini", "retries": 0, "retry_wait": 0.01, "workers": 1,
                   "cache_dir": tmp_path / "cache", **overrides}
        return {"config": ScoreConfig(**options), **run}

    return make


@pytest.fixture(scope="session")
def benchmark_script():
    """Loads a script of ``benchmarks/`` by name (``"join_scores"``) as a module: the scripts are
    not a package, and their functions are what these tests check."""
    import importlib.util
    import sys
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "benchmarks"

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses resolve a module's annotations through it
        spec.loader.exec_module(module)
        return module

    return load
