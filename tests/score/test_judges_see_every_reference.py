"""The LLM judges are shown every reference of a sample with several (a list-valued
``--reference-column``): one call whose prompt lists them as numbered alternatives, under the
form's own prompt version, and each row records how many references it was shown. A sample with
one reference is asked exactly as before (messages, prompt version and response-cache keys equal
to those recorded by the workbench before the change: ``tests/fixtures/single_reference_messages.json``).
DSA-CQE analyses each reference as it analyses one and compares with all of them in one call.

The LLM is litellm's ``mock_response`` (a function that reads the prompt it is sent); no model is
loaded. Real files, the real loader, the real response cache."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from workbench.errors import WorkbenchError
from workbench.io import read_jsonl
from workbench.options import OptionError
from workbench.score.config import ScoreConfig
from workbench.score.job import run_score
from workbench.score.methods import make_method
from workbench.score.prompts import PromptError, default_prompts_dir

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _recorder():
    spec = importlib.util.spec_from_file_location("make_single_reference_messages",
                                                  FIXTURES / "make_single_reference_messages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RECORDER = _recorder()
BEFORE = json.loads((FIXTURES / "single_reference_messages.json").read_text(encoding="utf-8"))
REFERENCES = ["    return b + a\n", "    return sum((a, b))\n", "    return a.__add__(b)\n"]
#: the variants that show a reference (p-correct --no-reference shows none)
SHOWING = [(label, options) for label, options in RECORDER.VARIANTS if options.get("reference", True)]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _run(tmp_path, rows, name="out", **options):
    data = _write(tmp_path / f"{name}.jsonl", rows)
    seen: list[dict] = []

    def answer(messages, schema):
        seen.append({"messages": messages, "schema": schema})
        return RECORDER.answer(messages, schema)

    config = ScoreConfig(**{"model": "gpt-4o-mini", "retries": 0, "workers": 1, "cache_dir": tmp_path / "cache",
                            "reference_column": "references", **options})
    report = run_score(data, config, tmp_path / name, mock_response=answer)
    return report, read_jsonl(tmp_path / name / "scores.jsonl"), seen


@pytest.mark.parametrize("references", [None, [RECORDER.SAMPLE["reference"]]], ids=["text column", "list of one"])
def test_a_sample_with_one_reference_is_asked_byte_for_byte_as_before(references):
    column = "reference" if references is None else "references"
    assert RECORDER.record(column, references) == BEFORE


def test_a_list_repeating_one_reference_is_one_reference_asked_byte_for_byte_as_before():
    """review38a: a list cell that gives one reference several times (CoNaLa's items 'type(v)' x 4 and
    a zip(...) snippet x 2) was shown to the judges as 4 "numbered alternatives" of the same text,
    under the several-references prompt version, and counted as a sample with several references. A
    reference repeated in the list counts once: such a cell is the text column's one reference."""
    reference = RECORDER.SAMPLE["reference"]
    assert RECORDER.record("references", [reference, reference, "  ", reference]) == BEFORE


def test_repeated_references_count_once_and_the_others_keep_their_order(tmp_path):
    rows = [{**RECORDER.SAMPLE, "references": [REFERENCES[1], REFERENCES[0], REFERENCES[1], REFERENCES[2]]}]
    report, scored, seen = _run(tmp_path, rows, method=["p-correct", "chrf"])
    assert {row["method"]: row["references_shown"] for row in scored} == {"p-correct": 3, "chrf": 3}
    prompt = seen[0]["messages"][-1]["content"]
    assert "any of these 3 is a correct solution" in prompt and "Reference 4:" not in prompt
    positions = [prompt.index(REFERENCES[index].strip()) for index in (1, 0, 2)]
    assert positions == sorted(positions)  # in the data's order, each where it first appears
    notes = json.loads((tmp_path / "out" / "run.json").read_text())["notes"]
    assert any(note.startswith("1 of 1 sample has several references (3)") for note in notes), notes


