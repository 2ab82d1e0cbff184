"""The CLI starts without the heavy libraries: ``workbench --version`` and every ``--help`` took
7-9 s on 2 cores when the command modules imported their jobs (and with them datasets, pandas and
scipy) at import time. A fresh interpreter (subprocess) shows what importing the CLI loads."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = ("datasets", "pandas", "scipy", "pyarrow", "litellm", "chromadb", "tree_sitter", "datasketch")


def _loaded_after(code: str) -> set[str]:
    script = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted(sys.modules)))"
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return {name.split(".")[0] for name in json.loads(output.splitlines()[-1])}


def test_importing_the_cli_loads_none_of_the_heavy_libraries():
    assert not _loaded_after("import workbench.cli") & set(HEAVY)


def test_the_help_of_every_command_needs_none_of_them():
    code = ("from typer.main import get_command\nimport workbench.cli\n"
            "group = get_command(workbench.cli.app)\n"
            "import click\n"
            "for name, command in group.commands.items():\n"
            "    command.get_help(click.Context(command, info_name=name))")
    assert not _loaded_after(code) & set(HEAVY)
