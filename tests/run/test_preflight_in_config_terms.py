"""probe 30: what the preflight of `workbench run` checks, and says, in the config's own terms:
one credential check shared with `workbench score` (Ollama's endpoint has a default), a missing
file named by the key that gave it, duplicate sample keys and task ids unknown to the problem set
refused before decontaminate and dedup run, an empty `[run] stages`, numbers given as text. Real
preflight on small files written here (no LLM is called, no stage runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workbench.run.config import ConfigError, build_config
from workbench.run.preflight import run_preflight


def _generations(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_a_data_language_the_data_contradicts_is_said_grammatically(tmp_path: Path) -> None:
    """'... [data] source (x.jsonl) name python in the 'language' column': a singular subject
    with a plural verb."""
    data = _generations(tmp_path / "g.jsonl", [
        {"task_id": "HumanEval/0", "sample_id": 0, "completion": "    return True\n", "language": "python"}])
    config = build_config({"run": {"output": str(tmp_path / "run"), "stages": ["score_all"]},
                           "data": {"source": str(data), "language": "java"},
                           "score": {"method": ["chrf"], "problems": "humaneval"}})
    with pytest.raises(ConfigError) as caught:
        run_preflight(config)
    message = _flat(str(caught.value))
    assert f"[data] language java contradicts the data: [data] source ({data}) rows name python in the " \
           "'language' column (1 rows)" in message, message
