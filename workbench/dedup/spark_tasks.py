"""What the Spark executors run for ``--engine spark`` (:mod:`workbench.dedup.spark`): the local
engine's tokenizer, signatures, exact-multiset test and pair verification over row records.

A module of its own that imports only :mod:`workbench.dedup.tokens`,
:mod:`workbench.dedup.clusters` and :mod:`workbench.dedup.verification`: each executor's
Python imports it once, and the driver's
modules (the data loader with ``datasets``: 1-5 s of imports) stay out of the executors. The
functions given to Spark are these module functions (pickled by reference) or
``functools.partial`` of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
from xxhash import xxh3_64_intdigest

from workbench.dedup.clusters import identical_multisets
from workbench.dedup.tokens import CHUNK_SIZE, FileTokens, SignatureSpec, _pack_chunk
from workbench.dedup.verification import verify_pair

#: members of an LSH bucket per block of pair generation: a bucket of k members becomes
#: ceil(k / PAIR_BLOCK)^2 / 2 blocks of at most PAIR_BLOCK^2 pairs, spread over the tasks
PAIR_BLOCK = 512

#: a row on the executors: plain values and byte buffers, which (un)pickle at memcpy speed
#: (index, partition, n_tokens, has_error, failure, signature or None, token ids uint64, counts uint32)
INDEX, PARTITION, N_TOKENS, HAS_ERROR, FAILURE, SIGNATURE, IDS, COUNTS = range(8)


def tokenize_partition(spec: SignatureSpec, counter: Any, items: Iterable[tuple]) -> Iterator[tuple]:
    """Executors: ``(index, code, language, partition)`` rows -> row records (see :data:`INDEX`),
    tokenized and signed chunk by chunk with the local engine's :func:`_pack_chunk`."""
    chunk: list[tuple] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == CHUNK_SIZE:
            yield from _tokenized(chunk, spec, counter)
            chunk = []
    if chunk:
        yield from _tokenized(chunk, spec, counter)


def _tokenized(chunk: list[tuple], spec: SignatureSpec, counter: Any) -> Iterator[tuple]:
    packed = _pack_chunk([(code, language) for _, code, language, _ in chunk], spec)
    counter.add(len(chunk))
    signed = {position: k for k, position in enumerate(packed.signed)}
    width = len(packed.signatures) // len(packed.signed) if packed.signed else 0
    start = 0
    for position, ((index, _, _, partition), end, (n_tokens, has_error, failure)) in enumerate(
            zip(chunk, packed.ends, packed.files)):
        k = signed.get(position)
        signature = packed.signatures[k * width : (k + 1) * width] if k is not None else None
        if failure is not None:  # a failed file has no tokens (and ``ends`` did not move)
            yield index, partition, 0, False, failure, None, b"", b""
            continue
        yield (index, partition, n_tokens, has_error, None, signature,
               packed.token_ids[start * 8 : end * 8], packed.token_counts[start * 4 : end * 4])
        start = end


def file_tokens(record: tuple) -> FileTokens:
    """The :class:`FileTokens` of a row record (the bag as a dict, as the local engine has it)."""
    return FileTokens(_bag(record[IDS], record[COUNTS]), record[N_TOKENS], record[HAS_ERROR], record[FAILURE],
                      record[SIGNATURE])


def _bag(ids: bytes, counts: bytes) -> dict[int, int]:
    return dict(zip(np.frombuffer(ids, dtype=np.uint64).tolist(), np.frombuffer(counts, dtype=np.uint32).tolist()))


def _exact_key(record: tuple) -> tuple:
    """What identical multisets share: partition, signature, token count, distinct-token count."""
    return record[PARTITION], record[SIGNATURE], record[N_TOKENS], len(record[IDS]) // 8


def _exact_key_hash(record: tuple) -> int:
    partition, signature, n_tokens, distinct = _exact_key(record)
    return xxh3_64_intdigest(signature + f"|{partition}|{n_tokens}|{distinct}".encode())


def exact_classes(group: tuple) -> Iterator[list[int]]:
    """Executors: the records of one exact key -> its classes of identical multisets with two or more rows."""
    records = sorted(group[1])
    if len(records) < 2:
        return
    bags = [file_tokens(record).counts for record in records]
    for same in identical_multisets(range(len(records)), bags):
        if len(same) > 1:
            yield [records[position][INDEX] for position in same]


def band_keys(bands: int, rows: int, record: tuple) -> Iterator[tuple]:
    """Executors: a representative -> ``((band, band values), index)`` for each band (values as bytes)."""
    width = rows * 4  # uint32 values
    signature, index = record[SIGNATURE], record[INDEX]
    for band in range(bands):
        yield (band, signature[band * width : (band + 1) * width]), index


