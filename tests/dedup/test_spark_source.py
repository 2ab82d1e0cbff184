"""``--engine spark`` on a SOURCE URI Spark reads itself (local[2], the shared ``spark`` fixture):
the 2k corpus of ../shared/bench (seed 3) cut into several JSON Lines and Parquet files and read
through ``file://`` gives the local engine's clusters.json, pairs.csv, removed.csv, skipped.csv,
cluster_shapes.csv byte for byte and its report.json (but ``source`` and ``timings_s``); the
splits Spark writes hold the local engine's kept rows; the driver never holds the texts of the
analysed rows; an output folder given as a URI gets the same files. Then the errors: a missing
path, a scheme without its connector (input or output), a missing column."""

from __future__ import annotations

import codecs
import datetime
import decimal
import csv
import filecmp
import json
import re
import shutil
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench.dedup import DedupConfig, run_dedup
from workbench.dedup.spark_source import SomeCodes, is_spark_uri, split_files
from workbench.errors import DataError, MissingColumnError

sys.path.insert(0, str(Path(__file__).parent))
from engine_records import without_engine  # noqa: E402
from mixed_rows import write_mixed_rows  # noqa: E402
from refusals import both_refuse  # noqa: E402

CORPUS = dict(code_column="content", id_column="id", split_column="split", workers=2)
#: the small outputs, byte for byte (report.json compared apart from source and timings)
SMALL = ("clusters.json", "cluster_shapes.csv", "pairs.csv", "removed.csv", "skipped.csv")
#: rows per file when the corpus is cut into parts: unequal, so a wrong file order moves rows
CUTS = (0, 700, 1150, 2000)


@pytest.fixture(scope="module")
def corpus(shared_bench, tmp_path_factory) -> Path:
    """../shared/bench's 2k corpus (seed 3), as one file, three JSON Lines parts and three Parquet parts."""
    root = tmp_path_factory.mktemp("sparkio")
    subprocess.run([sys.executable, str(shared_bench / "make_dup_corpus.py"), "--out", str(root / "c"), "--n", "2000",
                    "--seed", "3"], check=True, capture_output=True, text=True, timeout=900)
    lines = (root / "c" / "corpus.jsonl").read_text().splitlines()
    for folder in ("jsonl", "parquet"):
        (root / folder).mkdir()
    for k in range(3):
        part = lines[CUTS[k]:CUTS[k + 1]]
        # names sort in the rows' order only by their number, not by their creation order
        (root / "jsonl" / f"part-{k}.jsonl").write_text("\n".join(part) + "\n")
        pq.write_table(pa.Table.from_pylist([json.loads(line) for line in part]), root / "parquet" / f"part-{k}.parquet")
    return root


