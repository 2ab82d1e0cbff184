"""``workbench score --stop`` (issue 12, item 8) and null or empty generations (never silent).

The judge is litellm's ``mock_response`` with a responder that records what it was shown, so
the test sees the exact code the LLM judged; chrF is the real metric."""

from __future__ import annotations

import json

import pytest

from workbench.io import read_jsonl
from workbench.options import OptionError
from workbench.score.config import ScoreConfig
from workbench.errors import DataError
from workbench.score.job import Columns, apply_stop_sequences, load_samples, run_score, sample_notes

BODY = "    return sorted(set(l))\n"
TRAILING = "\n\nprint(unique([3, 1, 3]))\nassert unique([1]) == [1]\n"


def _data(tmp_path, generations):
    prompt = "def unique(l: list):\n    \"\"\"Return sorted unique elements.\"\"\"\n"
    rows = [{"task_id": "T/0", "sample_id": i, "prompt": prompt, "generation": g, "reference": BODY, "passed": 1}
            for i, g in enumerate(generations)]
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_judge_sees_the_generation_as_executed(tmp_path, score_kwargs):
    shown = []

    def judge(messages, schema):
        shown.append(messages[-1]["content"])
        return "Functional Correctness: 4"

    data = _data(tmp_path, [BODY + TRAILING, BODY])
    kwargs = score_kwargs(judge, method=["ice-score", "chrf"], stop=["humaneval"])
    report = run_score(data, kwargs["config"], kwargs["output_dir"], mock_response=judge)
    assert len(shown) == 2 and all("print(unique" not in text and "assert unique" not in text for text in shown)
    rows = read_jsonl(tmp_path / "out" / "scores.jsonl")
    assert {(r["sample_id"], r["method"]): (r["generation_truncated"], r["stop_sequence"]) for r in rows} == {
        (0, "ice-score"): (True, "\nprint("), (0, "chrf"): (True, "\nprint("),
        (1, "ice-score"): (False, None), (1, "chrf"): (False, None),
    }
    # cut, the generation equals the reference: chrF 1.0 for both samples
    assert {r["sample_id"]: r["score"] for r in rows if r["method"] == "chrf"} == {0: 1.0, 1: 1.0}
    wide = {r["sample_id"]: r for r in read_jsonl(tmp_path / "out" / "scores_wide.jsonl")}
    assert wide[0]["generation_truncated"] is True and wide[0]["stop_sequence"] == "\nprint("
    assert report.notes == ["1 of 2 generations is cut at a stop sequence (--stop) before scoring; "
                            "their rows say generation_truncated and stop_sequence"]
    record = json.loads((tmp_path / "out" / "run.json").read_text())["config"]
    assert record["stop"] == ["humaneval"]


def test_resume_refuses_another_stop_setting(tmp_path, score_kwargs):
    data = _data(tmp_path, [BODY + TRAILING])
    first = score_kwargs(stop=["humaneval"])
    run_score(data, first["config"], first["output_dir"])
    again = score_kwargs(resume=True)
    with pytest.raises(Exception, match="cannot resume: the run folder was scored with other settings .*stop "):
        run_score(data, again["config"], again["output_dir"])


def test_null_and_empty_generations_are_noted_on_every_row(tmp_path, score_kwargs):
    data = _data(tmp_path, [None, "   \n", BODY, "\ndef helper():\n    pass\n"])
    kwargs = score_kwargs(stop=["humaneval"])
    report = run_score(data, kwargs["config"], kwargs["output_dir"])
    notes = {r["sample_id"]: r["generation_note"] for r in read_jsonl(tmp_path / "out" / "scores.jsonl")}
    assert notes == {
        0: "the generation is null (missing): scored as empty code",
        1: "the generation is empty: scored as empty code",
        2: None,
        3: "the generation is empty after cutting at the stop sequence '\\ndef ': scored as empty code",
    }
    assert report.notes[-1] == ("1 null and 2 empty generations of 4 are scored as empty code; "
                                "their rows say why in generation_note")
    assert json.loads((tmp_path / "out" / "run.json").read_text())["notes"] == report.notes


def test_stop_option_in_score_config():
    with pytest.raises(OptionError, match="^stop must not be empty"):
        ScoreConfig(method=["chrf"], stop=[""])
    samples = load_samples("humaneval-codex-python", limit=1)
    assert apply_stop_sequences(samples, ()) is samples
    assert sample_notes(samples, ScoreConfig(method=["chrf"])) == []


def test_a_limit_above_the_samples_there_are_is_noted(tmp_path):
    samples = load_samples(_data(tmp_path, [BODY, BODY, BODY]), limit=5)
    assert len(samples) == 3
    assert sample_notes(samples, ScoreConfig(method=["chrf"], limit=5)) == [
        "--limit 5 is above the 3 samples the data has: all of them are scored"]
    assert sample_notes(samples, ScoreConfig(method=["chrf"], limit=3)) == []


