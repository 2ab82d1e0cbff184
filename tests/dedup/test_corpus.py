"""End to end on the synthetic 2k corpus of ../shared/bench: the clusters equal the
brute-force truth (Allamanis 2019 rule) exactly, and the outputs agree with it."""

from __future__ import annotations

import csv
import itertools
import json
from collections import Counter

import pytest

from workbench.dedup import DedupConfig, run_dedup


def cluster_pairs(clusters) -> set[tuple[str, str]]:
    return {tuple(sorted(p)) for c in clusters for p in itertools.combinations(c, 2)}


@pytest.fixture(scope="module")
def corpus_run(dup_corpus_2k, tmp_path_factory):
    out = tmp_path_factory.mktemp("dedup2k")
    run = run_dedup(
        str(dup_corpus_2k / "corpus.jsonl"), DedupConfig(code_column="content", id_column="id", split_column="split", workers=2),
        output_dir=out,
    )
    return run, out


def test_clusters_equal_the_brute_force_truth(corpus_run, dup_corpus_2k):
    run, out = corpus_run
    predicted = json.loads((out / "clusters.json").read_text())
    truth = json.loads((dup_corpus_2k / "truth_clusters.json").read_text())
    ours, theirs = cluster_pairs(predicted), cluster_pairs(truth)
    true_positives = len(ours & theirs)
    assert len(theirs) > 1000  # the corpus has real work in it
    assert true_positives / len(ours) == 1.0  # pair precision
    assert true_positives / len(theirs) == 1.0  # pair recall
    assert sorted(map(sorted, predicted)) == sorted(map(sorted, truth))