@pytest.fixture(scope="module")
def local_out(corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sparkio_local")
    run_dedup(str(corpus / "c" / "corpus.jsonl"), DedupConfig(**CORPUS, output_format="jsonl"), output_dir=out)
    return out


@contextmanager
def spark_setting(spark, key: str, value: str):
    before = spark.conf.get(key, None)
    spark.conf.set(key, value)
    try:
        yield
    finally:
        spark.conf.unset(key) if before is None else spark.conf.set(key, before)


def same_small_outputs(local: Path, other: Path) -> None:
    for name in SMALL:
        assert filecmp.cmp(local / name, other / name, shallow=False), f"{name} differs"
    reports = [json.loads((folder / "report.json").read_text()) for folder in (local, other)]
    assert reports[0]["source"] != reports[1]["source"]  # a path and a URI
    for report in reports:
        report.pop("timings_s"), report.pop("source")
        without_engine(report)
    assert reports[0] == reports[1]


def kept_rows(path: Path) -> set[tuple[str, str]]:
    """(id, content) of the rows of a split: a local .jsonl file or a folder of Spark's part files."""
    if path.is_dir():
        parquet = sorted(path.glob("part-*.parquet"))
        if parquet:
            rows = [row for file in parquet for row in pq.read_table(file).to_pylist()]
        else:
            rows = [json.loads(line) for file in sorted(path.glob("part-*.json")) for line in file.read_text().splitlines()]
    else:
        rows = [json.loads(line) for line in path.read_text().splitlines()]
    return {(row["id"], row["content"]) for row in rows}


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_a_uri_read_by_spark_gives_the_local_outputs_and_kept_rows(spark, corpus, local_out, tmp_path, form):
    # small blocks: each JSON Lines part is read in several blocks, in several tasks
    with spark_setting(spark, "spark.sql.files.maxPartitionBytes", "262144"):
        if form == "jsonl":
            blocks = spark.read.json((corpus / form).as_uri()).select("_metadata.file_path", "_metadata.file_block_start")
            assert blocks.distinct().count() > 6  # several blocks per file
        run = run_dedup((corpus / form).as_uri(), DedupConfig(**CORPUS, engine="spark", output_format=form),
                        output_dir=tmp_path)
    same_small_outputs(local_out, tmp_path)
    assert run.report["overall"]["clusters"] > 100 and len(run.result.removed) > 300
    # what Spark read, not the `auto` asked for (the report said `auto` whatever the files were)
    parameters = json.loads((tmp_path / "report.json").read_text())["parameters"]
    assert (parameters["input_format"], parameters["input_format_requested"]) == \
        ({"jsonl": "json", "parquet": "parquet"}[form], "auto")
    for split in ("train", "test"):
        written = kept_rows(tmp_path / split)
        assert written == kept_rows(local_out / f"{split}.jsonl")
        assert len(written) == len(run.result.kept_indices(split))
    # the driver held the texts of the short and unparsable rows only, never those of the analysed rows
    codes = run.result.rows.codes
    assert isinstance(codes, SomeCodes)
    needed = {i for i, status in enumerate(run.result.status) if status == "too_short" or run.result.has_error[i]}
    assert set(codes.codes) == needed and len(needed) < len(codes) // 4
    with pytest.raises(KeyError, match="stays on the executors"):
        codes[run.result.status.index("analysed")]


def test_splits_named_by_the_files_as_the_local_loader_names_them(spark, corpus, tmp_path):
    """No --split-column: a folder of train-*/test-* files has the splits ``datasets`` gives the local loader."""
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [json.loads(line) for line in (corpus / "c" / "corpus.jsonl").read_text().splitlines()][:600]
    for split in ("test", "train"):
        chosen = [row for row in rows if row["split"] == split]
        for k, part in enumerate((chosen[: len(chosen) // 2], chosen[len(chosen) // 2 :])):
            (folder / f"{split}-{k:05d}-of-00002.jsonl").write_text("".join(json.dumps(r) + "\n" for r in part))
    options = dict(code_column="content", id_column="id", workers=1, output_format="jsonl")
    local = run_dedup(str(folder), DedupConfig(**options), output_dir=tmp_path / "local")
    on_spark = run_dedup(folder.as_uri(), DedupConfig(**options, engine="spark"), output_dir=tmp_path / "spark")
    assert list(local.result.rows.split_ranges.items()) == list(on_spark.result.rows.split_ranges.items())
    assert list(on_spark.result.rows.split_ranges) == ["train", "test"]
    assert local.result.rows.ids == on_spark.result.rows.ids
    same_small_outputs(tmp_path / "local", tmp_path / "spark")
    # --split, in the order named (the local loader's select_splits)
    chosen = [DedupConfig(**options, split=("test", "train"), engine=engine) for engine in ("local", "spark")]
    local, on_spark = run_dedup(str(folder), chosen[0]), run_dedup(folder.as_uri(), chosen[1])
    assert list(on_spark.result.rows.split_ranges) == ["test", "train"]
    assert local.result.rows.ids == on_spark.result.rows.ids and local.result.clusters == on_spark.result.clusters


def test_both_engines_read_a_folders_splits_in_one_order_and_say_the_files_they_leave_out(spark, tmp_path, caplog):
    """probe 31: dev.jsonl + validation.jsonl (both validation) and test.jsonl + eval-1.jsonl (both test) were
    read in datasets' pattern order by the local engine and in path order by Spark, so a cluster across them
    kept another row; other.jsonl (no split) was dropped silently by both."""
    import logging

    def code(name: str) -> str:
        return f"def {name}(values):\n    total = 0\n    for v in values:\n        total += v * 3\n    return total\n"

    files = {"train.jsonl": [("t1", code("alpha"))], "validation.jsonl": [("v1", code("beta"))],
             "dev.jsonl": [("d1", code("beta"))], "test.jsonl": [("s1", code("gamma"))],
             "eval-1.jsonl": [("e1", code("gamma"))], "other.jsonl": [("o1", code("alpha"))]}
    folder = tmp_path / "data"
    folder.mkdir()
    for name, rows in files.items():
        (folder / name).write_text("".join(json.dumps({"id": i, "content": c, "x": 0.1234567890123456789}) + "\n"
                                           for i, c in rows))
    options = {"code_column": "content", "id_column": "id", "workers": 1, "min_tokens": 1, "output_format": "jsonl"}
    said = {}
    for engine, source in (("local", str(folder)), ("spark", folder.as_uri())):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="workbench.data.data_file_splits"):
            run = run_dedup(source, DedupConfig(**options, engine=engine), output_dir=tmp_path / engine)
        said[engine] = [r.getMessage().replace(source, "<folder>") for r in caplog.records
                        if r.name == "workbench.data.data_file_splits"]
        assert run.result.rows.ids == ["t1", "d1", "v1", "e1", "s1"]  # each split's files in path order
        assert list(run.result.rows.split_ranges) == ["train", "validation", "test"]
        assert sorted(sorted(map(str, (run.result.rows.ids[m] for m in c))) for c in run.result.clusters) == [
            ["d1", "v1"], ["e1", "s1"]]
        assert {run.result.rows.ids[i] for i in run.result.removed} == {"v1", "s1"}  # the first copy is kept
    assert len(said["local"]) == 1 and said["local"] == said["spark"]
    assert "<folder>: 1 data file names no split and is not read: other.jsonl" in said["local"][0]
    same_small_outputs(tmp_path / "local", tmp_path / "spark")
    for name in ("kept.csv", "unreadable.csv"):
        assert filecmp.cmp(tmp_path / "local" / name, tmp_path / "spark" / name, shallow=False), name
    with open(tmp_path / "local" / "unreadable.csv") as handle:
        assert [(r["id"], r["split"], r["reason"].split(" while")[0]) for r in csv.DictReader(handle)] == [
            ("other.jsonl", "", "not loaded: its name names no split")]
    for split in ("validation", "test"):
        assert kept_rows(tmp_path / "spark" / split) == kept_rows(tmp_path / "local" / f"{split}.jsonl")


def test_split_files_follows_datasets_rules():
    root = "s3a://b/data/"
    assert split_files([root + "x.parquet"], root).splits == {"train": [root + "x.parquet"]}
    files = [root + name for name in ("test-00000-of-00001.parquet", "train-00000-of-00002.parquet",
                                      "train-00001-of-00002.parquet")]
    assert split_files(files, root).splits == {"train": files[1:], "test": files[:1]}
    folders = [root + "train/a.jsonl", root + "validation/b.jsonl"]
    assert split_files(folders, root).splits == {"train": folders[:1], "validation": folders[1:]}


def test_groups_against_stubs_and_binary_rows_on_a_spark_read_input(spark, tmp_path):
    data, reference = write_mixed_rows(tmp_path)
    options = dict(id_column="id", split_column="split", group_column="task", workers=1, against=str(reference),
                   output_format="jsonl")
    run_dedup(str(data), DedupConfig(**options), output_dir=tmp_path / "local")
    run = run_dedup(data.as_uri(), DedupConfig(**options, engine="spark"), output_dir=tmp_path / "spark")
    same_small_outputs(tmp_path / "local", tmp_path / "spark")
    for name in ("cross_group_pairs.csv", "contamination.csv"):
        assert filecmp.cmp(tmp_path / "local" / name, tmp_path / "spark" / name, shallow=False), name
    assert run.report["contamination"]["contaminated_rows"] > 0
    for split in ("train", "test"):
        assert kept_rows(tmp_path / "spark" / split) == kept_rows(tmp_path / "local" / f"{split}.jsonl")


@pytest.mark.parametrize("route", ["file", "hadoop"])
def test_a_uri_output_gets_the_local_outputs(spark, corpus, local_out, tmp_path, route):
    """``-o file://...`` is the local folder it names (written as a path is); ``-o viewfs://...``
    mounted on a local folder goes through Hadoop's FileSystem (the route an s3a:// or hdfs:// folder
    takes: the small files written locally and copied, the splits written by Spark into a staging
    folder, both swapped in): the local outputs again, and a recorded earlier output this run does not
    write removed."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "contamination.csv").write_text("a previous run's\n")  # an optional output this run does not write
    (out / "manifest.json").write_text(json.dumps({"written_by": "workbench dedup", "source": "x",
                                                    "outputs": ["contamination.csv", "manifest.json"]}))
    if route == "file":
        uri = out.as_uri() + "/"
    else:
        table = "wbsource"
        spark.sparkContext._jsc.hadoopConfiguration().set(f"fs.viewfs.mounttable.{table}.link./out", out.as_uri())
        uri = f"viewfs://{table}/out/"
    try:
        run = run_dedup((corpus / "jsonl").as_uri(), DedupConfig(**CORPUS, engine="spark", output_format="jsonl"),
                        output_dir=uri)
    finally:
        spark.sparkContext._jsc.hadoopConfiguration().unset("fs.viewfs.mounttable.wbsource.link./out")
    same_small_outputs(local_out, out)
    for split in ("train", "test"):
        assert kept_rows(out / split) == kept_rows(local_out / f"{split}.jsonl")
    assert not (out / "contamination.csv").exists()
    if route == "file":
        assert not list(out.glob(".*.crc"))  # no Hadoop checksum files beside the small outputs
        assert run.written["clusters"] == str(out / "clusters.json") and run.written["split:test"] == str(out / "test")
    else:
        assert run.written["clusters"] == uri + "clusters.json" and run.written["split:test"] == uri + "test"
        assert all(path.startswith(uri) for path in run.written.values())


# ---------------------------------------------------------------- errors


def test_null_fields_are_kept_in_the_json_lines_spark_writes(spark, tmp_path):
    # probe 27: Spark's JSON writer dropped null fields ({"stars": 0, "license": null} -> {"stars": 0})
    code = "def f{k}(values):\n    total = 0\n    for v in values:\n        total += v * {k}\n    return total\n"
    rows = [{"id": f"r{k}", "content": code.format(k=k), "license": None if k % 2 else "mit", "stars": 0} for k in range(4)]
    source = tmp_path / "in"
    source.mkdir()
    (source / "train.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    out = tmp_path / "out"
    run_dedup(source.as_uri(), DedupConfig(min_tokens=1, engine="spark", output_format="jsonl"), output_dir=out)
    written = [json.loads(line) for file in sorted((out / "train").glob("part-*.json")) for line in file.read_text().splitlines()]
    assert sorted(written, key=lambda row: row["id"]) == rows


def test_a_missing_path_is_named(spark, tmp_path):
    missing = (tmp_path / "nowhere").as_uri()
    with pytest.raises(DataError, match=f"{missing}: no such file or folder"):
        run_dedup(missing, DedupConfig(engine="spark"))


def test_a_scheme_without_its_connector_names_the_package(spark):
    with pytest.raises(DataError, match=r"s3a://bucket/corpus/: Spark cannot read s3a:// here: it needs the hadoop-aws "
                                        r"package: --spark-conf spark.jars.packages=org.apache.hadoop:hadoop-aws:\d"):
        run_dedup("s3a://bucket/corpus/", DedupConfig(engine="spark"))


def test_an_output_scheme_without_its_connector_fails_before_the_read(spark, corpus):
    stages: list[str] = []

    @contextmanager
    def progress(description: str, total: int):
        stages.append(description)
        yield lambda n: None

    with pytest.raises(DataError, match=r"s3a://bucket/out/: Spark cannot write s3a:// here: it needs the hadoop-aws "
                                        r"package: --spark-conf spark.jars.packages=org.apache.hadoop:hadoop-aws:\d"):
        run_dedup((corpus / "jsonl").as_uri(), DedupConfig(**CORPUS, engine="spark"), output_dir="s3a://bucket/out/",
                  progress=progress)
    assert stages == []  # nothing read, tokenized or written


def test_a_missing_code_column_is_worded_as_the_local_loader_words_it(spark, tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps({"id": i, "code": f"x = {i}"}) + "\n" for i in range(5)))
    with pytest.raises(MissingColumnError) as local:
        run_dedup(str(data), DedupConfig())
    with pytest.raises(MissingColumnError) as on_spark:
        run_dedup(data.as_uri(), DedupConfig(engine="spark"))
    expected = "column 'content' not found (set it with --code-column); the data has: "
    assert str(local.value).startswith(expected) and str(on_spark.value).startswith(expected)
    assert set(on_spark.value.available) == {"id", "code"} and data.as_uri() in str(on_spark.value)


def test_a_json_file_that_is_not_json_lines_is_refused(spark, tmp_path):
    data = tmp_path / "rows.json"
    data.write_text(json.dumps([{"content": "x = 1"}, {"content": "y = 2"}], indent=1))
    with pytest.raises(DataError, match=f"{data.as_uri()} is not JSON Lines \\(line 1 of "):
        run_dedup(data.as_uri(), DedupConfig(engine="spark"))


def test_which_sources_spark_reads():
    assert all(map(is_spark_uri, ["file:///d/x.jsonl", "s3a://b/k/", "hdfs://nn/p/*.parquet", "gs://b/x", "abfss://c@a/p"]))
    assert not any(map(is_spark_uri, ["corpus.jsonl", "/abs/x.parquet", "bigcode/the-stack", "https://h/x.jsonl", None]))


def test_blank_and_padded_language_cells_read_as_the_local_engine_reads_them(spark, tmp_path):
    # a blank cell names no language (the default applies) and " python " is python, on both engines
    data, _ = write_mixed_rows(tmp_path)
    cells = [" python ", "  ", None, "python"]
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    data.write_text("".join(json.dumps({**row, "language": cells[i % len(cells)]}) + "\n" for i, row in enumerate(rows)))
    options = dict(id_column="id", split_column="split", workers=1, output_format="jsonl")
    run_dedup(str(data), DedupConfig(**options), output_dir=tmp_path / "local")
    run_dedup(data.as_uri(), DedupConfig(**options, engine="spark"), output_dir=tmp_path / "spark")
    same_small_outputs(tmp_path / "local", tmp_path / "spark")



# ---------------------------------------------------------------- probe 31: input the local engine refuses

CODE = "def f{k}(values):\n    total = 0\n    for v in values:\n        total += v * {k}\n    return total\n"


def jsonl(path: Path, lines: list) -> Path:
    """Write ``lines`` (dicts as JSON, text as it is) one per line."""
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("cell, kind", [(5, "int"), ([1, 2], "list"), ({"a": 1}, "dict")])
def test_a_code_cell_that_is_not_text_is_refused_on_spark_as_locally(spark, tmp_path, cell, kind):
    # Spark's JSON reader typed the column as text and deduplicated `5`, `[1,2]` as code
    path = jsonl(tmp_path / "rows.jsonl", [{"id": f"r{k}", "content": CODE.format(k=k)} for k in range(3)]
                 + [{"id": "r3", "content": cell}])
    local, on_spark = both_refuse(path)
    assert local.startswith("--code-column 'content' holds") and "row 4" in local
    assert on_spark.startswith("--code-column 'content' holds"), on_spark
    assert f"line 4 of {path.as_uri()}" in on_spark and f"({kind})" in on_spark and "must be a string" in on_spark


def test_an_all_integer_code_column_and_a_split_of_integers_are_refused_on_spark(spark, tmp_path):
    # all integers: "analysed 0" and exit 0; a split of integers beside one of texts: a cast failure
    path = jsonl(tmp_path / "ints.jsonl", [{"id": f"r{k}", "content": k} for k in range(4)])
    local, on_spark = both_refuse(path)
    assert "--code-column 'content' holds" in local and f"line 1 of {path.as_uri()}" in on_spark, on_spark
    folder = tmp_path / "splits"
    folder.mkdir()
    jsonl(folder / "train.jsonl", [{"id": "a", "content": CODE.format(k=1)}])
    jsonl(folder / "test.jsonl", [{"id": "b", "content": CODE.format(k=2)}, {"id": "c", "content": 7}])
    with pytest.raises(DataError, match=f"line 2 of {(folder / 'test.jsonl').as_uri()}"):
        run_dedup(folder.as_uri(), DedupConfig(min_tokens=1, engine="spark"))


def test_a_parquet_code_column_of_numbers_is_refused_on_spark(spark, tmp_path):
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": ["a", "b"], "content": [1, 2]}), path)
    local, on_spark = both_refuse(path)
    assert "--code-column 'content' holds numbers, not text, in 2 of 2 rows" in local, local
    assert on_spark.startswith("--code-column 'content' holds numbers (Spark read bigint), not text; e.g. 1 in"), on_spark
    assert path.as_uri() in on_spark


def test_a_lone_surrogate_is_refused_on_spark_as_locally(spark, tmp_path):
    # Spark's reader made "\ud800" a `?` and went on
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{k}", "content": CODE.format(k=k)}) + "\n" for k in range(3))
                    + '{"id": "r3", "content": "x = \\ud800"}\n')
    local, on_spark = both_refuse(path)
    assert "line 4 holds a lone UTF-16 surrogate escape (\\ud800)" in local
    assert f"line 4 of {path.as_uri()} holds a lone UTF-16 surrogate escape (\\ud800)" in on_spark, on_spark


def test_null_code_cells_are_read_on_spark_as_locally(spark, tmp_path):
    path = jsonl(tmp_path / "rows.jsonl", [{"id": f"r{k}", "content": CODE.format(k=k) if k % 2 else None}
                                           for k in range(4)])
    runs = [run_dedup(source, DedupConfig(min_tokens=1, **engine)) for source, engine in
            ((str(path), {}), (path.as_uri(), {"engine": "spark"}))]
    assert [run.report["overall"]["files"] for run in runs] == [4, 4]
    assert [run.report["overall"]["analysed"] for run in runs] == [2, 2]


@pytest.mark.parametrize("bad, said", [
    ("{not json", "line 2 of {uri} is not valid JSON"),
    ('{"id": "c", "content": "def', "line 2 of {uri} is not valid JSON"),
    ("5", "line 2 of {uri} is a JSON int, not an object"),
    ('[{"id": "c", "content": "x = 1"}, {"id": "d", "content": "y = 2"}]', "line 2 of {uri} is a JSON list, not an object"),
])
def test_a_malformed_json_line_is_refused_on_spark_naming_file_and_line(spark, tmp_path, bad, said):
    # Spark made a _corrupt_record of the first two and split a line holding a list into rows
    path = jsonl(tmp_path / "rows.jsonl", [{"id": "a", "content": CODE.format(k=1)}, bad, {"id": "b", "content": CODE.format(k=2)}])
    local, on_spark = both_refuse(path)
    assert said.replace(" of {uri}", "") in local
    assert said.format(uri=path.as_uri()) in on_spark, on_spark


def test_empty_json_lines_files_are_named_on_spark(spark, tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    local, on_spark = both_refuse(path)
    assert local.endswith("empty.jsonl: the file is empty")
    assert on_spark == f"{path.as_uri()}: the file is empty", on_spark
    folder = tmp_path / "splits"
    folder.mkdir()
    jsonl(folder / "train.jsonl", [{"id": "a", "content": CODE.format(k=1)}])
    (folder / "test.jsonl").write_text("\n")
    with pytest.raises(DataError, match=r"no rows in split 'test' \(" + (folder / "test.jsonl").as_uri()):
        run_dedup(folder.as_uri(), DedupConfig(min_tokens=1, engine="spark"))


def test_keys_differing_only_in_case_are_explained_on_spark(spark, tmp_path):
    # Spark matches column names case-insensitively by default: COLUMN_ALREADY_EXISTS, a SparkJobError
    path = jsonl(tmp_path / "rows.jsonl", [{"id": f"r{k}", "content": CODE.format(k=k), "Content": "x"} for k in range(3)])
    with pytest.raises(DataError) as refused:
        run_dedup(path.as_uri(), DedupConfig(min_tokens=1, engine="spark"))
    said = str(refused.value)
    assert said.startswith(f"{path.as_uri()}: columns whose names differ only in case ('content' and"), said
    assert "spark.sql.caseSensitive=true" in said and "rename" in said
    # as asked: the local engine's outputs (it tells the columns apart)
    run_dedup(str(path), DedupConfig(min_tokens=1, output_format="jsonl"), output_dir=tmp_path / "local")
    with spark_setting(spark, "spark.sql.caseSensitive", "true"):
        run_dedup(path.as_uri(), DedupConfig(min_tokens=1, engine="spark", output_format="jsonl"),
                  output_dir=tmp_path / "spark")
    same_small_outputs(tmp_path / "local", tmp_path / "spark")


def test_against_as_a_file_uri_on_spark(spark, tmp_path):
    path = jsonl(tmp_path / "rows.jsonl", [{"id": f"r{k}", "content": CODE.format(k=k)} for k in range(4)])
    reference = jsonl(tmp_path / "ref.jsonl", [{"task_id": "R/0", "content": CODE.format(k=0)}])
    run = run_dedup(path.as_uri(), DedupConfig(min_tokens=1, engine="spark", against=reference.as_uri()))
    assert run.report["contamination"]["contaminated_rows"] == 1


def test_an_empty_split_name_is_refused_on_spark(spark, tmp_path):
    path = jsonl(tmp_path / "rows.jsonl", [{"id": f"r{k}", "content": CODE.format(k=k), "split": "" if k % 2 else "train"}
                                           for k in range(4)])
    local, on_spark = both_refuse(path, split_column="split")
    for said in (local, on_spark):  # blank names too: tests/dedup/test_spark_input_refusals.py
        assert "2 rows have no value in --split-column 'split' (null, NaN or blank; rows 2, 4," in said, said


@pytest.mark.parametrize("name", ["rows.csv", "src"])
def test_a_csv_file_or_source_folder_uri_gets_advice_on_spark(spark, tmp_path, name):
    path = tmp_path / name
    if name == "src":
        path.mkdir()
        (path / "a.py").write_text(CODE.format(k=1))
    else:
        path.write_text("id,content\na,x = 1\n")
    with pytest.raises(DataError) as refused:
        run_dedup(path.as_uri(), DedupConfig(min_tokens=1, engine="spark"))
    said = str(refused.value)
    assert "Spark reads JSON Lines and Parquet here" in said, said
    assert f"give its local path ({path})" in said
    what = "a CSV file" if name == "rows.csv" else "a source file (a.py)"
    assert what in said, said


def test_no_pandas_future_warning_when_a_spark_session_starts(tmp_path):
    # pyspark warns about pandas >= 3 when its converters first load; the Spark engine uses no pandas
    script = ("import warnings; warnings.simplefilter('always')\n"
              "from workbench.dedup import DedupConfig\nfrom workbench.dedup.spark import spark_session\n"
              "with spark_session(DedupConfig(engine='spark', spark_master='local[1]')) as spark:\n"
              "    spark.range(1).count()\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "FutureWarning" not in done.stderr, done.stderr


def test_the_hadoop_aws_version_in_the_docs_is_the_hadoop_pyspark_bundles():
    # a hadoop-aws of another Hadoop than Spark's own fails at the first s3a:// read (NoSuchMethodError)
    pyspark = pytest.importorskip("pyspark")
    bundled = {jar.name.rsplit("-", 1)[1].removesuffix(".jar")
               for jar in (Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar")}
    assert len(bundled) == 1
    root = Path(__file__).resolve().parents[2]
    texts = {path: path.read_text() for path in [root / "docs" / "dedup.md", *(root / "workbench" / "dedup").glob("spark*.py")]}
    named = {(path.name, version) for path, text in texts.items()
             for version in re.findall(r"hadoop-aws:(\d[\d.]*\d)", text)}
    assert named and {version for _, version in named} == bundled, named


# ---------------------------------------------------------------- fix 32: one folder, read alike by both engines


def two_kinds(folder: Path, case: str) -> str:
    """Write a folder whose files give one column two kinds of value; return what both engines must say."""
    folder.mkdir()
    code = [CODE.format(k=k) for k in range(4)]
    if case == "parquet code ints in a split":
        pq.write_table(pa.table({"id": ["a", "b"], "content": code[:2]}), folder / "train.parquet")
        pq.write_table(pa.table({"id": ["c", "d"], "content": [3, 4]}), folder / "test.parquet")
        return "column 'content' holds text in train.parquet but numbers in test.parquet"
    if case == "parquet code ints in a shard":
        pq.write_table(pa.table({"id": ["a"], "content": code[:1]}), folder / "train-00000-of-00002.parquet")
        pq.write_table(pa.table({"id": ["b"], "content": [5]}), folder / "train-00001-of-00002.parquet")
        return "column 'content' holds text in train-00000-of-00002.parquet but numbers in train-00001-of-00002.parquet"
    if case == "parquet extra column in a shard":  # a column the driver never reads: Spark failed when writing
        pq.write_table(pa.table({"id": ["a"], "content": code[:1], "stars": [3]}), folder / "train-00000-of-00002.parquet")
        pq.write_table(pa.table({"id": ["b"], "content": code[1:2], "stars": ["many"]}),
                       folder / "train-00001-of-00002.parquet")
        return "column 'stars' holds numbers in train-00000-of-00002.parquet but text in train-00001-of-00002.parquet"
    if case == "parquet ids":
        pq.write_table(pa.table({"id": [1, 2], "content": code[:2]}), folder / "train.parquet")
        pq.write_table(pa.table({"id": ["c", "d"], "content": code[2:]}), folder / "test.parquet")
        return "column 'id' holds numbers in train.parquet but text in test.parquet"
    if case == "jsonl code ints in a shard":
        jsonl(folder / "train-00000-of-00002.jsonl", [{"id": "a", "content": code[0]}])
        jsonl(folder / "train-00001-of-00002.jsonl", [{"id": "b", "content": 5}])
        return "column 'content' holds text in train-00000-of-00002.jsonl but numbers in train-00001-of-00002.jsonl"
    jsonl(folder / "train.jsonl", [{"id": 1, "content": code[0]}])
    jsonl(folder / "test.jsonl", [{"id": "c", "content": code[1]}])
    return "column 'id' holds numbers in train.jsonl but text in test.jsonl"


@pytest.mark.parametrize("case", ["parquet code ints in a split", "parquet code ints in a shard", "parquet ids",
                                  "parquet extra column in a shard",
                                  "jsonl code ints in a shard", "jsonl ids"])
def test_a_column_of_two_kinds_over_the_files_is_refused_alike_by_both_engines(spark, tmp_path, case):
    # local: datasets cast test.parquet's integers to the code "3", "4" (or failed raw on text ids); Spark: a raw
    # CAST_INVALID_INPUT / PARQUET_COLUMN_DATA_TYPE_MISMATCH, or its JSON reader merged numbers into text
    folder = tmp_path / "data"
    said = two_kinds(folder, case)
    local, on_spark = both_refuse(folder)
    assert local.startswith(f"{folder}: {said}: every file of a dataset must give a column one type"), local
    assert on_spark.replace(folder.as_uri(), str(folder)) == local, on_spark


@pytest.mark.parametrize("case", ["one file", "a folder", "past the first 10 MB"])
def test_a_column_of_two_kinds_in_a_files_rows_is_refused_alike_by_both_engines(spark, tmp_path, case):
    # Spark's JSON reader read `stars` (5, then "many") as text, "5"; the local loader read the rows' own values in
    # a file's first 10 MB (datasets' JSON objects) and refused the file past them: neither engine now reads it
    folder = tmp_path / "data"
    folder.mkdir()
    code = [CODE.format(k=k) for k in range(4)]
    rows = [{"id": f"r{k}", "content": code[k], "stars": 5} for k in range(3)] + [{"id": "r3", "content": code[3],
                                                                                   "stars": "many"}]
    if case == "one file":
        source, name, lines = jsonl(folder / "rows.jsonl", rows), "rows.jsonl", (1, 4)
    elif case == "a folder":
        jsonl(folder / "train.jsonl", rows[:3])
        jsonl(folder / "test.jsonl", [rows[0] | {"stars": None}, rows[1], rows[3]])
        source, name, lines = folder, "test.jsonl", (2, 3)
    else:
        pad, size, lines_written = "x" * 200, 0, []
        while size < (10 << 20) + (1 << 19):
            lines_written.append(json.dumps({"id": f"r{len(lines_written)}", "content": code[0], "p": pad,
                                             "stars": 5 if size < (10 << 20) + 1000 else "many"}))
            size += len(lines_written[-1]) + 1
        source, name = jsonl(folder / "big.jsonl", lines_written), "big.jsonl"
        lines = (1, next(n for n, line in enumerate(lines_written, 1) if '"many"' in line))
    local, on_spark = both_refuse(source)
    assert local == (f"{source}: column 'stars' holds numbers at line {lines[0]} of {name} but text at line "
                     f"{lines[1]:,}: a column must hold one type of value in every row (Spark would read them all as "
                     f"text, datasets fails past a file's first 10 MB); write 'stars' as one type in every row (e.g. "
                     f"all text)"), local
    assert on_spark.replace(source.as_uri(), str(source)) == local, on_spark


@pytest.mark.parametrize("case", ["one file", "a folder"])
def test_lists_of_numbers_and_of_text_are_refused_alike_by_both_engines(spark, tmp_path, case):
    # Spark's JSON reader read `tags` ([1] in some rows or files, ["x"] in others) as lists of text; datasets
    # failed with a raw cast error (or, in one file's first 10 MB, kept each row's own values)
    folder = tmp_path / "data"
    folder.mkdir()
    rows = [{"id": f"r{k}", "content": CODE.format(k=k), "tags": tags} for k, tags in enumerate([[], [1], [None], ["x"]])]
    if case == "one file":
        source = jsonl(folder / "rows.jsonl", rows)
        said = (f"{source}: column 'tags' (at 'tags/[]') holds numbers at line 2 of rows.jsonl but text at line 4: a "
                f"column must hold one type of value in every row")
    else:
        jsonl(folder / "train.jsonl", rows[:3])
        jsonl(folder / "test.jsonl", rows[3:])
        source = folder
        said = (f"{folder}: column 'tags' holds lists of numbers in train.jsonl but lists of text in test.jsonl: every "
                f"file of a dataset must give a column one type")
    local, on_spark = both_refuse(source)
    assert local.startswith(said), local
    assert on_spark.replace(source.as_uri(), str(source)) == local, on_spark


def test_iso_dates_in_json_lines_are_text_on_both_engines(spark, tmp_path):
    # the local loader read "2024-01-02" as pyarrow's timestamp (written back "2024-01-02T00:00:00", a "Z"
    # dropped) and refused this folder as "holds timestamp in train.jsonl but text in test.jsonl"; Spark read text
    folder = tmp_path / "data"
    folder.mkdir()
    code = [CODE.format(k=k) for k in range(3)]
    jsonl(folder / "train.jsonl", [{"id": "2024-01-02", "content": code[0], "when": "2024-01-02"},
                                   {"id": "2024-01-03T10:00:00Z", "content": code[0], "when": "2024-01-03T10:00:00Z"}])
    jsonl(folder / "test.jsonl", [{"id": "c", "content": code[1], "when": "soon"}])
    options = {"min_tokens": 1, "workers": 1, "output_format": "jsonl"}
    run_dedup(str(folder), DedupConfig(**options), output_dir=tmp_path / "local")
    run_dedup(folder.as_uri(), DedupConfig(engine="spark", **options), output_dir=tmp_path / "spark")
    for split in ("train", "test"):
        local = [json.loads(line) for line in (tmp_path / "local" / f"{split}.jsonl").read_text().splitlines()]
        on_spark = [json.loads(line) for file in sorted((tmp_path / "spark" / split).glob("part-*.json"))
                    for line in file.read_text().splitlines()]
        assert local == on_spark, split
    assert [row["when"] for row in local] == ["soon"]
    assert (tmp_path / "local" / "removed.csv").read_text() == (tmp_path / "spark" / "removed.csv").read_text()
    assert "2024-01-03T10:00:00Z" in (tmp_path / "local" / "removed.csv").read_text()


def test_both_engines_list_hidden_and_non_data_files_alike_and_read_underscored_data_files(spark, tmp_path):
    # Spark skipped .hidden and _prefixed files unlisted (and so did not read _part/train-1.jsonl, which the local
    # loader reads), and refused the folder for its README.md
    folder = tmp_path / "data"
    (folder / "_part").mkdir(parents=True)
    jsonl(folder / "train.jsonl", [{"id": "a", "content": CODE.format(k=1)}])
    jsonl(folder / "_part" / "train-1.jsonl", [{"id": "b", "content": CODE.format(k=2)}])
    jsonl(folder / ".hidden.jsonl", [{"id": "h", "content": CODE.format(k=3)}])
    for name in (".git/config", "__pycache__/m.pyc", "sub/.part-0.jsonl.swp"):
        (folder / name).parent.mkdir(exist_ok=True)
        (folder / name).write_text("x")
    for name in ("README.md", "LICENSE", "_SUCCESS"):
        (folder / name).write_text("# data\n")
    options = {"min_tokens": 1, "workers": 1, "output_format": "jsonl"}
    runs = {engine: run_dedup(source, DedupConfig(**options, engine=engine), output_dir=tmp_path / engine)
            for engine, source in (("local", str(folder)), ("spark", folder.as_uri()))}
    assert runs["local"].result.rows.ids == runs["spark"].result.rows.ids == ["b", "a"]  # path order: _part/ first
    assert filecmp.cmp(tmp_path / "local" / "unreadable.csv", tmp_path / "spark" / "unreadable.csv", shallow=False)
    listed = [json.loads((tmp_path / engine / "report.json").read_text())["skipped_files"] for engine in runs]
    assert listed[0] == listed[1]
    assert {entry["path"] for entry in listed[0]} == {"LICENSE", "README.md", "_SUCCESS", ".git/", ".hidden.jsonl",
                                                      "__pycache__/", "sub/.part-0.jsonl.swp"}
    with open(tmp_path / "spark" / "unreadable.csv") as handle:  # datasets reads none into a split: listed in none
        assert {row["split"] for row in csv.DictReader(handle)} == {""}


def listed_by_both_engines(folder: Path, tmp_path: Path, *, ids: list[str], keyed: bool) -> dict:
    """Dedup ``folder`` with both engines (outputs in ``tmp_path/local`` and ``tmp_path/spark``), check that both
    read the rows ``ids`` in that order, and return each engine's unreadable.csv: ``{engine: {id: (split, reason)}}``
    (``keyed``) or ``{engine: [(id, split, reason), ...]}`` in its file order."""
    options = {"min_tokens": 1, "workers": 1, "output_format": "jsonl"}
    runs = {engine: run_dedup(source, DedupConfig(**options, engine=engine), output_dir=tmp_path / engine)
            for engine, source in (("local", str(folder)), ("spark", folder.as_uri()))}
    assert runs["local"].result.rows.ids == runs["spark"].result.rows.ids == ids
    listed = {}
    for engine in runs:
        with open(tmp_path / engine / "unreadable.csv") as handle:
            rows = list(csv.DictReader(handle))
        listed[engine] = ({row["id"]: (row["split"], row["reason"]) for row in rows} if keyed
                          else [(row["id"], row["split"], row["reason"]) for row in rows])
    return listed


def test_both_engines_list_double_underscore_folders_and_folder_links_in_no_split_with_their_reason(spark, tmp_path):
    # leftovers39b: __extra/test.jsonl (datasets reads no file in a folder named __*) was listed as "its name names
    # no split" by both engines; a link to a folder was listed under split 'train' by the local loader
    folder, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    (folder / "__extra").mkdir(parents=True)
    elsewhere.mkdir()
    jsonl(folder / "train.jsonl", [{"id": "a", "content": CODE.format(k=1)}])
    jsonl(folder / "test.jsonl", [{"id": "t", "content": CODE.format(k=2)}])
    jsonl(folder / "__extra" / "test.jsonl", [{"id": "e", "content": CODE.format(k=3)}])
    jsonl(elsewhere / "test.jsonl", [{"id": "l", "content": CODE.format(k=4)}])
    (folder / "linked").symlink_to(elsewhere, target_is_directory=True)
    listed = listed_by_both_engines(folder, tmp_path, ids=["a", "t"], keyed=True)
    special = "not loaded: folder whose name starts with '__' (datasets reads no file in it): its files are not read"
    assert listed["local"] == {"__extra/": ("", special),
                               "linked": ("", "not loaded: symbolic link to a folder (not followed)")}, listed
    assert listed["spark"] == listed["local"], listed


def test_both_engines_list_a_link_named_double_underscore_and_a_double_underscore_folder_of_links_alike(spark, tmp_path):
    # review40: a folder named __* that holds only a link to a folder was listed by Spark (whose local file system
    # follows the link) and by neither name on the local engine (its link dropped as inside __extra/, the folder
    # not listed for want of a file); a link named __linked was a "folder whose name starts with '__'" on Spark
    # and a "symbolic link to a folder" on the local engine, which follows no link
    folder, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    (folder / "__extra").mkdir(parents=True)
    elsewhere.mkdir()
    jsonl(folder / "train.jsonl", [{"id": "a", "content": CODE.format(k=1)}])
    jsonl(elsewhere / "test.jsonl", [{"id": "l", "content": CODE.format(k=4)}])
    (folder / "__extra" / "linked").symlink_to(elsewhere, target_is_directory=True)
    (folder / "__linked").symlink_to(elsewhere, target_is_directory=True)
    listed = listed_by_both_engines(folder, tmp_path, ids=["a"], keyed=True)
    special = "not loaded: folder whose name starts with '__' (datasets reads no file in it): its files are not read"
    assert listed["local"] == {"__extra/": ("", special),
                               "__linked": ("", "not loaded: symbolic link to a folder (not followed)")}, listed
    assert listed["spark"] == listed["local"], listed


def test_both_engines_list_a_double_underscore_folder_of_hidden_files_once_with_its_reason(spark, tmp_path):
    # leftovers40c: __extra/.x.jsonl (a folder named __* that holds only hidden files) was a "hidden file" on the
    # local engine and one __extra/ entry on Spark; a hidden file beside a data file in __both/ was listed on the
    # local engine beside __both/, and __more/.git/ as a hidden folder; __pycache__/ stays a hidden folder
    folder = tmp_path / "data"
    for name in ("__extra", "__more/.git", "__both", "__pycache__"):
        (folder / name).mkdir(parents=True)
    jsonl(folder / "train.jsonl", [{"id": "a", "content": CODE.format(k=1)}])
    jsonl(folder / "__extra" / ".x.jsonl", [{"id": "x", "content": CODE.format(k=2)}])
    jsonl(folder / "__both" / "test.jsonl", [{"id": "t", "content": CODE.format(k=3)}])
    jsonl(folder / "__both" / ".y.jsonl", [{"id": "y", "content": CODE.format(k=4)}])
    (folder / "__more" / ".git" / "config").write_text("x")
    (folder / "__pycache__" / "m.pyc").write_text("x")
    listed = listed_by_both_engines(folder, tmp_path, ids=["a"], keyed=True)
    special = "not loaded: folder whose name starts with '__' (datasets reads no file in it): its files are not read"
    assert listed["local"] == {"__both/": ("", special), "__extra/": ("", special), "__more/": ("", special),
                               "__pycache__/": ("", "not loaded: hidden folder (__pycache__, compiled files): its "
                                                    "files are not read")}, listed
    assert listed["spark"] == listed["local"], listed


def test_both_engines_list_broken_symbolic_links_of_a_data_folder_alike(spark, tmp_path):
    """leftover of session 40: the local loader lists a data folder's broken symbolic links in unreadable.csv (no
    split, "broken symbolic link"; a hidden one as hidden), Spark's file listing left them out without a word (its
    unreadable.csv was not even written). Both now list the same entries, and read the same rows."""
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    jsonl(folder / "train.jsonl", [{"id": "a", "content": CODE.format(k=1)}])
    jsonl(folder / "test.jsonl", [{"id": "t", "content": CODE.format(k=2)}])
    (folder / "gone").symlink_to(tmp_path / "missing")
    (folder / "validation.jsonl").symlink_to(tmp_path / "missing.jsonl")  # a data file's name, a split's name
    (folder / "sub" / "train.jsonl").symlink_to(tmp_path / "nowhere" / "train.jsonl")
    (folder / ".gone.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (folder / ".cache").mkdir()  # a hidden folder of only a broken link: listed as the hidden folder
    (folder / ".cache" / "x.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (folder / "__extra").mkdir()  # datasets reads nothing in a folder named __*: the folder is listed, once
    (folder / "__extra" / "test.jsonl").symlink_to(tmp_path / "missing.jsonl")
    listed = listed_by_both_engines(folder, tmp_path, ids=["a", "t"], keyed=False)
    broken = "not loaded: broken symbolic link"
    assert listed["local"][:3] == [("gone", "", broken), ("sub/train.jsonl", "", broken),
                                   ("validation.jsonl", "", broken)], listed
    assert [entry[0] for entry in listed["local"][3:]] == [".cache/", ".gone.jsonl", "__extra/"], listed
    assert listed["spark"] == listed["local"], listed


def test_a_folder_of_only_broken_links_and_a_broken_link_given_alone_are_refused_alike(spark, tmp_path):
    """leftover of session 40: a folder whose only entries were broken links was "the folder has no files" on the
    local engine and "no data files there (hidden files, ... are not read)" on Spark, neither naming the links; a
    broken link given as SOURCE was "no such file or folder" on both, not saying it is a link."""
    folder = tmp_path / "data"
    (folder / "sub").mkdir(parents=True)
    (folder / "gone.jsonl").symlink_to(tmp_path / "missing.jsonl")
    (folder / "sub" / "train.jsonl").symlink_to(tmp_path / "missing.jsonl")
    local, on_spark = both_refuse(folder)
    said = "no file to read there, only broken symbolic links (gone.jsonl, sub/train.jsonl); fix or remove them"
    assert (local, on_spark) == (f"{folder}: {said}", f"{folder.as_uri()}: {said}")
    alone = tmp_path / "alone.jsonl"
    alone.symlink_to(tmp_path / "missing.jsonl")
    local, on_spark = both_refuse(alone)
    said = (f"a broken symbolic link (to {tmp_path / 'missing.jsonl'}, which does not exist); fix the link or pass "
            "the file it should name")
    assert (local, on_spark) == (f"{alone}: {said}", f"{alone.as_uri()}: {said}")
@pytest.mark.parametrize("files, said", [
    ([".x.jsonl"], ".x.jsonl (hidden file (name starts with '.'))"),
    (["__extra/.x.jsonl"], "__extra/ (folder whose name starts with '__' (datasets reads no file in it): its files are "
                           "not read)"),
    ([".git/config", "__pycache__/m.pyc", ".a.jsonl", ".b.jsonl"],
     ".a.jsonl (hidden file (name starts with '.')), .b.jsonl (hidden file (name starts with '.')), .git/ (hidden "
     "folder (name starts with '.'): its files are not read), and 1 more"),
], ids=["hidden file", "hidden file in __extra", "several"])
def test_a_folder_of_files_neither_engine_reads_is_refused_alike_naming_them(spark, tmp_path, files, said):
    # leftovers40d: the local engine said "the folder has no files" of a folder that has some, all hidden; Spark
    # said "no data files there (hidden files, files in folders named __*, _SUCCESS and .crc files are not read)",
    # naming none of them. Both name what is there, as their skipped_files would list it
    folder = tmp_path / "data"
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        jsonl(folder / name, [{"id": "a", "content": CODE.format(k=1)}])
    local, on_spark = both_refuse(folder)
    assert local == (f"{folder}: no file there is read: {said}; give the data files names that are read, or pass "
                     f"the folder that holds them"), local
    assert on_spark.replace(folder.as_uri(), str(folder)) == local, on_spark


def test_an_empty_folder_is_refused_alike_by_both_engines(spark, tmp_path):
    # leftovers40d: Spark's refusal of an empty folder spoke of hidden files, _SUCCESS and .crc files
    folder = tmp_path / "data"
    folder.mkdir()
    local, on_spark = both_refuse(folder)
    assert local == f"{folder}: the folder has no files", local
    assert on_spark.replace(folder.as_uri(), str(folder)) == local, on_spark


# ---------------------------------------------------------------- fix 33: widened columns, mixed formats, --split-column


def kept_cells(folder: Path, columns: tuple[str, ...]) -> dict[str, list[tuple]]:
    """Split -> the kept rows' ``columns`` of a jsonl output folder (local ``<split>.jsonl`` or Spark's ``<split>/``)."""
    found: dict[str, list[tuple]] = {}
    for path in sorted(folder.iterdir()):
        files = sorted(path.glob("part-*.json")) if path.is_dir() else [path] if path.suffix == ".jsonl" else []
        rows = [json.loads(line) for file in files for line in file.read_text().splitlines()]
        if files:
            found[path.name.removesuffix(".jsonl")] = sorted(tuple(row[c] for c in columns) for row in rows)
    return found


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_nulls_then_text_and_integers_then_floats_are_read_alike_by_both_engines(spark, tmp_path, form):
    # local: datasets' raw "Couldn't cast array of type string to null" / "Float value 0.500000 was truncated";
    # Spark: a raw PARQUET_COLUMN_DATA_TYPE_MISMATCH when writing, and a Parquet column of nulls was "numbers"
    folder = tmp_path / "data"
    folder.mkdir()
    code = [CODE.format(k=k) for k in range(6)]
    # stars: integers in one file, nulls only in the others (the whole test split: Spark's JSON reader typed it text)
    parts = {"train-00000-of-00002": dict(id=["a", "b"], content=code[:2], note=[None, None], score=[1, 2],
                                          stars=[None, None]),
             "train-00001-of-00002": dict(id=["c", "d"], content=code[2:4], note=["x", None], score=[0.5, 1.5],
                                          stars=[7, None]),
             "test": dict(id=["e", "f"], content=code[4:], note=[None, None], score=[3, 4], stars=[None, None])}
    for name, columns in parts.items():
        if form == "jsonl":
            jsonl(folder / f"{name}.jsonl", [dict(zip(columns, row)) for row in zip(*columns.values())])
        else:
            pq.write_table(pa.table({**columns, "note": pa.array(columns["note"]), "stars": pa.array(columns["stars"])}),
                           folder / f"{name}.parquet")
    options = {"min_tokens": 1, "workers": 1, "output_format": "jsonl"}
    run_dedup(str(folder), DedupConfig(**options), output_dir=tmp_path / "local")
    # without ANSI mode Spark's union of a text and a number column is text: the stars of the test split's read
    with spark_setting(spark, "spark.sql.ansi.enabled", "false"):
        run_dedup(folder.as_uri(), DedupConfig(**options, engine="spark"), output_dir=tmp_path / "spark")
    local, on_spark = (kept_cells(tmp_path / engine, ("id", "note", "score", "stars")) for engine in ("local", "spark"))
    assert local == on_spark == {"train": [("a", None, 1.0, None), ("b", None, 2.0, None), ("c", "x", 0.5, 7),
                                           ("d", None, 1.5, None)],
                                 "test": [("e", None, 3.0, None), ("f", None, 4.0, None)]}, (local, on_spark)


def test_a_folder_of_two_formats_is_refused_alike_by_both_engines(spark, tmp_path):
    # local: the JSON file was left out (a warning), or a split of it refused; Spark: "holds both Parquet and JSON
    # files ... pass --input-format" (which would read the .jsonl file as Parquet), and a dataset_info.json beside
    # Parquet files was refused as JSON
    folder = tmp_path / "data"
    folder.mkdir()
    pq.write_table(pa.table({"id": ["a", "b"], "content": [CODE.format(k=1), CODE.format(k=2)]}),
                   folder / "train.parquet")
    pq.write_table(pa.table({"id": ["c"], "content": [CODE.format(k=3)]}), folder / "train-2.parquet")
    (folder / "dataset_info.json").write_text("{}\n")
    assert run_dedup(folder.as_uri(), DedupConfig(min_tokens=1, engine="spark")).result.rows.ids == ["c", "a", "b"]
    jsonl(folder / "test.jsonl", [{"id": "d", "content": CODE.format(k=4)}])
    local, on_spark = both_refuse(folder)
    assert local == (f"{folder}: holds data files of 2 formats, 2 Parquet files (train-2.parquet, ...) and 1 JSON "
                     f"file (test.jsonl): a dataset's files are read with one reader, one format per folder; convert "
                     f"them to one format (e.g. all Parquet or all JSON Lines), or move the files of the other format "
                     f"out of the folder"), local
    assert on_spark.replace(folder.as_uri(), str(folder)) == local, on_spark


def test_split_column_reads_the_local_loaders_files_in_its_order_on_spark(spark, tmp_path):
    # Spark read every listed file in path order with --split-column: test.jsonl's rows before train.jsonl's, and
    # notes.jsonl, which names no split and which the local loader leaves out (and lists)
    folder = tmp_path / "data"
    folder.mkdir()
    jsonl(folder / "test.jsonl", [{"id": "t", "content": CODE.format(k=1), "part": "b"}])
    jsonl(folder / "train.jsonl", [{"id": "r", "content": CODE.format(k=2), "part": "a"}])
    jsonl(folder / "notes.jsonl", [{"id": "n", "content": CODE.format(k=3), "part": "a"}])
    options = {"min_tokens": 1, "workers": 1, "split_column": "part", "output_format": "jsonl"}
    runs = {engine: run_dedup(source, DedupConfig(**options, engine=engine), output_dir=tmp_path / engine)
            for engine, source in (("local", str(folder)), ("spark", folder.as_uri()))}
    assert runs["local"].result.rows.ids == runs["spark"].result.rows.ids == ["r", "t"]
    assert list(runs["spark"].result.rows.split_ranges) == ["a", "b"]
    listed = [json.loads((tmp_path / engine / "report.json").read_text())["skipped_files"] for engine in runs]
    assert listed[0] == listed[1] and [entry["path"] for entry in listed[0]] == ["notes.jsonl"]


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_files_of_other_columns_are_read_alike_by_both_engines_missing_ones_null(spark, tmp_path, form):
    # local: datasets refused a later file with a column the first lacks ("Couldn't cast ... because column names
    # don't match"), in one split or across splits; both engines read every column, a missing one as nulls
    folder = tmp_path / "data"
    folder.mkdir()
    code = [CODE.format(k=k) for k in range(4)]
    parts = {"train-00000-of-00002": [{"id": "a", "content": code[0]}],
             "train-00001-of-00002": [{"id": "b", "content": code[1], "note": "x"}],
             "test": [{"id": "c", "content": code[2], "score": 0.5}, {"id": "d", "content": code[3], "score": 2.0}]}
    for name, rows in parts.items():
        if form == "jsonl":
            jsonl(folder / f"{name}.jsonl", rows)
        else:
            pq.write_table(pa.Table.from_pylist(rows), folder / f"{name}.parquet")
    options = {"min_tokens": 1, "workers": 1, "output_format": "jsonl"}
    run_dedup(str(folder), DedupConfig(**options), output_dir=tmp_path / "local")
    run_dedup(folder.as_uri(), DedupConfig(**options, engine="spark"), output_dir=tmp_path / "spark")
    local, on_spark = (kept_cells(tmp_path / engine, ("id", "note", "score")) for engine in ("local", "spark"))
    assert local == on_spark == {"train": [("a", None, None), ("b", "x", None)],
                                 "test": [("c", None, 0.5), ("d", None, 2.0)]}, (local, on_spark)


def test_a_folder_saved_by_datasets_is_refused_by_spark_not_read_from_its_state_json(spark, tmp_path):
    # a save_to_disk folder (--output-format hf's dataset/) holds its rows in .arrow files, which Spark does not read:
    # its state.json (JSON) was taken for the data; the local loader reads the folder with load_from_disk
    import datasets

    rows = datasets.Dataset.from_dict({"task_id": ["a", "b"], "code": ["x = 1", "y = 2"]})
    datasets.DatasetDict({"train": rows}).save_to_disk(str(tmp_path / "saved"))
    with pytest.raises(DataError, match=r"saved/?: a folder datasets' save_to_disk wrote \(dataset_dict\.json\): its "
                                        r"rows are in \.arrow files, which Spark does not read"):
        run_dedup((tmp_path / "saved").as_uri(), DedupConfig(engine="spark", code_column="code"))


# ---------------------------------------------------------------- fix 35b: code columns, nested types, BOMs, encodings


def big_code_file(path: Path, odd_line: dict) -> tuple[Path, int]:
    """A JSON Lines file past datasets' first 10 MB chunk whose code column turns to ``odd_line`` after it."""
    pad, size, lines = "x" * 200, 0, []
    while size < (10 << 20) + (1 << 19):
        late = size >= (10 << 20) + 1000
        lines.append(json.dumps(odd_line | {"id": f"r{len(lines)}"} if late and odd_line else
                                {"id": f"r{len(lines)}", "content": CODE.format(k=len(lines) % 7), "p": pad}))
        size += len(lines[-1]) + 1
        if late:
            odd_line = None
    return jsonl(path, lines), next(n for n, line in enumerate(lines, 1) if '"content": 5' in line)


