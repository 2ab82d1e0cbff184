"""The LLM judges are shown every reference of a sample with several (a list-valued
``--reference-column``): one call whose prompt lists them as numbered alternatives, under the
form's own prompt version, and each row records how many references it was shown. A sample with
one reference is asked exactly as before (messages, prompt version and response-cache keys equal
to those recorded by the workbench before the change: ``tests/fixtures/single_reference_messages.json``).
DSA-CQE, which analyses one decomposed reference, refuses samples with several.

The LLM is litellm's ``mock_response`` (a function that reads the prompt it is sent); no model is
loaded. Real files, the real loader, the real response cache."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
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


def test_dsa_cqe_refuses_several_references_in_one_line_naming_the_option_and_the_judges(tmp_path, monkeypatch):
    sample = {**RECORDER.SAMPLE, "references": REFERENCES}
    data = _write(tmp_path / "gens.jsonl", [sample, {**RECORDER.SAMPLE, "sample_id": 1, "references": REFERENCES[:1]}])
    config = ScoreConfig(method=["chrf", "dsa-cqe"], model="gpt-4o-mini", reference_column="references",
                         cache="off")
    with pytest.raises(OptionError) as raised:
        run_score(data, config, tmp_path / "out", mock_response=RECORDER.answer)
    message = str(raised.value)
    assert message == ("dsa-cqe compares a generation with one reference, but 1 of 2 samples has several in "
                       "reference_column: score them with dsa-cqe-simplified, ice-score, ice-score-usefulness, "
                       "p-correct or chrf (which use every reference), or name a column of one reference")
    assert not (tmp_path / "out" / "scores.jsonl").exists()  # refused before any sample was scored
    monkeypatch.setenv("OPENAI_API_KEY", "none")  # the server is never asked
    result = CliRunner().invoke(app, ["score", str(data), "-m", "dsa-cqe", "--reference-column", "references",
                                      "--model", "openai/judge", "--api-base", "http://127.0.0.1:9/v1",
                                      "--output", str(tmp_path / "cli"), "--no-progress"])
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if "dsa-cqe compares" in line]
    assert len(lines) == 1 and "--reference-column" in lines[0] and "dsa-cqe-simplified" in lines[0]


def test_dsa_cqe_still_scores_data_whose_list_column_holds_one_reference_per_sample():
    from workbench.score.base import Sample
    from workbench.score.job import check_several_references

    samples = [Sample("t", 0, "x", "y", references=("y",)), Sample("t", 1, "x", "", references=())]
    check_several_references(samples, [make_method("dsa-cqe")])  # no error


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
