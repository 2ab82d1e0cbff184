"""A dedup output folder reused for other data: the earlier run's deduplicated splits (a source
folder's ``files/``, ``<split>.jsonl``) are removed before the new ones are written, so
``workbench bias`` reads only this run's rows (a probe's reused folder joined 8 of 40 rows and
reported pass@1 .375 instead of .475). Real dedup and bias on real files."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from workbench.bias import BiasConfig, run_bias
from workbench.dedup import DedupConfig, run_dedup
from workbench.dedup.output_folder import write_manifest
from workbench.errors import DataError

_CODE = "def f{k}(values):\n    total = 0\n    for v in values:\n        total += v * {k}\n    return total\n"


def _three_rows(path):
    """``path`` as a JSON Lines file of three distinct functions (ids 0, 1, 2); returns it."""
    path.write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=i)}) + "\n" for i in range(3)))
    return path


def test_a_reused_folder_loses_the_earlier_splits(tmp_path, caplog):
    corpus = tmp_path / "corpus" / "train"
    corpus.mkdir(parents=True)
    for k in range(3):
        (corpus / f"f{k}.py").write_text(_CODE.format(k=k))
    out = tmp_path / "out"
    run_dedup(str(tmp_path / "corpus"), DedupConfig(min_tokens=1), output_dir=out)
    assert (out / "files").is_dir()

    rows = [{"task_id": f"T{t}", "sample_id": s, "completion": _CODE.format(k=t) if s < 2 else f"x = {t} + {s}\n" * (s + t),
             "passed": int(s == 0)} for t in range(4) for s in range(3)]
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with caplog.at_level(logging.WARNING, logger="workbench.dedup.writing"):
        run_dedup(str(gens), DedupConfig(code_column="completion", id_column="task_id,sample_id", min_tokens=1),
                  output_dir=out)
    assert not (out / "files").exists() and (out / "train.jsonl").is_file()
    assert any("held the outputs of an earlier dedup run" in r.getMessage() and "files" in r.getMessage()
               for r in caplog.records)
    report = run_bias(out, str(gens), BiasConfig(metric=["passed"], task_column="task_id", resamples=100))
    assert (report.join.joined, report.join.unjoined) == (12, 0)


@pytest.mark.parametrize("recorded_by", ["manifest", "report of an older workbench"])
def test_split_folders_of_a_spark_run_are_removed_by_a_local_rerun(tmp_path, recorded_by):
    # probe 27: the Spark engine writes <split>/part-* folders, which a local rerun left beside the new
    # <split>.jsonl (read twice afterwards). The folders are laid out as Spark writes them (no Spark here),
    # and recorded as a Spark run records them: in manifest.json, or (before it) by their part files alone
    data = _three_rows(tmp_path / "data.jsonl")
    out = tmp_path / "out"
    run = run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=out)
    (out / "train.jsonl").unlink()
    recorded = json.loads((out / "manifest.json").read_text())["outputs"]
    write_manifest(out, [name for name in recorded if name != "train.jsonl"] + ["train"], run.loaded.source)
    spark_split = out / "train"
    spark_split.mkdir()
    for name in ("part-00000-1f.c000.json", "_SUCCESS", ".part-00000-1f.c000.json.crc"):
        (spark_split / name).write_text("{}\n")
    if recorded_by != "manifest":  # what an older workbench wrote
        (out / "manifest.json").unlink()
        (out / "kept.csv").unlink()
    (out / "mine").mkdir()
    (out / "mine" / "notes.txt").write_text("kept")
    run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=out)
    assert not spark_split.exists() and (out / "train.jsonl").is_file()
    assert (out / "mine" / "notes.txt").read_text() == "kept"


def test_bad_output_paths_and_file_ids_fail_clearly_before_writing(tmp_path):
    data = _three_rows(tmp_path / "data.jsonl")
    with pytest.raises(DataError, match="cannot be created"):  # a file on the way: once a traceback after the search
        run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=tmp_path / "data.jsonl" / "out")
    for ids, message in ((["a", "a/b"], "cannot both be files"), (["ok", "../../escape.py"], "does not name a file inside")):
        rows = tmp_path / "ids.jsonl"
        rows.write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=k)}) + "\n" for k, i in enumerate(ids)))
        out = tmp_path / f"out_{len(message)}"
        with pytest.raises(DataError, match=message):
            run_dedup(str(rows), DedupConfig(min_tokens=1, output_format="files"), output_dir=out)
        assert not (out / "files").exists() or not any((out / "files").rglob("*"))
    assert not (tmp_path.parent / "escape.py").exists()


def test_a_code_column_with_a_number_in_one_row_is_refused(tmp_path):
    # probe 27: datasets then reads the column as JSON texts; each file was one token and nothing was analysed
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "content": _CODE.format(k=1)}) + "\n" + json.dumps({"id": "x", "content": 123}) + "\n")
    with pytest.raises(DataError, match=r"--code-column 'content' holds numbers, not text, in 1 of 2 rows of split 'train' \(e\.g\. 123 in row 2\)"):
        run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=tmp_path / "out")


def test_a_folder_without_a_dedup_report_keeps_its_files(tmp_path):
    # probe 29: a user's own train.jsonl in the -o folder was overwritten silently by the first run
    out = tmp_path / "out"
    (out / "files").mkdir(parents=True)
    (out / "files" / "mine.txt").write_text("not a dedup output")
    (out / "train.jsonl").write_text('{"a": 1}\n')
    data = _three_rows(tmp_path / "data.jsonl")
    with pytest.raises(DataError, match=r"holds train.jsonl, which this run would write, and no record of an earlier "
                                        r"`workbench dedup` run there \(manifest.json\) says it wrote them.*fresh -o"):
        run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=out)
    assert (out / "train.jsonl").read_text() == '{"a": 1}\n' and sorted(p.name for p in out.iterdir()) == ["files", "train.jsonl"]
    (out / "train.jsonl").rename(tmp_path / "moved.jsonl")
    run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=out)
    assert (out / "files" / "mine.txt").read_text() == "not a dedup output"
    assert len((out / "train.jsonl").read_text().splitlines()) == 3


def test_a_rerun_replaces_only_what_the_earlier_run_recorded(tmp_path, caplog):
    # probe 29: a rerun deleted a dataset/ folder with the user's checkpoint, a files/ folder and a test.parquet
    # it never wrote, exit 0, nothing printed
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "split": "train" if i < 3 else "test", "content": _CODE.format(k=i % 3)})
                            + "\n" for i in range(5)))
    out = tmp_path / "out"
    config = DedupConfig(min_tokens=1, split_column="split")
    run_dedup(str(data), config, output_dir=out)
    recorded = json.loads((out / "manifest.json").read_text())["outputs"]
    assert {"train.jsonl", "test.jsonl", "kept.csv", "report.json", "manifest.json"} <= set(recorded)
    (out / "dataset").mkdir()
    (out / "dataset" / "my_model_checkpoint.bin").write_text("important")
    (out / "files").mkdir()
    (out / "test.parquet").write_text('{"id": "x"}\n')
    with caplog.at_level(logging.WARNING, logger="workbench.dedup.writing"):
        run_dedup(str(data), config, output_dir=out)
    assert (out / "dataset" / "my_model_checkpoint.bin").read_text() == "important"
    assert (out / "files").is_dir() and (out / "test.parquet").read_text() == '{"id": "x"}\n'
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and "held the outputs of an earlier dedup run" in said[0]
    assert "replaced cluster_shapes.csv, clusters.json, kept.csv" in said[0] and "test.jsonl, train.jsonl" in said[0]
    # parquet splits would replace the user's test.parquet: refused before the search, nothing changed
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with pytest.raises(DataError, match=r"holds test.parquet, which this run would write.*nothing was searched"):
        run_dedup(str(data), DedupConfig(min_tokens=1, split_column="split", output_format="parquet"), output_dir=out)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    # without it, the rerun writes parquet splits and removes the jsonl ones, saying so
    (out / "test.parquet").unlink()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="workbench.dedup.writing"):
        run_dedup(str(data), DedupConfig(min_tokens=1, split_column="split", output_format="parquet"), output_dir=out)
    assert not (out / "train.jsonl").exists() and (out / "train.parquet").is_file() and (out / "dataset").is_dir()
    assert any("removed test.jsonl, train.jsonl (this run does not write them)" in r.getMessage() for r in caplog.records)


def test_an_output_folder_over_the_input_is_refused_before_anything_is_written(tmp_path):
    """-o the input folder (or a folder inside it, or the folder of an input file) would replace the input
    with its deduplicated splits: refused, and the input is untouched (probe 25b lost 34 rows that way)."""
    folder = tmp_path / "data"
    folder.mkdir()
    train = folder / "train.jsonl"
    train.write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=i % 2)}) + "\n" for i in range(4)))
    before = train.read_bytes()
    for output, message in ((folder, "is the input folder"), (folder / "out", "lies inside the input folder")):
        with pytest.raises(DataError, match=message):
            run_dedup(str(folder), DedupConfig(min_tokens=1), output_dir=output)
    with pytest.raises(DataError, match="is the folder of the input file train.jsonl"):
        run_dedup(str(train), DedupConfig(min_tokens=1), output_dir=folder)
    assert train.read_bytes() == before and sorted(p.name for p in folder.iterdir()) == ["train.jsonl"]
    run_dedup(str(folder), DedupConfig(min_tokens=1), output_dir=tmp_path / "elsewhere")  # beside it: fine
    assert len((tmp_path / "elsewhere" / "train.jsonl").read_text().splitlines()) == 2


#: the bind mount of an input folder and the two runs over it, in a mount namespace of their own (``unshare``:
#: nothing is mounted outside it, and the mount goes with the namespace, even if the test is killed)
BIND_MOUNTED = """
set -e
mount --bind "$1/data" "$1/mnt"
cd "$1"
for args in "mnt -o data/out" "data -o mnt/out" "mnt/train.jsonl -o data" "data/train.jsonl -o mnt"; do
  python -c "from workbench.cli import main; main()" dedup $args --min-tokens 1 --no-progress 2>&1 || true
