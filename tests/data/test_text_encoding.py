"""Data files that are not UTF-8 (issue 12, fault b): a clear error naming the file, the line
and the byte offset, before ``datasets`` reads them (it would read a bad JSON Lines row without
complaint and fail later, on that row). Real files, real ``datasets`` loading."""

from __future__ import annotations

import gzip
import json

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_records
from workbench.data.text_encoding import first_invalid_utf8
from workbench.errors import DataError

GOOD = json.dumps({"task_id": "T/0", "generation": "print('café ✓')", "reference": "x"}) + "\n"
BAD = b'{"task_id": "T/1", "generation": "caf\xe9", "reference": "x"}\n'
AT = BAD.index(b"\xe9")  # the stray Latin-1 byte


def test_the_first_bad_byte_is_found_by_line_and_offset(tmp_path):
    path = tmp_path / "gens.jsonl"
    path.write_bytes(GOOD.encode() + GOOD.encode() + BAD + BAD)
    found = first_invalid_utf8(path)
    assert (found.line, found.column, found.bad) == (3, AT + 1, b"\xe9")
    assert found.offset == 2 * len(GOOD.encode()) + AT
    path.write_bytes(GOOD.encode() * 3)
    assert first_invalid_utf8(path) is None


@pytest.mark.parametrize("name", ["gens.jsonl", "gens.json", "gens.jsonl.gz"])
def test_loading_a_non_utf8_file_names_file_line_and_offset(tmp_path, name):
    path = tmp_path / name
    content = GOOD.encode() + BAD
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(content))
    else:
        path.write_bytes(content)
    offset = len(GOOD.encode()) + AT
    with pytest.raises(DataError) as caught:
        load_records(path)
    assert str(caught.value).startswith(
        f"{path} is not UTF-8 text: line 2, byte {AT + 1} (offset {offset} in the file) is " + repr(b"\xe9"))
    assert "save the file as UTF-8" in str(caught.value)


def test_a_csv_and_a_folder_of_data_files(tmp_path):
    csv = tmp_path / "gens.csv"
    csv.write_bytes(b"task_id,generation\nT/0,ok\nT/1,caf\xe9\n")
    with pytest.raises(DataError, match=r"gens.csv is not UTF-8 text: line 3, byte 8 \(offset 33 in the file\)"):
        load_records(csv)
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "a.jsonl").write_text(GOOD, encoding="utf-8")
    (folder / "b.jsonl").write_bytes(BAD)
    with pytest.raises(DataError, match=r"b.jsonl is not UTF-8 text: line 1"):
        load_records(folder)
    (folder / "b.jsonl").write_text(GOOD, encoding="utf-8")
    assert load_records(folder).num_rows == 2  # valid UTF-8 with accents and symbols loads


def test_the_cli_says_it_in_one_line(tmp_path):
    path = tmp_path / "gens.jsonl"
    path.write_bytes(GOOD.encode() + BAD)
    result = CliRunner().invoke(app, ["score", str(path), "-m", "chrf", "-o", str(tmp_path / "out")])
    assert result.exit_code == 1
    assert f"{path} is not UTF-8 text: line 2" in " ".join(result.output.split())


def test_an_undecodable_source_file_names_its_bad_byte_by_its_0_based_offset():
    """unreadable.csv's reasons gave "byte 5" with no word of how it counts (a new-user probe): they say
    "byte offset N", counted from 0 at the file's start, as the data-file message's "offset" is."""
    import codecs

    from workbench.data.text_encoding import decode_source_file

    # b"ab = 1\n" then 0x81, which neither UTF-8 nor cp1252 reads: offset 7
    assert decode_source_file(b"ab = 1\n\x81\n", None).reason.startswith(
        "not UTF-8 (byte offset 7), nor cp1252 (byte offset 7)")
    # a UTF-8 byte-order mark (3 bytes) then an invalid byte: offset 3 + 2
    assert decode_source_file(codecs.BOM_UTF8 + b"ab\xff", None).reason.endswith("(UTF-8): byte offset 5")
    # a UTF-16 mark (2 bytes) then 3 bytes, the last one odd: offset 2 + 2, counted in the file
    assert decode_source_file(codecs.BOM_UTF16_LE + b"a\x00b", None).reason.endswith("(UTF-16): byte offset 4")
