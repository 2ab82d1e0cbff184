"""What a new user's probe of the report found (issue 30): the execution line's words run together,
per-sample execution failures are only counted, published reference values stand next to estimates
on other rows. On the fixture run folder (a trimmed real run) and hand-made report data."""

from __future__ import annotations

import copy
import html as html_lib
import re
from pathlib import Path

import pytest

from workbench.report import build_report_data, render_html

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
