"""The names each DSA-CQE sub-code of C code defines and reads (real tree-sitter-c).

The expected lists were written by hand, as a C programmer reads the code (C23): an increment
or compound assignment reads its operand and rebinds it (6.5.2.4, 6.5.3.1, 6.5.16.2), a
declarator declares its name whether or not it has an initializer (6.7.6: ``int *p``, ``int
a[n]`` declare ``p`` and ``a``; the array size is read), a struct declares its members, and a
label, a designator's member and a type name no variable. Names are in source order, without
repeats.
"""

from __future__ import annotations

import pytest

from workbench.languages.conformance import one_subcode
from workbench.languages.spec import SubCodeKind
from workbench.score.decompose import decompose
from workbench_c import CLanguage


@pytest.fixture(scope="module")
def c():
    return CLanguage()


def _in_function(body: str) -> str:
    return "int run(int n, int *xs) {\n" + body + "\n}\n"


@pytest.mark.parametrize(
    ("body", "kind", "starts", "defines", "uses"),
    [
        # the plugin-author trial's case: the loop rebinds count and i, it does not only read them
        ("while (i < n) { count++; --i; }", SubCodeKind.WHILE, "while", ["count", "i"], ["i", "n", "count"]),
        ("do { n /= 10; digits += 1; } while (n > 0);", SubCodeKind.WHILE, "do", ["n", "digits"],
         ["n", "digits"]),
        ("for (int j = 0; j < n; j++) { sum += xs[j]; }", SubCodeKind.FOR, "for", ["j", "sum"],
         ["j", "n", "sum", "xs"]),
        ("for (i = n - 1; i >= 0; i--) ;", SubCodeKind.FOR, "for", ["i"], ["n", "i"]),
        ("total += x * 2;", SubCodeKind.ASSIGN, "total", ["total"], ["total", "x"]),
        ("total = x;", SubCodeKind.ASSIGN, "total", ["total"], ["x"]),
        # through a pointer or into an element: no variable is rebound, the pointer and index are read
        ("*p += 3;", SubCodeKind.ASSIGN, "*p", [], ["p"]),
        ("arr[i] <<= 1;", SubCodeKind.ASSIGN, "arr", [], ["arr", "i"]),
        ("while (*s) { (*count)++; s++; }", SubCodeKind.WHILE, "while", ["s"], ["s", "count"]),
        # a member is rebound: its dotted path, and the base is read
        ("while (node) { node->seen++; node = node->next; }", SubCodeKind.WHILE, "while",
         ["node->seen", "node"], ["node", "node->seen"]),
        # declarators without an initializer declare too; a pointer's and an array's name, not the size
        ("int count = 0, *p = xs, arr[n + 1], k;", SubCodeKind.ASSIGN, "int", ["count", "p", "arr", "k"],
         ["xs", "n"]),
        ("char **rows;", SubCodeKind.ASSIGN, "char", ["rows"], []),
        # a designated initializer's ``.x`` is a member, no variable
        ("struct point q = {.x = a, .y = &k};", SubCodeKind.ASSIGN, "struct point q", ["q"], ["a", "k"]),
        # a label is no variable
        ("if (n < 0) { goto done; }\ndone: return 0;", SubCodeKind.IF, "if", [], ["n"]),
    ],
)
def test_statement_names(c, body, kind, starts, defines, uses):
    subcode = one_subcode(_in_function(body), c, kind, starts)
    assert (subcode.defines, subcode.uses) == (defines, uses)


def test_parameters_of_every_declarator_shape_are_defined(c):
    code = "int apply(int *xs, int m[], char **argv, int (*cb)(int), const int n) { return cb(xs[n]); }\n"
    function = one_subcode(code, c, SubCodeKind.FUNCTION_DEF, "int apply")
    assert (function.defines, function.uses) == (["apply", "xs", "m", "argv", "cb", "n"], ["cb", "xs", "n"])


def test_a_struct_defines_its_members_and_a_struct_without_body_defines_nothing(c):
    code = "struct point { int x; int *y; double z[3]; };\ntypedef struct point Point;\n"
    structs = [s for s in decompose(code, c).subcodes if s.kind is SubCodeKind.CLASS_DEF]
    assert [(s.text, s.defines, s.uses) for s in structs] == [
        ("struct point { int x; int *y; double z[3]; }", ["point", "x", "y", "z"], []),
        # ``struct point`` in the typedef names the type defined above
        ("struct point", [], ["point"]),
    ]
