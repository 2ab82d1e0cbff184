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


def test_a_metric_over_the_kept_rows_only_is_not_read_as_no_bias(tmp_path, corpus):
    """probe 29: `bias out out/test.jsonl` (the metric of the dedup's own output) printed d 0.0000 and Δ% 0.00%,
    a finding of "no duplication bias", with only an info line about the rows without a metric. No removed
    duplicate has a value there, so Δ% and Eq. 2 are n/a with the reason, and both warnings say why."""
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("q")}])
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE],
                       against=str(reference))
    kept = [json.loads(line)["id"] for line in (out / "train.jsonl").read_text().splitlines()]
    assert kept == ["r1", "r4"]  # r2, r5, r6 are duplicates, r3 is contaminated
    table = corpus.write_jsonl(tmp_path / "kept.jsonl", [{"id": i, "acc": 1} for i in kept])
    result = runner.invoke(app, ["bias", str(out), str(table), "-m", "acc", "--resamples", "50",
                                 "--json", str(tmp_path / "bias.json")], terminal_width=100)
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())
    assert "4 of the dedup's 6 rows have no metric row: every setting is computed over the 2 rows" in printed
    assert ("acc: Δ% and Eq. 2 (d, β) not measured (n/a): no row the dedup removed as a duplicate has a value: the "
            "metric covers only rows the dedup kept") in printed
    assert "acc: Δ% all rows vs clean not measured (n/a): no contaminated row has a value" in printed
    assert "0.00%" not in printed and "d over all" not in printed and "Eq. 2: d, f̄, β n/a" in printed
    assert "≈0:" not in printed  # no value is marked, so no legend
    duplication = json.loads((tmp_path / "bias.json").read_text())["duplication"]["metrics"]["acc"]
    assert duplication["delta_percent"]["value"] is None and "eq2" not in duplication
    assert duplication["not_measured"].startswith("no row the dedup removed as a duplicate has a value")
    # the metric on every row measures it
    every = corpus.write_jsonl(tmp_path / "every.jsonl", [{"id": i, "acc": v} for i, _, v in corpus.SINGLE])
    result = runner.invoke(app, ["bias", str(out), str(every), "-m", "acc", "--resamples", "50"], terminal_width=100)
    assert result.exit_code == 0 and "not measured" not in result.output and "d over all 6 rows" in " ".join(result.output.split())


def test_a_metric_without_any_value_is_an_error(tmp_path, corpus):
    # probe 29: NaN in every row exited 0 with every value n/a (and a legend for a mark it never printed)
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    table = corpus.write_jsonl(tmp_path / "metrics.jsonl", [{"id": i, "acc": None, "other": 1} for i, *_ in corpus.SINGLE])
    result = runner.invoke(app, ["bias", str(out), str(table), "-m", "other", "-m", "acc"])
    assert result.exit_code == 1, result.output
    assert ("metric column 'acc' has no value in any of the 6 joined rows (every cell is empty or NaN): there is "
            "nothing to average") in " ".join(result.output.split())