def test_a_code_column_of_two_kinds_in_a_folder_or_past_10_mb_is_refused_alike_by_both_engines(spark, tmp_path):
    # local: the generic "column 'content' holds text at line 1 of test.jsonl but numbers at line 2"; Spark: the
    # code column's own words, naming the line that is not text
    folder = tmp_path / "data"
    folder.mkdir()
    jsonl(folder / "train.jsonl", [{"id": "a", "content": CODE.format(k=1)}])
    jsonl(folder / "test.jsonl", [{"id": "b", "content": CODE.format(k=2)}, {"id": "c", "content": 5}])
    big, line = big_code_file(tmp_path / "big.jsonl", {"content": 5, "p": "y"})
    for source, file, number in ((folder, folder / "test.jsonl", 2), (big, big, line)):
        local, on_spark = both_refuse(source)
        assert local == (f"--code-column 'content' holds a cell that is not text at line {number} of {file}: '5' "
                         f"(int); each row's code must be a string (a number, list or object in some row makes the "
                         f"whole column non-text); fix those rows or name the column that holds the code"), local
        assert on_spark.replace(file.as_uri(), str(file)) == local, on_spark


@pytest.mark.parametrize("form", ["jsonl", "parquet"])
def test_nested_values_of_two_kinds_over_the_files_are_refused_alike_and_others_unified(spark, tmp_path, form):
    # JSON Lines: the local loader refused meta ({"n": 1}, then {"n": "x"}) in pyarrow's words (struct<n: int64>),
    # Spark's reader merged it into text; Parquet: the local loader refused, Spark read one file's type
    code = [CODE.format(k=k) for k in range(4)]
    refused = {"meta": ([{"n": 1}], [{"n": "x"}], "column 'meta' (at 'meta/n') holds numbers in train.{f} but text in "
                                                  "test.{f}: every file of a dataset must give a column one type, "
                                                  "inside its objects too"),
               "tags": ([[1]], [["x"]], "column 'tags' holds lists of numbers in train.{f} but lists of text in "
                                        "test.{f}: every file of a dataset must give a column one type")}
    for column, (first, later, said) in refused.items():
        folder = tmp_path / column
        folder.mkdir()
        for name, cells, rows in (("train", first, code[:1]), ("test", later, code[1:2])):
            table = pa.table({"id": [name], "content": rows, column: cells})
            pq.write_table(table, folder / f"{name}.parquet") if form == "parquet" else \
                jsonl(folder / f"{name}.jsonl", table.to_pylist())
        local, on_spark = both_refuse(folder)
        assert local.startswith(f"{folder}: {said.format(f=form)}"), local
        assert on_spark.replace(folder.as_uri(), str(folder)) == local, on_spark
    # one kind inside, several types: read as their union by both (lists of nulls and of text, numbers, new fields)
    folder = tmp_path / "unified"
    folder.mkdir()
    parts = {"train-00000-of-00002": {"id": ["a"], "content": code[2:3], "tags": pa.array([[]], pa.list_(pa.null())),
                                      "nums": [[1]], "meta": [{"a": 1}]},
             "train-00001-of-00002": {"id": ["b"], "content": code[3:], "tags": [["x"]], "nums": [[0.5]],
                                      "meta": [{"a": 2, "b": "y"}]}}
    for name, columns in parts.items():
        table = pa.table(columns)
        pq.write_table(table, folder / f"{name}.parquet") if form == "parquet" else \
            jsonl(folder / f"{name}.jsonl", table.to_pylist())
    options = {"min_tokens": 1, "workers": 1, "output_format": "jsonl"}
    run_dedup(str(folder), DedupConfig(**options), output_dir=tmp_path / "local")
    run_dedup(folder.as_uri(), DedupConfig(**options, engine="spark"), output_dir=tmp_path / "spark")
    local, on_spark = (kept_cells(tmp_path / engine, ("id", "tags", "nums", "meta")) for engine in ("local", "spark"))
    assert local == on_spark, (local, on_spark)


