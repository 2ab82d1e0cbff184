"""Finding a structured answer in a model's reply: the JSON object that matches the step's schema.

A reply may hold more than its answer: prose with braces (``"use a dict {} here"``), an
example object copied from the prompt, a draft before the final answer, text after it. Taking
the first object that decodes turns such a reply into a parse error, or worse, into the
example's values. So every balanced JSON object of the reply is a candidate, and the answer
is the one that validates against the step's JSON schema:

1. objects inside fenced code blocks (````json ... ````) come first: a model that fences its
   answer marks it as the answer;
2. among the valid candidates of that rank, the *last* one wins (the model's final answer
   follows its drafts and examples); "last" is by where the object ends, so an object that
   contains another valid one wins over it.

Example::

    >>> schema = {"type": "object", "required": ["score"], "properties": {"score": {"type": "integer"}}}
    >>> reply = 'Use {"score": 0} as the form. My answer: {"score": 3} (as asked {}).'
    >>> find_json_answer(reply, schema).value
    {'score': 3}
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: a fenced code block: ``` or ~~~, an optional language tag, the body (CommonMark fences)
_FENCE = re.compile(r"(?P<fence>```|~~~)[ \t]*[A-Za-z0-9_+-]*[^\n]*\n(?P<body>.*?)(?P=fence)", re.DOTALL)


@dataclass(frozen=True)
class JsonCandidate:
    """One balanced JSON object found in a reply.

    Attributes:
        value: the decoded object (a dict).
        start / end: its span in the reply (``reply[start:end]`` is its JSON text).
        fenced: it lies inside a fenced code block.
    """

    value: dict[str, Any]
    start: int
    end: int
    fenced: bool


def json_candidates(text: str) -> list[JsonCandidate]:
    """Every balanced JSON object in ``text``, nested ones included, in order of their start.

    Args:
        text: the reply.

    Returns:
        the candidates (objects only; arrays and scalars are never an answer here).
    """
    fences = [match.span("body") for match in _FENCE.finditer(text)]
    decoder = json.JSONDecoder()
    found = []
    for start, char in enumerate(text):
        if char != "{":
            continue
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            fenced = any(low <= start and end <= high for low, high in fences)
            found.append(JsonCandidate(value, start, end, fenced))
    return found


class NoJsonAnswerError(ValueError):
    """No JSON object of the reply matches the schema; the message says what is wrong with
    the most likely one (the last, fenced first), for the repair turn."""


def _ranked(candidates: list[JsonCandidate]) -> list[JsonCandidate]:
    """Most likely answer first: fenced before unfenced, then the later end, then the outer object."""
    return sorted(candidates, key=lambda c: (not c.fenced, -c.end, c.start))


def find_json_answer(text: str, schema: Mapping[str, Any]) -> JsonCandidate:
    """Return the JSON object of ``text`` that is the answer for ``schema`` (see the module).

    Args:
        text: the reply.
        schema: the step's JSON schema.

    Returns:
        the chosen :class:`JsonCandidate`.

    Raises:
        NoJsonAnswerError: no object in the reply, or none valid for ``schema`` (the message
            names the problem of the most likely candidate: ``score: 7 is greater than the maximum of 4``).
    """
    import jsonschema

    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema)
    ranked = _ranked(json_candidates(text))
    if not ranked:
        raise NoJsonAnswerError("the answer holds no JSON object")
    for candidate in ranked:
        if validator.is_valid(candidate.value):
            return candidate
    error = jsonschema.exceptions.best_match(validator.iter_errors(ranked[0].value))
    where = "/".join(str(p) for p in error.absolute_path) or "the object"
    others = f" (nor does any of the other {len(ranked) - 1} JSON objects in the answer)" if len(ranked) > 1 else ""
    raise NoJsonAnswerError(f"{where}: {error.message}{others}")


def extract_json(text: str, schema: Mapping[str, Any] | None = None) -> Any:
    """Return the JSON answer in ``text``.

    With ``schema``: the object that validates (:func:`find_json_answer`). Without one: the
    whole text when it is JSON, else the most likely object (fenced first, then the last).

    Raises:
        ValueError: no JSON object (or, with ``schema``, none valid for it).
    """
    if schema is not None:
        return find_json_answer(text, schema).value
    try:
        return json.loads(text.strip())
    except json.JSONDecodeError:
        pass
    ranked = _ranked(json_candidates(text))
    if not ranked:
        raise ValueError("the answer holds no JSON object")
    return ranked[0].value


__all__ = ["JsonCandidate", "NoJsonAnswerError", "extract_json", "find_json_answer", "json_candidates"]
