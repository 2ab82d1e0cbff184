"""Step 3: MinHash signatures and LSH banding, which propose candidate pairs.

MinHash (Broder, "On the resemblance and containment of documents", 1997) estimates
the Jaccard similarity of two token *sets*; LSH banding (Leskovec, Rajaraman, Ullman,
Mining of Massive Datasets, 3rd ed., Sec. 3.4) makes two files candidates when all
``r`` rows of at least one of ``b`` bands agree, i.e. with probability
``1 - (1 - J**r)**b``. Candidates are only proposals: :mod:`workbench.dedup.verification`
decides every pair exactly.

The permutations and the bands/rows tuning come from ``datasketch`` (pinned to 2.0.x, whose
default ``affine32`` permutation scheme differs from the ``legacy`` scheme of 1.x; the scheme
is recorded in the report). The pipeline bands signatures with :func:`band_buckets` (numpy),
which gives the buckets of datasketch's ``MinHashLSH`` (:func:`build_lsh_index` and
:func:`candidate_buckets`, kept as the reference it is tested against) in the same order.
"""

from __future__ import annotations

import functools
import importlib.metadata
import multiprocessing
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from xxhash import xxh32_intdigest

if TYPE_CHECKING:  # datasketch is imported where it is used: with scipy it costs ~0.3 s
    from datasketch import LeanMinHash, MinHash, MinHashLSH

#: the datasketch permutation scheme used (datasketch >= 2.0)
MINHASH_SCHEME = "affine32"
#: how a token becomes the 32-bit input of the permutations
TOKEN_HASH = "xxh32(utf-8 token, seed 0)"


@dataclass(frozen=True)
class LSHParameters:
    """The LSH scheme of a run, as recorded in the report.

    Attributes:
        num_perm: MinHash signature length.
        bands, rows: LSH bands ``b`` and rows per band ``r`` (``b * r <= num_perm``).
        threshold: the Jaccard threshold ``b``/``r`` were tuned for (``None`` if given).
        weights: ``(false_positive, false_negative)`` weights of the tuning.
        seed: permutation seed.
        scheme: datasketch permutation scheme.
        token_hash: how tokens are hashed before the permutations.
        datasketch_version: the installed datasketch version.
    """

    num_perm: int
    bands: int
    rows: int
    threshold: float | None
    weights: tuple[float, float] | None
    seed: int
    scheme: str = MINHASH_SCHEME
    token_hash: str = TOKEN_HASH
    datasketch_version: str = importlib.metadata.version("datasketch")

    def candidate_probability(self, jaccard: float) -> float:
        """Return ``1 - (1 - J**r)**b``: the chance a pair of set Jaccard ``J`` becomes a
        candidate (Mining of Massive Datasets, Sec. 3.4.2)."""
        return 1.0 - (1.0 - jaccard**self.rows) ** self.bands

    def to_dict(self, at_threshold: float) -> dict:
        """Return a JSON-ready dict, with the miss probability of a pair at ``at_threshold``."""
        return {
            "num_perm": self.num_perm,
            "bands": self.bands,
            "rows": self.rows,
            "tuned_for_threshold": self.threshold,
            "weights_false_positive_false_negative": list(self.weights) if self.weights else None,
            "seed": self.seed,
            "scheme": self.scheme,
            "token_hash": self.token_hash,
            "datasketch_version": self.datasketch_version,
            "miss_probability_at_set_threshold": 1.0 - self.candidate_probability(at_threshold),
        }


def choose_lsh_parameters(
    num_perm: int,
    threshold: float,
    weights: tuple[float, float],
    params: tuple[int, int] | None = None,
    seed: int = 1,
) -> LSHParameters:
    """Return the bands/rows for a run.

    Args:
        num_perm: signature length.
        threshold: the Jaccard similarity to tune for; choose it below the verification
            threshold so that true duplicates are almost never missed.
        weights: ``(false_positive_weight, false_negative_weight)``; weighting false
            negatives more moves the S-curve left (more candidates, fewer misses).
        params: explicit ``(bands, rows)``, which skips the tuning.
        seed: permutation seed.

    The tuning minimises the weighted integral of false-positive and false-negative
    probability under the S-curve (datasketch's ``_optimal_param``).
    """
    if params is not None:
        return LSHParameters(num_perm, params[0], params[1], None, None, seed)
    from datasketch.lsh import _optimal_param

    bands, rows = _optimal_param(threshold, num_perm, weights[0], weights[1])
    return LSHParameters(num_perm, bands, rows, threshold, tuple(weights), seed)


@dataclass(frozen=True)
class MinHashSetup:
    """What the MinHash and LSH steps need from datasketch: the LSH parameters and the
    ``affine32`` permutations ``(a, b)`` (``num_perm`` uint32 values each)."""

    lsh: LSHParameters
    a: np.ndarray
    b: np.ndarray


