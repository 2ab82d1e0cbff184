"""What a new user's probe of the report found (issue 30): the execution line's words run together,
per-sample execution failures are only counted, published reference values stand next to estimates
on other rows. On the fixture run folder (a trimmed real run) and hand-made report data."""

from __future__ import annotations

import copy
import html as html_lib
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from report_html import element, shown_text
from workbench.report import build_report_data, render_html
from workbench.report.sections import MAX_LISTED_PER_STATUS, not_passed

FIXTURE = Path(__file__).parents[1] / "fixtures" / "run-fixture"


@pytest.fixture(scope="module")
def data() -> dict:
    return build_report_data(FIXTURE)


def test_the_pass_at_k_line_keeps_its_words_apart(data):
    data = copy.deepcopy(data)
    values = data["execution"]["pass_at_k"]["values"]
    for k, ci in (("1", [0.3952, 0.4365]), ("10", [0.7651, 0.8657])):  # as the probe's 3,220-row run
        values[k].update(ci=ci, no_ci=None)
    line = shown_text(element(render_html(data), "pass-at-k"), tag="")
    assert "0.8657] (unbiased estimator" in line, line
    assert "seed 0) pass@100 not reported" in line, line
    assert not re.search(r"\S\(unbiased|\)pass@|\]\(", line), line
    del values["10"]  # no interval: the reason, then the note
    values["1"].update(ci=None, no_ci="only 3 tasks contribute")
    line = shown_text(element(render_html(data), "pass-at-k"), tag="")
    assert "no CI: only 3 tasks contribute (unbiased estimator" in line, line


def test_samples_that_did_not_pass_are_listed_by_status_and_linked_to_their_views(data):
    """Probe 30: 14 timeouts and 62 syntax errors appeared only as counts."""
    results = [json.loads(line) for line in (FIXTURE / "execute" / "results.jsonl").read_text().splitlines() if line.strip()]
    expected = Counter(r["status"] for r in results if r["status"] != "passed")
    listed = data["execution"]["not_passed"]
    assert {entry["status"]: entry["count"] for entry in listed} == expected and expected
    assert listed[-1]["status"] == "failed"  # the tests ran and failed: last, after errors and timeouts
    for entry in listed:
        ids = {f"{r['task_id']}:{r['sample_id']}" for r in results if r["status"] == entry["status"]}
        assert {x["id"] for x in entry["samples"]} == ids and entry["more"] == 0
    page = render_html(data)
    block = page[page.index('id="execution-failures"'):page.index('id="agreement"')]
    views = {f"{v['task_id']}:{v['sample_id']}": index for index, v in enumerate(data["samples"], 1)}
    shown = [x for entry in listed for x in entry["samples"]]
    linked = [x["id"] for x in shown if x["id"] in views]
    assert linked, "the fixture has views of samples that did not pass"
    for row_id in linked:
        assert f'<a class="to-view" href="#sample-{views[row_id]}">{row_id}</a>' in block
    for x in shown:
        assert html_lib.escape(x["detail"]) in block


def test_a_long_list_of_one_status_is_cut_and_says_how_many_more():
    rows = [{"task_id": f"HumanEval/{i % 7}", "sample_id": i, "status": "timeout", "detail": "killed after the 4.0 s timeout"}
            for i in range(250)] + [{"task_id": "HumanEval/1", "sample_id": 999, "status": "syntax_error", "detail": "x" * 500}]
    listed = not_passed(rows)
    assert [(e["status"], e["count"], len(e["samples"]), e["more"]) for e in listed] == [
        ("syntax_error", 1, 1, 0), ("timeout", 250, MAX_LISTED_PER_STATUS, 150)]
    assert len(listed[0]["samples"][0]["detail"]) <= 160
    # natural order: HumanEval/0 before HumanEval/1, sample 7 before sample 14
    assert [x["id"] for x in listed[1]["samples"][:3]] == ["HumanEval/0:0", "HumanEval/0:7", "HumanEval/0:14"]


def _ice_score_rows() -> list[dict]:
    from workbench.data.loading import load_records

    return next(iter(load_records("humaneval-codex-python", offline=True).splits.values())).to_list()


def _stratified(rows: list[dict], tasks: int = 20) -> list[dict]:
    """One passing and one failing sample of each of the first ``tasks`` tasks that have both."""
    chosen, by_task = [], {}
    for row in rows:
        by_task.setdefault(row["task_id"], {}).setdefault(int(row["passed"]), row)
    for task, pair in by_task.items():
        if len(pair) == 2 and len(chosen) < 2 * tasks:
            chosen += [pair[1], pair[0]]
    return chosen


@pytest.fixture(scope="module")
def published_run(tmp_path_factory) -> Path:
    """A run folder on the ICE-Score set itself: real correlations of the shipped columns on all
    3,220 rows, and on a stratified subset of 40 rows where a made-up ``ice-score`` judge scored
    every row (data.jsonl is the whole set, so the report knows the rows)."""
    import pandas as pd

    from workbench.correlate import correlate

    run = tmp_path_factory.mktemp("published") / "run"
    (run / "correlate").mkdir(parents=True)
    rows = _ice_score_rows()
    (run / "data.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    correlate(pd.DataFrame(rows), metrics=["gpt35_nswr", "chrf"], n_resamples=50,
              length_column=None).write_json(run / "correlate" / "all.json")
    subset = [{**row, "ice-score": row["gpt35_nsnr"] + (row["sample_id"] % 3) / 10} for row in _stratified(rows)]
    correlate(pd.DataFrame(subset), metrics=["ice-score", "gpt35_nswr", "chrf"], n_resamples=50,
              length_column=None).write_json(run / "correlate" / "subset.json")
    return run


