"""Unit tests of the dedup building blocks: verification, union-find, exact groups, keep
policies, MinHash signatures (against datasketch itself) and LSH parameters."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from datasketch import MinHash

from workbench.dedup import (
    DedupConfig,
    DedupConfigError,
    UnionFind,
    choose_keeper,
    choose_lsh_parameters,
    exact_groups,
    identical_multisets,
    multiset_jaccard,
    set_jaccard,
    verify_pair,
)
from workbench.dedup.signatures import CachedTokenHash, minhash_signatures
from workbench.dedup.tokens import _pack_chunk


def bag(*tokens: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    return counts


def test_jaccard_definitions():
    a, b = bag("x", "x", "y", "z"), bag("x", "y", "y", "w")
    assert set_jaccard(a, b) == pytest.approx(2 / 4)  # {x,y} / {x,y,z,w}
    assert multiset_jaccard(a, b) == pytest.approx((1 + 1) / (2 + 2 + 1 + 1))  # min / max counts
    assert set_jaccard({}, {}) == 0.0 and multiset_jaccard({}, {}) == 0.0


def test_verify_pair_decides_exactly_at_the_thresholds():
    # 4 shared of 5 distinct: set Jaccard exactly 0.8, which counts (>= t0)
    a = bag("a", "b", "c", "d")
    b = bag("a", "b", "c", "d", "e")
    score = verify_pair(a, b, 4, 5, 0.8, 0.7)
    assert score is not None and score.set_jaccard == pytest.approx(0.8)
    assert score.multiset_jaccard == pytest.approx(0.8) and score.is_duplicate
    # raising t1 above the multiset Jaccard rejects the pair
    assert not verify_pair(a, b, 4, 5, 0.8, 0.81).is_duplicate
    # the size filter rules out pairs whose distinct-token counts differ too much
    assert verify_pair(bag("a"), bag("a", "b", "c"), 1, 3, 0.8, 0.7) is None
    # set test fails: multiset Jaccard is not computed
    failed = verify_pair(bag("a", "b", "c", "d", "e"), bag("a", "b", "c", "x", "y"), 5, 5, 0.8, 0.7)
    assert failed is not None and not failed.is_duplicate and failed.multiset_jaccard is None


def test_verify_pair_multiset_threshold_rejects_repetition_heavy_pairs():
    a = bag(*"abcde")
    b = bag(*("abcde" + "a" * 10))
    score = verify_pair(a, b, 5, 15, 0.8, 0.7)
    assert score.set_jaccard == 1.0 and score.multiset_jaccard == pytest.approx(5 / 15)
    assert not score.is_duplicate


def test_union_find_components():
    uf = UnionFind(7)
    assert uf.union(0, 1) and uf.union(1, 2) and not uf.union(0, 2)
    uf.union(4, 5)
    assert uf.connected(0, 2) and not uf.connected(2, 4)
    assert uf.components() == [[0, 1, 2], [4, 5]]
    assert uf.components([0, 1, 3]) == [[0, 1]]


def test_exact_groups_keep_input_order_and_skip_none():
    groups = exact_groups(["k1", None, "k2", "k1", "k1", "k2", "k3"])
    assert groups == {0: [0, 3, 4], 2: [2, 5], 6: [6]}


def test_identical_multisets_are_order_free_and_count_sensitive():
    bags = [bag("a", "b", "a"), bag("b", "a", "a"), bag("a", "b", "b"), bag("ab"), bag("a", "b", "a"), bag("b", "b", "a")]
    assert identical_multisets([0, 1, 2, 3, 4, 5], bags) == [[0, 1, 4], [2, 5], [3]]
    assert identical_multisets([2], bags) == [[2]]


SPLITS = ["train", "test", "train", "test", "valid"]
TOKENS = [30, 50, 40, 20, 60]


@pytest.mark.parametrize(
    ("members", "keep", "cross_set", "excluded", "expected"),
    [
        ([0, 1, 2], "first", "remove-test", set(), 0),
        ([1, 2], "first", "remove-test", set(), 2),  # cross-set: the train copy stays
        ([1, 2], "first", "remove-train", set(), 1),  # decontaminate train instead
        ([0, 1, 2, 3], "longest", "remove-train", set(), 1),
        ([0, 2, 4], "longest", "remove-test", set(), 4),
        ([1, 3, 4], "train-first", "remove-test", set(), 4),  # no train member: the third split's copy, not test's
        ([1, 3, 4], "longest", "remove-test", set(), 4),  # the longest of the non-test copies
        ([1, 3, 4], "train-first", "remove-train", set(), 1),  # remove-train: no rule without a train member
        ([1, 3], "first", "remove-test", set(), 1),  # test copies only
        ([3, 4, 2], "train-first", "remove-test", set(), 2),
        ([0, 2], "first", "remove-test", {0}, 2),
        ([0, 2], "first", "remove-test", {0, 2}, None),
    ],
)
def test_choose_keeper(members, keep, cross_set, excluded, expected):
    kept = choose_keeper(
        members, keep=keep, cross_set=cross_set, splits=SPLITS, n_tokens=TOKENS,
        train_split="train", test_split="test", excluded=excluded,
    )
    assert kept == expected


def test_choose_keeper_without_both_splits_in_the_data_has_no_cross_set_rule():
    # a dataset without a train split (test and valid only): --keep decides alone
    assert choose_keeper([1, 4], keep="first", cross_set="remove-test", splits=SPLITS, n_tokens=TOKENS,
                         train_split="train", test_split="test", train_and_test=False) == 1


def test_vectorised_signatures_equal_datasketch_bulk():
    rng = np.random.default_rng(0)
    vocabulary = [f"tok{i}" for i in range(500)] + ["'str'", "1.5", "ü"]
    sets = [sorted(set(rng.choice(vocabulary, size=int(rng.integers(1, 200))))) for _ in range(300)]
    parameters = choose_lsh_parameters(128, 0.6, (0.1, 0.9), seed=3)
    hashfunc = CachedTokenHash()
    ours = list(minhash_signatures(sets, parameters, hashfunc))
    reference = MinHash.bulk(sets, num_perm=128, seed=3, scheme="affine32", hashfunc=hashfunc)
    assert len(ours) == len(reference)
    for mine, theirs in zip(ours, reference):
        assert np.array_equal(mine.hashvalues, theirs.hashvalues)


def test_empty_token_set_is_refused():
    with pytest.raises(ValueError, match="empty"):
        list(minhash_signatures([["a"], []], choose_lsh_parameters(64, 0.6, (0.5, 0.5))))


def test_lsh_parameters_favour_recall_at_the_set_threshold():
    parameters = choose_lsh_parameters(128, 0.6, (0.1, 0.9))
    assert parameters.bands * parameters.rows <= 128
    assert 1 - parameters.candidate_probability(0.8) < 1e-4
    assert parameters.to_dict(0.8)["scheme"] == "affine32"
    assert choose_lsh_parameters(128, 0.6, (0.1, 0.9), params=(16, 8)).bands == 16


@pytest.mark.parametrize(
    "kwargs",
    [
        {"set_threshold": 0.0}, {"multiset_threshold": 1.5}, {"min_tokens": 0}, {"num_perm": 1},
        {"lsh_weights": (0.5, 0.6)}, {"lsh_bands": 20, "lsh_rows": 8}, {"lsh_bands": 20}, {"keep": "last"}, {"cross_set": "both"},
        {"keep": "train-first", "cross_set": "remove-train"},  # probe 27: cross_set silently won
    ],
)
def test_bad_parameters_fail_before_any_work(kwargs):
    with pytest.raises(DedupConfigError):
        DedupConfig(**kwargs)


def _crash_on_marker(chunk, spec=None, fallback="cp1252"):
    import os

    if any(value == "CRASH" for value, _ in chunk):
        os._exit(1)  # a worker dying mid-chunk, as a segfaulting grammar would
    return _pack_chunk(chunk, spec, fallback)  # the real one, imported before the patch


def id_bag(*tokens: bytes) -> dict[int, int]:
    from workbench.dedup.tokens import token_id

    return dict(Counter(token_id(t) for t in tokens))


def test_a_crashing_worker_costs_only_its_file(monkeypatch):
    import workbench.dedup.tokens as tokens_module

    monkeypatch.setattr(tokens_module, "_pack_chunk", _crash_on_marker)
    # distinct texts: identical ones are tokenized once, and this needs 3 chunks for 2 workers
    codes = [f"x = alpha + beta{i}" for i in range(300)] + ["CRASH"] + [f"y = gamma{i}" for i in range(300)]
    results = tokens_module.tokenize_files(codes, ["python"] * len(codes), workers=2)
    assert len(results) == len(codes)
    assert results[300].failure == "tokenizer crashed (worker process died)"
    assert results[0].counts == id_bag(b"x", b"alpha", b"beta0")
    assert results[-1].counts == id_bag(b"y", b"gamma299")


def test_identical_texts_are_tokenized_once_with_the_same_result():
    import workbench.dedup.tokens as tokens_module

    codes = ["a = b + c", None, "a = b + c", b"a = b + c", "d = e", "a = b + c", None]
    languages = ["python", "python", "python", "python", "python", "nosuchlanguage", "python"]
    done: list[int] = []
    results = tokens_module.tokenize_files(codes, languages, workers=1, on_progress=done.append)
    assert sum(done) == len(codes)
    assert results == [tokens_module.tokenize_one(code, language) for code, language in zip(codes, languages)]
    assert results[0] is results[2] and results[0] is not results[3]  # bytes and str cells are not merged
    assert results[5].failure == "no language plugin for 'nosuchlanguage'"


@pytest.mark.parametrize(
    "code",
    [
        'def f(x):\n    return x + "naïve ü €" + f"{x!r} {y}"  # 注释\n',
        "s = '日本語'\nprint(s, 1.5e3, b'\\xff')\n",
        "def broken(:\n    ü = 'x\n",
        "x = '\udcff lone surrogate'\n",  # not valid Unicode: the str path
    ],
)
def test_token_bytes_equal_the_plugins_str_tokens(code):
    from workbench.dedup.tokens import token_bytes
    from workbench.languages.registry import get_language

    plugin = get_language("python")
    tokens, has_error = plugin.scan_tokens(code)
    assert token_bytes(plugin, code) == ([t.encode("utf-8", errors="surrogatepass") for t in tokens], has_error)


def test_cached_token_hash_is_the_same_for_bytes_and_str():
    hashfunc = CachedTokenHash()
    words = ["self", "ü", "'日本'", "\udcff"]
    assert hashfunc.many([w.encode("utf-8", errors="surrogatepass") for w in words]) == hashfunc.many(words)


@pytest.mark.parametrize("n_keys", [0, 1, 400])
@pytest.mark.parametrize("fold", ["default", "colliding"])
def test_band_buckets_equal_datasketch_lsh_buckets(n_keys, fold, monkeypatch):
    import workbench.dedup.signatures as signatures_module
    from workbench.dedup.signatures import band_buckets, build_lsh_index, candidate_buckets, lean_minhash

    if fold == "colliding":  # the sort key is then the band's last value: different rows share keys
        monkeypatch.setattr(signatures_module, "_BAND_MIX", np.uint64(0))

    rng = np.random.default_rng(n_keys)
    parameters = choose_lsh_parameters(32, 0.6, (0.5, 0.5), params=(6, 5), seed=1)
    # few distinct values per position, so many bands collide (and some keys share all bands)
    signatures = rng.integers(0, 3, size=(n_keys, 32)).astype(np.uint32)
    keys = sorted(rng.choice(10 * n_keys + 1, size=n_keys, replace=False).tolist())
    reference = list(candidate_buckets(build_lsh_index(keys, (lean_minhash(s, 1) for s in signatures), parameters)))
    ours = band_buckets(keys, signatures, parameters)
    assert ours == reference
    assert (len(ours) > 0) == (n_keys > 1)


def test_minhash_matrix_handles_sets_longer_than_a_batch():
    from workbench.dedup.signatures import BATCH_TOKENS, minhash_matrix

    rng = np.random.default_rng(1)
    sizes = [3, BATCH_TOKENS + 500, 1, 40, BATCH_TOKENS, 7]  # a set over, one exactly at, the batch size
    sets = [rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32) for n in sizes]
    starts = np.cumsum([0] + sizes[:-1])
    ours = minhash_matrix(np.concatenate(sets), starts, 64, 5)
    identity = lambda value: int(value)  # noqa: E731 - the values are already 32-bit hashes
    reference = MinHash.bulk([s.tolist() for s in sets], num_perm=64, seed=5, scheme="affine32", hashfunc=identity)
    assert ours.shape == (len(sizes), 64)
    for mine, theirs in zip(ours, reference):
        assert np.array_equal(mine, theirs.hashvalues)


def test_token_bags_and_signatures_from_a_chunk():
    from workbench.dedup.tokens import SignatureSpec, token_id

    codes = ["a = b + b  # c\n" * 12, "x = 'y'\n", None, "def f(q):\n    return q.z + 1.5\n" * 6]
    results = _pack_chunk([(code, "python") for code in codes], SignatureSpec(32, 2, min_tokens=20)).unpack()
    assert results[0].counts == {token_id(b"a"): 12, token_id(b"b"): 24} and results[0].n_tokens == 36
    assert len(results[0].counts) == 2 and results[1].n_tokens == 2
    assert results[2].failure == "missing (null)" and results[2].counts == {}
    assert results[1].signature is None  # under min_tokens: no MinHash work
    for result, tokens in ((results[0], ["a", "b"]), (results[3], ["f", "q", "z", "1.5"])):
        expected = MinHash(num_perm=32, seed=2, scheme="affine32", hashfunc=CachedTokenHash())
        expected.update_batch([t.encode() for t in tokens])
        assert np.array_equal(np.frombuffer(result.signature, dtype=np.uint32), expected.hashvalues)


def test_band_buckets_refuse_unsorted_keys():
    from workbench.dedup.signatures import band_buckets

    parameters = choose_lsh_parameters(8, 0.6, (0.5, 0.5), params=(2, 4))
    with pytest.raises(ValueError, match="ascending"):
        band_buckets([3, 1], np.zeros((2, 8), dtype=np.uint32), parameters)


def test_minhash_setup_in_background_equals_the_in_process_one():
    from workbench.dedup.signatures import minhash_setup, minhash_setup_in_background

    here = minhash_setup(64, 3, 0.6, (0.1, 0.9))
    there = minhash_setup_in_background(64, 3, 0.6, (0.1, 0.9)).result(timeout=120)
    assert there.lsh == here.lsh and (there.lsh.bands, there.lsh.rows) == (here.lsh.bands, here.lsh.rows)
    assert np.array_equal(there.a, here.a) and np.array_equal(there.b, here.b)
    assert np.array_equal(here.a, MinHash(num_perm=64, seed=3, scheme="affine32").permutations[0])


def test_a_dead_setup_helper_is_replaced_in_process():
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    import datasets

    from workbench.data.loading import LoadedDataset
    from workbench.dedup import collect_rows, find_duplicates

    codes = ["def f(a, b):\n    return a + b + total + count + value\n" * 4] * 2 + ["x = 1\n"]
    loaded = LoadedDataset("memory", {"train": datasets.Dataset.from_dict({"id": ["a", "b", "c"], "content": codes})})
    rows = collect_rows(loaded, code_column="content", id_column="id")
    dead: Future = Future()
    dead.set_exception(BrokenProcessPool("helper died"))
    result = find_duplicates(rows, DedupConfig(workers=1), minhash=dead)
    assert result.clusters == [[0, 1]] and result.lsh.bands * result.lsh.rows <= 128


def test_run_dedup_never_imports_datasketch_in_the_main_process(tmp_path):
    import subprocess
    import sys

    corpus = tmp_path / "c.jsonl"
    code = "def f(a, b):\\n    return a + b + total + count + value + other\\n"
    # distinct texts (the comments differ) in three token bags; more than one chunk, so two workers
    rows = (f'{{"id": "{i}", "content": "# {i}\\n{code * (1 + i % 3)}"}}\n' for i in range(600))
    corpus.write_text("".join(rows))
    script = (
        "import sys\nfrom workbench.dedup import DedupConfig, run_dedup\n"
        f"run = run_dedup({str(corpus)!r}, DedupConfig(workers=2, min_tokens=5))\n"
        "assert run.report['overall']['clusters'] == 3, run.report['overall']\n"
        "print('datasketch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_collector_paused_restores_the_collectors_state():
    import gc

    from workbench.dedup.detection import collector_paused

    assert gc.isenabled()
    with pytest.raises(RuntimeError):
        with collector_paused():
            assert not gc.isenabled()
            with collector_paused():
                pass
            assert not gc.isenabled()  # an inner block leaves the outer pause alone
            raise RuntimeError("a failed run")
    assert gc.isenabled()


def test_columns_of_rows_regrouped_into_splits_keep_their_order(tmp_path):
    import json

    from workbench.data import load_records
    from workbench.dedup.rows import _column

    records = [{"id": f"r{i}", "split": ["train", "test", "train"][i % 3], "content": f"x{i} = {i}"} for i in range(50)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = load_records(tmp_path / "rows.jsonl", split_column="split")
    for split, dataset in loaded.splits.items():
        assert dataset._indices is not None  # a selection: the one-take path is the one tested
        expected = [r["content"] for r in records if r["split"] == split]
        assert _column(dataset, "content") == expected == dataset.with_format("arrow")["content"].to_pylist()


def test_take_by_chunk_equals_the_joined_take_in_any_order():
    """Per-chunk gathering (no transient copy of the whole column) must give ChunkedArray.take's values."""
    import pyarrow as pa

    from workbench.dedup.rows import _take_by_chunk

    column = pa.chunked_array([[f"c{k}r{i}" for i in range(n)] for k, n in enumerate([5, 0, 7, 1, 6])], pa.string())
    rng = np.random.default_rng(2)
    for positions in ([0, 2, 5, 6, 11, 12, 18], list(range(19)), [], rng.permutation(19)[:11].tolist(), [12, 12, 3]):
        assert _take_by_chunk(column, pa.array(positions, pa.int64())) == column.take(pa.array(positions, pa.int64())).to_pylist()
    with pytest.raises(IndexError):
        _take_by_chunk(column, pa.array([3, 19]))


