"""Collect everything the report shows from a run folder into one JSON-ready dict
(:func:`build_report_data`); the HTML is rendered from that dict alone."""

from __future__ import annotations

import datetime as _dt
import math
import os
from pathlib import Path
from typing import Any, Callable

from workbench.correlate.bootstrap import interval_contains_zero
from workbench.errors import WorkbenchError
from workbench.report.references import REFERENCE_CORRELATIONS, is_published_set, reference_marks, references_for
from workbench.data.samples import sample_key
from workbench.report.data_check import data_check, view_mark
from workbench.report.run_folder import RunFolder, load_dataset
from workbench.report.sample_views import sample_views
from workbench.report.sections import (
    correlation_section,
    bias_section,
    duplication_section,
    execution_section,
    scoring_section,
    value_outside_unit_interval,
)
from workbench.report.stage_overview import run_state, section_notes, stage_overview
from workbench.run_layout import SCOPES, WIDE_SCORES_FILE, RunLayout
from workbench.formatting import count

#: version of the report.json layout; bump on incompatible changes
REPORT_SCHEMA = "workbench-report/1"
#: coefficients in the headline (Spearman stays in the correlate JSON)
HEADLINE_COEFFICIENTS = ("kendall", "pearson")


def _round(value: Any, digits: int = 6) -> Any:
    if isinstance(value, float):
        return round(value, digits) if math.isfinite(value) else None
    return value


def spans_zero(ci: Any) -> bool | None:
    """Whether an interval ``[low, high]`` (a JSON list) contains 0, by the one rule of
    :func:`~workbench.correlate.bootstrap.interval_contains_zero` (the estimate is *not
    distinguishable from 0*); ``None`` when the interval is missing or undefined."""
    if not isinstance(ci, (list, tuple)) or len(ci) != 2:
        return None
    return interval_contains_zero(*ci)


def _levels_summary(result: dict[str, Any]) -> dict[str, Any]:
    """``{"pooled": {...}, "per_problem": {...}}`` with the headline coefficients, their CIs and
    ``not_distinguishable_from_0`` (recomputed from the CIs, so reports written before that
    flag existed get it too)."""
    summary: dict[str, Any] = {}
    for level in ("pooled", "per_problem"):
        block = result.get(level) or {}
        # why a coefficient has no interval (too few tasks or samples; reports before it have none)
        withheld = block.get("no_interval") if isinstance(block.get("no_interval"), dict) else {}
        summary[level] = {"not_distinguishable_from_0": {}, "no_interval": withheld}
        for coefficient in HEADLINE_COEFFICIENTS:
            summary[level][coefficient] = block.get(coefficient)
            summary[level][f"{coefficient}_ci"] = block.get(f"{coefficient}_ci")
            summary[level]["not_distinguishable_from_0"][coefficient] = spans_zero(block.get(f"{coefficient}_ci"))
    summary["per_problem"]["n_tasks"] = (result.get("per_problem") or {}).get("n_tasks")
    return summary


