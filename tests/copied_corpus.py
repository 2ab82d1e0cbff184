"""A source-file corpus of three short Python functions (under dedup's default ``--min-tokens`` 20, so
only the identical-text rule, ``exact_text``, can join them), written in a train and a test split as
byte-identical copies, or once in one folder: the corpus of the bias and dedup tests of identical-text
cross-set duplicates (tests/ is on pytest's ``pythonpath``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

#: the three bodies, written as ``f0.py``, ``f1.py``, ``f2.py``
BODIES = ["def add(a, b):\n    return a + b\n", "def sub(a, b):\n    return a - b\n", "def neg(a):\n    return -a\n"]
#: a fourth short body of no other file, for the ``extra`` file that makes a split differ
MUL = "def mul(a, b):\n    return a * b\n"


def write_copied_corpus(root: Path, splits: Sequence[str] = ("train", "test"),
                        extra: Mapping[str, str] | None = None) -> Path:
    """Write :data:`BODIES` as ``f0.py`` .. ``f2.py`` into ``root/corpus/<split>/`` for each of ``splits``
    (with no splits, straight into ``root/corpus``), then each ``extra`` file (path under ``root/corpus``
    -> text). Returns ``root/corpus``."""
    corpus = root / "corpus"
    for folder in [corpus / split for split in splits] or [corpus]:
        folder.mkdir(parents=True)
        for index, body in enumerate(BODIES):
            (folder / f"f{index}.py").write_text(body)
    for relative, text in (extra or {}).items():
        (corpus / relative).write_text(text)
    return corpus
