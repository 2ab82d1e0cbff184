"""``workbench score`` exits with a status a CI job can gate on (see :mod:`workbench.failures`).

The LLM is a scripted OpenAI-compatible server on 127.0.0.1 (``fake_openai`` of conftest),
reached through litellm's real HTTP path; it answers 500 where a test says so.
"""

from __future__ import annotations

import json
import re

from typer.testing import CliRunner

from workbench.cli import app


def _args(ice_slice, fake_openai, tmp_path, *more: str) -> list[str]:
    return ["score", str(ice_slice), "--method", "ice-score", "--method", "chrf", "--model", "openai/fake",
            "--api-base", fake_openai.api_base, "--generation-column", "completion_multipl_e", "--output",
            str(tmp_path / "out"), "--cache", "off", "--retries", "0", "--retry-wait", "0.01", "--n-samples", "1",
            "--score-mode", "sampled", "--workers", "1", "--no-progress", *more]


def _failures(tmp_path) -> dict:
    return json.loads((tmp_path / "out" / "run.json").read_text())["failures"]


def test_every_sample_an_llm_error_exits_3_with_the_counts(ice_slice, fake_openai, tmp_path):
    fake_openai.status = 500
    result = CliRunner().invoke(app, _args(ice_slice, fake_openai, tmp_path))
    assert result.exit_code == 3, result.output
    assert "no usable result (ice-score: 4 of 4 rows failed, 0 usable)" in result.output
    failures = _failures(tmp_path)
    assert failures["exit_status"] == 3
    assert failures["counts"]["ice-score"] == {"failed": 4, "usable": 0, "rows": 4}
    assert failures["counts"]["chrf"] == {"failed": 0, "usable": 4, "rows": 4}


def test_failed_rows_say_why_on_the_terminal(ice_slice, fake_openai, tmp_path):
    """A new-user probe: a judge server that answers 500 left only counts on the terminal (`4 of 4
    rows failed`); the reason was in scores.jsonl alone. The summary names the most common error of
    each method with failed rows, and run.json keeps it."""
    fake_openai.status = 500
    result = CliRunner().invoke(app, _args(ice_slice, fake_openai, tmp_path), terminal_width=200)
    assert result.exit_code == 3, result.output
    text = " ".join(result.output.split())
    assert re.search(r"ice-score: 4 failed rows; the most common error \(4 of them, llm_error\): openai/fake: "
                     r"InternalServerError: .*\(1 attempt", text), text
    assert "scores.jsonl has every row's error" in text
    reasons = json.loads((tmp_path / "out" / "run.json").read_text())["failure_reasons"]
    assert reasons["ice-score"]["rows"] == 4 and reasons["ice-score"]["count"] == 4
    assert reasons["ice-score"]["status"] == "llm_error" and "InternalServerError" in reasons["ice-score"]["error"]
    assert "chrf" not in reasons


def _fail_first_task(fake_openai) -> None:
    """The samples of HumanEval/0 (2 of the 4) get a 500; the others are answered."""
    fake_openai.answer = lambda body: "Functional Correctness: 3"
    fake_openai.fail = lambda body: "has_close_elements" in json.dumps(body)


def test_failures_above_max_failures_exit_4(ice_slice, fake_openai, tmp_path):
    _fail_first_task(fake_openai)
    result = CliRunner().invoke(app, _args(ice_slice, fake_openai, tmp_path, "--max-failures", "1"))
    assert result.exit_code == 4, result.output
    assert "too many failures (ice-score: 2 of 4 rows failed, 2 usable; --max-failures 1)" in result.output
    assert _failures(tmp_path)["limit"] == "1"


def test_failures_within_max_failures_exit_0(ice_slice, fake_openai, tmp_path):
    _fail_first_task(fake_openai)
    for limit in ("2", "0.5", "50%"):
        result = CliRunner().invoke(app, _args(ice_slice, fake_openai, tmp_path, "--max-failures", limit, "--overwrite"))
        assert result.exit_code == 0, result.output
        assert _failures(tmp_path)["exit_status"] == 0


def test_a_fraction_above_the_limit_exits_4(ice_slice, fake_openai, tmp_path):
    _fail_first_task(fake_openai)
    result = CliRunner().invoke(app, _args(ice_slice, fake_openai, tmp_path, "--max-failures", "0.25"))
    assert result.exit_code == 4, result.output


def test_the_help_documents_every_exit_status():
    for command in ("score", "execute", "run"):
        text = CliRunner().invoke(app, [command, "--help"], terminal_width=200).output
        assert "Exit status" in text and "3" in text and "4" in text and "130" in text, command


