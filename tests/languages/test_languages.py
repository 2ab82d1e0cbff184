"""The plugin registry and the built-in Python plugin (real tree-sitter grammar)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import LanguageNotFoundError
from workbench.languages import SubCodeKind, get_language, installed_plugins


def test_python_is_registered_through_the_hook():
    names = [info.plugin.name for info in installed_plugins()]
    assert "python" in names
    assert get_language("py") is get_language(".py") is get_language("python")


def test_unknown_language_is_a_clear_error():
    with pytest.raises(LanguageNotFoundError, match="installed: .*python"):
        get_language("cobol-2099")


def test_python_tokens_keep_identifiers_and_literals_only():
    code = 'x = f"a{b}" "c"  # comment\nfor i in range(10):\n    y += 1.5 if not None else True\n'
    assert get_language("python").tokens(code) == ["x", 'f"a{b}"', '"c"', "i", "range", "10", "y", "1.5"]


def test_python_tokens_survive_syntax_errors():
    tokens = get_language("python").tokens("def f(:\n    return alpha + 'beta'\n")
    assert "alpha" in tokens and "'beta'" in tokens


def test_python_decomposition_map_covers_the_eight_kinds():
    plugin = get_language("python")
    assert set(plugin.subcode_node_types) == set(SubCodeKind)
    assert plugin.kind_of("match_statement") is SubCodeKind.SWITCH


def test_languages_command_lists_python():
    result = CliRunner().invoke(app, ["languages", "--json"])
    assert result.exit_code == 0, result.output
    assert '"name": "python"' in result.output


def test_parse_reuses_one_parser_per_thread_and_threads_parse_correctly():
    from concurrent.futures import ThreadPoolExecutor

    python = get_language("python")
    first = python.parse("a = 1\n")
    assert python._parser() is python._parser()  # reused within a thread
    codes = [f"def f{i}(x):\n    return x + {i}\n" * 50 for i in range(64)]
    expected = [python.tokens(code) for code in codes]
    with ThreadPoolExecutor(max_workers=4) as pool:  # each thread parses with its own parser
        assert list(pool.map(python.tokens, codes)) == expected
        other = pool.submit(python._parser).result()
    assert other is not python._parser()
    assert first.root_node.text == b"a = 1\n"  # an earlier tree outlives later parses


def test_languages_inspect_shows_tokens_and_subcodes_of_a_file(tmp_path):
    import json

    program = tmp_path / "f.py"
    program.write_text("def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n")
    result = CliRunner().invoke(app, ["languages", "--inspect", str(program), "--json"])
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)
    assert view["language"] == "python" and view["tokens"][:3] == ["f", "xs", "total"]
    assert [(s["kind"], s["lines"]) for s in view["subcodes"]] == [
        ("Assign", [2, 2]), ("Assign", [4, 4]), ("For", [3, 4]), ("FunctionDef", [1, 5])]
    assert view["subcodes"][2]["defines"][0] == "x"
    table = CliRunner().invoke(app, ["languages", "--inspect", str(program)])
    assert "FunctionDef" in table.output and "dedup tokens (9)" in table.output
    unknown = tmp_path / "notes.txt"
    unknown.write_text("plain text")
    refused = CliRunner().invoke(app, ["languages", "--inspect", str(unknown)])
    assert refused.exit_code == 1 and "pass --language" in refused.output
