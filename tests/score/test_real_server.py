"""``workbench score`` against a real OpenAI-compatible model server on 127.0.0.1 (issue 15).

The server is ``workbench models serve smollm2-135m`` (llama.cpp's own HTTP server) in a
subprocess; the scorer reaches it as any user's vLLM, llama.cpp or Ollama server: ``--model
openai/smollm2-135m --api-base http://127.0.0.1:PORT/v1 --workers 4``, through litellm's
real HTTP path. The server is killed (SIGKILL) mid-run and restarted on the same port: the
run's retries carry it over, nothing is lost or scored twice. Answers, token log-probabilities
(``expected`` score mode), ``sampled`` mode and the response cache are checked on real model
output; a 135M model is a poor judge, so the test checks how scores are read, not what they are.

The server has one slot (``--parallel 1``), so with the run's fixed seed every answer is the
same however the four workers' calls overlap, the kill falls or the machine is loaded. With two
slots an answer depended on which other request was decoded beside it (same request, seed 0,
temperature 0.2: identical alone, different text beside another), and smollm2-135m rarely
writes an ICE-Score digit, so whether any ice-score row had a score to read from
log-probabilities changed with the timing of the batches (4 of 4 ``parse_error`` at load 20).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter

import pytest

from workbench.io import read_jsonl
from workbench.score.reading import NO_LOGPROBS

pytestmark = [pytest.mark.llm, pytest.mark.slow]

MODEL = "smollm2-135m"
METHODS = ["ice-score", "p-correct", "dsa-cqe"]
API_KEY = "test-key-i15"


class Server:
    """``workbench models serve`` on a fixed port, which can be killed and started again."""

    def __init__(self, port: int):
        self.port = port
        self.process: subprocess.Popen | None = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> None:
        threads = str(max(1, min(2, len(os.sched_getaffinity(0)))))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "workbench", "models", "serve", MODEL, "--port", str(self.port), "--api-key", API_KEY,
             "--threads", threads, "--parallel", "1", "--n-ctx", "4096", "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
            env={**os.environ, "WORKBENCH_AUTO_PULL": "0"},
        )
        line = self.process.stdout.readline()  # printed once the model is loaded and the port is bound
        assert line, "workbench models serve printed nothing"
        assert json.loads(line)["base_url"] == self.api_base

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def server():
    from workbench.llm.models import ModelError, pull

    try:
        pull(MODEL, progress=False)
    except ModelError as error:
        pytest.skip(f"{MODEL} cannot be had here: {error}")
    served = Server(_free_port())
    served.start()
    yield served
    served.kill()


@pytest.fixture
def four_samples(bundled_data, tmp_path):
    """Two small tasks (short prompts keep a CPU run short), two samples each."""
    rows = [json.loads(line) for line in (bundled_data / "ice-score" / "humaneval_python_flat.jsonl").open()]
    picked = [r for task in ("HumanEval/2", "HumanEval/3") for r in [r for r in rows if r["task_id"] == task][:2]]
    path = tmp_path / "four.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in picked))
    return path


def _score(data, server, out, cache, *extra):
    # --timeout counts the wait in the server's queue: one slot serves the four workers in turn
    args = [
        sys.executable, "-m", "workbench", "score", str(data), *(a for m in METHODS for a in ("-m", m)),
        "--model", f"openai/{MODEL}", "--api-base", server.api_base, "--workers", "4",
        "--generation-column", "completion_multipl_e", "--max-tokens", "96", "--max-subcodes", "1",
        "--timeout", "600", "--retries", "6", "--output", str(out), "--cache-dir", str(cache), "--no-progress", *extra,
    ]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            env={**os.environ, "OPENAI_API_KEY": API_KEY})


def _finish(process, timeout=1500) -> str:
    output = process.communicate(timeout=timeout)[0].decode()
    assert process.returncode == 0, output
    return output


def test_score_through_a_real_server_killed_and_restarted_mid_run(server, four_samples, tmp_path):
    cache = tmp_path / "cache"
    expected_out = tmp_path / "expected"

    # -- expected mode; the server is killed once rows are coming in, and started again
    run = _score(four_samples, server, expected_out, cache)
    deadline = time.monotonic() + 900
    while len(read_jsonl(expected_out / "scores.jsonl")) < 2:
        assert run.poll() is None, run.stdout.read().decode()
        assert time.monotonic() < deadline, "no rows after 15 minutes"
        time.sleep(0.1)
    server.kill()
    time.sleep(1.0)  # calls in flight fail now, and new ones cannot connect
    server.start()
    _finish(run)

    rows = read_jsonl(expected_out / "scores.jsonl")
    keys = Counter((r["task_id"], r["sample_id"], r["method"]) for r in rows)
    assert len(keys) == 4 * len(METHODS) and set(keys.values()) == {1}, "a row was lost or scored twice"
    assert {r["status"] for r in rows} <= {"ok", "parse_error"}, [r["error"] for r in rows if r["status"] != "ok"]
    report = json.loads((expected_out / "run.json").read_text())
    assert report["usage"]["errors"] >= 1, "the killed server caused no failed call: the retries were not exercised"

    # logprobs came back through litellm for every answer; each method read at least one expectation
    ok = [r for r in rows if r["status"] == "ok"]
    assert all(r["read_note"] != NO_LOGPROBS for r in ok)
    for method in METHODS:
        expected = [r for r in ok if r["method"] == method and r["score_read"] == "expected"]
        assert expected, f"{method}: no score was read from log-probabilities"
        for row in expected:
            assert row["scale_min"] <= row["score"] <= row["scale_max"]
            assert 0 < row["score_mass"] <= 1.0 + 1e-6
            assert sum(row["score_distribution"].values()) == pytest.approx(1.0)
    for row in (r for r in ok if r["method"] == "p-correct" and r["score_read"] == "expected"):
        assert row["score"] == pytest.approx(row["p_yes"] / (row["p_yes"] + row["p_no"]))

    # resuming finds nothing left to do
    _finish(_score(four_samples, server, expected_out, cache, "--resume"))
    assert len(read_jsonl(expected_out / "scores.jsonl")) == len(rows)

    # -- sampled mode: no log-probabilities asked; DSA-CQE's analyses come from the cache
    sampled_out = tmp_path / "sampled"
    _finish(_score(four_samples, server, sampled_out, cache, "--score-mode", "sampled"))
    sampled = read_jsonl(sampled_out / "scores.jsonl")
    assert {r["score_read"] for r in sampled if r["status"] == "ok"} == {"sampled"}
    sampled_report = json.loads((sampled_out / "run.json").read_text())
    assert sampled_report["usage"]["cache_hits"] > 0  # the analysis calls are shared with the expected run

    # -- the cache: with the server gone, a fresh folder is scored from the cache alone, identically
    server.kill()
    again_out = tmp_path / "again"
    _finish(_score(four_samples, server, again_out, cache, "--retries", "0"))
    again = {(r["task_id"], r["sample_id"], r["method"]): r for r in read_jsonl(again_out / "scores.jsonl")}
    for row in rows:
        twin = again[(row["task_id"], row["sample_id"], row["method"])]
        assert (twin["status"], twin["score"], twin["score_read"]) == (row["status"], row["score"], row["score_read"])
    assert json.loads((again_out / "run.json").read_text())["usage"]["calls"] == 0
