"""What a rerun of ``workbench run`` plans on a run folder that holds finished stages (probe 30):
a stage left out of ``[run] stages`` but finished and up to date is an input like any other.
Real sandboxed execution, real chrF, correlation, dedup and bias on a slice of the bundled
ICE-Score set (no LLM)."""

from __future__ import annotations

import hashlib
import html
import json
import re
import shutil
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ice_score_slice import write_config, write_generations
from workbench.cli import app
from workbench.run import load_config, run_pipeline
from workbench.run.preflight import run_preflight
from workbench.run.runner import preview



def _write_config(tmp_path: Path, data: Path, stages: list[str], extra: str = "") -> Path:
    return write_config(tmp_path / "c.toml", tmp_path / "run", data, stages, f"""[execute]
workers = 2
[score]
method = ["chrf"]
[correlate]
metric = ["codebleu"]
resamples = 100
[bias]
resamples = 100
{extra}""")


def _outcomes(result) -> dict[str, tuple[str, str | None]]:
    return {o.name: (o.status, o.detail) for o in result.outcomes}


FULL = ["dedup", "execute", "score_all", "correlate_all", "bias", "report"]


def test_run_stages_on_a_finished_folder_read_the_finished_stages(tmp_path: Path) -> None:
    """probe30 F1: ``stages = ["correlate_all", "report"]`` on a finished run correlated the
    dataset's shipped ``passed`` column (not execute/results.jsonl), dropped chrF (score_all was
    finished) and bias was "skipped: the dedup stage does not run"; the report still named
    execute/results.jsonl as the label. ``--stage correlate_all`` did it right."""
    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl"), FULL)
    run = tmp_path / "run"
    run_pipeline(load_config(config_path))
    subset = ['run.stages=["correlate_all", "bias", "report"]']

    config = load_config(config_path, overrides=subset)
    preflight = run_preflight(config)
    plans = {plan.name: plan for plan in preflight.plans}
    argv = plans["correlate_all"].argv
    assert argv[0] == str(run / "score" / "all" / "scores_wide.jsonl")
    assert argv[argv.index("--results") + 1] == str(run / "execute" / "results.jsonl") and "--label" not in argv
    assert "chrf" in argv and plans["bias"].skip_reason is None
    assert preflight.available == {"dedup", "execute", "score_all"}
    # the same plan, hence the same key, as in the full run: nothing to do
    assert dict((plan.name, action) for plan, action in preview(config, preflight))["correlate_all"] == "up-to-date"

    again = run_pipeline(load_config(config_path, overrides=[*subset, "correlate.resamples=150"]))
    outcomes = _outcomes(again)
    assert outcomes["correlate_all"][0] == "ran" and outcomes["bias"][0] == "up-to-date"
    assert outcomes["execute"] == ("skipped", "not in [run] stages (finished and up to date: the stages after it "
                                              "read its outputs)")
    correlation = json.loads((run / "correlate" / "all.json").read_text())
    assert set(correlation["metrics"]) == {"chrf", "codebleu"} and "execute/results.jsonl" in correlation["source"]
    stages = json.loads((run / "run.json").read_text())["stages"]
    assert stages["execute"]["status"] == "done" and stages["dedup"]["status"] == "done"
    report = json.loads((run / "report.json").read_text())
    assert report["counts"]["label_source"] == "our execution results, execute/results.jsonl"

    # an execute stage that is out of date (another timeout factor) is no input: the label is the
    # dataset's, and the report says so although execute/results.jsonl is in the folder
    stale = run_pipeline(load_config(config_path, overrides=[*subset, "execute.timeout_factor=6"]))
    assert _outcomes(stale)["execute"] == ("skipped", "not in [run] stages")
    argv = json.loads((run / "run.json").read_text())["stages"]["correlate_all"]["argv"]
    assert "--results" not in argv and argv[argv.index("--label") + 1] == "passed" and "chrf" in argv
    report = json.loads((run / "report.json").read_text())
    assert report["counts"]["label_source"] == ("the dataset's shipped 'passed' column, the correlate stages did "
                                                "not read the execution results")
    assert "execution label (from the dataset's shipped 'passed' column" in html.unescape((run / "report.html").read_text())


def test_a_score_stage_without_a_passed_column_stratifies_on_the_finished_execution(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """probe30 F1, same cause: ``stages = ["score", ...]`` on generations without a ``passed`` column
    failed with "column 'passed' not found" although the folder held finished execution results."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1, drop=("passed",))
    config_path = _write_config(tmp_path, data, ["execute"])
    config_path.write_text(config_path.read_text().replace('label_column = "passed"\n', "").replace(
        'method = ["chrf"]', 'method = ["p-correct", "chrf"]\nmodel = "openai/judge"\nlimit = 2\nselect = "stratified"'))
    run_pipeline(load_config(config_path))
    preflight = run_preflight(load_config(config_path, overrides=['run.stages=["score", "correlate", "report"]']))
    plans = {plan.name: plan for plan in preflight.plans}
    assert plans["score"].argv[plans["score"].argv.index("--results") + 1] == str(
        tmp_path / "run" / "execute" / "results.jsonl")
    assert "--results" in plans["correlate"].argv


def _statuses(result) -> dict[str, str]:
    return {o.name: o.status for o in result.outcomes}


def test_the_same_run_folder_named_otherwise_moved_or_copied_keeps_its_stages(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """probe30 F2: the stage keys hashed the run folder's absolute paths, so ``-o runs/x`` after
    ``-o /abs/runs/x``, or the folder after ``cp -a`` / ``mv``, planned every stage from scratch (all
    3,220 samples executed again). The paths in the run folder now count relative to it."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    stages = ["dedup", "execute", "score_all", "correlate_all", "bias", "report"]
    config_path = _write_config(tmp_path, data, stages)
    first = run_pipeline(load_config(config_path))
    assert {_statuses(first)[name] for name in stages} == {"ran"} and not first.notes
    done = {name: "up-to-date" for name in stages if name != "report"} | {"report": "ran"}

    monkeypatch.chdir(tmp_path)  # the same folder, relative
    assert _statuses(run_pipeline(load_config(config_path, overrides=['run.output="run"']))).items() >= done.items()
    shutil.copytree(tmp_path / "run", tmp_path / "copy", symlinks=True)  # cp -a: times kept
    copied = run_pipeline(load_config(config_path, overrides=['run.output="copy"']))
    assert _statuses(copied).items() >= done.items()
    (tmp_path / "copy").rename(tmp_path / "moved")  # mv
    moved = run_pipeline(load_config(config_path, overrides=[f'run.output="{tmp_path / "moved"}"']))
    assert _statuses(moved).items() >= done.items() and not moved.notes
    # the command line recorded is the one that ran, naming the folder as it was named then
    record = json.loads((tmp_path / "moved" / "run.json").read_text())["stages"]["correlate_all"]
    assert record["command"].startswith(f"workbench correlate {tmp_path / 'run'}/score/all/scores_wide.jsonl")
    # a stage whose options changed still runs again, in the moved folder
    changed = run_pipeline(load_config(config_path, overrides=[f'run.output="{tmp_path / "moved"}"',
                                                               "correlate.resamples=150"]))
    assert _statuses(changed)["correlate_all"] == "ran" and _statuses(changed)["execute"] == "up-to-date"


def _strings(value, where: str = ""):
    """Every text of a JSON value, with where it is (``.stages.bias.argv[0]``)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{where}[{index}]")
    elif isinstance(value, str):
        yield where, value


def test_the_outputs_of_a_moved_run_folder_name_its_paths_relative_to_it(tmp_path: Path) -> None:
    """cli37: after ``mv`` of a run folder, its up-to-date stages' outputs still named the old
    location: correlate's ``source``, bias's ``dedup_output`` and ``metrics_source``, execute's
    summary ``output``, score's ``run.json`` ``paths`` (and the report, which copies them). A path
    inside the run folder is written relative to it now (``<run folder>/...``), as the records that
    a resume compares are; only the command lines that ran name the folder as it was named then.
    Real dedup (in-set and against HumanEval), execution, chrF, correlation and bias (no LLM)."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    stages = ["decontaminate", *FULL]
    config_path = _write_config(tmp_path, data, stages, '[decontaminate]\nagainst = "humaneval"\n')
    first = run_pipeline(load_config(config_path))
    assert {_statuses(first)[name] for name in stages} == {"ran"}, _outcomes(first)
    run, moved = tmp_path / "run", tmp_path / "moved"
    correlation = json.loads((run / "correlate" / "all.json").read_text())
    assert correlation["source"] == ("<run folder>/score/all/scores_wide.jsonl + the execute stage's results "
                                     "<run folder>/execute/results.jsonl")
    bias = json.loads((run / "bias" / "report.json").read_text())
    assert (bias["dedup_output"], bias["metrics_source"]) == ("<run folder>/dedup",
                                                              "<run folder>/score/all/scores_wide.jsonl")
    assert json.loads((run / "execute" / "results.summary.json").read_text())["output"] == \
        "<run folder>/execute/results.jsonl"
    assert json.loads((run / "score" / "all" / "run.json").read_text())["paths"]["scores_wide"] == \
        "<run folder>/score/all/scores_wide.jsonl"
    # outside the run folder: as given
    assert json.loads((run / "report.json").read_text())["dataset"]["source"] == str(data)

    shutil.move(run, moved)
    again = run_pipeline(load_config(config_path, overrides=_in(moved)))
    assert {_statuses(again)[name] for name in stages if name != "report"} == {"up-to-date"}, _outcomes(again)
    old = str(run)
    named_old = {}
    for path in sorted(moved.rglob("*.json")):
        for where, text in _strings(json.loads(path.read_text())):
            # the command line that ran (run.json's argv and command, the report's copy of them)
            ran = path.name in ("run.json", "report.json") and path.parent == moved and (
                where.endswith(".command") or re.search(r"\.argv\[\d+\]$", where))
            if (text == old or f"{old}/" in text) and not ran:
                named_old[f"{path.relative_to(moved)}:{where}"] = text
    assert not named_old, named_old
    html_text = html.unescape((moved / "report.html").read_text())
    commands = json.loads((moved / "report.json").read_text())["stages"]
    assert html_text.count(f"{old}/") == sum(stage["command"].count(f"{old}/") for stage in commands
                                             if stage.get("command"))


def test_dedup_outputs_name_a_data_source_inside_the_moved_run_folder_relative_to_it(tmp_path: Path) -> None:
    """leftovers37: with ``[data] source`` kept inside the run folder, dedup's and decontaminate's
    ``report.json`` and ``manifest.json`` recorded ``source`` as its absolute path, which after ``mv`` named
    the old location; now ``<run folder>/gens.jsonl``. The moved folder's stages stay up to date, and a
    manifest of the older form (an absolute ``source``) is still taken as an earlier dedup run's record:
    its outputs are replaced, not refused. Real dedup (in-set and against HumanEval), no LLM."""
    run, moved = tmp_path / "run", tmp_path / "moved"
    run.mkdir()
    data = write_generations(run / "gens.jsonl", per_outcome=1)
    stages = ["decontaminate", "dedup"]
    config_path = _write_config(tmp_path, data, stages, '[decontaminate]\nagainst = "humaneval"\n')
    first = run_pipeline(load_config(config_path))
    assert {_statuses(first)[name] for name in stages} == {"ran"}, _outcomes(first)
    for stage in stages:
        assert json.loads((run / stage / "report.json").read_text())["source"] == "<run folder>/gens.jsonl"
        assert json.loads((run / stage / "manifest.json").read_text())["source"] == "<run folder>/gens.jsonl"

    shutil.move(run, moved)
    here = _in(moved, [f'data.source="{moved / "gens.jsonl"}"'])
    again = run_pipeline(load_config(config_path, overrides=here))
    assert {_statuses(again)[name] for name in stages} == {"up-to-date"}, _outcomes(again)
    named_old = {f"{path.relative_to(moved)}:{where}": text for path in sorted(moved.rglob("*.json"))
                 if path.name != "run.json"  # its command lines name the folder as it was named when they ran
                 for where, text in _strings(json.loads(path.read_text())) if str(run) in text}
    assert not named_old, named_old

    # a manifest as an earlier version wrote it: the source as an absolute path (of the folder before the move)
    manifest = moved / "dedup" / "manifest.json"
    older = {**json.loads(manifest.read_text()), "source": str(run / "gens.jsonl")}
    manifest.write_text(json.dumps(older))
    changed = run_pipeline(load_config(config_path, overrides=[*here, "dedup.min_tokens=6"]))
    assert _statuses(changed)["dedup"] == "ran", _outcomes(changed)
    assert json.loads(manifest.read_text())["source"] == "<run folder>/gens.jsonl"
    assert json.loads((moved / "dedup" / "report.json").read_text())["parameters"]["min_tokens"] == 6


def _old_key(argv: list[str], after: dict[str, str | None], command: str | None, data: str | None) -> str:
    """The stage key as workbench wrote it before run folder paths counted relative to it (main
    at 5cf8845): the argv as spelled, without execute's and dedup's neutral options."""
    fields = {"command": command, "argv": argv, "after": after}
    if data is not None and command is not None:
        fields["data"] = data
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]


