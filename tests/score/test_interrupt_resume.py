"""Ctrl-C in ``workbench score`` (issue 12, fault a): the rows scored so far are kept and the
message gives the exact ``--resume`` command, and says the answers are not cached under ``--cache off``. Real subprocess and SIGINT; the judge is the fake
OpenAI-compatible server on 127.0.0.1 (``fake_openai``), slowed so the signal lands mid-run."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from ctrl_c import interrupt_after_rows
from ctrl_c import jsonl_rows as _rows


def test_ctrl_c_keeps_the_rows_and_prints_the_resume_command(tmp_path: Path, bundled_data: Path, fake_openai) -> None:
    fake_openai.delay_s = 0.5
    fake_openai.answer = lambda body: "Functional Correctness: 3"
    lines = (bundled_data / "ice-score" / "humaneval_python_flat.jsonl").read_text().splitlines()[:10]
    data = tmp_path / "slice.jsonl"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "scored"
    command = [sys.executable, "-m", "workbench", "score", str(data), "-m", "ice-score", "--model", "openai/judge",
               "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e", "--cache", "off",
               "-j", "1", "-o", str(out), "--no-progress"]
    scores = out / "scores.jsonl"
    returncode, stderr = interrupt_after_rows(command, lambda: _rows(scores), wait_s=180, exit_timeout_s=120)
    assert returncode == 130, stderr
    expected = shlex.join(["workbench", "score", str(data), "--method", "ice-score", "--model", "openai/judge",
                           "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e",
                           "--workers", "1", "--cache", "off", "--resume", "--output", str(out)])
    assert f"The rows scored so far are kept in {scores}; continue with:" in " ".join(stderr.split())
    assert expected in stderr.splitlines(), stderr
    before = _rows(scores)
    assert 2 <= len(before) < 10
    # said at once that it waits for the call in flight (each takes 0.5 s, so one almost always is), and
    # run.json does not claim a dead run is still running
    assert "Interrupted: no new LLM call is made; waiting for the 1 sample in flight" in " ".join(stderr.split())
    # --cache off (a new-user probe, fix38u): the message said "Each answer is cached", untrue with the
    # cache off (a resume asks those calls again)
    assert "Each answer is cached" not in " ".join(stderr.split()), stderr
    assert "The answers are not cached (--cache off)" in " ".join(stderr.split()), stderr
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"

    fake_openai.delay_s = 0.0
    finished = subprocess.run([sys.executable, "-m", "workbench", *shlex.split(expected)[1:], "--no-progress"],
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    after = _rows(scores)
    assert len(after) == 10 and after[: len(before)] == before


def _slice(bundled_data: Path, tmp_path: Path, rows: int) -> Path:
    lines = (bundled_data / "ice-score" / "humaneval_python_flat.jsonl").read_text().splitlines()[:rows]
    data = tmp_path / "slice.jsonl"
    data.write_text("\n".join(lines) + "\n")
    return data


def _start(command: list[str]) -> subprocess.Popen:
    # a child inherits an ignored SIGINT from a background shell: restore the default, as a terminal has
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _wait_for(condition, timeout_s: float, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert condition() and process.poll() is None, process.communicate()


def test_a_second_ctrl_c_abandons_the_calls_in_flight_and_resume_scores_them(tmp_path, bundled_data, fake_openai) -> None:
    """Two slow calls in flight (fake server on 127.0.0.1, 30 s per answer): the first Ctrl-C waits for
    them, the second ends the wait at once; nothing half-done is recorded, and --resume scores all."""
    fake_openai.delay_s = 30.0
    fake_openai.answer = lambda body: "Functional Correctness: 3"
    data, out = _slice(bundled_data, tmp_path, 4), tmp_path / "scored"
    command = [sys.executable, "-m", "workbench", "score", str(data), "-m", "ice-score", "--model", "openai/judge",
               "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e", "-j", "2",
               "--cache-dir", str(tmp_path / "cache"), "-o", str(out), "--no-progress"]
    process = _start(command)
    _wait_for(lambda: fake_openai.count() >= 2, 120, process)
    process.send_signal(signal.SIGINT)
    time.sleep(1.0)
    assert process.poll() is None  # still waiting for the two calls
    process.send_signal(signal.SIGINT)
    started = time.monotonic()
    _, stderr = process.communicate(timeout=60)
    said = " ".join(stderr.split())
    assert process.returncode == 130, stderr
    assert time.monotonic() - started < 15, "the second Ctrl-C did not end the wait"
    assert "Interrupted again: abandoning the calls of the 2 samples in flight" in said
    assert fake_openai.count() == 2  # no request after the first Ctrl-C
    assert _rows(out / "scores.jsonl") == []  # abandoned samples are not recorded as failures
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"

    fake_openai.delay_s = 0.0
    finished = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    rows = _rows(out / "scores.jsonl")
    assert len(rows) == 4 and {row["status"] for row in rows} == {"ok"}


def test_ctrl_c_sends_no_retry_and_leaves_the_failing_sample_for_resume(tmp_path, bundled_data, fake_openai) -> None:
    """A server that answers 500 after 2 s (fake, 127.0.0.1), 5 retries allowed: after Ctrl-C the call in
    flight ends and no retry is sent; the sample gets no llm_error row, so a plain --resume scores it."""
    fake_openai.delay_s = 2.0
    fake_openai.status = 500
    data, out = _slice(bundled_data, tmp_path, 2), tmp_path / "scored"
    command = [sys.executable, "-m", "workbench", "score", str(data), "-m", "ice-score", "--model", "openai/judge",
               "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e", "-j", "1",
               "--retries", "5", "--retry-wait", "0.1", "--cache", "off", "-o", str(out), "--no-progress"]
    process = _start(command)
    _wait_for(lambda: fake_openai.count() >= 1, 120, process)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    assert fake_openai.count() == 1, "a retry was sent after Ctrl-C"
    assert _rows(out / "scores.jsonl") == []

    fake_openai.delay_s, fake_openai.status = 0.0, 200
    fake_openai.answer = lambda body: "Functional Correctness: 4"
    finished = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    assert [row["status"] for row in _rows(out / "scores.jsonl")] == ["ok", "ok"]


def test_sigterm_keeps_the_rows_records_the_interruption_and_resume_loses_none(tmp_path, bundled_data, fake_openai) -> None:
    """SIGTERM (SLURM, ``timeout``) killed ``score`` like SIGKILL: exit 143, no resume advice and
    run.json left saying ``running``. Now it ends the run as Ctrl-C does (exit status 143). Real
    subprocess and SIGTERM; the judge is the fake OpenAI-compatible server on 127.0.0.1, 0.5 s per answer."""
    fake_openai.delay_s = 0.5
    fake_openai.answer = lambda body: "Functional Correctness: 3"
    data, out = _slice(bundled_data, tmp_path, 10), tmp_path / "scored"
    command = [sys.executable, "-m", "workbench", "score", str(data), "-m", "ice-score", "--model", "openai/judge",
               "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e",
               "--cache-dir", str(tmp_path / "cache"), "-j", "1", "-o", str(out), "--no-progress"]
    scores = out / "scores.jsonl"
    returncode, stderr = interrupt_after_rows(command, lambda: _rows(scores), wait_s=180, exit_timeout_s=120,
                                              signum=signal.SIGTERM)
    said = " ".join(stderr.split())
    assert returncode == 143, stderr
    assert "Traceback" not in stderr
    assert f"Interrupted by SIGTERM. The rows scored so far are kept in {scores}; continue with:" in said, said
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    before = _rows(scores)
    assert 2 <= len(before) < 10

    fake_openai.delay_s = 0.0
    finished = subprocess.run([*command, "--resume"], capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    after = _rows(scores)
    keys = [(row["task_id"], row["sample_id"], row["method"]) for row in after]
    assert len(after) == 10 and len(set(keys)) == 10 and after[: len(before)] == before


def test_the_waiting_line_under_workbench_run_has_no_parenthesis_inside_a_parenthesis(capsys) -> None:
    """A new user's Ctrl-C in `workbench run`'s score stage (fresh40) read "the others are left to resume
    (rerun the same command (the stage resumes))": the resume advice, which has its own parenthesis in
    the run's words, was put in parentheses. The real message printer, in the run's config words and in
    the command line's."""
    from workbench.cli.score import _say_waiting
    from workbench.option_words import config_words

    with config_words(lambda name: f"[score] {name}"):
        _say_waiting(1, False)
    said = " ".join(capsys.readouterr().err.split())
    assert "the others are left to resume: rerun the same command (the stage resumes)." in said, said
    assert "((" not in said and "))" not in said, said
    _say_waiting(1, False)
    said = " ".join(capsys.readouterr().err.split())
    assert "the others are left to resume: rerun with --resume." in said, said
