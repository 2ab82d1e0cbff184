"""DSA-CQE step 1, decomposition: a program becomes a bounded list of sub-codes.

Source: Xu, Zhang, Zhang, Han, "Decompositional Semantic Analysis for LLM-based Code
Quality Evaluation", ISWC 2024 posters (CEUR-WS Vol-3828, paper 7), Sec. 2: the program
is parsed, and depth-first the sub-trees under the predefined node kinds (For, While,
Assign, If, ClassDef, FunctionDef, Switch, Call) become sub-codes.

The grammar node types of each kind, and the fields whose identifiers a node defines,
come from the language plugin (:attr:`LanguagePlugin.subcode_node_types`,
:attr:`LanguagePlugin.definition_fields`); this module names no language.

Bounding (ours, because a call per sub-code must stay affordable): a ``Call`` folds into
its parent sub-code when it is part of an ``Assign`` or another ``Call``, or sits on the
first (header) line of its parent (``for i in range(len(xs))``); every sub-code nested in
an ``Assign`` folds too. Then, while there are more than ``max_subcodes``, the smallest
innermost sub-code of the cheapest kind folds into its parent. Folded code is never lost:
it stays in the text of the sub-code that contains it. Only when every remaining sub-code
is a top-level leaf (nothing to fold into) is the cheapest one *dropped*: it gets no
analysis of its own (counted in :attr:`Decomposition.dropped`; the comparison step still
sees the whole program).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.languages.spec import LanguagePlugin, SubCodeKind
from workbench.score.subcode_names import ProgramNames, program_names, subcode_names

#: default cap on sub-codes per program (one LLM call each)
DEFAULT_MAX_SUBCODES = 16

#: which sub-code folds first when the cap is exceeded (lower folds first)
FOLD_PRIORITY = {
    SubCodeKind.CALL: 0,
    SubCodeKind.ASSIGN: 1,
    SubCodeKind.IF: 2,
    SubCodeKind.SWITCH: 3,
    SubCodeKind.WHILE: 3,
    SubCodeKind.FOR: 3,
    SubCodeKind.FUNCTION_DEF: 4,
    SubCodeKind.CLASS_DEF: 5,
}


@dataclass
class SubCode:
    """One sub-code of a program.

    Attributes:
        index: position in analysis order (post-order: inner before outer, siblings in
            source order), 0-based.
        kind: the :class:`SubCodeKind`.
        node_type: the grammar node type (``"for_statement"``).
        text: the source text of the sub-tree.
        start_line / end_line: 1-based, inclusive lines in the program.
        start_byte / end_byte: byte offsets in the UTF-8 program.
        defines: names the sub-code binds anywhere in its text, in source order: targets
            of assignments, loops, walrus, ``match`` captures, parameters, imports; a member
            target defines the dotted member (``self.item``). See :mod:`workbench.score.subcode_names`.
        uses: names the sub-code reads, in source order, f-string interpolations included
            (member names are not free names; a member path some target defines is listed).
        parent: ``index`` of the enclosing sub-code, or ``None`` at top level.
        children: indices of directly nested sub-codes.
        folded: how many nested candidate sub-trees were folded into this one.
    """

    index: int
    kind: SubCodeKind
    node_type: str
    text: str
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    defines: list[str] = field(default_factory=list)
    uses: list[str] = field(default_factory=list)
    parent: int | None = None
    children: list[int] = field(default_factory=list)
    folded: int = 0

    @property
    def names(self) -> list[str]:
        """Defined and used names (no repeats), the keys for the exact storage lookup."""
        return list(dict.fromkeys([*self.defines, *self.uses]))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view for traces."""
        return {
            "index": self.index,
            "kind": self.kind.value,
            "node_type": self.node_type,
            "lines": [self.start_line, self.end_line],
            "defines": self.defines,
            "uses": self.uses,
            "parent": self.parent,
            "children": self.children,
            "folded": self.folded,
            "text": self.text,
        }


