"""C++ plugin: conformance kit, tokens and decomposition on real MultiPL-E / ICE-Score code,
and the g++ runner on real programs (real compiler, real subprocesses)."""

from __future__ import annotations

import re
import secrets

import pytest
from multipl_e_data import generations, grade_task, labelled_samples, reference_programs

from workbench.data.loading import load_records
from workbench.execute.sandbox_helpers import available_levels, sandbox_for
from workbench.languages import SubCodeKind, get_language
from workbench.languages.conformance import (
    LanguagePluginConformance,
    RunnerCase,
    languages_row,
    run_spec,
    subcode_kind_counts,
)
from workbench_cpp import CppLanguage
from workbench_cpp.runner import CppRunner, build_precompiled_header, rename_tests_main

SAMPLE_ALL_CONSTRUCTS = """\
#include <vector>
#include <string>

// Keeps a running total.
struct Accumulator {
    long total = 0;
};

class Histogram {
  public:
    std::vector<int> bins;
};

size_t add(Accumulator& acc, const std::vector<int>& values, char mode) {
    for (size_t i = 0; i < values.size(); i++) {
        acc.total += values[i];
    }
    for (int v : values) {
        if (v < 0) {
            acc.total -= 1;
        }
    }
    while (acc.total > 1000) {
        acc.total /= 2;
    }
    switch (mode) {
        case 'd': acc.total *= 2; break;
        default: break;
    }
    std::string label = "total=" + std::to_string(acc.total + 0x1F) + R"(raw "text")";
    return label.size();
}
"""

SAMPLE_SMALL = 'int f(std::string s) { /* c */ return s.size() + 42 + sizeof(int) + true; }\n'
SMALL_TOKENS = ["f", "std", "string", "s", "s", "size", "42"]

PROGRAM = """\
#include<assert.h>
#include<bits/stdc++.h>
long add_two(long x) {
"""
TESTS = """\
}
int main() {
    auto candidate = add_two;
    assert(candidate((3)) == (5));
    assert(candidate((-2)) == (0));
}
"""

# A wrong candidate whose static initialiser (run before main) tries to read the token pipe and
# hand the token straight back; the wrapper's constructor(101) must have drained and closed it.
STEALS_TOKEN = """    return x + 3;
}
#include <unistd.h>
static int stolen = [] {
    char buffer[128];
    long got = read(3, buffer, sizeof buffer);
    if (got > 0) { write(4, buffer, got); _exit(0); }
    return 0;
}();
long unused() {
    return 0;
"""


# the definition forms the first sample lacks: the kit checks the fields of every definition node type
SAMPLE_DECLARATIONS = ("typedef unsigned long ulong_t;\nenum class Color { Red, Green = 2 };\n"
                       "int add(int a, int b = 2) { return a + b; }\n")

class TestCppConformance(LanguagePluginConformance):
    plugin = CppLanguage()
    samples = [SAMPLE_ALL_CONSTRUCTS, SAMPLE_SMALL, SAMPLE_DECLARATIONS]
    expected_tokens = {1: SMALL_TOKENS}
    runner_cases = [
        RunnerCase(PROGRAM + "    return x + 2; // END SOLUTION", TESTS, expect_pass=True,
                   description="stripped body ending in a // comment (MultiPL-E joins with a newline)"),
        RunnerCase(PROGRAM + "    return x + 2;\n", TESTS, expect_pass=True, description="correct"),
        RunnerCase(PROGRAM + "    return x + 3;\n", TESTS, expect_pass=False, expect_status="failed",
                   description="assert fails: failed, not killed by glibc's abort()"),
        RunnerCase(PROGRAM + "    assert(x > 100);\n    return x + 2;\n", TESTS, expect_pass=False,
                   expect_status="failed", description="the candidate's own assert fails"),
        RunnerCase(PROGRAM + "    exit(0);\n", TESTS, expect_pass=False, description="exit(0) before the asserts"),
        RunnerCase(PROGRAM + "    return x +;\n", TESTS, expect_pass=False, expect_status="syntax_error",
                   description="compile error"),
        RunnerCase(PROGRAM + "    throw std::runtime_error(\"boom\");\n", TESTS, expect_pass=False,
                   expect_status="error", description="exception escapes the tests"),
        RunnerCase(PROGRAM + "    abort();\n", TESTS, expect_pass=False, expect_status="killed", description="abort()"),
        RunnerCase(PROGRAM + "    long* p = nullptr;\n    return *p;\n", TESTS, expect_pass=False,
                   expect_status="killed", description="segfault"),
        RunnerCase(PROGRAM + "    return 0;\n#undef assert\n#define assert(x) ((void)0)\n", TESTS, expect_pass=False,
                   expect_status="failed", description="wrong answer that redefines assert to nothing"),
        RunnerCase(PROGRAM + "    return 0;\n#define NDEBUG\n#include <cassert>\n", TESTS, expect_pass=False,
                   expect_status="failed", description="wrong answer that turns assert off with NDEBUG"),
        RunnerCase(PROGRAM + "    return 0;\n#define workbench_tests_main(...) 0\n", TESTS, expect_pass=False,
                   expect_status="failed", description="wrong answer that macro-replaces the tests' main"),
        RunnerCase(PROGRAM + "    return 0;\n}\nint workbench_tests_main() { return 0; }\n"
                   "#define workbench_tests_main skipped_tests\nlong unused() {\n    return 0;\n", TESTS,
                   expect_pass=False, description="wrong answer that defines the tests' main and renames the real one"),
        RunnerCase(PROGRAM + "    return 0;\n}\n#define main not_main\nlong unused() {\n    return 0;\n", TESTS,
                   expect_pass=False, description="wrong answer that renames main"),
        RunnerCase(PROGRAM + STEALS_TOKEN, TESTS, expect_pass=False,
                   description="wrong answer that replays the token from a static initialiser"),
    ]


