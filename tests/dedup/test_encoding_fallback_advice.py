"""A source folder whose only non-UTF-8 files name their encoding themselves (a PEP 263
coding cookie, a UTF-16 byte-order mark) gets the advice "where the fallback encoding is wrong, give
the files' own with --source-encoding", although no file was read in the fallback encoding and
--source-encoding would change nothing for them (found by a new-user probe). The advice belongs to
fallback reads only: a cp1252 file without a declaration still gets it."""

from __future__ import annotations

import logging
import random
from pathlib import Path

from unique_functions import make_function
from workbench.dedup import DedupConfig, run_dedup


def test_no_fallback_advice_when_every_file_declares_its_encoding(tmp_path: Path, caplog) -> None:
    folder = tmp_path / "src"
    (folder / "train").mkdir(parents=True)
    (folder / "train" / "plain.py").write_text(make_function(random.Random(1), "plain"))
    cookie = "# -*- coding: latin-1 -*-\n" + make_function(random.Random(2), "cookie") + "x = 'caf\u00e9'\n"
    (folder / "train" / "cookie.py").write_bytes(cookie.encode("latin-1"))
    (folder / "train" / "wide.py").write_bytes(make_function(random.Random(3), "wide").encode("utf-16"))
    with caplog.at_level(logging.WARNING, logger="workbench.data.loading"):
        run = run_dedup(str(folder), DedupConfig(workers=1))
    assert run.report["source_encodings"] == {"train/cookie.py": "declared by the file",
                                              "train/wide.py": "UTF-16 (byte-order mark)"}
    said = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "train/cookie.py" in said  # the reads are still said
    # (not the bare word "fallback": pytest's tmp_path holds this test's name)
    assert "fallback encoding" not in said and "--source-encoding" not in said, said


def test_fallback_advice_when_a_file_is_read_in_the_fallback_encoding(tmp_path: Path, caplog) -> None:
    folder = tmp_path / "src"
    (folder / "train").mkdir(parents=True)
    (folder / "train" / "wide.py").write_bytes(make_function(random.Random(3), "wide").encode("utf-16"))
    legacy = make_function(random.Random(4), "legacy") + "x = 'caf\u00e9'\n"
    (folder / "train" / "legacy.py").write_bytes(legacy.encode("cp1252"))
    with caplog.at_level(logging.WARNING, logger="workbench.data.loading"):
        run = run_dedup(str(folder), DedupConfig(workers=1))
    assert run.report["source_encodings"]["train/legacy.py"] == "cp1252 (fallback)"
    said = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "where the fallback encoding is wrong, give the files' own with --source-encoding" in said, said


def test_no_fallback_advice_for_bytes_cells_with_a_byte_order_mark(tmp_path: Path, caplog) -> None:
    """The same for code cells of bytes (a Parquet binary column): a UTF-16 cell names its encoding."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cells = {"plain": make_function(random.Random(5), "plain").encode(),
             "wide": make_function(random.Random(6), "wide").encode("utf-16")}
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": list(cells), "content": pa.array(list(cells.values()), pa.binary())}), path)
    with caplog.at_level(logging.WARNING, logger="workbench.data.loading"):
        run = run_dedup(str(path), DedupConfig(workers=1))
    assert run.report["source_encodings"] == {"row wide": "UTF-16 (byte-order mark)"}
    [said] = [r.getMessage() for r in caplog.records if "of bytes in another encoding" in r.getMessage()]
    assert said.endswith("row wide as UTF-16 (byte-order mark)"), said
