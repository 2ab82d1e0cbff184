"""``run.json``, the run manifest of ``workbench run``: reading and writing it, the stage keys and
the files it records, and which stages it shows up to date.

A stage's key (:func:`_stage_key`) is a hash of its arguments that can change its outputs (the run
folder's paths relative to it), of the keys of the stages it reads and of the ``[data] source``
file's content (:func:`data_fingerprint`); ``run.json`` records it with the files the stage left
(:func:`stage_files`). :mod:`workbench.run.runner` decides from these what to run again,
:mod:`workbench.run.preflight` which finished stages a run left out of ``[run] stages`` may read
(:func:`key_stages`), and the report whether the data changed since the run
(:mod:`workbench.report.data_check`, through :func:`data_fingerprint`).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

from workbench.io import atomic_write
from workbench.run.config import STAGES, PipelineConfig
from workbench.run.stages import NOT_IN_STAGES, StagePlan, plan_stages
from workbench.run_layout import RunLayout

MANIFEST_FILE = RunLayout.MANIFEST


def _now() -> str:
    """The time now in UTC, ISO 8601 to the second (``run.json``'s ``started`` and ``finished``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _stage_key(plan: StagePlan, keys: dict[str, str], data_fingerprint: str | None = None, *,
               legacy_root: str | None = None, legacy_neutral: bool = True, reselected_neutral: bool = True,
               inside_relative: bool = True) -> str:
    """A stage's key: a hash of its command, its arguments that can change its outputs
    (:meth:`~workbench.run.stages.StagePlan.key_argv`: the run folder's paths relative to it),
    the keys of the stages it reads (``keys``) and the data's fingerprint.

    Args:
        legacy_root: the key an earlier version recorded for the run folder spelled so (its
            paths as spelled), with ``keys`` holding the earlier stages' such keys (:func:`_plan_keys`);
            ``legacy_neutral``, ``reselected_neutral`` and ``inside_relative`` as in
            :meth:`~workbench.run.stages.StagePlan.key_argv`.
    """
    fields: dict[str, Any] = {"command": plan.command,
                              "argv": plan.key_argv(legacy_root=legacy_root, legacy_neutral=legacy_neutral,
                                                    reselected_neutral=reselected_neutral,
                                                    inside_relative=inside_relative),
                              "after": {a: keys.get(a) for a in plan.after}}
    if data_fingerprint is not None and plan.command is not None:
        fields["data"] = data_fingerprint
    payload = json.dumps(fields, sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def stage_files(plan: StagePlan, run_dir: Path) -> dict[str, list[int]]:
    """The files a finished stage left, as ``run.json`` records them to tell later whether they
    are still what the stage wrote (:func:`changed_files`).

    The files: the top-level files of a folder the stage writes into (dedup's ``clusters.json``,
    ``removed.csv``, ...; score's ``scores.jsonl``, ...; not the Chroma store under it), a file it
    writes with the files named after it (execute's ``results.jsonl`` and
    ``results.summary.json``), and its planned outputs. Hidden files (locks) are left out.

    Args:
        plan: the stage; run_dir: the run folder (paths are recorded relative to it).

    Returns:
        relative path -> ``[size in bytes, modification time in ns]``; empty for the report.
    """
    if plan.command is None:
        return {}
    found: set[Path] = set()
    for target in map(Path, plan.targets.values()):
        if target.is_dir():
            found.update(path for path in target.iterdir() if path.is_file())
        elif target.parent.is_dir():
            found.update(path for path in target.parent.iterdir() if path.is_file()
                         and (path == target or path.name.startswith(f"{target.stem}.")))
    found.update(path for path in [*plan.outputs, *plan.partial] if path.is_file())
    record = {}
    for path in sorted(found):
        if path.name.startswith("."):
            continue
        stat = path.stat()
        record[Path(os.path.relpath(path, run_dir)).as_posix()] = [stat.st_size, stat.st_mtime_ns]
    return record


def changed_files(recorded: Any, run_dir: Path) -> list[str]:
    """How the files a stage left differ now from what ``run.json`` recorded when it finished.

    Args:
        recorded: the stage's ``files`` in ``run.json`` (:func:`stage_files`), as read: anything
            (``None`` for an older version's ``run.json``; a damaged entry counts as changed).
        run_dir: the run folder (the recorded paths are relative to it).

    Returns:
        one entry per recorded file that is missing or differs in size or modification time
        (``"dedup/clusters.json missing"``, ``"dedup/removed.csv changed"``); empty when they are
        all as recorded, or when nothing was recorded (a ``run.json`` of an older version: then
        only the planned outputs' presence is checked).
    """
    if not isinstance(recorded, dict) or not recorded:
        return []
    changes = []
    for relative, entry in recorded.items():
        try:
            stat = (run_dir / relative).stat()
        except OSError:
            changes.append(f"{relative} missing")
            continue
        if entry != [stat.st_size, stat.st_mtime_ns]:
            changes.append(f"{relative} changed")
    return changes


def data_fingerprint(source: str) -> str | None:
    """A hash of a local ``[data] source``, so that editing the file (same path, new rows) makes
    every stage that reads it stale; ``None`` for a bundled name or hub id (not a local path).

    A file is hashed whole (sha256; the bundled 3,220-row set takes milliseconds); a folder by
    its files' relative paths, sizes and modification times (hashing every file of a large
    source tree would cost more than a rerun saves).
    """
    path = Path(source)
    if path.is_file():
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()[:16]
    if path.is_dir():
        digest = hashlib.sha256()
        for item in sorted(p for p in path.rglob("*") if p.is_file()):
            stat = item.stat()
            digest.update(f"{item.relative_to(path)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
        return digest.hexdigest()[:16]
    return None


def _plan_keys(plans: Sequence[StagePlan], fingerprint: str | None,
               legacy_roots: Iterable[str]) -> tuple[dict[str, str], dict[str, set[str]]]:
    """Each stage's key (:func:`_stage_key`), and the keys an earlier version would have recorded
    for it with the run folder spelled as in ``legacy_roots`` (:func:`_legacy_roots`), or with
    :data:`~workbench.run.stages.RESELECTED_OPTIONS` (``[score] limit``) in the key, or with a job's
    input inside the run folder (a ``[data] source`` kept there) as spelled: stage -> key, stage ->
    those keys."""
    keys: dict[str, str] = {}
    for plan in plans:
        keys[plan.name] = _stage_key(plan, keys, fingerprint)
    # the options left out then, and those left out now (an earlier run without --offline)
    variants: list[dict[str, Any]] = [{"legacy_root": root, "legacy_neutral": neutral}
                                      for root in dict.fromkeys(legacy_roots) for neutral in (True, False)]
    variants.append({"reselected_neutral": False})
    variants.append({"inside_relative": False})  # a [data] source inside the run folder, as spelled
    legacy: dict[str, set[str]] = {plan.name: set() for plan in plans}
    for variant in variants:
        spelled: dict[str, str] = {}
        for plan in plans:
            spelled[plan.name] = _stage_key(plan, spelled, fingerprint, **variant)
            legacy[plan.name].add(spelled[plan.name])
    return keys, legacy


def _legacy_roots(config: PipelineConfig, recorded: dict[str, Any]) -> list[str]:
    """How an earlier version's ``run.json`` (``recorded``) may have spelled the run folder in its
    stage keys: ``[run] output`` as it recorded it (else the default, ``runs/<config name>``) and as
    it is spelled now. The recorded spelling recognises the folder after it was moved or copied, or
    named otherwise."""
    roots = [str(config.output)]
    run = recorded.get("config") if isinstance(recorded.get("config"), dict) else {}
    output = (run.get("run") or {}).get("output") if isinstance(run.get("run"), dict) else None
    config_path = recorded.get("config_path")
    if isinstance(output, str):
        roots.append(output)
    elif isinstance(config_path, str):
        roots.append(str(Path("runs") / Path(config_path).stem))
    return roots


def _keyed(config: PipelineConfig, plans: Sequence[StagePlan], manifest: dict[str, Any],
           fingerprint: str | None) -> tuple[dict[str, str], dict[str, dict[str, Any]], list[str]]:
    """Each stage's key (:func:`_stage_key`) and its record in ``manifest`` (a ``run.json`` as
    read), with the key an earlier version recorded (the run folder's paths as spelled then, or
    ``[score] limit`` in the key: :func:`_plan_keys`, :func:`_legacy_roots`) replaced by the key
    now: a ``run.json`` written before keys named the run folder relatively stays up to date (also
    moved, copied or named otherwise), and so does one written while the limit was in the key.

    Returns:
        stage -> key, stage -> record (empty when none), and the stages re-keyed so.
    """
    keys, legacy = _plan_keys(plans, fingerprint, _legacy_roots(config, manifest))
    records = _stage_records(manifest)
    rekeyed = [plan.name for plan in plans if records.get(plan.name, {}).get("key") in legacy[plan.name]
               and records[plan.name]["key"] != keys[plan.name]]
    for name in rekeyed:
        records[name] = {**records[name], "key": keys[name]}
    return keys, records, rekeyed


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """``run_dir``'s ``run.json`` (empty when there is none, or it is damaged)."""
    path = run_dir / MANIFEST_FILE
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def _stage_records(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The per-stage records of a ``run.json`` (an entry that is not a record is left out)."""
    stages = manifest.get("stages", {})
    if not isinstance(stages, dict):
        return {}
    return {name: record for name, record in stages.items() if isinstance(record, dict)}


def is_current(plan: StagePlan, before: dict[str, Any], key: str, run_dir: Path) -> bool:
    """Whether a stage's record says it finished with this key and these options and left its
    files as they are: the run does not run it again (:mod:`workbench.run.runner`), and the preflight
    takes its outputs as there (:func:`key_stages`, :func:`workbench.run.preflight._results_ready`).

    Args:
        plan: the stage's plan now; before: its record in ``run.json`` (empty when none); key: its key
            now (:func:`_stage_key`); run_dir: the run folder its recorded files are relative to.
    """
    return (before.get("status") == "done" and before.get("key") == key
            and all(path.exists() for path in plan.outputs) and not changed_files(before.get("files"), run_dir)
            and not _refresh(plan, before, key) and not _reselect(plan, before, key))


def _same_run(plan: StagePlan, before: dict[str, Any], key: str) -> bool:
    """Whether ``before`` records this job stage with this key, so that its recorded options can
    be compared with those now (:func:`_refresh`, :func:`_reselect`)."""
    return before.get("key") == key and plan.command is not None and plan.skip_reason in (None, NOT_IN_STAGES)


def _refresh(plan: StagePlan, before: dict[str, Any], key: str) -> list[str]:
    """The options of a stage with this key that change only copies of input columns and differ
    from those ``run.json`` recorded (:meth:`~workbench.run.stages.StagePlan.refreshed`)."""
    return plan.refreshed(before.get("options")) if _same_run(plan, before, key) else []


def _reselect(plan: StagePlan, before: dict[str, Any], key: str) -> dict[str, tuple[Any, Any]]:
    """The options of a stage with this key that only choose its rows (``[score] limit``) and differ
    from those ``run.json`` recorded (:meth:`~workbench.run.stages.StagePlan.reselected`): name ->
    (recorded value, value now)."""
    return plan.reselected(before.get("options")) if _same_run(plan, before, key) else {}


class KeyedStages(NamedTuple):
    """The run's stages as :func:`key_stages` plans and keys them, once, for the preflight, the dry
    run's plan and the run."""

    #: the stages ``[run] stages`` leaves out whose finished, up-to-date outputs the stages that run read
    available: set[str]
    #: every stage (:func:`~workbench.run.stages.plan_stages`), planned on ``available``
    plans: list[StagePlan]
    #: stage -> its key (:func:`_stage_key`)
    keys: dict[str, str]
    #: stage -> its record in ``run.json`` (empty when none), an earlier version's key replaced by the key now
    records: dict[str, dict[str, Any]]
    #: the stages whose record had such an earlier key
    rekeyed: list[str]


def key_stages(config: PipelineConfig, columns: set[str], manifest: dict[str, Any],
               fingerprint: str | None) -> KeyedStages:
    """Plan every stage (:func:`~workbench.run.stages.plan_stages`) and key it (:func:`_keyed`), with
    the stages that ``[run] stages`` leaves out but that finished and are up to date in the run folder
    available: the stages that run read their outputs, as they do after ``--stage``.

    A left-out stage counts when ``run.json`` records it ``done`` with the key it would have now (built as
    if it ran, on the stages available before it) and its files are as it left them. Each stage's plan
    depends only on the stages before it, so they are decided in order, on one plan that takes every
    left-out stage still to decide as available: a stage's key there is the one it has on the final plan.
    A stage found out of date re-plans the stages after it without it; the plan that holds is keyed once
    more only then (none left out, or all up to date: one keying, which the run uses).

    Args:
        config: the validated configuration.
        columns: the dataset's column names.
        manifest: the run folder's ``run.json`` as read (:func:`read_manifest`).
        fingerprint: the data's hash (:func:`data_fingerprint`).

    Returns:
        a :class:`KeyedStages` (``available`` empty for a new run folder).
    """
    previous = _stage_records(manifest)
    # the left-out stages that finished here, in stage order
    pending = [name for name in STAGES if name not in config.stages and previous.get(name, {}).get("status") == "done"]
    available: set[str] = set()
    while True:
        plans = plan_stages(config, columns, available | set(pending))
        keys, records, rekeyed = _keyed(config, plans, manifest, fingerprint)
        by_name = {plan.name: plan for plan in plans}
        out_of_date = False
        while pending and not out_of_date:
            name = pending.pop(0)
            plan = by_name[name]
            if plan.command is not None and plan.skip_reason == NOT_IN_STAGES and \
                    is_current(plan, records[name], keys[name], config.output):
                available.add(name)
            else:
                out_of_date = True  # the plans after it took it as available
        if not out_of_date:
            return KeyedStages(available, plans, keys, records, rekeyed)


class Manifest:
    """``run.json``: read at start, rewritten after every stage change (atomic replace)."""

    def __init__(self, run_dir: Path, config: PipelineConfig, previous: dict[str, Any] | None = None):
        """``previous``: the folder's ``run.json`` as the preflight read it (:func:`read_manifest`;
        ``None``: read it now). A damaged one reads as none: every stage runs again."""
        from workbench import __version__

        self.path = run_dir / MANIFEST_FILE
        self.previous: dict[str, Any] = read_manifest(run_dir) if previous is None else previous
        previous_stages = _stage_records(self.previous)
        self.data: dict[str, Any] = {
            "config": config.raw,
            "config_path": str(config.source_path) if config.source_path else None,
            "workbench_version": __version__,
            "started": _now(),
            "finished": None,
            "stages": {name: dict(previous_stages.get(name, {"status": "pending"})) for name in STAGES},
        }

    def update(self, name: str, **fields: Any) -> None:
        self.data["stages"][name].update(fields)
        self.save()

    def record_plan(self, plans: list[StagePlan]) -> None:
        """Record which files each stage writes (``plan``: stage -> ``outputs``, ``partial``,
        relative paths), so the report reads them from here and notes a missing one."""
        layout = RunLayout(self.path.parent)
        self.data["plan"] = {plan.name: {"outputs": layout.relative(plan.outputs), "partial": layout.relative(plan.partial)}
                             for plan in plans}

    def save(self) -> None:
        atomic_write(self.path, json.dumps(self.data, indent=2))
