"""The fast token path (one pass over the query captures, token bags as sorted id arrays)
gives exactly the tokens and bags of the reference walk (``LanguagePlugin.iter_token_nodes``)
and of the sort-based span filter it replaced, on real code: the bundled HumanEval and
ICE-Score sets and the MultiPL-E corpus of ../shared/data (Python, Java, C++ generations).
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
from workbench.languages.spec import LanguagePlugin, _outermost_token_spans, _sorted_token_spans


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


def _programs(shared_data: Path, language: str) -> list[str]:
    if language == "python":
        return _python_programs(shared_data)
    problems = [json.loads(line) for line in (shared_data / f"multipl-e-codex-{language}" / "problems.jsonl").open()]
    texts = [p["prompt"] for p in problems] + [p["prompt"] + p["tests"] for p in problems]
    for task in json.loads((shared_data / "ice-score" / f"humaneval_{language}_grade.json").read_text()):
        texts += [task["intent"] + value for key, value in task.items() if key.isdigit() and isinstance(value, str)]
    return list(dict.fromkeys(texts))


@pytest.fixture(scope="module", params=["python", "java", "cpp"])
def programs(request, shared_data):
    return request.param, _programs(shared_data, request.param)


def test_fast_spans_equal_the_reference_walk_and_the_sorted_filter(programs):
    import tree_sitter

    language, texts = programs
    plugin = get_language(language)
    assert len(texts) > (20_000 if language == "python" else 3_000)
    differences, fast_path = [], 0
    for text in texts:
        data = text.encode("utf-8", errors="surrogateescape")
        tree = plugin.parse(data)
        # the contract's walk over the node-type lists (a plugin may refine it: see the bags test)
        walked = [(n.start_byte, n.end_byte) for n in LanguagePlugin.iter_token_nodes(plugin, tree.root_node)]
        captures = tree_sitter.QueryCursor(plugin.token_query()).captures(tree.root_node)
        tokens = sorted(n.byte_range for n in captures.get("token", ()))
        skips = sorted(n.byte_range for n in captures.get("skip", ()))
        fast = _outermost_token_spans(tokens, skips)
        fast_path += fast is not None
        if plugin.token_spans(tree) != walked or (fast is not None and fast != walked) or (
                _sorted_token_spans(tokens, skips) != walked):
            differences.append(text[:80])
    assert differences == []
    if language == "python":  # no Python token starts where its parent token starts: one pass does it all
        assert fast_path == len(texts)


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


def test_out_of_order_captures_fall_back_to_sorting():
    # a node and its first child start at one byte: the one-pass filter declines
    assert _outermost_token_spans([(0, 5), (0, 3)], []) is None
    assert _sorted_token_spans([(0, 5), (0, 3)], []) == [(0, 5)]
    # a skipped node covering tokens, a token covering a skipped node, a MISSING node
    tokens, skips = [(0, 4), (6, 8), (10, 20), (12, 14), (21, 21), (22, 25)], [(5, 9), (15, 18)]
    assert _outermost_token_spans(tokens, skips) == _sorted_token_spans(tokens, skips) == [(0, 4), (10, 20), (22, 25)]
    # equal spans: the token sorts before the skipped node and is kept
    assert _outermost_token_spans([(3, 6)], [(3, 6)]) == _sorted_token_spans([(3, 6)], [(3, 6)]) == [(3, 6)]
