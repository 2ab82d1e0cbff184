"""On a train/test corpus deduplicated with --against, the contamination split counts the same rows
as Allamanis 2019's test settings: the test rows (newuser34: it counted train and test rows together,
n 39 = 20 train + 19 test, beside duplication settings over the 19 test rows). Real dedup."""

from __future__ import annotations

import pytest

from workbench.bias import BiasConfig, run_bias

#: (id, split, code base, acc): t1 copies train A (cross-set), t2/t3 copy each other (in-test),
#: train C and test t5 copy reference rows (contaminated)
ROWS = [("A", "train", "a", 0), ("B", "train", "b", 0), ("C", "train", "r1", 1), ("D", "train", "d", 0),
        ("t1", "test", "a", 1), ("t2", "test", "e", 1), ("t3", "test", "e", 1), ("t4", "test", "f", 0),
        ("t5", "test", "r2", 1)]


@pytest.fixture()
def report(tmp_path, corpus):
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/1", "content": corpus.code("r1")},
                                                                  {"id": "REF/2", "content": corpus.code("r2")}])
    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b, _ in ROWS],
                       split_column="split", against=str(reference))
    metrics = {"id": [i for i, *_ in ROWS], "acc": [v for *_, v in ROWS]}
    return run_bias(out, metrics, BiasConfig(metric=["acc"], resamples=50), json_path=tmp_path / "bias.json")


def test_contamination_counts_the_test_rows_of_the_duplication_settings(report):
    duplication = report.duplication.metrics["acc"].settings
    contamination = report.contamination.metrics["acc"].settings
    assert duplication["fully_biased"].n_rows == 5 and duplication["fully_biased"].value == pytest.approx(0.8)
    # "all rows" of the contamination split are the fully biased test rows, not the 9 train and test rows
    assert contamination["all_rows"].n_rows == 5 and contamination["all_rows"].value == pytest.approx(0.8)
    assert contamination["contaminated"].n_rows == 1 and contamination["clean"].value == pytest.approx(0.75)
    # train row C copies the reference too, but is no row a test score is measured on
    assert report.contamination.ids["contaminated_ids"] == ["t5"]
    counts = report.contamination.counts
    assert (counts["rows"], counts["rows_counted"], counts["other_split_rows"]) == ("test", 5, 4)
    assert counts["contaminated_rows"] == 1 and counts["clean_rows"] == 4
    assert any("the 5 test rows of 'test'" in n and "4 joined rows of other splits (1 of them contaminated)" in n
               for n in report.contamination.notes), report.contamination.notes


def test_the_cli_title_says_test_rows(tmp_path, corpus):
    from typer.testing import CliRunner

    from workbench.cli import app

    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/2", "content": corpus.code("r2")}])
    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b, _ in ROWS],
                       split_column="split", against=str(reference))
    metrics = corpus.write_jsonl(tmp_path / "metrics.jsonl", [{"id": i, "acc": v} for i, *_, v in ROWS])
    result = CliRunner().invoke(app, ["bias", str(out), str(metrics), "-m", "acc", "--resamples", "50"],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "clean vs contaminated test rows (5)" in " ".join(result.output.split()), result.output  # title wraps


def test_a_contaminated_train_row_alone_is_no_unmeasured_test_contamination(tmp_path, corpus):
    """Only train row C copies the reference: the test rows hold no contaminated row, which is a finding
    (none), not "no contaminated row has a value" (the warning for a metric over deduplicated rows only)."""
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/1", "content": corpus.code("r1")}])
    rows = [r for r in ROWS if r[0] != "t5"]
    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b, _ in rows],
                       split_column="split", against=str(reference))
    report = run_bias(out, {"id": [i for i, *_ in rows], "acc": [v for *_, v in rows]},
                      BiasConfig(metric=["acc"], resamples=50))
    result = report.contamination.metrics["acc"]
    assert result.unmeasured is None and not any("not measured" in w for w in report.warnings), report.warnings
    assert result.settings["contaminated"].n_rows == 0 and report.contamination.counts["contaminated_rows_without_metric"] == 0
    assert report.contamination.ids["contaminated_ids"] == []


