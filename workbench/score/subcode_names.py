"""Which names a DSA-CQE sub-code defines and which it reads.

The Semantic Storage of DSA-CQE (Xu et al., ISWC 2024 posters, Sec. 2) is looked up by
the names a sub-code touches, so a name missing here is a name the storage is never asked
about. The rules, from the language plugin's data (this module names no language):

* every identifier in the sub-tree is either *defined* (it is in a binding target) or
  *read*; bindings nested anywhere in the sub-code count (a walrus in an ``if`` condition,
  a loop variable inside a function, a ``match`` capture);
* binding targets are the :attr:`LanguagePlugin.definition_fields` of any node in the
  sub-tree, plus the ``@definition`` captures of :attr:`LanguagePlugin.name_query`;
* an ``@update`` capture is a target that is read before it is rebound (``i++``,
  ``total += x``): its names are both defined and read;
* inside a target, a member access defines the dotted member (``self.item = item``
  defines ``self.item`` and reads ``self``), and identifiers under a subscript, index,
  size, value or default, and a called function, are read (``a[i] = x`` reads ``a`` and
  ``i``; C's ``int a[n];`` defines ``a`` and reads ``n``; C++'s ``v.at(i) = x`` defines
  nothing): the fields of :attr:`LanguagePlugin.read_in_target_fields`;
* a member read whose dotted path some target of the program defines is read as that
  path too (``return self.item`` reads ``self.item`` and ``self``), so the storage record
  written by the definition is found by the exact lookup;
* code embedded in a literal (:attr:`LanguagePlugin.embedded_code_node_types`, an
  f-string's ``{total}`` and nested format specs ``{x:>{width}}``) is read like any code;
* identifiers under :attr:`LanguagePlugin.non_name_fields` and ``@not_a_name`` captures
  (keyword-argument names, import module paths) are not names.

Checked against Python's own ``ast``/``symtable`` on every bundled HumanEval solution and
the 3,220 ICE-Score samples: ``benchmarks/decomposition_names.py``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.languages.spec import LanguagePlugin

#: fields that hold the member name of a member access (``obj.member``); a convention
#: shared by the tree-sitter grammars (python ``attribute``, java ``field``, js ``property``)
MEMBER_FIELDS = frozenset({"attribute", "field", "property"})


@dataclass
class ProgramNames:
    """The name roles of one parsed program, computed once for all its sub-codes.

    Attributes:
        targets: ids of the nodes that are binding targets.
        updates: ids of the targets that are also read (``@update`` captures: ``i++``).
        not_names: ids of identifier nodes that name no variable.
        defined_paths: dotted member paths (``self.item``) some target defines.
    """

    targets: set[int] = field(default_factory=set)
    updates: set[int] = field(default_factory=set)
    not_names: set[int] = field(default_factory=set)
    defined_paths: set[str] = field(default_factory=set)


def program_names(root: Any, plugin: LanguagePlugin) -> ProgramNames:
    """Find the binding targets and non-names of a whole program tree.

    Args:
        root: the root ``tree_sitter.Node`` of the program.
        plugin: the language plugin (definition fields, name query).

    Returns:
        a :class:`ProgramNames`.

    Raises:
        tree_sitter.QueryError: the plugin's ``name_query`` does not fit its grammar.
    """
    names = ProgramNames()
    stack = [root]
    while stack:
        node = stack.pop()
        for field_name in plugin.definition_fields.get(node.type, ()):
            names.targets.update(target.id for target in node.children_by_field_name(field_name))
        stack.extend(node.children)
    query = plugin.compiled_name_query()
    if query is not None:
        import tree_sitter

        captures = tree_sitter.QueryCursor(query).captures(root)
        names.targets.update(node.id for node in captures.get("definition", ()))
        names.updates.update(node.id for node in captures.get("update", ()))
        names.targets |= names.updates
        for node in captures.get("not_a_name", ()):
            names.not_names.update(n.id for n in _subtree(node) if n.type in plugin.identifier_node_types)
    names.defined_paths = {
        name for role, name, member in _walk_names(root, plugin, names, False, member_reads=False)
        if role == "define" and member
    }
    return names


def subcode_names(node: Any, plugin: LanguagePlugin, program: ProgramNames) -> tuple[list[str], list[str]]:
    """Return ``(defines, uses)`` of one sub-code: names in source order, no repeats.

    Args:
        node: the sub-code's ``tree_sitter.Node``.
        plugin: the language plugin.
        program: :func:`program_names` of the program the node belongs to.
    """
    defines: list[str] = []
    uses: list[str] = []
    for role, name, _ in _walk_names(node, plugin, program, node.id in program.targets, node.id in program.updates):
        (defines if role == "define" else uses).append(name)
    return list(dict.fromkeys(defines)), list(dict.fromkeys(uses))


def _subtree(node: Any) -> Iterator[Any]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def _text(node: Any) -> str:
    return node.text.decode("utf-8", errors="replace")


def _member_parts(node: Any) -> tuple[Any, Any] | None:
    """``(object, member)`` children of a member access node, or ``None`` for other nodes."""
    member = obj = None
    for index, child in enumerate(node.children):
        if node.field_name_for_child(index) in MEMBER_FIELDS:
            member = child
        elif obj is None and child.is_named:
            obj = child
    if member is None or obj is None:
        return None
    return obj, member


def _member_path(node: Any, plugin: LanguagePlugin) -> str | None:
    """The dotted text of a member access whose object is a name or a chain of members
    (``self.a.b``); ``None`` when the object is a call, a subscript or another expression."""
    parts = _member_parts(node)
    if parts is None:
        if node.type in plugin.identifier_node_types or (node.is_named and node.child_count == 0):
            return _text(node)  # a name, or a keyword-like receiver (``this``)
        return None
    obj, _ = parts
    if _member_path(obj, plugin) is None:
        return None
    return "".join(_text(node).split())


def _embedded_code(literal: Any, plugin: LanguagePlugin) -> Iterator[Any]:
    """The outermost embedded-code nodes inside a literal, in source order."""
    stack = list(reversed(literal.children))
    while stack:
        current = stack.pop()
        if current.type in plugin.embedded_code_node_types:
            yield current
        else:
            stack.extend(reversed(current.children))


def _walk_names(
    node: Any, plugin: LanguagePlugin, program: ProgramNames, in_target: bool, in_update: bool = False,
    member_reads: bool = True,
) -> Iterator[tuple[str, str, bool]]:
    """Yield ``(role, name, is_member_path)`` in source order; role is ``define`` or ``use``.

    A name inside an update target (``i`` of ``i++``) yields ``use`` and then ``define``.
    """
    # explicit stack of (node, in_target, in_update); children pushed in reverse for source order
    stack: list[tuple[Any, bool, bool]] = [(node, in_target, in_target and in_update)]
    while stack:
        current, target, update = stack.pop()
        kind = current.type
        if kind in plugin.skip_node_types:
            continue
        if kind in plugin.identifier_node_types:
            if current.id not in program.not_names:
                if update:
                    yield "use", _text(current), False
                yield ("define" if target else "use"), _text(current), False
            continue
        if kind in plugin.literal_node_types:
            # only the code embedded in the literal (f-string interpolations) holds names
            stack.extend((n, False, False) for n in reversed(list(_embedded_code(current, plugin))))
            continue
        parts = _member_parts(current)
        if parts is not None:
            obj, _ = parts
            path = _member_path(current, plugin)
            if path is not None and update:
                yield "use", path, True  # ``self.count += 1`` reads ``self.count``
            if path is not None and (target or (member_reads and path in program.defined_paths)):
                yield ("define" if target else "use"), path, True
            # the member name is no free name; the object is read (``self`` in ``self.item = x``)
            stack.append((obj, False, False))
            continue
        children = []
        for index, child in enumerate(current.children):
            field_name = current.field_name_for_child(index)
            if field_name in plugin.non_name_fields:
                continue
            kept = field_name not in plugin.read_in_target_fields
            child_update = (update and kept) or child.id in program.updates
            children.append((child, (target and kept) or child.id in program.targets, child_update))
        stack.extend(reversed(children))
