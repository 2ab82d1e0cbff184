"""A content-addressed cache of LLM responses on :mod:`diskcache`.

The key is the SHA-256 of a canonical JSON document holding everything that can change
an answer: provider, model, API base, messages, sampling parameters (and any extra
provider parameters), seed, the JSON schema asked for, the prompt-template version and
the repeat index (so ``--n-samples k`` asks for k distinct answers and gets the same k
back on a rerun). Only successful responses are stored; errors are never cached. An entry
that cannot be read back (its file cut short by a full disk or an interrupted copy) is a
miss: the model is asked again and the entry replaced.
"""

from __future__ import annotations

import enum
import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: bump when the stored value layout changes, so old entries are simply not found
CACHE_FORMAT = 1

_log = logging.getLogger(__name__)


class CacheMode(str, enum.Enum):
    """How the response cache is used.

    * ``rw``: read hits, store new answers (default).
    * ``ro``: read hits, never store (a shared, frozen cache).
    * ``refresh``: ignore stored answers, store the new ones.
    * ``off``: no cache at all.
    """

    RW = "rw"
    RO = "ro"
    REFRESH = "refresh"
    OFF = "off"

    @property
    def reads(self) -> bool:
        return self in (CacheMode.RW, CacheMode.RO)

    @property
    def writes(self) -> bool:
        return self in (CacheMode.RW, CacheMode.REFRESH)


def cache_key(
    *,
    provider: str,
    model: str,
    messages: list[Mapping[str, Any]],
    params: Mapping[str, Any],
    seed: int | None,
    schema: Mapping[str, Any] | None,
    prompt_version: str,
    repeat: int,
    api_base: str | None = None,
    extra: Mapping[str, Any] | None = None,
    mocked: bool = False,
) -> str:
    """Return the hex SHA-256 key of one request.

    Args:
        provider: litellm provider (``"openai"``, ``"local"``, ...).
        model: the full model string as given by the user.
        messages: the chat messages (role/content dicts).
        params: sampling parameters (temperature, top_p, max_tokens, ...).
        seed: the sampling seed, or ``None``.
        schema: the JSON schema of a structured answer, or ``None`` for free text.
        prompt_version: the version hash of the prompt template(s) used.
        repeat: the repeat index (0 .. n_samples-1).
        api_base: the endpoint, when not the provider's default.
        extra: further keyword arguments sent to the provider (``top_k``, ``n_ctx``, ...).
        mocked: the answer comes from litellm's ``mock_response``, not from the model; mocked
            answers never answer a real call, nor the other way round.

    ``extra`` and ``mocked`` enter the document only when set, so the key of a plain call is
    the same as before they existed (caches filled earlier stay valid).
    """
    document = {
        "format": CACHE_FORMAT,
        "provider": provider,
        "model": model,
        "api_base": api_base,
        "messages": [dict(m) for m in messages],
        "params": dict(sorted(params.items())),
        "seed": seed,
        "schema": schema,
        "prompt_version": prompt_version,
        "repeat": repeat,
    }
    if extra:
        document["extra"] = dict(sorted(extra.items()))
    if mocked:
        document["mocked"] = True
    canonical = json.dumps(document, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedResponse:
    """A stored answer: text plus what it cost when it was first asked (tokens, USD).

    ``logprobs`` holds the answer's token log-probabilities in OpenAI's layout
    (:func:`workbench.llm.logprobs.tokens_as_dicts`) when they were asked for and returned;
    entries stored before the field existed read as ``None``.
    """

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    logprobs: list[dict[str, Any]] | None = None


class ResponseCache:
    """A response cache in a folder (``diskcache.Cache``; safe across threads and processes).

    Args:
        directory: the cache folder (created if missing).
        mode: a :class:`CacheMode`.
    """

    def __init__(self, directory: str | os.PathLike[str], mode: CacheMode | str = CacheMode.RW):
        import diskcache

        self.mode = CacheMode(mode)
        self.directory = os.fspath(directory)
        #: entries found damaged by :meth:`get` (read as misses)
        self.damaged = 0
        self._cache = diskcache.Cache(self.directory) if self.mode is not CacheMode.OFF else None

    def get(self, key: str) -> CachedResponse | None:
        """Return the stored answer for ``key`` (``None`` on a miss or when the mode does not read).

        A damaged entry (a value file cut short, a stored dict of another shape) is a miss too,
        counted in :attr:`damaged` and logged once per cache; a mode that writes replaces it
        with the new answer."""
        if self._cache is None or not self.mode.reads:
            return None
        try:
            value = self._cache.get(key)
            return CachedResponse(**value) if isinstance(value, dict) else None
        except Exception as error:  # unpickling a cut file raises UnpicklingError, EOFError, ValueError ...
            self.damaged += 1
            if self.damaged == 1:
                _log.warning("the response cache %s has an entry that cannot be read (%s: %s); it is asked again%s",
                             self.directory, type(error).__name__, error,
                             " and replaced" if self.mode.writes else "")
            return None

    def put(self, key: str, response: CachedResponse) -> None:
        """Store a successful answer (a no-op when the mode does not write)."""
        if self._cache is None or not self.mode.writes:
            return
        self._cache.set(key, response.__dict__)

    def __len__(self) -> int:
        return 0 if self._cache is None else len(self._cache)

    def close(self) -> None:
        """Close the underlying database."""
        if self._cache is not None:
            self._cache.close()