def test_the_json_definitions_say_test_rows(tmp_path, report):
    import json

    written = json.loads((tmp_path / "bias.json").read_text())["contamination"]
    assert written["definitions"]["all_rows"] == "every row, of the test split (the rows of the duplication settings)"
    assert written["counts"]["rows"] == "test"


def _panel_labels(analysis) -> tuple[list[str], str]:
    """The tick labels and the title of the plot's panel of metric ``acc`` of ``analysis``."""
    from matplotlib.figure import Figure

    from workbench.bias.plot import _panel

    axes = Figure().subplots()
    _panel(axes, analysis, "acc")
    return [tick.get_text() for tick in axes.get_xticklabels()], axes.get_title()


def test_the_plot_and_the_cli_say_test_rows(tmp_path, corpus, report):
    """The setting of every test row is "test rows" in the figure and the table, not "all rows"."""
    from typer.testing import CliRunner

    from workbench.cli import app

    assert report.contamination.setting_label("all_rows") == "test rows"
    ticks, title = _panel_labels(report.contamination)
    assert "test\nrows" in ticks and "all\nrows" not in ticks, ticks
    assert "(test rows vs clean)" in title, title
    metrics = corpus.write_jsonl(tmp_path / "metrics.jsonl", [{"id": i, "acc": v} for i, *_, v in ROWS])
    result = CliRunner().invoke(app, ["bias", str(tmp_path / "dedup"), str(metrics), "-m", "acc", "--resamples", "50"],
                                terminal_width=200)
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())
    assert "Δ% test rows vs" in printed and "all rows" not in printed, result.output  # "clean" wraps


def test_a_single_set_keeps_all_rows(tmp_path, corpus):
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/0", "content": corpus.code("q")}])
    out = corpus.dedup(tmp_path, [{"id": i, "content": corpus.code(base)} for i, base, _ in corpus.SINGLE],
                       against=str(reference))
    report = run_bias(out, {"id": [i for i, *_ in corpus.SINGLE], "acc": [v for *_, v in corpus.SINGLE]},
                      BiasConfig(metric=["acc"], resamples=50))
    assert report.contamination.setting_label("all_rows") == "all rows"
    ticks, title = _panel_labels(report.contamination)
    assert "all\nrows" in ticks and "(all rows vs clean)" in title, (ticks, title)


#: leftovers38c: t1's only duplicate is validation row V; t2 copies train A; t3..t5 are unique
WITH_VALIDATION = [("A", "train", "a", 0), ("B", "train", "b", 0), ("V", "validation", "v", 1), ("W", "validation", "w", 0),
                   ("t1", "test", "v", 1), ("t2", "test", "a", 1), ("t3", "test", "c", 0), ("t4", "test", "d", 0),
                   ("t5", "test", "e", 1)]


def test_a_test_row_duplicated_only_in_validation_is_not_unbiased(tmp_path, corpus):
    """leftovers38c: a test row whose only duplicate is in a validation split counted in ``unbiased
    test`` as a clean row (4 rows, 0.5), although the dedup removed it from its test split (test.jsonl
    keeps t3, t4, t5) and docs/bias.md says unbiased test is the test rows the dedup keeps. A held-out
    split may have chosen the model (early stopping, hyperparameters); a test row duplicated in any
    other split is now left out of unbiased test, counted, and said in a note. Real dedup."""
    import json

    rows = [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b, _ in WITH_VALIDATION]
    out = corpus.dedup(tmp_path, rows, split_column="split")
    report = run_bias(out, {"id": [i for i, *_ in WITH_VALIDATION], "acc": [v for *_, v in WITH_VALIDATION]},
                      BiasConfig(metric=["acc"], resamples=50), json_path=tmp_path / "bias.json")
    settings = report.duplication.metrics["acc"].settings
    kept_test = [json.loads(line)["id"] for line in (out / "test.jsonl").read_text().splitlines()]
    assert kept_test == ["t3", "t4", "t5"]
    assert settings["unbiased_test"].n_rows == len(kept_test) and settings["unbiased_test"].value == pytest.approx(1 / 3)
    assert settings["cross_set_biased"].n_rows == 5 and settings["fully_biased"].n_rows == 5
    counts = report.duplication.counts
    assert counts["test_rows_with_train_duplicate"] == 1 and counts["test_rows_with_other_split_duplicate_only"] == 1
    assert any("1 test row whose duplicates outside 'test' are all in other splits than 'train' ('validation')" in note
               and "not in unbiased test" in note for note in report.duplication.notes), report.duplication.notes
    written = json.loads((tmp_path / "bias.json").read_text())["duplication"]["definitions"]["unbiased_test"]
    assert "a row of another split" in written, written


