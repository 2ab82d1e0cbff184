"""The ``local`` litellm provider: GGUF models run in process by llama.cpp (prebuilt ``xllamacpp``).

After :func:`register`, ``litellm.completion(model="local/<alias-or-path>", messages=...)``
(and ``litellm.acompletion``) answer from a model of :mod:`workbench.llm.models` (pulled
and verified on first use unless ``WORKBENCH_AUTO_PULL=0``) or from a user's own ``.gguf``
file, and return an ordinary ``litellm.ModelResponse`` with ``usage`` filled and a cost of 0.

The engine is llama.cpp's own server code (``xllamacpp.Server``, pinned in ``pyproject.toml``),
called in process with request dicts; no HTTP is involved in a call. Each loaded model's
server also listens on a random 127.0.0.1 port (xllamacpp cannot turn that off); it is
protected by a random API key that never leaves this process.

What the provider honours:

* the chat template stored in the GGUF (``tokenizer.chat_template``), applied by llama.cpp;
* ``temperature``, ``top_p``, ``top_k``, ``min_p``, ``typical_p``, ``seed``, ``max_tokens`` (or
  ``max_completion_tokens``), ``stop``, ``presence_penalty``, ``frequency_penalty``,
  ``repeat_penalty``, ``repeat_last_n``. Every one is sent with every request: a parameter the
  caller leaves out takes :data:`SAMPLING_DEFAULTS` (llama-cpp-python's defaults, which this
  provider used before), never llama.cpp server's own defaults (temperature 0.8, no repeat
  penalty, a random seed); the response cache keys of ``local/`` calls name the engine
  (:func:`engine_identity`);
* ``logprobs`` / ``top_logprobs`` (0-20): the answer carries OpenAI-format log-probabilities,
  ``choices[0].logprobs.content[i].{token, bytes, logprob, top_logprobs}``: the natural-log
  softmax of the model's logits at that position, before penalties, grammar and temperature
  (so a JSON-constrained answer still shows the unconstrained alternatives);
* ``response_format``: ``{"type": "json_object"}`` (any JSON object), ``{"type": "json_object",
  "schema": {...}}`` or OpenAI's ``{"type": "json_schema", "json_schema": {"schema": {...}}}``;
  decoding is constrained by the schema (llama.cpp with LLGuidance; a ``setup.sh --native-llama``
  build, without LLGuidance, with llama.cpp's GBNF grammar made from the schema), so the answer
  parses (unless ``max_tokens`` cuts it: then ``finish_reason`` is ``"length"``);
* ``timeout`` (seconds): checked while waiting for the model and after every generated token;
  past it the call raises ``litellm.Timeout`` (prompt evaluation itself is not interruptible,
  nor is the first-use pull and load of a model);
* ``n_ctx`` and ``n_threads`` as extra keyword arguments (or ``$WORKBENCH_LOCAL_N_CTX``,
  ``$WORKBENCH_LOCAL_THREADS``); defaults: 4096 tokens and every CPU this process may use.
  A prompt longer than ``n_ctx`` raises ``litellm.ContextWindowExceededError`` naming both sizes.

Each (file, n_ctx, n_threads) is loaded once per process; calls to one model are serialised
by a lock (one llama.cpp slot), calls to different models run in parallel. Every call
evaluates its prompt from scratch (``cache_prompt`` off: a reused prefix changes the logits
slightly), so the same messages, parameters and seed give the same answer, in any process.
A call with ``cache_prompt=True`` (:data:`PREFIX_REUSE_PARAM`, opt-in) goes to a second instance
of the model that keeps prompt states in a host-memory prompt cache and evaluates only the part
of a prompt no earlier prompt shared; its answers differ slightly from the fresh ones (a few
tokens in a few answers, measured), so the workbench keys them apart.

Example (downloads SmolLM2-135M, 98 MB, on first use)::

    import litellm
    from workbench.llm import local
    local.register()
    answer = litellm.completion(model="local/smollm2-135m", temperature=0, max_tokens=8,
                                messages=[{"role": "user", "content": "Say hi."}],
                                logprobs=True, top_logprobs=3)
    answer.choices[0].logprobs.content[0].top_logprobs
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import os
import secrets
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# llama.cpp's OpenMP threads busy-wait by default; on a shared or oversubscribed machine that
# slowed generation 10-20x in our measurements (benchmarks/local_llm_bench.py
# --omp-wait-policy active). Must be set before libgomp loads, i.e. before xllamacpp is imported.
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

#: The value of every sampling parameter a caller leaves out: llama-cpp-python 0.3's defaults
#: (``Llama.create_chat_completion``), the engine this provider had before, so a request means
#: the same parameters as before. (The answers still differ: llama.cpp's server counts the
#: prompt's last tokens in the repeat penalty's window, llama-cpp-python did not, and the two
#: builds part at near-ties. Hence :func:`engine_identity` in the cache key.) ``seed`` 0 makes a call without a seed
#: reproducible too. ``max_tokens`` None: until the model stops or the context is full.
SAMPLING_DEFAULTS: Mapping[str, Any] = {
    "temperature": 0.2,
    "top_p": 0.95,
    "top_k": 40,
    "min_p": 0.05,
    "typical_p": 1.0,
    "repeat_penalty": 1.1,
    "repeat_last_n": 64,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "seed": 0,
    "max_tokens": None,
    "stop": None,
}
#: llama.cpp server features that are off here, each set explicitly: mirostat, DRY, XTC, top-n-sigma
#: and dynamic temperature are off in llama-cpp-python too; the sampler order is its order.
_FIXED_SAMPLING: Mapping[str, Any] = {
    "mirostat": 0,
    "dry_multiplier": 0.0,
    "xtc_probability": 0.0,
    "top_n_sigma": -1.0,
    "dynatemp_range": 0.0,
    "samplers": ["penalties", "top_k", "typ_p", "top_p", "min_p", "temperature"],
    "ignore_eos": False,
    "n_probs": 0,
}
#: where a ``local/`` answer carries llama.cpp's timings: ``response._hidden_params[TIMINGS_KEY]``
#: (see :func:`_call_timings`)
TIMINGS_KEY = "llama_cpp_timings"
#: the most alternatives ``top_logprobs`` may ask for (OpenAI's limit)
MAX_TOP_LOGPROBS = 20

_LOADING = ("n_ctx", "n_threads")
#: the extra keyword argument of ``litellm.completion`` that turns on prompt-prefix reuse for
#: one call (``local/`` models only): the KV state of the prefix the prompt shares with the
#: previous call on the model's slot is kept and only the rest is evaluated. Off by default;
#: the workbench sends it only with ``LLMSettings.prefix_reuse``, which is part of the cache key.
PREFIX_REUSE_PARAM = "cache_prompt"
#: accepted and without effect in process
_IGNORED = ("stream_options", "user", "max_retries", "extra_headers", "parallel_tool_calls")

_lock = threading.Lock()


def _xllamacpp() -> Any:
    """The ``xllamacpp`` module, or an ImportError that says what to install."""
    try:
        import xllamacpp
    except ImportError as error:
        if "libgomp" in str(error):
            raise ImportError(
                f"xllamacpp needs the system's OpenMP runtime ({error}): apt-get install libgomp1 "
                "(dnf install libgomp, apk add libgomp)"
            ) from error
        raise ImportError(f"local models need xllamacpp: pip install 'workbench[local]' ({error})") from error
    return xllamacpp


#: What the prebuilt Linux x86-64 wheel of the pinned xllamacpp (2026.10.11549) reports about its
#: build (:func:`build_features`): compiled with GCC 10.2.1 for AVX2 (``GGML_NATIVE=OFF``), JSON
#: schemas constrained by LLGuidance. A build that reports exactly this adds nothing to
#: :func:`engine_identity`, so the keys of answers cached with the wheel stay valid.
PREBUILT_WHEEL_BUILD: Mapping[str, str] = {
    "compiler": "GNU 10.2.1",
    "system_info": "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
                   "LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |",
    "json_schemas": "llguidance",
}


def build_features(xlc: Any) -> dict[str, str]:
    """What an xllamacpp build was compiled with, as far as it changes answers.

    Args:
        xlc: the imported ``xllamacpp`` module.

    Returns:
        ``{"compiler": xllamacpp's BUILD_INFO compiler, "system_info": llama.cpp's system info (the
        CPU instruction sets the kernels were compiled for, and any GPU backend), "json_schemas":
        "llguidance" or "gbnf" (which grammar engine constrains an answer to a JSON schema: a
        build without LLGuidance turns schemas into llama.cpp's GBNF grammars)}``.
    """
    grammar = xlc.json_schema_to_grammar({"type": "object"})
    return {
        "compiler": str(xlc.BUILD_INFO.get("compiler", "unknown")),
        "system_info": " ".join(xlc.get_system_info().split()),
        "json_schemas": "llguidance" if grammar.startswith("%llguidance") else "gbnf",
    }


def identity_of(version: str, features: Mapping[str, str] | None) -> str:
    """The engine identity for an xllamacpp version and its :func:`build_features`.

    Args:
        version: the installed xllamacpp version.
        features: its build features, or None when the module cannot be imported.

    Returns:
        ``"llama.cpp server (xllamacpp <version>)"`` for the prebuilt wheel's build (and when the
        features are unknown); with ``"; build <compiler>, <system info>, JSON schemas by
        <engine>"`` appended for any other build (e.g. ``setup.sh --native-llama``'s AVX-512 one).

    Example:

    >>> identity_of("2026.10.11549", PREBUILT_WHEEL_BUILD)
    'llama.cpp server (xllamacpp 2026.10.11549)'
    """
    base = f"llama.cpp server (xllamacpp {version})"
    if features is None or dict(features) == dict(PREBUILT_WHEEL_BUILD):
        return base
    return (f"{base}; build {features['compiler']}, {features['system_info']}, "
            f"JSON schemas by {features['json_schemas']}")


@functools.cache
def engine_identity() -> str:
    """The engine that answers ``local/`` calls, with its version and build (part of their cache keys).

    Two engines give different answers to the same request (llama-cpp-python counted only the
    generated tokens in the repeat penalty's window, llama.cpp's server counts the prompt's too;
    other builds part at near-ties), so a cached answer names the engine that produced it. Two
    builds of the same xllamacpp version differ too: kernels compiled for AVX-512 instead of AVX2
    sum in another order (the score token's log-probabilities moved, measured in
    ``benchmarks/native_llama_bench.py``), and a build without LLGuidance constrains JSON answers
    with another grammar engine; so a build other than the prebuilt wheel's is named
    (:func:`identity_of`). Computed once per process.
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("xllamacpp")
    except PackageNotFoundError:
        return "llama.cpp server (xllamacpp not installed)"
    try:
        features = build_features(_xllamacpp())
    except ImportError:  # e.g. libgomp missing: the call itself fails with the install hint
        features = None
    return identity_of(installed, features)


_file_digests: dict[tuple[str, int, int, int], str] = {}


def model_key_parts(model: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What else decides a ``local/<model>`` answer, for the response cache key.

    * the model file's content: a registry alias names one file (its sha256 is pinned and
      checked before the file is used), so the alias is already a content identity and adds
      nothing; a path to a ``.gguf`` adds the file's sha256 (``"model_sha256"``), so a replaced
      file is never served the old file's answers (``"missing"`` when there is no such file:
      the call itself then fails and nothing cached under the path alone is served);
    * the context window (a short one truncates answers): ``"n_ctx"`` when it comes from
      ``$WORKBENCH_LOCAL_N_CTX`` and is not :data:`DEFAULT_N_CTX` (given as an ``n_ctx``
      keyword, it is in the key with the other extra parameters already). The default adds
      nothing, so keys made before this part existed, with the default context, stay valid.

    Args:
        model: the alias or path after ``local/``.
        extra: the extra keyword arguments of the calls (``n_ctx``, ``n_threads``).

    Returns:
        the parts to add to the key (empty for an alias at the default context).

    Example:

    >>> model_key_parts("qwen2.5-coder-0.5b")
    {}
    """
    extra = extra or {}
    parts: dict[str, Any] = {}
    if model not in models.REGISTRY:
        path = Path(model).expanduser()
        parts["model_sha256"] = _content_digest(path) if path.is_file() else "missing"
    if extra.get("n_ctx") is None:
        n_ctx = default_n_ctx()
        if n_ctx != DEFAULT_N_CTX:
            parts["n_ctx"] = n_ctx
    return parts


def _content_digest(path: Path) -> str:
    """The file's sha256, computed once per (file, size, modification time) in this process."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _lock:
        known = _file_digests.get(key)
    if known is None:
        known = models.sha256_file(path)
        with _lock:
            _file_digests[key] = known
    return known


