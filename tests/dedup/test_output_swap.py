"""The swap at the end of a run (:func:`workbench.dedup.output_folder.staged_outputs`) when it is
cut off part-way: a rename that fails (a full disk, a folder made read-only, a Hadoop store that says
no) or a Ctrl-C between two renames. The earlier run's outputs must come back as they were, the
staging folder must go, and nothing an interrupted swap set aside may be deleted by the next run.
Real files in a temporary folder; the failing rename is a real ``os.rename`` onto a path that
cannot be made (a missing folder), on the Nth rename."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from workbench.dedup.output_folder import (
    MANIFEST,
    STAGING_PREFIX,
    LocalFolder,
    staged_outputs,
    write_manifest,
)
from workbench.errors import DataError

EARLIER = {"clusters.json": "earlier clusters", "report.json": "earlier report", "test.jsonl": "earlier test",
           "train.jsonl": "earlier train"}


class _BreaksOnRename(LocalFolder):
    """A local folder whose ``nth`` rename fails: with a real OSError (the rename is pointed at a
    folder that does not exist) or with ``KeyboardInterrupt`` (a Ctrl-C landing there)."""

    def __init__(self, path: Path, nth: int, interrupt: bool = False) -> None:
        super().__init__(path)
        self.nth, self.interrupt, self.renames = nth, interrupt, 0

    def rename(self, name: str, new: str) -> None:
        self.renames += 1
        if self.renames == self.nth:
            if self.interrupt:
                raise KeyboardInterrupt
            new = f"no-such-folder/{new}"
        super().rename(name, new)


def _earlier_run(out: Path) -> dict[str, str]:
    """``out`` as an earlier run left it (its outputs and manifest); returns every file -> text."""
    out.mkdir()
    for name, text in EARLIER.items():
        (out / name).write_text(text)
    write_manifest(out, sorted(EARLIER), "earlier.jsonl")
    (out / "mine.txt").write_text("the user's")
    return _files(out)


def _files(out: Path) -> dict[str, str]:
    return {path.relative_to(out).as_posix(): path.read_text() for path in sorted(out.rglob("*")) if path.is_file()}


def _rerun(folder: LocalFolder) -> None:
    """A run writing train.jsonl and clusters.json (not test.jsonl, report.json) into ``folder``."""
    with staged_outputs(folder, "data.jsonl", ["train.jsonl", "clusters.json", MANIFEST]) as staging:
        for name in ("train.jsonl", "clusters.json"):
            (folder.path / staging / name).write_text(f"new {name}")
        write_manifest(folder.path / staging, ["train.jsonl", "clusters.json"], "data.jsonl")


@pytest.mark.parametrize("interrupt", [False, True], ids=["rename fails", "ctrl-c"])
@pytest.mark.parametrize("nth", [1, 3, 4, 6], ids=["first aside", "third aside", "last aside", "second in"])
def test_a_swap_cut_off_part_way_puts_the_earlier_outputs_back(tmp_path, nth, interrupt):
    # renames: 4 earlier outputs set aside (1-4), then the 2 new ones moved in (5, 6)
    out = tmp_path / "out"
    before = _earlier_run(out)
    with pytest.raises(KeyboardInterrupt if interrupt else DataError) as raised:
        _rerun(_BreaksOnRename(out, nth, interrupt))
    assert _files(out) == before  # every earlier output, its manifest, nothing of the rerun
    assert not [path for path in out.iterdir() if path.name.startswith(STAGING_PREFIX)]
    if not interrupt:
        assert "the earlier outputs are as they were" in str(raised.value)
    _rerun(LocalFolder(out))  # and a rerun then goes through
    assert json.loads((out / MANIFEST).read_text())["outputs"] == ["clusters.json", MANIFEST, "train.jsonl"]
    assert (out / "train.jsonl").read_text() == "new train.jsonl" and not (out / "test.jsonl").exists()


def test_what_a_killed_swap_set_aside_is_not_deleted_by_the_next_run(tmp_path, caplog):
    # a swap killed outright (SIGKILL, power) leaves the earlier outputs in <staging>/.replaced: the next
    # run removed every staging folder it found, and them with it
    out = tmp_path / "out"
    _earlier_run(out)
    left = out / f"{STAGING_PREFIX}0badc0de"
    (left / ".replaced").mkdir(parents=True)
    (out / "test.jsonl").rename(left / ".replaced" / "test.jsonl")
    (left / "half-written.jsonl").write_text("x")
    with caplog.at_level(logging.WARNING, logger="workbench.dedup.writing"):
        _rerun(LocalFolder(out))
    assert (left / ".replaced" / "test.jsonl").read_text() == "earlier test"
    said = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert f"{left.name} holds outputs of an earlier run set aside by a swap that was cut off" in said, said
    # a staging folder without such outputs (an interrupted write) is removed
    (left / ".replaced" / "test.jsonl").unlink()
    _rerun(LocalFolder(out))
    assert not left.exists()


def _corpus(path: Path, shift: int = 0) -> Path:
    code = "def f{k}(values):\n    total = {k}\n    for v in values:\n        total += v * {k}\n    return total\n"
    path.write_text("".join(json.dumps({"id": i, "content": code.format(k=(i + shift) % 3)}) + "\n" for i in range(6)))
    return path


def test_ctrl_c_while_a_local_run_writes_says_the_earlier_outputs_are_untouched(tmp_path, monkeypatch):
    # the CLI said "outputs it had begun to write may be incomplete: run it again" for dedup too, while
    # the outputs are staged and an interrupted rerun leaves the earlier ones as they were. The Ctrl-C lands
    # (as KeyboardInterrupt, the way Python raises it on SIGINT) once the small outputs are staged, while
    # the splits are written; a real SIGINT: test_spark_output_folder's Ctrl-C test
    from typer.testing import CliRunner

    from workbench.cli import app
    from workbench.dedup import DedupConfig, run_dedup, writing

    out = tmp_path / "out"
    run_dedup(str(_corpus(tmp_path / "earlier.jsonl")), DedupConfig(min_tokens=1), output_dir=out)
    before = {path.name: path.read_bytes() for path in out.iterdir()}

    def interrupted(*args, **kwargs):
        assert any(path.name.startswith(STAGING_PREFIX) for path in out.iterdir())  # writing into the staging folder
        raise KeyboardInterrupt

    monkeypatch.setattr(writing, "_write_splits", interrupted)
    result = CliRunner().invoke(app, ["dedup", str(_corpus(tmp_path / "data.jsonl", shift=1)), "--min-tokens", "1",
                                      "-o", str(out), "--no-progress"])
    said = " ".join(result.output.split())
    assert result.exit_code == 130, result.output
    assert (f"Interrupted: dedup stopped before it finished (exit status 130); nothing in -o {out} was replaced: it "
            "holds what it held before") in said and "may be incomplete" not in said and "Traceback" not in said
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before  # no staging folder either
    # without -o nothing is written, and it says that
    monkeypatch.setattr("workbench.dedup.job.find_duplicates", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    result = CliRunner().invoke(app, ["dedup", str(tmp_path / "data.jsonl"), "--min-tokens", "1", "--no-progress"])
    assert result.exit_code == 130 and "no -o was given, so nothing was written" in " ".join(result.output.split())


def test_a_swap_on_an_object_store_cut_off_part_way_says_where_things_are(tmp_path):
    # an object store's rename copies, so the earlier outputs are deleted, not set aside, and cannot be put
    # back: the error said only Hadoop's reason, not what the folder now holds
    out = tmp_path / "out"
    _earlier_run(out)
    folder = _BreaksOnRename(out, nth=2)
    folder.cheap_renames = False  # as a HadoopFolder on s3a:// (renames: the 2 new outputs moved in)
    with pytest.raises(DataError, match=r"swapping in this run's outputs stopped part-way .*: the earlier outputs it "
                                        r"had deleted are gone, this run's clusters.json are in place, the rest in "
                                        rf".*{STAGING_PREFIX}\w+: rerun to write them all"):
        _rerun(folder)
    assert (out / "clusters.json").read_text() == "new clusters.json" and not (out / "test.jsonl").exists()


def test_the_ctrl_c_message_hedges_for_an_object_store_only():
    from workbench.dedup.output_folder import interrupted_message

    for where in ("out", "file:///data/out", "hdfs://nn/out", "viewfs://t/out"):
        assert "nothing in -o" in interrupted_message(where) and "object store" not in interrupted_message(where)
    said = interrupted_message("s3a://bucket/out")
    assert "if it was not swapping in its outputs at the end (on an object store" in said


class _BreaksOnStagingRemoval(LocalFolder):
    """A local folder whose removal of a staging folder fails (a real ``OSError``: a file there that
    cannot be deleted) or is cut by a Ctrl-C (``KeyboardInterrupt``), before anything is removed."""

    def __init__(self, path: Path, error: BaseException) -> None:
        super().__init__(path)
        self.error = error

    def remove(self, name: str) -> None:
        if name.startswith(STAGING_PREFIX):
            raise self.error
        super().remove(name)


def test_a_failed_clean_up_after_a_complete_swap_keeps_the_run_and_is_cleared_by_the_next(tmp_path, caplog):
    # the staging folder (holding the earlier outputs set aside) is removed after the swap: an OSError there
    # escaped, and run_dedup said "nothing in -o was replaced" of a folder that held the new outputs; the
    # next run then kept the set-aside outputs, said to be those of "a swap that was cut off"
    out = tmp_path / "out"
    _earlier_run(out)
    _rerun(_BreaksOnStagingRemoval(out, PermissionError(13, "Permission denied")))
    assert (out / "train.jsonl").read_text() == "new train.jsonl" and not (out / "test.jsonl").exists()
    assert json.loads((out / MANIFEST).read_text())["outputs"] == ["clusters.json", MANIFEST, "train.jsonl"]
    with caplog.at_level(logging.WARNING):
        _rerun(LocalFolder(out))
    assert "cut off" not in caplog.text, caplog.text
    assert not [path for path in out.iterdir() if path.name.startswith(STAGING_PREFIX)]


def test_a_ctrl_c_in_the_clean_up_after_a_complete_swap_says_the_outputs_are_in_place(tmp_path):
    from workbench.dedup.output_folder import OutputsInPlace

    out = tmp_path / "out"
    _earlier_run(out)
    with pytest.raises(OutputsInPlace) as raised:  # a KeyboardInterrupt: the CLI says they are in place
        _rerun(_BreaksOnStagingRemoval(out, KeyboardInterrupt()))
    assert sorted(Path(path).name for path in raised.value.written.values()) == ["clusters.json", MANIFEST,
                                                                                 "train.jsonl"]
    assert (out / "clusters.json").read_text() == "new clusters.json"


class _StopsRenaming(LocalFolder):
    """A local folder whose renames all fail from the ``nth`` on (made read-only part-way, say):
    the swap's and then its undo's, with a real OSError (the rename is pointed at a missing folder)."""

    def __init__(self, path: Path, nth: int, interrupt: bool = False) -> None:
        super().__init__(path)
        self.nth, self.interrupt, self.renames = nth, interrupt, 0

    def rename(self, name: str, new: str) -> None:
        self.renames += 1
        if self.renames == self.nth and self.interrupt:
            raise KeyboardInterrupt  # a Ctrl-C there, then the undo's renames fail
        super().rename(name, f"no-such-folder/{new}" if self.renames >= self.nth else new)


@pytest.mark.parametrize("interrupt", [False, True], ids=["rename fails", "ctrl-c"])
def test_a_swap_whose_undo_fails_too_does_not_say_the_earlier_outputs_are_as_they_were(tmp_path, interrupt):
    # the error said "the earlier outputs are as they were and this run's were removed" (a Ctrl-C: "nothing in
    # -o was replaced") after an undo that had failed, said only in a log line above it: clusters.json and
    # report.json were in the staging folder
    out = tmp_path / "out"
    _earlier_run(out)
    with pytest.raises(DataError) as raised:
        _rerun(_StopsRenaming(out, nth=3, interrupt=interrupt))  # 2 earlier outputs set aside, then no rename
    said = str(raised.value)
    assert "as they were" not in said, said
    staging = next(path for path in out.iterdir() if path.name.startswith(STAGING_PREFIX))
    aside = sorted(path.name for path in (staging / ".replaced").iterdir())
    assert aside == ["clusters.json", "report.json"]
    assert "could not be undone" in said and str(staging / ".replaced") in said and "clusters.json, report.json" in said
