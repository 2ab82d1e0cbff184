"""``workbench dedup``: exact and near-duplicate detection within and across dataset splits.

The method of Allamanis, "The Adverse Effects of Code Duplication in Machine Learning
Models of Code" (Onward! 2019): identifier/literal token bags per file, an exact
pre-pass, MinHash LSH candidates, exact set/multiset Jaccard verification, connected
components, one file kept per cluster.

Python API::

    from workbench.data import load_records
    from workbench.dedup import DedupConfig, collect_rows, find_duplicates, build_report, write_outputs

    loaded = load_records("corpus.jsonl", split_column="split")
    rows = collect_rows(loaded, code_column="content", id_column="id")
    result = find_duplicates(rows, DedupConfig(set_threshold=0.8, multiset_threshold=0.7))
    report = build_report(result)
    write_outputs(result, loaded, report, "out/")

or :func:`run_dedup` for all of it in one call.
"""

from workbench.dedup.clusters import UnionFind, choose_keeper, exact_groups, identical_multisets
from workbench.dedup.config import DedupConfig, DedupConfigError
from workbench.dedup.detection import DedupResult, DuplicatePair, Removal, find_duplicates
from workbench.dedup.duplication_report import build_report, render_report
from workbench.dedup.rows import DedupRows, collect_rows
from workbench.dedup.job import DedupRun, run_dedup
from workbench.dedup.signatures import LSHParameters, choose_lsh_parameters
from workbench.dedup.tokens import FileTokens, tokenize_files
from workbench.dedup.verification import PairScore, multiset_jaccard, set_jaccard, verify_pair
from workbench.dedup.writing import OUTPUT_FORMATS, write_outputs

__all__ = [
    "OUTPUT_FORMATS",
    "DedupConfig",
    "DedupConfigError",
    "DedupResult",
    "DedupRows",
    "DedupRun",
    "DuplicatePair",
    "FileTokens",
    "LSHParameters",
    "PairScore",
    "Removal",
    "UnionFind",
    "build_report",
    "choose_keeper",
    "choose_lsh_parameters",
    "collect_rows",
    "exact_groups",
    "identical_multisets",
    "find_duplicates",
    "multiset_jaccard",
    "render_report",
    "run_dedup",
    "set_jaccard",
    "tokenize_files",
    "verify_pair",
    "write_outputs",
]
