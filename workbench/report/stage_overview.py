"""Which stages of a run ran, failed, were skipped or are missing, and why.

The stage names are those of ``workbench run`` (:mod:`workbench.run.stages`). Which files
a stage writes is read from ``run.json``'s plan, and a planned file that is missing is said in
the section's note; a folder without ``run.json`` (built by the single commands) is judged by
the files of :data:`workbench.run_layout.STAGE_OUTPUTS`.
"""

from __future__ import annotations

from typing import Any

from workbench.report.run_folder import RunFolder
from workbench.run_layout import STAGE_OUTPUTS, planned_outputs

#: report section -> the stages it shows
SECTION_STAGES: dict[str, tuple[str, ...]] = {
    "decontaminate": ("decontaminate",),
    "dedup": ("dedup",),
    "execute": ("execute",),
    "score": ("score", "score_all"),
    "correlate": ("correlate", "correlate_all"),
    "bias": ("bias",),
}
_FINE = ("done", "present")


def stage_overview(folder: RunFolder, run: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One entry per stage: the pipeline's record (``run.json``) when there is one, else what the
    files show.

    Args:
        folder: the run folder.
        run: the parsed ``run.json`` or ``None``.

    Returns:
        ``[{"name", "status", "seconds", "error", "detail", "command", "output", "output_exists",
        "outputs", "missing_outputs", "outputs_from", "source", "recorded_status"}]`` in pipeline order.
        ``status`` is the pipeline's (``done``, ``failed``, ``skipped``, ``pending``, ``running``,
        ``interrupted``; ``recorded_status``, ``None`` without a record), except that a stage recorded
        ``done`` whose outputs were deleted since is ``missing`` (its ``error`` says so); without a
        record, ``present`` (its outputs exist) or ``missing``;
        ``outputs`` are the files the stage writes (``outputs_from``: ``"run.json plan"`` or
        ``"layout"``), ``output`` the first of them, ``output_exists`` whether all exist and
        ``missing_outputs`` those that do not; ``source`` is ``"run.json"`` or ``"files"``. The
        report stage's own files are not judged (they are being written).
    """
    recorded: dict[str, dict[str, Any]] = {}
    if isinstance(run, dict) and isinstance(run.get("stages"), dict):
        recorded = {str(n): v for n, v in run["stages"].items() if isinstance(v, dict)}
    stages = [name for name in STAGE_OUTPUTS if name != "report"]
    names = list(dict.fromkeys([*recorded, *stages])) if recorded else stages
    # pipeline order, also for a stage an older run.json does not record (a stage added since)
    order = list(STAGE_OUTPUTS)
    names.sort(key=lambda name: order.index(name) if name in order else len(order))
    overview = []
    for name in names:
        outputs, outputs_from = planned_outputs(run, name) if name != "report" else ([], "layout")
        missing = [path for path in outputs if not folder.exists(path)]
        output = outputs[0] if outputs else None
        exists = bool(outputs) and not missing
        record = recorded.get(name)
        if record is None:
            status, source = ("present" if exists else "missing"), "files"
            error = None if exists else ("no run.json record" if not recorded else "not recorded in run.json") + \
                " and its output is missing"
        else:
            status, source, error = str(record.get("status", "pending")), "run.json", record.get("error")
            if status == "done" and missing:
                # recorded done, but its outputs were deleted since: what the folder holds is no done stage
                named = " (named in run.json's plan)" if outputs_from == "run.json plan" else ""
                status = "missing"
                error = f"run.json records it done, but its output {', '.join(missing)}{named} is missing"
        command = record.get("command") if record else None
        if command is None and record and isinstance(record.get("argv"), list):
            command = " ".join(map(str, record["argv"]))
        overview.append({
            "name": name, "status": status, "seconds": (record or {}).get("seconds"), "error": error,
            "detail": (record or {}).get("detail"), "command": command, "output": output,
            "output_exists": exists, "outputs": outputs, "missing_outputs": missing, "outputs_from": outputs_from,
            "source": source, "recorded_status": None if record is None else str(record.get("status", "pending")),
        })
    return overview


def section_notes(stages: list[dict[str, Any]]) -> dict[str, str]:
    """Per report section, a sentence saying which of its stages did not finish and why.

    Returns:
        section -> note; sections whose stages are all done (or present) have none. A stage
        marked done whose output is missing is noted too.
    """
    by_name = {s["name"]: s for s in stages}
    notes = {}
    for section, names in SECTION_STAGES.items():
        parts = []
        for name in names:
            stage = by_name.get(name)
            if stage is None:
                continue
            if stage["status"] in _FINE and (stage["output_exists"] or not stage["output"]):
                continue
            reason = stage.get("error") or stage.get("detail")
            if stage["status"] in _FINE:
                named = " (named in run.json's plan)" if stage.get("outputs_from") == "run.json plan" else ""
                missing = stage.get("missing_outputs") or [stage["output"]]
                reason = f"its output {', '.join(missing)}{named} is missing"
            elif stage["status"] == "running" and not reason:
                # run.json cannot tell a live run from one that was killed (SIGKILL, power loss)
                reason = "or was stopped without recording it (killed); rerun `workbench run` to resume it"
            parts.append(f"stage {name!r} is {stage['status']}" + (f": {reason}" if reason else ""))
        if parts:
            notes[section] = "; ".join(parts)
    return notes


def run_state(run: dict[str, Any] | None, stages: list[dict[str, Any]]) -> str:
    """One phrase for the page header: finished, in progress, failed or interrupted (and where)."""
    if run is None:
        return "no run.json (a folder built by the single commands, or a run that has not recorded itself yet)"
    failed = [s["name"] for s in stages if s["status"] in ("failed", "interrupted")]
    if failed:
        return f"{stages[[s['name'] for s in stages].index(failed[0])]['status']} at stage {failed[0]}"
    if run.get("finished"):
        return f"finished {run['finished']}"
    open_stages = [s["name"] for s in stages if s["status"] in ("pending", "running") and s["name"] != "report"]
    if open_stages:
        return (f"in progress or killed (not yet done: {', '.join(open_stages)}); "
                "rerun `workbench run` with the same config to resume")
    return "all stages done; the report is the last step"
