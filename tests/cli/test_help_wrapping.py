"""The command lists of ``workbench --help`` and ``workbench models --help`` give each command one
whole sentence on one line at the common 80 and 120 columns.

newuser37 found the lists broken mid-sentence at any width: typer (rich markup mode) shows the first
paragraph of a command's docstring with its hard line breaks ("(Allamanis 2019: MinHash LSH" /
"candidates, exact set/multiset ..." / "... and write" / "deduplicated splits."), and the ``bias``
entry stopped at a colon. Each command now has a ``short_help`` for the list; its own ``--help``
keeps the docstring. Real CLI through typer's CliRunner."""

from __future__ import annotations

import re

import pytest
import typer.main
from rich.cells import cell_len
from typer.testing import CliRunner

from workbench.cli import app

runner = CliRunner()

GROUPS = [(), ("models",)]

#: a sentence boundary inside an entry: ". " or "; " or ": " before more words, or a colon at the end
SECOND_SENTENCE = re.compile(r"[.;:?!]\s+\S|:$")


def _group(path: tuple[str, ...]):
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def _command_entries(path: tuple[str, ...], width: int, monkeypatch) -> tuple[int, dict[str, list[str]]]:
    """The ``Commands`` panel of ``workbench PATH --help`` at ``width`` columns.

    Returns:
        (the width rich drew the panel at, {command name: the lines of its entry, stripped}).
    """
    import typer.rich_utils

    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", width)  # typer reads TERMINAL_WIDTH once, at import
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": str(width), "TERMINAL_WIDTH": str(width)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    panel = lines[next(i for i, line in enumerate(lines) if line.startswith("╭─ Commands ")):]
    entries: dict[str, list[str]] = {}
    name = None
    for line in panel[1:]:
        if not line.startswith("│"):
            break
        match = re.match(r"│ (\S+)  +(.*?)\s*│$", line)
        if match:
            name = match.group(1)
            entries[name] = [match.group(2)]
        elif name:
            entries[name].append(line.strip(" │"))
    return cell_len(panel[0]), entries


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("path", GROUPS, ids=lambda p: " ".join(p) or "workbench")
def test_each_command_has_one_whole_sentence_on_one_line(path, width, monkeypatch):
    drawn, entries = _command_entries(path, width, monkeypatch)
    assert drawn == width
    assert set(entries) == set(_group(path).commands), entries
    several_lines = {name: lines for name, lines in entries.items() if len(lines) != 1}
    assert not several_lines, several_lines
    for name, (text,) in entries.items():
        assert text.endswith(".") and not SECOND_SENTENCE.search(text[:-1]), (name, text)
        assert len(text.split()) >= 4, (name, text)  # a summary, not a word


@pytest.mark.parametrize("path", GROUPS, ids=lambda p: " ".join(p) or "workbench")
def test_a_commands_own_help_keeps_its_description(path, monkeypatch):
    """The summary is for the list only: ``workbench CMD --help`` still opens with the docstring."""
    for name, command in _group(path).commands.items():
        assert command.short_help and command.help and command.short_help != command.help, name
        if hasattr(command, "commands"):
            continue  # a group (models): its own help is checked with the group's path
        result = runner.invoke(app, [*path, name, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
        assert result.exit_code == 0, result.output
        first_words = " ".join(command.help.split()[:8])
        assert first_words in " ".join(result.output.replace("│", " ").split()), (name, first_words)
