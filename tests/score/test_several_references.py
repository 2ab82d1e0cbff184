"""Several references per sample: a reference column of lists (JSON Lines lists, or a string in
some rows and a list in others) is read into ``Sample.references``; chrF scores against all of
them (sacrebleu's multi-reference chrF), the LLM judges are shown them all
(tests/score/test_judges_see_every_reference.py); the run says so. Real files, real sacrebleu,
the real command line (chrF needs no LLM)."""

from __future__ import annotations

import json

import pytest
import sacrebleu
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import DataError
from workbench.io import read_jsonl
from workbench.score.config import ScoreConfig
from workbench.score.job import Columns, load_samples, run_score

GENERATION = "sorted(d.items(), key=lambda x: x[1])"
REFERENCES = ["sorted(d, key=d.get)", "sorted(list(d.items()), key=lambda kv: kv[1])", "d.sort()"]


def _write(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _chrf(generation, reference):
    return sacrebleu.sentence_chrf(generation, [reference]).score / 100


def test_a_list_column_gives_each_sample_all_its_references_and_the_first_as_reference(tmp_path):
    data = _write(tmp_path / "gens.jsonl", [
        {"task_id": "t/0", "generation": GENERATION, "refs": REFERENCES},
        {"task_id": "t/1", "generation": "x", "refs": "only one"},  # a string: one reference
        {"task_id": "t/2", "generation": "x", "refs": ["  ", "", "second"]},  # blank entries are no reference
        {"task_id": "t/3", "generation": "x", "refs": None},
        {"task_id": "t/4", "generation": "x", "refs": []},
    ])
    samples = load_samples(data, Columns(reference="refs"))
    assert [s.references for s in samples] == [tuple(REFERENCES), ("only one",), ("second",), (), ()]
    assert [s.reference for s in samples] == [REFERENCES[0], "only one", "second", "", ""]
    assert samples[0].all_references == tuple(REFERENCES)
    assert samples[3].all_references == ("",)  # none: skipped as an empty reference, as before


def test_a_text_column_leaves_references_empty(tmp_path):
    data = _write(tmp_path / "gens.jsonl", [{"task_id": "t/0", "generation": "x", "reference": "y"}])
    (sample,) = load_samples(data, Columns())
    assert sample.references == () and sample.all_references == ("y",)


@pytest.mark.parametrize(("cell", "words"), [
    (["a", None], "lists holding nulls in 1 of 2 rows"),
    ([1, 2], "lists holding numbers in 1 of 2 rows"),
])
def test_a_list_cell_that_is_not_all_text_is_refused_with_its_row(tmp_path, cell, words):
    data = _write(tmp_path / "gens.jsonl", [{"task_id": "t/0", "generation": "x", "refs": ["fine"]},
                                            {"task_id": "t/1", "generation": "x", "refs": cell}])
    with pytest.raises(DataError) as raised:
        load_samples(data, Columns(reference="refs"))
    message = str(raised.value)
    assert message.startswith("--reference-column 'refs' holds ") and words in message
    assert "in row 2" in message and "as a list of strings" in message


def test_chrf_takes_the_best_reference_and_the_run_says_how_each_method_used_them(tmp_path):
    data = _write(tmp_path / "gens.jsonl", [
        {"task_id": "t/0", "generation": GENERATION, "references": REFERENCES},
        {"task_id": "t/1", "generation": GENERATION, "references": [REFERENCES[2]]},
    ])
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["score", str(data), "--method", "chrf", "--reference-column", "references",
                                      "--output", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    rows = {row["task_id"]: row for row in read_jsonl(out / "scores.jsonl")}
    best = max(_chrf(GENERATION, reference) for reference in REFERENCES)
    assert best > _chrf(GENERATION, REFERENCES[0])  # the case that matters: the first is not the best
    assert rows["t/0"]["score"] == pytest.approx(best, abs=1e-12)
    assert rows["t/1"]["score"] == pytest.approx(_chrf(GENERATION, REFERENCES[2]), abs=1e-12)
    notes = json.loads((out / "run.json").read_text())["notes"]
    assert "1 of 2 samples has several references (3): chrf scores each against all of them (the best reference's score)" in notes
    assert "1 of 2 samples has several references" in result.output


def test_the_note_says_how_each_method_uses_them(tmp_path):
    data = _write(tmp_path / "gens.jsonl", [
        {"task_id": "t/0", "generation": GENERATION, "references": REFERENCES},
        {"task_id": "t/1", "generation": GENERATION, "references": REFERENCES[:2]},
    ])
    config = ScoreConfig(method=["chrf", "p-correct"], reference_column="references", model="local/qwen2.5-coder-0.5b")
    from workbench.score.job import sample_notes

    samples = load_samples(data, Columns(reference="references"))
    assert ("2 of 2 samples have several references (2 to 3): chrf scores each against all of them (the best "
            "reference's score); p-correct shows the judge all of them in one prompt, as numbered alternatives"
            ) in sample_notes(samples, config)
    # p-correct --no-reference shows the judge none: nothing to say about it
    blind = ScoreConfig(method=["p-correct"], reference=False, reference_column="references",
                        model="local/qwen2.5-coder-0.5b")
    assert not any("several references" in note for note in sample_notes(samples, blind))


def test_a_run_reading_one_reference_of_the_conala_set_points_at_the_list_column(tmp_path):
    notes: list[str] = []
    from workbench.score.job import select_samples

    select_samples("conala-all-grades", ScoreConfig(method=["chrf"], no_prompt=True, limit=3), notes=notes)
    assert ("the data's column 'references' holds the references of each sample as a list; the run reads one, "
            "from 'reference' (--reference-column references gives chrf all of them)") in notes
    judged: list[str] = []
    select_samples("conala-all-grades", ScoreConfig(method=["ice-score-usefulness"], model="gpt-4o-mini", no_prompt=True, limit=3),
                   notes=judged)
    assert ("the data's column 'references' holds the references of each sample as a list; the run reads one, "
            "from 'reference' (--reference-column references gives ice-score-usefulness all of them)") in judged
    quiet: list[str] = []
    select_samples("conala-all-grades", ScoreConfig(method=["chrf"], no_prompt=True, limit=3,
                                                     reference_column="references"), notes=quiet)
    assert not any("'references'" in note for note in quiet)
