"""The dedup pipeline: tokens -> exact pre-pass -> MinHash/LSH candidates -> exact
verification -> union-find clusters -> which files to drop.

Follows Allamanis, "The Adverse Effects of Code Duplication in Machine Learning Models
of Code" (Onward! 2019), Sec. 3; the steps and their sources are in the modules
:mod:`~workbench.dedup.tokens`, :mod:`~workbench.dedup.signatures`,
:mod:`~workbench.dedup.verification` and :mod:`~workbench.dedup.clusters`.
"""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.dedup.cluster_shape import ClusterShape, Neighbour, TokenPairScorer, describe_clusters
from workbench.dedup.clusters import UnionFind, choose_keeper, exact_bag_groups
from workbench.dedup.config import DedupConfig
from workbench.dedup.signatures import LSHParameters, MinHashSetup, banded_buckets, minhash_setup
from workbench.dedup.text_identity import TextPairScorer, find_text_duplicates
from workbench.dedup.tokens import FileTokens, SignatureSpec, TokenBags, tokenize_one, tokenize_to_bags
from workbench.dedup.verification import PairScore, verify_pair, verify_sorted_pair
from workbench.thresholds import exact_threshold

if TYPE_CHECKING:  # only named in annotations: the Spark executors import this module without the data loader
    from workbench.dedup.rows import DedupRows

#: file status values
ANALYSED, TOO_SHORT, FAILED = "analysed", "too_short", "failed"

#: why a row is dropped (:class:`Removal`), in report order
REMOVAL_REASONS: tuple[str, ...] = ("exact_duplicate", "exact_text_duplicate", "near_duplicate", "contaminated")


@dataclass(frozen=True)
class DuplicatePair:
    """A verified duplicate pair (indices into the rows; ``b`` may index the reference
    rows for contamination).

    Attributes:
        a, b: the two files.
        set_jaccard, multiset_jaccard: their exact similarities.
        kind: ``"exact"`` (identical token multisets), ``"near"``, or ``"exact_text"``
            (identical normalised text below ``min_tokens``: :mod:`~workbench.dedup.text_identity`).
    """

    a: int
    b: int
    set_jaccard: float
    multiset_jaccard: float
    kind: str


@dataclass(frozen=True)
class Removal:
    """Why a row is dropped from the deduplicated output.

    Attributes:
        reason: ``"exact_duplicate"``, ``"exact_text_duplicate"`` (identical normalised text
            below ``min_tokens``), ``"near_duplicate"`` or ``"contaminated"``.
        other: the kept row it duplicates (row index), or for ``contaminated`` the
            reference row index.
    """

    reason: str
    other: int | None


