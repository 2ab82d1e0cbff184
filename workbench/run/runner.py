"""``workbench run``: preflight, then the stages in order, recorded in ``run.json``.

``run.json`` (the run manifest, :mod:`workbench.run.manifest`) holds the configuration as read, and
per stage its status (``done``, ``failed``, ``interrupted``, ``running``, ``skipped``), wall seconds,
the exact command line and a key: a hash of the stage's arguments (those that can change its outputs,
the run folder's paths relative to it, so the folder may be named otherwise, moved or copied), of the
keys of the stages it reads and of the ``[data] source`` file's content
(:func:`~workbench.run.manifest.data_fingerprint`), and the files it left
(:func:`~workbench.run.manifest.stage_files`: each one's size and modification time). On a rerun a
stage whose key and files are unchanged is not run again (so a finished run reruns in seconds, with
no LLM call and no execution); a stage whose files were deleted or edited since runs again (a
resumable one resumes, unless its row file was edited: then it runs from scratch, not adopting the
edited rows); a stage that was interrupted or failed with the same key continues with ``--resume``
(``execute`` and ``score`` keep every finished row); a stage whose key changed runs again from scratch
(``--overwrite``), and so do the stages after it.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from workbench.errors import WorkbenchError, require_argument
from workbench.formatting import count
from workbench.io import read_jsonl
from workbench.options import OptionError
from workbench.run.config import PipelineConfig, check_stage_names
from workbench.run.manifest import Manifest, _now, _refresh, _reselect, changed_files, stage_files
from workbench.run.preflight import Preflight, fetch_models, run_preflight
from workbench.run.stages import NOT_IN_STAGES, StagePlan

#: commands that continue an interrupted run with ``--resume`` and restart with ``--overwrite``
_RESUMABLE = {"execute", "score"}


class StageError(WorkbenchError):
    """A stage failed; the message names it and says how to rerun it
    (:meth:`RunResult.raise_for_failure`)."""


@dataclass
class StageOutcome:
    """What happened to one stage in this invocation.

    Attributes:
        name: the stage.
        status: ``ran``, ``resumed``, ``up-to-date``, ``skipped`` or ``failed``.
        seconds: wall time in this invocation.
        detail: the skip reason or error message, or the failure verdict's message.
        exit_status: the stage's own exit status (:mod:`workbench.failures`): 0, 3 (no usable
            result) or 4 (failures above ``max_failures``) for a stage that finished; 1 for a
            failed one. An up-to-date stage keeps the status recorded when it ran.
    """

    name: str
    status: str
    seconds: float = 0.0
    detail: str | None = None
    exit_status: int = 0


@dataclass
class RunResult:
    """The outcome of :func:`run_pipeline`.

    Attributes:
        run_dir: the run folder.
        preflight: what the checks found.
        outcomes: one per stage, in order.
        seconds: wall time of this invocation.
        report: paths of ``report.json`` and ``report.html`` when the report stage ran.
        notes: things to tell the user about the run folder (its ``run.json`` upgraded).
    """

    run_dir: Path
    preflight: Preflight
    outcomes: list[StageOutcome] = field(default_factory=list)
    seconds: float = 0.0
    report: tuple[Path, Path] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        """The highest exit status of the stages (what ``workbench run`` exits with)."""
        return max((outcome.exit_status for outcome in self.outcomes), default=0)

    def raise_for_failure(self) -> None:
        """Raise :class:`StageError` for the first stage that failed (for callers of
        :func:`run_pipeline` that want a failed stage as an exception); nothing when none failed."""
        for outcome in self.outcomes:
            if outcome.status == "failed":
                raise StageError(f"stage {outcome.name} failed: {outcome.detail}. Finished stages are kept; "
                                 f"rerun the same command to continue")


def regate(plan: StagePlan, verdict: dict[str, Any]) -> dict[str, Any]:
    """An up-to-date stage's recorded failure verdict (``run.json`` ``failures``), judged again by
    the ``max_failures`` in force when it differs from the one it was judged by: the budget is left
    out of the stage key (:data:`~workbench.run.stages.OUTPUT_NEUTRAL_OPTIONS`), so another budget
    changes the exit status without running the stage again.

    Returns:
        the verdict (:meth:`workbench.failures.FailureVerdict.as_dict`); ``verdict`` itself when
        the budget is the same or the record holds no counts.
    """
    from workbench.failures import check_failures, failure_limit_text

    counts = verdict.get("counts")
    if plan.command not in ("execute", "score") or not isinstance(counts, dict):
        return verdict
    try:
        limit = plan.config().max_failures
        numbers = {group: (int(c["failed"]), int(c["usable"]), int(c["rows"])) for group, c in counts.items()}
    except (WorkbenchError, KeyError, TypeError, ValueError):
        return verdict  # a damaged record: gate as recorded
    if (failure_limit_text(limit) or None) == verdict.get("limit"):
        return verdict
    with plan.words():  # the limit named as the config sets it
        return check_failures(numbers, limit).as_dict()


def failed_rows(before: dict[str, Any]) -> int:
    """The failed rows (``llm_error``, ``parse_error``, ``budget_exceeded``, ``error``) a finished
    score stage's recorded verdict counts, over all its methods (0 when it records none)."""
    counts = (before.get("failures") or {}).get("counts") if isinstance(before.get("failures"), dict) else None
    if not isinstance(counts, dict):
        return 0
    try:
        return sum(int(entry["failed"]) for entry in counts.values())
    except (KeyError, TypeError, ValueError):
        return 0