def check_engine() -> None:
    """Loads llama.cpp (xllamacpp) once, so a missing package or system library fails early.

    Raises:
        ImportError: with the command that installs what is missing.
    """
    _xllamacpp()


@dataclass
class LoadedModel:
    """A model in memory.

    Attributes:
        server: the ``xllamacpp.Server`` (llama.cpp's server engine, one slot).
        path: the GGUF file it was loaded from.
        n_ctx: the context window in tokens.
        n_threads: CPU threads for generation and prompt evaluation.
        lock: held while the model generates.
        load_seconds: wall time of the load.
        address: the loopback address the server also listens on (key-protected).
    """

    server: Any
    path: Path
    n_ctx: int
    n_threads: int
    lock: threading.Lock
    load_seconds: float
    address: str


_loaded: dict[tuple[str, int, int, bool], LoadedModel] = {}
#: host memory (MiB) of the prompt cache of an instance serving ``cache_prompt`` calls: a 1.5B
#: model's KV state takes about 28 KB per token, so 1 GiB holds some 36,000 tokens of prompts
PROMPT_CACHE_MIB = 1024


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


def server_params(
    path: str | os.PathLike[str],
    *,
    n_ctx: int,
    n_threads: int,
    api_key: str,
    host: str = "127.0.0.1",
    port: int = 0,
    parallel: int = 1,
    name: str | None = None,
    prompt_cache_mib: int = 0,
) -> Any:
    """The ``xllamacpp.CommonParams`` of a model server, with every default stated.

    Used by the in-process provider and by ``workbench models serve``, so a served model answers
    a request that leaves parameters out exactly like ``local/<alias>`` does.

    Args:
        path: the GGUF file.
        n_ctx: context window in tokens (per slot: the KV cache holds ``n_ctx * parallel``).
        n_threads: CPU threads for prompt evaluation and generation.
        api_key: the key every HTTP request must carry (``Authorization: Bearer <key>``).
        host, port: where the HTTP server listens (port 0: a free port).
        parallel: slots, i.e. requests decoded at once.
        name: the model name the server reports (``/v1/models``).
        prompt_cache_mib: host memory for llama.cpp's prompt cache (0: none): the KV states
            of earlier prompts, from which a request with ``cache_prompt`` restores the one
            sharing the longest prefix with it, even after other prompts used the slot.

    Returns:
        the params object for ``xllamacpp.Server``.
    """
    xlc = _xllamacpp()
    params = xlc.CommonParams()
    params.model.path = str(path)
    params.n_parallel = parallel
    params.n_ctx = n_ctx * parallel
    params.cpuparams.n_threads = n_threads
    params.cpuparams_batch.n_threads = n_threads
    params.hostnames = [host]
    params.port = port
    params.api_keys = [api_key]
    if name:
        params.model_alias = {name}
    params.verbosity = 0  # llama.cpp logs every request on stderr otherwise
    params.warmup = False
    params.n_threads_http = 2 if parallel == 1 else parallel + 1
    params.ctx_shift = False  # never drop the start of a conversation silently
    params.cache_prompt = False
    params.cache_ram_mib = prompt_cache_mib  # llama.cpp's default is up to 8 GiB
    params.cache_idle_slots = False
    params.reasoning_format = xlc.common_reasoning_format.COMMON_REASONING_FORMAT_NONE  # text as generated
    sampling = params.sampling
    sampling.temp = SAMPLING_DEFAULTS["temperature"]
    sampling.top_p = SAMPLING_DEFAULTS["top_p"]
    sampling.top_k = SAMPLING_DEFAULTS["top_k"]
    sampling.min_p = SAMPLING_DEFAULTS["min_p"]
    sampling.typ_p = SAMPLING_DEFAULTS["typical_p"]
    sampling.penalty_repeat = SAMPLING_DEFAULTS["repeat_penalty"]
    sampling.penalty_last_n = SAMPLING_DEFAULTS["repeat_last_n"]
    sampling.penalty_present = SAMPLING_DEFAULTS["presence_penalty"]
    sampling.penalty_freq = SAMPLING_DEFAULTS["frequency_penalty"]
    sampling.seed = SAMPLING_DEFAULTS["seed"]
    sampling.mirostat = 0
    sampling.dry_multiplier = 0.0
    sampling.xtc_probability = 0.0
    return params


