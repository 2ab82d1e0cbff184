"""Is the data the report reads still the data the run judged?

``workbench report RUN_DIR`` reads the dataset again (``[data] source``) for the code, the shipped
label and the shipped metric columns, while every verdict and score comes from the stage outputs
written at run time. When the data was edited after the run, the page would show new code next to
the old verdict. Two records tell it:

* ``run.json``'s ``data_fingerprint`` (:func:`workbench.run.manifest.data_fingerprint`, a hash of
  the ``[data] source`` file as the run read it), compared with the same hash of the file now;
* each execution row's ``code_sha256`` (:attr:`workbench.execute.job.Sample.code_digest`: what
  ran, the prompt of the generations and the completion as cut at the stop sequences), compared
  with the same digest of the row the report reads, so the report can say *which* samples changed.

:func:`data_check` returns the verdict for ``report.json`` (``data_check``) and, per sample, the
mark its view gets (:func:`view_mark`).
"""

from __future__ import annotations

import os
from typing import Any

from workbench.data.samples import id_text, sample_key
from workbench.formatting import count
from workbench.report.run_folder import dedup_id
from workbench.run_layout import RunLayout

#: changed sample ids listed in report.json and on the page (all are counted)
MAX_LISTED_SAMPLES = 50


def _fingerprint(source: str) -> str | None:
    from workbench.run.manifest import data_fingerprint  # the run's own hash, so both sides agree

    try:
        return data_fingerprint(source)
    except OSError:
        return None


def _executed_digests(summary: dict[str, Any] | None, rows: list[dict[str, Any]], results: list[dict[str, Any]],
                      run_dir: str | os.PathLike[str] | None = None
                      ) -> tuple[dict[tuple[str, str], str] | None, str | None]:
    """The ``code_sha256`` each data row would get from the execute stage now, under the
    settings ``summary`` (the execute summary) records (a problem set inside the run folder
    ``run_dir`` recorded relative to it: :func:`~workbench.resume_guard.recorded_path`).

    Returns:
        ``(key -> digest, None)``, or ``(None, why)`` when it cannot be computed (no recorded
        settings, results without digests, problems that cannot be read).
    """
    if not any(r.get("code_sha256") for r in results):
        return None, "the execution results record no code digest (written by an older workbench)"
    settings = (summary or {}).get("settings")
    settings = settings if isinstance(settings, dict) else None
    if settings is None or not isinstance(settings.get("completion_column"), str):
        return None, f"{RunLayout.EXECUTE_SUMMARY} records no execute settings"
    try:
        from workbench.execute.config import ExecutionConfig
        from workbench.execute.job import Sample, apply_stop_sequences, load_problems
        from workbench.resume_guard import resolved_path

        options = ExecutionConfig.options()
        settings = {**settings, "problems": resolved_path(settings.get("problems"), run_dir)}
        config = ExecutionConfig(**{k: v for k, v in settings.items() if k in options and v is not None}, offline=True)
        completion_column, prompt_column = config.completion_column, config.prompt_column
        samples = [
            # id_text, as sample_key keys the results: a null task id stays None (never "None")
            Sample(id_text(row.get("task_id")), row.get("sample_id"),
                   None if row.get(completion_column) is None else str(row.get(completion_column)),
                   None if not prompt_column else row.get(prompt_column))
            for row in rows
        ]
        stops = config.stop_sequences
        needs_problems = stops and any(s.prompt is None and s.completion is not None for s in samples)
        problems = load_problems(config) if needs_problems else {}
        if needs_problems:  # a task the problems lack was never run: no digest to compare
            samples = [s for s in samples if s.prompt is not None or s.task_id in problems]
        samples = apply_stop_sequences(samples, problems, stops)
    except Exception as error:  # noqa: BLE001 -- any failure only means "not checked", said on the page
        return None, f"the execute settings could not be replayed ({type(error).__name__}: {error})"
    return {s.key: s.code_digest for s in samples}, None


