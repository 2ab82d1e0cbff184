"""``workbench score`` refuses a model it cannot call before it loads the data or the scoring
machinery (real subprocesses; no LLM is called, no network). The data is a ``.jsonl`` file whose
second line is not JSON: a run that loaded it first would say so instead of naming the model.
``python -X importtime`` lists the modules the refused run imported: ``workbench.score.job`` (the
scoring machinery, and with it the data loaders) is not among them, nor, for a ``local/`` model,
litellm (whose import alone took 34 s of the 44 s a mistyped alias used to cost on a loaded
machine). Reproductions from the new-user pass newuser36: an unknown alias and a missing
OPENAI_API_KEY were refused only after those imports, under a "loading the data" bar, and a file
that is not GGUF (``local//path/fake.gguf``) was loaded, scored into 4 failed rows and exit 3."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest


def _score(tmp_path, model: str, env_drop: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    data = tmp_path / "gen.jsonl"
    data.write_text('{"task_id": "t/0", "generation": "x = 1", "reference": "x = 1"}\nnot json\n')
    env = {key: value for key, value in os.environ.items() if key not in env_drop}
    return subprocess.run([sys.executable, "-X", "importtime", "-m", "workbench", "score", str(data),
                           "-m", "ice-score", "--model", model, "-o", str(tmp_path / "out"), "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=600)


def _imported(done: subprocess.CompletedProcess) -> set[str]:
    return {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}


def _said(done: subprocess.CompletedProcess) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("import time:")]


@pytest.mark.parametrize("model, words", [
    ("local/qwen2.5-coder-7b", ["unknown local model alias 'qwen2.5-coder-7b'", "workbench models list"]),
    ("local/{fake}", ["is not a GGUF file", "workbench models list"]),
])
def test_a_local_model_that_cannot_load_is_refused_before_the_data_and_litellm(tmp_path, model, words):
    fake = tmp_path / "fake.gguf"
    fake.write_text("not a model\n")
    done = _score(tmp_path, model.format(fake=fake))
    said = _said(done)
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(said) == 1 and all(word in said[0] for word in words), said
    imported = _imported(done)
    assert "workbench.score.job" not in imported and "litellm" not in imported
    assert not (tmp_path / "out" / "scores.jsonl").exists()


def test_an_openai_model_without_its_key_is_refused_before_the_data(tmp_path):
    done = _score(tmp_path, "openai/gpt-4o-mini", env_drop=("OPENAI_API_KEY",))
    said = _said(done)
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(said) == 1 and "OPENAI_API_KEY" in said[0], said
    assert "workbench.score.job" not in _imported(done)
