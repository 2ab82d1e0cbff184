"""``workbench correlate --results`` refuses to pair the scores of some generations with the
execution results of other generations of the same ids (two models of one dataset): both
``workbench score`` rows and ``workbench execute`` rows record the digest of the code
(``code_sha256``, :attr:`workbench.execute.job.Sample.code_digest`). Real ``workbench score``
(chrF, no LLM) through the Typer app; the results rows are written as execute writes them."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from workbench.cli import app
from workbench.execute.job import Sample

runner = CliRunner()

TASKS = [f"T{t}" for t in range(4)]


def _generations(path, model: str) -> None:
    rows = [{"task_id": t, "sample_id": s, "prompt": f"def f{t}(x):\n",
             "generation": f"    return x + {s} # {model}\n" if s != 2 else None,
             "reference": f"    return x * {t}\n"} for t in TASKS for s in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _results(generations, path) -> None:
    """Execute's rows of ``generations`` (default settings: the problem's prompt, no --stop)."""
    rows = []
    for row in map(json.loads, generations.read_text().splitlines()):
        digest = Sample(row["task_id"], row["sample_id"], row["generation"], None).code_digest
        rows.append({"task_id": row["task_id"], "sample_id": row["sample_id"], "status": "passed",
                     "passed": int((row["sample_id"] + len(row["task_id"])) % 2), "code_sha256": digest})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _score(data, out):
    result = runner.invoke(app, ["score", str(data), "--method", "chrf", "-o", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    return out / "scores_wide.jsonl"


def test_score_rows_record_the_digest_execute_records(tmp_path):
    data = tmp_path / "a.jsonl"
    _generations(data, "a")
    _results(data, tmp_path / "results.jsonl")
    wide = _score(data, tmp_path / "score")
    expected = {(r["task_id"], r["sample_id"]): r["code_sha256"]
                for r in map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines())}
    for name in ("scores.jsonl", "scores_wide.jsonl"):
        rows = [json.loads(line) for line in (tmp_path / "score" / name).read_text().splitlines()]
        assert {(r["task_id"], r["sample_id"]): r["code_sha256"] for r in rows} == expected, name
    same = runner.invoke(app, ["correlate", str(wide), "--results", str(tmp_path / "results.jsonl"),
                               "-m", "chrf", "--resamples", "50"])
    assert same.exit_code == 0, same.output


def _scores_of_b_and_results_of_a(tmp_path):
    """Model B's scored table and model A's execute results: the same ids, other code."""
    model_a, model_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _generations(model_a, "a")
    _generations(model_b, "b")
    results = tmp_path / "results_a.jsonl"
    _results(model_a, results)
    return _score(model_b, tmp_path / "score_b"), results


def test_scores_of_other_generations_are_refused_or_dropped(tmp_path):
    wide_b, results = _scores_of_b_and_results_of_a(tmp_path)
    refused = runner.invoke(app, ["correlate", str(wide_b), "--results", str(results), "-m", "chrf", "--resamples", "50"])
    message = " ".join(refused.stderr.split())
    assert refused.exit_code == 1, refused.output
    # the null generations (sample 2) are the same code in both files: 8 of the 12 rows differ
    assert "8 of the 12 joined rows" in message and "different code" in message, message
    assert "(T0, 0)" in message and "Traceback" not in refused.output
    allowed = runner.invoke(app, ["correlate", str(wide_b), "--results", str(results), "-m", "chrf",
                                  "--resamples", "50", "--allow-partial-join", "--json", str(tmp_path / "r.json")])
    assert allowed.exit_code == 0, allowed.output
    text = " ".join(allowed.output.split())  # Rich wraps long lines
    assert "4 matched; 0 score rows without a result, 0 result rows without scores; 8 left out as other code" in text
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["counts"]["samples"] == 4
    assert report["counts"]["join"]["code_mismatches"] == 8 and report["counts"]["join"]["matched"] == 4
    assert any("8 joined rows record other code" in w for w in report["warnings"]), report["warnings"]


def test_files_without_digests_join_as_before(tmp_path):
    data = tmp_path / "b.jsonl"
    _generations(data, "b")
    wide = _score(data, tmp_path / "score")
    results = tmp_path / "results.jsonl"
    _results(data, results)
    old = [{k: v for k, v in json.loads(line).items() if k != "code_sha256"} for line in results.read_text().splitlines()]
    results.write_text("".join(json.dumps(r) + "\n" for r in old))
    result = runner.invoke(app, ["correlate", str(wide), "--results", str(results), "-m", "chrf", "--resamples", "50"])
    assert result.exit_code == 0, result.output


def test_every_row_of_other_code_is_refused_even_with_allow_partial_join(tmp_path):
    wide_b, results = _scores_of_b_and_results_of_a(tmp_path)
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows if r["sample_id"] != 2))  # only the differing ones
    refused = runner.invoke(app, ["correlate", str(wide_b), "--results", str(results), "-m", "chrf",
                                  "--resamples", "50", "--allow-partial-join"])
    message = " ".join(refused.stderr.split())
    assert refused.exit_code == 1 and "8 of the 8 joined rows" in message, refused.output
    assert "pass the results of the same generations" in message and "--allow-partial-join" not in message


def test_results_run_with_a_prompt_column_are_not_compared(tmp_path):
    """execute --prompt-column hashes the prompt with the completion; score's digest is of the
    completion alone, so the digests of the same generation differ: the summary says so."""
    data = tmp_path / "a.jsonl"
    _generations(data, "a")
    results = tmp_path / "results.jsonl"
    rows = [{"task_id": r["task_id"], "sample_id": r["sample_id"], "passed": r["sample_id"] % 2,
             "code_sha256": Sample(r["task_id"], r["sample_id"], r["generation"], r["prompt"]).code_digest}
            for r in map(json.loads, data.read_text().splitlines())]
    results.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "results.summary.json").write_text(json.dumps({"settings": {"prompt_column": "prompt"}}))
    wide = _score(data, tmp_path / "score")
    result = runner.invoke(app, ["correlate", str(wide), "--results", str(results), "-m", "chrf", "--resamples", "50"])
    assert result.exit_code == 0, result.output


def test_resume_of_a_folder_written_before_the_digest(tmp_path):
    """Rows of an older workbench lack code_sha256: a --resume keeps them as they are, scores
    the rest with it, and correlate joins the mixed table (rows without it on the key alone)."""
    data = tmp_path / "a.jsonl"
    _generations(data, "a")
    out = tmp_path / "score"
    first = runner.invoke(app, ["score", str(data), "--method", "chrf", "-o", str(out), "--no-progress", "--limit", "6"])
    assert first.exit_code == 0, first.output
    for name in ("scores.jsonl", "scores_wide.jsonl"):
        rows = [{k: v for k, v in json.loads(line).items() if k != "code_sha256"}
                for line in (out / name).read_text().splitlines()]
        (out / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    resumed = runner.invoke(app, ["score", str(data), "--method", "chrf", "-o", str(out), "--no-progress", "--resume"])
    assert resumed.exit_code == 0, resumed.output
    rows = [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and sum("code_sha256" in r for r in rows) == 6
    results = tmp_path / "results.jsonl"
    _results(data, results)
    joined = runner.invoke(app, ["correlate", str(out / "scores_wide.jsonl"), "--results", str(results), "-m", "chrf",
                                 "--resamples", "50"])
    assert joined.exit_code == 0, joined.output


def test_score_results_of_other_generations_are_refused_and_of_a_prompt_column_not_compared(tmp_path):
    """``workbench score --results`` carries each verdict into the rows as ``passed``: the verdicts
    on another model's generations of the same ids are refused in correlate's words; results run
    with ``--prompt-column`` (digests over prompt and completion) are not compared, as correlate does."""
    model_a, model_b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    _generations(model_a, "a")
    _generations(model_b, "b")
    results = tmp_path / "results_a.jsonl"
    _results(model_a, results)
    same = runner.invoke(app, ["score", str(model_a), "--method", "chrf", "-o", str(tmp_path / "same"),
                               "--no-progress", "--results", str(results)])
    assert same.exit_code == 0, same.output
    refused = runner.invoke(app, ["score", str(model_b), "--method", "chrf", "-o", str(tmp_path / "other"),
                                  "--no-progress", "--results", str(results)])
    message = " ".join(refused.stderr.split())
    assert refused.exit_code == 1, refused.output
    assert "8 of the 12 joined rows" in message and "different code" in message and "(T0, 0)" in message, message
    assert "pass the results of the same generations" in message and "--allow-partial-join" not in message
    assert "Traceback" not in refused.output and not (tmp_path / "other" / "scores.jsonl").exists()
    (tmp_path / "results_a.summary.json").write_text(json.dumps({"settings": {"prompt_column": "prompt"}}))
    prompted = runner.invoke(app, ["score", str(model_b), "--method", "chrf", "-o", str(tmp_path / "prompted"),
                                   "--no-progress", "--results", str(results)])
    assert prompted.exit_code == 0, prompted.output
