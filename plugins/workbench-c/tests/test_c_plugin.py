"""The C plugin: the conformance kit with the real tree-sitter-c grammar, its tokens against the
C token classes, the keywords it drops, its decomposition and definitions, and a folder of C
sources and headers deduplicated end to end (the C++ plugin reads the ``.h`` files)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_records
from workbench.languages import SubCodeKind, get_language
from workbench.languages.conformance import LanguagePluginConformance
from workbench_c import CLanguage

SAMPLE_ALL_CONSTRUCTS = """\
#include <stdio.h>
#include "list.h"

/* A running total. */
struct accumulator {
    long total;
};

union number { int i; double d; };

size_t add(struct accumulator *acc, const int *values, size_t count, char mode) {
    for (size_t i = 0; i < count; i++) {
        acc->total += values[i];
    }
    if (acc->total < 0) {
        acc->total = 0;
    }
    while (acc->total > 1000) {
        acc->total /= 2;
    }
    do { count--; } while (count > 10);
    switch (mode) {
        case 'd': acc->total *= 2; break;
        default: break;
    }
    printf("total=%ld\\n", acc->total + 0x1F);
    return count;
}
"""

SAMPLE_SMALL = 'int f(const char *s) { /* c */ return strlen(s) + 42 + sizeof(int) + (s == NULL) + true; }\n'
SMALL_TOKENS = ["f", "s", "strlen", "s", "42", "s", "NULL"]


# the definition forms the first sample lacks: the kit checks the fields of every definition node type
SAMPLE_DECLARATIONS = "typedef unsigned long ulong_t;\nenum color { RED, GREEN = 2 };\n"

class TestCConformance(LanguagePluginConformance):
    plugin = CLanguage()
    samples = [SAMPLE_ALL_CONSTRUCTS, SAMPLE_SMALL, SAMPLE_DECLARATIONS]
    expected_tokens = {1: SMALL_TOKENS}


def test_plugin_is_found_by_name_alias_and_extension():
    assert isinstance(get_language("c"), CLanguage)
    assert isinstance(get_language("c11"), CLanguage)
    assert isinstance(get_language(".c"), CLanguage)
    assert get_language(".h").name == "cpp"  # headers: the C++ plugin, whose grammar extends C's


def test_keywords_are_dropped_and_typedef_names_kept():
    tokens, has_error = CLanguage().scan_tokens(
        "unsigned long f(size_t n, int64_t m, _Bool b) { void *p = nullptr; bool t = false; return n + m; }")
    assert not has_error
    assert tokens == ["f", "size_t", "n", "int64_t", "m", "b", "p", "t", "n", "m"]


def test_wide_and_unicode_character_types_are_typedef_names_in_c():
    """In C, ``wchar_t`` (<stddef.h>), ``char16_t`` and ``char32_t`` (<uchar.h>) are typedef names, so
    identifier tokens, unlike in C++ where they are keywords; ``_Bool`` and ``typeof`` are keywords."""
    tokens = CLanguage().tokens("wchar_t w; char16_t u; char32_t v; _Bool b; typeof(w) x;")
    assert tokens == ["wchar_t", "w", "char16_t", "u", "char32_t", "v", "b", "w", "x"]


def test_include_names_literals_and_macro_bodies():
    tokens = CLanguage().tokens('#include <stdlib.h>\n#define MAX 64\nchar *s = "a" "b"; char c = \'x\'; double d = 1.5e3;\n')
    # the #define body is not parsed (no "64"); adjacent string literals stay two tokens
    assert tokens == ["<stdlib.h>", "MAX", "s", '"a"', '"b"', "c", "'x'", "d", "1.5e3"]


def test_decomposition_finds_every_kind_depth_first():
    plugin = CLanguage()
    tree = plugin.parse(SAMPLE_ALL_CONSTRUCTS)
    kinds = []

    def walk(node):
        kind = plugin.kind_of(node.type)
        if kind is not None:
            kinds.append(kind)
        for child in node.children:
            walk(child)

    walk(tree.root_node)
    assert set(kinds) == set(SubCodeKind)
    assert kinds.index(SubCodeKind.FUNCTION_DEF) < kinds.index(SubCodeKind.FOR) < kinds.index(SubCodeKind.WHILE)


def test_a_folder_of_c_sources_and_headers_is_deduplicated(tmp_path):
    """Real files, the real loader and dedup: a renamed copy of a .c file is a near duplicate; the
    header is loaded by the C++ plugin; nothing is skipped."""
    corpus = tmp_path / "corpus"  # the output folder must lie outside the input
    (corpus / "train").mkdir(parents=True)
    body = SAMPLE_ALL_CONSTRUCTS
    (corpus / "train" / "acc.c").write_text(body)
    (corpus / "train" / "acc_copy.c").write_text(body.replace("mode", "kind").replace("/* A running total. */", ""))
    (corpus / "train" / "list.h").write_text("#ifndef LIST_H\n#define LIST_H\ntypedef struct node { int v; struct node *next; } node_t;\n"
                                               "size_t list_length(const node_t *head);\n#endif\n")
    loaded = load_records(corpus)
    languages = dict(zip(loaded.splits["train"]["id"], loaded.splits["train"]["language"]))
    assert languages == {"train/acc.c": "c", "train/acc_copy.c": "c", "train/list.h": "cpp"}
    assert not loaded.skipped
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["dedup", str(corpus), "-o", str(out), "--min-tokens", "5", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert [sorted(c) for c in json.loads((out / "clusters.json").read_text())] == [["train/acc.c", "train/acc_copy.c"]]


def test_execute_with_c_says_the_plugin_has_no_runner(tmp_path):
    """``workbench execute -l c`` stops before anything runs, saying why and where to look (the C
    plugin has tokens and decomposition only)."""
    generations = tmp_path / "gens.jsonl"
    generations.write_text(json.dumps({"task_id": "T/0", "sample_id": 0, "completion": "return a + b;\n}\n"}) + "\n")
    problems = tmp_path / "problems.jsonl"
    problems.write_text(json.dumps({"task_id": "T/0", "prompt": "int add(int a, int b) {\n",
                                    "test": "int main(void) { return add(1, 2) != 3; }\n"}) + "\n")
    result = CliRunner().invoke(app, ["execute", str(generations), "--problems", str(problems), "-l", "c",
                                      "-o", str(tmp_path / "out.jsonl")])
    assert result.exit_code == 1, result.output
    assert "the c plugin cannot execute code (it has no test runner)" in result.output
    assert "workbench languages" in result.output
    assert not (tmp_path / "out.jsonl").exists()
