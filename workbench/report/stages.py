"""Which stages of a run ran, failed, were skipped or are missing, and why."""

from __future__ import annotations

from typing import Any

from workbench.report.run_folder import STAGE_OUTPUTS, RunFolder


def stage_overview(folder: RunFolder, run: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One entry per stage: the pipeline's record (``run.json``) when there is one, else what the
    files show.

    Args:
        folder: the run folder.
        run: the parsed ``run.json`` or ``None`` (a folder built by the single commands).

    Returns:
        ``[{"name", "status", "seconds", "error", "argv", "outputs", "source"}]`` where
        ``status`` is ``done``/``failed``/``skipped``/``pending`` (from ``run.json``),
        ``present`` (outputs found, no record) or ``missing``; ``outputs`` lists the expected
        files that exist; ``source`` is ``"run.json"`` or ``"files"``. Stages named in
        ``run.json`` but unknown to the report are listed too, after the known ones.
    """
    recorded = {}
    if isinstance(run, dict) and isinstance(run.get("stages"), dict):
        recorded = {str(name): value for name, value in run["stages"].items() if isinstance(value, dict)}
    overview = []
    for name, expected in STAGE_OUTPUTS.items():
        outputs = [path for path in expected if folder.exists(path)]
        overview.append(_entry(name, _record_for(name, recorded), outputs))
    known = set(STAGE_OUTPUTS)
    for name, record in recorded.items():
        if name not in known and not any(name.startswith(k) for k in known):
            overview.append(_entry(name, record, []))
    return overview


def _record_for(stage: str, recorded: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The run.json record of ``stage``; several sub-stages (``score_llm``, ``score_all``) are merged:
    the worst status wins and errors are joined."""
    matches = [record for name, record in recorded.items() if name == stage or name.startswith(stage + "_")
               or name.startswith(stage + "-") or name.startswith(stage + ":")]
    if not matches:
        return None
    order = ["failed", "pending", "running", "skipped", "done"]
    statuses = [str(m.get("status", "pending")) for m in matches]
    worst = min(statuses, key=lambda s: order.index(s) if s in order else 0)
    errors = [str(m["error"]) for m in matches if m.get("error")]
    seconds = [m.get("seconds") for m in matches if isinstance(m.get("seconds"), (int, float))]
    argv = [m.get("argv") for m in matches if m.get("argv")]
    return {
        "status": worst,
        "seconds": sum(seconds) if seconds else None,
        "error": "; ".join(errors) or None,
        "argv": argv[0] if len(argv) == 1 else argv or None,
    }


def _entry(name: str, record: dict[str, Any] | None, outputs: list[str]) -> dict[str, Any]:
    if record is not None:
        return {
            "name": name,
            "status": str(record.get("status", "pending")),
            "seconds": record.get("seconds"),
            "error": record.get("error"),
            "argv": record.get("argv"),
            "outputs": outputs,
            "source": "run.json",
        }
    return {
        "name": name,
        "status": "present" if outputs else "missing",
        "seconds": None,
        "error": None if outputs else "no run.json record and none of its output files exist",
        "argv": None,
        "outputs": outputs,
        "source": "files",
    }


def stage_note(stages: list[dict[str, Any]], name: str) -> str | None:
    """A sentence saying why a stage's section is empty, or ``None`` when it ran."""
    for stage in stages:
        if stage["name"] != name:
            continue
        if stage["status"] in ("done", "present") and stage["outputs"]:
            return None
        reason = f"stage {name!r} is {stage['status']}"
        if stage.get("error"):
            reason += f": {stage['error']}"
        elif not stage["outputs"]:
            reason += " (its output files are missing)"
        return reason
    return f"stage {name!r} is unknown"
