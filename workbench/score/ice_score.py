"""ICE-Score, reference-based (the baseline DSA-CQE compares itself with).

Source: Zhuo, "ICE-Score: Instructing Large Language Models to Evaluate Code", EACL
Findings 2024, Sec. 3: the LLM reads the problem, the reference code and the code
snippet and rates functional correctness 0-4 ("scores ONLY"); the "w/ ref., no steps"
variant that is ``gpt35_nswr`` in the shipped data. The answer is free text, as in the
original; the score is the number the answer presents as the score (:func:`parse_ice_score`).
An answer without one, or with one off the 0-4 scale, gets one repair turn, then a ``parse_error``.

ICE-Score has two aspects: functional correctness (``ice-score``, prompt ``ice_score.txt``, measured
against execution on HumanEval) and usefulness (``ice-score-usefulness``, prompt
``ice_score_usefulness.txt``, measured against the human usefulness grades of Evtikhiev et al. on
CoNaLa: the bundled ``conala-all-grades``). Both are the reference-based prompt without evaluation
steps, read and repaired alike; only the prompt differs.

A sample with several references (a list-valued reference column, e.g. CoNaLa's snippets) is shown
them all in one call: ``ice_score_references.txt`` / ``ice_score_usefulness_references.txt``, the
same text whose reference section lists them as numbered alternatives, any of which is correct
(its own prompt version); a sample with one reference is shown the original prompt, unchanged.

In ``expected`` score mode (:mod:`workbench.score.reading`) the answer's token
log-probabilities are asked for and the score is the expectation over the labels 0-4 at the
token where that score is written (G-Eval, Liu et al. 2023, Sec. 2.3).
"""

from __future__ import annotations

from workbench.llm.client import Exchange, LLMError, LLMParseError
from workbench.score.base import MethodResult, Sample, ScoringContext, ScoringMethod, exchanges_as_dicts
from workbench.score.prompts import load_template, load_templates_or_problem, version_of
from workbench.score.reading import SCORE_LABELS, ScoreRead, joined_text, locate_score, read_at
from workbench.score.schemas import SCORE_MAX, SCORE_MIN

def parse_ice_score(text: str) -> int | None:
    """Return the 0-4 score an ICE-Score answer presents, or ``None`` (:func:`locate_ice_score`).

    ``"3"`` -> 3; ``"Functional Correctness: 4"`` -> 4; ``"score 2.0"`` -> 2;
    ``"Functional Correctness (0-4): 3"`` -> 3 (a written-out scale is skipped);
    ``"There are 4 issues. Final score: 2"`` -> 2; ``"10"``, ``"4.5"``, ``"Score: 7 (I checked
    3 cases)"`` or ``"Functional Correctness (0-4)"`` -> ``None`` (no score on the scale: the
    caller's repair turn asks again).
    """
    found = locate_ice_score(text)
    return found[0] if found else None


def locate_ice_score(text: str) -> tuple[int, int] | None:
    """Return (score, character offset of its digit) of the score :func:`parse_ice_score` reads.

    The rule is :func:`workbench.score.reading.locate_score` on ICE-Score's 0-4 scale: a JSON
    ``score`` field, else the number after the last score/criterion label, else a number alone
    on the first line, else the answer's only number; out of range is no score.

    ``"Functional Correctness (0-4): 3"`` -> ``(3, 30)``; ``None`` when there is no score.
    """
    return locate_score(text, SCORE_MIN, SCORE_MAX)


class IceScore(ScoringMethod):
    """ICE-Score with reference, functional-correctness aspect. Args: ``prompts_dir``, a folder
    with ``ice_score.txt`` (:attr:`template_file`) and, for a sample with several references (a
    list-valued reference column), ``ice_score_references.txt``, the same text listing them (needed
    only when such a sample is scored); default: the shipped templates."""

    name = "ice-score"
    shows_all_references = True
    scale = (float(SCORE_MIN), float(SCORE_MAX))
    #: the prompt template of this aspect
    template_file = "ice_score.txt"

    def __init__(self, prompts_dir: str | None = None):
        self.template = load_template(self.template_file, prompts_dir)
        self.prompt_version = version_of(self.template)
        # several references: the same text, its reference section listing them (``*_references.txt``)
        several, self.several_references_problem = load_templates_or_problem(
            (self.template_file.replace(".txt", "_references.txt"),), prompts_dir)
        self.several_template = several[0] if several else None
        self.several_references_version = version_of(*several) if several else ""

    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        result = MethodResult()
        log: list[Exchange] = []
        references = self.references_shown(sample)
        if len(references) > 1:
            messages = self.several_template.render(problem=sample.prompt, references=list(references),
                                                    generation=sample.generation)
        else:
            messages = self.template.render(problem=sample.prompt, reference=sample.reference,
                                            generation=sample.generation)
        version = self.prompt_version_for(sample)
        reads: list[ScoreRead] = []
        try:
            for repeat in range(context.n_samples):
                reads.append(self._ask(messages, repeat, context, result, log, version))
            result.finish_reads(reads, context.score_mode)
        except LLMError as error:
            result.status, result.error = error.status, str(error)
        result.trace["exchanges"] = exchanges_as_dicts(log)
        result.trace["reads"] = [read.as_dict() for read in reads]
        return result

    def _ask(self, messages, repeat, context: ScoringContext, result: MethodResult, log, version: str) -> ScoreRead:
        llm = context.llm
        asking = {"prompt_version": version, "repeat": repeat, "usage": result.usage, "log": log,
                  "top_logprobs": context.top_logprobs}
        completion = llm.ask(messages, step=self.name, **asking)
        if parse_ice_score(completion.text) is None:
            repair = [
                *messages,
                {"role": "assistant", "content": completion.text},
                {"role": "user", "content": "Answer with the score only: one integer from 0 to 4."},
            ]
            completion = llm.ask(repair, step=f"{self.name}:repair", **asking)
        score = parse_ice_score(completion.text)
        if score is None:
            raise LLMParseError(f"{self.name}: no score 0-4 in the answer after one repair turn: {completion.text[:120]!r}")
        # the position is looked up in the text the tokens spell, so it maps onto a token
        found = locate_ice_score(joined_text(completion.tokens)) if completion.tokens else None
        return read_at(completion.tokens, found[1] if found else None, sampled=float(score), labels=SCORE_LABELS)


class IceScoreUsefulness(IceScore):
    """ICE-Score with reference, usefulness aspect (the one ICE-Score measured against the CoNaLa
    human grades of Evtikhiev et al.): ICE-Score's CoNaLa prompt, ``ice_score_usefulness.txt``;
    otherwise as :class:`IceScore`. Args: ``prompts_dir``, a folder with that file and, for several
    references, ``ice_score_usefulness_references.txt``."""

    name = "ice-score-usefulness"
    template_file = "ice_score_usefulness.txt"
