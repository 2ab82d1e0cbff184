"""``correlate`` on real files through the real loaders: one table, two joined tables, and every
bad input of the issue's acceptance list (each a clear error or a counted exclusion)."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from workbench.errors import DataError, MissingColumnError
from workbench.correlate import correlate
from workbench.correlate.correlation import pooled_correlations


def _rows(n_tasks: int = 12, per_task: int = 6, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n_tasks):
        for s in range(per_task):
            quality = rng.normal()
            rows.append(
                {
                    "task_id": f"HumanEval/{t}",
                    "sample_id": s,
                    "passed": int(quality + rng.normal(scale=0.8) > 0),
                    "codebleu": float(np.round(0.5 + 0.2 * quality + rng.normal(scale=0.1), 3)),
                    "chrf": float(np.round(0.4 + 0.1 * quality + rng.normal(scale=0.2), 3)),
                }
            )
    return rows


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_one_table_report_shape(tmp_path):
    rows = _rows()
    report = correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu", "chrf"], n_resamples=200, seed=3)
    data = report.to_dict()
    assert set(data) >= {"counts", "metrics", "comparisons", "bootstrap"}
    for name in ("codebleu", "chrf"):
        pooled, per_problem = data["metrics"][name]["pooled"], data["metrics"][name]["per_problem"]
        for key in ("kendall", "pearson", "spearman"):
            assert isinstance(pooled[key], float) and len(pooled[f"{key}_ci"]) == 2
            assert pooled[f"{key}_ci"][0] <= pooled[f"{key}_ci"][1]
        assert per_problem["n_tasks"] + sum(per_problem["excluded_tasks"].values()) == 12
    x = np.array([r["codebleu"] for r in rows])
    y = np.array([r["passed"] for r in rows], dtype=float)
    assert data["metrics"]["codebleu"]["pooled"]["kendall"] == pytest.approx(pooled_correlations(x, y)["kendall"])
    counts = data["counts"]
    assert counts["samples"] == 72 and counts["tasks"] == 12 and counts["samples_per_task"]["max"] == 6
    assert counts["pass_rate"] == pytest.approx(y.mean())
    assert data["bootstrap"] == {"n_resamples": 200, "confidence": 0.95, "seed": 3, "unit": "task", "interval": "percentile"}
    (comparison,) = data["comparisons"]
    assert comparison["difference"] == pytest.approx(comparison["kendall_a"] - comparison["kendall_b"])
    assert 0 < comparison["p_value"] <= 1


def test_seed_makes_intervals_reproducible(tmp_path):
    path = _jsonl(tmp_path / "scores.jsonl", _rows())
    first = correlate(path, metrics=["codebleu"], n_resamples=100, seed=1).metrics["codebleu"].pooled["kendall"].ci
    again = correlate(path, metrics=["codebleu"], n_resamples=100, seed=1).metrics["codebleu"].pooled["kendall"].ci
    other = correlate(path, metrics=["codebleu"], n_resamples=100, seed=2).metrics["codebleu"].pooled["kendall"].ci
    assert first == again and first != other


def test_default_metrics_are_the_numeric_columns(tmp_path):
    report = correlate(_jsonl(tmp_path / "scores.jsonl", _rows()), n_resamples=10)
    assert list(report.metrics) == ["codebleu", "chrf"]  # not passed / sample_id


def test_missing_column_lists_the_columns(tmp_path):
    with pytest.raises(MissingColumnError, match=r"'bleu' not found.*--metric.*codebleu, chrf"):
        correlate(_jsonl(tmp_path / "scores.jsonl", _rows()), metrics=["bleu"])


def test_missing_label_column(tmp_path):
    with pytest.raises(MissingColumnError, match=r"'pass@1' not found \(set it with --label, or join the execution "
                                                 r"results of `workbench execute` with --results"):
        correlate(_jsonl(tmp_path / "scores.jsonl", _rows()), metrics=["codebleu"], label="pass@1")


def test_empty_file(tmp_path):
    empty = tmp_path / "scores.jsonl"
    empty.write_text("")
    with pytest.raises(DataError, match="empty"):
        correlate(empty, metrics=["codebleu"])


def test_label_outside_unit_interval(tmp_path):
    rows = _rows()
    rows[5]["passed"] = 3
    with pytest.raises(DataError, match=r"0/1 or a pass ratio in \[0, 1\]; 1 row is outside, e.g. row 5 \(HumanEval/0\): 3"):
        correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu"])


def test_non_numeric_label_is_an_error(tmp_path):
    path = tmp_path / "scores.csv"
    rows = _rows()
    rows[2]["passed"] = "yes"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with pytest.raises(DataError, match="must hold numbers.*'yes'"):
        correlate(path, metrics=["codebleu"])


def test_pass_ratio_labels_are_accepted(tmp_path):
    rows = _rows()
    for i, row in enumerate(rows):
        row["passed"] = (i % 5) / 4
    report = correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu"], n_resamples=20)
    assert report.counts.label_kind == "ratio"
    assert report.metrics["codebleu"].mean_by_outcome is None


def test_non_numeric_metric_values_are_counted_and_excluded(tmp_path):
    rows = _rows()
    # (the CSV reader keeps "N/A" as text, as a JSON Lines file would have it: non-numeric; only "" is missing)
    bad = {3: "error", 10: "N/A", 20: "inf", 30: "timeout"}
    path = tmp_path / "scores.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        for i, row in enumerate(rows):
            writer.writerow({**row, "codebleu": bad.get(i, row["codebleu"])})
    report = correlate(path, metrics=["codebleu", "chrf"], n_resamples=50)
    result = report.metrics["codebleu"]
    assert (result.excluded_rows.non_numeric, result.excluded_rows.missing, result.excluded_rows.non_finite) == (3, 0, 1)
    assert result.n_samples == len(rows) - 4
    assert report.metrics["chrf"].n_samples == len(rows)  # the other metric keeps its rows
    assert [e["value"] for e in result.excluded_rows.examples] == ["error", "N/A", "inf", "timeout"]
    assert [e["row"] for e in result.excluded_rows.examples] == [3, 10, 20, 30]
    keep = [i for i in range(len(rows)) if i not in bad]
    x = np.array([rows[i]["codebleu"] for i in keep])
    y = np.array([rows[i]["passed"] for i in keep], dtype=float)
    assert result.pooled["kendall"].value == pytest.approx(pooled_correlations(x, y)["kendall"])
    assert any("codebleu: 4 rows left out" in w for w in report.warnings)
    assert report.to_dict()["counts"]["excluded_metric_rows"] == {"codebleu": 4, "chrf": 0}
    # the comparison runs on the rows both metrics have
    assert report.comparisons[0].n_samples == len(rows) - 4


def test_a_jsonl_metric_with_a_few_text_cells_keeps_its_numbers(tmp_path):
    """In JSONL, numbers mixed with a few texts make ``datasets`` store the column as JSON text
    (its ``Json`` feature); every cell of it was then 'non-numeric', so one "N/A" in a score
    column threw the whole metric away, and mixed int/text sample ids kept their JSON quotes
    (``'"s1"'``), so they never joined."""
    rows = _rows()
    bad = {3: "N/A", 10: "error", 20: None, 30: "0.25"}
    scores = [{**row, "codebleu": bad.get(i, row["codebleu"])} for i, row in enumerate(rows)]
    report = correlate(_jsonl(tmp_path / "scores.jsonl", scores), metrics=["codebleu", "chrf"], n_resamples=50)
    result = report.metrics["codebleu"]
    assert (result.excluded_rows.non_numeric, result.excluded_rows.missing) == (2, 1)
    assert [e["value"] for e in result.excluded_rows.examples] == ["N/A", "error", None]
    keep = [i for i in range(len(rows)) if i not in (3, 10, 20)]
    x = np.array([0.25 if i == 30 else rows[i]["codebleu"] for i in keep])
    y = np.array([rows[i]["passed"] for i in keep], dtype=float)
    assert result.n_samples == len(keep)
    assert result.pooled["kendall"].value == pytest.approx(pooled_correlations(x, y)["kendall"])
    # sample ids that mix numbers and texts still join with the results' ids
    mixed = [{**row, "sample_id": f"s{row['sample_id']}" if i % 2 else row["sample_id"]} for i, row in enumerate(rows)]
    score_rows = [{k: v for k, v in row.items() if k != "passed"} for row in mixed]
    result_rows = [{"task_id": r["task_id"], "sample_id": str(r["sample_id"]), "passed": r["passed"]} for r in mixed]
    joined = correlate(_jsonl(tmp_path / "mixed.jsonl", score_rows), results=_jsonl(tmp_path / "results.jsonl", result_rows),
                       metrics=["chrf"], n_resamples=10)
    assert (joined.counts.join.matched, joined.counts.join.unmatched_scores) == (len(rows), 0)


def test_a_mapping_with_a_mixed_type_column_is_a_clear_error():
    """A notebook's dict of columns with ints and texts in one column ended in pyarrow's
    ``ArrowTypeError: Expected bytes, got a 'int' object`` instead of a DataError."""
    scores = {"task_id": ["a", "a", "b", "b"], "sample_id": ["0", 1, "0", "1"], "m": [0.1, 0.9, 0.4, 0.6]}
    with pytest.raises(DataError, match="the table: its columns cannot be read"):
        correlate(scores, metrics=["m"], n_resamples=10)
    ok = {**scores, "sample_id": ["0", "1", "0", "1"], "passed": [0, 1, 0, 1]}
    assert correlate(ok, metrics=["m"], n_resamples=10).metrics["m"].n_samples == 4


def test_a_mapping_with_columns_of_different_lengths_says_so():
    """pyarrow's "expected length 3 but got length 2" was followed by "give each column one type"."""
    scores = {"task_id": ["a", "a", "b"], "passed": [1, 0], "m": [0.1, 0.9, 0.4]}
    with pytest.raises(DataError, match=r"^the table: its columns have different lengths \(task_id 3, passed 2, m 3\); "
                                        r"give every column one value per row$"):
        correlate(scores, metrics=["m"], n_resamples=10)