def test_notes_on_the_input_come_before_the_run_starts(tmp_path):
    """fix33 notes item 1: the notes on the input (a --limit above the data, generations that
    repeat their prompt, null ones ...) were printed only after the whole run, several in the past
    tense ("all of them were scored"). ``on_note`` now gets them before the first row is scored,
    worded for that moment, and ``workbench score`` prints each once, before the progress bar
    starts scoring, not again with the table. chrF only (no LLM)."""
    from typer.testing import CliRunner

    from workbench.cli import app

    prompt = "def unique(l: list):\n    \"\"\"Return sorted unique elements.\"\"\"\n"
    data = _data(tmp_path, [prompt + BODY, None, BODY])
    events = []
    report = run_score(data, ScoreConfig(method=["chrf"], limit=5), tmp_path / "out",
                       on_note=lambda note: events.append(("note", note)),
                       on_start=lambda todo, done: events.append(("start", todo)),
                       on_row=lambda row: events.append(("row", row["sample_id"])))
    first = next(i for i, event in enumerate(events) if event[0] != "note")
    assert events[first] == ("start", 3) and not any(kind == "note" for kind, _ in events[first:]), events
    early = [note for _, note in events[:first]]
    assert early == report.notes[:report.announced_notes] and len(early) == 3, early
    assert "--limit 5 is above the 3 samples the data has: all of them are scored" in early
    assert any(note.startswith("1 of 3 generations begins with its own prompt") for note in early)
    assert "1 null and 0 empty generations of 3 are scored as empty code" in " ".join(early)
    assert "announced_notes" not in json.loads((tmp_path / "out" / "run.json").read_text())  # run.json as it was

    result = CliRunner().invoke(app, ["score", str(data), "-m", "chrf", "--limit", "5", "-o", str(tmp_path / "cli"),
                                      "--progress"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    for said in ("all of them are scored", "begins with its own prompt", "are scored as empty code"):
        assert text.count(said) == 1, (said, text)  # once: not again with the table
        assert text.index(said) < text.index("scoring") < text.index("every row of the run folder")


@pytest.mark.parametrize("values, shown", [([BODY, 123], ("holds numbers, not text, in 1 of 2 rows", "(e.g. 123 in row 2)")),
                                           ([BODY, ["a", "b"]], ("holds lists, not text, in 1 of 2", '(e.g. ["a", "b"] in row 2)')),
                                           ([1.5, None], ("holds numbers, not text, in 1 of 2 rows", "(e.g. 1.5 in row 1)")),
                                           ([BODY, {"code": BODY}], ("holds objects, not text",)),
                                           ([BODY, True], ("holds true/false values, not text",))])
def test_a_generation_that_is_not_text_is_refused_with_the_row(tmp_path, values, shown):
    path = tmp_path / "gens.jsonl"
    path.write_text("".join(json.dumps({"task_id": "T/0", "completion": v, "reference": BODY}) + "\n" for v in values))
    with pytest.raises(DataError, match=r"--generation-column 'completion' holds .*, not text") as raised:
        load_samples(path, columns=Columns(generation="completion"))
    assert all(words in str(raised.value) for words in shown), str(raised.value)
    assert "Json(" not in str(raised.value) and "Value(" not in str(raised.value)  # no datasets feature types


def test_the_first_samples_are_made_from_data_read_and_checked_whole(tmp_path):
    # leftovers40c: select_samples(first=...) said "the rows after them are not read"; they are read (by
    # load_records, or by the caller that passes loaded=) and their text columns checked, only not made into
    # samples: a number after the first samples is refused, a repeated (task, sample) pair there is not
    from workbench.data.loading import load_records
    from workbench.score.job import select_samples

    config = ScoreConfig(method=["chrf"], generation_column="completion")
    rows = [{"task_id": task, "sample_id": 0, "completion": BODY, "reference": BODY} for task in ("T/0", "T/1", "T/1")]
    repeated = tmp_path / "repeated.jsonl"
    repeated.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for loaded in (None, load_records(repeated)):
        samples = select_samples(repeated, config, everything=True, first=2, loaded=loaded)
        assert [(s.task_id, s.sample_id) for s in samples] == [("T/0", 0), ("T/1", 0)]
    with pytest.raises(DataError, match="repeats a"):
        select_samples(repeated, config, everything=True, first=3)
    late_number = tmp_path / "late_number.jsonl"
    late_number.write_text("".join(json.dumps({**row, "sample_id": n, "completion": BODY if n < 2 else 5}) + "\n"
                                   for n, row in enumerate(rows)))
    for loaded in (None, load_records(late_number)):
        with pytest.raises(DataError, match=r"holds numbers, not text, in 1 of 3 rows .*\(e\.g\. 5 in row 3\)"):
            select_samples(late_number, config, everything=True, first=1, loaded=loaded)
