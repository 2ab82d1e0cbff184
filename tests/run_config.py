"""A ``workbench run`` config written for a test from its tables as Python dicts, so that a test states only
the settings it is about (tests/ is on pytest's ``pythonpath``)."""

from __future__ import annotations

import json
from pathlib import Path


def write_run_config(path: Path, tables: dict[str, dict], *, output: Path, source: Path) -> Path:
    """Write ``tables`` to ``path`` as TOML, ``[run] output`` and ``[data] source`` set to ``output`` and
    ``source``, ``[run]`` and ``[data]`` first.

    Args:
        path: the config file to write.
        tables: table name -> {key: value}; a value is a string, a whole number, a float, a boolean or a
            list of those (written as JSON, which for these values is also TOML). ``output`` and
            ``source`` are set in ``[run]`` and ``[data]`` (a table may set neither).
        output: the run folder, ``[run] output``.
        source: the generations file, ``[data] source``.

    Returns:
        ``path``.
    """
    tables = {"run": {"output": str(output), **tables.get("run", {})},
              "data": {"source": str(source), **tables.get("data", {})},
              **{name: table for name, table in tables.items() if name not in ("run", "data")}}
    path.write_text("".join(f"[{name}]\n" + "".join(f"{key} = {json.dumps(value)}\n" for key, value in table.items())
                            for name, table in tables.items()))
    return path
