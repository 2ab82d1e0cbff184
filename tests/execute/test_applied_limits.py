"""Limits and isolation as applied, not as asked: real subprocesses with lowered hard rlimits,
real sandbox probes. A hard limit below an option used to lower the sample's limit silently
(``notes: []``), and ``--isolation rlimits`` chosen while bubblewrap works warned that no
sandbox was available."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from workbench.data.loading import load_humaneval
from workbench.execute.isolation import IsolationLevel, detect_isolation
from workbench.execute.limits import MiB, ResourceLimits, applied_limits, memory_ceiling_bytes
from workbench.execute.result_file import summary_path
from workbench.execute.sandbox_helpers import available_levels

REPO = Path(__file__).resolve().parents[2]
HARD_OPEN_FILES = 512


def _lower_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (HARD_OPEN_FILES, HARD_OPEN_FILES))


def test_a_hard_limit_below_the_option_is_recorded_and_said_once(tmp_path):
    """``workbench execute --max-open-files 1024`` under a hard limit of 512 open files: each
    sample checks that it really gets 512 (it passes only then), the summary (``--json`` and the
    summary file) records asked 1024 / applied 512, and one note says so."""
    generations = tmp_path / "gen.jsonl"
    check = f"    import resource\n    assert resource.getrlimit(resource.RLIMIT_NOFILE)[1] == {HARD_OPEN_FILES}\n"
    with generations.open("w") as handle:
        for problem in load_humaneval().select(range(2)):
            handle.write(json.dumps({"task_id": problem["task_id"], "sample_id": 0,
                                     "completion": check + problem["canonical_solution"]}) + "\n")
    output = tmp_path / "results.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "workbench", "execute", str(generations), "-o", str(output), "--timeout", "30",
         "--workers", "1", "--max-open-files", "1024", "--json"],
        capture_output=True, text=True, timeout=600, preexec_fn=_lower_open_files,
        env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["counts"] == {"passed": 2}  # the samples saw the applied limit
    assert summary["limits"]["open_files"] == {"flag": "--max-open-files", "asked": 1024, "applied": HARD_OPEN_FILES,
                                               "lowered": True}
    assert summary["limits"]["address_space_bytes"]["asked"] == 4096 * MiB
    lowered = [note for note in summary["notes"] if note.startswith("--max-open-files")]
    assert lowered == [f"--max-open-files: samples get {HARD_OPEN_FILES}, not the 1024 asked: this process's hard "
                       "limit (ulimit) is lower, and a sandbox cannot raise it; results that hit this limit (oom, "
                       "killed) differ from a machine without it"]
    recorded = json.loads(summary_path(output).read_text())
    assert recorded["limits"] == summary["limits"] and recorded["isolation"] == summary["isolation"]


def test_a_lowered_memory_limit_is_named_with_its_option():
    """The kind on memory (the reported case: 3.9 GB where 8 GB was asked), in a subprocess
    whose hard address-space limit is 2 GiB."""
    script = (
        "import json, resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))\n"
        "from workbench.execute.limits import ResourceLimits, applied_limits\n"
        "item = applied_limits(ResourceLimits(address_space_bytes=8 << 30))['address_space_bytes']\n"
        "print(json.dumps({**item.as_dict(), 'note': item.note()}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    found = json.loads(done.stdout)
    assert found["asked"] == 8 << 30 and found["applied"] == 2 << 30 and found["lowered"]
    assert found["note"].startswith("--memory-mb: samples get 2048 MiB, not the 8192 MiB asked")


def test_limits_within_the_hard_limits_are_applied_as_asked():
    asked = ResourceLimits(open_files=16)
    item = applied_limits(asked)["open_files"]
    assert item.applied == 16 and not item.lowered


def test_the_memory_ceiling_of_a_cgroup_is_read(tmp_path):
    (tmp_path / "v2").write_text("4294967296\n")
    (tmp_path / "max").write_text("max\n")
    (tmp_path / "v1").write_text("9223372036854771712\n")
    assert memory_ceiling_bytes((str(tmp_path / "v2"),)) == 4 << 30
    assert memory_ceiling_bytes((str(tmp_path / "max"),)) is None
    assert memory_ceiling_bytes((str(tmp_path / "v1"),)) is None  # cgroup v1's "no limit"
    assert memory_ceiling_bytes((str(tmp_path / "absent"), str(tmp_path / "v2"))) == 4 << 30


@pytest.mark.skipif(IsolationLevel.BUBBLEWRAP not in available_levels(), reason="needs bubblewrap")
@pytest.mark.parametrize("chosen", ["rlimits", "namespaces"])
def test_a_weaker_level_chosen_by_name_says_so_not_that_none_is_available(chosen):
    if IsolationLevel(chosen) not in available_levels():
        pytest.skip(f"{chosen} is not available here")
    isolation = detect_isolation(chosen)
    assert isolation.requested and isolation.stronger_available is IsolationLevel.BUBBLEWRAP
    warning = isolation.warning
    assert "no sandbox is available" not in warning
    assert f"isolation level {chosen!r} was chosen (--isolation {chosen}) although 'bubblewrap' is available" in warning
    assert detect_isolation("bubblewrap").warning is None and detect_isolation().warning is None
