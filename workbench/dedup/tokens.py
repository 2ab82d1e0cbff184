"""Step 1: identifier and literal tokens of every file, through the language plugins.

Allamanis 2019 ("The Adverse Effects of Code Duplication in Machine Learning Models of
Code", Onward! 2019), Sec. 3: files are compared as bags of identifier and literal
tokens; comments, keywords and operators are dropped. The tokens come from each row's
:class:`~workbench.languages.spec.LanguagePlugin` (a tree-sitter parse, which recovers
from syntax errors), spread over worker processes. Each worker sends back a chunk's bags
as flat numpy buffers of 64-bit token ids (:func:`token_id`) and counts, with the MinHash
signatures computed where the tokens are; the main process keeps them as they come, in a
few flat arrays for the whole run (:class:`TokenBags`): no Python object per file or token.
Line ends are normalised (``\\r\\n`` and ``\\r`` -> ``\\n``, :func:`normalise_newlines`) before
any plugin sees a row, so every language and both engines tokenize the same text.
"""

from __future__ import annotations

import functools
import gc
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

import numpy as np
from xxhash import xxh3_64_intdigest, xxh32_intdigest

from workbench.data.text_encoding import DEFAULT_SOURCE_ENCODING
from workbench.dedup.signatures import minhash_matrix
from workbench.errors import LanguageNotFoundError
from workbench.languages.registry import get_language
from workbench.languages.spec import LanguagePlugin

#: files per task sent to a worker: large enough to amortise pickling, small enough to balance
CHUNK_SIZE = 256


def token_id(token: bytes) -> int:
    """Return the 64-bit id of a token (its UTF-8 bytes): XXH3-64, seed 0.

    Token bags hold ids instead of the tokens themselves: an id is a machine word, so bags
    cross between processes as numpy buffers and compare as ``int`` keys. Two different
    tokens with one id would make two bags look more alike than they are; for ``V``
    distinct tokens in a run the chance that any two collide is at most ``V**2 / 2**65``
    (the birthday bound for a 64-bit hash that behaves as a random function), 2.7e-8 for a
    million distinct tokens and 2.7e-4 for a hundred million. ``tests/dedup/test_corpus.py``
    checks that the id bags of the 2k corpus are exactly its token bags.
    """
    return xxh3_64_intdigest(token)


@dataclass(frozen=True)
class FileTokens:
    """The token bag of one file, or why there is none.

    Attributes:
        counts: token id (:func:`token_id` of the token's UTF-8 bytes) -> occurrences: the
            multiset; empty when ``failure`` is set.
        n_tokens: ``sum(counts.values())``, the multiset size compared with ``min_tokens``.
        has_error: the parse needed error recovery (the tokens are still usable).
        signature: the MinHash signature (``num_perm`` uint32 values as bytes) when asked
            for with a :class:`SignatureSpec` and the file has enough tokens.
        failure: ``None``, or why the file could not be tokenized: ``"missing (null)"``,
            ``"binary (NUL bytes)"``, ``"binary"`` (control bytes), ``"not UTF-8 (byte 3), nor cp1252 (byte 11)"``,
            ``"no language plugin for 'x'"``,
            ``"tokenizer error: ..."``.
    """

    counts: dict[int, int]
    n_tokens: int
    has_error: bool = False
    failure: str | None = None
    signature: bytes | None = None


def _failed(reason: str) -> FileTokens:
    return FileTokens({}, 0, failure=reason)


@dataclass(frozen=True)
class SignatureSpec:
    """Asks the workers for MinHash signatures of files with at least ``min_tokens`` tokens
    (computed where the tokens are, in parallel; see :func:`~workbench.dedup.signatures.minhash_matrix`).

    Attributes:
        num_perm, seed: the MinHash permutations; min_tokens: the smallest file signed.
        perms: the permutations ``(a, b)`` when known (from a
            :class:`~workbench.dedup.signatures.MinHashSetup`), so that the workers need
            not import datasketch; ``None`` to take them from datasketch.
    """

    num_perm: int
    seed: int
    min_tokens: int
    perms: tuple[np.ndarray, np.ndarray] | None = None


