"""The output folder of a run whose splits Spark writes (a SOURCE URI, ``--engine spark``), real
Spark ``local[2]`` (the shared ``spark`` fixture) and a real ``workbench dedup`` process for Ctrl-C.

The folder is protected as a plain local ``-o DIR`` is (:mod:`workbench.dedup.output_folder`),
whether it is given as a path, as a ``file://`` URI (the local folder it names) or as a URI Hadoop
writes (``viewfs://`` mounted on a local folder here: the route ``s3a://`` and ``hdfs://`` take,
through Hadoop's FileSystem): a file or folder no earlier run recorded is refused, an earlier run's
outputs that this run does not write again are removed and said, and the new outputs are written
into a staging folder and swapped in only when the run has finished, so an interrupted rerun leaves
the earlier outputs as they were (probe 31)."""

from __future__ import annotations

import json
import logging
import secrets
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from workbench.dedup import DedupConfig, run_dedup
from workbench.dedup.output_folder import STAGING_PREFIX
from workbench.errors import DataError

_CODE = "def f{k}(values):\n    total = {k}\n    for v in values:\n        total += v * {k} - {j}\n    return total\n"
ROUTES = ("path", "file_uri", "hadoop")


def _corpus(folder: Path, rows: int = 60, copies: int = 3) -> Path:
    """``folder/train.jsonl`` and ``folder/test.jsonl``: rows k and k + 20 are near copies when ``copies``
    sets them apart (one in ``copies`` identical)."""
    folder.mkdir(parents=True, exist_ok=True)
    for split in ("train", "test"):
        (folder / f"{split}.jsonl").write_text("".join(
            json.dumps({"id": f"{split}{k}", "content": _CODE.format(k=k % 20, j=k % copies)}) + "\n"
            for k in range(rows)))
    return folder


@contextmanager
def _output(spark, route: str, folder: Path):
    """The ``-o`` of a route for the local ``folder``: its path, its ``file://`` URI, or a
    ``viewfs://`` URI Hadoop maps onto it (a scheme other than ``file``, written through Hadoop's
    FileSystem as an ``s3a://`` or ``hdfs://`` folder is)."""
    folder.mkdir(parents=True, exist_ok=True)
    if route == "path":
        yield str(folder)
    elif route == "file_uri":
        yield folder.as_uri()
    else:
        with _mounted(spark, folder) as uri:
            yield uri