def minhash_setup(
    num_perm: int, seed: int, threshold: float, weights: tuple[float, float], params: tuple[int, int] | None = None
) -> MinHashSetup:
    """Return the :class:`MinHashSetup` (arguments as :func:`choose_lsh_parameters`)."""
    a, b = permutations(num_perm, seed)
    return MinHashSetup(choose_lsh_parameters(num_perm, threshold, weights, params, seed), a, b)


def minhash_setup_in_background(
    num_perm: int, seed: int, threshold: float, weights: tuple[float, float], params: tuple[int, int] | None = None
) -> Future[MinHashSetup]:
    """Start :func:`minhash_setup` in a forked process and return its future.

    Importing datasketch (and scipy, for the bands/rows tuning) is about 0.3 s of one CPU,
    a tenth of a dedup run's serial part on 20k files; in a helper process it overlaps the
    data loading, and neither the main process nor the tokenizer workers (forked from it)
    import datasketch at all. Where ``fork`` is not available the future is computed here.
    """
    if "fork" in multiprocessing.get_all_start_methods():
        try:
            helper = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))
            future = helper.submit(minhash_setup, num_perm, seed, threshold, weights, params)
            helper.shutdown(wait=False)  # the process ends after its one task
            return future
        except OSError:  # no process to be had (limits): do it here
            pass
    done: Future[MinHashSetup] = Future()
    done.set_result(minhash_setup(num_perm, seed, threshold, weights, params))
    return done


class CachedTokenHash:
    """The 32-bit xxHash (XXH32, seed 0) of a token's UTF-8 bytes, computed once per
    distinct token: the input of the MinHash permutations.

    Tokens may be ``bytes`` (already UTF-8, as :mod:`workbench.dedup.tokens` gives them)
    or ``str`` (encoded with ``surrogatepass``, then cached, as the encode costs more than
    the hash); a token has the same hash either way. xxHash is about 5x faster than
    datasketch's default ``sha1_hash32`` here and as well distributed for this use.
    """

    def __init__(self) -> None:
        self._cache: dict[str | bytes, int] = {}

    def __call__(self, token: str | bytes) -> int:
        value = self._cache.get(token)
        if value is None:
            data = token if isinstance(token, bytes) else token.encode("utf-8", errors="surrogatepass")
            value = self._cache[token] = xxh32_intdigest(data)
        return value

    def many(self, tokens: Iterable[str | bytes]) -> list[int]:
        """Return the hashes of ``tokens`` (the hot path).

        ``bytes`` tokens are hashed directly (``map`` over the C function costs less than a
        cache lookup, and most tokens of a large corpus are seen once); ``str`` tokens go
        through the cache, since each needs an encode first.
        """
        tokens = tokens if isinstance(tokens, (list, tuple)) else list(tokens)
        try:
            return list(map(xxh32_intdigest, tokens))
        except TypeError:  # str tokens (xxhash refuses str)
            pass
        cache = self._cache
        try:
            return [cache[token] for token in tokens]
        except KeyError:
            for token in tokens:  # hash only the new tokens, then retry the fast path
                if token not in cache:
                    self(token)
            return [cache[token] for token in tokens]


#: token hashes per numpy batch (columns of the ``num_perm x tokens`` matrix): 8k columns
#: keep the matrix (4 MiB at 128 permutations) near the CPU caches; 32k ran 2-3x slower
BATCH_TOKENS = 8_192


