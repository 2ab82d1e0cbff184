"""``workbench execute`` end to end: real data loading, real sandboxed runs, the jsonl
results, resume, calibration and the CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data.loading import load_humaneval
from workbench.errors import DataError, MissingColumnError
from workbench.options import OptionError
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.data.samples import sample_key
from workbench.execute.result_file import RESULT_COLUMNS, ResultWriter, pass_at_1, read_results

FIXED = dict(timeout=30.0, workers=2, reference_cache=False)  # fixed timeout: no calibration


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")
    return path


def canonical_rows(n: int, wrong_every: int = 0) -> list[dict]:
    rows = []
    for index, problem in enumerate(load_humaneval().select(range(n))):
        wrong = wrong_every and index % wrong_every == 0
        completion = "    return None\n" if wrong else problem["canonical_solution"]
        rows.append({"task_id": problem["task_id"], "sample_id": 0, "completion": completion})
    return rows


def test_canonical_pass_and_wrong_fail(tmp_path):
    generations = write_jsonl(tmp_path / "gen.jsonl", canonical_rows(6, wrong_every=3))
    output = tmp_path / "out.jsonl"
    summary = run_execute(generations, output, ExecutionConfig(**FIXED))
    rows = read_results(output)
    assert len(rows) == 6 and summary.executed == 6
    assert list(rows[0])[: len(RESULT_COLUMNS)] == list(RESULT_COLUMNS)
    by_task = {r["task_id"]: r for r in rows}
    for index in range(6):
        row = by_task[f"HumanEval/{index}"]
        expected = 0 if index % 3 == 0 else 1
        assert row["passed"] == expected, row
        assert row["status"] == ("failed" if expected == 0 else "passed")
        assert row["isolation"] == summary.isolation.level.value
    assert summary.pass_at_1 == pytest.approx(4 / 6)
    assert summary.counts == {"passed": 4, "failed": 2}


def test_a_second_run_writing_the_same_results_file_is_refused(tmp_path):
    """Two runs appending to one file interleave their rows: while one holds the file (a real run
    in another thread, real sandbox), a second is refused at once and the first finishes intact."""
    import threading

    from workbench.errors import WorkbenchError

    generations = write_jsonl(tmp_path / "gen.jsonl", canonical_rows(6, wrong_every=3))
    output = tmp_path / "out.jsonl"
    started, refusals = threading.Event(), []
    first = threading.Thread(target=run_execute, args=(generations, output, ExecutionConfig(**FIXED)),
                             kwargs={"on_start": lambda phase, size: started.set()})
    first.start()
    assert started.wait(120)
    try:
        run_execute(generations, output, ExecutionConfig(**FIXED, overwrite=True))
    except WorkbenchError as error:
        refusals.append(str(error))
    first.join()
    assert len(refusals) == 1 and f"another workbench execute run is writing {output}" in refusals[0]
    assert len(read_results(output)) == 6
    # once the first has finished, the file is free again
    assert run_execute(generations, output, ExecutionConfig(**FIXED, overwrite=True)).executed == 6


def test_resume_runs_only_what_is_missing(tmp_path):
    generations = write_jsonl(tmp_path / "gen.jsonl", canonical_rows(5))
    output = tmp_path / "out.jsonl"
    first = run_execute(generations, output, ExecutionConfig(limit=2, **FIXED))
    assert first.executed == 2 and not any("--limit" in note for note in first.notes)
    with open(output, "a", encoding="utf-8") as handle:
        handle.write('{"task_id": "HumanEval/4", "sample_id": 0, "pas')  # torn line of a killed run
    with pytest.raises(DataError, match="--resume"):
        run_execute(generations, output, ExecutionConfig(**FIXED))
    again = run_execute(generations, output, ExecutionConfig(resume=True, limit=2, **FIXED))
    assert again.executed == 0 and again.skipped_finished == 2  # the same first 2: nothing more (probe23)
    third_of = run_execute(generations, output, ExecutionConfig(resume=True, limit=3, **FIXED))
    assert third_of.executed == 1 and len(read_results(output)) == 3
    second = run_execute(generations, output, ExecutionConfig(resume=True, limit=9, **FIXED))
    assert second.skipped_finished == 3 and second.executed == 2
    assert "--limit 9 is above the 5 samples in the input: all of them" in second.notes
    rows = read_results(output, allow_torn_tail=False)
    assert sorted(sample_key(r["task_id"], r["sample_id"]) for r in rows) == sorted(
        sample_key(f"HumanEval/{i}", 0) for i in range(5)
    )
    third = run_execute(generations, output, ExecutionConfig(resume=True, **FIXED))
    assert third.executed == 0 and len(read_results(output)) == 5


def test_cli_limit_and_workers_0_run_the_first_samples_one_worker_per_core(tmp_path):
    """``--limit`` (the name ``score`` uses; formerly ``--max-samples``) and ``-j 0`` (one per
    core, as in ``dedup``): ``workbench execute --limit 5`` was refused ("Possible options:
    --timeout"), ``-j 0`` too."""
    generations = write_jsonl(tmp_path / "gen.jsonl", canonical_rows(4))
    output = tmp_path / "out.jsonl"
    result = CliRunner().invoke(app, ["execute", str(generations), "-o", str(output), "--limit", "2", "-j", "0",
                                      "--timeout", "30", "--no-reference-cache", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{"):])
    assert summary["executed"] == 2 and len(read_results(output)) == 2


def test_interrupted_run_keeps_finished_rows_and_resumes(tmp_path):
    generations = write_jsonl(tmp_path / "gen.jsonl", canonical_rows(6))
    output = tmp_path / "out.jsonl"
    seen = []

    def interrupt_after_two(row):
        seen.append(row)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_execute(generations, output, ExecutionConfig(workers=1, timeout=30.0, reference_cache=False),
                            on_result=interrupt_after_two)
    assert len(read_results(output)) == 2
    summary = run_execute(generations, output, ExecutionConfig(resume=True, **FIXED))
    assert summary.executed == 4
    assert all(r["passed"] == 1 for r in read_results(output))


def test_a_prompt_column_unlike_the_problems_prompt_is_noted_and_can_be_run(tmp_path):
    """The generations carry the prompt their model completed; it lacks an import the completion
    relies on. By default the program is the problem's prompt (with the import) + completion, and
    the summary says the carried prompt differs; --prompt-column prompt runs what the model saw.
    Real HumanEval problems, real sandboxed runs."""
    problem = load_humaneval().filter(lambda row: row["task_id"] == "HumanEval/115")[0]
    assert "import math" in problem["prompt"]
    carried = problem["prompt"].replace("    import math\n", "")
    completion = ("    return sum(math.ceil(sum(row) / capacity) for row in grid)\n")
    rows = [{"task_id": "HumanEval/115", "sample_id": 0, "prompt": carried, "completion": completion},
            {"task_id": "HumanEval/0", "sample_id": 0, "prompt": load_humaneval()[0]["prompt"] + "\n\n",
             "completion": load_humaneval()[0]["canonical_solution"]}]
    generations = write_jsonl(tmp_path / "gen.jsonl", rows)
    default = run_execute(generations, tmp_path / "default.jsonl", ExecutionConfig(**FIXED))
    assert {r["task_id"]: r["status"] for r in read_results(tmp_path / "default.jsonl")} == {
        "HumanEval/115": "passed", "HumanEval/0": "passed"}
    [note] = [n for n in default.notes if "'prompt' column" in n]
    assert "differs from the problems' prompt in 1 of 2 tasks (first: HumanEval/115)" in note
    assert "--prompt-column prompt" in note
    carried_run = run_execute(generations, tmp_path / "carried.jsonl", ExecutionConfig(prompt_column="prompt", **FIXED))
    results = {r["task_id"]: r for r in read_results(tmp_path / "carried.jsonl")}
    assert results["HumanEval/115"]["status"] == "error" and "NameError" in results["HumanEval/115"]["stderr_tail"]
    assert results["HumanEval/0"]["status"] == "passed"
    assert not any("'prompt' column" in n for n in carried_run.notes)


def test_a_main_guarded_demo_does_not_run(tmp_path):
    """A program is not run as __main__ (HumanEval's execution.py, evalplus and bigcode-evaluation-
    harness exec it in globals without __main__): a correct solution followed by a demo that reads
    stdin and exits passes (probe23: it was an error). Real HumanEval problem, sandboxed run."""
    problem = load_humaneval()[0]
    demo = ("\n\nif __name__ == '__main__':\n    import sys\n    numbers = [float(x) for x in input().split()]\n"
            "    print(has_close_elements(numbers, 0.5))\n    sys.exit(0)\n")
    rows = [{"task_id": problem["task_id"], "sample_id": 0, "completion": problem["canonical_solution"] + demo},
            {"task_id": problem["task_id"], "sample_id": 1,
             "completion": problem["canonical_solution"] + "\nassert __name__ != '__main__'\n"}]
    generations = write_jsonl(tmp_path / "gen.jsonl", rows)
    run_execute(generations, tmp_path / "out.jsonl", ExecutionConfig(**FIXED))
    assert [r["status"] for r in read_results(tmp_path / "out.jsonl")] == ["passed", "passed"]


@pytest.mark.parametrize("reuse", [True, False], ids=["forked", "fresh"])
def test_printing_much_does_not_fail_a_correct_solution(tmp_path, reuse):
    """probe23: 70 MiB on standard output hit the 64 MiB file-size limit (status error); stdout is
    discarded, as HumanEval's execution.py and evalplus do. Printing forever runs into the timeout,
    as writing stderr forever does. Real sandboxed runs, both sample paths."""
    problem = load_humaneval()[0]
    loud = "    print('x' * (70 * 1024 * 1024))\n" + problem["canonical_solution"]
    rows = [{"task_id": problem["task_id"], "sample_id": 0, "completion": loud},
            {"task_id": problem["task_id"], "sample_id": 1, "completion": "    while True:\n        print('y' * 4096)\n"}]
    generations = write_jsonl(tmp_path / "gen.jsonl", rows)
    config = ExecutionConfig(**{**FIXED, "timeout": 3.0}, reuse_interpreters=reuse)
    run_execute(generations, tmp_path / "out.jsonl", config)
    assert [r["status"] for r in read_results(tmp_path / "out.jsonl")] == ["passed", "timeout"]


def test_bad_input_fails_before_running(tmp_path):
    output = tmp_path / "out.jsonl"
    unknown = write_jsonl(tmp_path / "unknown.jsonl", [{"task_id": "Nope/1", "sample_id": 0, "completion": "x"}])
    with pytest.raises(DataError, match="not in the problems"):
        run_execute(unknown, output, ExecutionConfig(**FIXED))
    dup = write_jsonl(tmp_path / "dup.jsonl", canonical_rows(1) * 2)
    with pytest.raises(DataError, match="twice"):
        run_execute(dup, output, ExecutionConfig(**FIXED))
    no_completion = write_jsonl(tmp_path / "nc.jsonl", [{"task_id": "HumanEval/0", "sample_id": 0, "code": "x"}])
    with pytest.raises(MissingColumnError, match="--completion-column"):
        run_execute(no_completion, output, ExecutionConfig(**FIXED))
    with pytest.raises(OptionError, match="mode must be one of completion, full, not 'patch'"):
        run_execute(no_completion, output, ExecutionConfig(mode="patch", **FIXED))
    assert not output.exists()


@pytest.mark.parametrize("python, message", [
    ("/nonexistent/python3", "needs /nonexistent/python3 \\(not found\\)"),   # was "needs /nonexistent on PATH"
    ("/bin/false", "exited with status 1 and printed nothing on stderr"),     # was an empty reason
    ("/bin/true", "does not behave like a Python interpreter"),              # was a raw JSON parse error
])
def test_a_python_that_is_not_one_is_named_before_running(tmp_path, python, message):
    from workbench.errors import WorkbenchError

    generations = write_jsonl(tmp_path / "gen.jsonl", canonical_rows(1))
    with pytest.raises(WorkbenchError, match=message):
        run_execute(generations, tmp_path / "out.jsonl", ExecutionConfig(python=python, **FIXED))
    assert not (tmp_path / "out.jsonl").exists()


def test_a_completion_column_that_is_not_text_fails_before_running(tmp_path):
    """A list of completions per row was turned into its repr (``"['    return ...']"``), which
    is valid Python, so every sample was recorded as ``failed`` without its code ever running."""
    output = tmp_path / "out.jsonl"
    solution = load_humaneval()[0]["canonical_solution"]
    listed = write_jsonl(tmp_path / "listed.jsonl", [{"task_id": "HumanEval/0", "sample_id": 0, "completion": [solution]}])
    with pytest.raises(DataError, match="--completion-column 'completion' holds"):
        run_execute(listed, output, ExecutionConfig(**FIXED))
    numbers = write_jsonl(tmp_path / "numbers.jsonl", [{"task_id": "HumanEval/0", "sample_id": 0, "completion": solution,
                                                          "prompt": 3}])
    with pytest.raises(DataError, match="--prompt-column 'prompt' holds"):
        run_execute(numbers, output, ExecutionConfig(prompt_column="prompt", **FIXED))
    problems = write_jsonl(tmp_path / "problems.jsonl", [{"task_id": "HumanEval/0", "prompt": "", "test": ["assert 1"],
                                                          "entry_point": "f"}])
    fine = write_jsonl(tmp_path / "fine.jsonl", [{"task_id": "HumanEval/0", "sample_id": 0, "completion": solution}])
    with pytest.raises(DataError, match="--test-column 'test' holds"):
        run_execute(fine, output, ExecutionConfig(problems=str(problems), **FIXED))
    # probe 27: a NaN was explained as a list ("flatten a list of completions"); a number is named with its row
    nan = tmp_path / "nan.jsonl"
    nan.write_text(json.dumps({"task_id": "HumanEval/0", "completion": solution}) + "\n"
                   + '{"task_id": "HumanEval/0", "completion": NaN}\n')
    with pytest.raises(DataError, match="a NaN or Infinity"):
        run_execute(nan, output, ExecutionConfig(**FIXED))
    five = write_jsonl(tmp_path / "five.jsonl", [{"task_id": "HumanEval/0", "completion": solution},
                                                 {"task_id": "HumanEval/0", "completion": 5}])
    # fix32: in the file's words ("numbers", the cell as written), not datasets' feature type ("Json(decode=True)")
    with pytest.raises(DataError, match=r"'completion' holds numbers, not text, in 1 of 2 rows .*\(e.g. 5 in row 2\)"):
        run_execute(five, output, ExecutionConfig(**FIXED))
    assert not output.exists()


def test_missing_sample_ids_are_numbered_and_null_completions_recorded(tmp_path):
    rows = [
        {"task_id": "HumanEval/0", "completion": load_humaneval()[0]["canonical_solution"]},
        {"task_id": "HumanEval/0", "completion": None},
    ]
    generations = write_jsonl(tmp_path / "gen.jsonl", rows)
    summary = run_execute(generations, tmp_path / "out.jsonl", ExecutionConfig(**FIXED))
    results = {r["sample_id"]: r for r in read_results(tmp_path / "out.jsonl")}
    assert results[0]["status"] == "passed"
    assert results[1]["status"] == "error" and "no completion" in results[1]["detail"]
    assert any("numbered" in note for note in summary.notes)
    assert "1 null and 0 empty completions of the 2 run now" in " ".join(summary.notes)  # said (probe23)


def test_tests_that_need_an_entry_point_never_pass_without_one(tmp_path):
    """HumanEval's tests only define ``check(candidate)``; with no entry point the harness never
    called it, so any program, ``return None`` included, was recorded as passed."""
    rows = [{"id": "t1", "tests": "def check(f):\n    assert f(2) == 4\n", "fn": None},
            # MultiPL-E's layout calls its checks itself: no entry point needed
            {"id": "t2", "tests": "def check(f):\n    assert f(2) == 4\n\ndef test_check():\n    check(double)\n\ntest_check()\n",
             "fn": None}]
    problems = write_jsonl(tmp_path / "problems.jsonl", [{**row, "text": ""} for row in rows])
    generations = write_jsonl(tmp_path / "gen.jsonl", [
        {"task_id": "t1", "sample_id": 0, "completion": "def square(x):\n    return None\n"},
        {"task_id": "t2", "sample_id": 0, "completion": "def double(x):\n    return 2 * x\n"},
        {"task_id": "t2", "sample_id": 1, "completion": "def double(x):\n    return None\n"},
    ])
    config = ExecutionConfig(problems=str(problems), problem_task_column="id", problem_prompt_column="text",
                             test_column="tests", entry_point_column="fn", reference_column=None, **FIXED)
    run_execute(generations, tmp_path / "out.jsonl", config)
    results = {(r["task_id"], r["sample_id"]): r for r in read_results(tmp_path / "out.jsonl")}
    assert results["t1", 0]["status"] == "error" and "no entry point" in results["t1", 0]["detail"]
    assert results["t2", 0]["status"] == "passed" and results["t2", 1]["status"] == "failed"


def test_a_task_without_tests_fails_before_running(tmp_path):
    """A problem whose test cell is empty or null ran nothing after the program, so every
    sample of it was recorded as passed."""
    problems = write_jsonl(tmp_path / "problems.jsonl", [
        {"id": "t1", "tests": "def check(f):\n    assert f(2) == 4\n", "fn": "square", "text": ""},
        {"id": "t2", "tests": None, "fn": "square", "text": ""},
        {"id": "t3", "tests": "  \n", "fn": "square", "text": ""},
    ])
    config = ExecutionConfig(problems=str(problems), problem_task_column="id", problem_prompt_column="text",
                             test_column="tests", entry_point_column="fn", reference_column=None, **FIXED)
    wrong = "def square(x):\n    return None\n"
    generations = write_jsonl(tmp_path / "gen.jsonl", [{"task_id": t, "sample_id": 0, "completion": wrong}
                                                       for t in ("t1", "t2", "t3")])
    output = tmp_path / "out.jsonl"
    with pytest.raises(DataError, match=r"2 tasks have no tests .*'t2', 't3'"):
        run_execute(generations, output, config)
    assert not output.exists()
    # tasks without tests that no generation asks for do not matter
    only_t1 = write_jsonl(tmp_path / "t1.jsonl", [{"task_id": "t1", "sample_id": 0, "completion": wrong}])
    run_execute(only_t1, output, config)
    assert [r["status"] for r in read_results(output)] == ["failed"]


def test_full_mode_and_custom_problem_columns(tmp_path):
    problems = write_jsonl(tmp_path / "problems.jsonl", [
        {"id": "t1", "tests": "def check(f):\n    assert f(2) == 4\n", "fn": "square", "text": "", "ref": "def square(x):\n    return x * x\n"},
    ])
    generations = write_jsonl(tmp_path / "gen.jsonl", [
        {"task_id": "t1", "sample_id": "a", "completion": "def square(x):\n    return x * x\n"},
        {"task_id": "t1", "sample_id": "b", "completion": "def square(x):\n    return x + x + 1\n"},
        {"task_id": "t1", "sample_id": "c", "completion": "def square(x) return\n"},
    ])
    config = ExecutionConfig(
        problems=str(problems), mode="full", problem_task_column="id", test_column="tests",
        entry_point_column="fn", problem_prompt_column="text", reference_column="ref", workers=2,
        reference_cache_dir=str(tmp_path / "cache"),
    )
    summary = run_execute(generations, tmp_path / "out.jsonl", config)
    status = {r["sample_id"]: r["status"] for r in read_results(tmp_path / "out.jsonl")}
    assert status == {"a": "passed", "b": "failed", "c": "syntax_error"}
    # the syntax error itself is the detail (formatting it must not be refused by the frame guard)
    syntax = next(r for r in read_results(tmp_path / "out.jsonl") if r["sample_id"] == "c")
    assert "SyntaxError" in syntax["stderr_tail"] and "cannot be formatted" not in syntax["stderr_tail"], syntax
    # the timeout came from calibration: max(4 s floor, 4 x reference time)
    assert all(r["timeout_s"] >= 4.0 for r in read_results(tmp_path / "out.jsonl"))
    assert summary.calibration_s > 0


def test_calibration_uses_the_cache_and_flags_failing_references(tmp_path):
    from workbench.execute.sandbox_helpers import sandbox_for
    from workbench.execute.timeouts import ReferenceProblem, ReferenceTimeCache, calibrate_timeouts
    from workbench.languages.python_runner import PythonTestRunner

    runner, sandbox = PythonTestRunner(), sandbox_for()
    good = ReferenceProblem("good", "def f():\n    return 1\n", "def check(c):\n    assert c() == 1\n", "f")
    bad = ReferenceProblem("bad", "def f():\n    return 2\n", "def check(c):\n    assert c() == 1\n", "f")
    cache = ReferenceTimeCache(tmp_path / "cache")
    first = calibrate_timeouts([good, bad], runner, sandbox, floor_s=3.0, factor=4.0, workers=2, cache=cache)
    assert first["good"].reference_status == "passed" and first["good"].timeout_s >= 3.0
    assert first["bad"].reference_status == "failed" and first["bad"].timeout_s == 3.0
    second = calibrate_timeouts([good], runner, sandbox, floor_s=3.0, cache=cache)
    assert second["good"].reference_status == "cached"
    assert second["good"].reference_s == first["good"].reference_s
    cache.close()


def test_result_writer_refuses_to_clobber_and_pass_at_1(tmp_path):
    path = tmp_path / "r.jsonl"
    with ResultWriter(path) as writer:
        writer.write({"task_id": "a", "sample_id": 1, "passed": 1, "status": "passed"})
    with pytest.raises(DataError):
        ResultWriter(path)
    ResultWriter(path, overwrite=True).close()
    assert read_results(path) == []
    path.write_text('{"task_id": "a"}\n')
    with pytest.raises(DataError, match="line 1"):
        read_results(path)
    rows = [{"task_id": "a", "passed": 1}, {"task_id": "a", "passed": 0}, {"task_id": "b", "passed": 1}]
    assert pass_at_1(rows) == pytest.approx(0.75)
    assert pass_at_1([]) is None


def test_resume_refuses_a_file_that_is_not_results_without_touching_it(tmp_path):
    """--resume once cut a last line without a newline before checking the file: a JSON
    file written by ``json.dump`` (one line, no newline) given as --output was emptied."""
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps([{"task_id": "a", "sample_id": 0, "score": 0.5}]))  # no newline
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps({"task_id": "a", "rows": [1, 2]}, indent=2))  # no newline either
    for path in (scores, pretty):
        before = path.read_bytes()
        with pytest.raises(DataError, match="line 1"):
            ResultWriter(path, resume=True)
        assert path.read_bytes() == before
    # a results file whose last row lost its newline: that row is cut and so run again
    torn = tmp_path / "torn.jsonl"
    first = '{"task_id": "a", "sample_id": 0, "passed": 1, "status": "passed"}\n'
    torn.write_text(first + '{"task_id": "a", "sample_id": 1, "passed": 0, "status": "fai')
    with ResultWriter(torn, resume=True) as writer:
        assert writer.finished == {sample_key("a", 0)}
    assert torn.read_text() == first


def test_resume_refuses_rows_that_no_run_of_these_generations_wrote(tmp_path):
    # probe 27: any jsonl with the join columns was adopted as finished samples, never run
    generations = write_jsonl(tmp_path / "gen.jsonl", canonical_rows(2, wrong_every=2))
    forged = write_jsonl(tmp_path / "forged.jsonl", [
        {"task_id": "HumanEval/0", "sample_id": 0, "passed": 1}, {"task_id": "HumanEval/1", "sample_id": 0, "passed": 1}])
    before = forged.read_bytes()
    with pytest.raises(DataError, match="no 'status' column, so it was not written by `workbench execute`"):
        run_execute(generations, forged, ExecutionConfig(resume=True, **FIXED))
    assert forged.read_bytes() == before
    other = tmp_path / "other.jsonl"
    run_execute(write_jsonl(tmp_path / "other_gen.jsonl", canonical_rows(3)[2:]), other, ExecutionConfig(**FIXED))
    (tmp_path / "other.summary.json").unlink()  # its recorded source would be refused first; copied without it
    with pytest.raises(DataError, match="1 row of .* is for samples the generations do not have .*HumanEval/2:0"):
        run_execute(generations, other, ExecutionConfig(resume=True, **FIXED))


def test_null_sample_ids_fail_before_running(tmp_path):
    # probe 27: two rows keyed (T, null) slipped past the duplicate check, then broke --resume
    rows = [dict(row, sample_id=None) for row in canonical_rows(1) * 2]
    generations = write_jsonl(tmp_path / "gen.jsonl", rows)
    with pytest.raises(DataError, match="2 rows have no sample id in column 'sample_id' \\(rows 1, 2\\)"):
        run_execute(generations, tmp_path / "out.jsonl", ExecutionConfig(**FIXED))
    assert not (tmp_path / "out.jsonl").exists()


def test_cli_execute(tmp_path):
    generations = write_jsonl(tmp_path / "gen.jsonl", canonical_rows(2, wrong_every=2))
    output = tmp_path / "out.jsonl"
    runner = CliRunner()
    result = runner.invoke(app, ["execute", str(generations), "-o", str(output), "--timeout", "30", "--json", "-j", "2"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout[result.stdout.index("{"):])
    assert summary["counts"] == {"failed": 1, "passed": 1}
    assert summary["isolation"] in {"bubblewrap", "namespaces", "rlimits"}
    again = runner.invoke(app, ["execute", str(generations), "-o", str(output), "--timeout", "30"])
    assert again.exit_code == 1 and "--resume" in again.output + str(again.exception)
    bad = runner.invoke(app, ["execute", str(generations), "-o", str(tmp_path / "x.jsonl"), "--completion-column", "code"])
    assert bad.exit_code == 1 and "column 'code' not found" in bad.output + str(bad.exception)


def test_agreement_with_ice_score_labels_on_a_slice(tmp_path, bundled_data):
    """A small slice of the 3,220 ICE-Score samples (the full set: benchmarks/execute_bench.py)."""
    source = bundled_data / "ice-score" / "humaneval_python_flat.jsonl"
    every = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    rows = [r for r in every if r["passed"] == 1][:12] + [r for r in every if r["passed"] == 0][:12]
    generations = write_jsonl(tmp_path / "gen.jsonl", rows)
    config = ExecutionConfig(prompt_column="prompt", completion_column="completion_multipl_e", **FIXED)
    run_execute(generations, tmp_path / "out.jsonl", config)
    ours = {sample_key(r["task_id"], r["sample_id"]): r["passed"] for r in read_results(tmp_path / "out.jsonl")}
    labels = {sample_key(r["task_id"], r["sample_id"]): r["passed"] for r in rows}
    agree = sum(ours[key] == labels[key] for key in labels)
    assert len(ours) == 24
    assert agree >= 23, {k: (ours[k], labels[k]) for k in labels if ours[k] != labels[k]}
    assert 0 < sum(ours.values()) < 24  # the slice has both outcomes


def test_python_samples_run_with_a_fixed_hash_seed():
    # set order of strings decides some samples' results (ICE-Score HumanEval/149 sample 152):
    # the runner fixes PYTHONHASHSEED=0 so every run gives the same verdict
    import subprocess
    import sys

    from workbench.execute.sandbox_helpers import run_program
    from workbench.languages.python_runner import PythonTestRunner

    expected = subprocess.run([sys.executable, "-c", "print(hash('workbench'))"], capture_output=True, text=True,
                              env={"PYTHONHASHSEED": "0"}).stdout.strip()
    program = "def h():\n    return hash('workbench')\n"
    tests = f"def check(candidate):\n    assert candidate() == {expected}\n"
    for _ in range(2):
        outcome = run_program(PythonTestRunner(), program, tests, "h", timeout_s=30.0)
        assert outcome.status == "passed", outcome


def test_problems_with_several_splits_need_problems_split(tmp_path):
    from workbench.execute.job import load_problems

    folder = tmp_path / "problems"
    folder.mkdir()
    for split, body in (("train", "return x"), ("validation", "return x * x")):
        write_jsonl(folder / f"{split}.jsonl", [{"task_id": "t1", "prompt": "def square(x):\n", "test": "",
                                                 "entry_point": "square", "canonical_solution": f"    {body}\n"}])
    with pytest.raises(DataError, match="train, validation; name one with --problems-split"):
        load_problems(ExecutionConfig(problems=str(folder)))
    chosen = load_problems(ExecutionConfig(problems=str(folder), problems_split="validation"))
    assert "x * x" in chosen["t1"].reference


def test_problems_without_an_entry_point_column_run_their_self_calling_tests(tmp_path):
    """MultiPL-E's problems have no entry point column (their tests call the function): the default
    column is optional (a note says it is missing), while a column named by the user must exist.
    HumanEval-style tests that only define check() are then an error on each sample, naming the fix."""
    from workbench.errors import MissingColumnError

    self_calling = ("def check(candidate):\n    assert candidate(1) == 2\n\n"
                    "def test_check():\n    check(add_one)\n\ntest_check()\n")
    problems = write_jsonl(tmp_path / "problems.jsonl", [
        {"task_id": "T/0", "prompt": "def add_one(x):\n", "tests": self_calling},
        {"task_id": "T/1", "prompt": "def add_one(x):\n", "tests": "def check(candidate):\n    assert candidate(1) == 2\n"},
    ])
    generations = write_jsonl(tmp_path / "gens.jsonl", [
        {"task_id": "T/0", "sample_id": 0, "completion": "    return x + 1\n"},
        {"task_id": "T/0", "sample_id": 1, "completion": "    return x\n"},
        {"task_id": "T/1", "sample_id": 0, "completion": "    return x + 1\n"},
    ])
    output = tmp_path / "out.jsonl"
    summary = run_execute(generations, output, ExecutionConfig(problems=str(problems), test_column="tests", **FIXED))
    rows = {(r["task_id"], r["sample_id"]): r for r in read_results(output)}
    assert [rows[("T/0", 0)]["status"], rows[("T/0", 1)]["status"]] == ["passed", "failed"]
    assert rows[("T/1", 0)]["status"] == "error"
    assert "no entry point names the function" in rows[("T/1", 0)]["detail"]
    assert any("the problems have no 'entry_point' column" in note for note in summary.notes), summary.notes
    with pytest.raises(MissingColumnError, match="fn"):
        run_execute(generations, tmp_path / "named.jsonl",
                    ExecutionConfig(problems=str(problems), test_column="tests", entry_point_column="fn", **FIXED))


def test_notes_on_the_input_come_before_the_run_starts(tmp_path):
    """fix33 item 4: the repeated-prompt note (and every note on the input) was printed only after
    the whole run had finished. Now ``on_note`` gets them before any sample runs and before the
    reference timing, and the CLI prints each once, ahead of the progress bar. Real HumanEval
    prompts, real sandbox (calibration on: a reference phase runs too)."""
    humaneval = load_humaneval()
    rows = [{"task_id": humaneval[i]["task_id"], "completion": humaneval[i]["prompt"] + humaneval[i]["canonical_solution"]}
            for i in range(2)]
    generations = write_jsonl(tmp_path / "whole.jsonl", rows)
    events = []
    summary = run_execute(generations, tmp_path / "out.jsonl", ExecutionConfig(workers=2, reference_cache=False),
                          on_note=lambda note: events.append(("note", note)),
                          on_start=lambda phase, size: events.append(("start", phase)),
                          on_result=lambda row: events.append(("row", row.get("phase", "execute"))))
    first_start = next(i for i, event in enumerate(events) if event[0] != "note")
    assert events[first_start] == ("start", "calibrate"), events
    early = [note for kind, note in events[:first_start]]
    assert any("own prompt" in note for note in early) and not any(kind == "note" for kind, _ in events[first_start:])
    assert summary.notes[: summary.announced_notes] == early  # the summary keeps them, counted as announced

    out = tmp_path / "cli.jsonl"
    result = CliRunner().invoke(app, ["execute", str(generations), "-o", str(out), "--timeout", "30", "-j", "2",
                                      "--progress"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert text.count("begin with their own prompt") == 1  # once: not again with the summary
    assert text.index("begin with their own prompt") < text.index("executing")  # before the run's progress bar


def test_completions_that_begin_with_their_prompt_are_noted_before_running(tmp_path):
    """fix32: score said when generations repeat their prompt, execute did not, though --mode
    completion then runs every prompt twice. Real HumanEval prompts, real sandbox; the note is
    counted before any sample runs (limit 3 of 4 rows: 2 of the 3 chosen are whole programs)."""
    humaneval = load_humaneval()
    rows = [{"task_id": humaneval[i]["task_id"], "completion": humaneval[i]["prompt"] + humaneval[i]["canonical_solution"]}
            for i in range(2)]
    rows += [{"task_id": humaneval[i]["task_id"], "completion": humaneval[i]["canonical_solution"]} for i in (2, 3)]
    generations = write_jsonl(tmp_path / "whole.jsonl", rows)
    summary = run_execute(generations, tmp_path / "out.jsonl", ExecutionConfig(limit=3, **FIXED))
    [note] = [n for n in summary.notes if "own prompt" in n]
    assert note.startswith("2 of 3 completions begin with their own prompt: whole programs") and "--mode full" in note
    full = run_execute(generations, tmp_path / "full.jsonl", ExecutionConfig(mode="full", limit=1, **FIXED))
    assert not any("own prompt" in n for n in full.notes)


def test_references_that_are_all_syntax_errors_suggest_the_language_option(tmp_path):
    """Probe 33: JavaScript problems run without ``--language`` went to the Python runner; every
    reference failed and the only hint was "they use the floor timeout". When every reference is a
    syntax error in the run's language, the note now says to check ``--language``. A task whose
    reference merely fails keeps the plain note."""
    js = {"prompt": "function add(a, b) {\n", "canonical_solution": "  return a + b;\n}\n", "entry_point": "add",
          "test": "const assert = require('node:assert');\nassert.strictEqual(add(1, 2), 3);\n"}
    problems = write_jsonl(tmp_path / "problems.jsonl", [{"task_id": f"JS/{i}", **js} for i in range(2)])
    generations = write_jsonl(tmp_path / "gens.jsonl",
                              [{"task_id": f"JS/{i}", "completion": js["canonical_solution"]} for i in range(2)])
    config = ExecutionConfig(problems=str(problems), workers=2, reference_cache=False, timeout_floor=2.0)
    summary = run_execute(str(generations), tmp_path / "results.jsonl", config)
    [note] = [n for n in summary.notes if "reference solution does not pass" in n]
    assert "every reference is a syntax error as python: if the problems are in another language, pass --language" in note
    assert "\n" not in note

    python = {"prompt": "def f():\n", "canonical_solution": "    return 2\n", "entry_point": "f",
              "test": "def check(c):\n    assert c() == 1\n"}
    problems = write_jsonl(tmp_path / "py.jsonl", [{"task_id": "P/0", **python}])
    generations = write_jsonl(tmp_path / "py_gens.jsonl", [{"task_id": "P/0", "completion": "    return 1\n"}])
    summary = run_execute(str(generations), tmp_path / "py_results.jsonl",
                          ExecutionConfig(problems=str(problems), workers=1, reference_cache=False, timeout_floor=2.0))
    [note] = [n for n in summary.notes if "reference solution does not pass" in n]
    assert "--language" not in note
