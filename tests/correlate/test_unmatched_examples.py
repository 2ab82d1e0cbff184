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