def decode_code(value: object, fallback: str = DEFAULT_SOURCE_ENCODING) -> tuple[str | None, str | None]:
    """Return ``(text, None)`` for a usable code cell, or ``(None, reason)``.

    Args:
        value: the cell: ``str``, ``bytes`` (parquet binary columns: decoded as a source folder's
            files are, :func:`workbench.data.text_encoding.decode_cell`: a UTF-16/32 byte-order
            mark, NUL bytes binary, UTF-8, then ``fallback``) or ``None``.
        fallback: the encoding of bytes that are not UTF-8 (``--source-encoding``).
    """
    if value is None:
        return None, "missing (null)"
    if isinstance(value, (bytes, bytearray, memoryview)):
        from workbench.data.text_encoding import decode_cell

        decoded = decode_cell(bytes(value), fallback)
        if decoded.text is None:
            return None, ("binary (NUL bytes)" if decoded.reason == "binary" and b"\x00" in bytes(value)[:8192]
                          else decoded.reason)
        return decoded.text, None
    if not isinstance(value, str):
        return None, f"not text ({type(value).__name__})"
    if "\x00" in value:
        return None, "binary (NUL bytes)"
    return value, None


def code_encoding(value: object, fallback: str = DEFAULT_SOURCE_ENCODING) -> str | None:
    """How :func:`decode_code` read a bytes cell when not as UTF-8 (``"cp1252 (fallback)"``,
    ``"UTF-16 (byte-order mark)"``), as a source folder's files are recorded; ``None`` for text, a
    UTF-8 cell, or one not read at all."""
    if not isinstance(value, (bytes, bytearray, memoryview)):
        return None
    from workbench.data.text_encoding import decode_cell

    decoded = decode_cell(bytes(value), fallback)
    return decoded.encoding if decoded.text is not None else None


def cell_encodings(ids: Sequence[str], found: Iterable[tuple[int, str]]) -> dict[str, str]:
    """``report.json``'s ``source_encodings`` entries of the code cells read in another encoding
    than UTF-8: ``"row <id>" -> how``, in row order (both engines record them so).

    Args:
        ids: every row's id; found: ``(row index, how)`` (:func:`code_encoding`), in any order.
    """
    return {f"row {ids[index]}": how for index, how in sorted(found)}


def normalise_newlines(text: str) -> str:
    r"""Return ``text`` with ``\r\n`` and lone ``\r`` turned into ``\n``, as the identical-text rule
    does (:func:`workbench.dedup.text_identity.normalise_whitespace`) and as Python reads a source
    file (universal newlines). Every row is tokenized from this form, whatever its plugin: a file
    and its copy with CRLF line ends are the same code, but a multi-line string literal would keep
    the ``\r`` in its token and the two bags would differ.

    >>> normalise_newlines("s = '''a\r\nb'''\rt = 1\r\n")
    "s = '''a\nb'''\nt = 1\n"
    """
    if "\r" not in text:  # the common case: no copy
        return text
    return text.replace("\r\n", "\n").replace("\r", "\n")


def tokenize_one(value: object, language: str, fallback: str = DEFAULT_SOURCE_ENCODING) -> FileTokens:
    """Tokenize one code cell with the plugin for ``language``; failures are returned, not raised
    (``fallback``: the encoding of a bytes cell that is not UTF-8, ``--source-encoding``)."""
    return _pack_chunk([(value, language)], fallback=fallback).unpack()[0]


def _scan(value: object, language: str, plugins: dict[str, LanguagePlugin | None] | None = None,
          fallback: str = DEFAULT_SOURCE_ENCODING) -> tuple[list[bytes], bool, str | None]:
    """Return ``(tokens, has_error, failure)`` for one cell (``plugins``: a cache of
    :func:`get_language` by name, for a chunk's files; ``fallback``: as :func:`decode_code`)."""
    text, reason = decode_code(value, fallback)
    if reason is not None:
        return [], False, reason
    text = normalise_newlines(text)  # CRLF copies are copies (a multi-line string would keep the \r)
    plugin = plugins.get(language, False) if plugins is not None else False
    if plugin is False:
        try:
            plugin = get_language(language)
        except LanguageNotFoundError:
            plugin = None
        if plugins is not None:
            plugins[language] = plugin
    if plugin is None:
        return [], False, f"no language plugin for {language!r}"
    try:
        tokens, has_error = token_bytes(plugin, text)
    except Exception as error:  # a plugin bug must cost one file, not the run
        return [], False, f"tokenizer error: {type(error).__name__}: {error}"
    return tokens, has_error, None