def test_metric_without_any_number_is_an_error(tmp_path):
    rows = [{**r, "codebleu": "unscored"} for r in _rows()]
    with pytest.raises(DataError, match="'codebleu' has no usable value: 0 missing, 72 non-numeric"):
        correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu"])


def test_a_metric_without_any_number_is_left_out_beside_one_with_numbers(tmp_path):
    """A judge whose rows all failed (null scores) must not sink the other metrics, its
    combination or its comparisons: each is left out with a warning that says why."""
    rows = [{**r, "judge": None} for r in _rows()]
    report = correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu", "judge"], n_resamples=20,
                       combine=["both=rank-mean:codebleu,judge"], baselines=["judge"])
    assert list(report.metrics) == ["codebleu"] and report.comparisons == []
    assert report.warnings[:2] == [
        "metric 'judge' has no usable value: 72 missing, 0 non-numeric, 0 infinite: left out of every table",
        "combination 'both': no row has a value of every member ['codebleu', 'judge']: left out of every table",
    ]


def test_too_few_resamples_for_the_interval_are_said_in_a_library_call(tmp_path):
    """The commands refuse fewer than 40 resamples at 95%; correlate() takes them (tests of the
    resampling use few) but its warnings say the interval is only the range of the resamples."""
    path = _jsonl(tmp_path / "scores.jsonl", _rows())
    few = correlate(path, metrics=["codebleu"], n_resamples=5)
    assert any(w.startswith("bootstrap: 5 resamples are too few for a 95% percentile interval") for w in few.warnings)
    assert not any(w.startswith("bootstrap:") for w in correlate(path, metrics=["codebleu"], n_resamples=40).warnings)


