"""The run report (workbench.report): data collected from a real run folder, missing and failed
stages, damaged files, hostile content, the CLI.

``tests/fixtures/run-fixture`` is a trimmed copy of a real run (``tests/fixtures/make_run_fixture.py``):
ICE-Score HumanEval-Python rows, dedup and decontamination by ``workbench dedup``, execution by
``workbench execute``, LLM scores by ``workbench score`` with the real local model smollm2-135m,
correlations by ``workbench correlate``.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from report_html import element, shown_text
from workbench.cli import app
from workbench.dedup import DedupConfig, run_dedup
from workbench.errors import WorkbenchError
from workbench.report import build_report_data, render_html, write_report
from workbench.report.references import REFERENCE_CORRELATIONS
from workbench.report.sample_views import subcode_tree
from workbench.report.sections import cohen_kappa

FIXTURE = Path(__file__).parents[1] / "fixtures" / "run-fixture"
HOSTILE = '</script><script>alert("pwned")</script><img src=x onerror="alert(1)">'


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    """A writable copy of the fixture run folder."""
    target = tmp_path / "run"
    shutil.copytree(FIXTURE, target)
    return target


@pytest.fixture(scope="module")
def data() -> dict:
    return build_report_data(FIXTURE)


def test_fixture_is_small_and_complete():
    size = sum(p.stat().st_size for p in FIXTURE.rglob("*") if p.is_file())
    assert size < 310_000  # 300 KB until dedup/ was rerun with its cluster shapes (+7 KB)
    for relative in ("data.jsonl", "dedup/report.json", "dedup/cluster_shapes.csv", "decontaminate/report.json", "execute/results.jsonl",
                     "score/llm/traces.jsonl", "score/all/scores.jsonl", "correlate/subset.json", "correlate/all.json"):
        assert (FIXTURE / relative).is_file(), relative


def test_headline_numbers_are_the_correlate_outputs(data):
    for scope in ("subset", "all"):
        written = json.loads((FIXTURE / "correlate" / f"{scope}.json").read_text())
        by_method = {m["method"]: m for m in data["headline"]}
        for method, result in written["metrics"].items():
            shown = by_method[method][scope]
            assert shown["n_samples"] == result["n_samples"]
            for level in ("pooled", "per_problem"):
                for coefficient in ("kendall", "pearson"):
                    assert shown[level][coefficient] == result[level][coefficient]
                    assert shown[level][f"{coefficient}_ci"] == result[level][f"{coefficient}_ci"]
    kinds = {m["method"]: m["kind"] for m in data["headline"]}
    assert kinds["dsa-cqe"] == kinds["ice-score"] == "llm"
    assert kinds["chrf"] == "computed"
    assert kinds["codebleu"] == kinds["gpt35_nswr"] == "shipped"
    # LLM methods first, shipped columns last
    order = [m["kind"] for m in data["headline"]]
    assert order == sorted(order, key=["llm", "computed", "shipped"].index)


def test_llm_accounting_sums_the_score_rows(data):
    rows = _rows(FIXTURE / "score" / "llm" / "scores.jsonl")
    for method in ("dsa-cqe", "dsa-cqe-simplified", "ice-score"):
        mine = [r for r in rows if r["method"] == method]
        shown = data["scoring"]["subset"]["methods"][method]
        assert shown["rows"] == len(mine)
        assert shown["llm_calls"] == sum(r["llm_calls"] for r in mine) > 0
        assert shown["tokens"] == sum(r["tokens"] for r in mine) > 0
        assert shown["cache_hits"] == sum(r["cache_hits"] for r in mine)
        assert shown["statuses"] == dict(Counter(r["status"] for r in mine))
        assert shown["scored"] == sum(1 for r in mine if r["status"] == "ok")
        assert shown["uses_llm"] and shown["model"] == "local/smollm2-135m"
    assert data["scoring"]["all"]["methods"]["chrf"]["uses_llm"] is False
    cost = data["cost_per_sample"]
    assert set(cost) == {"dsa-cqe", "dsa-cqe-simplified", "ice-score"}
    assert all(len(v) == data["counts"]["subset"] for v in cost.values())


def test_execution_summary_and_agreement_with_shipped_label(data):
    results = _rows(FIXTURE / "execute" / "results.jsonl")
    shipped = {(r["task_id"], str(r["sample_id"])): int(r["passed"]) for r in _rows(FIXTURE / "data.jsonl")}
    execution = data["execution"]
    assert execution["rows"] == len(results)
    assert execution["passed"] == sum(r["passed"] for r in results)
    assert execution["statuses"] == dict(Counter(r["status"] for r in results).most_common())
    assert execution["isolation"] == results[0]["isolation"]
    agreement = execution["agreement"]
    expected = sum(1 for r in results if shipped[(r["task_id"], str(r["sample_id"]))] == r["passed"])
    assert agreement["matched"] == len(results) and agreement["agree"] == expected
    # pass@1 is the mean over tasks of each task's pass rate (Chen et al. 2021), not passed / samples
    per_task: dict[str, list[int]] = {}
    for r in results:
        per_task.setdefault(r["task_id"], []).append(r["passed"])
    pass_at_1 = execution["pass_at_k"]["values"]["1"]
    assert pass_at_1["estimate"] == pytest.approx(sum(sum(v) / len(v) for v in per_task.values()) / len(per_task))
    assert pass_at_1["tasks"] == len(per_task) == 3
    assert pass_at_1["ci"] is None and pass_at_1["no_ci"].startswith("only 3 tasks contribute")  # correlate's rule


def test_the_html_shows_pass_at_k_with_its_interval(data):
    html = render_html(data)
    value = data["execution"]["pass_at_k"]["values"]["1"]
    assert f"<b>pass@1</b> {value['estimate']:.4f} <span class=\"small muted\">no CI: {value['no_ci']}</span>" in html
    with_interval = {**data, "execution": {**data["execution"], "pass_at_k": {
        **data["execution"]["pass_at_k"], "values": {"1": {**value, "ci": [0.5, 0.75], "no_ci": None}}}}}
    assert "<b>pass@1</b> 0.6333 [0.5000, 0.7500]" in render_html(with_interval)
    for k, why in data["execution"]["pass_at_k"]["omitted"].items():
        assert f"pass@{k} not reported: {why}" in html


def test_duplication_summary_and_marks(data):
    report = json.loads((FIXTURE / "dedup" / "report.json").read_text())
    in_set = data["duplication"]["in_set"]["overall"]
    assert in_set["duplication_factor"] == report["overall"]["duplication_factor"]
    assert in_set["near_duplicates"] == report["overall"]["near_duplicates"]
    against = json.loads((FIXTURE / "decontaminate" / "report.json").read_text())
    assert data["duplication"]["against"]["contamination"] == against["contamination"]


def test_duplicate_marks_reach_the_sample_views(run_dir):
    subset = _rows(run_dir / "score" / "subset.jsonl")
    first, second = (f"{r['task_id']}:{r['sample_id']}" for r in subset[:2])
    (run_dir / "dedup" / "clusters.json").write_text(json.dumps([[first, second]]))
    (run_dir / "dedup" / "removed.csv").write_text(f"id,split,reason,duplicate_of\n{second},train,near_duplicate,{first}\n")
    (run_dir / "decontaminate" / "contamination.csv").write_text(
        f"id,split,reference_id,set_jaccard,multiset_jaccard\n{first},train,HumanEval/8,0.9,0.85\n")
    views = {v["dedup_id"]: v for v in build_report_data(run_dir)["samples"]}
    assert views[first]["duplicates"]["cluster"] == 1 and views[first]["duplicates"]["cluster_size"] == 2
    assert "duplicate_of" not in views[first]["duplicates"]
    assert views[second]["duplicates"]["duplicate_of"] == first
    assert views[first]["duplicates"]["benchmark"] == [
        {"reference_id": "HumanEval/8", "set_jaccard": "0.9", "multiset_jaccard": "0.85"}]
    html = render_html(build_report_data(run_dir))
    assert f"a duplicate of {first}" in html and "Near-duplicate of benchmark row HumanEval/8" in html


def _table_rows(html: str, table_id: str) -> list[list[str]]:
    """The cell texts of each row of the table with ``id=table_id`` (header rows left out)."""
    table = re.search(rf'<table id="{table_id}">(.*?)</table>', html, re.S).group(1)
    return [[re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", table, re.S) if "<td" in row]


def test_removed_rows_show_their_verified_neighbour(data):
    """The fixture's dedup (rerun with the neighbour columns): every in-set removal, its neighbour
    and Jaccards as removed.csv has them, the near copy first; no chained cluster among the 7."""
    removed = [row for row in csv.DictReader((FIXTURE / "dedup" / "removed.csv").open(newline=""))]
    in_set = data["duplication"]["in_set"]
    examples = in_set["removed_examples"]
    assert len(examples) == len(removed) == 7
    assert examples[0] == next(row for row in removed if row["reason"] == "near_duplicate")
    assert examples[0]["id"] == "HumanEval/5:64" and examples[0]["neighbour"] == "HumanEval/5:44"
    report = json.loads((FIXTURE / "dedup" / "report.json").read_text())
    assert in_set["cluster_shape"]["chained_clusters"] == report["cluster_shape"]["chained_clusters"] == 0
    assert in_set["cluster_shape"]["clusters"] == len(json.loads((FIXTURE / "dedup" / "clusters.json").read_text()))
    html = render_html(data)
    shown = _table_rows(html, "dedup-removed")
    assert shown == [[row[c] for c in ("id", "reason", "duplicate_of", "neighbour", "neighbour_kind", "set_jaccard",
                                      "multiset_jaccard", "hops_to_kept")] for row in examples]
    assert shown[0] == ["HumanEval/5:64", "near_duplicate", "HumanEval/5:44", "HumanEval/5:44", "near", "0.900000",
                        "0.739130", "1"]
    chained = re.sub(r"<[^>]+>", "", re.search(r'<p id="dedup-chained">(.*?)</p>', html, re.S).group(1))
    assert "diameter > 1" in chained.replace("&gt;", ">") and ": 0 of 7 clusters." in chained


def test_chained_clusters_of_a_real_dedup_reach_the_report(run_dir):
    """A real ``run_dedup`` into the run folder's dedup/: a chain a~b~c (a and c no duplicates:
    J = 16/24) is counted and shown as the largest chained cluster, and c's neighbour is b, two hops."""
    def idents(lo: int, hi: int) -> str:
        return "".join(f"t{i}\n" for i in range(lo, hi + 1))

    rows = [{"id": "a", "content": idents(1, 20)}, {"id": "b", "content": idents(3, 22)},
            {"id": "c", "content": idents(5, 24)}, {"id": "x", "content": idents(100, 119)},
            {"id": "y", "content": idents(100, 119)}]
    source = run_dir / "chain.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in rows))
    shutil.rmtree(run_dir / "dedup")
    run_dedup(str(source), DedupConfig(workers=1), output_dir=run_dir / "dedup")
    data = build_report_data(run_dir)
    shape = data["duplication"]["in_set"]["cluster_shape"]
    assert (shape["chained_clusters"], shape["clusters"]) == (1, 2)
    assert shape["largest_chained"] | {"sample": None} == {"size": 3, "diameter": 2, "diameter_exact": True,
                                                          "representative": "a", "sample": None}
    html = render_html(data)
    chained = re.sub(r"<[^>]+>", "", re.search(r'<p id="dedup-chained">(.*?)</p>', html, re.S).group(1))
    assert ": 1 of 2 clusters." in chained and "Largest chained cluster: 3 rows, diameter 2, kept a (a, b, c)." in chained
    shown = _table_rows(html, "dedup-removed")
    assert shown == [["c", "near_duplicate", "a", "b", "near", "0.818182", "0.818182", "2"],
                     ["b", "near_duplicate", "a", "a", "near", "0.818182", "0.818182", "1"],
                     ["y", "exact_duplicate", "x", "x", "exact", "1.000000", "1.000000", "1"]]
    assert re.search(r"<td class=\"num\">3</td><td>a</td>\s*<td class=\"num\">2</td>\s*<td>yes</td>", html)