#: leftovers39b: as WITH_VALIDATION, but the third split is read after 'test' (splits come in the order train,
#: validation, test, then the rest): t1's only duplicate is row E of split 'extra'
WITH_EXTRA = [("A", "train", "a", 0), ("B", "train", "b", 0), ("t1", "test", "v", 1), ("t2", "test", "a", 1),
              ("t3", "test", "c", 0), ("t4", "test", "d", 0), ("t5", "test", "e", 1), ("E", "extra", "v", 1),
              ("F", "extra", "w", 0)]


def test_a_test_row_duplicated_only_in_a_split_read_after_test_is_left_out_of_both(tmp_path, corpus):
    """leftovers39b: with a third split read after 'test', the dedup kept the test copy t1 (the first
    of its cluster) and removed E, so test.jsonl held 4 rows while unbiased test, which leaves out a
    test row duplicated in any other split, counted 3. The rule is now one: under ``--cross-set
    remove-test`` the dedup keeps no test row with a copy in another split (here E stays), whatever
    order the splits are read in. Real dedup."""
    import csv
    import json

    rows = [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b, _ in WITH_EXTRA]
    out = corpus.dedup(tmp_path, rows, split_column="split")
    report = run_bias(out, {"id": [i for i, *_ in WITH_EXTRA], "acc": [v for *_, v in WITH_EXTRA]},
                      BiasConfig(metric=["acc"], resamples=50))
    kept_test = [json.loads(line)["id"] for line in (out / "test.jsonl").read_text().splitlines()]
    assert kept_test == ["t3", "t4", "t5"]
    assert [json.loads(line)["id"] for line in (out / "extra.jsonl").read_text().splitlines()] == ["E", "F"]
    with open(out / "removed.csv") as handle:
        removed = {row["id"]: row for row in csv.DictReader(handle)}
    assert removed["t1"]["duplicate_of"] == "E" and removed["t1"]["split"] == "test"
    settings = report.duplication.metrics["acc"].settings
    assert settings["unbiased_test"].n_rows == len(kept_test) and settings["unbiased_test"].value == pytest.approx(1 / 3)
    assert report.duplication.counts["test_rows_with_other_split_duplicate_only"] == 1


def test_the_note_says_when_the_dedup_kept_a_test_row_duplicated_only_in_another_split(tmp_path, corpus):
    """review39a: a test row whose only duplicate is in a split read after ``test`` (``holdout``) is the
    row its cluster keeps under ``--cross-set remove-train`` (which removes train copies only; ``--keep
    first``): test.jsonl keeps it, yet the note said "the dedup's test split drops them too". The note now
    says what the dedup did with it. Real dedup."""
    import json

    rows = [("A", "train", "a", 0), ("B", "train", "b", 1), ("t1", "test", "v", 1), ("t2", "test", "c", 0),
            ("t3", "test", "d", 1), ("H", "holdout", "v", 0)]
    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b, _ in rows],
                       split_column="split", cross_set="remove-train")
    assert [json.loads(line)["id"] for line in (out / "test.jsonl").read_text().splitlines()] == ["t1", "t2", "t3"]
    report = run_bias(out, {"id": [i for i, *_ in rows], "acc": [v for *_, v in rows]},
                      BiasConfig(metric=["acc"], resamples=50))
    assert report.duplication.metrics["acc"].settings["unbiased_test"].n_rows == 2
    note = next(n for n in report.duplication.notes if "not in unbiased test" in n)
    assert "drops them too" not in note and "drops it too" not in note, note
    assert "the dedup kept it in its test split" in note, note


