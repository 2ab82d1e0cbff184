"""The LLM client: one place where the workbench calls a model, always through ``litellm``.

What it adds on top of ``litellm.completion``:

* a content-addressed response cache (:mod:`workbench.llm.cache`; errors never cached);
* bounded retries with exponential backoff and jitter (``tenacity``) for transient
  failures only (timeouts, connection errors, rate limits, 5xx), never for bad requests; a
  server's ``Retry-After`` is waited for when longer, up to :data:`MAX_BACKOFF_S` a wait;
* a concurrency limit on calls in flight (a semaphore shared by all threads);
* a cost budget in USD from litellm's *local* cost map (``LITELLM_LOCAL_MODEL_COST_MAP``);
* structured answers: a JSON schema passed as ``response_format`` (llama.cpp and OpenAI
  constrain decoding with it; others ignore it through ``drop_params``), the answer
  validated with ``jsonschema``, one repair turn, then :class:`LLMParseError`;
* per-run and per-sample accounting: calls, cache hits, tokens, cost, seconds in calls;
* token log-probabilities on request (``top_logprobs``), read from OpenAI's response shape
  (:mod:`workbench.llm.logprobs`) and cached with the answer.

Models named ``local/<alias>`` use the in-process llama.cpp provider of
:mod:`workbench.llm.local`, registered on first use.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.option_words import option_named
from workbench.llm.cache import CachedResponse, CacheMode, ResponseCache, cache_key
from workbench.llm.deadline import CallCancelled, DeadlineExceeded, call_with_deadline, worst_case_seconds
from workbench.llm.json_answer import NoJsonAnswerError, extract_json, find_json_answer
from workbench.llm.logprobs import TokenLogprob, parse_token_logprobs, response_token_logprobs, tokens_as_dicts

# litellm reads this at import time; the remote cost map is unreachable offline.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


class LLMError(WorkbenchError):
    """A model call that failed for one sample; the sample is recorded with :attr:`status`."""

    status = "llm_error"


class LLMCallError(LLMError):
    """The provider failed (error status, timeout, connection) after the bounded retries."""


class LLMParseError(LLMError):
    """The answer was not JSON valid for the step's schema, even after one repair turn."""

    status = "parse_error"


class BudgetExceededError(LLMError):
    """The run's ``--max-cost`` budget is spent; no further paid call is made."""

    status = "budget_exceeded"


class NoChoicesError(Exception):
    """A reply without any choice; not retried (the same request would be answered alike)."""


class NoTextError(Exception):
    """A reply whose message has no text (``content`` null) or holds a tool call instead; like
    :class:`NoChoicesError` not retried and never cached, so a rerun (``--resume --retry-failed``)
    asks again instead of replaying it (an empty string is an answer, and is kept as one)."""


class CallsStopped(BaseException):
    """The run was interrupted (:meth:`LLMClient.stop`): no new attempt is made, or a call in
    flight was abandoned. Like :class:`KeyboardInterrupt` it derives from ``BaseException``, so the
    methods' ``except LLMError`` / ``except Exception`` never record it as a sample's failure: the
    sample is left unscored and a plain ``--resume`` scores it."""


class ProviderRefusedError(WorkbenchError):
    """The provider refused a request for a reason that every other request of the run shares:
    HTTP 401 (the API key is not accepted), 403 (the key has no access to the model) or 404 (no
    such model or endpoint). Not an :class:`LLMError`, so it is never recorded as one sample's
    failure: the run stops at once (its finished rows kept) instead of writing an ``llm_error`` row,
    one refused call each, for every sample left. The client that got it stops itself
    (:meth:`LLMClient.stop`): calls of other threads raise :class:`CallsStopped` instead of asking.

    Attributes:
        status: the HTTP status (401, 403 or 404).
    """

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class LocalProviderMissingError(WorkbenchError):
    """A ``local/...`` model was asked for but :mod:`workbench.llm.local` is not installed."""


class MissingCredentialsError(WorkbenchError):
    """The model's provider needs environment variables (API key, endpoint) that are not set."""


#: how a JSON answer is asked for (:attr:`LLMSettings.structured`)
STRUCTURED_MODES: tuple[str, ...] = ("json_schema", "json_object", "off")

#: providers whose endpoint variable has a default in litellm (Ollama: http://localhost:11434)
_DEFAULT_ENDPOINT_PROVIDERS = frozenset({"ollama", "ollama_chat"})

#: providers whose SDK finds credentials outside the environment (AWS profiles and instance
#: roles, Google application-default credentials): an unset variable proves nothing there
_AMBIENT_CREDENTIAL_PROVIDERS = frozenset({"bedrock", "sagemaker", "sagemaker_chat", "vertex_ai", "vertex_ai_beta"})

#: the key variables of common providers, for a ``PROVIDER/NAME`` model: provider -> (the variables
#: any one of which is enough, the variables reported missing when none is set). Copied from
#: ``litellm.validate_environment`` (litellm/utils.py; tests/score/test_model_refused_up_front.py
#: checks each entry against it), so that a missing key is refused without importing litellm (tens
#: of seconds on a loaded machine); any other provider, and a model without a provider prefix
#: (``gpt-4o-mini``: litellm's model list names its provider), is asked of litellm itself.
PROVIDER_KEY_VARIABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "openai": (("OPENAI_API_KEY",), ("OPENAI_API_KEY",)),
    "anthropic": (("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"), ("ANTHROPIC_API_KEY",)),
    "gemini": (("GOOGLE_API_KEY", "GEMINI_API_KEY"), ("GOOGLE_API_KEY", "GEMINI_API_KEY")),
    "mistral": (("MISTRAL_API_KEY",), ("MISTRAL_API_KEY",)),
    "groq": (("GROQ_API_KEY",), ("GROQ_API_KEY",)),
    "deepseek": (("DEEPSEEK_API_KEY",), ("DEEPSEEK_API_KEY",)),
    "openrouter": (("OPENROUTER_API_KEY",), ("OPENROUTER_API_KEY",)),
    "together_ai": (("TOGETHERAI_API_KEY",), ("TOGETHERAI_API_KEY",)),
    "xai": (("XAI_API_KEY",), ("XAI_API_KEY",)),
    "fireworks_ai": (("FIREWORKS_AI_API_KEY", "FIREWORKS_API_KEY", "FIREWORKSAI_API_KEY", "FIREWORKS_AI_TOKEN"),
                     ("FIREWORKS_AI_API_KEY",)),
}


def known_provider_keys(model: str) -> tuple[str, list[str]] | None:
    """The provider of a ``PROVIDER/NAME`` model and the key variables it lacks, from
    :data:`PROVIDER_KEY_VARIABLES`, without importing litellm.

    Args:
        model: the model string (``openai/gpt-4o-mini``).

    Returns:
        ``(provider, missing variable names)`` (the names empty when one accepted variable is set,
        as litellm counts it: present in the environment), or ``None`` for a model the table
        does not cover (no provider prefix, or another provider): ask litellm
        (:func:`missing_credentials`).
    """
    provider, slash, _ = model.partition("/")
    if not slash or provider not in PROVIDER_KEY_VARIABLES:
        return None
    accepted, reported = PROVIDER_KEY_VARIABLES[provider]
    return provider, ([] if any(name in os.environ for name in accepted) else list(reported))


