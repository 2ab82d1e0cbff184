"""The names a DSA-CQE sub-code defines and reads (issue 12, item 5), real tree-sitter-python.

Each case is one kind of name the Semantic Storage must be asked about; the expected lists
were written by hand from Python's own semantics (``ast`` contexts) and are in source order.
The corpus check against ``ast``/``symtable`` is ``test_decomposition_names_corpus.py``.
"""

from __future__ import annotations

import pytest

from workbench.languages import get_language
from workbench.languages.spec import SubCodeKind
from workbench.score.decompose import decompose


@pytest.fixture(scope="module")
def python():
    return get_language("python")


def _only(decomposition, kind):
    found = [s for s in decomposition.subcodes if s.kind is kind]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize(
    ("code", "uses"),
    [
        ('print(f"{total}")\n', ["print", "total"]),
        # a nested format spec reads its name too
        ('print(f"{x:>{width}}")\n', ["print", "x", "width"]),
        ('print(f"{a!r:{w}.{p}f} and {d[k]}")\n', ["print", "a", "w", "p", "d", "k"]),
        # an f-string inside an interpolation, and in a concatenation
        ("print(f\"{f'{inner}'}\" 'plain' f'{last}')\n", ["print", "inner", "last"]),
        # a plain string and a docstring-like literal hold no names
        ('print("{total}")\n', ["print"]),
    ],
)
def test_names_in_f_string_interpolations_are_read(python, code, uses):
    call = _only(decompose(code, python), SubCodeKind.CALL)
    assert call.defines == [] and call.uses == uses


def test_f_string_names_reach_an_enclosing_function(python):
    code = 'def show(total, width):\n    label = f"{total:>{width}}"\n    return label\n'
    decomposition = decompose(code, python)
    assign = _only(decomposition, SubCodeKind.ASSIGN)
    assert assign.defines == ["label"] and assign.uses == ["total", "width"]
    function = _only(decomposition, SubCodeKind.FUNCTION_DEF)
    assert function.uses == ["total", "width", "label"]


@pytest.mark.parametrize(
    ("code", "defines", "uses"),
    [
        ("type Pair = tuple[int, int]\n", ["Pair"], ["tuple", "int"]),
        # a generic alias binds its type parameter; the parameter is read on the right
        ("type Tree[T] = list[Tree[T] | T]\n", ["Tree", "T"], ["list", "Tree", "T"]),
    ],
)
def test_pep695_type_alias_is_an_assign_subcode(python, code, defines, uses):
    decomposition = decompose(code, python)
    alias = _only(decomposition, SubCodeKind.ASSIGN)
    assert alias.node_type == "type_alias_statement"
    assert (alias.defines, alias.uses) == (defines, uses)


def test_match_captures_are_defines_and_patterns_reads(python):
    code = (
        "match command:\n"
        "    case [first, *rest]:\n"
        "        pass\n"
        '    case {"k": value, **others}:\n'
        "        pass\n"
        "    case Point(x=px, y=0) as point:\n"
        "        pass\n"
        "    case Color.RED | None:\n"
        "        pass\n"
        "    case other if other > limit:\n"
        "        pass\n"
        "    case _:\n"
        "        pass\n"
    )
    switch = _only(decompose(code, python), SubCodeKind.SWITCH)
    assert switch.defines == ["first", "rest", "value", "others", "px", "point", "other"]
    # the class and the value pattern's base are read; keyword `x`/`y` and member `RED` are no names
    assert switch.uses == ["command", "Point", "Color", "other", "limit"]


@pytest.mark.parametrize(
    ("code", "kind", "defines", "uses"),
    [
        ("if (n := len(items)) > 10:\n    pass\n", SubCodeKind.IF, ["n"], ["len", "items"]),
        ("while (chunk := read()):\n    use(chunk)\n", SubCodeKind.WHILE, ["chunk"], ["read", "use", "chunk"]),
        ("total = [y for x in xs if (y := f(x))]\n", SubCodeKind.ASSIGN, ["total", "x", "y"], ["y", "xs", "f", "x"]),
    ],
)
def test_walrus_targets_are_defines(python, code, kind, defines, uses):
    subcode = [s for s in decompose(code, python).subcodes if s.kind is kind][-1]
    assert (subcode.defines, subcode.uses) == (defines, uses)


