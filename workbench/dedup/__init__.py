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

from workbench.lazy_exports import lazy_exports

#: public name -> the module that defines it, imported on first use: the Spark executors import
#: ``workbench.dedup.tokens`` and must not pay for the data loader (``datasets``, ~1-5 s) each
_EXPORTS = {
    "UnionFind": "workbench.dedup.clusters",
    "choose_keeper": "workbench.dedup.clusters",
    "exact_groups": "workbench.dedup.clusters",
    "identical_multisets": "workbench.dedup.clusters",
    "DedupConfig": "workbench.dedup.config",
    "DedupConfigError": "workbench.dedup.config",
    "DedupResult": "workbench.dedup.detection",
    "DuplicatePair": "workbench.dedup.detection",
    "Removal": "workbench.dedup.detection",
    "find_duplicates": "workbench.dedup.detection",
    "build_report": "workbench.dedup.duplication_report",
    "render_report": "workbench.dedup.duplication_report",
    "DedupRows": "workbench.dedup.rows",
    "collect_rows": "workbench.dedup.rows",
    "DedupRun": "workbench.dedup.job",
    "run_dedup": "workbench.dedup.job",
    "LSHParameters": "workbench.dedup.signatures",
    "choose_lsh_parameters": "workbench.dedup.signatures",
    "FileTokens": "workbench.dedup.tokens",
    "tokenize_files": "workbench.dedup.tokens",
    "PairScore": "workbench.dedup.verification",
    "multiset_jaccard": "workbench.dedup.verification",
    "set_jaccard": "workbench.dedup.verification",
    "verify_pair": "workbench.dedup.verification",
    "OUTPUT_FORMATS": "workbench.dedup.writing",
    "write_outputs": "workbench.dedup.writing",
}


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

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
