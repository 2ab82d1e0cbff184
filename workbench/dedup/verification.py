"""Step 4: exact verification of candidate pairs.

A pair of files is a near-duplicate when both hold (Allamanis 2019, Sec. 3, following
SourcererCC, Sajnani et al., ICSE 2016):

* set Jaccard of the token sets  ``|A ∩ B| / |A ∪ B| >= t0`` (default 0.8), and
* multiset Jaccard of the token bags ``Σ min(a_t, b_t) / Σ max(a_t, b_t) >= t1`` (default 0.7).

Comparisons are exact: ``intersection / union >= t`` is decided in integers with ``t`` read as
the decimal it was written as (:func:`workbench.thresholds.at_least`), so a pair exactly at a
threshold (14/25 at ``t0 = 0.56``) is a duplicate for every threshold a user can type.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from workbench.thresholds import exact_threshold


@dataclass(frozen=True)
class PairScore:
    """The exact similarities of one pair.

    Attributes:
        set_jaccard: ``|A ∩ B| / |A ∪ B|`` over distinct tokens, in [0, 1].
        multiset_jaccard: ``Σ min / Σ max`` over token counts, in [0, 1]; ``None`` when
            the set test already failed and it was not computed.
        is_duplicate: both thresholds are met.
    """

    set_jaccard: float
    multiset_jaccard: float | None
    is_duplicate: bool


def set_jaccard(a: Mapping[Hashable, int], b: Mapping[Hashable, int]) -> float:
    """Return the Jaccard similarity of the key sets of two token bags (0.0 for two empty bags)."""
    inter = len(a.keys() & b.keys())
    union = len(a) + len(b) - inter
    return inter / union if union else 0.0


def multiset_jaccard(a: Mapping[Hashable, int], b: Mapping[Hashable, int]) -> float:
    """Return ``Σ_t min(a_t, b_t) / Σ_t max(a_t, b_t)`` for two token bags (0.0 for two empty bags)."""
    if len(a) > len(b):
        a, b = b, a
    inter = sum(min(count, b[token]) for token, count in a.items() if token in b)
    union = sum(a.values()) + sum(b.values()) - inter
    return inter / union if union else 0.0


def verify_pair(
    a: Mapping[Hashable, int],
    b: Mapping[Hashable, int],
    size_a: int,
    size_b: int,
    set_threshold: float | Fraction,
    multiset_threshold: float | Fraction,
) -> PairScore | None:
    """Decide one candidate pair exactly.

    Args:
        a, b: token -> count of the two files (tokens as UTF-8 bytes in the pipeline; any hashable works).
        size_a, size_b: their multiset sizes (``sum(counts.values())``, precomputed).
        set_threshold: t0; multiset_threshold: t1 (floats, read as the decimals they were
            written as, or exact Fractions; :func:`workbench.thresholds.exact_threshold`).

    Returns:
        the :class:`PairScore` when the set test was computed, or ``None`` when the size
        filter alone rules the pair out (``min(|A|, |B|) < t0 * max(|A|, |B|)`` implies
        ``J < t0`` since ``J <= min/max``). Two empty bags have Jaccard 0.0 (as
        :func:`set_jaccard`) and are no duplicate.

    Example:

    >>> verify_pair({"a": 1, "b": 1}, {"a": 1, "b": 1, "c": 1}, 2, 3, 0.6, 0.6).is_duplicate
    True
    """
    t0, t1 = exact_threshold(set_threshold), exact_threshold(multiset_threshold)
    distinct_a, distinct_b = len(a), len(b)
    if (early := _size_filter(distinct_a, distinct_b, t0)) is not _COMPARE:
        return early
    if distinct_a > distinct_b:
        a, b, size_a, size_b = b, a, size_b, size_a
    inter = len(a.keys() & b.keys())
    union = distinct_a + distinct_b - inter
    set_j = inter / union
    if inter * t0.denominator < t0.numerator * union:
        return PairScore(set_j, None, False)
    shared = sum(min(count, b[token]) for token, count in a.items() if token in b)
    return _multiset_verdict(set_j, shared, size_a, size_b, t1)


def verify_sorted_pair(
    ids_a: np.ndarray,
    counts_a: np.ndarray,
    ids_b: np.ndarray,
    counts_b: np.ndarray,
    size_a: int,
    size_b: int,
    set_threshold: Fraction,
    multiset_threshold: Fraction,
) -> PairScore | None:
    """Decide one candidate pair exactly, as :func:`verify_pair` does, from token bags held as
    sorted arrays (:class:`~workbench.dedup.tokens.TokenBags`): no Python object per token.

    Args:
        ids_a, ids_b: each file's distinct token ids, ascending (``uint64``).
        counts_a, counts_b: their occurrences (aligned with the ids).
        size_a, size_b: the multiset sizes (the counts summed).
        set_threshold, multiset_threshold: t0 and t1 as exact fractions
            (:func:`workbench.thresholds.exact_threshold`).

    Returns:
        the same :class:`PairScore` (or ``None``, for the size filter) as :func:`verify_pair`
        on the same bags as dicts: the intersection is found by a binary search of the
        smaller bag's ids in the larger one's, and the counts are the same integers.

    Example:

    >>> from workbench.thresholds import exact_threshold
    >>> ids = np.array([1, 2, 3], dtype=np.uint64)
    >>> verify_sorted_pair(ids[:2], np.ones(2, np.uint32), ids, np.ones(3, np.uint32), 2, 3,
    ...                    exact_threshold(0.6), exact_threshold(0.6)).is_duplicate
    True
    """
    t0, t1 = set_threshold, multiset_threshold
    distinct_a, distinct_b = len(ids_a), len(ids_b)
    if (early := _size_filter(distinct_a, distinct_b, t0)) is not _COMPARE:
        return early
    if distinct_a > distinct_b:
        ids_a, counts_a, ids_b, counts_b = ids_b, counts_b, ids_a, counts_a
    # where each of a's ids would sit in b (clipped: an id past b's last is no match either)
    where = np.searchsorted(ids_b, ids_a)
    hit = ids_b.take(where, mode="clip") == ids_a
    inter = int(np.count_nonzero(hit))
    union = distinct_a + distinct_b - inter
    set_j = inter / union
    if inter * t0.denominator < t0.numerator * union:
        return PairScore(set_j, None, False)
    shared = int(np.minimum(counts_a, counts_b.take(where, mode="clip"))[hit].sum(dtype=np.int64))
    return _multiset_verdict(set_j, shared, size_a, size_b, t1)


_COMPARE = object()  # _size_filter's answer when the pair must be compared


def _size_filter(distinct_a: int, distinct_b: int, t0: Fraction) -> PairScore | None | object:
    """The verdict reached from the bags' distinct sizes alone: ``None`` when the size filter rules the
    pair out (``J <= min/max < t0``), a non-duplicate score for two empty bags, else ``_COMPARE``."""
    if min(distinct_a, distinct_b) * t0.denominator < t0.numerator * max(distinct_a, distinct_b):
        return None
    if distinct_a == 0 and distinct_b == 0:
        return PairScore(0.0, None, False)
    return _COMPARE


def _multiset_verdict(set_j: float, shared: int, size_a: int, size_b: int, t1: Fraction) -> PairScore:
    """The score of a pair past the set threshold: multiset Jaccard = shared / (|A| + |B| - shared),
    a duplicate when it reaches t1 (compared exactly, in integers)."""
    multiset_union = size_a + size_b - shared
    return PairScore(set_j, shared / multiset_union, shared * t1.denominator >= t1.numerator * multiset_union)
