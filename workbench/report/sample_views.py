"""Per-sample views of the LLM-scored subset: code, sub-code trees, LLM exchanges, Semantic
Storage retrievals and updates, scores, execution result and duplicate marks.

Only the scored subset gets a view (the full set may have thousands of rows); the other rows
are counted.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.data.samples import sample_key
from workbench.report.run_folder import RunFolder, dedup_id, sample_order
from workbench.run_layout import TRACES_FILE, RunLayout

#: longest text kept per prompt/response/code field; the rest is cut with a note (the full text
#: stays in the stage's own files)
MAX_TEXT_CHARS = 12_000
#: columns tried, in order, when the run's config does not name them
GENERATION_COLUMNS = ("completion_multipl_e", "generation", "completion", "code")
REFERENCE_COLUMNS = ("reference", "canonical_solution")
PROMPT_COLUMNS = ("prompt",)
#: shipped metric columns of the ICE-Score set shown next to our scores
SHIPPED_METRIC_PATTERN = re.compile(r"^(codebleu|bleu|chrf|rougel|meteor|ruby|codebertscore\w*|gpt35_\w+)$")


def clip(text: Any, limit: int = MAX_TEXT_CHARS) -> str:
    """Return ``text`` as a string of at most ``limit`` characters plus a note saying how much was cut."""
    text = "" if text is None else str(text)
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more characters cut in the report]"


def code_columns(columns: dict[str, str | None], available: set[str]) -> dict[str, str | None]:
    """Which data columns hold the prompt, the generation and the reference.

    Args:
        columns: the run's ``[data]`` columns (``code``, ``reference``, ``prompt``; see
            :class:`workbench.report.run_folder.Dataset`).
        available: the dataset's column names.

    Returns:
        ``{"prompt", "generation", "reference"}`` -> column name or ``None``: the configured
        column when the data has it, else the first of :data:`GENERATION_COLUMNS` /
        :data:`REFERENCE_COLUMNS` / :data:`PROMPT_COLUMNS` present.
    """
    chosen = {"generation": columns.get("code"), "reference": columns.get("reference"), "prompt": columns.get("prompt")}
    fallbacks = {"generation": GENERATION_COLUMNS, "reference": REFERENCE_COLUMNS, "prompt": PROMPT_COLUMNS}
    for role, names in fallbacks.items():
        if chosen[role] not in available:
            chosen[role] = next((c for c in names if c in available), None)
    return chosen


def subcode_tree(decomposition: dict[str, Any] | None) -> dict[str, Any] | None:
    """Nest a trace's flat sub-code list (``parent``/``children`` indices) into a tree.

    Returns:
        ``{"candidates", "folded", "dropped", "syntax_error", "roots": [node]}`` where a node is
        ``{"index", "kind", "lines", "defines", "uses", "folded", "children": [node]}``; ``None``
        without a decomposition.
    """
    if not isinstance(decomposition, dict):
        return None
    subcodes = [s for s in decomposition.get("subcodes") or [] if isinstance(s, dict)]
    by_index = {s.get("index"): s for s in subcodes}

    def node(subcode: dict[str, Any], seen: frozenset) -> dict[str, Any]:
        children = [by_index[c] for c in subcode.get("children") or [] if c in by_index and c not in seen]
        return {
            "index": subcode.get("index"),
            "kind": subcode.get("kind"),
            "lines": subcode.get("lines"),
            "defines": subcode.get("defines") or [],
            "uses": subcode.get("uses") or [],
            "folded": subcode.get("folded", 0),
            "children": [node(c, seen | {c.get("index")}) for c in children],
        }

    roots = [s for s in subcodes if s.get("parent") not in by_index]
    return {
        "candidates": decomposition.get("candidates"),
        "folded": decomposition.get("folded"),
        "dropped": decomposition.get("dropped"),
        "syntax_error": decomposition.get("syntax_error"),
        "count": len(subcodes),
        "roots": [node(r, frozenset({r.get("index")})) for r in roots],
    }


def _exchange(method: str, exchange: dict[str, Any]) -> dict[str, Any]:
    return {
        "method": method,
        "step": exchange.get("step"),
        "repeat": exchange.get("repeat", 0),
        "messages": [{"role": str(m.get("role")), "content": clip(m.get("content"))}
                     for m in exchange.get("messages") or [] if isinstance(m, dict)],
        "response": clip(exchange.get("response")) if exchange.get("response") is not None else None,
        "cached": bool(exchange.get("cached")),
        "error": exchange.get("error"),
        "prompt_tokens": exchange.get("prompt_tokens", 0),
        "completion_tokens": exchange.get("completion_tokens", 0),
        "seconds": exchange.get("seconds", 0.0),
    }


def _storage_entries(role: str, units: list[Any]) -> list[dict[str, Any]]:
    return [
        {
            "role": role,
            "index": unit.get("index"),
            "kind": unit.get("kind"),
            "lines": unit.get("lines"),
            "description": unit.get("description"),
            "error": unit.get("error"),
            "retrievals": [r for r in unit.get("retrievals") or [] if isinstance(r, dict)],
            "updates": [u for u in unit.get("updates") or [] if isinstance(u, dict)],
            "ignored_symbols": [str(name) for name in unit.get("ignored_symbols") or []],
        }
        for unit in units
        if isinstance(unit, dict)
    ]


def trace_view(traces: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Turn one sample's traces (method -> trace record) into the view's LLM parts.

    Returns:
        ``{"exchanges": [...], "storage": [...], "subcodes": {"generation", "reference"},
        "reference_shared": bool, "differences": [...]}``. The reference analysis is shown
        only in the sample that paid for it (``analysed_for_this_sample``); the others say so.
    """
    exchanges: list[dict[str, Any]] = []
    storage: list[dict[str, Any]] = []
    subcodes: dict[str, Any] = {"generation": None, "reference": None}
    reference_shared = False
    differences: list[Any] = []
    for method, record in traces.items():
        trace = record.get("trace") if isinstance(record.get("trace"), dict) else {}
        if "generation" in trace or "reference" in trace:  # DSA-CQE's analyses
            for role in ("reference", "generation"):
                part = trace.get(role)
                if not isinstance(part, dict):
                    continue
                subcodes[role] = subcode_tree(part.get("decomposition"))
                if role == "reference" and part.get("analysed_for_this_sample") is False:
                    reference_shared = True
                    continue
                exchanges.extend(_exchange(method, e) for e in part.get("exchanges") or [] if isinstance(e, dict))
                storage.extend(_storage_entries(role, part.get("units") or []))
            differences.extend(trace.get("differences") or [])
        for key in ("compare", "exchanges"):
            exchanges.extend(_exchange(method, e) for e in trace.get(key) or [] if isinstance(e, dict))
    return {"exchanges": exchanges, "storage": storage, "subcodes": subcodes,
            "reference_shared": reference_shared, "differences": [clip(d, 2000) for d in differences]}