def _retry(plan: StagePlan, before: dict[str, Any], key: str, only: Sequence[str]) -> bool:
    """Whether a finished score stage with failed rows resumes to score them again instead of
    being up to date: asked with ``[run] retry_failed`` (``--retry-failed``), ``--stage``, or another LLM call
    timeout/retries/wait than it ran with (:meth:`~workbench.run.stages.StagePlan.call_settings_changed`).
    A plain rerun keeps gating on the recorded verdict (a CI job rerunning a cached folder)."""
    if plan.command != "score" or before.get("key") != key or before.get("status") != "done":
        return False
    if not failed_rows(before):
        return False
    return plan.retry_failed or plan.name in only or bool(plan.call_settings_changed(before.get("options")))


#: how a stage's job is called: ``run_stage(plan, call)`` calls ``call(**hooks)`` (hooks:
#: progress callbacks of the job's entry function) and returns its result
StageCaller = Callable[[StagePlan, Callable[..., Any]], Any]


def _call_plainly(plan: StagePlan, call: Callable[..., Any]) -> Any:
    return call()


class Decision(NamedTuple):
    """What to do with one stage (:func:`_decide`), and why."""

    #: ``skipped``, ``not selected``, ``up-to-date``, ``resume`` (with ``resume``) or ``run``
    #: (from scratch, with ``overwrite`` where rows exist)
    action: str
    #: the changes to its config (``{"resume": True}``)
    changes: dict[str, Any]
    #: its recorded files that are missing or edited since it finished with this key
    #: (:func:`~workbench.run.manifest.changed_files`): such a stage is not up to date
    changed: list[str]
    #: its options that change only copies of input columns and differ from those it finished
    #: with (:meth:`~workbench.run.stages.StagePlan.refreshed`): it resumes
    refresh: list[str]
    #: its row file (``execute/results.jsonl``, ``scores.jsonl``) was edited since it finished
    #: (:func:`_rows_edited`): it runs again from scratch, as a resume would keep the edited rows
    rows_edited: bool
    #: its options that only choose its rows (``[score] limit``) and differ from those it finished
    #: with (:func:`~workbench.run.manifest._reselect`): name -> (recorded, now); it resumes
    reselect: dict[str, tuple[Any, Any]]


def _decide(plan: StagePlan, before: dict[str, Any], key: str, run_dir: Path, *, only: Sequence[str],
            force: bool, rerun: set[str]) -> Decision:
    """What to do with one stage.

    Args:
        plan: the stage.
        before: its record in the previous ``run.json`` (empty when none).
        key: its key now (:func:`~workbench.run.manifest._stage_key`).
        run_dir: the run folder.
        only: ``--stage`` names (empty: all).
        force: ``--force``.
        rerun: the stages that run in this invocation before this one.

    A finished score stage whose failed rows are to be scored again (:func:`_retry`) resumes with
    ``retry_failed``.
    """
    if plan.skip_reason and not (only and plan.name in only and plan.skip_reason == NOT_IN_STAGES):
        return Decision("skipped", {}, [], [], False, {})
    if only and plan.name not in only and plan.command is not None:
        return Decision("not selected", {}, [], [], False, {})  # the report (no command) always follows, so it is never stale
    same_key = before.get("key") == key
    changed = changed_files(before.get("files"), run_dir) if same_key else []
    refresh = _refresh(plan, before, key)
    reselect = _reselect(plan, before, key)
    retry = _retry(plan, before, key, only)
    rows_edited = _rows_edited(plan, before, changed, run_dir)
    outputs_there = all(path.exists() for path in plan.outputs)
    upstream_reran = any(a in rerun for a in plan.after)
    if (not force and not only and same_key and before.get("status") == "done" and outputs_there
            and not changed and not refresh and not reselect and not retry and not upstream_reran
            and plan.command is not None):
        return Decision("up-to-date", {}, changed, refresh, rows_edited, reselect)
    if plan.command in _RESUMABLE:
        # a killed stage has its row files but not always its final outputs: resume from those
        rows_there = all(path.exists() for path in plan.partial or plan.outputs)
        if same_key and not force and before.get("status") in {"running", "failed", "interrupted", "done"} \
                and rows_there and not upstream_reran and not rows_edited:
            changes = {"resume": True, **({"retry_failed": True} if retry or plan.retry_failed else {})}
            return Decision("resume", changes, changed, refresh, rows_edited, reselect)
        if any(path.exists() for path in [*plan.outputs, *plan.partial]) or \
                any(path.parent.exists() for path in plan.outputs):
            return Decision("run", {"overwrite": True}, changed, refresh, rows_edited, reselect)
    return Decision("run", {}, changed, refresh, rows_edited, reselect)


