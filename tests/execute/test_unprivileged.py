"""The sandbox as most users run it: as a normal (non-root) user. CI runs as root, so this
test drops to ``nobody`` with ``setpriv`` and runs a real script with the system Python,
workbench's execution modules copied where that user can read them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pluggy
import pytest

import workbench

SYSTEM_PYTHON = "/usr/bin/python3"
NOBODY = 65534

SCRIPT = r'''
import dataclasses, json, os, sys
from workbench.execute.isolation import IsolationLevel, SandboxUnavailableError, detect_isolation
from workbench.execute.sandbox import Sandbox, new_token
from workbench.languages.python_runner import PythonTestRunner

results = {"uid": os.getuid()}
runner = PythonTestRunner(sys.executable)
cases = {
    "correct": "    return x * 2\n",
    "wrong": "    return x\n",
    "exit0": "    import os; os._exit(0)\n",
    "home": "    import os, shutil; shutil.rmtree(os.environ['DECOY'], ignore_errors=True); return x * 2\n",
    "big": "    b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); return x * 2\n",  # its peak is measured
    # GNU time's "cannot run" line, written into its report through /proc (GNU time runs as this user here)
    "forged": ("    import os\n    for pid in (os.getppid(), 1, 2, 3):\n        try:\n"
               "            with open(f'/proc/{pid}/fd/2', 'w') as h: h.write('time: cannot run bwrap: gone\\n')\n"
               "        except OSError: pass\n    os._exit(127)\n"),
}
for level in IsolationLevel:
    try:
        sandbox = Sandbox(detect_isolation(level))
    except SandboxUnavailableError as error:
        results[level.value] = str(error)
        continue
    statuses = {}
    for name, body in cases.items():
        if name == "home" and level is not IsolationLevel.BUBBLEWRAP:
            continue  # below bubblewrap a normal user's own files are not protected (documented)
        token = new_token()
        spec = runner.prepare("def f(x):\n" + body, "def check(c):\n    assert c(2) == 4\n", "f", token)
        spec = dataclasses.replace(spec, env={**spec.env, "DECOY": os.environ["DECOY"]})
        outcome = sandbox.run(spec, token, 20.0)
        statuses[name] = outcome.status
        statuses[name + "_peak_rss_mib"] = outcome.peak_rss_mib
        if name == "home":
            statuses["decoy_intact"] = os.path.exists(os.path.join(os.environ["DECOY"], "keep.txt"))
    results[level.value] = statuses
print(json.dumps(results))
'''


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv to drop to nobody")
@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="no system Python")
def test_sandbox_as_a_normal_user():
    version = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print(sys.version_info >= (3, 11))"],
                             capture_output=True, text=True).stdout.strip()
    if version != "True":
        pytest.skip("the system Python is older than 3.11")
    root = Path(tempfile.mkdtemp(prefix="workbench-unpriv-", dir="/var/tmp"))
    try:
        os.chmod(root, 0o755)
        shutil.copytree(Path(workbench.__file__).parent, root / "workbench",
                        ignore=shutil.ignore_patterns("__pycache__", "bundled"))
        shutil.copytree(Path(pluggy.__file__).parent, root / "pluggy", ignore=shutil.ignore_patterns("__pycache__"))
        decoy = root / "decoy-home"
        decoy.mkdir()
        (decoy / "keep.txt").write_text("keep me")
        (root / "check.py").write_text(SCRIPT)
        for path in [root, *root.rglob("*")]:
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        # the decoy belongs to nobody: only the sandbox stands between the sample and it
        for path in [decoy, *decoy.rglob("*")]:
            os.chown(path, NOBODY, NOBODY)
        done = subprocess.run(
            ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--",
             SYSTEM_PYTHON, str(root / "check.py")],  # its folder (holding the copies) is on sys.path
            env={"PATH": "/usr/bin:/bin", "HOME": str(decoy), "DECOY": str(decoy)},
            cwd=root, capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        results = json.loads(done.stdout.strip().splitlines()[-1])
        assert results["uid"] == NOBODY
        assert isinstance(results["bubblewrap"], dict), results  # unprivileged bubblewrap works here
        for level in ("bubblewrap", "namespaces", "rlimits"):
            statuses = results[level]
            if isinstance(statuses, str):
                continue  # not available on this machine (the message says why)
            assert statuses["correct"] == "passed", (level, statuses)
            assert statuses["wrong"] == "failed", (level, statuses)
            assert statuses["exit0"] == "error", (level, statuses)
            assert statuses["big"] == "passed" and statuses["big_peak_rss_mib"] >= 300, (level, statuses)
            assert statuses["forged"] == "failed", (level, statuses["forged"])  # its own exit, not a sandbox error
        assert results["bubblewrap"]["home"] == "passed"
        assert results["bubblewrap"]["decoy_intact"] is True  # $HOME is hidden under bubblewrap
    finally:
        shutil.rmtree(root, ignore_errors=True)
