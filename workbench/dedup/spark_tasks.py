"""What the Spark executors run for ``--engine spark`` (:mod:`workbench.dedup.spark`): the local
engine's tokenizer, signatures, exact-multiset test and bucket walk over row records.

A row's tokens travel as the bytes :func:`_pack_chunk` made (distinct ids ascending, counts
aligned); where the local engine's code needs bags, the rows at hand become a
:class:`~workbench.dedup.tokens.TokenBags` (:meth:`TokenBags.from_buffers`), so the exact
pre-pass (:func:`~workbench.dedup.clusters.exact_bag_groups`) and the verification
(:func:`~workbench.dedup.verification.verify_sorted_pair`) are the local engine's, on the same
layout.

A module of its own that imports only :mod:`workbench.dedup.tokens` and
:mod:`workbench.dedup.clusters`: each executor's Python imports it once, and the driver's
modules (the data loader with ``datasets``: 1-5 s of imports) stay out of the executors until
the verification (:func:`walk_component`) needs the local engine's walk. The functions given to
Spark are these module functions (pickled by reference) or ``functools.partial`` of them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import numpy as np
from xxhash import xxh3_64_intdigest

from workbench.data.language_column import language_value
from workbench.data.text_encoding import DEFAULT_SOURCE_ENCODING
from workbench.dedup.clusters import UnionFind, exact_bag_groups
from workbench.dedup.tokens import CHUNK_SIZE, FileTokens, SignatureSpec, TokenBags, _pack_chunk

#: a row on the executors: plain values and byte buffers, which (un)pickle at memcpy speed
#: (index, partition, n_tokens, has_error, failure, signature or None, token ids uint64, counts uint32)
INDEX, PARTITION, N_TOKENS, HAS_ERROR, FAILURE, SIGNATURE, IDS, COUNTS = range(8)


def tokenize_partition(spec: SignatureSpec, counter: Any, items: Iterable[tuple],
                       fallback: str = DEFAULT_SOURCE_ENCODING) -> Iterator[tuple]:
    """Executors: ``(index, code, language, partition)`` rows -> row records (see :data:`INDEX`),
    tokenized and signed chunk by chunk with the local engine's :func:`_pack_chunk` (``fallback``:
    the encoding of bytes cells that are not UTF-8, ``--source-encoding``)."""
    chunk: list[tuple] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == CHUNK_SIZE:
            yield from _tokenized(chunk, spec, counter, fallback)
            chunk = []
    if chunk:
        yield from _tokenized(chunk, spec, counter, fallback)


def _tokenized(chunk: list[tuple], spec: SignatureSpec, counter: Any,
               fallback: str = DEFAULT_SOURCE_ENCODING) -> Iterator[tuple]:
    packed = _pack_chunk([(code, language) for _, code, language, _ in chunk], spec, fallback)
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
    """Executors: the records of one exact key -> its classes of identical multisets with two or
    more rows (the local engine's :func:`~workbench.dedup.clusters.exact_bag_groups` on their bags)."""
    records = sorted(group[1])
    if len(records) < 2:
        return
    bags = TokenBags.from_buffers([r[IDS] for r in records], [r[COUNTS] for r in records], [r[N_TOKENS] for r in records])
    for same in exact_bag_groups(bags, [r[PARTITION] for r in records], [True] * len(records)).values():
        if len(same) > 1:
            yield [records[position][INDEX] for position in same]


def band_keys(bands: int, rows: int, record: tuple) -> Iterator[tuple]:
    """Executors: a representative -> ``((band, band values), index)`` for each band (values as bytes)."""
    width = rows * 4  # uint32 values
    signature, index = record[SIGNATURE], record[INDEX]
    for band in range(bands):
        yield (band, signature[band * width : (band + 1) * width]), index


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


# ---------------------------------------------------------------- verification on the executors


def bucket_indices(group: tuple) -> tuple[int, list[int]] | None:
    """Executors: one LSH bucket ``((band, values), rows)`` -> ``(band, rows ascending)``, or None for one row."""
    members = sorted(group[1])
    return (group[0][0], members) if len(members) > 1 else None


def star_size(bucket: tuple[int, list[int]]) -> int:
    """The star edges of a bucket: its rows but the first."""
    return len(bucket[1]) - 1


def bucket_star(bucket: tuple[int, list[int]]) -> Iterator[tuple[int, int]]:
    """A bucket -> edges from its first row to each other row (its rows in one candidate component)."""
    first = bucket[1][0]
    for other in bucket[1][1:]:
        yield first, other


def bucket_by_component(roots: Any, bucket: tuple[int, list[int]]) -> tuple[int, tuple]:
    """A bucket -> ``(root of its candidate component, (band, rows))`` (``roots`` a broadcast array by row)."""
    return int(roots.value[bucket[1][0]]), bucket


def bag_by_component(roots: Any, record: tuple) -> tuple[int, tuple]:
    """A row record -> ``(root of its candidate component, (index, token ids, counts, n_tokens, partition))``."""
    return int(roots.value[record[INDEX]]), (record[INDEX], record[IDS], record[COUNTS], record[N_TOKENS],
                                             record[PARTITION])


def walk_component(config: Any, reference: int | None, counter: Any, group: tuple) -> Iterator[tuple]:
    """Executors: one candidate component (rows joined by shared buckets) -> what the local engine's
    walk over its buckets finds, with the local engine's own code
    (:class:`~workbench.dedup.detection._BucketVerifier` on the component's
    :class:`~workbench.dedup.tokens.TokenBags`: :func:`~workbench.dedup.verification.verify_sorted_pair`
    on each pair it meets, pairs already in one cluster skipped, a pair whose rows shared a bucket
    of an earlier band not compared again).

    A bucket lies inside one candidate component, and the walk's decisions in a bucket depend only
    on the clusters of its rows, so the walk over one component's buckets (in the buckets' order:
    band, then first row) makes the same comparisons as the walk over all buckets.

    Args:
        group: ``(root, (buckets (band, rows), bags (index, ids, counts, n_tokens, partition)))``.

    Yields:
        ``("pair", (band, first row, position), a, b, set Jaccard, multiset Jaccard)`` for each
        duplicate pair the walk takes (``(band, first row, position)`` orders them as the whole
        walk would), then one ``("work", counters)`` with the component's counters.
    """
    from workbench.dedup.detection import REFERENCE, _BucketVerifier  # the driver's module, imported once per worker

    _, (buckets, bags) = group
    held = sorted(bags)
    rows = [bag[0] for bag in held]
    local = {row: position for position, row in enumerate(rows)}
    tokens = TokenBags.from_buffers([bag[1] for bag in held], [bag[2] for bag in held], [bag[3] for bag in held])
    partitions = [REFERENCE if partition == reference else partition for *_, partition in held]
    counters = {"bucket_pairs": 0, "size_filtered": 0, "verified": 0, "rejected": 0}
    verifier = _BucketVerifier(tokens, partitions, UnionFind(len(rows)), config, counters,
                               bands=1 + max(band for band, _ in buckets))
    largest = 0
    for band, members in sorted(buckets, key=lambda bucket: (bucket[0], bucket[1][0])):
        largest = max(largest, len(members))
        for position, pair in enumerate(verifier.process([local[row] for row in members], band)):
            yield "pair", (band, members[0], position), rows[pair.a], rows[pair.b], pair.set_jaccard, pair.multiset_jaccard
        counter.add(1)
    yield "work", {**counters, "enumerated": verifier.enumerated, "largest_bucket": largest}


# ---------------------------------------------------------------- reading the input (spark_source)


class BlockFacts(NamedTuple):
    """What the driver keeps of the rows of one split in one file block, in file order: ``key``
    ``(split, file, block start)``, ``first`` (the block position of its first row, among all
    the block's rows), and the rows' ids, languages and groups."""

    key: tuple
    first: int
    ids: list
    languages: list
    groups: list


def _positions(rows: Iterable[Any]) -> Iterator[tuple[tuple, int, int, Any]]:
    """Executors: ``(split, file, block, ...)`` rows of one partition -> ``(key, position in the
    key's rows, position among the block's rows, row)``. Spark reads a file block whole, in file
    order, inside one partition, so these running counts are the rows' places in the file."""
    in_key: dict[tuple, int] = {}
    in_block: dict[tuple, int] = {}
    for row in rows:
        key = (row[0], row[1], row[2])
        position = in_key.get(key, 0)
        in_key[key] = position + 1
        block = (row[1], row[2])
        at = in_block.get(block, 0)
        in_block[block] = at + 1
        yield key, position, at, row


def block_positions(rows: Iterable[Any]) -> Iterator[tuple]:
    """Executors: ``(split, file, block, code, id, language, group)`` rows ->
    ``(key, position, block position, code, id, language, group)``."""
    for key, position, at, row in _positions(rows):
        yield key, position, at, row[3], row[4], row[5], row[6]


def block_facts(keyed: Iterable[tuple]) -> Iterator[BlockFacts]:
    """Executors: one partition's positioned rows -> one :class:`BlockFacts` per (split, file, block)."""
    found: dict[tuple, BlockFacts] = {}
    for key, _, at, _, row_id, language, group in keyed:
        facts = found.get(key)
        if facts is None:
            facts = found[key] = BlockFacts(key, at, [], [], [])
        facts.ids.append(row_id)
        facts.languages.append(language)
        facts.groups.append(group)
    yield from found.values()


def key_in(keys: set, keyed: tuple) -> bool:
    """A positioned row (:func:`block_positions`) of one of ``keys`` ``(split, file, block start)``."""
    return keyed[0] in keys


def block_place(places: dict, keyed: tuple) -> tuple[int, int, int]:
    """A positioned row -> ``(its file's place, block start, position among the block's rows)``
    (``places``: file -> its place in the order read), which orders rows as the files are read."""
    key = keyed[0]
    return places[key[1]], key[2], keyed[2]


def has_offset(offsets: Any, keyed: tuple) -> bool:
    """The row's split is read (``offsets`` a broadcast dict (split, file, block) -> first index)."""
    return keyed[0] in offsets.value


def indexed_item(offsets: Any, language: str, keyed: tuple) -> tuple:
    """A positioned row -> ``(index, code, language, group)`` for :func:`tokenize_partition`."""
    key, position, _, code, _, row_language, group = keyed
    return offsets.value[key] + position, code, language_value(row_language) or language, group


def coded_item(codes: Any, item: tuple) -> tuple:
    """``(index, code, language, group)`` -> ``(index, code, language, partition)`` (``codes`` a
    broadcast dict group value -> small int)."""
    return item[0], item[1], item[2], codes.value[item[3]]


def item_wanted(wanted: Any, item: tuple) -> bool:
    return bool(wanted.value[item[0]])


def item_code(item: tuple) -> tuple:
    return item[0], item[1]


def indexed_rows(offsets: Any, rows: Iterable[Any]) -> Iterator[tuple]:
    """Executors: whole rows ``(columns..., split, file, block)`` -> ``(columns..., split, index)``,
    the index counted as :func:`block_positions` counts it; rows of splits not read are dropped."""
    table = offsets.value
    in_key: dict[tuple, int] = {}
    for row in rows:
        key = (row[-3], row[-2], row[-1])
        position = in_key.get(key, 0)
        in_key[key] = position + 1
        start = table.get(key)
        if start is not None:
            yield (*row[:-2], start + position)


def json_line_problem(where: str, code_columns: dict[str, str], numbered: tuple[str, int]) -> tuple | None:
    """Executors: ``(line, index)`` of a JSON Lines file -> ``(index, what is wrong, opens a JSON
    document)``, or None: the
    local loader's check of a line (:func:`workbench.data.json_lines.parse_line`; a ``null`` line is
    a row of nulls, as ``datasets`` reads it), then each code column's cell: text or null.

    Args:
        where: the file, for the message (``line 4 of <where>``); code_columns: option -> column
            (``--code-column`` -> ``content``).
    """
    from workbench.data.json_lines import parse_line

    line, index = numbered
    place = f"line {index + 1} of {where}"
    row, problem = parse_line(line, place, null=True)
    if problem is None and row is not None:
        for option, column in code_columns.items():
            cell = row.get(column)
            if cell is not None and not isinstance(cell, str):
                problem = (f"{option} {column!r} holds a cell that is not text at {place}: {str(cell)[:60]!r} "
                           f"({type(cell).__name__}); each row's code must be a string (a number, list or object "
                           f"in some row makes the whole column non-text); fix those rows or name the column that "
                           f"holds the code")
                break
    # a first line that opens a JSON document (a .json list of objects) rather than a faulty line
    return None if problem is None else (index, problem, index == 0 and line.lstrip().startswith("["))


def found(value: Any) -> bool:
    """Executors: whether ``value`` is not ``None`` (an RDD filter named in this module, so the
    executors import it rather than unpickle a closure)."""
    return value is not None


def line_kinds_at(column: str, numbered: tuple[str, int]) -> tuple[int, list[str]]:
    """Executors: ``(line, index)`` of a JSON Lines file -> ``(index, the kinds of value the line
    holds in column)`` (:func:`workbench.data.json_lines.line_kinds`)."""
    from workbench.data.json_lines import line_kinds

    line, index = numbered
    return index, line_kinds(line, column)


def has_kinds(item: tuple[int, list[str]]) -> bool:
    """Executors: whether a :func:`line_kinds_at` item holds a value (not only nulls)."""
    return bool(item[1])


def holds_other_kind(first: str, item: tuple[int, list[str]]) -> bool:
    """Executors: whether a :func:`line_kinds_at` item holds a kind of value other than ``first``."""
    return any(kind != first for kind in item[1])


def line_index(item: tuple[int, Any]) -> int:
    """Executors: the line index of a :func:`line_kinds_at` item (a ``takeOrdered`` key)."""
    return item[0]


def item_encoding(item: tuple, fallback: str = DEFAULT_SOURCE_ENCODING) -> tuple[int, str | None]:
    """Executors: an ``(index, code, language, group)`` item -> ``(index, how its bytes were read when
    not as UTF-8, or None)`` (:func:`workbench.dedup.tokens.code_encoding`; ``fallback``: ``--source-encoding``)."""
    from workbench.dedup.tokens import code_encoding

    return item[0], code_encoding(item[1], fallback)


def has_encoding(pair: tuple[int, str | None]) -> bool:
    """Executors: whether an :func:`item_encoding` pair names an encoding."""
    return pair[1] is not None


def float_split_name(value: float | None) -> str | None:
    """Executors: a float ``--split-column`` cell as the local loader names its split, Python's ``str(value)``
    (``1.0``, ``inf``, ``-inf``, ``1e+20``, ``1.5e-05``, ``12345678.0``; a float32 cell widened to a double
    first, as pyarrow gives it: ``0.10000000149011612``), where Spark's cast to text writes Java's
    ``Double.toString`` (``Infinity``, ``1.0E20``, ``1.2345678E7``, ``0.1``). A null or NaN cell has no name
    (``None``: refused as a missing value, as locally)."""
    return None if value is None or value != value else str(float(value))