def test_attribute_target_defines_the_attribute_not_the_object(python):
    code = (
        "class Box:\n"
        "    def __init__(self, item):\n"
        "        self.item = item\n"
        "        self.count += 1\n"
        "        self.items[0] = item\n"
        "        make().x = 1\n"
        "    def get(self):\n"
        "        return self.item.strip()\n"
    )
    decomposition = decompose(code, python)
    assigns = [s for s in decomposition.subcodes if s.kind is SubCodeKind.ASSIGN]
    assert [(s.text, s.defines, s.uses) for s in assigns] == [
        ("self.item = item", ["self.item"], ["self", "item"]),
        # an augmented assignment reads its target before it rebinds it
        ("self.count += 1", ["self.count"], ["self.count", "self"]),
        # a subscript target binds nothing: the container and the index are read
        ("self.items[0] = item", [], ["self", "item"]),
        # no dotted name for a call's attribute; the call is read
        ("make().x = 1", [], ["make"]),
    ]
    get = [s for s in decomposition.subcodes if s.kind is SubCodeKind.FUNCTION_DEF and "get" in s.defines][0]
    # a read of a member some target defines is read as that path, so the storage finds it
    assert get.defines == ["get", "self"] and get.uses == ["self.item", "self"]
    init = [s for s in decomposition.subcodes if s.kind is SubCodeKind.FUNCTION_DEF and "__init__" in s.defines][0]
    assert init.defines == ["__init__", "self", "item", "self.item", "self.count"]


def test_other_bindings_and_non_names(python):
    code = (
        "def f[T](x: T = default, *args, key=None, **kw) -> T:\n"
        "    import os.path as osp, sys\n"
        "    from collections import abc as c, deque\n"
        "    with open(x) as fh, lock:\n"
        "        pass\n"
        "    try:\n"
        "        pass\n"
        "    except (KeyError, OSError) as error:\n"
        "        del args[0], kw\n"
        "    g = lambda q, r=1: q + r\n"
        "    return sorted(args, key=len)\n"
    )
    function = _only(decompose(code, python), SubCodeKind.FUNCTION_DEF)
    assert function.defines == ["f", "T", "x", "args", "key", "kw", "osp", "sys", "c", "deque", "fh", "error", "g", "q", "r"]
    # `os.path`, `collections`, `abc` (module paths) and `key=` (a keyword name) are no free names
    assert function.uses == ["T", "default", "open", "x", "lock", "KeyError", "OSError", "args", "q", "r", "sorted", "len"]


@pytest.mark.parametrize(
    ("code", "kind", "defines", "uses"),
    [
        # an augmented assignment reads and rebinds its target (``ast`` calls it Store only)
        ("count += 1\n", SubCodeKind.ASSIGN, ["count"], ["count"]),
        ("total -= step * 2\n", SubCodeKind.ASSIGN, ["total"], ["total", "step"]),
        # a subscript target rebinds nothing: the container and the index are read
        ("xs[i] += 1\n", SubCodeKind.ASSIGN, [], ["xs", "i"]),
        ("while n > 0:\n    n //= 10\n    digits += 1\n", SubCodeKind.WHILE, ["n", "digits"], ["n", "digits"]),
        ("for x in xs:\n    total += x\n", SubCodeKind.FOR, ["x", "total"], ["xs", "total", "x"]),
        # for targets, nested and starred
        ("for i, (j, *k) in enumerate(xs):\n    pass\n", SubCodeKind.FOR, ["i", "j", "k"], ["enumerate", "xs"]),
        # comprehension variables are bound, their iterables and conditions read
        ("d = {k: v for k, v in pairs if v}\n", SubCodeKind.ASSIGN, ["d", "k", "v"], ["k", "v", "pairs"]),
    ],
)
def test_augmented_assignments_and_loop_targets(python, code, kind, defines, uses):
    subcode = [s for s in decompose(code, python).subcodes if s.kind is kind][0]
    assert (subcode.defines, subcode.uses) == (defines, uses)


def test_global_and_nonlocal_declare_no_read(python):
    code = (
        "def bump():\n"
        "    global count, seen\n"
        "    count += 1\n"
        "    seen = True\n"
        "    def inner():\n"
        "        nonlocal step\n"
        "        step = 2\n"
    )
    functions = [s for s in decompose(code, python).subcodes if s.kind is SubCodeKind.FUNCTION_DEF]
    assert [(s.defines, s.uses) for s in functions] == [
        (["inner", "step"], []),
        # ``global seen`` reads nothing: the function only writes ``seen``; ``count += 1`` reads ``count``
        (["bump", "count", "seen", "inner", "step"], ["count"]),
    ]
