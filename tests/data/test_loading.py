"""Loading through real ``datasets`` builders: bundled, local files, folders, bad input."""

from __future__ import annotations

import gzip
import json
import os
import time

import datasets
import pytest

from workbench.data import load_humaneval, load_records
from workbench.errors import DataError, HubUnreachableError, MissingColumnError, MissingSplitError


def _write_jsonl(path, rows, compress=False):
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if compress:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def test_bundled_humaneval_has_164_problems():
    problems = load_humaneval()
    assert len(problems) == 164
    assert {"task_id", "prompt", "canonical_solution", "test", "entry_point"} <= set(problems.column_names)
    assert problems[0]["task_id"] == "HumanEval/0"


def test_bundled_ice_score_set_has_3220_rows():
    loaded = load_records("humaneval-codex-python")
    assert loaded.num_rows == 3220
    assert sum(loaded.splits["test"]["passed"]) == 1342


@pytest.mark.parametrize("compress", [False, True])
def test_jsonl_and_gzipped_jsonl(tmp_path, compress):
    rows = [{"id": i, "content": f"x = {i}"} for i in range(5)]
    path = _write_jsonl(tmp_path / ("a.jsonl.gz" if compress else "a.jsonl"), rows, compress)
    loaded = load_records(path)
    assert loaded.num_rows == 5
    assert loaded.column_names == ["id", "content"]


def test_csv_and_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "a.csv").write_text("id,content\n1,x\n2,y\n")
    assert load_records(tmp_path / "a.csv").num_rows == 2
    pq.write_table(pa.table({"id": [1, 2, 3], "content": ["a", "b", "c"]}), tmp_path / "a.parquet")
    assert load_records(tmp_path / "a.parquet").num_rows == 3


def test_split_column_regroups_rows(tmp_path):
    rows = [{"id": i, "split": "train" if i % 3 else "test", "content": "x"} for i in range(9)]
    loaded = load_records(_write_jsonl(tmp_path / "c.jsonl", rows), split_column="split")
    assert sorted(loaded.splits) == ["test", "train"]
    assert len(loaded.splits["test"]) == 3 and len(loaded.splits["train"]) == 6
    with pytest.raises(MissingSplitError, match="available splits: .*test.*train|train.*test"):
        load_records(tmp_path / "c.jsonl", split_column="split", splits=["validation"])


def test_missing_column_lists_existing_ones(tmp_path):
    loaded = load_records(_write_jsonl(tmp_path / "c.jsonl", [{"id": 1, "content": "x"}]))
    with pytest.raises(MissingColumnError, match=r"'code'.*--code-column.*id, content"):
        loaded.require_columns({"--code-column": "code"})


def test_empty_file_is_a_clear_error(tmp_path):
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(DataError, match="empty"):
        load_records(tmp_path / "empty.jsonl")


@pytest.mark.parametrize(
    ("name", "content"),
    [("list.json", "[]"), ("header.csv", "id,content\n"), ("blank.jsonl", "\n\n"), ("header.csv.gz", None)],
)
def test_a_file_without_rows_is_a_clear_error(tmp_path, name, content):
    path = tmp_path / name
    if content is None:
        with gzip.open(path, "wt") as handle:
            handle.write("id,content\n")
    else:
        path.write_text(content)
    said = r"the (JSON|JSON Lines|CSV) file has no rows \((an empty JSON list|only blank lines|only a header)\)"
    with pytest.raises(DataError, match=said) as raised:
        load_records(path)
    assert str(path) in str(raised.value) and "corresponds to no data" not in str(raised.value)


def test_an_empty_file_in_a_folder_of_data_files_is_named(tmp_path):
    _write_jsonl(tmp_path / "train.jsonl", [{"id": 1, "content": "a"}])
    (tmp_path / "test.json").write_text("[]")
    with pytest.raises(DataError, match=r"no rows in split 'test' \(test.json\)"):
        load_records(tmp_path)


@pytest.mark.parametrize("name, content, reason", [
    ("bad.jsonl", '{"id": 1, "content": "x"}\n{broken json\n',
     r"line 2 is not valid JSON: Expecting property name enclosed in double quotes: column 2"),
    ("bad.csv", 'id,content\n1,"unterminated\n', r'line 2 opens a quoted field \("\) that is never closed'),
    ("list.jsonl", '{"id": 1, "content": "x"}\n[1, 2]\n', r"line 2 is a JSON list, not an object"),
    # json.dumps writes a lone surrogate (from errors="surrogateescape") as an escape; pyarrow refuses it
    # "in row 2"; a valid pair (an emoji, line 2) is text
    ("lone.jsonl", '{"id": 1, "content": "x"}\n{"id": 2, "content": "\\ud83d\\ude00"}\n'
                   '{"id": 3, "content": "ok \\udcff"}\n',
     r"line 3 holds a lone UTF-16 surrogate escape \(\\udcff\) in a string"),
    # one line, which is also one whole JSON document; and a .json list over lines
    ("one.jsonl", '{"id": 1, "content": "x \\ud800 y"}\n', r"line 1 holds a lone UTF-16 surrogate escape \(\\ud800\)"),
    ("list.json", '[{"id": 1, "content": "\\ud83d\\ude00"},\n {"id": 2, "content": "\\udc00"}]\n',
     r"line 2 holds a lone UTF-16 surrogate escape \(\\udc00\)"),
])
def test_a_malformed_file_says_what_is_wrong_and_on_which_line(tmp_path, name, content, reason):
    """datasets' own message is only "An error occurred while generating the dataset", and the
    parsers' count rows from 0 ("EOF inside string starting at row 1"): the error names the
    file and the line as an editor numbers it."""
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match=rf"cannot read .*{name}: {reason}"):
        load_records(str(path))


