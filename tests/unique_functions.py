"""Python functions whose tokens are all their own, so the only duplicates in a corpus of them are the
copies a test plants, and JSON Lines files of such rows: for the bias, dedup and report tests (tests/
is on pytest's ``pythonpath``)."""

from __future__ import annotations

import json
import random
from pathlib import Path


def make_function(rng: random.Random, name: str) -> str:
    """A function ``name`` of about 40 identifier/number tokens: 11 assignments of names ``{name}_N``
    and numbers drawn from ``rng`` (``name`` makes them unique to it), then a return."""
    words = [f"{name}_{rng.randrange(10_000)}" for _ in range(12)]
    body = "\n".join(f"    {a} = {b}({c}, {rng.randrange(100)})" for a, b, c in zip(words, words[1:], words[2:]))
    return f"def {name}(arg):\n{body}\n    return {words[-1]}\n"


def code(name: str) -> str:
    """:func:`make_function` with its numbers drawn from ``random.Random(name)``: the same text for the same name."""
    return make_function(random.Random(name), name)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    """Write ``rows`` to ``path`` as JSON Lines (one ``json.dumps`` a line); returns ``path``."""
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path