@dataclass
class Decomposition:
    """The sub-codes of one program.

    Attributes:
        program: the program text that was parsed.
        subcodes: sub-codes in analysis order.
        candidates: how many sub-trees matched a kind before bounding.
        folded: how many were folded into a parent by the rules or the cap.
        dropped: top-level sub-codes dropped by the cap (nothing to fold them into).
        syntax_error: the parse tree has ERROR or missing nodes.
    """

    program: str
    subcodes: list[SubCode]
    candidates: int
    folded: int
    dropped: int
    syntax_error: bool

    def counts(self) -> dict[str, int]:
        """Return kind name -> number of sub-codes."""
        counts: dict[str, int] = {}
        for subcode in self.subcodes:
            counts[subcode.kind.value] = counts.get(subcode.kind.value, 0) + 1
        return counts

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view for traces."""
        return {
            "candidates": self.candidates,
            "folded": self.folded,
            "dropped": self.dropped,
            "syntax_error": self.syntax_error,
            "subcodes": [s.as_dict() for s in self.subcodes],
        }


@dataclass
class _Candidate:
    node: Any
    kind: SubCodeKind
    parent: _Candidate | None
    children: list[_Candidate] = field(default_factory=list)
    folded: int = 0


def decompose(code: str, plugin: LanguagePlugin, max_subcodes: int = DEFAULT_MAX_SUBCODES) -> Decomposition:
    """Split ``code`` into sub-codes (DSA-CQE step 1, Xu et al. 2024, Sec. 2).

    Args:
        code: the whole program (for completion-style data: prompt + body).
        plugin: the language plugin; it must support ``decompose``.
        max_subcodes: the most sub-codes to return (>= 1).

    Returns:
        a :class:`Decomposition`; code with syntax errors is decomposed as far as
        tree-sitter recovers it and flagged ``syntax_error``.

    Raises:
        ValueError: ``max_subcodes < 1`` or the plugin has no decomposition map.
    """
    if max_subcodes < 1:
        raise ValueError(f"max_subcodes must be >= 1, not {max_subcodes}")
    if not plugin.subcode_node_types:
        raise ValueError(f"the {plugin.name} plugin has no sub-code map (subcode_node_types); it cannot decompose")
    kinds = {node_type: kind for kind, types in plugin.subcode_node_types.items() for node_type in types}
    data = code.encode("utf-8", errors="surrogateescape")
    tree = plugin.parse(data)
    roots, total = _candidates(tree.root_node, kinds)
    folded = _fold_by_rules(roots)
    kept = [c for c in _walk(roots)]
    capped, dropped = _apply_cap(roots, len(kept), max_subcodes)
    subcodes = _number(roots, data, plugin, program_names(tree.root_node, plugin))
    return Decomposition(
        program=code,
        subcodes=subcodes,
        candidates=total,
        folded=folded + capped,
        dropped=dropped,
        syntax_error=tree.root_node.has_error,
    )


def _candidates(root: Any, kinds: dict[str, SubCodeKind]) -> tuple[list[_Candidate], int]:
    """Build the tree of candidate sub-trees (nodes of a sub-code kind)."""
    roots: list[_Candidate] = []
    total = 0
    stack: list[tuple[Any, _Candidate | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        kind = kinds.get(node.type)
        if kind is not None:
            candidate = _Candidate(node, kind, parent)
            (parent.children if parent is not None else roots).append(candidate)
            parent = candidate
            total += 1
        stack.extend((child, parent) for child in reversed(node.children))
    return roots, total


def _walk(candidates: list[_Candidate]) -> Iterator[_Candidate]:
    for candidate in candidates:
        yield candidate
        yield from _walk(candidate.children)


def _folds_by_rule(candidate: _Candidate) -> bool:
    parent = candidate.parent
    if parent is None:
        return False
    if parent.kind in (SubCodeKind.ASSIGN, SubCodeKind.CALL):
        return True
    # a call in the header of a loop/branch/definition is part of that header
    return candidate.kind is SubCodeKind.CALL and candidate.node.start_point[0] == parent.node.start_point[0]


def _fold_into_parent(candidate: _Candidate) -> int:
    """Remove ``candidate`` (and its descendants) from the tree; return how many went."""
    gone = 1 + sum(1 for _ in _walk(candidate.children))
    parent = candidate.parent
    assert parent is not None
    parent.children.remove(candidate)
    parent.folded += gone
    return gone


def _fold_by_rules(roots: list[_Candidate]) -> int:
    folded = 0
    for candidate in list(_walk(roots)):
        if candidate.parent is not None and candidate in candidate.parent.children and _folds_by_rule(candidate):
            folded += _fold_into_parent(candidate)
    return folded


def _apply_cap(roots: list[_Candidate], count: int, max_subcodes: int) -> tuple[int, int]:
    folded = dropped = 0
    while count > max_subcodes:
        leaves = [c for c in _walk(roots) if not c.children]
        nested = [c for c in leaves if c.parent is not None]
        pool = nested or leaves
        victim = min(
            pool, key=lambda c: (FOLD_PRIORITY[c.kind], c.node.end_byte - c.node.start_byte, -c.node.start_byte)
        )
        if victim.parent is not None:
            folded += _fold_into_parent(victim)
        else:
            roots.remove(victim)
            dropped += 1
        count -= 1
    return folded, dropped


def _number(roots: list[_Candidate], data: bytes, plugin: LanguagePlugin, names: ProgramNames) -> list[SubCode]:
    """Turn the kept candidates into :class:`SubCode` objects in post-order."""
    subcodes: list[SubCode] = []

    def visit(candidate: _Candidate) -> int:
        child_indices = [visit(child) for child in candidate.children]
        node = candidate.node
        defines, uses = subcode_names(node, plugin, names)
        subcode = SubCode(
            index=len(subcodes),
            kind=candidate.kind,
            node_type=node.type,
            text=data[node.start_byte : node.end_byte].decode("utf-8", errors="replace"),
            start_line=node.start_point[0] + 1,
            end_line=node.end_point[0] + 1,
            start_byte=node.start_byte,
            end_byte=node.end_byte,
            defines=defines,
            uses=uses,
            children=child_indices,
            folded=candidate.folded,
        )
        subcodes.append(subcode)
        for child_index in child_indices:
            subcodes[child_index].parent = subcode.index
        return subcode.index

    for root in roots:
        visit(root)
    return subcodes
