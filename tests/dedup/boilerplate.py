"""A corpus whose files are nearly all one piece of boilerplate: ``n`` Django-style migrations
that differ only in their model name, so that one LSH bucket holds about ``n`` files in every band
(the case that makes MinHash pipelines cap or drop buckets). Written in the format of
``../shared/bench`` (``corpus.jsonl`` and ``tokens/corpus.jsonl.gz``) so that its
``brute_force_truth.py`` gives the truth."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

TEMPLATE = '''from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("inventory", "0001_initial")]

    operations = [
        migrations.AddField(
            model_name="{model}",
            name="created_at",
            field=models.DateTimeField(auto_now_add=True, null=True),
        ),
        migrations.AlterField(
            model_name="warehouse",
            name="capacity",
            field=models.IntegerField(default=100, help_text="units"),
        ),
    ]
'''


def write_boilerplate_corpus(out: Path, shared_bench: Path, n: int = 5000, others: int = 20) -> Path:
    """Write ``n`` boilerplate files (train and test) and ``others`` unrelated short ones into ``out``."""
    spec = importlib.util.spec_from_file_location("make_dup_corpus", shared_bench / "make_dup_corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # its tokenizer (Python's tokenize) is the truth's
    (out / "tokens").mkdir(parents=True, exist_ok=True)
    rows = [{"id": f"migrations/{i:05d}.py", "split": "test" if i % 5 == 0 else "train",
             "content": TEMPLATE.format(model=f"item_{i}")} for i in range(n)]
    rows += [{"id": f"other/{i}.py", "split": "train",
              "content": "\n".join(f"value_{i}_{j} = compute_{i}({j}, 'v{j}')" for j in range(12)) + "\n"}
             for i in range(others)]
    with open(out / "corpus.jsonl", "w") as corpus, gzip.open(out / "tokens" / "corpus.jsonl.gz", "wt") as tokens:
        for row in rows:
            corpus.write(json.dumps(row) + "\n")
            tokens.write(json.dumps({"filename": row["id"], "tokens": module.py_tokens(row["content"])}) + "\n")
    return out


def matrix_truth(tokens_file: Path, set_threshold: tuple[int, int] = (4, 5), multiset_threshold: tuple[int, int] = (7, 10),
                 min_tokens: int = 20) -> list[list[str]]:
    """The clusters of ``brute_force_truth.py`` (every pair decided exactly; connected components,
    sorted as it sorts them), computed with integer matrix products instead of a Python loop over
    pairs: that script needs ~400 s for the 12.5M pairs of the boilerplate corpus.

    For files i, j: ``|A_i ∩ A_j|`` is the product of the 0/1 token-presence matrix with its
    transpose, and ``Σ_t min(c_it, c_jt) = Σ_k [c_it >= k][c_jt >= k]`` a sum of such products,
    one per count level k. Tokens of one file only never meet another file, so only shared
    tokens become columns. Thresholds are fractions (0.8 = 4/5), compared in integers.
    """
    from collections import Counter

    import numpy as np
    from scipy.sparse import csgraph, csr_matrix

    names, bags = [], []
    with gzip.open(tokens_file, "rt") as handle:
        for line in handle:
            record = json.loads(line)
            bag = Counter(record["tokens"])
            if sum(bag.values()) >= min_tokens:
                names.append(record["filename"])
                bags.append(bag)
    files = Counter(token for bag in bags for token in bag)
    column = {token: k for k, token in enumerate(t for t, seen in files.items() if seen > 1)}
    cells = [(i, column[token], count) for i, bag in enumerate(bags) for token, count in bag.items() if token in column]
    rows_, columns_, values = (np.array(x, dtype=np.int64) for x in zip(*cells)) if cells else ([], [], [])
    counts = csr_matrix((values, (rows_, columns_)), shape=(len(bags), len(column)), dtype=np.int64)
    distinct = np.array([len(bag) for bag in bags], dtype=np.int64)
    sizes = np.array([sum(bag.values()) for bag in bags], dtype=np.int64)

    def gram(level: int) -> np.ndarray:
        """``G[i, j]`` = tokens that both i and j hold at least ``level`` times (integer sparse product)."""
        at_least = (counts >= level).astype(np.int64)
        return (at_least @ at_least.T).toarray()

    shared_set = gram(1)
    shared_multiset = shared_set.copy()
    for level in range(2, int(counts.max()) + 1 if counts.nnz else 1):
        shared_multiset += gram(level)
    set_union = distinct[:, None] + distinct[None, :] - shared_set
    multiset_union = sizes[:, None] + sizes[None, :] - shared_multiset
    (p, q), (r, s) = set_threshold, multiset_threshold
    duplicate = (q * shared_set >= p * set_union) & (s * shared_multiset >= r * multiset_union)
    np.fill_diagonal(duplicate, False)
    _, labels = csgraph.connected_components(csr_matrix(duplicate), directed=False)
    members: dict[int, list[str]] = {}
    for name, label in zip(names, labels):
        members.setdefault(int(label), []).append(name)
    return sorted((sorted(m) for m in members.values() if len(m) > 1), key=lambda m: (-len(m), m))
