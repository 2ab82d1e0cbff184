"""DSA-CQE step 2, the Semantic Storage on Chroma.

Source: Xu et al. 2024 (ISWC posters, CEUR-WS Vol-3828 paper 7), Sec. 2: a store of
textual descriptions of the program's symbols (variables, functions, classes) and of the
sub-codes already analysed. Before a sub-code is analysed, the descriptions of the names
it uses are retrieved; after the analysis the LLM's updated descriptions of the external
names it touched are written back (the poster's example: ``dp`` goes from "array
initialised to 0" to "stores the maximum value for each possible weight").

Retrieval here is two-fold: an exact lookup of symbol records by their ``name`` metadata,
plus the nearest records by embedding (cosine) to the sub-code's text.

Isolation: every analysed program gets its own collection (a :class:`StorageScope`), so
nothing leaks between samples, or between a generation and its reference; scopes are
dropped when the program is done unless asked to keep them. Embeddings come from an
explicit :class:`~workbench.score.embeddings.Embedder`; Chroma's own default
embedding function is never used. Telemetry is off.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

from workbench.errors import WorkbenchError
from workbench.score.embeddings import Embedder

os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")

SYMBOL = "symbol"
SUBCODE = "subcode"


class StorageError(WorkbenchError):
    """The Chroma storage cannot be opened or used."""


@dataclass(frozen=True)
class Retrieval:
    """A record handed to the LLM as context.

    Attributes:
        record_type: ``"symbol"`` or ``"subcode"``.
        key: the symbol name, or ``"subcode:<index>"``.
        description: the stored description.
        how: ``"exact"`` (name lookup) or ``"nearest"`` (embedding).
        distance: cosine distance for ``nearest`` (``None`` for ``exact``).
    """

    record_type: str
    key: str
    description: str
    how: str
    distance: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


@dataclass(frozen=True)
class StorageUpdate:
    """A symbol description written back after a sub-code's analysis (old is ``None`` when new)."""

    name: str
    old: str | None
    new: str
    subcode: int | None

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def _settings():
    from chromadb.config import Settings

    return Settings(anonymized_telemetry=False, allow_reset=False)


class SemanticStorage:
    """A Chroma client plus an embedder; hands out one isolated :class:`StorageScope` per program.

    Use :meth:`persistent` (embedded, a folder) or :meth:`http` (a ``chroma run`` server).

    Args:
        client: a Chroma client.
        embedder: the explicit embedding function.
        where: a description of the backend for reports.
    """

    def __init__(self, client: Any, embedder: Embedder, where: str):
        self.client = client
        self.embedder = embedder
        self.where = where

    @classmethod
    def persistent(cls, path: str | os.PathLike[str], embedder: Embedder) -> SemanticStorage:
        """Open an embedded ``chromadb.PersistentClient`` in ``path`` (created if missing).

        Raises:
            StorageError: the folder cannot be used.
        """
        import chromadb

        try:
            os.makedirs(path, exist_ok=True)
            client = chromadb.PersistentClient(path=os.fspath(path), settings=_settings())
        except Exception as error:
            raise StorageError(f"cannot open the Chroma store in {path}: {error}") from error
        return cls(client, embedder, f"chroma:{os.fspath(path)}")

    @classmethod
    def http(cls, host: str, port: int, embedder: Embedder) -> SemanticStorage:
        """Connect to a Chroma server (``chroma run --host H --port P``).

        Raises:
            StorageError: the server does not answer.
        """
        import chromadb

        try:
            client = chromadb.HttpClient(host=host, port=port, settings=_settings())
            client.heartbeat()
        except Exception as error:
            raise StorageError(f"no Chroma server answers at {host}:{port}: {error}") from error
        return cls(client, embedder, f"chroma-http:{host}:{port}")

    def scope(self, key: str) -> StorageScope:
        """Return a fresh, empty scope for one program (an existing one with the same key is reset).

        Args:
            key: identifies the program, unambiguously (DSA-CQE uses a JSON list of run folder,
                task, sample and role); any length: the collection name is a hash of it.
        """
        # Chroma names: 3-512 chars of [A-Za-z0-9._-]; a hash fits every key.
        name = "wb-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]
        try:
            self.client.delete_collection(name)
        except Exception:  # absent: the normal case
            pass
        collection = self.client.create_collection(
            name=name,
            embedding_function=None,
            metadata={"hnsw:space": "cosine", "scope": key[:500], "embedder": self.embedder.name},
        )
        return StorageScope(self, name, collection, key)


