"""Score modes (issue 15) and the p-correct judge (issue 20) through litellm's real HTTP path.

The LLM is a scripted OpenAI-compatible server on 127.0.0.1 (``fake_openai``) that returns
chosen answers and chosen token log-probabilities in OpenAI's layout, as vLLM, llama.cpp's
server or OpenAI do; samples are real ICE-Score rows (2 tasks x pass/fail).
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.io import read_jsonl
from workbench.score.config import ScoreConfig
from workbench.score.job import Columns, fallback_notes, load_samples, score_samples

ICE_PIECES = ["Function", "al", " Correct", "ness", ":", " 3"]
ICE_TOP = {" 3": .5, " 4": .25, "4": .05, " 2": .1, "The": .1}  # mass .9 on 2, 3, 4
ICE_EXPECTED = (.5 * 3 + .3 * 4 + .1 * 2) / .9
VERDICT_TOP = {"Yes": .6, " yes": .1, "No": .2, " No": .05, "The": .05}  # P(Yes) .7, P(No) .25


@pytest.fixture
def samples(ice_slice):
    return load_samples(ice_slice, Columns(generation="completion_multipl_e"))


@pytest.fixture
def fake(fake_openai, scripted, logprobs_content):
    """The scripted server, with the conftest's scripted answers and log-probability builder."""
    fake_openai.scripted, fake_openai.token_logprobs = scripted, logprobs_content
    return fake_openai


def _run(fake, tmp_path, samples, methods, *, out="out", cache="cache", **options):
    config = ScoreConfig(method=methods, model="openai/fake", api_base=fake.api_base, cache_dir=tmp_path / cache,
                         retry_wait=0.01, retries=0, **options)
    report = score_samples(samples, config, tmp_path / out)
    return report, read_jsonl(tmp_path / out / "scores.jsonl")


def _ice_server(fake):
    fake.answer = lambda body: "".join(ICE_PIECES)
    fake.logprobs = lambda body, text: fake.token_logprobs(ICE_PIECES, {5: ICE_TOP})


def _verdict_server(fake, analysis="The candidate sorts in the wrong order."):
    """JSON steps get the scripted answers; the verdict turn (one token) answers Yes with
    VERDICT_TOP; a free-text analysis turn gets ``analysis``."""
    def answer(body):
        if body.get("response_format"):
            return fake.scripted(body["messages"], body["response_format"]["json_schema"]["schema"])
        return "Yes" if body.get("max_tokens") == 1 else analysis

    fake.answer = answer
    fake.logprobs = lambda body, text: fake.token_logprobs([text], {0: VERDICT_TOP}) if text == "Yes" else None


def _chat_requests(fake):
    return [r for r in fake.requests if "messages" in r]


def test_ice_score_expected_reads_the_score_token_distribution(fake, tmp_path, samples):
    _ice_server(fake)
    report, rows = _run(fake, tmp_path, samples, ["ice-score"])
    assert {r["status"] for r in rows} == {"ok"} and len(rows) == 4
    for row in rows:
        assert row["score"] == pytest.approx(ICE_EXPECTED)
        assert row["score_read"] == "expected" and row["score_mode"] == "expected"
        assert row["score_expected"] == pytest.approx(ICE_EXPECTED) and row["score_sampled"] == 3.0
        assert row["score_argmax"] == 3.0 and row["score_mass"] == pytest.approx(.9)
        assert row["score_distribution"]["4"] == pytest.approx(.3 / .9)
    request = _chat_requests(fake)[0]
    assert request["logprobs"] is True and request["top_logprobs"] == 20
    assert report.score_reads == {"ice-score": {"expected": 4}} and fallback_notes(report) == []
    wide = read_jsonl(tmp_path / "out" / "scores_wide.jsonl")
    assert all(w["ice-score"] == pytest.approx(ICE_EXPECTED) for w in wide)

    # a rerun into another folder is answered by the cache, log-probabilities included
    fake.requests.clear()
    _, again = _run(fake, tmp_path, samples, ["ice-score"], out="again")
    assert fake.count() == 0
    assert [r["score"] for r in again] == pytest.approx([r["score"] for r in rows])


