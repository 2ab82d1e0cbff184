"""``--engine spark`` (local[2], one shared session: the ``spark`` fixture) against the local
engine: byte-identical outputs on the 2k corpus of ../shared/bench (seed 3), on the same rows
shuffled into 1, 3 and 7 partitions, with groups and ``--against``, on 5,000 near-identical
boilerplate files (one LSH bucket of ~5,000 in every band), and on a small hostile corpus (a
chain, identical stubs below --min-tokens, empty, binary and unparsable rows); both equal the
brute-force truth. The outputs compared include the neighbours of ``removed.csv``,
``cluster_shapes.csv`` and ``skipped.csv``.
Then the errors a user meets before any work: no pyspark, no Java 17, an unreachable master."""

from __future__ import annotations

import csv
import filecmp
import json
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.data import load_records
from workbench.dedup import DedupConfig, build_report, collect_rows, run_dedup, write_outputs
from workbench.dedup.spark import SparkUnavailableError, check_spark, find_duplicates_spark

sys.path.insert(0, str(Path(__file__).parent))
from boilerplate import matrix_truth, write_boilerplate_corpus  # noqa: E402
from engine_records import ENGINE_SETTINGS, without_engine  # noqa: E402
from mixed_rows import write_mixed_rows  # noqa: E402

runner = CliRunner()
CORPUS = dict(code_column="content", id_column="id", split_column="split", workers=2)
#: every output of a run on the 2k corpus (report.json is compared without its timings)
OUTPUTS = ("clusters.json", "cluster_shapes.csv", "pairs.csv", "removed.csv", "skipped.csv", "train.jsonl",
           "test.jsonl")


def same_outputs(left: Path, right: Path, names=OUTPUTS) -> None:
    for name in names:
        assert filecmp.cmp(left / name, right / name, shallow=False), f"{name} differs"
    reports = [json.loads((folder / "report.json").read_text()) for folder in (left, right)]
    for report in reports:
        report.pop("timings_s")
        without_engine(report)  # which engine ran: test_the_report_records_the_engine_and_its_settings
    assert reports[0] == reports[1]


def cluster_ids(folder: Path) -> list[list[str]]:
    clusters = json.loads((folder / "clusters.json").read_text())
    return sorted((sorted(c) for c in clusters), key=lambda c: (-len(c), c))


@pytest.fixture(scope="module")
def corpus_2k(shared_bench, tmp_path_factory) -> Path:
    """../shared/bench's 2k corpus with seed 3 and its brute-force truth."""
    out = tmp_path_factory.mktemp("spark2k") / "corpus"
    for command in ([sys.executable, str(shared_bench / "make_dup_corpus.py"), "--out", str(out), "--n", "2000", "--seed", "3"],
                    [sys.executable, str(shared_bench / "brute_force_truth.py"), str(out)]):
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=900)
    return out


