"""--resamples too few for a percentile interval is refused with a reason; the printed interval
bounds never show a signed zero, and the paired table explains where p and the interval meet."""

from __future__ import annotations

import random
import re

import pytest
from typer.testing import CliRunner

from workbench.bias import BiasConfig
from workbench.cli import app
from workbench.correlate import CorrelateConfig
from workbench.correlate.bootstrap import min_resamples
from workbench.formatting import fixed
from workbench.options import OptionError

runner = CliRunner()


def _words(output: str) -> str:
    """The output as one line of words, without the boxes Rich draws round help and errors."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", output).split())


def test_the_floor_is_one_resample_beyond_each_bound():
    assert (min_resamples(0.95), min_resamples(0.9), min_resamples(0.99), min_resamples(0.999)) == (40, 20, 200, 2000)


@pytest.mark.parametrize("config", [CorrelateConfig, BiasConfig])
def test_configs_refuse_too_few_resamples(config):
    with pytest.raises(OptionError, match="1 resample is too few for a 95% percentile interval.*at least 40"):
        config(resamples=1)
    with pytest.raises(OptionError, match="at least 200"):
        config(resamples=100, confidence=0.99)
    assert config(resamples=40).resamples == 40


def test_the_cli_says_why_and_prints_no_zero_width_interval(tmp_path):
    path = tmp_path / "s.jsonl"
    rng = random.Random(0)
    path.write_text("".join(f'{{"task_id": "T{t}", "sample_id": {s}, "passed": {rng.randrange(2)}, "m": {rng.random()}}}\n'
                            for t in range(6) for s in range(4)))
    result = runner.invoke(app, ["correlate", str(path), "-m", "m", "--resamples", "1"], terminal_width=200)
    assert result.exit_code != 0
    text = _words(result.output)
    assert "--resamples: 1 resample is too few for a 95% percentile interval" in text and "at least 40" in text
    run = runner.invoke(app, ["run", "configs/humaneval.toml", "--dry-run", "--set", "correlate.resamples=5"],
                        terminal_width=200)
    assert run.exit_code != 0 and "too few" in _words(run.output)


def test_a_bound_that_rounds_to_zero_prints_unsigned():
    assert fixed(-5e-6) == "0.000" and fixed(-0.0364) == "-0.036" and fixed(5e-6, 2) == "0.00"
    assert fixed(float("nan")) == fixed(None) == "n/a"


def test_paired_table_marks_and_explains(tmp_path):
    """Two metrics compared: the paired table has the ≈0 legend and the p / interval note."""
    rng = random.Random(1)
    rows = []
    for t in range(10):
        for s in range(6):
            passed = rng.random() < 0.5
            score = rng.random() + 0.4 * passed
            rows.append(f'{{"task_id": "T{t}", "sample_id": {s}, "passed": {int(passed)}, "a": {score}, '
                        f'"b": {score + 0.01 * rng.random()}}}\n')
    path = tmp_path / "s.jsonl"
    path.write_text("".join(rows))
    result = runner.invoke(app, ["correlate", str(path), "-m", "a", "-m", "b", "--resamples", "200",
                                 "--length-column", "none"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "-0.000" not in result.output
    assert "the difference's 95% interval contains 0" in text and "prints as 0.000" in text
