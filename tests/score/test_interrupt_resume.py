"""Ctrl-C in ``workbench score`` (issue 12, fault a): the rows scored so far are kept and the
message gives the exact ``--resume`` command. Real subprocess and SIGINT; the judge is the fake
OpenAI-compatible server on 127.0.0.1 (``fake_openai``), slowed so the signal lands mid-run."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path


def _rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip().endswith("}")]


def test_ctrl_c_keeps_the_rows_and_prints_the_resume_command(tmp_path: Path, shared_data: Path, fake_openai) -> None:
    fake_openai.delay_s = 0.5
    fake_openai.answer = lambda body: "Functional Correctness: 3"
    lines = (shared_data / "ice-score" / "humaneval_python_flat.jsonl").read_text().splitlines()[:10]
    data = tmp_path / "slice.jsonl"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "scored"
    command = [sys.executable, "-m", "workbench", "score", str(data), "-m", "ice-score", "--model", "openai/judge",
               "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e", "--cache", "off",
               "-j", "1", "-o", str(out), "--no-progress"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    scores = out / "scores.jsonl"
    deadline = time.monotonic() + 180
    while len(_rows(scores)) < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    expected = shlex.join(["workbench", "score", str(data), "--method", "ice-score", "--model", "openai/judge",
                           "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e",
                           "--workers", "1", "--cache", "off", "--resume", "--output", str(out)])
    assert f"The rows scored so far are kept in {scores}; continue with:" in " ".join(stderr.split())
    assert expected in stderr.splitlines(), stderr
    before = _rows(scores)
    assert 2 <= len(before) < 10

    fake_openai.delay_s = 0.0
    finished = subprocess.run([sys.executable, "-m", "workbench", *shlex.split(expected)[1:], "--no-progress"],
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    after = _rows(scores)
    assert len(after) == 10 and after[: len(before)] == before
