"""Ctrl-C in ``workbench execute`` (issue 12, fault a): the finished rows are kept and the
message gives the exact command that continues the run. Real subprocess, real SIGINT, real
sandboxed execution; the printed command is then run and completes the results."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from ctrl_c import interrupt_after_rows
from ctrl_c import jsonl_rows as _rows


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_an_interruption_says_the_rows_are_kept_and_prints_the_resume_command(tmp_path: Path,
                                                                              signal_name: str) -> None:
    """Ctrl-C (SIGINT) and SIGTERM (what SLURM and ``timeout`` send first) mid-run: exit status 128 + the signal
    (docs/exit-status.md), the finished rows kept, the exact command that continues printed; run, it completes the
    results with no row lost or written twice. SIGTERM was death by the signal before (exit 143, no advice). Real
    subprocess, real signal, real sandboxed samples (0.4 s each, one worker)."""
    import signal

    signum = getattr(signal, signal_name)
    generations = tmp_path / "gens.jsonl"
    generations.write_text("".join(
        json.dumps({"task_id": f"HumanEval/{i}", "sample_id": 0,
                    "completion": "    import time\n    time.sleep(0.4)\n    return None\n"}) + "\n" for i in range(12)))
    output = tmp_path / "out.jsonl"
    command = [sys.executable, "-m", "workbench", "execute", str(generations), "-o", str(output), "--timeout", "5",
               "-j", "1", "--no-progress"]
    returncode, stderr = interrupt_after_rows(command, lambda: _rows(output), signum=signum)
    assert returncode == 128 + signum, stderr
    said = " ".join(stderr.split())
    assert f"The finished rows are kept in {output}; continue with:" in said, said
    if signal_name == "SIGTERM":
        assert "Interrupted by SIGTERM." in said, said
    expected = shlex.join(["workbench", "execute", str(generations), "--workers", "1", "--timeout", "5.0",
                           "--resume", "--output", str(output)])
    assert expected in stderr.splitlines(), stderr
    assert "Traceback" not in stderr
    before = _rows(output)
    assert 2 <= len(before) < 12

    finished = subprocess.run([sys.executable, "-m", "workbench", *shlex.split(expected)[1:], "--no-progress"],
                              capture_output=True, text=True, timeout=300)
    assert finished.returncode == 0, finished.stderr
    after = _rows(output)
    keys = [r["task_id"] for r in after]
    assert sorted(keys) == sorted(f"HumanEval/{i}" for i in range(12)) and len(set(keys)) == 12  # none lost or twice
    assert after[: len(before)] == before  # kept, not run again


def test_ctrl_c_before_any_row_does_not_say_rows_are_kept(tmp_path: Path, monkeypatch) -> None:
    """newuser35: Ctrl-C while the generations were still being read (the first seconds of a run)
    said "The finished rows are kept in out.jsonl", a file that did not exist. The Ctrl-C is raised
    where the samples are read (real CLI, real loading of the problems before it)."""
    from typer.testing import CliRunner

    import workbench.execute.job as job
    from workbench.cli import app

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(job, "load_samples", interrupted)
    generations = tmp_path / "gens.jsonl"
    generations.write_text(json.dumps({"task_id": "HumanEval/0", "completion": "    return False\n"}) + "\n")
    output = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["execute", str(generations), "-o", str(output), "--no-progress"])
    assert result.exit_code == 130, result.output
    said = " ".join(result.output.split())
    assert not output.exists()
    assert "rows are kept" not in said, said
    assert f"Interrupted before any sample finished: nothing was written to {output}; run it again with:" in said, said
