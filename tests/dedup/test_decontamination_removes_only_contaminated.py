"""A decontamination (``workbench dedup --against REF --decontaminate-only``, ``workbench run``'s
``decontaminate`` stage) drops exactly the rows that are near-duplicates of a REF row and keeps every other
row, in-set duplicates of each other included; ``workbench dedup --against REF`` without the flag is the
dedup job and removes both, the in-set duplicates and the contaminated rows.

newuser37: on 120 ICE-Score rows of 6 tasks the decontamination removed 3 rows with 0 contaminated (two
were ``    pass`` stubs of different tasks), so ``decontaminate/train.jsonl`` silently lost rows. Real
CLI (a subprocess), real tree-sitter, the bundled HumanEval; ``workbench bias`` reads the folder."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

from workbench.bias import BiasConfig, run_bias
from workbench.data import load_humaneval
from workbench.dedup import DedupConfig, run_dedup

#: a body that matches no HumanEval solution: 18 identifier/literal tokens, under the default --min-tokens 20
#: (identical text, ``exact_text``) and over 10 (the token rule)
BODY = ("    total = 0\n    for index, value in enumerate(values):\n        if value % divisor == remainder:\n"
        "            total += value * index + offset\n    return total, values, divisor, remainder, offset\n")


def _dedup_cli(tmp_path, source, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "workbench", "dedup", str(source), "--code-column", "completion",
                           "--id-column", "task_id", *options, "-o", str(tmp_path / "out")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**os.environ, "COLUMNS": "300"})  # the table's lines unwrapped


def _read_csv(path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def test_decontamination_without_contamination_keeps_every_row(tmp_path):
    # two copies of a body and two `    pass` stubs of other tasks (identical text below --min-tokens)
    rows = [{"task_id": "mine/0", "completion": BODY}, {"task_id": "mine/1", "completion": BODY},
            {"task_id": "mine/2", "completion": "    pass\n"}, {"task_id": "mine/3", "completion": "    pass\n"}]
    source = tmp_path / "gens.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = _dedup_cli(tmp_path, source, "--against", "humaneval", "--against-code-column", "canonical_solution",
                        "--decontaminate-only")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    report = json.loads((out / "report.json").read_text())
    kept = [json.loads(line)["task_id"] for line in (out / "train.jsonl").read_text().splitlines()]
    assert kept == ["mine/0", "mine/1", "mine/2", "mine/3"], report["overall"]
    assert _read_csv(out / "removed.csv") == []
    assert [row["id"] for row in _read_csv(out / "kept.csv")] == kept
    overall = report["overall"]
    assert (overall["removed"], overall["kept"]) == (0, 4)
    assert set(overall["removed_rows_by_reason"].values()) == {0}
    # the in-set duplication is still described (the two copies, the two stubs), not removed
    assert (overall["exact_text_clusters"], overall["exact_text_duplicates"]) == (2, 2)
    assert report["contamination"]["contaminated_rows"] == 0
    said = " ".join(result.stdout.split())
    assert "0 contaminated: 0 removed" in said, said
    assert "in-set duplicates are kept: a decontamination removes only contaminated rows" in said, said

    # the same rows without --against: the in-set dedup removes the copy and the stub, as before
    plain = _dedup_cli(tmp_path, source)
    assert plain.returncode == 0, plain.stderr
    removed = {row["id"]: row["reason"] for row in _read_csv(out / "removed.csv")}
    assert removed == {"mine/1": "exact_text_duplicate", "mine/3": "exact_text_duplicate"}


def _leaked_corpus(tmp_path):
    """Six rows in ``tmp_path/gens.jsonl``: two copies of HumanEval/0's solution (contaminated), two copies of
    one body, two ``pass`` stubs. Returns the rows and the file."""
    problems = {problem["task_id"]: problem for problem in load_humaneval()}
    leak = problems["HumanEval/0"]["canonical_solution"]
    rows = [{"task_id": "T/0", "completion": leak}, {"task_id": "T/1", "completion": leak},  # contaminated copies
            {"task_id": "T/2", "completion": BODY}, {"task_id": "T/3", "completion": BODY},
            {"task_id": "T/4", "completion": "    pass\n"}, {"task_id": "T/5", "completion": "    pass\n"}]
    source = tmp_path / "gens.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows, source


def test_only_the_contaminated_rows_are_dropped_and_bias_reads_the_folder(tmp_path):
    rows, source = _leaked_corpus(tmp_path)
    run = run_dedup(str(source), DedupConfig(code_column="completion", id_column="task_id", against="humaneval",
                                             against_code_column="canonical_solution", min_tokens=10, workers=1,
                                             decontaminate_only=True),
                    output_dir=tmp_path / "out")
    out = tmp_path / "out"
    removed = {row["id"]: (row["reason"], row["duplicate_of"]) for row in _read_csv(out / "removed.csv")}
    assert removed == {"T/0": ("contaminated", "HumanEval/0"), "T/1": ("contaminated", "HumanEval/0")}
    kept = [json.loads(line)["task_id"] for line in (out / "train.jsonl").read_text().splitlines()]
    assert kept == ["T/2", "T/3", "T/4", "T/5"]
    overall = run.report["overall"]
    assert (overall["removed"], overall["kept"], overall["removed_rows_by_reason"]["contaminated"]) == (2, 4, 2)
    assert run.report["contamination"]["contaminated_rows"] == 2
    # the cluster of the two leaked rows keeps none; the others keep every member
    largest = {tuple(cluster["sample"]): cluster for cluster in run.report["largest_clusters"]}
    assert largest[("T/0", "T/1")]["kept"] is None and largest[("T/0", "T/1")]["contaminated"] == 2

    # workbench bias reads the folder: as its own contamination and as a second folder of an in-set dedup
    metrics = {"task_id": [row["task_id"] for row in rows], "acc": [1, 1, 0, 1, 0, 0]}
    in_set = tmp_path / "in_set"
    run_dedup(str(source), DedupConfig(code_column="completion", id_column="task_id", min_tokens=10, workers=1),
              output_dir=in_set)
    for folder, contamination in ((out, None), (in_set, str(out))):
        report = run_bias(folder, metrics, BiasConfig(metric=["acc"], id_column="task_id", resamples=40,
                                                      contamination=contamination))
        assert report.contamination.ids["contaminated_ids"] == ["T/0", "T/1"]
        assert report.contamination.metrics["acc"].settings["clean"].value == 0.25
    # one row per cluster in the duplication analysis, whichever folder: {T/0, T/1}, {T/2, T/3}, {T/4, T/5}
    deduplicated = report.duplication.metrics["acc"].settings["deduplicated"]
    assert deduplicated.n_rows == 3


def test_default_against_removes_in_set_duplicates_and_contaminated_rows(tmp_path):
    # `workbench dedup --against` without --decontaminate-only writes deduplicated and decontaminated splits
    rows, source = _leaked_corpus(tmp_path)
    result = _dedup_cli(tmp_path, source, "--against", "humaneval", "--against-code-column", "canonical_solution",
                        "--min-tokens", "10", "--workers", "1")
    assert result.returncode == 0, result.stderr
    out = tmp_path / "out"
    removed = {row["id"]: (row["reason"], row["duplicate_of"]) for row in _read_csv(out / "removed.csv")}
    assert removed == {"T/0": ("contaminated", "HumanEval/0"), "T/1": ("contaminated", "HumanEval/0"),
                       "T/3": ("exact_duplicate", "T/2"), "T/5": ("exact_text_duplicate", "T/4")}
    kept = [json.loads(line)["task_id"] for line in (out / "train.jsonl").read_text().splitlines()]
    assert kept == ["T/2", "T/4"]
    report = json.loads((out / "report.json").read_text())
    assert (report["overall"]["removed"], report["overall"]["kept"]) == (4, 2)
    assert report["contamination"]["decontaminate_only"] is False
    assert all("kept_rows" not in cluster for cluster in report["largest_clusters"])
    said = " ".join(result.stdout.split())
    assert "2 contaminated: 4 removed" in said, said

    # workbench bias reads the folder as before: one kept row per cluster
    metrics = {"task_id": [row["task_id"] for row in rows], "acc": [1, 1, 0, 1, 0, 0]}
    bias = run_bias(out, metrics, BiasConfig(metric=["acc"], id_column="task_id", resamples=40))
    assert bias.contamination.ids["contaminated_ids"] == ["T/0", "T/1"]
    assert bias.duplication.metrics["acc"].settings["deduplicated"].n_rows == 3


def test_decontaminate_only_needs_against(tmp_path):
    source = tmp_path / "gens.jsonl"
    source.write_text(json.dumps({"task_id": "T/0", "completion": BODY}) + "\n")
    result = _dedup_cli(tmp_path, source, "--decontaminate-only")
    assert result.returncode != 0
    said = " ".join(result.stderr.split())
    assert "--decontaminate-only" in said and "--against" in said, said
    assert not (tmp_path / "out").exists()


def test_the_text_report_of_a_train_test_decontamination_names_no_cross_set_policy(tmp_path):
    """The cross-set policy removes no row in a decontamination (it only picks the row cluster_shapes.csv
    records as kept): the table said "cross-set policy  remove-test" all the same. Real run_dedup on a
    train/test corpus with a cross-set duplicate, its report rendered as the terminal shows it."""
    from rich.console import Console

    from workbench.dedup.duplication_report import render_report

    rows = [{"task_id": "a", "split": "train", "completion": BODY}, {"task_id": "b", "split": "test", "completion": BODY},
            {"task_id": "c", "split": "test", "completion": BODY.replace("offset", "shift")}]
    source = tmp_path / "gens.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    options = {"code_column": "completion", "id_column": "task_id", "split_column": "split", "min_tokens": 10,
               "workers": 1, "against": "humaneval", "against_code_column": "canonical_solution"}
    for decontaminate_only in (False, True):
        run = run_dedup(str(source), DedupConfig(**options, decontaminate_only=decontaminate_only),
                        output_dir=tmp_path / f"out{decontaminate_only}")
        assert run.report["cross_set"]["cross_set_clusters"] == 1
        console = Console(width=250, record=True, file=open(os.devnull, "w"))
        for renderable in render_report(run.report):
            console.print(renderable)
        said = " ".join(console.export_text().replace("│", " ").split())  # a table's cells as words
        if decontaminate_only:
            assert "cross-set policy remove-test" not in said, said
            assert "cross-set policy none: a decontamination removes only contaminated rows" in said, said
        else:
            assert "cross-set policy remove-test" in said, said
