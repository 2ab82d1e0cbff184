"""Embedding functions for the Semantic Storage, always explicit.

Chroma's default embedding function downloads a model at first use, which fails
offline; the storage never uses it. It takes an :class:`Embedder` and hands Chroma the
vectors itself.

* :class:`MiniLMEmbedder` (the default): all-MiniLM-L6-v2 (Reimers and Gurevych 2019,
  Sentence-BERT; 384 dimensions) on onnxruntime, from the official weights fetched and
  sha256-verified into the model store on first use (:mod:`workbench.llm.minilm`; no torch).
* :class:`SentenceTransformerEmbedder`: a local sentence-transformers model folder (needs the
  ``sentence-transformers`` package, which is not a dependency of workbench).
* :class:`LiteLLMEmbedder`: any litellm embedding model (``text-embedding-3-small``,
  ``ollama/nomic-embed-text``, ``openai/<name>`` with an API base).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Protocol

from workbench.errors import WorkbenchError
from workbench.llm.client import LLMCallError
from workbench.option_words import option_named

#: the name users pass to ``--embedding-model`` for the offline default
DEFAULT_EMBEDDING_MODEL = "minilm"

#: how many text -> vector results each embedder keeps in memory
_MEMO_SIZE = 4096


class EmbeddingError(WorkbenchError):
    """The embedding model cannot be loaded or called."""


class EmbeddingCallError(LLMCallError, EmbeddingError):
    """A call to a litellm embedding model failed after the bounded retries.

    It is an :class:`~workbench.llm.client.LLMCallError`, so a sample it hits is recorded with
    status ``llm_error`` and the run goes on (an embedding model that does not answer at all is
    caught when the storage opens, see :func:`check_embedder`).
    """


class Embedder(Protocol):
    """What the Semantic Storage needs: a stable name and a batch ``embed``."""

    name: str

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one vector per text (same order)."""
        ...


class _Memo:
    """A small thread-safe LRU of text -> vector, so repeated texts are embedded once."""

    def __init__(self, size: int = _MEMO_SIZE):
        self._items: OrderedDict[str, list[float]] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def embed(self, texts: list[str], compute) -> list[list[float]]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._items))
        if missing:
            vectors = compute(missing)
            with self._lock:
                for text, vector in zip(missing, vectors):
                    self._items[text] = vector
                while len(self._items) > self._size:
                    self._items.popitem(last=False)
        with self._lock:
            result = []
            for text in texts:
                vector = self._items.get(text)
                if vector is None:  # evicted meanwhile: compute alone
                    vector = compute([text])[0]
                result.append(vector)
            return result


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 on onnxruntime, offline after the first pull (the default embedder).

    Args:
        cache_dir: the model store (default: the user cache; see :mod:`workbench.llm.models`).
        threads: onnxruntime threads (default 1: short texts gain nothing from more, and on a
            loaded machine more threads thrash).

    The weights are pulled and verified on the first :meth:`embed` (``WORKBENCH_AUTO_PULL=0``
    forbids it; ``workbench models pull all-minilm-l6-v2`` does it ahead).

    Example::

        vectors = MiniLMEmbedder().embed(["sort the list", "order a sequence"])
    """

    name = "all-MiniLM-L6-v2"

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None, threads: int = 1):
        from workbench.llm.minilm import MiniLM

        self._model = MiniLM(cache_dir, threads)
        self._memo = _Memo()

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return normalised 384-d vectors (cosine = dot product), one per text.

        Raises:
            EmbeddingError: the model cannot be had or run (the message says why).
        """
        from workbench.llm.models import ModelError

        def compute(batch: list[str]) -> list[list[float]]:
            try:
                return self._model.embed(batch)
            except (ModelError, WorkbenchError) as error:
                raise EmbeddingError(f"the offline embedding model all-MiniLM-L6-v2 is not available: {error}") from error

        return self._memo.embed(texts, compute) if texts else []


