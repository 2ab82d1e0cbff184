"""The shape of each cluster: which verified neighbour a removed row is a copy of, and whether
the cluster is a chain.

A cluster is a connected component of duplicate pairs (Allamanis 2019, Sec. 3), so a chain
A~B~C joins A and C even when A and C share little. The *duplicate graph* of a cluster has
its rows as nodes and an edge between every two rows that meet the thresholds (checked
exactly with :func:`~workbench.dedup.verification.verify_pair`; rows of one exact group are
all joined: identical multisets). It is computed on the exact groups (one node per distinct
multiset; a row's edges are its group's), so a cluster of ``n`` identical rows costs nothing.

* **Neighbour of a removed row**: the first hop on a shortest path from the row to the row
  its cluster keeps, found by breadth-first search from the kept row, a level at a time and
  within a level in input order; so the kept row itself when the two are duplicates, else the
  first row (input order) one hop nearer the kept row. Its set and multiset Jaccard and the
  row's hop count to the kept row come with it.
* **Diameter**: the longest shortest path. A cluster is *chained* when its diameter exceeds 1
  (not every two rows are duplicates: its graph is not a clique). For clusters of at most
  :data:`EXACT_DIAMETER_LIMIT` distinct multisets every pair is verified and the diameter is
  exact (breadth-first search from every node); above it the diameter is a lower bound from a
  double sweep (the eccentricity of the kept row, then of the farthest row found; Magnien,
  Latapy and Habib, "Fast computation of empirically tight bounds for the diameter of massive
  graphs", JEA 2009), marked ``diameter_exact = False``; such a cluster whose bound is 1 has
  ``chained = None`` (not decided).

Cost: the breadth-first search from the kept row compares each row with the rows not yet
reached, so a cluster in which most rows are duplicates of the kept row (boilerplate) costs
about ``2 n`` comparisons; a long chain of ``n`` distinct rows costs up to ``n²/2``. Clusters
under the limit cost ``m (m - 1) / 2`` comparisons for ``m`` distinct multisets.

**Work bound.** Above the limit, the pairs a cluster's two sweeps put to the scorer are bounded
by :func:`comparison_budget` (``max(SHAPE_BUDGET_MIN, SHAPE_BUDGET_PER_MULTISET * m)``: far
above the ``~4 m`` of a boilerplate cluster, far below the ``m²`` of a long chain). The run's
own verified pairs (those that built the cluster) are free and always followed. When the next
row of a sweep would take the cluster past its budget, the sweep stops comparing and goes on
through the verified pairs only (they connect the cluster, so every row is still reached), and
the shape is marked ``bounded``. What stays true:

* every neighbour is a verified duplicate of its row, one hop nearer the kept row on the path
  found (the rule's own neighbour up to the level where the sweep stopped comparing, ``cut``);
  the hop count is exact up to ``cut + 1``, beyond it the length of a path of verified
  duplicates, an upper bound (``Neighbour.hops_exact`` false);
* no row at true distance ``<= cut`` can be missed (the levels before ``cut`` were compared
  with every row), so ``min(hops, cut + 1)`` never exceeds a row's true distance and the
  diameter reported is the largest such value of the two sweeps: still a lower bound
  (``diameter_exact`` false; ``chained`` true when it exceeds 1).

The run's ``report.json`` counts the bounded clusters and the removed rows whose hop counts are
upper bounds (``cluster_shape.bounded_clusters``, ``cluster_shape.hops_upper_bound_rows``).

Example:

>>> bags = [{"a": 1, "b": 1, "c": 1, "d": 1}, {"a": 1, "b": 1, "c": 1, "d": 1, "e": 1},
...         {"b": 1, "c": 1, "d": 1, "e": 1, "f": 1}]
>>> score = TokenPairScorer(lambda i: (bags[i], sum(bags[i].values())), 0.6, 0.6)
>>> shape, neighbours = describe_cluster([0, 1, 2], 0, {0: 0, 1: 1, 2: 2}, score)
>>> shape.diameter, shape.chained, neighbours[2].row, neighbours[2].hops
(2, True, 1, 2)
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from workbench.dedup.verification import verify_pair
from workbench.formatting import count
from workbench.thresholds import exact_threshold

#: clusters of at most this many distinct token multisets get every pair verified and an exact
#: diameter (at most 4,950 comparisons each); larger ones a double-sweep lower bound
EXACT_DIAMETER_LIMIT = 100

#: the work bound of a cluster above the limit (:func:`comparison_budget`): pairs put to the
#: scorer by its two sweeps, at least this many ...
SHAPE_BUDGET_MIN = 20_000
#: ... and this many per distinct multiset (a boilerplate cluster costs about 4 per multiset)
SHAPE_BUDGET_PER_MULTISET = 50

#: a pair's ``(set_jaccard, multiset_jaccard)`` when it is a duplicate, else ``None``
PairScorer = Callable[[int, int], "tuple[float, float] | None"]
#: row -> its verified duplicates in the run, with the pairs' scores
VerifiedPairs = Callable[[int], "Iterable[tuple[int, tuple[float, float]]]"]


def comparison_budget(multisets: int) -> int:
    """The most pairs the sweeps of a cluster of ``multisets`` distinct multisets above
    :data:`EXACT_DIAMETER_LIMIT` may put to the scorer (see the module's *Work bound*).

    >>> comparison_budget(150), comparison_budget(1000)
    (20000, 50000)
    """
    return max(SHAPE_BUDGET_MIN, SHAPE_BUDGET_PER_MULTISET * multisets)


@dataclass(frozen=True)
class ClusterShape:
    """How the rows of one cluster are joined.

    Attributes:
        size: rows in the cluster.
        multisets: distinct token multisets (exact groups) among them; 1 for ``exact_text``.
        kind: ``"tokens"`` (joined by the token rule) or ``"exact_text"`` (identical text
            below ``--min-tokens``, see :mod:`~workbench.dedup.text_identity`).
        diameter: the longest shortest path of the duplicate graph, in hops (exact, or a lower
            bound when ``diameter_exact`` is False).
        diameter_exact: the diameter is exact (every pair verified).
        edges: duplicate pairs between the multisets when every pair was verified, else ``None``.
        bounded: the search stopped at the cluster's work bound (:func:`comparison_budget`):
            the diameter is a lower bound from the rows compared, some hop counts upper bounds.
    """

    size: int
    multisets: int
    kind: str
    diameter: int
    diameter_exact: bool
    edges: int | None
    bounded: bool = False

    @property
    def chained(self) -> bool | None:
        """True when some two rows are no duplicates (diameter > 1); None when not decided."""
        if self.diameter > 1:
            return True
        return False if self.diameter_exact else None


@dataclass(frozen=True)
class Neighbour:
    """The verified neighbour a removed row is named a copy of.

    Attributes:
        row: its row index (a reference row index for ``contaminated`` rows).
        set_jaccard, multiset_jaccard: the pair's similarities.
        kind: ``"exact"``, ``"near"`` or ``"exact_text"``.
        hops: the removed row's distance to the kept row in the duplicate graph (``None`` for
            contaminated rows).
        hops_exact: ``hops`` is the shortest distance; false in a ``bounded`` cluster past the
            level where the search stopped comparing: there it is the length of a path of
            verified duplicates, an upper bound.
    """

    row: int
    set_jaccard: float
    multiset_jaccard: float
    kind: str
    hops: int | None
    hops_exact: bool = True


class TokenPairScorer:
    """Decides pairs of rows with the near-duplicate rule, remembering what it decided.

    Args:
        bag: row index -> ``(token counts, token count)``.
        set_threshold, multiset_threshold: t0 and t1 (:func:`verify_pair`).
        known: pairs ``(a, b)`` (``a < b``) already verified as duplicates, with their scores.
    """

    def __init__(self, bag: Callable[[int], tuple[Mapping[Hashable, int], int]], set_threshold: float,
                 multiset_threshold: float, known: Mapping[tuple[int, int], tuple[float, float]] | None = None) -> None:
        self.bag = bag
        self.thresholds = exact_threshold(set_threshold), exact_threshold(multiset_threshold)
        self.known = known or {}
        self.decided: dict[tuple[int, int], tuple[float, float] | None] = {}
        self.comparisons = 0

    def __call__(self, a: int, b: int) -> tuple[float, float] | None:
        key = (a, b) if a < b else (b, a)
        found = self.known.get(key)
        if found is not None:
            return found
        if key in self.decided:
            return self.decided[key]
        self.comparisons += 1
        (counts_a, size_a), (counts_b, size_b) = self.bag(key[0]), self.bag(key[1])
        score = verify_pair(counts_a, counts_b, size_a, size_b, *self.thresholds)
        found = (score.set_jaccard, score.multiset_jaccard) if score is not None and score.is_duplicate else None
        self.decided[key] = found
        return found

    def verified_pairs(self, group_of: Sequence[int] | Mapping[int, int]) -> VerifiedPairs:
        """The ``known`` pairs as :data:`VerifiedPairs` between exact-group representatives."""
        adjacency: dict[int, list[tuple[int, tuple[float, float]]]] = {}
        for (a, b), found in self.known.items():
            a, b = group_of[a], group_of[b]
            if a != b:
                adjacency.setdefault(a, []).append((b, found))
                adjacency.setdefault(b, []).append((a, found))
        return lambda row: adjacency.get(row, ())

    def forget(self) -> None:
        """Drop the decisions made so far (a cluster's; the next cluster never asks for them)."""
        self.decided.clear()


def describe_cluster(
    members: Sequence[int],
    source: int,
    group_of: Sequence[int] | Mapping[int, int],
    score: PairScorer,
    *,
    limit: int = EXACT_DIAMETER_LIMIT,
    verified: VerifiedPairs | None = None,
    budget: int | None = None,
) -> tuple[ClusterShape, dict[int, Neighbour]]:
    """The shape of one token cluster and the neighbour of each of its rows but ``source``.

    Args:
        members: the cluster's rows, ascending.
        source: the row the cluster keeps (or, when none is kept, its first row).
        group_of: row -> its exact group's representative (the group's smallest row).
        score: decides a pair of representatives (``None``: no duplicate).
        limit: see :data:`EXACT_DIAMETER_LIMIT`.
        verified: the run's verified pairs between representatives (the pairs that built the
            cluster, :meth:`TokenPairScorer.verified_pairs`); with them, a cluster above
            ``limit`` is searched within a work bound (the module's *Work bound*); without
            them, without one.
        budget: the bound, in pairs put to ``score``; default :func:`comparison_budget`.

    Returns:
        the :class:`ClusterShape` and row -> :class:`Neighbour` for every member but ``source``.

    Raises:
        RuntimeError: the duplicate graph of ``members`` is not connected (``score`` is not the
            rule the cluster was built with, or ``verified`` does not connect the cluster).
    """
    groups: dict[int, list[int]] = {}
    for member in members:
        groups.setdefault(group_of[member], []).append(member)
    representatives = sorted(groups)
    start = group_of[source]
    cut: int | None = None  # the level where the first sweep stopped comparing
    if len(representatives) <= limit:  # every pair: the exact graph
        adjacency: dict[int, list[tuple[int, tuple[float, float]]]] = {r: [] for r in representatives}
        for i, a in enumerate(representatives):
            for b in representatives[i + 1 :]:
                found = score(a, b)
                if found is not None:
                    adjacency[a].append((b, found))
                    adjacency[b].append((a, found))
        edges: int | None = sum(map(len, adjacency.values())) // 2

        def reach(node: int, depth: int, unreached: set[int]) -> list[tuple[int, tuple[float, float]]]:
            return [(v, found) for v, found in adjacency[node] if v in unreached]

        distance, parent = _search(start, representatives, reach)
        diameter = max(max(_search(r, representatives, reach)[0].values()) for r in representatives)
        exact, bounded = True, False
    else:  # compare each reached row with the rows not reached yet: a double sweep
        edges = None
        if verified is None:  # nothing to finish a stopped search with: no bound
            allowed = None
        else:
            allowed = budget if budget is not None else comparison_budget(len(representatives))
        sweep = _BoundedSweep(score, verified, allowed)
        distance, parent = _search(start, representatives, sweep.reach)
        cut = sweep.cut
        farthest = min(representatives, key=lambda r: (-distance[r], r))
        sweep.cut = None
        second = _search(farthest, representatives, sweep.reach)[0]
        diameter = max(_lower_bound(distance, cut), _lower_bound(second, sweep.cut))
        exact = False
        bounded = sweep.stopped
    diameter = max(diameter, 1)  # rows of one exact group are one hop apart
    neighbours: dict[int, Neighbour] = {}
    for representative, rows in groups.items():
        for row in rows:
            if row == source:
                continue
            if representative == start:
                neighbours[row] = Neighbour(source, 1.0, 1.0, "exact", 1)
                continue
            via, (set_j, multiset_j) = parent[representative]
            hops = distance[representative]
            neighbours[row] = Neighbour(source if via == start else via, set_j, multiset_j, "near", hops,
                                        cut is None or hops <= cut + 1)
    shape = ClusterShape(len(members), len(groups), "tokens", diameter, exact, edges, bounded)
    return shape, neighbours


class _BoundedSweep:
    """The ``reach`` of a breadth-first sweep above the limit: a reached row is compared with
    every row not reached yet while the budget lasts; the run's verified pairs are followed free.
    Once a row's comparisons would pass the budget, no more comparisons (``cut`` is its level)."""

    def __init__(self, score: PairScorer, verified: VerifiedPairs | None, budget: int | None) -> None:
        self.score, self.verified, self.left = score, verified, budget
        self.cut: int | None = None
        self.stopped = False  # some sweep of the cluster stopped comparing

    def reach(self, node: int, depth: int, unreached: set[int]) -> list[tuple[int, tuple[float, float]]]:
        free = {v: found for v, found in self.verified(node) if v in unreached} if self.verified is not None else {}
        if self.cut is None and self.left is not None:
            cost = len(unreached) - len(free)
            if cost > self.left:
                self.cut, self.stopped = depth, True
            else:
                self.left -= cost
        if self.cut is not None:
            return sorted(free.items())
        return [(v, found) for v in unreached if (found := free.get(v) or self.score(node, v)) is not None]


def _lower_bound(distance: Mapping[int, int], cut: int | None) -> int:
    """The eccentricity of a sweep's start, or a lower bound of it when the sweep stopped comparing
    at level ``cut``: rows past ``cut + 1`` are at least ``cut + 1`` away (the module's *Work bound*)."""
    if cut is None:
        return max(distance.values())
    return max(min(d, cut + 1) for d in distance.values())


def describe_clusters(
    clusters: Sequence[Sequence[int]],
    keepers: Sequence[int | None],
    group_of: Sequence[int],
    text_rows: set[int] | frozenset[int],
    token_score: TokenPairScorer,
    text_score: Callable[[int, int], tuple[float, float]],
) -> tuple[list[ClusterShape], dict[int, Neighbour]]:
    """The shape of every cluster of a run and the neighbour of each row its cluster does not keep.

    Args:
        clusters: the clusters (rows ascending); keepers: each one's kept row or ``None``.
        group_of: per row, its exact group's representative.
        text_rows: the rows of ``exact_text`` clusters.
        token_score: decides pairs of the token clusters (its ``known`` pairs, the run's verified
            ones, bound the work on large clusters: :func:`describe_cluster`); text_score:
            scores ``exact_text`` pairs.

    Returns:
        the shapes (in the order of ``clusters``) and row -> :class:`Neighbour` for every row but
        the kept one (the first row where none is kept).
    """
    shapes: list[ClusterShape] = []
    neighbours: dict[int, Neighbour] = {}
    verified = token_score.verified_pairs(group_of)
    for cluster, keeper in zip(clusters, keepers):
        source = keeper if keeper is not None else cluster[0]
        if cluster[0] in text_rows:
            shape, found = describe_text_cluster(cluster, source, text_score)
        else:
            shape, found = describe_cluster(cluster, source, group_of, token_score, verified=verified)
            token_score.forget()
        shapes.append(shape)
        neighbours.update(found)
    return shapes, neighbours


def describe_text_cluster(members: Sequence[int], source: int,
                          score: Callable[[int, int], tuple[float, float]]) -> tuple[ClusterShape, dict[int, Neighbour]]:
    """The shape of an ``exact_text`` cluster (every two rows are identical text: a clique of
    diameter 1) and the neighbour of each row but ``source``: ``source`` itself, one hop.

    Args:
        members: the rows, ascending; source: the kept row (or the first row).
        score: ``(a, b) -> (set_jaccard, multiset_jaccard)`` of two rows' token bags
            (:class:`~workbench.dedup.text_identity.TextPairScorer`).
    """
    neighbours = {row: Neighbour(source, *score(source, row), "exact_text", 1) for row in members if row != source}
    return ClusterShape(len(members), 1, "exact_text", 1, True, 0), neighbours


def _search(start: int, nodes: Sequence[int],
            reach: Callable[[int, int, set[int]], list[tuple[int, tuple[float, float]]]]):
    """Breadth-first search from ``start``, a level at a time, each level in ascending order.

    Args:
        start: the first node; nodes: every node.
        reach: ``(node, its level, unreached nodes) -> [(neighbour, pair scores)]`` among the
            unreached.

    Returns:
        ``(distance, parent)``: node -> hops from ``start``; node -> ``(the first node of the
        previous level joined to it, that pair's scores)``.

    Raises:
        RuntimeError: some node is not reached.
    """
    unreached = set(nodes)
    unreached.discard(start)
    distance = {start: 0}
    parent: dict[int, tuple[int, tuple[float, float]]] = {}
    level = [start]
    while level and unreached:
        following = []
        for node in level:
            for v, found in reach(node, distance[node], unreached):
                distance[v] = distance[node] + 1
                parent[v] = (node, found)
                following.append(v)
                unreached.discard(v)
        level = sorted(following)
    if unreached:
        raise RuntimeError(f"the duplicate graph of the cluster of row {start} is not connected "
                           f"({count(len(unreached), 'row')} unreached)")
    return distance, parent
