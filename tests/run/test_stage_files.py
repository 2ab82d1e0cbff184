"""A stage is up to date only while the files it left are as it left them (probe 29: after
``rm dedup/clusters.json`` a rerun said "dedup: up to date", and ``--stage bias`` then failed on the
missing file; junk appended to ``removed.csv`` went unnoticed). ``run.json`` records each finished
stage's files with their size and modification time. A real pipeline (dedup, bias, report) on a
slice of the bundled ICE-Score set."""

from __future__ import annotations

import json
from pathlib import Path

from ice_score_slice import task_rows, write_config
from workbench.run import load_config, run_pipeline
from workbench.run.runner import preview


def _config(tmp_path: Path):
    data = tmp_path / "generations.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in task_rows()[:30]))
    return load_config(write_config(tmp_path / "small.toml", tmp_path / "run", data, ["dedup", "bias", "report"], """\
[bias]
metric = ["passed"]
resamples = 200
"""))


def _statuses(result) -> dict[str, tuple[str, str | None]]:
    return {o.name: (o.status, o.detail) for o in result.outcomes if o.name in ("dedup", "bias")}


def _status(result) -> dict[str, str]:
    """:func:`_statuses` without the details."""
    return {name: status for name, (status, _) in _statuses(result).items()}


def test_a_stage_whose_files_were_deleted_or_edited_runs_again(tmp_path: Path) -> None:
    config = _config(tmp_path)
    run = tmp_path / "run"
    first = run_pipeline(config)
    assert _status(first) == {"dedup": "ran", "bias": "ran"}
    recorded = json.loads((run / "run.json").read_text())["stages"]["dedup"]["files"]
    assert {"dedup/clusters.json", "dedup/removed.csv", "dedup/report.json"} <= set(recorded)
    assert _status(run_pipeline(config)) == {"dedup": "up-to-date", "bias": "up-to-date"}

    (run / "dedup" / "clusters.json").unlink()
    assert dict((plan.name, action) for plan, action in preview(config, first.preflight))["dedup"] == "run"
    again = _statuses(run_pipeline(config))
    assert again["dedup"] == ("ran", "its files changed since it finished (dedup/clusters.json missing): ran again")
    assert again["bias"][0] == "ran"  # it reads dedup's outputs
    assert (run / "dedup" / "clusters.json").is_file()

    with open(run / "dedup" / "removed.csv", "a", encoding="utf-8") as handle:
        handle.write("junk\n")
    assert _statuses(run_pipeline(config))["dedup"] == (
        "ran", "its files changed since it finished (dedup/removed.csv changed): ran again")
    assert "junk" not in (run / "dedup" / "removed.csv").read_text()
    assert _status(run_pipeline(config)) == {"dedup": "up-to-date", "bias": "up-to-date"}


def test_a_run_json_without_recorded_files_is_judged_by_its_outputs_as_before(tmp_path: Path) -> None:
    """A run folder of an older version records no files: its stages stay up to date while their
    planned outputs exist (no rerun after an upgrade)."""
    config = _config(tmp_path)
    run_pipeline(config)
    manifest = json.loads((tmp_path / "run" / "run.json").read_text())
    for stage in manifest["stages"].values():
        stage.pop("files", None)
    (tmp_path / "run" / "run.json").write_text(json.dumps(manifest))
    assert _status(run_pipeline(config)) == {"dedup": "up-to-date", "bias": "up-to-date"}


def test_a_damaged_files_record_counts_as_changed_not_as_a_crash(tmp_path: Path) -> None:
    """A ``run.json`` edited by hand or cut short: an entry that is not ``[size, mtime_ns]`` made the rerun
    fail with "cannot unpack non-iterable int object"; the stage now runs again, as for a damaged manifest."""
    from workbench.run.manifest import changed_files

    (tmp_path / "dedup").mkdir()
    kept = tmp_path / "dedup" / "clusters.json"
    kept.write_text("{}")
    stat = kept.stat()
    recorded = {"dedup/clusters.json": [stat.st_size, stat.st_mtime_ns], "dedup/removed.csv": 5,
                "dedup/report.json": None}
    assert changed_files(recorded, tmp_path) == ["dedup/removed.csv missing", "dedup/report.json missing"]
    (tmp_path / "dedup" / "removed.csv").write_text("id\n")
    assert changed_files({**recorded, "dedup/clusters.json": [stat.st_size]}, tmp_path) == [
        "dedup/clusters.json changed", "dedup/removed.csv changed", "dedup/report.json missing"]
    assert changed_files({"dedup/clusters.json": [stat.st_size, stat.st_mtime_ns]}, tmp_path) == []
    assert changed_files(None, tmp_path) == [] and changed_files([], tmp_path) == []
