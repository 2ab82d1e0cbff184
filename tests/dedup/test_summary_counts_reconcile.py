"""The dedup summary's "exact dup. / near dup." and "removed rows, by reason" count the same
duplicate rows two ways (whichever row is kept; by relation to the row kept): newuser34 read
"exact dup. 11 / near dup. 65" beside "7 same tokens, 69 near copy" on humaneval-codex-python and
stumbled. The summary says both are rows and shows they add up to the same total. Real dedup."""

from __future__ import annotations

import json
import random
from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app


def _function(rng: random.Random, name: str) -> str:
    words = [f"{name}_{rng.randrange(10_000)}" for _ in range(12)]
    body = "\n".join(f"    {a} = {b}({c}, {rng.randrange(100)})" for a, b, c in zip(words, words[1:], words[2:]))
    return f"def {name}(arg):\n{body}\n    return {words[-1]}\n"


def test_exact_near_and_removal_reasons_visibly_reconcile(tmp_path: Path) -> None:
    # two identical rows and a longer near copy kept (--keep longest): exact 1 + near 1, but both removed as near copies
    base = _function(random.Random(4), "omega")
    longer = base.replace("    return", "    extra_name = 1\n    return")
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": i, "content": c}) + "\n" for i, c in (("a1", base), ("a2", base), ("b", longer))))
    result = CliRunner().invoke(app, ["dedup", str(data), "--keep", "longest", "--no-progress", "--workers", "1",
                                      "-o", str(tmp_path / "out")], terminal_width=250)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.replace("│", " ").split())
    assert ("exact dup. / near dup. (rows) 1 row beyond one per group of rows with the same token multiset + 1 more "
            "row that keeping one per cluster removes = 2 duplicate rows, whichever row is kept") in text, text
    assert ("removed rows, by reason the same 2 duplicate rows by their relation to the row their cluster kept: "
            "0 same tokens, 2 near copy; and 0 identical text (short), 0 contaminated: 2 removed") in text, text