@pytest.mark.parametrize(("label", "options"), SHOWING, ids=[label for label, _ in SHOWING])
def test_every_judge_is_shown_every_reference_as_numbered_alternatives(tmp_path, label, options):
    sample = {**RECORDER.SAMPLE, "references": REFERENCES}
    del sample["reference"]
    report, (row,), seen = _run(tmp_path, [sample], **options)
    assert row["status"] == "ok", row["error"]
    assert row["references_shown"] == 3
    first = seen[0]["messages"][-1]["content"] if "analyse_first" not in options else seen[0]["messages"][0]["content"]
    # every reference, numbered, in the data's order, and the judge told that any of them is correct
    positions = [first.index(f"Reference {number}:\n") for number in (1, 2, 3)]
    assert positions == sorted(positions)
    for number, reference in enumerate(REFERENCES, 1):
        following = first[positions[number - 1]:]
        assert reference.rstrip("\n") in following.split(f"Reference {number + 1}:")[0]
    assert "any of these 3 is a correct solution" in first
    # one call per repeat, as for one reference (the verdict turns follow the comparison)
    before = next(entry for entry in BEFORE if entry["variant"] == label)
    assert row["llm_calls"] == len(before["calls"])
    # its own prompt version, recorded in the row and in run.json; the one-reference version unchanged
    method = make_method(options["method"][0], final_step=options.get("final_step", "score"),
                         analyse_first=options.get("analyse_first", False))
    assert method.prompt_version == before["prompt_version"]
    assert row["prompt_version"] == method.several_references_version != before["prompt_version"]
    record = json.loads((tmp_path / "out" / "run.json").read_text())["config"]
    assert record["several_references_prompts"] == {method.name: method.several_references_version}
    assert record["methods"] == {method.name: before["prompt_version"]}
    if "final_step" in options or options["method"] == ["p-correct"]:  # the question asks about one of them
        question = [m for exchange in seen for m in exchange["messages"] if "Yes or No" in m["content"]][0]["content"]
        assert "behave exactly like one of the references" in question


def test_one_run_shows_each_sample_its_own_references_and_records_how_many(tmp_path):
    rows = [
        {**RECORDER.SAMPLE, "sample_id": 0, "references": REFERENCES},
        {**RECORDER.SAMPLE, "sample_id": 1, "references": REFERENCES[:1]},
        {**RECORDER.SAMPLE, "sample_id": 2, "references": ["  ", REFERENCES[1]]},  # a blank entry is no reference
        {**RECORDER.SAMPLE, "sample_id": 3, "references": []},
    ]
    report, scored, seen = _run(tmp_path, rows, method=["ice-score", "p-correct", "chrf"])
    shown = {(row["method"], row["sample_id"]): row["references_shown"] for row in scored}
    assert shown == {(method, sample): count for method in ("ice-score", "p-correct", "chrf")
                     for sample, count in ((0, 3), (1, 1), (2, 1), (3, 0))}
    assert {row["status"] for row in scored if row["sample_id"] == 3} == {"skipped"}
    versions = {(row["method"], row["sample_id"]): row["prompt_version"] for row in scored}
    ice = make_method("ice-score")
    assert versions[("ice-score", 0)] == ice.several_references_version
    assert versions[("ice-score", 1)] == versions[("ice-score", 2)] == ice.prompt_version
    prompts = [exchange["messages"][-1]["content"] for exchange in seen if exchange["schema"] is None]
    assert len({text for text in prompts if "Reference 3:" in text}) == 2  # sample 0's prompt of each judge
    # sample 2: its one non-blank reference, in the one-reference prompt
    assert any(text.split("Reference Code:\n\n")[-1].startswith(REFERENCES[1]) and "Reference 1:" not in text
               for text in prompts)
    notes = json.loads((tmp_path / "out" / "run.json").read_text())["notes"]
    assert ("1 of 4 samples has several references (3): chrf scores each against all of them (the best reference's "
            "score); ice-score, p-correct show the judge all of them in one prompt, as numbered alternatives") in notes


def test_p_correct_without_reference_is_shown_none(tmp_path):
    sample = {**RECORDER.SAMPLE, "references": REFERENCES}
    _, (row,), seen = _run(tmp_path, [sample], method=["p-correct"], reference=False)
    assert row["references_shown"] == 0 and row["status"] == "ok"
    assert not any("return sum" in m["content"] for exchange in seen for m in exchange["messages"])
    before = next(entry for entry in BEFORE if entry["variant"] == "p-correct --no-reference")
    assert row["prompt_version"] == before["prompt_version"]
    assert "several_references_prompts" in json.loads((tmp_path / "out" / "run.json").read_text())["config"]