def test_a_malformed_file_no_check_explains_keeps_the_parsers_reason(tmp_path):
    """A fault the line checks do not know still shows datasets' cause."""
    path = tmp_path / "scalar.json"
    path.write_text("5\n")  # valid JSON, but no record
    with pytest.raises(DataError, match=r"cannot read .*scalar.json as json: An error occurred while generating "
                                        r"the dataset \(ArrowInvalid: .*in row 0\)"):
        load_records(str(path))


def test_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_records(tmp_path / "nope.jsonl")


def test_source_folder_splits_and_skipped_files(tmp_path):
    (tmp_path / "train").mkdir()
    (tmp_path / "test").mkdir()
    (tmp_path / "train" / "a.py").write_text("def f(x):\n    return x\n")
    (tmp_path / "test" / "b.py").write_text("print('hi')\n")
    (tmp_path / "test" / "bin.py").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "test" / "odd.py").write_bytes(b"s = '\x81'\n")  # neither UTF-8 nor cp1252 (0x81 is unassigned)
    (tmp_path / "README.md").write_text("# not code")
    loaded = load_records(tmp_path)
    assert sorted(loaded.splits) == ["test", "train"]
    assert loaded.splits["train"]["id"] == ["train/a.py"]
    assert loaded.splits["test"]["language"] == ["python"]
    reasons = {s.path: s.reason for s in loaded.skipped}
    assert reasons["test/bin.py"] == "binary"
    assert reasons["test/odd.py"] == ("not UTF-8 (byte offset 5), nor cp1252 (byte offset 5): give its encoding with "
                                      "--source-encoding")
    assert reasons["README.md"].startswith("no language plugin")


LEGACY_JAVA = ('package legacy;\n\n/** Calcule la dur\u00e9e moyenne, r\u00e9alis\u00e9 par Jos\u00e9. */\n'
               'public class Duree {\n    static String nom = "Caf\u00e9";\n    static int n = 3;\n}\n')


def test_legacy_source_files_are_read_in_their_encoding_and_recorded(tmp_path, caplog):
    """A Latin-1, cp1252 or byte-order-marked UTF-16/32 source file was listed as "not UTF-8" (or, for UTF-16,
    "binary": its NUL bytes) and never compared; each is now read, the encoding recorded per file, and binary
    files (with NUL bytes or control bytes) and files in no encoding the run reads stay refused."""
    import logging

    quoted = LEGACY_JAVA.replace("Jos\u00e9.", "Jos\u00e9 \u201cle chef\u201d \u2014 2004.")  # cp1252's own letters
    files = {"Utf8.java": LEGACY_JAVA.encode(), "Latin.java": LEGACY_JAVA.encode("latin-1"),
             "Win.java": quoted.encode("cp1252"), "Bom8.java": b"\xef\xbb\xbf" + LEGACY_JAVA.encode(),
             "Wide.java": LEGACY_JAVA.encode("utf-16"), "WideBe.java": b"\xfe\xff" + LEGACY_JAVA.encode("utf-16-be"),
             "Wider.java": LEGACY_JAVA.encode("utf-32"),
             "Class.java": bytes.fromhex("cafebabe00000034") + b"\x00\x1d\x0a\x00\x06",  # a .class file's header
             "Blob.java": bytes(range(1, 256)) * 4, "Odd.java": b"int x = 1; // \x81\n"}
    (tmp_path / "src").mkdir()
    for name, data in files.items():
        (tmp_path / "src" / name).write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="workbench.data.loading"):
        loaded = load_records(tmp_path / "src")
    texts = dict(zip(loaded.splits["train"]["id"], loaded.splits["train"]["content"]))
    assert texts == {"Bom8.java": LEGACY_JAVA, "Latin.java": LEGACY_JAVA, "Utf8.java": LEGACY_JAVA,
                     "Wide.java": LEGACY_JAVA, "WideBe.java": LEGACY_JAVA, "Wider.java": LEGACY_JAVA, "Win.java": quoted}
    assert loaded.encodings == {"Latin.java": "cp1252 (fallback)", "Wide.java": "UTF-16 (byte-order mark)",
                                "WideBe.java": "UTF-16 (byte-order mark)", "Wider.java": "UTF-32 (byte-order mark)",
                                "Win.java": "cp1252 (fallback)"}
    assert {s.path: s.reason for s in loaded.skipped} == {
        "Blob.java": "binary", "Class.java": "binary",
        "Odd.java": "not UTF-8 (byte offset 14), nor cp1252 (byte offset 14): give its encoding with --source-encoding"}
    said = [r.getMessage() for r in caplog.records if "in another encoding than UTF-8" in r.getMessage()]
    assert len(said) == 1 and "\n" not in said[0] and ": read 5 source files in another" in said[0], said
    assert "Latin.java as cp1252 (fallback)" in said[0] and "and 2 more" in said[0], said[0]


