"""Combined judges: a weighted average of the ranks of several metrics, evaluated like a metric.

Two metrics that carry different signal (an LLM judge's P(correct) and CodeBLEU's reference
overlap) can together track execution better than either. Averaging their *ranks* makes
the combination blind to each metric's scale (rank aggregation, Borda count; Dwork et al. 2001,
"Rank Aggregation Methods for the Web", section 2).

The combination is declared *before* the data is seen: ``NAME=rank-mean:metric_a,metric_b``
(equal weights) or ``NAME=rank-mean:metric_a,metric_b,2,1`` (fixed weights), so evaluating it
on the same data is an honest test and its paired comparison with each member is a fair one.
With ``NAME=rank-mean-cv:...`` the weights are instead *fitted on the data*, with task-level
k-fold cross-validation (:mod:`workbench.correlate.fitted`), and reported as such.

Definition: over the rows where every member has a value, each member's values get average
ranks (ties share the mean of their positions, ``scipy.stats.rankdata(method="average")``),
divided by the number of rows, so a rank lies in ``(0, 1]``; the combination is
``sum_i w_i r_i / sum_i w_i``. A row where a member is missing has no combined value (counted as
missing). The ranks are taken once over the evaluated rows; the task bootstrap then resamples
the combined values like any metric's.

The sum is formed in integers (twice an average rank is one; the weights as the decimals they
were declared as, scaled to integers), so rows whose weighted rank sums are equal get the very
same value: in floating point, ranks 2 + 4 and 3 + 3 of 5 rows gave 0.6000000000000001 and 0.6,
and Kendall tau-b and Spearman rho then ordered a tie by rounding noise.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from workbench.errors import DataError

#: the combination methods: weights declared in advance, or fitted with task-level cross-validation
COMBINE_METHODS: tuple[str, ...] = ("rank-mean", "rank-mean-cv")
#: cross-validation folds (over tasks) of ``rank-mean-cv``
DEFAULT_FOLDS = 5

_SYNTAX = "NAME=rank-mean:metric_a,metric_b[,weight_a,weight_b] (or rank-mean-cv:metric_a,metric_b)"


class CombinationError(DataError):
    """A ``--combine`` declaration that cannot be read or does not fit the data."""


@dataclass(frozen=True)
class Combination:
    """One declared combination.

    Attributes:
        name: the new metric's name.
        method: ``"rank-mean"`` (weights fixed in the declaration) or ``"rank-mean-cv"``
            (weights fitted with task-level cross-validation).
        members: the metrics combined (at least two, distinct).
        weights: one positive weight per member (``rank-mean``); equal weights when the
            declaration gave none; ``None`` for ``rank-mean-cv``.

    Example:
        >>> Combination.parse("both=rank-mean:p_correct,codebleu").weights
        (1.0, 1.0)
        >>> Combination.parse("both=rank-mean:p_correct,codebleu,2,1").weights
        (2.0, 1.0)
    """

    name: str
    method: str
    members: tuple[str, ...]
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if not self.name:
            raise CombinationError(f"a combination needs a name: {_SYNTAX}")
        if self.method not in COMBINE_METHODS:
            raise CombinationError(
                f"combination {self.name!r}: unknown method {self.method!r}; use one of {', '.join(COMBINE_METHODS)}"
            )
        if len(self.members) < 2:
            raise CombinationError(f"combination {self.name!r} needs at least two metrics, got {list(self.members)}")
        if len(set(self.members)) != len(self.members):
            raise CombinationError(f"combination {self.name!r} names a metric twice: {list(self.members)}")
        if self.name in self.members:
            raise CombinationError(f"combination {self.name!r} cannot be one of its own members")
        if self.method == "rank-mean-cv":
            if self.weights is not None:
                raise CombinationError(
                    f"combination {self.name!r}: rank-mean-cv fits its weights on the data; "
                    "give fixed weights with rank-mean instead"
                )
            return
        if self.weights is None:
            object.__setattr__(self, "weights", tuple(1.0 for _ in self.members))
        if len(self.weights) != len(self.members):
            raise CombinationError(
                f"combination {self.name!r}: {len(self.members)} metrics but {len(self.weights)} weights; "
                f"give one weight per metric or none ({_SYNTAX})"
            )
        if not all(math.isfinite(w) and w > 0 for w in self.weights):
            raise CombinationError(f"combination {self.name!r}: weights must be positive finite numbers, got {list(self.weights)}")

    @property
    def fitted(self) -> bool:
        """Whether the weights are fitted on the data (``rank-mean-cv``)."""
        return self.method == "rank-mean-cv"

    @classmethod
    def parse(cls, text: str) -> Combination:
        """Read ``NAME=METHOD:metric_a,metric_b[,weight_a,weight_b]``.

        The items after the colon are metric names, then, optionally, as many numbers as there
        are metrics (the weights, in the same order).

        Raises:
            CombinationError: the text does not follow the syntax (the message shows it).
        """
        name, equals, rest = text.partition("=")
        method, colon, items_text = rest.partition(":")
        if not equals or not colon:
            raise CombinationError(f"cannot read the combination {text!r}; write {_SYNTAX}")
        items = [item.strip() for item in items_text.split(",")]
        if any(not item for item in items):
            raise CombinationError(f"combination {text!r} has an empty item; write {_SYNTAX}")
        numbers = [_as_number(item) for item in items]
        first_weight = next((i for i, n in enumerate(numbers) if n is not None), len(items))
        members, weights = items[:first_weight], numbers[first_weight:]
        if any(w is None for w in weights):
            raise CombinationError(f"combination {text!r}: metric names come first, then the weights; write {_SYNTAX}")
        return cls(name.strip(), method.strip(), tuple(members), tuple(weights) if weights else None)  # type: ignore[arg-type]

    def declaration(self) -> str:
        """The combination as declared (``--combine`` text, the weights as given)."""
        if self.weights is None:
            return f"{self.name}={self.method}:{','.join(self.members)}"
        weights = ",".join(f"{w:g}" for w in self.weights)
        return f"{self.name}={self.method}:{','.join(self.members)},{weights}"


def _as_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def fractional_ranks(values: np.ndarray) -> np.ndarray:
    """Average ranks divided by the count: ``(n,)`` values in ``(0, 1]``, ties sharing their mean rank.

    Example:
        >>> fractional_ranks(np.array([0.3, 0.1, 0.3, 0.9])).tolist()
        [0.625, 0.25, 0.625, 1.0]
    """
    from scipy import stats  # here: the CLI imports this module (for its options) without scipy

    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return values.copy()
    return stats.rankdata(values, method="average") / values.size


def doubled_ranks(values: np.ndarray) -> np.ndarray:
    """Twice the average ranks (ties share the mean of their positions): integers, exact in int64.

    Example:
        >>> doubled_ranks(np.array([0.3, 0.1, 0.3, 0.9])).tolist()
        [5, 2, 5, 8]
    """
    from scipy import stats

    return np.rint(2.0 * stats.rankdata(np.asarray(values, dtype=np.float64), method="average")).astype(np.int64)


def integer_weights(weights: Sequence[float]) -> list[int]:
    """The weights as integers in the same ratios, read as the decimals they print as
    (``0.3, 0.7`` -> ``3, 7``; ``2, 1`` -> ``2, 1``), so weights declared as ``1:3`` tie exactly.

    >>> integer_weights([0.3, 0.7]), integer_weights([2, 1]), integer_weights([0.25, 1.5])
    ([3, 7], [2, 1], [1, 6])
    """
    fractions = [Fraction(repr(float(w))) for w in weights]
    scale = math.lcm(*(f.denominator for f in fractions))
    integers = [int(f * scale) for f in fractions]
    common = math.gcd(*integers)
    return [w // common for w in integers]


def weighted_rank_sums(doubled: np.ndarray, weights: Sequence[int]) -> np.ndarray:
    """``sum_i weights_i doubled_i`` per row, exactly (int64, or Python integers past its range).

    Args:
        doubled: ``(members, n)`` :func:`doubled_ranks`; weights: one non-negative integer per member.
    """
    bound = sum(weights) * (int(doubled.max(initial=0)) + 1)
    if bound < 2**62:
        return np.asarray(weights, dtype=np.int64) @ doubled
    return np.array([sum(w * int(r) for w, r in zip(weights, column)) for column in doubled.T], dtype=object)


def rank_mean(columns: Sequence[np.ndarray], weights: Sequence[float]) -> np.ndarray:
    """The weighted mean of the members' fractional ranks, on the rows where all have a value.

    Formed in integers (:func:`integer_weights`, :func:`doubled_ranks`) and divided once, so rows
    with equal weighted rank sums get bit-identical values (ties stay ties for Kendall tau-b). The
    one division rounds to a double: sums that differ by less than its precision (weights in a
    ratio beyond about 1e15) share a value.

    Args:
        columns: one ``(n,)`` float array per member, NaN where the member has no value.
        weights: one positive weight per member.

    Returns:
        ``(n,)`` combined values in ``(0, 1]``; NaN on rows where any member is NaN.

    Raises:
        CombinationError: columns of different lengths, or a weight count that does not match.

    Example:
        >>> rank_mean([np.array([1.0, 2, 2, 3]), np.array([4.0, 3, 2, 1])], [1, 1]).tolist()
        [0.625, 0.6875, 0.5625, 0.625]
    """
    if len(columns) != len(weights):
        raise CombinationError(f"{len(columns)} columns but {len(weights)} weights")
    stacked = np.vstack([np.asarray(c, dtype=np.float64) for c in columns])
    valid = ~np.isnan(stacked).any(axis=0)
    out = np.full(stacked.shape[1], np.nan)
    if valid.any():
        doubled = np.vstack([doubled_ranks(row[valid]) for row in stacked])
        integers = integer_weights(weights)
        sums = weighted_rank_sums(doubled, integers)
        # one division of exact integers: equal sums give equal values
        out[valid] = sums / (2 * int(valid.sum()) * sum(integers))
    return out
