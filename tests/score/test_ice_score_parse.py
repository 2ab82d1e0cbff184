"""How an ICE-Score answer (free text, as in Zhuo 2024) becomes a 0-4 score."""

from __future__ import annotations

import pytest

from workbench.score.ice_score import parse_ice_score


@pytest.mark.parametrize(("answer", "score"), [
    ("3", 3),
    ("Functional Correctness: 4", 4),
    ("score 2.0", 2),
    ("0", 0),
    ("Functional Correctness (0-4): 3", 3),  # the scale echoed before the score
    ("Functional Correctness (0 - 4): 1", 1),
    ("On a scale from 0 to 4, I give it 2.", 2),
    ("Functional Correctness (0\u20134):\n\n4", 4),
])
def test_the_score_is_the_first_integer_on_the_scale(answer: str, score: int) -> None:
    assert parse_ice_score(answer) == score


@pytest.mark.parametrize("answer", [
    "Functional Correctness (0-4)",  # the criterion echoed with its scale, no score: seen from qwen2.5-coder-0.5b
    "Functional Correctness (scores ONLY): 0-4",
    "10",
    "4.5",
    "no idea",
    "",
])
def test_an_answer_without_a_score_on_the_scale_is_none(answer: str) -> None:
    assert parse_ice_score(answer) is None
