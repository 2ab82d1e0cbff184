"""The names each DSA-CQE sub-code of Java code defines and reads (real tree-sitter-java).

The expected lists were written by hand, as a Java programmer reads the code (JLS 17): an
increment or compound assignment reads its variable and rebinds it (15.14-15.15, 15.26.2), a
resource, lambda parameter, catch parameter, enhanced-for variable or pattern variable is bound
(14.20.3, 15.27.1, 14.20, 14.14.2, 14.30), and a method name after ``obj.`` or ``::``, a label
and a type name no variable. Names are in source order, without repeats.
"""

from __future__ import annotations

import pytest

from workbench.languages.conformance import one_subcode
from workbench.languages.spec import SubCodeKind
from workbench.score.decompose import decompose
from workbench_java import JavaLanguage


@pytest.fixture(scope="module")
def java():
    return JavaLanguage()


def _in_method(body: str) -> str:
    return "class Problem {\n    static int run(int n, ArrayList<Integer> xs) {\n" + body + "\n    }\n}\n"


@pytest.mark.parametrize(
    ("body", "kind", "starts", "defines", "uses"),
    [
        # the plugin-author trial's case: the loop rebinds count and i, it does not only read them
        ("while (i < n) { count++; --i; }", SubCodeKind.WHILE, "while", ["count", "i"], ["i", "n", "count"]),
        ("do { n /= 10; digits += 1; } while (n > 0);", SubCodeKind.WHILE, "do", ["n", "digits"],
         ["n", "digits"]),
        ("total += x * 2;", SubCodeKind.ASSIGN, "total", ["total"], ["total", "x"]),
        ("total = x;", SubCodeKind.ASSIGN, "total", ["total"], ["x"]),
        # ``this`` is a keyword, no variable
        ("this.size -= 1;", SubCodeKind.ASSIGN, "this", ["this.size"], ["this.size"]),
        # an element is no variable: the array and the index are read
        ("arr[i] *= 5;", SubCodeKind.ASSIGN, "arr", [], ["arr", "i"]),
        ("for (int j = 0; j < n; j++) { sum += j; }", SubCodeKind.FOR, "for", ["j", "sum"], ["j", "n", "sum"]),
        # enhanced for; ``add`` is a method of ``out``, no variable
        ("for (String w : words) { out.add(w); }", SubCodeKind.FOR, "for", ["w"], ["words", "out", "w"]),
        ("for (var e : map.entrySet()) { total += e.getValue(); }", SubCodeKind.FOR, "for", ["e", "total"],
         ["map", "total", "e"]),
        # lambda parameters: a bare name, inferred and declared parameters
        ("xs.forEach(y -> print(y));", SubCodeKind.CALL, "xs", ["y"], ["xs", "print", "y"]),
        ("Function<Integer, Integer> g = (a) -> a + n;", SubCodeKind.ASSIGN, "Function", ["g", "a"], ["a", "n"]),
        ("BinaryOperator<Integer> h = (int a, int b) -> a * b;", SubCodeKind.ASSIGN, "Binary", ["h", "a", "b"],
         ["a", "b"]),
        # a method reference names a method of String, no variable; the class is read
        ("List<String> s = xs.stream().map(String::valueOf).toList();", SubCodeKind.ASSIGN, "List", ["s"],
         ["xs", "String"]),
        ("String t = String.valueOf(n).trim();", SubCodeKind.ASSIGN, "String", ["t"], ["String", "n"]),
        ("System.out.println(count);", SubCodeKind.CALL, "System", [], ["System", "count"]),
        # pattern variables are bound; the pattern's type is no variable, like a declaration's
        ("if (o instanceof String str) { use(str); }", SubCodeKind.IF, "if", ["str"], ["o", "use", "str"]),
        ("if (o instanceof Point(int px, var py)) { use(px + py); }", SubCodeKind.IF, "if", ["px", "py"],
         ["o", "use", "px", "py"]),
        ("switch (o) { case String s -> count = s.length(); default -> count = 0; }", SubCodeKind.SWITCH,
         "switch", ["s", "count"], ["o", "s"]),
        # a label is no variable
        ("outer: for (int r = 0; r < n; r++) { if (r > 2) break outer; else continue outer; }", SubCodeKind.FOR,
         "for", ["r"], ["r", "n"]),
    ],
)
def test_statement_names(java, body, kind, starts, defines, uses):
    subcode = one_subcode(_in_method(body), java, kind, starts)
    assert (subcode.defines, subcode.uses) == (defines, uses)


def test_method_binds_resources_catch_parameters_and_reads_its_own_calls(java):
    code = (
        "class Reader {\n"
        "    int lines;\n"
        "    int count(String path) {\n"
        "        try (var in = open(path); Scanner sc = new Scanner(in)) {\n"
        "            while (sc.hasNextLine()) { sc.nextLine(); lines++; }\n"
        "        } catch (IOException | IllegalStateException e) {\n"
        "            log(e);\n"
        "        }\n"
        "        return this.lines;\n"
        "    }\n"
        "    int twice(String path) { return count(path) * 2 + this.count(path); }\n"
        "}\n"
    )
    decomposition = decompose(code, java)
    count = one_subcode(code, java, SubCodeKind.FUNCTION_DEF, "int count")
    assert count.defines == ["count", "path", "in", "sc", "lines", "e"]
    # ``hasNextLine``/``nextLine`` are methods of ``sc``, no variables; the exception classes are read
    assert count.uses == ["open", "path", "in", "sc", "lines", "IOException", "IllegalStateException", "log", "e"]
    twice = one_subcode(code, java, SubCodeKind.FUNCTION_DEF, "int twice")
    # a call of the class's own method reads its name; in ``this.count(...)`` it is a member name
    assert (twice.defines, twice.uses) == (["twice", "path"], ["count", "path"])
    classes = [s for s in decomposition.subcodes if s.kind is SubCodeKind.CLASS_DEF]
    assert classes[0].defines[:4] == ["Reader", "lines", "count", "path"]


@pytest.mark.parametrize(
    ("code", "defines", "uses"),
    [
        ("enum Color { RED, GREEN; Color next() { return GREEN; } }\n", ["Color", "RED", "GREEN", "next"],
         ["GREEN"]),
        ("record Pair(int left, int right) { int sum() { return left + right; } }\n",
         ["Pair", "left", "right", "sum"], ["left", "right"]),
    ],
)
def test_enum_constants_and_record_components_are_defined(java, code, defines, uses):
    subcode = one_subcode(code, java, SubCodeKind.CLASS_DEF, code[:4])
    assert (subcode.defines, subcode.uses) == (defines, uses)
