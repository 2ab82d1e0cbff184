"""The run folder of ``workbench run``: which stage writes which file, under which folder.

One table for the pipeline (:mod:`workbench.run.stages` builds every stage's paths from
it) and the report (:mod:`workbench.report` reads the files from it), so the two cannot
disagree. Paths are relative to the run folder, ``/``-separated::

    run.json                      the pipeline's record: config, plan, per-stage status
    data.jsonl                    the dataset rows (optional: else the config's [data] source)
    decontaminate/                dedup --against: report.json, contamination.csv, ...
    dedup/                        in-set dedup: report.json, clusters.json, pairs.csv, removed.csv
    execute/results.jsonl         one row per sample (execute/results.summary.json: isolation, limits)
    score/subset.jsonl            the stratified subset given to the LLM methods (when written)
    score/llm/                    the LLM methods on the subset: scores.jsonl, scores_wide.jsonl,
                                  traces.jsonl, run.json
    score/all/                    the methods without an LLM on every row (same files)
    correlate/subset.json, .png   workbench correlate on the subset
    correlate/all.json, .png      ... on every row
    bias/report.json, bias.png    workbench bias: duplication and contamination bias of pass@1 and the metrics
    report.json, report.html      the report

A run records its plan in ``run.json`` (``plan``: per stage, the files it writes,
:func:`workbench.run.runner.run_pipeline`); the report reads a stage's files from there and notes a
planned file that is missing. :data:`STAGE_OUTPUTS` is the fallback for a folder built by
the single commands (no ``run.json``).

Example::

    from workbench.run_layout import RunLayout
    layout = RunLayout("runs/humaneval")
    layout / RunLayout.EXECUTE_RESULTS          # PosixPath('runs/humaneval/execute/results.jsonl')
    RunLayout.score_file("subset", "scores_wide.jsonl")   # 'score/llm/scores_wide.jsonl'
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workbench.score.wide_table import RUN_FILE, SCORES_FILE, TRACES_FILE, WIDE_SCORES_FILE

#: the two scopes of the score and correlate stages: the LLM-scored subset and every row
SCOPES: tuple[str, ...] = ("subset", "all")


class RunLayout:
    """A run folder's paths.

    Class attributes are paths relative to the run folder (what the report reads through
    :class:`workbench.report.run_folder.RunFolder`); ``layout / relative`` gives the path under
    :attr:`root`.

    Args:
        root: the run folder.
    """

    MANIFEST = "run.json"
    DATA = "data.jsonl"
    REPORT_JSON = "report.json"
    REPORT_HTML = "report.html"
    #: the dedup stages' folders; the files in them are ``workbench dedup``'s outputs
    DEDUP_FOLDERS = {"decontaminate": "decontaminate", "dedup": "dedup"}
    #: names ``workbench dedup`` writes (:func:`workbench.dedup.writing.write_outputs`)
    DEDUP_REPORT, DEDUP_CLUSTERS, DEDUP_REMOVED, DEDUP_CONTAMINATION = (
        "report.json", "clusters.json", "removed.csv", "contamination.csv")
    EXECUTE_RESULTS = "execute/results.jsonl"
    EXECUTE_SUMMARY = "execute/results.summary.json"
    #: where run folders made before the summary file existed kept ``workbench execute --json``
    EXECUTE_SUMMARY_LEGACY = "execute/summary.json"
    SCORE_SUBSET = "score/subset.jsonl"
    #: scope -> the score stage's run folder
    SCORE_FOLDERS = {"subset": "score/llm", "all": "score/all"}
    #: scope -> ``workbench correlate --json`` / ``--plot`` output
    CORRELATE_JSON = {"subset": "correlate/subset.json", "all": "correlate/all.json"}
    CORRELATE_PLOT = {"subset": "correlate/subset.png", "all": "correlate/all.png"}
    #: ``workbench bias --json`` / ``--plot`` output
    BIAS_JSON, BIAS_PLOT = "bias/report.json", "bias/bias.png"
    #: what marks a folder as a run folder (the report refuses any other)
    MARKS = (MANIFEST, "decontaminate", "dedup", "execute", "score", "correlate")

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root)

    def __truediv__(self, relative: str) -> Path:
        return self.root / relative

    @classmethod
    def dedup_file(cls, stage: str, name: str) -> str:
        """``workbench dedup``'s file ``name`` of the ``dedup`` or ``decontaminate`` stage."""
        return f"{cls.DEDUP_FOLDERS[stage]}/{name}"

    @classmethod
    def score_file(cls, scope: str, name: str) -> str:
        """A ``workbench score`` run folder's file (``scores.jsonl``, ...) of ``scope``."""
        return f"{cls.SCORE_FOLDERS[scope]}/{name}"

    def outputs(self, stage: str) -> list[Path]:
        """The files that exist when ``stage`` has finished (:data:`STAGE_OUTPUTS`)."""
        return [self / relative for relative in STAGE_OUTPUTS[stage]]

    def partial(self, stage: str) -> list[Path]:
        """The row files a resumable stage appends to (:data:`STAGE_PARTIAL`; ``[]`` for others)."""
        return [self / relative for relative in STAGE_PARTIAL.get(stage, ())]

    def relative(self, paths: Iterable[Path]) -> list[str]:
        """``paths`` under :attr:`root` as ``/``-separated relative paths (for ``run.json``)."""
        return [path.relative_to(self.root).as_posix() for path in paths]


#: stage -> the files that exist when it has finished (its last write)
STAGE_OUTPUTS: dict[str, tuple[str, ...]] = {
    "decontaminate": (RunLayout.dedup_file("decontaminate", RunLayout.DEDUP_REPORT),),
    "dedup": (RunLayout.dedup_file("dedup", RunLayout.DEDUP_REPORT),),
    "execute": (RunLayout.EXECUTE_RESULTS,),
    "score": (RunLayout.score_file("subset", WIDE_SCORES_FILE),),
    "score_all": (RunLayout.score_file("all", WIDE_SCORES_FILE),),
    "correlate": (RunLayout.CORRELATE_JSON["subset"],),
    "correlate_all": (RunLayout.CORRELATE_JSON["all"],),
    "bias": (RunLayout.BIAS_JSON,),
    "report": (RunLayout.REPORT_JSON, RunLayout.REPORT_HTML),
}
#: stage -> files a resumable stage appends to row by row (kept when it is interrupted)
STAGE_PARTIAL: dict[str, tuple[str, ...]] = {
    "execute": (RunLayout.EXECUTE_RESULTS,),
    "score": (RunLayout.score_file("subset", SCORES_FILE),),
    "score_all": (RunLayout.score_file("all", SCORES_FILE),),
}

__all__ = [
    "RUN_FILE", "SCOPES", "SCORES_FILE", "STAGE_OUTPUTS", "STAGE_PARTIAL", "TRACES_FILE", "WIDE_SCORES_FILE",
    "RunLayout", "planned_outputs",
]


def planned_outputs(run: dict[str, Any] | None, stage: str) -> tuple[list[str], str]:
    """The files ``stage`` writes: from ``run.json``'s plan when it names them, else the layout.

    Args:
        run: the parsed ``run.json`` (or ``None``).
        stage: the stage name.

    Returns:
        ``(relative paths, source)`` with source ``"run.json plan"`` or ``"layout"``.
    """
    plan = run.get("plan") if isinstance(run, dict) else None
    entry = plan.get(stage) if isinstance(plan, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("outputs"), list):
        return [str(p) for p in entry["outputs"]], "run.json plan"
    return list(STAGE_OUTPUTS.get(stage, ())), "layout"
