"""Faults of the response cache as a whole (not of one entry): a ``cache.db`` damaged the way a
git commit of ``cache.db`` with a ``cache.db-wal`` of another state damages it ("database disk
image is malformed"), a folder that cannot be read or written, a full disk. Real diskcache
folders and real SQLite; ``workbench score`` runs from the command line against a scripted
OpenAI-compatible server on 127.0.0.1 (``fake_openai``)."""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys

import diskcache
import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.io import read_jsonl
from workbench.llm.cache import CachedResponse, ResponseCache, ResponseCacheError


def damaged_cache(folder) -> None:
    """Fill a real diskcache folder, then leave in it a ``cache.db`` copied at one moment with a
    ``cache.db-wal`` copied at another (the incident's committed pair): SQLite opens it, and
    ``PRAGMA integrity_check`` and some reads fail with "database disk image is malformed"."""
    work = folder.parent / f"{folder.name}.making"
    cache = diskcache.Cache(str(work))

    def fill(first, last, char):
        for i in range(first, last):
            cache.set(f"k{i}", char * (300 + i % 700))

    fill(0, 300, "a")
    cache._sql("PRAGMA wal_checkpoint(TRUNCATE)")
    early_db = (work / "cache.db").read_bytes()
    fill(300, 500, "b")
    for i in range(0, 300, 3):
        cache.delete(f"k{i}")
    later_wal = (work / "cache.db-wal").read_bytes()
    cache.close()
    shutil.rmtree(work)
    folder.mkdir()
    (folder / "cache.db").write_bytes(early_db)
    (folder / "cache.db-wal").write_bytes(later_wal)


def test_the_damaged_pair_is_malformed_for_sqlite_itself(tmp_path):
    """The reproduction is the incident's: SQLite's own check fails on it."""
    damaged_cache(tmp_path / "cache")
    connection = sqlite3.connect(tmp_path / "cache" / "cache.db")
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        connection.execute("PRAGMA integrity_check").fetchall()
    connection.close()


def test_a_damaged_database_is_refused_when_the_cache_is_opened(tmp_path):
    """diskcache opens the pair without complaint, and only the reads that meet a damaged page
    fail; every sample that met one became an ``error`` row. The open now checks the pages."""
    damaged_cache(tmp_path / "cache")
    with pytest.raises(ResponseCacheError) as caught:
        ResponseCache(tmp_path / "cache")
    message = str(caught.value)
    assert "database disk image is malformed" in message and str(tmp_path / "cache") in message
    assert "--cache off" in message and "rerun with --resume" in message and "\n" not in message


def test_a_database_damaged_after_the_open_fails_the_read_not_as_a_miss(tmp_path):
    """Damage found at a read (the check at the open passed: here the files are replaced while
    the connection is closed, and diskcache reconnects) is a fault of the cache, not a miss."""
    cache = ResponseCache(tmp_path / "cache")
    cache.put("k", CachedResponse("an answer", 1, 1, 0.0))
    cache.close()
    shutil.rmtree(tmp_path / "cache")
    damaged_cache(tmp_path / "cache")
    failures = []
    for i in range(0, 500, 7):
        try:
            cache.get(f"k{i}")
        except ResponseCacheError as error:
            failures.append(error)
    assert failures and all("malformed" in str(e) and "cannot be read" in str(e) for e in failures)
    assert cache.damaged == 0  # not counted as damaged entries read as misses


