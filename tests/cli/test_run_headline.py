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
    console = Console(width=160)  # wide enough that no cell wraps, whatever the terminal
    monkeypatch.setattr(run_cli, "console", console)
    with console.capture() as captured:
        run_cli._print_headline(report)
    lines = {line.split()[0]: line for line in captured.get().splitlines() if line.strip()[:1].isalpha()}
    assert "1.000 (no CI: small n)" in lines["dsa-cqe"]
    assert "0.229 [-0.051, 0.477] ≈0" in lines["chrf"]
    assert "0.340 [0.123, 0.546]" in lines["p-correct"] and "≈0" not in lines["p-correct"]
    assert "no CI" not in lines["p-correct"]
