"""The fast token path (a cursor walk over node kind ids, token bags as sorted id arrays)
gives exactly the tokens and bags of the reference walk (``LanguagePlugin.iter_token_nodes``)
on real code: the bundled HumanEval, ICE-Score and MultiPL-E sets (Python, Java, C++ generations; Java
and C++ run without ../shared/data) and, for Python, the MultiPL-E corpus of ../shared/data.
Real tree-sitter grammars and plugins; no mocks."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from workbench.data import load_records
from workbench.dedup.tokens import SignatureSpec, token_bytes, token_id, tokenize_to_bags
from workbench.languages import get_language
from workbench.languages.spec import LanguagePlugin


def _python_programs(shared_data: Path) -> list[str]:
    humaneval = load_records("humaneval").splits["test"]
    texts = [p + s for p, s in zip(humaneval["prompt"], humaneval["canonical_solution"])] + list(humaneval["test"])
    ice = load_records("humaneval-codex-python").splits["test"]
    texts += [p + c for p, c in zip(ice["prompt"], ice["completion_multipl_e"]) if c is not None]
    texts += [g for g in ice["generation"] if g is not None]
    folder = shared_data / "multipl-e-codex-python"
    prompts = {row["task_id"]: row["prompt"] for row in map(json.loads, (folder / "problems.jsonl").open())}
    with gzip.open(folder / "completions.jsonl.gz", "rt") as handle:
        texts += [prompts[row["task_id"]] + row["completion"] for row in map(json.loads, handle)]
    return list(dict.fromkeys(texts))  # each distinct program once


def _programs(data: Path, language: str) -> list[str]:
    """``data``: ../shared/data for Python (its MultiPL-E completions are not bundled), else the bundled
    sets laid out as there (the ``bundled_data`` fixture)."""
    if language == "python":
        return _python_programs(data)
    problems = [json.loads(line) for line in (data / f"multipl-e-codex-{language}" / "problems.jsonl").open()]
    texts = [p["prompt"] for p in problems] + [p["prompt"] + p["tests"] for p in problems]
    for task in json.loads((data / "ice-score" / f"humaneval_{language}_grade.json").read_text()):
        texts += [task["intent"] + value for key, value in task.items() if key.isdigit() and isinstance(value, str)]
    return list(dict.fromkeys(texts))


@pytest.fixture(scope="module", params=["python", "java", "cpp"])
def programs(request):
    data = request.getfixturevalue("shared_data" if request.param == "python" else "bundled_data")
    return request.param, _programs(data, request.param)


def test_fast_spans_equal_the_reference_walk(programs):
    language, texts = programs
    plugin = get_language(language)
    assert len(texts) > (20_000 if language == "python" else 3_000)
    differences = []
    for text in texts:
        data = text.encode("utf-8", errors="surrogateescape")
        tree = plugin.parse(data)
        # the contract's walk over the node-type lists (a plugin may refine it: see the bags test)
        walked = [(n.start_byte, n.end_byte) for n in LanguagePlugin.iter_token_nodes(plugin, tree.root_node)]
        if plugin.token_spans(tree) != walked:
            differences.append(text[:80])
    assert differences == []


def test_bags_equal_the_reference_walks_token_bags(programs):
    language, texts = programs
    texts = texts[::4]  # the spans of every text are checked above; here the bags' layout
    plugin = get_language(language)
    bags = tokenize_to_bags(texts, [language] * len(texts), workers=2, signatures=SignatureSpec(128, 1, 20))
    assert not bags.failures
    for row, text in enumerate(texts):
        data = text.encode("utf-8")
        # the plugin's own walk (the C++ plugin refines it), which token_bytes honours
        walked = [data[n.start_byte : n.end_byte] for n in plugin.iter_token_nodes(plugin.parse(data).root_node)]
        assert token_bytes(plugin, text)[0] == walked
        expected = {token_id(token): count for token, count in Counter(walked).items()}
        ids, counts = bags.tokens_of(row)
        assert bool(np.all(ids[1:] > ids[:-1])), "ids ascend within a bag"
        assert dict(zip(ids.tolist(), counts.tolist())) == expected, text[:80]
        assert bags.row_n_tokens()[row] == len(walked)


def test_fast_spans_on_broken_code_nested_tokens_and_skipped_nodes():
    # an identifier inside an f-string (inside a token), tokens in a comment, error recovery
    # with a MISSING node, and anonymous identifier tokens (print, match)
    plugin = get_language("python")
    for text in ['x = f"{a + b}" # y z\n', "def f(:\n  return (a", "print(match)\nmatch v:\n  case _: pass\n",
                 "", "# only a comment\n", "s = 'a' 'b'\n(\n"]:
        tree = plugin.parse(text)
        walked = [(n.start_byte, n.end_byte) for n in LanguagePlugin.iter_token_nodes(plugin, tree.root_node)]
        assert plugin.token_spans(tree) == walked, text
    data = b'x = f"{a}"  # b\n'
    assert [data[start:end] for start, end in plugin.token_spans(plugin.parse(data))] == [b"x", b'f"{a}"']


def test_token_kind_ids_follow_the_node_type_lists():
    plugin = get_language("python")
    language = plugin.load_language()
    stop, tokens = plugin.token_kind_ids()
    assert tokens < stop
    assert {language.node_kind_for_id(k) for k in stop - tokens} == {"comment"}
    assert {(language.node_kind_for_id(k), language.node_kind_is_named(k)) for k in tokens} >= {
        ("identifier", True), ("string", True), ("integer", True), ("print", False)}