def test_a_run_json_of_the_earlier_key_format_stays_up_to_date_and_is_rekeyed_once(tmp_path: Path) -> None:
    """A run.json written before the keys named the run folder relatively: its stages are up to date
    where the folder is, and in a copy (the keys are read with the folder as the run.json spelled it),
    nothing runs again; their keys are recorded anew once, with a note."""
    from workbench.run.manifest import data_fingerprint

    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    stages = ["dedup", "execute", "score_all", "correlate_all", "report"]
    config_path = _write_config(tmp_path, data, stages)
    first = run_pipeline(load_config(config_path))
    manifest_path = tmp_path / "run" / "run.json"
    manifest = json.loads(manifest_path.read_text())
    new_keys = {name: stage.get("key") for name, stage in manifest["stages"].items()}
    old: dict[str, str] = {}
    for plan in first.preflight.plans:
        argv = list(plan.argv)
        if plan.name == "execute":  # [execute] workers = 2: left out of the key then too
            del argv[argv.index("--workers"):argv.index("--workers") + 2]
        old[plan.name] = _old_key(argv, {a: old.get(a) for a in plan.after}, plan.command, data_fingerprint(str(data)))
        if manifest["stages"][plan.name].get("key"):
            manifest["stages"][plan.name]["key"] = old[plan.name]
    assert old["execute"] != new_keys["execute"]
    manifest_path.write_text(json.dumps(manifest))
    shutil.copytree(tmp_path / "run", tmp_path / "copy")  # cp -a of the old folder

    for folder in ("copy", "run"):
        # the copy with --offline too: left out of the keys now, it was in the dedup and score keys then
        overrides = [f'run.output="{tmp_path / folder}"', "run.offline=true"] if folder == "copy" else []
        upgraded = run_pipeline(load_config(config_path, overrides=overrides))
        assert {name: status for name, status in _statuses(upgraded).items() if name in stages} == {
            "dedup": "up-to-date", "execute": "up-to-date", "score_all": "up-to-date", "correlate_all": "up-to-date",
            "report": "ran"}, folder
        assert len(upgraded.notes) == 1 and "recorded anew for dedup, execute, score_all, correlate_all" in \
            upgraded.notes[0]
        recorded = json.loads((tmp_path / folder / "run.json").read_text())["stages"]
        assert {name: recorded[name]["key"] for name in ("dedup", "execute", "score_all", "correlate_all")} == {
            name: new_keys[name] for name in ("dedup", "execute", "score_all", "correlate_all")}
        assert not run_pipeline(load_config(config_path, overrides=overrides)).notes  # once