@dataclass
class DedupResult:
    """Everything a run found. Indices refer to ``rows`` (and ``reference`` for contamination).

    Attributes:
        rows: the analysed dataset.
        reference: the ``--against`` dataset, or ``None``.
        config: the parameters.
        lsh: the LSH scheme used.
        status: per row: ``"analysed"``, ``"too_short"`` or ``"failed"``.
        n_tokens: per row token count; has_error: per row parse-recovery flag;
        failures: row index -> reason, for rows that could not be tokenized.
        exact_of: per row, the representative of its exact group (itself if unique;
            ``-1`` when not analysed).
        clusters: connected components with >= 2 rows, largest first (row indices); clusters
            of too-short rows of identical text (``exact_text``) among them.
        keepers: the kept row of each cluster (``None`` when all were contaminated), in
            the order of ``clusters``; with a ``reference`` and ``config.decontaminate_only`` (a
            decontamination) the row a dedup without one would keep: the other rows of the cluster
            that are not contaminated are kept too.
        removed: row index -> :class:`Removal`: the in-set duplicates and the contaminated rows;
            with ``config.decontaminate_only``, the contaminated rows only (in-set duplicates are
            found and reported, not dropped).
        pairs: verified duplicate pairs inside clusters (exact pairs join each member to
            its exact representative).
        cross_group_pairs: verified duplicate pairs whose rows are in different groups.
        contamination: pairs (row, reference row) that are duplicates.
        reference_status: per reference row, as ``status``; reference_n_tokens: its token counts.
        counters: work done: candidate pairs seen, verified, skipped because already
            connected, rejected by the size filter, signatures.
        timings: seconds per step.
        shapes: the :class:`~workbench.dedup.cluster_shape.ClusterShape` of each cluster, in
            the order of ``clusters``.
        neighbours: removed row -> the verified :class:`~workbench.dedup.cluster_shape.Neighbour`
            it is a copy of (a reference row for ``contaminated``).
        empty: rows whose text is empty after whitespace normalisation (ascending; never clustered).
    """

    rows: DedupRows
    reference: DedupRows | None
    config: DedupConfig
    lsh: LSHParameters
    status: list[str]
    n_tokens: list[int]
    has_error: list[bool]
    failures: dict[int, str]
    exact_of: list[int]
    clusters: list[list[int]]
    keepers: list[int | None]
    removed: dict[int, Removal]
    pairs: list[DuplicatePair]
    cross_group_pairs: list[DuplicatePair] = field(default_factory=list)
    contamination: list[DuplicatePair] = field(default_factory=list)
    reference_status: list[str] = field(default_factory=list)
    reference_n_tokens: list[int] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    shapes: list[ClusterShape] = field(default_factory=list)
    neighbours: dict[int, Neighbour] = field(default_factory=dict)
    empty: list[int] = field(default_factory=list)

    def kept_indices(self, split: str) -> list[int]:
        """Return the local row numbers (0-based within ``split``) that the deduplicated split keeps."""
        start, stop = self.rows.split_ranges[split]
        return [i - start for i in range(start, stop) if i not in self.removed]


#: ``progress(description, total)`` -> context manager yielding ``advance(n)``
ProgressFactory = Callable[[str, int], Any]


@contextmanager
def _no_progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    yield lambda n: None


def find_duplicates(
    rows: DedupRows,
    config: DedupConfig | None = None,
    *,
    reference: DedupRows | None = None,
    progress: ProgressFactory | None = None,
    minhash: Future[MinHashSetup] | None = None,
) -> DedupResult:
    """Find exact and near-duplicate rows, cluster them and decide which rows to drop.

    Args:
        rows: the dataset (see :func:`~workbench.dedup.rows.collect_rows`).
        config: parameters (defaults: Allamanis 2019's t0 = 0.8, t1 = 0.7, 20 tokens).
        reference: ``--against`` rows; any row of ``rows`` that is a duplicate of one of
            them is reported and dropped (decontamination), besides the in-set duplicates; with
            ``config.decontaminate_only`` only those: the in-set duplicates are clustered and
            reported but every row that is not contaminated is kept.
        progress: a factory of progress bars (``progress(description, total)`` is a
            context manager yielding ``advance(n)``); ``None`` for none.
        minhash: the permutations and LSH parameters for ``config`` being prepared
            elsewhere (:func:`~workbench.dedup.signatures.minhash_setup_in_background`);
            ``None`` to prepare them here.

    Returns:
        a :class:`DedupResult`.
    """
    with collector_paused():
        return _find_duplicates(rows, config or DedupConfig(), reference, progress or _no_progress, minhash)


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for a block (restoring its state after).

    A run builds a few million small containers (token bags, candidate pairs) that are
    never part of a reference cycle; the collector's passes would only traverse them again
    and again (about 0.3-0.5 s of a 20k-file run). Plain reference counting still frees
    everything that is dropped.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _find_duplicates(
    rows: DedupRows,
    config: DedupConfig,
    reference: DedupRows | None,
    progress: ProgressFactory,
    minhash: Future[MinHashSetup] | None,
) -> DedupResult:
    timings: dict[str, float] = {}
    n_rows = len(rows)
    ref_rows = len(reference) if reference is not None else 0

    # 1. tokens (rows, then reference rows)
    clock = time.perf_counter()
    codes = list(rows.codes) + (list(reference.codes) if reference is not None else [])
    languages = list(rows.languages) + (list(reference.languages) if reference is not None else [])
    # signatures are computed in the tokenizer workers, in parallel; only the exact
    # representatives' signatures are banded into LSH buckets (step 3)
    setup = _minhash_setup(config, minhash)
    spec = SignatureSpec(config.num_perm, config.seed, config.min_tokens, (setup.a, setup.b))
    with progress("tokenize + MinHash", len(codes)) as advance:
        bags = tokenize_to_bags(codes, languages, workers=config.workers, signatures=spec, on_progress=advance,
                                source_encoding=config.source_encoding)
    del codes, languages
    timings["tokenize_minhash"] = time.perf_counter() - clock
    timings["tokens_cpu"] = bags.cpu_seconds["tokens"]
    timings["signatures_cpu"] = bags.cpu_seconds["signatures"]

    n_tokens = bags.row_n_tokens()
    failures = bags.row_failures()
    status = _statuses(n_tokens, failures, config.min_tokens)
    # partition: files of different partitions never join one cluster (groups; reference)
    partitions: list[Any] = list(rows.groups) if rows.groups is not None else [None] * n_rows
    partitions += [REFERENCE] * ref_rows

    # 2. exact pre-pass: identical token multisets collapse to one representative
    clock = time.perf_counter()
    groups = exact_bag_groups(bags, partitions, [s == ANALYSED for s in status])
    representatives = sorted(groups)
    timings["exact"] = time.perf_counter() - clock

    # 3. the representatives' MinHash signatures, banded into LSH buckets
    clock = time.perf_counter()
    lsh_parameters = setup.lsh
    with progress("LSH index", lsh_parameters.bands) as advance:
        signatures = bags.signatures[bags.bag_of[np.asarray(representatives, dtype=np.int64)]]
        buckets, band_sizes = banded_buckets(representatives, signatures, lsh_parameters, on_progress=advance)
        del signatures
    timings["lsh_index"] = time.perf_counter() - clock

    return verify_and_cluster(
        Candidates(rows, reference, config, lsh_parameters, status, n_tokens.tolist(),
                   bags.row_has_error()[:n_rows].tolist(),
                   {row: reason for row, reason in failures.items() if row < n_rows},
                   partitions, groups, buckets, bags, band_sizes=band_sizes),
        progress, timings,
    )


