"""A sample whose stderr reaches the file-size limit (RLIMIT_FSIZE, ``--max-file-mb``): real
sandboxed runs of HumanEval/0's canonical solution after a flood of stderr. The captured stderr is
a file, so the limit covers it; the sample's write fails (Python: ``OSError: [Errno 27] File too
large``, other runtimes: ``SIGXFSZ``) and it ends as an ``error``. Its detail used to be
``harness exit status 2: EEEE...`` (the tail of its own flood), naming no limit. Reproduction from
the new-user pass newuser36 (tests/newuser36, test 2)."""

from __future__ import annotations

import json
import subprocess
import sys

from workbench.data.loading import load_humaneval
from workbench.execute.job import ExecutionConfig, run_execute


def _flooding_sample(path, mebibytes: int) -> None:
    problem = load_humaneval()[0]
    completion = (f"    import sys\n    for _ in range({mebibytes}):\n        sys.stderr.write('E' * (1 << 20))\n"
                  + problem["canonical_solution"])
    path.write_text(json.dumps({"task_id": problem["task_id"], "sample_id": 0, "completion": completion}) + "\n")


def test_stderr_over_the_default_file_size_limit_names_the_limit_and_the_option(tmp_path):
    """70 MiB of stderr under the default 64 MiB limit (the newuser36 reproduction, via the API)."""
    generations = tmp_path / "gen.jsonl"
    _flooding_sample(generations, 70)
    output = tmp_path / "out.jsonl"
    run_execute(generations, output, ExecutionConfig(timeout=30.0, workers=1, reference_cache=False))
    row = json.loads(output.read_text().splitlines()[0])
    assert row["status"] == "error", row
    detail = row["detail"]
    assert "64 MiB file-size limit" in detail and "--max-file-mb" in detail, detail
    assert "EEEEEEEEEE" not in detail, detail  # the flood itself is no explanation
    assert len(row["stderr_tail"]) <= 1000


def test_raising_max_file_mb_as_the_detail_says_lets_the_sample_pass(tmp_path):
    """``workbench execute --max-file-mb 1`` on a sample writing 2 MiB of stderr per call (HumanEval/0's
    checks call it 7 times: 14 MiB): the detail names 1 MiB and the option; the same run with
    ``--max-file-mb 32`` passes (the CLI, a real subprocess)."""
    generations = tmp_path / "gen.jsonl"
    _flooding_sample(generations, 2)
    rows = {}
    for limit in (1, 32):
        output = tmp_path / f"out{limit}.jsonl"
        done = subprocess.run([sys.executable, "-m", "workbench", "execute", str(generations), "-o", str(output),
                               "--max-file-mb", str(limit), "--workers", "1", "--no-progress"],
                              capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 3), done.stderr
        rows[limit] = json.loads(output.read_text().splitlines()[0])
    assert rows[1]["status"] == "error", rows[1]
    assert "1 MiB file-size limit" in rows[1]["detail"] and "--max-file-mb" in rows[1]["detail"], rows[1]["detail"]
    assert rows[32]["status"] == "passed", rows[32]


def test_a_sample_ended_by_sigxfsz_names_the_limit(tmp_path):
    """A sample that restores SIGXFSZ's default action (Python ignores it) and writes a 2 MiB file
    under ``max_file_mb=1`` is ``killed`` by SIGXFSZ; the detail names the limit and the option
    (it said only "ended by SIGXFSZ")."""
    problem = load_humaneval()[0]
    completion = ("    import signal\n    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
                  "    with open('big.bin', 'wb') as handle:\n        handle.write(b'x' * (2 << 20))\n"
                  + problem["canonical_solution"])
    generations = tmp_path / "gen.jsonl"
    generations.write_text(json.dumps({"task_id": problem["task_id"], "sample_id": 0, "completion": completion}) + "\n")
    output = tmp_path / "out.jsonl"
    run_execute(generations, output, ExecutionConfig(timeout=30.0, workers=1, reference_cache=False, max_file_mb=1))
    row = json.loads(output.read_text().splitlines()[0])
    assert (row["status"], row["signal"]) == ("killed", "SIGXFSZ"), row
    assert row["detail"].startswith("ended by SIGXFSZ: a file it wrote reached the 1 MiB file-size limit"), row["detail"]
    assert "--max-file-mb" in row["detail"]
