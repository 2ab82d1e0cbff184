"""``--engine spark`` on a SOURCE URI Spark reads itself (local[2], the shared ``spark`` fixture):
the 2k corpus of ../shared/bench (seed 3) cut into several JSON Lines and Parquet files and read
through ``file://`` gives the local engine's clusters.json, pairs.csv, removed.csv, skipped.csv,
cluster_shapes.csv byte for byte and its report.json (but ``source`` and ``timings_s``); the
splits Spark writes hold the local engine's kept rows; the driver never holds the texts of the
analysed rows; an output folder given as a URI gets the same files. Then the errors: a missing
path, a scheme without its connector (input or output), a missing column."""

from __future__ import annotations

import filecmp
import json
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
from mixed_rows import write_mixed_rows  # noqa: E402

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


def test_split_files_follows_datasets_rules():
    root = "s3a://b/data/"
    assert split_files([root + "x.parquet"], root) == {"train": [root + "x.parquet"]}
    files = [root + name for name in ("test-00000-of-00001.parquet", "train-00000-of-00002.parquet",
                                      "train-00001-of-00002.parquet")]
    assert split_files(files, root) == {"train": files[1:], "test": files[:1]}
    folders = [root + "train/a.jsonl", root + "validation/b.jsonl"]
    assert split_files(folders, root) == {"train": folders[:1], "validation": folders[1:]}


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
    with pytest.raises(DataError, match="not a JSON object"):
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
