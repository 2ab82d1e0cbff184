"""`workbench run configs/humaneval-java.toml` end to end from a folder with no shared data beside it
(bundle36: the config read ``../shared/data`` by relative path, so a pip-installed workbench could not run
it; it now names the bundled ``humaneval-codex-java`` and ``humaneval-java``). Real dedup, real sandboxed
javac + java of the first 40 samples (HumanEval/99 and /140), chrF on every row, real correlation, bias
and report; no LLM (``score.method = ["chrf"]``). Skipped without a JDK and javatuples (``bash setup.sh
--java``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data import load_records

workbench_java = pytest.importorskip("workbench_java", reason="the Java plugin (plugins/workbench-java) is not installed")
MISSING = workbench_java.JavaLanguage().runner.missing_toolchain()

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(bool(MISSING), reason=f"the Java runner's toolchain is missing ({MISSING}): bash setup.sh --java")
def test_the_java_config_runs_end_to_end_on_the_bundled_sets_from_any_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert not (tmp_path.parent / "shared").exists()
    run = tmp_path / "run"
    result = CliRunner().invoke(app, [
        "run", str(REPO / "configs" / "humaneval-java.toml"), "-o", str(run), "--no-progress",
        "--set", 'score.method=["chrf"]', "--set", "execute.limit=40", "--set", "execute.workers=2",
        "--set", "correlate.allow_partial_join=true", "--set", "correlate.resamples=200",
        "--set", "bias.resamples=200",
    ], terminal_width=200)
    assert result.exit_code == 0, result.output
    stages = {name: stage["status"] for name, stage in json.loads((run / "run.json").read_text())["stages"].items()}
    # score and correlate are the LLM subset's stages: with chrF alone there is no subset to score
    assert stages == {"decontaminate": "done", "dedup": "done", "execute": "done", "score": "skipped",
                      "score_all": "done", "correlate": "skipped", "correlate_all": "done", "bias": "done",
                      "report": "done"}
    results = [json.loads(line) for line in (run / "execute" / "results.jsonl").read_text().splitlines()]
    assert len(results) == 40 and {r["task_id"] for r in results} == {"HumanEval/99", "HumanEval/140"}
    # our javac + java -ea verdicts agree with the labels the ICE-Score authors shipped (MultiPL-E's run)
    labels = {(r["task_id"], r["sample_id"]): r["passed"]
              for r in load_records("humaneval-codex-java").splits["test"]}
    verdicts = {(r["task_id"], r["sample_id"]): int(r["status"] == "passed") for r in results}
    assert verdicts == {key: labels[key] for key in verdicts}
    assert len((run / "score" / "all" / "scores_wide.jsonl").read_text().splitlines()) == 3219
    everything = json.loads((run / "correlate" / "all.json").read_text())
    assert everything["metrics"]["chrf"]["n_samples"] == 40
    assert (run / "report.html").is_file()
