"""``--engine spark``: the dedup pipeline on Apache Spark, with the same results.

The executors run the local engine's own functions, partition by partition:

1. tokens and MinHash signatures: :func:`workbench.dedup.tokens._pack_chunk` over chunks of
   each partition (the language plugins, the same token ids, permutations, seed and bands);
2. the exact pre-pass: rows grouped by (partition, signature, token count, distinct-token
   count), each group split into identical multisets by the local engine's
   :func:`~workbench.dedup.clusters.exact_bag_groups` (bag digest, confirmed byte for byte);
3. LSH: the representatives' signatures cut into bands and grouped by (band index, band
   values), exactly as :func:`~workbench.dedup.signatures.band_buckets` (no hashing of a
   band into fewer bits, so no bucket joins two different bands);
4. verification: rows joined by shared buckets form candidate components (union-find on the
   driver over one edge per bucket row while they are at most :data:`DRIVER_EDGES`, else
   large-star / small-star on the executors, :mod:`workbench.dedup.spark_components`); each
   component's buckets and token bags meet in one task, which walks its buckets in the local
   engine's order with the local engine's :class:`~workbench.dedup.detection._BucketVerifier`
   on the component's :class:`~workbench.dedup.tokens.TokenBags`
   (:func:`~workbench.dedup.verification.verify_sorted_pair` on each pair it meets, pairs already
   in one cluster skipped: :func:`workbench.dedup.spark_tasks.walk_component`). Only the duplicate
   pairs the walk takes, with their Jaccards, and its counters come back.

A bucket lies inside one candidate component and the walk's decisions in a bucket depend only
on the clusters of its rows, so the walks of the components make the same comparisons as one
walk over all buckets. The driver then runs
:func:`~workbench.dedup.detection.verify_and_cluster` on the pairs taken, in the walk's order
(so clusters, keepers, contamination and removals come out in the local engine's order). Every
row keeps its index in the input (split order, then row order), so the outputs do not depend
on how the rows are partitioned: ``clusters.json``, ``pairs.csv``, ``removed.csv`` and
``report.json`` (apart from its timings) equal the local engine's byte for byte
(``tests/dedup/test_spark.py``).

Input: the rows the driver loaded (texts sent to the executors), or, for a URI Spark reads
itself, the rows as :mod:`workbench.dedup.spark_source` read them (texts stay on the executors;
only those of rows below ``min_tokens`` or parsed with errors come to the driver).

Bound: the driver holds one small record per row (status, token counts, candidate component)
the pairs the walk takes (fewer than the rows, plus every cross-group or contamination pair:
outputs in full) and the token bags of the rows in token clusters (for
:mod:`~workbench.dedup.cluster_shape`); the other bags stay on the executors. An executor holds the bags of one candidate
component at a time: a giant component (one boilerplate template in thousands of files) is one
task, as large as the local engine's work on those rows.

Example::

    from workbench.dedup import DedupConfig, run_dedup

    run = run_dedup("corpus.jsonl", DedupConfig(engine="spark", spark_master="local[2]"), output_dir="out/")
"""

from __future__ import annotations

import functools
import math
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse

import numpy as np

from workbench.dedup import spark_tasks as tasks
from workbench.dedup.config import DedupConfig
from workbench.dedup.clusters import UnionFind
from workbench.dedup.detection import (
    ANALYSED,
    REFERENCE,
    TOO_SHORT,
    Candidates,
    DedupResult,
    ProgressFactory,
    _minhash_setup,
    _no_progress,
    _statuses,
    verify_and_cluster,
)
from workbench.dedup.rows import DedupRows
from workbench.dedup.signatures import MinHashSetup
from workbench.dedup.spark_jobs import SparkJobError, run_job
from workbench.dedup.spark_source import SomeCodes, SparkSource, iter_codes
from workbench.dedup.tokens import FileTokens, SignatureSpec
from workbench.dedup.verification import PairScore
from workbench.errors import WorkbenchError
from workbench.thresholds import exact_threshold

