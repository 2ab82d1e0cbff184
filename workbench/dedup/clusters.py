"""Steps 2 and 5: exact groups, connected components (union-find) and which file of a
cluster is kept.

Duplicate pairs form a graph; its connected components are the clusters (Allamanis
2019, Sec. 3: "we ... find the connected components"), found with a union-find forest
(path halving, union by size; Tarjan, JACM 1975).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from xxhash import xxh3_128_digest

if TYPE_CHECKING:
    from workbench.dedup.tokens import TokenBags


class UnionFind:
    """A disjoint-set forest over the integers ``0 .. n-1``.

    Args:
        n: number of elements.
    """

    def __init__(self, n: int) -> None:
        self.parent = list(range(n))
        self.size = [1] * n

    def find(self, x: int) -> int:
        """Return the representative of ``x``'s set (with path halving)."""
        parent = self.parent
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(self, a: int, b: int) -> bool:
        """Merge the sets of ``a`` and ``b``; return False when they were already one set."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        if self.size[ra] < self.size[rb]:
            ra, rb = rb, ra
        self.parent[rb] = ra
        self.size[ra] += self.size[rb]
        return True

    def connected(self, a: int, b: int) -> bool:
        """True when ``a`` and ``b`` are in one set."""
        return self.find(a) == self.find(b)

    def components(self, members: Iterable[int] | None = None) -> list[list[int]]:
        """Return the sets with two or more elements (each sorted), largest first, then by
        first element. ``members`` limits the elements considered (default: all)."""
        groups: dict[int, list[int]] = {}
        for x in range(len(self.parent)) if members is None else members:
            groups.setdefault(self.find(x), []).append(x)
        found = [sorted(g) for g in groups.values() if len(g) > 1]
        found.sort(key=lambda g: (-len(g), g[0]))
        return found


def exact_groups(keys: Sequence[Hashable | None]) -> dict[int, list[int]]:
    """Group files with identical keys (identical token multisets: Allamanis 2019's exact
    duplicates, collapsed before hashing).

    Args:
        keys: one key per file; ``None`` for files that take no part.

    Returns:
        representative index (the first in input order) -> all member indices (the
        representative first), for every key; singletons included.
    """
    first: dict[Hashable, int] = {}
    groups: dict[int, list[int]] = {}
    for index, key in enumerate(keys):
        if key is None:
            continue
        representative = first.setdefault(key, index)
        groups.setdefault(representative, []).append(index)
    return groups


def identical_multisets(members: Sequence[int], bags: Sequence[Mapping[Hashable, int]]) -> list[list[int]]:
    """Split ``members`` into classes of identical token multisets, exactly.

    The exact pre-pass first groups files by a cheap key that identical multisets always
    share (partition, MinHash signature, token and distinct-token counts); this confirms
    each group, so two files are exact duplicates only when their bags are equal.

    Args:
        members: file indices, in input order.
        bags: token -> count of every file (indexed by file).

    Returns:
        the classes, each in input order, ordered by their first member.
    """
    if len(members) == 1:
        return [list(members)]
    classes: dict[frozenset, list[int]] = {}
    for member in members:  # the items of a bag identify it: O(group size), no pairwise ==
        classes.setdefault(frozenset(bags[member].items()), []).append(member)
    return list(classes.values())


def exact_bag_groups(bags: TokenBags, partitions: Sequence[Hashable], analysed: Sequence[bool]) -> dict[int, list[int]]:
    """Group the analysed rows whose token multisets are identical, within each partition
    (Allamanis 2019's exact duplicates, collapsed before hashing), from token bags held as
    arrays.

    Rows with one bag (identical text) are one multiset. Different bags are grouped by a
    128-bit XXH3 digest of their sorted ids and counts, and each group is then confirmed
    byte for byte, so two rows are exact duplicates only when their bags are equal.

    Args:
        bags: the token bags of all rows (:class:`~workbench.dedup.tokens.TokenBags`).
        partitions: per row, the value two rows must share to be grouped (hashable).
        analysed: per row, whether it takes part.

    Returns:
        representative (the smallest row) -> its members ascending (the representative
        first), for every analysed row (singletons too), ordered by representative: what
        :func:`exact_groups` and :func:`identical_multisets` give on the same bags.
    """
    bag_of, offsets, ids, counts = bags.bag_of.tolist(), bags.offsets.tolist(), bags.ids, bags.counts

    def content(bag: int) -> bytes:
        start, end = offsets[bag], offsets[bag + 1]
        return ids[start:end].tobytes() + counts[start:end].tobytes()

    digests: dict[int, bytes] = {}
    keyed: dict[tuple, list[int]] = {}
    for row, taking_part in enumerate(analysed):
        if not taking_part:
            continue
        bag = bag_of[row]
        digest = digests.get(bag)
        if digest is None:
            digest = digests[bag] = xxh3_128_digest(content(bag))
        keyed.setdefault((partitions[row], digest), []).append(row)
    del digests
    groups: dict[int, list[int]] = {}
    for members in keyed.values():
        if len(members) == 1 or len({bag_of[m] for m in members}) == 1:
            groups[members[0]] = members
            continue
        classes: dict[bytes, list[int]] = {}
        for member in members:  # confirm: equal digests of unequal bags split here
            classes.setdefault(content(bag_of[member]), []).append(member)
        for same in classes.values():
            groups[same[0]] = same
    return dict(sorted(groups.items()))


def choose_keeper(
    members: Sequence[int],
    *,
    keep: str,
    cross_set: str,
    splits: Sequence[str],
    n_tokens: Sequence[int],
    train_split: str,
    test_split: str,
    excluded: frozenset[int] | set[int] = frozenset(),
    train_and_test: bool = True,
) -> int | None:
    """Return the index of the file a cluster keeps, or ``None`` if every member is excluded.

    Args:
        members: the cluster's file indices (input order = index order).
        keep: ``first`` | ``longest`` | ``train-first`` (see :class:`~workbench.dedup.config.DedupConfig`).
        cross_set: when the cluster spans the train and test splits, ``remove-test`` keeps a
            train member (Allamanis 2019's "unbiased test") and ``remove-train`` a test member,
            whatever other splits (``validation``, ``dev``) the cluster also holds; ``keep`` then
            chooses among the members of that split. Under ``remove-test`` a cluster with a test
            member and members of a third split only (no train member) keeps a member of the third
            split, whatever order the splits are read in: the test split keeps no row with a copy in
            another split, the rows ``workbench bias`` counts as its unbiased test. Any other cluster
            has no such rule.
        splits: split name of every file; n_tokens: token count of every file.
        train_split, test_split: the split names.
        excluded: files that must not be kept (e.g. contaminated by ``--against``).
        train_and_test: the data has both the train and the test split (else no cross-set rule applies).
    """
    pool = [m for m in members if m not in excluded]
    if not pool:
        return None
    member_splits = {splits[m] for m in pool}
    if train_and_test and train_split in member_splits and test_split in member_splits:
        # the copy the policy names: a third split's copy (validation) is not kept in its place
        wanted = train_split if cross_set == "remove-test" else test_split
        pool = [m for m in pool if splits[m] == wanted]
    elif train_and_test and cross_set == "remove-test" and test_split in member_splits and len(member_splits) > 1:
        # a test copy of a third split's row (validation, or a split read after test): not kept, as the
        # train copy is not, so the test split holds no row that has a copy in another split
        pool = [m for m in pool if splits[m] != test_split]
    if keep == "longest":
        return min(pool, key=lambda m: (-n_tokens[m], m))
    if keep == "train-first":
        return min(pool, key=lambda m: (splits[m] != train_split, m))
    return min(pool)
