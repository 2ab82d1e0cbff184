"""The stages of ``workbench run`` as command lines of the single commands.

Each stage is one invocation of ``workbench dedup|execute|score|correlate`` that reads the
dataset or an earlier stage's files and writes into its own place in the run folder:

================  ===========  ===========================================================
stage             command      writes (under the run folder)
================  ===========  ===========================================================
decontaminate     dedup        ``decontaminate/``: rows near-duplicate to ``against`` (HumanEval)
dedup             dedup        ``dedup/``: in-set exact and near duplicates (report only)
execute           execute      ``execute/results.jsonl``
score             score        ``score/llm/``: every method on the selected subset (``limit``)
score_all         score        ``score/all/``: the methods without an LLM on every row
correlate         correlate    ``correlate/subset.json``: methods + shipped metrics, subset
correlate_all     correlate    ``correlate/all.json``: cheap + shipped metrics, every row
report            (library)    ``report.json``, ``report.html``
================  ===========  ===========================================================

Every path comes from :class:`workbench.run_layout.RunLayout`, the table the report reads too.
The pipeline only adds the input argument, the output paths and the columns of ``[data]``;
everything else is the stage's table in the config, so a stage can be rerun by hand with
the exact command line recorded in ``run.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.pipeline.config import PipelineConfig
from workbench.pipeline.options import to_argv
from workbench.run_layout import SCOPES, WIDE_SCORES_FILE, RunLayout

#: score options that choose the subset: they do not apply to ``score_all``
_SUBSET_KEYS = ("limit", "select", "stratify_column", "select_seed")


@dataclass
class StagePlan:
    """One stage, ready to run.

    Attributes:
        name: the stage (:data:`workbench.pipeline.config.STAGES`).
        command: the ``workbench`` sub-command, or ``None`` for a library step (the report).
        argv: its arguments (without ``--resume`` / ``--overwrite``, which the runner adds).
        outputs: files that exist when the stage has finished.
        after: stages whose outputs this one reads.
        skip_reason: set when the stage does not apply to this configuration.
        partial: files a resumable command appends to row by row (``execute``'s results,
            ``score``'s ``scores.jsonl``): when they exist, an unfinished stage has rows to keep,
            even if it was killed before writing its final ``outputs``.
    """

    name: str
    command: str | None
    argv: list[str] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    skip_reason: str | None = None
    partial: list[Path] = field(default_factory=list)

    def command_line(self) -> str:
        """The equivalent shell command (for ``run.json``, ``--dry-run`` and messages)."""
        import shlex

        if self.command is None:
            return f"(python) workbench.report.write_report({self.outputs[0].parent})"
        return shlex.join(["workbench", self.command, *self.argv])


def score_methods(config: PipelineConfig) -> tuple[list[str], list[str]]:
    """(every method, the methods without an LLM) of ``[score] method`` (default: dsa-cqe)."""
    from workbench.scoring.methods import METHODS

    methods = config.sections["score"].get("method", ["dsa-cqe"])
    methods = [methods] if isinstance(methods, str) else list(methods)
    cheap = [m for m in methods if m in METHODS and not METHODS[m].uses_llm]
    return methods, cheap


def shipped_metrics(config: PipelineConfig) -> list[str]:
    """``[correlate] metric``: columns of the dataset correlated next to the methods."""
    metrics = config.sections["correlate"].get("metric", [])
    return [metrics] if isinstance(metrics, str) else list(metrics)


def _id_column(config: PipelineConfig, columns: set[str]) -> str | None:
    if config.data["id_column"]:
        return config.data["id_column"]
    task, sample = config.data["task_column"], config.data["sample_column"]
    return f"{task},{sample}" if task in columns and sample in columns else None


def _dedup_argv(config: PipelineConfig, columns: set[str], section: dict[str, Any], output: Path) -> list[str]:
    data = config.data
    values = {
        "code_column": data["code_column"], "id_column": _id_column(config, columns), "language": data["language"],
        "split": [data["split"]] if data["split"] else None, "offline": config.offline or None,
        **section, "output": str(output),
    }
    return [data["source"], *to_argv("dedup", values)]


def _score_argv(config: PipelineConfig, columns: set[str], section: dict[str, Any], output: Path) -> list[str]:
    data = config.data
    carry = list(section.get("carry") or [])
    for column in [data["label_column"], *shipped_metrics(config)]:
        if column and column in columns and column not in carry:
            carry.append(column)
    values = {
        "task_column": data["task_column"], "sample_column": data["sample_column"],
        "generation_column": data["code_column"], "reference_column": data["reference_column"],
        "prompt_column": data["prompt_column"], "language": data["language"], "split": data["split"],
        **section, "carry": carry or None, "output": str(output),
    }
    return [data["source"], *to_argv("score", values)]


def _correlate_paths(layout: RunLayout, scope: str) -> dict[str, str]:
    return {"json_path": str(layout / RunLayout.CORRELATE_JSON[scope]),
            "plot_path": str(layout / RunLayout.CORRELATE_PLOT[scope])}


def plan_stages(config: PipelineConfig, columns: set[str]) -> list[StagePlan]:
    """Build every stage of ``config`` (enabled or not: a disabled one has a ``skip_reason``).

    Args:
        config: the validated configuration.
        columns: the dataset's column names (to decide the id column and what to carry).

    Returns:
        one :class:`StagePlan` per stage in :data:`~workbench.pipeline.config.STAGES` order.

    Raises:
        KeyError, ValueError: from :func:`workbench.pipeline.options.to_argv` (a config value
            that does not fit its option); the config checks make these rare.
    """
    layout = RunLayout(config.output)
    data = config.data
    methods, cheap = score_methods(config)
    shipped = shipped_metrics(config)
    plans: list[StagePlan] = []

    section = dict(config.sections["decontaminate"])
    plan = StagePlan("decontaminate", "dedup", outputs=layout.outputs("decontaminate"))
    if not section.get("against"):
        plan.skip_reason = "[decontaminate] against is not set"
    else:
        plan.argv = _dedup_argv(config, columns, section, layout / RunLayout.DEDUP_FOLDERS["decontaminate"])
    plans.append(plan)

    dedup_folder = layout / RunLayout.DEDUP_FOLDERS["dedup"]
    plans.append(StagePlan("dedup", "dedup", _dedup_argv(config, columns, dict(config.sections["dedup"]), dedup_folder),
                           layout.outputs("dedup")))

    values = {
        "task_column": data["task_column"],
        "sample_column": data["sample_column"] if data["sample_column"] in columns else None,
        "completion_column": data["code_column"], "language": data["language"],
        **config.sections["execute"], "output": str(layout / RunLayout.EXECUTE_RESULTS),
    }
    plans.append(StagePlan("execute", "execute", [data["source"], *to_argv("execute", values)],
                           layout.outputs("execute"), partial=layout.partial("execute")))

    score_dir = {scope: layout / RunLayout.SCORE_FOLDERS[scope] for scope in SCOPES}
    wide = {scope: str(layout / RunLayout.score_file(scope, WIDE_SCORES_FILE)) for scope in SCOPES}
    plan = StagePlan("score", "score", outputs=layout.outputs("score"), partial=layout.partial("score"))
    if len(cheap) == len(methods):
        plan.skip_reason = "no LLM method in [score] method (score_all scores every row)"
    else:
        plan.argv = _score_argv(config, columns, dict(config.sections["score"]), score_dir["subset"])
    plans.append(plan)

    plan = StagePlan("score_all", "score", outputs=layout.outputs("score_all"), partial=layout.partial("score_all"))
    if not cheap:
        plan.skip_reason = "no method without an LLM in [score] method"
    else:
        section = {k: v for k, v in config.sections["score"].items() if k not in _SUBSET_KEYS}
        section["method"] = cheap
        plan.argv = _score_argv(config, columns, section, score_dir["all"])
    plans.append(plan)

    enabled = set(config.stages)
    label_source: dict[str, Any] = {}
    after_execute: list[str] = []
    if "execute" in enabled:
        label_source["results"] = str(layout / RunLayout.EXECUTE_RESULTS)
        after_execute = ["execute"]
    elif data["label_column"]:
        label_source["label"] = data["label_column"]
    correlate = dict(config.sections["correlate"])
    correlate.pop("metric", None)

    plan = StagePlan("correlate", "correlate", outputs=layout.outputs("correlate"), after=[*after_execute, "score"])
    if plans[3].skip_reason or "score" not in enabled:
        plan.skip_reason = "the score stage does not run"
    else:
        values = {"metric": methods + [m for m in shipped if m not in methods], **label_source, **correlate,
                  **_correlate_paths(layout, "subset")}
        plan.argv = [wide["subset"], *to_argv("correlate", values)]
    plans.append(plan)

    plan = StagePlan("correlate_all", "correlate", outputs=layout.outputs("correlate_all"), after=list(after_execute))
    metrics = cheap + [m for m in shipped if m not in cheap]
    if not metrics:
        plan.skip_reason = "no metric for every row (no cheap method, no [correlate] metric)"
    else:
        values = {"metric": metrics, **label_source, **correlate,
                  **_correlate_paths(layout, "all")}
        if cheap and "score_all" in enabled:
            plan.after.append("score_all")
            plan.argv = [wide["all"], *to_argv("correlate", values)]
        else:
            # the shipped columns are read from the dataset itself
            values = {"task_column": data["task_column"], "sample_column": data["sample_column"],
                      "metric": shipped, **{k: v for k, v in values.items() if k != "metric"},
                      "offline": config.offline or None}
            plan.argv = [data["source"], *to_argv("correlate", values)] if shipped else []
            if not shipped:
                plan.skip_reason = "score_all does not run and there is no [correlate] metric"
    plans.append(plan)

    plans.append(StagePlan("report", None, outputs=layout.outputs("report"), after=[p.name for p in plans]))
    for plan in plans:
        if plan.skip_reason is None and plan.name not in enabled:
            plan.skip_reason = "not in [run] stages"
    return plans