#: how the Spark extra is installed, for messages
SPARK_EXTRA = "pip install 'workbench[spark]'"
#: the Java runtime pyspark 4 needs, and how to install one on Debian / Ubuntu
JAVA_MAJOR = 17
JAVA_INSTALL = "sudo apt-get install openjdk-17-jre-headless (Debian 12+: default-jre-headless)"
#: rows per partition when the number of partitions is left to us (``spark_partitions`` 0)
ROWS_PER_PARTITION = 20_000
#: seconds to wait for a TCP connection to a ``spark://`` or ``k8s://`` master
CONNECT_TIMEOUT_S = 5.0
#: the Spark setting that bounds the candidate edges (one per bucket row but the first) the
#: driver's union-find takes (``--spark-conf spark.workbench.dedup.driverEdges=N``); above it
#: the candidate components are found on the executors (:mod:`workbench.dedup.spark_components`)
DRIVER_EDGES_KEY = "spark.workbench.dedup.driverEdges"
#: its default: streamed to the driver, about 1 s of its time per million edges
DRIVER_EDGES = 20_000_000


class SparkUnavailableError(WorkbenchError):
    """The Spark engine cannot start here: no pyspark, no Java 17+, or the master is unreachable.
    The message says what to install or check."""


# ---------------------------------------------------------------- checks before any work


def check_spark(master: str) -> None:
    """Check, in a few seconds and before any data is read, that a Spark session can start.

    Args:
        master: the Spark master URL (``local[*]``, ``spark://HOST:PORT``, ``yarn``, ``k8s://URL``).

    Raises:
        SparkUnavailableError: pyspark is not installed (names the extra), no Java runtime of
            version 17 or later is found (names the Debian package and ``JAVA_HOME``), or a
            ``spark://`` / ``k8s://`` master does not accept connections (names it).
    """
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise SparkUnavailableError(
            f"--engine spark needs pyspark 4 (which bundles Spark): {SPARK_EXTRA}"
        ) from None
    java = java_executable()
    if java is None:
        home = os.environ.get("JAVA_HOME")
        where = (f"JAVA_HOME={home} has no executable bin/java (pyspark starts that one, whatever is on PATH)"
                 if home else "no JAVA_HOME, no java on PATH")
        raise SparkUnavailableError(
            f"--engine spark needs a Java {JAVA_MAJOR}+ runtime and none was found ({where}): "
            f"install one ({JAVA_INSTALL}) or set JAVA_HOME to one"
        )
    major = java_major_version(java)
    if major is None:
        # pyspark would fail later with JAVA_GATEWAY_EXITED and no word of why
        raise SparkUnavailableError(
            f"--engine spark needs a Java {JAVA_MAJOR}+ runtime, but `{java} -version` did not say a version: "
            f"is it a Java? Install one ({JAVA_INSTALL}) or point JAVA_HOME at one"
        )
    if major < JAVA_MAJOR:
        raise SparkUnavailableError(
            f"--engine spark needs Java {JAVA_MAJOR}+ but {java} is Java {major}: install a newer one "
            f"({JAVA_INSTALL}) and point JAVA_HOME at it"
        )
    for host, port in master_endpoints(master):
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as error:
            raise SparkUnavailableError(
                f"the Spark master {master} is not reachable ({host}:{port}: {error.strerror or error}); "
                f"check --spark-master and that the master is running"
            ) from None


def java_executable() -> str | None:
    """The ``java`` pyspark will start: ``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def java_major_version(java: str) -> int | None:
    """The major version ``java -version`` reports (``17`` for ``17.0.15``, ``8`` for ``1.8.0``), or None."""
    try:
        shown = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', shown)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def master_endpoints(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs a master URL names: ``spark://a:7077,b:7077`` -> two, ``k8s://https://h:6443`` -> one;
    ``local[...]`` and ``yarn`` (found through the Hadoop configuration) -> none."""
    if master.startswith("spark://"):
        endpoints = []
        for part in master[len("spark://"):].split(","):
            host, _, port = part.strip().rpartition(":")
            if not host or not port.isdigit():
                raise SparkUnavailableError(f"--spark-master {master}: expected spark://HOST:PORT[,HOST:PORT...]")
            endpoints.append((host.strip("[]"), int(port)))
        return endpoints
    if master.startswith("k8s://"):
        url = urlparse(master[len("k8s://"):] if "://" in master[len("k8s://"):] else "https://" + master[len("k8s://"):])
        if url.hostname:
            return [(url.hostname, url.port or (443 if url.scheme == "https" else 80))]
    return []


# ---------------------------------------------------------------- the session


