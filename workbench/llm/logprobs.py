"""Token log-probabilities of an answer, read from the OpenAI chat-completions shape.

Every provider the workbench reaches goes through ``litellm``, which hands back OpenAI's
layout whatever the backend: ``choices[0].logprobs.content[i]`` has the generated token's
``token`` text and ``logprob`` plus ``top_logprobs``, the most likely alternatives at that
position (``[{"token": ..., "logprob": ...}, ...]``). Reading only that shape keeps the
scoring code free of provider details: OpenAI, vLLM, llama.cpp's server and the in-process
backend all answer the same way, and a provider that returns nothing gives ``None``.

Note: llama.cpp reports the model's probabilities before a JSON grammar masks tokens, and
OpenAI's are before temperature; readers renormalise over the tokens they care about
(:mod:`workbench.score.reading`), which makes both cases the same.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token and the alternatives the provider reported at its position.

    Attributes:
        token: the token's text (``" 3"``, ``"Yes"``).
        logprob: its natural-log probability.
        top: ``(text, logprob)`` of the most likely tokens at this position, best first as the
            provider sent them (up to the ``top_logprobs`` asked for; may omit ``token``).
    """

    token: str
    logprob: float
    top: tuple[tuple[str, float], ...] = ()

    def alternatives(self) -> list[tuple[str, float]]:
        """The reported alternatives plus the generated token itself, each text once.

        A grammar can force a token that is not among the top alternatives; it still has
        its own ``logprob``, so it is added when missing.
        """
        seen = dict(self.top)
        seen.setdefault(self.token, self.logprob)
        return list(seen.items())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form, the OpenAI layout (``token``, ``logprob``, ``top_logprobs``)."""
        return {
            "token": self.token,
            "logprob": self.logprob,
            "top_logprobs": [{"token": text, "logprob": value} for text, value in self.top],
        }


#: the largest log-probability read as valid: 0 (probability 1) plus float rounding
_MAX_LOGPROB = 1e-6


def _field(item: Any, name: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(name)
    return getattr(item, name, None)


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    # -inf is a probability of 0 (kept); NaN, +inf or a log-probability above 0 (a probability
    # above 1, beyond float rounding: a broken server) would poison every sum
    return number if not math.isnan(number) and number <= _MAX_LOGPROB else None


def parse_token_logprobs(content: Sequence[Any] | None) -> tuple[TokenLogprob, ...] | None:
    """Return the tokens of an OpenAI ``logprobs.content`` list, or ``None`` when it is empty.

    Args:
        content: ``choices[0].logprobs.content``: litellm objects or plain dicts, each with
            ``token``, ``logprob`` and ``top_logprobs``.

    Returns:
        one :class:`TokenLogprob` per generated token; ``None`` for a missing or empty list
        (the provider sent no log-probabilities). Entries without a token text or a valid
        log-probability (a number <= 0; NaN, +inf and positive values are not) are skipped in ``top``; a generated token without them ends the list there (what
        follows can no longer be aligned with the text).
    """
    if not content:
        return None
    tokens = []
    for item in content:
        text, value = _field(item, "token"), _finite(_field(item, "logprob"))
        if not isinstance(text, str) or value is None:
            break
        top = []
        for alternative in _field(item, "top_logprobs") or ():
            alt_text, alt_value = _field(alternative, "token"), _finite(_field(alternative, "logprob"))
            if isinstance(alt_text, str) and alt_value is not None:
                top.append((alt_text, alt_value))
        tokens.append(TokenLogprob(text, value, tuple(top)))
    return tuple(tokens) or None


def response_token_logprobs(response: Any) -> tuple[TokenLogprob, ...] | None:
    """The tokens of a litellm ``ModelResponse``'s first choice, or ``None`` when it has none."""
    try:
        choice = response.choices[0]
    except (AttributeError, IndexError, TypeError):
        return None
    logprobs = _field(choice, "logprobs")
    return parse_token_logprobs(_field(logprobs, "content") if logprobs is not None else None)


def tokens_as_dicts(tokens: Sequence[TokenLogprob] | None) -> list[dict[str, Any]] | None:
    """JSON-ready list for the cache and the trace (``None`` stays ``None``)."""
    return None if tokens is None else [token.as_dict() for token in tokens]