def _rows_edited(plan: StagePlan, before: dict[str, Any], changed: Sequence[str], run_dir: Path) -> bool:
    """Whether ``changed`` (:func:`~workbench.run.manifest.changed_files`) says a finished resumable
    stage's row file was edited (not only deleted) since it finished: its rows are then not the
    job's, and resuming would adopt them (a timed-out sample turned ``passed`` by hand stayed
    passed). A stage that did not finish (interrupted, failed) resumes from its rows, as ever."""
    if before.get("status") != "done":
        return False
    rows = {Path(os.path.relpath(path, run_dir)).as_posix() for path in plan.partial}
    return any(entry.endswith(" changed") and entry.removesuffix(" changed") in rows for entry in changed)


def _options_changed(plan: StagePlan, before: dict[str, Any], key: str, run_dir: Path) -> dict[str, tuple[Any, Any]]:
    """The options of a stage whose key changed that differ from those ``run.json`` recorded when it
    ran (its whole effective config, :func:`_recorded_options`): what makes it run again from
    scratch, replacing its earlier result, for the line that says so. Left out: the options the run
    sets itself (:data:`~workbench.run.config.MANAGED_KEYS`: ``resume``, ``output`` ...) and those
    outside the key (:data:`~workbench.run.stages.OUTPUT_NEUTRAL_OPTIONS`, ``REFRESHED_OPTIONS``,
    ``RESELECTED_OPTIONS``: they rerun nothing or only resume), and options an earlier version did
    not record.

    Returns:
        option name -> (recorded value, value now), by name; empty when the key is the same, the
        record holds no options, or only something else changed (the data, an input stage's key).
    """
    from workbench.run.config import MANAGED_KEYS
    from workbench.run.stages import OUTPUT_NEUTRAL_OPTIONS, REFRESHED_OPTIONS, RESELECTED_OPTIONS

    recorded = before.get("options")
    if plan.command is None or not isinstance(recorded, dict) or not before.get("key") or before.get("key") == key:
        return {}
    try:
        current = _recorded_options(plan.config().effective_options(), run_dir)
    except WorkbenchError:  # the preflight built this config: not expected
        return {}
    command = plan.command
    left_out = (MANAGED_KEYS.get(command, set()) | OUTPUT_NEUTRAL_OPTIONS.get(command, frozenset())
                | REFRESHED_OPTIONS.get(command, frozenset()) | RESELECTED_OPTIONS.get(command, frozenset())
                | {"progress", "quiet"})
    return {name: (recorded[name], current[name]) for name in sorted(current)
            if name not in left_out and name in recorded
            and json.dumps(recorded[name], default=str) != json.dumps(current[name], default=str)}


def _options_note(plan: StagePlan, changed: dict[str, tuple[Any, Any]], finished: bool, what: str,
                  config: PipelineConfig) -> str:
    """``[dedup] min_tokens changed since it finished (20 -> 5): WHAT`` (several: each with its
    values, then ``changed since it finished``; ``since it last ran`` for a stage that did not
    finish, ``finished`` false), the options named as the config sets them (:func:`_option_words`)."""
    since = "since it finished" if finished else "since it last ran"
    if len(changed) == 1:
        [(name, (old, new))] = changed.items()
        return f"{_option_words(plan, name, config, (old, new))} changed {since} ({_shown(old)} -> {_shown(new)}): {what}"
    listed = ", ".join(f"{_option_words(plan, name, config, (old, new))} ({_shown(old)} -> {_shown(new)})"
                       for name, (old, new) in changed.items())
    return f"{listed} changed {since}: {what}"


def _option_words(plan: StagePlan, name: str, config: PipelineConfig, values: tuple[Any, Any] = ()) -> str:
    """How a note names option ``name`` of ``plan``'s job: the config key that sets it (``[dedup]
    min_tokens``, ``[data] code_column``: :meth:`~workbench.run.stages.StagePlan.config_key`), the
    words of one the run set itself (:attr:`~workbench.run.stages.StagePlan.set_by_run`: ``the execute
    stage's results``), else, for a value the run derives from other keys rather than takes from the
    stage's table as written (bias's ``metric``: the score_all methods and ``[correlate] metric``;
    correlate's default ``length_column``, the ``[data] code_column``), ``its metric (set by the run)``,
    not a ``[bias] metric`` nobody set. So too for an option every stage takes from ``[data]``
    (``SHARED_KEYS``) where the run left it out, or one of ``values`` (the recorded and the current
    value) is None although that ``[data]`` key always has a value (``sample_column``: correlate_all
    on score_all's scores_wide.jsonl passes none, on the dataset ``[data] sample_column``; execute
    passes none for data without that column): the run switched, not the ``[data]`` key."""
    from workbench.run.config import _DATA_DEFAULTS, SHARED_KEYS

    if name in plan.set_by_run:
        return plan.set_by_run[name]
    table = config.sections.get(plan.table or "", {})
    shared = SHARED_KEYS.get(plan.command or "", {})
    if name in plan.values and name not in shared and (
            name not in table or json.dumps(table[name], default=str) != json.dumps(plan.values[name], default=str)):
        return f"its {name} (set by the run)"
    if name in shared:
        data_key = shared[name].removeprefix("[data] ") if shared[name].startswith("[data] ") else None
        always_set = data_key is not None and _DATA_DEFAULTS.get(data_key) is not None
        if name not in plan.values or (always_set and any(value is None for value in values)):
            return f"its {name} (set by the run)"
    return plan.config_key(name)


