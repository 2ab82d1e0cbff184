"""``scores_wide.jsonl``: one row per sample, one column per method, read by ``correlate``.
No LLM: the rows are written by hand in the layout of ``scores.jsonl``."""

from __future__ import annotations

import json

import pytest

from workbench.io import read_jsonl
from workbench.score.wide_table import write_wide_table
from workbench.score.job import ROW_COLUMNS
from workbench.correlate import correlate


def _row(task, sample, method, score, status="ok", passed=1):
    row = dict.fromkeys(ROW_COLUMNS)
    row.update(task_id=task, sample_id=sample, method=method, score=score, status=status, passed=passed)
    return row


def test_wide_table_pivots_methods_and_nulls_failures(tmp_path):
    scores = tmp_path / "scores.jsonl"
    rows = [
        _row("T/0", 0, "chrf", 0.5), _row("T/0", 0, "ice-score", 3.0),
        _row("T/0", 1, "chrf", 0.1, passed=0), _row("T/0", 1, "ice-score", None, status="llm_error", passed=0),
        # a retried row later in the file wins
        _row("T/0", 1, "ice-score", 1.0, passed=0),
    ]
    scores.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert write_wide_table(scores, tmp_path / "wide.jsonl", ROW_COLUMNS) == 2
    wide = read_jsonl(tmp_path / "wide.jsonl")
    assert wide == [
        {"task_id": "T/0", "sample_id": 0, "passed": 1, "chrf": 0.5, "ice-score": 3.0},
        {"task_id": "T/0", "sample_id": 1, "passed": 0, "chrf": 0.1, "ice-score": 1.0},
    ]


def test_failed_method_is_missing_not_zero(tmp_path):
    scores = tmp_path / "scores.jsonl"
    rows = [_row(f"T/{t}", s, "m", None if s == 0 else float(s), status="parse_error" if s == 0 else "ok",
                 passed=int(s > 1)) for t in range(3) for s in range(4)]
    scores.write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_wide_table(scores, tmp_path / "wide.jsonl", ROW_COLUMNS)
    assert [r["m"] for r in read_jsonl(tmp_path / "wide.jsonl")][:4] == [None, 1.0, 2.0, 3.0]
    report = correlate(str(tmp_path / "wide.jsonl"), metrics=["m"], label="passed", n_resamples=20)
    assert report.to_dict()["metrics"]["m"]["n_samples"] == 9


@pytest.mark.parametrize("limit", [3, 1])
def test_a_crash_while_rows_move_between_the_files_loses_none(tmp_path, monkeypatch, limit):
    """fix32 review: a resume that selects set-aside rows again unlinked (or rewrote)
    scores.unselected.jsonl before it rewrote scores.jsonl, so a crash in between (disk full, a
    kill) lost those finished rows. Whatever write fails, each row is in one of the two files."""
    from workbench.score import wide_table
    from workbench.score.wide_table import keep_current_rows, unselected_path

    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(json.dumps(_row("T/0", s, "chrf", 0.5)) + "\n" for s in (0, 1)))
    unselected_path(scores).write_text(json.dumps(_row("T/0", 2, "chrf", 0.2)) + "\n")
    every = {0, 1, 2}
    real_open = wide_table.atomic_open

    def crash_on_scores(path, *args, **kwargs):
        if str(path) == str(scores):
            raise OSError("No space left on device")
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(wide_table, "atomic_open", crash_on_scores)
    with pytest.raises(OSError):
        # limit 3: sample 2 comes back; limit 1: it comes back to the selection's order and 1 goes out
        keep_current_rows(scores, selected=lambda row: row["sample_id"] in ({0, 1, 2} if limit == 3 else {0, 2}))
    found = {r["sample_id"] for path in (scores, unselected_path(scores)) if path.exists() for r in read_jsonl(path)}
    assert found == every
    monkeypatch.setattr(wide_table, "atomic_open", real_open)
    kept = keep_current_rows(scores, selected=lambda row: row["sample_id"] in {0, 2})
    assert kept == 1 and {r["sample_id"] for r in read_jsonl(scores)} == {0, 2}
    assert [r["sample_id"] for r in read_jsonl(unselected_path(scores))] == [1]


def test_rows_follow_the_input_order_not_the_order_they_finished_in(tmp_path):
    """newuser37: scores.jsonl holds rows as the workers finish them; the wide table (pasted next to the
    user's data) follows the input positions it is given, not that order."""
    scores = tmp_path / "scores.jsonl"
    finished = [("T/1", 0), ("T/0", 1), ("T/2", 0), ("T/0", 0)]
    scores.write_text("".join(json.dumps(_row(t, s, "chrf", 0.5)) + "\n" for t, s in finished))
    positions = {("T/0", "0"): 0, ("T/0", "1"): 1, ("T/1", "0"): 2, ("T/2", "0"): 3}
    write_wide_table(scores, tmp_path / "wide.jsonl", ROW_COLUMNS, order=positions)
    assert [(r["task_id"], r["sample_id"]) for r in read_jsonl(tmp_path / "wide.jsonl")] == [
        ("T/0", 0), ("T/0", 1), ("T/1", 0), ("T/2", 0)]
    write_wide_table(scores, tmp_path / "wide.jsonl", ROW_COLUMNS, order={("T/2", "0"): 0})
    assert [(r["task_id"], r["sample_id"]) for r in read_jsonl(tmp_path / "wide.jsonl")] == [
        ("T/2", 0), ("T/1", 0), ("T/0", 1), ("T/0", 0)]  # rows without a position: after, as finished


def _wide_keys(folder):
    return [(r["task_id"], r["sample_id"]) for r in read_jsonl(folder / "scores_wide.jsonl")]


def _file_order():
    from workbench.score.config import ScoreConfig
    from workbench.score.job import select_samples

    config = ScoreConfig(method=["chrf"], generation_column="completion_multipl_e")
    return [(s.task_id, s.sample_id) for s in select_samples("humaneval-codex-python", config, everything=True)]


def test_a_resumed_run_writes_the_wide_table_in_input_order(tmp_path):
    """Rows set aside by a resume with a smaller --limit came back before the others (2, 3, 0, 1).
    Real CLI, chrF on the bundled ICE-Score set."""
    from typer.testing import CliRunner

    from workbench.cli import app

    out = tmp_path / "out"
    base = ["score", "humaneval-codex-python", "-m", "chrf", "--generation-column", "completion_multipl_e",
            "-o", str(out), "--no-progress"]
    for limit, resume in (("4", []), ("2", ["--resume"]), ("4", ["--resume"])):
        result = CliRunner().invoke(app, [*base, "--limit", limit, *resume])
        assert result.exit_code == 0, result.output
    assert _wide_keys(out) == _file_order()[:4]


def test_a_stratified_selection_is_written_in_input_order(tmp_path):
    """--select stratified scores its picks in pick order (a smaller --method-limit is a prefix of it);
    the wide table still lists them as the input file does."""
    from typer.testing import CliRunner

    from workbench.cli import app

    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["score", "humaneval-codex-python", "-m", "chrf", "--generation-column",
                                      "completion_multipl_e", "--limit", "6", "--select", "stratified",
                                      "-o", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    position = {key: index for index, key in enumerate(_file_order())}
    keys = _wide_keys(out)
    assert len(keys) == 6 and keys == sorted(keys, key=position.__getitem__)
