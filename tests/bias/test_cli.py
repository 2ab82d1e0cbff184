"""``workbench bias`` through the real CLI: the help explains each setting with the paper's
terms, the tables and files it writes, and a bad metric column as a one-line error."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from workbench.cli import app

runner = CliRunner()


def test_help_explains_each_setting_and_cites_eq2():
    text = " ".join(runner.invoke(app, ["bias", "--help"], terminal_width=200).output.split())
    for term in ("fully biased", "cross-set biased", "unbiased test", "fully unbiased", "Eq. 2", "duplication factor",
                 "duplication bias", "Allamanis 2019", "Table 3", "GPT-3", "--metric", "--id-column", "--json"):
        assert term in text, term


def test_tables_json_and_plot(tmp_path, corpus):
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("q")}])
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE], against=str(reference))
    table = corpus.write_jsonl(tmp_path / "metrics.jsonl", [{"id": i, "acc": v} for i, _, v in corpus.SINGLE] + [{"id": "extra", "acc": 1}])
    result = runner.invoke(app, ["bias", str(out), str(table), "-m", "acc", "--resamples", "50",
                                 "--json", str(tmp_path / "bias.json"), "--plot", str(tmp_path / "bias.png")],
                           terminal_width=100)
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())
    assert "all rows vs one row per duplicate cluster" in printed
    assert "clean vs contaminated" in printed
    assert "contaminated ids (1): r3" in printed
    assert "1 not in the dedup output" in printed and "extra" in printed
    report = json.loads((tmp_path / "bias.json").read_text())
    assert report["duplication"]["metrics"]["acc"]["settings"]["deduplicated"]["value"] == 1.0
    assert report["join"]["unjoined_ids"] == ["extra"]
    assert (tmp_path / "bias.png").stat().st_size > 10_000


def test_a_non_numeric_column_is_a_one_line_error(tmp_path, corpus):
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    table = corpus.write_jsonl(tmp_path / "metrics.jsonl", [{"id": "r1", "acc": 1}, {"id": "r2", "acc": "pass"}])
    result = runner.invoke(app, ["bias", str(out), str(table), "-m", "acc"])
    assert result.exit_code == 1
    assert "Error:" in result.output and "'acc'" in result.output and "row 2 (counting from 1" in " ".join(result.output.split())


def test_the_id_columns_default_to_those_the_dedup_output_was_made_with(tmp_path, corpus):
    """A dedup run with --id-column task_id,sample_id records them in report.json; bias
    without --id-column joins on them (it looked for a column `id` and failed)."""
    rows = [{"task_id": f"T{i[1]}", "sample_id": 0, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE]
    out = corpus.dedup(tmp_path, rows, id_column="task_id,sample_id")
    assert json.loads((out / "report.json").read_text())["parameters"]["id_column"] == "task_id,sample_id"
    table = corpus.write_jsonl(tmp_path / "metrics.jsonl",
                               [{"task_id": f"T{i[1]}", "sample_id": 0, "acc": v} for i, _, v in corpus.SINGLE])
    result = runner.invoke(app, ["bias", str(out), str(table), "-m", "acc", "--resamples", "50",
                                 "--json", str(tmp_path / "bias.json")], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "join on task_id,sample_id: 6 of 6 metric rows joined" in " ".join(result.output.split())
    report = json.loads((tmp_path / "bias.json").read_text())
    assert report["duplication"]["metrics"]["acc"]["settings"]["deduplicated"]["value"] == 1.0
    # without a recorded id column (position ids), the default stays `id`
    (tmp_path / "plain").mkdir()
    plain = corpus.dedup(tmp_path / "plain", [{"content": corpus.code(base)} for _, base, _ in corpus.SINGLE],
                         id_column=None)
    assert json.loads((plain / "report.json").read_text())["parameters"]["id_column"] is None
    missing = runner.invoke(app, ["bias", str(plain), str(table), "-m", "acc"])
    assert missing.exit_code == 1 and "'id'" in missing.output, missing.output


def test_no_metric_is_a_command_line_error(tmp_path):
    """Exit 2 (a command-line mistake, docs/exit-status.md), said before any file is read: the folder
    and table named here do not even exist."""
    result = runner.invoke(app, ["bias", str(tmp_path / "no-dedup"), str(tmp_path / "no-table.jsonl")])
    assert result.exit_code == 2
    assert "name at least one per-row metric column" in " ".join(result.output.split())
