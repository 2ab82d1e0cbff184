"""The decomposition's names against Python's own ``ast``/``symtable`` (issue 12, item 5).

A slice here (the 164 bundled HumanEval solutions and the first 300 ICE-Score samples, plus
a program with every binding construct the corpus lacks: match, walrus, attribute targets,
f-string format specs, imports, ``except ... as``, lambdas, comprehensions); the whole
corpus is ``benchmarks/decomposition_names.py`` (3,384 programs, 0 misses).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from workbench.languages import get_language
from workbench.score.decompose import decompose

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "decomposition_names.py"

EVERY_CONSTRUCT = '''\
import os.path as osp, sys
from collections import abc as c, deque


class Box(Base, metaclass=Meta):
    size: int = 3

    def __init__(self, item, *rest, key=None, **options):
        self.item = item
        self.count += len(rest)
        self.items[key] = options
        super().__init__()

    def show(self, width=8):
        label = f"{self.item!r:>{width}} {len(self.items)}"
        print(f"{label}", sep="")
        return self.item


def handle(command, limit):
    global seen
    if (n := len(command)) > limit:
        return n
    while (chunk := command.pop()):
        seen = chunk
    match command:
        case [first, *others]:
            return first, others
        case {"k": value, **extra}:
            return value, extra
        case Box(item=inner) as box:
            return inner, box
        case os.sep:
            return None
        case other if other > limit:
            return other
    try:
        with open(osp.join("a", "b")) as handle_file, lock:
            data = [line for line in handle_file if (kept := line.strip())]
    except (OSError, ValueError) as error:
        del error
    squares = {k: v * v for k, v in enumerate(data)}
    key = lambda item, default=0: item or default
    return sorted(squares, key=key), kept, deque(), c, sys
'''


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("decomposition_names", BENCH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve the module's annotations through it
    spec.loader.exec_module(module)
    return module


def test_every_binding_construct_matches_ast_and_symtable(bench):
    check = bench.check_program(EVERY_CONSTRUCT, "constructs", decompose(EVERY_CONSTRUCT, get_language("python")))
    assert check.unparsable == 0 and check.subcodes >= 10 and check.occurrences > 150
    assert check.symtable_scopes == 4  # Box, __init__, show, handle
    assert (check.missing_binds, check.missing_reads, check.symtable_missing) == (0, 0, 0), check.misses


def test_the_check_finds_a_missing_name(bench):
    decomposition = decompose(EVERY_CONSTRUCT, get_language("python"))
    match_subcode = next(s for s in decomposition.subcodes if s.kind.value == "Switch")
    match_subcode.defines.remove("first")
    match_subcode.uses.remove("command")
    check = bench.check_program(EVERY_CONSTRUCT, "constructs", decomposition)
    # `first` is bound twice in the match (the capture; the read in `return first, others` stays),
    # `command` read once in the subject
    assert (check.missing_binds, check.missing_reads) == (1, 1)
    assert check.missing_by_construct == {"bind:MatchAs": 1, "read:Name": 1}


def test_corpus_slice_matches_ast_and_symtable(bench, bundled_data):
    programs = bench.corpus(bundled_data / "ice-score" / "humaneval_python_flat.jsonl", limit=164 + 300)
    assert len(programs) == 464
    check = bench.check_corpus(programs)
    assert check.programs == 464 and check.subcodes > 2000 and check.occurrences > 15000
    assert check.faults == 0, check.misses
    assert check.extra == 0
