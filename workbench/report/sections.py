"""The summary sections of the report: correlations, LLM accounting, duplication, execution.

Each function reads already-written stage outputs (nothing is recomputed except counts and
the execution agreement) and returns JSON-ready data.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from workbench.correlate.bootstrap import interval_contains_zero
from workbench.data.samples import sample_key
from workbench.execute.pass_at_k import DEFAULT_KS, pass_at_k
from workbench.execute.result_file import flaky_summary, memory_summary
from workbench.report.run_folder import RunFolder, dedup_id, sample_order
from workbench.run_layout import RUN_FILE, SCOPES, SCORES_FILE, RunLayout
#: stderr kept per sample in the report (the execute stage keeps its own tail)
STDERR_EXCERPT_CHARS = 1500


def latest_score_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the newest row of each (task, sample, method), as ``workbench score`` does when it
    resumes with ``--retry-failed`` (rows are appended, the last one wins)."""
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        latest[(*sample_key(row.get("task_id"), row.get("sample_id")), str(row.get("method")))] = row
    return list(latest.values())


def correlation_section(folder: RunFolder) -> dict[str, Any]:
    """The ``workbench correlate --json`` outputs, per scope.

    Returns:
        ``{"subset": dict | None, "all": dict | None}`` (the correlate report as written).
    """
    out = {}
    for scope, path in RunLayout.CORRELATE_JSON.items():
        report = folder.json_object(path)
        metrics = (report or {}).get("metrics")
        if report is not None and not (isinstance(metrics, dict) and all(isinstance(m, dict) for m in metrics.values())):
            folder.problems.append(f"{path}: no 'metrics' object of a workbench correlate report; left out")
            report = None
        out[scope] = report
    return out


