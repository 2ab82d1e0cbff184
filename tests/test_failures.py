"""The failure limit (``max_failures``) and the verdict that decides a finished run's exit status."""

from __future__ import annotations

from fractions import Fraction

import pytest

from workbench.execute.config import ExecutionConfig
from workbench.failures import ExitStatus, FailureLimit, check_failures, parse_max_failures
from workbench.options import OptionError
from workbench.score.config import ScoreConfig


@pytest.mark.parametrize("value, expected", [
    (5, FailureLimit(count=5)), ("5", FailureLimit(count=5)), (0, FailureLimit(count=0)), ("0", FailureLimit(count=0)),
    (0.1, FailureLimit(fraction=0.1)), ("0.25", FailureLimit(fraction=0.25)), ("10%", FailureLimit(fraction=0.1)),
    ("100%", FailureLimit(fraction=1.0)), (1.0, FailureLimit(count=1)), ("3.0", FailureLimit(count=3)),
])
def test_a_limit_is_a_count_or_a_fraction(value, expected):
    assert parse_max_failures(value) == expected


@pytest.mark.parametrize("value", ["-1", -3, -0.5, "1.5", "150%", "many", "nan", True, ""])
def test_a_bad_limit_says_which_forms_are_accepted(value):
    with pytest.raises(ValueError, match="number of failed rows"):
        parse_max_failures(value)


@pytest.mark.parametrize("config_class", [ScoreConfig, ExecutionConfig])
def test_max_failures_is_a_field_of_the_score_and_execute_configs(config_class):
    base = {"method": ["chrf"]} if config_class is ScoreConfig else {}
    assert config_class(**base).max_failures is None
    assert config_class(**base, max_failures="10%").max_failures == FailureLimit(fraction=0.1)
    assert config_class(**base, max_failures=3).max_failures == FailureLimit(count=3)
    with pytest.raises(OptionError, match="max_failures takes a number of failed rows"):
        config_class(**base, max_failures="lots")
    option = config_class.options()["max_failures"]
    assert option.flag == "--max-failures" and option.text(FailureLimit(fraction=0.1)) == "0.1"


def test_no_usable_row_is_status_3_whatever_the_limit():
    verdict = check_failures({"dsa-cqe": (4, 0, 4), "chrf": (0, 4, 4)}, None)
    assert verdict.status == ExitStatus.NO_USABLE_RESULT == 3
    assert verdict.message == "no usable result (dsa-cqe: 4 of 4 rows failed, 0 usable)"
    # skipped rows (empty references) are not failures, but not usable either
    assert check_failures({"chrf": (0, 0, 3)}, FailureLimit(count=10)).status == 3


def test_failures_above_the_limit_are_status_4_and_at_it_are_not():
    assert check_failures({"m": (2, 8, 10)}, FailureLimit(count=2)).status == 0
    verdict = check_failures({"m": (3, 7, 10)}, FailureLimit(count=2))
    assert verdict.status == ExitStatus.TOO_MANY_FAILURES == 4
    assert verdict.message == "too many failures (m: 3 of 10 rows failed, 7 usable; --max-failures 2)"
    assert check_failures({"m": (1, 9, 10)}, FailureLimit(fraction=0.1)).status == 0
    assert check_failures({"m": (2, 8, 10)}, FailureLimit(fraction=0.1)).status == 4
    assert check_failures({"m": (2, 8, 10)}, None).status == 0  # no limit: only "nothing usable" fails


def test_a_group_with_no_rows_this_run_is_not_judged():
    verdict = check_failures({"m": (0, 0, 0)}, FailureLimit(count=0))
    assert verdict.status == 0 and verdict.counts == {}
    assert verdict.as_dict() == {"exit_status": 0, "message": "", "limit": "0", "counts": {}}


@pytest.mark.parametrize("typed", [f"{hundredths / 100:.2f}%" for hundredths in range(1, 10_000, 37)]
                         + ["0.57%", "0.35%", "7%", "0.0057", "0.1"])
def test_a_failure_share_exactly_at_the_limit_passes_and_one_more_row_fails(typed: str):
    """Issue 12, item 2 (exact boundaries): 57 failed of 10,000 rows is not above 0.57%
    (``57 / 10000 > 0.57 / 100`` is true in floating point)."""
    limit = parse_max_failures(typed)
    share = Fraction(typed[:-1]) / 100 if typed.endswith("%") else Fraction(typed)
    total = 10_000
    at = share * total
    assert at.denominator == 1
    assert not limit.exceeded(int(at), total)
    assert limit.exceeded(int(at) + 1, total)