@functools.lru_cache(maxsize=8)
def permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Return datasketch's own ``affine32`` permutation parameters ``(a, b)`` for
    ``num_perm``/``seed`` (two ``uint32`` arrays of ``num_perm`` values)."""
    from datasketch import MinHash

    a, b = MinHash(num_perm=num_perm, seed=seed, scheme=MINHASH_SCHEME).permutations
    return a, b


def fmix32(values: np.ndarray) -> np.ndarray:
    """Return MurmurHash3's 32-bit finalizer ``fmix32`` (Appleby, MurmurHash3) of each value:
    the avalanching bijection datasketch's ``affine32`` scheme applies to token hashes
    before the permutations."""
    values = np.asarray(values, dtype=np.uint32)
    values = values ^ (values >> np.uint32(16))
    values = values * np.uint32(0x85EBCA6B)  # wraps: mod 2**32
    values = values ^ (values >> np.uint32(13))
    values = values * np.uint32(0xC2B2AE35)
    return values ^ (values >> np.uint32(16))


def minhash_matrix(
    hashes: np.ndarray, starts: np.ndarray, num_perm: int, seed: int,
    perms: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Return the MinHash signatures of many token sets at once.

    Args:
        hashes: the 32-bit token hashes (``uint32``) of all sets, one set after another.
        starts: where each set begins in ``hashes`` (ascending; every set non-empty).
        num_perm, seed: the permutations (datasketch's ``affine32`` scheme).
        perms: ``permutations(num_perm, seed)`` when already known (the tokenizer workers
            get them from the main process and never import datasketch).

    Returns:
        a ``(len(starts), num_perm)`` ``uint32`` array: row ``i`` equals
        ``MinHash(num_perm=num_perm, seed=seed, scheme="affine32")`` updated with set
        ``i``'s hashes (the MurmurHash3 pre-mix, then ``a * h + b`` mod 2**32, then the minimum).
        The hashes are permuted as a ``num_perm x tokens`` matrix, batch by batch at set
        boundaries, and reduced per set with ``np.minimum.reduceat``.
    """
    a, b = perms if perms is not None else permutations(num_perm, seed)
    a, b = np.asarray(a, dtype=np.uint32)[:, None], np.asarray(b, dtype=np.uint32)[:, None]
    values = fmix32(hashes)
    starts = np.asarray(starts, dtype=np.int64)
    out = np.empty((len(starts), num_perm), dtype=np.uint32)
    bounds = np.append(starts, len(values))
    # one work matrix for all batches: a fresh multi-MiB array per batch costs page faults
    work = np.empty((num_perm, min(len(values), BATCH_TOKENS)), dtype=np.uint32)
    first = 0
    while first < len(starts):
        # the sets from ``first`` whose tokens fit one batch (at least one set)
        last = max(first + 1, int(np.searchsorted(bounds, bounds[first] + BATCH_TOKENS, side="right")) - 1)
        last = min(last, len(starts))
        lo, hi = bounds[first], bounds[last]
        if hi - lo > work.shape[1]:  # one set longer than a batch
            work = np.empty((num_perm, hi - lo), dtype=np.uint32)
        permuted = work[:, : hi - lo]
        np.multiply(a, values[None, lo:hi], out=permuted)  # uint32 wraps: the scheme's mod 2**32
        permuted += b
        out[first:last] = np.minimum.reduceat(permuted, starts[first:last] - lo, axis=1).T
        first = last
    return out


def signature_values(
    token_sets: Iterable[Iterable[str | bytes]], num_perm: int, seed: int, hashfunc: CachedTokenHash | None = None
) -> Iterator[np.ndarray]:
    """Yield the MinHash signature (``num_perm`` uint32 values) of each non-empty token set.

    The values are exactly those of ``MinHash.bulk(sets, num_perm=num_perm, seed=seed,
    scheme="affine32", hashfunc=hashfunc)`` -- the same permutations (taken from a
    datasketch ``MinHash``), the same MurmurHash3 pre-mix and affine permutation -- but
    many sets share one numpy pass (:func:`minhash_matrix`).

    Raises:
        ValueError: an empty token set (MinHash of nothing is undefined here).
    """
    hashfunc = hashfunc or CachedTokenHash()
    hashes: list[int] = []
    starts: list[int] = []
    for tokens in token_sets:
        start = len(hashes)
        hashes.extend(hashfunc.many(tokens))
        if len(hashes) == start:
            raise ValueError("cannot MinHash an empty token set")
        starts.append(start)
        if len(hashes) >= BATCH_TOKENS:
            yield from minhash_matrix(np.array(hashes, dtype=np.uint32), np.array(starts), num_perm, seed)
            hashes, starts = [], []
    if starts:
        yield from minhash_matrix(np.array(hashes, dtype=np.uint32), np.array(starts), num_perm, seed)


def lean_minhash(values: np.ndarray | bytes, seed: int) -> LeanMinHash:
    """Wrap signature values (an array or its ``tobytes()``) as a datasketch ``LeanMinHash``."""
    from datasketch import LeanMinHash

    if isinstance(values, bytes):
        values = np.frombuffer(values, dtype=np.uint32)
    return LeanMinHash(seed=seed, hashvalues=values, scheme=MINHASH_SCHEME)


def minhash_signatures(
    token_sets: Iterable[Iterable[str]], parameters: LSHParameters, hashfunc: CachedTokenHash | None = None
) -> Iterator[LeanMinHash]:
    """Yield one datasketch ``LeanMinHash`` per (non-empty) token set (see :func:`signature_values`)."""
    for values in signature_values(token_sets, parameters.num_perm, parameters.seed, hashfunc):
        yield lean_minhash(values, parameters.seed)


def build_lsh_index(
    keys: Sequence[int], signatures: Iterable[MinHash | LeanMinHash], parameters: LSHParameters, on_progress: Callable[[int], None] | None = None
) -> MinHashLSH:
    """Insert every signature under its key into a ``MinHashLSH`` with the chosen bands/rows."""
    from datasketch import MinHashLSH

    lsh = MinHashLSH(num_perm=parameters.num_perm, params=(parameters.bands, parameters.rows))
    with lsh.insertion_session(buffer_size=50_000) as session:
        for key, signature in zip(keys, signatures):
            session.insert(key, signature, check_duplication=False)
            if on_progress:
                on_progress(1)
    return lsh