def _check_gguf(path: Path) -> None:
    with open(path, "rb") as handle:
        magic = handle.read(4)
    if magic != b"GGUF":
        raise ValueError(f"{path} is not a GGUF file (it starts with {magic!r}, not b'GGUF')")


def start_server(path: Path, **kwargs: Any) -> Any:
    """Loads ``path`` into a new ``xllamacpp.Server`` (see :func:`server_params` for ``kwargs``).

    Raises:
        ValueError: not a GGUF file, or llama.cpp could not load it or bind the port.
    """
    _check_gguf(path)
    params = server_params(path, **kwargs)
    try:
        return _xllamacpp().Server(params)
    except RuntimeError as error:  # "Failed to init server, please check the input params."
        where = f"{kwargs.get('host', '127.0.0.1')}:{kwargs.get('port', 0)}"
        raise ValueError(
            f"llama.cpp could not start {path} (n_ctx {kwargs.get('n_ctx')}, listening on {where}; "
            f"is the port taken?): {error}"
        ) from error


def load_model(
    model: str, *, n_ctx: int | None = None, n_threads: int | None = None, prefix_reuse: bool = False
) -> LoadedModel:
    """The loaded model for an alias or GGUF path, loading it on first use (thread-safe).

    Args:
        model: a :data:`workbench.llm.models.REGISTRY` alias or a path to a ``.gguf`` file.
        n_ctx: context window in tokens (default :func:`default_n_ctx`).
        n_threads: CPU threads (default :func:`default_threads`).
        prefix_reuse: the instance that serves ``cache_prompt`` calls: its own server, with a
            prompt cache of :data:`PROMPT_CACHE_MIB` in host memory, so the instance that
            evaluates every prompt from scratch is never touched by reuse.

    Returns:
        the shared :class:`LoadedModel`.

    Raises:
        workbench.llm.models.ModelError: unknown alias, file not present/verified, pull failed.
        ValueError: llama.cpp could not load the file.
        ImportError: xllamacpp (or the system's libgomp) is missing.
    """
    path = models.resolve(model, progress=sys.stderr.isatty())
    n_ctx = int(n_ctx or default_n_ctx())
    n_threads = int(n_threads or default_threads())
    key = (str(path.resolve()), n_ctx, n_threads, bool(prefix_reuse))
    with _lock:
        if key not in _loaded:
            started = time.perf_counter()
            server = start_server(path, n_ctx=n_ctx, n_threads=n_threads, api_key=secrets.token_urlsafe(32),
                                  prompt_cache_mib=PROMPT_CACHE_MIB if prefix_reuse else 0)
            _loaded[key] = LoadedModel(
                server, path, n_ctx, n_threads, threading.Lock(), time.perf_counter() - started, server.listening_address
            )
        return _loaded[key]


