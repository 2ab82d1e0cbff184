"""The help of every ``workbench`` command reads cleanly: click-style value names, nothing
after a flag, plain argument names, and square brackets in help texts printed as written."""

from __future__ import annotations

import re

import pytest
import typer.main
from rich.cells import cell_len
from typer.testing import CliRunner

from workbench.cli import app

runner = CliRunner()

#: what typer >= 0.2x prints when left alone: "<str>", "<int range>", "<bool>", "{source}"
PLACEHOLDER = re.compile(r"<(str|int|float|bool|path|list\[\w+\])( range)?>|\{\w+\}")


def command_paths(group=None, prefix=()) -> list[tuple[str, ...]]:
    group = group or typer.main.get_command(app)
    paths = [prefix]
    for name, command in getattr(group, "commands", {}).items():
        paths += command_paths(command, (*prefix, name)) if hasattr(command, "commands") else [(*prefix, name)]
    return paths


def help_of(*path: str) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "workbench")
def test_no_type_placeholders_in_help(path):
    text = help_of(*path)
    assert not PLACEHOLDER.search(text), PLACEHOLDER.search(text).group(0)


def test_dedup_help_reads_cleanly():
    text = help_of("dedup")
    assert re.search(r"Usage: .*dedup \[OPTIONS\] SOURCE\s", text)
    assert re.search(r"--seed\s+INTEGER \[0<=x<=4294967295\]", text)
    assert re.search(r"--min-tokens\s+INTEGER\s", text) and re.search(r"--set-threshold,--t0\s+FLOAT\s", text)
    assert re.search(r"--offline\s+Never contact", text)  # a flag: no value name
    # a switch's --no- name under its name, not in a column of its own
    assert re.search(r"--progress\s+Progress bars[^\n]*\n[^\n]*--no-progress\s", text)
    assert "[default: 'id' if present, else <split>/<row>]" in text  # not eaten as Rich markup


def test_errors_still_end_in_one_line(tmp_path):
    result = runner.invoke(app, ["dedup", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 1 and "Error: " in result.output and "no such file" in result.output
    result = runner.invoke(app, ["dedup", "x.jsonl", "--seed", "-1"])
    assert result.exit_code == 2 and "--seed" in result.output


def test_help_texts_are_left_as_written(capsys):
    """Code that reads the options (the pipeline's config keys) sees the help unescaped."""
    command = typer.main.get_command(app).commands["dedup"]
    with command.make_context("dedup", ["data.jsonl"], resilient_parsing=True) as ctx:
        command.get_help(ctx)  # typer's Rich help prints as it renders
    drawn = " ".join(capsys.readouterr().out.replace("│", " ").split())  # wrapped at the terminal width
    assert "[default: 'id' if present, else <split>/<row>]" in drawn
    id_help = next(p.help for p in command.params if p.name == "id_column")
    assert id_help.endswith("[default: 'id' if present, else <split>/<row>].")  # as written, unescaped
    id_help = next(p.help for p in command.params if p.name == "id_column")
    assert "[default: 'id' if present" in id_help and "\\[" not in id_help


def _command(path: tuple[str, ...]):
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "workbench")
def test_option_names_are_whole_in_an_80_column_terminal(path, monkeypatch):
    """Rich shortened every column alike on a narrow terminal (``--problems-spl…``,
    ``--set-threshold,…``): the names stay whole, the help text wraps."""
    import typer.rich_utils

    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", 80)  # typer reads TERMINAL_WIDTH once, at import
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert result.exit_code == 0, result.output
    assert "…" not in result.output, result.output
    assert max(cell_len(line) for line in result.output.splitlines()) <= 80
    words = set(re.findall(r"--[\w-]+", result.output))
    for param in _command(path).params:
        for name in [*param.opts, *param.secondary_opts]:
            if name.startswith("--") and not getattr(param, "hidden", False):
                assert name in words, (name, result.output)


def test_score_help_says_what_the_sample_column_is():
    text = " ".join(help_of("score").split())
    assert re.search(r"--sample-column\s+TEXT\s+Sample id column \(unique within a task\); if the data has no such "
                     r"column, the samples are numbered 0, 1, \.\.\. per task in file order", text), text


def test_score_help_names_every_method():
    """The summary line of `workbench score --help` names each method --method takes (p-correct, the
    default judge of configs/humaneval.toml, was missing)."""
    from workbench.score.methods import METHODS

    summary = " ".join(help_of("score").split()).split("Exit status")[0]
    names = {"dsa-cqe": "DSA-CQE", "dsa-cqe-simplified": "its simplified form", "ice-score": "ICE-Score",
             "ice-score-usefulness": "ice-score-usefulness", "p-correct": "p-correct", "chrf": "chrF"}
    assert set(METHODS) == set(names), "a new method: name it in the score command's docstring and here"
    for method, wording in names.items():
        assert wording in summary, (method, summary)
