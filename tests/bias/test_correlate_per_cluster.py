"""``workbench correlate --dedup DIR``: every coefficient also on one row per near-duplicate
cluster (the row the dedup kept), next to all rows; checked against scipy on the rows counted by hand."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.correlate import CorrelateConfig, kendall_tau_b, run_correlate
from workbench.errors import DataError


def four_tasks_of_five(corpus) -> list[dict]:
    """Rows ``{task_id, sample_id, content}`` of four tasks ``T/0``..``T/3`` of five samples each, in task then
    sample order; in each task samples 3 and 4 copy sample 0's code."""
    return [{"task_id": f"T/{task}", "sample_id": sample,
             "content": corpus.code(f"t{task}s{0 if sample in (3, 4) else sample}")}
            for task in range(4) for sample in range(5)]


@pytest.fixture()
def generations(tmp_path, corpus):
    """Four tasks of five samples; in each task samples 3 and 4 copy sample 0 (a cluster of 3)."""
    rng = np.random.default_rng(1)
    rows, table = four_tasks_of_five(corpus), []
    for row in rows:
        copy = row["sample_id"] in (3, 4)
        passed = 1 if copy else int(rng.random() < 0.5)
        table.append({"task_id": row["task_id"], "sample_id": row["sample_id"], "passed": passed,
                      "judge": float(rng.random() + (0.8 if copy else 0.0))})
    out = corpus.dedup(tmp_path, rows, id_column="task_id,sample_id", group_column="task_id")
    return out, corpus.write_jsonl(tmp_path / "scores.jsonl", table), table


def test_coefficients_on_one_row_per_cluster(generations, tmp_path):
    out, scores, table = generations
    config = CorrelateConfig(metric=["judge"], dedup=str(out), resamples=50, length_column="none")
    report = run_correlate(str(scores), config, json_path=tmp_path / "c.json")
    kept = [row for row in table if row["sample_id"] not in (3, 4)]  # sample 0 is each cluster's kept row
    expected = kendall_tau_b(np.array([r["judge"] for r in kept]), np.array([r["passed"] for r in kept], dtype=float))
    assert report.deduplicated.metrics["judge"].pooled["kendall"].value == pytest.approx(expected)
    everything = kendall_tau_b(np.array([r["judge"] for r in table]), np.array([r["passed"] for r in table], dtype=float))
    assert report.metrics["judge"].pooled["kendall"].value == pytest.approx(everything)
    assert expected != pytest.approx(everything)
    selection = report.per_cluster
    assert (selection.rows, selection.kept, selection.rows_in_clusters, selection.clusters) == (20, 12, 12, 4)
    written = json.loads((tmp_path / "c.json").read_text())
    assert written["deduplicated"]["selection"]["rows_left_out"] == 8
    assert written["deduplicated"]["metrics"]["judge"]["pooled"]["kendall"] == pytest.approx(expected)


def test_cli_prints_both(generations):
    out, scores, _ = generations
    result = CliRunner().invoke(app, ["correlate", str(scores), "-m", "judge", "--dedup", str(out), "--resamples", "40",
                                      "--length-column", "none"], terminal_width=100)
    assert result.exit_code == 0, result.output
    assert "one row per near-duplicate cluster" in result.output
    assert "12 of 20 rows" in result.output


def test_ids_that_are_not_the_dedups(generations):
    out, scores, _ = generations
    with pytest.raises(DataError, match=r"none of the table's row ids .*; its ids look like '[^']+:[^']+' \(it was made "
                                         r"with --id-column task_id,sample_id\)"):
        run_correlate(str(scores), CorrelateConfig(metric=["judge"], dedup=str(out), dedup_id_column="sample_id",
                                                   resamples=40, length_column="none"))


def test_identical_short_stubs_count_once(tmp_path, corpus):
    """Per task: three stubs ``pass`` of identical text (below --min-tokens, an exact_text cluster)
    and three distinct functions; one row per cluster keeps 4 of the 6 rows of each task."""
    rows, table = [], []
    for task in range(3):
        for sample in range(6):
            text = ("    pass" + " " * sample + "\n") if sample < 3 else corpus.code(f"t{task}s{sample}")
            rows.append({"task_id": f"T/{task}", "sample_id": sample, "content": text})
            table.append({"task_id": f"T/{task}", "sample_id": sample, "passed": int(sample >= 3),
                          "judge": float(sample * 0.1 + task)})
    out = corpus.dedup(tmp_path, rows, id_column="task_id,sample_id", group_column="task_id")
    scores = corpus.write_jsonl(tmp_path / "scores.jsonl", table)
    report = run_correlate(str(scores), CorrelateConfig(metric=["judge"], dedup=str(out), resamples=40,
                                                        length_column="none"))
    selection = report.per_cluster
    assert (selection.rows, selection.kept, selection.rows_in_clusters, selection.clusters) == (18, 12, 9, 3)
    kept = [r for r in table if r["sample_id"] != 1 and r["sample_id"] != 2]  # sample 0 is each stub cluster's kept row
    expected = kendall_tau_b(np.array([r["judge"] for r in kept]), np.array([r["passed"] for r in kept], dtype=float))
    assert report.deduplicated.metrics["judge"].pooled["kendall"].value == pytest.approx(expected)


