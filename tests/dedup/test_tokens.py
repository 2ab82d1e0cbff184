"""The built-in Python plugin's dedup tokens equal Python's own ``tokenize`` view
(NAME tokens that are not keywords, STRING and NUMBER), the definition of the
brute-force truth in ../shared/bench; real tree-sitter grammar, no mocks."""

from __future__ import annotations

import io
import json
import keyword
import tokenize

import pytest

from workbench.languages import get_language


def python_tokenize(source: str) -> list[str]:
    kept = (tokenize.NAME, tokenize.STRING, tokenize.NUMBER)
    return [
        t.string
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type in kept and not keyword.iskeyword(t.string)
    ]


EDGE_CASES = [
    "from __future__ import annotations\nimport os.path as p\n",
    "match command:\n    case [x, _]:\n        pass\n    case _:\n        pass\n",
    "match = 1\ncase = match + 2\n_ = case\ntype = 3\n",
    "x = f'{a!r:>{width}}' 'b' rb'\\x00' u'c'\n",
    "n = 1_000 + 0x1F + 1e-3 + 2j + 0o7 + 1.\n",
    "def f(a, /, b=None, *args, c: int = True, **kw) -> 'T':\n    return ...\n",
    "async def g():\n    await h()\n    async with x as y:\n        yield from z\n",
    "@decorator(1)\nclass A(B, metaclass=M):\n    '''doc'''\n    x: int = -5  # comment 'not a token'\n",
    "lambda k, *, v=1: k if v else not k\n",
    "print('hi', file=sys.stderr)\nexec('x = 1')\n",
    "s = '''multi\nline'''\nt = \"\"\"a\"\"\" \\\n    'b'\n",
    "übung = 'ü'\n",
]


@pytest.mark.parametrize("source", EDGE_CASES)
def test_python_plugin_tokens_equal_python_tokenize(source):
    assert get_language("python").tokens(source) == python_tokenize(source)


@pytest.mark.parametrize("source", EDGE_CASES)
def test_query_tokens_equal_the_reference_walk(source):
    python = get_language("python")
    tree = python.parse(source)
    walked = [node.text.decode() for node in python.iter_token_nodes(tree.root_node)]
    assert python.tokens(source) == walked


def test_broken_code_still_yields_tokens_and_is_flagged():
    tokens, has_error = get_language("python").scan_tokens("def f(:\n    return alpha + 'beta'\nx = \n")
    assert has_error
    assert "alpha" in tokens and "'beta'" in tokens
    assert "" not in tokens  # MISSING nodes inserted by error recovery are zero-width


def test_tokens_equal_tokenize_on_the_synthetic_corpus(dup_corpus_2k):
    python = get_language("python")
    mismatches = []
    with open(dup_corpus_2k / "corpus.jsonl") as handle:
        for line in handle:
            row = json.loads(line)
            if python.tokens(row["content"]) != python_tokenize(row["content"]):
                mismatches.append(row["id"])
    assert mismatches == []


def test_a_plugin_that_refines_the_walk_is_honoured():
    from workbench.languages.python_plugin import PythonLanguage

    class NoSelf(PythonLanguage):
        def iter_token_nodes(self, root):
            return (n for n in super().iter_token_nodes(root) if n.text != b"self")

    tokens, has_error = NoSelf().scan_tokens("def f(self, x):\n    return self.x + 1\n")
    assert tokens == ["f", "x", "x", "1"] and not has_error


#: a multi-line string literal in each language: its token holds the line end
MULTI_LINE_STRINGS = {
    "python": 's = """line one\nline two"""\nx = f(s)\n',
    "cpp": 'const char* s = R"(line one\nline two)";\nint x = f(s);\n',
    "java": 'class A { String s = """\n  line one\n  line two"""; }\n',
}


@pytest.mark.parametrize("language", sorted(MULTI_LINE_STRINGS))
def test_line_ends_do_not_change_the_tokens_in_any_language(language):
    # probe 29: a CRLF copy kept the \r in its multi-line string token, so the copy was no duplicate
    from workbench.dedup.tokens import tokenize_one

    code = MULTI_LINE_STRINGS[language]
    lf, crlf, cr = (tokenize_one(code.replace("\n", end), language) for end in ("\n", "\r\n", "\r"))
    assert lf.failure is None and lf.n_tokens >= 4
    assert lf.counts == crlf.counts == cr.counts


def test_a_crlf_copy_of_a_file_is_its_exact_duplicate(tmp_path):
    from workbench.dedup import DedupConfig, run_dedup

    body = "".join(f'def f{k}(a, b):\n    """Add a and b.\n\n    Returns the sum {k}."""\n    return a + b + {k}\n\n'
                   for k in range(6))
    for split, end in (("train", "\n"), ("test", "\r\n")):
        (tmp_path / "src" / split).mkdir(parents=True)
        (tmp_path / "src" / split / "m.py").write_bytes(body.replace("\n", end).encode())
    run = run_dedup(str(tmp_path / "src"), DedupConfig(), output_dir=tmp_path / "out")
    assert json.loads((tmp_path / "out" / "clusters.json").read_text()) == [["test/m.py", "train/m.py"]]
    assert run.report["overall"]["exact_duplicates"] == 1
    # the kept files stay byte copies: the normalisation is for the tokens only
    assert (tmp_path / "out" / "files" / "train" / "m.py").read_bytes() == body.encode()