def test_source_encoding_names_the_fallback_and_a_declared_encoding_still_wins(tmp_path):
    # legacy code of another script: GBK read as cp1252 would be mojibake (or refused), as GBK it is its text
    chinese = 'class A {\n    // \u8ba1\u7b97\u5e73\u5747\u503c\n    String s = "\u4f60\u597d";\n}\n'
    (tmp_path / "A.java").write_bytes(chinese.encode("gbk"))
    (tmp_path / "cookie.py").write_bytes("# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n".encode("latin-1"))
    loaded = load_records(tmp_path, source_encoding="gbk")
    texts = dict(zip(loaded.splits["train"]["id"], loaded.splits["train"]["content"]))
    assert texts["A.java"] == chinese and texts["cookie.py"] == "# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n"
    assert loaded.encodings == {"A.java": "gbk (fallback)", "cookie.py": "declared by the file"}
    with pytest.raises(DataError, match=r"^--source-encoding 'klingon' is no encoding Python knows; give a codec"):
        load_records(tmp_path, source_encoding="klingon")


def test_split_folders_are_matched_whatever_their_case(tmp_path):
    """``Train/`` and ``Test/`` are the train and test splits: kept as typed they escaped the default
    --train-split/--test-split, and dedup then dropped its cross-set policy without a word."""
    for folder, name in (("Train", "a.py"), ("TEST", "b.py"), ("Dev", "c.py")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text("x = 1\n")
    loaded = load_records(tmp_path)
    assert sorted(loaded.splits) == ["dev", "test", "train"]
    assert loaded.splits["test"]["id"] == ["TEST/b.py"]  # the id stays the file's own path


def test_linked_folders_and_broken_links_are_listed_as_skipped(tmp_path):
    """A link to a folder is not followed (a loop would never end) and a broken link cannot be read: both are
    listed with their reason, so the files behind them are not left out silently."""
    corpus = tmp_path / "corpus"
    (corpus / "train").mkdir(parents=True)
    (corpus / "train" / "a.py").write_text("x = 1\n")
    (tmp_path / "vendored").mkdir()
    (tmp_path / "vendored" / "b.py").write_text("y = 2\n")
    (corpus / "train" / "vendor").symlink_to(tmp_path / "vendored", target_is_directory=True)
    (corpus / "train" / "loop").symlink_to(corpus, target_is_directory=True)
    (corpus / "train" / "gone.py").symlink_to(tmp_path / "missing.py")
    loaded = load_records(corpus)
    assert loaded.splits["train"]["id"] == ["train/a.py"]
    reasons = {s.path: s.reason for s in loaded.skipped}
    assert reasons["train/vendor"] == reasons["train/loop"] == "symbolic link to a folder (not followed)"
    assert reasons["train/gone.py"] == "broken symbolic link"


def test_source_files_are_decoded_as_their_language_reads_them(tmp_path):
    """Python honours a PEP 263 coding cookie and drops a byte-order mark (as the interpreter does);
    a cookie naming an unknown encoding, or bytes the declared encoding cannot decode, are skipped
    with the reason. Real files, the real Python plugin."""
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "cookie.py").write_bytes("# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n".encode("latin-1"))
    (tmp_path / "train" / "bom.py").write_bytes(b"\xef\xbb\xbfx = 1\n")
    (tmp_path / "train" / "unknown.py").write_bytes(b"# coding: no-such-codec\nx = 1\n")
    (tmp_path / "train" / "wrong.py").write_bytes(b"# coding: ascii\ns = '\xc3\xa9'\n")
    (tmp_path / "train" / "bom.cpp").write_bytes(b"\xef\xbb\xbfint x = 1;\n")
    loaded = load_records(tmp_path)
    texts = dict(zip(loaded.splits["train"]["id"], loaded.splits["train"]["content"]))
    assert texts["train/cookie.py"] == "# -*- coding: latin-1 -*-\ns = 'caf\xe9'\n"
    assert texts["train/bom.py"] == "x = 1\n"
    assert texts["train/bom.cpp"] == "int x = 1;\n"
    reasons = {s.path: s.reason for s in loaded.skipped}
    assert reasons == {"train/unknown.py": "undecodable: coding cookie: unknown encoding: no-such-codec",
                       "train/wrong.py": "not in its declared encoding (ascii)"}


def test_folder_of_data_files_uses_file_names_as_splits(tmp_path):
    _write_jsonl(tmp_path / "train.jsonl", [{"id": 1, "content": "a"}, {"id": 2, "content": "b"}])
    _write_jsonl(tmp_path / "test.jsonl", [{"id": 3, "content": "c"}])
    loaded = load_records(tmp_path)
    assert {k: len(v) for k, v in loaded.splits.items()} == {"train": 2, "test": 1}