def test_every_reported_pair_is_a_verified_duplicate(corpus_run, dup_corpus_2k):
    run, out = corpus_run
    truth_pairs = {tuple(sorted(p[:2])): p[2:] for p in json.loads((dup_corpus_2k / "truth_pairs.json").read_text())}
    with open(out / "pairs.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and set(rows[0]) >= {"id_a", "id_b", "set_jaccard", "multiset_jaccard"}
    for row in rows:
        set_j, multiset_j = float(row["set_jaccard"]), float(row["multiset_jaccard"])
        assert set_j >= 0.8 and multiset_j >= 0.7
        key = tuple(sorted((row["id_a"], row["id_b"])))
        assert key in truth_pairs
        assert set_j == pytest.approx(truth_pairs[key][0], abs=1e-6)
        assert multiset_j == pytest.approx(truth_pairs[key][1], abs=1e-6)


def test_report_figures_agree_with_an_independent_count(corpus_run, dup_corpus_2k):
    run, _ = corpus_run
    report = run.report
    truth = json.loads((dup_corpus_2k / "truth_clusters.json").read_text())
    with open(dup_corpus_2k / "corpus.jsonl") as handle:
        rows = [json.loads(line) for line in handle]
    from workbench.languages import get_language

    python = get_language("python")
    multisets = Counter(frozenset(Counter(python.tokens(r["content"])).items()) for r in rows)
    overall = report["overall"]
    assert overall["files"] == 2000
    assert overall["exact_duplicates"] == sum(n - 1 for n in multisets.values())
    removable = sum(len(c) - 1 for c in truth)
    assert overall["exact_duplicates"] + overall["near_duplicates"] == removable
    assert overall["duplication_factor"] == pytest.approx(removable / 2000)
    assert overall["clusters"] == len(truth)
    assert sum(s["files"] for s in report["splits"].values()) == 2000
    split_of = {r["id"]: r["split"] for r in rows}
    cross = [c for c in truth if {split_of[m] for m in c} == {"train", "test"}]
    assert report["cross_set"]["cross_set_clusters"] == len(cross)
    test_with_train_dup = sum(1 for c in cross for m in c if split_of[m] == "test")
    assert report["cross_set"]["cross_set_test_files"] == test_with_train_dup
    n_test = sum(1 for r in rows if r["split"] == "test")
    assert report["cross_set"]["test_share_with_train_duplicate"] == pytest.approx(test_with_train_dup / n_test)
    assert report["lsh"]["datasketch_version"].startswith("2.0")


def test_outputs_keep_one_file_per_cluster_and_remove_test_copies(corpus_run, dup_corpus_2k):
    run, out = corpus_run
    truth = json.loads((dup_corpus_2k / "truth_clusters.json").read_text())
    kept = set()
    for split in ("train", "test"):
        with open(out / f"{split}.jsonl") as handle:
            for line in handle:
                row = json.loads(line)
                assert row["split"] == split and set(row) == {"id", "split", "path", "content"}
                kept.add(row["id"])
    split_of = {i: ("test" if i.startswith("files/test/") else "train") for c in truth for i in c}
    for cluster in truth:
        survivors = [m for m in cluster if m in kept]
        assert len(survivors) == 1
        if {split_of[m] for m in cluster} == {"train", "test"}:
            assert split_of[survivors[0]] == "train"  # the unbiased test set
    assert len(kept) == 2000 - sum(len(c) - 1 for c in truth)
    with open(out / "removed.csv") as handle:
        removed = list(csv.DictReader(handle))
    assert len(removed) == 2000 - len(kept)
    assert all(r["duplicate_of"] in kept for r in removed)


def test_remove_train_policy_and_longest_keeper(dup_corpus_2k):
    run = run_dedup(
        str(dup_corpus_2k / "corpus.jsonl"), DedupConfig(code_column="content", id_column="id", split_column="split", cross_set="remove-train",
                    keep="longest", workers=1),
    )
    result = run.result
    for cluster, keeper in zip(result.clusters, result.keepers):
        splits = {result.rows.splits[m] for m in cluster}
        if splits == {"train", "test"}:
            assert result.rows.splits[keeper] == "test"
        else:
            assert result.n_tokens[keeper] == max(result.n_tokens[m] for m in cluster)
    assert run.report["cross_set"]["policy"] == "remove-train"


def test_token_id_bags_are_exactly_the_string_token_bags(dup_corpus_2k):
    """The bags compare 64-bit token ids (workbench.dedup.tokens.token_id); on this corpus
    no two distinct tokens share an id, so every bag is the file's string-token bag."""
    from workbench.dedup.tokens import SignatureSpec, token_id, tokenize_files
    from workbench.languages import get_language

    with open(dup_corpus_2k / "corpus.jsonl") as handle:
        codes = [json.loads(line)["content"] for line in handle]
    python = get_language("python")
    string_bags = [Counter(python.tokens(code)) for code in codes]
    vocabulary = {token for bag in string_bags for token in bag}
    id_of = {token: token_id(token.encode("utf-8", errors="surrogatepass")) for token in vocabulary}
    assert len(vocabulary) > 5000 and len(set(id_of.values())) == len(vocabulary)  # no collision
    results = tokenize_files(codes, ["python"] * len(codes), workers=2, signatures=SignatureSpec(128, 1, 20))
    for result, bag in zip(results, string_bags):
        assert result.counts == {id_of[token]: count for token, count in bag.items()}
        assert result.n_tokens == sum(bag.values())


def test_neighbours_and_diameters_follow_the_brute_force_duplicate_graph(corpus_run, dup_corpus_2k):
    """Every pair of the brute-force truth is an edge: each removed row's neighbour is a truth
    pair with its Jaccards, its hop count is the shortest path to the kept row, the neighbour is
    the kept row when adjacent, else the first row (input order) one hop nearer; each cluster's
    diameter equals the truth graph's where exact, and is at most it where a lower bound."""
    import networkx

    run, out = corpus_run
    graph = networkx.Graph()
    for a, b, set_j, multiset_j in json.loads((dup_corpus_2k / "truth_pairs.json").read_text()):
        graph.add_edge(a, b, scores=(set_j, multiset_j))
    order = {row_id: index for index, row_id in enumerate(run.result.rows.ids)}
    clusters = json.loads((out / "clusters.json").read_text())
    with open(out / "cluster_shapes.csv") as handle:
        shapes = list(csv.DictReader(handle))
    with open(out / "removed.csv") as handle:
        removed = {row["id"]: row for row in csv.DictReader(handle)}
    assert len(shapes) == len(clusters) and len(removed) > 400
    exact_chained = 0
    for cluster, shape in zip(clusters, shapes):
        assert int(shape["size"]) == len(cluster) and shape["kind"] == "tokens"
        diameter = networkx.diameter(graph.subgraph(cluster))
        if shape["diameter_exact"] == "true":
            assert int(shape["diameter"]) == diameter
            assert shape["chained"] == ("true" if diameter > 1 else "false")
            exact_chained += diameter > 1
        else:
            assert 1 <= int(shape["diameter"]) <= diameter
        kept = shape["kept"]
        distance = networkx.single_source_shortest_path_length(graph.subgraph(cluster), kept)
        for member in cluster:
            if member == kept:
                continue
            row = removed[member]
            neighbour = row["neighbour"]
            assert row["duplicate_of"] == kept and int(row["hops_to_kept"]) == distance[member]
            set_j, multiset_j = graph.edges[member, neighbour]["scores"]
            assert float(row["set_jaccard"]) == pytest.approx(set_j, abs=1e-6)
            assert float(row["multiset_jaccard"]) == pytest.approx(multiset_j, abs=1e-6)
            assert row["neighbour_kind"] == ("exact" if (set_j, multiset_j) == (1.0, 1.0) else "near")
            nearer = [m for m in graph.neighbors(member) if distance.get(m) == distance[member] - 1]
            assert neighbour == (kept if kept in nearer else min(nearer, key=order.__getitem__))
    report = run.report["cluster_shape"]
    assert all(shape["diameter_exact"] == "true" for shape in shapes)  # all under the limit here
    assert report["chained_clusters"] == exact_chained == 7 and report["undecided_clusters"] == 0
