"""The ``local`` litellm provider: GGUF models run in process with llama.cpp.

After :func:`register`, ``litellm.completion(model="local/<alias-or-path>", messages=...)``
(and ``litellm.acompletion``) answer from a model of :mod:`workbench.llm.models` (pulled
and verified on first use unless ``WORKBENCH_AUTO_PULL=0``) or from a user's own ``.gguf``
file, and return an ordinary ``litellm.ModelResponse`` with ``usage`` filled and a cost of 0.

What the provider honours:

* the chat template stored in the GGUF (``tokenizer.chat_template``), as llama.cpp applies it;
* ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``seed``, ``max_tokens`` (or
  ``max_completion_tokens``), ``stop``, ``presence_penalty``, ``frequency_penalty``,
  ``repeat_penalty`` (left out: llama-cpp-python's defaults, e.g. temperature 0.2 and
  repeat_penalty 1.1, not OpenAI's);
* ``response_format``: ``{"type": "json_object"}`` (any JSON object), ``{"type": "json_object",
  "schema": {...}}`` or OpenAI's ``{"type": "json_schema", "json_schema": {"schema": {...}}}``;
  decoding is constrained by a llama.cpp grammar built from the schema, so the answer parses
  (unless ``max_tokens`` cuts it: then ``finish_reason`` is ``"length"``);
* ``timeout`` (seconds): checked while waiting for the model and after every generated token;
  past it the call raises ``litellm.Timeout`` (prompt evaluation itself is not interruptible,
  nor is the first-use pull and load of a model);
* ``n_ctx`` and ``n_threads`` as extra keyword arguments (or ``$WORKBENCH_LOCAL_N_CTX``,
  ``$WORKBENCH_LOCAL_THREADS``); defaults: 4096 tokens and every CPU this process may use.

Each (file, n_ctx, n_threads) is loaded once per process; calls to one model are serialised
by a lock (a llama.cpp context is not thread-safe), calls to different models run in parallel.
Every call evaluates its prompt from scratch (no KV-cache reuse between calls), so the same
messages, parameters and seed give the same answer.
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# llama.cpp's OpenMP threads busy-wait by default; on a shared or oversubscribed machine that
# slowed generation 10-20x in our measurements (benchmarks/local_llm_bench.py
# --omp-wait-policy active). Must be set before libgomp loads, i.e. before llama_cpp is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402

from workbench.llm import models  # noqa: E402

#: the litellm provider name: models are ``local/<alias-or-path>``
PROVIDER = "local"
N_CTX_ENV = "WORKBENCH_LOCAL_N_CTX"
THREADS_ENV = "WORKBENCH_LOCAL_THREADS"
#: context window in tokens when neither the call nor the environment sets one
DEFAULT_N_CTX = 4096

#: OpenAI-style parameters passed on to llama.cpp's sampler
_SAMPLING = (
    "temperature", "top_p", "top_k", "min_p", "seed", "max_tokens", "stop",
    "presence_penalty", "frequency_penalty", "repeat_penalty",
)  # fmt: skip
_LOADING = ("n_ctx", "n_threads")
#: accepted and without effect in process
_IGNORED = ("stream_options", "user", "max_retries", "extra_headers", "parallel_tool_calls")

_lock = threading.Lock()


@dataclass
class LoadedModel:
    """A model in memory.

    Attributes:
        llama: the ``llama_cpp.Llama`` instance.
        path: the GGUF file it was loaded from.
        n_ctx: the context window in tokens.
        n_threads: CPU threads for generation and prompt evaluation.
        lock: held while the model generates.
        load_seconds: wall time of the load.
    """

    llama: Any
    path: Path
    n_ctx: int
    n_threads: int
    lock: threading.Lock
    load_seconds: float


_loaded: dict[tuple[str, int, int], LoadedModel] = {}


def default_threads() -> int:
    """``$WORKBENCH_LOCAL_THREADS``, else the number of CPUs this process may run on."""
    if os.environ.get(THREADS_ENV):
        return max(1, int(os.environ[THREADS_ENV]))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def default_n_ctx() -> int:
    """``$WORKBENCH_LOCAL_N_CTX``, else :data:`DEFAULT_N_CTX`."""
    return int(os.environ.get(N_CTX_ENV) or DEFAULT_N_CTX)


def load_model(model: str, *, n_ctx: int | None = None, n_threads: int | None = None) -> LoadedModel:
    """The loaded model for an alias or GGUF path, loading it on first use (thread-safe).

    Args:
        model: a :data:`workbench.llm.models.REGISTRY` alias or a path to a ``.gguf`` file.
        n_ctx: context window in tokens (default :func:`default_n_ctx`).
        n_threads: CPU threads (default :func:`default_threads`).

    Returns:
        the shared :class:`LoadedModel`.

    Raises:
        workbench.llm.models.ModelError: unknown alias, file not present/verified, pull failed.
        ValueError: llama.cpp could not load the file.
    """
    from llama_cpp import Llama

    path = models.resolve(model, progress=sys.stderr.isatty())
    n_ctx = int(n_ctx or default_n_ctx())
    n_threads = int(n_threads or default_threads())
    key = (str(path.resolve()), n_ctx, n_threads)
    with _lock:
        if key not in _loaded:
            started = time.perf_counter()
            llama = Llama(
                model_path=str(path),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
            _loaded[key] = LoadedModel(llama, path, n_ctx, n_threads, threading.Lock(), time.perf_counter() - started)
        return _loaded[key]


def unload_all() -> None:
    """Closes every loaded model and frees its memory (waits for calls in progress)."""
    with _lock:
        loaded = list(_loaded.values())
        _loaded.clear()
    for model in loaded:
        # a call still generating after 30 s (e.g. a daemon thread at exit) keeps its model
        if model.lock.acquire(timeout=30):
            try:
                model.llama.close()
            finally:
                model.lock.release()


# closing before interpreter shutdown avoids llama-cpp-python's noisy __del__ at exit
atexit.register(unload_all)


@functools.lru_cache(maxsize=64)
def _grammar_from_schema(schema_json: str | None) -> Any:
    from llama_cpp import LlamaGrammar
    from llama_cpp.llama_grammar import JSON_GBNF

    if schema_json is None:
        return LlamaGrammar.from_string(JSON_GBNF, verbose=False)
    return LlamaGrammar.from_json_schema(schema_json, verbose=False)


def grammar_for(response_format: Any) -> Any:
    """The llama.cpp grammar that constrains decoding to ``response_format`` (None: free text).

    Args:
        response_format: None, ``{"type": "text"}``, ``{"type": "json_object"[, "schema": S]}``
            (without a schema: any JSON object)
            or ``{"type": "json_schema", "json_schema": {"schema": S, ...}}``.

    Returns:
        a ``llama_cpp.LlamaGrammar`` or None.

    Raises:
        ValueError: an unknown type, or a schema llama.cpp cannot turn into a grammar.
    """
    if response_format is None:
        return None
    if not isinstance(response_format, Mapping):
        raise ValueError(f"response_format must be a mapping, not {type(response_format).__name__}")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        schema = response_format.get("schema")
    elif kind == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
    else:
        raise ValueError(f"unsupported response_format type {kind!r} (use json_object or json_schema)")
    try:
        return _grammar_from_schema(None if schema is None else json.dumps(schema, sort_keys=True))
    except Exception as error:  # llama.cpp's converter raises assorted errors on unsupported keywords
        raise ValueError(f"cannot build a llama.cpp grammar from the JSON schema: {error}") from error


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        else:
            raise ValueError("local models take text only; got a content part of type "
                             f"{part.get('type') if isinstance(part, Mapping) else type(part).__name__!r}")
    return "".join(parts)


def _chat_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """OpenAI-style messages as the plain role/content pairs a chat template expects."""
    converted = []
    for message in messages:
        role = message.get("role")
        if role == "developer":
            role = "system"
        if role not in {"system", "user", "assistant"}:
            raise ValueError(f"local models take system/user/assistant messages, not {role!r}")
        converted.append({"role": role, "content": _text_of(message.get("content"))})
    if not converted:
        raise ValueError("messages is empty")
    return converted


def _timeout_seconds(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, (int, float)):
        return float(timeout)
    read = getattr(timeout, "read", None)  # httpx.Timeout
    return float(read) if read is not None else None


class _Deadline:
    """A llama.cpp stopping criterion that ends generation once ``monotonic()`` passes ``at``."""

    def __init__(self, at: float | None):
        self.at = at
        self.hit = False

    def __call__(self, input_ids: Any, logits: Any) -> bool:
        if self.at is not None and time.monotonic() > self.at:
            self.hit = True
        return self.hit


class _WithStoppingCriterion:
    """Forwards to a ``Llama`` but adds a stopping criterion to ``create_completion``.

    llama-cpp-python's chat handlers (which apply the GGUF chat template) call
    ``llama.create_completion`` without a way to pass stopping criteria from
    ``create_chat_completion``; the handler is given this proxy instead.
    """

    def __init__(self, llama: Any, criterion: _Deadline):
        self._llama = llama
        self._criterion = criterion

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llama, name)

    def create_completion(self, *args: Any, stopping_criteria: Any = None, **kwargs: Any) -> Any:
        from llama_cpp import StoppingCriteriaList

        criteria = StoppingCriteriaList([self._criterion, *(stopping_criteria or [])])
        return self._llama.create_completion(*args, stopping_criteria=criteria, **kwargs)


def _split_params(optional_params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Any]:
    sampling: dict[str, Any] = {}
    loading: dict[str, Any] = {}
    response_format = None
    unsupported = []
    for name, value in optional_params.items():
        if value is None or name in _IGNORED:
            continue
        if name == "max_completion_tokens":
            sampling["max_tokens"] = value
        elif name in _SAMPLING:
            sampling[name] = value
        elif name in _LOADING:
            loading[name] = value
        elif name == "response_format":
            response_format = value
        elif name == "n":
            if value != 1:
                unsupported.append("n (only 1)")
        elif name == "stream":
            if value:
                unsupported.append("stream")
        else:
            unsupported.append(name)
    if unsupported:
        raise ValueError(f"the local provider does not support: {', '.join(sorted(unsupported))}")
    if isinstance(sampling.get("stop"), str):
        sampling["stop"] = [sampling["stop"]]
    return sampling, loading, response_format


def chat(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    response_format: Any = None,
    timeout_s: float | None = None,
    n_ctx: int | None = None,
    n_threads: int | None = None,
    **sampling: Any,
) -> dict[str, Any]:
    """One chat completion with a local model, as llama-cpp-python's OpenAI-style dict.

    Args:
        model: alias or GGUF path (see :func:`load_model`).
        messages: OpenAI-style messages (system/user/assistant; text content).
        response_format: see :func:`grammar_for`.
        timeout_s: seconds for the whole call, waiting for the model included (None: no limit).
        n_ctx, n_threads: see :func:`load_model`.
        **sampling: ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``seed``, ``max_tokens``,
            ``stop``, ``presence_penalty``, ``frequency_penalty``, ``repeat_penalty``.

    Returns:
        ``{"choices": [{"message": {"content": ...}, "finish_reason": ...}], "usage": {...}}``.

    Raises:
        TimeoutError: ``timeout_s`` passed (while waiting for the model or generating).
        ValueError: bad messages or response_format, or the prompt does not fit in ``n_ctx``.
        workbench.llm.models.ModelError: the model file cannot be had.
    """
    from llama_cpp import llama_chat_format

    started = time.monotonic()
    deadline = _Deadline(None if timeout_s is None else started + timeout_s)
    chat_messages = _chat_messages(messages)
    grammar = grammar_for(response_format)
    loaded = load_model(model, n_ctx=n_ctx, n_threads=n_threads)
    wait = -1 if deadline.at is None else max(0.0, deadline.at - time.monotonic())
    if not loaded.lock.acquire(timeout=wait):
        raise TimeoutError(f"local model {model!r} stayed busy for the whole timeout of {timeout_s}s")
    try:
        llama = loaded.llama
        # Re-evaluate the whole prompt every call: reusing a cached prefix decodes the last
        # prompt token alone, which changes the logits slightly, so a fixed seed would not
        # give the same answer twice (measured: different texts at temperature 1.0).
        llama.reset()
        # the same handler choice as Llama.create_chat_completion: the GGUF's own chat template
        handler = (
            llama.chat_handler
            or llama._chat_handlers.get(llama.chat_format)
            or llama_chat_format.get_chat_completion_handler(llama.chat_format)
        )
        result = handler(
            llama=_WithStoppingCriterion(llama, deadline),
            messages=chat_messages,
            grammar=grammar,
            **sampling,
        )
    finally:
        loaded.lock.release()
    if deadline.hit:
        raise TimeoutError(f"local model {model!r} exceeded the timeout of {timeout_s}s")
    return result


class LocalLLM(CustomLLM):
    """The litellm ``CustomLLM`` behind ``local/...`` models (see the module docstring)."""

    def completion(  # type: ignore[override]
        self,
        model: str,
        messages: list,
        api_base: str,
        custom_prompt_dict: dict,
        model_response: litellm.ModelResponse,
        print_verbose: Any,
        encoding: Any,
        api_key: Any,
        logging_obj: Any,
        optional_params: dict,
        acompletion: Any = None,
        litellm_params: Any = None,
        logger_fn: Any = None,
        headers: Any = None,
        timeout: Any = None,
        client: Any = None,
    ) -> litellm.ModelResponse:
        """Runs the model; maps failures onto litellm's exception types."""
        full_name = f"{PROVIDER}/{model}"
        try:
            sampling, loading, response_format = _split_params(optional_params)
            result = chat(
                model,
                messages,
                response_format=response_format,
                timeout_s=_timeout_seconds(timeout),
                **loading,
                **sampling,
            )
        except TimeoutError as error:
            raise litellm.Timeout(message=str(error), model=full_name, llm_provider=PROVIDER) from error
        except models.ModelPullError as error:
            raise litellm.APIConnectionError(message=str(error), llm_provider=PROVIDER, model=full_name) from error
        except models.ModelError as error:
            raise litellm.NotFoundError(message=str(error), model=full_name, llm_provider=PROVIDER) from error
        except ValueError as error:
            if "exceed context window" in str(error):
                raise litellm.ContextWindowExceededError(
                    message=str(error), model=full_name, llm_provider=PROVIDER
                ) from error
            raise litellm.BadRequestError(message=str(error), model=full_name, llm_provider=PROVIDER) from error
        except Exception as error:  # llama.cpp failures (decode errors, out of memory)
            raise litellm.InternalServerError(
                message=f"{type(error).__name__}: {error}", model=full_name, llm_provider=PROVIDER
            ) from error
        _ensure_zero_cost(full_name)
        choice = result["choices"][0]
        model_response.choices[0].message.content = choice["message"]["content"]  # type: ignore[union-attr]
        model_response.choices[0].finish_reason = choice.get("finish_reason") or "stop"
        usage = result["usage"]
        model_response.usage = litellm.Usage(  # type: ignore[attr-defined]
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            total_tokens=usage["total_tokens"],
        )
        model_response.model = full_name
        model_response.created = int(time.time())
        return model_response

    def streaming(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Not supported: answers are produced whole (call without ``stream=True``)."""
        raise litellm.BadRequestError(
            message="the local provider does not stream; call without stream=True",
            model=f"{PROVIDER}/{kwargs.get('model', '')}",
            llm_provider=PROVIDER,
        )

    async def astreaming(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Not supported (see :meth:`streaming`)."""
        return self.streaming(*args, **kwargs)

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:  # type: ignore[override]
        """:meth:`completion` in a worker thread, so the event loop stays free."""
        return await asyncio.to_thread(self.completion, *args, **kwargs)


_handler = LocalLLM()
_priced: set[str] = set()


def _ensure_zero_cost(full_name: str) -> None:
    """Puts the model into litellm's cost map at 0 USD, so cost accounting finds a price.

    Every price litellm knows is given (prompt-cache prices too): with only the input and
    output prices, litellm warns once per model that the cache prices default to 0.
    """
    if full_name in _priced:
        return
    litellm.register_model(
        {
            full_name: {
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
                "cache_creation_input_token_cost": 0.0,
                "cache_read_input_token_cost": 0.0,
                "litellm_provider": PROVIDER,
                "mode": "chat",
            }
        }
    )
    _priced.add(full_name)


def register() -> None:
    """Adds the ``local`` provider to ``litellm.custom_provider_map`` (idempotent).

    Also prices every registry alias at 0 USD in litellm's cost map.
    """
    with _lock:
        if not any(entry.get("provider") == PROVIDER for entry in litellm.custom_provider_map):
            litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": _handler})
        from litellm.utils import custom_llm_setup

        custom_llm_setup()
    for alias in models.REGISTRY:
        _ensure_zero_cost(f"{PROVIDER}/{alias}")