@dataclass
class Candidates:
    """What steps 1-3 give the verification and clustering (steps 4-5), whichever engine
    computed them (:func:`find_duplicates` here, :mod:`workbench.dedup.spark` on Spark).

    Row indices count the rows, then the reference rows (``len(rows) + j`` is reference row ``j``).

    Attributes:
        rows, reference, config: as :class:`DedupResult`; lsh: the LSH scheme used.
        status, n_tokens: per row and reference row; has_error, failures: per row.
        partitions: per row and reference row, the value that must be equal for two rows to
            join one cluster (the group, ``None``, or the reference marker :data:`REFERENCE`).
        groups: exact representative (the smallest index) -> every member of its exact group
            (ascending, representative first), for every analysed row (singletons too); the
            order of the keys does not matter.
        buckets: the LSH buckets with two or more representatives, band by band, within a
            band by first member, members ascending (:func:`banded_buckets`).
        band_sizes: how many of ``buckets`` each band has, in band order; ``None``: one band
            (pairs verified elsewhere and replayed here, each once).
        bags: the token bags: a :class:`~workbench.dedup.tokens.TokenBags` of all rows, or
            row index -> :class:`FileTokens` for every row in a bucket at least (a list of
            all rows, or a dict of the bucket members); with ``scores``, at least the rows of
            token clusters (the cluster shapes compare them).
        scores: ``scores(a, b)`` (``a < b``) -> the pair's :class:`PairScore`, or ``None`` when
            the size filter rules it out, as :func:`verify_sorted_pair` decides it; for pairs
            verified elsewhere (the Spark executors). ``None``: verify from ``bags`` here.
    """

    rows: DedupRows
    reference: DedupRows | None
    config: DedupConfig
    lsh: LSHParameters
    status: list[str]
    n_tokens: list[int]
    has_error: list[bool]
    failures: dict[int, str]
    partitions: list[Any]
    groups: dict[int, list[int]]
    buckets: list[list[int]]
    bags: Any
    scores: Callable[[int, int], PairScore | None] | None = None
    band_sizes: list[int] | None = None


