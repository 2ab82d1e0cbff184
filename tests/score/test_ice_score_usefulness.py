"""``-m ice-score-usefulness``: ICE-Score's usefulness aspect (its CoNaLa prompt) next to the
functional-correctness aspect (``ice-score``), on real rows of the bundled ``conala-all-grades``.
The LLM is litellm's own ``mock_response``: a scripted responder that reads the prompt it is sent."""

from __future__ import annotations

import re

from workbench.io import read_jsonl
from workbench.score.job import Columns, load_samples, score_samples
from workbench.score.methods import make_method


def _part(text: str, heading: str, following: str) -> str:
    return text.split(f"{heading}\n\n", 1)[1].split(f"\n\n{following}", 1)[0]


def _responder(seen: list[str]):
    """Answers a usefulness prompt with a grade that depends on the snippet it shows (4 when the
    snippet is the reference, else its length mod 4), a correctness prompt with 2."""

    def answer(messages, schema) -> str:
        text = messages[-1]["content"]
        seen.append(text)
        if "Usefulness (0-4)" in text:
            code, reference = _part(text, "Code Snippet:", "Evaluation Form:"), _part(text, "Reference Code:", "Code Snippet:")
            return f"Usefulness: {4 if code == reference else len(code) % 4}"
        assert "Functional Correctness (0-4)" in text
        return "Functional Correctness: 2"

    return answer


def test_usefulness_prompt_shows_intent_reference_and_snippet_and_its_score_is_read(tmp_path, score_kwargs):
    samples = load_samples("conala-all-grades", Columns(), limit=5)  # conala/0: the five models' generations
    assert [s.sample_id for s in samples] == ["baseline", "tranx-annot", "best-tranx", "best-tranx-rerank", "codex"]
    seen: list[str] = []
    report = score_samples(samples, **score_kwargs(_responder(seen), method=["ice-score-usefulness", "ice-score"]))
    assert report.statuses == {"ice-score-usefulness": {"ok": 5}, "ice-score": {"ok": 5}}
    usefulness = [text for text in seen if "Usefulness (0-4)" in text]
    assert len(usefulness) == 5 and len(seen) == 10
    for sample, text in zip(samples, usefulness):
        assert _part(text, "Problem:", "Reference Code:") == "send a signal `signal.SIGUSR1` to the current process"
        assert _part(text, "Reference Code:", "Code Snippet:") == "os.kill(os.getpid(), signal.SIGUSR1)"
        assert text.rstrip().endswith("Usefulness (scores ONLY)")

    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    by_method = {(r["method"], r["sample_id"]): r for r in rows}
    for sample in samples:
        expected = 4 if sample.generation == sample.reference else len(sample.generation) % 4
        assert by_method[("ice-score-usefulness", sample.sample_id)]["score"] == expected
        assert by_method[("ice-score", sample.sample_id)]["score"] == 2
    assert by_method[("ice-score-usefulness", "codex")]["score"] == 4  # codex copied the reference
    versions = {r["method"]: r["prompt_version"] for r in rows}
    assert versions["ice-score-usefulness"] != versions["ice-score"]  # one cache key per prompt
    wide = read_jsonl(tmp_path / "out" / "scores_wide.jsonl")
    assert len(wide) == 5 and all({"ice-score-usefulness", "ice-score"} <= set(row) for row in wide)
    steps = {e["step"] for t in read_jsonl(tmp_path / "out" / "traces.jsonl") for e in t["trace"].get("exchanges", [])}
    assert steps == {"ice-score-usefulness", "ice-score"}


def test_an_answer_without_usefulness_score_gets_the_repair_turn(tmp_path, score_kwargs):
    samples = load_samples("conala-all-grades", Columns(), limit=1)
    answers = iter(["The snippet is helpful.", "3"])
    report = score_samples(samples, **score_kwargs(lambda messages, schema: next(answers), method=["ice-score-usefulness"]))
    assert report.statuses == {"ice-score-usefulness": {"ok": 1}}
    (row,) = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert row["score"] == 3 and row["llm_calls"] == 2


def test_the_two_aspects_load_their_own_templates():
    useful, correct = make_method("ice-score-usefulness"), make_method("ice-score")
    assert useful.template.name == "ice_score_usefulness.txt" and correct.template.name == "ice_score.txt"
    assert useful.prompt_version != correct.prompt_version
    assert re.search(r"Usefulness \(0-4\)", useful.template.text)