@pytest.mark.parametrize("mode", [0o000, 0o500], ids=["0000", "0500"])
def test_a_folder_that_cannot_be_read_or_written_is_refused_when_opened(unprivileged, mode):
    """A cache folder its owner made unreadable (0000) or read-only (0500) is refused at the open, in
    one message. Run in a subprocess where permission bits apply (the ``unprivileged`` fixture: as
    root, through setpriv as ``nobody`` or as root without CAP_DAC_OVERRIDE)."""
    folder = unprivileged.folder / "cache"
    folder.mkdir()
    unprivileged.give(folder)  # the user's own folder
    script = f"""
import os
from workbench.llm.cache import ResponseCache, ResponseCacheError

ResponseCache({str(folder)!r}).close()
os.chmod({str(folder)!r}, {mode:#o})
try:
    ResponseCache({str(folder)!r})
except ResponseCacheError as error:
    print("ResponseCacheError:", error)
else:
    print("opened")
finally:
    os.chmod({str(folder)!r}, 0o700)
"""
    result = subprocess.run([*unprivileged.prefix, sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, cwd=unprivileged.folder)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    assert f"ResponseCacheError: the response cache {folder} cannot be opened" in result.stdout, result.stdout
    assert "give this user read and write access" in result.stdout, result.stdout


def test_under_workbench_run_the_advice_names_config_keys(tmp_path):
    """Under ``workbench run`` (config words) there is no ``--cache`` flag to pass and the stage
    resumes itself: the advice names ``[score] cache`` and the rerun."""
    from workbench.option_words import config_words

    damaged_cache(tmp_path / "cache")
    with config_words(lambda name: f"[score] {name}"), pytest.raises(ResponseCacheError) as caught:
        ResponseCache(tmp_path / "cache")
    message = str(caught.value)
    assert '[score] cache = "off"' in message and "rerun the same command" in message and "--cache" not in message


def test_a_folder_where_no_file_can_be_made_is_refused_when_opened_even_for_root(tmp_path):
    """As root, permissions do not stop a write, but an immutable folder (``chattr +i``, ext4 and
    most Linux file systems) does: SQLite cannot make ``cache.db-wal``. One line, the fix named."""
    if os.geteuid() != 0 or shutil.which("chattr") is None:
        pytest.skip("chattr +i needs root (as a user the permissions test above covers this)")
    folder = tmp_path / "cache"
    cache = ResponseCache(folder)
    cache.put("k", CachedResponse("an answer", 1, 1, 0.0))
    cache.close()
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip(f"this file system does not take chattr +i ({tmp_path})")
    try:
        with pytest.raises(ResponseCacheError) as caught:
            ResponseCache(folder)
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    message = str(caught.value)
    assert f"the response cache {folder} cannot be opened (OperationalError: unable to open database file)" in message
    assert "read and write access" in message and "--cache off" in message and "rerun with --resume" in message


def _slice(bundled_data, tmp_path, n):
    rows = [json.loads(line) for line, _ in
            zip((bundled_data / "ice-score" / "humaneval_python_flat.jsonl").open(), range(n))]
    path = tmp_path / "gen.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _args(data, out, fake_openai, *more):
    return ["score", str(data), "--method", "ice-score", "--model", "openai/fake", "--api-base", fake_openai.api_base,
            "--output", str(out), "--generation-column", "completion_multipl_e", "--no-progress", "--retries", "0",
            "--workers", "1", *more]


def test_score_with_a_damaged_cache_stops_in_one_line_and_resume_after_the_fix_continues(fake_openai, bundled_data, tmp_path):
    """The incident: ``--resume --cache-dir cache`` with the damaged pair made every remaining
    sample an ``error`` row (``DatabaseError: database disk image is malformed``) and exited 0.
    Now the run stops at once with one line naming the folder, the SQLite error and the fix;
    the finished rows stay, and ``--resume`` after moving the folder aside scores the rest."""
    data, out, cache = _slice(bundled_data, tmp_path, 6), tmp_path / "out", tmp_path / "cache"
    runner = CliRunner()
    first = runner.invoke(app, _args(data, out, fake_openai, "--cache", "off", "--limit", "3"))
    assert first.exit_code == 0, first.output
    kept = read_jsonl(out / "scores.jsonl")
    assert len(kept) == 3
    damaged_cache(cache)
    asked = len(fake_openai.requests)

    stopped = runner.invoke(app, _args(data, out, fake_openai, "--cache-dir", str(cache), "--resume"))
    assert stopped.exit_code == 1, stopped.output
    (line,) = [line for line in stopped.output.splitlines() if line.startswith("Error:")]
    assert f"the response cache {cache} cannot be opened" in line and "database disk image is malformed" in line
    assert "--cache off" in line and "--resume" in line and f"mv {cache} {cache}.damaged" in line
    assert read_jsonl(out / "scores.jsonl") == kept  # no error rows, the finished rows kept
    assert len(fake_openai.requests) == asked  # nothing asked of the model

    cache.rename(tmp_path / "cache.damaged")
    resumed = runner.invoke(app, _args(data, out, fake_openai, "--cache-dir", str(cache), "--resume"))
    assert resumed.exit_code == 0, resumed.output
    rows = read_jsonl(out / "scores.jsonl")
    assert len(rows) == 6 and rows[:3] == kept and all(r["status"] == "ok" for r in rows)
    assert json.loads((out / "run.json").read_text())["status"] == "finished"


def test_retry_failed_rescores_the_error_rows_a_damaged_cache_left(fake_openai, bundled_data, tmp_path):
    """A run folder scored before the fix holds ``error`` rows saying ``DatabaseError: database
    disk image is malformed``; ``--resume --retry-failed`` with a usable cache scores them again."""
    data, out = _slice(bundled_data, tmp_path, 4), tmp_path / "out"
    runner = CliRunner()
    first = runner.invoke(app, _args(data, out, fake_openai, "--cache", "off"))
    assert first.exit_code == 0, first.output
    rows = read_jsonl(out / "scores.jsonl")
    for row in rows[2:]:  # as the unfixed workbench wrote them
        row.update(status="error", score=None, error="DatabaseError: database disk image is malformed")
    (out / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    asked = len(fake_openai.requests)
    retried = runner.invoke(app, _args(data, out, fake_openai, "--cache-dir", str(tmp_path / "cache"),
                                       "--resume", "--retry-failed"))
    assert retried.exit_code == 0, retried.output
    again = read_jsonl(out / "scores.jsonl")
    assert len(again) == 4 and all(r["status"] == "ok" for r in again)
    assert len(fake_openai.requests) == asked + 2


def test_a_full_disk_mid_run_stops_the_run_and_keeps_its_rows(fake_openai, bundled_data, tmp_path):
    """A full disk while answers are stored (simulated by a file-size limit, RLIMIT_FSIZE, on the
    ``workbench score`` process: a write past it fails with EFBIG, as a full disk fails with
    ENOSPC). The cache's write-ahead log reaches it first: the run stops with one line, the
    rows written so far are kept, run.json says ``failed``, and ``--resume --cache off`` finishes."""
    data, out, cache = _slice(bundled_data, tmp_path, 8), tmp_path / "out", tmp_path / "cache"
    fake_openai.answer = lambda body: "Functional Correctness: 3 " + "x" * 30_000  # stored in cache.db
    ResponseCache(cache).close()  # made before the limit: the open itself writes little
    limit = 400_000

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    args = _args(data, out, fake_openai, "--cache-dir", str(cache))[1:]
    done = subprocess.run([sys.executable, "-m", "workbench", "score", *args], capture_output=True, text=True,
                          preexec_fn=limited, timeout=300, env={**os.environ})
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    (line,) = [line for line in output.splitlines() if line.startswith("Error:")]
    assert f"the response cache {cache} cannot be written" in line, line
    assert "free disk space" in line and "--cache off" in line and "--resume" in line, line
    rows = read_jsonl(out / "scores.jsonl")
    assert 1 <= len(rows) < 8 and all(r["status"] == "ok" for r in rows)
    assert json.loads((out / "run.json").read_text())["status"] == "failed"
    resumed = CliRunner().invoke(app, _args(data, out, fake_openai, "--cache", "off", "--resume"))
    assert resumed.exit_code == 0, resumed.output
    assert len(read_jsonl(out / "scores.jsonl")) == 8


def test_the_open_check_reads_the_database_through_a_read_only_connection_of_its_own(tmp_path):
    """The check at the open (``PRAGMA quick_check``) runs on its own read-only SQLite connection,
    not through diskcache's private one: it finds the damaged pair, passes a sound cache, and
    leaves the files it checks as they were (the damaged pair is kept for whoever looks at it)."""
    from workbench.llm.cache import quick_check

    damaged_cache(tmp_path / "damaged")
    before = {name: (tmp_path / "damaged" / name).read_bytes() for name in ("cache.db", "cache.db-wal")}
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        quick_check(str(tmp_path / "damaged" / "cache.db"))
    assert {name: (tmp_path / "damaged" / name).read_bytes() for name in ("cache.db", "cache.db-wal")} == before
    cache = ResponseCache(tmp_path / "sound")
    cache.put("k", CachedResponse("an answer", 1, 1, 0.0))
    quick_check(str(tmp_path / "sound" / "cache.db"))  # while the cache's own connection is open
    cache.close()
    with pytest.raises(sqlite3.OperationalError, match="unable to open"):  # read-only: never made
        quick_check(str(tmp_path / "missing" / "cache.db"))
    assert not (tmp_path / "missing").exists()
