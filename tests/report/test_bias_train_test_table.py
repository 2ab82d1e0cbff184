"""The report's bias table on a train/test corpus shows Allamanis 2019's three test settings, each
beside its own heading, and the Δ% of Table 3 between two of them (newuser34: the fully biased mean
stood beside a Δ computed from the cross-set biased mean, which differ when the test split has
duplicates within itself). Real dedup, bias job and report."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from typer.testing import CliRunner

from workbench.bias import BiasConfig, run_bias
from workbench.bias.settings import relative_difference
from workbench.cli import app
from workbench.dedup import DedupConfig, run_dedup


def _code(name: str) -> str:
    rng = random.Random(name)
    words = [f"{name}_{rng.randrange(10_000)}" for _ in range(12)]
    body = "\n".join(f"    {a} = {b}({c}, {rng.randrange(100)})" for a, b, c in zip(words, words[1:], words[2:]))
    return f"def {name}(arg):\n{body}\n    return {words[-1]}\n"


def test_the_bias_table_shows_fully_biased_cross_set_biased_and_unbiased_test(tmp_path: Path) -> None:
    # t1 copies train A (cross-set duplicate); t2, t3 copy each other (an in-test duplicate)
    rows = [("A", "train", "a", 0), ("B", "train", "b", 0), ("t1", "test", "a", 1), ("t2", "test", "e", 1),
            ("t3", "test", "e", 1), ("t4", "test", "f", 0), ("t5", "test", "g", 1)]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "split": s, "content": _code(b)}) + "\n" for i, s, b, _ in rows))
    run = tmp_path / "run"
    run_dedup(str(corpus), DedupConfig(id_column="id", split_column="split", workers=1), output_dir=run / "dedup")
    report = run_bias(run / "dedup", {"id": [r[0] for r in rows], "acc": [r[3] for r in rows]},
                      BiasConfig(metric=["acc"], resamples=100), json_path=run / "bias" / "report.json")
    settings = report.duplication.metrics["acc"].settings
    fully, cross, unbiased = (settings[s].value for s in ("fully_biased", "cross_set_biased", "unbiased_test"))
    assert (fully, cross, unbiased) == (0.8, 0.75, 2 / 3)  # the three differ on this corpus
    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    page = " ".join((run / "report.html").read_text().split())
    table = page[page.find('id="bias-table"'):page.find("</table>", page.find('id="bias-table"'))]
    headings = re.findall(r"<th>(.*?)</th>", table)
    assert [h.split(" (")[0] for h in headings[1:5]] == ["fully biased", "cross-set biased", "unbiased test",
                                                         "&Delta;% cross-set biased vs unbiased test"], headings
    assert headings[6:8] == ["clean test rows", "contaminated test rows"], headings  # bias counts the test rows there too
    cells = [re.sub(r"<[^>]+>", " ", c).split()[0] for c in re.findall(r'<td class="num">(.*?)</td>', table)]
    assert cells[:4] == [f"{fully:.4f}", f"{cross:.4f}", f"{unbiased:.4f}",
                         f"{relative_difference(cross, unbiased):.2f}%"], cells
    # the dedup table's exact / near duplicates (rows, whichever is kept) and removed.csv's reasons add up
    reconcile = page[page.find('id="dedup-reconcile"'):][:400]
    assert "count rows, not pairs, whichever row is kept: 2 + 0 = 2 duplicate rows" in reconcile, reconcile
    assert "gives the same rows by their relation to the row their cluster kept: 2 with the same tokens" in reconcile
