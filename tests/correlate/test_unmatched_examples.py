"""``workbench correlate scores --results results`` with half the score rows unmatched warns with
the first unmatched (task, sample) ids, as the other join messages do (it said only "50 score rows
had no execution result"). A real subprocess; no LLM. Reproduction from the new-user pass newuser36."""

from __future__ import annotations

import subprocess
import sys


def test_the_unmatched_score_rows_warning_names_the_first_ids(two_tables):
    # the odd tasks were never executed: 50 of 100 score rows unmatched
    scores, results = two_tables(20, lambda task, sample: task % 2 == 0)
    done = subprocess.run([sys.executable, "-m", "workbench", "correlate", str(scores), "--results", str(results),
                           "-m", "m", "--resamples", "50"], capture_output=True, text=True, timeout=600,
                          env={**__import__("os").environ, "COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert ("join: 50 score rows had no execution result and are left out "
            "(the first: (T1, 0), (T1, 1), (T1, 2))") in said, said


def test_score_rows_without_a_task_id_are_counted_as_such_with_results(tmp_path):
    """probe 39: with --results, 3 score rows whose task_id cell is empty were "score rows without a result
    (the first: (None, 0) ...)" and the summary said "0 without task id"; without --results the same rows are
    "3 without task id". Both now say 3 without task id, and no join warning. In process (correlate())."""
    from workbench.correlate import correlate

    scores, results = [], []
    for task in range(6):
        for sample in range(4):
            empty = task == 0 and sample < 3
            scores.append({"task_id": None if empty else f"T{task}", "sample_id": sample,
                           "m": ((task * 7 + sample * 3) % 10) / 10, "passed": (task + sample) % 2})
            results.append({"task_id": f"T{task}", "sample_id": sample, "passed": (task + sample) % 2})
    scored = {key: [row[key] for row in scores] for key in scores[0]}
    alone = correlate(scored, metrics=["m"], n_resamples=20, length_column="none")
    joined = correlate({k: v for k, v in scored.items() if k != "passed"}, metrics=["m"], n_resamples=20,
                       length_column="none", results={key: [row[key] for row in results] for key in results[0]})
    for report in (alone, joined):
        assert (report.counts.excluded_missing_task, report.counts.rows, report.counts.samples) == (3, 24, 21)
    assert (joined.counts.join.matched, joined.counts.join.unmatched_scores, joined.counts.join.unmatched_results) \
        == (21, 0, 3)
    assert not any("join:" in warning for warning in joined.warnings), joined.warnings


def _tables_with_empty_sample_ids(empty_sample):
    """6 tasks x 4 samples; the score rows of (T0, 0..2) have ``empty_sample`` as their sample id (the
    others' sample ids are text beside ``""``, a column of one type; ``"3"`` joins the results' ``3``)."""
    scores, results = [], []
    for task in range(6):
        for sample in range(4):
            empty = task == 0 and sample < 3
            own = str(sample) if isinstance(empty_sample, str) else sample
            scores.append({"task_id": f"T{task}", "sample_id": empty_sample if empty else own,
                           "m": ((task * 7 + sample * 3) % 10) / 10})
            results.append({"task_id": f"T{task}", "sample_id": sample, "passed": (task + sample) % 2})
    return ({key: [row[key] for row in scores] for key in scores[0]},
            {key: [row[key] for row in results] for key in results[0]})


def test_score_rows_without_a_sample_id_are_counted_as_such_with_results(tmp_path):
    """leftover of session 40: with --results, 3 score rows whose sample_id cell is empty ("" or null) were
    "3 score rows without a result" and a join warning "(the first: (T0, None), ...)"; they have no key to
    join, as a row with an empty task id has none, so they are counted as rows without a sample id (the
    text summary's "left out" line, counts.excluded_missing_sample), named by row, and not as unmatched.
    In process (correlate()) for the counts, and a real subprocess for the printed lines; no LLM."""
    import json
    import os

    from workbench.correlate import correlate

    for empty in ("", None):
        scored, executed = _tables_with_empty_sample_ids(empty)
        report = correlate(scored, metrics=["m"], n_resamples=40, length_column="none", results=executed)
        assert (report.counts.excluded_missing_sample, report.counts.excluded_missing_task,
                report.counts.rows, report.counts.samples) == (3, 0, 24, 21)
        assert (report.counts.join.matched, report.counts.join.unmatched_scores,
                report.counts.join.unmatched_results) == (21, 0, 3)
        assert report.to_dict()["counts"]["excluded_missing_sample"] == 3
        said = " ".join(report.warnings)
        assert "had no execution result" not in said and "None" not in said, report.warnings
        assert "join: 3 score rows have no sample id in 'sample_id'" in said, report.warnings
        assert "rows 1, 2, 3, counting from 1" in said, report.warnings

    scored, executed = _tables_with_empty_sample_ids("")
    paths = []
    for name, table in (("scores.jsonl", scored), ("results.jsonl", executed)):
        path = tmp_path / name
        path.write_text("".join(json.dumps(dict(zip(table, row))) + "\n" for row in zip(*table.values())))
        paths.append(str(path))
    done = subprocess.run([sys.executable, "-m", "workbench", "correlate", paths[0], "--results", paths[1],
                           "-m", "m", "--resamples", "50", "--length-column", "none"], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "COLUMNS": "250"})
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "left out: 0 without label, 0 without task id, 3 without sample id" in said, said
    assert "0 score rows without a result" in said, said


def test_a_join_where_no_score_row_has_a_sample_id_says_so():
    """Every score row with an empty sample id: the join is empty, and the message says why (it showed the
    keys (T0, None) and asked to check the files). In process; no LLM."""
    import pytest

    from workbench.correlate import correlate
    from workbench.errors import DataError

    scored, executed = _tables_with_empty_sample_ids("")
    scored["sample_id"] = [""] * len(scored["sample_id"])
    with pytest.raises(DataError, match=r"none of the 24 score rows of .* has a sample id in 'sample_id'"):
        correlate(scored, metrics=["m"], n_resamples=40, length_column="none", results=executed)
