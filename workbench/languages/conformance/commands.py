"""Test helpers of the conformance kit that run workbench's own commands on a plugin's language,
for a plugin's end-to-end tests: what ``workbench languages`` lists for it, and the near-duplicate
clusters ``workbench dedup`` finds in a folder of its files. Each runs the real command in-process
(Typer's ``CliRunner``), as a user types it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _invoke(arguments: list[str]) -> Any:
    """Run ``workbench <arguments>`` in-process; raise AssertionError with its output unless it exits 0."""
    from typer.testing import CliRunner

    from workbench.cli import app

    result = CliRunner().invoke(app, arguments)
    if result.exit_code != 0:
        raise AssertionError(f"workbench {' '.join(arguments)} exited {result.exit_code}: {result.output}")
    return result


def _json_of(result: Any, arguments: list[str]) -> Any:
    """The JSON a command printed on stdout.

    Click 8.2+ puts stderr in ``result.output`` as well (a warning a command logs while it exits 0), so
    only ``result.stdout`` is read.

    Args:
        result: the ``CliRunner`` result of ``workbench <arguments>``.
        arguments: the command's arguments, for the message.

    Returns:
        the parsed JSON.

    Raises:
        AssertionError: stdout is not JSON (the message names the command and shows the start of
            stdout and of stderr).
    """
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as error:
        try:
            stderr = result.stderr
        except ValueError:  # a runner that mixes stderr into stdout keeps no stderr of its own
            stderr = ""
        raise AssertionError(f"workbench {' '.join(arguments)} printed no JSON on stdout ({error}): "
                             f"stdout {result.stdout[:300]!r}, stderr {stderr[:300]!r}") from error


def languages_row(name: str) -> dict[str, Any]:
    """The row ``workbench languages --json`` lists for the language ``name``.

    Args:
        name: the plugin's ``name`` (not an alias).

    Returns:
        the row: ``name``, ``aliases``, ``extensions``, ``distribution``, ``grammar``,
        ``grammar_version``, ``capabilities`` (``tokens``, ``decompose``, ``execute``) and the rest
        the command lists.

    Raises:
        AssertionError: the command fails, or lists no language of that name (the message says
            which it lists).
    """
    rows = _json_of(_invoke(["languages", "--json"]), ["languages", "--json"])
    for row in rows:
        if row["name"] == name:
            return row
    raise AssertionError(f"workbench languages lists no {name!r}; it lists {[row['name'] for row in rows]}")


def dedup_clusters(folder: Path, files: Mapping[str, str], min_tokens: int = 5) -> list[list[str]]:
    """Write ``files`` under ``folder / "data"``, run ``workbench dedup`` on that folder, and return its
    near-duplicate clusters (Allamanis 2019: Jaccard similarity of identifier and literal tokens).

    The folder loader picks each file's language plugin by its extension, as it does for a user's data.

    Args:
        folder: an empty working folder (e.g. pytest's ``tmp_path``); the output goes to ``folder / "out"``.
        files: path relative to the data folder (``train/a.java``; the first part is the split) -> source text.
        min_tokens: ``--min-tokens``: files with fewer identifier and literal tokens are not compared.

    Returns:
        each cluster as the sorted list of its files' relative paths (``clusters.json``, in its order).

    Raises:
        AssertionError: the command fails (the message quotes its output).
    """
    data = folder / "data"
    for relative, text in files.items():
        (data / relative).parent.mkdir(parents=True, exist_ok=True)
        (data / relative).write_text(text, encoding="utf-8")
    _invoke(["dedup", str(data), "--min-tokens", str(min_tokens), "-o", str(folder / "out")])
    return [sorted(cluster) for cluster in json.loads((folder / "out" / "clusters.json").read_text(encoding="utf-8"))]