def _dsa_run(tmp_path, fake_openai, scripted, rows, name, **options):
    """dsa-cqe through the real pipeline: the chat answers are litellm's ``mock_response``
    (conftest's ``scripted_answer``), the embeddings of the Semantic Storage come from the fake
    OpenAI-compatible server on 127.0.0.1 (no embedding model is loaded), Chroma is real."""
    data = _write(tmp_path / f"{name}.jsonl", rows)
    seen: list[list[dict]] = []

    def answer(messages, schema):
        seen.append(messages)
        if schema is None and "Yes or No" in messages[-1]["content"]:
            return "Yes"
        return scripted(messages, schema)

    config = ScoreConfig(**{"method": ["dsa-cqe"], "model": "gpt-4o-mini", "retries": 0, "workers": 1,
                            "cache_dir": tmp_path / "cache", "score_mode": "sampled", "embedding_model": "openai/embed",
                            "embedding_api_base": fake_openai.api_base, **options})
    run_score(data, config, tmp_path / name, mock_response=answer)
    traces = {trace["sample_id"]: trace["trace"] for trace in read_jsonl(tmp_path / name / "traces.jsonl")}
    return {row["sample_id"]: row for row in read_jsonl(tmp_path / name / "scores.jsonl")}, traces, seen


#: dsa-cqe's prompt versions as its rows of the fidelity runs recorded them (2181f7c), for each final step
DSA_RECORDED = {
    final_step: {row["prompt_version"] for row in read_jsonl(
        Path(__file__).resolve().parents[2] / "benchmarks/results/fidelity_runs/q1.5b" / folder / "scores.jsonl")}
    for final_step, folder in (("score", "dsa-cqe-expected"), ("p-correct", "dsa-cqe-final-p-correct"))
}

DSA_GENERATION = "    total = a + b\n    return total\n"
DSA_REFERENCES = ["    result = b + a\n    return result\n", "    return sum([a, b])\n", "    s = a\n    s += b\n    return s\n"]


@pytest.mark.parametrize("final_step", ["score", "p-correct"])
def test_dsa_cqe_analyses_every_reference_and_compares_with_all_in_one_call(tmp_path, fake_openai, scripted, final_step):
    base = {"task_id": "HumanEval/0", "prompt": RECORDER.SAMPLE["prompt"], "generation": DSA_GENERATION}
    rows = [{**base, "sample_id": 0, "references": DSA_REFERENCES},
            {**base, "sample_id": 1, "references": DSA_REFERENCES},  # same task: the analyses are reused
            {**base, "sample_id": 2, "references": DSA_REFERENCES[:1]}]
    scored, traces, seen = _dsa_run(tmp_path, fake_openai, scripted, rows, "several", reference_column="references",
                                    final_step=final_step)
    assert [scored[i]["status"] for i in range(3)] == ["ok"] * 3, [scored[i]["error"] for i in range(3)]
    assert [scored[i]["references_shown"] for i in range(3)] == [3, 3, 1]
    method = make_method("dsa-cqe", final_step=final_step)
    assert {method.prompt_version} == DSA_RECORDED[final_step]  # the one-reference form: as the recorded rows
    assert scored[0]["prompt_version"] == scored[1]["prompt_version"] == method.several_references_version
    assert scored[2]["prompt_version"] == method.prompt_version != method.several_references_version
    # each reference decomposed and analysed once for the task, by the sample that came first
    analysed = traces[0]["references"]
    assert [entry["analysed_for_this_sample"] for entry in analysed] == [True] * 3
    assert [entry["analysed_for_this_sample"] for entry in traces[1]["references"]] == [False] * 3
    assert scored[0]["reference_subcodes"] == sum(len(entry["decomposition"]["subcodes"]) for entry in analysed)
    assert "reference" not in traces[0] and "references" not in traces[2] and "reference" in traces[2]
    # one comparison listing every reference, its code and what it does, as numbered alternatives
    compare = [exchange for exchange in traces[0]["compare"] if exchange["step"] == "compare"]
    assert len(compare) == 1
    text = compare[0]["messages"][-1]["content"]
    assert "any of these 3 is a correct solution" in text and "the reference closest to it" in text
    for number, reference in enumerate(DSA_REFERENCES, 1):
        assert f"Reference {number}:\n```python\n{reference}" in text
        assert f"What reference {number} does, part by part:\n" in text
    if final_step == "p-correct":
        question = [e for e in traces[0]["compare"] if e["step"].startswith("compare:verdict")][0]["messages"][-1]
        assert "behave exactly like one of the references" in question["content"]
    record = json.loads((tmp_path / "several" / "run.json").read_text())["config"]
    assert record["several_references_prompts"] == {"dsa-cqe": method.several_references_version}


