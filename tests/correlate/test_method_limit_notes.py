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
    assert not report.notes
    # one of the 4 scored rows lost: 1 row past the limit's 8 is a warning, the 8 a note
    rows = [dict(row, chrf=None) if row.get("chrf") is not None and not lost else row
            for lost, row in ((i > 0, row) for i, row in enumerate(rows))]
    (tmp_path / "limited" / "scores_wide.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    report = correlate(wide, metrics=["chrf", "codebleu"], n_resamples=50, seed=0)
    assert "chrf: 1 row left out (1 missing, 0 non-numeric, 0 infinite)" in report.warnings
    assert any(n.startswith("chrf: scored on 3 samples of the 12") for n in report.notes)