class _Judge:
    """An OpenAI-compatible judge on 127.0.0.1, reached through litellm's real HTTP path: it
    answers a score from 1 to 4 (by the request's content, so the scores vary), or ``answer``
    where set (text no method parses), or 500 while ``down`` (a server outage)."""

    def __init__(self) -> None:
        self.down = False
        self.answer: str | None = None
        #: request body -> True where this request answers 500
        self.fail = lambda body: False
        self.requests = 0
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep the test output clean
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                judge.requests += 1
                if judge.down or judge.fail(body):
                    payload, status = {"error": {"message": "server down", "type": "server_error"}}, 500
                else:
                    text = judge.answer or str(1 + hashlib.sha256(body).digest()[0] % 4)
                    payload, status = {
                        "id": "fake", "object": "chat.completion", "created": 0, "model": "judge",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12}}, 200
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def judge(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    server = _Judge()
    yield server
    server.server.shutdown()
    server.server.server_close()


def _judged_config(tmp_path: Path, judge: _Judge, stages: list[str], extra: str = "") -> Path:
    """chrF on every row and ICE-Score (the fake judge) on 4 of 6 real ICE-Score rows."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    path = _write_config(tmp_path, data, stages)
    path.write_text(path.read_text().replace('method = ["chrf"]', f'''method = ["ice-score", "chrf"]
model = "openai/judge"
api_base = "{judge.api_base}"
limit = 4
n_samples = 1
score_mode = "sampled"
cache_dir = "{tmp_path / 'llm-cache'}"
retries = 0
retry_wait = 0.01
{extra}'''))
    return path


def _judged_on_four(tmp_path: Path, judge: _Judge, data: Path, stages: list[str], select: str) -> Path:
    """chrF on every row of ``data`` and ICE-Score (the fake judge, no LLM cache) on the 4 rows ``[score] select``
    picks."""
    path = _write_config(tmp_path, data, stages)
    path.write_text(path.read_text().replace('method = ["chrf"]', f'''method = ["ice-score", "chrf"]
model = "openai/judge"
api_base = "{judge.api_base}"
limit = 4
select = "{select}"
n_samples = 1
score_mode = "sampled"
cache = "off"'''))
    return path


def test_options_that_cannot_change_outputs_rerun_nothing_and_keep_the_llm_cost(tmp_path: Path, judge: _Judge) -> None:
    """probe30 F6: ``--offline``, ``[score] workers``, ``max_failures``, ``timeout``, ``retries`` re-keyed
    stages and ran them again from scratch; the cached rerun then replaced the report's LLM cost of
    the scoring (p-correct LLM seconds 774.5 -> 38.1)."""
    stages = ["dedup", "score", "score_all", "correlate", "correlate_all", "bias", "report"]
    config_path = _judged_config(tmp_path, judge, stages)
    first = run_pipeline(load_config(config_path))
    assert {_statuses(first)[name] for name in stages} == {"ran"}, _outcomes(first)
    llm_run = tmp_path / "run" / "score" / "llm" / "run.json"
    recorded = llm_run.read_text()
    calls = judge.requests
    assert json.loads(recorded)["usage"]["calls"] == calls > 0

    neutral = ["run.offline=true", "score.workers=2", "score.max_failures=3", "score.timeout=300.0",
               "score.retries=5", "score.retry_wait=2.0"]
    again = run_pipeline(load_config(config_path, overrides=neutral))
    assert {_statuses(again)[name] for name in stages if name != "report"} == {"up-to-date"}, _outcomes(again)
    assert llm_run.read_text() == recorded and judge.requests == calls
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["scoring"]["subset"]["run"]["usage"]["calls"] == calls
    # what changes a successful answer still runs the stage again
    changed = run_pipeline(load_config(config_path, overrides=["score.temperature=0.5"]))
    assert _statuses(changed)["score"] == "ran" and _statuses(changed)["score_all"] == "up-to-date"


def test_another_failure_budget_judges_an_up_to_date_stage_again(tmp_path: Path, judge: _Judge) -> None:
    """[score] max_failures is left out of the key: an up-to-date stage is judged by the budget in
    force, without running again (2 of 4 ICE-Score rows fail: exit 4 with max_failures = 0, 0 with 5)."""
    config_path = _judged_config(tmp_path, judge, ["score", "report"])
    judge.fail = lambda body: b"has_close_elements" in body  # HumanEval/0: 2 of the 4 samples
    first = run_pipeline(load_config(config_path, overrides=["score.max_failures=0"]))
    assert _statuses(first)["score"] == "ran" and first.exit_status == 4
    calls = judge.requests
    wider = run_pipeline(load_config(config_path, overrides=["score.max_failures=5"]))
    assert _statuses(wider)["score"] == "up-to-date" and wider.exit_status == 0 and judge.requests == calls
    stage = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["score"]
    assert stage["failures"]["exit_status"] == 0 and stage["failures"]["limit"] == "5"
    assert stage["failures"]["counts"]["ice-score"] == {"failed": 2, "usable": 2, "rows": 4}
    narrow = run_pipeline(load_config(config_path, overrides=["score.max_failures=1"]))
    assert _statuses(narrow)["score"] == "up-to-date" and narrow.exit_status == 4
    assert "too many failures (ice-score: 2 of 4 rows failed, 2 usable; [score] max_failures 1)" in {  # the key, not the flag
        o.name: o.detail for o in narrow.outcomes}["score"]


def test_another_correlate_metric_rescores_nothing(tmp_path: Path, judge: _Judge) -> None:
    """probe30 F6: ``[correlate] metric`` reran the score stages from scratch: they carry the shipped
    metric columns into their tables for the correlate stages. The judge's rows are kept now (no LLM
    call, the LLM cost unchanged) and take the new column; the stages that correlate run again."""
    stages = ["score", "score_all", "correlate", "correlate_all", "report"]
    config_path = _judged_config(tmp_path, judge, stages)
    run_pipeline(load_config(config_path))
    llm = tmp_path / "run" / "score" / "llm"
    before = [json.loads(line) for line in (llm / "scores.jsonl").read_text().splitlines()]
    calls = judge.requests

    more = run_pipeline(load_config(config_path, overrides=['correlate.metric=["codebleu", "gpt35_nswr"]']))
    outcomes = _outcomes(more)
    assert outcomes["score"][0] == "resumed" and outcomes["score_all"][0] == "resumed", outcomes
    assert "[score] carry changed since it finished" in outcomes["score"][1]
    assert outcomes["correlate"][0] == "ran" and outcomes["correlate_all"][0] == "ran"
    assert judge.requests == calls
    after = [json.loads(line) for line in (llm / "scores.jsonl").read_text().splitlines()]
    assert [{k: v for k, v in row.items() if k != "gpt35_nswr"} for row in after] == before
    assert all("gpt35_nswr" in row for row in after)
    for scope in ("subset", "all"):
        metrics = json.loads((tmp_path / "run" / "correlate" / f"{scope}.json").read_text())["metrics"]
        assert "gpt35_nswr" in metrics, scope
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["scoring"]["subset"]["methods"]["ice-score"]["llm_calls"] == calls
    # and then nothing is left to do
    same = run_pipeline(load_config(config_path, overrides=['correlate.metric=["codebleu", "gpt35_nswr"]']))
    assert {_statuses(same)[name] for name in stages if name != "report"} == {"up-to-date"}


def test_a_rerun_can_score_the_rows_a_judge_outage_failed(tmp_path: Path, judge: _Judge) -> None:
    """probe30 F3: after a judge-server outage (every LLM row llm_error, exit 3) no rerun retried the
    rows: the plain rerun called score up to date, ``--stage score`` resumed 0 rows and
    ``--set score.retry_failed=true`` was refused as set by the pipeline; only --force helped. A plain
    rerun still gates on the recorded verdict (and says how to retry); ``--retry-failed`` (``[run]
    retry_failed``), ``--stage score`` or another call timeout/retries score the failed rows again,
    keeping the finished ones."""
    stages = ["score", "correlate", "report"]
    config_path = _judged_config(tmp_path, judge, stages)
    judge.down = True
    first = run_pipeline(load_config(config_path))
    assert first.exit_status == 3 and _statuses(first)["score"] == "ran"
    scores = tmp_path / "run" / "score" / "llm" / "scores.jsonl"
    chrf_rows = [line for line in scores.read_text().splitlines() if '"method": "chrf"' in line]
    judge.down = False  # the server is back

    plain = run_pipeline(load_config(config_path))
    detail = _outcomes(plain)["score"][1]
    assert _statuses(plain)["score"] == "up-to-date" and plain.exit_status == 3
    assert "4 rows failed (an LLM error, an unreadable answer, ...): rerun with --retry-failed (or --stage score) " \
           "to score them again, keeping the finished rows" in detail
    dry = CliRunner().invoke(app, ["run", str(config_path), "--dry-run", "--retry-failed"])
    assert dry.exit_code == 0 and "score: would resume:" in dry.output, dry.output
    refused = CliRunner().invoke(app, ["run", str(config_path), "--dry-run", "--set", "score.retry_failed=true"])
    assert refused.exit_code == 1 and "rerun with --retry-failed ([run] retry_failed = true) or --stage score" in \
        " ".join(refused.output.split()), refused.output

    retried = run_pipeline(load_config(config_path, overrides=["run.retry_failed=true"]))
    assert retried.exit_status == 0, _outcomes(retried)
    assert _outcomes(retried)["score"] == ("resumed", "scored the 4 rows that had failed again, keeping the finished rows")
    assert _statuses(retried)["correlate"] == "ran"
    rows = [json.loads(line) for line in scores.read_text().splitlines()]
    assert {row["status"] for row in rows if row["method"] == "ice-score"} == {"ok"} and len(rows) == 8
    assert [line for line in scores.read_text().splitlines() if '"method": "chrf"' in line] == chrf_rows
    stage = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["score"]
    assert stage["argv"][-2:] == ["--resume", "--retry-failed"] and stage["failures"]["exit_status"] == 0
    # nothing failed any more: up to date, even with retry_failed
    again = run_pipeline(load_config(config_path, overrides=["run.retry_failed=true"]))
    assert _statuses(again)["score"] == "up-to-date" and again.exit_status == 0


@pytest.mark.parametrize("how", ["stage", "timeout"])
def test_stage_or_another_call_timeout_scores_the_failed_rows_again(tmp_path: Path, judge: _Judge, how: str) -> None:
    config_path = _judged_config(tmp_path, judge, ["score", "report"])
    judge.down = True
    assert run_pipeline(load_config(config_path)).exit_status == 3
    judge.down = False
    if how == "stage":
        retried = run_pipeline(load_config(config_path), only=["score"])
    else:
        retried = run_pipeline(load_config(config_path, overrides=["score.timeout=30.0"]))
    assert _statuses(retried)["score"] == "resumed" and retried.exit_status == 0, _outcomes(retried)
    statuses = json.loads((tmp_path / "run" / "score" / "llm" / "run.json").read_text())["statuses"]
    assert statuses["ice-score"] == {"ok": 4}


def test_an_execute_stage_whose_results_were_edited_runs_again_from_scratch(tmp_path: Path) -> None:
    """probe30 F7: a hand-edited execute/results.jsonl was seen ("its files changed since it
    finished") but the stage then resumed with 0 samples and kept the edit (failed samples turned
    passed stayed passed). Edited rows now make the stage run again from scratch; a deleted summary
    (the rows untouched) still only resumes."""
    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl", per_outcome=1), ["execute", "report"])
    run_pipeline(load_config(config_path))
    results = tmp_path / "run" / "execute" / "results.jsonl"
    honest = [json.loads(line) for line in results.read_text().splitlines()]
    assert {row["passed"] for row in honest} == {0, 1}
    forged = [{**row, "passed": 1, "status": "passed"} for row in honest]
    results.write_text("".join(json.dumps(row) + "\n" for row in forged))

    again = run_pipeline(load_config(config_path))
    assert _outcomes(again)["execute"] == ("ran", "its files changed since it finished (execute/results.jsonl changed): "
                                                  "ran again from scratch, as its rows were edited")
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == len(honest) and sorted((r["task_id"], r["sample_id"], r["passed"]) for r in rows) == sorted(
        (r["task_id"], r["sample_id"], r["passed"]) for r in honest)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["execution"]["statuses"] == dict(Counter(row["status"] for row in honest))

    (tmp_path / "run" / "execute" / "results.summary.json").unlink()
    resumed = run_pipeline(load_config(config_path))
    assert _outcomes(resumed)["execute"] == (
        "resumed", "its files changed since it finished (execute/results.summary.json missing): resumed")
    assert [json.loads(line) for line in results.read_text().splitlines()] == rows  # kept, not run again


@pytest.mark.parametrize("select", ["first", "stratified"])
def test_another_score_limit_scores_only_the_new_rows(tmp_path: Path, judge: _Judge, select: str) -> None:
    """fix31 item 1: another ``[score] limit`` (``--limit``) ran the score stage again from scratch.
    Both selections are prefix-stable (the stratified order is drawn over every row, then cut), so
    the stage resumes: a larger limit scores only the new samples, a smaller one keeps the finished
    subset, and the tables, correlate and the report hold exactly the selected rows; the rows left
    out are set aside, so raising the limit again asks the judge nothing."""
    stages = ["score", "correlate", "report"]
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=2)  # 12 rows
    config_path = _judged_on_four(tmp_path, judge, data, stages, select)
    llm = tmp_path / "run" / "score" / "llm"

    def rows() -> dict[tuple, dict]:
        return {(r["task_id"], r["sample_id"], r["method"]): r
                for r in map(json.loads, (llm / "scores.jsonl").read_text().splitlines())}

    def tables(limit: int) -> None:
        judged = {key[:2] for key in rows() if key[2] == "ice-score"}
        wide = {(r["task_id"], r["sample_id"]) for r in map(json.loads, (llm / "scores_wide.jsonl").read_text().splitlines())}
        assert len(judged) == limit and wide == judged
        report = json.loads((tmp_path / "run" / "report.json").read_text())
        assert report["scoring"]["subset"]["methods"]["ice-score"]["rows"] == limit
        assert json.loads((llm / "run.json").read_text())["statuses"]["ice-score"] == {"ok": limit}

    first = run_pipeline(load_config(config_path))
    assert {_statuses(first)[name] for name in stages} == {"ran"}, _outcomes(first)
    per_sample = judge.requests / 4
    scored = rows()
    tables(4)

    dry = CliRunner().invoke(app, ["run", str(config_path), "--dry-run", "--limit", "8"])
    assert dry.exit_code == 0 and "score: would resume" in dry.output, dry.output
    calls = judge.requests
    raised = run_pipeline(load_config(config_path, overrides=["score.limit=8"]))
    outcomes = _outcomes(raised)
    assert outcomes["score"][0] == "resumed" and "[score] limit changed since it finished (4 -> 8)" in outcomes["score"][1]
    assert outcomes["correlate"][0] == "ran"
    # the note says what the resume did (2 methods): it once said "scoring only the new ones" for any limit
    assert outcomes["score"][1].endswith("resumed: kept 8 finished rows, scored 8 new rows"), outcomes["score"][1]
    assert judge.requests - calls == 4 * per_sample  # the 4 new samples only
    assert {key: row for key, row in rows().items() if key in scored} == scored  # the finished rows, as they were
    tables(8)
    wider = rows()

    calls = judge.requests
    lowered = run_pipeline(load_config(config_path, overrides=["score.limit=5"]))
    assert _statuses(lowered)["score"] == "resumed" and _statuses(lowered)["correlate"] == "ran"
    assert _outcomes(lowered)["score"][1].endswith(  # nothing is new: the note must not say it scored new ones
        "resumed: kept 10 finished rows, scored no new row; set aside the 6 rows of the samples no longer "
        "selected in scores.unselected.jsonl (a resume that selects them again takes them back)"), _outcomes(lowered)["score"][1]
    assert judge.requests == calls
    tables(5)
    assert all(wider[key] == row for key, row in rows().items())  # a subset of the finished rows
    if select == "first":
        assert set(scored) <= set(rows())  # the first 4 are among the first 5

    # fix33: the rows an earlier resume set aside that stay there are not "the" rows this run moved
    lower = run_pipeline(load_config(config_path, overrides=["score.limit=4"]))
    assert _outcomes(lower)["score"][1].endswith(
        "resumed: kept 8 finished rows, scored no new row; set aside 2 rows of the samples no longer selected "
        "in scores.unselected.jsonl, beside the 6 an earlier resume put there (a resume that selects them "
        "again takes them back)"), _outcomes(lower)["score"][1]
    back = run_pipeline(load_config(config_path, overrides=["score.limit=5"]))
    assert _outcomes(back)["score"][1].endswith(  # 1 sample comes back, the others stay: nothing moved now
        "resumed: kept 10 finished rows, scored no new row; 6 rows of the samples not selected stay set aside "
        "in scores.unselected.jsonl, where an earlier resume put them (a resume that selects them again "
        "takes them back)"), _outcomes(back)["score"][1]
    assert judge.requests == calls
    tables(5)

    again = run_pipeline(load_config(config_path, overrides=["score.limit=8"]))
    assert _statuses(again)["score"] == "resumed" and judge.requests == calls  # the rows set aside come back
    assert _outcomes(again)["score"][1].endswith("resumed: kept 16 finished rows, scored no new row")
    assert rows() == wider
    tables(8)
    same = run_pipeline(load_config(config_path, overrides=["score.limit=8"]))
    assert {_statuses(same)[name] for name in stages if name != "report"} == {"up-to-date"}


def test_the_score_note_on_rows_set_aside_names_the_config_keys(tmp_path: Path, judge: _Judge) -> None:
    """A lowered ``[score] limit`` set rows aside; the score stage's note said "(a smaller --limit or
    --method-limit)" and "a --resume that selects them again"."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    config_path = _judged_on_four(tmp_path, judge, data, ["score"], "first")
    reports = []

    def keep(plan, call):
        reports.append(call())
        return reports[-1]

    run_pipeline(load_config(config_path), run_stage=keep)
    run_pipeline(load_config(config_path, overrides=["score.limit=2"]), run_stage=keep)
    note = next(n for n in reports[-1].notes if "set aside" in n)
    assert note == ("4 finished rows of samples this run does not select (a smaller [score] limit or [score] "
                    "method_limit) are set aside in scores.unselected.jsonl, out of the tables; a resume that "
                    "selects them again takes them back without scoring"), note