def test_binary_code_cells_are_decoded_by_the_source_encoding_policy_alike_by_both_engines(spark, tmp_path):
    # both engines called a cp1252 cell "not UTF-8" (unread) and kept a UTF-8 byte-order mark in the text;
    # now a cell is read as a source folder's file is: UTF-16 by its mark, NUL bytes binary, UTF-8, then cp1252
    text = CODE.format(k=3) + "# café – 5 €\n"
    cells = {"cp1252": text.encode("cp1252"), "utf8": text.encode(), "bom": "\ufeff".encode() + text.encode(),
             "utf16": text.encode("utf-16"), "nul": b"x = 1\x00\n", "other": CODE.format(k=4).encode()}
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": list(cells), "content": pa.array(list(cells.values()), pa.binary())}), path)
    runs = {engine: run_dedup(source, DedupConfig(min_tokens=1, workers=1, output_format="parquet", engine=engine),
                              output_dir=tmp_path / engine)
            for engine, source in (("local", str(path)), ("spark", path.as_uri()))}
    for engine, run in runs.items():
        assert run.report["overall"]["failed"] == 1, (engine, run.report["overall"])
        assert run.report["source_encodings"] == {"row cp1252": "cp1252 (fallback)",
                                                  "row utf16": "UTF-16 (byte-order mark)"}
    removed = [(tmp_path / engine / "removed.csv").read_text() for engine in runs]
    assert removed[0] == removed[1] and removed[0].count("\n") == 4, removed  # header and three copies of "cp1252"
    assert (tmp_path / "local" / "clusters.json").read_text() == (tmp_path / "spark" / "clusters.json").read_text()