def test_a_data_file_that_names_no_split_is_listed_and_said(tmp_path, caplog):
    # probe 31: other.jsonl beside train.jsonl and test.jsonl was never read, and nobody was told
    import logging

    _write_jsonl(tmp_path / "train.jsonl", [{"id": "t1", "content": "a"}])
    _write_jsonl(tmp_path / "test.jsonl", [{"id": "s1", "content": "b"}])
    _write_jsonl(tmp_path / "other.jsonl", [{"id": "o1", "content": "c"}])
    (tmp_path / "config.json").write_text("{}")  # a file datasets never reads as data
    with caplog.at_level(logging.WARNING):
        loaded = load_records(tmp_path)
    assert {k: v["id"] for k, v in loaded.splits.items()} == {"train": ["t1"], "test": ["s1"]}
    reasons = {s.path: (s.reason, s.split) for s in loaded.skipped}
    assert reasons == {
        "other.jsonl": ("its name names no split while other files' names do (train, validation, test: datasets' rule)",
                        ""),
        "config.json": ("a metadata file of a dataset folder (datasets does not read it as data)", ""),
    }
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and f"{tmp_path}: 1 data file names no split and is not read: other.jsonl" in said[0]
    assert "rename it" in said[0] and "train-other.jsonl" in said[0]


def test_the_files_of_a_split_are_read_in_path_order(tmp_path):
    # probe 31: dev.jsonl and validation.jsonl (both validation) were read in datasets' pattern order,
    # validation.jsonl first, where the Spark engine sorts by path: the kept copy of a cluster differed
    for name, ids in {"train.jsonl": ["t1"], "validation.jsonl": ["v1"], "dev.jsonl": ["d1"],
                      "test.jsonl": ["s1"], "eval-1.jsonl": ["e1"], "sub/testing.jsonl": ["x1"]}.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        _write_jsonl(tmp_path / name, [{"id": i, "content": "a"} for i in ids])
    loaded = load_records(tmp_path)
    assert {k: v["id"] for k, v in loaded.splits.items()} == {
        "train": ["t1"], "validation": ["d1", "v1"], "test": ["e1", "x1", "s1"]}


def test_a_data_file_named_for_two_splits_is_refused(tmp_path):
    # datasets reads train_test.jsonl into both train and test: every row twice
    _write_jsonl(tmp_path / "train.jsonl", [{"id": "t1", "content": "a"}])
    _write_jsonl(tmp_path / "train_test.jsonl", [{"id": "b1", "content": "b"}])
    with pytest.raises(DataError, match=r"train_test.jsonl: its name names the splits train and test"):
        load_records(tmp_path)


def test_folder_splits_lists_each_split_in_path_order():
    from workbench.data.data_file_splits import folder_splits

    found = folder_splits(["x/validation.jsonl", "x/dev.jsonl", "x/train.jsonl", "x/notes.jsonl", "x/config.json"],
                          root="x/")
    assert found.splits == {"train": ["x/train.jsonl"], "validation": ["x/dev.jsonl", "x/validation.jsonl"]}
    assert found.unmatched == ["x/notes.jsonl"] and found.metadata == ["x/config.json"]
    # no file names a split: all are train; one file named alone is train whatever its name
    assert folder_splits(["b.jsonl", "a.jsonl"]).splits == {"train": ["a.jsonl", "b.jsonl"]}
    assert folder_splits(["test.jsonl"], one_file=True).splits == {"train": ["test.jsonl"]}
    assert folder_splits(["test.jsonl"]).splits == {"test": ["test.jsonl"]}


def test_a_dataset_snapshot_with_a_readme_is_read_as_data(tmp_path):
    # probe 27: a Hugging Face snapshot (data/*.parquet beside README.md) was taken for a source folder
    import datasets

    (tmp_path / "data").mkdir()
    datasets.Dataset.from_list([{"id": "a", "content": "x = 1"}]).to_parquet(tmp_path / "data" / "train-00000-of-00001.parquet")
    datasets.Dataset.from_list([{"id": "b", "content": "y = 2"}]).to_parquet(tmp_path / "data" / "test-00000-of-00001.parquet")
    (tmp_path / "README.md").write_text("---\nlicense: mit\n---\n# card\n")
    loaded = load_records(str(tmp_path))
    assert sorted(loaded.splits) == ["test", "train"] and loaded.splits["train"]["id"] == ["a"]
    assert [(s.path, s.reason) for s in loaded.skipped] == [("README.md", "not a data file (the folder is read as a dataset)")]


def test_data_files_beside_source_files_are_refused(tmp_path):
    # probe 27: one stray .py made the folder a source folder, and its 60 data rows were dropped
    (tmp_path / "train.jsonl").write_text(json.dumps({"id": "a", "content": "x = 1"}) + "\n")
    (tmp_path / "extra.py").write_text("x = 1\n")
    with pytest.raises(DataError, match=r"holds both data files \(train.jsonl\) and source files \(extra.py\)"):
        load_records(str(tmp_path))


def test_hub_id_fails_fast_when_offline():
    start = time.monotonic()
    with pytest.raises(HubUnreachableError, match="local file"):
        load_records("nobody-here/no-such-dataset-xyz", offline=True)
    assert time.monotonic() - start < 10  # not datasets' ~24 s of retries


