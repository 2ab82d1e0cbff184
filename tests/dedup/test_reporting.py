"""Dedup reporting a user can act on (issue 12, item 6), on corpora computed by hand:

* each removed row names a verified neighbour (the first hop towards the kept row), its Jaccards
  and its hop count; chained clusters (diameter > 1) are flagged in ``cluster_shapes.csv``;
* rows that are too short, empty, unreadable or parsed with errors are listed in ``skipped.csv``;
* identical text below ``--min-tokens`` (stubs such as ``pass``) is found as ``exact_text``.

The chain corpus: files of bare identifiers ``t<i>``, one per line (each is one token, once), so
a file ``t<lo>..t<hi>`` is the set {lo..hi} and every Jaccard is a ratio of range overlaps:
A = 1..20, B = 3..22, C = 5..24: J(A, B) = J(B, C) = 18/22 = 0.818182 >= 0.8 and
J(A, C) = 16/24 = 0.666667 < 0.8, so A~B~C is a chain of diameter 2.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from workbench.dedup import DedupConfig, run_dedup
from workbench.dedup.cluster_shape import TokenPairScorer, describe_cluster
from workbench.dedup.text_identity import normalise_whitespace


def idents(lo: int, hi: int) -> str:
    return "\n".join(f"t{i}" for i in range(lo, hi + 1)) + "\n"


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


CHAIN_ROWS = [
    {"id": "a", "content": idents(1, 20)},
    {"id": "b", "content": idents(3, 22)},
    {"id": "c", "content": idents(5, 24)},
    {"id": "d", "content": idents(3, 22)},  # b's text: exact group {b, d}
    {"id": "e", "content": "".join(f"t{i}\n" for i in range(24, 4, -1))},  # c's tokens reversed: exact group {c, e}
    {"id": "stub1", "content": "    pass\n"},
    {"id": "stub2", "content": "    pass   \r\n\r\n"},  # stub1 after normalisation
    {"id": "stub3", "content": "pass"},  # other indentation: other text
    {"id": "ret1", "content": "return []"},
    {"id": "ret2", "content": "\ufeffreturn []\r\n"},
    {"id": "empty1", "content": ""},
    {"id": "empty2", "content": "  \n\t\n"},
    {"id": "nul", "content": "x\u0000y"},
    {"id": "bad", "content": "def f(:\n  return zz"},
    {"id": "broken", "content": idents(100, 125) + "def g(:\n"},  # 27 tokens, analysed, a parse error
]


@pytest.fixture(scope="module")
def chain_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("chain")
    out = folder / "out"
    run = run_dedup(str(write(folder / "rows.jsonl", CHAIN_ROWS)), DedupConfig(workers=1), output_dir=out)
    return run, out


def test_each_removed_row_names_the_first_hop_towards_the_kept_row(chain_run):
    _, out = chain_run
    assert json.loads((out / "clusters.json").read_text()) == [["a", "b", "c", "d", "e"], ["stub1", "stub2"],
                                                               ["ret1", "ret2"]]
    near = "0.818182"
    assert read_csv(out / "removed.csv") == [
        # b and d (b's copy) are verified against the kept row a: a is named, one hop
        {"id": "b", "split": "train", "reason": "near_duplicate", "duplicate_of": "a", "neighbour": "a",
         "neighbour_kind": "near", "set_jaccard": near, "multiset_jaccard": near, "hops_to_kept": "1"},
        # c and e share nothing enough with a (J = 0.666667): their neighbour is b, two hops from a
        {"id": "c", "split": "train", "reason": "near_duplicate", "duplicate_of": "a", "neighbour": "b",
         "neighbour_kind": "near", "set_jaccard": near, "multiset_jaccard": near, "hops_to_kept": "2"},
        {"id": "d", "split": "train", "reason": "near_duplicate", "duplicate_of": "a", "neighbour": "a",
         "neighbour_kind": "near", "set_jaccard": near, "multiset_jaccard": near, "hops_to_kept": "1"},
        {"id": "e", "split": "train", "reason": "near_duplicate", "duplicate_of": "a", "neighbour": "b",
         "neighbour_kind": "near", "set_jaccard": near, "multiset_jaccard": near, "hops_to_kept": "2"},
        {"id": "stub2", "split": "train", "reason": "exact_text_duplicate", "duplicate_of": "stub1",
         "neighbour": "stub1", "neighbour_kind": "exact_text", "set_jaccard": "1.000000",
         "multiset_jaccard": "1.000000", "hops_to_kept": "1"},
        {"id": "ret2", "split": "train", "reason": "exact_text_duplicate", "duplicate_of": "ret1",
         "neighbour": "ret1", "neighbour_kind": "exact_text", "set_jaccard": "1.000000",
         "multiset_jaccard": "1.000000", "hops_to_kept": "1"},
    ]


def test_chained_clusters_are_flagged_and_counted(chain_run):
    run, out = chain_run
    assert read_csv(out / "cluster_shapes.csv") == [
        {"cluster": "0", "size": "5", "kind": "tokens", "multisets": "3", "kept": "a", "diameter": "2",
         "diameter_exact": "true", "chained": "true", "edges": "2"},  # a-b, b-c between the 3 multisets
        {"cluster": "1", "size": "2", "kind": "exact_text", "multisets": "1", "kept": "stub1", "diameter": "1",
         "diameter_exact": "true", "chained": "false", "edges": "0"},
        {"cluster": "2", "size": "2", "kind": "exact_text", "multisets": "1", "kept": "ret1", "diameter": "1",
         "diameter_exact": "true", "chained": "false", "edges": "0"},
    ]
    shape = run.report["cluster_shape"]
    assert shape["chained_clusters"] == 1 and shape["undecided_clusters"] == 0
    assert shape["largest_chained"] == {"size": 5, "diameter": 2, "diameter_exact": True, "representative": "a",
                                        "sample": ["a", "b", "c", "d", "e"]}
    assert [c["chained"] for c in run.report["largest_clusters"]] == [True, False, False]


def test_skipped_rows_are_listed_with_their_reason(chain_run):
    run, out = chain_run
    assert read_csv(out / "skipped.csv") == [
        {"id": i, "split": "train", "reason": reason, "n_tokens": n, "detail": detail}
        for i, reason, n, detail in [
            ("stub1", "too_short", "0", ""), ("stub2", "too_short", "0", ""), ("stub3", "too_short", "0", ""),
            ("ret1", "too_short", "0", ""), ("ret2", "too_short", "0", ""),
            ("empty1", "empty", "0", ""), ("empty2", "empty", "0", ""),
            ("nul", "unreadable", "0", "binary (NUL bytes)"),
            ("bad", "too_short", "2", "line 1, column 7: missing ')'"),  # f and zz
            # compared all the same: the reason says so, not a bare "parse_error" that reads as skipped (fix33)
            ("broken", "compared_with_parse_error", "27", "line 27, column 7: missing ')'"),  # after 26 lines of t100..t125
        ]
    ]
    assert run.report["skipped_rows"] == {"file": "skipped.csv", "rows": 10,
                                          "by_reason": {"unreadable": 1, "empty": 2, "too_short": 6,
                                                        "compared_with_parse_error": 1},
                                          "too_short_with_parse_error": 1}


def test_parse_error_counts_agree_with_skipped_csv(chain_run):
    """``parse_errors`` counts bad (too short) and broken (compared), but skipped.csv gives one reason a row:
    the report splits the count so that each part matches a reason of skipped.csv, and the terminal says so."""
    from rich.console import Console

    from workbench.dedup.duplication_report import render_report

    run, out = chain_run
    overall = run.report["overall"]
    assert (overall["parse_errors"], overall["parse_errors_compared"], overall["parse_errors_too_short"]) == (2, 1, 1)
    listed = read_csv(out / "skipped.csv")
    assert overall["parse_errors_compared"] == sum(1 for row in listed if row["reason"] == "compared_with_parse_error")
    assert overall["parse_errors_too_short"] == sum(1 for row in listed if row["reason"] == "too_short" and row["detail"])
    assert {"parse_errors_compared", "parse_errors_too_short"} <= set(run.report["definitions"])
    console = Console(width=250, record=True)
    for renderable in render_report(run.report):
        console.print(renderable)
    text = console.export_text()
    assert ("2: 1 compared (skipped.csv compared_with_parse_error), 1 too short (skipped.csv too_short, error in "
            "detail)") in text
    assert "unreadable rows (kept, not compared)" in text


def test_exact_text_figures_stay_out_of_the_duplication_factor(chain_run):
    run, _ = chain_run
    overall = run.report["overall"]
    # the token clusters: 5 analysed rows of 6 (broken is analysed too), one cluster of 5
    assert (overall["analysed"], overall["duplicate_rows"], overall["clusters"]) == (6, 4, 1)
    assert overall["duplication_factor"] == pytest.approx(4 / 6)
    assert (overall["exact_text_duplicates"], overall["exact_text_clusters"], overall["empty"]) == (2, 2, 2)
    assert overall["removed_rows_by_reason"] == {"exact_duplicate": 0, "exact_text_duplicate": 2, "near_duplicate": 4,
                                                 "contaminated": 0}
    assert overall["kept"] == 15 - 6


@pytest.mark.parametrize(("text", "normalised"), [
    ("a\r\nb\r\n", "a\nb"),  # CRLF
    ("a\rb", "a\nb"),  # old Mac line ends
    ("a  \t\nb\f\v", "a\nb"),  # trailing spaces, tabs, form feed, vertical tab
    ("\n\na\n\n\n  b\n\n", "a\n  b"),  # blank lines dropped, indentation kept
    ("\ufeffa", "a"),  # a leading byte-order mark
    ("a \u00a0", "a \u00a0"),  # a no-break space is content
    ("a  =  b", "a  =  b"),  # whitespace inside a line is kept
    ("  \r\n\t \n", ""),  # only whitespace: empty
])
def test_whitespace_normalisation(text, normalised):
    assert normalise_whitespace(text) == normalised


def test_identical_text_is_compared_by_its_token_bags(tmp_path):
    """Normalisation drops the blank line inside a string literal, so the two texts match, but
    their literal tokens differ: bags {x, lit1} and {x, lit2}, Jaccard 1/3."""
    rows = [{"id": "r1", "content": 'x = """a\n\nb"""\n'}, {"id": "r2", "content": 'x = """a\nb"""\n'}]
    out = tmp_path / "out"
    run_dedup(str(write(tmp_path / "rows.jsonl", rows)), DedupConfig(workers=1), output_dir=out)
    [removed] = read_csv(out / "removed.csv")
    assert (removed["id"], removed["neighbour"], removed["neighbour_kind"]) == ("r2", "r1", "exact_text")
    assert (removed["set_jaccard"], removed["multiset_jaccard"]) == ("0.333333", "0.333333")


def test_many_identical_stubs_per_task_with_groups_against_and_the_keeper_policy(tmp_path):
    reference = write(tmp_path / "reference.jsonl", [{"task_id": "REF/0", "content": "return []\n"}])
    rows = [{"id": f"{task}:{k}", "task": task, "split": split, "content": text}
            for task in ("T0", "T1")
            for k, (split, text) in enumerate([("test", "    pass\n"), ("train", "    pass\n"),
                                               ("test", "    pass  \r\n"), ("train", "return []"), ("train", "")] * 2)]
    source = write(tmp_path / "rows.jsonl", rows)
    # the in-set dedup (no --against): one "    pass" and one "return []" per task are kept
    in_set = tmp_path / "in_set"
    run_dedup(str(source), DedupConfig(workers=1, group_column="task", split_column="split"), output_dir=in_set)
    clusters = json.loads((in_set / "clusters.json").read_text())
    # per task: 6 rows of "    pass" (a cluster; never across tasks), 2 of "return []"; "" never clustered
    by_task = {c[0].split(":")[0]: sorted(c) for c in clusters if len(c) == 6}
    assert sorted(by_task) == ["T0", "T1"] and len(clusters) == 4
    assert all(len(c) == 2 for c in clusters if len(c) != 6)
    removed = {row["id"]: row for row in read_csv(in_set / "removed.csv")}
    # remove-test: the cluster spans train and test, so a train row is kept (T0:1, the first train row)
    kept = {c[0].split(":")[0]: next(m for m in c if m not in removed) for c in clusters if len(c) == 6}
    assert kept == {"T0": "T0:1", "T1": "T1:1"}
    for task in ("T0", "T1"):
        for k in (0, 2, 5, 6, 7):
            row = removed[f"{task}:{k}"]
            assert (row["reason"], row["duplicate_of"], row["neighbour"], row["neighbour_kind"], row["hops_to_kept"]) == (
                "exact_text_duplicate", f"{task}:1", f"{task}:1", "exact_text", "1")
        assert removed[f"{task}:8"]["reason"] == "exact_text_duplicate" and f"{task}:3" not in removed
    for split in ("train", "test"):  # the deduplicated splits hold one "    pass" and one "return []" per task
        kept_ids = [json.loads(line)["id"] for line in (in_set / f"{split}.jsonl").read_text().splitlines()]
        assert kept_ids == ([f"{t}:{k}" for t in ("T0", "T1") for k in (1, 3, 4, 9)] if split == "train" else [])

    # the decontamination (--against --decontaminate-only): the same clusters and figures, and only the
    # contaminated rows dropped
    out = tmp_path / "out"
    run = run_dedup(str(source), DedupConfig(workers=1, group_column="task", split_column="split",
                                             against=str(reference), decontaminate_only=True), output_dir=out)
    assert json.loads((out / "clusters.json").read_text()) == clusters
    removed = {row["id"]: row for row in read_csv(out / "removed.csv")}
    assert sorted(removed) == ["T0:3", "T0:8", "T1:3", "T1:8"]
    for row in removed.values():  # "return []" is the reference's text: contaminated, whatever the group
        assert (row["reason"], row["duplicate_of"], row["neighbour"], row["neighbour_kind"], row["hops_to_kept"]) == (
            "contaminated", "REF/0", "REF/0", "exact_text", "")
    contamination = read_csv(out / "contamination.csv")
    assert sorted(r["id"] for r in contamination) == ["T0:3", "T0:8", "T1:3", "T1:8"]
    assert read_csv(out / "cross_group_pairs.csv") == []
    report = run.report
    assert report["contamination"]["contaminated_exact_text_rows"] == 4
    assert report["overall"]["exact_text_duplicates"] == 2 * 5 + 2 * 1
    assert (report["overall"]["removed"], report["overall"]["kept"]) == (4, 16)
    assert report["cross_set"]["exact_text_cross_set_clusters"] == 2
    assert report["cross_set"]["cross_set_clusters"] == 0  # the Allamanis figures: token clusters only
    assert report["groups"]["within_group_exact_text_rows"] == 12
    assert report["skipped_rows"]["by_reason"]["empty"] == 4
    skipped = {row["id"]: row["reason"] for row in read_csv(out / "skipped.csv")}
    assert [i for i, reason in skipped.items() if reason == "empty"] == ["T0:4", "T0:9", "T1:4", "T1:9"]
    for split in ("train", "test"):  # the decontaminated splits hold every row but the contaminated ones
        kept_ids = [json.loads(line)["id"] for line in (out / f"{split}.jsonl").read_text().splitlines()]
        expected = [r["id"] for r in rows if r["split"] == split and r["id"] not in removed]
        assert kept_ids == expected


# ---------------------------------------------------------------- the search on its own

BAGS = {0: idents(1, 20), 1: idents(3, 22), 2: idents(5, 24), 3: idents(7, 26)}  # a path 0-1-2-3


def scorer() -> TokenPairScorer:
    bags = {i: {token: 1 for token in text.split()} for i, text in BAGS.items()}
    return TokenPairScorer(lambda i: (bags[i], len(bags[i])), 0.8, 0.7)


def test_the_search_starts_from_the_kept_row_wherever_it_is():
    shape, neighbours = describe_cluster([0, 1, 2, 3], 2, {i: i for i in BAGS}, scorer())
    assert (shape.diameter, shape.diameter_exact, shape.chained, shape.edges) == (3, True, True, 3)
    assert {row: (n.row, n.hops) for row, n in neighbours.items()} == {0: (1, 2), 1: (2, 1), 3: (2, 1)}


def test_above_the_limit_the_diameter_is_a_double_sweep_lower_bound():
    score = scorer()
    shape, neighbours = describe_cluster([0, 1, 2, 3], 1, {i: i for i in BAGS}, score, limit=2)
    # the first sweep from 1 reaches 3 at 2 hops; the second, from 3, finds 0 at 3 hops
    assert (shape.diameter, shape.diameter_exact, shape.chained, shape.edges) == (3, False, True, None)
    assert {row: (n.row, n.hops) for row, n in neighbours.items()} == {0: (1, 1), 2: (1, 1), 3: (2, 2)}
    clique = {i: {f"t{k}": 1 for k in range(1, 21)} | {f"u{i}": 1} for i in range(4)}  # J = 20/22 for every pair
    shape, _ = describe_cluster([0, 1, 2, 3], 0, {i: i for i in clique},
                                TokenPairScorer(lambda i: (clique[i], 21), 0.8, 0.7), limit=2)
    assert (shape.diameter, shape.diameter_exact, shape.chained) == (1, False, None)  # not decided above the limit


def test_the_verified_pairs_of_the_run_are_not_compared_again():
    score = TokenPairScorer(lambda i: ({}, 0), 0.8, 0.7, known={(0, 1): (0.9, 0.8)})
    assert score(1, 0) == (0.9, 0.8) and score.comparisons == 0


def _render(report: dict, width: int) -> str:
    from rich.console import Console

    from workbench.dedup.duplication_report import render_report

    console = Console(width=width, record=True, file=open("/dev/null", "w"))
    for renderable in render_report(report):
        console.print(renderable)
    return console.export_text()


@pytest.mark.parametrize("splits", [("train",), ("train", "validation", "test")])
def test_split_figures_are_whole_at_80_columns(chain_run, splits):
    """At 80 columns (a narrow terminal, or a pipe, which Rich draws 80 wide) the per-split figures
    were cropped: the last column (kept) was cut off. Now each figure is printed whole, per split and
    overall, wide where that fits and one row per figure where not; large counts included."""
    import copy

    run, _ = chain_run
    report = copy.deepcopy(run.report)
    figures = report["splits"]["train"]
    big = {**figures, "files": 9_876_543, "too_short": 2_345_678, "kept": 8_765_432, "removed": 1_111_111}
    report["splits"] = {name: big for name in splits}
    report["overall"] = {**report["overall"], **{k: big[k] for k in ("files", "too_short", "kept", "removed")}}
    text = _render(report, 80)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    header = "d over compared" if len(splits) > 1 else "d over"
    assert header in text and "kept" in text
    figures_table = text.split("Across splits")[0]
    for name in (*splits, "overall"):
        assert name in figures_table
    for number in ("9876543", "2345678", "8765432", "1111111", f"{100 * big['duplication_factor']:.2f}%"):
        assert figures_table.count(number) == len(splits) + 1, number
    wide = _render(report, 250)  # one row per split where it fits
    assert any(line.lstrip("│┃ ").startswith("overall") and "8765432" in line for line in wide.splitlines())
