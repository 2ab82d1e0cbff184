"""DSA-CQE decomposition on real HumanEval code (bundled canonical solutions), real tree-sitter."""

from __future__ import annotations

import pytest

from workbench.data.loading import load_humaneval
from workbench.languages import get_language
from workbench.languages.spec import SubCodeKind
from workbench.score.decompose import decompose


@pytest.fixture(scope="module")
def python():
    return get_language("python")


@pytest.fixture(scope="module")
def humaneval():
    return {row["task_id"]: row for row in load_humaneval()}


def _program(humaneval, task_id: str) -> str:
    row = humaneval[task_id]
    return row["prompt"] + row["canonical_solution"]


@pytest.mark.parametrize(
    ("task_id", "expected"),
    [
        # two nested loops, an if in each, one assignment; range/enumerate calls fold into headers
        ("HumanEval/0", {"FunctionDef": 1, "For": 2, "If": 2, "Assign": 1}),
        # a helper and the main function, a while loop, an if, two assignments
        ("HumanEval/10", {"FunctionDef": 2, "While": 1, "If": 1, "Assign": 2}),
        # `return number % 1.0`: nothing but the function itself
        ("HumanEval/2", {"FunctionDef": 1}),
    ],
)
def test_subcodes_per_kind_on_humaneval(python, humaneval, task_id, expected):
    decomposition = decompose(_program(humaneval, task_id), python)
    assert decomposition.counts() == expected
    assert not decomposition.syntax_error


def test_post_order_names_and_positions(python, humaneval):
    decomposition = decompose(_program(humaneval, "HumanEval/0"), python)
    kinds = [s.kind for s in decomposition.subcodes]
    # inner before outer: the assignment first, the function last
    assert kinds[0] is SubCodeKind.ASSIGN and kinds[-1] is SubCodeKind.FUNCTION_DEF
    assign = decomposition.subcodes[0]
    assert assign.text == "distance = abs(elem - elem2)"
    assert assign.defines == ["distance"]
    assert assign.uses == ["abs", "elem", "elem2"]
    assert assign.start_line == assign.end_line == 15
    outer_for = decomposition.subcodes[4]
    # a sub-code defines every name bound in its text: its own targets and nested ones
    assert outer_for.kind is SubCodeKind.FOR
    assert outer_for.defines == ["idx", "elem", "idx2", "elem2", "distance"]
    function = decomposition.subcodes[-1]
    # parameters are defined; their annotations are read (Python evaluates them at def time)
    assert function.defines == ["has_close_elements", "numbers", "threshold", "idx", "elem", "idx2", "elem2", "distance"]
    assert function.uses[:3] == ["List", "float", "bool"]
    assert function.parent is None and outer_for.parent == function.index
    assert function.children == [outer_for.index]
    # the header call enumerate(numbers) was folded into the for loop, not dropped
    assert "enumerate(numbers)" in outer_for.text and outer_for.folded >= 1


def test_statement_level_calls_are_subcodes(python):
    code = "def f(xs):\n    out = []\n    for x in xs:\n        out.append(g(x))\n    print(out)\n    return out\n"
    decomposition = decompose(code, python)
    calls = [s for s in decomposition.subcodes if s.kind is SubCodeKind.CALL]
    # out.append(...) in the loop body and print(out); g(x) folds into its enclosing call
    assert [c.text for c in calls] == ["out.append(g(x))", "print(out)"]
    assert calls[0].uses == ["out", "g", "x"]  # the member name `append` is not a free name


def test_switch_class_and_while_kinds(python):
    code = (
        "class Stack:\n"
        "    def push(self, x):\n"
        "        self.items = x\n"
        "def kind(v):\n"
        "    match v:\n"
        "        case 0:\n"
        "            return 'zero'\n"
        "    while v > 0:\n"
        "        v -= 1\n"
    )
    counts = decompose(code, python).counts()
    assert counts == {"ClassDef": 1, "FunctionDef": 2, "Assign": 2, "Switch": 1, "While": 1}


def test_cap_folds_innermost_cheapest_first(python, humaneval):
    program = _program(humaneval, "HumanEval/0")
    full = decompose(program, python)
    capped = decompose(program, python, max_subcodes=3)
    assert len(capped.subcodes) == 3
    assert capped.folded == full.folded + (len(full.subcodes) - 3)
    # outer structure survives: the function and the outer loop
    kinds = [s.kind for s in capped.subcodes]
    assert kinds[-1] is SubCodeKind.FUNCTION_DEF and SubCodeKind.FOR in kinds
    assert capped.dropped == 0


def test_cap_drops_top_level_statements_only_when_nothing_encloses_them(python):
    code = "".join(f"x{i} = {i}\n" for i in range(5))
    decomposition = decompose(code, python, max_subcodes=2)
    assert len(decomposition.subcodes) == 2 and decomposition.dropped == 3


def test_syntax_errors_are_flagged_not_raised(python, bundled_data):
    import json

    rows = [json.loads(line) for line in (bundled_data / "ice-score" / "humaneval_python_flat.jsonl").open()]
    import ast

    broken = None
    for row in rows:
        program = row["prompt"] + row["completion_multipl_e"]
        try:
            ast.parse(program)
        except SyntaxError:
            broken = program
            break
    assert broken is not None
    decomposition = decompose(broken, python)
    assert decomposition.syntax_error


def test_bad_arguments(python):
    with pytest.raises(ValueError, match="max_subcodes"):
        decompose("x = 1", python, max_subcodes=0)
    assert decompose("", python).subcodes == []