class SentenceTransformerEmbedder:
    """Embeds with a local sentence-transformers model folder, offline.

    Args:
        model_path: a sentence-transformers model folder.
        device: torch device (``"cpu"``).
        threads: torch intra-op threads while encoding (default 1, see the comment in ``embed``).

    Needs the ``sentence-transformers`` package (not a workbench dependency: it brings torch).
    The model loads on the first :meth:`embed` and is shared by all instances with the
    same path (it is read-only; encoding is serialised by a lock).
    """

    _models: dict[str, object] = {}
    _load_lock = threading.Lock()

    def __init__(self, model_path: str | os.PathLike[str], device: str = "cpu", threads: int = 1):
        self.model_path = str(model_path)
        self.device = device
        self.threads = threads
        self.name = f"sentence-transformers:{Path(self.model_path).name}"
        self._memo = _Memo()

    def _model(self):
        with self._load_lock:
            model = self._models.get(self.model_path)
            if model is None:
                os.environ["HF_HUB_OFFLINE"] = "1"  # a local folder must never trigger a download
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as error:
                    raise EmbeddingError(
                        f"{self.model_path} is a sentence-transformers folder: pip install sentence-transformers "
                        f"(or leave {option_named('embedding_model')} out for the built-in all-MiniLM-L6-v2)"
                    ) from error
                try:
                    model = SentenceTransformer(self.model_path, device=self.device)
                except Exception as error:
                    raise EmbeddingError(f"cannot load the embedding model at {self.model_path}: {error}") from error
                self._models[self.model_path] = model
            return model

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return normalised 384-d vectors (cosine = dot product), one per text."""
        if not texts:
            return []

        def compute(batch: list[str]) -> list[list[float]]:
            import torch

            model = self._model()
            with self._load_lock:
                # Short texts gain nothing from intra-op threads, and on a loaded machine they
                # thrash: measured 1.5 s vs 0.12 s per text at load 25 on 2 cores.
                previous = torch.get_num_threads()
                torch.set_num_threads(self.threads)
                try:
                    vectors = model.encode(batch, normalize_embeddings=True, show_progress_bar=False)
                finally:
                    torch.set_num_threads(previous)
            return [list(map(float, v)) for v in vectors]

        return self._memo.embed(texts, compute)


class LiteLLMEmbedder:
    """Embeds with any litellm embedding model.

    Args:
        model: a litellm embedding model string.
        api_base: endpoint for OpenAI-compatible servers.
        timeout_s: the deadline of one request, seconds, for the whole request (not between bytes).
        max_retries: retries of a transient failure (timeouts, connection errors, rate
            limits, 5xx), with the LLM client's backoff
            (:func:`workbench.llm.client.backoff_wait`).
        retry_wait_s: the first backoff wait.
    """

    def __init__(
        self,
        model: str,
        api_base: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 2,
        retry_wait_s: float = 1.0,
    ):
        self.model = model
        self.api_base = api_base
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.retry_wait_s = retry_wait_s
        self.name = f"litellm:{model}"
        self._memo = _Memo()

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Return one vector per text.

        Raises:
            EmbeddingCallError: the provider failed after the retries.
        """
        if not texts:
            return []

        def compute(batch: list[str]) -> list[list[float]]:
            import litellm
            import tenacity

            from workbench.llm.client import _is_transient, backoff_wait
            from workbench.llm.deadline import call_with_deadline

            kwargs = {"model": self.model, "input": batch, "timeout": self.timeout_s}
            if self.api_base:
                kwargs["api_base"] = self.api_base
            retrying = tenacity.Retrying(
                stop=tenacity.stop_after_attempt(self.max_retries + 1),
                wait=backoff_wait(self.retry_wait_s),
                retry=tenacity.retry_if_exception(_is_transient),
                reraise=True,
            )
            def attempt():
                # the whole request within timeout_s (httpx's own timeout bounds only the time between bytes)
                return call_with_deadline(lambda: litellm.embedding(**kwargs), self.timeout_s,
                                          what=f"embedding model {self.model}")

            try:
                response = retrying(attempt)
            except Exception as error:
                raise EmbeddingCallError(
                    f"embedding with {self.model} failed: {type(error).__name__}: {error}"
                ) from error
            data = sorted(response.data, key=lambda item: item["index"])
            return [list(map(float, item["embedding"])) for item in data]

        return self._memo.embed(texts, compute)