def verify_and_cluster(candidates: Candidates, progress: ProgressFactory, timings: dict[str, float]) -> DedupResult:
    """Steps 4 and 5: verify the candidate pairs exactly, join clusters, choose the keepers.

    Both engines end here, so their clusters, pairs and removals are the same for the same
    candidates: the exact groups are joined first, then the buckets are verified in their
    order with :class:`_BucketVerifier` (pairs already in one cluster are skipped).

    Args:
        candidates: the output of steps 1-3 (see :class:`Candidates`).
        progress: a progress-bar factory (see :func:`find_duplicates`).
        timings: seconds per step so far; ``verify`` and ``clusters`` are added.

    Returns:
        the :class:`DedupResult`.
    """
    rows, reference, config = candidates.rows, candidates.reference, candidates.config
    groups, buckets, partitions = candidates.groups, candidates.buckets, candidates.partitions
    n_rows = len(rows)
    n_all = len(candidates.status)
    exact_of = [-1] * n_all
    union_find = UnionFind(n_all)
    pairs: list[DuplicatePair] = []
    for representative, members in groups.items():
        for member in members:
            exact_of[member] = representative
            if member != representative:
                union_find.union(representative, member)
                if member < n_rows:
                    pairs.append(DuplicatePair(representative, member, 1.0, 1.0, "exact"))

    # identical text below min_tokens: clusters of their own (text_identity); copies of a
    # reference row's text are contaminated
    clock = time.perf_counter()
    codes = _Joined(rows.codes, reference.codes if reference is not None else [])
    languages = _Joined(rows.languages, reference.languages if reference is not None else [])
    text_score = TextPairScorer(codes, languages,
                                functools.partial(tokenize_one, fallback=config.source_encoding))
    text = find_text_duplicates(codes, languages, [i for i, s in enumerate(candidates.status) if s == TOO_SHORT],
                                partitions, n_rows, text_score, config.source_encoding)
    for first, member, set_j, multiset_j in text.pairs:
        union_find.union(first, member)
        pairs.append(DuplicatePair(first, member, set_j, multiset_j, "exact_text"))
    timings["exact_text"] = time.perf_counter() - clock

    # 4. exact verification of candidate pairs; pairs already in one cluster are skipped
    clock = time.perf_counter()
    counters = {"representatives": len(groups), "bucket_pairs": 0, "size_filtered": 0, "verified": 0,
                "rejected": 0}
    cross_partition: list[DuplicatePair] = []
    band_sizes = candidates.band_sizes if candidates.band_sizes is not None else [len(buckets)]
    verifier = _BucketVerifier(candidates.bags, partitions, union_find, config, counters, candidates.scores,
                               bands=len(band_sizes))
    bands = (band for band, size in enumerate(band_sizes) for _ in range(size))
    # the bar counts LSH bucket pairs (work.bucket_pairs, named so in the summary), not buckets and
    # not the pairs verified exactly: pairs already in one cluster or met in an earlier band count as
    # done without a comparison
    with progress("check LSH bucket pairs", sum(_pairs_in(bucket) for bucket in buckets)) as advance:
        for bucket, band in zip(buckets, bands, strict=True):
            for pair in verifier.process(bucket, band):
                if partitions[pair.a] == partitions[pair.b]:
                    pairs.append(pair)
                else:
                    cross_partition.append(pair)
            advance(_pairs_in(bucket))
    # bucket pairs never compared: already in one cluster, or compared in an earlier band
    counters["pairs_not_compared"] = counters["bucket_pairs"] - verifier.enumerated
    counters["largest_bucket"] = max(map(len, buckets), default=0)
    cross_group = [p for p in cross_partition if p.b < n_rows]
    contamination_reps = [p for p in cross_partition if p.b >= n_rows]
    del verifier
    timings["verify"] = time.perf_counter() - clock

    # 5. clusters, contamination and the files to drop
    clock = time.perf_counter()
    clusters = union_find.components(range(n_rows))
    members_of = groups  # exact representative -> its copies
    contamination: list[DuplicatePair] = []
    for pair in contamination_reps:  # expand representatives to every exact copy
        for row in members_of[pair.a]:
            contamination.append(DuplicatePair(row, pair.b - n_rows, pair.set_jaccard, pair.multiset_jaccard, pair.kind))
    contamination += [DuplicatePair(*found, "exact_text") for found in text.contamination]
    removed: dict[int, Removal] = {}
    contaminated_by: dict[int, DuplicatePair] = {}
    for pair in contamination:
        removed.setdefault(pair.a, Removal("contaminated", pair.b))
        contaminated_by.setdefault(pair.a, pair)
    contaminated = set(removed)
    keepers: list[int | None] = []
    n_tokens = candidates.n_tokens
    train_and_test = config.train_split in rows.split_ranges and config.test_split in rows.split_ranges
    for cluster in clusters:
        keeper = choose_keeper(
            cluster, keep=config.keep, cross_set=config.cross_set, splits=rows.splits,
            n_tokens=n_tokens, train_split=config.train_split,
            test_split=config.test_split, excluded=contaminated, train_and_test=train_and_test,
        )
        keepers.append(keeper)
        if keeper is None or (reference is not None and config.decontaminate_only):
            # a decontamination (``--against --decontaminate-only``) drops the contaminated rows only: the
            # cluster is described (its keeper is the row a dedup without a reference keeps), not collapsed
            continue
        for member in cluster:
            if member != keeper and member not in removed:
                if member in text.rows:
                    reason = "exact_text_duplicate"
                else:
                    reason = "exact_duplicate" if exact_of[member] == exact_of[keeper] else "near_duplicate"
                removed[member] = Removal(reason, keeper)
    timings["clusters"] = time.perf_counter() - clock

    # the shape of each cluster and the verified neighbour of each removed row (cluster_shape)
    clock = time.perf_counter()
    bags = candidates.bags

    # a cluster's rows are compared with several others: build each row's dict once (bounded cache)
    @functools.lru_cache(maxsize=4096)
    def bag_of(i: int) -> tuple[Mapping, int]:
        bag = bags[i]
        return bag.counts, bag.n_tokens

    score = TokenPairScorer(bag_of, config.set_threshold,
                            config.multiset_threshold,
                            {(p.a, p.b): (p.set_jaccard, p.multiset_jaccard) for p in pairs if p.kind == "near"})
    shapes, in_cluster = describe_clusters(clusters, keepers, exact_of, text.rows, score, text_score)
    neighbours = {row: found for row, found in in_cluster.items() if row in removed and row not in contaminated}
    for row, pair in contaminated_by.items():
        neighbours[row] = Neighbour(pair.b, pair.set_jaccard, pair.multiset_jaccard, pair.kind, None)
    counters["shape_comparisons"] = score.comparisons
    counters["shape_bounded_clusters"] = sum(shape.bounded for shape in shapes)
    timings["shape"] = time.perf_counter() - clock

    return DedupResult(
        rows=rows,
        reference=reference,
        config=config,
        lsh=candidates.lsh,
        status=candidates.status[:n_rows],
        n_tokens=n_tokens[:n_rows],
        has_error=candidates.has_error,
        failures=candidates.failures,
        exact_of=exact_of[:n_rows],
        clusters=clusters,
        keepers=keepers,
        removed=removed,
        pairs=sorted(pairs, key=lambda p: (p.a, p.b)),
        cross_group_pairs=_expand_cross_group(cross_group, members_of),
        contamination=contamination,
        reference_status=candidates.status[n_rows:],
        reference_n_tokens=list(n_tokens[n_rows:]),
        counters=counters,
        timings=timings,
        shapes=shapes,
        neighbours=dict(sorted(neighbours.items())),
        empty=text.empty,
    )


