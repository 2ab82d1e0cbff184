"""p-correct: the probability that the judge answers "Yes, it passes".

One call per sample: the problem, the reference solution (unless ``reference=False``) and
the candidate, then the question of ``prompts/p_correct_question.txt``, answered with one
word. The score is ``P(Yes) / (P(Yes) + P(No))`` at the answer token, each summed over its
tokenizer variants (:mod:`workbench.score.verdict`): P(True) in Kadavath et al.,
"Language Models (Mostly) Know What They Know", arXiv:2207.05221, 2022. It is a probability
in [0, 1], cheap (one token generated) and uses the log-probabilities the ``expected`` score
mode reads.

``analyse_first`` is the two-step form of CodeJudge's binary evaluation (Tong & Zhang,
"CodeJudge: Evaluating Code Generation with Large Language Models", EMNLP 2024): the model
first writes its analysis (``prompts/p_correct_analyse.txt``, at the run's temperature and
``max_tokens``), then a second turn asks the question and P(Yes) is read there.

A sample with several references (a list-valued reference column) is shown them all in the one call,
as numbered alternatives any of which is correct (``prompts/p_correct_references.txt``,
``p_correct_analyse_references.txt``), and asked whether the candidate behaves like one of them
(``p_correct_question_references.txt``); a sample with one reference is asked exactly as before.

Example (litellm's ``mock_response`` answers "Yes"; a real model returns log-probabilities):

    >>> from workbench.languages.registry import get_language
    >>> from workbench.llm.client import LLMClient, LLMSettings
    >>> from workbench.score.base import Sample, ScoringContext
    >>> llm = LLMClient(LLMSettings("gpt-4o-mini"), mock_response="Yes")
    >>> sample = Sample("T/0", 0, "    return a + b\\n", "    return b + a\\n", "def add(a, b):\\n")
    >>> result = PCorrect().score(sample, ScoringContext(get_language("python"), llm))
    >>> result.score, result.read.how
    (1.0, 'sampled-fallback')
"""

from __future__ import annotations

from workbench.llm.client import Exchange, LLMError
from workbench.score.base import MethodResult, Sample, ScoringContext, ScoringMethod, exchanges_as_dicts
from workbench.score.prompts import load_template, load_templates_or_problem, version_of
from workbench.score.reading import ScoreRead
from workbench.score.verdict import SEVERAL_REFERENCES_QUESTION_FILE, ask_verdict, load_question, question_text


class PCorrect(ScoringMethod):
    """The correctness-probability judge.

    Args:
        prompts_dir: a folder with ``p_correct.txt`` (``p_correct_analyse.txt`` with
            ``analyse_first``) and ``p_correct_question.txt``, and for a sample with several
            references (a list-valued reference column) their several-references forms
            ``p_correct_references.txt`` (``p_correct_analyse_references.txt``) and
            ``p_correct_question_references.txt``, needed only when such a sample is scored
            (default: the shipped templates).
        reference: show the reference solution (``--reference/--no-reference``); without it
            the judge is what users have for new problems, and samples with an empty
            reference are scored too.
        analyse_first: CodeJudge-style two turns: analysis, then the question.
    """

    name = "p-correct"
    scale = (0.0, 1.0)
    shows_all_references = True

    def __init__(self, prompts_dir: str | None = None, *, reference: bool = True, analyse_first: bool = False):
        self.reference = reference
        self.analyse_first = analyse_first
        self.needs_reference = reference
        self.template = load_template("p_correct_analyse.txt" if analyse_first else "p_correct.txt", prompts_dir)
        question = load_question(prompts_dir)
        self.question = question_text(question, reference=reference)
        self.prompt_version = version_of(self.template, question)
        # several references: listed as numbered alternatives, and asked about "one of the references"
        # (--no-reference shows none)
        several, self.several_references_problem = load_templates_or_problem(
            ("p_correct_analyse_references.txt" if analyse_first else "p_correct_references.txt",
             SEVERAL_REFERENCES_QUESTION_FILE), prompts_dir) if reference else ((), None)
        self.several_template = several[0] if several else None
        self.several_question = question_text(several[1], reference=True) if several else ""
        self.several_references_version = version_of(*several) if several else ""
        self.variant = f"{'reference' if reference else 'no-reference'},{'analyse-first' if analyse_first else 'one-step'}"

    def score(self, sample: Sample, context: ScoringContext) -> MethodResult:
        result = MethodResult()
        log: list[Exchange] = []
        reads: list[ScoreRead] = []
        references = self.references_shown(sample)
        if len(references) > 1:  # every reference, as numbered alternatives
            template, question, variables = self.several_template, self.several_question, {"references": list(references)}
        else:
            template, question, variables = self.template, self.question, {
                "reference": sample.reference if self.reference else ""}
        variables.update(language=context.language.name, problem=sample.prompt, generation=sample.generation)
        version = self.prompt_version_for(sample)
        try:
            for repeat in range(context.n_samples):
                if self.analyse_first:
                    messages = template.render(**variables)
                    analysis = context.llm.complete(
                        messages, prompt_version=version, step="analyse", repeat=repeat,
                        usage=result.usage, log=log,
                    )
                    messages = [*messages, {"role": "assistant", "content": analysis},
                                {"role": "user", "content": question}]
                else:
                    messages = template.render(**variables, question=question)
                reads.append(ask_verdict(messages, context=context, prompt_version=version, step="verdict",
                                         repeat=repeat, usage=result.usage, log=log))
            result.finish_reads(reads, context.score_mode)
        except LLMError as error:
            result.status, result.error = error.status, str(error)
        result.trace["exchanges"] = exchanges_as_dicts(log)
        result.trace["reads"] = [read.as_dict() for read in reads]
        return result