def test_a_utf8_byte_order_mark_on_a_first_line_is_read_alike_by_both_engines(spark, tmp_path):
    # checked, not a fault: Hadoop's line reader drops the mark as the local loader does (utf-8-sig), so both
    # number the first line 1 and find its code cell, or its value of another kind, there
    for column in ("content", "stars"):
        rows = [{"id": "a", "content": CODE.format(k=1), "stars": 5}, {"id": "b", "content": CODE.format(k=2),
                                                                       "stars": "x"}]
        if column == "content":
            rows = [rows[0] | {"content": 5, "stars": 1}, rows[1] | {"stars": 2}]
        path = tmp_path / f"{column}.jsonl"
        path.write_bytes(codecs.BOM_UTF8 + "".join(json.dumps(row) + "\n" for row in rows).encode())
        local, on_spark = both_refuse(path)
        if column == "content":
            assert "(e.g. 5 in row 1)" in local and f"at line 1 of {path.as_uri()}: '5' (int)" in on_spark, (local,
                                                                                                         on_spark)
        else:
            assert "holds numbers at line 1 of stars.jsonl but text at line 2" in local, local
            assert on_spark.replace(path.as_uri(), str(path)) == local, on_spark


def test_source_encoding_reaches_binary_code_cells_on_both_engines(spark, tmp_path):
    # --source-encoding read a source folder only: bytes cells were read as cp1252 on both engines whatever it said
    text = "def сумма(xs):\n    # итог\n    return sum(x * 2 for x in xs if x > 0)\n"
    cells = {"cp1251": text.encode("cp1251"), "utf8": text.encode(), "other": CODE.format(k=4).encode()}
    path = tmp_path / "rows.parquet"
    pq.write_table(pa.table({"id": list(cells), "content": pa.array(list(cells.values()), pa.binary())}), path)
    config = dict(min_tokens=1, workers=1, output_format="parquet", source_encoding="cp1251")
    runs = {engine: run_dedup(source, DedupConfig(engine=engine, **config), output_dir=tmp_path / engine)
            for engine, source in (("local", str(path)), ("spark", path.as_uri()))}
    for engine, run in runs.items():
        assert run.report["source_encodings"] == {"row cp1251": "cp1251 (fallback)"}, engine
        assert run.report["overall"]["exact_duplicates"] == 1, (engine, run.report["overall"])  # its UTF-8 twin
    assert (tmp_path / "local" / "clusters.json").read_text() == (tmp_path / "spark" / "clusters.json").read_text()