@dataclass
class Usage:
    """Counters of model use (for one sample, one method, or the whole run).

    Attributes:
        calls: requests sent to a provider (a retry counts as another call).
        cache_hits: answers served from the response cache.
        prompt_tokens / completion_tokens: tokens billed by the provider, counting only
            real calls (a cache hit costs nothing).
        cost_usd: USD from litellm's cost map (0 for models it does not price).
        errors: failed calls (including retried ones).
        llm_seconds: wall seconds spent inside provider calls.
        unpriced_calls: calls whose model is not in litellm's cost map.
        truncated_answers: answers that stopped at their token limit (``max_tokens`` or a
            step's ``answer_bound``), cache hits included: such an answer may be cut short.
        retry_after_wait_s: seconds of backoff waits that a server's ``Retry-After`` set, being
            longer than the client's own backoff (:func:`backoff_wait`).
        retry_after: one entry per failed attempt whose answer asked for a wait (``Retry-After``
            or ``retry-after-ms``), in order: ``{"asked_s": seconds asked, "waited_s": seconds
            waited before the next attempt}``; ``waited_s`` is the longer of the own backoff and
            the ask, at most :data:`MAX_BACKOFF_S`, or ``None`` when no attempt followed (no retry
            left). :meth:`as_dict` gives their number and the longest ask instead.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    errors: int = 0
    llm_seconds: float = 0.0
    unpriced_calls: int = 0
    truncated_answers: int = 0
    retry_after_wait_s: float = 0.0
    retry_after: list[dict[str, float | None]] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, other: Usage) -> None:
        """Add ``other``'s counters to this one."""
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict[str, Any]:
        """Return the counters plus ``tokens`` as a plain dict; instead of the ``retry_after``
        entries, ``retry_after_asks`` (how many answers asked for a wait) and
        ``retry_after_longest_s`` (the longest ask in seconds, ``None`` without one)."""
        counters = {name: value for name, value in asdict(self).items() if name != "retry_after"}
        longest = max((ask["asked_s"] for ask in self.retry_after), default=None)
        return {**counters, "tokens": self.tokens, "retry_after_asks": len(self.retry_after),
                "retry_after_longest_s": longest}


