"""The rows the near-duplicate search did not compare, or compared from a damaged parse:
``skipped.csv``, one line per row, so none is only counted.

Reasons (one per row, the first that applies):

* ``unreadable``: the cell could not be tokenized (null, binary, not UTF-8, no language
  plugin, tokenizer error); ``detail`` says which. Also in ``unreadable.csv``.
* ``empty``: the text is empty after whitespace normalisation
  (:func:`~workbench.dedup.text_identity.normalise_whitespace`); never compared, never
  clustered (many empty generations are bad input, not copies of each other).
* ``too_short``: fewer than ``--min-tokens`` identifier/literal tokens; not compared by the
  token rule, but copies of its exact text are found (``exact_text``).
* ``compared_with_parse_error``: not skipped: compared like any row, but tokenized from a
  parse with syntax errors (tree-sitter recovers); ``detail`` locates the first error. (Named
  ``parse_error`` before, which read as a row left out for its error.)

A too-short or empty row that also failed to parse keeps that reason and gives its error in
``detail``: the ``compared_with_parse_error`` rows are the report's ``parse_errors_compared``, and
``parse_errors`` also counts such too-short rows (``parse_errors_too_short``). Rows are
listed in input order (split order, then row order), which is the same for every engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from workbench.dedup.detection import ANALYSED, FAILED, DedupResult
from workbench.data.text_encoding import DEFAULT_SOURCE_ENCODING
from workbench.dedup.tokens import decode_code
from workbench.errors import LanguageNotFoundError
from workbench.languages.registry import get_language

#: the reasons of ``skipped.csv``, in report order
SKIP_REASONS: tuple[str, ...] = ("unreadable", "empty", "too_short", "compared_with_parse_error")
#: the columns of ``skipped.csv``
SKIPPED_COLUMNS: tuple[str, ...] = ("id", "split", "reason", "n_tokens", "detail")


@dataclass(frozen=True)
class SkippedRow:
    """One line of ``skipped.csv``.

    Attributes:
        index: the row index; reason: one of :data:`SKIP_REASONS`; n_tokens: its
        identifier/literal token count; detail: the unreadable reason or the first parse error.
    """

    index: int
    reason: str
    n_tokens: int
    detail: str


def skipped_rows(result: DedupResult, *, details: bool = True) -> Iterator[SkippedRow]:
    """The rows of ``result`` that ``skipped.csv`` lists, in input order.

    Args:
        result: a finished run.
        details: locate the first syntax error of rows parsed with errors (parses each such
            row again); ``False`` leaves ``detail`` empty for them.
    """
    empty = set(result.empty)
    rows = result.rows
    for index, status in enumerate(result.status):
        has_error = result.has_error[index]
        if status == ANALYSED and not has_error:
            continue
        if status == FAILED:
            yield SkippedRow(index, "unreadable", 0, result.failures.get(index, ""))
            continue
        reason = "compared_with_parse_error" if status == ANALYSED else "empty" if index in empty else "too_short"
        detail = (first_syntax_error(rows.codes[index], rows.languages[index], result.config.source_encoding)
                  if has_error and details else "")
        yield SkippedRow(index, reason, result.n_tokens[index], detail)


def first_syntax_error(code: Any, language: str, fallback: str = DEFAULT_SOURCE_ENCODING) -> str:
    """Where the first syntax error of ``code`` is, e.g. ``"line 3, column 9: missing ')'"``
    or ``"line 1, column 5: unexpected 'in'"`` (1-based; columns count characters).

    Args:
        code: the code cell; language: its language plugin's name; fallback: the encoding of a
            bytes cell that is not UTF-8 (``--source-encoding``).

    Returns:
        the description, or ``""`` when the code parses cleanly or cannot be parsed here.
    """
    text, _ = decode_code(code, fallback)
    if text is None:
        return ""
    try:
        plugin = get_language(language)
        data = text.encode("utf-8", errors="surrogateescape")
        tree = plugin.parse(data)
    except (LanguageNotFoundError, NotImplementedError, ValueError):
        return ""
    node = _first_error(tree.root_node)
    if node is None:
        return ""
    line, byte_column = node.start_point
    line_start = node.start_byte - byte_column
    column = len(data[line_start : node.start_byte].decode("utf-8", errors="replace")) + 1
    if node.is_missing:
        what = f"missing {node.type!r}"
    else:
        snippet = data[node.start_byte : node.end_byte].decode("utf-8", errors="replace").split("\n")[0]
        what = f"unexpected {snippet[:40]!r}"
    return f"line {line + 1}, column {column}: {what}"


def _first_error(root: Any) -> Any:
    """The first ERROR or MISSING node in document order (pre-order), or ``None``."""
    if not root.has_error:
        return None
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_error or node.is_missing:
            return node
        stack.extend(child for child in reversed(node.children) if child.has_error or child.is_missing)
    return None