def unload_all() -> None:
    """Stops every loaded model's server and frees its memory (waits for calls in progress)."""
    with _lock:
        loaded = list(_loaded.values())
        _loaded.clear()
    for model in loaded:
        # a call still generating after 30 s (e.g. a daemon thread at exit) keeps its model
        if model.lock.acquire(timeout=30):
            try:
                model.server = None  # the Server's destructor stops its threads and frees the model
            finally:
                model.lock.release()


atexit.register(unload_all)


def schema_of(response_format: Any) -> Mapping[str, Any] | None:
    """The JSON schema that constrains decoding for ``response_format`` (None: free text).

    Args:
        response_format: None, ``{"type": "text"}``, ``{"type": "json_object"[, "schema": S]}``
            (without a schema: any JSON object)
            or ``{"type": "json_schema", "json_schema": {"schema": S, ...}}``.

    Returns:
        the schema, ``{"type": "object"}`` for a bare ``json_object``, or None.

    Raises:
        ValueError: an unknown type or a schema that is not a mapping.
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
    if schema is None:
        return {"type": "object"}
    if not isinstance(schema, Mapping):
        raise ValueError(f"response_format schema must be a JSON object, not {type(schema).__name__}")
    return schema


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


class ContextOverflowError(ValueError):
    """The prompt does not fit in the model's context window."""