def test_every_scored_sample_gets_a_full_view(data):
    subset = _rows(FIXTURE / "score" / "subset.jsonl")
    assert {(s["task_id"], s["sample_id"]) for s in data["samples"]} == {(r["task_id"], str(r["sample_id"])) for r in subset}
    traces = _rows(FIXTURE / "score" / "llm" / "traces.jsonl")
    for view in data["samples"]:
        assert view["code"]["generation"] and view["code"]["reference"] and view["code"]["prompt"]
        assert set(view["scores"]) >= {"dsa-cqe", "dsa-cqe-simplified", "ice-score", "chrf"}
        assert view["execution"]["status"]
        mine = [t for t in traces if (t["task_id"], str(t["sample_id"])) == (view["task_id"], view["sample_id"])]
        steps = {e["step"] for e in view["exchanges"]}
        dsa = next(t["trace"] for t in mine if t["method"] == "dsa-cqe")
        expected_steps = {e["step"] for e in dsa.get("generation", {}).get("exchanges", [])}
        assert expected_steps <= steps
        if dsa.get("generation"):
            tree = view["subcodes"]["generation"]
            assert tree["count"] == len(dsa["generation"]["decomposition"]["subcodes"])
            assert len(view["storage"]) >= len(dsa["generation"]["units"])
    # the reference of a task is analysed once: exactly one view per task shows its prompts
    paid = Counter(v["task_id"] for v in data["samples"] if not v["reference_shared"])
    assert paid == Counter({task: 1 for task in {v["task_id"] for v in data["samples"]}})
    for view in data["samples"]:
        reference_steps = [e for e in view["exchanges"] if str(e["step"]).startswith("analyse:reference")]
        assert bool(reference_steps) != view["reference_shared"]