def test_the_structured_score_field_is_read_in_expected_mode(fake, tmp_path, samples):
    text = json.dumps({"reference_semantics": "r", "candidate_semantics": "c", "differences": [], "score": 2})
    cut = text.index('"score": ') + len('"score": ')
    pieces = [text[:cut], "2", text[cut + 1:]]
    assert "".join(pieces) == text
    fake.answer = lambda body: text
    fake.logprobs = lambda body, answer: fake.token_logprobs(pieces, {1: {"2": .6, "1": .2, "4": .1, "x": .1}})
    _, rows = _run(fake, tmp_path, samples, ["dsa-cqe-simplified"])
    row = rows[0]
    assert row["score_read"] == "expected" and row["score_sampled"] == 2.0
    assert row["score"] == pytest.approx((.6 * 2 + .2 * 1 + .1 * 4) / .9)
    assert row["variant"] == "final-step=score" and row["scale_max"] == 4.0


def test_without_logprobs_expected_falls_back_to_the_sampled_answers_and_says_so(fake, tmp_path, samples):
    fake.answer = lambda body: "Functional Correctness: 2"  # and no logprobs (the default)
    report, rows = _run(fake, tmp_path, samples, ["ice-score"], n_samples=2)
    assert all(r["score"] == 2.0 and r["score_read"] == "sampled-fallback" for r in rows)
    assert all(r["score_expected"] is None and "no valid token log-probabilities" in r["read_note"] for r in rows)
    assert report.score_reads == {"ice-score": {"sampled-fallback": 4}}
    (note,) = fallback_notes(report)
    assert note.startswith("ice-score: 4 of 4 scored rows got no usable token log-probabilities")
    run = json.loads((tmp_path / "out" / "run.json").read_text())
    assert run["score_reads"] == {"ice-score": {"sampled-fallback": 4}}


def test_the_cli_summary_names_the_fallback(fake, tmp_path, ice_slice):
    fake.answer = lambda body: "3"
    result = CliRunner().invoke(app, [
        "score", str(ice_slice), "--method", "ice-score", "--model", "openai/fake", "--api-base", fake.api_base,
        "--generation-column", "completion_multipl_e", "--output", str(tmp_path / "cli"), "--cache", "off", "--no-progress",
    ])
    assert result.exit_code == 0, result.output
    assert "ice-score: 4 of 4 scored rows got no usable token log-probabilities" in " ".join(result.output.split())


def test_the_cli_counts_one_score_read_in_the_singular(fake, tmp_path, ice_slice):
    """The default job's dsa-cqe on one row printed "dsa-cqe: 1 scores read"."""
    _ice_server(fake)
    result = CliRunner().invoke(app, [
        "score", str(ice_slice), "--method", "ice-score", "--model", "openai/fake", "--api-base", fake.api_base,
        "--generation-column", "completion_multipl_e", "--output", str(tmp_path / "cli"), "--cache", "off",
        "--no-progress", "--limit", "1",
    ])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "ice-score: 1 score read: 1 as the probability-weighted score" in text, text


def test_sampled_mode_asks_for_no_logprobs_and_has_its_own_cache_entries(fake, tmp_path, samples):
    _ice_server(fake)
    _run(fake, tmp_path, samples, ["ice-score"])
    fake.requests.clear()
    _, rows = _run(fake, tmp_path, samples, ["ice-score"], out="sampled", score_mode="sampled")
    assert fake.count() == 4  # the expected-mode answers did not answer these calls
    assert all("logprobs" not in r and "top_logprobs" not in r for r in _chat_requests(fake))
    assert all(r["score"] == 3.0 and r["score_read"] == "sampled" and r["score_mode"] == "sampled" for r in rows)


def test_p_correct_reads_p_yes_with_its_variants(fake, tmp_path, samples):
    _verdict_server(fake)
    report, rows = _run(fake, tmp_path, samples, ["p-correct"])
    for row in rows:
        assert row["status"] == "ok" and row["score"] == pytest.approx(.7 / .95)
        assert row["p_yes"] == pytest.approx(.7) and row["p_no"] == pytest.approx(.25)
        assert row["score_mass"] == pytest.approx(.95) and row["answers"] == ["Yes"]
        assert row["read_note"] is None  # most of the mass on Yes/No: nothing to flag
        assert row["variant"] == "reference,one-step" and (row["scale_min"], row["scale_max"]) == (0.0, 1.0)
        assert row["model_identity"] == f"openai/fake @ {fake.api_base}"
        assert row["prompt_version"]
    requests = _chat_requests(fake)
    assert len(requests) == len(samples)
    for request in requests:  # samples are scored concurrently, so requests arrive in any order
        assert (request["max_tokens"], request["temperature"], request["top_logprobs"]) == (1, 0.0, 20)
        prompt = request["messages"][-1]["content"]
        assert "behave exactly like the reference" in prompt
        assert prompt.rstrip().endswith("Answer with one word: Yes or No.")
    prompts = [r["messages"][-1]["content"] for r in requests]
    assert all(any(s.reference.strip() in p for p in prompts) for s in samples)
    assert report.score_reads == {"p-correct": {"expected": 4}} and report.read_issues == {}