def bucket_of(group: tuple) -> tuple[int, list[int]] | None:
    members = sorted(group[1])
    return (group[0][0], members) if len(members) > 1 else None


def row_facts(record: tuple) -> tuple:
    """What the driver keeps of every row: ``(index, n_tokens, has_error, failure, distinct tokens)``."""
    return record[INDEX], record[N_TOKENS], record[HAS_ERROR], record[FAILURE], len(record[IDS]) // 8


def is_analysed(min_tokens: int, record: tuple) -> bool:
    """The row was tokenized and has at least ``min_tokens`` tokens (it takes part in the search)."""
    return record[FAILURE] is None and record[N_TOKENS] >= min_tokens


def count_pair(record: tuple) -> tuple[int, int]:
    return _exact_key_hash(record), 1


def add(a: int, b: int) -> int:
    return a + b


def shared_count(item: tuple[int, int]) -> bool:
    return item[1] > 1


def has_shared_key(shared: Any, record: tuple) -> bool:
    """The row's exact key hash is one of ``shared`` (a broadcast set)."""
    return _exact_key_hash(record) in shared.value


def keyed_by_exact_key(record: tuple) -> tuple:
    return _exact_key(record), record


def is_representative(copies: Any, record: tuple) -> bool:
    """Not a later copy of an exact group (``copies`` a broadcast bool array by row index)."""
    return not copies.value[record[INDEX]]


def is_wanted(wanted: Any, record: tuple) -> bool:
    return bool(wanted.value[record[INDEX]])


def is_bucket(bucket: Any) -> bool:
    return bucket is not None


# ---------------------------------------------------------------- candidate pairs and their verification