class _Joined:
    """Two sequences read as one (the rows, then the reference rows), without copying them."""

    def __init__(self, first: Any, second: Any) -> None:
        self.first, self.second, self.split = first, second, len(first)

    def __len__(self) -> int:
        return self.split + len(self.second)

    def __getitem__(self, index: int) -> Any:
        return self.first[index] if index < self.split else self.second[index - self.split]


class _BucketVerifier:
    """Verifies the candidate pairs of LSH buckets (Allamanis 2019's rule, exactly).

    Members of a bucket that are already in one cluster are never compared (the issue's
    "skip pairs whose representatives are already in one cluster"): the bucket is split
    into its current components and only pairs across components are verified; once a
    pair of two components verifies, the rest of their pairs are skipped. Pairs across
    partitions (groups, or a reference row) are all verified and never joined.

    A pair is compared in the first band where its rows share a bucket, never again: a later
    band skips a pair whose rows shared a bucket of an earlier band. That pair was compared
    then, unless its rows were already in one component (or joined in that bucket), and they
    still are. So no set of compared pairs is kept (at 1M files it held 78M pairs, about
    4.6 GB); the verifier keeps each row's bucket per band instead (``bands x rows`` int32,
    100 MB at 1M rows and 25 bands). The buckets must come band by band, in band order.

    Args:
        tokens: the token bags (:class:`TokenBags`, or row -> :class:`FileTokens`).
        partitions: per row, the value two rows must share to join one cluster.
        union_find: the clusters so far (joined as duplicates verify).
        config: the thresholds.
        counters: ``bucket_pairs``, ``size_filtered``, ``verified``, ``rejected``, updated.
        scores: pair -> :class:`PairScore` for pairs verified elsewhere (else from ``tokens``).
        bands: the number of LSH bands the buckets come from.
    """

    def __init__(self, tokens: Any, partitions: list[Any], union_find: UnionFind,
                 config: DedupConfig, counters: dict[str, int],
                 scores: Callable[[int, int], PairScore | None] | None = None, bands: int = 1) -> None:
        self.tokens, self.partitions, self.union_find = tokens, partitions, union_find
        self.config, self.counters = config, counters
        self.n = len(partitions)
        # row -> its bucket in each band so far (an id unique over all bands); a row in no bucket
        # of a band holds -(row + 1) there, so two rows never match on a band neither was in
        self.bucket_of = np.empty((max(bands - 1, 0), self.n), dtype=np.int32)
        self.bucket_of[:] = -np.arange(1, self.n + 1, dtype=np.int32)
        self.buckets_seen = 0
        self.enumerated = 0
        # exact rationals once, not once per pair
        self.thresholds = exact_threshold(config.set_threshold), exact_threshold(config.multiset_threshold)
        if scores is not None:
            self.score = scores
        elif isinstance(tokens, TokenBags):
            # plain lists for the per-pair lookups (a list index costs a tenth of a numpy scalar
            # read); about 150 bytes per row while the verification runs
            self.bag, self.sizes = tokens.bag_of.tolist(), tokens.n_tokens.tolist()
            self.starts, self.ends = tokens.offsets[:-1].tolist(), tokens.offsets[1:].tolist()
            self.score = self._sorted_score
        else:
            self.score = self._dict_score

    def _sorted_score(self, low: int, high: int) -> PairScore | None:
        bag_low, bag_high = self.bag[low], self.bag[high]
        start_low, end_low, start_high, end_high = (self.starts[bag_low], self.ends[bag_low],
                                                    self.starts[bag_high], self.ends[bag_high])
        distinct_low, distinct_high = end_low - start_low, end_high - start_high
        t0 = self.thresholds[0]
        if min(distinct_low, distinct_high) * t0.denominator < t0.numerator * max(distinct_low, distinct_high):
            return None  # the size filter of verify_sorted_pair, before any array is touched
        ids, counts = self.tokens.ids, self.tokens.counts
        return verify_sorted_pair(ids[start_low:end_low], counts[start_low:end_low], ids[start_high:end_high],
                                  counts[start_high:end_high], self.sizes[bag_low], self.sizes[bag_high],
                                  *self.thresholds)

    def _dict_score(self, low: int, high: int) -> PairScore | None:
        first, second = self.tokens[low], self.tokens[high]
        return verify_pair(first.counts, second.counts, first.n_tokens, second.n_tokens, *self.thresholds)

    def process(self, bucket: list[int], band: int = 0) -> list[DuplicatePair]:
        """Verify one bucket (sorted member indices) of LSH band ``band`` (buckets in band
        order); return the duplicate pairs found."""
        self.counters["bucket_pairs"] += _pairs_in(bucket)
        if band < len(self.bucket_of):  # the last band is never looked back at
            self.bucket_of[band, bucket] = self.buckets_seen
        self.buckets_seen += 1
        find, partitions = self.union_find.find, self.partitions
        components: dict[int, list[int]] = {}
        for member in bucket:
            components.setdefault(find(member), []).append(member)
        if len(components) == 1:
            return []
        # each member's buckets of the earlier bands: a pair sharing one was met there
        earlier = dict(zip(bucket, map(frozenset, self.bucket_of[:band, bucket].T.tolist()))) if band else None
        found: list[DuplicatePair] = []
        groups = list(components.values())
        for i, first in enumerate(groups):
            for second in groups[i + 1 :]:
                same = partitions[first[0]] == partitions[second[0]]
                if same and find(first[0]) == find(second[0]):
                    continue  # joined earlier in this bucket
                if partitions[first[0]] is REFERENCE and partitions[second[0]] is REFERENCE:
                    continue  # two reference rows: not our business
                found.extend(self._compare(first, second, same, earlier))
        return found

    def _compare(self, first: list[int], second: list[int], same: bool,
                 earlier: dict[int, frozenset[int]] | None) -> list[DuplicatePair]:
        counters, score_of = self.counters, self.score
        found = []
        for a in first:
            met_a = earlier[a] if earlier is not None else None
            for b in second:
                if met_a is not None and not met_a.isdisjoint(earlier[b]):
                    continue  # compared in an earlier band (see the class docstring)
                low, high = (a, b) if a < b else (b, a)
                self.enumerated += 1
                score = score_of(low, high)
                if score is None:
                    counters["size_filtered"] += 1
                    continue
                counters["verified"] += 1
                if not score.is_duplicate:
                    counters["rejected"] += 1
                    continue
                kind = "exact" if score.multiset_jaccard == 1.0 else "near"  # exact only across partitions
                found.append(DuplicatePair(low, high, score.set_jaccard, score.multiset_jaccard, kind))
                if same:
                    self.union_find.union(a, b)
                    return found  # the two components are one now
        return found