def test_dsa_cqe_with_one_reference_asks_as_before_from_a_text_or_a_list_column(tmp_path, fake_openai, scripted):
    row = {"task_id": "HumanEval/0", "sample_id": 0, "prompt": RECORDER.SAMPLE["prompt"], "generation": DSA_GENERATION}
    text, text_traces, text_seen = _dsa_run(tmp_path, fake_openai, scripted, [{**row, "reference": DSA_REFERENCES[0]}], "text")
    listed, listed_traces, listed_seen = _dsa_run(tmp_path, fake_openai, scripted, [{**row, "references": DSA_REFERENCES[:1]}],
                                                  "listed", reference_column="references")
    assert text[0]["prompt_version"] == listed[0]["prompt_version"] and {text[0]["prompt_version"]} == DSA_RECORDED["score"]

    def messages(trace):
        return [e["messages"] for e in (*trace["reference"]["exchanges"], *trace["generation"]["exchanges"],
                                        *trace["compare"])]

    assert messages(listed_traces[0]) == messages(text_traces[0]) == text_seen  # the same messages, every call
    assert not listed_seen  # the same cache keys: every call of the list run was answered by the text run's cache
    assert listed[0]["cache_hits"] == len(text_seen) and listed[0]["llm_calls"] == 0


def test_a_method_that_compares_with_one_reference_is_refused_in_one_line_naming_the_option_and_the_judges():
    from workbench.score.base import Sample, ScoringMethod
    from workbench.score.job import check_several_references

    class FirstOnly(ScoringMethod):
        name = "first-only"

    samples = [Sample("t", 0, "x", "y", references=("y", "z")), Sample("t", 1, "x", "y", references=("y",))]
    with pytest.raises(OptionError) as raised:
        check_several_references(samples, [make_method("chrf"), FirstOnly()])
    assert str(raised.value) == (
        "first-only compares a generation with one reference, but 1 of 2 samples has several in reference_column: "
        "score them with dsa-cqe, dsa-cqe-simplified, ice-score, ice-score-usefulness, p-correct or chrf (which use "
        "every reference), or name a column of one reference")
    assert raised.value.render(lambda name: "--" + name.replace("_", "-")).count("--reference-column") == 1
    check_several_references(samples[1:], [FirstOnly()])  # one reference each: no error
    from workbench.score.methods import METHODS

    check_several_references(samples, [make_method(name) for name in METHODS])  # every method uses them all


def test_a_prompts_folder_without_the_several_references_form_is_refused_only_when_it_is_needed(tmp_path):
    folder = tmp_path / "prompts"
    shutil.copytree(default_prompts_dir(), folder, ignore=shutil.ignore_patterns("*_references.txt"))
    one = {**RECORDER.SAMPLE, "references": REFERENCES[:1]}
    _, (row,), _ = _run(tmp_path, [one], name="one", method=["ice-score"], prompts_dir=str(folder))
    assert row["status"] == "ok" and row["references_shown"] == 1
    several = {**RECORDER.SAMPLE, "references": REFERENCES}
    with pytest.raises(PromptError) as raised:
        _run(tmp_path, [several], name="several", method=["ice-score"], prompts_dir=str(folder))
    message = str(raised.value)
    assert "ice_score_references.txt cannot be read" in message and "ice-score needs it" in message
    assert "\n" not in message


def test_a_resume_refuses_changed_several_reference_prompts_and_folders_scored_with_the_first_only(tmp_path):
    sample = {**RECORDER.SAMPLE, "references": REFERENCES}
    _run(tmp_path, [sample], method=["ice-score"])
    run_file = tmp_path / "out" / "run.json"
    written = json.loads(run_file.read_text())
    # its prompt for several references edited since
    written["config"]["several_references_prompts"]["ice-score"] = "000000000000"
    run_file.write_text(json.dumps(written))
    with pytest.raises(WorkbenchError, match="prompts of ice-score for samples with several references changed"):
        _run(tmp_path, [sample], method=["ice-score"], resume=True)
    # a folder of an earlier workbench, whose judges saw the first reference only
    del written["config"]["several_references_prompts"]
    run_file.write_text(json.dumps(written))
    with pytest.raises(WorkbenchError, match="which showed ice-score only the first of several references"):
        _run(tmp_path, [sample], method=["ice-score"], resume=True)
    # ... is resumed as before when no sample has several
    one = {**RECORDER.SAMPLE, "references": REFERENCES[:1]}
    _run(tmp_path, [one], method=["ice-score"], resume=True)


