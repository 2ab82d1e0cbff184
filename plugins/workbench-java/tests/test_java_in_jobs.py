"""Java through the core jobs with no Java-specific code in the core: ``workbench dedup`` on a
folder of .java files (the folder loader picks the plugin by extension), DSA-CQE decomposition,
and the sandbox's out-of-memory status from the runner's marker."""

from __future__ import annotations

import json

import pytest
from multipl_e_data import check_execute_command
from typer.testing import CliRunner

from workbench.cli import app
from workbench.execute.sandbox_helpers import run_program
from workbench.languages.conformance import dedup_clusters
from workbench.score.decompose import decompose
from workbench_java import JavaLanguage

KNAPSACK = """\
import java.util.*;
class Problem {
    public static int knapsack(int[] weights, int[] values, int capacity) {
        int[] dp = new int[capacity + 1];
        for (int i = 0; i < weights.length; i++) {
            for (int w = capacity; w >= weights[i]; w--) {
                if (dp[w - weights[i]] + values[i] > dp[w]) {
                    dp[w] = dp[w - weights[i]] + values[i];
                }
            }
        }
        System.out.println("best value " + dp[capacity]);
        return dp[capacity];
    }
}
"""
# the same program with a renamed local (set Jaccard 14/16, a near duplicate under Allamanis 2019)
KNAPSACK_RENAMED = KNAPSACK.replace("dp", "best")
UNRELATED = """\
class Other {
    static String greet(String name, int times) {
        StringBuilder sb = new StringBuilder();
        while (times-- > 0) { sb.append("hello ").append(name).append(' '); }
        return sb.toString().trim() + " from " + Other.class.getName() + 42 + 3.5;
    }
}
"""


def test_dedup_finds_a_cross_set_java_near_duplicate(tmp_path):
    files = {"train/Knapsack.java": KNAPSACK, "train/Other.java": UNRELATED, "test/Knapsack2.java": KNAPSACK_RENAMED}
    assert dedup_clusters(tmp_path, files, min_tokens=5) == [["test/Knapsack2.java", "train/Knapsack.java"]]


def test_decomposition_of_java_for_dsa_cqe():
    decomposition = decompose(KNAPSACK, JavaLanguage())
    kinds = [s.kind.value for s in decomposition.subcodes]
    assert {"FunctionDef", "For", "If", "Assign", "Call", "ClassDef"} <= set(kinds)
    loops = [s for s in decomposition.subcodes if s.kind.value == "For"]
    assert any("dp" in s.uses for s in loops)


def test_out_of_memory_is_reported_as_oom():
    program = "class Problem {\n    public static int f() {\n        long[][] a = new long[1 << 20][];\n" \
              "        for (int i = 0; i < a.length; i++) a[i] = new long[1 << 20];\n        return a.length;\n"
    tests = "    }\n    public static void main(String[] args) { assert f() > 0; }\n}\n"
    outcome = run_program(JavaLanguage().runner, program, tests, None, timeout_s=60)
    assert outcome.status == "oom", outcome


@pytest.mark.skipif(bool(JavaLanguage().runner.missing_toolchain()), reason="JDK or javatuples missing")
def test_execute_command_runs_real_multipl_e_java_samples(java_data, java_files, tmp_path):
    """``workbench execute -l java`` end to end, as a user types it (the plugin's other tests run
    the runner directly, past the command's preflight and its loading of the problems). It is run
    as docs/execute.md shows it: no entry point column, the default timeout."""
    check_execute_command("java", java_data, java_files, tmp_path)


def test_execute_and_score_take_java_from_the_data_without_language(java_files, tmp_path):
    """Probe 29: without -l, the ICE-Score Java file (its loader names the language from the file name)
    ran through the Python runner (every sample a syntax error from ``import java.util.*;``), and
    score recorded python. Now the data's language is the run's."""
    grades, problems = java_files["grades"], java_files["problems"]
    output = tmp_path / "results.jsonl"
    result = CliRunner().invoke(app, [
        "execute", str(grades), "--problems", str(problems), "--test-column", "tests", "--entry-point-column", "name",
        "--completion-column", "generation", "--limit", "2", "--timeout", "60", "-o", str(output)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    assert [row["language"] for row in rows] == ["java", "java"]
    assert all(row["status"] in ("passed", "failed") for row in rows), rows  # compiled and run, not Python
    summary = json.loads(output.with_name("results.summary.json").read_text())
    assert summary["settings"]["language"] == "java"

    result = CliRunner().invoke(app, ["score", str(grades), "-m", "chrf", "--limit", "1", "-o", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    recorded = json.loads((tmp_path / "s" / "run.json").read_text())
    # the language used is in "config"; "options" are as given (None: the data's), as workbench run records them
    assert recorded["config"]["language"] == "java" and recorded["options"]["language"] is None