def test_the_execute_stage_reads_only_the_data_split(tmp_path: Path) -> None:
    """fix31 item 6: ``[data] split`` ("only this split", docs/run.md) reached dedup and score, and the
    preflight checked only that split, but execute read every split: the other split's rows were
    executed (and a task id of theirs that the problems lack failed the stage, past the preflight)."""
    folder = tmp_path / "gens"
    folder.mkdir()
    rows = [json.loads(line) for line in write_generations(tmp_path / "all.jsonl", per_outcome=1).read_text().splitlines()]
    test = [row for row in rows if row["task_id"] != "HumanEval/12"]
    (folder / "test.jsonl").write_text("".join(json.dumps(row) + "\n" for row in test))
    (folder / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows if row not in test))
    config_path = _write_config(tmp_path, folder, ["execute", "report"])
    config_path.write_text(config_path.read_text().replace('label_column = "passed"\n',
                                                           'label_column = "passed"\nsplit = "test"\n'))
    result = run_pipeline(load_config(config_path))
    assert _statuses(result)["execute"] == "ran", _outcomes(result)
    executed = [json.loads(line) for line in (tmp_path / "run" / "execute" / "results.jsonl").read_text().splitlines()]
    assert sorted((r["task_id"], r["sample_id"]) for r in executed) == sorted((r["task_id"], r["sample_id"]) for r in test)
    assert "--split test" in json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["execute"]["command"]

    # ... and so does correlate_all where it reads the shipped codebleu and label from the data itself
    only = run_pipeline(load_config(config_path, overrides=['run.stages=["correlate_all", "report"]',
                                                            f'run.output="{tmp_path / "shipped"}"']))
    assert _statuses(only)["correlate_all"] == "ran", _outcomes(only)
    correlated = json.loads((tmp_path / "shipped" / "correlate" / "all.json").read_text())
    assert correlated["counts"]["samples"] == len(test), correlated["counts"]


def test_a_stage_left_out_by_stage_with_another_limit_is_out_of_date(tmp_path: Path, judge: _Judge) -> None:
    """fix32 review: ``[score] limit`` left the stage key (it resumes), so ``--stage correlate``
    after another limit read the score stage's rows of the old limit and said nothing (with the
    limit in the key, it said the score stage was out of date)."""
    config_path = _judged_config(tmp_path, judge, ["score", "correlate", "report"])
    run_pipeline(load_config(config_path))
    again = run_pipeline(load_config(config_path, overrides=["score.limit=2"]), only=["correlate"])
    stale = ("read the outputs of score, which are out of date (options or inputs changed since it ran; add "
             "--stage score to rerun)")
    assert _outcomes(again)["correlate"] == ("ran", stale)
    same = run_pipeline(load_config(config_path), only=["correlate"])
    assert _outcomes(same)["correlate"] == ("ran", None)


def test_retry_failed_with_a_smaller_limit_says_the_rows_it_scored_again(tmp_path: Path, judge: _Judge) -> None:
    """fix32 review: with a smaller ``[score] limit`` and ``--retry-failed`` at once, the note counted
    every failed row the stage had ("scored the 4 rows that had failed again") though the rows of the
    samples no longer selected were set aside, not scored (2 were)."""
    config_path = _judged_config(tmp_path, judge, ["score", "report"], "max_failures = 10\n")
    # a response cache of its own: the user cache may hold another test's answers to the same prompts
    config_path.write_text(config_path.read_text().replace("llm-cache", "retry-cache"))
    judge.fail = lambda body: True
    first = run_pipeline(load_config(config_path))
    assert json.loads((tmp_path / "run" / "score" / "llm" / "run.json").read_text())["statuses"]["ice-score"] == {
        "llm_error": 4}, _outcomes(first)
    judge.fail = lambda body: False
    calls = judge.requests
    lowered = run_pipeline(load_config(config_path, overrides=["score.limit=2", "run.retry_failed=true"]))
    assert judge.requests - calls == 2
    assert _outcomes(lowered)["score"][1].endswith(
        "; scored the 2 rows that had failed again, keeping the finished rows"), _outcomes(lowered)


