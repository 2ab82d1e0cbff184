"""Which stages of a run ran, failed, were skipped or are missing, and why.

The stage names are those of ``workbench run`` (:mod:`workbench.pipeline.stages`); a folder
without ``run.json`` (built by the single commands) is judged by its files.
"""

from __future__ import annotations

from typing import Any

from workbench.report.run_folder import RunFolder

#: stage -> the file that shows it ran (folders without run.json are judged by these)
STAGE_OUTPUTS: dict[str, str] = {
    "decontaminate": "decontaminate/report.json",
    "dedup": "dedup/report.json",
    "execute": "execute/results.jsonl",
    "score": "score/llm/scores.jsonl",
    "score_all": "score/all/scores.jsonl",
    "correlate": "correlate/subset.json",
    "correlate_all": "correlate/all.json",
}
#: report section -> the stages it shows
SECTION_STAGES: dict[str, tuple[str, ...]] = {
    "decontaminate": ("decontaminate",),
    "dedup": ("dedup",),
    "execute": ("execute",),
    "score": ("score", "score_all"),
    "correlate": ("correlate", "correlate_all"),
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
        "source"}]`` in pipeline order. ``status`` is the pipeline's (``done``, ``failed``,
        ``skipped``, ``pending``, ``running``, ``interrupted``) or, without a record, ``present``
        (its output exists) or ``missing``; ``source`` is ``"run.json"`` or ``"files"``.
    """
    recorded: dict[str, dict[str, Any]] = {}
    if isinstance(run, dict) and isinstance(run.get("stages"), dict):
        recorded = {str(n): v for n, v in run["stages"].items() if isinstance(v, dict)}
    names = list(dict.fromkeys([*recorded, *STAGE_OUTPUTS])) if recorded else list(STAGE_OUTPUTS)
    overview = []
    for name in names:
        output = STAGE_OUTPUTS.get(name)
        exists = bool(output) and folder.exists(output)
        record = recorded.get(name)
        if record is None:
            status, source = ("present" if exists else "missing"), "files"
            error = None if exists else ("no run.json record" if not recorded else "not recorded in run.json") + \
                " and its output is missing"
        else:
            status, source, error = str(record.get("status", "pending")), "run.json", record.get("error")
        command = record.get("command") if record else None
        if command is None and record and isinstance(record.get("argv"), list):
            command = " ".join(map(str, record["argv"]))
        overview.append({
            "name": name, "status": status, "seconds": (record or {}).get("seconds"), "error": error,
            "detail": (record or {}).get("detail"), "command": command, "output": output,
            "output_exists": exists, "source": source,
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
                reason = f"its output {stage['output']} is missing"
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
