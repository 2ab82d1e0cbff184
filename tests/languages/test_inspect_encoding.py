"""``workbench languages --inspect FILE`` reads a file as ``workbench dedup`` reads a source folder's
files (:func:`workbench.data.text_encoding.decode_source_file`: UTF-8, a byte-order mark, the file's
own declaration, else the ``--source-encoding`` fallback) and says the encoding when it is not UTF-8.

newuser37 found ``--inspect`` refusing a Latin-1 ``.py`` file ("is not UTF-8 text ... save the file
as UTF-8") that ``dedup`` on its folder read with the cp1252 fallback and compared (docs/dedup.md,
Method step 1). Real CLI through typer's CliRunner, real tree-sitter."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from workbench.cli import app
from workbench.languages import get_language

runner = CliRunner()

LATIN_1 = "def greet(name):\n    return 'café ' + name\n"


def _latin_1_file(tmp_path: Path) -> Path:
    source = tmp_path / "train" / "latin.py"
    source.parent.mkdir()
    source.write_bytes(LATIN_1.encode("latin-1"))
    return source


def test_inspect_reads_a_file_as_dedup_reads_it(tmp_path):
    source = _latin_1_file(tmp_path)
    dedup = runner.invoke(app, ["dedup", str(tmp_path / "train"), "-o", str(tmp_path / "out"), "--no-progress"])
    assert dedup.exit_code == 0, dedup.output
    read_as = json.loads((tmp_path / "out" / "report.json").read_text())["source_encodings"]
    assert list(read_as.values()) == ["cp1252 (fallback)"]  # what dedup did with the file

    inspect = runner.invoke(app, ["languages", "--inspect", str(source), "--json"])
    assert inspect.exit_code == 0, inspect.output
    view = json.loads(inspect.stdout)
    assert view["encoding"] == "cp1252 (fallback)"
    assert view["tokens"] == get_language("python").tokens(LATIN_1)  # the text dedup compared
    assert "'café '" in view["tokens"]

    table = runner.invoke(app, ["languages", "--inspect", str(source)], env={"COLUMNS": "200"})
    assert table.exit_code == 0, table.output
    assert "read as cp1252 (fallback), not UTF-8" in table.output and "greet" in table.output


def test_inspect_takes_dedups_fallback_encoding(tmp_path):
    source = _latin_1_file(tmp_path)
    view = json.loads(runner.invoke(app, ["languages", "--inspect", str(source), "--json",
                                          "--source-encoding", "latin-1"]).stdout)
    assert view["encoding"] == "iso8859-1 (fallback)"  # Python's name of the codec, as dedup records it
    unknown = runner.invoke(app, ["languages", "--inspect", str(source), "--source-encoding", "klingon"])
    assert unknown.exit_code == 1 and "--source-encoding 'klingon' is no encoding Python knows" in unknown.output


def test_inspect_says_nothing_of_encoding_for_utf_8(tmp_path):
    source = tmp_path / "f.py"
    source.write_text(LATIN_1, encoding="utf-8")
    view = json.loads(runner.invoke(app, ["languages", "--inspect", str(source), "--json"]).stdout)
    assert view["encoding"] is None and "'café '" in view["tokens"]
    table = runner.invoke(app, ["languages", "--inspect", str(source)])
    assert "read as" not in table.output


def test_inspect_refuses_a_file_dedup_skips_with_dedups_reason(tmp_path):
    binary = tmp_path / "blob.py"
    binary.write_bytes(b"x = 1\n\x00\x01\x02")
    result = runner.invoke(app, ["languages", "--inspect", str(binary)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: ") and "binary" in result.output and "Traceback" not in result.output