def test_the_score_stage_prints_its_notes_on_the_input_before_it_scores(tmp_path: Path) -> None:
    """fix33 notes item 1: ``workbench run``'s score stages printed the notes on their input (here
    a generation that begins with its own prompt) only after their table; they come once, before
    the stage's table, as ``workbench score`` prints them. chrF only (no LLM: score_all)."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    rows[0]["completion_multipl_e"] = rows[0]["prompt"] + rows[0]["completion_multipl_e"]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    config_path = _write_config(tmp_path, data, ["score_all"])
    result = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    said = "1 of 6 generations begins with its own prompt"
    assert text.count(said) == 1, text
    assert text.index(said) < text.index("every row of the run folder"), text


def test_the_score_stage_says_how_workbench_run_retries_its_failed_rows(tmp_path: Path, judge: _Judge) -> None:
    """``workbench run`` printed the score stage's report in ``workbench score``'s words: "continue
    with --resume --retry-failed", options a run config refuses ("[score] resume: set by the
    pipeline"); it must say the run's own way (--retry-failed), and the ``--cache refresh`` hint
    as the run sets it. Real ``workbench run`` through the Typer app; the judge is the scripted
    server, down for the whole run."""
    config_path = _judged_config(tmp_path, judge, ["score"])
    judge.down = True
    ran = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"])
    said = " ".join(ran.output.split())
    assert ran.exit_code == 3, ran.output
    assert "the most common error" in said, said
    assert "--resume --retry-failed" not in said, said
    assert "rerun the same workbench run command with --retry-failed ([run] retry_failed = true)" in said, said


def test_a_failed_score_row_in_workbench_run_points_at_runs_own_retry_option(tmp_path: Path, judge: _Judge) -> None:
    """newuser34: the score stage of ``workbench run`` printed the score command's advice, "continue
    with --resume --retry-failed", but ``workbench run`` has no ``--resume`` (the option is refused).
    The fake judge answers 500 (a server outage)."""
    config_path = _judged_config(tmp_path, judge, ["score", "report"], "max_failures = 10\n")
    judge.fail = lambda body: True
    result = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"])
    text = " ".join(result.output.split())
    assert "has every row's error" in text, text
    assert "--resume" not in text and "rerun the same workbench run command with --retry-failed" in text


def test_the_results_the_run_gives_the_score_stage_are_named_as_the_execute_stages(
        tmp_path: Path, judge: _Judge) -> None:
    """A score stage stratifying on the execute stage's results (data without ``passed``), 2 of 6
    samples executed: its note said "--results PATH: 4 samples have no verdict there", an option
    the user never passed (the run sets it) and the run command does not take; it names the
    execute stage's results. ``workbench score --results`` on the same file keeps its flag. Real
    execution and chrF; ICE-Score from the scripted judge."""
    config_path = _judged_config(tmp_path, judge, ["execute", "score"])
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1, drop=("passed",))
    text = config_path.read_text().replace('label_column = "passed"\n', "").replace(
        "limit = 4", 'limit = 2\nselect = "stratified"')
    config_path.write_text(text.replace("workers = 2", "workers = 2\nlimit = 2", 1))
    ran = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"], terminal_width=400)
    said = "".join(ran.output.split())  # the note is wrapped, its path cut anywhere
    results = tmp_path / "run" / "execute" / "results.jsonl"
    assert ran.exit_code == 0, ran.output
    assert f"theexecutestage'sresults{results}:4sampleshavenoverdictthere" in said, ran.output
    assert f"--results{results}:" not in said, ran.output  # (the stage's recorded command line has its --results)

    scored = CliRunner().invoke(app, ["score", str(data), "-m", "chrf", "--results", str(results), "--select",
                                      "stratified", "--limit", "2", "--generation-column", "completion_multipl_e",
                                      "-o", str(tmp_path / "score-out"), "--no-progress"], terminal_width=400)
    said = "".join(scored.output.split())
    assert scored.exit_code == 0, scored.output
    assert f"--results{results}:4sampleshavenoverdictthere" in said, scored.output
    assert "executestage" not in said, scored.output


def test_the_retry_advice_for_unparsed_answers_is_in_each_commands_words(tmp_path: Path, judge: _Judge) -> None:
    """Every ICE-Score answer unparsable (cached parse errors): ``workbench run`` says to rerun with
    its own --retry-failed and to refresh the cache with ``--set score.cache=refresh``, and
    ``workbench score`` says ``--resume --retry-failed`` and ``--cache refresh``; both words come
    from workbench.option_words (the run passed its own by hand). Real commands through the Typer
    app; the scripted judge answers text with no score."""
    config_path = _judged_config(tmp_path, judge, ["score"], "max_failures = 10\n")
    judge.answer = "I would rather not say."
    ran = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"], terminal_width=400)
    said = "".join(ran.output.split())
    assert "parse_error" in ran.output, ran.output
    assert ("rerunthesameworkbenchruncommandwith--retry-failed([run]retry_failed=true)(add--setscore.cache=refresh"
            "toaskagainwheretheanswerdidnotparse") in said, ran.output
    assert "--resume" not in said and "--cacherefresh" not in said, ran.output

    data = tmp_path / "gens.jsonl"
    scored = CliRunner().invoke(app, ["score", str(data), "-m", "ice-score", "--model", "openai/judge", "--api-base",
                                      judge.api_base, "--limit", "2", "--n-samples", "1", "--score-mode", "sampled",
                                      "--generation-column", "completion_multipl_e", "--retries", "0",
                                      "--cache-dir", str(tmp_path / "cli-cache"), "--max-failures", "10",
                                      "-o", str(tmp_path / "score-out"), "--no-progress"], terminal_width=400)
    said = "".join(scored.output.split())
    assert "continuewith--resume--retry-failed(add--cacherefreshtoaskagain" in said, scored.output
    assert "workbenchrun" not in said and "--set" not in said, scored.output


def test_a_resume_the_recorded_settings_refuse_speaks_the_run_words(tmp_path: Path, judge: _Judge) -> None:
    """A score stage stratified on the execute stage's results, failed in a judge outage, whose
    record names other execution results (scored against another run's): the resume is refused, and
    said "[score] results='...'" (a key nobody set: the run set it), "write to a new --output, or
    pass --overwrite instead of --resume", options ``workbench run`` does not take. (Until runmove36
    a moved run folder was refused so: see the test after this one.) Real execution, the scripted
    judge."""
    config_path = _judged_config(tmp_path, judge, ["execute", "score"])
    write_generations(tmp_path / "gens.jsonl", per_outcome=1, drop=("passed",))
    config_path.write_text(config_path.read_text().replace('label_column = "passed"\n', "").replace(
        "limit = 4", 'limit = 2\nselect = "stratified"'))
    judge.down = True
    assert _statuses(run_pipeline(load_config(config_path)))["score"] == "ran"
    judge.down = False
    record_path = tmp_path / "run" / "score" / "llm" / "run.json"
    record = json.loads(record_path.read_text())
    other = tmp_path / "other" / "execute" / "results.jsonl"
    record["config"]["results"] = str(other)
    record_path.write_text(json.dumps(record))
    result = run_pipeline(load_config(config_path, overrides=["run.retry_failed=true"]))
    status, message = _outcomes(result)["score"]
    message = " ".join((message or "").split())
    assert status == "failed" and message.startswith("cannot resume: the run folder was scored with other settings ("), message
    assert f"the execute stage's results '{other}' -> '<run folder>/execute/results.jsonl'" in message, message
    assert message.endswith("set the recorded values again to continue, or start over in a fresh [run] output (or "
                            "rerun the same workbench run command with --force; with --stage, that stage only)"), message
    assert "--output" not in message and "--overwrite" not in message and "[score] results" not in message


def _stratified_on_execution(tmp_path: Path, judge: _Judge) -> Path:
    """execute, score (ICE-Score from the scripted judge on 2 of 6 samples, stratified on the
    execute stage's results: the data has no ``passed``), correlate and the report."""
    config_path = _judged_config(tmp_path, judge, ["execute", "score", "correlate", "report"])
    write_generations(tmp_path / "gens.jsonl", per_outcome=1, drop=("passed",))
    config_path.write_text(config_path.read_text().replace('label_column = "passed"\n', "").replace(
        "limit = 4", 'limit = 2\nselect = "stratified"').replace('metric = ["codebleu"]\n', ""))
    return config_path


def _in(folder: Path, overrides: list[str] = ()) -> list[str]:
    return [f'run.output="{folder}"', *overrides]


def test_a_moved_or_copied_run_folder_resumes_a_score_stage_stratified_on_execution(
        tmp_path: Path, judge: _Judge) -> None:
    """runmove36: the score stage stratifying on the execute stage's results recorded their absolute
    path in score/llm/run.json, so the folder moved (``mv``) or copied (``cp -a``) could not resume
    it: another ``[score] limit`` or ``--retry-failed`` failed with "cannot resume: the run folder
    was scored with the execute stage's results='OLD/execute/results.jsonl', now
    'NEW/execute/results.jsonl'". A path inside the run folder is recorded relative to it now, and
    the stages read the new folder's files: the old location is gone before each rerun. Real
    execution, chrF-free; ICE-Score from the scripted judge."""
    config_path = _stratified_on_execution(tmp_path, judge)
    judge.down = True  # every ICE-Score row: llm_error (chrF scores)
    first = run_pipeline(load_config(config_path, overrides=["score.max_failures=10"]))
    assert {_statuses(first)[name] for name in ("execute", "score", "correlate")} == {"ran"}, _outcomes(first)
    judge.down = False
    recorded = json.loads((tmp_path / "run" / "score" / "llm" / "run.json").read_text())
    assert recorded["config"]["results"] == "<run folder>/execute/results.jsonl"
    assert recorded["options"]["results"] == "<run folder>/execute/results.jsonl"  # cli37: was absolute
    kept = (tmp_path / "run" / "score" / "llm" / "scores.jsonl").read_text().splitlines()

    shutil.copytree(tmp_path / "run", tmp_path / "copy", symlinks=True)  # cp -a: times kept
    shutil.move(tmp_path / "run", tmp_path / "moved")  # mv: the old folder is gone
    calls = judge.requests
    more = run_pipeline(load_config(config_path, overrides=_in(tmp_path / "moved", ["score.limit=3",
                                                                                      "score.max_failures=10"])))
    outcomes = _outcomes(more)
    assert outcomes["execute"][0] == "up-to-date" and outcomes["score"][0] == "resumed", outcomes
    assert "[score] limit changed since it finished (2 -> 3): resumed: kept 4 finished rows, scored 2 new rows" in \
        outcomes["score"][1], outcomes  # ICE-Score and chrF of the third sample
    assert outcomes["correlate"][0] == "ran" and judge.requests - calls == 1
    moved = tmp_path / "moved"
    rows = (moved / "score" / "llm" / "scores.jsonl").read_text().splitlines()
    assert rows[:4] == kept and len(rows) == 6
    # correlate read the moved folder's table and results (the old folder is gone)
    correlation = json.loads((moved / "correlate" / "subset.json").read_text())
    assert correlation["counts"]["samples"] == 3 and "<run folder>/execute/results.jsonl" in correlation["source"]
    assert not (tmp_path / "run").exists()

    shutil.rmtree(moved)  # the copy: neither the original nor the moved folder is there
    retried = run_pipeline(load_config(config_path, overrides=_in(tmp_path / "copy", ["run.retry_failed=true"])))
    outcomes = _outcomes(retried)
    assert outcomes["score"][0] == "resumed" and "scored the 2 rows that had failed again" in outcomes["score"][1], \
        outcomes
    assert outcomes["correlate"][0] == "ran" and retried.exit_status == 0
    rows = [json.loads(line) for line in (tmp_path / "copy" / "score" / "llm" / "scores.jsonl").read_text().splitlines()]
    assert [row["status"] for row in rows] == ["ok"] * 4


def test_a_score_record_of_an_earlier_version_with_the_absolute_results_path_still_resumes(
        tmp_path: Path, judge: _Judge) -> None:
    """A score/llm/run.json written before paths in the run folder were recorded relative to it holds
    the execute stage's results as an absolute path: the score stage still resumes, in its folder and
    moved (the folder it was written in is known from its own recorded path)."""
    config_path = _stratified_on_execution(tmp_path, judge)
    run_pipeline(load_config(config_path))
    record_path = tmp_path / "run" / "score" / "llm" / "run.json"
    record = json.loads(record_path.read_text())
    record["config"]["results"] = str((tmp_path / "run" / "execute" / "results.jsonl").resolve())
    record_path.write_text(json.dumps(record))
    same = run_pipeline(load_config(config_path, overrides=["score.limit=3"]))
    assert _statuses(same)["score"] == "resumed", _outcomes(same)
    record = json.loads(record_path.read_text())
    assert record["config"]["results"] == "<run folder>/execute/results.jsonl"
    record["config"]["results"] = str((tmp_path / "run" / "execute" / "results.jsonl").resolve())
    # and, as that version wrote it, its own path (the output paths are relative to the run folder now)
    record["paths"]["run"] = str(record_path.resolve())
    record_path.write_text(json.dumps(record))
    shutil.move(tmp_path / "run", tmp_path / "moved")
    moved = run_pipeline(load_config(config_path, overrides=_in(tmp_path / "moved", ["score.limit=4"])))
    assert _statuses(moved)["score"] == "resumed", _outcomes(moved)


def test_data_kept_in_the_run_folder_moves_with_it(tmp_path: Path) -> None:
    """runmove36: ``[data] source`` inside the run folder (its ``data.jsonl``, which the report reads
    too), the folder moved and the config pointed at the moved file: the stage keys hashed the
    source as spelled, so every stage ran again (every sample executed again), and the execute
    stage's summary recorded the absolute path, so resuming it was refused. Both name it relative
    to the run folder now. Real sandboxed execution, chrF, correlation and dedup (no LLM)."""
    run = tmp_path / "run"
    run.mkdir()
    data = write_generations(run / "data.jsonl", per_outcome=1)
    config_path = _write_config(tmp_path, data, FULL)
    first = run_pipeline(load_config(config_path))
    assert {_statuses(first)[name] for name in FULL} == {"ran"}, _outcomes(first)
    summary = json.loads((run / "execute" / "results.summary.json").read_text())
    assert summary["settings"]["source"] == "<run folder>/data.jsonl"
    options = json.loads((run / "run.json").read_text())["stages"]["correlate_all"]["options"]
    assert options["results"] == "<run folder>/execute/results.jsonl"

    moved = tmp_path / "moved"
    shutil.move(run, moved)
    config_path.write_text(config_path.read_text().replace(str(run), str(moved)))
    manifest = json.loads((moved / "run.json").read_text())
    manifest["stages"]["execute"]["status"] = "interrupted"  # as after Ctrl-C: the rerun resumes it
    (moved / "run.json").write_text(json.dumps(manifest))
    again = run_pipeline(load_config(config_path))
    outcomes = _outcomes(again)
    assert outcomes["execute"][0] == "resumed", outcomes
    assert {_statuses(again)[name] for name in ("dedup", "score_all")} == {"up-to-date"}, outcomes
    # execute resumed: the stages that read it run again
    assert {_statuses(again)[name] for name in ("correlate_all", "bias")} == {"ran"}, outcomes
    assert not again.notes

    # a summary of an earlier version names the data by its absolute path: still resumed, moved again
    summary_path = moved / "execute" / "results.summary.json"
    summary = json.loads(summary_path.read_text())
    summary["settings"]["source"] = str((moved / "data.jsonl").resolve())
    # and, as that version wrote it, the results' own path (the output is relative to the run folder now)
    summary["output"] = str((moved / "execute" / "results.jsonl").resolve())
    summary_path.write_text(json.dumps(summary))
    shutil.move(moved, run)
    config_path.write_text(config_path.read_text().replace(str(moved), str(run)))
    manifest = json.loads((run / "run.json").read_text())
    manifest["stages"]["execute"]["status"] = "interrupted"
    (run / "run.json").write_text(json.dumps(manifest))
    back = run_pipeline(load_config(config_path))
    assert _outcomes(back)["execute"][0] == "resumed", _outcomes(back)
    assert json.loads((run / "execute" / "results.summary.json").read_text())["settings"]["source"] == \
        "<run folder>/data.jsonl"
    shutil.move(run, moved)

    # workbench score stratifying on the moved results: the data they executed is the data scored
    scored = CliRunner().invoke(app, ["score", str(moved / "data.jsonl"), "-m", "chrf", "--results",
                                      str(moved / "execute" / "results.jsonl"), "--select", "stratified", "--limit",
                                      "2", "--generation-column", "completion_multipl_e", "-o",
                                      str(tmp_path / "score-out"), "--no-progress"], terminal_width=400)
    assert scored.exit_code == 0, scored.output
    assert "its run executed" not in scored.output, scored.output


def test_the_recorded_score_command_rerun_by_hand_resumes_its_stage(tmp_path: Path, judge: _Judge) -> None:
    """docs/run.md: run.json records each stage's command line "to rerun the stage by hand". The score
    stage stratifying on the execute stage's results records them as <run folder>/execute/results.jsonl
    (runmove36), but ``workbench score`` run by hand recorded and compared the absolute path, so the
    recorded command with --resume --retry-failed was refused: "the execute stage's results
    '<run folder>/execute/results.jsonl' -> '/.../run/execute/results.jsonl'", the same file. Real
    execution; ICE-Score from the scripted judge (down for the stage, up for the rerun by hand)."""
    import shlex

    config_path = _stratified_on_execution(tmp_path, judge)
    judge.down = True  # every ICE-Score row: llm_error (chrF scores)
    first = run_pipeline(load_config(config_path, overrides=["score.max_failures=10"]))
    assert _statuses(first)["score"] == "ran", _outcomes(first)
    judge.down = False
    command = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]["score"]["command"]
    argv = shlex.split(command)[1:] + ["--resume", "--retry-failed", "--no-progress"]
    said = CliRunner().invoke(app, argv, terminal_width=400)
    assert said.exit_code == 0, said.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "score" / "llm" / "scores.jsonl").read_text().splitlines()]
    assert [row["status"] for row in rows] == ["ok"] * 4


