"""The options of a dedup run (``workbench dedup``, ``[dedup]`` and ``[decontaminate]`` of
``workbench run``), checked before any work starts."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from workbench.options import JobConfig, OptionError, option

KeepPolicy = Literal["first", "longest", "train-first"]
CrossSetPolicy = Literal["remove-test", "remove-train"]
KEEP_POLICIES: tuple[str, ...] = ("first", "longest", "train-first")
CROSS_SET_POLICIES: tuple[str, ...] = ("remove-test", "remove-train")
#: how the deduplicated splits are written (see :func:`workbench.dedup.write_outputs`)
OUTPUT_FORMATS: tuple[str, ...] = ("auto", "jsonl", "parquet", "hf", "files")
#: where steps 1-3 run: in this process and its workers, or on Apache Spark (workbench.dedup.spark)
ENGINES: tuple[str, ...] = ("local", "spark")
#: formats of a SOURCE URI Spark reads itself (workbench.dedup.spark_source)
INPUT_FORMATS: tuple[str, ...] = ("auto", "parquet", "json")

#: the parameters of the search itself, as ``report.json`` records them (in this order)
_REPORTED = ("set_threshold", "multiset_threshold", "min_tokens", "num_perm", "lsh_threshold", "lsh_weights",
             "lsh_params", "seed", "keep", "cross_set", "train_split", "test_split", "group_column", "workers")


class DedupConfigError(OptionError):
    """A dedup option is out of range or does not fit another; the message says which and what is allowed."""


def _weights(value: Any) -> tuple[float, float]:
    """``"FP,FN"`` (or two numbers) -> ``(fp, fn)``, two weights in [0, 1] that sum to 1."""
    try:
        parts = value.split(",") if isinstance(value, str) else list(value)
        weights = tuple(float(x) for x in parts)
    except (TypeError, ValueError):
        weights = ()
    if len(weights) != 2 or any(not 0.0 <= w <= 1.0 for w in weights) or abs(sum(weights) - 1.0) > 1e-9:
        raise ValueError(f"must be two numbers 'FP,FN' in [0, 1] that sum to 1 (e.g. 0.1,0.9), not {value!r}")
    return weights  # type: ignore[return-value]


def _weights_text(value: Any) -> str:
    return value if isinstance(value, str) else ",".join(f"{w:g}" for w in value)


@dataclass(frozen=True)
class DedupConfig(JobConfig):
    """Options of near-duplicate detection and decontamination (Allamanis 2019).

    Every field is a ``workbench dedup`` option (``min_tokens`` is ``--min-tokens``) and a key
    of the ``[dedup]`` / ``[decontaminate]`` tables of ``workbench run``; the constructor checks
    them all and raises :class:`DedupConfigError` naming the field.

    Attributes:
        code_column: the code column; comma-separated columns are joined.
        id_column: unique id column, or comma-separated columns joined with ``":"`` (default
            ``id`` when present, else ``<split>/<row>``); ``TASK,sample_id`` on data without a
            ``sample_id`` column numbers each task's samples in file order (local engine).
        split_column: a column naming each row's split (one table with several splits).
        split: only these splits (all when empty).
        language: language of rows without a ``language`` column value.
        source_encoding: the encoding of a source folder's file, or a code cell of bytes (a
            Parquet binary column), that is not UTF-8 and declares none (``cp1252``, Windows'
            Western encoding, by default; a codec name Python knows: :mod:`workbench.data.text_encoding`).
        group_column: if set, clusters never join files of different groups (e.g.
            ``task_id``: completions of one task); duplicate pairs across groups are
            verified and reported, not removed.
        min_tokens: files with fewer identifier/literal tokens (counted with repetition)
            are reported as too short and never compared. Default 20, as in dpu-utils'
            ``DuplicateDetector`` and Microsoft's near-duplicate-code-detector.
        set_threshold: t0, the minimum set Jaccard of the identifier/literal token sets
            for a duplicate pair, in (0, 1]. Default 0.8 (Allamanis 2019, Sec. 3, following
            SourcererCC; Sajnani et al., ICSE 2016).
        multiset_threshold: t1, the minimum multiset Jaccard of the token multisets, in
            (0, 1]. Default 0.7 (Allamanis 2019, Sec. 3).
        num_perm: MinHash permutations (signature length).
        lsh_threshold: the Jaccard threshold the LSH bands and rows are tuned for. Below
            ``set_threshold`` so that pairs at ``set_threshold`` are almost never missed
            (Leskovec, Rajaraman, Ullman, Mining of Massive Datasets, 3rd ed., Sec. 3.4.2:
            a band/row split trades false negatives for false positives).
        lsh_weights: ``(false_positive_weight, false_negative_weight)`` for datasketch's
            band/row optimisation; they must sum to 1 (text form ``"0.1,0.9"``).
        lsh_bands / lsh_rows: explicit bands and rows per band (both or neither); they
            override ``lsh_threshold``/``lsh_weights``.
        seed: the MinHash permutation seed.
        keep: which file of a cluster survives: ``first`` (input order), ``longest`` (most
            tokens, then input order) or ``train-first`` (a file of the train split first).
        cross_set: for clusters with files in both the train and the test split:
            ``remove-test`` keeps a train copy (the "unbiased test" set of Allamanis 2019,
            Sec. 4) and ``remove-train`` keeps a test copy (decontaminates train); a copy of a
            third split in such a cluster (``validation``) is removed too. With both splits in the
            data, ``remove-test`` also keeps a third split's copy over a test copy in a cluster
            without a train copy, whatever order the splits are read in (the test split keeps no
            row with a copy in another split: ``workbench bias``'s unbiased test).
        train_split / test_split: the split names those policies and the report use.
        against: a reference dataset: rows that are near-duplicates of any of its rows are
            dropped (decontamination, e.g. ``humaneval``).
        against_code_column / against_id_column: its code column(s) and id column.
        decontaminate_only: with ``against``, drop the contaminated rows only: the in-set
            duplicates are clustered and reported but kept (``workbench run``'s ``decontaminate``
            stage); without it the output is deduplicated and decontaminated.
        output_format: how the deduplicated splits are written.
        workers: processes for tokenizing (``1`` = in-process; ``0`` = one per CPU).
        offline: never contact the Hugging Face hub.
        engine: ``local`` or ``spark``: where steps 1-3 (tokens and signatures, the exact
            pre-pass, LSH buckets) run; the outputs are the same (:mod:`workbench.dedup.spark`).
        spark_master: the Spark master URL (``local[*]``, ``spark://HOST:7077``, ``yarn``,
            ``k8s://...``); spark_conf: ``KEY=VALUE`` Spark settings; spark_partitions: row
            partitions (0: automatic); input_format: the format of a SOURCE URI Spark reads itself
            (``auto``, ``parquet``, ``json``; :mod:`workbench.dedup.spark_source`). Used with
            ``engine="spark"`` only.

    Example:

    >>> from workbench.dedup import DedupConfig
    >>> config = DedupConfig(set_threshold=0.85, group_column="task_id")
    >>> config.min_tokens, config.lsh_weights
    (20, (0.1, 0.9))
    >>> DedupConfig(set_threshold=1.5)
    Traceback (most recent call last):
    ...
    workbench.dedup.config.DedupConfigError: set_threshold must be in (0, 1], not 1.5
    """

    _error = DedupConfigError

    code_column: str = option("content", "Column with the code; several comma-separated columns are joined.")
    id_column: str | None = option(
        None, "Unique id column, or comma-separated columns joined with ':' (TASK,sample_id on data without sample_id "
        "numbers each task's samples 0, 1, ... as execute and score do) [default: 'id' if present, else <split>/<row>].")
    split_column: str | None = option(None, "Column naming each row's split (one table with several splits).")
    split: tuple[str, ...] = option((), "Only these splits (repeatable).")
    language: str = option("python", "Language of rows without a 'language' column value.")
    source_encoding: str = option(
        "cp1252", "Encoding of a source folder's files and of code cells of bytes (a Parquet binary column) that are "
        "not UTF-8 and declare none (no byte-order mark or coding cookie); the files and cells read so are listed in "
        "report.json's source_encodings.")
    group_column: str | None = option(
        None, "Never merge rows of different groups (e.g. task_id); cross-group duplicates are reported.")
    min_tokens: int = option(20, "Files with fewer identifier/literal tokens are reported as too short.", min=1)
    set_threshold: float = option(0.8, "Minimum set Jaccard (Allamanis 2019).", min=0.0, min_open=True, max=1.0)
    multiset_threshold: float = option(0.7, "Minimum multiset Jaccard (Allamanis 2019).", min=0.0, min_open=True, max=1.0)
    num_perm: int = option(128, "MinHash permutations.", min=2)
    lsh_threshold: float = option(
        0.6, "Jaccard the LSH bands/rows are tuned for (below --t0 for recall).", min=0.0, min_open=True, max=1.0)
    lsh_weights: tuple[float, float] = option(
        (0.1, 0.9), "False-positive,false-negative weights of the band/row tuning.", parse=_weights, text=_weights_text)
    lsh_bands: int | None = option(None, "Explicit LSH bands (with --lsh-rows).", min=2)
    lsh_rows: int | None = option(None, "Explicit LSH rows per band (with --lsh-bands).", min=1)
    seed: int = option(1, "MinHash permutation seed.", min=0, max=2**32 - 1)
    keep: str = option("first", "Which file of a cluster stays: first | longest | train-first.", choices=KEEP_POLICIES)
    cross_set: str = option(
        "remove-test", "Train/test clusters: remove-test (unbiased test) | remove-train.", choices=CROSS_SET_POLICIES)
    train_split: str = option("train", "Name of the training split.")
    test_split: str = option("test", "Name of the test split.")
    against: str | None = option(
        None, "Reference dataset: drop rows that are near-duplicates of any of its rows (e.g. humaneval).")
    against_code_column: str | None = option(
        None, "Code column(s) of --against [default: prompt,canonical_solution for HumanEval-like data, else --code-column].")
    against_id_column: str | None = option(None, "Id column of --against, or comma-separated columns joined with ':' (task_id,sample_id) "
                                                "[default: task_id if present].")
    decontaminate_only: bool = option(
        False, "With --against: drop only the rows near-duplicate to a reference row; in-set duplicates are "
        "reported and kept (without it both are dropped).")
    output_format: str = option(
        "auto", "Deduplicated splits as auto (the input's form) | jsonl | parquet | hf (save_to_disk) | files (source folder); "
        "for a URI read by Spark: jsonl | parquet folders written by Spark.",
        choices=OUTPUT_FORMATS)
    workers: int = option(0, "Tokenizer processes (0 = one per CPU).", min=0)
    offline: bool = option(False, "Never contact the Hugging Face hub.")
    engine: str = option(
        "local", "Where tokens, signatures and LSH buckets are computed: local | spark (needs workbench[spark]).",
        choices=ENGINES)
    spark_master: str = option(
        "local[*]", "Spark master for --engine spark: local[N], spark://HOST:7077, yarn, k8s://...")
    spark_conf: tuple[str, ...] = option(
        (), "Spark setting KEY=VALUE for --engine spark (repeatable), e.g. spark.executor.memory=8g.",
        metavar="KEY=VALUE", commas=False)
    input_format: str = option(
        "auto", "Format of a SOURCE URI Spark reads (file://, s3a://, hdfs://, gs://, abfss:// with --engine spark): "
        "auto (from the file suffixes) | parquet | json (JSON Lines).", choices=INPUT_FORMATS)
    spark_partitions: int = option(
        0, "Partitions of the rows on Spark (0 = the cluster's parallelism, at least one per 20,000 rows).", min=0)

    def _check(self) -> None:
        if self.decontaminate_only and self.against is None:
            raise DedupConfigError("{decontaminate_only} drops the rows that copy an {against} reference row: "
                                   "give {against} REF too, or leave it out to deduplicate", "decontaminate_only", "against")
        for setting in self.spark_conf:
            key, equals, _ = setting.partition("=")
            if not equals or not key.strip():
                raise DedupConfigError(
                    f"{{spark_conf}} takes KEY=VALUE (e.g. spark.executor.memory=8g), not {setting!r}", "spark_conf")
        if self.keep == "train-first" and self.cross_set == "remove-train":
            # the cross-set policy decides train/test clusters: train-first would be overruled there, silently
            raise DedupConfigError("{keep} train-first keeps a train file of each cluster, but {cross_set} remove-train "
                                   "keeps a test file of each train/test cluster: choose one", "keep", "cross_set")
        if (self.lsh_bands is None) != (self.lsh_rows is None):
            raise DedupConfigError("give both {lsh_bands} and {lsh_rows}, or neither", "lsh_bands", "lsh_rows")
        if self.lsh_bands is not None and self.lsh_bands * self.lsh_rows > self.num_perm:
            raise DedupConfigError(
                f"{{lsh_bands}} x {{lsh_rows}} ({self.lsh_bands} x {self.lsh_rows}) must be at most "
                f"{{num_perm}} ({self.num_perm})", "lsh_bands", "lsh_rows", "num_perm",
            )

    @property
    def lsh_params(self) -> tuple[int, int] | None:
        """``(bands, rows)`` when both are set, else ``None`` (tuned from the threshold and weights)."""
        return (self.lsh_bands, self.lsh_rows) if self.lsh_bands is not None else None  # type: ignore[return-value]

    def to_dict(self, *, input_format: str | None = None) -> dict:
        """The parameters of the search as a JSON-ready dict (``report.json``'s ``parameters``):
        :data:`_REPORTED`, then ``engine`` (``local`` or ``spark``) and, for ``spark``, the settings
        of that engine: ``spark_master``, ``spark_partitions`` (0: chosen by the run; the number
        used is the report's ``work.spark_partitions``), ``input_format`` (the format Spark read a
        SOURCE URI in, ``parquet`` or ``json``: the ``input_format`` argument; ``None`` when the
        driver loaded the SOURCE), ``input_format_requested`` (this config's ``input_format``:
        ``auto``, ``parquet`` or ``json``) and ``spark_conf`` with the values of secret-looking keys
        hidden (:data:`SECRET_SETTING`)."""
        parameters: dict[str, Any] = {name: getattr(self, name) for name in _REPORTED}
        parameters["engine"] = self.engine
        if self.engine == "spark":
            parameters.update(spark_master=self.spark_master, spark_partitions=self.spark_partitions,
                              input_format=input_format, input_format_requested=self.input_format,
                              spark_conf=[_shown_setting(s) for s in self.spark_conf])
        return parameters


#: Spark setting keys whose values are not written to report.json: Spark's own ``spark.redaction.regex``
#: (``(?i)secret|password|token|access[.]key``) and the Azure account key / SAS token and credential files
SECRET_SETTING = re.compile(r"secret|password|token|access[.]?key|account[.]key|sas|credential", re.IGNORECASE)


def _shown_setting(setting: str) -> str:
    """``KEY=VALUE`` as report.json records it: ``KEY=*********(redacted)`` for a secret-looking key."""
    key, _, value = setting.partition("=")
    return f"{key.strip()}=*********(redacted)" if SECRET_SETTING.search(key) else f"{key.strip()}={value.strip()}"
