"""A dedup output folder reused for other data: the earlier run's deduplicated splits (a source
folder's ``files/``, ``<split>.jsonl``) are removed before the new ones are written, so
``workbench bias`` reads only this run's rows (a probe's reused folder joined 8 of 40 rows and
reported pass@1 .375 instead of .475). Real dedup and bias on real files."""

from __future__ import annotations

import json
import logging

from workbench.bias import BiasConfig, run_bias
from workbench.dedup import DedupConfig, run_dedup

_CODE = "def f{k}(values):\n    total = 0\n    for v in values:\n        total += v * {k}\n    return total\n"


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


def test_split_folders_of_a_spark_run_are_removed_by_a_local_rerun(tmp_path):
    # probe 27: the Spark engine writes <split>/part-* folders, which a local rerun left beside the new
    # <split>.jsonl (read twice afterwards). The folders are laid out as Spark writes them (no Spark here).
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=i)}) + "\n" for i in range(3)))
    out = tmp_path / "out"
    run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=out)
    spark_split = out / "train"
    spark_split.mkdir()
    for name in ("part-00000-1f.c000.json", "_SUCCESS", ".part-00000-1f.c000.json.crc"):
        (spark_split / name).write_text("{}\n")
    (out / "mine").mkdir()
    (out / "mine" / "notes.txt").write_text("kept")
    run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=out)
    assert not spark_split.exists() and (out / "train.jsonl").is_file()
    assert (out / "mine" / "notes.txt").read_text() == "kept"


def test_bad_output_paths_and_file_ids_fail_clearly_before_writing(tmp_path):
    import pytest

    from workbench.errors import DataError

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=i)}) + "\n" for i in range(3)))
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
    import pytest

    from workbench.errors import DataError

    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "a", "content": _CODE.format(k=1)}) + "\n" + json.dumps({"id": "x", "content": 123}) + "\n")
    with pytest.raises(DataError, match=r"--code-column 'content' holds Json.*row 2 of split 'train': '123' \(int\)"):
        run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=tmp_path / "out")


def test_a_folder_without_a_dedup_report_keeps_its_files(tmp_path):
    out = tmp_path / "out"
    (out / "files").mkdir(parents=True)
    (out / "files" / "mine.txt").write_text("not a dedup output")
    (out / "train.jsonl").write_text('{"a": 1}\n')
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=i)}) + "\n" for i in range(3)))
    run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=out)
    assert (out / "files" / "mine.txt").read_text() == "not a dedup output"


def test_an_output_folder_over_the_input_is_refused_before_anything_is_written(tmp_path):
    """-o the input folder (or a folder inside it, or the folder of an input file) would replace the input
    with its deduplicated splits: refused, and the input is untouched (probe 25b lost 34 rows that way)."""
    import pytest

    from workbench.errors import DataError

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