def _remove_stale_outputs(plan: StagePlan) -> None:
    """Delete the files an earlier run of a stage that writes them whole (dedup, correlate, bias)
    left, before it runs again or is skipped for a failed input: were it to fail, the report would
    otherwise show the earlier run's numbers beside this run's counts. A resumable stage's files
    (execute, score) hold finished rows and are kept: the job itself resumes or overwrites them."""
    if plan.command is None or plan.command in _RESUMABLE:
        return
    for path in [*plan.outputs, *(Path(target) for name, target in plan.targets.items() if name != "output")]:
        if path.is_file():
            path.unlink()


class Step(NamedTuple):
    """One stage as :func:`plan_run` finds it before any stage runs."""

    plan: StagePlan
    #: its record in the previous ``run.json`` (empty when none)
    before: dict[str, Any]
    #: its key now (computed once, by the preflight: :attr:`~workbench.run.preflight.Preflight.keys`)
    key: str
    #: what to do with it (:func:`_decide`)
    decision: Decision
    #: for a stage run again from scratch (not with ``--force``): its options that changed since it ran
    #: (:func:`_options_changed`)
    options_changed: dict[str, tuple[Any, Any]]
    #: for a stage that runs: the stages it reads that the run leaves out (``--stage``, ``[run] stages``)
    #: whose outputs are out of date, and those that never finished in the run folder (:func:`_inputs_left_out`)
    stale_inputs: list[str]
    missing_inputs: list[str]


def _track_left_out(step: Step, rerun: set[str], stale: set[str], unfinished: set[str]) -> None:
    """Add a stage the run leaves out to ``stale`` where its outputs are out of date (its options or its
    inputs changed since it finished, ``[score] limit`` or carried columns included, or an input of it runs
    again: a finished stage left out of ``[run] stages`` is read as it is), and to ``unfinished`` where it
    never finished in the run folder (nothing of it to be out of date); a stage that runs adds nothing.

    Args:
        step: the stage (:func:`plan_run`); rerun: the stages before it that run in this invocation;
        stale, unfinished: the sets so far, updated in place.
    """
    plan, before, key, action = step.plan, step.before, step.key, step.decision.action
    if action == "skipped":
        if plan.available and any(a in rerun or a in stale for a in plan.after):
            stale.add(plan.name)  # read as it is, though an input of it ran again since
    elif action == "not selected":
        if before.get("key") != key or before.get("status") != "done" or any(a in stale for a in plan.after) \
                or _refresh(plan, before, key) or _reselect(plan, before, key):
            stale.add(plan.name)
        if before.get("status") != "done":
            unfinished.add(plan.name)


def _inputs_left_out(plan: StagePlan, stale: set[str], unfinished: set[str]) -> tuple[list[str], list[str]]:
    """The stages ``plan`` reads that the run leaves out: those out of date (finished, so there is something
    to read) and those that never finished here (:func:`_track_left_out`), each in ``plan.after`` order."""
    return ([name for name in plan.after if name in stale and name not in unfinished],
            [name for name in plan.after if name in unfinished])


def inputs_note(stale_inputs: Sequence[str], missing_inputs: Sequence[str], *, ran: bool) -> str | None:
    """What a stage that runs on inputs the run leaves out must say (``--stage`` ran it on them, so its numbers
    are not the config's): ``read the outputs of score, which are out of date (options or inputs changed since
    it ran; add --stage score to rerun)``, ``it would read ...`` for the dry run (not ``ran``); and for inputs
    that never finished in the run folder (a fresh folder with ``--stage``: nothing of theirs was read, and
    "out of date since they ran" would be wrong) ``execute has not finished in this run folder (add --stage
    execute to run it)``. ``None`` when it reads none of them. The run records it as the stage's ``detail``
    in ``run.json`` and leads the detail column with it; ``--dry-run`` prints it as a note."""
    stale_note = (f"{'read' if ran else 'it would read'} the outputs of {', '.join(stale_inputs)}, which are out of "
                  f"date (options or inputs changed since {'they' if len(stale_inputs) > 1 else 'it'} ran; add "
                  f"{' '.join('--stage ' + name for name in stale_inputs)} to rerun)") if stale_inputs else None
    missing_note = (f"{', '.join(missing_inputs)} {'have' if len(missing_inputs) > 1 else 'has'} not finished "
                    f"in this run folder (add {' '.join('--stage ' + name for name in missing_inputs)} to run "
                    f"{'them' if len(missing_inputs) > 1 else 'it'})") if missing_inputs else None
    return "; ".join(note for note in (stale_note, missing_note) if note) or None