def duplicate_marks(folder: RunFolder) -> dict[str, dict[str, Any]]:
    """Per dedup row id (``task:sample``): its in-set cluster and near-duplicates of the benchmark.

    Returns:
        id -> ``{"cluster": int, "cluster_size", "cluster_members": [ids], "duplicate_of": id,
        "benchmark": [{"reference_id", "set_jaccard", "multiset_jaccard"}]}`` (keys present only
        when they apply).
    """
    marks: dict[str, dict[str, Any]] = {}
    clusters = folder.json(RunLayout.dedup_file("dedup", RunLayout.DEDUP_CLUSTERS))
    if isinstance(clusters, list):
        for number, members in enumerate(clusters, 1):
            if not isinstance(members, list):
                continue
            for member in members:
                marks.setdefault(str(member), {}).update(
                    {"cluster": number, "cluster_size": len(members), "cluster_members": [str(m) for m in members[:20]]}
                )
    for row in folder.csv(RunLayout.dedup_file("dedup", RunLayout.DEDUP_REMOVED)) or []:
        if row.get("id"):
            marks.setdefault(row["id"], {})["duplicate_of"] = row.get("duplicate_of")
    for row in folder.csv(RunLayout.dedup_file("decontaminate", RunLayout.DEDUP_CONTAMINATION)) or []:
        if row.get("id"):
            marks.setdefault(row["id"], {}).setdefault("benchmark", []).append(
                {"reference_id": row.get("reference_id"), "set_jaccard": row.get("set_jaccard"),
                 "multiset_jaccard": row.get("multiset_jaccard")}
            )
    return marks


