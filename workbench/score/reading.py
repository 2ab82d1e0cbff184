"""Reading a judge's score from its answer: the sampled value, or the probability-weighted one.

An LLM judge that writes one score token throws away what it knew: a model that puts 45 % on
"3" and 55 % on "4" writes "4", exactly as one that is sure. G-Eval (Liu et al., "G-Eval: NLG
Evaluation using GPT-4 with Better Human Alignment", EMNLP 2023, Sec. 2.3) reads instead the
probabilities of the score tokens at the position where the model writes the score and takes
the expectation ``sum_k p(k) * k``. The same reading gives a correctness probability from a
Yes/No answer, ``P(Yes) / (P(Yes) + P(No))`` (Kadavath et al., "Language Models (Mostly) Know
What They Know", arXiv:2207.05221, 2022: P(True)).

Score modes (``score_mode``):

* ``expected``: ask for token log-probabilities, find the score token, renormalise over the
  allowed labels (summing a label's tokenizer variants, ``"3"`` and ``" 3"``, ``"Yes"`` and
  ``" yes"``) and use the expectation; the distribution, its argmax and the mass that fell on
  allowed tokens are recorded. An answer without log-probabilities (the provider sent none)
  is scored by its sampled value instead, and the row says so (``score_read``).
* ``sampled``: the value the answer writes, averaged over ``n_samples`` answers.

This module is pure: it reads :class:`~workbench.llm.logprobs.TokenLogprob` sequences and
texts, it calls no model.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.llm.logprobs import TokenLogprob

#: ``score_mode`` values
SCORE_MODES = ("expected", "sampled")
#: the default mode: expected wherever the provider returns log-probabilities
DEFAULT_SCORE_MODE = "expected"
#: alternatives asked for per token in ``expected`` mode (OpenAI's maximum)
TOP_LOGPROBS = 20

#: ``score_read`` values: how a row's score was read
READ_EXPECTED = "expected"
READ_SAMPLED = "sampled"
#: ``expected`` was asked for but at least one answer could not be read that way
READ_FALLBACK = "sampled-fallback"

#: the labels of a 0-4 score (ICE-Score's scale, Zhuo 2024, Sec. 3) and their values
SCORE_LABELS: dict[str, float] = {str(k): float(k) for k in range(5)}
#: the labels of a Yes/No verdict: the expectation is P(Yes) renormalised
VERDICT_LABELS: dict[str, float] = {"no": 0.0, "yes": 1.0}


@dataclass(frozen=True)
class LabelDistribution:
    """The probabilities of the allowed labels at one token position.

    Attributes:
        raw: label -> summed probability of its token variants among the alternatives the
            provider reported (unnormalised; labels with no variant reported are 0).
        mass: ``sum(raw)``: the probability that fell on allowed tokens (in (0, 1]).
        probabilities: label -> ``raw / mass``.
        expectation: ``sum(value(label) * probabilities[label])`` (G-Eval, Sec. 2.3).
        argmax: the value of the most probable label (the lower value on a tie).
    """

    raw: dict[str, float]
    mass: float
    probabilities: dict[str, float]
    expectation: float
    argmax: float


def label_distribution(
    alternatives: Sequence[tuple[str, float]],
    labels: Mapping[str, float],
    normalise: Callable[[str], str],
) -> LabelDistribution | None:
    """Return the renormalised distribution over ``labels`` of one position's alternatives.

    Args:
        alternatives: ``(token text, logprob)`` pairs, e.g. :meth:`TokenLogprob.alternatives`.
        labels: label -> numeric value (:data:`SCORE_LABELS`, :data:`VERDICT_LABELS`).
        normalise: maps a token text onto a label name (or anything else for other tokens);
            every token that maps onto a label adds its probability to it, so tokenizer
            variants (``"3"``, ``" 3"``) are summed.

    Returns:
        the :class:`LabelDistribution`, or ``None`` when no alternative is an allowed label
        (mass 0: nothing to renormalise).

    Example:
        >>> import math
        >>> d = label_distribution([("4", math.log(.5)), (" 3", math.log(.2)), ("3", math.log(.1)),
        ...                         ("The", math.log(.2))], SCORE_LABELS, str.strip)
        >>> round(d.mass, 3), round(d.expectation, 3), d.argmax
        (0.8, 3.625, 4.0)
    """
    raw = {label: 0.0 for label in labels}
    for text, logprob in alternatives:
        label = normalise(text)
        if label in raw:
            raw[label] += math.exp(logprob)
    mass = sum(raw.values())
    if mass <= 0.0:
        return None
    probabilities = {label: value / mass for label, value in raw.items()}
    expectation = sum(labels[label] * p for label, p in probabilities.items())
    best = max(sorted(labels, key=labels.__getitem__), key=lambda label: raw[label])
    return LabelDistribution(raw, mass, probabilities, expectation, labels[best])


def score_token_normaliser(chosen: str, offset: int) -> Callable[[str], str]:
    """A normaliser for the alternatives of a score token.

    The generated token may carry text around the digit (``" 3"``, ``":3"``, ``"3,"``);
    an alternative is read with the same surroundings removed, then stripped of whitespace,
    so ``" 4"`` and ``"4"`` both read as ``"4"`` next to a chosen ``" 3"``.

    Args:
        chosen: the generated token's text.
        offset: where the score digit sits in ``chosen``.
    """
    prefix, suffix = chosen[:offset].strip(), chosen[offset + 1:].strip()

    def normalise(text: str) -> str:
        text = text.strip()
        if prefix and text.startswith(prefix):
            text = text[len(prefix):]
        if suffix and text.endswith(suffix):
            text = text[: -len(suffix)]
        return text.strip()

    return normalise


def verdict_normaliser(text: str) -> str:
    """``" Yes"``, ``"yes."``, ``"YES"`` -> ``"yes"``; other texts are returned stripped and lower-cased."""
    return text.strip().strip(string.punctuation + " ").casefold()


def parse_verdict(text: str) -> float | None:
    """The value of a Yes/No answer: 1.0 for yes, 0.0 for no (first word, any case), else ``None``.

    ``"Yes"`` -> 1.0; ``" no."`` -> 0.0; ``"Yes, it does"`` -> 1.0; ``"The code"`` -> ``None``.
    """
    words = text.split()
    if not words:
        return None
    return VERDICT_LABELS.get(verdict_normaliser(words[0]))


def token_at(tokens: Sequence[TokenLogprob], offset: int) -> tuple[int, int] | None:
    """Return (index of the token holding character ``offset`` of the joined token texts,
    offset within that token), or ``None`` when ``offset`` is past the end."""
    start = 0
    for index, token in enumerate(tokens):
        end = start + len(token.token)
        if start <= offset < end:
            return index, offset - start
        start = end
    return None


def joined_text(tokens: Sequence[TokenLogprob]) -> str:
    """The answer as the tokens spell it (offsets in it map onto tokens with :func:`token_at`)."""
    return "".join(token.token for token in tokens)


def json_value_offset(text: str, key: str, schema: Mapping[str, Any] | None = None) -> int | None:
    """Return where the value of the top-level ``key`` of the answer's JSON object in ``text`` starts.

    Strings are skipped with their escapes, so a ``"score"`` inside a string or a nested
    object is never taken for the key.

    Args:
        text: the answer.
        key: the top-level key.
        schema: the step's schema: the object is then the one the answer was read from
            (:func:`workbench.llm.json_answer.find_json_answer`: fenced first, the last valid),
            so the token read is the answer's, not an example's before it. Without one, the
            first object that decodes.

    Example:
        >>> json_value_offset('{"differences": ["score 2"], "score": 3}', "score")
        38
    """
    from workbench.llm.json_answer import NoJsonAnswerError, find_json_answer, json_candidates

    if schema is not None:
        try:
            found = find_json_answer(text, schema)
        except NoJsonAnswerError:
            return None
        return _top_level_value(text, found.start, found.end, key)
    candidates = json_candidates(text)  # without a schema: the first object in the reply
    return _top_level_value(text, candidates[0].start, candidates[0].end, key) if candidates else None


def _top_level_value(text: str, start: int, end: int, key: str) -> int | None:
    depth = 0
    index = start
    while index < end:
        char = text[index]
        if char == '"':
            closing = _string_end(text, index)
            if depth == 1 and json.loads(text[index:closing]) == key:
                after = _skip_space(text, closing)
                if after < end and text[after] == ":":
                    return _skip_space(text, after + 1)
            index = closing
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        index += 1
    return None


def _string_end(text: str, quote: int) -> int:
    """Index just after the closing quote of the JSON string opening at ``quote``."""
    index = quote + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
            continue
        if text[index] == '"':
            return index + 1
        index += 1
    return len(text)


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


#: words that present the number after them as the score: "score", "rating", "grade" and
#: a criterion's name ("Functional Correctness", ICE-Score's criterion, Zhuo 2024, Sec. 3)
SCORE_LABEL_WORDS = ("score", "rating", "grade", "functional correctness")

_NUMBER = r"[-+]?\d+(?:\.\d+)?"
#: a number standing alone: not part of a word, an identifier or a longer number
_STANDALONE = re.compile(rf"(?<![\w.]){_NUMBER}(?![\w]|\.\d)")
#: a scale written out ("(0-4)", "0 to 4", "0–4", "from 0 to 4."): its ends are not scores;
#: a sentence's period may follow it
_SCALE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*(?:-|\u2013|\u2014|to)\s*\d+(?:\.\d+)?(?![\w]|\.\d)",
                    re.IGNORECASE)
#: what may stand between a label and its number: "(0-4)", "(scores ONLY)", ":", "=", "is",
#: markdown emphasis, line breaks
_AFTER_LABEL = r"(?:\s*\([^()\n]*\))*\s*(?:\*\*|__|\*)?\s*(?:[:=]|-(?!\d)|\u2013|is\b|of\b)?\s*(?:\*\*|__|\*)?\s*"
#: a JSON object that presents a score (its value is checked against the scale afterwards, so
#: an out-of-range score is no score rather than a reason to read another object)
_HAS_SCORE: dict[str, Any] = {"type": "object", "required": ["score"]}
#: an answer whose first line is a number alone ("4", "**3**", "2/4.")
_FIRST_LINE_NUMBER = re.compile(rf"\s*(?:\*\*|__|\*)?\s*({_NUMBER})(?:\s*/\s*\d+)?\s*(?:\*\*|__|\*)?\s*\.?[ \t]*(?:\n|$)")
#: a denominator after a score ("3/4", "3 out of 4")
_OUT_OF = re.compile(r"\s*(?:/|out\s+of)\s*(\d+(?:\.\d+)?)", re.IGNORECASE)


def locate_score(text: str, low: int, high: int, labels: Sequence[str] = SCORE_LABEL_WORDS) -> tuple[int, int] | None:
    """Find the score a judge's free-text answer presents: ``(value, character offset of its first digit)``.

    The score is the number the answer presents as the score, in this order:

    1. the top-level ``"score"`` field of the answer's JSON object, chosen as a structured
       answer's is (:func:`workbench.llm.json_answer.find_json_answer`: fenced first, the last);
    2. else the number after the last score label (``"Score: 2"``, ``"Functional Correctness
       (0-4): 3"``, ``"**Final score:** 4"``, ``"score 2.0"``);
    3. else a number alone on the answer's first line (``"4\\n\\nThe code passes 3 of the tests"``);
    4. else the answer's only number (``"On a scale from 0 to 4, I give it 2."``).

    A written-out scale (``"0-4"``, ``"0 to 4"``) is never a score, and a ``"/4"`` or
    ``"out of 4"`` after a score is its scale. The number found must be an integer (``2.0``
    counts) in ``[low, high]`` on that scale: otherwise the answer has no score (``None``), never
    a clamped value and never another number further on. Callers give such an answer a repair
    turn and count a second failure (a ``parse_error``).

    Args:
        text: the answer.
        low, high: the score scale (ICE-Score's 0-4: ``0, 4``).
        labels: lower-case words that present a score (:data:`SCORE_LABEL_WORDS`).

    Returns:
        ``(score, offset)`` with ``text[offset]`` the score's first digit, or ``None``.

    Example:
        >>> locate_score("There are 4 issues. Final score: 2", 0, 4)
        (2, 33)
        >>> locate_score("Score: 7 (I checked 3 cases)", 0, 4) is None
        True
    """
    # the object is chosen as a structured answer's is (fenced first, the last), among those with a score
    start = json_value_offset(text, "score", _HAS_SCORE)
    if start is not None:
        start += text.startswith('"', start)  # {"score": "3"}: the number in the string
        return _on_scale(text, re.compile(_NUMBER).match(text, start), low, high)
    # scales are blanked with as many spaces as they have characters, so offsets stay those of ``text``
    blanked = _SCALE.sub(lambda match: " " * len(match.group()), text)
    label = "|".join(re.escape(word).replace(r"\ ", r"\s+") for word in labels)
    labelled = list(re.finditer(rf"(?<!\w)(?:{label})(?!\w){_AFTER_LABEL}({_NUMBER})(?![\w]|\.\d)", blanked,
                                re.IGNORECASE))
    if labelled:
        return _on_scale(blanked, labelled[-1], low, high, group=1)
    first_line = _FIRST_LINE_NUMBER.match(blanked)
    if first_line:  # the answer opens with the number alone on its line (the prompt ends with the form's label)
        return _on_scale(blanked, first_line, low, high, group=1)
    numbers = list(_STANDALONE.finditer(_blank_out_of(blanked, high)))
    if len(numbers) == 1:
        return _on_scale(blanked, numbers[0], low, high)
    return None


def _blank_out_of(text: str, high: int) -> str:
    """``text`` with each "/<high>" or "out of <high>" blanked (the scale of the number before it)."""
    def blank(match: re.Match) -> str:
        return " " * len(match.group()) if float(match.group(1)) == high else match.group()

    return _OUT_OF.sub(blank, text)


def _on_scale(text: str, match: re.Match | None, low: int, high: int, group: int = 0) -> tuple[int, int] | None:
    if match is None:
        return None
    value = float(match.group(group))
    out_of = _OUT_OF.match(text, match.end(group))
    if out_of is not None and float(out_of.group(1)) != high:
        return None  # a score on another scale ("7/10")
    if value != int(value) or not low <= value <= high:
        return None
    offset = match.start(group)
    while not text[offset].isdigit():  # past a sign
        offset += 1
    return int(value), offset


@dataclass(frozen=True)
class ScoreRead:
    """What one answer says: its written value and, when readable, the label distribution.

    Attributes:
        sampled: the value the answer writes (``None`` when it writes none, e.g. a one-token
            verdict that is neither Yes nor No but whose distribution was readable).
        distribution: the :class:`LabelDistribution` at the score position, or ``None``.
        verdict: the labels are Yes/No (P(Yes) reads), not a 0-4 score.
        note: why there is no distribution (``None`` when there is one, or none was asked).
        position: for the trace: the token index, its text and the alternatives read.
        answer: the answer text the value was read from.
    """

    sampled: float | None
    distribution: LabelDistribution | None = None
    verdict: bool = False
    note: str | None = None
    position: dict[str, Any] | None = None
    answer: str | None = None

    @property
    def expected(self) -> float | None:
        return self.distribution.expectation if self.distribution is not None else None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form for the trace."""
        return {
            "sampled": self.sampled,
            "expected": self.expected,
            "distribution": None if self.distribution is None else self.distribution.probabilities,
            "mass": None if self.distribution is None else self.distribution.mass,
            "note": self.note,
            "position": self.position,
            "answer": self.answer,
        }


#: the note of an answer that came back without token log-probabilities
NO_LOGPROBS = "the provider returned no valid token log-probabilities"
#: below this mean probability on the allowed labels the expected-mode read is flagged: the answer
#: token was most likely something else ("Maybe", "The", a fence), and the renormalised value comes
#: from a small tail of the distribution (our threshold; the fidelity runs average a mass of .99)
LOW_MASS = 0.5
#: how a flagged row's ``read_note`` starts (the run summary counts these rows)
LOW_MASS_NOTE = "low probability mass"


def read_at(
    tokens: Sequence[TokenLogprob] | None,
    offset: int | None,
    *,
    sampled: float | None,
    labels: Mapping[str, float],
    verdict: bool = False,
    answer: str | None = None,
) -> ScoreRead:
    """Read the label distribution at character ``offset`` of the joined token texts.

    Args:
        tokens: the answer's tokens (``None``: none were returned; the read keeps only
            ``sampled``, with :data:`NO_LOGPROBS` as its note).
        offset: where the score (or verdict) starts in :func:`joined_text`; ``None`` when it
            could not be found there (noted).
        sampled: the value the answer text writes.
        labels: :data:`SCORE_LABELS` or :data:`VERDICT_LABELS`.
        verdict: Yes/No labels (the whole token is normalised with :func:`verdict_normaliser`);
            otherwise a score digit, normalised with :func:`score_token_normaliser`.
        answer: the answer text, kept in the read.

    Returns:
        a :class:`ScoreRead`. A score token whose own label disagrees with ``sampled`` (the
        token stream and the answer text tell different stories) gives no distribution.
    """
    if tokens is None:
        return ScoreRead(sampled, verdict=verdict, note=NO_LOGPROBS, answer=answer)
    where = token_at(tokens, offset) if offset is not None else None
    if where is None:
        return ScoreRead(sampled, verdict=verdict, note="the score token was not found among the answer's tokens",
                         answer=answer)
    index, inside = where
    token = tokens[index]
    normalise = verdict_normaliser if verdict else score_token_normaliser(token.token, inside)
    alternatives = token.alternatives()
    position = {"index": index, "token": token.token, "alternatives": [[text, value] for text, value in alternatives]}
    chosen = labels.get(normalise(token.token))
    if not verdict and sampled is not None and chosen != sampled:
        return ScoreRead(sampled, verdict=verdict, position=position, answer=answer,
                         note=f"the token at the score position ({token.token!r}) is not the written score {sampled:g}")
    distribution = label_distribution(alternatives, labels, normalise)
    note = None if distribution is not None else "no allowed token among the reported alternatives"
    return ScoreRead(sampled, distribution, verdict, note, position, answer)


@dataclass
class CombinedRead:
    """The reads of a sample's repeats, combined into its row.

    Attributes:
        mode: the score mode asked for.
        how: :data:`READ_EXPECTED`, :data:`READ_SAMPLED` or :data:`READ_FALLBACK`.
        scores: the per-repeat values the score is the mean of.
        reads: the reads, in repeat order.
    """

    mode: str
    how: str
    scores: list[float]
    reads: list[ScoreRead] = field(default_factory=list)

    def columns(self) -> dict[str, Any]:
        """The ``scores.jsonl`` columns of the read (see :data:`READ_COLUMNS`)."""
        distributions = [r.distribution for r in self.reads if r.distribution is not None]
        complete = len(distributions) == len(self.reads) and distributions
        sampled = [r.sampled for r in self.reads]
        columns: dict[str, Any] = {
            "score_mode": self.mode,
            "score_read": self.how,
            "score_expected": statistics.fmean(d.expectation for d in distributions) if complete else None,
            "score_sampled": statistics.fmean(sampled) if sampled and None not in sampled else None,
            "score_argmax": None,
            "score_mass": None,
            "score_distribution": None,
            "p_yes": None,
            "p_no": None,
            "answers": None,
            "read_note": next((r.note for r in self.reads if r.note), None) if self.how == READ_FALLBACK else None,
        }
        if complete:
            labels = list(distributions[0].probabilities)
            mean = {label: statistics.fmean(d.probabilities[label] for d in distributions) for label in labels}
            values = SCORE_LABELS if not self.reads[0].verdict else VERDICT_LABELS
            best = max(sorted(labels, key=values.__getitem__), key=mean.__getitem__)
            mass = statistics.fmean(d.mass for d in distributions)
            columns.update(score_distribution=mean, score_argmax=values[best], score_mass=mass)
            if mass < LOW_MASS:
                first = self.reads[0].position or {}
                columns["read_note"] = (
                    f"{LOW_MASS_NOTE}: only {mass:.2%} of the probability fell on the allowed labels (the answer token "
                    f"was {first.get('token')!r}); the score is renormalised from that tail")
            if self.reads[0].verdict:
                columns.update(p_yes=statistics.fmean(d.raw["yes"] for d in distributions),
                               p_no=statistics.fmean(d.raw["no"] for d in distributions))
        if self.reads and self.reads[0].verdict:
            columns["answers"] = [r.answer for r in self.reads]
        return columns


#: the ``scores.jsonl`` columns :meth:`CombinedRead.columns` fills (``None`` for non-LLM methods)
READ_COLUMNS = (
    "score_mode", "score_read", "score_expected", "score_sampled", "score_argmax", "score_mass",
    "score_distribution", "p_yes", "p_no", "answers", "read_note",
)


def combine_reads(reads: Sequence[ScoreRead], mode: str) -> CombinedRead:
    """Combine the reads of a sample's repeats according to ``mode``.

    ``expected``: every read has a distribution -> the scores are their expectations;
    otherwise -> the sampled values (:data:`READ_FALLBACK`; a sample never mixes the two).
    ``sampled``: the sampled values.

    Raises:
        ValueError: an unknown mode, or a sampled value needed and missing (callers repair
            or fail such answers before).
    """
    if mode not in SCORE_MODES:
        raise ValueError(f"score_mode must be one of {', '.join(SCORE_MODES)}, not {mode!r}")
    reads = list(reads)
    if mode == "expected" and reads and all(r.distribution is not None for r in reads):
        return CombinedRead(mode, READ_EXPECTED, [r.expected for r in reads], reads)
    if any(r.sampled is None for r in reads):
        raise ValueError("an answer without a readable value cannot be scored by its sampled value")
    how = READ_SAMPLED if mode == "sampled" else READ_FALLBACK
    return CombinedRead(mode, how, [r.sampled for r in reads], reads)