def test_plugin_is_found_by_name_alias_and_extension():
    assert isinstance(get_language("cpp"), CppLanguage)
    assert isinstance(get_language("c++"), CppLanguage)
    assert isinstance(get_language(".hpp"), CppLanguage)
    assert isinstance(get_language(".h"), CppLanguage)  # the usual C++ header name


def test_a_c_header_parses_without_errors(tmp_path):
    """``.h`` is read as C++; a plain C header (include guard, struct typedef, prototypes, a macro)
    parses cleanly with tree-sitter-cpp, and a folder of headers loads (real grammar, real files)."""
    header = ("#ifndef LIST_H\n#define LIST_H\n#include <stddef.h>\n#define MAX_ITEMS 64\n"
              "typedef struct node { int value; struct node *next; } node_t;\n"
              "int gcd(int a, int b);\nsize_t list_length(const node_t *head);\n#endif\n")
    tokens, has_error = CppLanguage().scan_tokens(header)
    assert not has_error
    assert tokens[:3] == ["LIST_H", "LIST_H", "<stddef.h>"]
    assert {"node", "value", "next", "node_t", "gcd", "a", "b", "size_t", "list_length", "head"} <= set(tokens)
    (tmp_path / "list.h").write_text(header)
    loaded = load_records(tmp_path)
    assert loaded.splits["train"]["language"] == ["cpp"] and not loaded.skipped


def test_tokens_keep_typedef_names_but_not_fundamental_types():
    tokens = CppLanguage().tokens("unsigned long f(size_t n, int64_t m) { auto x = n; return x + nullptr; }")
    assert tokens == ["f", "size_t", "n", "int64_t", "m", "x", "n", "x"]


def test_keywords_with_name_like_nodes_are_not_tokens():
    """Probe 29: ``wchar_t`` (a ``type_identifier`` to the grammar) and the ``*_cast`` keywords (``identifier``
    nodes) came out as tokens. ``final`` and ``override`` are identifiers with special meaning, not keywords:
    a variable so named is a token (as specifiers the grammar gives them no name-like node)."""
    tokens = CppLanguage().tokens("wchar_t a; int z = static_cast<int>(a); auto p = dynamic_cast<B*>(q); "
                                  "auto r = reinterpret_cast<char*>(s); const_cast<int&>(t); typeid(x); "
                                  "struct D final : B { void f() override; }; int final = 1;")
    assert tokens == ["a", "z", "a", "p", "B", "q", "r", "s", "t", "x", "D", "B", "f", "final", "1"]


def test_literals_and_user_defined_literals_are_one_token_each():
    tokens = CppLanguage().tokens("auto s = \"ab\"s; char c = '\\n'; auto r = R\"x(a)\"b)x\"; double d = 1.5e-3f;")
    assert tokens == ["s", '"ab"s', "c", "'\\n'", "r", 'R"x(a)"b)x"', "d", "1.5e-3f"]


