"""The duplication report: per split and overall, in the terms of Allamanis 2019.

Definitions (rows that could not be read and rows with fewer than ``min_tokens`` tokens
are counted but take no part; "analysed" rows do); every per-split key is explained in
:data:`SPLIT_FIGURES`, which the report carries as ``definitions``:

* exact duplicates: rows whose token multiset equals another row's, not counting one row
  per exact group (``Σ_E (|E| - 1)`` over exact groups E);
* near duplicates: the further rows a one-per-cluster dedup removes (``Σ_C (|C| - 1)``
  minus the exact duplicates);
* these two count duplication whichever row is kept; ``removed_rows_by_reason`` counts
  the rows actually dropped, by their relation to the row their cluster keeps;
* duplication factor ``d = (|D| - |X|) / |D|`` with D the analysed rows and X what is left
  after keeping one row per cluster (Allamanis 2019, Eq. 2); per split it is computed
  on that split alone;
* in-train / in-test duplicates: train (test) rows whose cluster holds another train
  (test) row; cross-set duplicates: clusters that hold both train and test rows, and
  the test rows in them (Allamanis 2019, Fig. 1); the share of the test split with a
  duplicate in train is ``cross-set test rows / analysed test rows``.

Exact text duplicates below ``min_tokens`` (``exact_text`` clusters,
:mod:`~workbench.dedup.text_identity`) are removed like other duplicates but kept out of the
figures above, which stay those of Allamanis 2019 over the analysed rows (comparable with the
paper and with runs before ``exact_text`` existed): they have figures of their own
(``exact_text_duplicates``, ``exact_text_clusters``, and ``exact_text_*`` in ``cross_set`` and
``groups``), and ``removed``/``kept`` count every dropped row.

With a reference (``--against``) the in-set duplicates and the contaminated rows are dropped;
with ``--decontaminate-only`` as well (a decontamination: ``contamination.decontaminate_only``) the
same figures describe the in-set duplication, but only the contaminated rows are dropped:
``removed`` is ``removed_rows_by_reason.contaminated`` and every other row is kept.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from workbench.dedup.cluster_shape import EXACT_DIAMETER_LIMIT, SHAPE_BUDGET_MIN, SHAPE_BUDGET_PER_MULTISET
from workbench.dedup.detection import ANALYSED, FAILED, REMOVAL_REASONS, TOO_SHORT, DedupResult
from workbench.dedup.skipped_rows import SKIP_REASONS, skipped_rows
from workbench.formatting import count as counted
from workbench.languages.registry import plugin_versions
from workbench.option_words import in_config_words, option_value

#: how many of the largest clusters the report lists, and how many members of each
LARGEST_CLUSTERS, CLUSTER_SAMPLE = 10, 5

#: the per-split (and ``overall``) keys of ``report.json``, each with its meaning
SPLIT_FIGURES: dict[str, str] = {
    "files": "rows of the split",
    "failed": "rows that could not be tokenized (null, binary, not UTF-8); kept in the output",
    "too_short": ("rows with fewer than min_tokens identifier/literal tokens (empty ones included); not compared by "
                  "the token rule, but exact text copies among them are found (exact_text)"),
    "empty": "too_short rows whose text is empty after whitespace normalisation; never clustered, kept",
    "parse_errors": ("rows whose parse has syntax errors (tree-sitter recovered and the tokens were still read): "
                     "parse_errors_compared + parse_errors_too_short"),
    "parse_errors_compared": ("parse_errors rows long enough to be compared (counted in analysed, searched like any "
                              "other); listed in skipped.csv with reason compared_with_parse_error"),
    "parse_errors_too_short": ("parse_errors rows below min_tokens (counted in too_short, not compared by the token "
                               "rule); listed in skipped.csv with reason too_short, the error in detail"),
    "analysed": "rows compared (|D| of the duplication factor)",
    "rows_in_exact_groups": "rows whose token multiset equals at least one other row's, all copies counted",
    "exact_duplicates": "rows_in_exact_groups minus one per exact group: sum over exact groups E of (|E| - 1)",
    "near_duplicates": "duplicate_rows minus exact_duplicates: further rows one-per-cluster dedup removes",
    "duplicate_rows": "rows one-per-cluster dedup removes, whichever row is kept: sum over clusters C of (|C| - 1)",
    "clusters": "clusters (connected components of verified duplicate pairs) with 2 or more rows here",
    "files_in_clusters": "rows in those clusters, all copies counted",
    "duplication_factor": "duplicate_rows / analysed, (|D| - |X|) / |D| of Allamanis 2019, Eq. 2",
    "exact_text_duplicates": (
        "too_short rows whose whitespace-normalised text equals another's, minus one per such group: "
        "sum over exact_text clusters T of (|T| - 1); not in duplicate_rows or duplication_factor"),
    "exact_text_clusters": "exact_text clusters (identical text below min_tokens) with 2 or more rows here",
    "removed": ("rows dropped from the deduplicated output (sum of removed_rows_by_reason); with --against "
                "--decontaminate-only (a decontamination) the contaminated rows only, the in-set duplicates are kept"),
    "removed_rows_by_reason": (
        "dropped rows by why: exact_duplicate (same token multiset as the row its cluster keeps), "
        "exact_text_duplicate (same normalised text as that row, below min_tokens), "
        "near_duplicate (a near copy of that row), contaminated (a duplicate of an --against row); "
        "not the same breakdown as exact_duplicates/near_duplicates, which do not depend on the kept row"
    ),
    "kept": "rows in the deduplicated output (files - removed)",
}


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def token_clusters(result: DedupResult) -> list[list[int]]:
    """The clusters of the token rule (Allamanis 2019), without the ``exact_text`` ones."""
    return [c for c, shape in zip(result.clusters, result.shapes) if shape.kind != "exact_text"]


def text_clusters(result: DedupResult) -> list[list[int]]:
    """The ``exact_text`` clusters (identical text below ``min_tokens``)."""
    return [c for c, shape in zip(result.clusters, result.shapes) if shape.kind == "exact_text"]


def _split_figures(result: DedupResult, members: Sequence[int], exact_groups: list[list[int]]) -> dict:
    """Figures for the rows ``members`` (a split, or all rows) taken on their own."""
    inside = set(members)
    status = Counter(result.status[i] for i in members)
    analysed = status[ANALYSED]
    exact_sizes = [sum(1 for m in group if m in inside) for group in exact_groups]
    exact = sum(max(0, size - 1) for size in exact_sizes)
    cluster_sizes = [sum(1 for m in cluster if m in inside) for cluster in token_clusters(result)]
    duplicates = sum(max(0, size - 1) for size in cluster_sizes)
    text_sizes = [sum(1 for m in cluster if m in inside) for cluster in text_clusters(result)]
    removed = Counter(result.removed[i].reason for i in members if i in result.removed)
    return {
        "files": len(members),
        "failed": status[FAILED],
        "too_short": status[TOO_SHORT],
        "empty": sum(1 for i in result.empty if i in inside),
        "parse_errors": sum(1 for i in members if result.has_error[i]),
        "parse_errors_compared": sum(1 for i in members if result.has_error[i] and result.status[i] == ANALYSED),
        "parse_errors_too_short": sum(1 for i in members if result.has_error[i] and result.status[i] == TOO_SHORT),
        "analysed": analysed,
        "rows_in_exact_groups": sum(size for size in exact_sizes if size > 1),
        "exact_duplicates": exact,
        "near_duplicates": duplicates - exact,
        "duplicate_rows": duplicates,
        "clusters": sum(1 for size in cluster_sizes if size > 1),
        "files_in_clusters": sum(size for size in cluster_sizes if size > 1),
        "duplication_factor": _ratio(duplicates, analysed),
        "exact_text_duplicates": sum(max(0, size - 1) for size in text_sizes),
        "exact_text_clusters": sum(1 for size in text_sizes if size > 1),
        "removed": sum(removed.values()),
        "removed_rows_by_reason": {reason: removed[reason] for reason in REMOVAL_REASONS},
        "kept": len(members) - sum(removed.values()),
    }


def build_report(result: DedupResult, *, skipped_files: Sequence = (), input_format: str | None = None,
                 source_encodings: Mapping[str, str] | None = None) -> dict:
    """Return the JSON-ready report of a run.

    Args:
        result: the run.
        skipped_files: files the loader found but did not load
            (:class:`~workbench.data.loading.SkippedFile`), listed so nothing is dropped silently.
        input_format: on a run whose SOURCE URI Spark read, the format it read it in (``parquet``
            or ``json``: ``--input-format auto`` resolved), recorded as ``parameters.input_format``
            beside ``input_format_requested``; ``None`` when the driver loaded the SOURCE.
        source_encodings: the source files read in another encoding than UTF-8 (path -> how:
            :attr:`~workbench.data.loading.LoadedDataset.encodings`), recorded as ``source_encodings``.

    Returns:
        a dict with ``overall``, ``splits``, ``definitions`` (:data:`SPLIT_FIGURES`),
        ``cross_set`` (when the train and test splits exist), ``groups`` (with a group
        column), ``contamination`` (with a reference), ``largest_clusters``, ``failures``,
        ``skipped_files``, ``source_encodings``, ``lsh``, ``parameters`` (the options of the search, the ``engine`` and its settings:
        :meth:`~workbench.dedup.config.DedupConfig.to_dict`, and ``id_column``: the id
        column(s), comma-separated, or ``None`` for ``<split>/<row>`` ids; ``numbered_id_column``:
        the id column made by numbering rows per task, ``None`` when all were read), ``work`` and
        ``timings``.
    """
    rows, config = result.rows, result.config
    exact_members: dict[int, list[int]] = {}
    for index, representative in enumerate(result.exact_of):
        if representative >= 0:
            exact_members.setdefault(representative, []).append(index)
    exact_groups = [g for g in exact_members.values() if len(g) > 1]
    report: dict = {
        "source": rows.source,
        "overall": _split_figures(result, range(len(rows)), exact_groups),
        "splits": {
            split: _split_figures(result, range(start, stop), exact_groups)
            for split, (start, stop) in rows.split_ranges.items()
        },
        "definitions": dict(SPLIT_FIGURES),
    }
    train, test = config.train_split, config.test_split
    if train in rows.split_ranges and test in rows.split_ranges:
        report["cross_set"] = _cross_set(result, train, test, report["splits"][test]["analysed"])
    if rows.groups is not None:
        report["groups"] = _groups(result)
    if result.reference is not None:
        report["contamination"] = _contamination(result)
    report["largest_clusters"] = [
        {
            "size": len(cluster),
            "kind": shape.kind,
            "diameter": shape.diameter,
            "diameter_exact": shape.diameter_exact,
            "chained": shape.chained,
            "splits": dict(Counter(rows.splits[m] for m in cluster)),
            **({"groups": len({rows.groups[m] for m in cluster})} if rows.groups is not None else {}),
            # None: every member is a duplicate of an --against row, so none is kept; with --decontaminate-only
            # the row a dedup without it keeps, and kept_rows the rows the decontamination keeps (all but the
            # contaminated)
            "kept": rows.ids[keeper] if keeper is not None else None,
            **({"contaminated": (contaminated := sum(1 for m in cluster if _reason(result, m) == "contaminated"))}
               if result.reference is not None else {}),
            **({"kept_rows": len(cluster) - contaminated}
               if result.reference is not None and result.config.decontaminate_only else {}),
            "sample": [rows.ids[m] for m in cluster[:CLUSTER_SAMPLE]],
        }
        for cluster, keeper, shape in list(zip(result.clusters, result.keepers, result.shapes))[:LARGEST_CLUSTERS]
    ]
    report["cluster_shape"] = _cluster_shape(result)
    skipped = Counter(row.reason for row in skipped_rows(result, details=False))
    # one reason per row: a too-short row that also failed to parse is listed as too_short (its
    # error in detail), so by_reason.compared_with_parse_error is overall.parse_errors_compared, not parse_errors
    report["skipped_rows"] = {"file": "skipped.csv", "rows": sum(skipped.values()),
                              "by_reason": {reason: skipped[reason] for reason in SKIP_REASONS},
                              "too_short_with_parse_error": report["overall"]["parse_errors_too_short"]}
    report["failures"] = dict(Counter(result.failures.values()))
    report["failure_examples"] = [{"id": rows.ids[i], "reason": r} for i, r in list(result.failures.items())[:10]]
    report["skipped_files"] = [{"path": s.path, "reason": s.reason} for s in skipped_files]
    report["source_encodings"] = dict(source_encodings or {})
    report["lsh"] = result.lsh.to_dict(config.set_threshold)
    # which plugin and grammar versions made the tokens: a different grammar may tokenize differently
    # keyed by the plugin's language name: rows that name it by an alias (``js``) count with the rest
    languages: dict[str, dict] = {}
    for name, count in Counter(rows.languages).items():
        versions = plugin_versions(name) or {"plugin": None}
        entry = languages.setdefault(versions.get("language", name), {"rows": 0, **versions})
        entry["rows"] += count
    report["languages"] = dict(sorted(languages.items()))
    # with what the ids are made of, so `workbench bias` joins on the same columns by default
    report["parameters"] = {**config.to_dict(input_format=input_format), "id_column": ",".join(rows.id_columns) or None,
                            "numbered_id_column": rows.numbered_id_column}
    report["work"] = dict(result.counters)
    report["timings_s"] = {step: round(seconds, 3) for step, seconds in result.timings.items()}
    return report


def _cluster_shape(result: DedupResult) -> dict:
    """Chained clusters (diameter > 1: not every two rows are duplicates) and the largest one."""
    chained = [(cluster, keeper, shape) for cluster, keeper, shape in zip(result.clusters, result.keepers, result.shapes)
               if shape.chained]
    largest = None
    if chained:
        cluster, keeper, shape = max(chained, key=lambda item: (item[2].size, item[2].diameter, -item[0][0]))
        ids = result.rows.ids
        largest = {"size": shape.size, "diameter": shape.diameter, "diameter_exact": shape.diameter_exact,
                   "representative": ids[keeper] if keeper is not None else ids[cluster[0]],
                   "sample": [ids[m] for m in cluster[:CLUSTER_SAMPLE]]}
    return {
        "chained_clusters": len(chained),
        "undecided_clusters": sum(1 for shape in result.shapes if shape.chained is None),
        "exact_diameter_limit": EXACT_DIAMETER_LIMIT,
        "largest_chained": largest,
        "comparison_budget": {"min": SHAPE_BUDGET_MIN, "per_multiset": SHAPE_BUDGET_PER_MULTISET},
        "bounded_clusters": sum(1 for shape in result.shapes if shape.bounded),
        "hops_upper_bound_rows": sum(1 for found in result.neighbours.values() if not found.hops_exact),
        "definition": (
            "a cluster is chained when its diameter (longest shortest path between two rows in the graph of duplicate "
            f"pairs) exceeds 1; exact for clusters of up to {EXACT_DIAMETER_LIMIT} distinct token multisets, else a "
            "double-sweep lower bound (diameter_exact false); undecided: lower bound 1 above the limit; bounded: "
            f"a cluster above the limit whose sweeps would put more than max({SHAPE_BUDGET_MIN}, "
            f"{SHAPE_BUDGET_PER_MULTISET} x distinct multisets) pairs to the verifier stops comparing there and "
            "follows the run's verified pairs only: its diameter is still a lower bound, its neighbours still "
            "verified duplicates, the hop counts of hops_upper_bound_rows removed rows upper bounds"),
    }


def _reason(result: DedupResult, row: int) -> str | None:
    removal = result.removed.get(row)
    return removal.reason if removal is not None else None


def _cross_set(result: DedupResult, train: str, test: str, analysed_test: int) -> dict:
    splits = result.rows.splits

    def counted(clusters: list[list[int]]) -> tuple[int, int, int, int, int]:
        in_train = in_test = cross_clusters = cross_test = cross_train = 0
        for cluster in clusters:
            counts = Counter(splits[m] for m in cluster)
            if counts[train] > 1:
                in_train += counts[train]
            if counts[test] > 1:
                in_test += counts[test]
            if counts[train] and counts[test]:
                cross_clusters += 1
                cross_test += counts[test]
                cross_train += counts[train]
        return in_train, in_test, cross_clusters, cross_test, cross_train

    in_train, in_test, cross_clusters, cross_test, cross_train = counted(token_clusters(result))
    text = counted(text_clusters(result))
    return {
        "train_split": train,
        "test_split": test,
        "in_train_duplicates": in_train,
        "in_test_duplicates": in_test,
        "cross_set_clusters": cross_clusters,
        "cross_set_test_files": cross_test,
        "cross_set_train_files": cross_train,
        "test_share_with_train_duplicate": _ratio(cross_test, analysed_test),
        "exact_text_in_train_duplicates": text[0],
        "exact_text_in_test_duplicates": text[1],
        "exact_text_cross_set_clusters": text[2],
        "exact_text_cross_set_test_files": text[3],
        "policy": result.config.cross_set,
    }


def _groups(result: DedupResult) -> dict:
    groups = result.rows.groups
    assert groups is not None
    rows_per_group = Counter(groups)
    analysed_per_group = Counter(g for g, s in zip(groups, result.status) if s == ANALYSED)
    duplicates_per_group: Counter = Counter()
    for cluster in token_clusters(result):
        duplicates_per_group[groups[cluster[0]]] += len(cluster) - 1
    cross_rows = {p.a for p in result.cross_group_pairs} | {p.b for p in result.cross_group_pairs}
    group_pairs = Counter(
        tuple(sorted((str(groups[p.a]), str(groups[p.b])))) for p in result.cross_group_pairs
    )
    top = sorted(duplicates_per_group.items(), key=lambda item: (-item[1], str(item[0])))[:10]
    return {
        "column": result.config.group_column,
        "groups": len(rows_per_group),
        "groups_with_duplicates": len(duplicates_per_group),
        "within_group_duplicate_rows": sum(duplicates_per_group.values()),
        "within_group_exact_text_rows": sum(len(cluster) - 1 for cluster in text_clusters(result)),
        "cross_group_pairs": len(result.cross_group_pairs),
        "cross_group_exact_pairs": sum(1 for p in result.cross_group_pairs if p.kind == "exact"),
        "cross_group_rows": len(cross_rows),
        "cross_group_group_pairs": len(group_pairs),
        "top_group_pairs": [{"groups": list(k), "pairs": v} for k, v in group_pairs.most_common(5)],
        "top_groups": [
            {
                "group": group,
                "rows": rows_per_group[group],
                "analysed": analysed_per_group[group],
                "duplicates": count,
                "duplication_factor": _ratio(count, analysed_per_group[group]),
            }
            for group, count in top
        ],
    }


def _contamination(result: DedupResult) -> dict:
    reference = result.reference
    assert reference is not None
    rows = result.rows
    contaminated = sorted({p.a for p in result.contamination})
    status = Counter(result.reference_status)
    return {
        "reference": reference.source,
        "reference_rows": len(reference),
        # --decontaminate-only: only the contaminated rows were dropped, the in-set duplicates kept
        "decontaminate_only": result.config.decontaminate_only,
        "reference_too_short": status[TOO_SHORT],
        "reference_failed": status[FAILED],
        "contaminated_rows": len(contaminated),
        "contaminated_exact_text_rows": len({p.a for p in result.contamination if p.kind == "exact_text"}),
        # rows under --min-tokens are only compared as text (exact_text), so they cannot be called clean
        "rows_not_checked_too_short": Counter(result.status)[TOO_SHORT],
        "contaminated_by_split": dict(Counter(rows.splits[i] for i in contaminated)),
        "reference_rows_matched": len({p.b for p in result.contamination}),
        **_length_mismatch(result),
        "examples": [
            {
                "id": rows.ids[p.a],
                "reference_id": reference.ids[p.b],
                "set_jaccard": round(p.set_jaccard, 4),
                "multiset_jaccard": round(p.multiset_jaccard, 4),
            }
            for p in result.contamination[:10]
        ],
    }


#: rows whose median token count is below this share of the reference rows' can rarely reach the
#: thresholds against them: |A ∩ B| / |A ∪ B| <= |A| / |B|, so a set Jaccard of 0.8 (Allamanis 2019,
#: Sec. 3) needs a row at least 0.8 times as large in distinct tokens as the reference row it matches
LENGTH_MISMATCH_RATIO = 0.8


def _length_mismatch(result: DedupResult) -> dict:
    """The median token counts of the rows and the reference rows, and a note when the rows are so
    much shorter (:data:`LENGTH_MISMATCH_RATIO`) that few can match: completions (function bodies)
    against whole problems (prompt + solution) is the usual cause."""
    rows = [n for n in result.n_tokens if n > 0]
    reference = [n for n in result.reference_n_tokens if n > 0]
    if not rows or not reference:
        return {"median_tokens": None, "length_note": None}
    row_median, reference_median = float(np.median(rows)), float(np.median(reference))
    note = None
    if row_median < LENGTH_MISMATCH_RATIO * reference_median:
        reference_row = "reference row" if in_config_words() else "--against row"
        note = (f"the median row has {row_median:g} tokens and the median {reference_row} {reference_median:g}; the "
                f"set Jaccard of two rows is at most the smaller token set over the larger, so a row reaches 0.8 only "
                f"against a reference row of at most 1.25 times its distinct tokens, and a typical row here cannot. "
                f"If the rows are completions (function bodies) and the reference rows whole problems, compare like "
                f"with like: {option_value('against_code_column', 'canonical_solution')} (the bodies), or "
                f"{option_value('code_column', 'prompt,COMPLETION')} (whole programs)")
    return {"median_tokens": {"rows": row_median, "reference_rows": reference_median}, "length_note": note}


#: the per-split rows' exact dup., near dup., clusters and d count what is duplicated within the split
SPLIT_ROWS_NOTE = "a split's exact dup., near dup., clusters and d count duplicates within that split only"


def _with_text(compared: int, text: int, below: str) -> str:
    """A cross-set figure of the table: the compared rows' count (Allamanis 2019's figure), and when
    identical short text (``exact_text``) adds to it, the sum first and both parts.

    >>> _with_text(0, 3, "identical text below 20 tokens")
    '3 (0 compared + 3 identical text below 20 tokens)'
    >>> _with_text(2, 0, "identical text below 20 tokens")
    '2'
    """
    return str(compared) if not text else f"{compared + text} ({compared} compared + {text} {below})"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def duplication_title(report: dict) -> str:
    """The title of a report's table, saying which run it is: an in-set dedup, or a dedup
    that also removed near-duplicates of a reference (``--against``: a decontamination).

    >>> duplication_title({"source": "ice", "contamination": {"reference": "humaneval"}})
    'Decontamination against humaneval: duplication in ice'
    >>> duplication_title({"source": "ice"})
    'In-set dedup: duplication in ice'
    """
    contamination = report.get("contamination")
    if contamination:
        return f"Decontamination against {contamination.get('reference')}: duplication in {report['source']}"
    return f"In-set dedup: duplication in {report['source']}"


class _SplitFigures:
    """The per-split figures of a report as a Rich renderable that fits the console: one row per
    split (the columns ``headers``) where that is narrow enough, else one row per figure and one
    column per split, so that no figure is cut or shortened to ``…`` at 80 columns (or in a pipe,
    which Rich draws 80 wide).

    Args:
        title: the table's title; headers: the figures' names (``"\\n"`` breaks a name);
        sections: ``(split name, the figures as text, in the order of headers)``, ``overall`` last;
        note: a line printed under the table (its caption), or ``None``.
    """

    def __init__(self, title: str, headers: list[str], sections: list[tuple[str, list[str]]],
                 note: str | None = None) -> None:
        self.title, self.headers, self.sections, self.note = title, headers, sections, note

    def _by_split(self):
        from rich.table import Table

        table = Table(title=self.title, caption=self.note)
        table.add_column("split", overflow="fold", min_width=8)
        for header in self.headers:
            table.add_column(header, justify="right", no_wrap=True)
        for name, cells in self.sections:
            table.add_row(f"[bold]{escape_markup(name)}[/bold]" if name == "overall" else escape_markup(name), *cells)
        return table

    def _by_figure(self):
        from rich.table import Table

        table = Table(title=self.title, caption=self.note)
        table.add_column("figure", no_wrap=True)
        for name, _ in self.sections:
            table.add_column(f"[bold]{escape_markup(name)}[/bold]" if name == "overall" else escape_markup(name),
                             justify="right", overflow="fold")
        for index, header in enumerate(self.headers):
            table.add_row(header.replace("\n", " "), *(cells[index] for _, cells in self.sections))
        return table

    def __rich_console__(self, console, options):
        from rich.measure import Measurement

        wide = self._by_split()
        # its natural width (Rich would crop the no-wrap figures to fit, not wrap them)
        if Measurement.get(console, options.update(max_width=10_000), wide).maximum <= options.max_width:
            yield wide
        else:
            yield self._by_figure()


def escape_markup(text: str) -> str:
    """``text`` with Rich markup escaped (a split named ``[x]`` is printed as it is)."""
    from rich.markup import escape

    return escape(text)


def render_report(report: dict) -> list:
    """Return Rich renderables (tables) for a report from :func:`build_report`."""
    from rich.markup import escape
    from rich.table import Table  # only the CLI renders; a library run need not import Rich

    columns = [
        ("files", "files"), ("too_short", "short"), ("exact_duplicates", "exact\ndup."),
        ("near_duplicates", "near\ndup."), ("clusters", "clusters"), ("duplication_factor", "d over\ncompared"),
        ("removed", "removed"), ("kept", "kept"),
    ]
    sections = [(name, [_percent(row[k]) if k == "duplication_factor" else str(row[k]) for k, _ in columns])
                for name, row in list(report["splits"].items()) + [("overall", report["overall"])]]
    # a cluster counts in a split's row only where 2 or more of its rows are in that split: a train/test
    # pair is a duplicate overall and in neither split, so those columns need not add up to overall
    note = (f"{SPLIT_ROWS_NOTE}; overall counts them across splits too" if len(report["splits"]) > 1 else None)
    figures = _SplitFigures(duplication_title(report), [title for _, title in columns], sections, note)
    renderables: list = [figures]

    facts = Table(show_header=False, title="Across splits, groups and reference")
    facts.add_column("what")
    facts.add_column("value")  # left: a long value wraps into lines that read as text
    overall = report["overall"]
    facts.add_row("short = fewer tokens than", str(report["parameters"]["min_tokens"]))
    exact, near, duplicates = overall["exact_duplicates"], overall["near_duplicates"], overall["duplicate_rows"]
    # both are counts of rows (not pairs), whichever row is kept; the removal reasons below split the
    # same rows by their relation to the row kept, so the two lines are made to add up visibly
    facts.add_row("exact dup. / near dup. (rows)",
                  f"{counted(exact, 'row')} beyond one per group of rows with the same token multiset + "
                  f"{counted(near, 'more row')} that keeping one per cluster removes = {counted(duplicates, 'duplicate row')}, "
                  "whichever row is kept")
    facts.add_row("d = duplication factor",
                  f"(|D| - |X|) / |D| over the {overall['analysed']:,} compared rows (of {overall['files']:,}; "
                  "shorter rows are not compared), Allamanis 2019 Eq. 2")
    by_reason = overall["removed_rows_by_reason"]
    decontamination = bool(report.get("contamination", {}).get(
        "decontaminate_only", "kept_rows" in (report.get("largest_clusters") or [{}])[0]))
    if decontamination:
        # (a report of a version that had no decontaminate_only: its clusters record kept_rows)
        in_set_dedup = "the dedup stage" if in_config_words() else "a dedup without --decontaminate-only"
        # a decontamination drops the contaminated rows only; the in-set duplicates above stay
        facts.add_row(
            "removed rows, by reason",
            f"{by_reason['contaminated']} contaminated: {overall['removed']} removed; in-set duplicates are "
            f"kept: a decontamination removes only contaminated rows ({in_set_dedup} removes the others)",
        )
    else:
        copies = by_reason["exact_duplicate"] + by_reason["near_duplicate"]
        which = (f"the same {counted(duplicates, 'duplicate row')}" if copies == duplicates
                 else counted(copies, "duplicate row"))
        facts.add_row(
            "removed rows, by reason",
            # exact_duplicate is the same token multiset (reordered or re-commented code included), not the same text
            f"{which} by their relation to the row their cluster kept: {by_reason['exact_duplicate']} same tokens, "
            f"{by_reason['near_duplicate']} near copy; and {by_reason['exact_text_duplicate']} identical text (short), "
            f"{by_reason['contaminated']} contaminated: {overall['removed']} removed",
        )
    if overall["exact_text_clusters"]:
        facts.add_row("identical text below min tokens (copies / clusters)",
                      f"{overall['exact_text_duplicates']} / {overall['exact_text_clusters']}")
    shape = report["cluster_shape"]
    largest_chain = shape["largest_chained"]
    chained = f"{shape['chained_clusters']} of {overall['clusters'] + overall['exact_text_clusters']}"
    if largest_chain:
        bound = "" if largest_chain["diameter_exact"] else ">= "
        chained += (f"; largest: {largest_chain['size']} rows, diameter {bound}{largest_chain['diameter']}, "
                    f"kept {largest_chain['representative']}")
    if shape.get("bounded_clusters"):
        chained += (f"; {shape['bounded_clusters']} searched within the work bound "
                    f"({shape['hops_upper_bound_rows']} hop counts upper bounds)")
    facts.add_row("chained clusters (diameter > 1)", chained)
    if shape["undecided_clusters"]:
        facts.add_row("clusters too large to decide chaining", str(shape["undecided_clusters"]))
    skipped = report["skipped_rows"]
    if skipped["rows"]:
        facts.add_row(f"rows listed in {skipped['file']}",
                      f"{skipped['rows']} (" + ", ".join(f"{k}: {v}" for k, v in skipped["by_reason"].items() if v) + ")")
    if overall["failed"]:
        facts.add_row("unreadable rows (kept, not compared)", str(overall["failed"]))
    if overall["parse_errors"]:
        # skipped.csv gives one reason per row: only the compared ones are listed as compared_with_parse_error
        facts.add_row("parsed with syntax errors",
                      f"{overall['parse_errors']}: {overall['parse_errors_compared']} compared "
                      f"(skipped.csv compared_with_parse_error), {overall['parse_errors_too_short']} too short "
                      "(skipped.csv too_short, error in detail)")
    cross = report.get("cross_set")
    if cross:
        # identical short text (exact_text) is kept out of the Allamanis figures of report.json but never out
        # of these rows: a test file identical to a train file is the plainest contamination there is
        below = f"identical text below {report['parameters']['min_tokens']} tokens"
        for label, key in (("in-train duplicates (files)", "in_train_duplicates"),
                           ("in-test duplicates (files)", "in_test_duplicates"),
                           ("cross-set clusters", "cross_set_clusters"),
                           ("test files with a duplicate in train", "cross_set_test_files")):
            facts.add_row(label, _with_text(cross[key], cross.get(f"exact_text_{key}", 0), below))
        # of the compared test files (the share's denominator), not of every test file: say both
        test_figures = report["splits"][cross["test_split"]]
        share = (f"{_percent(cross['test_share_with_train_duplicate'])} ({cross['cross_set_test_files']} of the "
                 f"{counted(test_figures['analysed'], 'compared test file')}; {test_figures['files']:,} in all)")
        text_test = cross.get("exact_text_cross_set_test_files", 0)
        if text_test:
            copied = cross["cross_set_test_files"] + text_test
            share += (f"; counting the {text_test} of {below}: {_percent(_ratio(copied, test_figures['files']))} "
                      f"({copied} of all {counted(test_figures['files'], 'test file')})")
        facts.add_row("share of test with a train duplicate", share)
        # a decontamination removes no cross-set duplicate: the policy only picks the row cluster_shapes.csv records
        facts.add_row("cross-set policy", "none: a decontamination removes only contaminated rows" if decontamination
                      else cross["policy"])
    groups = report.get("groups")
    if groups:
        facts.add_row(f"groups ({groups['column']})", str(groups["groups"]))
        facts.add_row("groups with duplicates", str(groups["groups_with_duplicates"]))
        facts.add_row("within-group duplicate rows", str(groups["within_group_duplicate_rows"]))
        facts.add_row("cross-group duplicate pairs (exact)", f"{groups['cross_group_pairs']} ({groups['cross_group_exact_pairs']})")
        facts.add_row("rows with a cross-group duplicate", str(groups["cross_group_rows"]))
    contamination = report.get("contamination")
    if contamination:
        facts.add_row(f"reference {contamination['reference']}", f"{contamination['reference_rows']} rows")
        facts.add_row("contaminated rows (dropped)", str(contamination["contaminated_rows"]))
        if contamination["rows_not_checked_too_short"]:
            facts.add_row("rows not checked (too short)", str(contamination["rows_not_checked_too_short"]))
        facts.add_row("reference rows matched", str(contamination["reference_rows_matched"]))
        if contamination.get("length_note"):
            facts.add_row("[yellow]rows much shorter than the reference[/yellow]", escape(contamination["length_note"]))
    lsh = report["lsh"]
    facts.add_row(
        "LSH",
        f"num_perm={lsh['num_perm']} bands={lsh['bands']} rows={lsh['rows']} "
        f"(miss p at t0: {lsh['miss_probability_at_set_threshold']:.1e})",
    )
    work = report["work"]
    # the count the progress bar "check LSH bucket pairs" shows, and what became of those pairs
    facts.add_row("LSH bucket pairs checked",
                  f"{work['bucket_pairs']}: {work['verified']} verified exactly "
                  f"({counted(work['verified'] - work['rejected'], 'duplicate pair')}), "
                  f"{work['size_filtered']} size-filtered, {work['pairs_not_compared']} not compared "
                  "(already in one cluster, met in an earlier band, or two reference rows)")
    if report["failures"]:
        facts.add_row("unreadable rows", ", ".join(f"{r}: {n}" for r, n in report["failures"].items()))
    if report["skipped_files"]:
        facts.add_row("files skipped by the loader", str(len(report["skipped_files"])))
    renderables.append(facts)

    if report["largest_clusters"]:
        largest = Table(title="Largest clusters")
        for title in ("size", "diameter", "splits", "kept", "sample of members"):
            largest.add_column(title)
        for cluster in report["largest_clusters"]:
            largest.add_row(
                str(cluster["size"]) + (" (text)" if cluster["kind"] == "exact_text" else ""),
                ("" if cluster["diameter_exact"] else ">= ") + str(cluster["diameter"]),
                ", ".join(f"{k}: {v}" for k, v in cluster["splits"].items()),
                ("[dim]none: all contaminated[/dim]" if cluster["kept"] is None
                 # a decontamination keeps every row of the cluster that is not contaminated
                 else f"{cluster['kept_rows']} of {cluster['size']} (not contaminated)" if "kept_rows" in cluster
                 else str(cluster["kept"])),
                ", ".join(map(str, cluster["sample"])),
            )
        renderables.append(largest)
    return renderables
