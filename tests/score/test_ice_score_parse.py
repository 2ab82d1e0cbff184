"""How an ICE-Score answer (free text, as in Zhuo 2024) becomes a 0-4 score."""

from __future__ import annotations

import pytest

from workbench.score.ice_score import locate_ice_score, parse_ice_score


@pytest.mark.parametrize(("answer", "score"), [
    ("3", 3),
    ("Functional Correctness: 4", 4),
    ("score 2.0", 2),
    ("0", 0),
    ("Functional Correctness (0-4): 3", 3),  # the scale echoed before the score
    ("Functional Correctness (0 - 4): 1", 1),
    ("On a scale from 0 to 4, I give it 2.", 2),
    ("Functional Correctness (0\u20134):\n\n4", 4),
    # issue 12, item 3: a score label wins over numbers before it
    ("There are 4 issues. Final score: 2", 2),
    ("1. The function reads the list.\n2. It sorts it.\n3. It returns the first item.\nFunctional Correctness: 4", 4),
    ('{"differences": ["returns 0 {not 1}"], "score": 2}', 2),  # the JSON score field, not a number in a string
    ('Here:\n```json\n{"score": 3, "differences": ["fails on 2 inputs"]}\n```', 3),
    ("**Score:** 3/4", 3),
    ("3 out of 4", 3),
    ("Assign a score of 1 because 2 of the 5 tests fail", 1),
    ("4\n\nThe code passes all 3 examples.", 4),  # a number alone on the first line
    ("score: 3. Final score: 1", 1),  # the last label is the final answer
])
def test_the_score_is_the_number_the_answer_presents_as_the_score(answer: str, score: int) -> None:
    assert parse_ice_score(answer) == score


@pytest.mark.parametrize("answer", [
    "Functional Correctness (0-4)",  # the criterion echoed with its scale, no score: seen from qwen2.5-coder-0.5b
    "Functional Correctness (scores ONLY): 0-4",
    "10",
    "4.5",
    "no idea",
    "",
    # issue 12, item 3: out of range is no score (never a clamp, never a later number)
    "Score: 7 (I checked 3 cases)",
    "Final score: 5",
    "Score: -1",
    "Score: 2.5",
    "Score: 8/10",  # a score on another scale
    '{"differences": [], "score": 6}',
    '{"differences": ["off by 1"], "score": 2.5}',
    # a written-out scale followed by a period is a scale, not a score of 0
    "Answer with the score only: one integer from 0 to 4.",
    "Rate it on a scale of 0 to 4.",
    # several numbers and none presented as the score
    "It fails 2 of the 3 tests.",
])
def test_an_answer_without_a_score_on_the_scale_is_none(answer: str) -> None:
    assert parse_ice_score(answer) is None


@pytest.mark.parametrize(("answer", "digit"), [
    ("There are 4 issues. Final score: 2", 33),
    ('{"differences": ["returns 0 {not 1}"], "score": 2}', 48),
    ("1. a\n2. b\nFunctional Correctness (0-4): 3", 40),
])
def test_the_score_position_is_that_of_the_score_read(answer: str, digit: int) -> None:
    # the expected mode reads the token distribution at this offset: it must be the score's digit
    score, offset = locate_ice_score(answer)
    assert offset == digit and answer[offset] == str(score)


def test_a_json_answer_is_chosen_as_a_structured_answer_is() -> None:
    # an example object before the fenced answer lends no score (issue 19's rule for JSON answers)
    answer = 'For example {"score": 0} would mean wrong.\n```json\n{"score": 3}\n```'
    assert locate_ice_score(answer) == (3, answer.rindex("3"))