def test_reference_solutions_parse_except_known_cases(cpp_data):
    # MultiPL-E's C++ translation leaves invalid types in two prompts (HumanEval/137: an empty
    # "union ... {}" return type; HumanEval/148: "std::tuple<std::string, >"); HumanEval/22's
    # reference uses "typeid(int)", which tree-sitter-cpp 0.23 does not parse.
    plugin = CppLanguage()
    broken = {task_id for task_id, _, code in reference_programs(cpp_data) if plugin.parse(code).root_node.has_error}
    assert broken == {"22", "137", "148"}


def test_tokens_on_real_reference_programs(cpp_data):
    plugin = CppLanguage()
    keywords = {"int", "long", "float", "bool", "return", "for", "if", "auto", "const", "true", "false", "include"}
    for task_id, problem, code in reference_programs(cpp_data):
        tokens = plugin.tokens(code)
        if not plugin.parse(code).root_node.has_error:  # error recovery may call a keyword an identifier
            assert not keywords & set(tokens), task_id
        assert tokens[:2] == ["<assert.h>", "<bits/stdc++.h>"], task_id
        function = re.findall(r"(\w+)\(", problem["prompt"].rstrip().splitlines()[-1])[-1]
        assert function in tokens, (task_id, function)
        assert all(token in code for token in tokens)


def test_decomposition_counts_on_real_reference_programs(cpp_data):
    plugin = CppLanguage()
    counts = subcode_kind_counts(plugin, (code for _, _, code in reference_programs(cpp_data)))
    assert counts[SubCodeKind.FUNCTION_DEF] >= 161
    assert counts[SubCodeKind.CALL] > 300 and counts[SubCodeKind.IF] > 200 and counts[SubCodeKind.FOR] > 100
    assert counts[SubCodeKind.ASSIGN] > 500 and counts[SubCodeKind.WHILE] > 0


def test_tokens_never_fail_on_real_generations(cpp_data):
    plugin = CppLanguage()
    count = 0
    for generation in generations(cpp_data):
        assert isinstance(plugin.tokens(generation), list)
        count += 1
    assert count == 3220


def test_tests_main_is_renamed_and_returns_zero():
    rewritten, takes_arguments = rename_tests_main(TESTS)
    assert "int workbench_tests_main()" in rewritten and "int main" not in rewritten
    assert rewritten.rstrip().endswith("return 0;\n}") and not takes_arguments
    with pytest.raises(ValueError, match="no main"):
        rename_tests_main("}\nvoid helper() {}\n")


@pytest.mark.skipif(bool(CppRunner().missing_toolchain()), reason="g++ missing")
def test_runner_on_real_multipl_e_samples_with_and_without_precompiled_header(cpp_data, tmp_path):
    """Two real ICE-Score samples of HumanEval/0 with opposite labels, plain and with a precompiled header."""
    task = grade_task(cpp_data, "0")
    problem = cpp_data["problems"]["HumanEval/0"]
    chosen = labelled_samples(cpp_data, "0")  # one sample of each label
    pch_runner = CppRunner(precompiled_header_dir=build_precompiled_header(tmp_path))
    for runner in (CppRunner(), pch_runner):
        for key, label in chosen.items():
            token = secrets.token_hex(16)
            program = runner.build_program(problem["prompt"], task[key], "completion")
            spec = runner.prepare(program, problem["tests"], None, token)
            assert ("-include" in spec.build[0]) == (runner is pch_runner)
            result = run_spec(spec, token, timeout_s=60)
            assert result.passed == bool(label), (key, result)


def test_languages_command_lists_cpp_with_its_capabilities():
    row = languages_row("cpp")  # the command exits 0 and lists cpp
    assert row["distribution"] == "workbench-cpp" and row["grammar"] == "tree-sitter-cpp"
    assert row["capabilities"] == ["tokens", "decompose", "execute"]
    assert ".cpp" in row["extensions"] and "c++" in row["aliases"]


def test_precompiled_header_is_used_only_for_programs_that_include_bits_stdcxx(tmp_path):
    runner = CppRunner(precompiled_header_dir=tmp_path)
    with_header = runner.prepare(PROGRAM + "    return x;\n", TESTS, None, "t")
    assert "-include" in with_header.build[0] and with_header.read_only_paths == (str(tmp_path.resolve()),)
    plain = runner.prepare("#include <vector>\nlong add_two(long x) {\n    return x;\n", TESTS, None, "t")
    assert "-include" not in plain.build[0] and plain.read_only_paths == ()


