"""Issue 12, item 2: every threshold comparison holds exactly at the boundary, for every
threshold a user can type (dedup verification and its size pre-filter, the command line, a
TOML config, the pass ratio of the stratified selection), and two empty bags are no error."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.dedup import DedupConfig, DedupConfigError, run_dedup, verify_pair
from workbench.run.config import ConfigError, parse_override
from workbench.score.base import Sample
from workbench.score.selection import stratified_subset
from workbench.thresholds import at_least, decimal_float, exact_threshold

#: every threshold with two decimals a user may type, as text
TYPED = [f"0.{hundredths:02d}" for hundredths in range(1, 100)] + ["1.0", "0.125", "0.333", "0.7071"]


def bag(shared: int, own: int, prefix: str, repeat: int = 1) -> dict[str, int]:
    counts = {f"s{i}": repeat for i in range(shared)}
    counts.update({f"{prefix}{i}": 1 for i in range(own)})
    return counts


def test_the_issues_boundaries_are_duplicates():
    # set Jaccard exactly 14/25 at t0 = 0.56 (0.56 * 25 is 14.000000000000002 in floating point)
    a, b = bag(14, 5, "a"), bag(14, 6, "b")
    score = verify_pair(a, b, sum(a.values()), sum(b.values()), 0.56, 0.5)
    assert score is not None and score.set_jaccard == 14 / 25 and score.is_duplicate
    # multiset Jaccard exactly 55/100 at t1 = 0.55 (0.55 * 100 is 55.00000000000001)
    a, b = {"x": 55}, {"x": 100}
    score = verify_pair(a, b, 55, 100, 0.5, 0.55)
    assert score is not None and score.multiset_jaccard == 0.55 and score.is_duplicate
    # the size pre-filter: 14 and 25 distinct tokens may still reach 14/25 (all of the smaller shared)
    a, b = bag(14, 0, "a"), bag(14, 11, "b")
    score = verify_pair(a, b, 14, 25, 0.56, 0.56)
    assert score is not None and score.is_duplicate


@pytest.mark.parametrize("typed", TYPED)
def test_verification_equals_exact_rational_comparison_for_every_typed_threshold(typed: str):
    threshold = float(typed)
    exact = Fraction(typed)
    for union in range(1, 41):
        for inter in range(union + 1):
            a, b = bag(inter, union - inter, "a"), bag(inter, 0, "b")
            score = verify_pair(a, b, union, inter, threshold, threshold)
            expected = Fraction(inter, union) >= exact
            decided = score is not None and score.is_duplicate
            assert decided == expected, (typed, inter, union)
            assert at_least(inter, union, threshold) == expected


def test_two_empty_bags_are_no_duplicate_and_no_error():
    score = verify_pair({}, {}, 0, 0, 0.8, 0.7)
    assert score is not None and score.set_jaccard == 0.0 and not score.is_duplicate
    assert verify_pair({}, {"a": 1}, 0, 1, 0.8, 0.7) is None


def test_a_pair_exactly_at_the_threshold_is_found_by_the_pipeline(tmp_path: Path):
    shared = [f"shared_name_{i}" for i in range(14)]
    first = shared + [f"first_only_{i}" for i in range(5)]
    second = shared + [f"second_only_{i}" for i in range(6)]
    rows = [{"id": "one", "content": "\n".join(f"{name} = {name}" for name in first)},
            {"id": "two", "content": "\n".join(f"{name} = {name}" for name in second)}]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    # 64 one-row bands: a pair at Jaccard 0.56 is a candidate with probability 1 - 0.44**64
    common = dict(min_tokens=5, lsh_bands=64, lsh_rows=1, num_perm=64, workers=1)
    found = run_dedup(str(data), DedupConfig(set_threshold=0.56, multiset_threshold=0.56, **common)).result
    assert [(p.set_jaccard, p.multiset_jaccard) for p in found.pairs] == [(14 / 25, 14 / 25)]
    above = run_dedup(str(data), DedupConfig(set_threshold=0.57, multiset_threshold=0.56, **common)).result
    assert above.pairs == []


def test_a_threshold_a_float_would_change_is_refused_with_its_name(tmp_path: Path):
    assert exact_threshold(0.56) == Fraction(14, 25) and exact_threshold("0.56") == Fraction(14, 25)
    assert decimal_float("0.56") == 0.56
    with pytest.raises(ValueError, match="significant digits"):
        decimal_float("0.30000000000000001")
    with pytest.raises(DedupConfigError, match="set_threshold.*significant digits"):
        DedupConfig(set_threshold="0.30000000000000001")
    result = CliRunner().invoke(app, ["dedup", str(tmp_path / "none.jsonl"), "--t0", "0.30000000000000001"])
    assert result.exit_code == 2 and "significant" in result.output and "--set-threshold" in result.output
    with pytest.raises(ConfigError, match="significant digits"):
        parse_override("dedup.set_threshold=0.30000000000000001")
    assert parse_override("dedup.set_threshold=0.56") == ("dedup", "set_threshold", 0.56)


def test_the_cli_hands_the_typed_threshold_to_the_config(tmp_path: Path):
    rows = [{"id": "one", "content": "x = 1"}]
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["dedup", str(data), "--t0", "0.56", "--t1", "0.55", "-o", str(out),
                                      "--no-progress", "--workers", "1"])
    assert result.exit_code == 0, result.output
    parameters = json.loads((out / "report.json").read_text())["parameters"]
    assert parameters["set_threshold"] == 0.56 and parameters["multiset_threshold"] == 0.55


@pytest.mark.parametrize("value, passing", [("0.5", True), (0.5, True), ("0.4999999999", False), (1, True),
                                            (0, False), (True, True), ("0.50", True)])
def test_the_pass_ratio_of_the_selection_is_compared_exactly(value, passing: bool):
    samples = [Sample(task_id="t", sample_id="0", generation="x", reference="x", carried={"passed": value}),
               Sample(task_id="t", sample_id="1", generation="y", reference="y", carried={"passed": 1 - passing})]
    picked = stratified_subset(samples, 1)
    # the first pick of a mixed task is its passing sample
    assert picked[0].sample_id == ("0" if passing else "1")
