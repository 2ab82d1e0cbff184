"""Exact text duplicates below ``--min-tokens``: rows whose text is identical after whitespace
normalisation, found whatever their token count.

The near-duplicate rule of Allamanis 2019 (token bags, t0/t1, a minimum of tokens) never
compares a row with fewer than ``min_tokens`` identifier/literal tokens: a generated stub
``pass`` or ``return []`` repeated for one task would go unreported. Rows of identical text are
duplicates by any definition, so the too-short rows are grouped by their normalised text
(:func:`normalise_whitespace`) and each group of two or more becomes a cluster of kind
``exact_text``: the same keeper policy, removed like exact duplicates, matched against an
``--against`` reference the same way. Rows at or above ``min_tokens`` are left to the token
rule (two of them with identical text have identical token bags, so they are already exact
duplicates there).

Rows whose normalised text is empty (``""``, only whitespace) are bad input, not a group of
copies: they are never clustered and are listed in ``skipped.csv`` as ``empty``.

Example:

>>> normalise_whitespace("def f():\\r\\n    pass   \\r\\n\\r\\n")
'def f():\\n    pass'
>>> normalise_whitespace(" \\n\\t\\n")
''
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.data.text_encoding import DEFAULT_SOURCE_ENCODING
from workbench.dedup.tokens import FileTokens, decode_code, normalise_newlines, tokenize_one
from workbench.dedup.verification import multiset_jaccard, set_jaccard

#: whitespace removed at the end of each line (ASCII only: a no-break space is content)
TRAILING_WHITESPACE = " \t\f\v"


def normalise_whitespace(text: str) -> str:
    """Return ``text`` with its whitespace normalised, the key of exact text duplicates.

    Steps, in order: a leading byte-order mark (U+FEFF) is dropped; ``\\r\\n`` and lone ``\\r``
    become ``\\n``; each line loses its trailing spaces, tabs, form feeds and vertical tabs;
    lines left empty are dropped; the lines are joined with ``\\n`` (so no trailing newline).
    Indentation (leading whitespace) is kept: it is syntax in Python. Whitespace inside a line
    is kept.

    Args:
        text: the decoded code of a row.

    Returns:
        the normalised text; ``""`` for text that holds only whitespace.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = normalise_newlines(text).split("\n")
    return "\n".join(kept for line in lines if (kept := line.rstrip(TRAILING_WHITESPACE)))


def normalised_text(value: object, fallback: str = DEFAULT_SOURCE_ENCODING) -> str | None:
    """The normalised text of a code cell (see :func:`normalise_whitespace`), or ``None``
    when the cell cannot be decoded (null, binary, not UTF-8 nor ``fallback``: see :func:`decode_code`)."""
    text, _ = decode_code(value, fallback)
    return None if text is None else normalise_whitespace(text)


def text_groups(
    codes: Sequence[object],
    languages: Sequence[str],
    candidates: Sequence[int],
    fallback: str = DEFAULT_SOURCE_ENCODING,
) -> tuple[list[list[int]], list[int]]:
    """Group rows of identical normalised text and language.

    Args:
        codes, languages: every row's code cell and language (indexed by row).
        candidates: the rows to group (ascending): in the pipeline the too-short rows and
            too-short reference rows.
        fallback: the encoding of bytes cells that are not UTF-8 (``--source-encoding``).

    Returns:
        ``(groups, empty)``: the groups with two or more rows (each ascending, ordered by first
        member) and the candidates whose normalised text is empty (ascending); candidates that
        cannot be decoded are in neither.
    """
    by_text: dict[tuple[str, str], list[int]] = {}
    empty: list[int] = []
    for index in candidates:
        text = normalised_text(codes[index], fallback)
        if text is None:
            continue
        if not text:
            empty.append(index)
            continue
        by_text.setdefault((languages[index], text), []).append(index)
    groups = [members for members in by_text.values() if len(members) > 1]
    groups.sort(key=lambda members: members[0])
    return groups, empty