def test_p_correct_without_reference_scores_samples_that_have_none(fake, tmp_path, samples):
    _verdict_server(fake)
    no_reference = [type(s)(s.task_id, s.sample_id, s.generation, "", s.prompt, s.carried) for s in samples]
    _, rows = _run(fake, tmp_path, no_reference, ["p-correct", "ice-score"], reference=False)
    by_method = {(r["method"], r["sample_id"]): r for r in rows}
    assert {r["status"] for (m, _), r in by_method.items() if m == "p-correct"} == {"ok"}
    assert {r["status"] for (m, _), r in by_method.items() if m == "ice-score"} == {"skipped"}
    for request in _chat_requests(fake):
        prompt = request["messages"][-1]["content"]
        assert "Reference solution" not in prompt and "Is the candidate solution correct" in prompt
    assert rows[0]["variant"] == "no-reference,one-step"


def test_p_correct_analyse_first_reads_the_second_turn(fake, tmp_path, samples):
    _verdict_server(fake, analysis="It returns early on empty input.")
    _, rows = _run(fake, tmp_path, samples[:1], ["p-correct"], analyse_first=True)
    assert rows[0]["score"] == pytest.approx(.7 / .95) and rows[0]["variant"] == "reference,analyse-first"
    analysis, verdict = _chat_requests(fake)
    assert "logprobs" not in analysis and "Do not give a final verdict yet" in analysis["messages"][-1]["content"]
    assert verdict["messages"][-2] == {"role": "assistant", "content": "It returns early on empty input."}
    assert verdict["messages"][-1]["content"].endswith("Answer with one word: Yes or No.")
    assert verdict["top_logprobs"] == 20 and verdict["max_tokens"] == 1


def test_an_answer_neither_yes_nor_no_gets_one_repair_turn(fake, tmp_path, samples):
    replies = iter(["Maybe", "No"])
    fake.answer = lambda body: next(replies)  # no logprobs: sampled answers
    _, rows = _run(fake, tmp_path, samples[:1], ["p-correct"], score_mode="sampled")
    assert rows[0]["score"] == 0.0 and rows[0]["answers"] == ["No"]
    first, repair = _chat_requests(fake)
    assert first["temperature"] == 0.2  # sampled mode: the run's temperature, so repeats can differ
    assert repair["messages"][-1]["content"] == "Answer with one word: Yes or No."


def test_p_correct_without_logprobs_samples_its_repeats_at_the_run_temperature(fake, tmp_path, samples):
    """A provider without log-probabilities (the scripted server sends none): the temperature-0
    answer cannot vary, so the fallback asks again as sampled mode does, at the run's temperature,
    and the n_samples answers (here alternating Yes/No by arrival) are averaged."""
    answers = iter(["Yes", "No"] * 10)
    fake.answer = lambda body: "Yes" if body.get("temperature") == 0.0 else next(answers)
    report, rows = _run(fake, tmp_path, samples[:1], ["p-correct"], n_samples=2, temperature=0.7)
    (row,) = rows
    assert row["score_read"] == "sampled-fallback" and row["score"] == 0.5 and row["answers"] == ["Yes", "No"]
    assert row["read_note"] == "the provider returned no valid token log-probabilities"
    requests = _chat_requests(fake)
    assert [r["temperature"] for r in requests] == [0.0, 0.7, 0.0, 0.7]
    assert all("top_logprobs" not in r for r in requests[1::2])  # the sampled-mode request
    assert report.read_issues == {"p-correct": {"no log-probabilities returned": 1}}
    (note,) = fallback_notes(report)
    assert "(1 no log-probabilities returned)" in note and "sampled at the run's temperature" in note


