"""The Yes/No verdict: P(the candidate passes), read at one answer token.

The question (``prompts/p_correct_question.txt``) asks whether the candidate behaves like the
reference on every valid input (or, without a reference, whether it is correct), to be
answered with one word. In ``expected`` score mode the answer's first token is asked for with
its top alternatives at temperature 0 and ``max_tokens`` 1, and the score is
``P(Yes) / (P(Yes) + P(No))``, each summed over its tokenizer variants (``"Yes"``, ``" yes"``
...): P(True) of Kadavath et al., "Language Models (Mostly) Know What They Know",
arXiv:2207.05221, 2022. In ``sampled`` mode (and where a provider sends no log-probabilities)
the answer itself counts, Yes = 1 and No = 0, at the run's temperature so that ``n_samples``
repeats can differ.

Used by the ``p-correct`` method and by the ``p-correct`` final step of ``dsa-cqe`` and
``dsa-cqe-simplified``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from workbench.llm.client import Completion, Exchange, LLMParseError, Usage
from workbench.score.base import MethodResult, ScoringContext, collect_repeated_reads
from workbench.score.prompts import PromptTemplate, load_template
from workbench.score.reading import VERDICT_LABELS, ScoreRead, parse_verdict, read_at

#: ``final_step`` values of dsa-cqe and dsa-cqe-simplified
FINAL_STEPS = ("score", "p-correct")
DEFAULT_FINAL_STEP = "score"
#: the verdict is one token: the read is at its position
VERDICT_MAX_TOKENS = 1
QUESTION_FILE = "p_correct_question.txt"
#: the question asked after several references (the candidate behaves like one of them)
SEVERAL_REFERENCES_QUESTION_FILE = "p_correct_question_references.txt"
#: the repair turn after an answer that is neither Yes nor No (and has no readable distribution)
REPAIR = "Answer with one word: Yes or No."


def load_question(prompts_dir: str | None = None) -> PromptTemplate:
    """The question template (``p_correct_question.txt``).

    Raises:
        PromptError: the file is missing or malformed.
    """
    return load_template(QUESTION_FILE, prompts_dir)


def question_text(template: PromptTemplate, *, reference: bool) -> str:
    """The question as one user message's text (with or without a reference solution)."""
    return template.render(reference=reference)[-1]["content"]


def read_verdict(completion: Completion) -> ScoreRead:
    """Read a one-token verdict: P(Yes) at the first token when log-probabilities came back,
    and the written Yes/No (``None`` when it is neither)."""
    return read_at(completion.tokens, 0, sampled=parse_verdict(completion.text), labels=VERDICT_LABELS,
                   verdict=True, answer=completion.text)


def ask_verdict(
    messages: list[dict[str, str]],
    *,
    context: ScoringContext,
    prompt_version: str,
    step: str,
    repeat: int,
    usage: Usage,
    log: list[Exchange],
) -> ScoreRead:
    """Ask the verdict (``messages`` end with the question) and read it.

    ``expected`` mode: temperature 0, one token, :data:`~workbench.score.reading.TOP_LOGPROBS`
    alternatives; where no P(Yes) can be read from the answer (the provider sent no
    log-probabilities, or neither Yes nor No was among them), the question is asked again as in
    ``sampled`` mode and that written answer is the read (its note says why: the fallback).
    ``sampled`` mode: the run's temperature, one token. An answer that gives neither a
    distribution nor a Yes/No gets one repair turn (:data:`REPAIR`).

    Args:
        messages: the chat so far, ending with the question.
        context: the run's :class:`~workbench.score.base.ScoringContext`.
        prompt_version / step / repeat: for the cache key and the trace.
        usage / log: the sample's counters and exchanges.

    Raises:
        LLMParseError: the repaired answer is still unreadable.
        LLMCallError / BudgetExceededError: a call failed.
    """
    expected = context.score_mode == "expected"
    asking = {
        "prompt_version": prompt_version, "repeat": repeat, "usage": usage, "log": log,
        "top_logprobs": context.top_logprobs, "max_tokens": VERDICT_MAX_TOKENS,
        "temperature": 0.0 if expected else None,
    }
    completion = context.llm.ask(messages, step=step, **asking)
    read = read_verdict(completion)
    why = None
    if expected and read.distribution is None:
        # no P(Yes) to read: the fallback is sampled mode's answer, asked at the run's temperature, so that the
        # n_samples repeats can differ (the temperature-0 answer would be the same every time)
        why = read.note
        asking.update(top_logprobs=None, temperature=None)
        step = f"{step}:sampled"
        completion = context.llm.ask(messages, step=step, **asking)
        read = read_verdict(completion)
    if read.sampled is None and read.distribution is None:
        repair = [*messages, {"role": "assistant", "content": completion.text}, {"role": "user", "content": REPAIR}]
        completion = context.llm.ask(repair, step=f"{step}:repair", **asking)
        read = read_verdict(completion)
        if read.sampled is None and read.distribution is None:
            raise LLMParseError(f"{step}: neither Yes nor No in the answer after one repair turn: {completion.text[:80]!r}")
    return read if why is None else replace(read, note=why)


def verdict_after_comparison(
    messages: list[dict[str, str]],
    schema: Mapping[str, Any],
    *,
    question: str,
    context: ScoringContext,
    prompt_version: str,
    step: str,
    result: MethodResult,
    log: list[Exchange],
    trace_key: str,
    trace_value: Callable[[dict[str, Any]], Any] = lambda answer: answer,
) -> MethodResult:
    """DSA-CQE's p-correct final step: the structured comparison, then the verdict on it.

    Per repeat (``context.n_samples``): the comparison (``schema``, without a score) is asked,
    its answer becomes the assistant turn, and the verdict ``question`` follows
    (:func:`ask_verdict`). The sample's score is the mean of the reads (P(Yes) in
    ``expected`` mode), in [0, 1].

    Args:
        messages: the rendered comparison prompt.
        schema: the comparison's JSON schema.
        question: the verdict question (:func:`question_text`).
        context / prompt_version / step / result / log / trace_key / trace_value: as
            :func:`workbench.score.base.score_by_repeated_answers`.

    Returns:
        ``result``.

    Raises:
        LLMError: a call failed or an answer stayed unreadable; ``result`` is then unscored.
    """
    def one_repeat(repeat: int) -> tuple[dict[str, Any], ScoreRead]:
        answer, completion = context.llm.ask_json(
            messages, schema, prompt_version=prompt_version, step=step, repeat=repeat, usage=result.usage, log=log
        )
        turn = [*messages, {"role": "assistant", "content": completion.text}, {"role": "user", "content": question}]
        return answer, ask_verdict(turn, context=context, prompt_version=prompt_version, step=f"{step}:verdict",
                                   repeat=repeat, usage=result.usage, log=log)

    return collect_repeated_reads(result, context, one_repeat, trace_key=trace_key, trace_value=trace_value)
