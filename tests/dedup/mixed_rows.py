"""A small table of every kind of row a dedup run sorts apart, in two groups and two splits:
near-duplicate token bags (a-d), identical short stubs up to whitespace, empty and binary
cells, a parse error, and literals that differ only inside a string. Written as JSON Lines,
with a one-row reference set for ``--against``; the Spark tests run it on both engines."""

from __future__ import annotations

import json
from pathlib import Path


def _idents(lo: int, hi: int) -> str:
    return "".join(f"t{i}\n" for i in range(lo, hi + 1))


ROWS = [("a", _idents(1, 20)), ("b", _idents(3, 22)), ("c", _idents(5, 24)), ("d", _idents(3, 22)),
        ("stub1", "    pass\n"), ("stub2", "    pass  \r\n"), ("ret1", "return []"), ("ret2", "return []\n"),
        ("empty1", ""), ("empty2", " \n"), ("nul", "x\u0000y"), ("bad", "def f(:\n  return zz"),
        ("lit1", 'x = """a\n\nb"""'), ("lit2", 'x = """a\nb"""')]


def write_mixed_rows(folder: Path) -> tuple[Path, Path]:
    """Write ``rows.jsonl`` (columns id, task, split, content; tasks T0/T1 x splits train/test x
    :data:`ROWS`) and ``reference.jsonl`` (one row, task_id/content) into ``folder``.

    Returns:
        (the data file, the reference file).
    """
    data = folder / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": f"{task}/{split}/{i}", "task": task, "split": split, "content": text}) + "\n"
                            for task in ("T0", "T1") for split in ("train", "test") for i, text in ROWS))
    reference = folder / "reference.jsonl"
    reference.write_text(json.dumps({"task_id": "REF/0", "content": "return []"}) + "\n")
    return data, reference
