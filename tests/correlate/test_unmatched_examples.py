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