def test_missing_labels_are_counted(tmp_path):
    rows = _rows()
    rows[0]["passed"] = None
    rows[7]["passed"] = None
    report = correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu"], n_resamples=10)
    assert report.counts.excluded_missing_label == 2
    assert report.counts.samples == len(rows) - 2 and report.counts.rows == len(rows)


def test_null_blank_and_nan_task_ids_are_counted_as_without_task_id(tmp_path):
    """A blank task id was a task called "" (two of them a duplicate key), a CSV gap in a number
    task column the task "nan"; every missing kind is a row without task id, counted."""
    rows = _rows()
    rows[0]["task_id"], rows[7]["task_id"], rows[13]["task_id"] = None, "", "  "
    report = correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu"], n_resamples=10)
    assert report.counts.excluded_missing_task == 3 and report.counts.samples == len(rows) - 3
    numbered = [{**row, "task_id": float(i // 6)} for i, row in enumerate(_rows())]
    numbered[0]["task_id"] = numbered[7]["task_id"] = None  # read back as NaN in a float column
    path = tmp_path / "scores.csv"
    with path.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=list(numbered[0]))
        writer.writeheader()
        writer.writerows(numbered)
    report = correlate(path, metrics=["codebleu"], n_resamples=10)
    assert report.counts.excluded_missing_task == 2 and report.counts.tasks == 12  # no task "nan"


def test_duplicate_task_sample_keys(tmp_path):
    rows = _rows()
    rows.append(dict(rows[4]))
    with pytest.raises(DataError, match=r"1 row repeats a \(task_id, sample_id\) key.*\(HumanEval/0, 4\)"):
        correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu"])


def test_constant_label_gives_undefined_values_and_a_warning(tmp_path):
    rows = [{**r, "passed": 1} for r in _rows()]
    report = correlate(_jsonl(tmp_path / "scores.jsonl", rows), metrics=["codebleu"], n_resamples=10)
    assert math.isnan(report.metrics["codebleu"].pooled["kendall"].value)
    assert report.metrics["codebleu"].excluded_tasks["constant_label"] == 12
    assert any("same label" in w for w in report.warnings)
    path = report.write_json(tmp_path / "out" / "report.json")
    assert json.loads(path.read_text())["metrics"]["codebleu"]["pooled"]["kendall"] is None


# -- two tables -----------------------------------------------------------------------------


def _split_tables(tmp_path, rows, drop_scores=(), drop_results=()):
    scores = [{k: r[k] for k in ("task_id", "sample_id", "codebleu", "chrf")} for i, r in enumerate(rows) if i not in drop_scores]
    # execution results as `workbench execute` writes them; sample ids as text to test key normalising
    results = [
        {"task_id": r["task_id"], "sample_id": str(r["sample_id"]), "passed": r["passed"], "status": "ok" if r["passed"] else "failed"}
        for i, r in enumerate(rows)
        if i not in drop_results
    ][::-1]
    return _jsonl(tmp_path / "scores.jsonl", scores), _jsonl(tmp_path / "results.jsonl", results)


def test_two_tables_are_joined_and_unmatched_rows_counted(tmp_path):
    rows = _rows()
    scores, results = _split_tables(tmp_path, rows, drop_scores={1, 2}, drop_results={8, 9, 10})
    report = correlate(scores, results=results, metrics=["codebleu", "chrf"], n_resamples=50, seed=4)
    join = report.counts.join
    assert (join.matched, join.unmatched_scores, join.unmatched_results) == (len(rows) - 5, 3, 2)
    assert join.examples["scores_without_results"][0] == ["HumanEval/1", "2"]
    assert any("join:" in w for w in report.warnings)
    kept = [r for i, r in enumerate(rows) if i not in {1, 2, 8, 9, 10}]
    one_table = correlate(_jsonl(tmp_path / "kept.jsonl", kept), metrics=["codebleu", "chrf"], n_resamples=50, seed=4)
    assert report.metrics["codebleu"].pooled["kendall"].value == pytest.approx(one_table.metrics["codebleu"].pooled["kendall"].value)
    assert report.metrics["chrf"].per_problem["spearman"].value == pytest.approx(one_table.metrics["chrf"].per_problem["spearman"].value)
    assert report.to_dict()["counts"]["join"]["unmatched_results"] == 2
    passed = sum(r["passed"] for r in kept)
    assert join.status_counts == {"ok": passed, "failed": len(kept) - passed}


def test_a_label_in_the_scores_that_the_results_contradict_is_warned_about(tmp_path):
    # probe 27: the scores' own `passed` was silently overridden by the results' (tau changed sign)
    rows = _rows()
    flipped = [dict(r, passed=1 - r["passed"]) if i % 4 == 0 else r for i, r in enumerate(rows)]
    scores = _jsonl(tmp_path / "scores.jsonl", flipped)
    results = _jsonl(tmp_path / "results.jsonl", [
        {"task_id": r["task_id"], "sample_id": r["sample_id"], "passed": r["passed"]} for r in rows])
    report = correlate(scores, results=results, metrics=["codebleu"], n_resamples=50, seed=4)
    differ = len(range(0, len(rows), 4))
    assert report.counts.join.label_disagreements == (differ, len(rows))
    # an expected outcome of carrying a data set's recorded labels (the default job's ICE-Score `passed`): a note
    assert any(f"differs from the results' on {differ} of {len(rows)} joined rows" in n for n in report.notes)
    assert not any("label:" in w for w in report.warnings) and report.to_dict()["notes"] == report.notes
    agreeing = correlate(_jsonl(tmp_path / "same.jsonl", rows), results=results, metrics=["codebleu"], n_resamples=50, seed=4)
    assert agreeing.counts.join.label_disagreements == (0, len(rows))
    assert not any("label:" in w for w in agreeing.warnings)


def test_join_without_overlap(tmp_path):
    rows = _rows()
    scores, _ = _split_tables(tmp_path, rows)
    other = _jsonl(tmp_path / "other.jsonl", [{"task_id": "MBPP/1", "sample_id": 0, "passed": 1}])
    with pytest.raises(DataError, match="the join is empty"):
        correlate(scores, results=other, metrics=["codebleu"])


def test_a_join_where_most_score_rows_have_no_result_is_refused(tmp_path):
    """A new-user probe: another model's generations of HumanEval, numbered 0..19 per task, against
    the ICE-Score set's execution results (ids 3..198): 554 of 3,220 score rows found a result, and
    correlate reported a tau-b on those wrongly paired rows with only a warning. As with --dedup and
    workbench bias, fewer than half of the score rows joining is an error unless
    --allow-partial-join; a scored subset of the results (most result rows without scores) is not."""
    rows = _rows()
    scores = _jsonl(tmp_path / "scores.jsonl", rows)
    shifted = [dict(r, sample_id=r["sample_id"] + 4) for r in rows]  # ids 4..9: 2 of 6 per task collide
    results = _jsonl(tmp_path / "results.jsonl", shifted)
    with pytest.raises(DataError, match=r"only 24 of the 72 score rows .* --allow-partial-join"):
        correlate(scores, results=results, metrics=["codebleu"], n_resamples=50)
    report = correlate(scores, results=results, metrics=["codebleu"], n_resamples=50, allow_partial_join=True)
    assert report.counts.join.matched == 24
    subset = _jsonl(tmp_path / "subset.jsonl", rows[:20])  # a scored subset of the executed samples
    assert correlate(subset, results=_jsonl(tmp_path / "all.jsonl", rows), metrics=["codebleu"],
                     n_resamples=50).counts.join.matched == 20


def test_duplicate_keys_in_results(tmp_path):
    rows = _rows()
    scores, results = _split_tables(tmp_path, rows)
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines + lines[:2]) + "\n")
    with pytest.raises(DataError, match=r"results.jsonl: 2 rows repeat"):
        correlate(scores, results=results, metrics=["codebleu"])


