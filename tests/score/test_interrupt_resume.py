"""Ctrl-C in ``workbench score`` (issue 12, fault a): the rows scored so far are kept and the
message gives the exact ``--resume`` command. Real subprocess and SIGINT; the judge is the fake
OpenAI-compatible server on 127.0.0.1 (``fake_openai``), slowed so the signal lands mid-run."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from ctrl_c import interrupt_after_rows
from ctrl_c import jsonl_rows as _rows


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
    assert "Interrupted: waiting for the 1 sample(s) in flight to finish their current LLM call" in " ".join(stderr.split())
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"

    fake_openai.delay_s = 0.0
    finished = subprocess.run([sys.executable, "-m", "workbench", *shlex.split(expected)[1:], "--no-progress"],
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    after = _rows(scores)
    assert len(after) == 10 and after[: len(before)] == before
