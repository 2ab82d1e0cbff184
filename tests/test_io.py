"""workbench.io: the append-only JSON Lines writer (new / resume / overwrite, torn-line recovery)
and the atomic whole-file write. Real files in a temp folder, real threads."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from workbench.errors import DataError
from workbench.io import AtomicFile, JsonlWriter, atomic_open, atomic_write, cut_torn_tail, read_jsonl

ROW_A = {"task_id": "a", "sample_id": 0, "passed": 1}
ROW_B = {"task_id": "a", "sample_id": 1, "passed": 0}


def _lines(*rows: dict) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_new_refuses_a_file_with_rows_but_takes_an_empty_one(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "rows.jsonl"
    with JsonlWriter(path) as writer:  # folder created, mode "new"
        writer.write(ROW_A)
    with pytest.raises(DataError, match="already exists"):
        JsonlWriter(path, "new")
    assert read_jsonl(path) == [ROW_A]  # the refusal touched nothing
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with JsonlWriter(empty, "new") as writer:
        writer.write(ROW_B)
    assert read_jsonl(empty) == [ROW_B]


def test_overwrite_starts_again_and_resume_appends(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(_lines(ROW_A))
    with JsonlWriter(path, "resume") as writer:
        assert writer.rows == [ROW_A]
        writer.write(ROW_B)
    assert read_jsonl(path) == [ROW_A, ROW_B]
    with JsonlWriter(path, "overwrite") as writer:
        assert writer.rows == []
        writer.write(ROW_B)
    assert read_jsonl(path) == [ROW_B]


def test_resume_cuts_a_torn_last_line_so_that_row_is_written_again(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    torn = '{"task_id": "a", "sample_id": 1, "pas'
    path.write_text(_lines(ROW_A) + torn)
    assert read_jsonl(path) == [ROW_A]  # a torn line is not a row
    with pytest.raises(DataError, match="line 2"):
        read_jsonl(path, allow_torn_tail=False)
    with JsonlWriter(path, "resume") as writer:
        assert writer.rows == [ROW_A] and writer.cut_bytes == len(torn)
        writer.write(ROW_B)
    assert path.read_text() == _lines(ROW_A, ROW_B)


def test_a_complete_row_without_its_newline_is_still_cut_and_counted_once(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text(_lines(ROW_A) + json.dumps(ROW_B))  # killed between the row and its newline
    assert read_jsonl(path) == [ROW_A]
    assert read_jsonl(path, allow_torn_tail=False) == [ROW_A, ROW_B]
    with JsonlWriter(path, "resume") as writer:
        assert writer.rows == [ROW_A]
        writer.write(ROW_B)
    assert read_jsonl(path) == [ROW_A, ROW_B]


@pytest.mark.parametrize("content", [
    json.dumps([ROW_A, ROW_B]),            # json.dump of a list, no newline
    json.dumps(ROW_A, indent=2),           # pretty JSON, no newline
    "not json at all\n" + _lines(ROW_A),
])
def test_resume_refuses_a_file_that_is_not_json_lines_without_touching_it(tmp_path: Path, content: str) -> None:
    path = tmp_path / "other.json"
    path.write_text(content)
    with pytest.raises(DataError, match="line 1"):
        JsonlWriter(path, "resume")
    assert path.read_text() == content


def test_resume_applies_the_row_check_before_cutting(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    content = _lines(ROW_A) + '{"other": 1}'

    def check(row: dict, number: int) -> None:
        if "task_id" not in row:
            raise DataError(f"line {number}: no task_id")

    path.write_text(content)
    with pytest.raises(DataError, match="line 2: no task_id"):
        JsonlWriter(path, "resume", check=check)
    assert path.read_text() == content


def test_bad_mode_and_folder_are_refused(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="unknown write mode 'append'"):
        JsonlWriter(tmp_path / "x.jsonl", "append")  # type: ignore[arg-type]
    with pytest.raises(DataError, match="is a folder"):
        JsonlWriter(tmp_path, "overwrite")


def test_rows_are_on_disk_before_close_and_threads_never_interleave(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    writer = JsonlWriter(path, "new")
    writer.write({"text": "é" * 10})
    assert path.read_bytes() == ('{"text": "' + "é" * 10 + '"}\n').encode("utf-8")  # ensure_ascii=False
    long = "x" * 100_000  # larger than one pipe/buffer write

    def work(number: int) -> None:
        for repeat in range(20):
            writer.write({"thread": number, "repeat": repeat, "long": long})

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.close()
    writer.close()  # twice is harmless
    rows = read_jsonl(path)
    assert len(rows) == 81 and sorted((r["thread"], r["repeat"]) for r in rows[1:]) == [
        (n, r) for n in range(4) for r in range(20)]


def test_cut_torn_tail_scans_back_over_blocks(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b"{}\n" + b"y" * 200_000)  # the torn line spans several 64 KiB blocks
    assert cut_torn_tail(path) == 200_000 and path.read_bytes() == b"{}\n"
    assert cut_torn_tail(path) == 0
    path.write_bytes(b"z" * 70_000)  # no newline at all: nothing is a row
    assert cut_torn_tail(path) == 70_000 and path.read_bytes() == b""


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def test_atomic_write_replaces_whole_files(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "run.json"
    assert atomic_write(target, '{"a": 1}\n') == target
    atomic_write(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    atomic_write(target, "caf\udce9", errors="backslashreplace")  # a lone surrogate, escaped
    assert target.read_text() == "caf\\udce9"
    assert _leftovers(target.parent, {"run.json"}) == []


def test_an_error_while_writing_leaves_the_old_file_and_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_open(target) as handle:
            handle.write("half of the new ")
            raise RuntimeError("boom")
    with pytest.raises(UnicodeEncodeError):
        atomic_write(target, "caf\udce9")  # strict encoding fails after the temp file was opened
    assert target.read_text() == "old"
    assert _leftovers(tmp_path, {"report.json"}) == []
    missing = tmp_path / "never.json"
    with pytest.raises(RuntimeError):
        with atomic_open(missing, newline="") as handle:
            handle.write("x")
            raise RuntimeError("boom")
    assert not missing.exists() and _leftovers(tmp_path, {"report.json"}) == []


def test_atomic_file_commits_only_when_asked(tmp_path: Path) -> None:
    target = tmp_path / "model.gguf"
    kept = AtomicFile(target, "wb")
    kept.handle.write(b"weights")
    assert not target.exists()  # nothing in place before commit
    kept.commit()
    dropped = AtomicFile(target, "wb")
    dropped.handle.write(b"bad download")
    dropped.discard()
    assert target.read_bytes() == b"weights" and _leftovers(tmp_path, {"model.gguf"}) == []
    with pytest.raises(ValueError, match="mode 'w' or 'wb'"):
        AtomicFile(target, "a")