def test_subcode_tree_nests_children_under_parents():
    tree = subcode_tree({"candidates": 3, "folded": 0, "dropped": 0, "syntax_error": False, "subcodes": [
        {"index": 0, "kind": "Loop", "lines": [3, 4], "parent": 2, "children": []},
        {"index": 1, "kind": "Branch", "lines": [5, 6], "parent": 2, "children": []},
        {"index": 2, "kind": "Function", "lines": [1, 6], "parent": None, "children": [0, 1]},
    ]})
    assert [r["index"] for r in tree["roots"]] == [2]
    assert [c["kind"] for c in tree["roots"][0]["children"]] == ["Loop", "Branch"]
    assert subcode_tree(None) is None


def test_cohen_kappa_known_values():
    # Wikipedia's worked example: 20 both yes, 15 both no, 5 / 10 disagreements -> 0.4
    assert cohen_kappa(20, 15, 5, 10) == pytest.approx(0.4)
    assert cohen_kappa(10, 10, 0, 0) == pytest.approx(1.0)
    assert cohen_kappa(0, 0, 0, 0) is None
    assert cohen_kappa(7, 0, 0, 0) is None


def test_reference_values_match_the_published_csv(test_data):
    import csv

    published = {}
    with open(test_data / "ice_score_published_humaneval.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            if row["language"] == "python":
                level = {"example": "per_problem", "corpus": "pooled"}[row["level"]]
                published[(row["metric_key"], level)] = float(row["kendall_tau"])
    checked = 0
    for value in REFERENCE_CORRELATIONS:
        if value.source.startswith("Zhuo") and value.coefficient == "kendall":
            key = "gpt35_nswr" if value.method == "ice-score" else value.method
            assert value.value == published[(key, value.level)], value
            checked += 1
    assert checked >= 12
    dsa = {(v.coefficient): v.value for v in REFERENCE_CORRELATIONS if v.method == "dsa-cqe"}
    assert dsa == {"kendall": 0.553, "pearson": 0.594}
    assert all(v.source for v in REFERENCE_CORRELATIONS)


def test_write_report_writes_json_and_a_self_contained_page(run_dir):
    json_path, html_path = write_report(run_dir)
    assert (json_path, html_path) == (run_dir / "report.json", run_dir / "report.html")
    data = json.loads(json_path.read_text())
    html = html_path.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower()
    # nothing to fetch: no external src/href, no @import or url() outside data:
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html, re.IGNORECASE)
    assert "@import" not in html and not re.search(r"url\((?!['\"]?(data:|#))", html)
    assert html.count('<details class="sample"') == len(data["samples"]) == data["counts"]["subset"]
    assert html.count('<a href="#sample-') == len(data["samples"])  # the subset table links each view
    assert html.count("<svg") == 3
    for method in data["headline"]:
        assert method["method"] in html
    assert "0.553" in html and "0.425" in html  # reference values with their sources
    assert "CEUR-WS Vol-3828" in html and "terryyz/ice-score" in html
    assert len(html) < 2_000_000
    # rebuilding gives the same numbers
    again, _ = write_report(run_dir)
    first, second = data, json.loads(again.read_text())
    first.pop("generated"), second.pop("generated")
    assert first == second


