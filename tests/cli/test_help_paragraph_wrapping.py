"""At 80 columns, the description of ``workbench score --help`` (and of execute, run and
correlate) broke lines where the docstring's source lines break and then again where the terminal
does, leaving fragments on lines of their own (found by a new-user probe):

     Exit status: 0 ok; 1 error (configuration, data); 2 bad command line; 3 a
     method produced no
     usable row (e.g. every row llm_error); 4 a method's failed rows (llm_error,
     parse_error,
     budget_exceeded, error) above --max-failures; 130 interrupted.

typer >= 0.29 keeps a docstring's line ends after its first paragraph; ``bias`` wrote each paragraph
on one source line. Every command's description is reflowed now
(``workbench.cli.app.reflow_paragraphs``), so the check covers every command with a multi-line
paragraph. The check: within a paragraph, a line is never broken while the next word would still
have fit (greedy wrapping). Real CLI in a subprocess with ``COLUMNS=80``, as a terminal of that
width gives it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

WIDTH = 80


def _description(command: str) -> list[str]:
    env = {**os.environ, "COLUMNS": str(WIDTH), "TERM": "dumb", "NO_COLOR": "1"}
    result = subprocess.run([sys.executable, "-m", "workbench", *command.split(), "--help"], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    lines = []
    for line in result.stdout.splitlines():
        if line.startswith(("╭", "┌")):
            break  # the option boxes
        lines.append(line.rstrip())
    return lines


@pytest.mark.parametrize("command", ["score", "execute", "run", "correlate", "bias", "dedup", "languages", "report",
                                     "models serve"])
def test_help_paragraphs_are_wrapped_once(command: str) -> None:
    lines = _description(command)
    early = []
    for line, following in zip(lines, lines[1:]):
        if not line.strip() or not following.strip() or line.strip().startswith("Usage:"):
            continue
        next_word = following.split()[0]
        # the room a greedy wrap at this width would have used: one space and the next word
        if len(line) + 1 + len(next_word) <= WIDTH - 2:
            early.append(f"{line.strip()!r} / {following.strip()!r}")
    assert not early, f"workbench {command} --help breaks paragraphs early:\n" + "\n".join(early)