@dataclass(frozen=True)
class LLMSettings:
    """How to call the model.

    Attributes:
        model: any litellm model string (``gpt-4o-mini``, ``ollama/qwen2.5-coder``,
            ``openai/<name>`` with ``api_base``, ``local/<alias>``).
        api_base: endpoint for OpenAI-compatible servers (vLLM, llama.cpp server).
        temperature: sampling temperature (DSA-CQE used 0.2 with GPT-3.5-turbo).
        top_p: nucleus sampling, or ``None`` for the provider default.
        max_tokens: answer length limit.
        seed: sampling seed passed to providers that accept one.
        timeout_s: the deadline of one attempt, in seconds: the whole call, from sending the
            request to the last byte of the answer (not the time between bytes, which is what
            HTTP clients bound), for every provider; a call past it is abandoned and retried
            (:mod:`workbench.llm.deadline`). One call with its retries takes at most
            :meth:`worst_case_seconds`.
        max_retries: retries after the first attempt, transient errors only.
        retry_wait_s: first backoff wait; doubles per retry (with jitter). A server that asks
            for a longer wait (``Retry-After`` on a 429 or 503) gets it; every wait is capped at
            :data:`MAX_BACKOFF_S` (30 s), whatever the server asks (:func:`backoff_wait`).
        concurrency: the most calls in flight at once.
        max_cost_usd: budget for the run, or ``None``.
        structured: ``"json_schema"`` (send the schema), ``"json_object"`` (ask for any
            JSON object) or ``"off"`` (prompt only); answers are validated in every case.
        prefix_reuse: ``local/`` models only: keep the KV state of the prompt prefix a call
            shares with the previous call on the model and evaluate only the rest (llama.cpp's
            ``cache_prompt``). Faster, but the logits differ slightly from a fresh evaluation
            (measured: log-probabilities apart by up to 0.13 on the first differing token, some
            answers differ; ``tests/llm/test_prefix_reuse.py``), so it enters the cache key when
            on and answers with and without it never mix.
    """

    model: str
    api_base: str | None = None
    temperature: float = 0.2
    top_p: float | None = None
    max_tokens: int = 768
    seed: int | None = 0
    timeout_s: float = 120.0
    max_retries: int = 2
    retry_wait_s: float = 1.0
    concurrency: int = 4
    max_cost_usd: float | None = None
    structured: str = "json_schema"
    prefix_reuse: bool = False

    def __post_init__(self) -> None:
        if not self.model:
            raise ValueError("a model is required, e.g. --model gpt-4o-mini or --model local/qwen2.5-coder-0.5b")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, not {self.concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, not {self.max_retries}")
        if self.structured not in STRUCTURED_MODES:
            raise ValueError(f"structured must be json_schema, json_object or off, not {self.structured!r}")
        if self.max_cost_usd is not None and self.max_cost_usd < 0:
            raise ValueError("max_cost_usd must be >= 0")
        if self.prefix_reuse and not self.model.startswith("local/"):
            raise ValueError(
                f"prefix_reuse works with local/ models only, not {self.model!r} (a served model reuses "
                "prompt prefixes by its server's own setting, e.g. llama.cpp server's cache_prompt)"
            )

    def worst_case_seconds(self) -> float:
        """The longest one call with its retries can take, in seconds: ``timeout_s x (max_retries
        + 1)`` plus the longest backoff waits (:func:`workbench.llm.deadline.worst_case_seconds`):
        :data:`MAX_BACKOFF_S` each for a served model, whose server may ask for that much with
        ``Retry-After``; the client's own backoff alone for ``local/`` models, which send none."""
        return worst_case_seconds(self.timeout_s, self.max_retries, self.retry_wait_s, MAX_BACKOFF_S,
                                  retry_after=not self.model.startswith("local/"))

    @property
    def provider(self) -> str:
        """The litellm provider name (``"local"`` for in-process models)."""
        if self.model.startswith("local/"):
            return "local"
        import litellm

        try:
            return litellm.get_llm_provider(self.model, api_base=self.api_base)[1]
        except Exception:  # unknown to litellm: the call itself will say why
            return self.model.split("/", 1)[0] if "/" in self.model else "unknown"

    @property
    def identity(self) -> str:
        """Which model answers, as precisely as the settings tell: ``openai/name @ http://host/v1``
        for a served model, ``local/alias (sha256 b179c9523d0e)`` for a registry model (the
        file it must be), else the model string."""
        if self.model.startswith("local/"):
            from workbench.llm.models import REGISTRY

            spec = REGISTRY.get(self.model[len("local/"):])
            return f"{self.model} (sha256 {spec.sha256[:12]})" if spec else self.model
        return f"{self.model} @ {self.api_base}" if self.api_base else self.model

    def sampling_params(self) -> dict[str, Any]:
        """Return the parameters that change an answer (part of the cache key)."""
        params: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        if self.top_p is not None:
            params["top_p"] = self.top_p
        params["structured"] = self.structured
        if self.prefix_reuse:  # only when on, so the keys of calls without it stay as they were
            params["prefix_reuse"] = True
        return params


@dataclass
class Exchange:
    """One request and its answer, kept for the per-sample trace."""

    step: str
    messages: list[dict[str, str]]
    response: str | None
    cached: bool
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    repeat: int = 0
    #: log-probabilities asked for (``top_logprobs``), ``None`` when not asked
    top_logprobs: int | None = None
    #: the answer stopped at its token limit (``finish_reason`` ``"length"``; for a cache hit:
    #: as many completion tokens as the limit), so it may be cut short
    truncated: bool = False
    #: for ``local/`` models: where the seconds went (llama.cpp's ``prompt_n``, ``cache_n``,
    #: ``prompt_ms``, ``predicted_n``, ``predicted_ms``), ``None`` for other providers and cache hits
    timings: dict[str, Any] | None = None


@dataclass(frozen=True)
class Completion:
    """One answer: its text and, when asked for and returned, its token log-probabilities.

    Attributes:
        text: the answer text.
        tokens: one :class:`~workbench.llm.logprobs.TokenLogprob` per generated token, or
            ``None`` (not asked for, or the provider returned none).
        cached: served from the response cache.
    """

    text: str
    tokens: tuple[TokenLogprob, ...] | None = None
    cached: bool = False


#: a test/demo hook: (messages, schema) -> the text litellm's ``mock_response`` returns
MockResponder = Callable[[list[dict[str, str]], Mapping[str, Any] | None], str]


def _ensure_local_provider(model: str, *, in_store: bool = False) -> None:
    # in_store: also refuse a registered alias that is not in the model store and may not be pulled
    if not model.startswith("local/"):
        return
    _check_local_model(model[len("local/"):], in_store=in_store)  # first: importing the provider (litellm) takes seconds
    try:
        from workbench.llm import local  # the in-process llama.cpp provider (optional)
    except ImportError as error:
        raise LocalProviderMissingError(
            f"the model {model!r} needs the local provider (workbench.llm.local), which is not installed "
            f"in this build: {error}. Use any litellm model instead (e.g. ollama/..., openai/... with "
            f"{option_named('api_base')})."
        ) from error
    local.register()


def _check_local_model(name: str, *, in_store: bool = False) -> None:
    """Fail before any sample when a ``local/`` model names no registered alias or no file.

    Args:
        name: what follows ``local/``.
        in_store: a registered alias must also be in the model store, unless ``$WORKBENCH_AUTO_PULL``
            lets its first call pull it (:func:`workbench.llm.models.check_obtainable`).

    Raises:
        WorkbenchError: the alias is unknown, the ``.gguf`` path does not exist, or the file does
            not start with the GGUF magic bytes (``b"GGUF"``, the GGUF specification's header).
        workbench.llm.models.ModelNotPresentError: ``in_store`` and the alias's file is not (verified)
            in the store while ``$WORKBENCH_AUTO_PULL`` is ``0``.
    """
    from workbench.llm.models import REGISTRY, check_obtainable

    if name in REGISTRY:
        if in_store:
            check_obtainable(name)
        return
    if name.endswith(".gguf") or "/" in name or os.sep in name:
        path = Path(name).expanduser()
        if not path.is_file():
            raise WorkbenchError(f"local model file {name!r} not found")
        with open(path, "rb") as handle:
            magic = handle.read(4)
        if magic != b"GGUF":
            raise WorkbenchError(
                f"local model file {name!r} is not a GGUF file (it starts with {magic!r}, not b'GGUF'): give a "
                f"llama.cpp .gguf model or a known alias (see `workbench models list`)")
        return
    raise WorkbenchError(
        f"unknown local model alias {name!r}; known aliases: {', '.join(sorted(REGISTRY))} "
        f"(or local/<path to a .gguf file>); see `workbench models list`"
    )


def _cut_answer(stopped_at_limit: bool, limit: int) -> bool:
    """Whether an answer counts as truncated (``truncated_answers``): it stopped at its token
    limit, unless the limit is one token, a read of the next token's distribution (p-correct's
    verdict) that stops there by request."""
    return stopped_at_limit and limit > 1


def missing_credentials(settings: LLMSettings) -> list[str]:
    """Return the environment variables ``settings.model``'s provider needs and lacks.

    Asks ``litellm.validate_environment`` (which knows each provider's variables) without
    any network call, except for the common providers of :data:`PROVIDER_KEY_VARIABLES`, whose
    variables are known without importing litellm. ``local/`` models need nothing; an endpoint variable
    (``*_API_BASE``) counts as set when ``settings.api_base`` is given, and for providers
    with a default local endpoint (Ollama). Models litellm does not know, and providers
    whose credentials may live outside the environment (Bedrock, SageMaker, Vertex AI),
    report nothing (the first call says what is wrong).

    Returns:
        variable names, e.g. ``["OPENAI_API_KEY"]``; empty when nothing is missing.
    """
    if settings.model.startswith("local/"):
        return []
    known = known_provider_keys(settings.model)
    if known is not None:  # an API key, never an endpoint variable: api_base changes nothing here
        return known[1]
    if settings.provider in _AMBIENT_CREDENTIAL_PROVIDERS:
        return []
    import litellm

    try:
        report = litellm.validate_environment(settings.model, api_base=settings.api_base)
    except Exception:  # an unknown provider: no preflight possible
        return []
    missing = [str(name) for name in report.get("missing_keys") or []]
    if settings.api_base or settings.provider in _DEFAULT_ENDPOINT_PROVIDERS:
        missing = [name for name in missing if not name.endswith("_API_BASE")]
    return missing


class UnknownProviderError(WorkbenchError):
    """litellm cannot tell which provider serves the model string, so every call would fail."""


def check_provider(settings: LLMSettings, extra_params: dict[str, Any] | None = None) -> None:
    """Fail before any sample when litellm cannot resolve the model's provider.

    ``litellm.completion`` first resolves the provider from the model string
    (``litellm.get_llm_provider``, no network); a string it cannot resolve (``gpt-4o-mni``,
    ``foo/bar``, a bare name with ``--api-base``) fails there on every call, so without this
    check every sample would end as an ``llm_error``. A ``custom_llm_provider`` in the extra
    parameters is honoured, as ``litellm.completion`` honours it.

    Raises:
        UnknownProviderError: naming the model and how to write it.
    """
    if settings.model.startswith("local/"):
        return
    import litellm

    litellm.suppress_debug_info = True  # its "Provider List" banner (raw colour codes) would precede our message
    try:
        litellm.get_llm_provider(settings.model, api_base=settings.api_base,
                                 custom_llm_provider=(extra_params or {}).get("custom_llm_provider"))
    except litellm.BadRequestError as error:
        raise UnknownProviderError(
            f"litellm cannot tell which provider serves the model {settings.model!r}, so every call would "
            f"fail: write it as PROVIDER/NAME (openai/NAME with {option_named('api_base')} for an OpenAI-compatible server, "
            f"ollama/NAME, anthropic/NAME, ...; https://docs.litellm.ai/docs/providers) or use a local model "
            f"(local/<alias>, see `workbench models list`)"
        ) from error


def check_credentials(settings: LLMSettings) -> None:
    """Fail before any sample when the model's provider lacks its API key (or endpoint).

    Without it every sample would end as an ``llm_error`` after the retries (offline,
    litellm raises ``InternalServerError`` for a missing key).

    Raises:
        MissingCredentialsError: naming the missing variable(s).
    """
    missing = missing_credentials(settings)
    if not missing:
        return
    known = known_provider_keys(settings.model)
    provider = known[0] if known is not None else settings.provider  # the table's: litellm is not imported
    hint = ""
    if settings.api_base and any(name.endswith("_API_KEY") for name in missing):
        hint = " (a server that checks no key accepts any value, e.g. OPENAI_API_KEY=none)"
    # the missing names may be alternatives, any one of which is enough (Gemini: GOOGLE_API_KEY or GEMINI_API_KEY)
    either = known is not None and len(missing) > 1 and set(missing) <= set(PROVIDER_KEY_VARIABLES[known[0]][0])
    if either:
        names = " or ".join(missing) if len(missing) == 2 else ", ".join(missing)
        needs = (f"one of the environment variables {names}, {'neither' if len(missing) == 2 else 'none'} of which "
                 f"is set{hint}. Set one of them")
    else:
        names = " and ".join(missing) if len(missing) <= 2 else ", ".join(missing)
        needs = (f"the environment {'variable' if len(missing) == 1 else 'variables'} {names}, which "
                 f"{'is' if len(missing) == 1 else 'are'} not set{hint}. Set {'it' if len(missing) == 1 else 'them'}")
    raise MissingCredentialsError(
        f"the model {settings.model!r} ({provider}) needs {needs} before the run, or use a local model "
        f"(--model local/<alias>)."
    )


def check_model_usable(
    settings: LLMSettings,
    extra_params: Mapping[str, Any] | None = None,
    *,
    mock_response: str | MockResponder | None = None,
) -> None:
    """Every no-network check that a model can be called, run before any data is loaded.

    A ``local/`` model needs the in-process provider and a known alias or an existing ``.gguf``
    file, and (unless ``mock_response``) an alias's file in the model store where
    ``$WORKBENCH_AUTO_PULL`` is ``0``; any other model needs a provider litellm can resolve (:func:`check_provider`) and its
    credentials (:func:`check_credentials`), neither checked with ``mock_response``, which calls
    no provider. :class:`LLMClient` runs the same checks; ``workbench score`` runs them first, so
    a mistyped model fails in a second instead of after loading the data. The credentials come
    first: a missing key of a common provider (:data:`PROVIDER_KEY_VARIABLES`) is refused before
    litellm is imported; a provider litellm cannot resolve has no credentials to check (none
    missing), and :func:`check_provider` refuses it next.

    Args:
        settings: the model settings.
        extra_params: the extra ``litellm.completion`` keyword arguments (``custom_llm_provider``
            is honoured).
        mock_response: a test or dry-run answer; skips the provider and credential checks.

    Raises:
        LocalProviderMissingError: a ``local/`` model without :mod:`workbench.llm.local`.
        WorkbenchError: an unknown local alias or a missing ``.gguf`` file.
        workbench.llm.models.ModelNotPresentError: an alias not in the store that may not be pulled.
        UnknownProviderError / MissingCredentialsError: as :func:`check_provider` and
            :func:`check_credentials`.
    """
    _ensure_local_provider(settings.model, in_store=mock_response is None)
    if mock_response is None:
        check_credentials(settings)
        check_provider(settings, dict(extra_params or {}))


def _is_transient(error: BaseException) -> bool:
    import litellm

    transient = (
        DeadlineExceeded,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.RateLimitError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
    )
    if isinstance(error, transient):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and status >= 500


#: HTTP statuses whose refusal every request of the run would get, and what to check for each
_RUN_REFUSALS: dict[int, str] = {
    401: "the API key was not accepted: set the provider's key variable (e.g. OPENAI_API_KEY for openai/ models) "
         "to a valid key",
    403: "the API key has no access to this model or endpoint: check the key's permissions, {model} and {api_base}",
    404: "the server has no such model or endpoint: check {model} (the name the server serves the model by) "
         "and {api_base}",
}


def _refusal_status(error: BaseException) -> int | None:
    """401, 403 or 404 when ``error`` is such a refusal (:class:`ProviderRefusedError`), else ``None``.

    Read from litellm's exception type (``AuthenticationError``, ``PermissionDeniedError``,
    ``NotFoundError``) or its ``status_code``: litellm reports some servers' 403 as a plain
    ``APIError`` with ``status_code`` 403."""
    import litellm

    for kind, status in ((litellm.AuthenticationError, 401), (litellm.PermissionDeniedError, 403),
                         (litellm.NotFoundError, 404)):
        if isinstance(error, kind):
            return status
    status = getattr(error, "status_code", None)
    return status if status in _RUN_REFUSALS else None


def _refusal_message(settings: LLMSettings, status: int, error: BaseException) -> str:
    """The one-line message of a :class:`ProviderRefusedError`."""
    from workbench.option_words import option_named, resume_advice

    hint = _RUN_REFUSALS[status].format(model=option_named("model"), api_base=option_named("api_base"))
    said = " ".join(f"{type(error).__name__}: {error}".split())
    return (f"the model {settings.identity} refused the request with HTTP {status} ({said}); every other request "
            f"would be refused alike, so the run stops: {hint}. The rows scored so far are kept; then "
            f"{resume_advice()}")


def _network_cause(error: BaseException, api_base: str | None) -> str:
    """``"; cause: ConnectionRefusedError: [Errno 111] Connection refused (api_base ...)"`` when the
    innermost exception chained to ``error`` is an OS-level network error, or ``"; cause:
    RemoteProtocolError: peer closed connection without sending complete message body (received 20
    bytes, expected 106) at ..."`` when an HTTP transport error (``httpx.TransportError``) is chained
    to it, else ``""``.

    litellm reports a server that is not there, or one that closed the connection in the middle
    of its answer, as ``InternalServerError ... Connection error.``, which reads like a server that
    answered 500; the socket's or the HTTP client's own error says what happened."""
    import httpx

    seen: set[int] = set()
    inner: BaseException | None = error
    transport: BaseException | None = None
    while inner is not None and id(inner) not in seen:
        seen.add(id(inner))
        last = inner
        if transport is None and isinstance(inner, httpx.TransportError):
            transport = inner
        inner = inner.__cause__ or inner.__context__
    if last is not error and isinstance(last, OSError):
        cause = last
    elif transport is not None and transport is not error:
        cause = transport
    else:
        return ""
    where = f" at {api_base}" if api_base else ""
    if str(cause) in str(error):  # the message says it already (litellm's APIConnectionError for ollama)
        return f"; the server: {api_base}" if api_base else ""
    return f"; cause: {type(cause).__name__}: {cause}{where}"


#: the longest wait between two attempts, in seconds, whatever a server's ``Retry-After`` asks
#: (so :meth:`LLMSettings.worst_case_seconds` bounds every call)
MAX_BACKOFF_S = 30.0


def _response_headers(error: BaseException) -> Mapping[str, str] | None:
    """The HTTP response headers a failed call's exception keeps, where litellm keeps them: the
    exception's ``headers``, its httpx ``response.headers``, or ``litellm_response_headers`` (the
    order of litellm's own ``_get_response_headers``)."""
    for headers in (getattr(error, "headers", None), getattr(getattr(error, "response", None), "headers", None),
                    getattr(error, "litellm_response_headers", None)):
        if headers:
            return headers
    return None


def retry_after_seconds(error: BaseException | None) -> float | None:
    """How long the server asked the client to wait before the next attempt, from the response
    headers kept by ``error`` (a 429's or 503's), or ``None`` when it asked nothing readable.

    Read as the OpenAI Python SDK reads them (``_calculate_retry_timeout``): ``retry-after-ms``
    (milliseconds, OpenAI's) first, then ``Retry-After`` as seconds (a decimal number is
    accepted) or as an HTTP-date (RFC 9110, section 10.2.3; a date in the past is 0 s). Negative
    or unreadable values are no request. litellm's own reader (``_get_retry_after_from_exception_header``)
    skips ``retry-after-ms`` and decimal seconds, hence this one.

    Args:
        error: the failed attempt's exception (any; one without response headers gives ``None``).

    Returns:
        seconds (>= 0), or ``None``.
    """
    from email.utils import parsedate_to_datetime

    try:
        headers = _response_headers(error) if error is not None else None
        if not headers:
            return None
        lower = {str(name).lower(): str(value).strip() for name, value in headers.items()}
    except (AttributeError, TypeError):  # headers of an unexpected shape: no request to honour
        return None
    with contextlib.suppress(ValueError):
        if "retry-after-ms" in lower and 0 <= (ms := float(lower["retry-after-ms"])) < float("inf"):
            return ms / 1000
    value = lower.get("retry-after", "")
    with contextlib.suppress(ValueError):
        seconds = float(value)
        return seconds if 0 <= seconds < float("inf") else None
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # an HTTP-date is GMT (RFC 9110); a zone-less one is read so
        from datetime import UTC

        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - time.time())


