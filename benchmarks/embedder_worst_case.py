"""The Semantic Storage's embedding time per request, beside the LLM call's worst case.

DSA-CQE makes at most two embedding requests per analysed sub-code (``workbench/score/storage.py``):
the nearest-record query (one text: the sub-code) once the program's collection holds a record,
and the write-back (one batch: the sub-code with its description, then each accepted symbol's
description). With the default embedder (all-MiniLM-L6-v2 on onnxruntime, one thread) a request
has no deadline and no retries: its time is compute, bounded because every text is cut at 256
word pieces. This script measures that bound on this machine: one text at the cap, and a
write-back batch of 1 + ``--symbols`` texts at the cap (every sub-code's names are at most that
many in practice; more only scale it linearly), each ``--repeats`` times on fresh texts (the
embedder's memo would answer a repeated text at once). A remote embedding model
(``--embedding-model``) is bounded like an LLM call instead (:func:`workbench.llm.deadline.worst_case_seconds`).

Usage: ``nice python benchmarks/embedder_worst_case.py [--repeats 5] [--symbols 16]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--symbols", type=int, default=16)
    args = parser.parse_args()

    from workbench.llm.client import MAX_BACKOFF_S
    from workbench.llm.deadline import worst_case_seconds
    from workbench.llm.minilm import MAX_TOKENS
    from workbench.score.embeddings import MiniLMEmbedder

    started = time.perf_counter()
    embedder = MiniLMEmbedder()
    embedder.embed(["load"])
    load_s = time.perf_counter() - started

    def long_text(seed: int) -> str:  # far past the cap: every word below is at least one word piece
        return " ".join(f"value_{seed}_{i} = compute(value_{seed}_{i - 1})" for i in range(MAX_TOKENS))

    one, batch = [], []
    for repeat in range(args.repeats):
        began = time.perf_counter()
        embedder.embed([long_text(repeat)])
        one.append(time.perf_counter() - began)
        texts = [long_text(1000 * (repeat + 1) + k) for k in range(1 + args.symbols)]
        began = time.perf_counter()
        embedder.embed(texts)
        batch.append(time.perf_counter() - began)
    load = os.getloadavg()[0]
    print(f"all-MiniLM-L6-v2 (onnxruntime, 1 thread), load average {load:.1f} on {os.cpu_count()} CPUs:")
    print(f"  first use (load the model): {load_s:.2f} s")
    print(f"  one text at the {MAX_TOKENS}-word-piece cap: median {statistics.median(one):.3f} s, max {max(one):.3f} s")
    print(f"  a write-back batch of {1 + args.symbols} texts at the cap: median {statistics.median(batch):.3f} s, "
          f"max {max(batch):.3f} s")
    print(f"  so per sub-code at most {max(one) + max(batch):.2f} s of embedding")
    remote = worst_case_seconds(120.0, 2, 1.0, MAX_BACKOFF_S)
    print(f"a remote embedding model at the defaults (--timeout 120, --retries 2): {remote:.0f} s per request, "
          f"{2 * remote:.0f} s per sub-code")


if __name__ == "__main__":
    main()