def member_band_keys(bands: int, rows: int, record: tuple) -> Iterator[tuple]:
    """Executors: a representative -> ``((band, band values), member)`` for each band, where a
    member is ``(index, partition, distinct tokens, signature)``: what pair generation needs."""
    width = rows * 4  # uint32 values
    signature = record[SIGNATURE]
    member = (record[INDEX], record[PARTITION], len(record[IDS]) // 8, signature)
    for band in range(bands):
        yield (band, signature[band * width : (band + 1) * width]), member


def bucket_members(group: tuple) -> tuple[int, list[tuple]] | None:
    """Executors: one LSH bucket -> ``(band, members sorted by index)``, or None for a single member."""
    members = sorted(group[1])
    return (group[0][0], members) if len(members) > 1 else None


def bucket_indices(bucket: tuple[int, list[tuple]]) -> tuple[int, list[int]]:
    """``(band, members)`` -> ``(band, member indices)``: what the driver keeps of a bucket."""
    return bucket[0], [member[0] for member in bucket[1]]


def bucket_blocks(bucket: tuple[int, list[tuple]]) -> Iterator[tuple]:
    """Executors: a bucket -> its blocks of pair generation ``(band, left members, right members,
    diagonal)``: every pair of the bucket is in exactly one block, and a huge boilerplate bucket
    becomes many blocks of at most :data:`PAIR_BLOCK` x :data:`PAIR_BLOCK` pairs (not one task)."""
    band, members = bucket
    chunks = [members[start : start + PAIR_BLOCK] for start in range(0, len(members), PAIR_BLOCK)]
    for i, left in enumerate(chunks):
        for right in chunks[i:]:
            yield band, left, right, right is left


def block_pairs(bands: int, rows: int, set_threshold: Any, reference: int | None,
                numbered: tuple[tuple, int]) -> Iterator[tuple[int, tuple[np.ndarray, np.ndarray]]]:
    """Executors: ``(block, block id)`` -> ``(block id, (a, b))``, two int64 arrays of the block's
    candidate pairs (``a < b``) that the verification must see (nothing when there are none):

    * each pair once, in the first band where the two share a bucket (their signatures are
      compared band by band, exactly: no hash of a band stands in for it);
    * not two reference rows (never compared, as in :class:`~workbench.dedup.detection._BucketVerifier`);
    * not ruled out by the size filter of :func:`~workbench.dedup.verification.verify_pair`
      (``min(|A|, |B|) < t0 max(|A|, |B|)`` over distinct tokens, in integers).
    """
    (band, left, right, diagonal), block_id = numbered
    shape, banded = (-1, bands, rows), bands * rows  # a signature may hold more values than the bands use
    right_index = np.array([m[0] for m in right], dtype=np.int64)
    right_partition = np.array([m[1] for m in right], dtype=np.int64)
    right_distinct = np.array([m[2] for m in right], dtype=np.int64)
    right_bands = np.frombuffer(b"".join(m[3] for m in right), dtype=np.uint32).reshape(len(right), -1)
    right_bands = right_bands[:, :banded].reshape(shape)[:, :band]
    numerator, denominator = set_threshold.numerator, set_threshold.denominator
    firsts, seconds = [], []
    for position, (index, partition, distinct, signature) in enumerate(left):
        start = position + 1 if diagonal else 0
        keep = np.ones(len(right) - start, dtype=bool)
        if band:
            earlier = np.frombuffer(signature, dtype=np.uint32)[:banded].reshape(shape)[0, :band]
            keep &= ~(right_bands[start:] == earlier).all(axis=2).any(axis=1)
        others = right_distinct[start:]
        keep &= np.minimum(others, distinct) * denominator >= numerator * np.maximum(others, distinct)
        if reference is not None and partition == reference:
            keep &= right_partition[start:] != reference
        partners = right_index[start:][keep]
        if len(partners):
            firsts.append(np.full(len(partners), index, dtype=np.int64))
            seconds.append(partners)
    if firsts:
        yield block_id, (np.concatenate(firsts), np.concatenate(seconds))


def pair_count(block: tuple) -> int:
    return len(block[1][0])


def block_members(block: tuple) -> Iterator[tuple[int, int]]:
    """Executors: ``(block id, (a, b))`` -> ``(row, block id)`` for each row of its pairs (to join its bag)."""
    block_id, (firsts, seconds) = block
    for row in np.union1d(firsts, seconds).tolist():
        yield row, block_id


def keyed_bag(record: tuple) -> tuple[int, tuple]:
    """A row record -> ``(index, (token ids, counts, n_tokens, partition))``, the part a join carries."""
    return record[INDEX], (record[IDS], record[COUNTS], record[N_TOKENS], record[PARTITION])


def bag_to_block(joined: tuple) -> tuple[int, tuple]:
    """``(row, (block id, bag))`` -> ``(block id, (row, bag))``."""
    row, (block_id, bag) = joined
    return block_id, (row, bag)


def verified_edges(set_threshold: Any, multiset_threshold: Any, counter: Any, group: tuple) -> Iterator[tuple]:
    """Executors: ``(block id, ([(a, b) arrays], [(row, bag) of each row]))`` -> ``(a, b, set Jaccard,
    multiset Jaccard, same partition)`` for each pair that :func:`~workbench.dedup.verification.verify_pair`
    (the local engine's test, exact thresholds) finds a duplicate; ``counter`` counts the pairs verified."""
    _, (pairs, bags) = group
    held = {row: (_bag(ids, counts), n_tokens, partition) for row, (ids, counts, n_tokens, partition) in bags}
    for firsts, seconds in pairs:  # one
        for a, b in zip(firsts.tolist(), seconds.tolist()):
            (bag_a, size_a, partition_a), (bag_b, size_b, partition_b) = held[a], held[b]
            score = verify_pair(bag_a, bag_b, size_a, size_b, set_threshold, multiset_threshold)
            if score is not None and score.is_duplicate:
                yield a, b, score.set_jaccard, score.multiset_jaccard, partition_a == partition_b
        counter.add(len(firsts))


# ---------------------------------------------------------------- clusters on the executors


def is_same_partition(edge: tuple) -> bool:
    return edge[4]


def is_cross_partition(edge: tuple) -> bool:
    return not edge[4]


def edge_ends(edge: tuple) -> tuple[int, int]:
    return edge[0], edge[1]


def edge_by_component(roots: Any, edge: tuple) -> tuple[int, tuple]:
    """A duplicate pair -> ``(its component's root, pair)`` (``roots`` a broadcast array by row)."""
    return int(roots.value[edge[0]]), edge


def component_buckets(roots: Any, bucket: tuple[int, list[tuple]]) -> Iterator[tuple]:
    """Executors: a bucket -> ``(root, (band, first member, members of that component))`` for each
    component with two or more members in it (``roots`` a broadcast array: row -> its component's
    root; a row without duplicates is its own). ``(band, first member)`` is the bucket's place in
    the order the walk takes the buckets."""
    band, members = bucket
    indices = [member[0] for member in members]
    parts: dict[int, list[int]] = {}
    for index in indices:
        parts.setdefault(int(roots.value[index]), []).append(index)
    for root, part in parts.items():
        if len(part) > 1:
            yield root, (band, indices[0], part)