@pytest.fixture(scope="module")
def local_2k(corpus_2k, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("local2k")
    run_dedup(str(corpus_2k / "corpus.jsonl"), DedupConfig(**CORPUS), output_dir=out)
    return out


def test_spark_writes_what_the_local_engine_writes_and_both_are_the_truth(spark, corpus_2k, local_2k, tmp_path):
    run = run_dedup(str(corpus_2k / "corpus.jsonl"), DedupConfig(**CORPUS, engine="spark", spark_master="local[2]"),
                    output_dir=tmp_path)
    same_outputs(local_2k, tmp_path)
    truth = json.loads((corpus_2k / "truth_clusters.json").read_text())
    assert sum(map(len, truth)) > 700  # real work: hundreds of files in clusters
    assert cluster_ids(tmp_path) == cluster_ids(local_2k) == sorted(truth, key=lambda c: (-len(c), c))
    assert run.report["work"]["verified"] > 0 and set(run.report["timings_s"]) >= {"tokenize_minhash", "lsh_index"}


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_the_partitioning_of_the_rows_does_not_change_a_byte(spark, corpus_2k, local_2k, tmp_path, partitions):
    config = DedupConfig(**CORPUS, engine="spark", spark_partitions=partitions)
    loaded = load_records(str(corpus_2k / "corpus.jsonl"), split_column="split")
    rows = collect_rows(loaded, code_column="content", id_column="id")
    result = find_duplicates_spark(rows, config, spark=spark, shuffle_seed=partitions)
    assert spark.sparkContext.parallelize(range(10), partitions).getNumPartitions() == partitions
    report = build_report(result)
    write_outputs(result, loaded, report, tmp_path, output_format="jsonl")
    same_outputs(local_2k, tmp_path)


def test_candidate_components_found_on_the_executors_change_no_byte(spark, corpus_2k, local_2k, tmp_path):
    """No candidate edge may reach the driver (driver_edges=0): the candidate components are found on
    the executors (large-star / small-star), then walked there as before."""
    loaded = load_records(str(corpus_2k / "corpus.jsonl"), split_column="split")
    rows = collect_rows(loaded, code_column="content", id_column="id")
    result = find_duplicates_spark(rows, DedupConfig(**CORPUS, engine="spark"), spark=spark, driver_edges=0)
    write_outputs(result, loaded, build_report(result), tmp_path, output_format="jsonl")
    same_outputs(local_2k, tmp_path)
    assert len(result.clusters) > 100


def test_groups_and_against_give_the_same_cross_group_pairs_and_contamination(spark, corpus_2k, tmp_path):
    rows = [json.loads(line) for line in (corpus_2k / "corpus.jsonl").read_text().splitlines()]
    for row in rows:  # 40 groups: near copies in different groups become cross-group pairs
        row["repo"] = f"repo{int(row['id'].split('/')[-1][:5]) % 40}"
    data = tmp_path / "grouped.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    reference = tmp_path / "reference.jsonl"  # a benchmark holding 150 of the corpus's test files
    reference.write_text("".join(json.dumps({"task_id": f"ref/{i}", "content": row["content"]}) + "\n"
                                 for i, row in enumerate(r for r in rows if r["split"] == "test") if i < 150))
    options = dict(CORPUS, group_column="repo", against=str(reference))
    outputs = []
    # the last run's candidate components are found on the executors (no edge may reach the driver)
    for engine, conf in (("local", ()), ("spark", ()), ("spark", ("spark.workbench.dedup.driverEdges=0",))):
        out = tmp_path / f"{engine}{len(conf)}"
        run = run_dedup(str(data), DedupConfig(**options, engine=engine, spark_master="local[2]", spark_conf=conf),
                        output_dir=out)
        outputs.append(out)
        assert run.report["groups"]["cross_group_pairs"] > 0 and run.report["contamination"]["contaminated_rows"] >= 150
    for out in outputs[1:]:
        same_outputs(outputs[0], out, names=OUTPUTS + ("cross_group_pairs.csv", "contamination.csv"))
    # --decontaminate-only shares the removal (verify_and_cluster): Spark drops the contaminated rows only too
    only = []
    for engine in ("local", "spark"):
        out = tmp_path / f"{engine}-decontaminate-only"
        run_dedup(str(data), DedupConfig(**options, engine=engine, spark_master="local[2]", decontaminate_only=True),
                  output_dir=out)
        only.append(out)
    same_outputs(only[0], only[1], names=OUTPUTS + ("cross_group_pairs.csv", "contamination.csv"))
    with open(only[1] / "removed.csv", newline="", encoding="utf-8") as handle:
        reasons = {row["reason"] for row in csv.DictReader(handle)}
    assert reasons == {"contaminated"}


def test_matrix_truth_is_the_brute_force_truth(corpus_2k):
    truth = json.loads((corpus_2k / "truth_clusters.json").read_text())
    assert matrix_truth(corpus_2k / "tokens" / "corpus.jsonl.gz") == sorted(truth, key=lambda c: (-len(c), c))


def test_the_executors_walk_is_the_local_walk_on_the_same_token_bags(corpus_2k):
    """No Spark needed: the records the executors make (``tokenize_partition``) become the local
    engine's :class:`TokenBags` layout byte for byte, and ``walk_component`` over one component
    holding every bucket takes the pairs (and Jaccards, and counters) of the local engine's
    ``_BucketVerifier`` over ``tokenize_to_bags``'s bags."""
    from workbench.dedup import spark_tasks as tasks
    from workbench.dedup.clusters import UnionFind
    from workbench.dedup.detection import _BucketVerifier
    from workbench.dedup.signatures import minhash_setup
    from workbench.dedup.tokens import SignatureSpec, TokenBags, tokenize_to_bags

    class Count:  # what the walk needs of a Spark accumulator
        value = 0

        def add(self, n):
            self.value += n

    texts = [json.loads(line)["content"] for line in (corpus_2k / "corpus.jsonl").read_text().splitlines()][:1200]
    texts = list(dict.fromkeys(texts))  # distinct texts: one bag per row on both sides
    config = DedupConfig(**CORPUS)
    setup = minhash_setup(config.num_perm, config.seed, config.lsh_threshold, config.lsh_weights, config.lsh_params)
    spec = SignatureSpec(config.num_perm, config.seed, config.min_tokens, (setup.a, setup.b))
    local = tokenize_to_bags(texts, ["python"] * len(texts), workers=1, signatures=spec)
    records = list(tasks.tokenize_partition(spec, Count(), [(i, t, "python", 0) for i, t in enumerate(texts)]))
    rebuilt = TokenBags.from_buffers([r[tasks.IDS] for r in records], [r[tasks.COUNTS] for r in records],
                                     [r[tasks.N_TOKENS] for r in records])
    for name in ("offsets", "ids", "counts", "n_tokens"):
        assert np.array_equal(getattr(rebuilt, name), getattr(local, name)), name

    keyed: dict = {}
    for record in records:
        if tasks.is_analysed(config.min_tokens, record):
            for key, index in tasks.band_keys(setup.lsh.bands, setup.lsh.rows, record):
                keyed.setdefault(key, []).append(index)
    buckets = sorted(filter(None, map(tasks.bucket_indices, keyed.items())), key=lambda b: (b[0], b[1][0]))
    assert len(buckets) > 100

    counters = {"bucket_pairs": 0, "size_filtered": 0, "verified": 0, "rejected": 0}
    verifier = _BucketVerifier(local, [None] * len(texts), UnionFind(len(texts)), config, counters,
                               bands=setup.lsh.bands)
    expected = [(p.a, p.b, p.set_jaccard, p.multiset_jaccard)
                for band, members in buckets for p in verifier.process(members, band)]
    in_buckets = sorted({row for _, members in buckets for row in members})
    bags = [(r[tasks.INDEX], r[tasks.IDS], r[tasks.COUNTS], r[tasks.N_TOKENS], r[tasks.PARTITION])
            for r in records if r[tasks.INDEX] in set(in_buckets)]
    walked = list(tasks.walk_component(config, None, Count(), (0, (buckets[::-1], bags[::-1]))))
    taken = sorted(record[1:] for record in walked if record[0] == "pair")
    assert [pair[1:] for pair in taken] == expected and len(expected) > 50
    work = walked[-1][1]
    assert {key: work[key] for key in counters} == counters and work["enumerated"] == verifier.enumerated


def test_a_bucket_of_5000_boilerplate_files(spark, shared_bench, tmp_path):
    corpus = write_boilerplate_corpus(tmp_path / "boilerplate", shared_bench)
    outputs = []
    for engine in ("local", "spark"):
        out = tmp_path / engine
        run = run_dedup(str(corpus / "corpus.jsonl"), DedupConfig(**CORPUS, engine=engine, spark_master="local[2]"),
                        output_dir=out)
        outputs.append(out)
        assert run.report["work"]["largest_bucket"] >= 4500  # one bucket of nearly all files, not capped
    same_outputs(*outputs)
    truth = matrix_truth(corpus / "tokens" / "corpus.jsonl.gz")
    assert [len(c) for c in truth] == [5000]
    assert cluster_ids(outputs[0]) == cluster_ids(outputs[1]) == truth
    # 5,000 distinct multisets, far above the exact-diameter limit: a double sweep, about 2 x 5,000 comparisons
    assert run.report["cluster_shape"]["undecided_clusters"] + run.report["cluster_shape"]["chained_clusters"] == 1
    assert run.report["largest_clusters"][0]["diameter_exact"] is False
    assert run.report["work"]["shape_comparisons"] <= 2 * 5000


def test_neighbours_shapes_stubs_and_skipped_rows_are_the_same_on_spark(spark, tmp_path):
    data, reference = write_mixed_rows(tmp_path)
    outputs = []
    for engine in ("local", "spark"):
        out = tmp_path / engine
        run = run_dedup(str(data), DedupConfig(id_column="id", split_column="split", group_column="task", workers=1,
                                               against=str(reference), engine=engine, spark_master="local[2]"),
                        output_dir=out)
        outputs.append(out)
        assert run.report["cluster_shape"]["chained_clusters"] == 2  # the chain a~b~c, in each task
        # in each task: the stubs, the "return []" rows (all contaminated), the two literals and "bad" (2 tokens)
        assert run.report["overall"]["exact_text_clusters"] == 8
    same_outputs(*outputs, names=OUTPUTS + ("cross_group_pairs.csv", "contamination.csv"))


def test_a_folder_of_legacy_source_files_is_read_alike_by_both_engines(spark, tmp_path):
    # a Latin-1, cp1252 or UTF-16 file of a source folder was listed in unreadable.csv and never compared: now read
    # (its encoding in report.json), so its copy in UTF-8 is its exact duplicate; binary files stay refused
    body = ("public class Duree {{\n    // dur\u00e9e moyenne {k}\n    static String nom = \"Caf\u00e9 {k}\";\n"
            "    static int total(int a, int b) {{ return a + b + {k}; }}\n}}\n")
    folder = tmp_path / "src"
    (folder / "train").mkdir(parents=True)
    (folder / "test").mkdir()
    files = {"train/A.java": body.format(k=1).encode(), "test/A_latin.java": body.format(k=1).encode("latin-1"),
             "train/B.java": body.format(k=2).encode("utf-16"), "test/B_copy.java": body.format(k=2).encode(),
             "train/C.java": body.format(k=3).replace("moyenne", "\u201cmoyenne\u201d").encode("cp1252"),
             "train/Blob.java": bytes.fromhex("cafebabe00000034") + bytes(range(256))}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    runs = {engine: run_dedup(str(folder), DedupConfig(min_tokens=1, workers=1, engine=engine, spark_master="local[2]"),
                              output_dir=tmp_path / engine) for engine in ("local", "spark")}
    for run in runs.values():
        assert run.report["source_encodings"] == {"test/A_latin.java": "cp1252 (fallback)",
                                                  "train/B.java": "UTF-16 (byte-order mark)",
                                                  "train/C.java": "cp1252 (fallback)"}
        assert run.report["skipped_files"] == [{"path": "train/Blob.java", "reason": "binary"}]
        assert run.report["overall"]["exact_duplicates"] == 2 and run.report["overall"]["failed"] == 0
    assert runs["local"].result.rows.ids == runs["spark"].result.rows.ids
    for name in ("removed.csv", "kept.csv", "unreadable.csv", "clusters.json"):
        assert filecmp.cmp(tmp_path / "local" / name, tmp_path / "spark" / name, shallow=False), name
    kept = sorted(p.relative_to(tmp_path / "spark" / "files").as_posix() for p in (tmp_path / "spark" / "files").rglob("*.java"))
    assert kept == sorted(p.relative_to(tmp_path / "local" / "files").as_posix()
                          for p in (tmp_path / "local" / "files").rglob("*.java"))
    assert (tmp_path / "spark" / "files" / "train" / "B.java").read_bytes() == files["train/B.java"]  # a byte copy


# ---------------------------------------------------------------- errors before any work


def test_without_pyspark_the_error_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pyspark", None)  # import pyspark -> ImportError
    result = runner.invoke(app, ["dedup", str(tmp_path / "missing.jsonl"), "--engine", "spark", "--no-progress"])
    assert result.exit_code == 1
    assert "pip install 'workbench[spark]'" in result.output


def test_without_java_the_error_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))  # no bin/java there
    with pytest.raises(SparkUnavailableError, match="openjdk-17-jre-headless") as raised:
        check_spark("local[2]")
    assert f"JAVA_HOME={tmp_path} has no executable bin/java" in str(raised.value)  # probe 27: "no JAVA_HOME" was said