def token_bytes(plugin: LanguagePlugin, text: str) -> tuple[list[bytes], bool]:
    """Return ``(tokens, has_error)`` as :meth:`LanguagePlugin.scan_tokens` does, each token
    as its UTF-8 bytes.

    For plugins that keep the default token definition the tokens are sliced out of the
    parsed bytes and never decoded (a quarter of the tokenizer's time went to decoding and
    re-encoding them). Tree-sitter nodes start and end on character boundaries of valid
    UTF-8, so ``bytes`` tokens compare, count and hash exactly as their ``str`` forms do.
    Text that is not valid Unicode (lone surrogates) and plugins that refine the
    tokens take the ``str`` path and are encoded with ``surrogatepass``.
    """
    kind = type(plugin)
    if kind.scan_tokens is LanguagePlugin.scan_tokens:
        if kind.tokens is not LanguagePlugin.tokens:
            # the plugin overrides only ``tokens``: use it (a parse error is not known then)
            return [token.encode("utf-8", errors="surrogatepass") for token in plugin.tokens(text)], False
        if kind.iter_token_nodes is LanguagePlugin.iter_token_nodes:
            try:
                data = text.encode("utf-8")
            except UnicodeEncodeError:
                data = None
            if data is not None:
                tree = plugin.parse(data)
                return [data[start:end] for start, end in plugin.token_spans(tree)], tree.root_node.has_error
    tokens, has_error = plugin.scan_tokens(text)
    return [token.encode("utf-8", errors="surrogatepass") for token in tokens], has_error


@dataclass(frozen=True)
class _TokenChunk:
    """The tokens of a chunk of files in a few flat buffers: what a worker sends back
    (one pickle of a handful of arrays instead of a dict per file with a key per token)."""

    token_ids: bytes  # uint64: every file's distinct token ids, ascending, file after file
    token_counts: bytes  # uint32, aligned with token_ids
    ends: list[int]  # per file: the end of its ids (a prefix sum of distinct counts)
    files: list[tuple[int, bool, str | None]]  # per file: n_tokens, has_error, failure
    signatures: bytes  # uint32 (files with a signature, num_perm)
    signed: list[int]  # the files (chunk positions) that have a signature, in order
    #: CPU seconds the worker spent on (tokens: parse, query, bags; signatures: ids, hashes, MinHash)
    cpu_seconds: tuple[float, float] = (0.0, 0.0)

    def unpack(self) -> list[FileTokens]:
        """Return one :class:`FileTokens` per file of the chunk."""
        ids = np.frombuffer(self.token_ids, dtype=np.uint64).tolist()  # one conversion per chunk
        counts = np.frombuffer(self.token_counts, dtype=np.uint32).tolist()
        row = {position: i for i, position in enumerate(self.signed)}
        width = len(self.signatures) // len(self.signed) if self.signed else 0
        results = []
        start = 0
        for position, (end, (n_tokens, has_error, failure)) in enumerate(zip(self.ends, self.files)):
            if failure is not None:
                results.append(_failed(failure))
                continue
            signature = None
            if position in row:
                signature = self.signatures[row[position] * width : (row[position] + 1) * width]
            bag = dict(zip(ids[start:end], counts[start:end]))
            results.append(FileTokens(bag, n_tokens, has_error, None, signature))
            start = end
        return results


