"""Two ``workbench dedup`` runs into the same ``-o`` at once, as two real processes: the second
must refuse at once (naming the folder, the first run's process and what to do) and leave the
first run's staging folder alone; a first run killed by SIGKILL must not block the next.

The first run is a real ``run_dedup`` in a child Python process, held just after it made its
staging folder (its ``LocalFolder.make_dir`` waits for a file) until the test lets it go; the
second is the real CLI in another process."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from workbench.dedup.output_folder import LOCK_FILE, STAGING_PREFIX

#: the first run: ``run_dedup`` that, once it made its staging folder, writes its name into
#: ``waiting`` and waits for the file ``go``
FIRST_RUN = """
import sys, time
from contextlib import contextmanager
from pathlib import Path
from workbench.dedup import DedupConfig, run_dedup
from workbench.dedup import output_folder

source, out, flags = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
made = output_folder.LocalFolder.make_dir

def make_dir(self, name):
    made(self, name)
    if name.startswith(output_folder.STAGING_PREFIX):  # the staging folder is there: hold the run here
        (flags / "waiting").write_text(name)
        while not (flags / "go").exists():
            time.sleep(0.05)

output_folder.LocalFolder.make_dir = make_dir
run = run_dedup(source, DedupConfig(split_column="split", workers=1), output_dir=out)
print("FIRST DONE", sorted(run.written))
"""


def _corpus(path: Path) -> Path:
    rng = random.Random(0)
    rows = []
    for i in range(8):
        words = [f"w{i}_{rng.randrange(10_000)}" for _ in range(12)]
        body = "\n".join(f"    {a} = {b}({c})" for a, b, c in zip(words, words[1:], words[2:]))
        rows.append({"id": f"r{i}", "split": "train" if i % 2 else "test", "content": f"def f{i}(x):\n{body}\n"})
    rows.append({**rows[0], "id": "copy"})
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _start_first(tmp_path: Path, data: Path, out: Path, script: str = FIRST_RUN,
                 what: str = "run") -> tuple[subprocess.Popen, Path]:
    """Start ``script`` (:data:`FIRST_RUN` or :data:`FIRST_API`) on ``data`` into ``out`` and wait until it
    holds the folder at its write step (it writes ``flags/waiting``, then waits for ``flags/go``); the test
    fails, naming the first ``what``, where it ends or takes over 120 s before that. Returns the process
    and the flags folder."""
    flags = tmp_path / "flags"
    flags.mkdir()
    first = subprocess.Popen([sys.executable, "-c", script, str(data), str(out), str(flags)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (flags / "waiting").exists():
        if first.poll() is not None or time.monotonic() > deadline:
            first.kill()
            pytest.fail(f"the first {what} did not reach its write step: {first.communicate()}")
        time.sleep(0.1)
    return first, flags


def _second(data: object, out: object, *flags: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from workbench.cli import main; main()", "dedup", str(data),
                           "--split-column", "split", "-o", str(out), "--no-progress", "--workers", "1", *flags],
                          check=False, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("engine", ["local", "spark"])
def test_second_run_into_the_same_folder_refuses_while_the_first_runs(tmp_path, engine, request):
    data, out = _corpus(tmp_path / "corpus.jsonl"), tmp_path / "out"
    if engine == "spark":
        request.getfixturevalue("spark_runtime")
    first, flags = _start_first(tmp_path, data, out)
    try:
        staging = (flags / "waiting").read_text()
        if engine == "spark":  # a SOURCE Spark reads and a file:// -o: the same local folder, the same lock
            second = _second(data.as_uri(), out.as_uri(), "--engine", "spark", "--spark-master", "local[1]")
        else:
            second = _second(data, out)
        assert (out / staging).is_dir(), "the second run removed the first run's live staging folder"
        assert second.returncode == 1, second.stdout + second.stderr
        line = second.stderr.strip()
        assert len(line.splitlines()) == 1, line
        assert str(out) in line and f"process {first.pid}" in line and "wait for it" in line, line
        assert not (out / "report.json").exists()  # the second run wrote nothing
    finally:
        (flags / "go").write_text("")
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0, stderr
    assert "FIRST DONE" in stdout
    assert (out / "report.json").is_file() and (out / "train.jsonl").is_file()
    assert not [name for name in os.listdir(out) if name.startswith(STAGING_PREFIX)]
    assert not (out / LOCK_FILE).exists()  # the run removed its lock file


def test_a_run_killed_by_sigkill_does_not_block_the_next(tmp_path):
    data, out = _corpus(tmp_path / "corpus.jsonl"), tmp_path / "out"
    first, _ = _start_first(tmp_path, data, out)
    first.send_signal(signal.SIGKILL)
    first.communicate(timeout=60)
    assert (out / LOCK_FILE).exists()  # the lock file stays; its lock went with the process
    second = _second(data, out)
    assert second.returncode == 0, second.stderr
    assert (out / "report.json").is_file()
    assert not [name for name in os.listdir(out) if name.startswith(STAGING_PREFIX)]  # the killed run's removed
    assert not (out / LOCK_FILE).exists()


#: the first writer through the Python API's steps (``write_outputs``, not ``run_dedup``), held as
#: :data:`FIRST_RUN` is once it made its staging folder
FIRST_API = FIRST_RUN.replace(
    "run = run_dedup(source, DedupConfig(split_column=\"split\", workers=1), output_dir=out)\n"
    "print(\"FIRST DONE\", sorted(run.written))",
    "from workbench.data import load_records\n"
    "from workbench.dedup import build_report, collect_rows, find_duplicates, write_outputs\n"
    "loaded = load_records(source, split_column=\"split\")\n"
    "result = find_duplicates(collect_rows(loaded, code_column=\"content\", id_column=\"id\"), DedupConfig(workers=1))\n"
    "written = write_outputs(result, loaded, build_report(result), out)\n"
    "print(\"FIRST DONE\", sorted(written))")


def test_write_outputs_holds_the_folder_against_a_second_writer(tmp_path):
    # write_outputs (the Python API's last step) took no lock: a `workbench dedup` run into the same
    # folder meanwhile removed its live staging folder as an interrupted run's, and two write_outputs
    # calls swapped their outputs over each other
    from workbench.data import load_records
    from workbench.dedup import (
        DedupConfig,
        build_report,
        collect_rows,
        find_duplicates,
        write_outputs,
    )
    from workbench.errors import DataError

    assert "write_outputs(result" in FIRST_API
    data, out = _corpus(tmp_path / "corpus.jsonl"), tmp_path / "out"
    first, flags = _start_first(tmp_path, data, out, FIRST_API, "writer")
    try:
        staging = (flags / "waiting").read_text()
        second = _second(data, out)  # the CLI
        assert second.returncode == 1, second.stdout + second.stderr
        line = second.stderr.strip()
        assert len(line.splitlines()) == 1 and f"process {first.pid}" in line and "wait for it" in line, line
        loaded = load_records(str(data), split_column="split")  # and the API, in this process
        result = find_duplicates(collect_rows(loaded, code_column="content", id_column="id"), DedupConfig(workers=1))
        # the holder is a write_outputs call: the message said "another `workbench dedup` run"
        with pytest.raises(DataError, match=rf"--output {out} is in use by another dedup writer \(process {first.pid}: "
                                            r"a `workbench dedup` run or a `write_outputs` call\).*wait for it"):
            write_outputs(result, loaded, build_report(result), out)
        assert (out / staging).is_dir(), "a second writer removed the first one's live staging folder"
        assert not (out / "report.json").exists()
    finally:
        (flags / "go").write_text("")
        stdout, stderr = first.communicate(timeout=300)
    assert first.returncode == 0 and "FIRST DONE" in stdout, stderr
    assert (out / "report.json").is_file() and not (out / LOCK_FILE).exists()
    # a finished writer leaves the folder free: the next write_outputs takes it
    assert sorted(write_outputs(result, loaded, build_report(result), out)) == [
        "cluster_shapes", "clusters", "kept", "manifest", "pairs", "removed", "report", "skipped", "split:test",
        "split:train"]
    assert not (out / LOCK_FILE).exists()


def test_a_writer_that_opens_the_lock_file_as_its_holder_removes_it_takes_the_folder(tmp_path, monkeypatch):
    # the holder removes .dedup.lock (still holding it) as it ends; a writer that had just opened the file
    # then won its flock on the removed file, which filelock does not count as held: it was refused as "in use
    # by another run" by a run that had finished. The race is forced here: the holder ends between the
    # second writer's open and its flock (filelock's own step, patched to do so)
    import filelock._native._unix as unix

    from workbench.dedup.output_folder import hold_output_folder
    from workbench.errors import DataError

    out = tmp_path / "out"
    out.mkdir()
    holder = hold_output_folder(out)
    holder.__enter__()
    real = unix.lock_fd_nonblocking
    raced = []

    def flock_after_the_holder_ends(fd: int) -> bool:
        monkeypatch.setattr(unix, "lock_fd_nonblocking", real)
        holder.__exit__(None, None, None)
        raced.append(os.fstat(fd).st_nlink)
        return real(fd)

    monkeypatch.setattr(unix, "lock_fd_nonblocking", flock_after_the_holder_ends)
    with hold_output_folder(out):
        assert (out / LOCK_FILE).is_file()
        refused = rf"--output {out} is in use by another dedup writer \(process {os.getpid()}: a `workbench dedup` run"
        with pytest.raises(DataError, match=refused), hold_output_folder(out):
            pass  # a live holder is still refused, after the second try too
    assert raced == [0]  # the second writer's first try was on the removed file
    assert not (out / LOCK_FILE).exists()