def _manifest(stages: dict, finished=None) -> str:
    """A run.json as ``workbench run`` writes it (workbench.run.manifest.Manifest)."""
    return json.dumps({
        "config": {"run": {"output": "runs/x"}, "data": {"source": "humaneval-codex-python", "language": "python",
                   "code_column": "completion_multipl_e", "label_column": "passed"}, "score": {"limit": 6}},
        "config_path": "configs/humaneval.toml", "workbench_version": "0.1.0",
        "started": "2026-11-29T10:00:00+00:00", "finished": finished, "stages": stages,
    })


def test_missing_and_failed_stages_are_explained(run_dir):
    shutil.rmtree(run_dir / "correlate")
    shutil.rmtree(run_dir / "execute")
    (run_dir / "run.json").write_text(_manifest({
        "decontaminate": {"status": "done", "seconds": 2.0, "command": "workbench dedup ..."},
        "dedup": {"status": "done", "seconds": 2.0},
        "execute": {"status": "failed", "seconds": 1.5, "command": "workbench execute data --output x",
                    "error": "sandbox unavailable: bubblewrap missing"},
        "score": {"status": "done", "seconds": 100.0}, "score_all": {"status": "done", "seconds": 3.0},
        "correlate": {"status": "pending"},
        "correlate_all": {"status": "skipped", "detail": "not in [run] stages"},
        "report": {"status": "running"},
    }))
    data = build_report_data(run_dir)
    assert "sandbox unavailable: bubblewrap missing" in data["notes"]["execute"]
    assert "'correlate' is pending" in data["notes"]["correlate"]
    assert "'correlate_all' is skipped: not in [run] stages" in data["notes"]["correlate"]
    assert "score" not in data["notes"] and "dedup" not in data["notes"]
    assert data["state"] == "failed at stage execute"
    assert [s["name"] for s in data["stages"]][-1] == "report"
    assert data["execution"] is None
    assert all(m["subset"] is None and m["all"] is None for m in data["headline"])
    assert data["counts"]["label_source"].startswith("the dataset's shipped")
    html = render_html(data)
    assert "sandbox unavailable: bubblewrap missing" in html and "failed at stage execute" in html
    assert "workbench execute data --output x" in html


def test_a_stage_marked_done_without_its_output_is_noted(run_dir):
    (run_dir / "correlate" / "all.json").unlink()
    done = {name: {"status": "done"} for name in
            ("decontaminate", "dedup", "execute", "score", "score_all", "correlate", "correlate_all", "report")}
    (run_dir / "run.json").write_text(_manifest(done, finished="2026-11-29T10:15:00+00:00"))
    data = build_report_data(run_dir)
    assert data["notes"] == {"correlate": "stage 'correlate_all' is missing: run.json records it done, but its output "
                                          "correlate/all.json is missing"}
    assert data["state"] == "finished 2026-11-29T10:15:00+00:00"
    # the stages table shows it missing, not done (it said done, with the note elsewhere)
    by_name = {s["name"]: s for s in data["stages"]}
    assert by_name["correlate_all"]["status"] == "missing" and by_name["correlate_all"]["recorded_status"] == "done"
    assert by_name["correlate"]["status"] == "done" and by_name["correlate"]["recorded_status"] == "done"
    row = shown_text(element(render_html(data), "stages-table"))
    assert re.search(r"correlate_all missing .*correlate/all\.json \(missing\)", row), row


