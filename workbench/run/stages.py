"""The stages of ``workbench run``: each one job (dedup, execute, score, correlate) with its
config, its input and its place in the run folder.

Each stage calls one job's entry function (:func:`~workbench.dedup.run_dedup`,
:func:`~workbench.execute.job.run_execute`, :func:`~workbench.score.job.run_score`,
:func:`~workbench.correlate.run_correlate`) with a config built from its table and ``[data]``; it
reads the dataset or an earlier stage's files and writes into its own place in the run folder:

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
bias              bias         ``bias/report.json``: pass@1 and the metrics, all rows vs one per
                               cluster, clean vs contaminated (Allamanis 2019; GPT-3 App. C)
report            (library)    ``report.json``, ``report.html``
================  ===========  ===========================================================

Every path comes from :class:`workbench.run_layout.RunLayout`, the table the report reads too.
The pipeline only adds the input, the output paths and the columns of ``[data]``; everything
else is the stage's table in the config. Each stage also records the equivalent command line
(``run.json``), so it can be rerun by hand.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.data.samples import SAMPLE_COLUMN, TASK_COLUMN
from workbench.errors import DataError, WorkbenchError
from workbench.options import JobConfig, OptionError, command_line_args
from workbench.resume_guard import RUN_FOLDER, run_folder_relative
from workbench.option_words import config_words
from workbench.run.config import (COMMAND_CONFIGS, DATA_KEYS, LABEL_KIND_TABLES, MANAGED_KEYS, SHARED_KEYS, ConfigError,
                                  PipelineConfig)
from workbench.run_layout import SCOPES, WIDE_SCORES_FILE, RunLayout
from workbench.score.config import ScoreConfig
from workbench.formatting import count

#: the flags of a stage's output paths on its command line (they are not config fields)
_OUTPUT_FLAGS = {"output": "--output", "json_path": "--json", "plot_path": "--plot"}

#: score options that choose the subset: they do not apply to ``score_all``
_SUBSET_KEYS = ("limit", "select", "stratify_column", "select_seed", "method_limit")
#: ``[score]`` keys that only the LLM methods read: left out of ``score_all`` (methods without an LLM),
#: so that another model or temperature does not rerun chrF and the stages after it
_LLM_ONLY_KEYS = (
    "model", "api_base", "n_samples", "max_subcodes", "k_nearest", "temperature", "max_tokens", "seed", "timeout",
    "retries", "retry_wait", "max_cost", "structured", "cache_dir", "cache", "embedding_model", "embedding_api_base",
    "chroma_host", "chroma_port", "keep_storage", "prompts_dir", "score_mode", "final_step", "reference",
    "analyse_first", "analysis_max_tokens", "prefix_reuse",
)


#: the skip reason of a stage that ``[run] stages`` leaves out
NOT_IN_STAGES = "not in [run] stages"

#: options of a stage's job that cannot change its outputs, left out of the stage key: the rows
#: are the same whatever the parallelism (dedup's clusters, execute's verdicts, each sample's
#: scores: a ``local/`` model answers one call at a time), the caches only save time, ``offline``
#: only forbids the hub (a source it cannot read fails the stage instead), and the failure budgets
#: only decide the exit status of a run that did finish (an up-to-date stage is judged again by
#: the budget in force: :func:`workbench.run.runner.regate`). An LLM call's ``timeout``,
#: ``retries`` and ``retry_wait`` decide only whether a call fails (``llm_error``), never what a
#: successful call answers; changed, they make a rerun score such failed rows again
#: (:data:`CALL_OPTIONS`). Not here: what changes the rows (``cache = "off"`` asks again, ``max_cost`` stops scoring).
OUTPUT_NEUTRAL_OPTIONS: Mapping[str, frozenset[str]] = {
    "dedup": frozenset({"workers", "offline"}),
    # prompt_source only declares what prompt_column (in the key) decides: it changes no program
    "execute": frozenset({"workers", "reference_cache", "reference_cache_dir", "reuse_interpreters", "offline",
                          "max_failures", "sandbox_failure_limit", "prompt_source"}),
    "score": frozenset({"workers", "offline", "max_failures", "timeout", "retries", "retry_wait"}),
    "correlate": frozenset({"offline"}),
    "bias": frozenset({"offline"}),
}

#: the options that decide whether an LLM call fails (``llm_error``), not what it answers: left
#: out of the key (:data:`OUTPUT_NEUTRAL_OPTIONS`); when they changed since a stage finished with
#: failed rows, a rerun scores those rows again (the user changed them to get past the failures)
CALL_OPTIONS: Mapping[str, tuple[str, ...]] = {
    "score": ("timeout", "retries", "retry_wait"),
}

#: options of a resumable stage's job that change only copies of input columns, left out of the
#: stage key: when they changed since the stage finished, the stage resumes, and the job gives
#: the kept rows the new values without scoring again (``score``'s ``carry``: the shipped columns
#: of ``[correlate] metric`` that the later stages read from the score tables). The runner
#: compares them with the options recorded in ``run.json`` (:meth:`StagePlan.refreshed`).
REFRESHED_OPTIONS: Mapping[str, frozenset[str]] = {
    "score": frozenset({"carry"}),
}

#: options of a resumable stage's job that only choose which rows it has (``score``'s ``limit`` and
#: ``method_limit``), left out of the stage key: when they changed since the stage finished, the
#: stage resumes, and the job keeps the finished rows of the samples still selected, scores only
#: the new ones and sets the others aside (``scores.unselected.jsonl``, taken back by a later
#: resume that selects them again). Both selections are prefix-stable: ``first`` takes the rows
#: in file order, ``stratified`` cuts one seeded order drawn over every row
#: (:func:`~workbench.score.selection.stratified_subset`), so a larger limit only adds samples and a
#: smaller one keeps a prefix of them. What changes the order itself (``select``, ``select_seed``,
#: ``stratify_column``) stays in the key. The runner compares them with the options recorded in
#: ``run.json`` (:meth:`StagePlan.reselected`); the stages after the stage run again, as it resumed.
RESELECTED_OPTIONS: Mapping[str, frozenset[str]] = {
    "score": frozenset({"limit", "method_limit"}),
}

#: the keys of an earlier version (``run.json`` written before the run folder's paths counted
#: relative to it): :data:`OUTPUT_NEUTRAL_OPTIONS` as it was then, and every path as spelled
#: (:meth:`StagePlan.key_argv` with ``legacy_root``), so that such a run folder is still up to date
LEGACY_NEUTRAL_OPTIONS: Mapping[str, frozenset[str]] = {
    "dedup": frozenset({"workers"}),
    # prompt_source: an option those versions lacked, so their command lines never held it
    "execute": frozenset({"workers", "reference_cache", "reference_cache_dir", "reuse_interpreters", "offline",
                          "max_failures", "sandbox_failure_limit", "prompt_source"}),
}

#: how a stage's messages name the ``results`` option where the run gives the job the execute
#: stage's results (:attr:`StagePlan.set_by_run`): the user set no such option
EXECUTE_RESULTS_WORDS = "the execute stage's results"

#: how a dedup job's refusals name its output folder (``--output`` on the command line) where the run set it
#: to the stage's folder (:attr:`StagePlan.set_by_run`): ``the dedup stage's folder runs/x/dedup``
DEDUP_OUTPUT_WORDS = "the {stage} stage's folder"

#: how the bias and correlate stages' messages name their label where the run set it to the execute
#: stage's ``passed`` (:attr:`StagePlan.set_by_run`); one it took from ``[data] label_column`` is named so
EXECUTE_LABEL_WORDS = "the execute stage's label"

#: how a stage key names the run folder: a path in it counts relative to it, so the same folder
#: named otherwise (``runs/x`` or ``/home/me/runs/x``), moved or copied is the same run
KEY_RUN_FOLDER = RUN_FOLDER


@dataclass
class StagePlan:
    """One stage, ready to run.

    Attributes:
        name: the stage (:data:`workbench.run.config.STAGES`).
        command: the job (``dedup``, ``execute``, ``score``, ``correlate``), or ``None`` for the report.
        argv: the equivalent ``workbench <command>`` arguments (without ``--resume`` /
            ``--overwrite``, which the runner adds): recorded, shown, and hashed into the stage key.
        outputs: files that exist when the stage has finished.
        after: stages whose outputs this one reads.
        skip_reason: set when the stage does not apply to this configuration.
        partial: files a resumable command appends to row by row (``execute``'s results,
            ``score``'s ``scores.jsonl``): when they exist, an unfinished stage has rows to keep,
            even if it was killed before writing its final ``outputs``.
        table: the config table the stage's options come from (``score`` for ``score_all``).
        source: the job's input (the dataset, or an earlier stage's file).
        values: the job's config values (field -> value) from the table and ``[data]``.
        targets: the job's output paths (``output``, or ``json_path`` and ``plot_path``).
        second_source: the job's second input (``bias``: the metric table; ``source`` is the
            dedup output folder).
        available: a stage left out of ``[run] stages`` that finished and is up to date in the
            run folder (:func:`workbench.run.manifest.key_stages`): not run, but the stages
            after it read its outputs, as they would after ``--stage``.
        relative_argv: :attr:`argv` with the run folder named :data:`KEY_RUN_FOLDER` (its paths
            relative to it), for the stage key (:func:`plan_stages`; ``None``: :attr:`argv`).
        retry_failed: ``[run] retry_failed`` (a score stage): a rerun scores the finished stage's
            failed rows again (resuming it with ``retry_failed``), instead of calling it up to date.
        set_by_run: options of the job that the run set itself, not the config (the score
            stage's ``results`` when it stratifies on the execute stage), -> how its messages
            name them (``the execute stage's results``; :meth:`advice_key`).
        run_dir: the run folder (``[run] output``): the resumable jobs (execute, score) record
            the paths inside it relative to it, so the folder moved or copied resumes
            (:func:`workbench.resume_guard.recorded_path`), and every job's outputs name them so
            (:func:`workbench.resume_guard.shown_path`).
    """

    name: str
    command: str | None
    argv: list[str] = field(default_factory=list)
    outputs: list[Path] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    skip_reason: str | None = None
    partial: list[Path] = field(default_factory=list)
    table: str | None = None
    source: str | None = None
    values: dict[str, Any] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    second_source: str | None = None
    available: bool = False
    relative_argv: list[str] | None = None
    retry_failed: bool = False
    set_by_run: dict[str, str] = field(default_factory=dict)
    run_dir: Path | None = None

    @property
    def skip_detail(self) -> str | None:
        """:attr:`skip_reason` as the run's table and ``--dry-run`` show it: a stage left out of
        ``[run] stages`` whose finished outputs the later stages read says so."""
        if self.available and self.skip_reason == NOT_IN_STAGES:
            return f"{NOT_IN_STAGES} (finished and up to date: the stages after it read its outputs)"
        return self.skip_reason

    def key_argv(self, legacy_root: str | None = None, legacy_neutral: bool = True,
                 reselected_neutral: bool = True, inside_relative: bool = True) -> list[str]:
        """:attr:`argv` without the options that cannot change the stage's outputs
        (:data:`OUTPUT_NEUTRAL_OPTIONS`: the number of workers, caches, failure budgets), for the
        stage key: a rerun with another ``[execute] workers`` keeps the executed rows. The run
        folder's paths are relative to it (:attr:`relative_argv`): the folder named otherwise,
        moved or copied keeps its finished stages.

        Args:
            legacy_root: the arguments an earlier version hashed instead, for the run folder
                spelled so when it ran (its paths as ``legacy_root/...``,
                :data:`LEGACY_NEUTRAL_OPTIONS`), to recognise its ``run.json``.
            legacy_neutral: with ``legacy_root``, leave out :data:`LEGACY_NEUTRAL_OPTIONS` (the key
                as it was); ``False``: :data:`OUTPUT_NEUTRAL_OPTIONS`, so that an option left out
                of the key since (``--offline``) that the earlier run did not set matches too.
            reselected_neutral: ``False``: keep :data:`RESELECTED_OPTIONS` in the key, as the
                version before they were left out of it did (to recognise its ``run.json``).
            inside_relative: also name the job's input where it lies inside the run folder (a
                ``[data] source`` kept there, spelled as the config spells it) relative to it, as
                :data:`KEY_RUN_FOLDER` names the run's own paths; ``False``: as spelled, as the
                version before did (to recognise its ``run.json``).
        """
        command = self.command or ""
        if legacy_root is None:
            neutral = OUTPUT_NEUTRAL_OPTIONS.get(command, frozenset()) | REFRESHED_OPTIONS.get(command, frozenset())
            if reselected_neutral:
                neutral |= RESELECTED_OPTIONS.get(command, frozenset())
            argv = list(self.argv if self.relative_argv is None else self.relative_argv)
            if inside_relative and self.run_dir is not None and self.command is not None:
                inputs = 1 if self.second_source is None else 2  # the first arguments (_job)
                root = self.run_dir.resolve()
                argv = [_inside(arg, root) for arg in argv[:inputs]] + argv[inputs:]
        else:
            neutral = (LEGACY_NEUTRAL_OPTIONS if legacy_neutral else OUTPUT_NEUTRAL_OPTIONS).get(command, frozenset())
            argv = list(self.argv) if self.relative_argv is None else \
                [_spelled(arg, legacy_root) for arg in self.relative_argv]
        for name in neutral:
            if name not in self.values:
                continue
            group = command_line_args(COMMAND_CONFIGS[self.command], {name: self.values[name]})  # type: ignore[index]
            for start in range(len(argv) - len(group) + 1):
                if group and argv[start:start + len(group)] == group:
                    del argv[start:start + len(group)]
                    break
        return argv

    def refreshed(self, recorded: Any) -> list[str]:
        """The :data:`REFRESHED_OPTIONS` whose values differ from ``recorded`` (the options
        ``run.json`` recorded when the stage ran; anything else: none can be told apart)."""
        return sorted(self._differing(REFRESHED_OPTIONS, recorded))

    def reselected(self, recorded: Any) -> dict[str, tuple[Any, Any]]:
        """The :data:`RESELECTED_OPTIONS` whose values differ from ``recorded`` (as
        :meth:`refreshed`): name -> (recorded value, value now), by name."""
        return dict(sorted(self._differing(RESELECTED_OPTIONS, recorded).items()))

    def _differing(self, options: Mapping[str, frozenset[str]], recorded: Any) -> dict[str, tuple[Any, Any]]:
        names = options.get(self.command or "", frozenset())
        if not names or not isinstance(recorded, dict):
            return {}
        try:
            current = self.config().effective_options()
        except ConfigError:  # the same arguments as a stage that ran: not seen; the preflight says why
            return {}
        return {name: (recorded[name], current.get(name)) for name in names if name in recorded
                and json.dumps(recorded[name], default=str) != json.dumps(current.get(name), default=str)}

    def call_settings_changed(self, recorded: Any) -> list[str]:
        """The options that decide whether an LLM call fails (:data:`CALL_OPTIONS`) whose values
        differ from ``recorded`` (the options ``run.json`` recorded when the stage ran)."""
        names = CALL_OPTIONS.get(self.command or "", ())
        if not names or not isinstance(recorded, dict):
            return []
        try:
            current = self.config().effective_options()
        except ConfigError:
            return []
        return [name for name in names if name in recorded and recorded[name] != current.get(name)]

    def command_line(self) -> str:
        """The equivalent shell command (for ``run.json``, ``--dry-run`` and messages)."""
        import shlex

        if self.command is None:
            return f"(python) workbench.report.write_report({self.outputs[0].parent})"
        return shlex.join(["workbench", self.command, *self.argv])

    def config(self, **changes: Any) -> JobConfig:
        """The job's config: its values, with ``changes`` (``resume=True``) on top.

        Raises:
            ConfigError: the config refuses a value or a combination, naming the table key
                (or the ``[data]``/``[run]`` key it came from).
        """
        try:
            with self.words():  # a check's advice names the config keys (set [score] reference = true)
                return COMMAND_CONFIGS[self.command](**{**self.values, **changes})  # type: ignore[index]
        except OptionError as error:
            raise ConfigError(f"stage {self.name}: {error.render(self.config_key)}") from None

    def config_key(self, name: str) -> str:
        """Where the config sets field ``name`` of this stage: ``[score] limit``, ``[data] code_column``."""
        return SHARED_KEYS[self.command].get(name) or f"[{self.table}] {name}"  # type: ignore[index]

    def advice_key(self, name: str) -> str | None:
        """The config key a message of this stage's job names for option ``name``
        (:mod:`workbench.option_words`): the stage's key (:meth:`config_key`), a ``[data]`` key
        of the same name (``stop``, which correlate's code comparison names), the words of
        :attr:`set_by_run` for an option the run set itself here, or ``None`` for another option
        the run sets itself (``resume``) or that no key sets."""
        if name in self.set_by_run:
            return self.set_by_run[name]
        if name in MANAGED_KEYS.get(self.command or "", ()):
            return None
        if self.command in COMMAND_CONFIGS and name in COMMAND_CONFIGS[self.command].options():
            return self.config_key(name)
        return f"[data] {name}" if name in DATA_KEYS else None

    def change_args(self, changes: Mapping[str, Any]) -> list[str]:
        """The command-line arguments of ``changes`` (``{"resume": True}`` -> ``["--resume"]``)."""
        return command_line_args(COMMAND_CONFIGS[self.command], changes)  # type: ignore[index]

    def run(self, changes: Mapping[str, Any] | None = None, **hooks: Any) -> Any:
        """Run the stage's job with ``changes`` to its config; ``hooks`` go to the entry
        function (progress callbacks). Returns what the entry function returns.

        Raises:
            ConfigError: from :meth:`config`; WorkbenchError (and others) from the job.
        """
        config = self.config(**(changes or {}))
        with self.words():  # its advice names config keys, not flags the run does not take
            return _JOBS[self.command](self, config, hooks)  # type: ignore[index]

    def words(self) -> AbstractContextManager[None]:
        """The block within which the stage's messages name its options as the config sets them
        (:func:`workbench.option_words.config_words` with :meth:`advice_key`): its config's
        checks, its job, and what ``workbench run`` prints of its results (the retry advice)."""
        return config_words(self.advice_key)


def _inside(arg: str, root: Path) -> str:
    """A job's input in the stage key: an existing path inside the run folder ``root`` (absolute),
    spelled otherwise in the config (``[data] source = "runs/x/data.jsonl"``), named relative to it
    as :data:`KEY_RUN_FOLDER` names the run's own paths; any other input (a bundled name, a hub id,
    a file elsewhere) as it is."""
    if arg.startswith(("-", KEY_RUN_FOLDER)) or not os.path.exists(arg):
        return arg
    return run_folder_relative(Path(arg).resolve(), root) or arg


def _spelled(arg: str, root: str) -> str:
    """An argument of :attr:`StagePlan.relative_argv` with the run folder spelled ``root``, as
    the plan built on ``RunLayout(root)`` has it."""
    if arg == KEY_RUN_FOLDER:
        return str(Path(root))
    prefix = KEY_RUN_FOLDER + os.sep
    return str(Path(root) / arg[len(prefix):]) if arg.startswith(prefix) else arg


def _job(plan: StagePlan, source: str, ordered: dict[str, Any], second_source: str | None = None) -> None:
    """Give ``plan`` its input(s), config values, output paths and command line from ``ordered``
    (config fields and output names, in command-line order; ``None`` leaves a default)."""
    plan.source = source
    plan.second_source = second_source
    plan.values = {k: v for k, v in ordered.items() if k not in _OUTPUT_FLAGS and v is not None}
    plan.targets = {k: str(v) for k, v in ordered.items() if k in _OUTPUT_FLAGS and v is not None}
    sources = [source] if second_source is None else [source, second_source]
    plan.argv = [*sources, *command_line_args(COMMAND_CONFIGS[plan.command], ordered, _OUTPUT_FLAGS)]  # type: ignore[index]


def _run_dedup(plan: StagePlan, config: Any, hooks: dict[str, Any]) -> Any:
    from workbench.dedup import run_dedup

    return run_dedup(plan.source, config, output_dir=plan.targets["output"], run_dir=plan.run_dir, **hooks)


def _run_execute(plan: StagePlan, config: Any, hooks: dict[str, Any]) -> Any:
    from workbench.execute.job import run_execute

    summary = run_execute(plan.source, plan.targets["output"], config, run_dir=plan.run_dir, **hooks)
    if summary.sandbox_errors:
        # a stage recorded done is not run again: the samples without a row would stay unrun
        raise WorkbenchError(
            f"{count(summary.sandbox_errors, 'sample')} {'was' if summary.sandbox_errors == 1 else 'were'} not run "
            f"because the sandbox itself failed for {'it' if summary.sandbox_errors == 1 else 'them'} (no result row; "
            f"{count(summary.executed, 'row')} written). Rerun the same command to run "
            f"{'it' if summary.sandbox_errors == 1 else 'them'}."
        )
    return summary


def _run_score(plan: StagePlan, config: Any, hooks: dict[str, Any]) -> Any:
    from workbench.score.job import run_score

    return run_score(plan.source, config, plan.targets["output"], run_dir=plan.run_dir, **hooks)


def _run_correlate(plan: StagePlan, config: Any, hooks: dict[str, Any]) -> Any:
    from workbench.correlate import run_correlate

    return run_correlate(plan.source, config, json_path=plan.targets.get("json_path"),
                         plot_path=plan.targets.get("plot_path"), run_dir=plan.run_dir, **hooks)


def _run_bias(plan: StagePlan, config: Any, hooks: dict[str, Any]) -> Any:
    from workbench.bias import run_bias

    return run_bias(plan.source, plan.second_source, config, json_path=plan.targets.get("json_path"),
                    plot_path=plan.targets.get("plot_path"), run_dir=plan.run_dir, **hooks)


#: each job's entry call: (plan, its config, hooks) -> the job's result
_JOBS: dict[str, Callable[[StagePlan, Any, dict[str, Any]], Any]] = {
    "dedup": _run_dedup, "execute": _run_execute, "score": _run_score, "correlate": _run_correlate, "bias": _run_bias,
}


def score_methods(config: PipelineConfig) -> tuple[list[str], list[str]]:
    """(every method, the methods without an LLM) of ``[score] method`` (default: ScoreConfig's)."""
    from workbench.score.methods import METHODS

    methods = config.sections["score"].get("method", list(ScoreConfig.options()["method"].default))
    methods = [methods] if isinstance(methods, str) else list(methods)
    cheap = [m for m in methods if m in METHODS and not METHODS[m].uses_llm]
    return methods, cheap


def shipped_metrics(config: PipelineConfig) -> list[str]:
    """``[correlate] metric``: columns of the dataset correlated next to the methods."""
    metrics = config.sections["correlate"].get("metric", [])
    return [metrics] if isinstance(metrics, str) else list(metrics)


def _comparisons_for(correlate: dict[str, Any], metrics: list[str]) -> dict[str, Any]:
    """``[correlate] combine`` and ``baseline`` for a stage that correlates ``metrics``: only the
    combinations whose members are all there (an LLM method is not among the every-row metrics)
    and the baselines that are there. Declarations are checked by the preflight."""
    from workbench.correlate.combine import Combination

    out = dict(correlate)
    combine = out.pop("combine", None) or []
    baselines = out.pop("baseline", None) or []
    combine = [combine] if isinstance(combine, str) else combine
    baselines = [baselines] if isinstance(baselines, str) else baselines
    kept = []
    for text in combine:
        try:
            members = Combination.parse(text).members
        except DataError:  # the preflight reports it; the command would refuse it too
            members = ()
        if set(members) <= set(metrics):
            kept.append(text)
    out["combine"] = kept or None
    out["baseline"] = [b for b in baselines if b in metrics] or None
    return out


def _id_column(config: PipelineConfig, columns: set[str]) -> str | None:
    if config.data["id_column"]:
        return config.data["id_column"]
    task, sample = config.data["task_column"], config.data["sample_column"]
    if task not in columns:
        return None
    # no sample column: dedup and bias number each task's samples as execute and score do
    return f"{task},{sample}" if sample in columns else f"{task},{SAMPLE_COLUMN}" if sample == SAMPLE_COLUMN else None


def _dedup_job(plan: StagePlan, config: PipelineConfig, columns: set[str], section: dict[str, Any], output: Path) -> None:
    data = config.data
    values = {
        "code_column": data["code_column"], "id_column": _id_column(config, columns), "language": data["language"],
        "split": [data["split"]] if data["split"] else None, "offline": config.offline or None,
        **section, "output": str(output),
    }
    _job(plan, data["source"], values)


def _score_job(plan: StagePlan, config: PipelineConfig, columns: set[str], section: dict[str, Any], output: Path) -> None:
    data = config.data
    carry = list(section.get("carry") or [])
    # the generated code travels to the wide table too: correlate measures its length (verbosity bias);
    # so do a length column and bias metrics named on purpose, which the later stages read from there
    also_read = [config.sections["correlate"].get("length_column"), *(config.sections["bias"].get("metric") or [])]
    # a [data] id_column travels too: the bias stage joins this table to the dedup's ids built from it
    id_columns = [c.strip() for c in (data["id_column"] or "").split(",") if c.strip()]
    for column in [data["label_column"], *shipped_metrics(config), data["code_column"], *also_read, *id_columns]:
        if column and column in columns and column not in carry:
            carry.append(column)
    # not the job's option: the runner passes it with resume, where there are failed rows to retry
    plan.retry_failed = config.retry_failed
    values = {
        "task_column": data["task_column"], "sample_column": data["sample_column"],
        "generation_column": data["code_column"], "reference_column": data["reference_column"],
        # [score] no_prompt (whole programs) leaves the shared [data] prompt_column to the other stages:
        # the job refuses both at once, and the preset sets the column
        "prompt_column": None if section.get("no_prompt") else data["prompt_column"],
        "language": data["language"], "split": data["split"],
        "stop": data["stop"], "offline": config.offline or None, **section, "carry": carry or None,
        "output": str(output),
    }
    _job(plan, data["source"], values)


def stratifies_on_execution(config: PipelineConfig, columns: set[str], available: Iterable[str] = ()) -> bool:
    """Whether the score stage's ``--select stratified`` reads the outcomes from the run's own
    execute stage (``workbench score --results``): the data has no stratify column, the stratify
    column is execute's ``passed``, and the execute stage runs or its results are there.

    Args:
        config: the validated configuration.
        columns: the dataset's column names.
        available: stages left out of ``[run] stages`` whose finished outputs are read
            (:func:`plan_stages`).
    """
    defaults = {name: item.default for name, item in ScoreConfig.options().items()}
    section = {**defaults, **config.sections["score"]}
    return (section["select"] == "stratified" and section["stratify_column"] not in columns
            and section["stratify_column"] == "passed" and not section.get("results")
            and ("execute" in config.stages or "execute" in available))


def _correlate_paths(layout: RunLayout, scope: str) -> dict[str, str]:
    return {"json_path": str(layout / RunLayout.CORRELATE_JSON[scope]),
            "plot_path": str(layout / RunLayout.CORRELATE_PLOT[scope])}


def plan_stages(config: PipelineConfig, columns: set[str], available: Iterable[str] = ()) -> list[StagePlan]:
    """Build every stage of ``config`` (:func:`_plan_stages`), each with its arguments for the
    stage key: the same plan with the run folder named :data:`KEY_RUN_FOLDER`
    (:attr:`StagePlan.relative_argv`)."""
    plans = _plan_stages(config, columns, available, RunLayout(config.output))
    for plan, twin in zip(plans, _plan_stages(config, columns, available, RunLayout(KEY_RUN_FOLDER))):
        plan.relative_argv = twin.argv
        plan.run_dir = config.output
    return plans


def _plan_stages(config: PipelineConfig, columns: set[str], available: Iterable[str],
                 layout: RunLayout) -> list[StagePlan]:
    """Build every stage of ``config`` (enabled or not: a disabled one has a ``skip_reason``).

    A stage reads an earlier stage's outputs when that stage runs (``[run] stages``) or is in
    ``available``: left out of ``[run] stages`` but finished and up to date in the run folder
    (:func:`workbench.run.manifest.key_stages`), so ``stages = ["correlate_all", "report"]``
    on a finished run correlates the scored table with the execution results, as ``--stage
    correlate_all`` does, not the dataset's shipped label.

    Args:
        config: the validated configuration.
        columns: the dataset's column names (to decide the id column and what to carry).
        available: stages left out of ``[run] stages`` whose finished outputs may be read.
        layout: the run folder (``config.output``).

    Returns:
        one :class:`StagePlan` per stage in :data:`~workbench.run.config.STAGES` order.

    Raises:
        KeyError, ValueError: from :func:`workbench.options.command_line_args` (a config value
            that does not fit its option); the config checks make these rare.
    """
    data = config.data
    methods, cheap = score_methods(config)
    shipped = shipped_metrics(config)
    plans: list[StagePlan] = []

    section = dict(config.sections["decontaminate"])
    plan = StagePlan("decontaminate", "dedup", outputs=layout.outputs("decontaminate"), table="decontaminate")
    if not section.get("against"):
        plan.skip_reason = "[decontaminate] against is not set"
    else:
        # the stage's output is the decontaminated data: only the rows that copy a reference row are dropped
        # (the dedup stage removes the in-set duplicates)
        section["decontaminate_only"] = True
        plan.set_by_run["decontaminate_only"] = "the decontaminate stage (it removes only contaminated rows)"
        plan.set_by_run["output"] = DEDUP_OUTPUT_WORDS.format(stage=plan.name)
        _dedup_job(plan, config, columns, section, layout / RunLayout.DEDUP_FOLDERS["decontaminate"])
    plans.append(plan)

    plan = StagePlan("dedup", "dedup", outputs=layout.outputs("dedup"), table="dedup")
    plan.set_by_run["output"] = DEDUP_OUTPUT_WORDS.format(stage=plan.name)
    _dedup_job(plan, config, columns, dict(config.sections["dedup"]), layout / RunLayout.DEDUP_FOLDERS["dedup"])
    plans.append(plan)

    values = {
        "task_column": data["task_column"],
        "sample_column": data["sample_column"] if data["sample_column"] in columns else None,
        "completion_column": data["code_column"], "language": data["language"], "split": data["split"],
        "stop": data["stop"], "offline": config.offline or None, **config.sections["execute"],
        "output": str(layout / RunLayout.EXECUTE_RESULTS),
    }
    plan = StagePlan("execute", "execute", outputs=layout.outputs("execute"), partial=layout.partial("execute"),
                     table="execute")
    _job(plan, data["source"], values)
    plans.append(plan)

    score_dir = {scope: layout / RunLayout.SCORE_FOLDERS[scope] for scope in SCOPES}
    wide = {scope: str(layout / RunLayout.score_file(scope, WIDE_SCORES_FILE)) for scope in SCOPES}
    plan = StagePlan("score", "score", outputs=layout.outputs("score"), partial=layout.partial("score"), table="score")
    if len(cheap) == len(methods):
        plan.skip_reason = "no LLM method in [score] method (score_all scores every row)"
    else:
        section = dict(config.sections["score"])
        if stratifies_on_execution(config, columns, available):  # one passing and one failing sample per task, from execute
            section["results"] = str(layout / RunLayout.EXECUTE_RESULTS)
            plan.set_by_run["results"] = EXECUTE_RESULTS_WORDS
            plan.after = ["execute"]
        _score_job(plan, config, columns, section, score_dir["subset"])
    plans.append(plan)

    plan = StagePlan("score_all", "score", outputs=layout.outputs("score_all"), partial=layout.partial("score_all"),
                     table="score")
    if not cheap:
        plan.skip_reason = "no method without an LLM in [score] method"
    else:
        section = {k: v for k, v in config.sections["score"].items() if k not in (*_SUBSET_KEYS, *_LLM_ONLY_KEYS)}
        section["method"] = cheap
        _score_job(plan, config, columns, section, score_dir["all"])
    plans.append(plan)

    # the stages whose outputs the later ones read: those that run, and those finished before
    enabled = set(config.stages) | set(available)
    label_source: dict[str, Any] = {}
    after_execute: list[str] = []
    if "execute" in enabled:
        label_source["results"] = str(layout / RunLayout.EXECUTE_RESULTS)
        after_execute = ["execute"]
    elif data["label_column"]:
        label_source["label"] = data["label_column"]
    # each metric is also correlated with the length of the generated code, unless [correlate] says otherwise
    correlate = {"length_column": data["code_column"], **config.sections["correlate"]}
    correlate.pop("metric", None)
    # the label's messages name who set it: [correlate] label only where the config sets that key
    label_words = {} if "label" in correlate else (
        {"label": EXECUTE_LABEL_WORDS} if "results" in label_source
        else {"label": "[data] label_column"} if "label" in label_source else {})
    if "label" in label_source and correlate.get("label", data["label_column"]) == data["label_column"]:
        label_words.update(_data_label_kind(config, "correlate", correlate))

    # both correlate stages name the results the run gives them as the score and bias stages do
    results_words = {"results": EXECUTE_RESULTS_WORDS} if "results" in label_source else {}

    plan = StagePlan("correlate", "correlate", outputs=layout.outputs("correlate"), after=[*after_execute, "score"],
                     table="correlate")
    plan.set_by_run.update({**label_words, **results_words})
    if plans[3].skip_reason or "score" not in enabled:
        plan.skip_reason = "the score stage does not run"
    else:
        metrics = methods + [m for m in shipped if m not in methods]
        values = {"metric": metrics, **label_source, **_comparisons_for(correlate, metrics),
                  **_correlate_paths(layout, "subset")}
        _job(plan, wide["subset"], values)
    plans.append(plan)

    plan = StagePlan("correlate_all", "correlate", outputs=layout.outputs("correlate_all"), after=list(after_execute),
                     table="correlate")
    plan.set_by_run.update({**label_words, **results_words})
    metrics = cheap + [m for m in shipped if m not in cheap]
    if not metrics:
        plan.skip_reason = "no metric for every row (no cheap method, no [correlate] metric)"
    else:
        values = {"metric": metrics, **label_source, **_comparisons_for(correlate, metrics),
                  **_correlate_paths(layout, "all")}
        if cheap and "score_all" in enabled:
            plan.after.append("score_all")
            _job(plan, wide["all"], values)
        else:
            # the shipped columns are read from the dataset itself: its [data] split, as every stage
            # reads it (a [correlate] split of its own still wins)
            values = {"task_column": data["task_column"], "sample_column": data["sample_column"],
                      "split": [data["split"]] if data["split"] else None,
                      "metric": shipped, **{k: v for k, v in values.items() if k != "metric"},
                      **_comparisons_for(correlate, shipped), "offline": config.offline or None}
            if shipped:
                _job(plan, data["source"], values)
            else:
                plan.skip_reason = "score_all does not run and there is no [correlate] metric"
    plans.append(plan)

    plans.append(_bias_plan(config, columns, layout, enabled, cheap, shipped))
    plans.append(StagePlan("report", None, outputs=layout.outputs("report"), after=[p.name for p in plans]))
    for plan in plans:
        if plan.skip_reason is None and plan.name not in config.stages:
            plan.skip_reason = NOT_IN_STAGES
            plan.available = plan.name in enabled
    return plans


def _data_label_kind(config: PipelineConfig, table: str, section: dict[str, Any]) -> dict[str, str]:
    """Give a stage whose label is ``[data] label_column`` (read from the data, not the execute stage's
    results) the kind of that label, declared once for the run: ``[data] label_kind``, else the
    ``label_kind`` of another stage table that reads the same label (``[correlate] label_kind`` serves
    ``bias`` too). :func:`workbench.run.config.build_config` has checked that the declarations agree.

    Args:
        config: the validated configuration.
        table: the stage's table (``correlate`` or ``bias``).
        section: the stage's options (table key -> value), completed in place with ``label_kind``.

    Returns:
        ``{"label_kind": words}`` for :attr:`StagePlan.set_by_run`: the key that declared the kind, or
        ``[data] label_kind`` where none did (a grade's error then says to declare it there); ``{}``
        where the stage's own table sets ``label_kind``.
    """
    if section.get("label_kind") is not None:
        return {}
    declared = [("data", config.data.get("label_kind"))] + [
        (other, config.sections[other].get("label_kind")) for other in LABEL_KIND_TABLES
        if other != table and config.sections[other].get("label", config.data["label_column"]) == config.data["label_column"]]
    for where, kind in declared:
        if kind is not None:
            section["label_kind"] = kind
            return {"label_kind": f"[{where}] label_kind"}
    return {"label_kind": "[data] label_kind"}


def _bias_plan(config: PipelineConfig, columns: set[str], layout: RunLayout, enabled: set[str],
               cheap: list[str], shipped: list[str]) -> StagePlan:
    """The ``bias`` stage: ``workbench bias`` on the in-set dedup output and the every-row metrics
    (``score_all``'s table, else the dataset), with pass@1 from the execution results and the
    contaminated rows of the ``decontaminate`` stage."""
    data = config.data
    plan = StagePlan("bias", "bias", outputs=layout.outputs("bias"), after=["dedup"], table="bias")
    section = dict(config.sections["bias"])
    id_column = _id_column(config, columns)
    if "dedup" not in enabled:
        plan.skip_reason = "the dedup stage does not run"
        return plan
    if id_column is None:
        plan.skip_reason = "the rows have no id for dedup ([data] id_column, or task and sample columns)"
        return plan
    values: dict[str, Any] = {"id_column": id_column, "task_column": data["task_column"],
                              "offline": config.offline or None}
    if "execute" in enabled:
        values.update(label="passed", results=str(layout / RunLayout.EXECUTE_RESULTS))
        plan.set_by_run["results"] = EXECUTE_RESULTS_WORDS
        plan.after.append("execute")
    elif data["label_column"]:
        values["label"] = data["label_column"]
    if "label" in values and "label" not in section:  # [bias] label, where set, is the user's
        plan.set_by_run["label"] = EXECUTE_LABEL_WORDS if "results" in values else "[data] label_column"
    if "results" not in values and data["label_column"] and section.get("label", values.get("label")) == data["label_column"]:
        plan.set_by_run.update(_data_label_kind(config, "bias", section))
    label = values.get("label")
    if cheap and "score_all" in enabled:
        metrics_table = str(layout / RunLayout.score_file("all", WIDE_SCORES_FILE))
        plan.after.append("score_all")
        metrics = cheap + [m for m in shipped if m not in cheap]
        # score's table names the [data] task and sample columns task_id and sample_id (as execute's
        # results do), and carries a [data] id_column under its own name
        values["task_column"] = TASK_COLUMN
        if not data["id_column"]:
            # the dedup's ids ("task:sample") are built from those there
            values["id_column"] = f"{TASK_COLUMN},{SAMPLE_COLUMN}"
    else:
        metrics_table = data["source"]
        metrics = list(shipped)
        if data["split"]:
            values["split"] = [data["split"]]
        own_ids = [c.strip() for c in (data["id_column"] or "").split(",") if c.strip()]
        if "results" in values and len(own_ids) == 1 and not {TASK_COLUMN, SAMPLE_COLUMN} <= columns:
            # execute's results carry task_id and sample_id only; without a scored table holding both
            # ids, nothing joins them to the dedup's ids of the data's own column
            plan.skip_reason = (f"execute's results have no [data] id_column {own_ids[0]!r} (only {TASK_COLUMN}, "
                                f"{SAMPLE_COLUMN}) and no score_all table joins the two; add a cheap [score] method "
                                "(e.g. chrf), or leave id_column out to join on the task and sample columns")
            return plan
    metrics = [label, *(m for m in metrics if m != label)] if label else metrics
    if not section.get("metric") and not metrics:
        plan.skip_reason = "no metric: no execution label, no cheap method, no [correlate] metric"
        return plan
    if "decontaminate" in enabled and config.sections["decontaminate"].get("against"):
        values["contamination"] = str(layout / RunLayout.DEDUP_FOLDERS["decontaminate"])
        plan.set_by_run["contamination"] = "the decontaminate stage's output"
        plan.after.append("decontaminate")
    values = {**values, "metric": metrics, **section, "json_path": str(layout / RunLayout.BIAS_JSON),
              "plot_path": str(layout / RunLayout.BIAS_PLOT)}
    _job(plan, str(layout / RunLayout.DEDUP_FOLDERS["dedup"]), values, second_source=metrics_table)
    return plan