@contextmanager
def spark_session(config: DedupConfig) -> Iterator[Any]:
    """Yield a SparkSession for ``config.spark_master`` and ``config.spark_conf``.

    A session already running in this process (a notebook's, a test fixture's) is used as it
    is and left running; a session started here is stopped at the end. For a ``local`` master
    the executors' Python is this interpreter (unless ``PYSPARK_PYTHON`` says otherwise).

    Raises:
        SparkUnavailableError: see :func:`check_spark`; or the session did not start (the
            message carries Spark's reason).
    """
    check_spark(config.spark_master)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    running = SparkContext._active_spark_context
    if running is not None:
        yield SparkSession(running)
        return
    if config.spark_master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(config.spark_master).appName("workbench dedup")
               .config("spark.ui.showConsoleProgress", "false")  # our own progress bars instead
               # the driver collects one record per row and the pairs the walk takes: more than
               # the default 1 GiB of results from a few hundred thousand files (override with --spark-conf)
               .config("spark.driver.maxResultSize", "0"))
    for setting in config.spark_conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key.strip(), value.strip())
    try:
        with warnings.catch_warnings():
            # pyspark's py4j converters import pyspark.testing, which warns (FutureWarning) that
            # pandas >= 3 is not fully supported; this engine hands Spark no pandas objects
            warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas",
                                    category=FutureWarning)
            session = builder.getOrCreate()
    except Exception as error:  # py4j / the JVM launcher: no narrower type to catch
        raise SparkUnavailableError(f"the Spark session for master {config.spark_master} did not start: {error}") from None
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


# ---------------------------------------------------------------- executor functions


# ---------------------------------------------------------------- the driver


def find_duplicates_spark(
    rows: DedupRows,
    config: DedupConfig,
    *,
    reference: DedupRows | None = None,
    progress: ProgressFactory | None = None,
    minhash: Future[MinHashSetup] | None = None,
    spark: Any = None,
    shuffle_seed: int | None = None,
    driver_edges: int | None = None,
    source: SparkSource | None = None,
) -> DedupResult:
    """:func:`~workbench.dedup.find_duplicates` with steps 1-3 on Spark (same arguments, same result).

    Args:
        rows, config, reference, progress, minhash: as :func:`~workbench.dedup.find_duplicates`.
        spark: a running SparkSession to use (default: one for ``config.spark_master``).
        shuffle_seed: shuffle the rows before they are partitioned (to show that the result
            does not depend on the partitioning); ``None`` keeps the input order.
        driver_edges: the most candidate edges the driver's union-find takes (default:
            ``--spark-conf``'s or the session's :data:`DRIVER_EDGES_KEY`, else :data:`DRIVER_EDGES`);
            above it the candidate components are found on the executors.
        source: the rows as Spark read them (:func:`~workbench.dedup.spark_source.read_rows`;
            ``rows`` is then its ``rows``, without texts): the texts are tokenized where they were
            read, and only those of rows below ``min_tokens`` or parsed with errors come to the driver.

    Returns:
        the :class:`~workbench.dedup.DedupResult`, equal to the local engine's.

    Raises:
        SparkUnavailableError: the session cannot start (see :func:`check_spark`).
        SparkJobError: a Spark job failed (the message names the stage and Spark's reason).
    """
    progress = progress or _no_progress
    if spark is None:
        with spark_session(config) as session:
            return _find_duplicates_spark(rows, config, reference, progress, minhash, session, shuffle_seed,
                                          driver_edges, source)
    return _find_duplicates_spark(rows, config, reference, progress, minhash, spark, shuffle_seed, driver_edges, source)