def plan_run(config: PipelineConfig, preflight: Preflight, *, only: Sequence[str] = (),
             force: bool = False) -> list[Step]:
    """What to do with each stage, decided once, before any stage runs, from the keys and ``run.json``
    records the preflight read: :func:`run_pipeline` runs by it (and fetches the score stage's models
    first when it is to run), ``--dry-run`` prints it (:func:`preview`).

    Each stage that runs is taken to succeed (so its dependants run too); a stage whose input fails is
    skipped by :func:`run_pipeline` whatever its decision, so the decisions hold for the stages that run.
    A stage that runs on inputs the run leaves out that are out of date or never finished has them in its
    step (:func:`inputs_note` says them), as the run works them out.

    Args:
        config: the configuration; preflight: what :func:`~workbench.run.preflight.run_preflight` found for it.
        only: ``--stage`` names, checked (:func:`~workbench.run.config.check_stage_names`); force: ``--force``.

    Returns:
        one :class:`Step` per stage, in order.
    """
    rerun: set[str] = set()
    stale: set[str] = set()  # stages left out whose outputs no longer match their options or inputs
    unfinished: set[str] = set()  # ... of them, those that never finished here
    steps = []
    for plan in preflight.plans:
        before = preflight.records.get(plan.name, {})
        key = preflight.keys[plan.name]
        decision = _decide(plan, before, key, config.output, only=only, force=force, rerun=rerun)
        options_changed = (_options_changed(plan, before, key, config.output)
                           if decision.action == "run" and not force else {})
        runs = decision.action in ("resume", "run")
        step = Step(plan, before, key, decision, options_changed,
                    *(_inputs_left_out(plan, stale, unfinished) if runs else ([], [])))
        if runs:
            rerun.add(plan.name)
        _track_left_out(step, rerun, stale, unfinished)
        steps.append(step)
    return steps


def rerun_reasons(step: Step, config: PipelineConfig, *, only: Sequence[str], force: bool, ran: bool,
                  job_result: Any = None) -> list[str]:
    """Why a stage that runs again does: the options that changed since it ran, its files changed since
    it finished (its rows edited), the options that only copy input columns or choose its rows
    (``[score] limit``), its failed rows scored again. The run's detail column (``ran``) and
    ``--dry-run``'s notes (not ``ran``: ``it would run again ...``) both say them with this.

    Args:
        step: the stage (:func:`plan_run`); config: the run's configuration (names the options that changed).
        only, force: ``--stage`` names and ``--force``.
        ran: the stage has run (past tense, and ``job_result``'s counts), else what it would do.
        job_result: the job's result when it ran (its counts of rows kept, scored, set aside, retried).

    Returns:
        the sentences, in the detail column's order; empty for a stage that does not run again.
    """
    plan, before, (action, changes, changed, refresh, rows_edited, reselect) = step.plan, step.before, step.decision
    if action not in ("run", "resume"):
        return []
    resumed = action == "resume"
    resume, again, score = ("resumed", "ran again", "scored") if ran else \
        ("it would resume", "it would run again", "it would score")
    reasons = []
    if step.options_changed:
        reasons.append(_options_note(plan, step.options_changed, before.get("status") == "done",
                                     f"{again} from scratch, replacing its earlier result", config))
    if changed and not force and not only:  # ... or because its files changed since it finished
        reasons.append(f"its files changed since it finished ({', '.join(changed[:3])}"
                       f"{' ...' if len(changed) > 3 else ''}): {resume if resumed else again}"
                       f"{' from scratch, as its rows were edited' if rows_edited else ''}")
    if refresh and resumed:  # ... or because options that only copy input columns changed: no row is scored again
        reasons.append(f"{', '.join(f'[{plan.table}] {name}' for name in refresh)} changed since it finished "
                       f"(the shipped columns of [correlate] metric are carried too): {resume}, its rows "
                       f"{'take' if ran else 'taking'} the new columns without scoring again")
    if reselect and resumed:  # ... or because options that only choose its rows changed: the job's counts say what
        did = _reselected(job_result) if ran else f"{resume}, keeping the finished rows of the samples still selected"
        reasons.append(f"{', '.join(f'[{plan.table}] {name}' for name in reselect)} changed since it finished "
                       f"({'; '.join(f'{_shown(old)} -> {_shown(new)}' for old, new in reselect.values())}): {did}")
    # the job's count: the failed rows of samples no longer selected were set aside, not scored
    retried = (getattr(job_result, "retried_rows", failed_rows(before)) if ran else failed_rows(before)) \
        if changes.get("retry_failed") else 0
    if retried:
        reasons.append(f"{score} the {count(retried, 'row')} that had failed again, keeping the finished rows")
    return reasons