def sample_views(
    folder: RunFolder,
    *,
    subset_keys: list[tuple[str, str]],
    data_rows: list[dict[str, Any]] | None,
    columns: dict[str, str | None],
    score_rows: list[dict[str, Any]],
    all_score_rows: list[dict[str, Any]],
    results: list[dict[str, Any]] | None,
) -> list[dict[str, Any]]:
    """Build one view per subset sample, in natural (task, sample) order.

    Args:
        folder: the run folder (traces and dedup files are read from it).
        subset_keys: the (task, sample) keys to show.
        data_rows: the dataset rows (code and shipped columns), or ``None``.
        columns: the run's ``[data]`` columns (:class:`workbench.report.run_folder.Dataset`).
        score_rows / all_score_rows: latest ``scores.jsonl`` rows of the subset and all-rows scopes.
        results: execution rows, or ``None``.

    Returns:
        views: ``{"task_id", "sample_id", "dedup_id", "code": {"prompt", "generation",
        "reference", "columns"}, "scores": {method: {...}}, "shipped": {column: value},
        "shipped_passed", "execution": {...} | None, "duplicates": {...}, "subcodes", "exchanges",
        "storage", "reference_shared", "differences"}``.
    """
    data = {sample_key(r.get("task_id"), r.get("sample_id")): r for r in data_rows or []}
    label = columns.get("label") or "passed"
    columns = code_columns(columns, set().union(*(r.keys() for r in data_rows)) if data_rows else set())
    wanted = set(subset_keys)
    traces: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for record in folder.jsonl(RunLayout.score_file("subset", TRACES_FILE)) or []:
        key = sample_key(record.get("task_id"), record.get("sample_id"))
        if key in wanted:
            traces.setdefault(key, {})[str(record.get("method"))] = record  # newest wins
    scores: dict[tuple[str, str], dict[str, Any]] = {}
    for row in [*all_score_rows, *score_rows]:
        key = sample_key(row.get("task_id"), row.get("sample_id"))
        if key in wanted:
            scores.setdefault(key, {})[str(row.get("method"))] = {
                field: row.get(field) for field in ("score", "status", "error", "llm_calls", "cache_hits", "tokens",
                                                    "cost_usd", "seconds", "llm_seconds", "subcodes",
                                                    "reference_subcodes", "parse_failures", "scale_min", "scale_max")
            }
    executed = {sample_key(r.get("task_id"), r.get("sample_id")): r for r in results or []}
    marks = duplicate_marks(folder)
    views = []
    for key in sorted(subset_keys, key=lambda key: sample_order(*key)):
        row = data.get(key, {})
        result = executed.get(key)
        view = {
            "task_id": key[0],
            "sample_id": key[1],
            "dedup_id": dedup_id(*key),
            "in_data": key in data,
            "code": {
                "columns": columns,
                "prompt": clip(row.get(columns["prompt"])) if columns["prompt"] else "",
                "generation": clip(row.get(columns["generation"])) if columns["generation"] else "",
                "reference": clip(row.get(columns["reference"])) if columns["reference"] else "",
            },
            "scores": scores.get(key, {}),
            "shipped": {c: v for c, v in row.items() if SHIPPED_METRIC_PATTERN.match(c) and not isinstance(v, str)},
            "shipped_passed": row.get(label),
            "execution": None if result is None else {
                "status": result.get("status"), "passed": result.get("passed"), "duration_s": result.get("duration_s"),
                "timeout_s": result.get("timeout_s"), "exit_code": result.get("exit_code"),
                "detail": result.get("detail"), "stderr_tail": clip(result.get("stderr_tail"), 1500),
            },
            "duplicates": marks.get(dedup_id(*key), {}),
            **trace_view(traces.get(key, {})),
        }
        views.append(view)
    return views