def data_check(summary: dict[str, Any] | None, run: dict[str, Any] | None, source: str | None,
               rows: list[dict[str, Any]] | None,
               results: list[dict[str, Any]] | None,
               run_dir: str | os.PathLike[str] | None = None) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """Compare the data the report reads with the data the run judged.

    Args:
        summary: the execute summary (its ``settings``), as the execution section read it
            (:func:`~workbench.report.sections.execution_section`), or ``None``.
        run: ``run.json`` (its ``data_fingerprint``), or ``None``.
        source: where the report read the rows from (``[data] source`` or ``data.jsonl``).
        rows: the rows it read (with ``task_id``/``sample_id``), or ``None``.
        results: the execution rows the report counts, or ``None``.
        run_dir: the run folder (the execute summary records the paths inside it relative to it).

    Returns:
        ``(check, marks)``. ``check`` (report.json's ``data_check``) is ``{"status", "source",
        "fingerprint", "samples", "message"}``: ``status`` is ``"changed"`` (the source's hash or
        some executed sample's code differs from the run's record), ``"unchanged"`` (all that
        could be compared matches) or ``"not checked"`` (nothing to compare); ``fingerprint``
        ``{"recorded", "current", "matches"}``; ``samples`` ``{"checked", "changed_count",
        "changed", "missing_count", "missing", "id_parts", "not_checked"}`` where ``changed`` /
        ``missing`` list up to :data:`MAX_LISTED_SAMPLES` ids (``task:sample``, as dedup's outputs
        name rows) whose code differs / that the data no longer has, ``id_parts`` gives each
        listed id's ``{"task_id", "sample_id"}`` (``None`` where the id is missing, so the page
        shows "no task id", never ``None``), and ``not_checked`` says why no sample was compared; ``message``: one
        paragraph for the page and the command line, ``None`` unless changed. ``marks``: id ->
        ``{"status": "unchanged"|"edited"|"missing", "recorded_sha256", "current_sha256"}`` for
        every compared sample (see :func:`view_mark`).
    """
    recorded = run.get("data_fingerprint") if isinstance(run, dict) else None
    fingerprint: dict[str, Any] = {"recorded": recorded, "current": None, "matches": None}
    if isinstance(recorded, str) and source is not None and source != RunLayout.DATA and os.path.exists(source):
        fingerprint["current"] = _fingerprint(source)
        fingerprint["matches"] = fingerprint["current"] == recorded if fingerprint["current"] else None
    samples: dict[str, Any] = {"checked": 0, "changed_count": 0, "changed": [], "missing_count": 0, "missing": [],
                               "id_parts": {}, "not_checked": None}
    marks: dict[str, dict[str, Any]] = {}
    if not results:
        samples["not_checked"] = "no execution results"
    elif rows is None:
        samples["not_checked"] = "the data could not be read"
    else:
        digests, samples["not_checked"] = _executed_digests(summary, rows, results, run_dir)
        for result in results if digests is not None else []:
            was = result.get("code_sha256")
            if not was:
                continue
            key = sample_key(result.get("task_id"), result.get("sample_id"))
            now = digests.get(key)
            status = "unchanged" if now == was else "missing" if now is None else "edited"
            row_id = dedup_id(*key)
            marks[row_id] = {"status": status, "recorded_sha256": was, "current_sha256": now}
            samples["checked"] += 1
            if status == "unchanged":
                continue
            listed = "changed" if status == "edited" else "missing"
            samples[f"{listed}_count"] += 1
            if len(samples[listed]) < MAX_LISTED_SAMPLES:
                samples[listed].append(row_id)
                samples["id_parts"][row_id] = {"task_id": key[0], "sample_id": key[1]}
    changed = fingerprint["matches"] is False or samples["changed_count"] > 0 or samples["missing_count"] > 0
    compared = fingerprint["matches"] is not None or samples["checked"] > 0
    status = "changed" if changed else "unchanged" if compared else "not checked"
    check = {"status": status, "source": source, "fingerprint": fingerprint, "samples": samples,
             "message": _message(source, fingerprint, samples) if changed else None}
    return check, marks


def _message(source: str | None, fingerprint: dict[str, Any], samples: dict[str, Any]) -> str:
    parts = []
    if fingerprint["matches"] is False:
        parts.append(f"the data source {source} changed after the run (its fingerprint was {fingerprint['recorded']} "
                     f"when the run read it, it is {fingerprint['current']} now)")
    edited, missing = samples["changed_count"], samples["missing_count"]
    if edited or missing:
        what = []
        if edited:
            shown = ", ".join(shown_id_text(row_id, samples.get("id_parts")) for row_id in samples["changed"][:5]) + (
                " ..." if edited > 5 else "")
            what.append(f"{count(edited, 'sample')} {'has' if edited == 1 else 'have'} other code than the code that "
                        f"was executed and scored ({shown})")
        if missing:
            what.append(f"{count(missing, 'executed sample')} {'is' if missing == 1 else 'are'} no longer in the data")
        parts.append("; ".join(what))
    elif samples["checked"]:
        parts.append(f"the code of all {samples['checked']} executed samples still matches what was run, but other "
                     "columns (shipped label, shipped metrics, prompts) may differ")
    else:
        parts.append(f"which samples changed is not known ({samples['not_checked'] or 'nothing to compare'}): any "
                     "code shown may differ from what was executed and scored")
    text = "; ".join(parts)
    return (text[:1].upper() + text[1:] + ". Verdicts and scores are the run's; code, shipped labels and shipped columns are "
            "read from the data now. Rerun `workbench run` to judge the current data.")


def shown_id_text(row_id: str, id_parts: dict[str, dict[str, Any]] | None) -> str:
    """A listed id as the message shows it: ``HumanEval/0:1``, or ``no task id:1`` for a missing
    task id (``no sample id`` for a missing sample id), as the page marks a missing id, never
    ``None:1``; ``row_id`` itself when ``id_parts`` lacks it (a report.json of an older version)."""
    parts = (id_parts or {}).get(row_id)
    if not isinstance(parts, dict):
        return row_id
    task, sample = parts.get("task_id"), parts.get("sample_id")
    return f"{'no task id' if task is None else task}:{'no sample id' if sample is None else sample}"


def view_mark(check: dict[str, Any], marks: dict[str, dict[str, Any]], row_id: str) -> dict[str, Any] | None:
    """The mark of one sample view: ``edited`` / ``missing`` (its code is not what was run), or
    ``{"status": "unverified"}`` when the data changed and this sample could not be compared;
    ``None`` when there is nothing to say (its code is what ran, or nothing changed)."""
    mark = marks.get(row_id)
    if mark is not None:
        return None if mark["status"] == "unchanged" else mark
    return {"status": "unverified"} if check.get("status") == "changed" else None
