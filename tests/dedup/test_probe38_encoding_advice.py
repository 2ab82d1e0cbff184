"""Probe 38: a source folder whose only non-UTF-8 files name their encoding themselves (a PEP 263
coding cookie, a UTF-16 byte-order mark) gets the advice "where the fallback encoding is wrong, give
the files' own with --source-encoding", although no file was read in the fallback encoding and
--source-encoding would change nothing for them. The advice belongs to fallback reads only."""

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
    assert "fallback" not in said and "--source-encoding" not in said, said
