"""``workbench bias`` on inputs a user gets wrong: a trimmed dedup folder, a task column with
gaps, output paths that cannot be written, and a corpus too large for dense bootstrap counts.
Each is a clear error before or instead of a wrong number (dedup outputs from the real
``run_dedup``, or written by hand in its documented format where a test needs a size)."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from workbench.bias import BiasConfig, run_bias
from workbench.bias import intervals
from workbench.bias.dedup_output import read_dedup_output
from workbench.bias.intervals import UnitBootstrap, compact_resample_counts
from workbench.dedup import DedupConfig, run_dedup
from workbench.correlate.bootstrap import (
    BootstrapSettings,
    percentile_interval,
    resampled_task_mean,
    task_resample_counts,
)
from workbench.errors import DataError, MissingColumnError

#: train A; test t1 (copy of A), t2, t3 (copies of each other), t4
TRAIN_TEST = [("A", "train", "a"), ("t1", "test", "a"), ("t2", "test", "d"), ("t3", "test", "d"), ("t4", "test", "e")]


def _trim(folder: Path) -> Path:
    """A copy of a dedup output as a workbench before ``kept.csv`` wrote it, without its deduplicated split files."""
    trimmed = folder.parent / "trimmed"
    shutil.copytree(folder, trimmed)
    for path in trimmed.iterdir():
        if path.suffix in (".jsonl", ".parquet") or path.name in ("kept.csv", "manifest.json"):
            path.unlink()
    return trimmed


def _shared_task_rows(corpus) -> tuple[list[dict], dict]:
    """Train and test rows of the same tasks (``T/k:0`` in train, ``T/k:1`` in test, as a MultiPL-E
    split by sample): test copies of train rows, in-test copies, unique rows; and a metric per row."""
    rows, metric = [], {"task_id": [], "sample_id": [], "acc": []}
    test_bases = ["a0", "a1", "x", "x", "y", "z", "w", "v"]  # copies of train a0, a1; x twice; the rest unique
    for k, test_base in enumerate(test_bases):
        for sample, split, base in ((0, "train", f"a{k}"), (1, "test", test_base)):
            rows.append({"task_id": f"T/{k}", "sample_id": sample, "split": split, "content": corpus.code(base)})
            metric["task_id"].append(f"T/{k}")
            metric["sample_id"].append(sample)
            metric["acc"].append(1 if base.startswith("a") else k % 2)
    return rows, metric


def test_a_files_output_of_a_table_keeps_each_rows_split(tmp_path, corpus):
    # probe 29: files/<id> of a table lost the split (files/T/0:1 for a train and a test row alike) and bias
    # took the first path part as the split: fully biased over the wrong rows, unbiased test n/a, exit 0
    rows, metric = _shared_task_rows(corpus)
    config = BiasConfig(metric=["acc"], resamples=40)
    results = {}
    for form in ("jsonl", "files"):
        folder = tmp_path / form
        folder.mkdir()
        out = corpus.dedup(folder, rows, id_column="task_id,sample_id", split_column="split", output_format=form)
        results[form] = run_bias(out, metric, config).duplication
    files = tmp_path / "files" / "dedup" / "files"
    assert (files / "train" / "T" / "0:0").is_file() and (files / "test" / "T" / "4:1").is_file()
    assert not (files / "T").exists()
    for form, duplication in results.items():
        acc = duplication.metrics["acc"].settings
        assert duplication.counts["test_rows"] == 8, form
        assert (acc["fully_biased"].n_rows, acc["cross_set_biased"].n_rows, acc["unbiased_test"].n_rows) == (8, 7, 5)
        assert acc["unbiased_test"].value == pytest.approx(2 / 5)  # x (k=2), y (k=4), z, w, v: 0, 0, 1, 0, 1
    # an output of a workbench from before kept.csv: files/ records no split, and two splits cannot be told apart
    with pytest.raises(DataError, match="the split of a row the dedup kept cannot be told"):
        run_bias(_trim(tmp_path / "files" / "dedup"), metric, config)


def test_a_task_column_with_empty_cells_names_the_first_row(tmp_path, corpus):
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    metrics = {"id": [i for i, *_ in corpus.SINGLE], "acc": [v for *_, v in corpus.SINGLE],
               "task": ["T1", "T1", None, "T2", "", "T2"]}
    # empty tasks would be one pooled "task" in the bootstrap and in clean vs contaminated tasks
    with pytest.raises(DataError, match=r"--task-column 'task' is empty in 2 rows, first row 3 \(counting from 1; id 'r3'\)"):
        run_bias(out, metrics, BiasConfig(metric=["acc"], task_column="task"))


def test_a_train_test_folder_without_its_split_files_is_an_error(tmp_path, corpus):
    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b in TRAIN_TEST],
                       split_column="split")
    metrics = {"id": ["t1", "t2", "t3", "t4"], "acc": [1, 0, 1, 1]}
    full = run_bias(out, metrics, BiasConfig(metric=["acc"], resamples=40)).duplication.metrics["acc"]
    assert full.settings["fully_biased"].value == pytest.approx(3 / 4)
    assert full.settings["unbiased_test"].value == pytest.approx(1 / 2)  # t2 (kept for t2, t3), t4
    # before: the kept test rows t2, t4 were called rows the dedup does not have, and left out
    with pytest.raises(DataError, match=r"splits train, test but none of its deduplicated split files.*'t2'"):
        run_bias(_trim(out), metrics, BiasConfig(metric=["acc"], resamples=40))


def test_a_trimmed_single_split_folder_works_but_refuses_rows_the_dedup_never_saw(tmp_path, corpus):
    out = _trim(corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE]))
    metrics = {"id": [i for i, *_ in corpus.SINGLE], "acc": [v for *_, v in corpus.SINGLE]}
    report = run_bias(out, metrics, BiasConfig(metric=["acc"], resamples=40))
    result = report.duplication.metrics["acc"]
    assert result.settings["all_rows"].value == pytest.approx(4 / 6)
    assert result.settings["deduplicated"].value == pytest.approx(1.0)  # r1, r3, r4
    assert any("1 metric row in no cluster is taken as unique rows" in w for w in report.warnings)
    # r3 is the one row outside clusters: two more cannot be rows of this dedup run
    extra = {"id": [*metrics["id"], "elsewhere/1", "elsewhere/2"], "acc": [*metrics["acc"], 1, 1]}
    with pytest.raises(DataError, match=r"3 metric rows are in neither clusters.json nor removed.csv while the dedup "
                                        r"run had only 1 such row:"):
        run_bias(out, extra, BiasConfig(metric=["acc"], resamples=40))


@pytest.mark.parametrize(("option", "name", "message"), [
    ("json_path", "folder", "--json .* is a folder"),
    ("plot_path", "figure.txt", "--plot .*figure.txt: the suffix names no image format"),
])
def test_output_paths_are_checked_before_any_work(tmp_path, option, name, message):
    (tmp_path / "folder").mkdir()
    # the dedup folder does not exist: the output path is refused first, before anything is read
    with pytest.raises(DataError, match=message):
        run_bias(tmp_path / "no-such-dedup", {"id": ["a"], "acc": [1]}, BiasConfig(metric=["acc"]),
                 **{option: tmp_path / name})


@pytest.mark.parametrize("option", ["--json", "--plot"])
def test_an_output_path_in_a_read_only_folder_is_refused_before_any_work(unprivileged, corpus, option):
    # probe 29: the analysis ran, then the write failed
    folder = unprivileged.folder
    out = corpus.dedup(folder, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    metrics = corpus.write_jsonl(folder / "metrics.jsonl", [{"id": i, "acc": v} for i, _, v in corpus.SINGLE])
    read_only = folder / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    target = read_only / ("b.json" if option == "--json" else "b.png")
    result = subprocess.run([*unprivileged.prefix, sys.executable, "-m", "workbench", "bias", str(out), str(metrics),
                             "-m", "acc", option, str(target)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert f"Error: {option} {target} cannot be written in {read_only} (Permission denied)" in result.stderr
    assert "all rows" not in result.stdout  # refused before the analysis


@pytest.mark.parametrize("seed", [0, 7])
def test_compact_counts_are_the_dense_draws_block_by_block(monkeypatch, seed):
    settings = BootstrapSettings(n_resamples=103, seed=seed)
    monkeypatch.setattr(intervals, "BLOCK_CELLS", 5 * 40)  # blocks of 5 resamples of 40 units
    counts = compact_resample_counts(40, settings)
    dense = task_resample_counts(40, settings)
    assert counts.dtype == np.uint8
    assert np.array_equal(counts, dense)
    # the means and intervals on the compact counts are those of the dense (B, U) products
    rng = np.random.default_rng(seed)
    units = rng.integers(0, 40, 300)
    units[:40] = np.arange(40)
    values, mask = rng.random(300), rng.random(300) < 0.7
    boot = UnitBootstrap(units, settings)
    sums = np.bincount(units[mask], weights=values[mask], minlength=40)
    sizes = np.bincount(units[mask], minlength=40).astype(float)
    expected = percentile_interval((dense @ sums) / (dense @ sizes), settings.confidence)
    got = boot.mean(values, mask)
    assert (got.low, got.high) == (pytest.approx(expected[0], rel=1e-12), pytest.approx(expected[1], rel=1e-12))
    defined = sizes > 0
    per_unit = np.where(defined, sums / np.where(defined, sizes, 1.0), np.nan)
    task_expected = percentile_interval(resampled_task_mean(dense, per_unit, defined), settings.confidence)
    got = boot.task_mean(values, mask)
    assert (got.low, got.high) == (pytest.approx(task_expected[0], rel=1e-12), pytest.approx(task_expected[1], rel=1e-12))


def test_a_cluster_of_thousands_keeps_the_row_the_dedup_kept(tmp_path):
    # a dedup output in its documented format: one cluster of 3,000 rows whose kept row is the
    # 2,001st member, and 10 unique rows
    members = [f"r{i}" for i in range(3000)]
    kept = members[2000]
    (tmp_path / "clusters.json").write_text(json.dumps([members]))
    with (tmp_path / "removed.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "split", "reason", "duplicate_of"])
        writer.writerows([m, "test", "near_duplicate", kept] for m in members if m != kept)
    unique = [f"u{i}" for i in range(10)]
    (tmp_path / "test.jsonl").write_text("".join(json.dumps({"id": i}) + "\n" for i in [kept, *unique]))
    (tmp_path / "report.json").write_text(json.dumps({"splits": {"test": {"files": 3010}}, "overall": {"files": 3010}}))
    output = read_dedup_output(tmp_path)
    assert output.position_of[kept] == 2000 and output.position_of["r2999"] == 2999
    metrics = {"id": [*members, *unique], "acc": [1.0 if m == kept else 0.0 for m in members] + [0.0] * 10}
    result = run_bias(tmp_path, metrics, BiasConfig(metric=["acc"], resamples=40)).duplication.metrics["acc"]
    assert result.settings["deduplicated"].value == pytest.approx(1 / 11)
    assert result.decomposition.beta == 0.0 and result.decomposition.d == pytest.approx(2999 / 3010)


def test_a_contamination_folder_of_other_rows_is_an_error(tmp_path, corpus):
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("s")}])
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    in_set = corpus.dedup(tmp_path / "a", [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    # the same code under other ids: its contaminated rows x4, x5, x6 are none of the metric rows
    other = corpus.dedup(tmp_path / "b", [{"id": "x" + i[1:], "content": corpus.code(base)} for i, base, _ in corpus.SINGLE],
                         against=str(reference))
    metrics = {"id": [i for i, *_ in corpus.SINGLE], "acc": [v for *_, v in corpus.SINGLE]}
    # before: every row counted as clean, no warning
    with pytest.raises(DataError, match=r"--contamination .*: none of the 6 joined rows \(e.g. 'r1'\) is a row of that "
                                        r"dedup output \(its contamination.csv names e.g. x4, x5\)"):
        run_bias(in_set, metrics, BiasConfig(metric=["acc"], contamination=str(other), resamples=40))


def test_contaminated_rows_without_a_metric_row_are_counted_and_named(tmp_path, corpus):
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("s")}])
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE],
                       against=str(reference))
    metrics = {"id": ["r1", "r2", "r3", "r4"], "acc": [1, 0, 1, 1]}  # r5, r6 (contaminated) have no value
    report = run_bias(out, metrics, BiasConfig(metric=["acc"], resamples=40))
    assert report.contamination.ids["contaminated_ids"] == ["r4"]
    assert report.contamination.counts["contaminated_rows_without_metric"] == 2
    assert report.contamination.metrics["acc"].settings["clean"].value == pytest.approx(2 / 3)
    assert any("2 of the 3 contaminated rows in" in w and "r5, r6" in w for w in report.warnings)


def test_a_report_without_its_overall_table_still_counts_the_dedup_rows(tmp_path, corpus):
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    report = json.loads((out / "report.json").read_text())
    del report["overall"]  # an older or hand-made report: the row count is the splits' sum
    (out / "report.json").write_text(json.dumps(report))
    join = run_bias(out, {"id": ["r1", "r2", "r3"], "acc": [1, 0, 1]}, BiasConfig(metric=["acc"], resamples=40)).join
    assert (join.dedup_rows, join.dedup_rows_without_metric) == (6, 3)


def test_a_label_missing_from_the_results_names_the_table_and_the_option(tmp_path, corpus):
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    metrics = {"id": [i for i, *_ in corpus.SINGLE], "acc": [v for *_, v in corpus.SINGLE]}
    results = corpus.write_jsonl(tmp_path / "results.jsonl", [{"id": i, "pass": 1} for i, *_ in corpus.SINGLE])
    # before: "column 'passed' not found (set it with --metric)", without saying which table
    with pytest.raises(MissingColumnError, match=r"results.jsonl: column 'passed' not found \(set it with --label\); "
                                                 r"the data has: id, pass"):
        run_bias(out, metrics, BiasConfig(metric=["acc"], label="passed", results=str(results)))
    with pytest.raises(MissingColumnError, match=r"column 'passed' not found \(set it with --label\)"):
        run_bias(out, metrics, BiasConfig(metric=["acc"], label="passed"))


def test_results_that_join_no_metric_row_stop_with_an_error(tmp_path, corpus):
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    metrics = {"id": [i for i, *_ in corpus.SINGLE], "acc": [v for *_, v in corpus.SINGLE]}
    results = corpus.write_jsonl(tmp_path / "results.jsonl", [{"id": f"other/{i}", "passed": 1} for i in range(6)])
    # before: exit 0 with two warnings and every label missing
    with pytest.raises(DataError, match=r"results.jsonl: none of its 6 row ids is in the metric table .*--id-column"):
        run_bias(out, metrics, BiasConfig(metric=["acc"], label="passed", results=str(results)))


def test_pass_at_1_alone_from_the_results(tmp_path, corpus):
    """``-m passed --label passed --results R`` (bias.md: the label "and a metric named like it" from the
    results) on a table of ids only said "name at least one metric column (--metric)"."""
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    ids = {"id": [i for i, *_ in corpus.SINGLE]}
    results = corpus.write_jsonl(tmp_path / "results.jsonl", [{"id": i, "passed": v} for i, _, v in corpus.SINGLE])
    report = run_bias(out, ids, BiasConfig(metric=["passed"], label="passed", results=str(results), resamples=40))
    passed = [v for *_, v in corpus.SINGLE]
    assert report.duplication.metrics["passed"].settings["all_rows"].value == pytest.approx(sum(passed) / len(passed))
    with pytest.raises(DataError, match=r"name at least one per-row metric column \(--metric\)"):
        run_bias(out, ids, BiasConfig(metric=[], label="passed", results=str(results), resamples=40))


def test_an_interrupted_plot_leaves_no_figure_of_an_earlier_run(tmp_path, corpus, interrupted_plot):
    """As for correlate: the JSON is written first, and a figure of an earlier run must not stay beside it."""
    import workbench.bias.plot as plot_module

    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b in TRAIN_TEST],
                       split_column="split")
    json_path, plot_path = interrupted_plot(plot_module, "plot_bias")
    with pytest.raises(KeyboardInterrupt):
        run_bias(out, {"id": ["t1", "t2", "t3", "t4"], "acc": [1, 0, 1, 1]}, BiasConfig(metric=["acc"], resamples=40),
                 json_path=json_path, plot_path=plot_path)
    assert json.loads(json_path.read_text())["duplication"]
    assert not plot_path.exists()


def test_metric_rows_of_files_the_dedup_could_not_read_are_named_as_such(tmp_path, corpus):
    # a source folder whose test/ holds a file that is neither UTF-8 nor the fallback encoding (0x81 and 0x8d are
    # undefined in cp1252): the loader lists it in unreadable.csv and
    # no split has it; its metric row is not "an id the dedup output does not have" (probe 25b)
    source = tmp_path / "src"
    for split, name, base in [("train", "a.py", "a"), ("test", "t1.py", "a"), ("test", "t2.py", "d")]:
        (source / split).mkdir(parents=True, exist_ok=True)
        (source / split / name).write_text(corpus.code(base))
    (source / "test" / "broken.py").write_bytes(b"def f():\n    return '\x81\x8d'\n")
    out = tmp_path / "dedup"
    run_dedup(str(source), DedupConfig(workers=1), output_dir=out)
    unreadable = read_dedup_output(out).unreadable
    assert list(unreadable) == ["test/broken.py"] and "not loaded" in unreadable["test/broken.py"]
    metrics = {"id": ["test/t1.py", "test/t2.py", "test/broken.py", "test/other.py"], "acc": [1, 0, 1, 1]}
    report = run_bias(out, metrics, BiasConfig(metric=["acc"], resamples=40))
    assert (report.join.joined, report.join.unjoined) == (2, 2)
    could_not_read = [w for w in report.warnings if "could not read" in w]
    assert len(could_not_read) == 1 and "1 metric row is a row the dedup could not read and is left out" in could_not_read[0]
    assert "unreadable.csv" in could_not_read[0] and "test/broken.py (not loaded" in could_not_read[0]
    unknown = [w for w in report.warnings if "does not have" in w]
    assert len(unknown) == 1 and unknown[0].startswith("1 metric row has an id the dedup output does not have and is left out") and "test/other.py" in unknown[0]


def test_a_label_of_the_metric_table_that_the_results_contradict_is_warned_about(tmp_path, corpus):
    """A new-user probe: a score table carrying ICE-Score's own `passed` with --results whose verdicts
    differ: bias took the results' label silently (tau-b with the label changed sign), where
    workbench correlate warns. The results' label is used, and the disagreement is said."""
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE])
    ids = [i for i, *_ in corpus.SINGLE]
    passed = [v for *_, v in corpus.SINGLE]
    flipped = {"id": ids, "acc": [0.1 * k for k in range(len(ids))], "passed": [1 - v for v in passed]}
    results = corpus.write_jsonl(tmp_path / "results.jsonl", [{"id": i, "passed": v} for i, v in zip(ids, passed)])
    report = run_bias(out, flipped, BiasConfig(metric=["acc"], label="passed", results=str(results), resamples=40))
    differ = len(ids)
    assert any(f"has a 'passed' column of its own that differs from the results' on {differ} of {differ} joined rows; "
               "the results' is the label used" in n for n in report.notes), report.notes
    # an expected outcome of carrying a data set's recorded labels: a note, not a warning
    assert not any("label:" in w for w in report.warnings) and report.to_dict()["notes"] == report.notes
    agreeing = dict(flipped, passed=passed)
    report = run_bias(out, agreeing, BiasConfig(metric=["acc"], label="passed", results=str(results), resamples=40))
    assert not any("of its own" in w for w in report.warnings), report.warnings
    assert not report.notes, report.notes
