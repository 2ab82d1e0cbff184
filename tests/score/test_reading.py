"""Reading a judge's score from token log-probabilities (issue 15 score modes, issue 20 P(Yes)).
Pure functions on known distributions; no LLM."""

from __future__ import annotations

import math

import pytest

from workbench.llm.logprobs import TokenLogprob, parse_token_logprobs
from workbench.score.ice_score import locate_ice_score
from workbench.score.reading import (
    NO_LOGPROBS,
    READ_EXPECTED,
    READ_FALLBACK,
    READ_SAMPLED,
    SCORE_LABELS,
    VERDICT_LABELS,
    ScoreRead,
    combine_reads,
    json_value_offset,
    joined_text,
    label_distribution,
    parse_verdict,
    read_at,
    verdict_normaliser,
)


def _alternatives(probabilities: dict[str, float]) -> list[tuple[str, float]]:
    return [(text, math.log(p)) for text, p in probabilities.items()]


def _tokens(pieces: list[str], at: int, probabilities: dict[str, float]) -> tuple[TokenLogprob, ...]:
    return tuple(
        TokenLogprob(piece, math.log(probabilities.get(piece, 0.9)) if i == at else math.log(0.9),
                     tuple(_alternatives(probabilities)) if i == at else ())
        for i, piece in enumerate(pieces)
    )


# -- the expectation (G-Eval, Liu et al. 2023, Sec. 2.3) ----------------------------------------

def test_the_expectation_of_a_known_distribution():
    # all mass on allowed tokens: E = .1*1 + .2*2 + .3*3 + .4*4 = 3.0
    d = label_distribution(_alternatives({"1": .1, "2": .2, "3": .3, "4": .4}), SCORE_LABELS, str.strip)
    assert d.mass == pytest.approx(1.0)
    assert d.expectation == pytest.approx(3.0)
    assert d.argmax == 4.0
    assert d.probabilities == pytest.approx({"0": 0, "1": .1, "2": .2, "3": .3, "4": .4})


def test_missing_score_tokens_are_renormalised_over_the_rest():
    # only "2" and "4" reported (0, 1, 3 absent), and 50 % of the mass on other tokens
    d = label_distribution(_alternatives({"4": .3, "The": .5, "2": .1, "\n": .1}), SCORE_LABELS, str.strip)
    assert d.mass == pytest.approx(.4)
    assert d.probabilities["4"] == pytest.approx(.75) and d.probabilities["2"] == pytest.approx(.25)
    assert d.probabilities["0"] == d.probabilities["1"] == d.probabilities["3"] == 0
    assert d.expectation == pytest.approx(.75 * 4 + .25 * 2)


def test_tokenizer_variants_of_a_label_are_summed():
    d = label_distribution(_alternatives({" 3": .2, "3": .2, " 4": .1, "4": .1, "10": .4}), SCORE_LABELS, str.strip)
    assert d.raw["3"] == pytest.approx(.4) and d.raw["4"] == pytest.approx(.2)
    assert d.mass == pytest.approx(.6)  # "10" is not a label
    assert d.expectation == pytest.approx((.4 * 3 + .2 * 4) / .6)


def test_no_allowed_token_gives_no_distribution():
    assert label_distribution(_alternatives({"The": .6, "Score": .4}), SCORE_LABELS, str.strip) is None


def test_a_tie_takes_the_lower_label_as_argmax():
    d = label_distribution(_alternatives({"1": .5, "3": .5}), SCORE_LABELS, str.strip)
    assert d.argmax == 1.0 and d.expectation == pytest.approx(2.0)


# -- the score position in JSON and free-text answers --------------------------------------------

def test_the_json_score_value_is_found_past_a_score_inside_strings_and_nested_objects():
    text = '{"differences": ["the \\"score\\": 1 case", "score"], "meta": {"score": 2}, "score": 3}'
    offset = json_value_offset(text, "score")
    assert text[offset] == "3"


def test_the_json_score_after_prose_and_in_a_fence():
    text = 'Here you go:\n```json\n{\n  "score" :  4 ,\n  "differences": []\n}\n```'
    assert text[json_value_offset(text, "score")] == "4"
    assert json_value_offset('{"differences": []}', "score") is None
    assert json_value_offset("no json at all", "score") is None


def test_the_free_text_score_position_follows_the_parsing_rules():
    text = "Functional Correctness (0-4): 3 because it fails on 1 case"
    score, offset = locate_ice_score(text)
    assert score == 3 and text[offset] == "3"
    score, offset = locate_ice_score("4")
    assert (score, offset) == (4, 0)
    assert locate_ice_score("Functional Correctness (0-4)") is None


@pytest.mark.parametrize(("pieces", "at", "probabilities"), [
    # a digit on its own token; the spaced variant " 4" also counts as 4
    (["{\"", "score", "\":", " ", "3", "}"], 4, {"3": .5, "4": .3, " 4": .1, "0": .1}),
    # the digit with its leading space; the bare "4" also counts as 4
    (["{\"", "score", "\":", " 3", "}"], 3, {" 3": .5, " 4": .3, "4": .1, " 0": .1}),
    (["{\"score\":", "3", "}"], 1, {"3": .5, "4": .4, "0": .1}),
])
def test_the_json_score_token_is_read_whatever_the_tokenisation(pieces, at, probabilities):
    tokens = _tokens(pieces, at, probabilities)
    text = joined_text(tokens)
    read = read_at(tokens, json_value_offset(text, "score"), sampled=3.0, labels=SCORE_LABELS)
    assert read.note is None
    assert read.position["index"] == at
    assert read.distribution.raw["4"] == pytest.approx(.4)
    assert read.expected == pytest.approx(.5 * 3 + .4 * 4 + .1 * 0)


