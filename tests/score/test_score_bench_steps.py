"""``benchmarks/score_bench.py``'s per-step breakdown, on the traces of a real DSA-CQE run (the LLM is
litellm's ``mock_response``, ``scripted_answer``; storage a real embedded Chroma with MiniLM)."""

from __future__ import annotations


from workbench.io import read_jsonl
from workbench.score.job import Columns, load_samples, score_samples

def test_steps_count_each_call_once_and_the_reference_for_the_sample_that_paid(tmp_path, ice_slice, scripted, score_kwargs,
                                                                             benchmark_script):
    bench = benchmark_script("score_bench")
    assert bench.step_of("analyse:reference:3:repair") == "analyse:reference" and bench.step_of("compare") == "compare"
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))
    score_samples(samples, **score_kwargs(scripted, method=["dsa-cqe"], score_mode="sampled", cache="off"))
    out = tmp_path / "out"
    steps = bench.step_breakdown(out / "traces.jsonl", "dsa-cqe")
    rows = read_jsonl(out / "scores.jsonl")
    assert set(steps) == {"analyse:generation", "analyse:reference", "compare", "total"}
    # every real call of the run counted once: the reference's by the first sample of its task
    assert steps["total"]["calls"] * len(rows) == sum(r["llm_calls"] for r in rows)
    assert steps["compare"]["calls"] == 1.0
    reference_calls = sum(r["reference_subcodes"] or 1 for r in rows) / 2  # analysed by one of 2 samples per task
    assert steps["analyse:reference"]["calls"] * len(rows) == reference_calls
    assert steps["total"]["reused_prompt_tokens"] == 0 and steps["total"]["truncated"] == 0


def test_with_several_references_each_is_counted_for_the_sample_that_paid(tmp_path, ice_slice, scripted, score_kwargs,
                                                                          benchmark_script):
    """A list-valued reference column: dsa-cqe's trace holds ``references`` (one entry per reference, each
    saying whether this sample paid for its analysis), not ``reference``; the breakdown reads both."""
    import json

    bench = benchmark_script("score_bench")
    rows = [json.loads(line) for line in ice_slice.read_text().splitlines()]
    several = tmp_path / "several.jsonl"
    several.write_text("".join(json.dumps({**row, "references": [row["reference"], row["reference"] + "    pass\n"]}) + "\n"
                               for row in rows))
    samples = load_samples(several, Columns(generation="completion_multipl_e", reference="references"))
    score_samples(samples, **score_kwargs(scripted, method=["dsa-cqe"], score_mode="sampled", cache="off",
                                          reference_column="references"))
    out = tmp_path / "out"
    traces = read_jsonl(out / "traces.jsonl")
    assert all("references" in t["trace"] and "reference" not in t["trace"] for t in traces)
    steps = bench.step_breakdown(out / "traces.jsonl", "dsa-cqe")
    scored = read_jsonl(out / "scores.jsonl")
    assert steps["total"]["calls"] * len(scored) == sum(r["llm_calls"] for r in scored)
    # both references of a task analysed by one of its 2 samples
    reference_calls = sum(r["reference_subcodes"] or 2 for r in scored) / 2
    assert steps["analyse:reference"]["calls"] * len(scored) == reference_calls