def _test_only(tmp_path, corpus, scored_test_rows):
    """ROWS plus train rows E-H (train rows outnumber the test rows), train C and test t5 contaminated;
    the metric on the test rows ``scored_test_rows`` only, as a model scored on test."""
    rows = ROWS + [(name, "train", name.lower(), 0) for name in ("E", "F", "G", "H")]
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/1", "content": corpus.code("r1")},
                                                                  {"id": "REF/2", "content": corpus.code("r2")}])
    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b, _ in rows],
                       split_column="split", against=str(reference))
    scored = [(i, v) for i, s, _, v in rows if s == "test" and i in scored_test_rows]
    return run_bias(out, {"id": [i for i, _ in scored], "acc": [v for _, v in scored]},
                    BiasConfig(metric=["acc"], resamples=50))


def test_a_metric_over_every_test_row_draws_no_warning_about_train_rows(tmp_path, corpus, capsys):
    """probe 39: a metric over every test row (the normal case) was warned about as "8 of the dedup's 13 rows
    have no metric row ... cannot show what the duplicates among the others do", and contaminated train row C
    as "1 of the 2 contaminated rows ... has no joined metric row", beside the count "contaminated rows
    without metric 0": the train rows are no row a test setting counts."""
    report = _test_only(tmp_path, corpus, {"t1", "t2", "t3", "t4", "t5"})
    assert report.warnings == [], report.warnings
    assert report.contamination.counts["contaminated_rows_without_metric"] == 0
    join = report.join
    assert (join.dedup_rows, join.dedup_rows_without_metric) == (13, 8)  # the dedup run's rows, as before
    assert (join.rows_counted, join.dedup_rows_counted, join.dedup_rows_counted_without_metric) == ("test", 5, 0)
    from workbench.cli.bias import print_report

    print_report(report)
    printed = " ".join(capsys.readouterr().out.split())
    assert "8 of the dedup's 13 rows have no metric row (0 of its 5 test rows, the rows the settings count)" in printed


def test_test_rows_without_a_metric_row_are_warned_about_and_counted_alike(tmp_path, corpus):
    """A metric over 2 of the 5 test rows, without contaminated t5: the warning names the test rows and
    t5, and the count of contaminated rows without a metric row is the warning's 1."""
    report = _test_only(tmp_path, corpus, {"t1", "t4"})
    assert report.contamination.counts["contaminated_rows_without_metric"] == 1
    assert (report.join.dedup_rows_counted, report.join.dedup_rows_counted_without_metric) == (5, 3)
    assert any(w.startswith("3 of the dedup's 5 test rows have no metric row: every setting is computed over the 2 "
                            "test rows that have one") for w in report.warnings), report.warnings
    assert any(w.startswith("1 of the 1 contaminated test row in ") and "(e.g. t5)" in w
               for w in report.warnings), report.warnings


def test_the_note_says_the_dedup_dropped_a_contaminated_test_row_duplicated_only_in_another_split(tmp_path, corpus):
    """review40: the note took a test row that ``removed.csv`` lists as ``contaminated`` for one the dedup
    kept: t1 (duplicated only by validation row V, both copies of a reference row) is not in test.jsonl, yet
    the note said "the dedup kept it in its test split". Real dedup with ``--against``."""
    import json

    rows = [("A", "train", "a", 0), ("B", "train", "b", 1), ("t1", "test", "r1", 1), ("t2", "test", "c", 0),
            ("t3", "test", "d", 1), ("V", "validation", "r1", 0)]
    reference = corpus.write_jsonl(tmp_path / "reference.jsonl", [{"id": "REF/1", "content": corpus.code("r1")}])
    out = corpus.dedup(tmp_path, [{"id": i, "split": s, "content": corpus.code(b)} for i, s, b, _ in rows],
                       split_column="split", against=str(reference))
    assert [json.loads(line)["id"] for line in (out / "test.jsonl").read_text().splitlines()] == ["t2", "t3"]
    report = run_bias(out, {"id": [i for i, *_ in rows], "acc": [v for *_, v in rows]},
                      BiasConfig(metric=["acc"], resamples=50))
    note = next(n for n in report.duplication.notes if "not in unbiased test" in n)
    assert "the dedup kept it" not in note, note
    assert "the dedup dropped it from its test split too" in note, note