def candidate_buckets(lsh: MinHashLSH) -> Iterator[list[int]]:
    """Yield, band by band, every bucket holding two or more keys (sorted): each pair in
    a bucket is a candidate pair."""
    for table in lsh.hashtables:
        for bucket_key in table.keys():
            members = table.get(bucket_key)
            if len(members) > 1:
                yield sorted(members)


#: odd 64-bit multiplier (2**64 / golden ratio) folding a band's values into one sort key
_BAND_MIX = np.uint64(0x9E3779B97F4A7C15)


def _band_groups(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order the rows of one band so that equal rows are adjacent.

    Returns ``(order, starts)``: ``order`` lists row positions, equal rows contiguous and
    each run in ascending position; ``starts`` are the indices of ``order`` where a run
    begins. Rows are sorted by one 64-bit key folded from their values (one ``argsort``
    instead of ``np.unique(axis=0)``'s sort of whole rows, ~4x faster); runs are then cut
    wherever the rows themselves differ, and if two different rows ever share a key (they
    could interleave) the band is sorted by its values instead, so grouping stays exact.
    """
    key = block[:, 0].astype(np.uint64)
    for column in block.T[1:]:
        key = key * _BAND_MIX ^ column  # wraps mod 2**64
    order = np.argsort(key, kind="stable")
    ordered = block[order]
    differs = np.any(ordered[1:] != ordered[:-1], axis=1)
    sorted_key = key[order]
    if np.any(differs & (sorted_key[1:] == sorted_key[:-1])):
        order = np.lexsort(block.T[::-1])  # last key is the primary one
        ordered = block[order]
        differs = np.any(ordered[1:] != ordered[:-1], axis=1)
    return order, np.concatenate(([0], np.flatnonzero(differs) + 1))


def band_buckets(
    keys: Sequence[int], signatures: np.ndarray, parameters: LSHParameters,
    on_progress: Callable[[int], None] | None = None,
) -> list[list[int]]:
    """The buckets of :func:`banded_buckets`, without the number of buckets per band."""
    return banded_buckets(keys, signatures, parameters, on_progress)[0]


def banded_buckets(
    keys: Sequence[int], signatures: np.ndarray, parameters: LSHParameters,
    on_progress: Callable[[int], None] | None = None,
) -> tuple[list[list[int]], list[int]]:
    """Return the LSH buckets holding two or more keys: the buckets of
    ``candidate_buckets(build_lsh_index(keys, signatures, parameters))``, in the same order
    (band by band; within a band in the order the buckets were first filled; members sorted).

    Band ``i`` is rows ``i*r .. (i+1)*r - 1`` of the signature, as in ``MinHashLSH``; two
    keys share a bucket when these values are all equal (Mining of Massive Datasets,
    Sec. 3.4.1). Each band is grouped with one numpy sort (:func:`_band_groups`) and its
    buckets cut from one list, instead of a Python dict insert per key and band.

    Args:
        keys: one key per signature row, ascending.
        signatures: ``(len(keys), num_perm)`` uint32 MinHash values.
        parameters: the bands and rows.
        on_progress: called with 1 after each band.

    Returns:
        ``(buckets, band_sizes)``: the buckets (lists of keys), and how many of them each band
        has (``band_sizes[i]`` buckets of band ``i`` follow those of band ``i - 1``).

    Raises:
        ValueError: keys that are not strictly ascending.
    """
    keys_array = np.asarray(keys)
    if np.any(keys_array[1:] <= keys_array[:-1]):
        raise ValueError("band_buckets needs ascending keys")
    n_keys, rows = len(keys_array), parameters.rows
    buckets: list[list[int]] = []
    band_sizes: list[int] = []
    for band in range(parameters.bands):
        before = len(buckets)
        if n_keys > 1:
            order, starts = _band_groups(signatures[:, band * rows : (band + 1) * rows])
            lengths = np.diff(np.append(starts, n_keys))
            shared = lengths > 1
            starts, lengths = starts[shared], lengths[shared]
            by_first = np.argsort(order[starts], kind="stable")  # a bucket is first filled by its first member
            starts, lengths = starts[by_first], lengths[by_first]
            offsets = np.cumsum(lengths) - lengths
            positions = np.repeat(starts - offsets, lengths) + np.arange(int(lengths.sum()))
            # keys ascend, and each run ascends in position: the members come out sorted
            members = keys_array[order[positions]].tolist()
            buckets += [members[offset : offset + length] for offset, length in zip(offsets.tolist(), lengths.tolist())]
        band_sizes.append(len(buckets) - before)
        if on_progress:
            on_progress(1)
    return buckets, band_sizes