def test_the_bundled_set_is_the_set_the_values_were_published_on(shared_data):
    from workbench.report.references import ICE_SCORE_ROWS, ICE_SCORE_ROWS_DIGEST, is_published_set, rows_digest

    rows = _ice_score_rows()
    assert len(rows) == ICE_SCORE_ROWS and rows_digest(rows) == ICE_SCORE_ROWS_DIGEST and is_published_set(rows)
    flat = [json.loads(line) for line in (shared_data / "ice-score" / "humaneval_python_flat.jsonl").read_text().splitlines()]
    assert is_published_set(flat)  # the shared copy of the published data
    assert not is_published_set(rows[:-1]) and not is_published_set(_stratified(rows))
    edited = [dict(row) for row in rows]
    edited[0]["gpt35_nswr"] = (edited[0]["gpt35_nswr"] + 1) % 5
    assert not is_published_set(edited)


def test_published_values_stand_only_next_to_estimates_on_the_same_rows(published_run):
    """Probe 30: ICE-Score's .425 (all 3,220 rows) was drawn next to "ice-score (subset, n=40)";
    the subset design alone moves tau-b. On the subset the like-for-like reference is the shipped
    gpt35_nswr column on the same 40 rows, from this run's own correlate output."""
    data = build_report_data(published_run)
    by_method = {entry["method"]: entry for entry in data["headline"]}
    subset = json.loads((published_run / "correlate" / "subset.json").read_text())["metrics"]

    judge = by_method["ice-score"]
    assert judge["subset"]["n_samples"] == 40 and judge["all"] is None
    marks = judge["reference_marks"]["subset"]
    assert marks and {m["kind"] for m in marks} == {"same rows"}
    assert not any(m["value"] in (0.425, 0.318) for m in marks)
    drawn = {(m["coefficient"], m["level"]): m["value"] for m in marks}
    for level in ("pooled", "per_problem"):
        for coefficient in ("kendall", "pearson"):
            assert drawn[(coefficient, level)] == pytest.approx(subset["gpt35_nswr"][level][coefficient])
    assert "40 of the 3,220 rows" in judge["reference_notes"]["subset"]
    assert "shipped gpt35_nswr column on the same rows" in judge["reference_notes"]["subset"]

    column = by_method["gpt35_nswr"]
    assert column["reference_marks"]["subset"] == [] and "40 of the 3,220" in column["reference_notes"]["subset"]
    published = {(m["coefficient"], m["level"], m["kind"]): m["value"] for m in column["reference_marks"]["all"]}
    assert published[("kendall", "pooled", "published")] == 0.425
    assert published[("kendall", "per_problem", "published")] == 0.318
    assert published[("pearson", "pooled", "recomputed")] == 0.427
    assert column["reference_notes"]["all"] is None
    assert {m["kind"] for m in by_method["chrf"]["reference_marks"]["all"]} == {"published"}
    assert by_method["chrf"]["reference_marks"]["subset"] == []

    page = render_html(data)
    notes = shown_text(element(page, "forest-notes"), tag="")
    assert "ice-score (subset, n=40): estimated on 40 of the 3,220 rows" in notes
    forest = element(page, "forest-plot")
    assert "published, pooled (same rows)" in forest and "shipped column on the same rows, pooled" in forest
    table = element(page, "references-table")
    shown = shown_text(table, tag="")
    assert "not ice-score (subset, n=40)" in shown and "gpt35_nswr (all, n=3,220)" in shown


def test_no_published_value_is_drawn_next_to_other_data(data):
    """The fixture holds 60 rows of the set, the probe's hostile run 18 samples of the user's own:
    no estimate there is on the rows the values were published on."""
    for entry in data["headline"]:
        for scope in ("subset", "all"):
            assert entry["reference_marks"][scope] == [], (entry["method"], scope)
            if entry[scope] and entry["references"]:
                assert "not the set they were measured on" in entry["reference_notes"][scope]
    forest = element(render_html(data), "forest-plot")
    assert "published, pooled" not in forest and "no reference value was measured on these rows" in forest
    # a report.json written before reference_marks existed draws none either
    old = copy.deepcopy(data)
    for entry in old["headline"]:
        entry.pop("reference_marks"), entry.pop("reference_notes")
    assert "published, pooled" not in element(render_html(old), "forest-plot")


def test_the_contamination_comparison_says_it_is_confounded_with_correctness(data):
    """Probe 30: contaminated = a near-copy of the canonical solution, so contaminated rows mostly
    pass (.906 vs .410 in the default run): the page says the comparison is confounded."""
    assert 'id="contamination-confound"' not in render_html(data)  # the fixture has no contaminated row
    data = copy.deepcopy(data)
    label = next(row for row in data["bias"]["rows"] if row["metric"] == data["bias"]["label"])
    label["contaminated"] = {"value": 0.90625, "ci": [0.767, 1.0], "n_rows": 32, "n_units": 18}
    label["clean"] = {**label["clean"], "value": 0.40997, "n_rows": 3188}
    note = shown_text(element(render_html(data), "contamination-confound"), tag="")
    assert "near-duplicate of the benchmark's own solution (humaneval" in note
    assert "passed 0.906 on the 32 contaminated rows, 0.410 on the 3,188 clean rows" in note
    assert "confounded with correctness" in note