def preview(config: PipelineConfig, preflight: Preflight, *, only: Iterable[str] = (),
            force: bool = False, on_note: Callable[[StagePlan, str], None] | None = None,
            ) -> list[tuple[StagePlan, str]]:
    """What :func:`run_pipeline` would do with each stage now, from ``run.json``; writes nothing.

    Assumes every stage that runs succeeds (so its dependants run too).

    Args:
        config: the configuration; preflight: what :func:`~workbench.run.preflight.run_preflight`
            found for it (its plans and their keys, and ``run.json`` as it read it).
        only, force: as for :func:`run_pipeline`.
        on_note: called with (plan, line) for the inputs left out that a stage that runs would read out of date
            or unfinished (:func:`inputs_note`: ``it would read the outputs of execute, which are out of date
            ...``), then for each reason a stage would run again for, as the run's
            detail column gives it (:func:`rerun_reasons`): the options of its table that changed since
            it ran (``[dedup] min_tokens changed since it finished (20 -> 5): it would run again from
            scratch, replacing its earlier result``), its files changed since it finished, another
            ``[score] limit``, failed rows to score again; in stage order.

    Returns:
        ``(plan, action)`` per stage, action as in :func:`_decide`.
    """
    only = check_stage_names(only)
    steps = plan_run(config, preflight, only=only, force=force)
    if on_note:
        for step in steps:
            note = inputs_note(step.stale_inputs, step.missing_inputs, ran=False)
            for line in [*([note] if note else []), *rerun_reasons(step, config, only=only, force=force, ran=False)]:
                on_note(step.plan, line)
    return [(step.plan, step.decision.action) for step in steps]


