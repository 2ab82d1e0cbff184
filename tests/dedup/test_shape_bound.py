"""The work bound of the cluster-shape search (``cluster_shape``, *Work bound*), on a long chain.

The chain: 400 files of bare identifiers ``t<i>``, one per line, file ``k`` holding
``t<k>..t<k+19>`` (each the previous with its first line dropped and one line added), so the
Jaccard of files ``k`` and ``l`` at distance ``d = |k - l|`` is ``(20 - d) / (20 + d)``, set and
multiset alike: duplicates (>= 0.8 and >= 0.7) exactly when ``d <= 2`` (18/22 = 0.818; 17/23 =
0.739 is not). The duplicate graph is a band: the distance between ``k`` and ``l`` is
``ceil(d / 2)`` and the diameter ``ceil(399 / 2) = 200``. Searching it fully costs about
``400² / 2`` comparisons (79,401 measured); the bound (``max(20000, 50 x 400)``) stops it far earlier.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from workbench.dedup import DedupConfig, run_dedup
from workbench.dedup.cluster_shape import TokenPairScorer, comparison_budget, describe_cluster

N_FILES = 400
WIDTH = 20


def idents(lo: int) -> str:
    return "".join(f"t{i}\n" for i in range(lo, lo + WIDTH))


def true_jaccard(a: int, b: int) -> float:
    d = abs(a - b)
    return (WIDTH - d) / (WIDTH + d)


def true_hops(a: int, b: int) -> int:
    return math.ceil(abs(a - b) / 2)


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    folder = tmp_path_factory.mktemp("long_chain")
    rows = folder / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": f"f{k:03d}", "content": idents(k)}) + "\n" for k in range(N_FILES)))
    run = run_dedup(str(rows), DedupConfig(workers=1), output_dir=folder / "out")
    return run, folder / "out"


def test_the_long_chain_is_searched_within_the_bound(chain):
    run, out = chain
    shapes = read_csv(out / "cluster_shapes.csv")
    assert len(shapes) == 1 and shapes[0]["size"] == str(N_FILES) and shapes[0]["kept"] == "f000"
    shape = shapes[0]
    # the diameter is a lower bound of the true 200, and it says the cluster is a chain
    assert shape["diameter_exact"] == "false" and shape["chained"] == "true"
    assert 10 <= int(shape["diameter"]) <= 200
    # the bound was applied, and said so
    work, report = run.report["work"], run.report["cluster_shape"]
    assert work["shape_comparisons"] <= comparison_budget(N_FILES) < N_FILES ** 2 / 2
    assert work["shape_bounded_clusters"] == report["bounded_clusters"] == 1
    assert report["hops_upper_bound_rows"] > 0
    assert report["comparison_budget"] == {"min": 20000, "per_multiset": 50}


def test_the_bounded_neighbours_stay_true(chain):
    run, out = chain
    removed = {row["id"]: row for row in read_csv(out / "removed.csv")}
    assert len(removed) == N_FILES - 1
    hops_of = {name: int(row["hops_to_kept"]) for name, row in removed.items()} | {"f000": 0}
    exact_hops = 0
    for name, row in removed.items():
        k, neighbour = int(name[1:]), int(row["neighbour"][1:])
        # the neighbour is a true duplicate, with its true Jaccards, one hop nearer the kept row
        assert abs(k - neighbour) <= 2 and row["neighbour_kind"] == "near"
        assert float(row["set_jaccard"]) == pytest.approx(true_jaccard(k, neighbour), abs=1e-6)
        assert float(row["multiset_jaccard"]) == pytest.approx(true_jaccard(k, neighbour), abs=1e-6)
        assert hops_of[row["neighbour"]] == hops_of[name] - 1
        # a hop count is never below the true distance, and is the true one near the kept row
        assert hops_of[name] >= true_hops(k, 0)
        exact_hops += hops_of[name] == true_hops(k, 0)
        if true_hops(k, 0) <= 10:
            assert hops_of[name] == true_hops(k, 0)
    assert exact_hops >= 20


def test_the_bound_gives_the_unbounded_answer_where_it_is_exact():
    """describe_cluster on a 200-row chain: unbounded (the truth), then with a small budget."""
    n = 200
    bags = {k: {f"t{i}": 1 for i in range(k, k + WIDTH)} for k in range(n)}
    # the run's verified pairs: consecutive rows, the spanning path union-find would keep
    known = {(k, k + 1): (true_jaccard(k, k + 1),) * 2 for k in range(n - 1)}
    members, groups = list(range(n)), {k: k for k in range(n)}

    free = TokenPairScorer(lambda k: (bags[k], WIDTH), 0.8, 0.7, known)
    shape, truth = describe_cluster(members, 0, groups, free, limit=50)
    assert (shape.diameter, shape.bounded) == (100, False)  # the double sweep finds the true diameter here
    assert all(found.hops == true_hops(k, 0) and found.hops_exact for k, found in truth.items())

    score = TokenPairScorer(lambda k: (bags[k], WIDTH), 0.8, 0.7, known)
    shape, bounded = describe_cluster(members, 0, groups, score, limit=50,
                                      verified=score.verified_pairs(groups), budget=3000)
    assert score.comparisons <= 3000 < free.comparisons
    assert shape.bounded and not shape.diameter_exact and shape.chained
    assert 2 <= shape.diameter < 100
    assert set(bounded) == set(truth)
    last_exact = max(found.hops for found in bounded.values() if found.hops_exact)  # cut + 1
    for k, found in bounded.items():
        assert abs(found.row - k) <= 2 and found.hops >= truth[k].hops
        if found.hops_exact:
            assert found.hops == truth[k].hops
        if found.hops < last_exact:  # rows the search reached while comparing: the rule's own neighbour
            assert found.row == truth[k].row
    assert any(not found.hops_exact for found in bounded.values())
    # the bound only changes what the full search would cost more than: a budget above it changes nothing
    again = TokenPairScorer(lambda k: (bags[k], WIDTH), 0.8, 0.7, known)
    shape, same = describe_cluster(members, 0, groups, again, limit=50, verified=again.verified_pairs(groups),
                                   budget=10 ** 6)
    assert (shape.diameter, shape.bounded) == (100, False) and same == truth