def _find_duplicates_spark(
    rows: DedupRows, config: DedupConfig, reference: DedupRows | None, progress: ProgressFactory,
    minhash: Future[MinHashSetup] | None, spark: Any, shuffle_seed: int | None, driver_edges: int | None,
    source: SparkSource | None,
) -> DedupResult:
    from pyspark import StorageLevel

    context = spark.sparkContext
    timings: dict[str, float] = {}
    n_rows = len(rows)
    references = len(reference) if reference is not None else 0
    n_all = n_rows + references
    partitions: list[Any] = list(rows.groups) if rows.groups is not None else [None] * n_rows
    partitions += [REFERENCE] * references
    # executors compare partitions as small ints (a group value or the reference marker each get one)
    code_of: dict[Any, int] = {}
    partition_codes = [code_of.setdefault(value, len(code_of)) for value in partitions]

    # 1. tokens and signatures, on the executors
    clock = time.perf_counter()
    setup = _minhash_setup(config, minhash)
    spec = SignatureSpec(config.num_perm, config.seed, config.min_tokens, (setup.a, setup.b))
    slices = config.spark_partitions or max(context.defaultParallelism, -(-n_all // ROWS_PER_PARTITION))
    if source is None:
        items = list(zip(range(n_all), list(rows.codes) + (list(reference.codes) if reference else []),
                         list(rows.languages) + (list(reference.languages) if reference else []), partition_codes))
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(items)
        inputs = context.parallelize(items, max(1, min(slices, n_all)))
        del items
    else:  # the rows Spark read stay on the executors; only the reference rows come from here
        coded = context.broadcast(code_of)
        inputs = source.items.map(functools.partial(tasks.coded_item, coded))
        if reference is not None:
            inputs = inputs.union(context.parallelize(
                list(zip(range(n_rows, n_all), reference.codes, reference.languages, partition_codes[n_rows:])),
                max(1, min(slices, references))))
        if inputs.getNumPartitions() < slices:  # one big file is one partition of the read
            inputs = inputs.repartition(slices)
    used_partitions = inputs.getNumPartitions()  # report.json's work.spark_partitions
    tokenized_rows = context.accumulator(0)
    tokens = (inputs.mapPartitions(functools.partial(tasks.tokenize_partition, spec, tokenized_rows,
                                                     fallback=config.source_encoding))
              .persist(StorageLevel.MEMORY_AND_DISK))
    try:
        with progress("spark: tokenize + MinHash", n_all) as advance, _polled(tokenized_rows, advance):
            facts = run_job("tokenize + MinHash", lambda: tokens.map(tasks.row_facts).collect())
        n_tokens, has_error, failures = np.zeros(n_all, dtype=np.int64), [False] * n_all, {}
        distinct = np.zeros(n_all, dtype=np.int64)
        for index, count, error, failure, kinds in facts:
            n_tokens[index], has_error[index], distinct[index] = count, error, kinds
            if failure is not None:
                failures[index] = failure
        failures = dict(sorted(failures.items()))
        del facts
        status = _statuses(n_tokens, failures, config.min_tokens)
        n_tokens = n_tokens.tolist()
        failures = {row: reason for row, reason in failures.items() if row < n_rows}
        if source is not None:
            # the identical-text pass compares the rows below min_tokens, skipped.csv locates the
            # parse errors: only those texts come to the driver
            rows.codes = SomeCodes(_texts_of(context, source, status, has_error, n_rows), n_rows)
        timings["tokenize_minhash"] = time.perf_counter() - clock

        # 2. exact pre-pass: identical multisets, grouped and confirmed on the executors
        clock = time.perf_counter()
        analysed = tokens.filter(functools.partial(tasks.is_analysed, config.min_tokens))
        with progress("spark: exact pre-pass", 2) as advance:
            # first the 64-bit hashes of the keys that two or more rows share (most rows share none),
            # then only those rows travel, grouped by the key itself and confirmed bag by bag
            shared = run_job("exact pre-pass (keys)", lambda: analysed.map(tasks.count_pair)
                             .reduceByKey(tasks.add).filter(tasks.shared_count).keys().collect())
            advance(1)
            shared_keys = context.broadcast(set(shared))
            classes = run_job("exact pre-pass", lambda: analysed.filter(functools.partial(tasks.has_shared_key, shared_keys))
                              .map(tasks.keyed_by_exact_key).groupByKey().flatMap(tasks.exact_classes).collect())
            shared_keys.unpersist()
            advance(1)
        groups: dict[int, list[int]] = {index: [index] for index in range(n_all) if status[index] == ANALYSED}
        copy = np.zeros(n_all, dtype=bool)
        for members in classes:
            members.sort()
            groups[members[0]] = members
            for member in members[1:]:
                del groups[member]
                copy[member] = True
        del classes
        timings["exact"] = time.perf_counter() - clock

        # 3. LSH buckets of the representatives, on the executors
        clock = time.perf_counter()
        lsh = setup.lsh
        copies = context.broadcast(copy)
        with progress("spark: LSH buckets", 1) as advance:
            buckets = (analysed.filter(functools.partial(tasks.is_representative, copies))
                       .flatMap(functools.partial(tasks.band_keys, lsh.bands, lsh.rows))
                       .groupByKey().map(tasks.bucket_indices).filter(tasks.is_bucket)
                       .persist(StorageLevel.MEMORY_AND_DISK))
            n_edges = run_job("LSH buckets", lambda: buckets.map(tasks.star_size).sum())
            advance(1)
        copies.unpersist()
        timings["lsh_index"] = time.perf_counter() - clock

        # 4. the candidate components and the walk over each one's buckets, on the executors
        clock = time.perf_counter()
        roots = _candidate_components(spark, buckets, int(n_edges), n_all, _driver_edges(spark, config, driver_edges),
                                      progress)
        taken, work = _walk_components(spark, config, tokens, buckets, roots, code_of.get(REFERENCE), slices, progress)
        buckets.unpersist()
        timings["verify_executors"] = time.perf_counter() - clock
        # the shapes of the clusters (cluster_shape) compare rows of one cluster: their bags, and no others
        bags = _cluster_bags(context, tokens, groups, taken, partitions, n_all, progress)
    finally:
        tokens.unpersist()

    # 5. the driver takes the pairs in the walk's order: the same clusters, keepers, removals
    taken.sort(key=lambda pair: pair[0])
    verdicts = VerifiedEdges([pair[1:] for pair in taken], distinct, exact_threshold(config.set_threshold))
    result = verify_and_cluster(
        Candidates(rows, reference, config, lsh, status, n_tokens, has_error[:n_rows], failures,
                   partitions, groups, [[pair[1], pair[2]] for pair in taken], bags, verdicts),
        progress, timings,
    )
    # the work of the walk over the real buckets (the replay above saw only the pairs taken)
    for key in ("bucket_pairs", "size_filtered", "verified", "rejected"):
        result.counters[key] = work[key]
    result.counters["pairs_not_compared"] = work["bucket_pairs"] - work["enumerated"]
    result.counters["largest_bucket"] = work["largest_bucket"]
    result.counters["spark_partitions"] = used_partitions
    return result


def _candidate_components(spark: Any, buckets: Any, n_edges: int, n_all: int, bound: int,
                          progress: ProgressFactory) -> np.ndarray:
    """Row -> the smallest row of its candidate component (rows joined by shared LSH buckets; a row
    in no bucket is its own): union-find on the driver over the buckets' star edges (first row to
    each other row) while there are at most ``bound`` of them, else connected components on the
    executors (:func:`~workbench.dedup.spark_components.connected_components`)."""
    from workbench.dedup.spark_components import connected_components

    roots = np.arange(n_all, dtype=np.int64)
    with progress("spark: candidate components", 1) as advance:
        if n_edges <= bound:
            union_find = UnionFind(n_all)
            for first, other in run_job("candidate components", buckets.flatMap(tasks.bucket_star).toLocalIterator):
                union_find.union(first, other)
            for component in union_find.components():
                roots[component] = component[0]
        else:
            edges = spark.createDataFrame(buckets.flatMap(tasks.bucket_star), "a long, b long")
            for node, root in run_job("candidate components", lambda: connected_components(spark, edges).rdd.map(tuple).collect()):
                roots[node] = root
        advance(1)
    return roots


def _walk_components(spark: Any, config: DedupConfig, tokens: Any, buckets: Any, roots: np.ndarray,
                     reference_code: int | None, slices: int, progress: ProgressFactory) -> tuple[list[tuple], dict]:
    """The local engine's walk over the buckets, one candidate component per task
    (:func:`~workbench.dedup.spark_tasks.walk_component`): each component's buckets and the token bags
    of its rows meet by component (a cogroup), and only the duplicate pairs the walk takes come back.

    Returns:
        the pairs taken ``((band, first row, position), a, b, set Jaccard, multiset Jaccard)``
        and the summed counters of the walks.
    """
    context = spark.sparkContext
    members = roots != np.arange(len(roots))
    in_component = members.copy()
    in_component[roots[members]] = True  # the roots of components with two or more rows
    shared_roots, wanted = context.broadcast(roots), context.broadcast(in_component)
    bags = tokens.filter(functools.partial(tasks.is_wanted, wanted)).map(functools.partial(tasks.bag_by_component, shared_roots))
    counter = context.accumulator(0)
    walks = (buckets.map(functools.partial(tasks.bucket_by_component, shared_roots)).cogroup(bags, slices)
             .flatMap(functools.partial(tasks.walk_component, config, reference_code, counter)))
    with progress("spark: verify (walk the buckets)", int(run_job("buckets", buckets.count))) as advance, \
            _polled(counter, advance):
        found = run_job("verify candidate pairs", walks.collect)
    for variable in (shared_roots, wanted):
        variable.unpersist()
    taken = [record[1:] for record in found if record[0] == "pair"]
    work = {"bucket_pairs": 0, "size_filtered": 0, "verified": 0, "rejected": 0, "enumerated": 0, "largest_bucket": 0}
    for record in found:
        if record[0] == "work":
            for key, value in record[1].items():
                work[key] = max(work[key], value) if key == "largest_bucket" else work[key] + value
    return taken, work


def _cluster_bags(context: Any, tokens: Any, groups: dict[int, list[int]], taken: list[tuple],
                  partitions: list[Any], n_all: int, progress: ProgressFactory) -> dict[int, FileTokens]:
    """The token bags of the rows in token clusters (exact groups, and the exact groups joined by a
    pair the walk took), brought to the driver for :mod:`~workbench.dedup.cluster_shape`."""
    wanted = np.zeros(n_all, dtype=bool)
    for members in groups.values():
        if len(members) > 1:
            wanted[members] = True
    for _, a, b, *_ in taken:
        if partitions[a] == partitions[b]:
            wanted[groups[a]] = True
            wanted[groups[b]] = True
    needed = context.broadcast(wanted)
    with progress("spark: bags of clustered rows", int(wanted.sum())) as advance:
        records = run_job("bags of clustered rows", tokens.filter(functools.partial(tasks.is_wanted, needed)).collect)
        bags = {record[tasks.INDEX]: tasks.file_tokens(record) for record in records}
        advance(len(bags))
    needed.unpersist()
    return bags


def _texts_of(context: Any, source: SparkSource, status: list[str], has_error: list[bool], n_rows: int) -> dict[int, Any]:
    """The code cells of the rows below ``min_tokens`` or parsed with errors, from the executors."""
    wanted = np.zeros(n_rows, dtype=bool)
    for index in range(n_rows):
        wanted[index] = status[index] == TOO_SHORT or has_error[index]
    needed = context.broadcast(wanted)
    codes = dict(iter_codes(source, needed))
    needed.unpersist()
    return codes


class VerifiedEdges:
    """The executors' verdicts on candidate pairs, answered as
    :func:`~workbench.dedup.verification.verify_sorted_pair` answers (the ``scores`` of
    :class:`~workbench.dedup.detection.Candidates`).

    Args:
        edges: ``(a, b, set Jaccard, multiset Jaccard)`` of the duplicate pairs (``a < b``).
        distinct: distinct tokens per row (the size filter's input).
        set_threshold: t0, exact.

    A pair the size filter rules out is ``None`` (as in ``verify_sorted_pair``); any other pair that
    is not among ``edges`` is a rejected pair (``NaN`` Jaccards: only the verdict is used).
    """

    def __init__(self, edges: list[tuple], distinct: Any, set_threshold: Any) -> None:
        self.edges = {(edge[0], edge[1]): (edge[2], edge[3]) for edge in edges}
        self.distinct, self.t0 = distinct, set_threshold

    def __len__(self) -> int:
        return len(self.edges)

    def __call__(self, a: int, b: int) -> PairScore | None:
        found = self.edges.get((a, b))
        if found is not None:
            return PairScore(found[0], found[1], True)
        low, high = sorted((int(self.distinct[a]), int(self.distinct[b])))
        if low * self.t0.denominator < self.t0.numerator * high:
            return None
        return PairScore(math.nan, None, False)


def _driver_edges(spark: Any, config: DedupConfig, given: int | None) -> int:
    """The most candidate edges the driver's union-find takes: ``given``, else ``--spark-conf``'s or
    the session's :data:`DRIVER_EDGES_KEY`, else :data:`DRIVER_EDGES`."""
    if given is not None:
        return given
    value = dict(setting.partition("=")[::2] for setting in config.spark_conf).get(DRIVER_EDGES_KEY)
    if value is None:
        value = spark.conf.get(DRIVER_EDGES_KEY, None)
    if value is None:
        return DRIVER_EDGES
    try:
        return int(value)
    except ValueError:
        raise SparkJobError(f"--spark-conf {DRIVER_EDGES_KEY}={value}: expected a number of edges (e.g. 20000000)") from None


@contextmanager
def _polled(counter: Any, advance: Callable[[int], None], every_s: float = 0.5) -> Iterator[None]:
    """Advance a progress bar from an accumulator while a Spark job runs (tasks report as they finish)."""
    done = threading.Event()
    shown = 0

    def poll() -> None:
        nonlocal shown
        while not done.wait(every_s):
            value = counter.value
            if value > shown:
                advance(value - shown)
                shown = value

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