@dataclass
class ServerWaits:
    """What servers asked of one call's retries (:func:`backoff_wait` fills it).

    Attributes:
        waited_s: seconds of the waits that a ``Retry-After`` set (longer than the own backoff).
        asked_s: the longest ``Retry-After`` seen, in seconds (waited for up to
            :data:`MAX_BACKOFF_S`), or ``None``.
        pending_s: the ``Retry-After`` wait chosen last, counted in ``waited_s`` by
            :meth:`slept` (tenacity 9 also computes a wait after the last attempt, never slept).
    """

    waited_s: float = 0.0
    asked_s: float | None = None
    pending_s: float = 0.0
    #: attempt number -> ``{"asked_s", "waited_s"}`` for each failed attempt whose answer asked
    asks: dict[int, dict[str, float | None]] = field(default_factory=dict)
    #: the attempt whose wait was chosen last, and that wait (all of it, own backoff or asked)
    pending_attempt: int | None = None
    pending_wait_s: float = 0.0

    def slept(self) -> None:
        """Count the wait chosen last as waited (call it when the retry's sleep starts)."""
        self.waited_s += self.pending_s
        self.pending_s = 0.0
        ask = self.asks.get(self.pending_attempt) if self.pending_attempt is not None else None
        if ask is not None:
            ask["waited_s"] = round(self.pending_wait_s, 3)
        self.pending_attempt = None

    def saw(self, asked: float | None, attempt: int | None = None) -> None:
        """Note a server's request of ``asked`` seconds (``None``: none), the answer to attempt
        ``attempt`` (1, 2, ...; ``None``: not kept per attempt); an attempt is noted once."""
        if asked is not None and (self.asked_s is None or asked > self.asked_s):
            self.asked_s = asked
        if asked is not None and attempt is not None:
            self.asks.setdefault(attempt, {"asked_s": round(asked, 3), "waited_s": None})

    def per_attempt(self) -> list[dict[str, float | None]]:
        """The asks in attempt order (:attr:`Usage.retry_after`'s entries)."""
        return [self.asks[attempt] for attempt in sorted(self.asks)]