class StorageScope:
    """The records of one program: symbol descriptions and analysed sub-codes."""

    def __init__(self, storage: SemanticStorage, name: str, collection: Any, key: str):
        self.storage = storage
        self.name = name
        self.collection = collection
        self.key = key

    # -- writes ------------------------------------------------------------------------
    def describe_symbol(self, name: str, description: str, subcode: int | None = None) -> StorageUpdate:
        """Store (or replace) the description of a symbol; return the update with the old text."""
        old = self.lookup([name]).get(name)
        vector = self.storage.embedder.embed([f"{name}: {description}"])[0]
        self.collection.upsert(
            ids=[f"{SYMBOL}:{name}"],
            embeddings=[vector],
            documents=[description],
            metadatas=[{"type": SYMBOL, "name": name, "subcode": -1 if subcode is None else subcode}],
        )
        return StorageUpdate(name, old, description, subcode)

    def record_analysis(
        self, index: int, kind: str, code: str, description: str, symbols: list[tuple[str, str]]
    ) -> list[StorageUpdate]:
        """Store a sub-code's description and its symbol descriptions in one batch.

        Args:
            index: the sub-code's index.
            kind: its kind name.
            code: its source text.
            description: what the LLM says it does.
            symbols: (name, new description) pairs to write back.

        Returns:
            one :class:`StorageUpdate` per symbol, with the text it replaced.
        """
        symbols = list(dict(symbols).items())  # last description of a repeated name wins
        old = self.lookup([name for name, _ in symbols])
        texts = [f"{code}\n# {description}"] + [f"{name}: {text}" for name, text in symbols]
        vectors = self.storage.embedder.embed(texts)
        self.collection.upsert(
            ids=[f"{SUBCODE}:{index}"] + [f"{SYMBOL}:{name}" for name, _ in symbols],
            embeddings=vectors,
            documents=[description] + [text for _, text in symbols],
            metadatas=[{"type": SUBCODE, "name": f"{kind}#{index}", "subcode": index}]
            + [{"type": SYMBOL, "name": name, "subcode": index} for name, _ in symbols],
        )
        return [StorageUpdate(name, old.get(name), text, index) for name, text in symbols]

    def add_subcode(self, index: int, kind: str, code: str, description: str) -> None:
        """Store the description of an analysed sub-code (embedded with its code)."""
        vector = self.storage.embedder.embed([f"{code}\n# {description}"])[0]
        self.collection.upsert(
            ids=[f"{SUBCODE}:{index}"],
            embeddings=[vector],
            documents=[description],
            metadatas=[{"type": SUBCODE, "name": f"{kind}#{index}", "subcode": index}],
        )

    # -- reads -------------------------------------------------------------------------
    def lookup(self, names: list[str]) -> dict[str, str]:
        """Return name -> description for the stored symbols among ``names`` (exact metadata match)."""
        if not names:
            return {}
        found = self.collection.get(
            where={"$and": [{"type": SYMBOL}, {"name": {"$in": list(names)}}]}, include=["documents", "metadatas"]
        )
        by_name = {meta["name"]: doc for meta, doc in zip(found["metadatas"], found["documents"])}
        return {name: by_name[name] for name in names if name in by_name}

    def nearest(self, text: str, k: int, exclude: set[str] | None = None) -> list[Retrieval]:
        """Return up to ``k`` records nearest to ``text`` by cosine distance, skipping ids in ``exclude``."""
        total = self.collection.count()
        if k <= 0 or total == 0:
            return []
        vector = self.storage.embedder.embed([text])[0]
        result = self.collection.query(
            query_embeddings=[vector], n_results=min(total, k + len(exclude or ())), include=["documents", "metadatas", "distances"]
        )
        out: list[Retrieval] = []
        for record_id, doc, meta, distance in zip(
            result["ids"][0], result["documents"][0], result["metadatas"][0], result["distances"][0]
        ):
            if exclude and record_id in exclude:
                continue
            key = meta["name"] if meta["type"] == SYMBOL else f"subcode:{meta['subcode']}"
            out.append(Retrieval(meta["type"], key, doc, "nearest", float(distance)))
            if len(out) == k:
                break
        return out

    def retrieve(self, names: list[str], text: str, k: int) -> list[Retrieval]:
        """Context for one sub-code: exact descriptions of ``names`` plus ``k`` nearest others.

        Args:
            names: the names the sub-code defines and uses.
            text: the sub-code's source (the embedding query).
            k: how many nearest records to add beyond the exact ones.
        """
        exact = self.lookup(names)
        records = [Retrieval(SYMBOL, name, description, "exact") for name, description in exact.items()]
        exclude = {f"{SYMBOL}:{name}" for name in exact}
        return records + self.nearest(text, k, exclude)

    def symbols(self) -> dict[str, str]:
        """Return every stored symbol description (name -> description), sorted by name."""
        found = self.collection.get(where={"type": SYMBOL}, include=["documents", "metadatas"])
        return dict(sorted((meta["name"], doc) for meta, doc in zip(found["metadatas"], found["documents"])))

    def drop(self) -> None:
        """Delete this scope's collection."""
        try:
            self.storage.client.delete_collection(self.name)
        except Exception:  # already gone
            pass