def test_the_recorded_execute_command_rerun_by_hand_resumes_with_the_data_in_the_run_folder(tmp_path: Path) -> None:
    """The execute stage of a run whose ``[data] source`` is kept in the run folder records it as
    <run folder>/data.jsonl; the stage's recorded command line rerun by hand with --resume (the way
    to continue it that docs/run.md gives) was refused: "data source '<run folder>/data.jsonl' ->
    '/.../run/data.jsonl'", the same file. Real sandboxed execution."""
    import shlex

    run = tmp_path / "run"
    run.mkdir()
    data = write_generations(run / "data.jsonl", per_outcome=1)
    config_path = _write_config(tmp_path, data, ["execute"])
    assert _statuses(run_pipeline(load_config(config_path)))["execute"] == "ran"
    results = run / "execute" / "results.jsonl"
    rows = results.read_text().splitlines()
    results.write_text("\n".join(rows[:-2]) + "\n")  # as if interrupted before the last two samples
    command = json.loads((run / "run.json").read_text())["stages"]["execute"]["command"]
    said = CliRunner().invoke(app, shlex.split(command)[1:] + ["--resume", "--no-progress"], terminal_width=400)
    assert said.exit_code == 0, said.output
    assert len(results.read_text().splitlines()) == len(rows)
    summary = json.loads((run / "execute" / "results.summary.json").read_text())
    assert summary["settings"]["source"] == "<run folder>/data.jsonl"  # still movable with the folder