def test_logprobs_without_yes_or_no_fall_back_and_the_summary_names_that_reason(fake, tmp_path, samples):
    # the temperature-0 answer and its alternatives hold neither Yes nor No; the sampled one says Yes
    fake.answer = lambda body: "Maybe" if body.get("temperature") == 0.0 else "Yes"
    fake.logprobs = lambda body, text: fake.token_logprobs([text], {0: {"Maybe": .9, "The": .1}})
    report, rows = _run(fake, tmp_path, samples[:2], ["p-correct"])
    assert all(r["score_read"] == "sampled-fallback" and r["score"] == 1.0 for r in rows)
    assert all(r["read_note"] == "no allowed token among the reported alternatives" for r in rows)
    (note,) = fallback_notes(report)
    assert "(2 log-probabilities returned but no allowed token among them)" in note


def test_a_verdict_with_little_probability_on_yes_and_no_is_flagged(fake, tmp_path, samples):
    """P(Yes) renormalised from a tail: scored (the value is what it is) but flagged per row and in the summary."""
    fake.answer = lambda body: "Maybe"
    fake.logprobs = lambda body, text: fake.token_logprobs([text], {0: {"Maybe": .97, "Yes": .02, "No": .01}})
    report, rows = _run(fake, tmp_path, samples[:2], ["p-correct"])
    for row in rows:
        assert row["status"] == "ok" and row["score_read"] == "expected" and row["score"] == pytest.approx(2 / 3)
        assert row["score_mass"] == pytest.approx(.03)
        assert row["read_note"].startswith("low probability mass: only 3.00% of the probability")
        assert "'Maybe'" in row["read_note"]
    assert report.read_issues == {"p-correct": {"low probability mass": 2}}
    (note,) = fallback_notes(report)
    assert note.startswith("p-correct: 2 of 2 scored rows put less than 50% of the answer token's probability")


def test_the_cache_key_changes_with_each_variant(fake, tmp_path, samples):
    _verdict_server(fake)
    variants = [
        {"methods": ["p-correct"]},
        {"methods": ["p-correct"], "reference": False},
        {"methods": ["p-correct"], "analyse_first": True},
        {"methods": ["p-correct"], "score_mode": "sampled"},
        {"methods": ["dsa-cqe-simplified"]},
        {"methods": ["dsa-cqe-simplified"], "final_step": "p-correct"},
        {"methods": ["dsa-cqe-simplified"], "score_mode": "sampled"},
    ]
    versions = set()
    for index, options in enumerate(variants):
        fake.requests.clear()
        _, rows = _run(fake, tmp_path, samples[:2], out=f"v{index}", **options)
        assert {r["status"] for r in rows} == {"ok"}, [(options, r["error"]) for r in rows]
        assert fake.count() >= 2, f"variant {options} was answered from another variant's cache entries"
        versions.add((rows[0]["method"], rows[0]["prompt_version"], rows[0]["variant"], rows[0]["score_mode"]))
    assert len(versions) == len(variants)
    # the same variant again: all cache hits
    fake.requests.clear()
    _run(fake, tmp_path, samples[:2], out="again", methods=["p-correct"], analyse_first=True)
    assert fake.count() == 0


def test_dsa_cqe_simplified_final_step_p_correct(fake, tmp_path, samples):
    _verdict_server(fake)
    _, rows = _run(fake, tmp_path, samples[:1], ["dsa-cqe-simplified"], final_step="p-correct")
    row = rows[0]
    assert row["score"] == pytest.approx(.7 / .95) and row["variant"] == "final-step=p-correct"
    assert (row["scale_min"], row["scale_max"]) == (0.0, 1.0)
    compare, verdict = _chat_requests(fake)
    schema = compare["response_format"]["json_schema"]["schema"]
    assert "score" not in schema["properties"] and "differences" in schema["properties"]
    assert "logprobs" not in compare
    assert json.loads(verdict["messages"][-2]["content"])["differences"] == []
    assert verdict["top_logprobs"] == 20


