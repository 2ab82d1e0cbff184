"""Bias tables mark "≈0" (not distinguishable from 0) by correlate's rule, on the terminal, in the
JSON and in the run report; the d of Eq. 2 says over which rows it is computed."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from workbench.bias.intervals import Interval
from workbench.cli import app
from workbench.cli.bias import _interval
from workbench.correlate.bootstrap import interval_contains_zero
from workbench.correlate.results import Estimate
from workbench.dedup.duplication_report import render_report
from workbench.report import build_report_data, render_html
from workbench.report.collect import spans_zero

FIXTURE = Path(__file__).parents[1] / "fixtures" / "run-fixture"
runner = CliRunner()


def test_one_rule_for_correlate_bias_and_the_report_closed_bounds_included():
    """[-0.09, 0.00] contains 0: every table's test says so, through the one helper."""
    for low, high, expected in ((-0.09, 0.0, True), (0.0, 0.16, True), (-0.05, 0.16, True), (0.01, 0.2, False),
                                (-0.3, -5e-6, False)):
        assert interval_contains_zero(low, high) is expected
        assert Estimate(0.1, (low, high)).spans_zero is expected
        assert spans_zero([low, high]) is expected
        assert Interval(-0.03, low, high, 100, 10).spans_zero is expected
    assert Interval(0.5, math.nan, math.nan, 3, 1, "only 1 task").spans_zero is None


def test_the_cli_cell_marks_a_closed_bound_and_never_prints_minus_zero():
    cell = _interval(Interval(-0.0003, -0.0009, 0.0, 3220, 161), 2, "%")
    assert cell.splitlines()[0] == "0.00% ≈0"  # -0.0003 rounds to 0.00, shown without a sign
    assert "[-0.00, 0.00]" not in cell and cell.splitlines()[1] == "[0.00, 0.00]"
    assert "≈0" not in _interval(Interval(0.06, 0.01, 0.16, 3220, 161), 2, "%")
    assert "≈0" not in _interval(Interval(0.5, math.nan, math.nan, 3, 1, "only 1 task"))  # no interval, no mark


def _intervals(node, path=""):
    """Every ``{"value", "ci", ...}`` of a bias JSON, with its path."""
    if isinstance(node, dict):
        if "ci" in node and "value" in node:
            yield path, node
        for key, value in node.items():
            yield from _intervals(value, f"{path}/{key}")


def test_json_flags_and_printed_marks_follow_the_intervals(tmp_path, corpus):
    """A real dedup output and metric table: each interval in the JSON carries
    ``not_distinguishable_from_0`` by the rule, and the terminal marks exactly those."""
    rows = [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE]
    rows += [{"id": f"u{k}", "content": corpus.code(f"u{k}")} for k in range(14)]
    out = corpus.dedup(tmp_path, rows)
    # a metric centred on 0: its mean's interval contains 0; a positive one's does not
    values = {row["id"]: (-1) ** k * (k % 3) for k, row in enumerate(rows)}
    table = corpus.write_jsonl(tmp_path / "m.jsonl", [{"id": i, "signed": v, "positive": 5 + v} for i, v in values.items()])
    result = runner.invoke(app, ["bias", str(out), str(table), "-m", "signed", "-m", "positive", "--resamples", "200",
                                 "--json", str(tmp_path / "bias.json")], terminal_width=200)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "bias.json").read_text())
    found = list(_intervals(report["duplication"]))
    assert found
    flagged = 0
    for path, block in found:
        low, high = block["ci"]
        expected = None if block.get("no_interval") else interval_contains_zero(low, high)
        assert block["not_distinguishable_from_0"] is expected, path
        flagged += bool(expected)
    assert report["duplication"]["metrics"]["signed"]["settings"]["all_rows"]["not_distinguishable_from_0"] is True
    assert report["duplication"]["metrics"]["positive"]["settings"]["all_rows"]["not_distinguishable_from_0"] is False
    table_text = result.output.split("note:")[0]
    assert table_text.count("≈0") - 1 == flagged  # the legend line holds one more
    assert "≈0: the 95% interval contains 0: not distinguishable from 0." in result.output
    n = report["duplication"]["metrics"]["signed"]["eq2"]["n_D"]
    assert f"d over all {n:,} rows" in result.output


def test_the_run_report_marks_bias_values_whose_interval_contains_0():
    """The fixture's bias/report.json predates the flag: Δ% [0.0, 0.0] is marked from its CI."""
    data = build_report_data(FIXTURE)
    delta = data["bias"]["rows"][0]["delta"]
    assert delta["ci"] == [0.0, 0.0] and delta["not_distinguishable_from_0"] is True
    assert data["bias"]["rows"][0]["all_rows"]["not_distinguishable_from_0"] is False
    html = render_html(data)
    table = re.search(r'<table id="bias-table">(.*?)</table>', html, re.S).group(1)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", table, re.S)
    marked = [c for c in cells if "&asymp;0" in c]
    assert marked and all("0.00%" in c for c in marked)  # the Δ% cells, not the means
    assert "d over all" in table


def test_the_two_d_labels_say_over_which_rows_and_the_titles_which_run(tmp_path, corpus):
    """The dedup table's d is over the compared rows, titled by run: in-set, or against a reference."""
    rows = [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE] + [{"id": "tiny", "content": "x"}]
    reference = corpus.write_jsonl(tmp_path / "ref.jsonl", [{"id": "REF/0", "content": corpus.code("q")}])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    in_set = json.loads((corpus.dedup(tmp_path / "a", rows) / "report.json").read_text())
    against = json.loads((corpus.dedup(tmp_path / "b", rows, against=str(reference)) / "report.json").read_text())

    def shown(report):
        console = Console(width=200, record=True)
        for renderable in render_report(report):
            console.print(renderable)
        return console.export_text()

    first, second = shown(in_set), shown(against)
    assert "In-set dedup: duplication in" in first and "Decontamination" not in first
    assert "Decontamination against" in second
    analysed, files = in_set["overall"]["analysed"], in_set["overall"]["files"]
    assert analysed < files
    assert f"over the {analysed:,} compared rows (of {files:,}" in first and "Allamanis 2019 Eq. 2" in first
    assert "d over" in first