def test_an_earlier_score_record_in_a_moved_folder_named_relative_to_the_working_directory_resumes(
        tmp_path: Path, judge: _Judge, monkeypatch: pytest.MonkeyPatch) -> None:
    """As the test above, with ``[run] output`` relative (``runs/humaneval`` in configs/*.toml): the
    earlier record's own path (``paths.run``) is relative too, so the folder it was written in was not
    known and the moved folder's score stage was refused ("the execute stage's results
    '/.../run/execute/results.jsonl' -> '<run folder>/execute/results.jsonl'"). A relative recorded
    path names the folder from the working directory, as the run that wrote it did."""
    monkeypatch.chdir(tmp_path)
    config_path = _stratified_on_execution(tmp_path, judge)
    assert _statuses(run_pipeline(load_config(config_path, overrides=['run.output="run"'])))["score"] == "ran"
    record_path = tmp_path / "run" / "score" / "llm" / "run.json"
    record = json.loads(record_path.read_text())
    # as a version before 36 wrote it: its own path as the run named it, the results' absolute
    record["paths"]["run"] = "run/score/llm/run.json"
    record["config"]["results"] = str((tmp_path / "run" / "execute" / "results.jsonl").resolve())
    record_path.write_text(json.dumps(record))
    shutil.move(tmp_path / "run", tmp_path / "moved")
    moved = run_pipeline(load_config(config_path, overrides=['run.output="moved"', "score.limit=3"]))
    assert _statuses(moved)["score"] == "resumed", _outcomes(moved)


def test_the_decontaminate_stage_passes_decontaminate_only_and_an_older_folder_runs_it_again(tmp_path: Path) -> None:
    """decon37b: ``workbench dedup --against`` removes in-set duplicates and contaminated rows; the run's
    ``decontaminate`` stage passes ``--decontaminate-only``, so its outputs drop the contaminated rows only.
    A folder whose stage ran with the command line of before (no flag: another key) runs the stage again,
    as for any changed option. Real dedup against the bundled HumanEval, no LLM."""
    data = write_generations(tmp_path / "gens.jsonl", per_outcome=1)
    stages = ["decontaminate", "dedup"]
    config_path = _write_config(tmp_path, data, stages, '[decontaminate]\nagainst = "humaneval"\n')
    first = run_pipeline(load_config(config_path))
    assert {_statuses(first)[name] for name in stages} == {"ran"}, _outcomes(first)
    run = tmp_path / "run"
    recorded = json.loads((run / "run.json").read_text())["stages"]
    assert "--decontaminate-only" in recorded["decontaminate"]["argv"]
    assert "--decontaminate-only" not in recorded["dedup"]["argv"]
    assert json.loads((run / "decontaminate" / "report.json").read_text())["contamination"]["decontaminate_only"]
    reasons = {line.split(",")[2] for line in (run / "decontaminate" / "removed.csv").read_text().splitlines()[1:]}
    assert reasons <= {"contaminated"}

    # the record of a stage run with an older command line (its key differs): the stage runs again
    manifest = json.loads((run / "run.json").read_text())
    manifest["stages"]["decontaminate"]["key"] = "0123456789abcdef"
    (run / "run.json").write_text(json.dumps(manifest))
    again = run_pipeline(load_config(config_path))
    assert _statuses(again) == {**_statuses(again), "decontaminate": "ran", "dedup": "up-to-date"}, _outcomes(again)


def test_a_stage_whose_options_changed_says_which_before_it_runs_again(tmp_path: Path) -> None:
    """leftovers38: a stage that ran again from scratch because an option of its table changed since
    it finished said nothing: its earlier result was replaced without a word. Now one line names the
    stage and the option (recorded value -> value now) when it starts, and the table's detail says
    it too; an option that cannot change its outputs (``workers``) reruns nothing and says nothing.
    Real dedup and chrF on a slice of the bundled ICE-Score set, through the real CLI (no LLM)."""
    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl", per_outcome=1),
                                ["dedup", "score_all", "report"])
    first = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"])
    assert first.exit_code == 0, first.output

    again = CliRunner().invoke(app, ["run", str(config_path), "--no-progress", "--set", "dedup.multiset_threshold=0.8",
                                     "--set", "dedup.workers=1"])
    assert again.exit_code == 0, again.output
    text = " ".join(again.output.split())
    said = ("note: dedup: [dedup] multiset_threshold changed since it finished (0.7 -> 0.8): it runs again from scratch, "
            "replacing its earlier result")
    assert said in text, text
    assert text.count("changed since it finished") == 1, text  # workers: no rerun, no word; score_all up to date
    stages = json.loads((tmp_path / "run" / "run.json").read_text())["stages"]
    assert stages["dedup"]["options"]["multiset_threshold"] == 0.8 and stages["score_all"]["status"] == "done"

    result = run_pipeline(load_config(config_path, overrides=["dedup.multiset_threshold=0.75", "dedup.min_tokens=5"]))
    assert _outcomes(result)["dedup"] == ("ran", "[dedup] min_tokens (20 -> 5), [dedup] multiset_threshold (0.8 -> 0.75) "
                                                 "changed since it finished: ran again from scratch, replacing its "
                                                 "earlier result")
    assert _outcomes(result)["score_all"][0] == "up-to-date"


def test_a_dry_run_says_which_option_makes_a_stage_run_again(tmp_path: Path) -> None:
    """leftovers38c: ``workbench run --dry-run`` printed ``would run`` for a stage whose options
    changed since it finished, without the reason the real run prints (``note: dedup: [dedup]
    multiset_threshold changed since it finished (0.7 -> 0.8) ...``). Now it prints the same note
    under the stage's line, and writes nothing. Real dedup and chrF on a slice of the bundled
    ICE-Score set, through the real CLI (no LLM)."""
    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl", per_outcome=1),
                                ["dedup", "score_all", "report"])
    first = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"])
    assert first.exit_code == 0, first.output
    manifest = (tmp_path / "run" / "run.json").read_text()

    dry = CliRunner().invoke(app, ["run", str(config_path), "--dry-run", "--set", "dedup.multiset_threshold=0.8",
                                   "--set", "dedup.workers=1"])
    assert dry.exit_code == 0, dry.output
    text = " ".join(dry.output.split())
    assert "dedup: would run:" in text, text
    said = ("note: dedup: [dedup] multiset_threshold changed since it finished (0.7 -> 0.8): it would run again "
            "from scratch, replacing its earlier result")
    assert said in text, text
    assert text.index("dedup: would run:") < text.index(said) < text.index("score_all:"), text
    assert text.count("changed since it finished") == 1, text  # workers: reruns nothing, says nothing
    assert (tmp_path / "run" / "run.json").read_text() == manifest

    forced = CliRunner().invoke(app, ["run", str(config_path), "--dry-run", "--force",
                                      "--set", "dedup.multiset_threshold=0.8"])
    assert forced.exit_code == 0 and "changed since it finished" not in forced.output, forced.output


def preview_notes(config_path: Path, *overrides: str) -> dict[str, str]:
    """Each stage's note in a preview of ``config_path`` with ``--set`` ``overrides``: ``{stage name: note line}``
    (the last note a stage gets)."""
    config = load_config(config_path, overrides=list(overrides))
    said: dict[str, str] = {}
    preview(config, run_preflight(config), on_note=lambda plan, line: said.update({plan.name: line}))
    return said


def test_an_option_the_run_sets_itself_is_not_named_as_a_key_of_the_stage_table(tmp_path: Path) -> None:
    """review39b: the note of a stage that runs again because its options changed named every option
    as its own table's key, also one the run derives from other keys: with ``[correlate] metric``
    emptied, bias said ``[bias] metric changed since it finished ([passed, chrf, codebleu] -> [passed,
    chrf])`` (no ``[bias] metric`` is set: the run gives bias the score_all methods and the shipped
    metrics), and with ``[data] code_column`` changed, correlate_all said ``[correlate] length_column
    changed`` (the run's default, the code column). Now such an option is said to be set by the run;
    a key the table sets as it is (``[correlate] resamples``) keeps its name. Real dedup, chrF,
    correlate and bias on a slice of the bundled ICE-Score set (no LLM); the reruns are previews."""
    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl", per_outcome=1),
                                ["dedup", "score_all", "correlate_all", "bias", "report"])
    run_pipeline(load_config(config_path))

    emptied = preview_notes(config_path, "correlate.metric=[]")
    assert "[bias] metric" not in emptied["bias"], emptied
    assert emptied["bias"].startswith("its metric (set by the run) changed since it finished ([passed, chrf, codebleu] "
                                      "-> [passed, chrf]): it would run again"), emptied
    # the run adds the chrF of score_all to the [correlate] metric it was given: its value is the run's too
    assert emptied["correlate_all"].startswith("its metric (set by the run) changed since it finished ([chrf, codebleu] "
                                               "-> [chrf])"), emptied

    moved = preview_notes(config_path, 'data.code_column="generation"')
    assert moved["correlate_all"].startswith("its length_column (set by the run) changed since it finished "
                                             "(completion_multipl_e -> generation)"), moved
    assert moved["dedup"].startswith("[data] code_column changed since it finished"), moved
    assert preview_notes(config_path, "correlate.resamples=200")["correlate_all"].startswith(
        "[correlate] resamples changed since it finished (100 -> 200)")