def _mapping(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _records(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def scoring_section(folder: RunFolder) -> dict[str, Any]:
    """LLM and metric accounting per scope and method, summed over ``scores.jsonl`` rows.

    Returns:
        scope -> ``{"methods": {method: {"rows", "scored", "statuses", "llm_calls", "cache_hits",
        "prompt_tokens", "completion_tokens", "tokens", "cost_usd", "seconds", "llm_seconds",
        "model", "errors", "scale", "uses_llm"}}, "run": score/<scope>/run.json | None, "rows": [...latest rows...]}``
        or ``None`` when the scope's ``scores.jsonl`` is missing. ``scored`` counts rows with
        status ``ok``; ``errors`` holds up to three example error messages.
    """
    out: dict[str, Any] = {}
    for scope in SCOPES:
        rows = folder.jsonl(RunLayout.score_file(scope, SCORES_FILE))
        if rows is None:
            out[scope] = None
            continue
        rows = latest_score_rows(rows)
        methods: dict[str, dict[str, Any]] = {}
        for row in rows:
            method = str(row.get("method"))
            entry = methods.setdefault(method, {
                "rows": 0, "scored": 0, "statuses": Counter(), "llm_calls": 0, "cache_hits": 0,
                "prompt_tokens": 0, "completion_tokens": 0, "tokens": 0, "cost_usd": 0.0, "seconds": 0.0,
                "llm_seconds": 0.0, "model": None, "errors": [], "scale": None,
            })
            entry["rows"] += 1
            status = str(row.get("status"))
            entry["statuses"][status] += 1
            if status == "ok" and _number(row.get("score")) is not None:
                entry["scored"] += 1
            for counter in ("llm_calls", "cache_hits", "prompt_tokens", "completion_tokens", "tokens"):
                entry[counter] += int(_number(row.get(counter)) or 0)
            for amount in ("cost_usd", "seconds", "llm_seconds"):
                entry[amount] += _number(row.get(amount)) or 0.0
            entry["model"] = entry["model"] or row.get("model")
            if _number(row.get("scale_min")) is not None and _number(row.get("scale_max")) is not None:
                entry["scale"] = [_number(row["scale_min"]), _number(row["scale_max"])]
            if row.get("error") and len(entry["errors"]) < 3:
                entry["errors"].append(str(row["error"])[:300])
        for entry in methods.values():
            entry["statuses"] = dict(entry["statuses"].most_common())
            entry["uses_llm"] = bool(entry["model"]) or entry["llm_calls"] > 0 or entry["cache_hits"] > 0
        run = folder.json_object(RunLayout.score_file(scope, RUN_FILE))
        if run is not None and not isinstance(run.get("usage"), dict):
            run = {k: v for k, v in run.items() if k != "usage"}
        out[scope] = {"methods": methods, "run": run, "rows": rows}
    return out


def duplication_section(folder: RunFolder) -> dict[str, Any]:
    """In-set duplication (``dedup/``) and near-duplicates of the benchmark (``decontaminate/``).

    Returns:
        ``{"in_set": {...} | None, "against": {...} | None}``: ``in_set`` has the report's
        ``overall`` counts (duplication factor = rows in clusters beyond one kept per cluster,
        divided by analysed rows; Allamanis 2019, see :mod:`workbench.dedup.duplication_report`), the group
        summary, the largest clusters, ``cluster_shape`` (the report's chained-cluster counts and
        largest chained cluster, with ``clusters``: all clusters; ``None`` for a dedup that
        predates them) and ``removed_examples`` (:func:`removed_examples`); ``against`` has the
        ``contamination`` block and the rows of ``contamination.csv``.
    """
    in_set = folder.json_object(RunLayout.dedup_file("dedup", RunLayout.DEDUP_REPORT))
    against = folder.json_object(RunLayout.dedup_file("decontaminate", RunLayout.DEDUP_REPORT))
    section: dict[str, Any] = {"in_set": None, "against": None}
    if isinstance(in_set, dict):
        section["in_set"] = {
            "overall": _mapping(in_set.get("overall")),
            "groups": _mapping(in_set.get("groups")),
            "largest_clusters": _records(in_set.get("largest_clusters"))[:10],
            "parameters": _mapping(in_set.get("parameters")),
            "failures": _mapping(in_set.get("failures")),
            "cluster_shape": _cluster_shape(in_set),
            "removed_examples": removed_examples(folder.csv(RunLayout.dedup_file("dedup", RunLayout.DEDUP_REMOVED))),
        }
    if isinstance(against, dict):
        section["against"] = {
            "overall": _mapping(against.get("overall")),
            "contamination": _mapping(against.get("contamination")),
            "rows": (folder.csv(RunLayout.dedup_file("decontaminate", RunLayout.DEDUP_CONTAMINATION)) or [])[:200],
            "parameters": _mapping(against.get("parameters")),
        }
    return section


#: removed rows shown with their verified neighbour in the report
REMOVED_EXAMPLES = 10
#: the order the examples are picked in: the most telling first (a near copy says more than an identical one)
_REASON_ORDER = ("near_duplicate", "exact_duplicate", "exact_text_duplicate")


def removed_examples(rows: list[dict[str, str]] | None, limit: int = REMOVED_EXAMPLES) -> list[dict[str, str]] | None:
    """Example rows of ``removed.csv`` with the verified neighbour each is a copy of.

    Args:
        rows: ``removed.csv`` (``id, split, reason, duplicate_of, neighbour, neighbour_kind,
            set_jaccard, multiset_jaccard, hops_to_kept``; see
            :mod:`workbench.dedup.cluster_shape`), or ``None``.
        limit: the most rows returned.

    Returns:
        up to ``limit`` in-set removals (``contaminated`` rows are the decontaminate section's),
        near copies first, then identical ones, then identical short text, each group in file
        order, farthest from the kept row first (a chain shows); ``None`` when the file is
        missing or predates the ``neighbour`` column.

    Example:
        >>> removed_examples([{"id": "b", "reason": "exact_duplicate", "neighbour": "a", "hops_to_kept": "1"},
        ...                   {"id": "c", "reason": "near_duplicate", "neighbour": "b", "hops_to_kept": "2"}])[0]["id"]
        'c'
    """
    if not rows or "neighbour" not in rows[0]:
        return None

    def hops(row: dict[str, str]) -> int:
        value = row.get("hops_to_kept") or ""
        return int(value) if value.isdigit() else 0

    in_set = [row for row in rows if row.get("reason") in _REASON_ORDER]
    in_set.sort(key=lambda row: (_REASON_ORDER.index(row["reason"]), -hops(row)))  # stable: file order within
    return in_set[:limit]


def _cluster_shape(in_set: dict[str, Any]) -> dict[str, Any] | None:
    shape = _mapping(in_set.get("cluster_shape"))
    if shape is None:
        return None
    overall = _mapping(in_set.get("overall")) or {}
    clusters = [overall.get("clusters"), overall.get("exact_text_clusters")]
    return {
        **{key: shape.get(key) for key in ("chained_clusters", "undecided_clusters", "bounded_clusters",
                                            "hops_upper_bound_rows", "exact_diameter_limit")},
        "largest_chained": _mapping(shape.get("largest_chained")),
        "clusters": sum(c for c in clusters if isinstance(c, int)) if any(isinstance(c, int) for c in clusters) else None,
    }


def _zero_marked(value: Any) -> Any:
    """A bias interval ``{"value", "ci", ...}`` with ``not_distinguishable_from_0`` recomputed from
    its CI by correlate's rule (:func:`~workbench.correlate.bootstrap.interval_contains_zero`), so a
    ``bias/report.json`` written before the flag existed is marked too; anything else as it is."""
    value = _mapping(value)
    if value is None:
        return None
    ci = value.get("ci")
    spans = interval_contains_zero(*ci) if isinstance(ci, list) and len(ci) == 2 and not value.get("no_interval") else None
    return {**value, "not_distinguishable_from_0": spans}


#: how the run report names a setting in a tau-b difference
_SETTING_WORDS = {"deduplicated": "one per cluster", "all_rows": "all rows", "fully_biased": "fully biased",
                  "cross_set_biased": "cross-set biased", "unbiased_test": "unbiased test", "clean": "clean rows",
                  "contaminated": "contaminated rows", "clean_tasks": "clean tasks",
                  "contaminated_tasks": "contaminated tasks"}


def _tau_difference(difference: Any) -> dict[str, Any]:
    """One ``kendall_tau_b_differences`` entry of ``bias/report.json`` in the form of the report's
    intervals (``value``, ``ci``, ``not_distinguishable_from_0``), with ``label`` (``"all rows −
    one per cluster"``), ``p_value`` and ``paired``."""
    difference = dict(_mapping(difference))
    words = [_SETTING_WORDS.get(str(difference.get(k)), str(difference.get(k))) for k in ("a", "b")]
    return {**_zero_marked({**difference, "value": difference.get("difference")}), "label": " − ".join(words)}


def bias_section(folder: RunFolder) -> dict[str, Any] | None:
    """How duplicates and contamination move pass@1 and each metric: ``bias/report.json``
    (``workbench bias``; Allamanis 2019, Sec. 2 Eq. 2; GPT-3, Brown et al. 2020, App. C).

    Returns:
        ``None`` without the file; else ``{"label", "label_kind", "bootstrap", "join", "warnings", "notes", "rows"}``:
        one row per metric with, each as ``{"value", "ci", "n_rows", "n_units"}`` or ``None``,
        ``all_rows`` and ``deduplicated`` (one row per duplicate cluster; on a train/test corpus
        fully biased and unbiased test), ``cross_set_biased`` (train/test only), ``delta`` (Δ%), the
        Eq. 2 block ``eq2`` (d, f̄, β), ``clean`` / ``contaminated`` rows and ``clean_tasks`` /
        ``contaminated_tasks``, ``tau`` (Kendall tau-b with the label, by setting) and
        ``tau_differences`` (one setting's tau-b minus another's, with ``label``, ``ci``,
        ``p_value`` and ``paired``: whether both were resampled on the same units); each
        interval with ``not_distinguishable_from_0`` (its CI contains 0: marked ``≈0``); and
        ``full``: the whole JSON.
    """
    report = folder.json_object(RunLayout.BIAS_JSON)
    if not isinstance(report, dict):
        return None
    duplication = _mapping(report.get("duplication")) or {}
    contamination = _mapping(report.get("contamination")) or {}
    metrics = list(dict.fromkeys([*(_mapping(duplication.get("metrics")) or {}), *(_mapping(contamination.get("metrics")) or {})]))
    rows = []
    for name in metrics:
        dup = _mapping((_mapping(duplication.get("metrics")) or {}).get(name)) or {}
        con = _mapping((_mapping(contamination.get("metrics")) or {}).get(name)) or {}
        dup_settings, con_settings = _mapping(dup.get("settings")) or {}, _mapping(con.get("settings")) or {}
        tau = {**(_mapping(dup.get("kendall_tau_b_with_label")) or {}), **(_mapping(con.get("kendall_tau_b_with_label")) or {})}
        rows.append({
            "metric": name,
            "all_rows": _zero_marked(dup_settings.get("all_rows") or dup_settings.get("fully_biased") or con_settings.get("all_rows")),
            "deduplicated": _zero_marked(dup_settings.get("deduplicated") or dup_settings.get("unbiased_test")),
            # a train/test corpus: the setting Δ% (Allamanis 2019, Table 3) compares with unbiased test
            "cross_set_biased": _zero_marked(dup_settings.get("cross_set_biased")),
            "delta": _zero_marked(dup.get("delta_percent")), "eq2": dup.get("eq2"),
            "contamination_delta": _zero_marked(con.get("delta_percent")),
            **{setting: _zero_marked(con_settings.get(setting)) for setting in ("clean", "contaminated", "clean_tasks", "contaminated_tasks")},
            "tau_differences": [_tau_difference(d) for d in [*(dup.get("kendall_tau_b_differences") or []),
                                                             *(con.get("kendall_tau_b_differences") or [])]
                                if _mapping(d) is not None],
            "tau": {setting: _zero_marked(tau.get(setting)) for setting in
                    ("all_rows", "fully_biased", "deduplicated", "unbiased_test", "clean", "contaminated", "clean_tasks",
                     "contaminated_tasks") if tau.get(setting)},
        })
    return {"label": report.get("label"), "label_kind": report.get("label_kind"), "bootstrap": report.get("bootstrap"),
            "join": report.get("join"),
            "warnings": report.get("warnings") or [], "notes": report.get("notes") or [], "kind": duplication.get("kind"),
            "contaminated_ids": contamination.get("contaminated_ids"), "rows": rows, "full": report}


def cohen_kappa(both_pass: int, both_fail: int, first_only: int, second_only: int) -> float | None:
    """Cohen's kappa of two binary raters from their 2x2 table (Cohen 1960,
    "A coefficient of agreement for nominal scales", Educ. Psychol. Meas. 20(1), eq. 1):
    ``(p_o - p_e) / (1 - p_e)``.

    Args:
        both_pass / both_fail: agreements; first_only / second_only: one says pass, the other fail.

    Returns:
        kappa in [-1, 1], or ``None`` when undefined (no rows, or both raters constant and equal).
    """
    total = both_pass + both_fail + first_only + second_only
    if total == 0:
        return None
    observed = (both_pass + both_fail) / total
    first_pass = (both_pass + first_only) / total
    second_pass = (both_pass + second_only) / total
    expected = first_pass * second_pass + (1 - first_pass) * (1 - second_pass)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1 - expected)


def _binary(value: Any) -> int | None:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)) and value in (0, 1):
        return int(value)
    if isinstance(value, str) and value.strip() in ("0", "1"):
        return int(value.strip())
    return None


