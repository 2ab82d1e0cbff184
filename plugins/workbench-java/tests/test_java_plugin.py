"""Java plugin: conformance kit, tokens and decomposition on real MultiPL-E / ICE-Score code,
and the javac / java -ea runner on real programs (real JDK, real subprocesses)."""

from __future__ import annotations

import re
import secrets

import pytest
from multipl_e_data import generations, grade_task, labelled_samples, reference_programs

from workbench.execute.sandbox_helpers import available_levels, sandbox_for
from workbench.languages import SubCodeKind, get_language
from workbench.languages.conformance import (
    LanguagePluginConformance,
    RunnerCase,
    languages_row,
    run_spec,
    subcode_kind_counts,
)
from workbench_java import JavaLanguage
from workbench_java.runner import _java_string, find_main_class, rename_tests_main, unconditional_checks

SAMPLE_ALL_CONSTRUCTS = """\
import java.util.*;

/** Keeps a running total. */
class Accumulator {
    private int total = 0;

    Accumulator(int start) {
        this.total = start;  // field assignment
    }

    int add(List<Integer> values, char mode) {
        for (int i = 0; i < values.size(); i++) {
            total += values.get(i);
        }
        for (int v : values) {
            if (v < 0) {
                total -= 1;
            }
        }
        while (total > 1000) {
            total /= 2;
        }
        switch (mode) {
            case 'd': total *= 2; break;
            default: break;
        }
        String label = "total=" + total + 0x1F + 2.5e3;
        System.out.println(label);
        return new ArrayList<Integer>(values).size();
    }
}
"""

SAMPLE_SMALL = 'class A { int f(String s) { /* c */ return s.length() + 42 + "x".length(); } }\n'
SMALL_TOKENS = ["A", "f", "String", "s", "s", "length", "42", '"x"', "length"]

PROGRAM = """\
import java.util.*;
class Problem {
    public static int addTwo(int x) {
"""
TESTS = """\
    }
    public static void main(String[] args) {
    assert(addTwo((3)) == (5));
    assert(addTwo((-2)) == (0));
    }

}
"""

# A wrong answer that switches its class's assertions off from a static initialiser: the
# tests' assert statements, inside that class, were all skipped and the sample passed.
UNSAFE_SWITCHES_ASSERTS_OFF = """\
        return 0;
    }
    static {
        try {
            java.lang.reflect.Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
            f.setAccessible(true);
            sun.misc.Unsafe u = (sun.misc.Unsafe) f.get(null);
            java.lang.reflect.Field ad = Problem.class.getDeclaredField("$assertionsDisabled");
            u.putBoolean(u.staticFieldBase(ad), u.staticFieldOffset(ad), true);
        } catch (Exception e) { throw new RuntimeException(e); }
    }
    static void unused() {
"""

# A wrong answer that declares a top-level class named Runtime: the wrapper's
# Runtime.getRuntime().halt(status) after a failed check bound to it (a type of the unnamed
# package shadows java.lang's), returned, and the wrapper wrote the token. Its own class
# Problem2 then holds the tests.
SHADOWS_RUNTIME = """\
        return 0;
    }
}
class Runtime {
    static Runtime getRuntime() { return new Runtime(); }
    void halt(int status) {}
}
class Problem2 {
    static int addTwo(int x) {
        return 0;
"""

# A wrong answer that opens its own class with a Unicode escape (javac reads the brace that
# ``\u007b`` stands for; the grammar does not, so it saw no class around the tests' main):
# the wrapper called the last main the grammar did see, Fake's, and the tests never ran.
ESCAPE_HIDES_THE_TESTS = """\
        return 0;
    }
}
class Fake {
    public static void main(String[] args) {}
}
class Problem2 \\u007b
    static int addTwo(int x) {
        return 0;
"""


