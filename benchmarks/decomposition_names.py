"""Check the DSA-CQE decomposition's names against Python's own ``ast`` and ``symtable``.

For every program that ``ast`` parses, and every sub-code of its decomposition
(:func:`workbench.score.decompose.decompose`, default cap):

* **ast** (positional): every name occurrence inside the sub-code's byte span must be in
  its ``defines`` when Python binds it there (``Name`` in a Store/Del context, a
  parameter, a ``def``/``class`` name, an import alias, an ``except ... as`` name, a
  ``match`` capture, an attribute target ``self.item`` as the dotted name) and in its
  ``uses`` when Python reads it (``Name`` in a Load context);
* **symtable** (per scope): for every ``def``/``class`` sub-code, every symbol its own
  symbol table marks as a parameter, assigned or imported must be in ``defines``, every
  referenced symbol in ``uses``.

A miss is a name the Semantic Storage would never be asked about. Names the sub-code lists
but ``ast`` has no occurrence of (``global x``) are counted as *extra*, not as faults.

Corpus: the 164 bundled HumanEval problems (prompt + canonical solution) and the 3,220
ICE-Score samples (prompt + ``completion_multipl_e``, as the score job builds them).

Usage::

    python benchmarks/decomposition_names.py [--limit N] [--ice-score PATH]

Exit status 1 when any sub-code misses a name.
"""

from __future__ import annotations

import argparse
import ast
import json
import symtable
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from workbench.data.loading import load_humaneval
from workbench.languages import get_language
from workbench.score.decompose import Decomposition, SubCode, decompose

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ICE_SCORE = REPO.parent / "shared" / "data" / "ice-score" / "humaneval_python_flat.jsonl"


@dataclass(frozen=True)
class Occurrence:
    """One name occurrence as ``ast`` sees it: ``role`` is ``bind`` or ``read``; ``offset``
    is the UTF-8 byte offset of the node that carries it."""

    name: str
    role: str
    offset: int
    construct: str