def test_join_columns_are_options(tmp_path):
    rows = _rows()
    scores = [{"problem": r["task_id"], "completion": r["sample_id"], "codebleu": r["codebleu"]} for r in rows]
    results = [{"problem": r["task_id"], "completion": r["sample_id"], "ok": r["passed"]} for r in rows]
    report = correlate(
        _jsonl(tmp_path / "s.jsonl", scores),
        results=_jsonl(tmp_path / "r.jsonl", results),
        metrics=["codebleu"],
        label="ok",
        task_column="problem",
        sample_column="completion",
        n_resamples=10,
    )
    assert report.counts.join.matched == len(rows)
    with pytest.raises(MissingColumnError, match="'sample_id' not found"):
        correlate(_jsonl(tmp_path / "s.jsonl", scores), results=_jsonl(tmp_path / "r.jsonl", results), metrics=["codebleu"], task_column="problem", label="ok")


def test_splits_of_a_folder_are_combined_or_selected(tmp_path):
    rows = _rows()
    folder = tmp_path / "scores"
    folder.mkdir()
    _jsonl(folder / "train.jsonl", rows[:36])
    _jsonl(folder / "test.jsonl", rows[36:])
    both = correlate(folder, metrics=["codebleu"], n_resamples=10)
    assert both.counts.samples == 72
    test_only = correlate(folder, metrics=["codebleu"], splits=["test"], n_resamples=10)
    assert test_only.counts.samples == 36 and test_only.counts.tasks == 6


def test_a_csv_nan_cell_is_text_in_an_id_column_and_missing_in_a_metric_column(tmp_path):
    """README: a CSV's `NA`, `None`, `null` and `NaN` cells stay text (a task named "NaN" is a task), while in
    a column of numbers a `NaN` cell is a missing value like an empty one (probe 39 found the README silent
    on NaN). Pins the documented reading; real CSV through `datasets`."""
    path = tmp_path / "scores.csv"
    lines = ["task_id,sample_id,m,passed"]
    for task in ["NaN", "NA", "T2", "T3"]:
        for sample in range(4):
            value = f"{(sample * 3 + len(task)) % 5 / 4}"
            m = {("T2", 0): "NaN", ("T3", 0): ""}.get((task, sample), value)
            lines.append(f"{task},{sample},{m},{(sample + len(task)) % 2}")
    path.write_text("\n".join(lines) + "\n")
    report = correlate(str(path), metrics=["m"], n_resamples=20, length_column="none")
    assert report.counts.tasks == 4 and report.counts.excluded_missing_task == 0
    excluded = report.metrics["m"].excluded_rows
    assert (excluded.missing, excluded.non_numeric, report.metrics["m"].n_samples) == (2, 0, 14)