# the definition forms the first sample lacks: the kit checks the fields of every definition node type
SAMPLE_DECLARATIONS = """\
interface Shape { double area(); }
enum Color { RED, GREEN }
record Point(int x, int y) {}
class Reader {
    static int read(Object o, String path) {
        java.util.function.IntUnaryOperator twice = v -> v * 2;
        try (java.io.FileReader in = new java.io.FileReader(path)) {
            if (o instanceof String s) { return twice.applyAsInt(s.length()) + in.read(); }
        } catch (java.io.IOException e) {
            return -1;
        }
        return 0;
    }
}
"""

class TestJavaConformance(LanguagePluginConformance):
    plugin = JavaLanguage()
    samples = [SAMPLE_ALL_CONSTRUCTS, SAMPLE_SMALL, SAMPLE_DECLARATIONS]
    expected_tokens = {1: SMALL_TOKENS}
    runner_cases = [
        RunnerCase(PROGRAM + "        return x + 2; // END SOLUTION", TESTS, expect_pass=True,
                   description="stripped body ending in a // comment (MultiPL-E joins with a newline)"),
        RunnerCase(PROGRAM + "        return x + 2;\n", TESTS, expect_pass=True, description="correct"),
        RunnerCase(PROGRAM + "        return x + 3;\n", TESTS, expect_pass=False, expect_status="failed",
                   description="assert fails"),
        RunnerCase(PROGRAM + "        System.exit(0); return 0;\n", TESTS, expect_pass=False,
                   description="System.exit(0) before the asserts"),
        RunnerCase(PROGRAM + "        return x +;\n", TESTS, expect_pass=False, expect_status="syntax_error",
                   description="compile error"),
        RunnerCase(PROGRAM + "        throw new RuntimeException(\"boom\");\n", TESTS, expect_pass=False,
                   expect_status="error", description="exception"),
        RunnerCase(PROGRAM + UNSAFE_SWITCHES_ASSERTS_OFF, TESTS, expect_pass=False,
                   description="wrong answer that sets Problem.$assertionsDisabled with sun.misc.Unsafe"),
        RunnerCase(PROGRAM + "        assert x != 12345;\n" + UNSAFE_SWITCHES_ASSERTS_OFF, TESTS, expect_pass=False,
                   expect_status="failed",
                   description="the same, with an assert of its own so that the flag exists"),
        RunnerCase(PROGRAM + SHADOWS_RUNTIME, TESTS, expect_pass=False, expect_status="failed",
                   description="wrong answer that declares a Runtime whose halt() returns"),
        RunnerCase(PROGRAM + ESCAPE_HIDES_THE_TESTS, TESTS, expect_pass=False, expect_status="error",
                   description="wrong answer that hides the tests' class from the grammar with a Unicode escape"),
    ]


def test_plugin_is_found_by_name_and_extension():
    assert isinstance(get_language("java"), JavaLanguage)
    assert isinstance(get_language(".java"), JavaLanguage)


def test_tokens_drop_keywords_comments_and_keyword_literals():
    tokens = JavaLanguage().tokens('// note\nclass B { boolean g() { return true || null == this; } int[] h = {1, 07, 0b1}; }')
    assert tokens == ["B", "g", "h", "1", "07", "0b1"]


def test_var_as_a_type_is_a_keyword_and_as_a_name_an_identifier():
    """Probe 29: the reserved type name ``var`` (``var x = ...``) came out as a token."""
    tokens = JavaLanguage().tokens("class A { void f() { var x = 1; var var = 2; for (var e : list) {} "
                                   "try (var r = open()) {} Fn g = (var a, var b) -> a; } }")
    assert tokens == ["A", "f", "x", "1", "var", "2", "e", "list", "r", "open", "Fn", "g", "a", "b", "a"]


def test_text_block_and_char_literals_are_one_token_each():
    tokens = JavaLanguage().tokens('class C { String s = """\n  hi "there"\n  """; char c = \'\\n\'; }')
    assert tokens == ["C", "String", "s", '"""\n  hi "there"\n  """', "c", "'\\n'"]


