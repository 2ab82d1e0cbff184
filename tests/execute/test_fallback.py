"""A fresh machine without bubblewrap (issue 12, item 1), reproduced here: ``bwrap`` taken off
PATH (a folder of links to every other program of /usr/bin), and a Python interpreter inside a
private folder, as pyenv puts it under /root. Real subprocesses, real sandbox probes.

Either the run uses the next level that works and says so before any stage, or it stops before
any stage with one sentence saying what to install or which option to set."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="needs bubblewrap to take it away")

CHECK = (
    "import json, sys\n"
    "from workbench.execute.job import ExecutionConfig, check_sandbox\n"
    "isolation = check_sandbox(ExecutionConfig(python=sys.argv[1]))\n"
    "print(json.dumps({'level': isolation.level.value, 'warning': isolation.warning}))\n"
)


@pytest.fixture(scope="module")
def path_without_bwrap() -> str:
    # outside pytest's private temp folder: the sandbox's probe user must reach `unshare` in it
    folder = Path(tempfile.mkdtemp(prefix="workbench-bin-without-bwrap-"))
    folder.chmod(0o755)
    for program in Path("/usr/bin").iterdir():
        if program.name != "bwrap":
            (folder / program.name).symlink_to(program)
    yield str(folder)  # not /bin: on a merged-/usr system it is /usr/bin
    shutil.rmtree(folder)


@pytest.fixture(scope="module")
def private_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A venv with its own copy of the interpreter, in a folder only its owner may enter."""
    private = tmp_path_factory.mktemp("private-home")
    subprocess.run([sys.executable, "-m", "venv", "--copies", "--without-pip", str(private / "venv")], check=True)
    private.chmod(0o700)
    return str(private / "venv" / "bin" / "python")


def _check(path: str, *python: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHECK, *python], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": path})


#: an interpreter every user can run (this machine's own may sit in /root, like pyenv's)
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.mark.skipif(not Path(SYSTEM_PYTHON).exists(), reason="needs a system Python every user can run")
def test_without_bubblewrap_the_next_level_is_used_with_a_warning(path_without_bwrap: str) -> None:
    done = _check(path_without_bwrap, SYSTEM_PYTHON)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert found["level"] in {"namespaces", "rlimits"}
    assert "bubblewrap" in found["warning"] and "apt-get install bubblewrap" in found["warning"]
    # with bubblewrap on PATH: the strongest level, no warning
    found = json.loads(_check(os.environ["PATH"], SYSTEM_PYTHON).stdout)
    assert found == {"level": "bubblewrap", "warning": None}


@pytest.mark.skipif(os.geteuid() != 0, reason="as a normal user samples run as that user, who can enter the folder")
def test_a_private_python_without_bubblewrap_stops_before_any_stage(
    path_without_bwrap: str, private_python: str, tmp_path: Path
) -> None:
    done = _check(path_without_bwrap, private_python)
    assert done.returncode != 0
    assert "SandboxUnavailableError" in done.stderr and "apt-get install bubblewrap" in done.stderr
    # the same interpreter under bubblewrap is usable (a parent folder may be private there)
    assert json.loads(_check(os.environ["PATH"], private_python).stdout)["level"] == "bubblewrap"

    config = tmp_path / "run.toml"
    config.write_text(
        '[data]\nsource = "humaneval-codex-python"\ncode_column = "completion_multipl_e"\n'
        f'[run]\noutput = "{tmp_path / "run"}"\nstages = ["dedup", "execute"]\n'
        f'[execute]\npython = "{private_python}"\n'
    )
    run = subprocess.run([sys.executable, "-m", "workbench", "run", str(config)], capture_output=True, text=True,
                         timeout=600, env={**os.environ, "PATH": path_without_bwrap})
    assert run.returncode == 1, run.stdout + run.stderr
    error = [line for line in run.stderr.splitlines() if line.startswith("Error: ")]
    assert len(error) == 1 and "[execute]" in error[0] and "apt-get install bubblewrap" in error[0]
    assert "python" in error[0]  # the option that accepts another interpreter
    assert not (tmp_path / "run" / "dedup").exists()  # no stage ran