def _config(**options) -> DedupConfig:
    return DedupConfig(engine="spark", id_column="id", min_tokens=1, output_format="jsonl", **options)


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but hidden ones at its top (a staging folder): relative path -> bytes."""
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*"))
            if path.is_file() and not path.relative_to(folder).parts[0].startswith(".")}


@pytest.mark.parametrize("route", ROUTES)
def test_a_folder_no_run_wrote_is_refused_before_the_search(spark, tmp_path, route):
    # probe 31: -o file:///abs/out replaced the user's own train/ folder
    source = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    (out / "train").mkdir(parents=True)
    (out / "train" / "notes.txt").write_text("mine")
    refused = r"holds train, which this run would write, and no record of an earlier `workbench dedup` run there"
    with _output(spark, route, out) as where, pytest.raises(DataError, match=refused + r".*nothing was searched"):
        run_dedup(source.as_uri(), _config(), output_dir=where)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == ["train", "train/notes.txt"]


def test_a_file_uri_output_over_a_file_uri_source_is_refused(spark, tmp_path):
    # as a path -o over a path SOURCE (test_reused_output): the splits would land in the input folder
    source = _corpus(tmp_path / "data")
    with pytest.raises(DataError, match="lies inside the input folder"):
        run_dedup(source.as_uri(), _config(), output_dir=(source / "out").as_uri())
    assert sorted(p.name for p in source.iterdir()) == ["test.jsonl", "train.jsonl"]


@pytest.mark.parametrize("route", ROUTES)
def test_a_rerun_removes_what_it_does_not_write_again_and_says_so(spark, tmp_path, route, caplog):
    # probe 31: with -o file://, the test/ split of an earlier run stayed, recorded nowhere, and nothing was said
    source = _corpus(tmp_path / "data")
    out = tmp_path / "out"
    with _output(spark, route, out) as where:
        run_dedup(source.as_uri(), _config(), output_dir=where)
        assert (out / "test").is_dir() and (out / "train").is_dir()
        (out / "mine.txt").write_text("kept")
        with caplog.at_level(logging.WARNING, logger="workbench.dedup.writing"):
            run = run_dedup(source.as_uri(), _config(split=("train",)), output_dir=where)
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and "held the outputs of an earlier dedup run (of " + source.as_uri() in said[0], said
    assert "replaced cluster_shapes.csv, clusters.json" in said[0] and ", train; removed test (this run does not " \
                                                                      "write them)" in said[0], said
    assert not (out / "test").exists() and list((out / "train").glob("part-*.json"))
    assert (out / "mine.txt").read_text() == "kept"
    recorded = json.loads((out / "manifest.json").read_text())["outputs"]
    assert "train" in recorded and "test" not in recorded
    # nothing unlisted, no staging folder (viewfs's local file system keeps .crc files beside the small ones)
    assert sorted(p.name for p in out.iterdir() if not p.name.endswith(".crc")) == sorted({*recorded, "mine.txt"})
    assert sorted(run.written) == sorted({"clusters", "cluster_shapes", "pairs", "removed", "kept", "skipped", "report",
                                          "manifest", "split:train"})
    unlocked = [note for note in run.notes if "is not locked" in note]
    if route == "hadoop":
        assert run.written["split:train"] == f"{where}/train"
        # no lock for a folder Hadoop writes: said once (a local one holds .dedup.lock, said nowhere)
        assert unlocked == [(f"-o {where} is not locked: a folder written through Hadoop's file system (viewfs://) "
                             f"has no lock here, so a second run into it at the same time is not refused and would mix "
                             f"its outputs with this run's: start one run at a time per -o")], run.notes
    else:  # a file:// URI is the local folder it names
        assert run.written["split:train"] == str(out / "train")
        assert not unlocked, run.notes


def test_ctrl_c_while_the_outputs_are_written_keeps_the_earlier_run(spark, tmp_path):
    # probe 31: Ctrl-C during a Spark rerun had already removed the earlier run's outputs
    out = tmp_path / "out"
    config = {"engine": "spark", "id_column": "id", "min_tokens": 1, "output_format": "jsonl"}
    run_dedup(_corpus(tmp_path / "earlier", rows=300).as_uri(), DedupConfig(**config), output_dir=out.as_uri())
    source = _corpus(tmp_path / "data", rows=300, copies=7)  # other rows: other outputs
    before = _tree(out)
    assert {"manifest.json", "report.json"} <= set(before) and any(name.startswith("train/part-") for name in before)

    def stamps() -> dict[Path, int]:  # but the file -o's check of the folder creates and removes at once
        return {path: path.stat().st_mtime_ns for path in out.rglob("*") if ".workbench-write-probe" not in path.name}

    earlier = stamps()

    def writing() -> bool:  # the rerun has begun to write (a new staging folder, or a changed file)
        try:
            return stamps() != earlier
        except FileNotFoundError:  # removed while listed
            return True

    # Spark writes the splits in jobs of a second or more after the first file: time to interrupt
    command = [sys.executable, "-m", "workbench", "dedup", source.as_uri(), "--engine", "spark", "--spark-master",
               "local[2]", "--id-column", "id", "--min-tokens", "1", "--output-format", "jsonl", "-o", out.as_uri(),
               "--no-progress"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509 -- as ctrl_c.py
    deadline = time.monotonic() + 600
    while not writing() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert _tree(out) == before  # the earlier outputs as they were, none of the new ones in their place
    # and the message says so (not the generic "outputs it had begun to write may be incomplete")
    said = " ".join(stderr.split())
    assert f"Interrupted: dedup stopped before it finished (exit status 130); nothing in -o {out.as_uri()} was " \
           "replaced: it holds what it held before" in said, stderr
    assert "may be incomplete" not in said
    assert not [path for path in out.iterdir() if path.name.startswith(STAGING_PREFIX)]  # as it says: removed
    # a rerun finishes, and clears what the interrupted one left of its staging folder
    run_dedup(source.as_uri(), DedupConfig(**config), output_dir=out.as_uri())
    assert not [path for path in out.iterdir() if path.name.startswith(STAGING_PREFIX)]
    assert set(_tree(out)) != set(before)  # new part files


@contextmanager
def _mounted(spark, folder: Path):
    """A ``viewfs://`` URI Hadoop maps onto the local ``folder`` (:func:`_output`'s hadoop route)."""
    table = f"wb{secrets.token_hex(4)}"  # a mount table of its own: Hadoop caches a file system per authority
    key = f"fs.viewfs.mounttable.{table}.link./d"
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    conf.set(key, folder.as_uri())
    try:
        yield f"viewfs://{table}/d"
    finally:
        conf.unset(key)


def test_an_output_over_a_glob_source_is_refused(tmp_path):
    # a file:// glob SOURCE (Spark reads globs) named no existing path, so -o inside its folder was taken:
    # the outputs landed among the input files, a rerun of `data/*` reading them back as input
    source = _corpus(tmp_path / "data")
    for output in (source / "out", source):
        for pattern in ("*.jsonl", "*", "tr*/"):
            with pytest.raises(DataError, match="input folder"):
                run_dedup(f"{source.as_uri()}/{pattern}", _config(), output_dir=output)
    assert sorted(p.name for p in source.iterdir()) == ["test.jsonl", "train.jsonl"]