def test_workbench_run_exits_with_the_stage_status_and_a_rerun_gates_alike(ice_slice, fake_openai, tmp_path):
    """A pipeline whose score stage finished with every ice-score row an llm_error: the stage is
    done (its rows are kept, the later stages run), run.json records the verdict, the command
    exits 3; a rerun, where the stage is up to date, exits 3 again."""
    fake_openai.status = 500
    config = tmp_path / "ci.toml"
    config.write_text(f"""
[run]
output = "{tmp_path / 'run'}"
stages = ["score"]
[data]
source = "{ice_slice}"
code_column = "completion_multipl_e"
label_column = "passed"
[score]
method = ["ice-score", "chrf"]
model = "openai/fake"
api_base = "{fake_openai.api_base}"
retries = 0
retry_wait = 0.01
n_samples = 1
score_mode = "sampled"
cache = "off"
""")
    first = CliRunner().invoke(app, ["run", str(config)])
    assert first.exit_code == 3, first.output
    assert "score: exit status 3" in first.output and "ice-score: 4 of 4 rows failed" in first.output
    stage = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["score"]
    assert stage["status"] == "done" and stage["failures"]["exit_status"] == 3
    again = CliRunner().invoke(app, ["run", str(config)])
    assert again.exit_code == 3, again.output
    assert "up-to-date" in again.output


def test_a_resumed_run_is_judged_over_the_whole_folder(ice_slice, fake_openai, tmp_path):
    """An interrupted run left the 2 answered samples of HumanEval/0; the resumed run gets a 500
    for the other 2. The folder holds 2 usable ice-score rows of 4, as an uninterrupted run with
    the same answers would, so it exits 0 (not 3 for "2 of 2 rows failed"); a second resume with
    nothing left reports the same folder and keeps run.json's counts and means."""
    first = CliRunner().invoke(app, _args(ice_slice, fake_openai, tmp_path, "--limit", "2"))
    assert first.exit_code == 0, first.output
    fake_openai.status = 500
    for attempt in range(2):
        resumed = CliRunner().invoke(app, _args(ice_slice, fake_openai, tmp_path, "--resume"))
        assert resumed.exit_code == 0, (attempt, resumed.output)
        report = json.loads((tmp_path / "out" / "run.json").read_text())
        assert report["statuses"]["ice-score"] == {"ok": 2, "llm_error": 2}, attempt
        assert report["statuses"]["chrf"] == {"ok": 4}, attempt
        assert report["mean_scores"]["ice-score"] == 3.0 and report["mean_scores"]["chrf"] is not None
        assert report["failures"]["counts"]["ice-score"] == {"failed": 2, "usable": 2, "rows": 4}
        assert report["rows_written"] == (4 if attempt == 0 else 0)
        assert report["resumed_rows"] == (4 if attempt == 0 else 8)
        assert re.search(r"ice-score\s*│\s*4\s*│\s*2\s*│\s*2\s*│", resumed.output), resumed.output


def test_failure_reasons_group_errors_that_differ_only_in_timing_or_the_quoted_answer():
    """A real small model's ICE-Score parse errors each quote another answer: the summary said
    'the most common error (1 of them)' for 8 failed rows."""
    from workbench.score.job import failure_reasons

    rows = [{"method": "ice-score", "status": "parse_error",
             "error": f"ice-score: no score 0-4 in the answer after one repair turn: 'answer {i}'"} for i in range(3)]
    rows += [{"method": "p-correct", "status": "llm_error", "error": f"openai/x: Timeout ({n} attempts, {n}.5 s in all)"}
             for n in (1, 3)]
    rows += [{"method": "p-correct", "status": "ok", "error": None}]
    reasons = failure_reasons(rows)
    assert reasons["ice-score"] == {"rows": 3, "status": "parse_error", "count": 3,
                                    "error": "ice-score: no score 0-4 in the answer after one repair turn: 'answer 0'"}
    assert reasons["p-correct"]["count"] == 2 and reasons["p-correct"]["rows"] == 2


def test_parse_errors_point_to_cache_refresh_unless_the_cache_is_off(ice_slice, fake_openai, tmp_path):
    """A parse error is a cached answer: --retry-failed alone replays it (a probe found 40 cache hits
    and the same parse errors after fixing the server). The hint says so where a cache was used."""
    fake_openai.answer = lambda body: "I think it is fine."
    args = [a if a != "off" else "rw" for a in _args(ice_slice, fake_openai, tmp_path)]
    args += ["--cache-dir", str(tmp_path / "cache")]
    result = CliRunner().invoke(app, args, terminal_width=200)
    text = " ".join(result.output.split())
    assert result.exit_code == 3 and "(4 of them, parse_error)" in text, text
    assert "add --cache refresh to ask again" in text
    result = CliRunner().invoke(app, [*_args(ice_slice, fake_openai, tmp_path), "--overwrite"], terminal_width=200)
    text = " ".join(result.output.split())
    assert "(4 of them, parse_error)" in text and "--cache refresh" not in text, text