def test_a_java_that_says_no_version_is_refused(monkeypatch, tmp_path):
    # probe 27: a java linked to /bin/false passed the check, and Spark then failed with JAVA_GATEWAY_EXITED
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.symlink_to("/bin/false")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkUnavailableError, match="did not say a version"):
        check_spark("local[2]")


def test_an_old_java_is_refused(monkeypatch, tmp_path):
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text('#!/bin/sh\necho \'openjdk version "1.8.0_392"\' >&2\n')
    java.chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(SparkUnavailableError, match="is Java 8"):
        check_spark("local[2]")


def test_an_unreachable_master_is_named_before_the_data_is_read(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    master = f"spark://127.0.0.1:{port}"
    result = runner.invoke(app, ["dedup", str(tmp_path / "missing.jsonl"), "--engine", "spark",
                                 "--spark-master", master, "--no-progress"])
    assert result.exit_code == 1
    assert f"the Spark master {master} is not reachable" in result.output  # not the missing file


def test_an_unreadable_input_is_a_clear_error_on_spark_too(tmp_path):
    result = runner.invoke(app, ["dedup", str(tmp_path / "missing.jsonl"), "--engine", "spark",
                                 "--spark-master", "local[2]", "--no-progress"])
    assert result.exit_code == 1
    assert "missing.jsonl" in result.output and "Traceback" not in result.output


def test_spark_conf_must_be_key_value():
    result = runner.invoke(app, ["dedup", "x.jsonl", "--engine", "spark", "--spark-conf", "spark.executor.memory"])
    assert result.exit_code != 0
    assert "KEY=VALUE" in result.output


def test_the_cli_runs_on_spark_with_settings(spark, corpus_2k, local_2k, tmp_path):
    result = runner.invoke(app, ["dedup", str(corpus_2k / "corpus.jsonl"), "--code-column", "content", "--id-column", "id",
                                 "--split-column", "split", "-j", "2", "--engine", "spark", "--spark-master", "local[2]",
                                 "--spark-conf", "spark.task.maxFailures=2", "--no-progress", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    same_outputs(local_2k, tmp_path)


def test_the_run_config_takes_the_engine(tmp_path):
    from workbench.run.config import build_config
    from workbench.run.stages import plan_stages

    config = build_config({"data": {"source": "humaneval", "code_column": "content"}, "run": {"output": str(tmp_path)},
                           "dedup": {"engine": "spark", "spark_master": "local[2]",
                                     "spark_conf": ["spark.executor.memory=2g"]}})
    plan = next(p for p in plan_stages(config, {"content", "task_id"}) if p.name == "dedup")
    assert DedupConfig(**{k: v for k, v in plan.values.items() if k in DedupConfig.options()}).engine == "spark"
    argv = " ".join(plan.argv)
    assert "--engine spark" in argv and "--spark-master local[2]" in argv
    assert "--spark-conf spark.executor.memory=2g" in argv


def test_large_star_small_star_finds_the_union_find_components(spark):
    """A long chain (the slowest case for star contraction), a star, a cycle and random edges."""
    import random

    from workbench.dedup.clusters import UnionFind
    from workbench.dedup.spark_components import connected_components

    chance = random.Random(5)
    edges = [(i, i + 1) for i in range(0, 100)] + [(1000, k) for k in range(1001, 1030)]
    edges += [(2000 + i, 2000 + (i + 1) % 20) for i in range(20)] + [(3000, 3000)]
    edges += [(chance.randrange(4000, 4600), chance.randrange(4000, 4600)) for _ in range(300)]
    roots = dict(connected_components(spark, spark.createDataFrame(edges, "a long, b long")).rdd.map(tuple).collect())
    union_find = UnionFind(4600)
    for a, b in edges:
        union_find.union(a, b)
    nodes = {n for edge in edges for n in edge}
    expected = {n: min(c) for c in union_find.components(sorted(nodes)) for n in c if n != min(c)}
    assert roots == expected and roots[100] == 0 and roots[1029] == 1000


def test_the_report_records_the_engine_and_its_settings(spark, tmp_path):
    # report.json said nothing of which engine made it: a Spark run's report was the local one's
    data = tmp_path / "data.jsonl"
    data.write_text("".join(
        json.dumps({"id": i, "content": f"def f{i % 3}(x):\n    return x * {i % 3} + 1\n"}) + "\n" for i in range(9)))
    local = run_dedup(str(data), DedupConfig(min_tokens=1), output_dir=tmp_path / "local")
    settings = ("spark.hadoop.fs.s3a.secret.key=hunter2", "spark.hadoop.fs.s3a.access.key=AKIA123",
                "spark.ui.showConsoleProgress=false")
    on_spark = run_dedup(data.as_uri(), DedupConfig(min_tokens=1, engine="spark", spark_master="local[2]",
                                                    spark_partitions=3, spark_conf=settings),
                         output_dir=tmp_path / "spark")
    parameters = json.loads((tmp_path / "local" / "report.json").read_text())["parameters"]
    assert parameters["engine"] == "local" and not set(ENGINE_SETTINGS) & set(parameters)
    report = json.loads((tmp_path / "spark" / "report.json").read_text())
    assert report == json.loads(json.dumps(on_spark.report, default=str))
    parameters = report["parameters"]
    assert {key: parameters[key] for key in ("engine", "spark_master", "spark_partitions", "input_format",
                                            "input_format_requested")} == \
        {"engine": "spark", "spark_master": "local[2]", "spark_partitions": 3, "input_format": "json",
         "input_format_requested": "auto"}
    assert parameters["spark_conf"] == ["spark.hadoop.fs.s3a.secret.key=*********(redacted)",
                                        "spark.hadoop.fs.s3a.access.key=*********(redacted)",
                                        "spark.ui.showConsoleProgress=false"]
    assert "hunter2" not in json.dumps(report) and "AKIA123" not in json.dumps(report)
    assert report["work"]["spark_partitions"] == 3 and "spark_partitions" not in local.report["work"]
    # what reads a dedup report still reads both: workbench bias's reader, and the tables
    from workbench.bias.dedup_output import read_dedup_output
    from workbench.dedup.duplication_report import render_report

    for folder, run in (("local", local), ("spark", on_spark)):
        assert read_dedup_output(tmp_path / folder).id_column == run.report["parameters"]["id_column"]
        assert list(render_report(run.report))