# ---------------------------------------------------------------- perf 36: footers of many Parquet files read at once


def many_shards(folder: Path, n: int, *, late_ids_as_numbers: bool = False) -> None:
    """``n`` Parquet shards of one split with a list column (``tags``: the engine then reads every
    file's footer, in threads), rows of unequal counts, code repeated across shards, shard 3 with no
    rows (its columns only); with ``late_ids_as_numbers`` the last shard's ids are integers."""
    folder.mkdir()
    schema = pa.schema([("id", pa.string()), ("content", pa.string()), ("tags", pa.list_(pa.string()))])
    for shard in range(n):
        count = 0 if shard == 3 else 1 + shard % 4
        ids = [f"s{shard}-{k}" for k in range(count)]
        table = pa.table({"id": ids, "content": [CODE.format(k=(shard * 7 + k) % 23) for k in range(count)],
                          "tags": [["a"] * (k % 2) for k in range(count)]}, schema=schema)
        if late_ids_as_numbers and shard == n - 1:
            table = table.set_column(0, "id", pa.array(range(count), pa.int64()))
        pq.write_table(table, folder / f"train-{shard:05d}-of-{n:05d}.parquet")


def test_many_parquet_shards_with_a_list_column_are_read_alike_by_both_engines(spark, tmp_path):
    # the local loader (datasets) cannot read a Parquet file of no rows ("BatchSize must be greater than 0"):
    # it reads the folder without it, Spark the folder with it
    folder = tmp_path / "data"
    many_shards(folder, 40)
    shutil.copytree(folder, tmp_path / "data-local", ignore=shutil.ignore_patterns("train-00003-*"))
    options = {"min_tokens": 1, "workers": 1, "output_format": "jsonl"}
    run_dedup(str(tmp_path / "data-local"), DedupConfig(**options), output_dir=tmp_path / "local")
    run_dedup(folder.as_uri(), DedupConfig(**options, engine="spark"), output_dir=tmp_path / "spark")
    local, on_spark = (kept_cells(tmp_path / engine, ("id",)) for engine in ("local", "spark"))
    assert local == on_spark and len(local["train"]) == 23, (local, on_spark)  # 23 distinct functions of 99 rows
    assert (json.loads((tmp_path / "local" / "clusters.json").read_text())
            == json.loads((tmp_path / "spark" / "clusters.json").read_text()))