def test_select_rows_keeps_the_rows_and_a_deterministic_fingerprint():
    import datasets

    from workbench.data.loading import select_rows

    dataset = datasets.Dataset.from_dict({"id": list(range(50)), "code": [f"x = {i}" for i in range(50)]})
    indices = [7, 3, 3, 49, 0]
    chosen = select_rows(dataset, indices)
    assert chosen["id"] == dataset.select(indices)["id"] == indices
    assert select_rows(dataset, indices)._fingerprint == chosen._fingerprint
    assert select_rows(dataset, [7, 3, 3, 49])._fingerprint != chosen._fingerprint
    assert select_rows(dataset, indices)._fingerprint != dataset._fingerprint


def test_one_split_takes_the_only_split_or_test_and_names_the_option_otherwise(tmp_path):
    folder = tmp_path / "problems"
    folder.mkdir()
    _write_jsonl(folder / "train.jsonl", [{"task_id": "a"}])
    assert load_records(str(folder)).one_split()["task_id"] == ["a"]
    _write_jsonl(folder / "validation.jsonl", [{"task_id": "b"}])
    with pytest.raises(DataError, match=r"train, validation; name one with --problems-split"):
        load_records(str(folder)).one_split("--problems-split")
    _write_jsonl(folder / "test.jsonl", [{"task_id": "c"}])
    assert load_records(str(folder)).one_split()["task_id"] == ["c"]


def test_zero_padded_integer_ids_stay_text_in_csv(tmp_path):
    # pandas would read 007 as 7, and a task "007" would then match no generation (real datasets CSV reader)
    (tmp_path / "problems.csv").write_text("task_id,n,score,code\n007,1,0.5,a\n010,2,,b\n,3,1,c\n")
    rows = load_records(tmp_path / "problems.csv").splits["train"].to_list()
    assert [r["task_id"] for r in rows] == ["007", "010", None]  # an empty cell stays missing
    assert [r["n"] for r in rows] == [1, 2, 3] and rows[0]["score"] == 0.5  # other numbers stay numbers
    # gzip and a folder of CSV files take the same rule; a column with a non-integer is left to pandas
    with gzip.open(tmp_path / "more.csv.gz", "wt") as handle:
        handle.write("task_id,mixed\n0042,01\n0043,x\n")
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "test.csv").write_text("task_id,mixed\n0042,01\n0043,x\n")
    for source in (tmp_path / "more.csv.gz", folder):
        loaded = load_records(source)
        rows = next(iter(loaded.splits.values())).to_list()
        assert [r["task_id"] for r in rows] == ["0042", "0043"] and [r["mixed"] for r in rows] == ["01", "x"]


def test_csv_cells_that_read_like_na_stay_text(tmp_path):
    # pandas' NA words are code and ids here: only an empty cell is missing (real datasets CSV reader)
    (tmp_path / "gens.csv").write_text("task_id,completion,m\n000,None,1\nNA,x = 1,n/a\n007,NA,\n7.0,null,0.5\n")
    rows = load_records(tmp_path / "gens.csv").splits["train"].to_list()
    assert [r["task_id"] for r in rows] == ["000", "NA", "007", "7.0"]
    assert [r["completion"] for r in rows] == ["None", "x = 1", "NA", "null"]
    assert [r["m"] for r in rows] == ["1", "n/a", None, "0.5"]  # text: correlate counts 'n/a' as non-numeric
    # ids of numbers only, some zero-padded: text, so 007 and 7.0 stay two ids
    (tmp_path / "ids.csv").write_text("task_id,score\n007,1\n7.0,2\n")
    rows = load_records(tmp_path / "ids.csv").splits["train"].to_list()
    assert [r["task_id"] for r in rows] == ["007", "7.0"] and [r["score"] for r in rows] == [1, 2]


def test_an_offline_hub_load_leaves_the_process_as_it_was(monkeypatch):
    """Offline for that load only: a notebook's later hub calls are not switched off for good."""
    import datasets
    import huggingface_hub.constants

    from workbench.errors import HubUnreachableError

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    with pytest.raises(HubUnreachableError, match="offline mode is on"):
        load_records("someone/not-in-the-cache-xyz", offline=True)
    assert "HF_HUB_OFFLINE" not in os.environ and "HF_DATASETS_OFFLINE" not in os.environ
    assert huggingface_hub.constants.HF_HUB_OFFLINE is False and datasets.config.HF_HUB_OFFLINE is False


# ---------------------------------------------------------------- one kind of value per column over a folder's files

_CODE = "def f(values):\n    return sum(values)\n"


def _parquet(path, **columns):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


