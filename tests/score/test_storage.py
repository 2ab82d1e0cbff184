"""The Semantic Storage against real Chroma: embedded (PersistentClient in a temp dir) and a
real ``chroma run`` server started here on 127.0.0.1. Embeddings: the real offline
all-MiniLM-L6-v2 on onnxruntime (weights pulled and verified into the model store)."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time

import pytest

from workbench.score.embeddings import MiniLMEmbedder
from workbench.score.storage import SemanticStorage, StorageError


@pytest.fixture(scope="module")
def embedder():
    return MiniLMEmbedder()


@pytest.fixture(scope="module")
def embedded(embedder, tmp_path_factory):
    return SemanticStorage.persistent(tmp_path_factory.mktemp("chroma"), embedder)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(embedder, tmp_path_factory):
    port = _free_port()
    chroma = shutil.which("chroma")
    command = [chroma] if chroma else [sys.executable, "-c", "from chromadb.cli.cli import app; app()"]
    process = subprocess.Popen(
        [*command, "run", "--path", str(tmp_path_factory.mktemp("chroma-server")), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                storage = SemanticStorage.http("127.0.0.1", port, embedder)
                break
            except StorageError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        yield storage
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()


def _exercise(storage: SemanticStorage) -> None:
    scope = storage.scope("test/knapsack/generation")
    try:
        first = scope.describe_symbol("dp", "array initialised to 0", subcode=0)
        assert first.old is None
        scope.describe_symbol("items", "list of (weight, value) pairs", subcode=0)
        scope.describe_symbol("fruit_basket", "names of fruits to print in a greeting", subcode=0)
        scope.add_subcode(0, "Assign", "dp = [0] * (capacity + 1)", "creates the table of best values, all zero")
        # the poster's example: the loop updates what dp means
        update = scope.describe_symbol("dp", "stores the maximum value for each possible weight", subcode=1)
        assert update.old == "array initialised to 0"
        assert update.new == "stores the maximum value for each possible weight"

        assert scope.lookup(["dp", "unknown"]) == {"dp": "stores the maximum value for each possible weight"}
        records = scope.retrieve(["dp"], "for weight, value in items: best = max(best, value)", k=1)
        assert records[0].how == "exact" and records[0].key == "dp"
        nearest = [r for r in records if r.how == "nearest"]
        assert len(nearest) == 1 and nearest[0].key != "dp"  # exact hits are not repeated
        # the item list is closer to a loop over items than the fruit greeting is
        ranked = scope.nearest("for weight, value in items: total += value", k=4)
        keys = [r.key for r in ranked]
        assert keys.index("items") < keys.index("fruit_basket")
        assert all(r.distance is not None for r in ranked)
        assert scope.symbols() == {
            "dp": "stores the maximum value for each possible weight",
            "fruit_basket": "names of fruits to print in a greeting",
            "items": "list of (weight, value) pairs",
        }

        # isolation: another program's scope sees nothing of this one
        other = storage.scope("test/knapsack/reference")
        assert other.symbols() == {} and other.lookup(["dp"]) == {} and other.nearest("dp", 3) == []
        other.drop()
        # a scope reopened with the same key starts empty (a rerun never sees stale records)
        again = storage.scope("test/knapsack/generation")
        assert again.symbols() == {}
        scope = again
    finally:
        scope.drop()


def test_embedded_chroma(embedded):
    _exercise(embedded)
    assert embedded.where.startswith("chroma:")


def test_chroma_server(server):
    _exercise(server)
    assert server.where.startswith("chroma-http:127.0.0.1:")


def test_unreachable_server_is_a_clear_error(embedder):
    with pytest.raises(StorageError, match="no Chroma server answers"):
        SemanticStorage.http("127.0.0.1", _free_port(), embedder)


def test_minilm_vectors(embedder):
    vectors = embedder.embed(["sort the list", "sort the list", "order a sequence"])
    assert len(vectors) == 3 and len(vectors[0]) == 384
    assert vectors[0] == vectors[1]
    assert abs(sum(v * v for v in vectors[0]) - 1.0) < 1e-4  # normalised


def test_record_analysis_writes_back_in_one_batch(embedded):
    scope = embedded.scope("test/batch")
    try:
        scope.describe_symbol("total", "starts at zero")
        updates = scope.record_analysis(2, "For", "for x in xs: total += x", "sums xs", [("total", "sum of xs"), ("x", "an element")])
        assert [(u.name, u.old, u.new) for u in updates] == [("total", "starts at zero", "sum of xs"), ("x", None, "an element")]
        assert scope.symbols() == {"total": "sum of xs", "x": "an element"}
        assert any(r.key == "subcode:2" for r in scope.nearest("for x in xs: total += x", k=3))
    finally:
        scope.drop()
