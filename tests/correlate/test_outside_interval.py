"""An estimate outside its own task-bootstrap interval is flagged and explained, never printed as
if the interval held it. Real tables through the real ``workbench correlate`` command and
:func:`run_correlate`; the data reproduce a new-user probe (8 tasks, each with one passing sample
that copies the reference, chrF 1.0, and one failing sample with a low score)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from workbench.cli import app
from workbench.correlate import CorrelateConfig, run_correlate

runner = CliRunner()


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _separated(tmp_path: Path) -> Path:
    failing = [0.04, 0.01, 0.29, 0.04, 0.03, 0.13, 0.06, 0.05]
    rows = []
    for t, low in enumerate(failing):
        rows.append({"task_id": f"T{t}", "sample_id": 0, "passed": 1, "chrf": 1.0, "noisy": 0.5 + 0.1 * t})
        rows.append({"task_id": f"T{t}", "sample_id": 1, "passed": 0, "chrf": low, "noisy": 0.45 + 0.13 * t})
    return _write(tmp_path / "separated.jsonl", rows)


def _realistic(tmp_path: Path) -> Path:
    rng = np.random.default_rng(4)
    rows = []
    for t in range(30):
        difficulty = rng.normal()
        for s in range(3):
            quality = difficulty + rng.normal()
            rows.append({"task_id": f"T{t}", "sample_id": s, "passed": int(quality + rng.normal(0, 0.5) > 0),
                         "m": round(float(quality + rng.normal()), 2)})
    return _write(tmp_path / "realistic.jsonl", rows)


def test_an_estimate_outside_its_interval_is_flagged_and_warned(tmp_path):
    report = run_correlate(str(_separated(tmp_path)), CorrelateConfig(metric=("chrf", "noisy"), resamples=400))
    kendall = report.metrics["chrf"].pooled["kendall"]
    low, high = kendall.ci
    assert not low <= kendall.value <= high  # the resampling's shift: this data gives it
    assert kendall.outside_interval is True
    block = report.to_dict()["metrics"]["chrf"]["pooled"]
    assert block["estimate_outside_interval"]["kendall"] is True
    assert block["estimate_outside_interval"]["pearson"] is False
    warning = next(w for w in report.warnings if w.startswith("chrf:"))
    assert "estimate outside its own bootstrap interval: pooled kendall 0.839 [0.843, 0.878]" in warning
    result = runner.invoke(app, ["correlate", str(tmp_path / "separated.jsonl"), "-m", "chrf", "--resamples", "400"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "outside its own bootstrap interval" in text
    assert "[0.843, 0.878] (!)" in text and "(!): the estimate lies outside its own interval" in text


def test_an_ordinary_table_has_no_such_warning(tmp_path):
    report = run_correlate(str(_realistic(tmp_path)), CorrelateConfig(metric=("m",), resamples=400))
    block = report.to_dict()["metrics"]["m"]
    for level in ("pooled", "per_problem"):
        assert set(block[level]["estimate_outside_interval"].values()) == {False}
    assert not any("outside its own" in w for w in report.warnings)
    result = runner.invoke(app, ["correlate", str(tmp_path / "realistic.jsonl"), "-m", "m", "--resamples", "400"])
    assert result.exit_code == 0 and "(!)" not in result.output, result.output


def test_a_metric_equal_to_the_label_is_not_flagged_for_rounding(tmp_path):
    """A new-user probe: a metric that is the label (1.0 on passing, 0.0 on failing samples) got
    pooled Pearson 0.9999999999999983 from scipy and [1.0, 1.0] from the block-sum bootstrap, and a
    warning "do not read that interval" for 1.000 [1.000, 1.000]. Rounding is not a shift."""
    rng = np.random.default_rng(7)
    rows = []
    for t in range(161):
        for s in range(20):
            passed = int(rng.random() < 0.42)
            rows.append({"task_id": f"HumanEval/{t}", "sample_id": s, "passed": passed,
                         "perfect": float(passed), "reversed": 1.0 - passed})
    path = _write(tmp_path / "perfect.jsonl", rows)
    report = run_correlate(str(path), CorrelateConfig(metric=("perfect", "reversed"), resamples=100))
    for name in ("perfect", "reversed"):
        pooled = report.to_dict()["metrics"][name]["pooled"]
        assert abs(abs(pooled["pearson"]) - 1.0) < 1e-12
        assert set(pooled["estimate_outside_interval"].values()) == {False}, pooled
    assert not any("outside its own" in w for w in report.warnings), report.warnings
