"""A structured answer is the reply's JSON object that validates against the step's schema.

Replies hold more than their answer: braces in prose, an example object copied from the
prompt, fenced blocks, drafts, text after the answer. The first object that decodes used to be
taken, so such a reply became a parse_error (or took the example's values). The end-to-end
tests use a scripted OpenAI-compatible server on 127.0.0.1 (``fake_openai`` of conftest)
through litellm's real HTTP path.
"""

from __future__ import annotations

import json

import pytest

from workbench.io import read_jsonl
from workbench.llm.client import LLMClient, LLMParseError, LLMSettings
from workbench.llm.json_answer import NoJsonAnswerError, extract_json, find_json_answer, json_candidates
from workbench.score.job import Columns, load_samples, score_samples
from workbench.score.reading import json_value_offset
from workbench.score.schemas import (
    ANALYSIS_SCHEMA,
    COMPARE_SCHEMA,
    DIFFERENCES_SCHEMA,
    SEMANTICS_SCHEMA,
    SIMPLIFIED_SCHEMA,
)

#: a valid answer per step schema, and a valid "example" with other values
ANSWERS = {
    "analysis": (ANALYSIS_SCHEMA, {"description": "sums the list", "symbols": [{"name": "total", "description": "the sum"}]},
                 {"description": "DESCRIPTION", "symbols": []}),
    "compare": (COMPARE_SCHEMA, {"differences": ["off by one at the end"], "score": 3}, {"differences": [], "score": 0}),
    "simplified": (SIMPLIFIED_SCHEMA, {"reference_semantics": "r {x}", "candidate_semantics": "c", "differences": [],
                                       "score": 4}, {"reference_semantics": "", "candidate_semantics": "", "differences": [],
                                                     "score": 0}),
    "differences": (DIFFERENCES_SCHEMA, {"differences": ["none"]}, {"differences": ["EXAMPLE"]}),
    "semantics": (SEMANTICS_SCHEMA, {"reference_semantics": "r", "candidate_semantics": "c", "differences": ["d"]},
                  {"reference_semantics": "R", "candidate_semantics": "C", "differences": []}),
}

#: replies that hide the answer (``A``) among other JSON-looking text (``E``: the example)
SHAPES = {
    "braces-in-prose": "The code builds a dict {} and a set {1, 2}; {not json}. Answer: @A",
    "example-first": 'Answer in this form: @E\nMy answer:\n@A',
    "fenced-after-prose-object": 'Form: @E\n```json\n@A\n```',
    "fenced-before-trailing-object": '```json\n@A\n```\nFor comparison, a wrong answer would be @E',
    "several-candidates-last-wins": "Draft: @E\nRevised: @E\nFinal: @A",
    "trailing-text": '@A\n\nI hope this helps! Let me know if {anything} is unclear.',
    "unlabelled-fence": "~~~\n@A\n~~~ and {} after",
}


def _reply(shape: str, answer: dict, example: dict) -> str:
    return SHAPES[shape].replace("@A", json.dumps(answer)).replace("@E", json.dumps(example))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("step", ANSWERS)
def test_the_answer_is_the_object_that_matches_its_schema(step, shape):
    schema, answer, example = ANSWERS[step]
    reply = _reply(shape, answer, example)
    assert find_json_answer(reply, schema).value == answer
    assert extract_json(reply, schema) == answer


def test_several_valid_objects_the_last_wins_and_an_outer_object_beats_its_parts():
    first, last = {"differences": [], "score": 1}, {"differences": [], "score": 2}
    assert find_json_answer(f"{json.dumps(first)} then {json.dumps(last)}", COMPARE_SCHEMA).value == last
    nested = {"score": 3, "differences": ["x"]}
    wrapped = {"answer": nested}
    schema = {"type": "object", "required": ["answer"]}
    assert find_json_answer(json.dumps(wrapped), schema).value == wrapped


def test_a_valid_fenced_answer_beats_a_later_valid_unfenced_one():
    fenced, later = {"differences": [], "score": 4}, {"differences": [], "score": 0}
    reply = f"```json\n{json.dumps(fenced)}\n```\nexample: {json.dumps(later)}"
    assert find_json_answer(reply, COMPARE_SCHEMA).value == fenced


