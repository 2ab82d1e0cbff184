"""An output location the user cannot write is refused by every command that writes files, with one
`Error:` line before any work (newuser37: `execute -o`, `score -o`, `correlate --json` and `run -o`
ended in a `PermissionError` traceback, correlate's only after the whole bootstrap), in the words
`dedup` and `bias` already used: `--json PATH cannot be written in FOLDER (Permission denied)`
(workbench.io.require_output_folder, which probes with workbench.io.unwritable_reason).

Real CLI in a subprocess run as an unprivileged user (the `unprivileged` fixture: as root, through
setpriv as nobody) against a real read-only folder (mode 0555); real bundled HumanEval. No LLM, no
network (models pull is refused before it looks for one)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GENERATIONS = [
    {"task_id": "HumanEval/0", "completion": "    return False\n"},
    {"task_id": "HumanEval/2", "completion": "    return number % 1.0\n"},
]

# (command line, what its one error line says); {ro}: the read-only
# folder, {gens} a generations table, {scores} a table of metric values and outcomes, {run}: a run folder
# (read-only itself), {config}: a `workbench run` config, {gguf}: a file to import
CASES = {
    "execute": (["execute", "{gens}", "-o", "{ro}/results.jsonl"],
                "--output {ro}/results.jsonl cannot be written in {ro} (Permission denied)"),
    "execute, a folder to make": (["execute", "{gens}", "-o", "{ro}/new/results.jsonl"],
                                  "--output {ro}/new/results.jsonl cannot be written in {ro} (Permission denied)"),
    # leftovers39b: a relative value ending with the folder's name (ro/ro ends with "ro") lost " in ro"
    "execute, a relative path ending with the folder's name": (["execute", "{gens}", "-o", "ro/ro"],
                                                              "--output ro/ro cannot be written in ro (Permission denied)"),
    "score, a relative path ending with the folder's name": (["score", "{gens}", "--generation-column", "completion",
                                                             "--problems", "humaneval", "-m", "chrf", "-o", "ro/ro"],
                                                            "--output ro/ro cannot be written in ro (Permission denied)"),
    "score, the read-only folder itself": (["score", "{gens}", "--generation-column", "completion", "--problems",
                                            "humaneval", "-m", "chrf", "-o", "ro"],
                                           "--output ro cannot be written (Permission denied)"),
    "score": (["score", "{gens}", "--generation-column", "completion", "--problems", "humaneval", "-m", "chrf",
               "-o", "{ro}/score"], "--output {ro}/score cannot be written in {ro} (Permission denied)"),
    "correlate --json": (["correlate", "{scores}", "-m", "m", "--resamples", "40", "--json", "{ro}/c.json"],
                         "--json {ro}/c.json cannot be written in {ro} (Permission denied)"),
    "correlate --plot": (["correlate", "{scores}", "-m", "m", "--resamples", "40", "--plot", "{ro}/c.png"],
                         "--plot {ro}/c.png cannot be written in {ro} (Permission denied)"),
    # the dedup folder need not exist: the output path is refused before anything is read
    "bias --json": (["bias", "{ro}/no-dedup", "{scores}", "-m", "m", "--json", "{ro}/b.json"],
                    "--json {ro}/b.json cannot be written in {ro} (Permission denied)"),
    # dedup's own words (workbench.dedup.job): its folder is made first, then probed
    "dedup": (["dedup", "{gens}", "--code-column", "completion", "-o", "{ro}/d"],
              "--output {ro}/d cannot be created: Permission denied"),
    "run": (["run", "{config}", "-o", "{ro}/runs/x", "--no-progress"],
            "[run] output {ro}/runs/x cannot be written in {ro} (Permission denied)"),
    "run --dry-run": (["run", "{config}", "-o", "{ro}/runs/x", "--dry-run"],
                      "[run] output {ro}/runs/x cannot be written in {ro} (Permission denied)"),
    "report": (["report", "{run}"], "the run folder {run} cannot be written (Permission denied)"),
    "models pull": (["models", "pull", "smollm2-135m", "--cache-dir", "{ro}/models"],
                    "--cache-dir {ro}/models cannot be written in {ro} (Permission denied)"),
    "models import": (["models", "import", "smollm2-135m", "{gguf}", "--cache-dir", "{ro}/models"],
                      "--cache-dir {ro}/models cannot be written in {ro} (Permission denied)"),
}


@pytest.mark.parametrize("case", CASES)
def test_an_unwritable_output_is_refused_in_one_line_before_any_work(unprivileged, case):
    folder = unprivileged.folder
    gens = folder / "gens.jsonl"
    gens.write_text("".join(json.dumps(row) + "\n" for row in GENERATIONS))
    scores = folder / "scores.jsonl"
    scores.write_text("".join(json.dumps({"task_id": f"T/{t}", "id": f"{t}-{s}", "sample_id": s, "passed": (t + s) % 2,
                                          "m": (t * 7 + s * 3) % 5}) + "\n" for t in range(6) for s in range(4)))
    config = folder / "c.toml"
    config.write_text(f'[run]\noutput = "runs/x"\n[data]\nsource = "{gens}"\ncode_column = "completion"\n'
                      '[score]\nproblems = "humaneval"\nmethod = ["chrf"]\n')
    gguf = folder / "model.gguf"
    gguf.write_bytes(b"GGUF" + bytes(60))
    ro = folder / "ro"
    run = ro / "run"
    (run / "execute").mkdir(parents=True)  # a run folder (a stage's folder marks it), read-only with the rest
    for path in (run, ro):
        path.chmod(0o555)
    names = {"ro": ro, "gens": gens, "scores": scores, "config": config, "run": run, "gguf": gguf}
    args, said = CASES[case]
    result = subprocess.run([*unprivileged.prefix, sys.executable, "-m", "workbench", *[a.format(**names) for a in args]],
                            capture_output=True, text=True, timeout=600, cwd=folder)
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    error = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and f"Error: {said.format(**names)}" in error[0], result.stderr[-3000:]
    assert result.stdout == ""  # no table, no result: refused before the work (correlate: before the bootstrap)
    assert sorted(p.name for p in ro.iterdir()) == ["run"] and [p.name for p in run.iterdir()] == ["execute"]


@pytest.mark.parametrize(("output", "said"), [
    ("./ro", "--output ./ro cannot be written (Permission denied)"),
    ("{ro}/.", "--output {ro}/. cannot be written (Permission denied)"),
    ("ro/../ro/", "--output ro/../ro/ cannot be written (Permission denied)"),
    ("./ro/score", "--output ./ro/score cannot be written in ro (Permission denied)"),
])
def test_an_unwritable_output_folder_given_to_the_api_as_text_is_named_once(unprivileged, output, said):
    # leftovers40c: run_score(..., "./ro") said "--output ./ro cannot be written in ro" (the CLI's Path
    # arguments arrive as "ro"): the value names the folder, so it is not named again
    folder = unprivileged.folder
    gens = folder / "gens.jsonl"
    gens.write_text("".join(json.dumps(row) + "\n" for row in GENERATIONS))
    ro = folder / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    code = ("import sys; from workbench.errors import DataError; from workbench.score.config import ScoreConfig; "
            "from workbench.score.job import run_score\n"
            "try:\n"
            "    run_score(sys.argv[1], ScoreConfig(method=['chrf'], generation_column='completion', "
            "problems='humaneval'), sys.argv[2])\n"
            "except DataError as error:\n"
            "    print(error)")
    result = subprocess.run([*unprivileged.prefix, sys.executable, "-c", code, str(gens), output.format(ro=ro)],
                            capture_output=True, text=True, timeout=600, cwd=folder)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith(said.format(ro=ro) + "; choose a folder you can write"), result.stdout
    assert list(ro.iterdir()) == []