def test_columns_of_a_shuffled_selection_keep_its_order(tmp_path):
    import json

    from workbench.data import load_records
    from workbench.dedup.rows import _column

    records = [{"id": f"r{i}", "content": f"x{i} = {i}"} for i in range(3000)]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    dataset = load_records(tmp_path / "rows.jsonl").splits["train"].shuffle(seed=1)
    assert dataset._indices is not None
    assert _column(dataset, "content") == dataset.with_format("arrow")["content"].to_pylist()


@pytest.mark.parametrize("thresholds", [(0.8, 0.7), (0.56, 0.56), (0.5, 0.55), (0.0, 0.0), (1.0, 1.0)])
def test_sorted_array_verification_equals_the_dict_verification(thresholds):
    from workbench.dedup.verification import verify_sorted_pair
    from workbench.thresholds import exact_threshold

    rng = np.random.default_rng(4)
    t0, t1 = (exact_threshold(t) for t in thresholds)
    bags = [{}, {7: 1}]
    for _ in range(300):  # overlapping vocabularies, so that every outcome occurs
        ids = rng.choice(60, size=int(rng.integers(1, 40)), replace=False)
        bags.append({int(i) * 0x9E3779B97F4A7C15 % 2**64: int(rng.integers(1, 5)) for i in ids})
    arrays = []
    for bag in bags:
        ids = np.array(sorted(bag), dtype=np.uint64)
        arrays.append((ids, np.array([bag[i] for i in ids.tolist()], dtype=np.uint32), sum(bag.values())))
    outcomes = Counter()
    for a in range(len(bags)):
        for b in range(a, len(bags), 7):
            expected = verify_pair(bags[a], bags[b], arrays[a][2], arrays[b][2], t0, t1)
            got = verify_sorted_pair(arrays[a][0], arrays[a][1], arrays[b][0], arrays[b][1], arrays[a][2],
                                     arrays[b][2], t0, t1)
            assert got == expected
            outcomes[None if got is None else got.is_duplicate] += 1
    assert thresholds == (0.0, 0.0) or len(outcomes) == 3