def test_reference_solutions_parse_except_known_broken_prompt(java_data):
    # HumanEval/137's MultiPL-E prompt has the return type "Union_int_float_String_Optional.empty()",
    # which is not Java; every other prompt + reference is a valid compilation unit.
    plugin = JavaLanguage()
    broken = {task_id for task_id, _, code in reference_programs(java_data) if plugin.parse(code).root_node.has_error}
    assert broken == {"137"}


def test_tokens_on_real_reference_programs(java_data):
    plugin = JavaLanguage()
    keywords = {"public", "static", "class", "return", "int", "for", "if", "new", "import", "true", "false", "null"}
    for task_id, problem, code in reference_programs(java_data):
        tokens = plugin.tokens(code)
        assert not keywords & set(tokens), task_id
        assert "Problem" in tokens and "javatuples" in tokens, task_id
        # the method under test is named in the prompt and is a token
        signature = problem["prompt"].rstrip().splitlines()[-1]
        method = re.findall(r"(\w+)\(", signature)[-1]
        assert method in tokens, (task_id, method)
        assert all(token in code for token in tokens)


def test_decomposition_counts_on_real_reference_programs(java_data):
    plugin = JavaLanguage()
    counts = subcode_kind_counts(plugin, (code for _, _, code in reference_programs(java_data)))
    # every prompt declares class Problem and one method; the references add the rest
    assert counts[SubCodeKind.CLASS_DEF] >= 161
    assert counts[SubCodeKind.FUNCTION_DEF] >= 161
    assert counts[SubCodeKind.CALL] > 500 and counts[SubCodeKind.IF] > 100 and counts[SubCodeKind.FOR] > 100
    assert counts[SubCodeKind.ASSIGN] > 200 and counts[SubCodeKind.WHILE] > 0 and counts[SubCodeKind.SWITCH] > 0


def test_tokens_never_fail_on_real_generations(java_data):
    plugin = JavaLanguage()
    count = 0
    for generation in generations(java_data):
        tokens = plugin.tokens(generation)  # stripped bodies: not compilation units on their own
        assert isinstance(tokens, list)
        count += 1
    assert count >= 3200


def test_main_class_is_found_with_the_grammar():
    assert find_main_class(PROGRAM + "return 1;\n" + TESTS) == "Problem"
    source = 'class Outer { String s = "class Fake { public static void main"; }\nclass Real {\n' \
             "  public static void main(String[] a) {}\n}\n"
    assert find_main_class(source) == "Real"


@pytest.mark.skipif(bool(JavaLanguage().runner.missing_toolchain()), reason="JDK or javatuples missing")
def test_runner_on_real_multipl_e_samples(java_data):
    """Two real ICE-Score samples of HumanEval/0 with opposite labels, run through the runner."""
    runner = JavaLanguage().runner
    task = grade_task(java_data, "0")
    problem = java_data["problems"]["HumanEval/0"]
    for key, label in labelled_samples(java_data, "0").items():  # one sample of each label
        token = secrets.token_hex(16)
        program = runner.build_program(problem["prompt"], task[key], "completion")
        result = run_spec(runner.prepare(program, problem["tests"], None, token), token, timeout_s=60)
        assert result.passed == bool(label), (key, result)


def test_languages_command_lists_java_with_its_capabilities():
    row = languages_row("java")  # the command exits 0 and lists java
    assert row["distribution"] == "workbench-java" and row["grammar"] == "tree-sitter-java"
    assert row["grammar_version"].startswith("0.23.")
    assert row["capabilities"] == ["tokens", "decompose", "execute"]


def test_missing_javatuples_jar_is_reported_with_the_debian_package():
    from workbench_java import JavaRunner

    missing = JavaRunner(classpath=["/nonexistent/javatuples.jar"]).missing_toolchain()
    assert any("javatuples.jar" in item and "libjavatuples-java" in item for item in missing)