def test_a_changed_several_references_prompt_does_not_block_a_resume_of_rows_shown_one(tmp_path):
    """review38a: a folder whose every row was asked with one reference (HumanEval-like data) was refused
    a resume once the judge's ``*_references.txt`` form had changed (an upgrade that edits only that
    template), though none of its rows, done or to do, used it. It is refused only where a row of the
    folder was shown several references under the old form."""
    one = {**RECORDER.SAMPLE, "references": REFERENCES[:1]}
    _run(tmp_path, [one], method=["ice-score"])
    run_file = tmp_path / "out" / "run.json"
    written = json.loads(run_file.read_text())
    written["config"]["several_references_prompts"]["ice-score"] = "000000000000"  # edited since
    run_file.write_text(json.dumps(written))
    other = {**one, "sample_id": 1, "generation": "    return a - b\n"}
    report, rows, seen = _run(tmp_path, [one, other], method=["ice-score"], resume=True)
    assert [(row["sample_id"], row["references_shown"], row["status"]) for row in rows] == [(0, 1, "ok"), (1, 1, "ok")]
    assert len(seen) == 1  # sample 1 only: sample 0's row was kept
    recorded = json.loads(run_file.read_text())["config"]["several_references_prompts"]
    assert recorded == {"ice-score": make_method("ice-score").several_references_version}


@pytest.mark.parametrize("references", [DSA_REFERENCES[:1], DSA_REFERENCES[:2]], ids=["one", "two"])
def test_dsa_cqe_a_sample_refused_for_an_earlier_reference_failure_says_no_reference_subcodes(
        tmp_path, fake_openai, scripted, references):
    """review38a: the reference analysis of a task failed (here the --max-cost budget ran out during it);
    the task's next sample is refused with that remembered failure without analysing anything, and its
    row said reference_subcodes 0 (the reference has sub-codes: nobody counted them for this row). Before
    several references it was null, as a row that did not decompose the reference says."""
    base = {"task_id": "HumanEval/0", "prompt": RECORDER.SAMPLE["prompt"], "generation": DSA_GENERATION,
            "references": references}
    rows = [{**base, "sample_id": 0}, {**base, "sample_id": 1}]
    scored, traces, seen = _dsa_run(tmp_path, fake_openai, scripted, rows, "budget", reference_column="references",
                                    max_cost=1e-9)
    assert [scored[i]["status"] for i in range(2)] == ["budget_exceeded"] * 2, [scored[i]["error"] for i in range(2)]
    assert "failed earlier" in scored[1]["error"]
    assert scored[1]["reference_subcodes"] is None and scored[1]["llm_calls"] == 0


def test_a_folder_scored_with_the_first_reference_only_stays_refused_after_a_resume_that_selected_none_of_them(tmp_path):
    """review38a: a folder of an earlier workbench (no several_references_prompts in its run.json, rows
    without references_shown) whose judge saw the first of several references only. A resume with a
    --limit that selects no sample with several passed (rightly) and rewrote run.json with the key, and
    with it the next resume, selecting them again, took the set-aside first-only row back as done. The
    refusal follows the rows (those without references_shown were written before), not the record."""
    rows = [{**RECORDER.SAMPLE, "sample_id": 0, "references": REFERENCES[:1]},
            {**RECORDER.SAMPLE, "sample_id": 1, "references": REFERENCES}]
    _run(tmp_path, rows, method=["ice-score"])
    # as the earlier workbench left it
    scores, run_file = tmp_path / "out" / "scores.jsonl", tmp_path / "out" / "run.json"
    old_rows = [{key: value for key, value in row.items() if key != "references_shown"} for row in read_jsonl(scores)]
    scores.write_text("".join(json.dumps(row) + "\n" for row in old_rows))
    written = json.loads(run_file.read_text())
    del written["config"]["several_references_prompts"]
    run_file.write_text(json.dumps(written))
    _run(tmp_path, rows, method=["ice-score"], resume=True, limit=1)  # sample 0 only: one reference
    with pytest.raises(WorkbenchError, match="which showed ice-score only the first of several references"):
        _run(tmp_path, rows, method=["ice-score"], resume=True)