def test_a_pair_is_compared_only_in_the_first_band_where_its_rows_meet():
    """No set of compared pairs: a later band skips a pair whose rows shared a bucket of an
    earlier band (compared then), counts the rest, and finds a cross-partition duplicate once."""
    from types import SimpleNamespace

    from workbench.dedup.detection import REFERENCE, _BucketVerifier

    def tokens(*names: str) -> SimpleNamespace:
        counts = Counter(names)
        return SimpleNamespace(counts=counts, n_tokens=sum(counts.values()))

    base = [f"t{i}" for i in range(20)]
    rows = [tokens(*base), tokens(*(f"u{i}" for i in range(20))), tokens(*base, "extra"),  # 2: a copy of 0
            tokens(*(f"u{i}" for i in range(15)), *(f"v{i}" for i in range(5)))]  # 3: meets 1 in band 1; J 15/25
    counters = {"bucket_pairs": 0, "size_filtered": 0, "verified": 0, "rejected": 0}
    verifier = _BucketVerifier(rows, [None, None, REFERENCE, None], UnionFind(4), DedupConfig(), counters, bands=3)
    found = {band: [(p.a, p.b) for bucket in buckets for p in verifier.process(bucket, band)]
             for band, buckets in enumerate([[[0, 1, 2]], [[0, 1, 2], [1, 3]], [[0, 1, 2], [1, 3]]])}
    assert found == {0: [(0, 2)], 1: [], 2: []}  # the reference copy once, not once per band
    # band 0: (0,1) (0,2) (1,2); band 1: (1,3) only; band 2: nothing new
    assert verifier.enumerated == 4
    assert counters["bucket_pairs"] == 3 + 3 + 1 + 3 + 1
    assert counters["verified"] + counters["size_filtered"] == 4
