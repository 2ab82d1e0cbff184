"""`workbench report` as a new user meets it: a mistyped folder gets an error, not stray report
files; a run that was killed mid-stage is not shown as if it were still running. Real run
folders written by hand in the shape the pipeline writes (no LLM)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from unique_functions import code
from workbench.cli import app
from workbench.report import build_report_data


def test_a_folder_that_is_no_run_folder_is_refused_and_left_alone(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("my own files")
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 1
    assert "is not a run folder" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_stage_left_running_by_a_killed_run_says_so_and_how_to_resume(tmp_path: Path) -> None:
    stages = {name: {"status": "pending"} for name in
              ("decontaminate", "dedup", "execute", "score", "score_all", "correlate", "correlate_all", "report")}
    stages["dedup"] = {"status": "skipped", "detail": "not in [run] stages"}
    stages["decontaminate"] = {"status": "skipped", "detail": "not in [run] stages"}
    stages["execute"] = {"status": "running", "error": None, "detail": None}
    (tmp_path / "execute").mkdir()
    (tmp_path / "execute" / "results.jsonl").write_text(
        json.dumps({"task_id": "HumanEval/0", "sample_id": 0, "passed": 1, "status": "passed"}) + "\n")
    (tmp_path / "run.json").write_text(json.dumps({"config": {}, "started": "2026-01-01T00:00:00+00:00",
                                                   "finished": None, "stages": stages}))
    result = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert result.exit_code == 0, result.output
    data = build_report_data(tmp_path)
    assert "killed" in data["notes"]["execute"] and "rerun `workbench run`" in data["notes"]["execute"]
    assert "killed" in data["state"]


def test_one_contaminated_row_reads_in_the_singular(tmp_path: Path) -> None:
    """A real ``workbench dedup --against`` run where exactly one row copies the reference
    (the page said "1 rows are near-duplicates")."""
    from workbench.dedup import DedupConfig, run_dedup

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"id": f"r{i}", "content": code(n)}) + "\n" for i, n in enumerate("pqs")))
    reference = tmp_path / "reference.jsonl"
    reference.write_text(json.dumps({"id": "REF/0", "content": code("p")}) + "\n")
    run = tmp_path / "run"
    run_dedup(str(rows), DedupConfig(id_column="id", workers=1, against=str(reference)), output_dir=run / "decontaminate")
    stages = {name: {"status": "skipped", "detail": "not in [run] stages"} for name in
              ("dedup", "execute", "score", "score_all", "correlate", "correlate_all", "report")}
    stages["decontaminate"] = {"status": "done"}
    stages["score"] = {"status": "skipped", "detail": "no LLM method in [score] method (score_all scores every row)"}
    (run / "run.json").write_text(json.dumps({"config": {}, "started": "2026-01-01T00:00:00+00:00",
                                              "finished": "2026-01-01T00:01:00+00:00", "stages": stages}))
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    # a note's brackets are text, not Rich markup (probe23: "no LLM method in  method")
    assert "no LLM method in [score] method" in " ".join(result.output.split())
    page = " ".join((run / "report.html").read_text().split())
    assert "1 row is a near-duplicate of 1 of the 1 row of" in page, page[page.find('id="contamination"'):][:300]
    assert "0 rows were too short to check (0 reference rows too short)" in page


def test_a_bias_report_without_a_label_is_shown_not_a_crash(tmp_path: Path) -> None:
    """A folder assembled by the single commands, with ``workbench bias DEDUP METRICS -m passed`` run
    without ``--label``/``--results`` (the bias JSON has no label): `workbench report` crashed in its
    template (``UndefinedError: No first item, sequence was empty``). Real dedup and bias jobs."""
    from workbench.bias import BiasConfig, run_bias
    from workbench.dedup import DedupConfig, run_dedup

    names = "abcdefghijkl"
    rows = tmp_path / "rows.jsonl"
    # every task has two copies of one program and one other: duplicate clusters to collapse
    rows.write_text("".join(json.dumps({"task_id": f"T/{n}", "sample_id": s, "content": code(n + ("x" if s == 2 else ""))})
                            + "\n" for n in names for s in range(3)))
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps({"task_id": f"T/{n}", "sample_id": s, "passed": int(s != 2)}) + "\n"
                               for n in names for s in range(3)))
    run = tmp_path / "run"
    run_dedup(str(rows), DedupConfig(id_column="task_id,sample_id", group_column="task_id", workers=1),
              output_dir=run / "dedup")
    run_bias(run / "dedup", str(metrics), BiasConfig(metric=["passed"], task_column="task_id"),
             json_path=run / "bias" / "report.json")
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    page = " ".join((run / "report.html").read_text().split())
    assert 'id="contamination-confound"' not in page  # nothing contaminated, and no label to speak of
    assert build_report_data(run)["bias"]["rows"][0]["metric"] == "passed"


def test_a_train_test_bias_report_names_allamanis_settings_not_one_per_cluster(tmp_path: Path) -> None:
    """newuser34: for a train/test corpus the page headed the test rows' fully biased mean "all rows",
    the unbiased test mean "one per cluster" and the Δ (cross-set biased vs unbiased test, Table 3)
    "Δ% all vs one per cluster". Real dedup and bias jobs."""
    from workbench.bias import BiasConfig, run_bias
    from workbench.dedup import DedupConfig, run_dedup

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.jsonl").write_text("".join(json.dumps({"id": f"tr{i}", "content": code(f"f{i}")}) + "\n" for i in range(6)))
    # test rows 0-2 copy train rows: the cross-set duplicates
    (corpus / "test.jsonl").write_text("".join(json.dumps({"id": f"te{i}", "content": code(f"f{i}" if i < 3 else f"g{i}")})
                                               + "\n" for i in range(8)))
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps({"id": f"{p}{i}", "acc": 1.0 if p == "te" and i < 3 else 0.1 * i}) + "\n"
                               for p, n in (("tr", 6), ("te", 8)) for i in range(n)))
    run = tmp_path / "run"
    run_dedup(str(corpus), DedupConfig(id_column="id", workers=1), output_dir=run / "dedup")
    run_bias(run / "dedup", str(metrics), BiasConfig(metric=["acc"], resamples=100), json_path=run / "bias" / "report.json")
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    page = " ".join((run / "report.html").read_text().split())
    table = page[page.find('id="bias-table"'):][:1500]
    assert "one per cluster" not in table and "cross-set biased vs unbiased test" in table, table
    assert "d over all 8 test rows" in table, table