@pytest.mark.skipif(bool(JavaLanguage().runner.missing_toolchain()), reason="JDK or javatuples missing")
def test_javac_class_archive_is_recorded_once_and_used(tmp_path):
    from workbench_java.runner import JavaRunner, build_javac_class_archive

    archive = build_javac_class_archive(tmp_path, JavaRunner().javac_options)
    assert archive.is_file() and build_javac_class_archive(tmp_path, JavaRunner().javac_options) == archive
    runner = JavaRunner(javac_class_archive=archive)
    token = secrets.token_hex(16)
    spec = runner.prepare(PROGRAM + "        return x + 2;\n", TESTS, None, token)
    assert f"-J-XX:SharedArchiveFile={archive}" in spec.build[0] and str(archive) in spec.read_only_paths
    result = run_spec(spec, token, timeout_s=60)
    assert result.passed and "SharedArchiveFile" not in result.stderr_tail, result


def test_tests_asserts_become_plain_checks_and_keep_their_lines():
    source = PROGRAM + "        return x;\n" + "\n" + TESTS + "// assert(x) in a comment\n"
    rewritten = unconditional_checks(source, len(PROGRAM) + 20)
    assert rewritten.count("\n") == source.count("\n")
    assert '{ if (!((addTwo((3)) == (5)))) throw new java.lang.AssertionError("addTwo((3)) == (5)"); }' in rewritten
    assert "assert(" not in rewritten.replace("// assert(x)", "")
    message = unconditional_checks("class A {\n", 0) + unconditional_checks(
        'void m() {\n  assert f("a\\\\u0022") : "why";\n  assert (g(1,\n 2));\n}\n', 0)
    assert 'throw new java.lang.AssertionError("why"); }' in message
    assert 'throw new java.lang.AssertionError("g(1, 2)"); }' in message and "(g(1,\n 2))" in message
    # a backslash is doubled, so no \\uXXXX of the condition becomes a Unicode escape (JLS 3.3)
    assert _java_string('f("a\\u0022")') == '"f(\\"a\\\\u0022\\")"'
    program_assert = "class B { void m() { assert false; }\n"
    assert unconditional_checks(program_assert + "}\n", len(program_assert)) == program_assert + "}\n"


def test_the_tests_alone_are_read_for_their_main_and_their_asserts():
    """The candidate's code cannot change how the tests are read: a Unicode escape the grammar
    does not translate (``\\u007b``, a brace to javac) once hid the tests' main and asserts."""
    renamed = rename_tests_main(TESTS, "workbench_tests_0a")
    assert "void workbench_tests_0a(String[] args)" in renamed and "main" not in renamed
    assert renamed.count("\n") == TESTS.count("\n")
    assert rename_tests_main("    }\n}\n", "workbench_tests_0a") == "    }\n}\n"  # no main: unchanged
    program = PROGRAM + ESCAPE_HIDES_THE_TESTS
    rewritten = unconditional_checks(program + "\n" + TESTS, len(program) + 1)
    assert rewritten.startswith(program) and "assert(" not in rewritten
    assert rewritten.count("throw new java.lang.AssertionError") == 2


