"""C++ through the core jobs with no C++-specific code in the core: ``workbench dedup`` on a
folder of .cpp files (the folder loader picks the plugin by extension), DSA-CQE decomposition,
and the sandbox's out-of-memory status from the runner's marker."""

from __future__ import annotations

import pytest
from multipl_e_data import check_execute_command

from workbench.execute.isolation import detect_isolation
from workbench.execute.limits import MiB, ResourceLimits
from workbench.execute.sandbox import Sandbox, new_token
from workbench.execute.sandbox_helpers import run_program
from workbench.languages.conformance import dedup_clusters
from workbench.score.decompose import decompose
from workbench_cpp import CppLanguage

KNAPSACK = """\
#include <vector>
#include <iostream>
int knapsack(const std::vector<int>& weights, const std::vector<int>& values, int capacity) {
    std::vector<int> dp(capacity + 1, 0);
    for (size_t i = 0; i < weights.size(); i++) {
        for (int w = capacity; w >= weights[i]; w--) {
            if (dp[w - weights[i]] + values[i] > dp[w]) {
                dp[w] = dp[w - weights[i]] + values[i];
            }
        }
    }
    std::cout << "best value " << dp[capacity] << std::endl;
    return dp[capacity];
}
"""
KNAPSACK_RENAMED = KNAPSACK.replace("dp", "best")
UNRELATED = """\
#include <string>
std::string greet(const std::string& name, int times) {
    std::string out;
    while (times-- > 0) { out += "hello " + name + ' '; }
    switch (times) { case 1: out += "!"; break; default: break; }
    return out + " from greet " + std::to_string(42) + std::to_string(3.5);
}
"""


def test_dedup_finds_a_cross_set_cpp_near_duplicate(tmp_path):
    files = {"train/knapsack.cpp": KNAPSACK, "train/greet.cpp": UNRELATED, "test/knapsack2.cpp": KNAPSACK_RENAMED}
    assert dedup_clusters(tmp_path, files, min_tokens=5) == [["test/knapsack2.cpp", "train/knapsack.cpp"]]


def test_decomposition_of_cpp_for_dsa_cqe():
    kinds = {s.kind.value for s in decompose(UNRELATED, CppLanguage()).subcodes}
    assert {"FunctionDef", "While", "Switch"} <= kinds
    decomposition = decompose(KNAPSACK, CppLanguage())
    loops = [s for s in decomposition.subcodes if s.kind.value == "For"]
    assert loops and any("dp" in s.uses for s in loops)


def test_out_of_memory_is_reported_as_oom():
    program = "#include <vector>\nlong f() {\n    std::vector<long> v(1L << 40);\n    return v.size();\n"
    tests = "}\nint main() { return f() > 0 ? 0 : 1; }\n"
    outcome = run_program(CppLanguage().runner, program, tests, None, timeout_s=60)
    assert outcome.status == "oom", outcome


@pytest.mark.skipif(bool(CppLanguage().runner.missing_toolchain()), reason="g++ missing")
def test_a_compiler_out_of_memory_is_oom_not_a_syntax_error():
    """g++ under a --memory-mb too small for it (``--memory-mb 200`` for a MultiPL-E program, which
    includes ``bits/stdc++.h``; 48 MiB for this one) says "virtual memory exhausted": once
    recorded as ``syntax_error``, a verdict that the sample does not compile (verify34)."""
    program = "#include <vector>\n#include <string>\nlong f() {\n    return 1;\n"
    tests = "}\nint main() { return f() == 1 ? 0 : 1; }\n"
    runner = CppLanguage().runner
    token = new_token()
    sandbox = Sandbox(detect_isolation(None), ResourceLimits(address_space_bytes=48 * MiB))
    outcome = sandbox.run(runner.prepare(program, tests, None, token), token, 60)
    assert outcome.status == "oom", outcome
    assert "ran out of memory" in outcome.detail and "--memory-mb" in outcome.detail


@pytest.mark.skipif(bool(CppLanguage().runner.missing_toolchain()), reason="g++ missing")
def test_execute_command_runs_real_multipl_e_cpp_samples(cpp_data, cpp_files, tmp_path):
    """``workbench execute -l cpp`` end to end, as a user types it: it once stopped before the
    first sample, because its preflight prepared an empty test harness, which the C++ runner
    cannot wrap (the plugin's own tests ran the runner directly and never met the check). It is
    run as docs/execute.md shows it: no entry point column, the default timeout."""
    check_execute_command("cpp", cpp_data, cpp_files, tmp_path)