def _metric_summary(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """The headline part of one metric of a correlate report (see :class:`workbench.correlate.MetricResult`):
    n (samples, tasks), the coefficients with their CIs and zero marks, and the correlation with
    completion length (``None`` when the report has none)."""
    if not isinstance(result, dict):
        return None
    summary: dict[str, Any] = {"n_samples": result.get("n_samples"), "n_tasks": result.get("n_tasks")}
    summary.update(_levels_summary(result))
    summary["mean_by_outcome"] = result.get("mean_by_outcome")
    length = result.get("length")
    summary["length"] = None
    if isinstance(length, dict):
        summary["length"] = {"n_samples": length.get("n_samples"), "n_tasks": length.get("n_tasks"), **_levels_summary(length)}
    summary["not_distinguishable_from_0"] = [
        f"{level.replace('_', '-')} {'τ-b' if coefficient == 'kendall' else 'r'}"
        for level in ("pooled", "per_problem")
        for coefficient in HEADLINE_COEFFICIENTS
        if summary[level]["not_distinguishable_from_0"][coefficient]
    ]
    return summary


def _length_rows(correlations: dict[str, Any]) -> dict[str, Any]:
    """Per scope, the length analysis of the correlate report: ``{"description", "note",
    "with_execution"}`` (the length's own correlation with the label, summarised like a metric),
    or ``None`` for a report without one (written before lengths existed, or no scope)."""
    out: dict[str, Any] = {}
    for scope, report in correlations.items():
        length = (report or {}).get("length")
        if not isinstance(length, dict):
            out[scope] = None
            continue
        execution = length.get("with_execution")
        out[scope] = {
            "description": length.get("description"),
            "note": length.get("note"),
            "mean": length.get("mean"),
            "with_execution": None if not isinstance(execution, dict) else {
                "n_samples": execution.get("n_samples"), "n_tasks": execution.get("n_tasks"), **_levels_summary(execution)
            },
        }
    return out


def _headline(correlations: dict[str, Any], scoring: dict[str, Any], on_published_set: bool = False) -> list[dict[str, Any]]:
    """One entry per method: correlations per scope, accounting, reference values and its kind
    (``llm`` scored by an LLM method, ``combined`` a combined judge of ``[correlate] combine``,
    ``computed`` scored by us without an LLM, ``shipped`` a column of the dataset).

    ``references`` are the method's known values (the reference table); ``reference_marks``
    (scope -> marks) those drawn next to each estimate, only on the same rows, and
    ``reference_notes`` (scope -> ``None`` or why the published values are not drawn):
    :func:`~workbench.report.references.reference_marks`; ``on_published_set``: the run's data is
    the set the values were published on."""
    accounting = {}
    for scope in ("all", "subset"):  # the subset's accounting wins for methods in both
        for method, entry in ((scoring.get(scope) or {}).get("methods") or {}).items():
            accounting[method] = {**entry, "scope": scope}
    names: list[str] = []
    for scope in ("subset", "all"):
        names.extend(((correlations.get(scope) or {}).get("metrics") or {}).keys())
    names.extend(accounting)
    names = list(dict.fromkeys(names))
    kinds = {m: ("llm" if a.get("uses_llm") else "computed") for m, a in accounting.items()}
    for scope in ("subset", "all"):
        combinations = (correlations.get(scope) or {}).get("combinations")
        kinds.update({name: "combined" for name in (combinations if isinstance(combinations, dict) else {})})
    order = {"llm": 0, "combined": 1, "computed": 2, "shipped": 3}
    names.sort(key=lambda m: order[kinds.get(m, "shipped")])
    headline = []
    for method in names:
        entry = {
            "method": method,
            "kind": kinds.get(method, "shipped"),
            "subset": _metric_summary(((correlations.get("subset") or {}).get("metrics") or {}).get(method)),
            "all": _metric_summary(((correlations.get("all") or {}).get("metrics") or {}).get(method)),
            "accounting": {k: v for k, v in accounting.get(method, {}).items() if k != "errors"} or None,
            "errors": accounting.get(method, {}).get("errors", []),
            "references": [r.to_dict() for r in references_for(method)],
        }
        headline.append(entry)
    for scope in ("subset", "all"):
        summaries = {entry["method"]: entry[scope] for entry in headline}
        for entry in headline:
            marks, note = reference_marks(entry["method"], scope, entry[scope], summaries, on_published_set)
            entry.setdefault("reference_marks", {})[scope] = marks
            entry.setdefault("reference_notes", {})[scope] = note
    return headline


def _current_results(rows: list[dict[str, Any]], problems: list[str]) -> list[dict[str, Any]]:
    """The execution results the report counts: one row per (task, sample), the last one written;
    a row without a ``status`` (not one execute writes) is left out. Each is said in ``problems``
    (``correlate --results`` refuses such a file; the report shows what it can and why).

    Args:
        rows: the results file's rows, in file order; problems: the report's problem list (appended to).

    Returns:
        the rows kept, in the order of their last occurrence.
    """
    where = RunLayout.EXECUTE_RESULTS
    with_status = [row for row in rows if row.get("status") is not None]
    if len(with_status) < len(rows):
        without = len(rows) - len(with_status)
        problems.append(f"{where}: {count(without, 'row')} without a status (not written by execute) "
                        f"{'was' if without == 1 else 'were'} left out")
    current: dict[Any, dict[str, Any]] = {}
    for row in with_status:
        key = sample_key(row.get("task_id"), row.get("sample_id"))
        current.pop(key, None)  # re-inserted: the order of the last occurrence
        current[key] = row
    if len(current) < len(with_status):
        repeats = len(with_status) - len(current)
        problems.append(f"{where}: {count(repeats, 'row')} {'repeats' if repeats == 1 else 'repeat'} a (task, sample) "
                        "pair; the last row of each is counted")
    return list(current.values())


#: the correlate stages in run.json and the scope each correlates
_CORRELATE_STAGES = {"correlate": "subset", "correlate_all": "all"}


def _correlation_labels(run: dict[str, Any] | None) -> dict[str, str | None]:
    """What each finished correlate stage of ``run.json`` labelled the rows with: stage ->
    ``None`` for the execution results (``--results``), else the data's label column."""
    stages = (run or {}).get("stages")
    out: dict[str, str | None] = {}
    for name in _CORRELATE_STAGES:
        record = stages.get(name) if isinstance(stages, dict) else None
        options = record.get("options") if isinstance(record, dict) and record.get("status") == "done" else None
        if isinstance(options, dict):
            out[name] = None if options.get("results") else str(options.get("label") or "passed")
    return out


def shipped_label_kind(config: dict[str, Any] | None, label_column: str, correlations: dict[str, Any],
                       bias: dict[str, Any] | None) -> str:
    """What the dataset's shipped label column holds: ``"graded"`` where the run declared it a grade
    (``[data] label_kind``, or the ``label_kind`` of a ``[correlate]``/``[bias]`` table that reads that
    column, as :mod:`workbench.run.config` gives it to them) or a correlate or bias report read that column
    as a grade; else ``"outcome"`` (0/1 or a pass ratio).

    Args:
        config: ``run.json``'s ``config`` (the tables as the run read them), or ``None``.
        label_column: the column asked about: ``[data] label_column`` (the report's default ``passed`` without
            one), or a correlate stage's own shipped label (``[correlate] label``).
        correlations: scope -> correlate report or ``None``; bias: :func:`~workbench.report.sections.bias_section`.
    """
    tables = config if isinstance(config, dict) else {}
    data = tables.get("data") if isinstance(tables.get("data"), dict) else {}
    # [data] label_kind is the kind of [data] label_column, and a table without a label of its own reads that one
    data_column = data.get("label_column") or label_column
    declared = [data.get("label_kind")] if data_column == label_column else []
    for name in ("correlate", "bias"):
        table = tables.get(name) if isinstance(tables.get(name), dict) else {}
        if (table.get("label") or data_column) == label_column:
            declared.append(table.get("label_kind"))
    for report in correlations.values():
        counts = report.get("counts") if isinstance(report, dict) and isinstance(report.get("counts"), dict) else {}
        if report and report.get("label") == label_column:
            declared.append(counts.get("label_kind"))
    if isinstance(bias, dict) and bias.get("label") == label_column:
        declared.append(bias.get("label_kind"))
    return "graded" if "graded" in declared else "outcome"


def _labels(results: list[dict[str, Any]] | None, data_rows: list[dict[str, Any]] | None,
            label_column: str, run: dict[str, Any] | None = None,
            graded: Callable[[str], bool] = lambda column: False) -> tuple[dict, str]:
    """(task, sample) -> 0/1: our execution when it ran, else the dataset's label column; and
    where they came from, as the correlate stages read them (``run.json``): execution results
    in the folder that no correlate stage read (``[run] stages`` left out an execute stage that
    was out of date) are not the label of the correlations shown; their shipped column (``[correlate]
    label``) is then read instead of ``label_column``. A column that ``graded(column)`` says is a grade
    (:func:`shipped_label_kind`) gives no 0/1: its grades 0 and 1 are not fail and pass."""
    used = _correlation_labels(run)
    shipped = {name: column for name, column in used.items() if column is not None}
    ours = f"our execution results, {RunLayout.EXECUTE_RESULTS}"
    if results and shipped and len(shipped) == len(used):
        label_column = next(iter(shipped.values()))
        results = None  # no correlation read them
        note = "the correlate stages did not read the execution results"
    elif results and shipped:
        parts = [f"{ours} for {name}" for name in used if name not in shipped]
        parts += [f"the dataset's shipped {column!r} column for {name}" for name, column in shipped.items()]
        ours = "; ".join(parts)
        note = ""
    else:
        note = "as there are no execution results"
    if results:
        return ({sample_key(r.get("task_id"), r.get("sample_id")): r.get("passed") for r in results
                 if r.get("passed") in (0, 1, True, False)}, ours)
    labels = {}
    for row in [] if graded(label_column) else data_rows or []:
        value = row.get(label_column)
        if isinstance(value, str) and value.strip() in ("0", "1"):
            value = int(value)
        if value in (0, 1, True, False):
            labels[sample_key(row.get("task_id"), row.get("sample_id"))] = int(value)
    return labels, f"the dataset's shipped {label_column!r} column, {note}"


def label_words(correlations: dict[str, Any], bias: dict[str, Any] | None, label_source: str) -> dict[str, Any]:
    """What the report's correlations are with, worded for the label the correlate and bias stages used.

    An execution outcome (our execution's ``passed``, or a shipped 0/1 or pass-ratio column) is
    "execution"; a graded label (``label_kind = "graded"``: human grades 0-4, say) is named with its
    column, "the grade 'grade'", as it has no pass/fail reading.

    Args:
        correlations: :func:`~workbench.report.sections.correlation_section` (scope -> correlate report or ``None``).
        bias: :func:`~workbench.report.sections.bias_section`, or ``None``.
        label_source: where the label came from, as the headline says it.

    Returns:
        ``{"kind": "outcome" | "graded", "column": str | None, "noun": "execution" | "the grade 'grade'",
        "source": label_source}``.
    """
    kind, column = "outcome", None
    for report in correlations.values():
        if isinstance(report, dict):
            counts = report.get("counts") if isinstance(report.get("counts"), dict) else {}
            column = column or report.get("label")
            if counts.get("label_kind") == "graded":
                kind = "graded"
    if isinstance(bias, dict):
        column = column or bias.get("label")
        if bias.get("label_kind") == "graded":
            kind = "graded"
    noun = f"the grade {str(column)!r}" if kind == "graded" and column else "the grade" if kind == "graded" else "execution"
    return {"kind": kind, "column": column, "noun": noun, "source": label_source}


def _distributions(
    folder: RunFolder, headline: list[dict[str, Any]], labels: dict, data_rows: list[dict[str, Any]] | None
) -> dict[str, dict[str, dict[str, list[float]]]]:
    """Scores split by outcome, per method: LLM methods on the scored subset, the others on all rows.

    Returns:
        method -> ``{"scope": "subset"|"all", "scale": [min, max] | None, "passed": [scores],
        "failed": [scores]}``; scores in file order (the wide score table's rows, then data rows
        it lacks), so ``report.json`` is the same from run to run.
    """
    tables = {}
    for scope in SCOPES:
        rows = folder.jsonl(RunLayout.score_file(scope, WIDE_SCORES_FILE)) or []
        tables[scope] = {sample_key(r.get("task_id"), r.get("sample_id")): r for r in rows}
    data = {sample_key(r.get("task_id"), r.get("sample_id")): r for r in data_rows or []}
    out: dict[str, Any] = {}
    for entry in headline:
        method = entry["method"]
        scope = "subset" if entry["kind"] == "llm" or not (tables["all"] or data) else "all"
        # file order (score table first, then data rows it lacks): a set union would order
        # report.json's lists by string hashes, which differ from run to run
        keys = tables[scope].keys() if scope == "subset" else dict.fromkeys([*tables["all"], *data]).keys()
        split = {"scope": scope, "scale": (entry.get("accounting") or {}).get("scale"), "passed": [], "failed": []}
        for key in keys:
            value = (tables[scope].get(key) or {}).get(method)
            if value is None and scope == "all":
                value = (data.get(key) or {}).get(method)
            label = labels.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or label is None:
                continue
            split["passed" if int(label) == 1 else "failed"].append(round(float(value), 4))
        if split["passed"] or split["failed"]:
            out[method] = split
    return out


def _cost_per_sample(scoring: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Per LLM method, each scored sample's LLM calls, tokens, cost and seconds (subset scope)."""
    subset = scoring.get("subset") or {}
    llm_methods = {m for m, e in (subset.get("methods") or {}).items() if e.get("uses_llm")}
    out: dict[str, list[dict[str, Any]]] = {}
    for row in subset.get("rows") or []:
        method = str(row.get("method"))
        if method not in llm_methods:
            continue
        out.setdefault(method, []).append({
            "task_id": row.get("task_id"), "sample_id": row.get("sample_id"), "status": row.get("status"),
            "llm_calls": row.get("llm_calls"), "cache_hits": row.get("cache_hits"), "tokens": row.get("tokens"),
            "cost_usd": _round(row.get("cost_usd")), "seconds": _round(row.get("seconds"), 3),
            "llm_seconds": _round(row.get("llm_seconds"), 3),
        })
    return out


def _subset_keys(folder: RunFolder, scoring: dict[str, Any]) -> list[tuple[str, str]]:
    rows = folder.jsonl(RunLayout.SCORE_SUBSET)
    if rows is None:  # no subset file: every sample an LLM method scored
        rows = (scoring.get("subset") or {}).get("rows") or []
    return list(dict.fromkeys(sample_key(r.get("task_id"), r.get("sample_id")) for r in rows))


def build_report_data(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a finished or partial run folder and return the report's data (the report.json).

    Args:
        run_dir: the run folder (layout in :mod:`workbench.report.run_folder`).

    Returns:
        a JSON-ready dict: ``schema``, ``generated``, ``run_dir``, ``run`` (run.json without its
        stages, or ``None``), ``config``, ``state`` (finished / in progress / failed at ...),
        ``language``, ``dataset`` (source and columns), ``data_check`` (whether the data read now
        is the data the run judged, :func:`~workbench.report.data_check.data_check`), ``stages`` (see
        :func:`~workbench.report.stage_overview.stage_overview`), ``notes`` (section -> why it is empty
        or partial), ``counts``, ``headline`` (per
        method: n samples and tasks, Kendall tau-b and Pearson r with CIs, pooled and per problem,
        marked when the CI contains 0, and tau-b with completion length, on the subset and on all
        rows; accounting; reference values), ``length`` (per scope, the length column and its own
        correlation with the label), ``correlation`` (the full correlate JSONs, with the paired
        comparisons and combined judges),
        ``scoring`` (accounting per scope, without the raw rows), ``duplication``, ``bias`` (how duplicates
        and contamination move pass@1 and each metric, :func:`~workbench.report.sections.bias_section`), ``execution``,
        ``distributions``, ``cost_per_sample``, ``references``, ``samples`` (views of the scored
        subset, each with ``code_check``: ``None``, or how its code differs from what ran,
        :func:`~workbench.report.data_check.view_mark`) and ``problems`` (unreadable files or lines).

    Raises:
        WorkbenchError: ``run_dir`` is not a folder.
    """
    path = Path(run_dir)
    if not path.is_dir():
        raise WorkbenchError(f"run folder {str(path)!r} does not exist or is not a folder")
    folder = RunFolder(path)
    run = folder.json_object(RunLayout.MANIFEST)
    run = run if isinstance(run, dict) else None
    config = (run or {}).get("config") if isinstance((run or {}).get("config"), dict) else None
    stages = stage_overview(folder, run)
    dataset = load_dataset(folder, config)
    data_rows = dataset.rows
    results = folder.jsonl(RunLayout.EXECUTE_RESULTS)
    if results is not None:  # calibration progress rows are not samples
        results = _current_results([r for r in results if r.get("phase") != "calibrate"], folder.problems)
    correlations = correlation_section(folder)
    scoring = scoring_section(folder)
    headline = _headline(correlations, scoring, is_published_set(data_rows))
    bias = bias_section(folder)
    # a shipped grade is no pass/fail: neither the scores' split by outcome nor the agreement with execution reads it;
    # a grade is one the run declared, or a column holding a number outside [0, 1] (its 0 and 1 are grades too)
    declared_kind = shipped_label_kind(config, str(dataset.columns["label"]), correlations, bias)

    def graded(column: str) -> bool:
        return (shipped_label_kind(config, column, correlations, bias) == "graded"
                or value_outside_unit_interval(data_rows, column) is not None)

    shipped_kind = "graded" if graded(str(dataset.columns["label"])) else "outcome"
    # the column the split reads may be a correlate stage's own shipped label ([correlate] label): its kind counts
    labels, label_source = _labels(results, data_rows, dataset.columns["label"], run, graded=graded)
    subset_keys = _subset_keys(folder, scoring)
    views = sample_views(
        folder,
        subset_keys=subset_keys,
        data_rows=data_rows,
        columns=dataset.columns,
        score_rows=(scoring.get("subset") or {}).get("rows") or [],
        all_score_rows=(scoring.get("all") or {}).get("rows") or [],
        results=results,
    )
    execution = execution_section(folder, results, data_rows, dataset.columns["label"], declared_kind)
    checked, marks = data_check((execution or {}).get("summary"), run, dataset.source, data_rows, results,
                                path)
    for view in views:
        view["code_check"] = view_mark(checked, marks, view["dedup_id"])
    return {
        "schema": REPORT_SCHEMA,
        "generated": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "run_dir": str(path.resolve()),
        "run": None if run is None else {k: v for k, v in run.items() if k != "stages"},
        "config": config,
        "state": run_state(run, stages),
        "language": dataset.columns["language"],
        "dataset": {"source": dataset.source, "columns": dataset.columns, "label_kind": shipped_kind},
        "data_check": checked,
        "stages": stages,
        "notes": section_notes(stages),
        "counts": {
            "data_rows": None if data_rows is None else len(data_rows),
            "executed": None if results is None else len(results),
            "subset": len(subset_keys),
            "views": len(views),
            "label_source": label_source,
        },
        "headline": headline,
        "correlation": correlations,
        "correlation_warnings": {scope: list((c or {}).get("warnings") or []) for scope, c in correlations.items()},
        # expected outcomes of the run's settings (a method_limit, the data's own label): information
        "correlation_notes": {scope: list((c or {}).get("notes") or []) for scope, c in correlations.items()},
        "length": _length_rows(correlations),
        "scoring": {scope: (None if s is None else {"methods": s["methods"], "run": s["run"]})
                    for scope, s in scoring.items()},
        "duplication": duplication_section(folder),
        "bias": bias,
        "label": label_words(correlations, bias, label_source),
        "execution": execution,
        "distributions": _distributions(folder, headline, labels, data_rows),
        "cost_per_sample": _cost_per_sample(scoring),
        "references": [r.to_dict() for r in REFERENCE_CORRELATIONS],
        "samples": views,
        "problems": list(dict.fromkeys(folder.problems)),
    }