def test_a_hadoop_output_over_a_hadoop_source_is_refused(spark, tmp_path):
    # a path -o over a path SOURCE is refused; the same two as Hadoop URIs were taken, the outputs
    # written into the input folder (and an earlier output read as input replaced by its own rerun)
    source = _corpus(tmp_path / "data")
    with _mounted(spark, tmp_path) as root:
        for output in (f"{root}/data/out", f"{root}/data/", f"{root}//data/./out/"):
            for read in (f"{root}/data", f"{root}/data/*.jsonl"):
                with pytest.raises(DataError, match="input folder"):
                    run_dedup(read, _config(), output_dir=output)
        assert sorted(p.name for p in source.iterdir()) == ["test.jsonl", "train.jsonl"]
        run_dedup(f"{root}/data", _config(), output_dir=f"{root}/out")
        before = _tree(tmp_path / "out")
        with pytest.raises(DataError, match=r"train holds this run's input .*, and this run would replace it"):
            run_dedup(f"{root}/out/train/", _config(), output_dir=f"{root}/out")
    assert _tree(tmp_path / "out") == before


def test_an_earlier_output_holding_the_input_is_seen_where_hadoop_puts_both(spark, tmp_path):
    # the check compared the URIs as written: the earlier output's train/ read as a file:// URI (or through
    # another mount table) was not seen as inside the viewfs:// -o, and the rerun replaced its own input
    _corpus(tmp_path / "data")
    with _mounted(spark, tmp_path) as root, _mounted(spark, tmp_path) as other:
        run_dedup(f"{root}/data", _config(), output_dir=f"{root}/out")
        before = _tree(tmp_path / "out")
        for read in ((tmp_path / "out" / "train").as_uri(), f"{other}/out/train/", f"{other}/out/train/*.json"):
            with pytest.raises(DataError, match=r"train holds this run's input .*, and this run would replace it"):
                run_dedup(read, _config(), output_dir=f"{root}/out")
    assert _tree(tmp_path / "out") == before


def test_an_output_that_hadoop_maps_onto_the_input_folder_is_refused(spark, tmp_path):
    # the check compared the URIs as written: a viewfs:// -o mounted on the local input folder (or a local
    # -o in a viewfs:// SOURCE's folder, or two mount tables onto one folder) was taken, and the splits
    # were written into the input folder
    source = _corpus(tmp_path / "data")
    with _mounted(spark, tmp_path) as root, _mounted(spark, tmp_path) as other:
        cases = [(source.as_uri(), f"{root}/data/out"), (f"{source.as_uri()}/*.jsonl", f"{root}/data"),
                 (f"{root}/data", str(source / "out")), (f"{root}/data/*.jsonl", (source / "new" / "out").as_uri()),
                 (f"{root}/data", f"{other}/data/out")]
        for read, output in cases:
            with pytest.raises(DataError, match=r"--output .* (lies inside|is) the input folder.*: dedup would write "
                                                r"its splits over the input.* through Hadoop's file system\)$") as said:
                run_dedup(read, _config(), output_dir=output)
            for name, given in (("-o", output), ("SOURCE", read)):  # where each viewfs:// URI is
                assert (f"{name} {given} is {tmp_path.as_uri()}/data" in str(said.value)) == \
                    given.startswith("viewfs://"), said.value
        # a file SOURCE: its folder is refused as -o, as for local paths
        with pytest.raises(DataError, match="is the folder of the input file train.jsonl"):
            run_dedup((source / "train.jsonl").as_uri(), _config(), output_dir=f"{root}/data")
    assert sorted(p.name for p in source.iterdir()) == ["test.jsonl", "train.jsonl"]  # nothing made there


def test_a_percent_in_a_folder_name_is_taken_literally_as_hadoop_takes_it(spark, tmp_path):
    """Hadoop's ``Path`` takes the text of a URI's path literally (``file:///t/a%20b`` is the folder
    named ``a%20b``; java.net.URI quotes the ``%``), while ``resolved_location`` unquoted it
    (``a b``): the check of the output over the input looked at another folder than Spark reads
    and writes: -o in the input folder was taken, -o beside it refused."""
    from workbench.dedup.spark_output import resolved_location

    literal = tmp_path / "a%20b"
    _corpus(literal / "data")
    (tmp_path / "a b").mkdir()
    uri = f"{tmp_path.as_uri()}/a%20b/data"
    assert resolved_location(spark, uri) == (literal / "data").as_uri()  # the folder Spark reads
    jvm = spark.sparkContext._jvm
    assert str(jvm.org.apache.hadoop.fs.Path(uri).toUri().getPath()) == str(literal / "data")  # as Hadoop takes it
    # -o in the folder "a b" is not in the input folder "a%20b": taken (it was refused as "inside the input folder")
    run_dedup(uri, _config(), output_dir=f"{tmp_path.as_uri()}/a b/out")
    assert (tmp_path / "a b" / "out" / "report.json").exists()
    # -o inside the folder Spark reads (it was taken: the check looked at "a b/data")
    with pytest.raises(DataError, match="input folder"):
        run_dedup(uri, _config(), output_dir=str(literal / "data" / "out"))
    assert sorted(p.name for p in (literal / "data").iterdir()) == ["test.jsonl", "train.jsonl"]