def test_dsa_cqe_a_row_whose_reference_analysis_failed_records_no_reference_subcodes(tmp_path, fake_openai, scripted):
    """Review fix39c: with several references, a row whose later reference failed from a task's remembered
    failure recorded ``reference_subcodes`` = the sub-codes of the references before it (a partial sum that
    reads as the count of all of them), while a row refused at its first reference recorded null. A row
    whose reference analysis failed, here or for an earlier sample, records null whichever reference failed;
    its trace keeps the decompositions it made. Calls fail as a provider error would
    (``litellm.InternalServerError`` through ``mock_response``) for the analysis of the failing reference."""
    failing = "    return sum([a, b])\n"
    base = {"prompt": RECORDER.SAMPLE["prompt"], "generation": DSA_GENERATION}
    first, third = DSA_REFERENCES[0], DSA_REFERENCES[2]
    rows = [{**base, "task_id": "HumanEval/0", "sample_id": 0, "references": [failing]},  # fails here
            {**base, "task_id": "HumanEval/0", "sample_id": 1, "references": [first, failing]},  # remembered, 2nd
            {**base, "task_id": "HumanEval/1", "sample_id": 0, "references": [first, failing, third]},  # fails here, 2nd
            {**base, "task_id": "HumanEval/2", "sample_id": 0, "references": [first, third]}]  # ok

    def answer(messages, schema):
        if "symbols" in (schema or {}).get("properties", {}) and "sum([a, b])" in messages[-1]["content"]:
            return "litellm.InternalServerError"
        return scripted(messages, schema)

    data = _write(tmp_path / "failing.jsonl", rows)
    config = ScoreConfig(method=["dsa-cqe"], model="gpt-4o-mini", retries=0, workers=1, cache_dir=tmp_path / "cache",
                         score_mode="sampled", embedding_model="openai/embed", embedding_api_base=fake_openai.api_base,
                         reference_column="references")
    run_score(data, config, tmp_path / "failing", mock_response=answer)
    scored = {(row["task_id"], row["sample_id"]): row for row in read_jsonl(tmp_path / "failing" / "scores.jsonl")}
    traces = {(t["task_id"], t["sample_id"]): t["trace"] for t in read_jsonl(tmp_path / "failing" / "traces.jsonl")}
    failed = [("HumanEval/0", 0), ("HumanEval/0", 1), ("HumanEval/1", 0)]
    assert [scored[key]["status"] for key in failed] == ["llm_error"] * 3, [scored[key]["error"] for key in failed]
    assert "failed earlier" in scored[("HumanEval/0", 1)]["error"]
    assert [scored[key]["reference_subcodes"] for key in failed] == [None] * 3
    assert [len(entry["decomposition"]["subcodes"]) > 0 for entry in traces[("HumanEval/1", 0)]["references"]] == [True] * 2
    ok = scored[("HumanEval/2", 0)]
    assert ok["status"] == "ok" and ok["reference_subcodes"] == sum(
        len(entry["decomposition"]["subcodes"]) for entry in traces[("HumanEval/2", 0)]["references"])