def test_the_report_reads_stage_files_from_the_plan_and_notes_a_missing_one(run_dir):
    """run.json's plan says which stage wrote what; a planned file that is gone (renamed, deleted)
    is a visible note, not an empty section."""
    from workbench.run_layout import STAGE_OUTPUTS

    done = {name: {"status": "done"} for name in STAGE_OUTPUTS}
    manifest = json.loads(_manifest(done, finished="2026-11-29T10:15:00+00:00"))
    manifest["plan"] = {name: {"outputs": list(outputs), "partial": []} for name, outputs in STAGE_OUTPUTS.items()}
    manifest["plan"]["execute"]["outputs"] = ["execute/results-v2.jsonl"]  # a file the report does not know
    (run_dir / "run.json").write_text(json.dumps(manifest))
    (run_dir / "score" / "llm" / "scores_wide.jsonl").unlink()
    data = build_report_data(run_dir)
    assert data["notes"] == {
        "execute": "stage 'execute' is missing: run.json records it done, but its output execute/results-v2.jsonl "
                   "(named in run.json's plan) is missing",
        "score": "stage 'score' is missing: run.json records it done, but its output score/llm/scores_wide.jsonl "
                 "(named in run.json's plan) is missing",
    }
    by_name = {s["name"]: s for s in data["stages"]}
    assert by_name["execute"]["outputs_from"] == "run.json plan" and not by_name["execute"]["output_exists"]
    assert by_name["correlate"]["output_exists"] and by_name["correlate"]["missing_outputs"] == []
    html = render_html(data)
    assert "execute/results-v2.jsonl (named in run.json&#39;s plan) is missing" in html
    assert "score/llm/scores_wide.jsonl (named in run.json&#39;s plan) is missing" in html


def test_dataset_read_from_the_config_source_when_the_folder_has_no_copy(run_dir):
    (run_dir / "data.jsonl").unlink()
    (run_dir / "run.json").write_text(_manifest({}))
    data = build_report_data(run_dir)
    assert data["dataset"]["source"] == "humaneval-codex-python"  # the bundled ICE-Score set
    assert data["counts"]["data_rows"] == 3220
    assert all(v["code"]["generation"] and v["code"]["reference"] for v in data["samples"])
    assert data["execution"]["agreement"]["matched"] == data["execution"]["rows"]
    (run_dir / "run.json").write_text(_manifest({}).replace("humaneval-codex-python", str(run_dir / "absent.jsonl")))
    data = build_report_data(run_dir)
    assert data["counts"]["data_rows"] is None
    assert any("could not be read" in p for p in data["problems"])
    assert all(v["code"]["generation"] == "" for v in data["samples"])
    render_html(data)


def test_an_empty_folder_still_renders(tmp_path):
    data = build_report_data(tmp_path)
    assert {s["name"]: s["status"] for s in data["stages"]} == dict.fromkeys(
        ["decontaminate", "dedup", "execute", "score", "score_all", "correlate", "correlate_all", "bias"], "missing")
    assert data["headline"] == [] and data["samples"] == []
    html = render_html(data)
    assert "No method was scored or correlated" in html and "no run.json" in html
    assert set(data["notes"]) == {"decontaminate", "dedup", "execute", "score", "correlate", "bias"}


def test_a_missing_folder_is_an_error(tmp_path):
    with pytest.raises(WorkbenchError, match="does not exist"):
        build_report_data(tmp_path / "nope")


def test_a_score_output_folder_is_not_a_run_folder(run_dir):
    """``workbench report`` on a ``workbench score -o`` folder (whose run.json is score's) once wrote
    a report with every stage missing into it; now it says what the folder is and writes nothing."""
    score_folder = run_dir / "score" / "llm"
    assert "stages" not in json.loads((score_folder / "run.json").read_text())
    result = CliRunner().invoke(app, ["report", str(score_folder)], terminal_width=200)
    assert result.exit_code == 1
    assert "is not a run folder: its run.json is not `workbench run`'s (a `workbench score -o` folder)" in result.output
    assert not (score_folder / "report.json").exists() and not (score_folder / "report.html").exists()
    write_report(run_dir)  # the run folder itself still reports


def test_damaged_files_are_reported_and_finished_rows_kept(run_dir):
    scores = run_dir / "score" / "llm" / "scores.jsonl"
    rows = len(_rows(scores))
    with scores.open("a") as handle:
        handle.write('{"task_id": "HumanEval/0", "sample_id": 1, "meth')  # torn by a kill
    (run_dir / "dedup" / "report.json").write_text("{not json")
    data = build_report_data(run_dir)
    assert sum(m["rows"] for m in data["scoring"]["subset"]["methods"].values()) == rows
    assert any("scores.jsonl: 1 line" in p for p in data["problems"])
    assert any("dedup/report.json: unreadable JSON" in p for p in data["problems"])
    assert data["duplication"]["in_set"] is None
    assert "unreadable JSON" in render_html(data)