def backoff_wait(first_wait_s: float, server_waits: ServerWaits | None = None) -> Any:
    """Return the tenacity wait strategy of the retries: exponential backoff with jitter, or the
    server's ``Retry-After`` when longer, never more than :data:`MAX_BACKOFF_S`.

    The own wait before retry ``n`` (1, 2, ...) is ``first_wait_s * 2**(n-1)`` plus a uniform
    jitter in ``[0, first_wait_s]``, at most :data:`MAX_BACKOFF_S` (the "exponential backoff"
    strategy of Google Cloud's retry guide, as tenacity's ``wait_exponential_jitter``).
    Built from ``wait_exponential`` and ``wait_random``, which every tenacity the project
    allows has (``wait_exponential_jitter`` takes no ``multiplier`` in tenacity 9.0 and older).
    When the failed attempt's answer asked for a wait (:func:`retry_after_seconds`: a 429 or
    503 from a rate-limited API), the wait is ``min(max(own, asked), MAX_BACKOFF_S)``: a longer
    request than the cap is cut to it, so :func:`workbench.llm.deadline.worst_case_seconds`
    still bounds the call (the error of a call that fails in the end says what was asked).

    Args:
        first_wait_s: the first wait in seconds (:attr:`LLMSettings.retry_wait_s`).
        server_waits: a record to note what the server asked and the wait chosen for it (the
            caller's tenacity ``sleep`` calls :meth:`ServerWaits.slept`).

    Returns:
        a callable ``wait(retry_state) -> seconds`` for ``tenacity.Retrying(wait=...)``.
    """
    import tenacity

    exponential = tenacity.wait_exponential(multiplier=first_wait_s, max=MAX_BACKOFF_S)
    jitter = tenacity.wait_random(0, first_wait_s)

    def wait(retry_state: Any) -> float:
        cap = MAX_BACKOFF_S  # read per wait, so a test can lower it
        own = min(exponential(retry_state) + jitter(retry_state), cap)
        outcome = getattr(retry_state, "outcome", None)
        asked = retry_after_seconds(outcome.exception()) if outcome is not None and outcome.failed else None
        chosen = own if asked is None or asked <= own else min(asked, cap)
        if server_waits is not None:
            attempt = getattr(retry_state, "attempt_number", None)
            server_waits.saw(asked, attempt)
            server_waits.pending_s = chosen if chosen > own else 0.0
            server_waits.pending_attempt, server_waits.pending_wait_s = attempt, chosen
        return chosen

    return wait


#: how an environment variable names a provider's endpoint (litellm and the OpenAI client read
#: ``OPENAI_BASE_URL`` / ``OPENAI_API_BASE``, ``OLLAMA_API_BASE``, ``AZURE_API_VERSION``, ...)
_ENDPOINT_SUFFIXES = ("_API_BASE", "_BASE_URL", "_API_VERSION")


def endpoint_from_environment(provider: str) -> dict[str, str]:
    """The environment variables that set ``provider``'s endpoint when no ``api_base`` is given.

    A served model answers differently from another server's, so these are part of the
    response cache key (:class:`LLMClient`).

    Args:
        provider: the litellm provider (``"openai"``, ``"ollama"``, ``"hosted_vllm"``).

    Returns:
        variable -> value for each one set, e.g. ``{"OPENAI_BASE_URL": "http://host:8000/v1"}``.
    """
    prefix = provider.upper().replace("-", "_") + "_"
    return {name: value for name, value in sorted(os.environ.items())
            if value and name.startswith(prefix) and name.endswith(_ENDPOINT_SUFFIXES)}


