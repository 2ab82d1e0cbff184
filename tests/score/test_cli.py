"""``workbench score`` from the command line against a real (fake) OpenAI-compatible HTTP
server on 127.0.0.1 (``openai/<name>`` with ``--api-base``, as for vLLM or llama.cpp servers):
SIGKILL mid-run then ``--resume``, HTTP failures, the JSON schema sent, CLI errors."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from typer.testing import CliRunner

from workbench.cli import app
from workbench.io import read_jsonl


def _cli(args: list[str], env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "workbench", "score", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, **(env or {})},
    )


def _slice(bundled_data, tmp_path, n: int):
    rows = [json.loads(line) for line, _ in zip((bundled_data / "ice-score" / "humaneval_python_flat.jsonl").open(), range(n))]
    path = tmp_path / "gen.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, rows


def test_sigkill_then_resume_loses_and_repeats_nothing(fake_openai, bundled_data, tmp_path):
    data, rows = _slice(bundled_data, tmp_path, 8)
    fake_openai.delay_s = 0.4
    out = tmp_path / "out"
    args = [str(data), "--method", "ice-score", "--model", "openai/fake", "--api-base", fake_openai.api_base,
            "--output", str(out), "--cache", "off", "--workers", "1", "--generation-column", "completion_multipl_e", "--no-progress"]
    process = _cli(args)
    scores = out / "scores.jsonl"
    deadline = time.monotonic() + 240
    while len(read_jsonl(scores)) < 3:
        assert process.poll() is None, process.stdout.read().decode()
        assert time.monotonic() < deadline, "the run wrote no rows"
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    kept = read_jsonl(scores)
    assert 3 <= len(kept) < 8
    with fake_openai.lock:
        fake_openai.requests.clear()

    fake_openai.delay_s = 0.0
    resumed = _cli([*args, "--resume"])
    output = resumed.communicate(timeout=240)[0].decode()
    assert resumed.returncode == 0, output
    final = read_jsonl(scores)
    keys = [(r["task_id"], r["sample_id"]) for r in final]
    assert len(keys) == len(set(keys)) == 8  # nothing lost, nothing twice
    assert final[: len(kept)] == kept  # finished rows untouched
    assert fake_openai.count() == 8 - len(kept)  # only the unfinished samples were asked
    assert f"{len(kept)} already done" in " ".join(output.split())
    assert len(read_jsonl(out / "traces.jsonl")) == 8


def test_http_500_and_schema_in_request(fake_openai, bundled_data, tmp_path):
    data, _ = _slice(bundled_data, tmp_path, 2)
    fake_openai.answer = lambda body: json.dumps(
        {"reference_semantics": "r", "candidate_semantics": "c", "differences": [], "score": 3}
    )
    runner = CliRunner()
    common = ["score", str(data), "--model", "openai/fake", "--api-base", fake_openai.api_base, "--cache", "off",
              "--generation-column", "completion_multipl_e", "--no-progress", "--retries", "1"]
    result = runner.invoke(app, [*common, "--method", "dsa-cqe-simplified", "--output", str(tmp_path / "ok")])
    assert result.exit_code == 0, result.output
    assert [r["score"] for r in read_jsonl(tmp_path / "ok" / "scores.jsonl")] == [3.0, 3.0]
    sent = fake_openai.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"]["properties"]["score"]["maximum"] == 4

    fake_openai.status = 500
    result = runner.invoke(app, [*common, "--method", "ice-score", "--method", "chrf", "--output", str(tmp_path / "bad")])
    assert result.exit_code == 3, result.output  # every ice-score row failed: no usable result (docs/exit-status.md)
    rows = read_jsonl(tmp_path / "bad" / "scores.jsonl")
    assert sorted((r["method"], r["status"]) for r in rows) == [("chrf", "ok"), ("chrf", "ok"), ("ice-score", "llm_error"), ("ice-score", "llm_error")]
    assert "llm_error" in result.output
    report = json.loads((tmp_path / "bad" / "run.json").read_text())
    assert len(fake_openai.requests) == 2 + 4  # the SDK under litellm must not retry on its own
    assert report["statuses"]["ice-score"] == {"llm_error": 2} and report["usage"]["errors"] == 4  # 2 samples x 2 attempts


def test_cli_errors_are_one_line(bundled_data, tmp_path):
    data, _ = _slice(bundled_data, tmp_path, 2)
    runner = CliRunner()
    result = runner.invoke(app, ["score", str(data), "--method", "chrf", "--generation-column", "nope", "-o", str(tmp_path / "o")])
    assert result.exit_code == 1 and "Error: column 'nope' not found (set it with --generation-column)" in result.output
    result = runner.invoke(app, ["score", str(data), "--method", "ice-score", "-o", str(tmp_path / "o")])
    assert result.exit_code == 2 and "--model" in result.output
    result = runner.invoke(app, ["score", str(data), "--method", "chrf", "-o", str(tmp_path / "o"), "--no-progress"])
    assert result.exit_code == 0
    result = runner.invoke(app, ["score", str(data), "--method", "chrf", "-o", str(tmp_path / "o"), "--no-progress"])
    assert result.exit_code == 1 and "--resume" in result.output


def test_no_prompt_with_a_prompt_column_is_refused_in_one_line(bundled_data, tmp_path):
    """``--no-prompt --prompt-column prompt`` was accepted and the column silently ignored: the two
    say opposite things, so the command line is refused (exit 2) before any data is read."""
    data, _ = _slice(bundled_data, tmp_path, 2)
    out = tmp_path / "o"
    result = CliRunner().invoke(app, ["score", str(data), "--method", "chrf", "--no-prompt", "--prompt-column", "prompt",
                                      "-o", str(out), "--no-progress"])
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.replace("│", " ").split())  # rich boxes and wraps the line
    assert "--no-prompt ignores the prompt column and --prompt-column names one; pass one of them" in message
    assert not out.exists()


def test_a_missing_api_key_stops_the_run_before_any_sample(bundled_data, tmp_path, monkeypatch):
    """No LLM is called: the preflight fails on the unset OPENAI_API_KEY."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    data, _ = _slice(bundled_data, tmp_path, 2)
    out = tmp_path / "o"
    result = CliRunner().invoke(app, ["score", str(data), "--method", "ice-score", "--model", "gpt-4o-mini",
                                      "--generation-column", "completion_multipl_e", "-o", str(out), "--no-progress"])
    assert result.exit_code == 1, result.output
    assert "Error: the model 'gpt-4o-mini' (openai) needs the environment variable OPENAI_API_KEY, which is not set" in result.output
    assert read_jsonl(out / "scores.jsonl") == []


