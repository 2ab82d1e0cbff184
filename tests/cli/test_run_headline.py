"""The terminal headline of `workbench run` carries the report's marks: an estimate without an
interval (small n) and one whose interval contains 0 are said to be so, as in report.html."""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console

from workbench.cli import run as run_cli


def _block(kendall, ci, *, no_interval=None, near_zero=False):
    return {"n_samples": 2 if no_interval else 40, "n_tasks": 1 if no_interval else 20, "pooled": {
        "kendall": kendall, "kendall_ci": ci, "pearson": kendall, "pearson_ci": ci,
        "no_interval": {"kendall": no_interval, "pearson": no_interval} if no_interval else {},
        "not_distinguishable_from_0": {"kendall": near_zero, "pearson": near_zero}}}


def test_headline_marks_withheld_intervals_and_estimates_not_distinguishable_from_0(tmp_path: Path, monkeypatch):
    # the shape of report.json's headline entries (workbench.report.sections), as the real run of
    # configs/humaneval.toml wrote them: DSA-CQE on 2 samples of 1 task, chrF's interval across 0
    headline = [
        {"method": "dsa-cqe", "subset": _block(1.0, [None, None], no_interval="only 1 task contributes"), "all": None},
        {"method": "chrf", "subset": _block(0.229, [-0.051, 0.477], near_zero=True), "all": None},
        {"method": "p-correct", "subset": _block(0.340, [0.123, 0.546]), "all": None},
    ]
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"headline": headline}))
    console = Console(width=80)  # the narrowest common terminal: no interval may be cut or wrapped
    monkeypatch.setattr(run_cli, "console", console)
    with console.capture() as captured:
        run_cli._print_headline(report)
    text = captured.get()
    assert "…" not in text
    # each row is two lines: the estimate (with ≈0) on the method's line, the interval (or why none) under it
    lines = text.splitlines()
    rows = {line.split()[0]: (line, lines[i + 1]) for i, line in enumerate(lines)
            if line.split()[:1] in (["dsa-cqe"], ["chrf"], ["p-correct"])}
    assert rows["dsa-cqe"][0].split()[-2:] == ["1.000", "1.000"]
    assert rows["dsa-cqe"][1].count("(no CI: small n)") == 2
    assert rows["chrf"][0].split()[-4:] == ["0.229", "≈0", "0.229", "≈0"]
    assert rows["chrf"][1].split() == ["[-0.051,", "0.477]", "[-0.051,", "0.477]"]
    assert rows["p-correct"][0].split()[-2:] == ["0.340", "0.340"] and "≈0" not in rows["p-correct"][0]
    assert rows["p-correct"][1].split() == ["[0.123,", "0.546]", "[0.123,", "0.546]"]