class TextPairScorer:
    """The set and multiset Jaccard of two text-identical rows' token bags.

    Normalised-identical texts usually have identical bags (1.0 / 1.0), but not always: a
    multi-line string literal holds the whitespace that normalisation removes. The bags are
    tokenized here, once per distinct (text, language), only for pairs whose raw texts
    differ; equal bags (two empty bags of comment-only rows included) score 1.0 / 1.0.

    Args:
        codes, languages: every row's code cell and language (indexed by row).
        tokenize: ``(code, language) -> FileTokens`` (default :func:`tokenize_one`).
    """

    def __init__(self, codes: Sequence[object], languages: Sequence[str],
                 tokenize: Callable[[object, str], FileTokens] = tokenize_one) -> None:
        self.codes, self.languages, self.tokenize = codes, languages, tokenize
        self._bags: dict[tuple[Any, str], dict] = {}

    def __call__(self, a: int, b: int) -> tuple[float, float]:
        """Return ``(set_jaccard, multiset_jaccard)`` of rows ``a`` and ``b``."""
        if self.codes[a] == self.codes[b] and self.languages[a] == self.languages[b]:
            return 1.0, 1.0
        bag_a, bag_b = self._bag(a), self._bag(b)
        if bag_a == bag_b:
            return 1.0, 1.0
        return set_jaccard(bag_a, bag_b), multiset_jaccard(bag_a, bag_b)

    def _bag(self, index: int) -> dict:
        key = (self.codes[index], self.languages[index])
        bag = self._bags.get(key)
        if bag is None:
            bag = self._bags[key] = self.tokenize(*key).counts
        return bag


@dataclass
class TextDuplicates:
    """What the identical-text search found (row indices count the rows, then the reference rows).

    Attributes:
        clusters: groups of two or more rows of one partition with identical text (ascending).
        pairs: ``(first row, other row, set_jaccard, multiset_jaccard)`` joining each row of a
            cluster to its first row.
        contamination: ``(row, reference row index, set_jaccard, multiset_jaccard)`` for every
            row whose text is a reference row's text.
        rows: every row in ``clusters``.
        empty: the rows (not reference rows) whose normalised text is empty.
    """

    clusters: list[list[int]] = field(default_factory=list)
    pairs: list[tuple[int, int, float, float]] = field(default_factory=list)
    contamination: list[tuple[int, int, float, float]] = field(default_factory=list)
    rows: set[int] = field(default_factory=set)
    empty: list[int] = field(default_factory=list)


def find_text_duplicates(
    codes: Sequence[object],
    languages: Sequence[str],
    candidates: Sequence[int],
    partitions: Sequence[Any],
    n_rows: int,
    score: Callable[[int, int], tuple[float, float]],
    fallback: str = DEFAULT_SOURCE_ENCODING,
) -> TextDuplicates:
    """Clusters of identical text among ``candidates`` (never across partitions: ``--group-column``
    groups) and the rows whose text is a reference row's (indices ``>= n_rows``).

    Args:
        codes, languages: every row's and reference row's code cell and language.
        candidates: the rows and reference rows to consider, ascending (the too-short ones).
        partitions: per row, the value two rows of one cluster share (the group, or ``None``).
        n_rows: rows before the reference rows.
        score: the Jaccards of two rows (:class:`TextPairScorer`).
        fallback: the encoding of bytes cells that are not UTF-8 (``--source-encoding``).
    """
    groups, empty = text_groups(codes, languages, candidates, fallback)
    found = TextDuplicates(empty=[i for i in empty if i < n_rows])
    for members in groups:
        by_partition: dict[Any, list[int]] = {}
        for member in members:
            if member < n_rows:
                by_partition.setdefault(partitions[member], []).append(member)
        for copies in by_partition.values():
            if len(copies) > 1:
                found.clusters.append(copies)
                found.rows.update(copies)
                found.pairs += [(copies[0], member, *score(copies[0], member)) for member in copies[1:]]
        references = [member for member in members if member >= n_rows]
        found.contamination += [(member, other - n_rows, *score(member, other))
                                for member in members if member < n_rows for other in references]
    return found