@dataclass
class NameCheck:
    """Counts over a corpus (or one program).

    Attributes:
        programs: programs decomposed; unparsable: skipped because ``ast`` rejects them.
        subcodes: sub-codes checked; occurrences: (sub-code, name occurrence) pairs checked.
        missing_binds / missing_reads: pairs whose name is absent from defines / uses.
        symtable_scopes: def/class sub-codes matched to a symbol table; symtable_missing:
            symbols of those tables absent from the sub-code's names.
        extra: names a sub-code lists that no ast occurrence in its span carries.
        misses: up to 20 examples ``(program id, sub-code kind, line, role, name, construct)``.
    """

    programs: int = 0
    unparsable: int = 0
    subcodes: int = 0
    occurrences: int = 0
    missing_binds: int = 0
    missing_reads: int = 0
    symtable_scopes: int = 0
    symtable_missing: int = 0
    extra: int = 0
    missing_by_construct: Counter = field(default_factory=Counter)
    misses: list[tuple] = field(default_factory=list)

    def add(self, other: NameCheck) -> None:
        for name in ("programs", "unparsable", "subcodes", "occurrences", "missing_binds", "missing_reads",
                     "symtable_scopes", "symtable_missing", "extra"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.missing_by_construct.update(other.missing_by_construct)
        self.misses.extend(other.misses[: max(0, 20 - len(self.misses))])

    @property
    def faults(self) -> int:
        return self.missing_binds + self.missing_reads + self.symtable_missing

    def as_dict(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k not in ("missing_by_construct", "misses")}
        data["missing_by_construct"] = dict(self.missing_by_construct)
        data["misses"] = [list(m) for m in self.misses]
        return data


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def ast_occurrences(program: str) -> list[Occurrence]:
    """Every name ``ast`` binds or reads in ``program``, with its byte offset.

    Raises:
        SyntaxError: ``ast`` cannot parse the program.
    """
    tree = ast.parse(program)
    data = program.encode("utf-8", errors="surrogateescape")
    line_starts = [0]
    for index, byte in enumerate(data):
        if byte == 0x0A:
            line_starts.append(index + 1)

    def offset(node: ast.AST) -> int:
        return line_starts[node.lineno - 1] + node.col_offset  # col_offset counts UTF-8 bytes

    found: list[Occurrence] = []
    for node in ast.walk(tree):
        construct = type(node).__name__
        if isinstance(node, ast.Name):
            role = "read" if isinstance(node.ctx, ast.Load) else "bind"
            found.append(Occurrence(node.id, role, offset(node), construct))
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
            path = _dotted(node)
            if path is not None:
                found.append(Occurrence(path, "bind", offset(node), "Attribute target"))
        elif isinstance(node, ast.arg):
            found.append(Occurrence(node.arg, "bind", offset(node), "arg"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.append(Occurrence(node.name, "bind", offset(node), construct))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name != "*":
                    bound = alias.asname or alias.name.split(".")[0]
                    found.append(Occurrence(bound, "bind", offset(alias), construct))
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.append(Occurrence(node.name, "bind", offset(node), construct))
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            found.append(Occurrence(node.name, "bind", offset(node), construct))
        elif isinstance(node, ast.MatchMapping) and node.rest:
            found.append(Occurrence(node.rest, "bind", offset(node), construct))
    return found


def _tables(table: symtable.SymbolTable) -> list[symtable.SymbolTable]:
    out = [table]
    for child in table.get_children():
        out.extend(_tables(child))
    return out


def check_program(program: str, program_id: str, decomposition: Decomposition) -> NameCheck:
    """Check one decomposition against ``ast`` and ``symtable`` (see the module docstring)."""
    check = NameCheck(programs=1)
    try:
        occurrences = ast_occurrences(program)
        tables = _tables(symtable.symtable(program, program_id, "exec"))
    except SyntaxError:
        check.unparsable = 1
        return check
    for subcode in decomposition.subcodes:
        check.subcodes += 1
        inside = [o for o in occurrences if subcode.start_byte <= o.offset < subcode.end_byte]
        listed = {"bind": set(subcode.defines), "read": set(subcode.uses)}
        for occurrence in inside:
            check.occurrences += 1
            if occurrence.name not in listed[occurrence.role]:
                if occurrence.role == "bind":
                    check.missing_binds += 1
                else:
                    check.missing_reads += 1
                check.missing_by_construct[f"{occurrence.role}:{occurrence.construct}"] += 1
                if len(check.misses) < 20:
                    check.misses.append((program_id, subcode.kind.value, subcode.start_line, occurrence.role,
                                         occurrence.name, occurrence.construct))
        seen = {o.name for o in inside}
        check.extra += len(set(subcode.names) - seen)
        _check_scope(subcode, tables, program_id, check)
    return check


def _check_scope(subcode: SubCode, tables: list[symtable.SymbolTable], program_id: str, check: NameCheck) -> None:
    if subcode.kind.value not in ("FunctionDef", "ClassDef") or not subcode.defines:
        return
    wanted_type = "function" if subcode.kind.value == "FunctionDef" else "class"
    matches = [t for t in tables if t.get_type() == wanted_type and t.get_name() == subcode.defines[0]
               and t.get_lineno() == subcode.start_line]
    if len(matches) != 1:
        return
    check.symtable_scopes += 1
    for symbol in matches[0].get_symbols():
        name = symbol.get_name()
        if name == "__class__" and "__class__" not in subcode.text:
            continue  # the compiler's implicit cell for a bare super(), not a name in the text
        if (symbol.is_parameter() or symbol.is_assigned() or symbol.is_imported()) and name not in subcode.defines:
            check.symtable_missing += 1
            check.missing_by_construct["symtable:bound"] += 1
            if len(check.misses) < 20:
                check.misses.append((program_id, subcode.kind.value, subcode.start_line, "symtable-bind", name, ""))
        if symbol.is_referenced() and name not in subcode.uses:
            check.symtable_missing += 1
            check.missing_by_construct["symtable:referenced"] += 1
            if len(check.misses) < 20:
                check.misses.append((program_id, subcode.kind.value, subcode.start_line, "symtable-read", name, ""))


def corpus(ice_score: Path | None, limit: int | None = None) -> list[tuple[str, str]]:
    """``(program id, program)`` pairs: the HumanEval canonical solutions, then ICE-Score samples."""
    programs = [(f"canonical {row['task_id']}", row["prompt"] + row["canonical_solution"]) for row in load_humaneval()]
    if ice_score is not None:
        with open(ice_score, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                programs.append((f"ice-score {row['task_id']} #{row['sample_id']}",
                                 row["prompt"] + row["completion_multipl_e"]))
    return programs[:limit] if limit is not None else programs


def check_corpus(programs: list[tuple[str, str]]) -> NameCheck:
    """Decompose and check every program; return the summed :class:`NameCheck`."""
    python = get_language("python")
    total = NameCheck()
    for program_id, program in programs:
        total.add(check_program(program, program_id, decompose(program, python)))
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ice-score", type=Path, default=DEFAULT_ICE_SCORE,
                        help="the ICE-Score flat jsonl (default: ../shared/data/ice-score/humaneval_python_flat.jsonl)")
    parser.add_argument("--limit", type=int, default=None, help="check only the first N programs")
    parser.add_argument("--json", type=Path, default=None, help="also write the counts here")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    programs = corpus(args.ice_score if args.ice_score.is_file() else None, args.limit)
    result = check_corpus(programs)
    seconds = time.perf_counter() - started
    print(f"programs: {result.programs} ({result.unparsable} rejected by ast, skipped)")
    print(f"sub-codes checked: {result.subcodes}; name occurrences checked: {result.occurrences}")
    print(f"missing from defines: {result.missing_binds}; missing from uses: {result.missing_reads}")
    print(f"symtable scopes checked: {result.symtable_scopes}; symbols missing: {result.symtable_missing}")
    print(f"extra names (listed, no ast occurrence in the span): {result.extra}")
    for construct, count in result.missing_by_construct.most_common():
        print(f"  missed {construct}: {count}")
    for miss in result.misses:
        print("  e.g.", miss)
    print(f"time: {seconds:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(result.as_dict(), indent=2) + "\n", encoding="utf-8")
    return 1 if result.faults else 0


if __name__ == "__main__":
    sys.exit(main())