class LLMClient:
    """Calls one model with caching, retries, a concurrency limit and a budget.

    Args:
        settings: :class:`LLMSettings`.
        cache: a :class:`ResponseCache`, or ``None`` for no cache.
        mock_response: for tests and dry runs: a fixed string, or a :data:`MockResponder`
            computing the text per request; passed to litellm as ``mock_response``, so the
            whole litellm path (usage, cost) runs without a provider.
        extra_params: more keyword arguments for ``litellm.completion`` (e.g.
            ``{"mock_timeout": True}``, ``{"top_k": 40}``); part of the cache key.

    Mocked answers are cached apart from real ones (see :func:`~workbench.llm.cache.cache_key`).

    Raises:
        LocalProviderMissingError: a ``local/`` model without :mod:`workbench.llm.local`.
        MissingCredentialsError: the provider's API key (or endpoint) variable is not set
            (not checked with ``mock_response``, which calls no provider).

    Thread-safe: one client is shared by all worker threads of a run.
    """

    def __init__(
        self,
        settings: LLMSettings,
        cache: ResponseCache | None = None,
        *,
        mock_response: str | MockResponder | None = None,
        extra_params: Mapping[str, Any] | None = None,
    ):
        self.settings = settings
        self.cache = cache
        self.mock_response = mock_response
        self.extra_params = dict(extra_params or {})
        self.usage = Usage()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(settings.concurrency)
        #: cache key -> [its lock, requests holding or waiting for it]
        self._in_flight: dict[str, list[Any]] = {}
        self._provider = settings.provider
        # set by stop(): no attempt starts after it; _abandon also ends the waits on calls in flight
        self._stopping = threading.Event()
        self._abandon = threading.Event()
        check_model_usable(settings, self.extra_params, mock_response=mock_response)
        # what else enters the cache key: the extra parameters; for in-process models the engine,
        # the model file's content and the context window from the environment; for served
        # models an endpoint set in the environment (each only when present, so the key of a
        # plain call stays the one earlier versions computed)
        self._key_extra = dict(self.extra_params)
        if self._provider == "local":
            from workbench.llm.local import engine_identity, model_key_parts

            self._key_extra["engine"] = engine_identity()
            self._key_extra.update(model_key_parts(settings.model[len("local/"):], self.extra_params))
        elif settings.api_base is None:
            endpoint = endpoint_from_environment(self._provider)
            if endpoint:
                self._key_extra["endpoint_env"] = endpoint

    def stop(self, *, abandon: bool = False) -> None:
        """Stop the calls of an interrupted run (thread-safe; called from the main thread on Ctrl-C).

        After it, every call that would send a request (a first attempt or a retry) raises
        :class:`CallsStopped` instead, and a backoff wait ends at once; answers already cached are
        still served. Calls in flight finish (and are cached), unless ``abandon``: then their waits
        end at once with :class:`CallsStopped` and their answers are thrown away (a second Ctrl-C).

        Args:
            abandon: also give up the calls in flight.
        """
        self._stopping.set()
        if abandon:
            self._abandon.set()

    # -- free text ------------------------------------------------------------------------
    def complete(
        self,
        messages: list[dict[str, str]],
        *,
        prompt_version: str,
        step: str,
        repeat: int = 0,
        schema: Mapping[str, Any] | None = None,
        usage: Usage | None = None,
        log: list[Exchange] | None = None,
    ) -> str:
        """Return the model's answer text for ``messages`` (:meth:`ask` without log-probabilities).

        Raises:
            LLMCallError: the provider failed after the retries.
            BudgetExceededError: ``max_cost_usd`` is spent.
        """
        return self.ask(
            messages, prompt_version=prompt_version, step=step, repeat=repeat, schema=schema, usage=usage, log=log
        ).text

    def ask(
        self,
        messages: list[dict[str, str]],
        *,
        prompt_version: str,
        step: str,
        repeat: int = 0,
        schema: Mapping[str, Any] | None = None,
        usage: Usage | None = None,
        log: list[Exchange] | None = None,
        top_logprobs: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        answer_bound: int | None = None,
    ) -> Completion:
        """Return the model's answer for ``messages``, with its token log-probabilities if asked.

        Args:
            messages: chat messages.
            prompt_version: version hash of the template(s) that built the messages.
            step: a name for the trace (``"analyse:generation:3"``).
            repeat: repeat index; distinct indices are distinct cache entries.
            schema: the JSON schema sent as ``response_format`` (see
                :attr:`LLMSettings.structured`); ``None`` for free text.
            usage: per-sample counters to add to (the run's counters always are).
            log: a list to append the :class:`Exchange` to.
            top_logprobs: ask for the log-probabilities of every generated token and of this
                many alternatives per position (OpenAI allows 0-20); ``None``: do not ask.
                Part of the cache key, so answers with and without them never mix.
            temperature / max_tokens: this call's values instead of the settings' (part of
                the cache key).
            answer_bound: stop the answer after this many tokens, without changing the
                question: below the call's ``max_tokens`` the request is sent with this limit,
                but keyed as the unbounded call. Decoding does not depend on the limit (it only
                stops it), so an answer that ends before the bound is the unbounded call's
                answer: it is stored and found under that call's key (caches filled without a
                bound serve it, and the other way round). An answer cut at the bound is stored
                under a key that names the bound, flagged ``truncated`` in the exchange and
                counted in ``truncated_answers``. ``None``: no bound. (A call limited to one token,
                a read of the next token's distribution like p-correct's verdict, is never
                counted as truncated.)

        Returns:
            a :class:`Completion`; its ``tokens`` are ``None`` when the provider sent none
            (litellm drops the parameters for providers without them).

        Raises:
            LLMCallError: the provider failed after the retries, or its reply had no text
                (``content`` null, or a tool call instead; not cached, :class:`NoTextError`).
            BudgetExceededError: ``max_cost_usd`` is spent.
            ProviderRefusedError: HTTP 401, 403 or 404, which every other call would get alike;
                the client is stopped (:meth:`stop`).
        """
        settings = self.settings
        overrides = _overrides(temperature, max_tokens, top_logprobs)
        key = self.request_key(messages, prompt_version=prompt_version, repeat=repeat, schema=schema,
                               top_logprobs=top_logprobs, temperature=temperature, max_tokens=max_tokens)
        limit = overrides.get("max_tokens", settings.max_tokens)
        bounded = answer_bound is not None and answer_bound < limit
        if answer_bound is not None and answer_bound < 1:
            raise ValueError(f"answer_bound must be >= 1 token, not {answer_bound}")
        # where an answer cut at the bound lives: never under the unbounded call's key
        bound_key = self.request_key(
            messages, prompt_version=prompt_version, repeat=repeat, schema=schema, top_logprobs=top_logprobs,
            temperature=temperature, max_tokens=max_tokens, answer_bound=answer_bound,
        ) if bounded else None
        # an identical request in flight (another sample's same sub-code) is waited for, then a cache hit
        with self._same_request(key):
            local_usage = Usage()
            cached, hit_limit = None, limit
            if self.cache is not None:
                cached = self.cache.get(key)
                if cached is None and bound_key is not None:
                    cached, hit_limit = self.cache.get(bound_key), answer_bound
            if cached is not None:
                truncated = _cut_answer(cached.completion_tokens >= hit_limit, hit_limit)
                local_usage.cache_hits = 1
                local_usage.truncated_answers = int(truncated)
                self._account(local_usage, usage)
                if log is not None:
                    log.append(Exchange(step, messages, cached.text, True, repeat=repeat, top_logprobs=top_logprobs,
                                        truncated=truncated))
                return Completion(cached.text, parse_token_logprobs(cached.logprobs), cached=True)
            started = time.perf_counter()
            request_overrides = {**overrides, "max_tokens": answer_bound} if bounded else overrides
            waits = ServerWaits()
            try:
                response, seconds = self._call_with_retries(messages, schema, repeat, local_usage, request_overrides,
                                                            waits)
            except Exception as error:
                elapsed = time.perf_counter() - started
                # the last attempt's ask (older tenacity computes no wait after the last attempt)
                waits.saw(retry_after_seconds(error), local_usage.calls or None)
                local_usage.retry_after_wait_s += waits.waited_s
                local_usage.retry_after.extend(waits.per_attempt())
                self._account(local_usage, usage)
                # the cause, and how long the call held the sample: attempts and wall seconds, backoff
                # included, and what the server asked (the last answer's Retry-After was not waited for)
                where = f"{local_usage.calls} attempt{'s' if local_usage.calls != 1 else ''}, {elapsed:.1f} s in all"
                if waits.waited_s:
                    where += f", {waits.waited_s:.1f} s of it waiting as the server asked (Retry-After)"
                asked = ""
                if waits.asked_s is not None and waits.asked_s > MAX_BACKOFF_S:
                    asked = (f"; the server asked to wait {_seconds(waits.asked_s)} s (Retry-After), more than the "
                             f"{_seconds(MAX_BACKOFF_S)} s one wait may last: run again later")
                if log is not None:
                    log.append(Exchange(step, messages, None, False,
                                        error=f"{type(error).__name__}: {error} ({where}){asked}",
                                        seconds=elapsed, repeat=repeat, top_logprobs=top_logprobs))
                if isinstance(error, LLMError):
                    raise
                refused = _refusal_status(error)
                if refused is not None:
                    self.stop()  # no other worker sends the request that would be refused alike
                    raise ProviderRefusedError(_refusal_message(settings, refused, error), refused) from error
                raise LLMCallError(f"{settings.model}: {type(error).__name__}: {error} ({where}){asked}"
                                   f"{_network_cause(error, settings.api_base)}") from error
            local_usage.retry_after_wait_s += waits.waited_s
            local_usage.retry_after.extend(waits.per_attempt())
            text = response.choices[0].message.content or ""
            tokens = response_token_logprobs(response) if top_logprobs is not None else None
            prompt_tokens, completion_tokens = _tokens(response)
            cost = self._cost(response, local_usage)
            local_usage.prompt_tokens += prompt_tokens
            local_usage.completion_tokens += completion_tokens
            local_usage.cost_usd += cost
            # where the answer is cached follows the real cut; the count follows _cut_answer
            cut = response.choices[0].finish_reason == "length"
            truncated = _cut_answer(cut, answer_bound if bounded else limit)
            local_usage.truncated_answers = int(truncated)
            self._account(local_usage, usage)
            if self.cache is not None:
                stored = CachedResponse(text, prompt_tokens, completion_tokens, cost, tokens_as_dicts(tokens))
                self.cache.put(bound_key if bounded and cut else key, stored)
            if log is not None:
                log.append(Exchange(step, messages, text, False, None, prompt_tokens, completion_tokens, cost, seconds, repeat,
                                    top_logprobs, truncated=truncated, timings=_local_timings(response)))
            return Completion(text, tokens)

    def request_key(
        self,
        messages: list[dict[str, str]],
        *,
        prompt_version: str,
        repeat: int = 0,
        schema: Mapping[str, Any] | None = None,
        top_logprobs: int | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        answer_bound: int | None = None,
    ) -> str:
        """The response cache key of a call of :meth:`ask` with these arguments
        (:func:`~workbench.llm.cache.cache_key`): the model and where it is served, its file's
        content and context window for a ``local/`` model, the messages, the sampling
        parameters, the structured mode and schema, the prompt version, the repeat, the extra
        provider parameters. With ``answer_bound``: the key of an answer cut at that bound
        (an answer ending before it is keyed as the unbounded call's)."""
        settings = self.settings
        params = {**settings.sampling_params(), **_overrides(temperature, max_tokens, top_logprobs)}
        if answer_bound is not None:
            params["answer_bound"] = answer_bound
        return cache_key(
            provider=self._provider,
            model=settings.model,
            api_base=settings.api_base,
            messages=messages,
            params=params,
            seed=settings.seed,
            schema=schema if settings.structured != "off" else None,
            prompt_version=prompt_version,
            repeat=repeat,
            extra=self._key_extra,
            mocked=self.mock_response is not None,
        )

    # -- structured answers ------------------------------------------------------------------
    def complete_json(
        self,
        messages: list[dict[str, str]],
        schema: Mapping[str, Any],
        *,
        prompt_version: str,
        step: str,
        repeat: int = 0,
        usage: Usage | None = None,
        log: list[Exchange] | None = None,
        answer_bound: int | None = None,
    ) -> dict[str, Any]:
        """Return the model's answer as a JSON object valid for ``schema`` (see :meth:`ask_json`).

        Raises:
            LLMParseError: both answers invalid; the message holds the last error.
            LLMCallError / BudgetExceededError: as :meth:`ask`.
        """
        answer, _ = self.ask_json(
            messages, schema, prompt_version=prompt_version, step=step, repeat=repeat, usage=usage, log=log,
            answer_bound=answer_bound,
        )
        return answer

    def ask_json(
        self,
        messages: list[dict[str, str]],
        schema: Mapping[str, Any],
        *,
        prompt_version: str,
        step: str,
        repeat: int = 0,
        usage: Usage | None = None,
        log: list[Exchange] | None = None,
        top_logprobs: int | None = None,
        answer_bound: int | None = None,
    ) -> tuple[dict[str, Any], Completion]:
        """Return the model's answer as a JSON object valid for ``schema``, and the completion it came from.

        The answer is the reply's JSON object that validates against ``schema`` (fenced blocks
        first, the last valid one when several do; :mod:`workbench.llm.json_answer`), so prose
        with braces or an example object before it does not hide it. A first answer that is not valid gets one repair turn (the answer and the
        validation error are shown to the model); a second invalid answer raises.

        Args:
            top_logprobs: as :meth:`ask`; asked on both turns, so the returned completion's
                tokens belong to the answer that was kept.
            answer_bound: as :meth:`ask`, on both turns (a cut answer is invalid JSON, so it
                gets the repair turn like any invalid answer).

        Raises:
            LLMParseError: both answers invalid; the message holds the last error.
            LLMCallError / BudgetExceededError: as :meth:`ask`.
        """
        completion = self.ask(
            messages, prompt_version=prompt_version, step=step, repeat=repeat, schema=schema, usage=usage, log=log,
            top_logprobs=top_logprobs, answer_bound=answer_bound,
        )
        answer, problem = _json_answer(completion.text, schema)
        if problem is None:
            return answer, completion
        repair = [
            *messages,
            {"role": "assistant", "content": completion.text},
            {
                "role": "user",
                "content": (
                    f"That answer is not valid: {problem}. Reply again with only one JSON object "
                    f"that matches this JSON schema, and nothing else:\n{json.dumps(schema)}"
                ),
            },
        ]
        completion = self.ask(
            repair, prompt_version=prompt_version, step=f"{step}:repair", repeat=repeat, schema=schema, usage=usage,
            log=log, top_logprobs=top_logprobs, answer_bound=answer_bound,
        )
        answer, problem = _json_answer(completion.text, schema)
        if problem is None:
            return answer, completion
        raise LLMParseError(f"{step}: the answer is not valid JSON for the schema after one repair turn: {problem}")

    # -- internals ---------------------------------------------------------------------------
    @contextlib.contextmanager
    def _same_request(self, key: str) -> Iterator[None]:
        """Serialises requests with one cache key when the cache reads and writes, so the second
        of two identical requests sent at once is answered from the cache, not asked again."""
        if self.cache is None or self.cache.mode is not CacheMode.RW:
            yield
            return
        with self._lock:
            entry = self._in_flight.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._lock:
                entry[1] -= 1
                if entry[1] == 0:
                    del self._in_flight[key]

    def _call_with_retries(self, messages, schema, repeat, local_usage: Usage, overrides: Mapping[str, Any],
                           waits: ServerWaits | None = None):
        import tenacity

        def sleep(seconds: float) -> None:
            if waits is not None:
                waits.slept()
            self._stopping.wait(seconds)  # a backoff ends when the run is stopped; the next attempt then refuses

        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(self.settings.max_retries + 1),
            wait=backoff_wait(self.settings.retry_wait_s, waits),
            retry=tenacity.retry_if_exception(_is_transient),
            reraise=True,
            sleep=sleep,
        )
        for attempt in retrying:
            with attempt:
                return self._call_once(messages, schema, repeat, local_usage, overrides)
        raise AssertionError("unreachable")  # pragma: no cover

    def _call_once(self, messages, schema, repeat, local_usage: Usage, overrides: Mapping[str, Any]):
        import litellm

        litellm.suppress_debug_info = True  # no "Give Feedback" banners between our rows

        settings = self.settings
        if self._stopping.is_set():
            raise CallsStopped("the run was interrupted: no new request is sent")
        with self._lock:
            spent = self.usage.cost_usd
        if settings.max_cost_usd is not None and spent >= settings.max_cost_usd:
            raise BudgetExceededError(f"the budget of ${settings.max_cost_usd:.4f} is spent (${spent:.4f})")
        kwargs: dict[str, Any] = {
            "model": settings.model,
            "messages": messages,
            "temperature": settings.temperature,
            "max_tokens": settings.max_tokens,
            "timeout": settings.timeout_s,
            "num_retries": 0,  # retries are ours (bounded, logged)
            "drop_params": True,
        }
        if settings.api_base:
            kwargs["api_base"] = settings.api_base
        if settings.top_p is not None:
            kwargs["top_p"] = settings.top_p
        if settings.seed is not None:
            # distinct repeats must be able to differ even with a fixed seed
            kwargs["seed"] = settings.seed + repeat
        if schema is not None and settings.structured == "json_schema":
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(schema), "strict": True},
            }
        elif schema is not None and settings.structured == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        if settings.prefix_reuse:
            from workbench.llm.local import PREFIX_REUSE_PARAM

            kwargs[PREFIX_REUSE_PARAM] = True
        kwargs.update(_request_params(overrides))
        if self.mock_response is not None:
            mock = self.mock_response
            kwargs["mock_response"] = mock(messages, schema) if callable(mock) else mock
        kwargs.update(self.extra_params)
        started = time.perf_counter()
        # the slot is freed at the deadline even though an abandoned call's thread lives on
        with self._slots:
            try:
                response = call_with_deadline(lambda: litellm.completion(**kwargs), settings.timeout_s,
                                              what=settings.identity, cancel=self._abandon)
            except Exception as error:
                local_usage.calls += 1
                local_usage.errors += 1
                local_usage.llm_seconds += time.perf_counter() - started
                if isinstance(error, CallCancelled):
                    raise CallsStopped(str(error)) from None
                raise
        seconds = time.perf_counter() - started
        local_usage.calls += 1
        local_usage.llm_seconds += seconds
        if not getattr(response, "choices", None):
            # an OpenAI-compatible server may answer 200 with "choices": [] (a filter, an overload)
            raise NoChoicesError("the reply has no choices (an empty \"choices\" list): no answer to read")
        choice = response.choices[0]
        message = getattr(choice, "message", None)
        tool_calls = getattr(message, "tool_calls", None) or []
        if getattr(message, "content", None) is None or (tool_calls and not message.content):
            # billed all the same: its tokens and cost count
            prompt_tokens, completion_tokens = _tokens(response)
            local_usage.prompt_tokens += prompt_tokens
            local_usage.completion_tokens += completion_tokens
            local_usage.cost_usd += self._cost(response, local_usage)
            raise NoTextError(_no_text(choice, tool_calls))
        return response, seconds

    def _cost(self, response: Any, local_usage: Usage) -> float:
        import litellm

        try:
            return float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # model not in the local cost map (local and self-hosted models)
            local_usage.unpriced_calls += 1
            return 0.0

    def _account(self, local_usage: Usage, usage: Usage | None) -> None:
        with self._lock:
            self.usage.add(local_usage)
            if usage is not None:
                usage.add(local_usage)