def test_no_valid_object_names_the_problem_of_the_likeliest_one():
    with pytest.raises(NoJsonAnswerError, match="no JSON object"):
        find_json_answer("I think it deserves a 3.", COMPARE_SCHEMA)
    with pytest.raises(NoJsonAnswerError, match=r"score: 7 is greater than the maximum of 4 \(nor does any of the other 1"):
        find_json_answer('{} and {"differences": [], "score": 7}', COMPARE_SCHEMA)


def test_candidates_keep_their_place_in_the_reply():
    reply = 'a {"x": {"y": 1}} b'
    spans = [(c.start, c.end, c.value) for c in json_candidates(reply)]
    assert spans == [(2, 17, {"x": {"y": 1}}), (8, 16, {"y": 1})]
    assert all(reply[start:end] == json.dumps(value) for start, end, value in spans)


def test_the_score_token_read_is_the_answers_not_the_examples():
    """Expected mode reads the log-probabilities at the score's token: in the answer's object."""
    reply = 'Form: {"differences": [], "score": 0}\nAnswer: {"differences": ["a"], "score": 3}'
    offset = json_value_offset(reply, "score", COMPARE_SCHEMA)
    assert reply[offset] == "3" and offset == len(reply) - 2


def test_the_client_takes_the_valid_object_without_a_repair_turn(fake_openai):
    schema, answer, example = ANSWERS["compare"]
    fake_openai.answer = lambda body: _reply("example-first", answer, example).replace("My answer", "{} My answer")
    client = LLMClient(LLMSettings(model="openai/judge", api_base=fake_openai.api_base, max_retries=0))
    assert client.complete_json([{"role": "user", "content": "compare"}], schema, prompt_version="v", step="s") == answer
    assert fake_openai.count() == 1  # no repair turn
    fake_openai.answer = lambda body: 'Only {"score": 9} and {} here'
    with pytest.raises(LLMParseError, match="score: 9 is greater than the maximum of 4|differences"):
        client.complete_json([{"role": "user", "content": "again"}], schema, prompt_version="v", step="s")


@pytest.mark.parametrize("method", ["dsa-cqe", "dsa-cqe-simplified"])
def test_every_json_step_of_a_scored_sample_reads_its_answer_among_decoys(method, tmp_path, ice_slice, fake_openai,
                                                                          scripted, score_kwargs):
    """Every structured step (DSA-CQE analysis and comparison, the simplified answer) gets its
    answer after a schema-valid example object and braces in prose, with text after it: the
    scores are those of the bare answers, with no parse failure and no repair turn."""
    samples = load_samples(ice_slice, Columns(generation="completion_multipl_e"))[:2]

    def run(decoy: bool, out: str) -> list[dict]:
        def answer(body):
            schema = body["response_format"]["json_schema"]["schema"]
            text = scripted(body["messages"], schema)
            if not decoy:
                return text
            example = {key: ([] if isinstance(value, list) else 0 if isinstance(value, int) else "EXAMPLE")
                       for key, value in json.loads(text).items()}
            return f"Use a dict {{}} here. Form: {json.dumps(example)}\nAnswer:\n{text}\nThat is all {{ok}}."

        fake_openai.answer = answer
        with fake_openai.lock:
            fake_openai.requests.clear()
        score_samples(samples, **score_kwargs(None, output_dir=tmp_path / out, method=[method], model="openai/judge",
                                              api_base=fake_openai.api_base, score_mode="sampled", cache="off"))
        rows = read_jsonl(tmp_path / out / "scores.jsonl")
        return rows, fake_openai.count()

    plain, plain_calls = run(False, "plain")
    decoyed, decoyed_calls = run(True, "decoyed")
    assert [r["status"] for r in decoyed] == ["ok", "ok"]
    assert sorted(r["score"] for r in decoyed) == sorted(r["score"] for r in plain)
    assert all(r["parse_failures"] == 0 for r in decoyed) and decoyed_calls == plain_calls