@pytest.mark.skipif(bool(JavaLanguage().runner.missing_toolchain()), reason="JDK or javatuples missing")
def test_real_failing_samples_say_what_failed(java_data):
    """HumanEval/99's real samples: ``detail`` (the last stderr line) names the check that failed, or
    the exception and the test line, where it once said ``at WorkbenchHarness.main(...)``."""
    task = grade_task(java_data, "99")
    problem = java_data["problems"]["HumanEval/99"]
    runner = JavaLanguage().runner
    outcomes = {}
    for key in [k for k in task if k.isdigit()][:6]:
        token = secrets.token_hex(16)
        spec = runner.prepare(runner.build_program(problem["prompt"], task[key], "completion"), problem["tests"], None, token)
        outcomes[key] = run_spec(spec, token, timeout_s=60, executor="sandbox")
        assert outcomes[key].passed == bool(task[f"grade-{key}"]["execution"]), (key, outcomes[key])
    failed = [o for o in outcomes.values() if o.status == "failed"]
    assert failed, outcomes
    for outcome in failed:
        assert re.search(r'workbench: assertion failed: closestInteger\(\("[-0-9.]+"\)\) == \(-?\d+l?\) '
                         r'\(Problem\.java:\d+\)$', outcome.detail), outcome
    for outcome in outcomes.values():
        assert "WorkbenchHarness" not in outcome.detail and "... " not in outcome.detail, outcome


@pytest.mark.skipif(bool(JavaLanguage().runner.missing_toolchain()), reason="JDK or javatuples missing")
def test_a_compile_error_is_quoted_in_the_detail():
    """The detail quotes javac's first error (fix33: it said only "build step '...javac...' failed with status 1")."""
    runner = JavaLanguage().runner
    token = secrets.token_hex(16)
    spec = runner.prepare(PROGRAM + "        return x +;\n", TESTS, None, token)
    outcome = run_spec(spec, token, timeout_s=60, executor="sandbox")
    assert outcome.status == "syntax_error", outcome
    assert re.search(r"failed with status 1: Problem\.java:\d+: error: illegal start of expression \| return x \+;",
                     outcome.detail), outcome


# A wrong answer that answers from the tests themselves: it reads every file of its working folder
# (and the folder above it), finds each check ``addTwo((ARG)) == (WANT)`` and returns WANT for its
# ARG. With Problem.java (or Problem.class, which holds each check's text as its message) beside
# the program it passed every check.
READS_THE_TESTS = r"""
        java.util.regex.Pattern check = java.util.regex.Pattern.compile("addTwo\\(\\((-?\\d+)\\)\\) == \\((-?\\d+)\\)");
        java.util.List<java.nio.file.Path> places = new java.util.ArrayList<>();
        for (String folder : new String[] {".", ".."}) {
            try (java.util.stream.Stream<java.nio.file.Path> found =
                     java.nio.file.Files.walk(java.nio.file.Paths.get(folder), folder.equals(".") ? 4 : 1)) {
                found.forEach(places::add);
            } catch (Exception unreadable) {
            }
        }
        for (java.nio.file.Path place : places) {
            try {
                String text = new String(java.nio.file.Files.readAllBytes(place), java.nio.charset.StandardCharsets.ISO_8859_1);
                java.util.regex.Matcher found = check.matcher(text);
                while (found.find()) {
                    if (Integer.parseInt(found.group(1)) == x) {
                        return Integer.parseInt(found.group(2));
                    }
                }
            } catch (Exception unreadable) {
            }
        }
        return 0;
"""


@pytest.mark.skipif(bool(JavaLanguage().runner.missing_toolchain()), reason="JDK or javatuples missing")
@pytest.mark.parametrize("level", available_levels(), ids=lambda level: level.value)
def test_reading_the_tests_from_the_working_folder_does_not_pass(level):
    """Probe 40 for Java: the tests were compiled from Problem.java in the sample's working folder, and
    Problem.class stayed there too; a candidate that read them answered every check and passed. The
    wrapper now loads the folder's classes and removes its files before any candidate code runs; a
    failing check still names its text and line."""
    token = secrets.token_hex(16)
    spec = JavaLanguage().runner.prepare(PROGRAM + READS_THE_TESTS, TESTS, None, token)
    outcome = sandbox_for(level).run(spec, token, 60)
    assert not outcome.passed and outcome.status == "failed", outcome
    assert re.search(r"workbench: assertion failed: addTwo\(\(3\)\) == \(5\) \(Problem\.java:\d+\)$", outcome.detail), outcome
