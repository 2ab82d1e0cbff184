"""Ctrl-C in ``workbench execute`` (issue 12, fault a): the finished rows are kept and the
message gives the exact command that continues the run. Real subprocess, real SIGINT, real
sandboxed execution; the printed command is then run and completes the results."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from ctrl_c import interrupt_after_rows
from ctrl_c import jsonl_rows as _rows


def test_ctrl_c_says_the_rows_are_kept_and_prints_the_resume_command(tmp_path: Path) -> None:
    generations = tmp_path / "gens.jsonl"
    generations.write_text("".join(
        json.dumps({"task_id": f"HumanEval/{i}", "sample_id": 0,
                    "completion": "    import time\n    time.sleep(0.4)\n    return None\n"}) + "\n" for i in range(12)))
    output = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "workbench", "execute", str(generations), "-o", str(output), "--timeout", "5",
               "-j", "1", "--no-progress"]
    returncode, stderr = interrupt_after_rows(command, lambda: _rows(output))
    assert returncode == 130, stderr
    expected = shlex.join(["workbench", "execute", str(generations), "--workers", "1", "--timeout", "5.0",
                           "--resume", "--output", str(output)])
    assert f"The finished rows are kept in {output}; continue with:" in " ".join(stderr.split())
    assert expected in stderr.splitlines(), stderr
    before = _rows(output)
    assert 2 <= len(before) < 12

    again = shlex.split(expected)
    finished = subprocess.run([sys.executable, "-m", "workbench", *again[1:], "--no-progress"],
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    after = _rows(output)
    assert sorted(r["task_id"] for r in after) == sorted(f"HumanEval/{i}" for i in range(12))
    assert after[: len(before)] == before  # kept, not run again
