"""The report of a ``workbench run`` folder: ``report.json`` (every number, machine-readable) and
``report.html`` (one self-contained page built from that JSON alone).

* :func:`build_report_data` -- read the run folder (:mod:`.run_folder`, :mod:`.stages`,
  :mod:`.sections`, :mod:`.samples`) into the report dict;
* :func:`render_html` -- the page (:mod:`.html`, :mod:`.plots`, ``templates/report.html.j2``);
* :func:`write_report` -- both files, written atomically into the run folder.

Notebook use::

    from workbench.report import write_report
    json_path, html_path = write_report("runs/humaneval")
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from workbench.errors import WorkbenchError
from workbench.io import atomic_write, require_output_folder
from workbench.report.collect import REPORT_SCHEMA, build_report_data
from workbench.report.html import render_html
from workbench.report.references import REFERENCE_CORRELATIONS

from workbench.run_layout import RunLayout

REPORT_JSON = RunLayout.REPORT_JSON
REPORT_HTML = RunLayout.REPORT_HTML

#: what a run folder holds at least one of (``run.json`` from the pipeline, or a stage's folder)
_RUN_FOLDER_MARKS = RunLayout.MARKS


def write_report(run_dir: str | os.PathLike[str]) -> tuple[Path, Path]:
    """(Re)build the report of a finished or partial run folder.

    Args:
        run_dir: the run folder.

    Returns:
        ``(RUN_DIR/report.json, RUN_DIR/report.html)``.

    Raises:
        WorkbenchError: ``run_dir`` is not a folder, or holds neither ``run.json`` nor a stage
            folder (a mistyped path such as ``.`` gets no stray report files), or is another
            command's output folder (a ``workbench score -o`` folder: its own ``run.json``, no stage folder);
            DataError: ``run_dir`` cannot be written (:func:`workbench.io.require_output_folder`),
            found before the folder is read.
        OSError: the files cannot be written all the same (a full disk).

    Example::

        from workbench import write_report

        json_path, html_path = write_report("runs/humaneval")
    """
    folder = Path(run_dir)
    if folder.is_dir() and not any((folder / name).exists() for name in _RUN_FOLDER_MARKS):
        raise WorkbenchError(
            f"{str(folder)!r} is not a run folder: it has none of {', '.join(_RUN_FOLDER_MARKS)} "
            "(give the folder `workbench run` wrote, e.g. runs/humaneval)"
        )
    _refuse_other_commands_folder(folder)
    require_output_folder(folder, f"the run folder {folder}")  # one not writable: now, not after reading it
    data = build_report_data(folder)
    # the HTML is rendered from the JSON as written, so the page shows exactly what the file holds
    text = json.dumps(data, indent=1, ensure_ascii=True, allow_nan=False, default=str)
    html = render_html(json.loads(text))
    json_path, html_path = folder / REPORT_JSON, folder / REPORT_HTML
    # data may hold lone surrogates (undecodable bytes kept by a loader): escaped, never a crash
    atomic_write(json_path, text + "\n", errors="backslashreplace")
    atomic_write(html_path, html, errors="backslashreplace")
    return json_path, html_path


def _refuse_other_commands_folder(folder: Path) -> None:
    """Raise :class:`WorkbenchError` for the output folder of a single command that holds a
    ``run.json`` of its own (``workbench score -o``: ``rows_written``, ``statuses``, no
    ``stages``) and no stage folder: its report would list every stage as missing."""
    if any((folder / name).is_dir() for name in _RUN_FOLDER_MARKS if name != RunLayout.MANIFEST):
        return
    try:
        manifest = json.loads((folder / RunLayout.MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent or damaged: the report notes it
        return
    if isinstance(manifest, dict) and "stages" not in manifest:
        made_by = " (a `workbench score -o` folder)" if "statuses" in manifest else ""
        raise WorkbenchError(
            f"{str(folder)!r} is not a run folder: its run.json is not `workbench run`'s{made_by} and it has none "
            f"of the stage folders {', '.join(n for n in _RUN_FOLDER_MARKS if n != RunLayout.MANIFEST)}; give the "
            "folder `workbench run` wrote (e.g. runs/humaneval); a score folder's table for correlate is its "
            "scores_wide.jsonl"
        )


__all__ = [
    "REFERENCE_CORRELATIONS",
    "REPORT_HTML",
    "REPORT_JSON",
    "REPORT_SCHEMA",
    "build_report_data",
    "render_html",
    "write_report",
]