done
"""


def test_an_output_folder_over_a_bind_mount_of_the_input_is_refused(tmp_path):
    # the check compared resolved paths only: the input folder under another path (a bind mount,
    # unlike a link, does not resolve to it) was taken as -o, and the splits written into the input
    folder, mounted = tmp_path / "data", tmp_path / "mnt"
    folder.mkdir()
    mounted.mkdir()
    (folder / "train.jsonl").write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=i % 2)}) + "\n"
                                                for i in range(4)))
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount --bind {folder} {mounted}"], capture_output=True,
                           check=False)
    if probe.returncode != 0:
        pytest.skip(f"no bind mount in a user namespace here: {probe.stderr.decode().strip()}")
    said = subprocess.run(["unshare", "-rm", "sh", "-c", BIND_MOUNTED, "sh", str(tmp_path)], capture_output=True,
                          text=True, check=False, timeout=600)
    lines = [" ".join(line.split()) for line in said.stdout.split("Error: ")[1:]]
    assert len(lines) == 4, said.stdout + said.stderr
    for line, (out, source) in zip(lines, [("data/out", "mnt"), ("mnt/out", "data")]):
        assert line.startswith(f"--output {tmp_path / out} lies inside the input folder {tmp_path / source}"), line
    for line, (out, file) in zip(lines[2:], [("data", "mnt/train.jsonl"), ("mnt", "data/train.jsonl")]):
        assert line.startswith(f"--output {tmp_path / out} is the folder of the input file train.jsonl"), line
    assert sorted(p.name for p in folder.iterdir()) == ["train.jsonl"] and not list(mounted.iterdir())


def test_an_earlier_output_that_holds_the_input_is_not_replaced(tmp_path):
    """``workbench dedup out/files -o out``: the rerun would replace its own input (the earlier run's
    ``files/``) with its deduplicated copy: refused before the search, the input untouched."""
    corpus = tmp_path / "corpus" / "train"
    corpus.mkdir(parents=True)
    for k in range(4):
        (corpus / f"f{k}.py").write_text(_CODE.format(k=k % 2))
    out = tmp_path / "out"
    run_dedup(str(tmp_path / "corpus"), DedupConfig(min_tokens=1), output_dir=out)
    before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(DataError, match=r"files holds this run's input .*, and this run would replace it"):
        run_dedup(str(out / "files"), DedupConfig(min_tokens=1), output_dir=out)
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_kept_source_files_are_byte_copies(tmp_path):
    """A latin-1 file with its coding cookie and a file with a byte-order mark are read as Python reads
    them; the deduplicated files/ output must hold the same bytes, not the decoded text re-encoded as UTF-8."""
    corpus = tmp_path / "corpus" / "train"
    corpus.mkdir(parents=True)
    latin = "# -*- coding: latin-1 -*-\ndef greet(name):\n    return 'caf\xe9 ' + name\n".encode("latin-1")
    bom = b"\xef\xbb\xbfdef twice(x):\n    return 2 * x\n"
    (corpus / "latin.py").write_bytes(latin)
    (corpus / "bom.py").write_bytes(bom)
    run_dedup(str(tmp_path / "corpus"), DedupConfig(min_tokens=1), output_dir=tmp_path / "out")
    files = tmp_path / "out" / "files" / "train"
    assert (files / "latin.py").read_bytes() == latin and (files / "bom.py").read_bytes() == bom

@pytest.mark.parametrize("layout", ["one file with a split column", "a folder of split files"])
def test_a_files_output_of_a_table_keeps_each_split_in_its_folder(tmp_path, layout):
    """--output-format files writes a table's kept rows to files/<split>/<id> (docs/dedup.md), however the
    table was read: a folder of data files (data/train.jsonl, data/test.jsonl) is a table, not a folder of
    source files, and its rows went to files/<id>, the splits mixed."""
    rows = {"train": [("T/0:0", 0), ("T/1:0", 1)], "test": [("T/0:1", 0), ("T/2:1", 2)]}
    if layout == "a folder of split files":
        source = tmp_path / "data"
        source.mkdir()
        for split, members in rows.items():
            (source / f"{split}.jsonl").write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=k)}) + "\n"
                                                           for i, k in members))
        config = DedupConfig(min_tokens=1, workers=1, output_format="files")
    else:
        source = tmp_path / "data.jsonl"
        source.write_text("".join(json.dumps({"id": i, "split": split, "content": _CODE.format(k=k)}) + "\n"
                                  for split, members in rows.items() for i, k in members))
        config = DedupConfig(min_tokens=1, workers=1, output_format="files", split_column="split")
    run_dedup(str(source), config, output_dir=tmp_path / "out")
    files = tmp_path / "out" / "files"
    # T/0:1 copies T/0:0 (removed from test); every other row is kept in its split's folder
    assert sorted(p.relative_to(files).as_posix() for p in files.rglob("*") if p.is_file()) == [
        "test/T/2:1", "train/T/0:0", "train/T/1:0"]
    assert (files / "train" / "T" / "1:0").read_text() == _CODE.format(k=1)

def test_a_read_only_output_folder_is_refused_before_the_search(unprivileged):
    # probe 29: an existing read-only -o folder crashed with a PermissionError traceback after the whole search
    data = _three_rows(unprivileged.folder / "data.jsonl")
    read_only = unprivileged.folder / "ro"
    read_only.mkdir()
    read_only.chmod(0o555)
    result = subprocess.run([*unprivileged.prefix, sys.executable, "-m", "workbench", "dedup", str(data), "-o",
                             str(read_only), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"Error: --output {read_only} cannot be written (Permission denied): nothing was searched" in result.stderr
    assert "Duplication" not in result.stdout  # no table: refused before the search


def test_a_folder_that_turns_read_only_during_the_search_is_a_clear_error(unprivileged):
    # the write itself failing (a folder made read-only, a full disk) is an error message, not a traceback
    data = _three_rows(unprivileged.folder / "data.jsonl")
    out = unprivileged.folder / "out"
    out.mkdir()
    unprivileged.give(out)  # the user's own folder, made read-only during the run
    script = f"""
import contextlib, os
from workbench.dedup import DedupConfig, run_dedup
from workbench.errors import DataError

@contextlib.contextmanager
def progress(description, total):
    if description == "write outputs":
        os.chmod({str(out)!r}, 0o555)
    yield lambda n: None

try:
    run_dedup({str(data)!r}, DedupConfig(min_tokens=1, workers=1), output_dir={str(out)!r}, progress=progress)
except DataError as error:
    print("DataError:", error)
"""
    result = subprocess.run([*unprivileged.prefix, sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, cwd=unprivileged.folder)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert f"DataError: the outputs cannot be written to {out}: Permission denied" in result.stdout
    assert "rerun with a writable -o folder" in result.stdout
    # not "its outputs are incomplete": they are staged, and none was put in place
    assert f"the search finished, but nothing in {out} was replaced" in result.stdout
    assert sorted(path.name for path in out.iterdir() if not path.name.startswith(".")) == []
