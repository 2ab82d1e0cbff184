"""A grade file that is cut short, not JSON, or a broken gzip stream is a ``DataError`` naming the
file, the layout it was read as, and what is wrong, for both grade-file layouts (ICE-Score's
HumanEval files and Evtikhiev et al.'s CoNaLa files), whether read directly or through
``load_records``. Real files are written to a temp dir; nothing is stubbed."""

from __future__ import annotations

import gzip
import json

import pytest

from workbench.data import load_records
from workbench.data.codegen_metrics_file import looks_like_codegen_metrics_grades, read_codegen_metrics_grades
from workbench.data.grade_json import grade_file_head
from workbench.data.ice_score_file import looks_like_ice_score_grades, read_ice_score_grades
from workbench.errors import DataError

ICE_SCORE_ITEM = {"task_id": "0", "intent": "add", "snippet": ["a + b"], "0": "a+b", "grade-0": {"execution": 1}, "bleu-0": 0.5}
CONALA_ITEM = {"intent": "add", "snippet": ["a + b"], "codex": "a+b", "grade-codex": 3}

LAYOUTS = [
    pytest.param(read_ice_score_grades, ICE_SCORE_ITEM, "humaneval_python_grade.json", "ICE-Score grade file", id="ice-score"),
    pytest.param(read_codegen_metrics_grades, CONALA_ITEM, "conala-all-grades.json", "CoNaLa human-grade file", id="conala"),
]


def _truncated(item) -> str:
    text = json.dumps([item, item])
    return text[: len(text) - 20]


@pytest.mark.parametrize(("reader", "item", "name", "layout"), LAYOUTS)
@pytest.mark.parametrize("via_load_records", [False, True], ids=["reader", "load_records"])
def test_a_truncated_grade_file_names_the_file_and_the_place_json_breaks(tmp_path, reader, item, name, layout, via_load_records):
    path = tmp_path / name
    path.write_text(_truncated(item), encoding="utf-8")
    with pytest.raises(DataError) as caught:
        load_records(path) if via_load_records else reader(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    assert layout in message
    assert "not valid JSON" in message and "line 1 column" in message
    assert "truncated" in message  # says how to fix it
    assert "\n" not in message


@pytest.mark.parametrize(("reader", "item", "name", "layout"), LAYOUTS)
def test_a_grade_file_that_is_no_json_at_all_is_a_clear_error(tmp_path, reader, item, name, layout):
    path = tmp_path / name
    path.write_text("this is not JSON\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        reader(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and layout in message
    assert "not valid JSON" in message and "line 1 column 1" in message


def _broken_gzip(item, damage: str) -> bytes:
    whole = gzip.compress(json.dumps([{**item, "intent": f"add {n}"} for n in range(200)]).encode("utf-8"))
    if damage == "cut short":
        return whole[: len(whole) // 2]
    if damage == "deflate data overwritten":  # zlib.error, not an OSError
        return whole[:10] + b"\xff" * 8 + whole[18:]
    return whole[:-8] + bytes(8)  # "CRC wrong": gzip.BadGzipFile at the end of the stream


@pytest.mark.parametrize(("reader", "item", "name", "layout"), LAYOUTS)
@pytest.mark.parametrize("damage", ["cut short", "deflate data overwritten", "CRC wrong"])
def test_a_broken_gzip_grade_file_is_a_clear_error(tmp_path, reader, item, name, layout, damage):
    path = tmp_path / f"{name}.gz"
    path.write_bytes(_broken_gzip(item, damage))
    with pytest.raises(DataError) as caught:
        reader(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and layout in message
    assert "gzip" in message[len(str(path)):] and "\n" not in message


def test_sniffing_a_damaged_gzip_file_never_raises(tmp_path):
    path = tmp_path / "humaneval_python_grade.json.gz"
    path.write_bytes(_broken_gzip(ICE_SCORE_ITEM, "deflate data overwritten"))
    assert grade_file_head(path, 65536) is None
    assert not looks_like_ice_score_grades(path) and not looks_like_codegen_metrics_grades(path)


@pytest.mark.parametrize(("reader", "item", "name", "layout"), LAYOUTS)
def test_a_grade_file_that_is_not_utf8_is_a_clear_error(tmp_path, reader, item, name, layout):
    path = tmp_path / name
    path.write_bytes(json.dumps([item]).encode("utf-8").replace(b"add", b"\xff\xfe"))
    with pytest.raises(DataError) as caught:
        reader(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and layout in message and "UTF-8" in message


@pytest.mark.parametrize(("reader", "item", "name", "layout"), LAYOUTS)
def test_a_missing_grade_file_is_a_clear_error(tmp_path, reader, item, name, layout):
    path = tmp_path / name
    with pytest.raises(DataError) as caught:
        reader(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and layout in message and "No such file" in message
