"""`workbench report RUN_DIR` after the data was edited (probe issue 30, F4): the report reads the
code again from ``[data] source``, while the verdicts and scores are the run's. Edited code must
never stand next to the old verdict as if it were what was judged: the page and report.json say the
data changed (run.json's ``data_fingerprint``), and which samples' code differs from what ran
(each execution row's ``code_sha256``). A real ``workbench run`` (sandboxed execution, no LLM)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_humaneval
from workbench.report import build_report_data, write_report
from workbench.report.data_check import shown_id_text

EDITED = 'return "EDITED AFTER THE RUN"'


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _run(tmp_path: Path, stop: str | None = "humaneval") -> tuple[Path, Path, list[dict]]:
    """Three HumanEval generations, one with trailing text cut at a stop sequence (``stop``; none
    cut without it), run by `workbench run` (execute + report); a subset file gives each a sample view."""
    problems = {row["task_id"]: row for row in load_humaneval().select(range(3))}
    rows = [
        {"task_id": "HumanEval/0", "sample_id": 0,
         "completion": problems["HumanEval/0"]["canonical_solution"] + "\n\nprint(has_close_elements([1.0], 0.5))\n"},
        {"task_id": "HumanEval/0", "sample_id": 1, "completion": problems["HumanEval/0"]["canonical_solution"]},
        {"task_id": "HumanEval/2", "sample_id": 0, "completion": "    return 0.0\n"},
    ]
    data = tmp_path / "gens.jsonl"
    _write(data, rows)
    config = tmp_path / "c.toml"
    config.write_text(f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["execute", "report"]\n'
                      f'[data]\nsource = "{data}"\n{"stop = " + json.dumps(stop) if stop else ""}\n[execute]\nworkers = 2\ntimeout = 30.0\n')
    result = CliRunner().invoke(app, ["run", str(config)])
    run = tmp_path / "run"
    assert result.exit_code == 0, result.output
    (run / "score").mkdir(exist_ok=True)
    _write(run / "score" / "subset.jsonl", [{"task_id": r["task_id"], "sample_id": r["sample_id"]} for r in rows])
    return run, data, rows


def _view(html: str, task: str, sample: int) -> str:
    start = html.index(f"<b>{task}</b> sample {sample} ")
    return html[start:html.index('<details class="sample"', start) if '<details class="sample"' in html[start:] else None]


def test_code_edited_after_the_run_is_never_shown_as_what_was_judged(tmp_path):
    run, data, rows = _run(tmp_path)
    report = build_report_data(run)
    check = report["data_check"]
    assert check["status"] == "unchanged" and check["message"] is None, check
    assert check["fingerprint"]["matches"] is True and check["samples"]["checked"] == 3
    assert all(view["code_check"] is None for view in report["samples"])
    _, html_path = write_report(run)
    assert 'id="data-changed"' not in html_path.read_text()

    # edit one sample's code after the run (as the probe did to HumanEval/0 sample 5, marked passed)
    original = [dict(row) for row in rows]
    rows[1] = {**rows[1], "completion": f"    {EDITED}\n"}
    _write(data, rows)
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "the data changed after the run" in said and "HumanEval/0:1" in said
    report = json.loads((run / "report.json").read_text())
    check = report["data_check"]
    assert check["status"] == "changed" and check["fingerprint"]["matches"] is False
    assert check["samples"]["changed"] == ["HumanEval/0:1"] and check["samples"]["changed_count"] == 1
    marks = {(v["task_id"], v["sample_id"]): v["code_check"] for v in report["samples"]}
    assert marks[("HumanEval/0", "1")]["status"] == "edited"
    assert marks[("HumanEval/0", "0")] is None and marks[("HumanEval/2", "0")] is None
    html = (run / "report.html").read_text()
    banner = html[html.index('id="data-changed"'):html.index("<nav")]
    assert "The data changed after this run" in banner and "The data source" in banner
    assert '<a class="to-view" href="#sample-2">HumanEval/0:1</a>' in banner  # linked to its view
    view = _view(html, "HumanEval/0", 1)
    assert "code edited after the run" in view and "<b>not</b> the code that was executed and scored" in view
    # the edited text is only inside the collapsed block that says it is not what was judged
    assert view.count("EDITED AFTER THE RUN") == 1
    hidden = view[view.index('<details class="edited-code">'):]
    assert "not what was executed or judged" in hidden[:300] and "EDITED AFTER THE RUN" in hidden[:hidden.index("</details>")]
    assert "code edited after the run" not in _view(html, "HumanEval/0", 0)

    # trailing text after the stop sequence changes the file, not the code that ran
    rows[1] = original[1]
    rows[0] = {**rows[0], "completion": rows[0]["completion"] + "# a note added later\n"}
    _write(data, rows)
    check = build_report_data(run)["data_check"]
    assert check["status"] == "changed" and check["samples"]["changed_count"] == 0
    assert "still matches what was run" in check["message"]

    # results without a code digest (an older workbench): which sample changed is not known
    results = run / "execute" / "results.jsonl"
    _write(results, [{k: v for k, v in json.loads(line).items() if k != "code_sha256"}
                     for line in results.read_text().splitlines() if line.strip()])
    report = build_report_data(run)
    assert report["data_check"]["status"] == "changed" and report["data_check"]["samples"]["checked"] == 0
    assert {v["code_check"]["status"] for v in report["samples"]} == {"unverified"}
    assert re.search(r"[Ww]hich samples changed is not known", report["data_check"]["message"])



def test_a_null_task_id_in_the_data_changed_lists_is_shown_as_missing(tmp_path):
    """fix33 notes item 2: the lists of samples the data check names (code edited, no longer in
    the data) showed a null task id as ``None:1``, where the rest of the page shows a muted "no
    task id". Results with a null task id (written before execute refused such data) are listed so;
    report.json keeps the id that matches dedup's outputs (``None:1``)."""
    run, _, _ = _run(tmp_path)
    results = run / "execute" / "results.jsonl"
    executed = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    for row in executed:
        if (row["task_id"], row["sample_id"]) == ("HumanEval/0", 1):
            row["task_id"] = None
    _write(results, executed)
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    check = json.loads((run / "report.json").read_text())["data_check"]
    assert check["status"] == "changed" and check["samples"]["missing"] == ["None:1"], check
    assert check["samples"]["id_parts"] == {"None:1": {"task_id": None, "sample_id": "1"}}
    assert shown_id_text("None:1", check["samples"]["id_parts"]) == "no task id:1"
    assert shown_id_text("HumanEval/0:1", {}) == "HumanEval/0:1"  # a report.json without id_parts
    html = (run / "report.html").read_text()
    banner = html[html.index('id="data-changed"'):html.index("<nav")]
    assert "None:1" not in re.sub(r"<[^>]+>", "", banner), banner
    assert '<span class="muted">no task id</span>:1' in banner, banner


def test_a_null_task_id_matches_a_null_task_id(tmp_path):
    """fix33 leftover 2: the data check keyed the data rows by ``str(task_id)``, so a null task id
    became ``"None"`` and never matched the result row's null id (``sample_key``): a sample whose
    code did not change was listed as no longer in the data. Results with a null task id come
    from before execute refused such data; here both files hold it, the code as it ran."""
    run, data, rows = _run(tmp_path, stop=None)
    results = run / "execute" / "results.jsonl"
    executed = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    for row in [*executed, *rows]:
        if (row["task_id"], row["sample_id"]) == ("HumanEval/2", 0):
            row["task_id"] = None
    _write(results, executed)
    _write(data, rows)
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    samples = json.loads((run / "report.json").read_text())["data_check"]["samples"]
    assert samples["checked"] == 3 and samples["missing"] == [] and samples["changed"] == [], samples
