"""The final comparison/score step shared by DSA-CQE and DSA-CQE simplified. The LLM is
litellm's own ``mock_response`` (a scripted responder): the real litellm path runs."""

from __future__ import annotations

import json

import pytest

from workbench.languages.registry import get_language
from workbench.llm.client import LLMClient, LLMParseError, LLMSettings
from workbench.score.base import MethodResult, Sample, ScoringContext, score_by_repeated_answers
from workbench.score.dsa_cqe_simplified import DsaCqeSimplified
from workbench.score.schemas import SIMPLIFIED_SCHEMA

MESSAGES = [{"role": "user", "content": "compare"}]


def answer(score: int) -> str:
    return json.dumps({"candidate_semantics": "g", "reference_semantics": "r",
                       "differences": [f"d{score}"], "score": score})


def scripted(*texts: str):
    replies = iter(texts)
    return lambda messages, schema: next(replies)


def context(responder, n_samples: int) -> ScoringContext:
    client = LLMClient(LLMSettings("gpt-4o-mini", retry_wait_s=0.01), mock_response=responder)
    return ScoringContext(language=get_language("python"), llm=client, n_samples=n_samples)


def test_repeats_are_averaged_and_traced():
    result, log = MethodResult(), []
    ctx = context(scripted(answer(1), answer(2), answer(4)), n_samples=3)
    score_by_repeated_answers(MESSAGES, SIMPLIFIED_SCHEMA, context=ctx, prompt_version="v", step="compare",
                              result=result, log=log, trace_key="differences",
                              trace_value=lambda a: a["differences"])
    assert result.scores == [1.0, 2.0, 4.0] and result.score == pytest.approx(7 / 3)
    assert result.trace["differences"] == [["d1"], ["d2"], ["d4"]]
    assert [exchange.repeat for exchange in log] == [0, 1, 2] and {e.step for e in log} == {"compare"}
    assert ctx.llm.usage.calls == 3


def test_a_failing_repeat_leaves_the_sample_unscored_with_the_earlier_answers():
    result, log = MethodResult(), []
    ctx = context(scripted(answer(3), "not json", "still not json"), n_samples=2)
    with pytest.raises(LLMParseError):
        score_by_repeated_answers(MESSAGES, SIMPLIFIED_SCHEMA, context=ctx, prompt_version="v", step="s",
                                  result=result, log=log, trace_key="answers")
    assert result.score is None and result.scores == []
    assert [a["score"] for a in result.trace["answers"]] == [3]


def test_the_simplified_method_scores_through_the_shared_step():
    sample = Sample("T/0", 0, "    return a + b\n", "    return b + a\n", "def add(a, b):\n")
    result = DsaCqeSimplified().score(sample, context(scripted(answer(4), answer(2)), n_samples=2))
    assert result.status == "ok" and result.scores == [4.0, 2.0] and result.score == 3.0
    assert [a["differences"] for a in result.trace["answers"]] == [["d4"], ["d2"]]
    assert len(result.trace["exchanges"]) == 2
