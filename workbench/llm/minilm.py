"""all-MiniLM-L6-v2 sentence embeddings on onnxruntime, without torch.

all-MiniLM-L6-v2 (Reimers and Gurevych 2019, Sentence-BERT; the sentence-transformers model of
that name) is a 6-layer BERT encoder (hidden size 384, 12 heads, GELU, LayerNorm eps 1e-12)
followed by mean pooling over the real tokens and L2 normalisation; texts are cut at 256
word pieces (``sentence_bert_config.json``: ``max_seq_length`` 256).

The weights (``model.safetensors``) and the tokenizer (``tokenizer.json``) are the official
files, fetched and sha256-verified by :func:`workbench.llm.models.pull_embedding`. From the
weights, :func:`build_onnx` writes the encoder once as an ONNX graph (``model.onnx`` beside
them, opset 17, standard operators only); the file is deterministic, so it is checked against
:data:`ONNX_SHA256` before use and rebuilt when it does not match. Batches are tokenized with
Hugging Face ``tokenizers`` (padded to the longest text of a length-sorted batch) and run with
onnxruntime on CPU. Vectors agree with sentence-transformers' to cosine >= 0.9999 (test:
``tests/llm/test_minilm.py``, reference vectors in ``tests/fixtures``).

Example (downloads 84 MB on first use)::

    from workbench.llm.minilm import MiniLM
    vectors = MiniLM().embed(["sort the list", "order a sequence"])   # 2 x 384, unit length
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.io import atomic_write
from workbench.llm import models

ALIAS = "all-minilm-l6-v2"
#: word pieces per text, [CLS] and [SEP] included (sentence-transformers' max_seq_length)
MAX_TOKENS = 256
DIMENSIONS = 384
LAYERS = 6
HEADS = 12
LAYER_NORM_EPS = 1e-12
#: the graph's layout; bump when :func:`build_onnx` changes, with :data:`ONNX_SHA256`
GRAPH_VERSION = 1
#: sha256 of the ``model.onnx`` that :func:`build_onnx` writes from the pinned weights
ONNX_SHA256 = "7b20b87a57234abad4486d33c3f19d8da030ac93129f160cc20e5f0d307c5ec8"
ONNX_NAME = "model.onnx"
#: texts per onnxruntime call (sorted by length, so padding stays small)
BATCH_SIZE = 32


class EmbeddingModelError(WorkbenchError):
    """The embedding model cannot be prepared or run (the message says what to install or do)."""


def _initializer(name: str, array: Any) -> Any:
    from onnx import numpy_helper

    return numpy_helper.from_array(array, name)


def build_onnx(weights: Path, target: Path) -> str:
    """Writes the all-MiniLM-L6-v2 encoder with mean pooling and L2 normalisation as ONNX.

    Inputs ``input_ids`` and ``attention_mask`` (int64, batch x tokens); output ``embeddings``
    (float32, batch x 384, unit length). Follows Hugging Face's ``BertModel`` (absolute position
    embeddings, token type 0, additive attention mask of float32's lowest value, exact GELU)
    and sentence-transformers' ``Pooling`` (mean over the mask, clamped at 1e-9) and
    ``Normalize`` (division by the L2 norm, clamped at 1e-12).

    Args:
        weights: the verified ``model.safetensors``.
        target: where to write the graph (:func:`workbench.io.atomic_write`).

    Returns:
        the sha256 of the written file.

    Raises:
        EmbeddingModelError: ``onnx`` or ``safetensors`` is not installed.
    """
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper
        from safetensors.numpy import load_file
    except ImportError as error:
        raise EmbeddingModelError(f"building the MiniLM graph needs onnx and safetensors: pip install 'workbench[local]' ({error})") from error

    tensors = load_file(str(weights))
    nodes: list[Any] = []
    inits: list[Any] = []

    def const(name: str, array: Any) -> str:
        inits.append(_initializer(name, np.ascontiguousarray(array)))
        return name

    def node(op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, **attrs))
        return output

    def linear(x: str, prefix: str, out: str) -> str:
        # Hugging Face stores nn.Linear weights as (out, in): y = x W^T + b
        w = const(f"{prefix}.weight_t", tensors[f"{prefix}.weight"].T)
        b = const(f"{prefix}.bias", tensors[f"{prefix}.bias"])
        return node("Add", [node("MatMul", [x, w], f"{out}.matmul"), b], out)

    def layer_norm(x: str, prefix: str, out: str) -> str:
        scale = const(f"{prefix}.weight", tensors[f"{prefix}.weight"])
        bias = const(f"{prefix}.bias", tensors[f"{prefix}.bias"])
        return node("LayerNormalization", [x, scale, bias], out, axis=-1, epsilon=LAYER_NORM_EPS)

    head_dim = DIMENSIONS // HEADS
    const("zero_i64", np.array([0], dtype=np.int64))
    const("one_i64", np.array([1], dtype=np.int64))
    const("heads_shape", np.array([0, 0, HEADS, head_dim], dtype=np.int64))
    const("merge_shape", np.array([0, 0, DIMENSIONS], dtype=np.int64))
    const("axis_1", np.array([1], dtype=np.int64))
    const("axis_2", np.array([2], dtype=np.int64))
    const("axes_12", np.array([1, 2], dtype=np.int64))
    const("scale", np.array(1.0 / np.sqrt(head_dim), dtype=np.float32))
    const("one_f", np.array(1.0, dtype=np.float32))
    const("half_f", np.array(0.5, dtype=np.float32))
    const("sqrt2_f", np.array(np.sqrt(2.0), dtype=np.float32))
    const("lowest_f", np.array(np.finfo(np.float32).min, dtype=np.float32))
    const("pool_eps", np.array(1e-9, dtype=np.float32))
    const("norm_eps", np.array(1e-12, dtype=np.float32))

    # embeddings: word + position (0..L-1) + token type 0, then LayerNorm
    words = node("Gather", [const("word_embeddings", tensors["embeddings.word_embeddings.weight"]), "input_ids"], "words")
    # length = shape(input_ids)[1:2]  (Slice: data, starts, ends, axes)
    length = node("Slice", [node("Shape", ["input_ids"], "ids_shape"), "one_i64", "axis_2", "zero_i64"], "length")
    positions = node("Slice", [const("position_embeddings", tensors["embeddings.position_embeddings.weight"]),
                               "zero_i64", length, "zero_i64"], "positions")
    token_type = const("token_type_0", tensors["embeddings.token_type_embeddings.weight"][0])
    summed = node("Add", [node("Add", [words, positions], "words_positions"), token_type], "embedded")
    hidden = layer_norm(summed, "embeddings.LayerNorm", "hidden_0")

    # additive attention mask: 0 where attended, float32's lowest value at padding (batch, 1, 1, L)
    mask_f = node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)
    inverted = node("Sub", ["one_f", mask_f], "mask_inverted")
    additive = node("Unsqueeze", [node("Mul", [inverted, "lowest_f"], "mask_lowest"), "axes_12"], "mask_additive")

    for i in range(LAYERS):
        p = f"encoder.layer.{i}"

        def heads(name: str) -> str:
            projected = linear(hidden, f"{p}.attention.self.{name}", f"l{i}.{name}")
            split = node("Reshape", [projected, "heads_shape"], f"l{i}.{name}.split")
            return node("Transpose", [split], f"l{i}.{name}.heads", perm=[0, 2, 1, 3])

        q, k, v = heads("query"), heads("key"), heads("value")
        k_t = node("Transpose", [k], f"l{i}.key.t", perm=[0, 1, 3, 2])
        scores = node("Mul", [node("MatMul", [q, k_t], f"l{i}.qk"), "scale"], f"l{i}.scores")
        probs = node("Softmax", [node("Add", [scores, additive], f"l{i}.masked")], f"l{i}.probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"l{i}.context.heads")], f"l{i}.context.t", perm=[0, 2, 1, 3])
        merged = node("Reshape", [context, "merge_shape"], f"l{i}.context")
        attended = linear(merged, f"{p}.attention.output.dense", f"l{i}.attention.out")
        hidden = layer_norm(node("Add", [attended, hidden], f"l{i}.attention.residual"),
                            f"{p}.attention.output.LayerNorm", f"l{i}.attention.norm")
        inner = linear(hidden, f"{p}.intermediate.dense", f"l{i}.intermediate")
        # exact GELU: x * 0.5 * (1 + erf(x / sqrt(2)))
        erf = node("Erf", [node("Div", [inner, "sqrt2_f"], f"l{i}.gelu.scaled")], f"l{i}.gelu.erf")
        gelu = node("Mul", [node("Mul", [inner, "half_f"], f"l{i}.gelu.half"),
                            node("Add", [erf, "one_f"], f"l{i}.gelu.one")], f"l{i}.gelu")
        out = linear(gelu, f"{p}.output.dense", f"l{i}.output")
        hidden = layer_norm(node("Add", [out, hidden], f"l{i}.output.residual"), f"{p}.output.LayerNorm", f"l{i}.output.norm")

    # mean pooling over real tokens, then L2 normalisation
    mask_3d = node("Unsqueeze", [mask_f, "axis_2"], "mask_3d")
    summed_tokens = node("ReduceSum", [node("Mul", [hidden, mask_3d], "masked_hidden"), "axis_1"], "token_sum", keepdims=0)
    counts = node("Max", [node("ReduceSum", [mask_3d, "axis_1"], "token_count", keepdims=0), "pool_eps"], "token_count_clamped")
    mean = node("Div", [summed_tokens, counts], "mean")
    norm = node("Max", [node("ReduceL2", [mean], "norm", axes=[1], keepdims=1), "norm_eps"], "norm_clamped")
    node("Div", [mean, norm], "embeddings")

    graph = helper.make_graph(
        nodes,
        f"all-MiniLM-L6-v2 (workbench graph {GRAPH_VERSION})",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"])],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", DIMENSIONS])],
        inits,
    )
    # fixed header fields, so the same weights always give the same bytes (and ONNX_SHA256)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="workbench",
                              producer_version=str(GRAPH_VERSION), ir_version=8)
    data = model.SerializeToString(deterministic=True)
    atomic_write(target, data)
    return hashlib.sha256(data).hexdigest()


def prepare(cache_dir: str | os.PathLike[str] | None = None, *, allow_pull: bool | None = None, progress: bool = False) -> Path:
    """The verified ``model.onnx`` (and ``tokenizer.json`` beside it), pulling and building as needed.

    Args:
        cache_dir: the model store (see :func:`workbench.llm.models.models_dir`).
        allow_pull: fetch missing weights (default ``$WORKBENCH_AUTO_PULL``, on).
        progress: progress bars while pulling.

    Returns:
        the path of ``model.onnx``.

    Raises:
        workbench.llm.models.ModelError: the weights cannot be had (not present, pull failed).
        EmbeddingModelError: the graph built from the verified weights does not have
            :data:`ONNX_SHA256` (a changed builder), or onnx/safetensors are missing.
    """
    from filelock import FileLock

    folder = models.resolve_embedding(ALIAS, cache_dir, allow_pull=allow_pull, progress=progress)
    onnx_file = models.ModelFile(f"{ALIAS}/{ONNX_NAME}", ONNX_NAME, -1, ONNX_SHA256, "")
    target = folder / ONNX_NAME
    with FileLock(str(folder / ".build.lock")):
        if target.is_file() and _onnx_verified(onnx_file, target):
            return target
        sha = build_onnx(folder / "model.safetensors", target)
        if sha != ONNX_SHA256:
            target.unlink(missing_ok=True)
            raise EmbeddingModelError(
                f"the MiniLM graph built from the verified weights has sha256 {sha}, not the pinned {ONNX_SHA256} "
                f"(onnx {_onnx_version()}); the file was deleted"
            )
        models._write_stamp(models.ModelFile(onnx_file.alias, ONNX_NAME, target.stat().st_size, ONNX_SHA256, ""), target)
    return target


def graph_ready(cache_dir: str | os.PathLike[str] | None = None) -> bool:
    """Whether the store holds the verified weights and tokenizer and the verified ``model.onnx``
    built from them: :func:`prepare` then builds nothing, so the embedder needs onnxruntime and
    tokenizers only (not onnx and safetensors). No network; a file without a stamp is hashed once.

    Args:
        cache_dir: the model store (see :func:`workbench.llm.models.models_dir`).
    """
    if not models.embedding_status(ALIAS, cache_dir).verified:
        return False
    target = models.embedding_dir(ALIAS, cache_dir) / ONNX_NAME
    return target.is_file() and _onnx_verified(models.ModelFile(f"{ALIAS}/{ONNX_NAME}", ONNX_NAME, -1, ONNX_SHA256, ""),
                                               target)


def _onnx_verified(onnx_file: models.ModelFile, path: Path) -> bool:
    sized = models.ModelFile(onnx_file.alias, onnx_file.filename, path.stat().st_size, onnx_file.sha256, "")
    return models.verify_file(sized, path)


def _onnx_version() -> str:
    try:
        import onnx

        return onnx.__version__
    except ImportError:
        return "not installed"


class MiniLM:
    """all-MiniLM-L6-v2 on onnxruntime (CPU), loaded once per process and shared.

    Args:
        cache_dir: the model store (default: the user cache, see :mod:`workbench.llm.models`).
        threads: onnxruntime intra-op threads (default 1: short texts gain nothing from more,
            and on a loaded machine extra threads thrash).

    Thread-safe: onnxruntime sessions may be run from several threads.
    """

    _sessions: dict[tuple[str, int], tuple[Any, Any]] = {}
    _lock = threading.Lock()

    def __init__(self, cache_dir: str | os.PathLike[str] | None = None, threads: int = 1):
        self.cache_dir = cache_dir
        self.threads = threads

    def _session(self) -> tuple[Any, Any]:
        with self._lock:
            key = (str(self.cache_dir), self.threads)
            if key not in self._sessions:
                try:
                    import onnxruntime
                    from tokenizers import Tokenizer
                except ImportError as error:
                    raise EmbeddingModelError(f"the offline embeddings need onnxruntime and tokenizers: pip install 'workbench[local]' ({error})") from error
                onnx_path = prepare(self.cache_dir, progress=False)
                options = onnxruntime.SessionOptions()
                options.intra_op_num_threads = self.threads
                options.inter_op_num_threads = 1
                options.log_severity_level = 3  # errors only
                session = onnxruntime.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
                tokenizer = Tokenizer.from_file(str(onnx_path.with_name("tokenizer.json")))
                # the file pads and truncates to 128; sentence-transformers uses 256 and the batch's longest
                tokenizer.enable_truncation(max_length=MAX_TOKENS)
                tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
                self._sessions[key] = (session, tokenizer)
            return self._sessions[key]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length 384-d vector per text, in order (cosine similarity = dot product).

        Raises:
            EmbeddingModelError, workbench.llm.models.ModelError: see :func:`prepare`.
        """
        import numpy as np

        if not texts:
            return []
        session, tokenizer = self._session()
        # length-sorted batches: padding (wasted work) stays small
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors: list[Any] = [None] * len(texts)
        for start in range(0, len(order), BATCH_SIZE):
            batch = order[start:start + BATCH_SIZE]
            encodings = tokenizer.encode_batch([texts[i] for i in batch])
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            (output,) = session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})
            for i, vector in zip(batch, output):
                vectors[i] = vector
        return [list(map(float, vector)) for vector in vectors]
