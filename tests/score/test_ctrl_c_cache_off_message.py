"""Ctrl-C in ``workbench score --cache off`` must not say "Each answer is cached" (found by a
new-user probe): with the cache switched off a resumed run asks those calls again, and the message
says the answers are not cached. Real subprocess and SIGINT; the
judge is the fake OpenAI-compatible server on 127.0.0.1 (``fake_openai``), slowed so the signal lands
mid-run."""

from __future__ import annotations

import sys
from pathlib import Path

from ctrl_c import interrupt_after_rows
from ctrl_c import jsonl_rows as _rows


def test_ctrl_c_with_cache_off_does_not_say_answers_are_cached(tmp_path: Path, bundled_data: Path, fake_openai) -> None:
    fake_openai.delay_s = 0.5
    fake_openai.answer = lambda body: "Functional Correctness: 3"
    lines = (bundled_data / "ice-score" / "humaneval_python_flat.jsonl").read_text().splitlines()[:10]
    data = tmp_path / "slice.jsonl"
    data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "scored"
    command = [sys.executable, "-m", "workbench", "score", str(data), "-m", "ice-score", "--model", "openai/judge",
               "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e", "--cache", "off",
               "-j", "1", "-o", str(out), "--no-progress"]
    returncode, stderr = interrupt_after_rows(command, lambda: _rows(out / "scores.jsonl"), wait_s=180,
                                              exit_timeout_s=120)
    assert returncode == 130, stderr
    said = " ".join(stderr.split())
    assert "Interrupted: no new LLM call is made" in said, stderr
    # --cache off: nothing is cached, so the message must not promise it
    assert "Each answer is cached" not in said, stderr
    assert "The answers are not cached (--cache off)" in said, stderr