def run_pipeline(
    config: PipelineConfig,
    *,
    only: Iterable[str] = (),
    force: bool = False,
    on_stage: Callable[[StagePlan, str], None] | None = None,
    on_preflight: Callable[[Preflight], None] | None = None,
    run_stage: StageCaller | None = None,
    on_note: Callable[[StagePlan, str], None] | None = None,
    progress: bool = True,
) -> RunResult:
    """Run the pipeline of ``config`` into ``config.output``.

    Args:
        config: a validated configuration (:func:`workbench.run.config.load_config`).
        only: run just these stages (again, even when up to date), then the report; the
            others are left as they are. Empty: every enabled stage, skipping those that are
            up to date.
        force: run every selected stage from scratch.
        on_stage: called with (plan, event) where event is ``"start"``, ``"up-to-date"`` or
            ``"skipped"`` (for progress messages).
        on_preflight: called with the :class:`~workbench.run.preflight.Preflight` before any
            stage runs (its ``warnings``, what weakens the run, and ``notes``, expected outcomes of the config,
            for the user).
        run_stage: calls each stage's job (:data:`StageCaller`): the command line passes the
            jobs' progress bars and prints their results; default: the job alone.
        on_note: called with (plan, line) right after a stage's ``"start"`` for what the user should
            know before it runs: the options it runs again from scratch for
            (``[dedup] min_tokens changed since it finished (20 -> 5): it runs again from scratch,
            replacing its earlier result``).
        progress: the progress bars (on stderr) of the models fetched before the first stage
            (:func:`~workbench.run.preflight.fetch_models`); the stages' own bars are ``run_stage``'s.
            ``workbench run --no-progress`` passes False.

    Returns:
        a :class:`RunResult`.

    A stage that fails is recorded (``run.json``: ``failed`` with its error; the outcome's
    exit status 1) and the run goes on: the stages that read its outputs (``after``, also
    through another stage) are skipped with the reason, the others run, and the report stage
    always runs, so the page shows the failure. :meth:`RunResult.raise_for_failure` turns a
    failure into an exception.

    Raises:
        WorkbenchError: from the preflight, or a model the score stage reads that could not be
            fetched (:func:`~workbench.run.preflight.fetch_models`): before any stage runs.
        KeyboardInterrupt: recorded as ``interrupted``; rerun to resume.

    Example::

        from workbench import load_config, run_pipeline

        result = run_pipeline(load_config("configs/humaneval.toml", overrides=["score.limit=8"]))
        print([(o.name, o.status) for o in result.outcomes], result.report)
    """
    require_argument(config, PipelineConfig, "config", "run_pipeline(load_config(path))")
    started = time.perf_counter()
    only = check_stage_names(only)
    preflight = run_preflight(config)
    if on_preflight:
        on_preflight(preflight)
    plans = preflight.plans
    # every stage's decision, once, on the keys the preflight computed
    steps = plan_run(config, preflight, only=only, force=force)
    # the models the score stage reads, fetched now: a failed fetch fails the run before any stage did work
    score_step = next(step for step in steps if step.plan.name == "score")
    if score_step.decision.action in ("run", "resume"):
        fetch_models(score_step.plan, progress=progress)
    run_dir = config.output
    run_dir.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(run_dir, config, preflight.manifest)
    manifest.record_plan(plans)
    manifest.save()
    result = RunResult(run_dir, preflight)
    rerun: set[str] = set()  # stages run in this invocation: their dependants must run too
    stale: set[str] = set()  # stages left out by --stage whose outputs no longer match their options or inputs
    unfinished: set[str] = set()  # ... of them, those that never finished here (no outputs to be out of date)
    broken: dict[str, str] = {}  # stage -> the failed stage it is, or reads from (directly or not)
    manifest.data["data_fingerprint"] = preflight.fingerprint  # hashed once, by the preflight
    # rekeyed: the stages whose run.json record had an earlier version's key
    rekeyed = preflight.rekeyed

    for step in steps:
        plan, before, key = step.plan, step.before, step.key
        if plan.name in rekeyed:
            manifest.data["stages"][plan.name]["key"] = key
        action, changes, changed, refresh, rows_edited, reselect = step.decision
        failed_input = next((broken[a] for a in plan.after if a in broken), None)
        if failed_input is not None and plan.command is not None and action not in ("skipped", "not selected"):
            # its inputs are missing or stale; the report (no command) still runs to show why
            reason = f"stage {failed_input} failed"
            broken[plan.name] = failed_input
            _remove_stale_outputs(plan)
            manifest.update(plan.name, status="skipped", detail=reason, key=None, error=None)
            result.outcomes.append(StageOutcome(plan.name, "skipped", detail=reason))
            if on_stage:
                on_stage(plan, "skipped")
            continue
        # a stage left out: its outputs out of date, or never finished here (rerun: the stages that ran)
        _track_left_out(step, rerun, stale, unfinished)
        if action == "skipped":
            if plan.skip_reason != NOT_IN_STAGES or not before:
                manifest.update(plan.name, status="skipped", detail=plan.skip_reason, key=None)
            result.outcomes.append(StageOutcome(plan.name, "skipped", detail=plan.skip_detail))
            if on_stage:
                on_stage(plan, "skipped")
            continue
        if action == "not selected":
            result.outcomes.append(StageOutcome(plan.name, "skipped", detail="not selected with --stage"))
            continue
        if action == "up-to-date":
            # a rerun gates as the run did: the stage's verdict is the one recorded when it ran,
            # judged by the failure budget in force
            verdict = regate(plan, before.get("failures") or {})
            if verdict != (before.get("failures") or {}):
                manifest.update(plan.name, failures=verdict)
            failed = failed_rows(before) if plan.command == "score" else 0
            hint = (f"{count(failed, 'row')} failed (an LLM error, an unreadable answer, ...): "
                    f"rerun with --retry-failed (or --stage {plan.name}) to score them again, keeping the "
                    "finished rows") if failed else None
            detail = "; ".join(part for part in (verdict.get("message"), hint) if part) or None
            result.outcomes.append(StageOutcome(plan.name, "up-to-date", detail=detail,
                                                exit_status=int(verdict.get("exit_status", 0))))
            if on_stage:
                on_stage(plan, "up-to-date")
            continue
        resumed = action == "resume"
        # a stage run again from scratch because options of its table changed says which (its result is replaced)
        options_changed = step.options_changed
        _remove_stale_outputs(plan)
        if on_stage:
            on_stage(plan, "start")
        if on_note and options_changed:
            on_note(plan, _options_note(plan, options_changed, before.get("status") == "done",
                                        "it runs again from scratch, replacing its earlier result", config))
        extra = plan.change_args(changes) if plan.command is not None else []
        # the whole effective config of the stage (defaults included), not only what the file set
        options = _recorded_options(plan.config(**changes).effective_options(), run_dir) \
            if plan.command is not None else None
        manifest.update(plan.name, status="running", key=key, argv=[*plan.argv, *extra], options=options,
                        command=plan.command_line(), started=_now(), error=None, detail=None, failures=None,
                        files=None)
        began = time.perf_counter()
        job_result = None
        try:
            if plan.command is None:
                # the report describes run.json, so it records itself as done (a failure below
                # overwrites that)
                manifest.update(plan.name, status="done", finished=_now())
                result.report = _write_report(run_dir)
            else:
                job_result = (run_stage or _call_plainly)(plan, lambda **hooks: plan.run(changes, **hooks))
        except KeyboardInterrupt:
            manifest.update(plan.name, status="interrupted", seconds=round(time.perf_counter() - began, 3))
            raise
        except Exception as error:
            seconds = round(time.perf_counter() - began, 3)
            # an OptionError names its options as the config names them, or as the run set them
            message = (error.render(lambda name: plan.advice_key(name) or plan.config_key(name))
                       if isinstance(error, OptionError)
                       else str(error) if isinstance(error, WorkbenchError) else f"{type(error).__name__}: {error}")
            manifest.update(plan.name, status="failed", seconds=seconds, error=message)
            result.outcomes.append(StageOutcome(plan.name, "failed", seconds, message, exit_status=1))
            broken[plan.name] = plan.name
            continue
        seconds = round(time.perf_counter() - began, 3)
        # a finished stage may still have produced nothing usable: the run goes on (the report
        # shows it) and exits with that stage's status at the end
        verdict = getattr(job_result, "failures", None) or {}
        # --stage ran this stage on inputs that are out of date, or never finished here: say so, as --dry-run does
        stale_note = inputs_note(*_inputs_left_out(plan, stale, unfinished), ran=True)
        manifest.update(plan.name, status="done", seconds=seconds, finished=_now(), failures=verdict or None,
                        detail=stale_note, files=stage_files(plan, run_dir) or None)
        # why it ran again (its options, its files, [score] limit ... changed), as --dry-run says it
        reasons = rerun_reasons(step, config, only=only, force=force, ran=True, job_result=job_result)
        detail = "; ".join(part for part in (verdict.get("message"), stale_note, *reasons) if part) or None
        result.outcomes.append(StageOutcome(plan.name, "resumed" if resumed else "ran", seconds,
                                            detail, int(verdict.get("exit_status", 0))))
        rerun.add(plan.name)

    jobs_rekeyed = [plan.name for plan in plans if plan.name in rekeyed and plan.command is not None]
    if jobs_rekeyed:
        result.notes.append(
            f"run.json was written by an earlier version, whose stage keys named the run folder as spelled then "
            f"(or held [score] limit): recorded anew for {', '.join(jobs_rekeyed)} (nothing ran again for it); the "
            "folder may now be named otherwise, moved or copied, and another [score] limit resumes the score stage")
    manifest.data["finished"] = _now()
    manifest.save()
    result.seconds = time.perf_counter() - started
    return result


