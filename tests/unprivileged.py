"""Running a command where file permissions apply, for tests of read-only outputs: root ignores
permission bits, so as root the command runs as ``nobody`` through ``setpriv``.

Such a command cannot work under pytest's ``tmp_path``: pytest keeps ``/tmp/pytest-of-<user>`` at
mode 0700 (and resets it when another session starts), so the fixture gives a folder of its own
in the temp folder. Use it as ``from unprivileged import unprivileged`` in a test module.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: the uid and gid of ``nobody``
NOBODY = 65534


@dataclass
class Unprivileged:
    """A folder the command can reach and the prefix of its command line.

    Attributes:
        folder: a fresh folder (mode 0755) for the test's files; removed afterwards.
        prefix: ``["env", "HOME=...", "setpriv", "--reuid=65534", ...]`` as root, else ``[]``.
    """

    folder: Path
    prefix: list[str]

    def give(self, path: Path) -> Path:
        """Make ``path`` the command's own (its owner when it runs as ``nobody``); returns it."""
        if self.prefix:
            os.chown(path, NOBODY, NOBODY)
        return path


@pytest.fixture()
def unprivileged() -> Iterator[Unprivileged]:
    """An :class:`Unprivileged`; skips the test as root without ``setpriv``, or where ``nobody`` cannot
    run this interpreter and import workbench (a checkout under a 0700 folder)."""
    root = os.geteuid() == 0
    if root and shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: permission bits cannot be made to apply to this test")
    folder = Path(tempfile.mkdtemp(prefix="workbench-unprivileged-"))
    folder.chmod(0o755)
    prefix = []
    if root:
        home = folder / "home"
        home.mkdir()
        os.chown(home, NOBODY, NOBODY)
        prefix = ["env", f"HOME={home}", "setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        # a checkout or venv under a 0700 folder (mktemp -d) is out of nobody's reach: nothing to test there
        reach = subprocess.run([*prefix, sys.executable, "-c", "import workbench"], capture_output=True, text=True,
                               cwd=folder)
        if reach.returncode != 0:
            shutil.rmtree(folder, ignore_errors=True)
            pytest.skip(f"nobody cannot run {sys.executable} with workbench (a parent folder is closed to it?): "
                        f"{(reach.stderr.strip().splitlines() or ['no message'])[-1]}")
    try:
        yield Unprivileged(folder, prefix)
    finally:
        for path in [folder, *folder.rglob("*")]:  # read-only folders the test made, writable again to remove
            if path.is_dir() and not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IRWXU)
        shutil.rmtree(folder, ignore_errors=True)