def _sampling_request(sampling: Mapping[str, Any]) -> dict[str, Any]:
    """Every sampling field of a llama.cpp server request: the caller's values over the defaults."""
    unknown = set(sampling) - set(SAMPLING_DEFAULTS)
    if unknown:
        raise ValueError(f"the local provider does not support: {', '.join(sorted(unknown))}")
    values = {**SAMPLING_DEFAULTS, **{k: v for k, v in sampling.items() if v is not None}}
    request: dict[str, Any] = dict(_FIXED_SAMPLING)
    request.update(
        temperature=float(values["temperature"]),
        top_p=float(values["top_p"]),
        top_k=int(values["top_k"]),
        min_p=float(values["min_p"]),
        typical_p=float(values["typical_p"]),
        repeat_penalty=float(values["repeat_penalty"]),
        repeat_last_n=int(values["repeat_last_n"]),
        presence_penalty=float(values["presence_penalty"]),
        frequency_penalty=float(values["frequency_penalty"]),
        seed=int(values["seed"]),
        max_tokens=-1 if values["max_tokens"] is None else int(values["max_tokens"]),
    )
    stop = values["stop"]
    request["stop"] = [stop] if isinstance(stop, str) else list(stop or [])
    return request


def _raise_for_error(error: Mapping[str, Any], model: str) -> None:
    message = str(error.get("message") or error)
    if error.get("type") == "exceed_context_size_error" or "exceeds the available context size" in message:
        raise ContextOverflowError(
            f"the prompt of local model {model!r} has {error.get('n_prompt_tokens', '?')} tokens, more than its "
            f"context window of {error.get('n_ctx', '?')} tokens (raise n_ctx, or ${N_CTX_ENV})"
        )
    raise ValueError(f"llama.cpp refused the request: {message}")