def test_judge_options_that_no_method_of_the_run_reads_are_refused(bundled_data, tmp_path):
    """A new-user probe: `-m ice-score --no-reference` (after ICE-Score's reference-free variant)
    scored with the reference, silently: --no-reference is read by p-correct only. So are
    --analyse-first (p-correct) and --final-step p-correct (dsa-cqe, dsa-cqe-simplified). No LLM
    is called: the options are checked before the data loads."""
    data, _ = _slice(bundled_data, tmp_path, 2)
    runner = CliRunner()
    base = ["score", str(data), "--generation-column", "completion_multipl_e", "--model", "gpt-4o-mini",
            "-o", str(tmp_path / "o"), "--no-progress"]
    cases = [(["-m", "ice-score", "--no-reference"], "--no-reference", "p-correct", "ice-score"),
             (["-m", "ice-score", "-m", "chrf", "--analyse-first"], "--analyse-first", "p-correct", "ice-score, chrf"),
             (["-m", "p-correct", "--final-step", "p-correct"], "--final-step", "dsa-cqe", "p-correct")]
    for options, flag, reader, methods in cases:
        result = runner.invoke(app, [*base, *options], terminal_width=200)
        text = " ".join(result.output.split())
        assert result.exit_code == 2, text
        assert flag in text and f"read by {reader}" in text and f"({methods})" in text, text
        assert not (tmp_path / "o").exists()
    # with a method that reads it, the option is accepted (the others ignore it, as documented)
    from workbench.score.config import ScoreConfig

    ScoreConfig(method=["p-correct", "ice-score"], model="gpt-4o-mini", reference=False, analyse_first=True)
    ScoreConfig(method=["dsa-cqe-simplified", "chrf"], model="gpt-4o-mini", final_step="p-correct")


def test_the_status_table_is_whole_at_80_columns(tmp_path):
    """In a pipe (Rich draws 80 wide) the table of statuses printed 'parse_er…' and 'budget_e…': now each
    status's name is whole, broken at its underscore. Real run: chrF on 2 rows of the bundled ICE-Score set."""
    result = CliRunner().invoke(app, ["score", "humaneval-codex-python", "-m", "chrf", "--limit", "2",
                                      "--generation-column", "completion_multipl_e", "-o", str(tmp_path / "out"),
                                      "--no-progress"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    table = result.stdout.split("workbench score: every row")[1].split("└")[0]
    assert "…" not in table
    assert max(len(line) for line in table.splitlines()) <= 80
    for part in ("llm_", "parse_", "budget_", "exceeded", "error", "other", "mean"):
        assert part in table, part