def test_a_shared_column_the_run_leaves_out_is_not_blamed_on_the_data_table(tmp_path: Path) -> None:
    """s40: correlate_all reads score_all's scores_wide.jsonl (no --sample-column: the table is keyed
    already) or, without a cheap method, the dataset itself (``--sample-column`` from ``[data]``). When
    it switched, the note blamed a key nobody changed: ``[data] sample_column (none -> sample_id)
    changed``. The value is the run's choice: ``its sample_column (set by the run)``, both ways; a
    ``[data]`` key that did change keeps its name. Real dedup, chrF and correlate on a slice of the
    bundled ICE-Score set (no LLM); the reruns are previews."""
    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl", per_outcome=1),
                                ["dedup", "score_all", "correlate_all", "report"])
    run_pipeline(load_config(config_path))

    raw = preview_notes(config_path, 'score.method=["ice-score"]')["correlate_all"]  # no cheap method: the dataset is read
    assert "[data] sample_column" not in raw, raw
    assert "its sample_column (set by the run) (none -> sample_id)" in raw, raw
    moved = preview_notes(config_path, 'data.code_column="generation"')
    assert moved["dedup"].startswith("[data] code_column changed since it finished"), moved

    # the other way: finished on the dataset, now on scores_wide.jsonl
    shutil.rmtree(tmp_path / "run")
    run_pipeline(load_config(config_path, overrides=['score.method=["ice-score"]', 'run.stages=["correlate_all"]']))
    wide = preview_notes(config_path)["correlate_all"]
    assert "[data] sample_column" not in wide and "its sample_column (set by the run) (sample_id -> none)" in wide, wide


def test_a_dry_run_gives_the_reasons_the_run_gives(tmp_path: Path, judge: _Judge) -> None:
    """leftovers39a: ``--dry-run`` said why a stage would run again only for options of its table that
    changed; for a stage whose files changed since it finished (its rows edited) or whose ``[score]
    limit`` changed it printed ``would run`` / ``would resume`` alone, while the real run's detail
    column gave the reason. The dry run now prints each reason the run gives, from the same code, in
    the conditional. ICE-Score on the scripted judge server and real chrF on a slice of the bundled
    ICE-Score set, through the real CLI."""
    config_path = _judged_config(tmp_path, judge, ["score", "score_all", "report"])
    first = CliRunner().invoke(app, ["run", str(config_path), "--no-progress"])
    assert first.exit_code == 0, first.output
    rows = tmp_path / "run" / "score" / "all" / "scores.jsonl"
    edited = [{**row, "chrf": 1.0} for row in map(json.loads, rows.read_text().splitlines())]
    rows.write_text("".join(json.dumps(row) + "\n" for row in edited))
    manifest = (tmp_path / "run" / "run.json").read_text()

    dry = CliRunner().invoke(app, ["run", str(config_path), "--dry-run", "--limit", "5"])
    assert dry.exit_code == 0, dry.output
    text = " ".join(dry.output.split())
    limit = ("note: score: [score] limit changed since it finished (4 -> 5): it would resume, keeping the finished "
             "rows of the samples still selected")
    files = ("note: score_all: its files changed since it finished (score/all/scores.jsonl changed): it would run "
             "again from scratch, as its rows were edited")
    assert limit in text and files in text, text
    assert text.index("score: would resume") < text.index(limit) < text.index("score_all: would run:") \
        < text.index(files), text
    assert (tmp_path / "run" / "run.json").read_text() == manifest  # wrote nothing

    outcomes = _outcomes(run_pipeline(load_config(config_path, overrides=["score.limit=5"])))
    assert outcomes["score"][0] == "resumed" and outcomes["score"][1].startswith(
        "[score] limit changed since it finished (4 -> 5): resumed: kept 8 finished rows"), outcomes["score"]
    assert outcomes["score_all"] == ("ran", "its files changed since it finished (score/all/scores.jsonl changed): "
                                            "ran again from scratch, as its rows were edited")


def test_a_rerun_keys_its_stages_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers39a: ``run_pipeline`` keyed every stage twice before its first stage (hashing each stage's
    arguments, with every variant an earlier version may have recorded): once in ``preview``, only to decide
    whether to fetch the score stage's models, and again for the run. The preflight now keys them once and
    the plan is decided once. Real dedup and chrF on a slice of the bundled ICE-Score set (no LLM); the
    key function is counted, not replaced."""
    from workbench.run import manifest

    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl", per_outcome=1),
                                ["dedup", "score_all", "report"])
    run_pipeline(load_config(config_path))
    calls = []
    real = manifest._plan_keys
    monkeypatch.setattr(manifest, "_plan_keys", lambda *args, **kwargs: calls.append(args) or real(*args, **kwargs))
    again = run_pipeline(load_config(config_path))
    assert _statuses(again) == {"decontaminate": "skipped", "dedup": "up-to-date", "execute": "skipped",
                                "score": "skipped", "score_all": "up-to-date", "correlate": "skipped",
                                "correlate_all": "skipped", "bias": "skipped", "report": "ran"}, _outcomes(again)
    assert len(calls) == 1, f"the stages were keyed {len(calls)} times"


def test_run_stages_leaving_out_finished_stages_keys_the_stages_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """leftovers40a (closing39): with ``[run] stages`` leaving out finished stages, ``finished_stages`` planned
    and keyed every stage again for each one it left out (each time on another set of plans, with every variant
    an earlier version may have recorded), and the preflight then keyed the run's own plans: 4 keyings here. The
    finished stages are now decided on one plan, keyed once, which the run uses (a stage found out of date
    re-plans the stages after it once). Real dedup, execution, chrF, correlation and bias on a slice of the
    bundled ICE-Score set (no LLM); the key function is counted, not replaced."""
    from workbench.run import manifest

    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl", per_outcome=1), FULL)
    run_pipeline(load_config(config_path))
    calls = []
    real = manifest._plan_keys
    monkeypatch.setattr(manifest, "_plan_keys", lambda *args, **kwargs: calls.append(args) or real(*args, **kwargs))
    subset = ['run.stages=["correlate_all", "bias", "report"]']
    again = run_pipeline(load_config(config_path, overrides=subset))
    assert again.preflight.available == {"dedup", "execute", "score_all"}
    assert _statuses(again) == {"decontaminate": "skipped", "dedup": "skipped", "execute": "skipped",
                                "score": "skipped", "score_all": "skipped", "correlate": "skipped",
                                "correlate_all": "up-to-date", "bias": "up-to-date", "report": "ran"}, _outcomes(again)
    assert len(calls) == 1, f"the stages were keyed {len(calls)} times"

    # an execute stage out of date is no input, and the stages after it are planned without it
    calls.clear()
    stale = run_pipeline(load_config(config_path, overrides=[*subset, "execute.timeout_factor=6"]))
    assert stale.preflight.available == {"dedup", "score_all"}
    assert _outcomes(stale)["execute"] == ("skipped", "not in [run] stages")
    assert _statuses(stale)["correlate_all"] == "ran" and _statuses(stale)["bias"] == "ran"
    assert len(calls) == 2, f"the stages were keyed {len(calls)} times"


def test_a_dry_run_with_stage_says_which_inputs_are_out_of_date_as_the_run_does(tmp_path: Path) -> None:
    """leftovers40a (closing39): ``--stage correlate_all`` after an execute option changed ran on the execute
    stage's old results and said so ("read the outputs of execute, which are out of date ..."), but ``--dry-run``
    with the same ``--stage`` printed ``would run`` alone: the run worked the note out as it went, from the
    stages it left out. The plan works it out now, and the dry run prints it in the conditional; in a fresh
    folder it says which inputs have not finished. Real dedup, execution, chrF, correlation and bias on a slice
    of the bundled ICE-Score set, through the real CLI (no LLM)."""
    config_path = _write_config(tmp_path, write_generations(tmp_path / "gens.jsonl", per_outcome=1), FULL)
    run_pipeline(load_config(config_path))
    args = ["run", str(config_path), "--stage", "correlate_all", "--set", "execute.timeout_factor=6"]
    manifest = (tmp_path / "run" / "run.json").read_text()

    dry = CliRunner().invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    text = " ".join(dry.output.split())
    stale = ("execute, which are out of date (options or inputs changed since it ran; add --stage execute to "
             "rerun)")
    assert f"correlate_all: would run:" in text and f"note: correlate_all: it would read the outputs of {stale}" in text, text
    assert (tmp_path / "run" / "run.json").read_text() == manifest  # wrote nothing

    outcome = _outcomes(run_pipeline(load_config(config_path, overrides=["execute.timeout_factor=6"]),
                                     only=["correlate_all"]))["correlate_all"]
    assert outcome == ("ran", f"read the outputs of {stale}"), outcome

    fresh = CliRunner().invoke(app, [*args, "--dry-run", "--output", str(tmp_path / "fresh")])
    assert fresh.exit_code == 0, fresh.output
    assert ("note: correlate_all: execute, score_all have not finished in this run folder (add --stage execute "
            "--stage score_all to run them)") in " ".join(fresh.output.split()), fresh.output