class _Collector:
    """Gathers a streamed chat completion into one answer; stops it once the deadline passes."""

    def __init__(self, deadline: float | None):
        self.deadline = deadline
        self.parts: list[str] = []
        self.logprobs: list[dict[str, Any]] = []
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None
        self.timings: dict[str, Any] | None = None
        self.error: Mapping[str, Any] | None = None
        self.timed_out = False

    def __call__(self, chunk: Mapping[str, Any]) -> bool:
        if "error" in chunk:
            self.error = chunk["error"]
            return True
        for choice in chunk.get("choices") or ():
            content = (choice.get("delta") or {}).get("content")
            if content:
                self.parts.append(content)
            self.logprobs.extend((choice.get("logprobs") or {}).get("content") or ())
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        if chunk.get("usage"):
            self.usage = chunk["usage"]
            self.timings = chunk.get("timings")
        if self.deadline is not None and time.monotonic() > self.deadline:
            self.timed_out = True
        return self.timed_out  # True stops generation


def chat(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    *,
    response_format: Any = None,
    timeout_s: float | None = None,
    n_ctx: int | None = None,
    n_threads: int | None = None,
    logprobs: bool = False,
    top_logprobs: int | None = None,
    cache_prompt: bool = False,
    **sampling: Any,
) -> dict[str, Any]:
    """One chat completion with a local model, as an OpenAI-style dict.

    Args:
        model: alias or GGUF path (see :func:`load_model`).
        messages: OpenAI-style messages (system/user/assistant; text content).
        response_format: see :func:`schema_of`.
        timeout_s: seconds for the whole call, waiting for the model included (None: no limit).
        n_ctx, n_threads: see :func:`load_model`.
        logprobs: return each answer token's log-probability.
        top_logprobs: with ``logprobs``, the 0-20 most likely alternatives at each position.
        cache_prompt: reuse the KV state of the longest prefix this prompt shares with an
            earlier call's prompt (llama.cpp's ``cache_prompt``: the slot's last prompt, or one
            kept in the instance's prompt cache), evaluating only the rest. Served by a
            separate instance of the model (:func:`load_model`'s ``prefix_reuse``); off by
            default (see :data:`PREFIX_REUSE_PARAM`).
        **sampling: the keys of :data:`SAMPLING_DEFAULTS` (missing ones take those defaults).

    Returns:
        ``{"choices": [{"message": {"role": "assistant", "content": ...}, "finish_reason": ...,
        "logprobs": {"content": [...]} or None}], "usage": {...}, "timings": {...}}``.

    Raises:
        TimeoutError: ``timeout_s`` passed (while waiting for the model or generating).
        ContextOverflowError: the prompt does not fit in ``n_ctx``.
        ValueError: bad messages, parameters or response_format (llama.cpp's message included).
        workbench.llm.models.ModelError: the model file cannot be had.
    """
    started = time.monotonic()
    deadline = None if timeout_s is None else started + timeout_s
    request: dict[str, Any] = {
        "messages": _chat_messages(messages),
        **_sampling_request(sampling),
        "cache_prompt": bool(cache_prompt),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    schema = schema_of(response_format)
    if schema is not None:
        request["json_schema"] = dict(schema)
    if logprobs or top_logprobs:
        top = int(top_logprobs or 0)
        if not 0 <= top <= MAX_TOP_LOGPROBS:
            raise ValueError(f"top_logprobs must be between 0 and {MAX_TOP_LOGPROBS}, not {top}")
        request.update(logprobs=True, top_logprobs=top)
    loaded = load_model(model, n_ctx=n_ctx, n_threads=n_threads, prefix_reuse=bool(cache_prompt))
    wait = -1 if deadline is None else max(0.0, deadline - time.monotonic())
    if not loaded.lock.acquire(timeout=wait):
        raise TimeoutError(f"local model {model!r} stayed busy for the whole timeout of {timeout_s}s")
    collector = _Collector(deadline)
    try:
        returned = loaded.server.handle_chat_completions(request, collector)
    finally:
        loaded.lock.release()
    if isinstance(returned, Mapping) and "error" in returned:
        _raise_for_error(returned["error"], model)
    if collector.error is not None:
        _raise_for_error(collector.error, model)
    if collector.timed_out:
        raise TimeoutError(f"local model {model!r} exceeded the timeout of {timeout_s}s")
    usage = collector.usage or {}
    return {
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "".join(collector.parts)},
                "finish_reason": collector.finish_reason or "stop",
                "logprobs": {"content": collector.logprobs} if request.get("logprobs") else None,
            }
        ],
        "usage": {
            "prompt_tokens": int(usage.get("prompt_tokens", 0)),
            "completion_tokens": int(usage.get("completion_tokens", 0)),
            "total_tokens": int(usage.get("total_tokens", 0)),
        },
        "timings": collector.timings or {},
    }


