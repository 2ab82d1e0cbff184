"""The worked example of docs/bias.md runs as written (its two commands, through the real CLI in
a subprocess, on the bundled ICE-Score set) and prints the numbers the page quotes."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs" / "bias.md"


def _example_commands() -> list[list[str]]:
    text = DOCS.read_text()
    section = text[text.index("## Worked example"):text.index("## Measured")]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [shlex.split(command) for command in block.replace("\\\n", " ").splitlines() if command.strip()]


def test_the_worked_example_runs_as_written(tmp_path):
    commands = _example_commands()
    assert [c[:2] for c in commands] == [["workbench", "dedup"], ["workbench", "bias"]]
    env = {**os.environ, "COLUMNS": "80", "PYTHONPATH": str(DOCS.parents[1])}
    outputs = []
    for command in commands:
        done = subprocess.run([sys.executable, "-m", "workbench", *command[1:]], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    printed = outputs[1]
    quoted = DOCS.read_text().split("It prints (excerpt):")[1].split("```text\n")[1].split("```")[0]
    for line in quoted.splitlines():
        if line.strip() and line.strip() != "...":
            assert line.strip() in printed, line
    assert (tmp_path / "out" / "bias.json").is_file() and (tmp_path / "out" / "bias.png").is_file()