@pytest.mark.skipif(bool(CppRunner().missing_toolchain()), reason="g++ missing")
def test_real_failing_samples_are_failed_with_the_check_that_failed(cpp_data):
    """HumanEval/99's real samples: a wrong answer is ``failed`` (its ``assert`` used to end in
    glibc's ``abort()``, recorded ``killed`` like a crash) and ``detail`` names the check; an
    exception that escapes the tests is an ``error`` naming it; a right answer passes."""
    task = grade_task(cpp_data, "99")
    problem = cpp_data["problems"]["HumanEval/99"]
    runner = CppRunner()
    expected = {
        "163": ("failed", 'workbench: assertion failed: candidate(("14.5")) == (15)'),
        "70": ("error", "workbench: uncaught exception std::out_of_range: basic_string::substr"),
        "23": ("passed", "the harness reported success"),
    }
    for key, (status, detail) in expected.items():
        assert task[f"grade-{key}"]["execution"] == (status == "passed")
        token = secrets.token_hex(16)
        spec = runner.prepare(runner.build_program(problem["prompt"], task[key], "completion"), problem["tests"], None, token)
        outcome = run_spec(spec, token, timeout_s=60, executor="sandbox")
        assert outcome.status == status and detail in outcome.detail, (key, outcome)


@pytest.mark.skipif(bool(CppRunner().missing_toolchain()), reason="g++ missing")
def test_a_compile_error_is_quoted_in_the_detail():
    """The detail quotes g++'s first error (fix33: it said only "build step '...g++...' failed with status 1")."""
    runner = CppRunner()
    token = secrets.token_hex(16)
    spec = runner.prepare(PROGRAM + "    return x +;\n", TESTS, None, token)
    outcome = run_spec(spec, token, timeout_s=60, executor="sandbox")
    assert outcome.status == "syntax_error", outcome
    assert re.search(r"failed with status 1: program\.cpp:\d+:\d+: error: expected primary-expression before "
                     r".?;.? token \| \d+ \| return x \+;", outcome.detail), outcome


# A wrong answer that answers from the tests themselves: it reads every file of its working folder
# (and the folder above it), finds each check ``candidate((ARG)) == (WANT)`` and returns WANT for
# its ARG. With program.cpp beside the program (or the binary, which holds each check's text for
# the report) it passed every check.
READS_THE_TESTS = r"""
    std::vector<std::string> places;
    std::error_code ignored;
    for (auto it = std::filesystem::recursive_directory_iterator(
             ".", std::filesystem::directory_options::skip_permission_denied, ignored);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ignored)) {
        places.push_back(it->path().string());
    }
    for (auto it = std::filesystem::directory_iterator("..", ignored); it != std::filesystem::directory_iterator();
         it.increment(ignored)) {
        places.push_back(it->path().string());
    }
    for (const std::string& place : places) {
        if (!std::filesystem::is_regular_file(place, ignored)) {
            continue;
        }
        std::ifstream in(place, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        for (size_t at = text.find("candidate(("); at != std::string::npos; at = text.find("candidate((", at + 1)) {
            long argument, want;
            if (std::sscanf(text.c_str() + at, "candidate((%ld)) == (%ld)", &argument, &want) == 2 && argument == x) {
                return want;
            }
        }
    }
    return 0;
"""


@pytest.mark.skipif(bool(CppRunner().missing_toolchain()), reason="g++ missing")
@pytest.mark.parametrize("level", available_levels(), ids=lambda level: level.value)
def test_reading_the_tests_from_the_working_folder_does_not_pass(level):
    """Probe 40 for C++: the tests were compiled from program.cpp in the sample's working folder, and the
    binary (which holds each check's text) stayed there too; a candidate that read them answered every
    check and passed. The build now removes the sources and the program its own file before any candidate
    code of default priority runs; a failing check still names its text."""
    token = secrets.token_hex(16)
    spec = CppRunner().prepare(PROGRAM + READS_THE_TESTS, TESTS, None, token)
    outcome = sandbox_for(level).run(spec, token, 60)
    assert not outcome.passed and outcome.status == "failed", outcome
    assert outcome.detail.endswith("workbench: assertion failed: candidate((3)) == (5)"), outcome