def _call_timings(timings: Mapping[str, Any]) -> dict[str, Any]:
    """llama.cpp's per-request timings, reduced to what says where the seconds went.

    Returns:
        ``{"prompt_n": tokens evaluated, "cache_n": prompt tokens reused from the slot's KV
        cache (0 unless ``cache_prompt``), "prompt_ms": milliseconds of prompt evaluation,
        "predicted_n": tokens generated, "predicted_ms": milliseconds of generation}``
        (keys llama.cpp did not report are left out).
    """
    keys = ("prompt_n", "cache_n", "prompt_ms", "predicted_n", "predicted_ms")
    return {key: timings[key] for key in keys if key in timings}


def _split_params(optional_params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Any, dict[str, Any]]:
    sampling: dict[str, Any] = {}
    loading: dict[str, Any] = {}
    call_options: dict[str, Any] = {}
    response_format = None
    unsupported = []
    for name, value in optional_params.items():
        if value is None or name in _IGNORED:
            continue
        if name == "max_completion_tokens":
            sampling["max_tokens"] = value
        elif name in SAMPLING_DEFAULTS:
            sampling[name] = value
        elif name in _LOADING:
            loading[name] = value
        elif name in ("logprobs", "top_logprobs", PREFIX_REUSE_PARAM):
            call_options[name] = value
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
    return sampling, loading, response_format, call_options