def _pack_chunk(chunk: Sequence[tuple[object, str]], spec: SignatureSpec | None = None,
                fallback: str = DEFAULT_SOURCE_ENCODING) -> _TokenChunk:
    """Tokenize a chunk of files (in a worker) into a :class:`_TokenChunk`.

    Each file's tokens are counted once (``Counter`` over the byte strings), then the
    distinct tokens of the whole chunk are hashed in two passes of C calls (XXH3-64 ids,
    XXH32 MinHash inputs), the signatures computed in one numpy pass over the chunk, and
    each file's ids sorted (one ``lexsort``), so that bags compare by merging sorted arrays
    (:func:`~workbench.dedup.verification.verify_sorted_pair`) and identical multisets have
    identical bytes.
    """
    clock = time.process_time()
    distinct: list[bytes] = []
    counts: list[int] = []
    ends: list[int] = []
    files: list[tuple[int, bool, str | None]] = []
    plugins: dict[str, LanguagePlugin | None] = {}
    for value, language in chunk:
        tokens, has_error, failure = _scan(value, language, plugins, fallback)
        bag = Counter(tokens)
        distinct += bag
        counts += bag.values()
        ends.append(len(distinct))
        files.append((len(tokens), has_error, failure))
    tokens_done = time.process_time()
    ids = np.fromiter(map(xxh3_64_intdigest, distinct), dtype=np.uint64, count=len(distinct))
    counts_array = np.array(counts, dtype=np.uint32)
    if len(ids):
        owner = np.repeat(np.arange(len(ends)), np.diff(ends, prepend=0))
        order = np.lexsort((ids, owner))  # by file, then by id
        ids, counts_array = ids[order], counts_array[order]
    signed: list[int] = []
    signatures = b""
    if spec is not None:
        signed = [i for i, (n_tokens, _, failure) in enumerate(files) if failure is None and n_tokens >= spec.min_tokens]
        if signed:
            starts = [0] + ends[:-1]
            spans = [(starts[i], ends[i]) for i in signed]
            wanted = distinct if len(signed) == len(files) else [t for a, b in spans for t in distinct[a:b]]
            hashes = np.fromiter(map(xxh32_intdigest, wanted), dtype=np.uint32, count=len(wanted))
            offsets = np.cumsum([0] + [b - a for a, b in spans[:-1]])
            signatures = minhash_matrix(hashes, offsets, spec.num_perm, spec.seed, spec.perms).tobytes()
    cpu = (tokens_done - clock, time.process_time() - tokens_done)
    return _TokenChunk(ids.tobytes(), counts_array.tobytes(), ends, files, signatures, signed, cpu)


def _failed_chunk(reason: str) -> _TokenChunk:
    """The :class:`_TokenChunk` of one file that could not be tokenized."""
    return _TokenChunk(b"", b"", [0], [(0, False, reason)], b"", [])


def _worker_started() -> None:
    # a forked worker inherits the parent's whole heap (the dataset rows, loaded modules); the
    # cyclic garbage collector would scan it again and again, touching (and so copying) its
    # pages, though nothing in it becomes garbage here
    gc.freeze()