@pytest.mark.parametrize("case", ["code ints in one split", "code ints in one shard", "ids numbers and text", "json"])
def test_a_column_of_two_kinds_over_a_folders_files_is_refused_naming_both(tmp_path, case):
    # datasets cast the second file to the first's types: the integers in test.parquet became the code "3" and
    # "4" (read and deduplicated as code), text ids a raw "ArrowInvalid: Failed to parse string"
    folder = tmp_path / "data"
    folder.mkdir()
    if case == "code ints in one split":
        _parquet(folder / "train.parquet", id=["a", "b"], content=[_CODE, _CODE + "#"])
        _parquet(folder / "test.parquet", id=["c", "d"], content=[3, 4])
        said = "column 'content' holds text in train.parquet but numbers in test.parquet"
    elif case == "code ints in one shard":
        _parquet(folder / "train-00000-of-00002.parquet", id=["a"], content=[_CODE])
        _parquet(folder / "train-00001-of-00002.parquet", id=["b"], content=[5])
        said = "column 'content' holds text in train-00000-of-00002.parquet but numbers in train-00001-of-00002.parquet"
    elif case == "ids numbers and text":
        _parquet(folder / "train.parquet", id=[1, 2], content=[_CODE, _CODE])
        _parquet(folder / "test.parquet", id=["c", "d"], content=[_CODE, _CODE])
        said = "column 'id' holds numbers in train.parquet but text in test.parquet"
    else:
        _write_jsonl(folder / "train.jsonl", [{"id": "a", "content": _CODE, "tags": ["x"]}])
        _write_jsonl(folder / "test.jsonl.gz", [{"id": "b", "content": _CODE, "tags": "x"}], compress=True)
        said = "column 'tags' holds lists in train.jsonl but text in test.jsonl.gz"
    with pytest.raises(DataError) as refused:
        load_records(folder)
    assert str(refused.value).startswith(f"{folder}: {said}: every file of a dataset must give a column one type"), \
        str(refused.value)


def test_columns_of_one_kind_in_other_types_are_read_across_files(tmp_path):
    # floats then integers, a column of nulls only, pandas' categories (dictionary-encoded text), ISO dates in JSON files
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(pa.table({"id": pa.array(["a", "b"]).dictionary_encode(), "score": [0.5, 1.5],
                             "note": ["x", None]}), folder / "train.parquet")
    _parquet(folder / "test.parquet", id=["c", "d"], score=[1, 2], note=pa.nulls(2))
    loaded = load_records(folder)
    assert loaded.splits["test"]["score"] == [1.0, 2.0] and loaded.splits["test"]["note"] == [None, None]
    dated = tmp_path / "dated"
    dated.mkdir()
    _write_jsonl(dated / "train.jsonl", [{"id": "a", "when": "2024-01-02"}])
    _write_jsonl(dated / "test.jsonl", [{"id": "b", "when": "2024-02-03"}])
    assert load_records(dated).num_rows == 2


def test_iso_dates_in_json_lines_stay_the_text_they_are_as_spark_reads_them(tmp_path):
    # pyarrow (so datasets) read an ISO date in JSON as a timestamp: "2024-01-02" came back as 2024-01-02 00:00:00
    # (written "2024-01-02T00:00:00"), a "Z" was dropped, and a folder with dates in one file's column and other
    # text in another's was refused as "timestamp ... but text"; Spark reads them all as the text they are
    folder = tmp_path / "dated"
    folder.mkdir()
    _write_jsonl(folder / "train.jsonl", [{"id": "2024-01-02", "when": "2024-01-02", "n": 1},
                                          {"id": "2024-01-03T10:00:00Z", "when": None, "n": 2}])
    _write_jsonl(folder / "test.jsonl", [{"id": "b", "when": 'soon "x"', "n": 3}])
    loaded = load_records(folder)
    assert loaded.splits["train"]["id"] == ["2024-01-02", "2024-01-03T10:00:00Z"]
    assert loaded.splits["train"]["when"] == ["2024-01-02", None]
    assert loaded.splits["test"]["when"] == ['soon "x"'] and loaded.splits["test"]["n"] == [3]
    for split in loaded.splits.values():
        assert split.features["id"] == datasets.Value("string") and split.features["when"] == datasets.Value("string")
    # one file alone, and a later file's dates beside the first file's text (cast to "2024-02-03 00:00:00" before)
    assert load_records(folder / "train.jsonl").splits["train"]["id"] == ["2024-01-02", "2024-01-03T10:00:00Z"]
    _write_jsonl(folder / "test.jsonl", [{"id": "b", "when": "2024-02-03", "n": 3}])
    (folder / "train.jsonl").write_text(json.dumps({"id": "a", "when": "soon", "n": 1}) + "\n")
    assert load_records(folder).splits["test"]["when"] == ["2024-02-03"]
    # a column of mixed objects made datasets read its own way (dates as timestamps, the dates beside the first
    # file's text cast to "2024-02-03 00:00:00", refused as such): a column of two kinds in a file's rows is now
    # refused itself, in a folder of several files, as the Spark engine refuses it (it would read 'n' as text)
    _write_jsonl(folder / "train.jsonl", [{"id": "a", "when": "soon", "n": {"x": 1}}, {"id": "b", "when": "x", "n": [1]}])
    with pytest.raises(DataError, match=r"column 'n' holds objects at line 1 of train\.jsonl but lists at line 2: a "
                                        r"column must hold one type of value in every row"):
        load_records(folder)