def _number_cell(value: Any) -> float | None:
    """A finite number cell (an int, a float, or text that reads as one), else ``None``."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def value_outside_unit_interval(data_rows: list[dict[str, Any]] | None, column: str) -> float | None:
    """The first number of ``column`` outside [0, 1] (a grade: no 0/1 outcome or pass ratio holds one), else ``None``.

    The one test of the report for a label column that no ``label_kind`` declares a grade: such a column is
    a grade everywhere (the execution section, the split of the scores by outcome, the sample views).

    Args:
        data_rows: the dataset rows, or ``None``.
        column: the label column.

    Returns:
        the value (e.g. ``4.0``), or ``None`` when every number of the column is in [0, 1] or there is none.
    """
    return next((value for value in (_number_cell(row.get(column)) for row in data_rows or [])
                 if value is not None and not 0 <= value <= 1), None)


def grade_by_outcome(results: list[dict[str, Any]], data_rows: list[dict[str, Any]], label_column: str, *,
                     declared: bool, example: float | None = None) -> dict[str, Any]:
    """What our execution and a shipped grade say together, where no pass/fail agreement exists: the mean
    grade of the samples that passed and of those that failed.

    Args:
        results: execution rows (``passed`` 0/1); data_rows: the dataset rows with the grade in ``label_column``.
        declared: the run declared the column a grade (``[data] label_kind = "graded"``); else ``example``, one
            of its values outside [0, 1], says why it was taken for one.

    Returns:
        ``{"label_column", "declared", "example", "matched" (samples with both a verdict and a grade),
        "by_outcome": {"passed" | "failed": {"n", "mean"}}}``; ``mean`` is ``None`` for an empty group.
    """
    grades = {sample_key(r.get("task_id"), r.get("sample_id")): _number_cell(r.get(label_column)) for r in data_rows}
    groups: dict[str, list[float]] = {"passed": [], "failed": []}
    for row in results:
        grade = grades.get(sample_key(row.get("task_id"), row.get("sample_id")))
        ours = _binary(row.get("passed"))
        if grade is not None and ours is not None:
            groups["passed" if ours == 1 else "failed"].append(grade)
    if example is not None and float(example).is_integer():
        example = int(example)
    return {
        "label_column": label_column, "declared": declared, "example": example,
        "matched": sum(len(values) for values in groups.values()),
        "by_outcome": {name: {"n": len(values), "mean": math.fsum(values) / len(values) if values else None}
                       for name, values in groups.items()},
    }


def _asked_ks(summary: Mapping[str, Any] | None) -> tuple[int, ...]:
    """The ks the execute stage reported pass@k for (its summary), else the default ones."""
    found = (summary or {}).get("pass_at_k")
    if isinstance(found, Mapping):
        ks = [int(k) for part in ("values", "omitted") for k in (found.get(part) or {}) if str(k).isdigit()]
        if ks:
            return tuple(sorted(ks))
    return DEFAULT_KS


#: samples listed per execution status (all are counted; the rest are in execute/results.jsonl)
MAX_LISTED_PER_STATUS = 100
#: characters of a result's ``detail`` kept per listed sample
DETAIL_CHARS = 160


def not_passed(results: list[dict[str, Any]], limit: int = MAX_LISTED_PER_STATUS) -> list[dict[str, Any]]:
    """The samples that did not pass, by status: which ones timed out, did not parse, raised.

    Args:
        results: the execution rows the report counts.
        limit: the most samples listed per status.

    Returns:
        one entry per status other than ``passed``: ``{"status", "count", "samples": [{"id"
        (``task:sample``), "task_id", "sample_id", "detail"}], "more"}`` (``more``: counted, not
        listed), samples in natural (task, sample) order; statuses by count, smallest first (a handful of timeouts
        says more than a thousand failed tests), ``failed`` (the tests ran and failed) last.

    Example:
        >>> [e["status"] for e in not_passed([{"task_id": "T", "sample_id": 0, "status": "failed"},
        ...                                   {"task_id": "T", "sample_id": 1, "status": "timeout"}])]
        ['timeout', 'failed']
    """
    by_status: dict[str, list[dict[str, Any]]] = {}
    for row in results:
        status = str(row.get("status"))
        if status != "passed":
            by_status.setdefault(status, []).append(row)
    order = sorted(by_status, key=lambda status: (status == "failed", len(by_status[status]), status))
    out = []
    for status in order:
        rows = sorted(by_status[status], key=lambda row: sample_order(row.get("task_id"), row.get("sample_id")))
        out.append({
            "status": status,
            "count": len(rows),
            "samples": [{"id": dedup_id(row.get("task_id"), row.get("sample_id")), "task_id": row.get("task_id"),
                         "sample_id": row.get("sample_id"), "detail": str(row.get("detail") or "")[:DETAIL_CHARS]}
                        for row in rows[:limit]],
            "more": max(0, len(rows) - limit),
        })
    return out


def _applied_memory_limit(summary: dict[str, Any] | None) -> int | None:
    """The address-space limit (bytes) the execute summary says its samples ran under, or ``None`` (an older or
    damaged summary: no samples are then called near the limit). The summary's own ``memory`` block holds the limit
    execute compared with (``None`` where the runner turns the limit off, as Java's does), so the report's near-limit
    samples are the summary's; an older summary without it gives ``--memory-mb`` as applied."""
    memory = (summary or {}).get("memory")
    if isinstance(memory, dict) and "limit_mib" in memory:
        limit_mib = memory["limit_mib"]
        valid = isinstance(limit_mib, (int, float)) and not isinstance(limit_mib, bool) and limit_mib > 0
        return round(limit_mib * (1 << 20)) if valid else None
    limits = (summary or {}).get("limits")
    item = limits.get("address_space_bytes") if isinstance(limits, dict) else None
    applied = item.get("applied") if isinstance(item, dict) else None
    return applied if isinstance(applied, int) and not isinstance(applied, bool) and applied > 0 else None


def execution_section(
    folder: RunFolder, results: list[dict[str, Any]] | None, data_rows: list[dict[str, Any]] | None,
    label_column: str = "passed", label_kind: str = "outcome",
) -> dict[str, Any] | None:
    """Pass rate, statuses, isolation and agreement of our execution with the shipped label.

    A shipped label that is a grade (``label_kind="graded"``, or a column holding a number outside [0, 1])
    has no pass/fail to agree with: ``agreement`` is then ``None`` and ``graded_label`` gives the mean
    grade of the samples our execution passed and of those it failed (:func:`grade_by_outcome`).

    Args:
        folder: the run folder (for ``execute/results.summary.json``, or an older ``execute/summary.json``).
        results: ``execute/results.jsonl`` rows, or ``None`` when missing.
        data_rows: the dataset rows (for the shipped label), or ``None``.
        label_column: the dataset's shipped label column.
        label_kind: what it holds, as the run declared it (``[data] label_kind``): ``"outcome"`` (0/1)
            or ``"graded"``.

    Returns:
        ``None`` without results; else ``{"rows", "passed", "pass_rate" (passed / rows), "pass_at_k"
        (:meth:`~workbench.execute.pass_at_k.PassAtKReport.as_dict`, the ks of the execute summary), "statuses",
        "isolation", "isolation_description", "memory", "flaky", "summary", "not_passed" (:func:`not_passed`), "agreement"}`` where
        ``flaky`` is :func:`~workbench.execute.result_file.flaky_summary` of the rows (``--repeat``), 
        ``memory`` is :func:`~workbench.execute.result_file.memory_summary` of the rows (peak resident MiB per sample,
        against the address-space limit the summary says was applied), ``agreement`` is ``None`` without a shipped
        pass/fail label, or ``{"matched", "agree", "rate", "kappa",
        "both_pass", "both_fail", "ours_only_pass", "shipped_only_pass", "examples"}``; ``graded_label`` is ``None``
        unless the shipped label is a grade (:func:`grade_by_outcome`).
    """
    if results is None:
        return None
    summary = folder.json_object(RunLayout.EXECUTE_SUMMARY)
    if summary is None:
        summary = folder.json_object(RunLayout.EXECUTE_SUMMARY_LEGACY)
    statuses = Counter(str(r.get("status")) for r in results)
    passed = sum(1 for r in results if _binary(r.get("passed")) == 1)
    isolation = Counter(str(r.get("isolation")) for r in results if r.get("isolation"))
    summary = summary if isinstance(summary, dict) else None
    section: dict[str, Any] = {
        "rows": len(results),
        "passed": passed,
        "pass_rate": passed / len(results) if results else None,
        "pass_at_k": pass_at_k(results, _asked_ks(summary)).as_dict(),
        "statuses": dict(statuses.most_common()),
        # the rows say which isolation each sample ran under; several levels mean a resumed run changed it
        "isolation": ", ".join(f"{level} ({count})" if len(isolation) > 1 else level for level, count in isolation.most_common())
        or None,
        "isolation_description": (summary or {}).get("isolation_description"),
        # from the rows, like the statuses: a resumed run's summary still covers every row of the file
        "memory": memory_summary(results, _applied_memory_limit(summary)),
        # from the rows too: samples run several times (--repeat) whose attempts' statuses differ
        "flaky": flaky_summary(results),
        "summary": summary,
        "not_passed": not_passed(results),
        "agreement": None,
        "graded_label": None,
    }
    if not data_rows or not any(label_column in row for row in data_rows):
        return section
    beyond = value_outside_unit_interval(data_rows, label_column)
    if label_kind == "graded" or beyond is not None:
        section["graded_label"] = grade_by_outcome(results, data_rows, label_column, declared=label_kind == "graded",
                                                   example=None if label_kind == "graded" else beyond)
        return section
    shipped = {sample_key(r.get("task_id"), r.get("sample_id")): _binary(r.get(label_column)) for r in data_rows}
    table = Counter()
    examples = []
    for row in results:
        theirs = shipped.get(sample_key(row.get("task_id"), row.get("sample_id")))
        ours = _binary(row.get("passed"))
        if theirs is None or ours is None:
            continue
        cell = {(1, 1): "both_pass", (0, 0): "both_fail", (1, 0): "ours_only_pass", (0, 1): "shipped_only_pass"}[(ours, theirs)]
        table[cell] += 1
        if ours != theirs and len(examples) < 25:
            examples.append({"task_id": row.get("task_id"), "sample_id": row.get("sample_id"), "ours": ours,
                             "shipped": theirs, "status": row.get("status"), "detail": row.get("detail")})
    matched = sum(table.values())
    agree = table["both_pass"] + table["both_fail"]
    section["agreement"] = {
        "label_column": label_column,
        "matched": matched,
        "agree": agree,
        "rate": agree / matched if matched else None,
        "kappa": cohen_kappa(table["both_pass"], table["both_fail"], table["ours_only_pass"], table["shipped_only_pass"]),
        "both_pass": table["both_pass"],
        "both_fail": table["both_fail"],
        "ours_only_pass": table["ours_only_pass"],
        "shipped_only_pass": table["shipped_only_pass"],
        "shipped_pass_rate": (table["both_pass"] + table["shipped_only_pass"]) / matched if matched else None,
        "examples": examples,
    }
    return section
