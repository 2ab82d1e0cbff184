"""A SYNTHETIC per-file metric for a make_dup_corpus.py train/test corpus: what a model that
memorised its training set would score, to show `workbench bias` the effect it measures.

Each test file scores 1 with probability 0.9 when the generator planted it in a cluster that
holds a training file (neither being a "far" rewrite, which is not a near copy by design), and
with probability 0.4 otherwise; train files get no value. The truth comes from the generator's
planted.json, not from `workbench dedup`, so the dedup's misses and the metric are independent.
These numbers are made up by this rule: they show the method, not any model.

Usage: python benchmarks/bias_synthetic_metric.py CORPUS_DIR OUT.jsonl [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    copied: set[str] = set()
    for cluster in json.loads((args.corpus / "planted.json").read_text()):
        near = [m for m in cluster["members"] if cluster["kinds"][m] != "far"]
        if any(m.startswith("files/train/") for m in near):
            copied.update(m for m in near if m.startswith("files/test/"))
    rows = [json.loads(line) for line in (args.corpus / "corpus.jsonl").read_text().splitlines()]
    with args.out.open("w") as handle:
        for row in rows:
            if row["split"] != "test":
                continue
            memorised = row["id"] in copied
            accuracy = int(rng.random() < (0.9 if memorised else 0.4))
            handle.write(json.dumps({"id": row["id"], "accuracy": accuracy, "planted_train_copy": int(memorised)}) + "\n")
    print(f"{args.out}: {sum(1 for r in rows if r['split'] == 'test')} test files, {len(copied)} with a planted train copy")


if __name__ == "__main__":
    main()