def resolve_workers(workers: int, n_items: int) -> int:
    """Return the number of processes to use: ``workers`` (0 = CPUs available), at most one
    per chunk, and 1 for inputs too small to pay for process start-up."""
    if workers == 0:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(workers, (n_items + CHUNK_SIZE - 1) // CHUNK_SIZE))


@dataclass(frozen=True)
class TokenBags:
    """The token bags of many files in flat arrays (compressed sparse rows): what a local
    run keeps of every file, about 12 bytes per distinct token of a file and a MinHash
    signature, instead of a ``dict`` per file (about 80 bytes per distinct token).

    Rows with identical text and language share one bag (they were tokenized once).

    Attributes:
        bag_of: ``int64`` per row: its bag.
        offsets: ``int64`` per bag and one more: bag ``k``'s tokens are ``ids[offsets[k]:offsets[k + 1]]``.
        ids: ``uint64`` token ids (:func:`token_id`), ascending within each bag.
        counts: ``uint32`` occurrences, aligned with ``ids``.
        n_tokens: ``int64`` per bag: the multiset size (``counts`` summed).
        has_error: ``bool`` per bag: the parse needed error recovery.
        failures: bag -> why it has no tokens (see :attr:`FileTokens.failure`).
        signatures: ``uint32`` ``(bags, num_perm)``: the MinHash signature of each bag with
            one (``signed``); zeros elsewhere. ``(bags, 0)`` when none were asked for.
        signed: ``bool`` per bag: it has a signature (no failure, at least ``min_tokens``).
        cpu_seconds: the workers' CPU seconds: ``{"tokens": ..., "signatures": ...}``.

    Example:

    >>> bags = tokenize_to_bags(["a = b + b", "c = 1"], ["python", "python"], workers=1)
    >>> bags.row_n_tokens().tolist(), len(bags.row(0).counts)
    ([3, 2], 2)
    """

    bag_of: np.ndarray
    offsets: np.ndarray
    ids: np.ndarray
    counts: np.ndarray
    n_tokens: np.ndarray
    has_error: np.ndarray
    failures: dict[int, str]
    signatures: np.ndarray
    signed: np.ndarray
    cpu_seconds: dict[str, float]

    def __len__(self) -> int:
        return len(self.bag_of)

    def __getitem__(self, row: int) -> FileTokens:
        """``bags[row]``: :meth:`row`, as a list of :class:`FileTokens` would give it."""
        return self.row(row)

    def row_n_tokens(self) -> np.ndarray:
        """``int64`` per row: its multiset size."""
        return self.n_tokens[self.bag_of]

    def row_has_error(self) -> np.ndarray:
        """``bool`` per row: its parse needed error recovery."""
        return self.has_error[self.bag_of]

    def row_failures(self) -> dict[int, str]:
        """Row -> why it has no tokens, for the rows that failed, in row order."""
        if not self.failures:
            return {}
        failed = np.flatnonzero(np.isin(self.bag_of, np.fromiter(self.failures, dtype=np.int64)))
        return {row: self.failures[bag] for row, bag in zip(failed.tolist(), self.bag_of[failed].tolist())}

    def tokens_of(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, counts)`` of a row's bag (views, ids ascending)."""
        bag = self.bag_of[row]
        start, end = self.offsets[bag], self.offsets[bag + 1]
        return self.ids[start:end], self.counts[start:end]

    def row(self, row: int) -> FileTokens:
        """The :class:`FileTokens` of one row (its bag as a ``dict``)."""
        bag = int(self.bag_of[row])
        if bag in self.failures:
            return _failed(self.failures[bag])
        ids, counts = self.tokens_of(row)
        signature = self.signatures[bag].tobytes() if self.signed[bag] else None
        return FileTokens(dict(zip(ids.tolist(), counts.tolist())), int(self.n_tokens[bag]),
                          bool(self.has_error[bag]), None, signature)

    @classmethod
    def from_buffers(cls, ids: Sequence[bytes], counts: Sequence[bytes], n_tokens: Sequence[int]) -> TokenBags:
        """One bag per row from each row's token buffers, as :func:`tokenize_to_bags` lays them
        out: for the Spark executors, which hold a row's tokens as the bytes of a
        :class:`_TokenChunk` slice.

        Args:
            ids: per row, its distinct token ids as ``uint64`` bytes, ascending.
            counts: per row, their occurrences as ``uint32`` bytes (aligned with ``ids``).
            n_tokens: per row, the multiset size.

        Returns:
            a :class:`TokenBags` with row ``k`` in bag ``k`` (no failures, no parse errors, no
            signatures).

        Raises:
            ValueError: the three sequences differ in length, or a row's ids and counts do.

        Example:

        >>> one = np.array([3, 7], dtype=np.uint64).tobytes()
        >>> bags = TokenBags.from_buffers([one], [np.array([2, 1], dtype=np.uint32).tobytes()], [3])
        >>> bags.row(0).counts
        {3: 2, 7: 1}
        """
        if not len(ids) == len(counts) == len(n_tokens):
            raise ValueError("ids, counts and n_tokens must have one entry per row")
        lengths = np.fromiter((len(buffer) // 8 for buffer in ids), dtype=np.int64, count=len(ids))
        if any(len(c) != 4 * int(n) for c, n in zip(counts, lengths)):
            raise ValueError("each row's counts must align with its ids (one uint32 per uint64 id)")
        n_rows = len(ids)
        offsets = np.zeros(n_rows + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(np.arange(n_rows, dtype=np.int64), offsets, np.frombuffer(b"".join(ids), dtype=np.uint64),
                   np.frombuffer(b"".join(counts), dtype=np.uint32), np.asarray(n_tokens, dtype=np.int64).reshape(n_rows),
                   np.zeros(n_rows, dtype=bool), {}, np.zeros((n_rows, 0), dtype=np.uint32),
                   np.zeros(n_rows, dtype=bool), {"tokens": 0.0, "signatures": 0.0})


class _BagBuilder:
    """Collects :class:`_TokenChunk` s in bag order and joins them into a :class:`TokenBags`."""

    def __init__(self, num_perm: int) -> None:
        self.num_perm = num_perm
        self.ids: list[np.ndarray] = []
        self.counts: list[np.ndarray] = []
        self.lengths: list[np.ndarray] = []
        self.files: list[tuple[int, bool, str | None]] = []
        self.signatures: list[np.ndarray] = []
        self.signed: list[np.ndarray] = []
        self.cpu = {"tokens": 0.0, "signatures": 0.0}

    def add(self, chunk: _TokenChunk) -> None:
        first = len(self.files)
        self.ids.append(np.frombuffer(chunk.token_ids, dtype=np.uint64))
        self.counts.append(np.frombuffer(chunk.token_counts, dtype=np.uint32))
        self.lengths.append(np.diff(np.asarray(chunk.ends, dtype=np.int64), prepend=0))
        self.files += chunk.files
        if chunk.signed:
            self.signatures.append(np.frombuffer(chunk.signatures, dtype=np.uint32).reshape(len(chunk.signed), -1))
            self.signed.append(np.asarray(chunk.signed, dtype=np.int64) + first)
        self.cpu["tokens"] += chunk.cpu_seconds[0]
        self.cpu["signatures"] += chunk.cpu_seconds[1]

    def build(self, bag_of: np.ndarray) -> TokenBags:
        n_bags = len(self.files)
        lengths = np.concatenate(self.lengths) if self.lengths else np.zeros(0, dtype=np.int64)
        offsets = np.zeros(n_bags + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        n_tokens = np.fromiter((f[0] for f in self.files), dtype=np.int64, count=n_bags)
        has_error = np.fromiter((f[1] for f in self.files), dtype=bool, count=n_bags)
        failures = {bag: f[2] for bag, f in enumerate(self.files) if f[2] is not None}
        signatures = np.zeros((n_bags, self.num_perm), dtype=np.uint32)
        signed = np.zeros(n_bags, dtype=bool)
        for rows, values in zip(self.signed, self.signatures):
            signatures[rows] = values
            signed[rows] = True
        ids = np.concatenate(self.ids) if self.ids else np.zeros(0, dtype=np.uint64)
        self.ids.clear()  # the pieces go as soon as the whole exists
        counts = np.concatenate(self.counts) if self.counts else np.zeros(0, dtype=np.uint32)
        self.counts.clear()
        return TokenBags(bag_of, offsets, ids, counts, n_tokens, has_error, failures, signatures, signed, self.cpu)


def tokenize_files(
    codes: Sequence[object],
    languages: Sequence[str],
    *,
    workers: int = 0,
    signatures: SignatureSpec | None = None,
    on_progress: Callable[[int], None] | None = None,
    source_encoding: str = DEFAULT_SOURCE_ENCODING,
) -> list[FileTokens]:
    """Tokenize every file, in input order (:func:`tokenize_to_bags`, one ``dict`` per file).

    Args:
        codes: the code cells (see :func:`decode_code`).
        languages: the language name of each cell (same length as ``codes``).
        workers: processes (0 = one per CPU; 1 = in this process).
        signatures: also compute MinHash signatures (see :class:`SignatureSpec`).
        on_progress: called with the number of files just finished.
        source_encoding: the encoding of a bytes cell that is not UTF-8 (``--source-encoding``;
            see :func:`decode_code`).

    Returns:
        one :class:`FileTokens` per input cell; cells with identical text and language are
        tokenized once and share one (read-only) :class:`FileTokens`.
    """
    bags = tokenize_to_bags(codes, languages, workers=workers, signatures=signatures, on_progress=on_progress,
                            source_encoding=source_encoding)
    first_row = {bag: row for row, bag in reversed(list(enumerate(bags.bag_of.tolist())))}
    shared = {bag: bags.row(row) for bag, row in first_row.items()}
    return [shared[bag] for bag in bags.bag_of.tolist()]


def tokenize_to_bags(
    codes: Sequence[object],
    languages: Sequence[str],
    *,
    workers: int = 0,
    signatures: SignatureSpec | None = None,
    on_progress: Callable[[int], None] | None = None,
    source_encoding: str = DEFAULT_SOURCE_ENCODING,
) -> TokenBags:
    """Tokenize every file into one :class:`TokenBags` (arguments as :func:`tokenize_files`).

    Raises:
        ValueError: ``codes`` and ``languages`` differ in length.
    """
    if len(codes) != len(languages):
        raise ValueError("codes and languages must have the same length")
    # exact copies of a file are common in scraped code (Allamanis 2019, Sec. 2): parse each text once
    first_of: dict[tuple[object, str], int] = {}
    distinct: list[tuple[object, str]] = []
    bag_of = np.empty(len(codes), dtype=np.int64)
    for row, item in enumerate(zip(codes, languages)):
        if isinstance(item[0], (str, bytes)):
            index = first_of.setdefault(item, len(distinct))
            if index == len(distinct):
                distinct.append(item)
        else:  # None or an unhashable cell: tokenize (fail) on its own
            index = len(distinct)
            distinct.append(item)
        bag_of[row] = index
    del first_of
    if on_progress and len(codes) > len(distinct):
        on_progress(len(codes) - len(distinct))  # the copies are done with their first occurrence
    builder = _BagBuilder(signatures.num_perm if signatures is not None else 0)
    _tokenize_distinct(distinct, workers, signatures, on_progress, builder.add, source_encoding)
    return builder.build(bag_of)


def _tokenize_distinct(
    items: list[tuple[object, str]],
    workers: int,
    signatures: SignatureSpec | None,
    on_progress: Callable[[int], None] | None,
    collect: Callable[[_TokenChunk], None],
    fallback: str = DEFAULT_SOURCE_ENCODING,
) -> None:
    """Tokenize ``items`` chunk by chunk, giving each :class:`_TokenChunk` to ``collect`` in order
    (``fallback``: the encoding of bytes cells that are not UTF-8)."""
    chunks = [items[i : i + CHUNK_SIZE] for i in range(0, len(items), CHUNK_SIZE)]
    processes = resolve_workers(workers, len(items))
    if processes == 1:
        for chunk in chunks:
            collect(_pack_chunk(chunk, signatures, fallback))
            if on_progress:
                on_progress(len(chunk))
        return
    finished = 0
    try:
        with ProcessPoolExecutor(max_workers=processes, initializer=_worker_started) as pool:
            work = functools.partial(_pack_chunk, spec=signatures, fallback=fallback)
            for chunk, done in zip(chunks, pool.map(work, chunks)):
                collect(done)
                finished += len(chunk)
                if on_progress:
                    on_progress(len(chunk))
    except BrokenProcessPool:
        # a worker died (e.g. a grammar crashed on hostile input): redo the unfinished
        # chunks, halving any chunk that crashes again, so only the culprit files are lost
        for start in range(finished, len(items), CHUNK_SIZE):  # whole chunks are finished
            chunk = items[start : start + CHUNK_SIZE]
            for done in _tokenize_isolated(chunk, signatures, fallback):
                collect(done)
            if on_progress:
                on_progress(len(chunk))


def _tokenize_isolated(chunk: Sequence[tuple[object, str]], spec: SignatureSpec | None,
                       fallback: str = DEFAULT_SOURCE_ENCODING) -> list[_TokenChunk]:
    """Tokenize a chunk in a fresh process; if the process dies, bisect the chunk and retry,
    and record a failure for a single file that still kills it."""
    try:
        with ProcessPoolExecutor(max_workers=1, initializer=_worker_started) as pool:
            return [pool.submit(_pack_chunk, chunk, spec, fallback).result()]
    except BrokenProcessPool:
        if len(chunk) == 1:
            return [_failed_chunk("tokenizer crashed (worker process died)")]
        middle = len(chunk) // 2
        return _tokenize_isolated(chunk[:middle], spec, fallback) + _tokenize_isolated(chunk[middle:], spec, fallback)