def test_a_late_shard_of_other_id_types_among_many_is_refused_alike_by_both_engines(spark, tmp_path):
    folder = tmp_path / "data"
    many_shards(folder, 40, late_ids_as_numbers=True)
    local, on_spark = both_refuse(folder)
    assert ("column 'id' holds text in train-00000-of-00040.parquet but numbers in train-00039-of-00040.parquet"
            in local), local
    assert on_spark.replace(folder.as_uri(), str(folder)) == local, on_spark


def test_parquets_schema_text_reads_as_the_walk_of_its_fields(spark, tmp_path):
    """The footer's schema comes over as Parquet's text of it; each file's column types read from
    the text are those the walk of its fields over py4j gives (and the names pyarrow gives), for
    every kind of column, and a file whose names the text leaves ambiguous is walked."""
    from workbench.dedup.spark_source import (
        _exact_names,
        _field_names,
        _java_field,
        _parquet_type_name,
        _parquet_types,
        _schema_fields,
        _schema_mapper,
    )

    table = pa.table({
        "id": pa.array(["a"]), "n8": pa.array([1], pa.int8()), "u16": pa.array([1], pa.uint16()),
        "n": pa.array([1], pa.int64()), "x": pa.array([0.5], pa.float32()), "nothing": pa.array([None], pa.null()),
        "flag": pa.array([True]), "raw": pa.array([b"x"]), "day": pa.array([datetime.date(2024, 1, 2)]),
        "at": pa.array([datetime.datetime(2024, 1, 2, 3)], pa.timestamp("us", tz="UTC")),
        "price": pa.array([decimal.Decimal("1.25")], pa.decimal128(10, 2)),
        "uuid": pa.array([b"0123456789abcdef"], pa.binary(16)),
        "tags": pa.array([["a"]]), "empty": pa.array([[]], pa.list_(pa.null())),
        "meta": pa.array([{"n": 1, "tags": ["x"], "inner": {"z": None}}]),
        "counts": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64())),
        "a name with spaces": pa.array(["v"]), "ünïcode": pa.array([1])})
    plain, odd = tmp_path / "plain.parquet", tmp_path / "odd.parquet"
    pq.write_table(table, plain)
    pq.write_table(table.append_column("odd (STRING); {x}", pa.array([2])), odd)
    jvm = spark.sparkContext._jvm
    expected = {"id": "string", "n8": "int8", "u16": "uint16", "n": "int64", "x": "float", "nothing": "null",
                "flag": "bool", "raw": "binary", "day": "date", "at": "timestamp", "price": "decimal",
                "uuid": "fixed_size_binary", "tags": "list<item: string>", "empty": "list<item: null>",
                "meta": "struct<n: int64, tags: list<item: string>, inner: struct<z: null>>", "counts": "map",
                "a name with spaces": "string", "ünïcode": "int64"}
    for path, extra in ((plain, {}), (odd, {"odd (STRING); {x}": "int64"})):
        reader = jvm.org.apache.parquet.hadoop.ParquetFileReader.open(
            jvm.org.apache.parquet.hadoop.util.HadoopInputFile.fromPath(
                jvm.org.apache.hadoop.fs.Path(path.as_uri()), spark.sparkContext._jsc.hadoopConfiguration()))
        schema = reader.getFooter().getFileMetaData().getSchema()
        walked = {f.getName(): _parquet_type_name(_java_field(f)) for f in schema.getFields()}
        text = _schema_fields(schema.toString())
        exact = _exact_names(_schema_mapper(jvm), schema)
        reader.close()
        assert walked == {**expected, **extra}, walked
        assert _parquet_types(spark, path.as_uri()) == walked
        if path == plain:
            assert {f.name: _parquet_type_name(f) for f in text} == walked
            assert exact == _field_names(text)  # the names check passes: the text is read, not walked
        else:
            assert text is None or len(text) != len(walked)  # ambiguous: the fields are walked


def test_a_column_named_like_a_type_annotation_keeps_its_own_type(spark, tmp_path):
    """leftovers38a: Parquet's schema text of an int64 column named ``x (STRING)`` is ``optional int64 x (STRING);``,
    which read as a column ``x`` annotated STRING (text): the field count matched, so nothing fell back to the walk
    of the fields. The names the text gives are now checked against the schema's own (Parquet's schema object
    serialized by Jackson: names exact), top level and nested."""
    from workbench.dedup.spark_source import _parquet_types

    tables = {"top": pa.table({"id": pa.array(["a"]), "x (STRING)": pa.array([1], pa.int64())}),
              "nested": pa.table({"id": pa.array(["a"]), "meta": pa.array([{"n (STRING)": 1}])}),
              "dated": pa.table({"d (DATE)": pa.array([7], pa.int32())})}
    expected = {"top": {"id": "string", "x (STRING)": "int64"},
                "nested": {"id": "string", "meta": "struct<n (STRING): int64>"}, "dated": {"d (DATE)": "int32"}}
    for name, table in tables.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(table, path)
        assert _parquet_types(spark, path.as_uri()) == expected[name], name
