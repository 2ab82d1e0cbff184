#!/usr/bin/env python3
"""Exact ground truth for a random sample of files, for corpora too large for brute force (1M files).

``../shared/bench/brute_force_truth.py`` compares every pair (O(n^2): hours at 100k, years at 1M).
This script finds, for each of ``--sample`` files drawn at random, *every* file of the corpus that
is its near-duplicate under the same rule (Allamanis 2019, Sec. 3: set Jaccard >= 0.8 and multiset
Jaccard >= 0.7 over the identifier and literal tokens of ``tokens/corpus.jsonl.gz``, files of at
least 20 tokens), then checks a run's ``clusters.json`` and ``pairs.csv`` against it:

* **recall**: every true pair (sampled file, its duplicate) lies inside one predicted cluster;
* **file precision**: a sampled file that the run put in a cluster has at least one true duplicate
  (a cluster member with none would be a false positive; the run's clusters are connected
  components of verified pairs);
* **pair precision**: ``--pairs`` pairs drawn from ``pairs.csv`` meet both thresholds when
  recomputed from the benchmark's tokens.

Finding every duplicate of a sampled file S without comparing it to all files uses the prefix
filter of set-similarity joins (Chaudhuri et al., ICDE 2006; Bayardo et al., WWW 2007): order
tokens by document frequency, rarest first; if |S & R| >= a then R contains one of the first
|S| - a + 1 tokens of S. A set Jaccard >= t implies |S & R| >= t * |S u R| >= t * |S|, so
a = ceil(t * |S|), and a file R sharing none of S's prefix tokens cannot be a duplicate of S.
Three streaming passes over the token file (document frequencies; the sampled bags; candidates and their
exact Jaccards); memory holds the token counts of the sampled files and the vocabulary's
document frequencies, not the corpus.

Usage::

    python benchmarks/dedup_sampled_truth.py /tmp/dupscale/dupcorpus1000000 OUT/ --sample 2000
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import math
import random
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

SET_THRESHOLD, MULTISET_THRESHOLD, MIN_TOKENS = 0.8, 0.7, 20  # Allamanis 2019, Sec. 3; dpu-utils' minimum


def token_lines(corpus: Path):
    """(file id, token list) for every file of ``tokens/corpus.jsonl.gz``."""
    with gzip.open(corpus / "tokens" / "corpus.jsonl.gz", "rt") as handle:
        for line in handle:
            record = json.loads(line)
            yield record["filename"], record["tokens"]


def jaccards(a: Counter, b: Counter) -> tuple[float, float]:
    """(set Jaccard, multiset Jaccard) of two token bags."""
    inter = len(a.keys() & b.keys())
    union = len(a) + len(b) - inter
    multi_inter = sum((a & b).values())
    multi_union = sum(a.values()) + sum(b.values()) - multi_inter
    return inter / union, multi_inter / multi_union


def is_duplicate(a: Counter, b: Counter) -> bool:
    set_j, multi_j = jaccards(a, b)
    return set_j >= SET_THRESHOLD and multi_j >= MULTISET_THRESHOLD


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", type=Path, help="a make_dup_corpus.py folder (tokens/corpus.jsonl.gz)")
    parser.add_argument("run", type=Path, help="a dedup output folder (clusters.json, pairs.csv)")
    parser.add_argument("--sample", type=int, default=2000, help="files whose every duplicate is found")
    parser.add_argument("--pairs", type=int, default=5000, help="pairs of pairs.csv recomputed")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    started = time.perf_counter()

    # pass 1: document frequency of every token, and the ids of the files the rule analyses
    frequency: Counter = Counter()
    analysed: list[str] = []
    for name, tokens in token_lines(args.corpus):
        if len(tokens) >= MIN_TOKENS:
            analysed.append(name)
            frequency.update(set(tokens))
    sampled = set(rng.sample(analysed, min(args.sample, len(analysed))))

    with open(args.run / "pairs.csv", newline="") as handle:
        predicted_pairs = [(row["id_a"], row["id_b"]) for row in csv.DictReader(handle)]
    checked_pairs = rng.sample(predicted_pairs, min(args.pairs, len(predicted_pairs)))
    wanted = sampled | {name for pair in checked_pairs for name in pair}
    print(f"pass 1: {len(analysed):,} files of >= {MIN_TOKENS} tokens, {len(frequency):,} distinct tokens, "
          f"{time.perf_counter() - started:.0f} s", flush=True)

    # pass 2: the bags of the files we need; candidates of the sampled files by their prefix tokens
    bags: dict[str, Counter] = {}
    order = {}  # sampled file -> its prefix (rarest tokens first)
    prefix_of: dict[str, list[str]] = defaultdict(list)
    for name, tokens in token_lines(args.corpus):
        if name in sampled:
            bag = Counter(tokens)
            distinct = sorted(bag, key=lambda token: (frequency[token], token))
            keep = len(distinct) - math.ceil(SET_THRESHOLD * len(distinct)) + 1
            order[name] = distinct[:keep]
            for token in distinct[:keep]:
                prefix_of[token].append(name)
        if name in wanted:
            bags[name] = Counter(tokens)
    truth: dict[str, set[str]] = {name: set() for name in sampled}
    candidates = 0
    for name, tokens in token_lines(args.corpus):
        if len(tokens) < MIN_TOKENS:
            continue
        hits = {s for token in set(tokens) if token in prefix_of for s in prefix_of[token]}
        hits.discard(name)
        if not hits:
            continue
        bag = Counter(tokens)
        for s in hits:
            candidates += 1
            if is_duplicate(bags[s], bag):
                truth[s].add(name)
    print(f"pass 2: {candidates:,} candidate pairs for {len(sampled):,} sampled files, "
          f"{sum(map(len, truth.values())):,} true pairs, {time.perf_counter() - started:.0f} s", flush=True)

    # the run against it
    cluster_of: dict[str, int] = {}
    for index, cluster in enumerate(json.loads((args.run / "clusters.json").read_text())):
        for member in cluster:
            cluster_of[str(member)] = index
    true_pairs = [(s, r) for s, found in truth.items() for r in found]
    missed = [(s, r) for s, r in true_pairs if s not in cluster_of or cluster_of.get(r) != cluster_of[s]]
    clustered = [s for s in sampled if s in cluster_of]
    lonely = [s for s in clustered if not truth[s]]
    wrong_pairs = [pair for pair in checked_pairs if not is_duplicate(bags[pair[0]], bags[pair[1]])]
    print(f"recall: {len(true_pairs) - len(missed):,} of {len(true_pairs):,} true pairs of the sampled files "
          f"inside one predicted cluster ({len(missed)} missed){': ' + str(missed[:5]) if missed else ''}")
    print(f"file precision: {len(clustered) - len(lonely):,} of {len(clustered):,} clustered sampled files have a "
          f"true duplicate ({len(lonely)} without){': ' + str(lonely[:5]) if lonely else ''}")
    print(f"pair precision: {len(checked_pairs) - len(wrong_pairs):,} of {len(checked_pairs):,} pairs of pairs.csv "
          f"meet both thresholds ({len(wrong_pairs)} do not){': ' + str(wrong_pairs[:5]) if wrong_pairs else ''}")
    print(f"done in {time.perf_counter() - started:.0f} s")
    sys.exit(1 if missed or lonely or wrong_pairs else 0)


if __name__ == "__main__":
    main()