def _recorded_options(options: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """A stage's options as ``run.json`` records them: a path inside the run folder (the execute
    stage's results the score, correlate and bias stages read, the decontaminate stage's output)
    relative to it, as ``<run folder>/execute/results.jsonl``
    (:func:`~workbench.resume_guard.run_folder_relative`), so the record holds for the folder
    moved or copied; any other value as it is. (The recorded command line, ``argv``, is the one
    that ran, with the folder as it was named then.)"""
    from workbench.resume_guard import run_folder_relative

    root = run_dir.resolve()

    def recorded(value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [recorded(item) for item in value]
        # a path, not a model name such as openai/judge: absolute (as the run gives its own) or there
        if isinstance(value, str) and (os.path.isabs(value) or os.path.exists(value)):
            return run_folder_relative(Path(value).resolve(), root) or value
        return value

    return {name: recorded(value) for name, value in options.items()}


def _reselected(job_result: Any) -> str:
    """What a score stage resumed with another ``limit``/``method_limit`` did, from its job's
    :class:`~workbench.score.job.RunReport`: the rows kept, the rows scored, the rows this run set
    aside and those an earlier resume set aside that stay there (counted from the job's
    ``scores.unselected.jsonl``, as ``workbench score``'s note tells them apart); a lowered limit
    scores nothing new, so the note must not say it did."""
    kept = getattr(job_result, "resumed_rows", None)
    if kept is None:  # a job without the counts (not a score stage): what the option means
        return "resumed, keeping the finished rows of the samples still selected"
    written = job_result.rows_written
    note = (f"resumed: kept {count(kept, 'finished row')}, "
            f"{'scored ' + count(written, 'new row') if written else 'scored no new row'}")
    from workbench.score.wide_table import UNSELECTED_FILE, unselected_path

    set_aside = getattr(job_result, "set_aside_rows", 0)
    # the rows an earlier resume set aside that stay there (the job counts only those it moved)
    scores = (getattr(job_result, "paths", None) or {}).get("scores")
    staying = max(0, len(read_jsonl(unselected_path(scores))) - set_aside) if scores else 0
    back = "(a resume that selects them again takes them back)"
    if set_aside and staying:
        note += (f"; set aside {count(set_aside, 'row')} of the samples no longer selected in "
                 f"{UNSELECTED_FILE}, beside the {staying} an earlier resume put there {back}")
    elif set_aside:
        note += (f"; set aside the {count(set_aside, 'row')} of the samples no longer selected in "
                 f"{UNSELECTED_FILE} {back}")
    elif staying:
        note += (f"; {count(staying, 'row')} of the samples not selected {'stays' if staying == 1 else 'stay'} "
                 f"set aside in {UNSELECTED_FILE}, where an earlier resume put "
                 f"{'it' if staying == 1 else 'them'} {back}")
    return note


def _shown(value: Any) -> str:
    """An option's value in a note: ``none`` for an unset one, a list as its entries."""
    if value is None:
        return "none"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def _write_report(run_dir: Path) -> tuple[Path, Path]:
    from workbench.report import write_report

    return write_report(run_dir)
