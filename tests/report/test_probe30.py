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

from workbench.report import build_report_data, render_html
from workbench.report.sections import MAX_LISTED_PER_STATUS, not_passed

FIXTURE = Path(__file__).parents[1] / "fixtures" / "run-fixture"


@pytest.fixture(scope="module")
def data() -> dict:
    return build_report_data(FIXTURE)


def _text(markup: str) -> str:
    """The text a browser shows for ``markup`` (tags dropped, white space collapsed)."""
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", "", markup))).strip()


def _element(page: str, element_id: str) -> str:
    start = page.index(f'id="{element_id}"')
    tag = page[page.rindex("<", 0, start) + 1:start].split()[0]
    return page[page.index(">", start) + 1:page.index(f"</{tag}>", start)]


def test_the_pass_at_k_line_keeps_its_words_apart(data):
    data = copy.deepcopy(data)
    values = data["execution"]["pass_at_k"]["values"]
    for k, ci in (("1", [0.3952, 0.4365]), ("10", [0.7651, 0.8657])):  # as the probe's 3,220-row run
        values[k].update(ci=ci, no_ci=None)
    line = _text(_element(render_html(data), "pass-at-k"))
    assert "0.8657] (unbiased estimator" in line, line
    assert "seed 0) pass@100 not reported" in line, line
    assert not re.search(r"\S\(unbiased|\)pass@|\]\(", line), line
    del values["10"]  # no interval: the reason, then the note
    values["1"].update(ci=None, no_ci="only 3 tasks contribute")
    line = _text(_element(render_html(data), "pass-at-k"))
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
        assert f'<a href="#sample-{views[row_id]}">{row_id}</a>' in block
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