def test_repeated_or_partial_execution_rows_are_counted_once_and_said(run_dir):
    results = run_dir / "execute" / "results.jsonl"
    rows = _rows(results)
    executed = build_report_data(run_dir)["counts"]["executed"]
    assert executed == len(rows)
    flipped = {**rows[0], "status": "failed", "passed": 0} if rows[0]["passed"] else {**rows[0], "status": "passed", "passed": 1}
    with results.open("a") as handle:  # a row written again (last wins) and a row execute never writes
        handle.write(json.dumps(flipped) + "\n" + json.dumps({"task_id": rows[1]["task_id"], "sample_id": 99}) + "\n")
    data = build_report_data(run_dir)
    assert data["counts"]["executed"] == executed
    assert "None" not in data["execution"]["statuses"]
    assert data["execution"]["statuses"].get(flipped["status"], 0) == sum(
        r["status"] == flipped["status"] for r in rows[1:]) + 1
    assert any("1 row repeats a (task, sample) pair" in p for p in data["problems"])
    assert any("1 row without a status (not written by execute) was left out" in p for p in data["problems"])


def _inject_hostile(run_dir: Path) -> tuple[str, str]:
    """Put hostile text into the code, an LLM response, stderr and a method's error; return the
    first view's (task, sample)."""
    subset = _rows(run_dir / "score" / "subset.jsonl")
    key = (subset[0]["task_id"], str(subset[0]["sample_id"]))
    rows = _rows(run_dir / "data.jsonl")
    for row in rows:
        if (row["task_id"], str(row["sample_id"])) == key:
            row["completion_multipl_e"] = f"    return '{HOSTILE}'\n"
    (run_dir / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    traces = _rows(run_dir / "score" / "llm" / "traces.jsonl")
    for trace in traces:
        if (trace["task_id"], str(trace["sample_id"])) == key and trace["method"] == "ice-score":
            trace["trace"]["exchanges"][0]["response"] = HOSTILE
            trace["trace"]["exchanges"][0]["messages"][0]["content"] = HOSTILE
    (run_dir / "score" / "llm" / "traces.jsonl").write_text("".join(json.dumps(t) + "\n" for t in traces))
    results = _rows(run_dir / "execute" / "results.jsonl")
    for result in results:
        if (result["task_id"], str(result["sample_id"])) == key:
            result["stderr_tail"] = HOSTILE
    (run_dir / "execute" / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))
    scores = _rows(run_dir / "score" / "llm" / "scores.jsonl")
    scores[0]["error"] = HOSTILE
    (run_dir / "score" / "llm" / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in scores))
    return key