def _pairs_in(bucket: list[int]) -> int:
    """Candidate pairs of one LSH bucket: k (k - 1) / 2 for k members."""
    return len(bucket) * (len(bucket) - 1) // 2


class _Reference:
    """The partition of reference rows (never equal to a group value)."""

    def __repr__(self) -> str:
        return "<reference>"


REFERENCE = _Reference()


def _minhash_setup(config: DedupConfig, prepared: Future[MinHashSetup] | None) -> MinHashSetup:
    if prepared is not None:
        try:
            return prepared.result()
        except BrokenProcessPool:  # the helper process died: prepare it here instead
            pass
    return minhash_setup(config.num_perm, config.seed, config.lsh_threshold, config.lsh_weights, config.lsh_params)


def _statuses(n_tokens: np.ndarray, failures: dict[int, str], min_tokens: int) -> list[str]:
    """Per row: ``"failed"`` (in ``failures``), ``"analysed"`` (at least ``min_tokens``) or ``"too_short"``."""
    labels = (TOO_SHORT, ANALYSED)
    status = [labels[enough] for enough in (n_tokens >= min_tokens).tolist()]
    for row in failures:
        status[row] = FAILED
    return status


def _status(tokens: FileTokens, min_tokens: int) -> str:
    if tokens.failure is not None:
        return FAILED
    return ANALYSED if tokens.n_tokens >= min_tokens else TOO_SHORT


def _expand_cross_group(pairs: list[DuplicatePair], members_of: dict[int, list[int]]) -> list[DuplicatePair]:
    """Cross-group pairs were found between exact representatives: list every member pair."""
    expanded = []
    for pair in pairs:
        for a in members_of[pair.a]:
            for b in members_of[pair.b]:
                expanded.append(DuplicatePair(min(a, b), max(a, b), pair.set_jaccard, pair.multiset_jaccard, pair.kind))
    return sorted(expanded, key=lambda p: (p.a, p.b))