def test_a_resume_refuses_rows_an_earlier_workbench_showed_a_repeated_reference_as_several(tmp_path):
    """leftovers40a (closing39): before a reference listed twice counted once (distinct_references), a list
    cell such as CoNaLa's ['type(v)'] x 4 was shown to the judges as several references, under the
    several-references prompt, and its row recorded references_shown 4. A resume of such a folder kept those
    rows beside rows asked the one-reference prompt, and said nothing. It is refused now, naming the rows and
    the way out. The folder of the earlier workbench is this run's with its rows as that version wrote them
    (references_shown and prompt_version of the several-references form); litellm's mock_response."""
    reference = RECORDER.SAMPLE["reference"]
    repeated = {**RECORDER.SAMPLE, "sample_id": 0, "references": [reference, reference]}
    other = {**RECORDER.SAMPLE, "sample_id": 1, "generation": "    return a - b\n", "references": [reference]}
    _run(tmp_path, [repeated], method=["ice-score", "chrf"])
    scores = tmp_path / "out" / "scores.jsonl"
    several = make_method("ice-score").several_references_version
    old_rows = [{**row, "references_shown": 2, **({"prompt_version": several} if row["method"] == "ice-score" else {})}
                for row in read_jsonl(scores)]
    scores.write_text("".join(json.dumps(row) + "\n" for row in old_rows))
    before = scores.read_text()
    with pytest.raises(OptionError) as raised:
        _run(tmp_path, [repeated, other], method=["ice-score", "chrf"], resume=True)
    message = raised.value.render(lambda name: f"--{name.replace('_', '-')}")
    assert message.startswith("cannot resume: 1 row of ice-score in the run folder was scored by an earlier workbench, "
                              "which showed the judge a reference listed more than once in --reference-column as "
                              "several references (task HumanEval/0 sample 0: 2 shown, 1 distinct now)"), message
    assert message.endswith("start over in a fresh --output (or with --overwrite instead of --resume)"), message
    assert scores.read_text() == before  # the folder is left as it was
    # in workbench run's words: the config key, and the run's way out
    from workbench.option_words import config_words

    with config_words(lambda name: "[data] reference_column" if name == "reference_column" else None):
        with pytest.raises(OptionError) as raised:
            _run(tmp_path, [repeated, other], method=["ice-score", "chrf"], resume=True)
    message = raised.value.render(lambda name: "[data] reference_column")
    assert "listed more than once in [data] reference_column as several references" in message, message
    assert message.endswith("start over in a fresh [run] output (or rerun the same workbench run command with "
                            "--force; with --stage, that stage only)"), message
    # chrF's score against a repeated reference is its score against the one: its rows alone resume
    _run(tmp_path, [repeated, other], method=["chrf"], resume=True)


#: the way out of a resume no option continues, as workbench score and workbench run word it (fresh_start_advice)
SCORE_WAY_OUT = "start over in a fresh --output (or with --overwrite instead of --resume)"
RUN_WAY_OUT = ("start over in a fresh [run] output (or rerun the same workbench run command with --force; with "
               "--stage, that stage only)")


def test_the_prompt_resume_refusals_name_the_way_out_of_the_command_that_runs_them(tmp_path):
    """leftovers40d: the refusals of a resume whose rows were asked other prompts (a judge's prompt edited
    since; its several-references form edited since; an earlier workbench that showed the first of several
    references only) ended "use another --output", which workbench run, whose score stage they also stop,
    does not take (its run folder is [run] output; it starts over with --force). They end as workbench
    score's and workbench run's other such refusals do (fresh_start_advice). litellm's mock_response."""
    from workbench.option_words import config_words

    sample = {**RECORDER.SAMPLE, "references": REFERENCES}
    _run(tmp_path, [sample], method=["ice-score"])
    run_file = tmp_path / "out" / "run.json"
    recorded = json.loads(run_file.read_text())
    prompts_edited = json.loads(json.dumps(recorded))
    prompts_edited["config"]["methods"]["ice-score"] = "000000000000"
    several_edited = json.loads(json.dumps(recorded))
    several_edited["config"]["several_references_prompts"]["ice-score"] = "000000000000"
    first_only = json.loads(json.dumps(recorded))
    del first_only["config"]["several_references_prompts"]
    cases = [(prompts_edited, "cannot resume: the prompts of ice-score changed (version 000000000000 -> "),
             (several_edited, "cannot resume: the prompts of ice-score for samples with several references changed"),
             (first_only, "cannot resume: the run folder was scored by an earlier workbench, which showed ice-score "
                          "only the first of several references; ")]
    for written, start in cases:
        run_file.write_text(json.dumps(written))
        with pytest.raises(WorkbenchError) as raised:
            _run(tmp_path, [sample], method=["ice-score"], resume=True)
        message = str(raised.value)
        assert message.startswith(start) and message.endswith(SCORE_WAY_OUT), message
        with config_words(lambda name: None), pytest.raises(WorkbenchError) as raised:
            _run(tmp_path, [sample], method=["ice-score"], resume=True)
        message = str(raised.value)
        assert message.startswith(start) and message.endswith(RUN_WAY_OUT), message
        assert "--output" not in message, message