def test_hostile_content_is_escaped(run_dir):
    _inject_hostile(run_dir)
    _, html_path = write_report(run_dir)
    html = html_path.read_text()
    assert "<script" not in html.lower()
    assert "<img src=x" not in html
    assert html.count("&lt;/script&gt;&lt;script&gt;") >= 4  # response, prompt, stderr, error
    # the highlighted code escapes it too: the text is there, but no element carries an event
    # handler (pygments >= 2.21 no longer escapes quotes in text, which is harmless once < is)
    assert "alert" in html
    from html.parser import HTMLParser

    class Elements(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags: list[tuple[str, list]] = []

        def handle_starttag(self, tag, attrs):
            self.tags.append((tag, attrs))

    parser = Elements()
    parser.feed(html)
    assert not [t for t, _ in parser.tags if t in {"script", "img", "iframe", "object"}]
    assert not [(t, a) for t, attrs in parser.tags for a, _ in attrs if a.lower().startswith("on")]


def test_cli_report(run_dir):
    result = CliRunner().invoke(app, ["report", str(run_dir)])
    assert result.exit_code == 0, result.output
    assert "report.html" in result.output and (run_dir / "report.html").is_file()
    missing = CliRunner().invoke(app, ["report", str(run_dir / "absent")])
    assert missing.exit_code == 1 and "does not exist" in missing.output


def test_recomputed_pearson_values_match_the_shared_csv(shared_data):
    import csv

    recomputed = {}
    with open(shared_data / "ice-score" / "recomputed_correlations_python.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            level = {"example": "per_problem", "corpus": "pooled"}[row["level"]]
            recomputed[(row["metric_key"], level)] = float(row["pearson"])
    values = [v for v in REFERENCE_CORRELATIONS if not v.published]
    assert values and all(v.coefficient == "pearson" for v in values)
    for value in values:
        key = "gpt35_nswr" if value.method == "ice-score" else value.method
        assert value.value == pytest.approx(recomputed[(key, value.level)], abs=0.0005), value


def test_without_a_subset_file_every_llm_scored_sample_gets_a_view(run_dir):
    # `workbench run` selects the subset inside `workbench score --select stratified`: no subset.jsonl
    (run_dir / "score" / "subset.jsonl").unlink()
    scored = {(r["task_id"], str(r["sample_id"])) for r in _rows(run_dir / "score" / "llm" / "scores.jsonl")}
    data = build_report_data(run_dir)
    assert {(v["task_id"], v["sample_id"]) for v in data["samples"]} == scored
    assert data["counts"]["views"] == len(scored) > 0


def test_undecodable_text_and_empty_code_do_not_break_the_report(run_dir):
    subset = _rows(run_dir / "score" / "subset.jsonl")
    keys = [(r["task_id"], str(r["sample_id"])) for r in subset[:2]]
    rows = _rows(run_dir / "data.jsonl")
    for row in rows:
        if (row["task_id"], str(row["sample_id"])) == keys[0]:
            row["completion_multipl_e"] = "    return '\udc80\x00'\n"  # a lone surrogate and a NUL
        if (row["task_id"], str(row["sample_id"])) == keys[1]:
            row["completion_multipl_e"] = ""
    (run_dir / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    json_path, html_path = write_report(run_dir)
    views = {(v["task_id"], v["sample_id"]): v for v in json.loads(json_path.read_text())["samples"]}
    assert views[keys[0]]["code"]["generation"] == "    return '\udc80\x00'\n"
    assert views[keys[1]]["code"]["generation"] == ""
    assert "\\udc80" in html_path.read_text()


@pytest.mark.parametrize("content", ['[1, 2]', '"text"',
                                     '{"metrics": [1], "overall": 3, "contamination": "x", "stages": [], "usage": [2]}'])
def test_stage_files_of_the_wrong_shape_are_reported_not_fatal(run_dir, content):
    for relative in ("run.json", "correlate/subset.json", "correlate/all.json", "dedup/report.json",
                     "decontaminate/report.json", "execute/summary.json", "score/llm/run.json", "dedup/clusters.json"):
        (run_dir / relative).write_text(content)
    data = build_report_data(run_dir)
    html = render_html(json.loads(json.dumps(data)))
    assert data["samples"] and "<details" in html


def test_distributions_keep_file_order_whatever_the_hash_seed(tmp_path):
    """report.json's score lists follow the files' row order, not string hashes: the same run
    folder gives the same lists under two PYTHONHASHSEED values (real subprocesses)."""
    import os
    import subprocess
    import sys

    script = ("import json, sys; from workbench.report import build_report_data; "
              "print(json.dumps(build_report_data(sys.argv[1])['distributions'], sort_keys=True))")
    outputs = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script, str(FIXTURE)], env=env, capture_output=True,
                              text=True, check=True, timeout=600)
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    distributions = json.loads(outputs[0])
    everything = [m for m, d in distributions.items() if d["scope"] == "all"]
    assert everything, "the fixture should have a method scored on all rows"
    # the first passed scores of an all-rows method are those of the wide table's first passed rows
    wide = _rows(FIXTURE / "score" / "all" / "scores_wide.jsonl")
    labels = {(r["task_id"], str(r["sample_id"])): r["passed"] for r in _rows(FIXTURE / "execute" / "results.jsonl")}
    method = everything[0]
    expected = [round(float(r[method]), 4) for r in wide
                if isinstance(r.get(method), (int, float)) and not isinstance(r.get(method), bool)
                and labels.get((r["task_id"], str(r["sample_id"]))) == 1]
    assert distributions[method]["passed"][:len(expected)] == expected


def test_an_interval_withheld_for_small_n_is_shown_as_such(run_dir):
    """Issue 12, item 7: a correlate report whose interval was withheld (one task) shows the
    reason in the report, not "[n/a, n/a]" or a zero-width interval."""
    path = run_dir / "correlate" / "subset.json"
    report = json.loads(path.read_text())
    method, result = next((name, r) for name, r in report["metrics"].items() if r["pooled"]["kendall"] is not None)
    reason = "only 1 task contributes (an interval needs at least 5: the task bootstrap has too few distinct resamples)"
    result["pooled"]["kendall_ci"] = [None, None]
    result["pooled"]["no_interval"] = {"kendall": reason, "spearman": reason, "pearson": reason}
    path.write_text(json.dumps(report))
    _, html_path = write_report(run_dir)
    html = html_path.read_text()
    assert "no CI: small n" in html and "only 1 task contributes" in html
    shown = {m["method"]: m for m in build_report_data(run_dir)["headline"]}[method]["subset"]
    assert shown["pooled"]["no_interval"]["kendall"] == reason


def test_the_bias_d_is_told_apart_from_the_dedup_duplication_factor(data):
    """Eq. 2's d in the bias table is over every joined row, the dedup table's over the analysed
    rows only: both are shown, so the page says why they differ and gives both D."""
    html = render_html(data)
    note = re.search(r'<p[^>]*id="bias-d-note"[^>]*>(.*?)</p>', html, re.S)
    assert note, "the bias section should explain that its d is not the dedup table's"
    eq2 = next(row["eq2"] for row in data["bias"]["rows"] if row.get("eq2"))
    overall = data["duplication"]["in_set"]["overall"]
    text = re.sub(r"\s+", " ", note.group(1))
    assert f"|D| = {eq2['n_D']:,}" in text and f"|X| = {eq2['n_X']:,}" in text
    assert f"{overall['duplication_factor']:.4f}" in text and f"the {overall['analysed']:,} analysed rows" in text


def test_a_null_task_id_is_shown_as_missing_not_as_none(run_dir: Path) -> None:
    """fix33 item 5: a row whose task id is null (results from before execute refused such data)
    was shown as a task named "None" in the failures list, the samples table and its view; it is
    shown as a missing id (muted, as the page marks what it lacks), and its link still works."""
    for path in [run_dir / "data.jsonl", run_dir / "execute" / "results.jsonl", *(run_dir / "score").rglob("*.jsonl")]:
        rows = _rows(path)
        for row in rows:
            if row.get("task_id") == "HumanEval/8" and row.get("sample_id") == 30:
                row["task_id"] = None
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    html = render_html(build_report_data(run_dir))
    text = re.sub(r"<[^>]+>", "", html)
    assert "None:30" not in text and "None sample 30" not in text
    assert not re.search(r"<td>None</td>", html)
    missing = '<span class="muted">no task id</span>'
    assert f"{missing}:30</a>" in html  # the failures list, linked to the view
    assert f"<td>{missing}</td><td>30</td>" in html  # the samples table
    assert f"<summary><b>{missing}</b> sample 30" in html  # the view


def test_execution_shows_peak_memory_and_the_samples_near_the_limit(run_dir):
    # the execute rows' peak_rss_mib (GNU time inside the sandbox) and the limit of the summary reach the report
    results = run_dir / "execute" / "results.jsonl"
    rows = _rows(results)
    for index, row in enumerate(rows):
        row["peak_rss_mib"] = None if index == 0 else 10.0 + index
    rows[1]["peak_rss_mib"] = 95.5  # of a 100 MiB limit: near it (>= 90%)
    results.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (run_dir / "execute" / "results.summary.json").write_text(json.dumps({
        "isolation_description": "bubblewrap", "limits": {"address_space_bytes": {
            "flag": "--memory-mb", "asked": 100 << 20, "applied": 100 << 20, "lowered": False}}}))
    data = build_report_data(run_dir)
    memory = data["execution"]["memory"]
    assert memory["measured"] == len(rows) - 1 and memory["unmeasured"] == 1
    assert memory["max_peak_rss_mib"] == 95.5 and memory["limit_mib"] == 100
    assert memory["near_limit"] == 1
    assert memory["near_limit_samples"] == [f"{rows[1]['task_id']} {rows[1]['sample_id']}: 95.5 MiB"]
    html = render_html(data)
    shown = re.search(r'<p id="execution-memory">(.*?)</p>', html, re.DOTALL)
    assert shown, "the execution section shows no peak memory"
    text = re.sub(r"<[^>]+>", "", shown.group(1))
    assert f"median {memory['median_peak_rss_mib']:g} MiB, max 95.5 MiB" in text
    assert "1 not measured" in text and "1 near the 100 MiB limit" in text
    assert f"{rows[1]['task_id']} {rows[1]['sample_id']}: 95.5 MiB" in text


def test_execution_rows_without_peak_memory_say_so(data):
    # the fixture's rows were written before peak_rss_mib existed: the report says it was not measured
    assert data["execution"]["memory"]["measured"] == 0
    assert "peak memory not measured" in render_html(data)


def test_execution_counts_flaky_samples_of_a_repeated_run(run_dir):
    # rows of `workbench execute --repeat 3`: every attempt's status, `flaky` where they differ
    results = run_dir / "execute" / "results.jsonl"
    rows = _rows(results)
    for row in rows:
        row["attempts"], row["flaky"] = [row["status"]] * 3, False
    rows[0].update(status="passed", passed=1, attempts=["passed", "failed", "passed"], flaky=True)
    rows[1].update(status="failed", passed=0, attempts=["failed", "timeout", "failed"], flaky=True)
    results.write_text("".join(json.dumps(row) + "\n" for row in rows))
    data = build_report_data(run_dir)
    flaky = data["execution"]["flaky"]
    assert (flaky["repeated"], flaky["samples"], flaky["pass_flips"], flaky["rule"]) == (len(rows), 2, 1, "first attempt")
    shown = re.search(r'<p id="execution-flaky">(.*?)</p>', render_html(data), re.DOTALL)
    assert shown, "the execution section does not count the flaky samples"
    text = re.sub(r"<[^>]+>", "", shown.group(1))
    assert f"flaky 2 of the {len(rows)} repeated samples (1 passed on some attempts only)" in " ".join(text.split())
    assert "first attempt" in text and f"{rows[0]['task_id']} {rows[0]['sample_id']}: passed, failed, passed" in text


def test_execution_of_single_attempts_shows_no_flaky_line(data):
    assert data["execution"]["flaky"]["repeated"] == 0
    assert 'id="execution-flaky"' not in render_html(data)


def test_correlation_and_bias_notes_reach_the_page_apart_from_warnings(run_dir):
    """correlate and bias now tell expected outcomes of a run's settings (a method_limit, the data's own label
    beside the execution's) as notes, not warnings: the page shows them as notes."""
    label = "label: the scores have a 'passed' column of their own that differs from the results' on 2 of 40 joined rows"
    limited = "dsa-cqe: scored on 2 samples of the 40, as the score run's method_limit dsa-cqe=2 asks"
    subset = json.loads((run_dir / "correlate" / "subset.json").read_text())
    (run_dir / "correlate" / "subset.json").write_text(json.dumps({**subset, "notes": [limited, label]}))
    bias = json.loads((run_dir / "bias" / "report.json").read_text())
    (run_dir / "bias" / "report.json").write_text(json.dumps({**bias, "notes": ["label: the metric table differs"]}))
    json_path, html_path = write_report(run_dir)
    data = json.loads(json_path.read_text())
    assert data["correlation_notes"]["subset"] == [limited, label]
    assert data["bias"]["notes"] == ["label: the metric table differs"]
    html = html_path.read_text()
    assert "2 notes on the correlation on subset" in html
    assert "dsa-cqe: scored on 2 samples of the 40" in html and "Note: label: the metric table differs" in html
