"""A local GGUF model served as an OpenAI-compatible HTTP server (``workbench models serve``).

The server is llama.cpp's own (``xllamacpp.Server``), started with the same parameters as the
in-process ``local/<alias>`` provider (:func:`workbench.llm.local.server_params`), so a request
that leaves sampling parameters out gets the same defaults and, at temperature 0, the same
answer. Several runs (or machines) can then share one loaded model through litellm's ordinary
HTTP path: ``--model openai/<name> --api-base <base_url>`` with ``OPENAI_API_KEY=<key>``.

Every request must carry the API key (``Authorization: Bearer <key>``); only ``/health`` answers
without it. Endpoints: ``/v1/chat/completions`` (``logprobs``/``top_logprobs``,
``response_format`` with a JSON schema), ``/v1/completions``, ``/v1/models``, ``/health``.

Example::

    from workbench.llm.serve import serve
    served = serve("smollm2-135m", port=0)        # loads the model, listens on a free port
    print(served.base_url, served.model, served.api_key)
    served.stop()
"""

from __future__ import annotations

import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.llm import local, models

#: the variable ``workbench models serve`` reads the API key from when ``--api-key`` is not given
API_KEY_ENV = "WORKBENCH_SERVE_API_KEY"


@dataclass
class ServedModel:
    """A running server.

    Attributes:
        model: the name clients send (use it as ``openai/<model>`` in litellm).
        base_url: the OpenAI base URL, ``http://HOST:PORT/v1``.
        api_key: the key every request must carry.
        path: the GGUF file served.
        n_ctx: the context window of each slot, in tokens.
        parallel: requests decoded at once (slots).
    """

    model: str
    base_url: str
    api_key: str
    path: Path
    n_ctx: int
    parallel: int
    _server: Any = field(repr=False, default=None)
    _stopped: threading.Event = field(repr=False, default_factory=threading.Event)

    def as_dict(self) -> dict[str, Any]:
        """The fields a client needs (what ``--json`` prints)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "litellm_model": f"openai/{self.model}",
            "api_key": self.api_key,
            "path": str(self.path),
            "n_ctx": self.n_ctx,
            "parallel": self.parallel,
            "pid": os.getpid(),
        }

    def stop(self) -> None:
        """Stops listening and frees the model (idempotent)."""
        self._server = None
        self._stopped.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until :meth:`stop` (or ``timeout`` seconds); returns whether it stopped."""
        return self._stopped.wait(timeout)


def served_name(model: str) -> str:
    """The name a served model answers to: the alias, or a ``.gguf`` file's stem."""
    if model in models.REGISTRY:
        return model
    return Path(model).stem


def serve(
    model: str,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    api_key: str | None = None,
    n_ctx: int | None = None,
    n_threads: int | None = None,
    parallel: int = 1,
) -> ServedModel:
    """Loads ``model`` and serves it over HTTP until :meth:`ServedModel.stop`.

    Args:
        model: a registry alias (pulled and verified if missing) or a path to a ``.gguf`` file.
        host: the address to listen on (default loopback only).
        port: the TCP port; 0 picks a free one.
        api_key: the key requests must carry; default ``$WORKBENCH_SERVE_API_KEY``, else a new
            random key.
        n_ctx: context window per slot in tokens (default as ``local/``: 4096 or
            ``$WORKBENCH_LOCAL_N_CTX``).
        n_threads: CPU threads (default: every usable CPU, or ``$WORKBENCH_LOCAL_THREADS``).
        parallel: slots decoded at once; more than 1 lets concurrent requests share the model,
            but then an answer depends on what else is decoded with it: the logits of a batch
            of two differ from a lone request's, and at temperature > 0 with a fixed seed the
            sampled text soon differs too (measured with smollm2-135m at temperature 0.2, seed
            0: the same request alone twice gave identical text and log-probabilities; decoded
            beside another it diverged from the second token on). Keep 1 where answers must
            be reproducible (a fixed seed then gives the same answer however calls overlap).

    Returns:
        a :class:`ServedModel`.

    Raises:
        workbench.llm.models.ModelError: unknown alias, or the file cannot be had.
        ValueError: bad ``parallel``/``port``, or llama.cpp cannot load the file or bind the port.
    """
    if parallel < 1:
        raise ValueError(f"parallel must be >= 1, not {parallel}")
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be between 0 and 65535, not {port}")
    path = models.resolve(model, progress=True)
    key = api_key or os.environ.get(API_KEY_ENV) or secrets.token_urlsafe(24)
    n_ctx = int(n_ctx or local.default_n_ctx())
    name = served_name(model)
    server = local.start_server(
        path,
        n_ctx=n_ctx,
        n_threads=int(n_threads or local.default_threads()),
        api_key=key,
        host=host,
        port=port,
        parallel=parallel,
        name=name,
    )
    return ServedModel(name, f"{server.listening_address}/v1", key, path, n_ctx, parallel, server)