def test_mostly_unknown_ids_are_refused(generations, tmp_path, corpus):
    """Sample ids written another way (``000`` for ``0``): most rows would be unknown to the dedup and
    kept as unique, so the "deduplicated" coefficients would be those of all rows; refused like
    ``workbench bias`` refuses such a join, unless --allow-partial-join."""
    out, _, table = generations
    padded = [{**row, "sample_id": f"{row['sample_id']:03d}" if row["sample_id"] else row["sample_id"]}
              for row in table]
    scores = corpus.write_jsonl(tmp_path / "padded.jsonl", padded)
    config = {"metric": ["judge"], "dedup": str(out), "resamples": 40, "length_column": "none"}
    with pytest.raises(DataError, match=r"only 4 of the table's 20 row ids are in this dedup output .*"
                                        r"'T/0:001'.*--allow-partial-join"):
        run_correlate(str(scores), CorrelateConfig(**config))
    report = run_correlate(str(scores), CorrelateConfig(**config, allow_partial_join=True))
    assert report.per_cluster.unknown_ids == 16
    result = CliRunner().invoke(app, ["correlate", str(scores), "-m", "judge", "--dedup", str(out), "--resamples", "40",
                                      "--length-column", "none"], terminal_width=100)
    assert result.exit_code == 1 and "--allow-partial-join" in result.output


def test_a_cluster_whose_kept_row_is_absent_drops_out_like_one_with_an_empty_cell(generations, tmp_path, corpus):
    """docs/correlate.md: a cluster whose kept row has no value of a metric drops out of it. Tasks 0 and 1
    lack their kept row (sample 0) in the score table, tasks 2 and 3 have it with an empty judge cell: all
    four clusters drop out of the judge alike, and no copy the dedup removed (samples 3, 4) stands in."""
    out, _, table = generations
    scored = [({**row, "judge": None} if row["task_id"] in ("T/2", "T/3") and row["sample_id"] == 0 else row)
              for row in table if not (row["task_id"] in ("T/0", "T/1") and row["sample_id"] == 0)]
    scores = corpus.write_jsonl(tmp_path / "gaps.jsonl", scored)
    report = run_correlate(str(scores), CorrelateConfig(metric=["judge"], dedup=str(out), resamples=40,
                                                        length_column="none"))
    counted = [r for r in scored if r["sample_id"] in (1, 2)]  # the kept rows with a judge value
    expected = kendall_tau_b(np.array([r["judge"] for r in counted]), np.array([r["passed"] for r in counted], dtype=float))
    assert report.deduplicated.metrics["judge"].n_samples == 8
    assert report.deduplicated.metrics["judge"].pooled["kendall"].value == pytest.approx(expected)
    selection = report.per_cluster
    assert (selection.rows, selection.kept, selection.clusters_without_kept_row) == (18, 10, 2)
    assert any("2 clusters" in note and "'T/0:0'" in note for note in report.deduplicated.notes), report.deduplicated.notes


def test_a_contaminated_row_in_no_cluster_stays(tmp_path, corpus):
    """review40: a row in no cluster stays (the module's rule, and workbench bias's one_per_cluster); since
    only kept rows could stand for a cluster, a row in no cluster that the dedup dropped as contaminated
    (``--against``) was left out too, unsaid: 11 of 20 rows instead of 12. Real dedup with a reference."""
    rng = np.random.default_rng(1)
    rows = four_tasks_of_five(corpus)
    table = [{"task_id": row["task_id"], "sample_id": row["sample_id"], "passed": int(rng.random() < 0.5),
              "judge": float(rng.random())} for row in rows]
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "R", "content": corpus.code("t1s1")}])
    out = corpus.dedup(tmp_path, rows, id_column="task_id,sample_id", group_column="task_id", against=str(reference))
    assert "T/1:1,train,contaminated" in (out / "removed.csv").read_text()
    scores = corpus.write_jsonl(tmp_path / "scores.jsonl", table)
    report = run_correlate(str(scores), CorrelateConfig(metric=["judge"], dedup=str(out), resamples=40,
                                                        length_column="none"))
    selection = report.per_cluster
    assert (selection.rows, selection.kept, selection.clusters_without_kept_row) == (20, 12, 0)
    kept = [row for row in table if row["sample_id"] not in (3, 4)]  # T/1:1 among them
    expected = kendall_tau_b(np.array([r["judge"] for r in kept]), np.array([r["passed"] for r in kept], dtype=float))
    assert report.deduplicated.metrics["judge"].pooled["kendall"].value == pytest.approx(expected)
