"""Which rows each test setting of Allamanis 2019 counts, and the decomposition of Eq. 2.

Allamanis, "The Adverse Effects of Code Duplication in Machine Learning Models of Code"
(Onward! 2019). Sec. 2 splits a metric f measured on a dataset D with duplicates into the part
the duplicates contribute: with X the deduplicated dataset (one file per duplicate cluster),

* duplication factor ``d = (|D| - |X|) / |D|``,
* unbiased estimate ``f̄ = (1/|X|) Σ_{x ∈ X} f(x)``,
* duplication bias ``β = (1/(|D| - |X|)) Σ_{x ∈ D \\ X} f(x)``, the mean over the duplicates
  a deduplication removes,

so that the reported value ``f̂ = (1/|D|) Σ_{x ∈ D} f(x) = (1 - d) f̄ + d β`` (Eq. 2). The paper
keeps exactly one file of each cluster, so a collapsed cluster counts with the value of the
one member it keeps (:func:`one_per_cluster`).

Sec. 3-4 (Table 2) evaluate a model in four settings over the test set:

* **fully biased**: the original test set, every duplicate counted;
* **cross-set biased**: in-test duplicates collapsed (one test file per cluster), test files
  with a duplicate in train kept;
* **unbiased test**: in-test duplicates collapsed and every test file with a duplicate in the
  training set removed (the test rows ``workbench dedup --cross-set remove-test`` keeps without
  ``--against``: a test row that copies a reference is no train/test duplicate and stays here);
* **fully unbiased**: the unbiased test set for a model retrained on the deduplicated
  training set, which per-row values of one model cannot give (it needs a second model).

Table 3 reports the relative difference between the cross-set biased and the unbiased test
values, :func:`relative_difference`.

Everything here takes arrays over the joined rows and returns boolean masks; no I/O.

Example:

>>> import numpy as np
>>> cluster = np.array([0, 0, -1, 1, 1])          # rows 0-1 and 3-4 are duplicate clusters
>>> position = np.array([0, 1, 0, 0, 1])          # place in their cluster (input order)
>>> kept = np.array([True, False, True, False, True])
>>> one_per_cluster(cluster, position, kept, np.ones(5, bool)).tolist()
[True, False, True, False, True]
>>> decompose(np.array([1.0, 1.0, 0.0, 0.0, 0.0]), np.ones(5, bool), np.array([1, 0, 1, 0, 1], bool)).d
0.4
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the three test settings of Allamanis 2019, Table 2, computable from one model's per-row values
TRAIN_TEST_SETTINGS = ("fully_biased", "cross_set_biased", "unbiased_test")
#: the two settings of a corpus without a train/test split: every row, and one per cluster
SINGLE_SET_SETTINGS = ("all_rows", "deduplicated")
#: the GPT-3 style split of a benchmark checked against a reference (Brown et al. 2020, App. C)
CONTAMINATION_SETTINGS = ("all_rows", "clean", "contaminated")

#: the settings whose Kendall tau-b with the label are compared, ``(a, b)``: a minus b, the more
#: biased setting first as in Δ%. Allamanis 2019 compares a model's test settings (Table 3: cross-set
#: biased against unbiased test; Eq. 2: the set with duplicates D against the deduplicated X);
#: GPT-3 (Brown et al. 2020, App. C) compares the benchmark's clean subset with the whole and
#: with the contaminated part
COMPARED_SETTINGS = {
    "single_set": (("all_rows", "deduplicated"),),
    "train_test": (("fully_biased", "unbiased_test"), ("cross_set_biased", "unbiased_test")),
    "contamination": (("all_rows", "clean"), ("contaminated", "clean"), ("contaminated_tasks", "clean_tasks")),
}

#: what each setting counts (the report carries these as ``definitions``)
SETTING_TEXTS = {
    "fully_biased": "every test row (Allamanis 2019, Table 2: fully biased)",
    "cross_set_biased": "test rows with in-test duplicates collapsed to one per cluster; "
                        "rows with a train duplicate kept (Table 2: cross-set biased)",
    "unbiased_test": "cross-set biased minus every test row whose cluster has a train row (Table 2: unbiased test) "
                     "or a row of another split (validation: it may have chosen the model)",
    "fully_unbiased": "needs a model retrained on the deduplicated train split: not computable from one model's values",
    "all_rows": "every row",
    "deduplicated": "one row per duplicate cluster (the row the dedup kept; Allamanis 2019, Sec. 2)",
    "clean": "rows with no near-duplicate in the reference (GPT-3, Brown et al. 2020, App. C: the clean subset)",
    "contaminated": "rows that are near-duplicates of a reference row",
    "clean_tasks": "rows of tasks none of whose rows is contaminated",
    "contaminated_tasks": "rows of tasks with at least one contaminated row",
}


def one_per_cluster(cluster: np.ndarray, position: np.ndarray, kept: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """Keep one eligible row per duplicate cluster, and every eligible row outside clusters.

    The row kept for a cluster is the one the dedup kept, when it is eligible (the paper keeps
    one file per cluster); otherwise the eligible member first in the cluster's order (input
    order: ``clusters.json``), e.g. the first test member of a cluster whose kept row is in train,
    or the first member with a metric value when the kept row has none.

    Args:
        cluster: ``(n,)`` cluster index of each row, ``-1`` for a row in no cluster.
        position: ``(n,)`` the row's place in its cluster's member list.
        kept: ``(n,)`` the row is its cluster's kept row (:meth:`DedupOutput.is_cluster_row`), or a kept row in no cluster.
        eligible: ``(n,)`` rows that may be counted.

    Returns:
        ``(n,)`` boolean mask.
    """
    chosen = eligible & (cluster < 0)
    members = np.flatnonzero(eligible & (cluster >= 0))
    if members.size == 0:
        return chosen
    # per cluster: the kept member first, then by position
    order = np.lexsort((position[members], ~kept[members], cluster[members]))
    ordered = members[order]
    first = np.ones(ordered.size, dtype=bool)
    first[1:] = cluster[ordered][1:] != cluster[ordered][:-1]
    chosen[ordered[first]] = True
    return chosen


def train_test_masks(split_is_test: np.ndarray, cluster: np.ndarray, position: np.ndarray, kept: np.ndarray,
                     cluster_outside_test: np.ndarray, eligible: np.ndarray) -> dict[str, np.ndarray]:
    """The rows of each test setting of Allamanis 2019, Table 2 (:data:`TRAIN_TEST_SETTINGS`).

    Args:
        split_is_test: ``(n,)`` the row is in the test split.
        cluster, position, kept: as for :func:`one_per_cluster`.
        cluster_outside_test: ``(n,)`` the row's cluster holds a row of another split than the test
            split: a train row (a cross-set duplicate, the paper's), or a row of a third split such as
            validation, which the paper's train/test corpora do not have; either leaves the row out
            of ``unbiased_test`` (a held-out split may have chosen the model: early stopping,
            hyperparameters), as the dedup keeps one row per cluster over every split.
        eligible: ``(n,)`` rows with a value.

    Returns:
        setting name -> ``(n,)`` mask.
    """
    test = eligible & split_is_test
    collapsed = one_per_cluster(cluster, position, kept, test)
    return {"fully_biased": test, "cross_set_biased": collapsed, "unbiased_test": collapsed & ~cluster_outside_test}


def single_set_masks(cluster: np.ndarray, position: np.ndarray, kept: np.ndarray, eligible: np.ndarray) -> dict[str, np.ndarray]:
    """Every row, and one row per cluster (:data:`SINGLE_SET_SETTINGS`)."""
    return {"all_rows": eligible.copy(), "deduplicated": one_per_cluster(cluster, position, kept, eligible)}


@dataclass(frozen=True)
class Decomposition:
    """Eq. 2 of Allamanis 2019 for one metric: ``f̂ = (1 - d) f̄ + d β``.

    Attributes:
        f_hat: the mean over D (with duplicates); f_bar: over X (deduplicated); beta: over D \\ X
            (NaN when nothing was removed); d: ``(|D| - |X|) / |D|``.
        n_d, n_x: ``|D|``, ``|X|``.
        residual: ``|f̂ - ((1 - d) f̄ + d β)|``, the identity checked on the numbers (0 up to
            rounding; with ``d = 0`` the β term is left out).
    """

    f_hat: float
    f_bar: float
    beta: float
    d: float
    n_d: int
    n_x: int
    residual: float

    def to_dict(self) -> dict:
        def clean(value: float) -> float | None:
            return None if math.isnan(value) else value

        return {"f_hat": clean(self.f_hat), "f_bar": clean(self.f_bar), "beta": clean(self.beta), "d": clean(self.d),
                "n_D": self.n_d, "n_X": self.n_x, "identity_residual": clean(self.residual)}


def decompose(values: np.ndarray, with_duplicates: np.ndarray, deduplicated: np.ndarray) -> Decomposition:
    """Eq. 2 of Allamanis 2019 for ``values`` over D = ``with_duplicates`` and X = ``deduplicated``.

    Args:
        values: ``(n,)`` metric values (rows outside D are ignored).
        with_duplicates: ``(n,)`` mask of D.
        deduplicated: ``(n,)`` mask of X, a subset of D.

    Returns:
        a :class:`Decomposition`; its values are NaN where a set is empty.

    Raises:
        ValueError: X is not a subset of D.
    """
    if np.any(deduplicated & ~with_duplicates):
        raise ValueError("the deduplicated rows must be a subset of the rows with duplicates")
    removed = with_duplicates & ~deduplicated
    n_d, n_x, n_r = int(with_duplicates.sum()), int(deduplicated.sum()), int(removed.sum())
    f_hat = float(values[with_duplicates].mean()) if n_d else math.nan
    f_bar = float(values[deduplicated].mean()) if n_x else math.nan
    beta = float(values[removed].mean()) if n_r else math.nan
    d = n_r / n_d if n_d else math.nan
    rebuilt = (1.0 - d) * f_bar + (d * beta if n_r else 0.0)
    return Decomposition(f_hat, f_bar, beta, d, n_d, n_x, abs(f_hat - rebuilt) if n_d and n_x else math.nan)


def relative_difference(biased: float, unbiased: float) -> float:
    """``100 (biased - unbiased) / |unbiased|``: how much, in percent of the unbiased value, the
    biased setting reports more (Allamanis 2019, Table 3's relative difference). NaN when the
    unbiased value is 0 or undefined.

    >>> relative_difference(0.6, 0.5)
    19.999999999999996
    """
    if unbiased == 0 or math.isnan(unbiased) or math.isnan(biased):
        return math.nan
    return 100.0 * (biased - unbiased) / abs(unbiased)
