"""A test helper of the conformance kit: find one DSA-CQE sub-code of a program by its kind and
first characters, to check the names it defines and reads.

The conformance checks prove a plugin's ``subcode_node_types`` and ``definition_fields`` against
the grammar; whether each sub-code *defines* and *uses* the right names is the plugin author's to
say, case by case, as a programmer of the language reads the code. :func:`one_subcode` is the
lookup such a test needs::

    from workbench.languages import get_language
    from workbench.languages.conformance import one_subcode
    from workbench.languages.spec import SubCodeKind

    def test_a_loop_rebinds_its_counter():
        code = "def count_down(n):\n    while n > 0:\n        n -= 1\n    return n\n"
        loop = one_subcode(code, get_language("python"), SubCodeKind.WHILE, "while")
        assert (loop.defines, loop.uses) == (["n"], ["n"])
"""

from __future__ import annotations

from workbench.languages.spec import LanguagePlugin, SubCodeKind
from workbench.score.decompose import SubCode, decompose


def one_subcode(code: str, plugin: LanguagePlugin, kind: SubCodeKind, starts: str) -> SubCode:
    """The one sub-code of ``code`` of ``kind`` whose text begins with ``starts``.

    ``code`` is cut into sub-codes as ``workbench score -m dsa-cqe`` cuts it
    (:func:`workbench.score.decompose.decompose`, at its default cap).

    Args:
        code: a whole program in the plugin's language (wrap a statement in a function to test it).
        plugin: the language plugin under test; it must have a ``subcode_node_types`` map.
        kind: the sub-code kind to look for.
        starts: the first characters of the sub-code's text (``"while"``, ``"int apply"``), enough
            to tell it from every other sub-code of that kind.

    Returns:
        the :class:`~workbench.score.decompose.SubCode`; its ``defines`` and ``uses`` are the names
        it binds and reads, in source order.

    Raises:
        AssertionError: no sub-code, or more than one, is of ``kind`` and begins with ``starts``;
            the message lists every sub-code of ``code`` as (kind, text), so a test failure shows
            what the plugin made of the program.
        ValueError: the plugin has no sub-code map (from :func:`~workbench.score.decompose.decompose`).
    """
    subcodes = decompose(code, plugin).subcodes
    found = [s for s in subcodes if s.kind is kind and s.text.startswith(starts)]
    if len(found) != 1:
        raise AssertionError(
            f"expected one {kind.value} sub-code starting with {starts!r}, found {len(found)}; "
            f"the {plugin.name} plugin's sub-codes (kind, text): {[(s.kind.value, s.text) for s in subcodes]}"
        )
    return found[0]