def test_dsa_cqe_final_step_p_correct_after_the_decomposed_analysis(fake, tmp_path, samples):
    """Real embedded Chroma with the offline MiniLM embeddings; the analyses are scripted."""
    _verdict_server(fake)
    _, rows = _run(fake, tmp_path, samples[:1], ["dsa-cqe"], final_step="p-correct")
    row = rows[0]
    assert row["status"] == "ok", row["error"]
    assert row["score"] == pytest.approx(.7 / .95) and row["subcodes"] >= 1
    steps = [r for r in _chat_requests(fake)]
    assert sum(1 for r in steps if r.get("max_tokens") == 1) == 1  # one verdict
    compare = [r for r in steps if r.get("response_format") and "differences" in
               r["response_format"]["json_schema"]["schema"]["properties"]]
    assert len(compare) == 1 and "score" not in compare[0]["response_format"]["json_schema"]["schema"]["properties"]
    # the analyses are shared with the score final step: they are cache hits there
    fake.requests.clear()
    _, again = _run(fake, tmp_path, samples[:1], ["dsa-cqe"], out="score-step", final_step="score")
    assert again[0]["status"] == "ok"
    assert len(_chat_requests(fake)) == 1  # only the 0-4 comparison is new


def test_a_folder_scored_before_score_modes_resumes_only_as_sampled(tmp_path, samples):
    """litellm's ``mock_response`` answers; a run.json without ``score_mode`` (written before
    score modes existed) scored the written answers."""
    from workbench.errors import WorkbenchError

    def config(**options):
        return ScoreConfig(method=["ice-score"], model="gpt-4o-mini", cache_dir=tmp_path / "cache", **options)

    score_samples(samples[:1], config(score_mode="sampled"), tmp_path / "old", mock_response="3")
    run_file = tmp_path / "old" / "run.json"
    record = json.loads(run_file.read_text())
    del record["config"]["score_mode"]
    run_file.write_text(json.dumps(record))
    with pytest.raises(WorkbenchError, match="score_mode 'sampled' -> 'expected'"):
        score_samples(samples, config(resume=True), tmp_path / "old", mock_response="3")
    report = score_samples(samples, config(resume=True, score_mode="sampled"), tmp_path / "old", mock_response="3")
    assert report.rows_written == 3 and report.resumed_rows == 1


def test_ice_score_reads_the_labelled_score_token_not_an_earlier_number(fake, tmp_path, samples):
    """Issue 12, item 3: "There are 4 issues. Final score: 2" is a 2, and in expected mode the
    distribution is the one at the "2" token (the "4" token's would give another score)."""
    pieces = ["There", " are", " 4", " issues", ".", " Final", " score", ":", " 2"]
    fake.answer = lambda body: "".join(pieces)
    fake.logprobs = lambda body, text: fake.token_logprobs(
        pieces, {2: {" 4": .9, " 3": .1}, 8: {" 2": .6, " 1": .4}})
    _, rows = _run(fake, tmp_path, samples[:1], ["ice-score"])
    (row,) = rows
    assert row["status"] == "ok" and row["score_sampled"] == 2.0 and row["score_read"] == "expected"
    assert row["score"] == pytest.approx(.6 * 2 + .4 * 1)


def test_an_out_of_range_score_gets_the_repair_turn_and_then_counts_as_a_parse_error(fake, tmp_path, samples):
    answers = iter(["Score: 7 (I checked 3 cases)", "2", "Score: 7 (I checked 3 cases)", "Final score: 9"])
    fake.answer = lambda body: next(answers)
    _, rows = _run(fake, tmp_path, samples[:1], ["ice-score"], score_mode="sampled")
    assert rows[0]["status"] == "ok" and rows[0]["score"] == 2.0  # never 4 (a clamp) nor 3 (a later number)
    assert len(_chat_requests(fake)) == 2
    assert "one integer from 0 to 4" in _chat_requests(fake)[1]["messages"][-1]["content"]
    _, rows = _run(fake, tmp_path, samples[1:2], ["ice-score"], score_mode="sampled", out="second")
    assert rows[0]["status"] == "parse_error" and rows[0]["score"] is None


def test_the_cli_summary_names_skipped_rows(tmp_path):
    """chrF (no LLM) on one sample with an empty reference: skipped, and the summary says so beside 'other'."""
    data = tmp_path / "gens.jsonl"
    data.write_text("\n".join(json.dumps(row) for row in [
        {"task_id": "T/0", "sample_id": 0, "generation": "return 1", "reference": "return 1"},
        {"task_id": "T/1", "sample_id": 0, "generation": "return 2", "reference": ""},
    ]) + "\n")
    result = CliRunner().invoke(app, ["score", str(data), "-m", "chrf", "-o", str(tmp_path / "out"), "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "chrf: 1 row skipped, not scored (the row's error says why" in " ".join(result.output.split())
