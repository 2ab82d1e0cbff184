"""Parameters of a dedup run, checked before any work starts."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

from workbench.errors import WorkbenchError

KeepPolicy = Literal["first", "longest", "train-first"]
CrossSetPolicy = Literal["remove-test", "remove-train"]
KEEP_POLICIES: tuple[str, ...] = ("first", "longest", "train-first")
CROSS_SET_POLICIES: tuple[str, ...] = ("remove-test", "remove-train")


class DedupConfigError(WorkbenchError):
    """A dedup parameter is out of range; the message says which and what is allowed."""


@dataclass(frozen=True)
class DedupConfig:
    """Parameters of near-duplicate detection.

    Attributes:
        set_threshold: t0, the minimum set Jaccard of the identifier/literal token sets
            for a duplicate pair, in (0, 1]. Default 0.8 (Allamanis 2019, Sec. 3, following
            SourcererCC; Sajnani et al., ICSE 2016).
        multiset_threshold: t1, the minimum multiset Jaccard of the token multisets, in
            (0, 1]. Default 0.7 (Allamanis 2019, Sec. 3).
        min_tokens: files with fewer identifier/literal tokens (counted with repetition)
            are reported as too short and never compared. Default 20, as in dpu-utils'
            ``DuplicateDetector`` and Microsoft's near-duplicate-code-detector.
        num_perm: MinHash permutations (signature length).
        lsh_threshold: the Jaccard threshold the LSH bands and rows are tuned for. Below
            ``set_threshold`` so that pairs at ``set_threshold`` are almost never missed
            (Leskovec, Rajaraman, Ullman, Mining of Massive Datasets, 3rd ed., Sec. 3.4.2:
            a band/row split trades false negatives for false positives).
        lsh_weights: ``(false_positive_weight, false_negative_weight)`` for datasketch's
            band/row optimisation; they must sum to 1.
        lsh_params: explicit ``(bands, rows)``; overrides ``lsh_threshold``/``lsh_weights``.
        seed: the MinHash permutation seed.
        keep: which file of a cluster survives: ``first`` (input order), ``longest`` (most
            tokens, then input order) or ``train-first`` (a file of the train split first).
        cross_set: for clusters with files in both the train and the test split:
            ``remove-test`` keeps a train copy (the "unbiased test" set of Allamanis 2019,
            Sec. 4) and ``remove-train`` keeps a test copy (decontaminates train).
        train_split / test_split: the split names those policies and the report use.
        group_column: if set, clusters never join files of different groups (e.g.
            ``task_id``: completions of one task); duplicate pairs across groups are
            verified and reported, not removed.
        workers: processes for tokenizing (``1`` = in-process; ``0`` = one per CPU).
    """

    set_threshold: float = 0.8
    multiset_threshold: float = 0.7
    min_tokens: int = 20
    num_perm: int = 128
    lsh_threshold: float = 0.6
    lsh_weights: tuple[float, float] = (0.1, 0.9)
    lsh_params: tuple[int, int] | None = None
    seed: int = 1
    keep: str = "first"
    cross_set: str = "remove-test"
    train_split: str = "train"
    test_split: str = "test"
    group_column: str | None = None
    workers: int = 0

    def __post_init__(self) -> None:
        for name in ("set_threshold", "multiset_threshold", "lsh_threshold"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise DedupConfigError(f"{name} must be in (0, 1], not {value}")
        if self.min_tokens < 1:
            raise DedupConfigError(f"min_tokens must be at least 1, not {self.min_tokens}")
        if self.num_perm < 2:
            raise DedupConfigError(f"num_perm must be at least 2, not {self.num_perm}")
        weights = tuple(self.lsh_weights)
        if len(weights) != 2 or any(not 0.0 <= w <= 1.0 for w in weights) or abs(sum(weights) - 1.0) > 1e-9:
            raise DedupConfigError(f"lsh_weights must be two numbers in [0, 1] that sum to 1, not {self.lsh_weights}")
        if self.lsh_params is not None:
            bands, rows = self.lsh_params
            if bands < 2 or rows < 1 or bands * rows > self.num_perm:
                raise DedupConfigError(
                    f"lsh_params (bands={bands}, rows={rows}) need bands >= 2, rows >= 1 and "
                    f"bands * rows <= num_perm ({self.num_perm})"
                )
        if self.keep not in KEEP_POLICIES:
            raise DedupConfigError(f"keep must be one of {', '.join(KEEP_POLICIES)}, not {self.keep!r}")
        if self.cross_set not in CROSS_SET_POLICIES:
            raise DedupConfigError(f"cross_set must be one of {', '.join(CROSS_SET_POLICIES)}, not {self.cross_set!r}")
        if self.workers < 0:
            raise DedupConfigError(f"workers must be >= 0, not {self.workers}")

    def to_dict(self) -> dict:
        """Return the parameters as a JSON-ready dict (for the report)."""
        return asdict(self)