def make_embedder(
    model: str | None = None,
    api_base: str | None = None,
    *,
    max_retries: int = 2,
    retry_wait_s: float = 1.0,
    timeout_s: float = 60.0,
) -> Embedder:
    """Return the embedder for an ``--embedding-model`` value.

    Args:
        model: ``None`` or ``"minilm"`` for the offline default (:class:`MiniLMEmbedder`); a
            folder path for a local sentence-transformers model; anything else is a litellm
            embedding model.
        api_base: endpoint for litellm embedding models.
        max_retries / retry_wait_s / timeout_s: retries and per-request deadline of a litellm
            embedding model (see :class:`LiteLLMEmbedder`).
    """
    if model is None or model == DEFAULT_EMBEDDING_MODEL:
        return MiniLMEmbedder()
    if Path(model).is_dir():
        return SentenceTransformerEmbedder(model)
    return LiteLLMEmbedder(model, api_base=api_base, timeout_s=timeout_s, max_retries=max_retries,
                           retry_wait_s=retry_wait_s)


#: the Python modules the offline embedder (:class:`MiniLMEmbedder`) needs to run its graph
OFFLINE_MODULES = ("onnxruntime", "tokenizers")
#: ... and to build the graph from the weights, when the store does not hold it verified yet
#: (:func:`workbench.llm.minilm.graph_ready`)
OFFLINE_BUILD_MODULES = ("onnx", "safetensors")


def check_embedding_model_usable(model: str | None, cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """The no-network check that the embedder of an ``--embedding-model`` value can be had, run
    before any data is loaded (``workbench score``, the ``workbench run`` preflight), as
    :func:`workbench.llm.client.check_model_usable` is for the LLM.

    Only the offline default (``None`` or ``"minilm"``) is checked here: its Python modules are
    installed (:data:`OFFLINE_MODULES`, and :data:`OFFLINE_BUILD_MODULES` unless the store holds
    the verified ``model.onnx`` already) and its files are in the model store, or
    ``$WORKBENCH_AUTO_PULL`` lets its first use pull them. A sentence-transformers folder loads on first use; a remote model is called once
    when the storage opens (:func:`check_embedder`).

    Args:
        model: the ``--embedding-model`` value.
        cache_dir: the model store (see :func:`workbench.llm.models.models_dir`).

    Returns:
        False when all-MiniLM-L6-v2 is not in the store yet and will be pulled on first use; True
        otherwise.

    Raises:
        EmbeddingError: a module it needs is not installed.
        workbench.llm.models.ModelNotPresentError: the files are not (verified) in the store and
            ``$WORKBENCH_AUTO_PULL`` is ``0`` (one line naming ``workbench models pull`` and
            ``workbench models import``).
    """
    import importlib.util

    from workbench.llm import models
    from workbench.llm.minilm import ALIAS, graph_ready

    if model is not None and model != DEFAULT_EMBEDDING_MODEL:
        return True
    # a built, verified graph runs without the packages that build it
    needed = OFFLINE_MODULES if graph_ready(cache_dir) else (*OFFLINE_BUILD_MODULES, *OFFLINE_MODULES)
    for module in needed:
        if importlib.util.find_spec(module) is None:
            raise EmbeddingError(
                f"the offline embedding model {ALIAS} needs the Python module {module}: pip install 'workbench[local]', "
                f"or set {option_named('embedding_model')} to a litellm embedding model"
            )
    return models.check_obtainable(ALIAS, cache_dir)


def check_embedder(embedder: Embedder) -> None:
    """Fail when a remote embedding model does not answer at all (a configuration problem).

    Embeds one short text with a :class:`LiteLLMEmbedder`; local models load on first use anyway.

    Raises:
        EmbeddingError: not an :class:`EmbeddingCallError`, so the run stops instead of
            recording an ``llm_error`` per sample.
    """
    if not isinstance(embedder, LiteLLMEmbedder):
        return
    try:
        embedder.embed(["workbench: embedding model check"])
    except EmbeddingError as error:
        raise EmbeddingError(
            f"the embedding model {embedder.model} does not answer ({error}); check {option_named('embedding_model')} "
            f"and {option_named('embedding_api_base')}"
        ) from None