def test_a_free_text_score_token_with_text_before_the_digit():
    pieces = ["Function", "al", " Correct", "ness", ":", " 2", "\n"]
    tokens = _tokens(pieces, 5, {" 2": .6, " 3": .3, " three": .1})
    text = joined_text(tokens)
    score, offset = locate_ice_score(text)
    read = read_at(tokens, offset, sampled=float(score), labels=SCORE_LABELS)
    assert read.distribution.mass == pytest.approx(.9)
    assert read.expected == pytest.approx((.6 * 2 + .3 * 3) / .9)


def test_a_score_token_that_disagrees_with_the_written_score_is_not_read():
    tokens = _tokens(["{\"score\": ", "2", "}"], 1, {"2": .7, "3": .3})
    read = read_at(tokens, json_value_offset(joined_text(tokens), "score"), sampled=3.0, labels=SCORE_LABELS)
    assert read.distribution is None and "not the written score" in read.note


def test_without_logprobs_the_read_keeps_the_sampled_value_and_says_why():
    read = read_at(None, None, sampled=2.0, labels=SCORE_LABELS)
    assert read.sampled == 2.0 and read.expected is None and read.note == NO_LOGPROBS


# -- P(Yes) ------------------------------------------------------------------------------------

def test_p_yes_from_a_known_top_logprobs_list_with_tokenizer_variants():
    top = {"Yes": .5, " yes": .1, "YES": .05, "No": .2, " no": .05, "The": .1}
    tokens = _tokens(["Yes"], 0, top)
    read = read_at(tokens, 0, sampled=parse_verdict("Yes"), labels=VERDICT_LABELS, verdict=True, answer="Yes")
    assert read.distribution.raw["yes"] == pytest.approx(.65)
    assert read.distribution.raw["no"] == pytest.approx(.25)
    assert read.distribution.mass == pytest.approx(.9)
    assert read.expected == pytest.approx(.65 / .9)
    assert read.sampled == 1.0


def test_a_missing_no_token_gives_p_yes_one_and_a_missing_yes_gives_zero():
    only_yes = read_at(_tokens(["Yes"], 0, {"Yes": .6, "The": .4}), 0, sampled=1.0, labels=VERDICT_LABELS, verdict=True)
    assert only_yes.expected == 1.0 and only_yes.distribution.mass == pytest.approx(.6)
    only_no = read_at(_tokens([" No"], 0, {" No": .3, "I": .7}), 0, sampled=0.0, labels=VERDICT_LABELS, verdict=True)
    assert only_no.expected == 0.0 and only_no.distribution.raw["no"] == pytest.approx(.3)


def test_neither_yes_nor_no_among_the_alternatives_gives_no_distribution():
    read = read_at(_tokens(["The"], 0, {"The": .7, "I": .3}), 0, sampled=parse_verdict("The"),
                   labels=VERDICT_LABELS, verdict=True)
    assert read.distribution is None and read.sampled is None and "no allowed token" in read.note


@pytest.mark.parametrize(("text", "value"), [
    ("Yes", 1.0), (" yes.", 1.0), ("YES, it does", 1.0), ("No", 0.0), ("no!", 0.0), ("The code", None), ("", None),
])
def test_a_written_verdict(text, value):
    assert parse_verdict(text) == value


def test_verdict_variants_normalise_to_one_label():
    assert {verdict_normaliser(t) for t in ("Yes", " yes", "YES", "Yes.", "\nyes")} == {"yes"}


# -- combining repeats, and the fallback without logprobs -------------------------------------------

def _read(sampled, expected=None):
    if expected is None:
        return ScoreRead(sampled, note=NO_LOGPROBS)
    d = label_distribution(_alternatives({"0": 1 - expected / 4, "4": expected / 4}), SCORE_LABELS, str.strip)
    return ScoreRead(sampled, d)


def test_expected_mode_uses_the_expectations_and_records_both_values():
    combined = combine_reads([_read(4.0, 3.0), _read(3.0, 2.0)], "expected")
    assert combined.how == READ_EXPECTED and combined.scores == pytest.approx([3.0, 2.0])
    columns = combined.columns()
    assert columns["score_expected"] == pytest.approx(2.5) and columns["score_sampled"] == pytest.approx(3.5)
    assert columns["score_mass"] == pytest.approx(1.0) and columns["read_note"] is None


def test_expected_mode_falls_back_to_the_sampled_mean_when_any_answer_has_no_logprobs():
    combined = combine_reads([_read(4.0, 3.0), _read(2.0)], "expected")
    assert combined.how == READ_FALLBACK and combined.scores == [4.0, 2.0]
    columns = combined.columns()
    assert columns["score_expected"] is None and columns["score_sampled"] == 3.0
    assert columns["read_note"] == NO_LOGPROBS


def test_sampled_mode_ignores_distributions():
    combined = combine_reads([_read(4.0, 3.0)], "sampled")
    assert combined.how == READ_SAMPLED and combined.scores == [4.0]
    assert combined.columns()["score_expected"] == pytest.approx(3.0)  # still recorded when it was read


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="score_mode"):
        combine_reads([_read(1.0)], "greedy")


def test_openai_logprobs_content_parses_from_plain_dicts():
    content = [{"token": " 4", "logprob": -0.1, "top_logprobs": [{"token": " 4", "logprob": -0.1},
                                                                 {"token": " 3", "logprob": -2.5},
                                                                 {"token": "bad", "logprob": None}]}]
    (token,) = parse_token_logprobs(content)
    assert token.token == " 4" and token.top == ((" 4", -0.1), (" 3", -2.5))
    assert parse_token_logprobs([]) is None and parse_token_logprobs(None) is None
