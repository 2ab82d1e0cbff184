"""A dedup output folder reused for other data: the earlier run's deduplicated splits (a source
folder's ``files/``, ``<split>.jsonl``) are removed before the new ones are written, so
``workbench bias`` reads only this run's rows (a probe's reused folder joined 8 of 40 rows and
reported pass@1 .375 instead of .475). Real dedup and bias on real files."""

from __future__ import annotations

import json
import logging

from workbench.bias import BiasConfig, run_bias
from workbench.dedup import DedupConfig, run_dedup

_CODE = "def f{k}(values):\n    total = 0\n    for v in values:\n        total += v * {k}\n    return total\n"


def test_a_reused_folder_loses_the_earlier_splits(tmp_path, caplog):
    corpus = tmp_path / "corpus" / "train"
    corpus.mkdir(parents=True)
    for k in range(3):
        (corpus / f"f{k}.py").write_text(_CODE.format(k=k))
    out = tmp_path / "out"
    run_dedup(str(tmp_path / "corpus"), DedupConfig(min_tokens=1), output_dir=out)
    assert (out / "files").is_dir()

    rows = [{"task_id": f"T{t}", "sample_id": s, "completion": _CODE.format(k=t) if s < 2 else f"x = {t} + {s}\n" * (s + t),
             "passed": int(s == 0)} for t in range(4) for s in range(3)]
    gens = tmp_path / "gens.jsonl"
    gens.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with caplog.at_level(logging.WARNING, logger="workbench.dedup.writing"):
        run_dedup(str(gens), DedupConfig(code_column="completion", id_column="task_id,sample_id", min_tokens=1),
                  output_dir=out)
    assert not (out / "files").exists() and (out / "train.jsonl").is_file()
    assert any("held the outputs of an earlier dedup run" in r.getMessage() and "files" in r.getMessage()
               for r in caplog.records)
    report = run_bias(out, str(gens), BiasConfig(metric=["passed"], task_column="task_id", resamples=100))
    assert (report.join.joined, report.join.unjoined) == (12, 0)


def test_a_folder_without_a_dedup_report_keeps_its_files(tmp_path):
    out = tmp_path / "out"
    (out / "files").mkdir(parents=True)
    (out / "files" / "mine.txt").write_text("not a dedup output")
    (out / "train.jsonl").write_text('{"a": 1}\n')
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"id": i, "content": _CODE.format(k=i)}) + "\n" for i in range(3)))
    run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=out)
    assert (out / "files" / "mine.txt").read_text() == "not a dedup output"
