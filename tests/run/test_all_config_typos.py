"""``workbench run`` on a config with several key typos names every unknown key in one line, each
with its suggestion (it used to stop at the first: fix, rerun, find the next). A real subprocess;
no stage runs and no LLM is involved. Reproduction from the new-user pass newuser36."""

from __future__ import annotations

import subprocess
import sys


def test_every_unknown_key_is_named_at_once_with_its_suggestion(tmp_path):
    config = tmp_path / "typos.toml"
    config.write_text('[data]\nsorce = "humaneval-codex-python"\n\n'
                      '[dedup]\nmin_token = 20\n\n'
                      '[score]\nlimt = 3\nmethod = ["chrf"]\n')
    done = subprocess.run([sys.executable, "-m", "workbench", "run", str(config), "-o", str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, lines
    line = lines[0]
    for key, suggested in (("[data]", "'sorce' (did you mean 'source'?)"),
                           ("[dedup]", "'min_token' (did you mean 'min_tokens'?)"),
                           ("[score]", "'limt' (did you mean 'limit'")):
        assert key in line and suggested in line, line
    assert "3 unknown keys" in line, line
    assert "source is required" not in line  # the typo is the cause, not a second problem
    assert not (tmp_path / "run").exists()
