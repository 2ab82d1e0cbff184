"""Connected components of a graph too large for the driver, on Spark DataFrames.

The alternating large-star / small-star iteration of Kiveris, Lattanzi, Mirrokni, Rastogi and
Vassilvitskii, "Connected Components in MapReduce and Beyond" (SoCC 2014), Sec. 3 (the
"Alternating Algorithm"): every node ends pointing at the smallest node of its component, in
O(log^2 n) rounds, each a few joins and aggregations over the edge list. No GraphFrames (its
JVM part comes from Maven); only Spark SQL.

For node ``u`` with neighbours ``N(u)``, ``m(u) = min(N(u) + {u})``:

* large-star: for each ``v`` in ``N(u)`` with ``v > u``, the edge ``(v, m(u))``;
* small-star: for each ``v`` in ``N(u)`` with ``v <= u`` (and ``u`` itself), the edge ``(v, m(u))``
  where ``m(u)`` is taken over those smaller neighbours.

Both keep the components and shrink them towards stars around their minimum; the iteration
stops when the graph is a set of such stars (every edge points from a leaf to a root that is
no leaf itself, each leaf has one root).

Example::

    edges = spark.createDataFrame([(1, 2), (2, 3), (7, 9)], "a long, b long")
    roots = connected_components(spark, edges)   # DataFrame (node, root): 2->1, 3->1, 9->7
"""

from __future__ import annotations

from typing import Any

#: rounds after which the iteration is stopped as broken (Kiveris et al. bound it by O(log^2 n):
#: about 400 for 2^20 nodes would already be far beyond what a real graph needs)
MAX_ROUNDS = 200


def connected_components(spark: Any, edges: Any) -> Any:
    """The component root (smallest node) of every node that has an edge.

    Args:
        spark: the SparkSession.
        edges: a DataFrame of undirected edges, two integer columns (names free); self loops
            and repeated edges are allowed.

    Returns:
        a DataFrame ``(node, root)`` with one row per node that is not a root; a node that is
        no ``node`` here (a root, or without edges) is its own root.

    Raises:
        RuntimeError: no convergence after :data:`MAX_ROUNDS` rounds (a bug, not bad input).
    """
    from pyspark.sql import functions as F

    first, second = edges.columns[:2]
    # each edge once, pointing from the larger node to the smaller (small-star's orientation)
    graph = (edges.select(F.greatest(first, second).alias("u"), F.least(first, second).alias("v"))
             .where("u != v").distinct().localCheckpoint())
    for _ in range(MAX_ROUNDS):
        graph = _small_star(_large_star(graph)).localCheckpoint()
        if _is_star_forest(graph):
            return graph.select(F.col("u").alias("node"), F.col("v").alias("root"))
    raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds")


def _large_star(graph: Any) -> Any:
    """Edges ``(u > v)`` -> for each node ``u`` and neighbour ``v > u``: ``(v, m(u))``, as ``(u > v)`` pairs."""
    from pyspark.sql import functions as F

    both = graph.union(graph.select(F.col("v").alias("u"), F.col("u").alias("v")))
    least = both.groupBy("u").agg(F.min("v").alias("m")).select("u", F.least("u", "m").alias("m"))
    return (both.join(least, "u").where(F.col("v") > F.col("u"))
            .select(F.col("v").alias("u"), F.col("m").alias("v")).where("u != v").distinct())


def _small_star(graph: Any) -> Any:
    """Edges ``(u > v)`` -> for each node ``u`` and its smaller neighbours ``v``: ``(v, m(u))`` and ``(u, m(u))``."""
    from pyspark.sql import functions as F

    least = graph.groupBy("u").agg(F.min("v").alias("m"))
    joined = graph.join(least, "u")
    moved = joined.select(F.col("v").alias("u"), F.col("m").alias("v"))
    own = least.select("u", F.col("m").alias("v"))
    return moved.union(own).where("u != v").select(F.greatest("u", "v").alias("u"), F.least("u", "v").alias("v")).distinct()


def _is_star_forest(graph: Any) -> bool:
    """Every leaf has exactly one edge, to a root that is no leaf itself (one Spark job)."""
    from pyspark.sql import functions as F

    leaves = graph.groupBy("u").agg(F.count("*").alias("edges"))
    forked = leaves.where("edges > 1").select("u")
    roots_that_are_leaves = graph.select(F.col("v").alias("u")).join(leaves.select("u"), "u", "left_semi")
    return forked.union(roots_that_are_leaves).limit(1).count() == 0
