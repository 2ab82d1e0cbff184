"""A shipped label that is a grade (``[data] label_kind = "graded"``, human grades 0-4) is no pass/fail:
the report's "Execution agreement" took grades 0 and 1 as fail and pass (and dropped 2-4), and printed a
2x2 table, an agreement rate and Cohen's kappa of our execution against them (100 %, kappa 1.0 on the run
below); the sample views said "shipped passed=4"; the contamination note spoke of correct rows and tests
where the label is a grade. Now the execution section says why there is no agreement and gives the mean
grade of the samples our execution passed and failed; the note speaks of the grade.

A real ``workbench run`` (execute in the sandbox, report; no LLM) on four HumanEval generations with a
hand-set grade column; the contamination note on the fixture run's report data, as test_probe30.py."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from report_html import element, shown_text
from workbench.cli import app
from workbench.data.loading import load_humaneval
from workbench.report import build_report_data, render_html

FIXTURE = Path(__file__).parents[1] / "fixtures" / "run-fixture"


@pytest.fixture(scope="module")
def graded_run(tmp_path_factory) -> Path:
    """Two canonical solutions graded 4 and 1, a wrong one graded 0, a canonical one graded 3: our execution
    passes 3 and fails 1; read as pass/fail, the grades 1 and 0 agreed with it on both rows they allow."""
    folder = tmp_path_factory.mktemp("graded-exec")
    problems = {row["task_id"]: row for row in load_humaneval().select(range(3))}
    rows = [
        {"task_id": "HumanEval/0", "sample_id": 0, "completion": problems["HumanEval/0"]["canonical_solution"], "grade": 4},
        {"task_id": "HumanEval/0", "sample_id": 1, "completion": problems["HumanEval/0"]["canonical_solution"], "grade": 1},
        {"task_id": "HumanEval/2", "sample_id": 0, "completion": "    return 0.0\n", "grade": 0},
        {"task_id": "HumanEval/2", "sample_id": 1, "completion": problems["HumanEval/2"]["canonical_solution"], "grade": 3},
    ]
    data = folder / "gens.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config = folder / "c.toml"
    config.write_text(f'[run]\noutput = "{folder / "run"}"\nstages = ["execute", "report"]\n'
                      f'[data]\nsource = "{data}"\nlabel_column = "grade"\nlabel_kind = "graded"\n'
                      '[execute]\nworkers = 2\ntimeout = 30.0\n')
    result = CliRunner().invoke(app, ["run", str(config), "--no-progress"])
    assert result.exit_code == 0, result.output
    run = folder / "run"
    # a view for every sample (as an LLM-scored subset would give)
    (run / "score").mkdir(exist_ok=True)
    (run / "score" / "subset.jsonl").write_text(
        "".join(json.dumps({"task_id": r["task_id"], "sample_id": r["sample_id"]}) + "\n" for r in rows))
    return run


def _graded_section(execution: dict) -> None:
    assert execution["passed"] == 3 and execution["rows"] == 4
    assert execution["agreement"] is None  # no pass/fail to agree with
    graded = execution["graded_label"]
    assert graded["label_column"] == "grade" and graded["matched"] == 4
    assert graded["by_outcome"]["passed"] == {"n": 3, "mean": pytest.approx(8 / 3)}
    assert graded["by_outcome"]["failed"] == {"n": 1, "mean": 0.0}


def test_a_declared_grade_gets_no_pass_fail_agreement(graded_run: Path) -> None:
    data = build_report_data(graded_run)
    _graded_section(data["execution"])
    assert data["execution"]["graded_label"]["declared"] is True
    assert data["dataset"]["label_kind"] == "graded"
    page = render_html(data)
    assert 'id="agreement"' not in page and "Agreement with the shipped" not in page and "shipped pass rate" not in page
    said = shown_text(element(page, "agreement-graded"))
    assert ("No agreement with our execution is computed: the shipped grade column is a grade "
            "([data] label_kind = \"graded\"), not pass/fail") in said, said
    assert "mean grade 2.667 on the 3 samples our execution passed, 0.000 on the 1 it failed" in said, said
    # the sample views name the column, not "passed"
    views = shown_text(page[page.index('id="samples"'):])
    assert "shipped passed" not in views and "(shipped grade=4)" in views, views


def test_an_undeclared_grade_is_recognised_by_its_values(graded_run: Path) -> None:
    """The same run folder with no label_kind in run.json: a 3 or a 4 is no pass/fail either."""
    manifest = graded_run / "run.json"
    kept = manifest.read_text()
    try:
        run = json.loads(kept)
        del run["config"]["data"]["label_kind"]
        manifest.write_text(json.dumps(run))
        data = build_report_data(graded_run)
    finally:
        manifest.write_text(kept)
    _graded_section(data["execution"])
    assert data["execution"]["graded_label"]["declared"] is False
    said = shown_text(element(render_html(data), "agreement-graded"))
    assert "the shipped grade column holds values other than 0 and 1 (e.g. 4)" in said, said


def test_the_contamination_note_speaks_of_the_grade():
    """The note's premise for pass/fail (contaminated = a near-copy of code the tests accept, so mostly
    passing) said "passed ... confounded with correctness" of a grade: it now names the grade and its means."""
    data = copy.deepcopy(build_report_data(FIXTURE))
    label = next(row for row in data["bias"]["rows"] if row["metric"] == data["bias"]["label"])
    # the fixture's label is execution's "passed": here it is a grade column, "grade"
    label["metric"] = data["bias"]["label"] = "grade"
    label["contaminated"] = {"value": 3.1, "ci": [2.5, 3.6], "n_rows": 12, "n_units": 6}
    label["clean"] = {**label["clean"], "value": 1.25, "n_rows": 300}
    data["bias"]["label_kind"] = "graded"
    data["label"] = {**data["label"], "kind": "graded", "column": "grade", "noun": "the grade 'grade'"}
    page = render_html(data)
    note = shown_text(element(page, "contamination-confound"))
    assert "near-duplicate of the benchmark's own solution" in note, note
    assert "the grade 'grade': mean 3.100 on the 12 contaminated rows, 1.250 on the 300 clean rows" in note, note
    assert "confounded with the grade" in note, note
    assert not re.search(r"tests|correct|pass", note), note
    assert "grade (the mean grade)" in shown_text(element(page, "bias-table"))  # as the bias table calls the row


def _correlate_reads_shipped(tmp_path: Path, data: dict, correlate: dict) -> dict:
    """The fixture run folder (which has execution results) as a ``workbench run`` whose correlate stages
    read a shipped column instead (``[correlate] label``; execute left out of ``[run] stages``), with a
    grade column added: 0-4, with grades 0 and 1 on both passing and failing rows. Its report data."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    rows = [json.loads(line) for line in (run / "data.jsonl").read_text().splitlines()]
    for i, row in enumerate(rows):
        row["grade"] = (i % 5) if row["passed"] else (i % 2)
    (run / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (run / "run.json").write_text(json.dumps({
        "config": {"data": data, "correlate": correlate},
        "stages": {name: {"status": "done", "options": correlate} for name in ("correlate", "correlate_all")}}))
    return build_report_data(run)


def test_a_grade_named_by_correlate_label_gets_no_pass_fail_split(tmp_path: Path) -> None:
    """``[correlate] label = "grade"`` with ``label_kind = "graded"`` beside ``[data] label_column = "passed"``:
    the scores were split by the grade column, its grades 1 and 0 taken as pass and fail (19 and 11 rows
    per method on this folder); only ``[data] label_column`` was checked for being a grade."""
    data = _correlate_reads_shipped(tmp_path, {"label_column": "passed"}, {"label": "grade", "label_kind": "graded"})
    assert "'grade' column" in data["counts"]["label_source"]
    assert data["distributions"] == {}
    assert data["dataset"]["label_kind"] == "outcome"  # [data] label_column, passed, is no grade


def test_a_pass_fail_column_named_by_correlate_label_is_split_beside_a_graded_data_label(tmp_path: Path) -> None:
    """The converse: ``[data] label_kind = "graded"`` is the kind of ``[data] label_column`` (grade) only;
    the 0/1 column ``[correlate] label`` names still splits the scores."""
    data = _correlate_reads_shipped(tmp_path, {"label_column": "grade", "label_kind": "graded"}, {"label": "passed"})
    assert data["dataset"]["label_kind"] == "graded"
    assert "'passed' column" in data["counts"]["label_source"]
    split = data["distributions"]["chrf"]
    assert (len(split["passed"]), len(split["failed"])) == (38, 22)


def test_an_undeclared_grade_is_a_grade_everywhere(tmp_path: Path) -> None:
    """``[data] label_column = "grade"`` holding 0-4 with no ``label_kind``: the execution section took it for a
    grade by its values, but the scores were still split by its 0 and 1 rows as fail and pass (the column the
    correlate stages read here), and the sample views said "shipped grade=" only for a declared grade."""
    data = _correlate_reads_shipped(tmp_path, {"label_column": "grade"}, {"label": "grade"})
    assert data["dataset"]["label_kind"] == "graded"
    assert data["distributions"] == {}
    graded = data["execution"]["graded_label"]
    assert graded is not None and graded["declared"] is False and graded["example"] in (2, 3, 4)


def test_the_sample_line_names_the_label_column(tmp_path: Path) -> None:
    """A 0/1 label column named otherwise (``verdict``): the sample views said "shipped passed=1"."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(FIXTURE, run)
    rows = [json.loads(line) for line in (run / "data.jsonl").read_text().splitlines()]
    for row in rows:
        row["verdict"] = row.pop("passed")
    (run / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (run / "run.json").write_text(json.dumps({"config": {"data": {"label_column": "verdict"}}}))
    views = shown_text(render_html(build_report_data(run))[0:])
    views = views[views.index("LLM-scored samples have a view"):]
    assert "shipped passed" not in views and re.search(r"\(shipped verdict=[01]\)", views), views[:2000]