def _overrides(temperature: float | None, max_tokens: int | None, top_logprobs: int | None) -> dict[str, Any]:
    """One call's parameters beyond the settings, as they enter the cache key (unset ones left out,
    so a plain call's key is the same as before they existed)."""
    overrides: dict[str, Any] = {}
    if temperature is not None:
        overrides["temperature"] = temperature
    if max_tokens is not None:
        overrides["max_tokens"] = max_tokens
    if top_logprobs is not None:
        if not 0 <= top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be 0-20 (OpenAI's range), not {top_logprobs}")
        overrides["top_logprobs"] = top_logprobs
    return overrides


def _request_params(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The litellm keyword arguments of :func:`_overrides`' values (OpenAI's ``logprobs`` flag added)."""
    params = dict(overrides)
    if "top_logprobs" in params:
        params["logprobs"] = True
    return params


def _seconds(value: float) -> str:
    """``3600``, ``30.4``: seconds with at most one decimal, never in exponent notation."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _no_text(choice: Any, tool_calls: list[Any]) -> str:
    """What a reply without text holds instead (:class:`NoTextError`'s message)."""
    if tool_calls:
        names = ", ".join(str(getattr(getattr(call, "function", None), "name", None) or "?") for call in tool_calls)
        return f"the reply holds a tool call ({names}) instead of text: no answer to read"
    finish = getattr(choice, "finish_reason", None)
    hint = {
        "length": "; the token limit was reached before any text (a reasoning model may spend it all on "
                  f"reasoning): raise {option_named('max_tokens')}",
        "content_filter": "; the provider's content filter withheld it",
    }.get(finish, "")
    return f"the reply has no text (content null, finish_reason {finish!r}): no answer to read{hint}"


def _local_timings(response: Any) -> dict[str, Any] | None:
    """llama.cpp's timings of a ``local/`` answer (:data:`workbench.llm.local.TIMINGS_KEY`), else ``None``."""
    hidden = getattr(response, "_hidden_params", None) or {}
    timings = hidden.get("llama_cpp_timings")
    return dict(timings) if timings else None


def _tokens(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)


def _json_answer(text: str, schema: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """(the reply's JSON object valid for ``schema``, None), or (None, what is wrong) for the
    repair turn (:func:`workbench.llm.json_answer.find_json_answer`)."""
    try:
        return find_json_answer(text, schema).value, None
    except NoJsonAnswerError as error:
        return None, str(error)


__all__ = [
    "BudgetExceededError",
    "CacheMode",
    "Completion",
    "Exchange",
    "LLMCallError",
    "LLMClient",
    "LLMError",
    "LLMParseError",
    "LLMSettings",
    "LocalProviderMissingError",
    "MissingCredentialsError",
    "ResponseCache",
    "ServerWaits",
    "UnknownProviderError",
    "ProviderRefusedError",
    "Usage",
    "check_credentials",
    "check_provider",
    "extract_json",
    "missing_credentials",
    "retry_after_seconds",
]