def _choice_logprobs(logprobs: Mapping[str, Any] | None) -> Any:
    """llama.cpp's per-token entries as litellm's (OpenAI's) ``ChoiceLogprobs``."""
    from litellm.types.utils import ChatCompletionTokenLogprob, ChoiceLogprobs, TopLogprob

    if logprobs is None:
        return None
    content = [
        ChatCompletionTokenLogprob(
            token=entry["token"],
            bytes=entry.get("bytes"),
            logprob=float(entry["logprob"]),
            top_logprobs=[
                TopLogprob(token=top["token"], bytes=top.get("bytes"), logprob=float(top["logprob"]))
                for top in entry.get("top_logprobs") or ()
            ],
        )
        for entry in logprobs.get("content") or ()
    ]
    return ChoiceLogprobs(content=content)


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
            sampling, loading, response_format, call_options = _split_params(optional_params)
            result = chat(
                model,
                messages,
                response_format=response_format,
                timeout_s=_timeout_seconds(timeout),
                **loading,
                **call_options,
                **sampling,
            )
        except TimeoutError as error:
            raise litellm.Timeout(message=str(error), model=full_name, llm_provider=PROVIDER) from error
        except models.ModelPullError as error:
            raise litellm.APIConnectionError(message=str(error), llm_provider=PROVIDER, model=full_name) from error
        except models.ModelError as error:
            raise litellm.NotFoundError(message=str(error), model=full_name, llm_provider=PROVIDER) from error
        except ContextOverflowError as error:
            raise litellm.ContextWindowExceededError(message=str(error), model=full_name, llm_provider=PROVIDER) from error
        except ValueError as error:
            raise litellm.BadRequestError(message=str(error), model=full_name, llm_provider=PROVIDER) from error
        except Exception as error:  # llama.cpp failures (decode errors, out of memory), a missing xllamacpp
            raise litellm.InternalServerError(
                message=f"{type(error).__name__}: {error}", model=full_name, llm_provider=PROVIDER
            ) from error
        _ensure_zero_cost(full_name)
        choice = result["choices"][0]
        model_response.choices[0].message.content = choice["message"]["content"]  # type: ignore[union-attr]
        model_response.choices[0].finish_reason = choice.get("finish_reason") or "stop"
        if choice.get("logprobs") is not None:
            model_response.choices[0].logprobs = _choice_logprobs(choice["logprobs"])  # type: ignore[union-attr]
        usage = result["usage"]
        model_response.usage = litellm.Usage(  # type: ignore[attr-defined]
            prompt_tokens=usage["prompt_tokens"],
            completion_tokens=usage["completion_tokens"],
            total_tokens=usage["total_tokens"],
        )
        model_response.model = full_name
        model_response.created = int(time.time())
        # where the call's seconds went (prompt evaluation vs generation, prefix tokens reused),
        # for the trace; litellm passes _hidden_params through untouched
        model_response._hidden_params[TIMINGS_KEY] = _call_timings(result.get("timings") or {})
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