def test_a_typed_column_of_nulls_only_is_not_blamed_on_a_bare_nan(tmp_path):
    # describe_non_text said "every cell reads as text or null, so a NaN or Infinity written bare ... is the
    # likely cause" of any non-text column without a non-text cell: a Parquet int64 column of nulls has no
    # NaN and is no JSON; that advice belongs to datasets' Json-typed columns only
    import pyarrow as pa
    import pyarrow.parquet as pq

    from workbench.data.loading import require_text_columns

    path = tmp_path / "g.parquet"
    pq.write_table(pa.table({"task_id": ["a", "b"], "completion": pa.array([None, None], pa.int64())}), path)
    dataset = load_records(str(path)).splits["train"]
    with pytest.raises(DataError) as raised:
        require_text_columns(dataset, {"--completion-column": "completion"}, f"the generations ({path})")
    said = str(raised.value)
    assert "NaN" not in said, said
    assert ("--completion-column 'completion' holds no text: every one of its 2 cells is null, in a column typed "
            "int64") in said


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_nulls_then_text_and_integers_then_floats_over_the_files_are_read_as_one_column(tmp_path, form):
    # datasets cast every file to the first file's types: a raw "Couldn't cast array of type string to null" for a
    # note that is null in train and text in test, "Float value 0.500000 was truncated converting to int64" for
    # integer scores before fractional ones, "Integer value 1099511627776 not in range" for int32 before int64
    import pyarrow as pa

    folder = tmp_path / "data"
    folder.mkdir()
    first = {"id": ["a", "b"], "note": [None, None], "score": [1, 2], "n": [1, 2]}
    later = {"id": ["c", "d"], "note": ["x", None], "score": [0.5, 1.5], "n": [3, 2 ** 40]}
    for name, columns in (("train-00000-of-00002", first), ("train-00001-of-00002", later), ("test", first)):
        if form == "jsonl":
            _write_jsonl(folder / f"{name}.jsonl", [dict(zip(columns, row)) for row in zip(*columns.values())])
        else:
            _parquet(folder / f"{name}.parquet", id=columns["id"], note=pa.array(columns["note"]),
                     score=columns["score"], n=pa.array(columns["n"], pa.int32() if name != "train-00001-of-00002"
                                                         else pa.int64()))
    loaded = load_records(folder)
    train = loaded.splits["train"]
    assert train["note"] == [None, None, "x", None] and loaded.splits["test"]["note"] == [None, None]
    assert train["score"] == [1.0, 2.0, 0.5, 1.5] and train["n"] == [1, 2, 3, 2 ** 40]
    assert {name: str(train.features[name].dtype) for name in ("note", "score", "n")} == \
        {"note": "string", "score": "float64", "n": "int64"}


def test_json_dates_and_widened_numbers_in_one_folder_are_read_together(tmp_path):
    # two rules meet in one read: ISO dates stay text (json_dates) and integers beside floats, or nulls beside
    # dates, widen (column_types.widened_types); the date rule's features must not drop the widened types
    folder = tmp_path / "data"
    folder.mkdir()
    _write_jsonl(folder / "train-00000-of-00002.jsonl", [{"id": "2024-01-02", "score": 1, "when": None},
                                                         {"id": "b", "score": 2, "when": None}])
    _write_jsonl(folder / "train-00001-of-00002.jsonl",
                 [{"id": "2024-01-03T04:05:06Z", "score": 0.5, "when": "2024-02-03"}])
    train = load_records(folder).splits["train"]
    assert train["id"] == ["2024-01-02", "b", "2024-01-03T04:05:06Z"]
    assert train["score"] == [1.0, 2.0, 0.5] and train["when"] == [None, None, "2024-02-03"]
    assert {name: str(train.features[name].dtype) for name in ("id", "score", "when")} == \
        {"id": "string", "score": "float64", "when": "string"}


def test_csv_folders_widen_integers_beside_floats_and_empty_cells_beside_text(tmp_path):
    # pandas types each CSV file alone and datasets cast every file to the first file's types: a raw "Float value
    # 0.500000 was truncated converting to int64" for integer scores before fractional ones, a raw cast error for a
    # note empty in train and text in test; zero-padded ids stay text and only empty cells are missing
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train-00000-of-00002.csv").write_text("id,note,score,word\n007,,1,NA\n008,,2,x\n")
    (folder / "train-00001-of-00002.csv").write_text("id,note,score,word\n009,hi,0.5,None\n010,,1.5,y\n")
    train = load_records(folder).splits["train"]
    assert train["id"] == ["007", "008", "009", "010"]
    assert train["note"] == [None, None, "hi", None] and train["word"] == ["NA", "x", "None", "y"]
    assert train["score"] == [1.0, 2.0, 0.5, 1.5]
    assert {name: str(train.features[name].dtype) for name in ("note", "score")} == \
        {"note": "string", "score": "float64"}
    # numbers in one file and text in another: one clear line naming the column and both files
    (folder / "train-00001-of-00002.csv").write_text("id,note,score,word\n009,hi,high,z\n")
    with pytest.raises(DataError, match=r"column 'score' holds numbers in train-00000-of-00002\.csv but text in "
                                        r"train-00001-of-00002\.csv"):
        load_records(folder)


