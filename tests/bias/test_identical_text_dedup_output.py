"""`workbench bias` on a dedup output whose test files are identical-text copies of train files
(below --min-tokens: ``exact_text`` clusters): the copies are cross-set duplicates there too (not in
the unbiased test setting), and ids that do not join are shown beside the dedup output's own ids
from kept.csv. Real dedup run (tree-sitter), real bias job.

Found by the new-user pass newuser36: the unjoined-ids error said "clusters.json has e.g. (no
clusters)" for a dedup output without clusters, which names no id at all.
"""

from __future__ import annotations

import pytest

from copied_corpus import MUL, write_copied_corpus
from workbench.bias import BiasConfig, run_bias
from workbench.dedup import DedupConfig, run_dedup
from workbench.errors import DataError


def test_identical_text_copies_of_train_are_out_of_the_unbiased_test_setting(tmp_path):
    corpus = write_copied_corpus(tmp_path, extra={"test/own.py": MUL})
    run_dedup(str(corpus), DedupConfig(workers=1), output_dir=tmp_path / "out")
    ids = [f"test/f{i}.py" for i in range(3)] + ["test/own.py"]
    report = run_bias(tmp_path / "out", {"id": ids, "acc": [1, 1, 1, 0]}, BiasConfig(metric=["acc"], resamples=40))
    settings = report.duplication.metrics["acc"].settings
    assert settings["fully_biased"].n_rows == 4
    assert settings["unbiased_test"].n_rows == 1  # only own.py: the three copies have a train copy


def test_ids_that_do_not_join_are_shown_beside_the_kept_rows_ids(tmp_path):
    corpus = write_copied_corpus(tmp_path, splits=())  # three different short files: no cluster at all
    run_dedup(str(corpus), DedupConfig(workers=1), output_dir=tmp_path / "out")
    with pytest.raises(DataError) as caught:
        run_bias(tmp_path / "out", {"id": ["x1", "x2"], "acc": [1, 0]}, BiasConfig(metric=["acc"]))
    message = str(caught.value)
    assert "kept.csv has e.g. 'f0.py', 'f1.py', 'f2.py'" in message, message
    assert "(no clusters)" not in message
