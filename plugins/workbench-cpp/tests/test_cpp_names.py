"""The names each DSA-CQE sub-code of C++ code defines and reads (real tree-sitter-cpp).

The expected lists were written by hand, as a C++ programmer reads the code (C++20): an
increment or compound assignment reads its operand and rebinds it ([expr.post.incr],
[expr.pre.incr], [expr.ass]); a declarator declares its name with or without an initializer
([dcl.decl]: pointers, references, arrays, whose size is read); a range-for and a structured
binding declare their names ([stmt.ranged], [dcl.struct.bind]); a class declares its fields and
member functions, and a constructor's initializer list initializes members ([class.base.init]);
a label, a member after ``.``/``->`` and a type name no variable. Names are in source order,
without repeats.
"""

from __future__ import annotations

import pytest

from workbench.languages.conformance import one_subcode
from workbench.languages.spec import SubCodeKind
from workbench.score.decompose import decompose
from workbench_cpp import CppLanguage


@pytest.fixture(scope="module")
def cpp():
    return CppLanguage()


def _in_function(body: str) -> str:
    return "long run(std::vector<long> &xs, const std::map<std::string, int> &m, int n) {\n" + body + "\n}\n"


@pytest.mark.parametrize(
    ("body", "kind", "starts", "defines", "uses"),
    [
        # the plugin-author trial's case: the loop rebinds count and i, it does not only read them
        ("while (i < n) { count++; --i; }", SubCodeKind.WHILE, "while", ["count", "i"], ["i", "n", "count"]),
        ("for (int j = 0; j < n; j++) { sum += xs[j]; }", SubCodeKind.FOR, "for", ["j", "sum"],
         ["j", "n", "sum", "xs"]),
        ("total += x * 2;", SubCodeKind.ASSIGN, "total", ["total"], ["total", "x"]),
        ("total = x;", SubCodeKind.ASSIGN, "total", ["total"], ["x"]),
        ("bits xor_eq mask;", SubCodeKind.ASSIGN, "bits", ["bits"], ["bits", "mask"]),
        ("xs[i] -= 1;", SubCodeKind.ASSIGN, "xs", [], ["xs", "i"]),
        # an element reached through a call is no variable either: the call is read
        ("xs.at(i) = n;", SubCodeKind.ASSIGN, "xs", [], ["xs", "i", "n"]),
        ("while (n > 0) { std::get<1>(pair)++; n /= 10; }", SubCodeKind.WHILE, "while", ["n"],
         ["n", "std", "get", "pair"]),
        # range-for with a reference, and with a structured binding
        ("for (auto &x : xs) { total += x; }", SubCodeKind.FOR, "for", ["x", "total"], ["xs", "total", "x"]),
        ("for (const auto& [key, value] : m) { total += value; }", SubCodeKind.FOR, "for",
         ["key", "value", "total"], ["m", "total", "value"]),
        ("auto [lo, hi] = std::minmax(a, b);", SubCodeKind.ASSIGN, "auto", ["lo", "hi"], ["std", "minmax", "a", "b"]),
        # pointer, reference and array declarators declare their names; the array size is read
        ("int *p = &count, &r = n, dp[n + 1], k;", SubCodeKind.ASSIGN, "int", ["p", "r", "dp", "k"],
         ["count", "n"]),
        ("std::vector<int> cnt(n, 0);", SubCodeKind.ASSIGN, "std::vector", ["cnt"], ["n"]),
        # a member is rebound through its dotted path; ``push_back`` is a member, no variable
        ("for (auto it = m.begin(); it != m.end(); ++it) { it->second++; out.push_back(it->first); }",
         SubCodeKind.FOR, "for", ["it", "it->second"], ["m", "it", "it->second", "out"]),
        # lambda parameters are declared, captures read
        ("auto add = [&total](int u) { total += u; };", SubCodeKind.ASSIGN, "auto", ["add", "u", "total"],
         ["total", "u"]),
        # a label is no variable
        ("if (n < 0) { goto done; }\ndone: return 0;", SubCodeKind.IF, "if", [], ["n"]),
    ],
)
def test_statement_names(cpp, body, kind, starts, defines, uses):
    subcode = one_subcode(_in_function(body), cpp, kind, starts)
    assert (subcode.defines, subcode.uses) == (defines, uses)


def test_class_defines_fields_and_methods_and_methods_read_fields(cpp):
    code = (
        "class Counter {\n"
        "  public:\n"
        "    int value = 0;\n"
        "    int get() const;\n"
        "    Counter(int start) : value(start) {}\n"
        "    void bump(int step) { value += step; }\n"
        "};\n"
        "int Counter::get() const { return value; }\n"
        "class Forward;\n"
    )
    decomposition = decompose(code, cpp)
    classes = [s for s in decomposition.subcodes if s.kind is SubCodeKind.CLASS_DEF]
    assert [(s.defines, s.uses) for s in classes] == [
        (["Counter", "value", "get", "start", "bump", "step"], ["start", "value", "step"]),
        # a declaration without a body names the class, it defines nothing
        ([], ["Forward"]),
    ]
    constructor = one_subcode(code, cpp, SubCodeKind.FUNCTION_DEF, "Counter(")
    assert (constructor.defines, constructor.uses) == (["Counter", "start", "value"], ["start"])
    # defined outside its class: the class is the scope of the name, not a variable
    get = one_subcode(code, cpp, SubCodeKind.FUNCTION_DEF, "int Counter::get")
    assert (get.defines, get.uses) == (["get"], ["value"])


def test_catch_parameter_is_declared(cpp):
    code = _in_function("try { total = parse(n); } catch (const std::exception &e) { log(e.what()); }")
    function = one_subcode(code, cpp, SubCodeKind.FUNCTION_DEF, "long run")
    assert function.defines == ["run", "xs", "m", "n", "total", "e"]
    assert function.uses == ["parse", "n", "log", "e"]
