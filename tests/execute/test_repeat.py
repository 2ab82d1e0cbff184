"""``--repeat N``: each sample run N times, every attempt's status recorded, a sample whose
attempts differ marked ``flaky``, pass@k from the first attempt; and a resume that would mix
rows run another number of times is refused. Real data files, real sandboxed runs (the
flaky samples count their attempts in a file of a shared folder, so they run at the levels
that share the file system: ``rlimits`` and ``namespaces``; bubblewrap gives each sample a
private ``/tmp`` and a read-only root)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.errors import DataError, WorkbenchError
from workbench.execute.isolation import IsolationLevel
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.execute.result_file import read_results, summary_path
from workbench.execute.sandbox_helpers import available_levels

SHARED_LEVELS = [level.value for level in available_levels()
                 if level in (IsolationLevel.RLIMITS, IsolationLevel.NAMESPACES)]
#: below bubblewrap, as root, samples run under user ids that cannot reach a Python under /root
SYSTEM_PYTHON = ["--python", "/usr/bin/python3"] if os.geteuid() == 0 and os.path.exists("/usr/bin/python3") else []
PROBLEMS = [{"task_id": f"T/{n}", "prompt": "def add(x, y):\n", "entry_point": "add",
             "test": "def check(candidate):\n    assert candidate(2, 3) == 5\n"} for n in range(3)]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def shared_folder():
    """A folder every sample's user id can write (as root, samples run under other user ids):
    outside pytest's private temporary folder, which they cannot enter."""
    folder = tempfile.mkdtemp(prefix="workbench-repeat-", dir="/tmp")
    os.chmod(folder, 0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def counting(counter: str, passes_when: str) -> str:
    """A completion of ``add`` that counts its calls in ``counter`` (n = 1, 2, ... one per attempt)
    and returns the right sum only when ``passes_when`` (an expression in n) holds."""
    return (f"    with open({counter!r}, 'a+') as f:\n        f.write('x')\n        f.seek(0)\n        n = len(f.read())\n"
            f"    return x + y if {passes_when} else x - y\n")


@pytest.mark.skipif(not SHARED_LEVELS, reason="no isolation level that shares the file system works here")
@pytest.mark.parametrize("level", SHARED_LEVELS)
def test_a_flaky_sample_is_marked_and_pass_at_k_counts_its_first_attempt(tmp_path, shared_folder, level):
    """Three attempts each: a sample that passes on its first attempt only (T/0), one that passes
    on its second only (T/1), and a stable one (T/2). The rows hold every attempt's status; T/0 and
    T/1 are flaky, T/2 is not; ``passed`` is the first attempt's (T/0 passes although 2 of its 3
    attempts failed: not the majority), so pass@1 is 2/3; the summary counts them and gives the
    pass@1 they could move between."""
    counters = [os.path.join(shared_folder, f"count{n}") for n in range(2)]
    for counter in counters:  # made by us: what a sample's user id leaves at the top of /tmp is removed
        open(counter, "w").close()
        os.chmod(counter, 0o666)
    generations = write_jsonl(tmp_path / "gen.jsonl", [
        {"task_id": "T/0", "sample_id": 0, "completion": counting(counters[0], "n == 1")},
        {"task_id": "T/1", "sample_id": 0, "completion": counting(counters[1], "n == 2")},
        {"task_id": "T/2", "sample_id": 0, "completion": "    return x + y\n"},
    ])
    problems = write_jsonl(tmp_path / "problems.jsonl", PROBLEMS)
    output = tmp_path / "out.jsonl"
    said = CliRunner().invoke(app, [
        "execute", str(generations), "-o", str(output), "--problems", str(problems), "--timeout", "30",
        "--isolation", level, "--repeat", "3", "-j", "1", "--no-reference-cache", "--no-progress",
        *SYSTEM_PYTHON])
    assert said.exit_code == 0, said.output
    rows = {row["task_id"]: row for row in read_results(output)}
    assert rows["T/0"]["attempts"] == ["passed", "failed", "failed"]
    assert rows["T/1"]["attempts"] == ["failed", "passed", "failed"]
    assert rows["T/2"]["attempts"] == ["passed"] * 3
    assert [rows[t]["flaky"] for t in ("T/0", "T/1", "T/2")] == [True, True, False]
    assert [rows[t]["passed"] for t in ("T/0", "T/1", "T/2")] == [1, 0, 1]  # the first attempt's
    assert rows["T/0"]["status"] == "passed" and rows["T/1"]["status"] == "failed"
    summary = json.loads(summary_path(output).read_text())
    assert summary["settings"]["repeat"] == 3
    assert summary["pass_at_1"] == pytest.approx(2 / 3)
    flaky = summary["flaky"]
    assert (flaky["repeated"], flaky["samples"], flaky["pass_flips"], flaky["tasks"]) == (3, 2, 2, 2)
    assert flaky["rule"] == "first attempt"
    assert flaky["pass_at_1_flaky_failed"] == pytest.approx(1 / 3)
    assert flaky["pass_at_1_flaky_passed"] == pytest.approx(1.0)
    assert flaky["flaky_samples"] == ["T/0 0: passed, failed, failed", "T/1 0: failed, passed, failed"]
    table = " ".join(said.output.split())  # the summary table's "flaky" line, its cells joined
    assert "2 of the 3 repeated samples (2 passed on some attempts only)" in table, said.output
    assert "first attempt" in table


def test_one_attempt_leaves_flaky_unset(tmp_path):
    """Without ``--repeat`` each row records its one attempt and ``flaky`` is null: not tested."""
    generations = write_jsonl(tmp_path / "gen.jsonl", [{"task_id": "T/0", "sample_id": 0,
                                                        "completion": "    return x + y\n"}])
    output = tmp_path / "out.jsonl"
    summary = run_execute(generations, output, ExecutionConfig(
        problems=str(write_jsonl(tmp_path / "problems.jsonl", PROBLEMS)), timeout=30.0, workers=1,
        reference_cache=False))
    (row,) = read_results(output)
    assert (row["attempts"], row["flaky"]) == (["passed"], None)
    assert (summary.flaky["repeated"], summary.flaky["samples"]) == (0, 0)


def _one_sample_run(tmp_path, repeat: int, **options):
    generations = write_jsonl(tmp_path / "gen.jsonl", [
        {"task_id": f"T/{n}", "sample_id": 0, "completion": "    return x + y\n"} for n in range(3)])
    config = ExecutionConfig(problems=str(write_jsonl(tmp_path / "problems.jsonl", PROBLEMS)), timeout=30.0,
                             workers=1, reference_cache=False, repeat=repeat, **options)
    return generations, config


def test_resuming_rows_run_once_with_repeat_3_is_refused(tmp_path):
    """Rows run once cannot be continued by a run that repeats each sample 3 times: the kept rows
    would not say whether their samples are flaky. The summary's recorded settings refuse it; so
    do the rows themselves when that summary is gone, and a summary of a version before --repeat
    (no ``repeat`` recorded: each sample ran once)."""
    generations, once = _one_sample_run(tmp_path, 1, limit=2)
    output = tmp_path / "out.jsonl"
    run_execute(generations, output, once)
    before = output.read_text()
    _, thrice = _one_sample_run(tmp_path, 3, resume=True)
    with pytest.raises(WorkbenchError, match="repeat 1 -> 3"):
        run_execute(generations, output, thrice)
    summary = json.loads(summary_path(output).read_text())
    del summary["settings"]["repeat"]  # as a version before --repeat wrote it
    summary_path(output).write_text(json.dumps(summary))
    with pytest.raises(WorkbenchError, match="repeat 1 -> 3"):
        run_execute(generations, output, thrice)
    summary_path(output).unlink()  # no record of the settings: the rows' own attempts refuse it
    with pytest.raises(DataError, match="run once each, this run asks .*repeat.*3"):
        run_execute(generations, output, thrice)
    assert output.read_text() == before
    # the same --repeat resumes: the third sample runs, once
    _, again = _one_sample_run(tmp_path, 1, resume=True)
    assert run_execute(generations, output, again).executed == 1
    assert [row["attempts"] for row in read_results(output)] == [["passed"]] * 3


def test_resuming_with_the_same_repeat_runs_the_rest_that_many_times(tmp_path):
    """A run of 3 attempts each, resumed with the same ``--repeat``, gives every row 3 attempts;
    resumed with 2 it is refused."""
    generations, first = _one_sample_run(tmp_path, 3, limit=1)
    output = tmp_path / "out.jsonl"
    run_execute(generations, output, first)
    _, twice = _one_sample_run(tmp_path, 2, resume=True)
    with pytest.raises(WorkbenchError, match="repeat 3 -> 2"):
        run_execute(generations, output, twice)
    _, rest = _one_sample_run(tmp_path, 3, resume=True)
    assert run_execute(generations, output, rest).executed == 2
    assert [row["attempts"] for row in read_results(output)] == [["passed"] * 3] * 3
