"""``--engine spark``: steps 1-3 of the dedup pipeline on Apache Spark, with the same results.

The executors run the local engine's own functions, partition by partition:

1. tokens and MinHash signatures: :func:`workbench.dedup.tokens._pack_chunk` over chunks of
   each partition (the language plugins, the same token ids, permutations, seed and bands);
2. the exact pre-pass: rows grouped by (partition, signature, token count, distinct-token
   count), each group split into identical multisets by
   :func:`~workbench.dedup.clusters.identical_multisets`;
3. LSH: the representatives' signatures cut into bands and grouped by (band index, band
   values), exactly as :func:`~workbench.dedup.signatures.band_buckets` (no hashing of a
   band into fewer bits, so no bucket joins two different bands).

The driver then runs :func:`~workbench.dedup.detection.verify_and_cluster`, the local
engine's steps 4-5, on the buckets (ordered as the local engine orders them: band, then
first member) with the token bags of the rows in a bucket, and nothing else: rows that
share no bucket with another row never leave the executors. Every row keeps its index in
the input (split order, then row order), so the outputs do not depend on how the rows are
partitioned: ``clusters.json``, ``pairs.csv``, ``removed.csv`` and ``report.json`` (apart
from its timings) equal the local engine's byte for byte (``tests/dedup/test_spark.py``).

Bound: the driver holds the bags of the rows that share a bucket (about the local engine's
memory for those rows; the rest of the corpus is only on the executors) and one small
record per row (status and token count).

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
    Candidates,
    DedupResult,
    ProgressFactory,
    _BucketVerifier,
    _minhash_setup,
    _no_progress,
    _status,
    verify_and_cluster,
)
from workbench.dedup.rows import DedupRows
from workbench.dedup.signatures import MinHashSetup
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
#: the Spark setting that bounds the duplicate pairs the driver collects for its union-find
#: (``--spark-conf spark.workbench.dedup.driverEdges=N``); above it the clusters are found on
#: the executors (:mod:`workbench.dedup.spark_components`)
DRIVER_EDGES_KEY = "spark.workbench.dedup.driverEdges"
#: its default: about 1 GiB of driver memory (a pair and its two Jaccards in a dict: ~200 bytes)
DRIVER_EDGES = 5_000_000


class SparkUnavailableError(WorkbenchError):
    """The Spark engine cannot start here: no pyspark, no Java 17+, or the master is unreachable.
    The message says what to install or check."""


class SparkJobError(WorkbenchError):
    """A Spark job failed (an executor error, a lost cluster); the message names the stage."""


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
        raise SparkUnavailableError(
            f"--engine spark needs a Java {JAVA_MAJOR}+ runtime and none was found (no JAVA_HOME, no java on PATH): "
            f"install one ({JAVA_INSTALL}) or set JAVA_HOME to one"
        )
    major = java_major_version(java)
    if major is not None and major < JAVA_MAJOR:
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
               # the driver collects one record per row and the bags of the bucketed rows: more than
               # the default 1 GiB of results from a few hundred thousand files (override with --spark-conf)
               .config("spark.driver.maxResultSize", "0"))
    for setting in config.spark_conf:
        key, _, value = setting.partition("=")
        builder = builder.config(key.strip(), value.strip())
    try:
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
) -> DedupResult:
    """:func:`~workbench.dedup.find_duplicates` with steps 1-3 on Spark (same arguments, same result).

    Args:
        rows, config, reference, progress, minhash: as :func:`~workbench.dedup.find_duplicates`.
        spark: a running SparkSession to use (default: one for ``config.spark_master``).
        shuffle_seed: shuffle the rows before they are partitioned (to show that the result
            does not depend on the partitioning); ``None`` keeps the input order.
        driver_edges: the most duplicate pairs the driver collects for its union-find (default:
            the session's :data:`DRIVER_EDGES_KEY`, else :data:`DRIVER_EDGES`); above it the
            clusters are found on the executors.

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
                                          driver_edges)
    return _find_duplicates_spark(rows, config, reference, progress, minhash, spark, shuffle_seed, driver_edges)


