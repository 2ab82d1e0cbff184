"""A method the score run limited with ``method_limit`` has values on a prefix of the selection only, by
design (the default job: DSA-CQE on 2 of 40 samples). ``workbench correlate`` said so as three warnings
per method ("38 rows left out (38 missing ...)", "small n: no pooled interval", "... per-problem ..."),
which read as faults; now one note each, from the score run's own ``run.json``, and rows missing for
another reason stay a warning. Real components: ``workbench score`` on the bundled ICE-Score set with
chrF limited to 4 samples and ICE-Score on all 12 (the LLM is litellm's ``mock_response``: every answer
"3"), ``workbench correlate`` in process and through the command line."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from workbench.cli import app
from workbench.correlate.analysis import correlate, score_method_limits
from workbench.score.config import ScoreConfig
from workbench.score.job import run_score


def _score(folder, method_limit):
    config = ScoreConfig(method=["ice-score", "chrf"], model="gpt-4o-mini", retries=0, workers=1,
                         cache_dir=folder.parent / "cache", generation_column="completion_multipl_e", limit=12,
                         select="stratified", method_limit=method_limit, carry=["passed", "codebleu"])
    run_score("humaneval-codex-python", config, folder, mock_response="3")
    return folder / "scores_wide.jsonl"


def test_a_method_limit_is_one_note_not_warnings(tmp_path):
    wide = _score(tmp_path / "limited", ["chrf=4"])
    assert score_method_limits(wide) == {"chrf": 4}
    report = correlate(wide, metrics=["chrf", "codebleu"], n_resamples=50, seed=0)
    assert report.metrics["chrf"].n_samples == 4
    assert not any(w.startswith("chrf:") for w in report.warnings), report.warnings
    [note] = [n for n in report.notes if n.startswith("chrf:")]
    assert note.startswith("chrf: scored on 4 samples of the 12, as the score run's method_limit chrf=4 asks")
    assert "no pooled or per-problem interval: only 2 tasks contribute" in note
    assert report.to_dict()["notes"] == report.notes
    # printed as one line marked note:, no warning about chrf
    said = CliRunner().invoke(app, ["correlate", str(wide), "--metric", "chrf", "--metric", "codebleu",
                                    "--resamples", "50", "--length-column", "none"])
    assert said.exit_code == 0, said.output
    assert "note: chrf: scored on 4 samples of the 12" in " ".join(said.output.split())
    assert "warning: chrf" not in said.output


def test_rows_missing_beyond_the_limit_stay_a_warning(tmp_path):
    """The same rows without the run.json's limit (another table, or rows lost): a warning, as before."""
    wide = _score(tmp_path / "limited", ["chrf=4"])
    rows = [json.loads(line) for line in wide.read_text().splitlines()]
    plain = tmp_path / "copy.jsonl"
    plain.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert score_method_limits(plain) == {}
    report = correlate(plain, metrics=["chrf", "codebleu"], n_resamples=50, seed=0)
    assert "chrf: 8 rows left out (8 missing, 0 non-numeric, 0 infinite)" in report.warnings
    assert any(w.startswith("chrf: small n: no pooled interval") for w in report.warnings)
    assert not any(n.startswith("chrf") for n in report.notes)  # (a length note: this table has no generation column)
    # one of the 4 scored rows lost: 1 row past the limit's 8 is a warning, the 8 a note
    # (the first scored row in the file: scores_wide.jsonl is in input order, not the order of selection)
    first_scored = next(i for i, row in enumerate(rows) if row.get("chrf") is not None)
    rows = [dict(row, chrf=None) if i == first_scored else row for i, row in enumerate(rows)]
    (tmp_path / "limited" / "scores_wide.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    report = correlate(wide, metrics=["chrf", "codebleu"], n_resamples=50, seed=0)
    assert "chrf: 1 row left out (1 missing, 0 non-numeric, 0 infinite)" in report.warnings
    assert any(n.startswith("chrf: scored on 3 samples of the 12") for n in report.notes)


def test_the_per_cluster_report_of_correlate_dedup_has_the_method_limit_notes_too(tmp_path):
    """``workbench correlate --dedup``: the scores were read as a table there, so neither the all-rows nor the
    one-per-cluster report knew the score run's limit (three warnings again, none at all for the per-cluster
    report, whose warnings and notes were never printed). The dedup here (real ``workbench dedup`` over the
    scored rows' code) removes one row of chrf's 4 and one past them: one row per cluster has chrf on 3 of 10
    rows, all by design."""
    import gzip
    from pathlib import Path

    wide = _score(tmp_path / "limited", ["chrf=4"])
    rows = [json.loads(line) for line in wide.read_text().splitlines()]
    bundled = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled"
    with gzip.open(bundled / "humaneval_codex_python_ice_score.jsonl.gz", "rt") as handle:
        code = {(r["task_id"], r["sample_id"]): r["completion_multipl_e"] for r in map(json.loads, handle)}
    generations = [{"task_id": r["task_id"], "sample_id": r["sample_id"], "code": code[(r["task_id"], r["sample_id"])]}
                   for r in rows]
    # scores_wide.jsonl is in input order: chrf's 4 rows are wherever the selection put them
    scored = [i for i, r in enumerate(rows) if r.get("chrf") is not None]
    past = [i for i, r in enumerate(rows) if r.get("chrf") is None]
    assert len(scored) == 4 and len(past) == 8
    generations[scored[1]]["code"] = generations[scored[0]]["code"]  # a scored row: removed as a copy of another
    generations[past[1]]["code"] = generations[past[0]]["code"]  # a row past the limit
    (tmp_path / "gens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in generations))
    runner = CliRunner()
    dedup = runner.invoke(app, ["dedup", str(tmp_path / "gens.jsonl"), "--code-column", "code", "--id-column",
                                "task_id,sample_id", "--min-tokens", "5", "--no-progress", "-o", str(tmp_path / "dd")])
    assert dedup.exit_code == 0, dedup.output
    said = runner.invoke(app, ["correlate", str(wide), "--metric", "chrf", "--metric", "codebleu", "--resamples", "50",
                               "--length-column", "none", "--dedup", str(tmp_path / "dd"), "--json",
                               str(tmp_path / "r.json")], terminal_width=200)
    assert said.exit_code == 0, said.output
    report = json.loads((tmp_path / "r.json").read_text())
    per_cluster = report["deduplicated"]
    assert per_cluster["selection"]["kept"] == 10
    for notes, warnings, n in ((report["notes"], report["warnings"], 12), (per_cluster["notes"], per_cluster["warnings"], 10)):
        assert not [w for w in warnings if w.startswith("chrf:")], warnings
        [note] = [note for note in notes if note.startswith("chrf:")]
        assert note.startswith(f"chrf: scored on {4 if n == 12 else 3} samples of the {n}, as the score run's "
                               "method_limit chrf=4 asks"), note
    text = " ".join(said.output.split())
    assert "note: chrf: scored on 4 samples of the 12" in text, text
    assert "note: one row per cluster: chrf: scored on 3 samples of the 10" in text, text
    assert "warning: chrf" not in text and "warning: one row per cluster: chrf" not in text, text


def test_a_method_limit_spelled_with_spaces_is_read_as_score_reads_it(tmp_path):
    """``workbench score`` takes ``--method-limit "chrf = 4"`` (it strips the parts) and records the
    entry as given; correlate read it with no strip, so the 8 rows past the limit were a warning."""
    wide = _score(tmp_path / "limited", ["chrf = 4"])
    assert score_method_limits(wide) == {"chrf": 4}
    report = correlate(wide, metrics=["chrf", "codebleu"], n_resamples=50, seed=0)
    assert not any(w.startswith("chrf:") for w in report.warnings), report.warnings
    assert any(n.startswith("chrf: scored on 4 samples of the 12") for n in report.notes)