def test_csv_integer_ids_with_an_empty_cell_in_one_file_stay_integers_in_every_file(tmp_path):
    # pandas types an integer column with an empty cell float64 (NaN is a float): that file's type is no fraction,
    # so it must not widen the other files' integer ids to floats (1.0, which joins with nothing); datasets' own
    # reading keeps them integers, with the empty cell null
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.csv").write_text("task_id,code\n1,a = 1\n2,b = 2\n")
    (folder / "test.csv").write_text("task_id,code\n3,c = 3\n,d = 4\n")
    loaded = load_records(folder)
    assert [repr(v) for v in loaded.splits["train"]["task_id"]] == ["1", "2"]
    assert [repr(v) for v in loaded.splits["test"]["task_id"]] == ["3", "None"]
    # a file with fractions still widens the column
    (folder / "test.csv").write_text("task_id,code\n3.5,c = 3\n,d = 4\n")
    assert [repr(v) for v in load_records(folder).splits["train"]["task_id"]] == ["1.0", "2.0"]
    # beside a column that is widened (integers then fractions), the integer ids with an empty cell are read
    # with the widened types: pandas cannot give an int64 dtype an empty cell (a raw "Integer column has NA")
    (folder / "train.csv").write_text("task_id,score,flag\n1,1,True\n2,2,False\n")
    (folder / "test.csv").write_text("task_id,score,flag\n3,0.5,\n,1.5,true\n")
    loaded = load_records(folder)
    assert [repr(v) for v in loaded.splits["test"]["task_id"]] == ["3", "None"]
    assert loaded.splits["test"]["score"] == [0.5, 1.5] and loaded.splits["test"]["flag"] == [None, True]
    assert loaded.splits["train"]["flag"] == [True, False]


def test_csv_true_false_column_with_an_empty_cell_is_no_text(tmp_path):
    # pandas gives a true/false column with an empty cell objects (True, False, NaN): it was typed text, and the
    # folder refused as "'flag' holds true/false values in train.csv but text in test.csv"
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "train.csv").write_text("task_id,flag\na,True\nb,False\n")
    (folder / "test.csv").write_text("task_id,flag\nc,True\nd,\n")
    loaded = load_records(folder)
    assert loaded.splits["test"]["flag"] == [True, None] and loaded.splits["train"]["flag"] == [True, False]


@pytest.mark.parametrize("form", ["jsonl", "parquet", "csv"])
def test_columns_in_another_order_in_another_file_are_widened_all_the_same(tmp_path, form):
    # a JSON object's keys have no order (nor do datasets' and Spark's readers match columns by place): integer
    # scores in one file and fractions in another whose rows name the keys in another order were left to
    # datasets, which failed with a raw "Float value 0.500000 was truncated converting to int64"
    folder = tmp_path / "data"
    folder.mkdir()
    if form == "jsonl":
        _write_jsonl(folder / "train.jsonl", [{"id": "a", "score": 1}, {"id": "b", "score": 2}])
        _write_jsonl(folder / "test.jsonl", [{"score": 0.5, "id": "c"}])
    elif form == "parquet":
        _parquet(folder / "train.parquet", id=["a", "b"], score=[1, 2])
        _parquet(folder / "test.parquet", score=[0.5], id=["c"])
    else:
        (folder / "train.csv").write_text("id,score\na,1\nb,2\n")
        (folder / "test.csv").write_text("score,id\n0.5,c\n")
    loaded = load_records(folder)
    assert [repr(v) for v in loaded.splits["train"]["score"]] == ["1.0", "2.0"]
    assert loaded.splits["test"]["score"] == [0.5] and loaded.splits["test"]["id"] == ["c"]


def test_a_folder_saved_by_datasets_save_to_disk_is_read_as_its_dataset(tmp_path):
    # `workbench dedup --output-format hf` writes dataset/ with save_to_disk; read back, the loader took its
    # state.json for the data (one row of _data_files, _fingerprint ... per split) and left the .arrow out
    rows = datasets.Dataset.from_dict({"task_id": ["a", "b", "c"], "code": ["x = 1", "y = 2", "z = 3"]})
    datasets.DatasetDict({"train": rows, "test": rows.select([0])}).save_to_disk(str(tmp_path / "dict"))
    loaded = load_records(tmp_path / "dict")
    assert {name: split.num_rows for name, split in loaded.splits.items()} == {"train": 3, "test": 1}
    assert loaded.column_names == ["task_id", "code"]
    rows.save_to_disk(str(tmp_path / "one"))
    alone = load_records(tmp_path / "one")
    assert {name: split["code"] for name, split in alone.splits.items()} == {"train": ["x = 1", "y = 2", "z = 3"]}


def test_a_data_folder_with_a_file_named_state_json_is_still_a_data_folder(tmp_path):
    """Only a folder save_to_disk wrote (its marker and .arrow files) is read with load_from_disk: a
    folder of JSON Lines files, one of them called state.json, is read file by file as before."""
    (tmp_path / "data.jsonl").write_text('{"task_id": "a", "code": "x = 1"}\n')
    (tmp_path / "state.json").write_text('{"task_id": "b", "code": "y = 2"}\n')
    loaded = load_records(tmp_path)
    assert sorted(loaded.splits["train"]["task_id"]) == ["a", "b"]
