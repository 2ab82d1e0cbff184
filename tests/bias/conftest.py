"""Corpora for the bias tests: functions whose tokens are their own, so copies are exactly the
duplicates a test plants, deduplicated by the real ``run_dedup`` into an output folder."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from unique_functions import code, write_jsonl
from workbench.dedup import DedupConfig, run_dedup


def dedup(tmp_path: Path, rows: list[dict], **options) -> Path:
    source = write_jsonl(tmp_path / "corpus.jsonl", rows)
    out = tmp_path / "dedup"
    run_dedup(str(source), DedupConfig(**{"id_column": "id", "workers": 1, **options}), output_dir=out)
    return out


#: one set: r1, r2 copies; r3 alone; r4, r5, r6 copies (id, code base, metric value)
SINGLE = [("r1", "p", 1), ("r2", "p", 0), ("r3", "q", 1), ("r4", "s", 1), ("r5", "s", 0), ("r6", "s", 1)]


@pytest.fixture()
def corpus() -> SimpleNamespace:
    """The helpers: ``code(name)``, ``write_jsonl(path, rows)``, ``dedup(folder, rows, **options)``, ``SINGLE``."""
    return SimpleNamespace(code=code, write_jsonl=write_jsonl, dedup=dedup, SINGLE=SINGLE)