def _find_duplicates_spark(
    rows: DedupRows, config: DedupConfig, reference: DedupRows | None, progress: ProgressFactory,
    minhash: Future[MinHashSetup] | None, spark: Any, shuffle_seed: int | None, driver_edges: int | None,
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
    items = list(zip(range(n_all), list(rows.codes) + (list(reference.codes) if reference else []),
                     list(rows.languages) + (list(reference.languages) if reference else []), partition_codes))
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(items)
    slices = config.spark_partitions or max(context.defaultParallelism, -(-n_all // ROWS_PER_PARTITION))
    tokenized_rows = context.accumulator(0)
    tokens = (context.parallelize(items, max(1, min(slices, n_all)))
              .mapPartitions(functools.partial(tasks.tokenize_partition, spec, tokenized_rows))
              .persist(StorageLevel.MEMORY_AND_DISK))
    del items
    try:
        with progress("spark: tokenize + MinHash", n_all) as advance, _polled(tokenized_rows, advance):
            facts = _run("tokenize + MinHash", lambda: tokens.map(tasks.row_facts).collect())
        n_tokens, has_error, failures, status = [0] * n_all, [False] * n_all, {}, [""] * n_all
        distinct = np.zeros(n_all, dtype=np.int64)
        for index, count, error, failure, kinds in facts:
            n_tokens[index], has_error[index], distinct[index] = count, error, kinds
            status[index] = _status(FileTokens({}, count, error, failure), config.min_tokens)
            if failure is not None and index < n_rows:
                failures[index] = failure
        failures = dict(sorted(failures.items()))
        del facts
        timings["tokenize_minhash"] = time.perf_counter() - clock

        # 2. exact pre-pass: identical multisets, grouped and confirmed on the executors
        clock = time.perf_counter()
        analysed = tokens.filter(functools.partial(tasks.is_analysed, config.min_tokens))
        with progress("spark: exact pre-pass", 2) as advance:
            # first the 64-bit hashes of the keys that two or more rows share (most rows share none),
            # then only those rows travel, grouped by the key itself and confirmed bag by bag
            shared = _run("exact pre-pass (keys)", lambda: analysed.map(tasks.count_pair)
                          .reduceByKey(tasks.add).filter(tasks.shared_count).keys().collect())
            advance(1)
            shared_keys = context.broadcast(set(shared))
            classes = _run("exact pre-pass", lambda: analysed.filter(functools.partial(tasks.has_shared_key, shared_keys))
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
        bands, band_rows = lsh.bands, lsh.rows
        with progress("spark: LSH buckets", 1) as advance:
            bucketed = (analysed.filter(functools.partial(tasks.is_representative, copies))
                        .flatMap(functools.partial(tasks.member_band_keys, bands, band_rows))
                        .groupByKey().map(tasks.bucket_members).filter(tasks.is_bucket)
                        .persist(StorageLevel.MEMORY_AND_DISK))
            found = _run("LSH buckets", lambda: bucketed.map(tasks.bucket_indices).collect())
            advance(1)
        found.sort(key=lambda bucket: (bucket[0], bucket[1][0]))  # band by band, then by first member
        buckets = [members for _, members in found]
        del found
        timings["lsh_index"] = time.perf_counter() - clock

        # 4a. every candidate pair verified on the executors; only the duplicates come back
        clock = time.perf_counter()
        wanted = np.zeros(n_all, dtype=bool)
        for members in buckets:
            wanted[members] = True
        needed = context.broadcast(wanted)
        edges = _verified_on_executors(context, config, tokens, bucketed, needed, code_of.get(REFERENCE), slices,
                                       lsh, progress)
        try:
            n_edges = _run("verify candidate pairs", edges.count)
            if n_edges <= _driver_edges(spark, config, driver_edges):
                with progress("spark: duplicate pairs to the driver", n_edges) as advance:
                    collected = _run("duplicate pairs", edges.collect)
                    advance(n_edges)
            else:  # too many for the driver: only those the walk over the buckets takes come back
                collected = _walk_edges(spark, config, edges, bucketed, distinct, n_all, slices, progress)
            verified = VerifiedEdges(collected, distinct, exact_threshold(config.set_threshold))
            del collected
        finally:
            edges.unpersist()
        for variable in (copies, needed):
            variable.unpersist()
        bucketed.unpersist()
        timings["verify_executors"] = time.perf_counter() - clock
    finally:
        tokens.unpersist()

    # 4-5. the local engine's own walk over the buckets and clusters, with the executors' verdicts
    return verify_and_cluster(
        Candidates(rows, reference, config, lsh, status, n_tokens, has_error[:n_rows], failures,
                   partitions, groups, buckets, None, verified),
        progress, timings,
    )


def _verified_on_executors(context: Any, config: DedupConfig, tokens: Any, bucketed: Any, needed: Any,
                           reference_code: int | None, slices: int, lsh: Any, progress: ProgressFactory) -> Any:
    """The duplicate pairs among the candidate pairs, verified on the executors: an RDD of
    ``(a, b, set Jaccard, multiset Jaccard)``, ``a < b``, persisted (the caller unpersists it).

    Each bucket's pairs are generated in blocks (:func:`~workbench.dedup.spark_tasks.bucket_blocks`),
    each pair once (in the first band the two share) and only when the size filter passes; the
    two token bags are joined to the pair by row id (two cogroups), and
    :func:`~workbench.dedup.verification.verify_pair` decides it."""
    from pyspark import StorageLevel

    t0, t1 = exact_threshold(config.set_threshold), exact_threshold(config.multiset_threshold)
    bags = tokens.filter(functools.partial(tasks.is_wanted, needed)).map(tasks.keyed_bag)
    with progress("spark: candidate pairs", 1) as advance:
        blocks = (bucketed.flatMap(tasks.bucket_blocks).repartition(slices).zipWithUniqueId()
                  .flatMap(functools.partial(tasks.block_pairs, lsh.bands, lsh.rows, t0, reference_code))
                  .persist(StorageLevel.MEMORY_AND_DISK))
        n_pairs = _run("candidate pairs", lambda: blocks.map(tasks.pair_count).sum())
        advance(1)
    counter = context.accumulator(0)
    # a block's pairs meet the bags of its rows: one copy of a bag per block, not per pair
    block_bags = blocks.flatMap(tasks.block_members).join(bags, slices).map(tasks.bag_to_block)
    edges = (blocks.cogroup(block_bags, slices)
             .flatMap(functools.partial(tasks.verified_edges, t0, t1, counter))
             .persist(StorageLevel.MEMORY_AND_DISK))
    with progress("spark: verify candidate pairs", int(n_pairs)) as advance, _polled(counter, advance):
        _run("verify candidate pairs", edges.count)
    blocks.unpersist()
    return edges


class VerifiedEdges:
    """The executors' verdicts on candidate pairs, answered as
    :func:`~workbench.dedup.verification.verify_pair` answers (the ``scores`` of
    :class:`~workbench.dedup.detection.Candidates`).

    Args:
        edges: ``(a, b, set Jaccard, multiset Jaccard)`` of every duplicate pair among the
            candidate pairs (``a < b``), as the executors verified them.
        distinct: distinct tokens per row (the size filter's input).
        set_threshold: t0, exact.

    A pair the size filter rules out is ``None`` (as in ``verify_pair``); any other pair that
    is not among ``edges`` was verified and rejected (its Jaccards stayed on the executors:
    ``NaN`` here, and only the verdict is used).
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
    """The most duplicate pairs the driver collects: ``given``, else ``--spark-conf``'s or the
    session's :data:`DRIVER_EDGES_KEY`, else :data:`DRIVER_EDGES`."""
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
        raise SparkJobError(f"--spark-conf {DRIVER_EDGES_KEY}={value}: expected a number of pairs (e.g. 5000000)") from None


def _walk_edges(spark: Any, config: DedupConfig, edges: Any, bucketed: Any, distinct: np.ndarray, n_all: int,
                slices: int, progress: ProgressFactory) -> list[tuple]:
    """The duplicate pairs the walk over the buckets takes, found without collecting them all.

    :func:`~workbench.dedup.detection.verify_and_cluster` walks the buckets in order and, between
    two current clusters of a bucket, takes the first duplicate pair; every other pair of one
    final cluster it skips or finds rejected. Pairs of one partition join, so the walk restricted
    to the rows of one final cluster (its connected component over the duplicate pairs of one
    partition) takes the same pairs as the whole walk. Here:

    1. the components, on the executors (:func:`~workbench.dedup.spark_components.connected_components`);
    2. per component, its part of every bucket and its duplicate pairs, taken to the driver one
       component at a time (``toLocalIterator``), where the local engine's walk
       (:class:`~workbench.dedup.detection._BucketVerifier`) picks the pairs that join;
    3. those pairs plus every duplicate pair across partitions (the walk takes each: cross-group
       pairs and contamination, outputs in full).

    With these as the only duplicates, the walk over all buckets makes the same comparisons with
    the same verdicts as with every duplicate pair (every same-partition duplicate it meets
    joins two clusters, so it is one of the pairs kept), hence the same outputs and counters.
    Driver memory: the pairs kept (fewer than the rows) and one component's pairs at a time.

    Returns:
        ``(a, b, set Jaccard, multiset Jaccard, same partition)`` tuples.
    """
    from workbench.dedup.spark_components import connected_components

    context = spark.sparkContext
    same = edges.filter(tasks.is_same_partition)
    with progress("spark: connected components", 1) as advance:
        pairs = spark.createDataFrame(same.map(tasks.edge_ends), "a long, b long")
        roots = np.arange(n_all, dtype=np.int64)
        for node, root in _run("connected components", lambda: connected_components(spark, pairs).rdd.map(tuple).collect()):
            roots[node] = root
        advance(1)
    shared_roots = context.broadcast(roots)
    parts = (bucketed.flatMap(functools.partial(tasks.component_buckets, shared_roots))
             .cogroup(same.map(functools.partial(tasks.edge_by_component, shared_roots)), slices))
    kept = _run("cross-partition pairs", lambda: edges.filter(tasks.is_cross_partition).collect())
    t0 = exact_threshold(config.set_threshold)
    n_components = len(np.unique(roots[roots != np.arange(n_all)]))
    with progress("spark: walk each component", n_components) as advance:
        for _, (bucket_parts, component_edges) in _run("components", parts.toLocalIterator):
            kept += _component_walk(config, sorted(bucket_parts), list(component_edges), distinct, t0)
            advance(1)
    shared_roots.unpersist()
    return kept


def _component_walk(config: DedupConfig, bucket_parts: list[tuple], edges: list[tuple], distinct: np.ndarray,
                    set_threshold: Any) -> list[tuple]:
    """The local engine's walk over one component's part of the buckets (in the buckets' order):
    the duplicate pairs it takes (those that join two of its clusters)."""
    members = sorted({row for _, _, part in bucket_parts for row in part})
    local = {row: position for position, row in enumerate(members)}
    verdicts = VerifiedEdges([(local[a], local[b], set_j, multiset_j) for a, b, set_j, multiset_j, _ in edges],
                             distinct[members], set_threshold)
    counters = {"bucket_pairs": 0, "size_filtered": 0, "verified": 0, "rejected": 0}
    verifier = _BucketVerifier(None, [None] * len(members), UnionFind(len(members)), config, counters, verdicts)
    taken = []
    for _, _, part in bucket_parts:
        for pair in verifier.process([local[row] for row in part]):
            taken.append((members[pair.a], members[pair.b], pair.set_jaccard, pair.multiset_jaccard, True))
    return taken


def _run(stage: str, job: Callable[[], Any]) -> Any:
    """Run a Spark action; a failed job becomes a :class:`SparkJobError` naming the stage."""
    from py4j.protocol import Py4JError

    try:
        return job()
    except Py4JError as error:
        message = str(error).strip().splitlines()
        raise SparkJobError(f"Spark job '{stage}' failed: {message[0] if message else error}") from error
    except Exception as error:
        if type(error).__module__.startswith("pyspark"):
            raise SparkJobError(f"Spark job '{stage}' failed: {str(error).splitlines()[0]}") from error
        raise


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
