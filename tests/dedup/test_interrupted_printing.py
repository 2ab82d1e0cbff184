"""A Ctrl-C once a dedup run's outputs were swapped in (while its notes are made, or its report is
printed): the one line must say they are complete and in place (not the app's generic "outputs may
be incomplete", nor dedup's "nothing was replaced"), with exit status 130. The real CLI on a real
corpus; the Ctrl-C is raised where the notes are made (``_split_column_note``), the report tables
are printed (``print_run``) or the JSON report (``--json``)."""

from __future__ import annotations

import json
import random
import types

from typer.testing import CliRunner

import workbench.cli.dedup as dedup_cli
import workbench.dedup.job as dedup_job
from workbench.cli import app


def _corpus(path):
    rng = random.Random(1)
    rows = [{"id": f"r{i}", "content": f"def f{i}(x):\n" + "\n".join(
        f"    v{j} = g{rng.randrange(1000)}(x, {rng.randrange(100)})" for j in range(10)) + "\n"} for i in range(5)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def _run(tmp_path, *flags):
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["dedup", str(_corpus(tmp_path / "c.jsonl")), "-o", str(out), "--no-progress",
                                      "--workers", "1", *flags])
    return result, out


def test_ctrl_c_while_the_report_is_printed_says_the_outputs_are_in_place(tmp_path, monkeypatch):
    monkeypatch.setattr(dedup_cli, "print_run", _interrupt)
    result, out = _run(tmp_path)
    assert result.exit_code == 130, result.output
    assert "may be incomplete" not in result.output
    assert f"outputs are complete and in place in -o {out}" in result.output
    assert (out / "report.json").is_file() and (out / "train.jsonl").is_file()


def test_ctrl_c_while_the_json_report_is_printed_too(tmp_path, monkeypatch):
    monkeypatch.setattr(dedup_cli, "json", types.SimpleNamespace(dumps=_interrupt))
    result, out = _run(tmp_path, "--json")
    assert result.exit_code == 130, result.output
    assert f"outputs are complete and in place in -o {out}" in result.output


def test_ctrl_c_after_the_swap_while_the_run_ends_says_the_outputs_are_in_place(tmp_path, monkeypatch):
    monkeypatch.setattr(dedup_job, "_split_column_note", _interrupt)  # made after the outputs are swapped in
    result, out = _run(tmp_path)
    assert result.exit_code == 130, result.output
    assert "was replaced" not in result.output
    assert f"outputs are complete and in place in -o {out}" in result.output
    assert (out / "report.json").is_file() and not (out / ".dedup.lock").exists()
