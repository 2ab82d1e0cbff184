"""The plugin checks of the conformance kit that need no toolchain: identity,
registration, grammar, node types, tokens, robustness, decomposition and definition
fields (one function ``check_<name>(plugin, ...) -> list[str]`` of problems each; see
:mod:`workbench.languages.conformance` for what each checks). The runner check lives in
:mod:`~workbench.languages.conformance.runner_check`.
"""

from __future__ import annotations

import collections
import importlib.metadata
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from workbench.formatting import count
from workbench.languages.grammar_fit import foreign_grammar_message, grammar_mismatches, is_set
from workbench.languages.spec import LanguagePlugin, SubCodeKind, TestRunner

#: inputs every plugin must survive (``robustness`` check), besides mangled samples
_HOSTILE_INPUTS: tuple[str | bytes, ...] = (
    "",
    " \n\t\n",
    "\x00\x01\x02",
    b"\xff\xfe\xfa\x80 not utf-8 \xc3\x28",
    "@@@ )( }{ ;; ``` \"unterminated",
    "(" * 3000 + ")" * 3000,
    "{" * 3000,
)


# -- helpers ---------------------------------------------------------------------------------


def _walk(root: Any, skip: frozenset[str] = frozenset()) -> list[Any]:
    """All nodes of a tree in pre-order (iterative), not entering node types in ``skip``."""
    nodes, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type in skip:
            continue
        nodes.append(node)
        stack.extend(reversed(node.children))
    return nodes


def subcode_kind_counts(plugin: LanguagePlugin, codes: Iterable[str]) -> collections.Counter[SubCodeKind]:
    """How many nodes of each DSA-CQE sub-code kind the plugin's map finds in ``codes``.

    Every node of each parse tree is counted once by :meth:`LanguagePlugin.kind_of` (nested
    sub-codes each count; the ``decompose`` cap and de-duplication play no part), so a plugin's own
    test can check its map against a corpus: ``counts[SubCodeKind.FOR] > 100`` on real programs.

    Args:
        plugin: the plugin under test; it must have a ``subcode_node_types`` map.
        codes: source texts in the plugin's language (parsed with error recovery, as they are).

    Returns:
        kind -> number of nodes of that kind over all ``codes`` (kinds not found are absent).
    """
    counts: collections.Counter[SubCodeKind] = collections.Counter()
    for code in codes:
        for node in _walk(plugin.parse(code).root_node):
            kind = plugin.kind_of(node.type)
            if kind is not None:
                counts[kind] += 1
    return counts


def _first_error(root: Any) -> str | None:
    for node in _walk(root):
        if node.type == "ERROR" or node.is_missing:
            row, column = node.start_point
            what = f"missing {node.type!r}" if node.is_missing else "syntax error"
            return f"{what} at line {row + 1}, column {column + 1}"
    return "syntax error" if root.has_error else None


def _preview(text: str | bytes, limit: int = 40) -> str:
    shown = repr(text[:limit])
    return shown + ("..." if len(text) > limit else "")


# -- the checks ------------------------------------------------------------------------------


def check_identity(plugin: LanguagePlugin) -> list[str]:
    """Check name, aliases, extensions, grammar distribution and capabilities."""
    problems = []
    name = plugin.name
    if not isinstance(name, str) or not name or name != name.lower() or any(ch.isspace() for ch in name):
        problems.append(f"name must be a non-empty lower-case word, got {name!r}")
    for attribute in ("aliases", "extensions"):
        value = getattr(plugin, attribute)
        if isinstance(value, str) or not isinstance(value, (tuple, list)):
            problems.append(f"{attribute} must be a tuple of strings, got {value!r}")
            continue
        if len(set(value)) != len(value):
            problems.append(f"{attribute} has duplicates: {value!r}")
        for item in value:
            if not isinstance(item, str) or not item or item != item.lower():
                problems.append(f"{attribute} entries must be non-empty lower-case strings, got {item!r}")
    for alias in plugin.aliases if isinstance(plugin.aliases, (tuple, list)) else ():
        if alias == name:
            problems.append(f"alias {alias!r} repeats the name")
        if isinstance(alias, str) and alias.startswith("."):
            problems.append(f"alias {alias!r} looks like a file extension; put it in extensions")
    extensions = plugin.extensions if isinstance(plugin.extensions, (tuple, list)) else ()
    if not extensions:
        problems.append("extensions is empty: folder loaders could never pick this language")
    for extension in extensions:
        if isinstance(extension, str) and (not extension.startswith(".") or len(extension) < 2):
            problems.append(f"extension {extension!r} must start with a dot, e.g. '.go'")
    if not plugin.grammar_distribution:
        problems.append("grammar_distribution is empty (the PyPI name of the tree-sitter grammar wheel)")
    else:
        try:
            importlib.metadata.version(plugin.grammar_distribution)
        except importlib.metadata.PackageNotFoundError:
            problems.append(f"grammar distribution {plugin.grammar_distribution!r} is not installed: pip install it, "
                            f"or set grammar_distribution to the PyPI name of the grammar wheel that "
                            f"language_capsule() imports")
    capabilities = plugin.capabilities()
    if "tokens" not in capabilities:
        problems.append("no identifier_node_types / literal_node_types: the plugin cannot give dedup tokens")
    if plugin.runner is not None and not isinstance(plugin.runner, TestRunner):
        problems.append(f"runner must be a TestRunner instance, got {type(plugin.runner).__name__}")
    return problems


def check_registration(plugin: LanguagePlugin) -> list[str]:
    """Check that the installed entry points yield this plugin and nothing else claims its names."""
    from workbench.languages.registry import installed_plugins, plugin_problems

    infos = installed_plugins()
    # left out at discovery: a clash on the name, a malformed plugin, a hook that failed
    problems = [str(problem) for problem in plugin_problems()
                if problem.source == f"language {plugin.name!r}" or type(plugin).__name__ in problem.message]
    mine = [info for info in infos if type(info.plugin) is type(plugin)]
    if not mine and not problems:
        problems.append(
            f"{type(plugin).__name__} is not provided by any installed plugin: check the "
            f"[project.entry-points.\"workbench.languages\"] table and reinstall the package"
        )
    keys = {plugin.name, *plugin.aliases, *plugin.extensions}
    for info in infos:
        if type(info.plugin) is type(plugin):
            continue
        other = info.plugin
        clash = keys & {other.name, *other.aliases, *other.extensions}
        if clash:
            problems.append(f"{sorted(clash)} also claimed by plugin {other.name!r} ({info.distribution})")
    return problems


#: the checks that need the plugin's own grammar: when it does not load, or is another language's,
#: each of them reports that one sentence (:func:`grammar_blocker`) instead of what follows from it
GRAMMAR_CHECKS: tuple[str, ...] = ("grammar", "node_types", "tokens", "robustness", "decomposition", "definition_fields")


def grammar_blocker(plugin: LanguagePlugin) -> str | None:
    """Why no check can judge ``plugin`` against its grammar, or ``None`` when they can.

    Two causes: the grammar does not load (``"load_language() raised ..."``), or
    ``language_capsule()`` returns another language's grammar
    (:func:`workbench.languages.grammar_fit.foreign_grammar_message`); either would otherwise come
    back as dozens of missing node types, samples that do not parse and sub-codes never found.

    Args:
        plugin: the plugin under test.

    Returns:
        one sentence, or ``None``.
    """
    try:
        plugin.load_language()
    except Exception as error:  # noqa: BLE001 - any failure to load is the finding
        return f"load_language() raised {type(error).__name__}: {error}"
    return foreign_grammar_message(plugin)


def check_grammar(plugin: LanguagePlugin, samples: Sequence[str]) -> list[str]:
    """Check that the grammar loads with a readable ABI and that every sample parses cleanly."""
    import tree_sitter

    try:
        language = plugin.load_language()
    except Exception as error:  # noqa: BLE001 - any failure to load is the finding
        return [f"load_language() raised {type(error).__name__}: {error}"]
    if not isinstance(language, tree_sitter.Language):
        return [f"load_language() must return a tree_sitter.Language, got {type(language).__name__}"]
    problems = []
    abi = language.abi_version
    if not tree_sitter.MIN_COMPATIBLE_LANGUAGE_VERSION <= abi <= tree_sitter.LANGUAGE_VERSION:
        problems.append(
            f"grammar ABI {abi} is outside what tree-sitter {tree_sitter.__name__} reads "
            f"({tree_sitter.MIN_COMPATIBLE_LANGUAGE_VERSION}..{tree_sitter.LANGUAGE_VERSION})"
        )
    if not samples:
        problems.append("no sample code given: pass samples that use the language's main constructs")
    for index, sample in enumerate(samples):
        error = _first_error(plugin.parse(sample).root_node)
        if error:
            problems.append(f"sample {index} does not parse cleanly ({error}); samples must be valid code")
    return problems


def check_node_types(plugin: LanguagePlugin) -> list[str]:
    """Check that every node type and field name the plugin uses exists in its grammar
    (:func:`workbench.languages.grammar_fit.grammar_mismatches`, which a command also runs
    before it uses the plugin)."""
    return grammar_mismatches(plugin)


def check_tokens(
    plugin: LanguagePlugin, samples: Sequence[str], expected_tokens: Mapping[int, Sequence[str]] | None = None
) -> list[str]:
    """Check dedup tokens on every sample.

    Tokens must be non-empty, be texts of identifier / literal nodes of the sample that are
    outside comments, come in source order, be the same for ``str`` and UTF-8 ``bytes``
    input, and equal ``expected_tokens[i]`` where given. Across the samples at least one
    identifier and (if the plugin declares literal types) one literal must be found.
    """
    problems = []
    identifier_types = frozenset(plugin.identifier_node_types) | frozenset(plugin.anonymous_identifier_node_types)
    eligible_types = identifier_types | frozenset(plugin.literal_node_types)
    seen_identifier = seen_literal = False
    for index, sample in enumerate(samples):
        try:
            tokens = plugin.tokens(sample)
        except Exception as error:  # noqa: BLE001
            problems.append(f"sample {index}: tokens() raised {type(error).__name__}: {error}")
            continue
        if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
            problems.append(f"sample {index}: tokens() must return a list of str, got {_preview(repr(tokens))}")
            continue
        if not tokens:
            problems.append(f"sample {index}: no tokens at all")
            continue
        if any(not token for token in tokens):
            problems.append(f"sample {index}: empty-string token")
        tree = plugin.parse(sample)
        eligible = [
            (node.text.decode("utf-8", "replace"), node.type)
            for node in _walk(tree.root_node, frozenset(plugin.skip_node_types))
            if node.type in eligible_types
        ]
        # tokens must be a subsequence of the eligible node texts (pre-order = source order)
        position = 0
        for token in tokens:
            while position < len(eligible) and eligible[position][0] != token:
                position += 1
            if position == len(eligible):
                where = "later in" if any(text == token for text, _ in eligible) else "anywhere in"
                problems.append(
                    f"sample {index}: token {token!r} is not an identifier/literal node text {where} the sample "
                    f"(outside comments, in source order); keywords, operators and comment text are not tokens"
                )
                break
            node_type = eligible[position][1]
            seen_identifier |= node_type in identifier_types
            seen_literal |= node_type in plugin.literal_node_types
            position += 1
        if plugin.tokens(sample.encode("utf-8")) != tokens:
            problems.append(f"sample {index}: tokens differ between str and UTF-8 bytes input")
        if expected_tokens and index in expected_tokens and list(expected_tokens[index]) != tokens:
            problems.append(f"sample {index}: tokens {tokens!r} != expected {list(expected_tokens[index])!r}")
    if samples and not seen_identifier:
        problems.append("no identifier token found in any sample")
    if samples and plugin.literal_node_types and not seen_literal:
        problems.append("no literal token found in any sample: add literals to the samples or fix literal_node_types")
    return problems


def check_robustness(plugin: LanguagePlugin, samples: Sequence[str]) -> list[str]:
    """Check that tokens and parsing survive empty, broken, binary and deeply nested input."""
    inputs: list[str | bytes] = list(_HOSTILE_INPUTS)
    for sample in samples[:3]:
        inputs.append(sample[: len(sample) // 2])  # truncated mid-construct
        inputs.append(sample.replace("(", "", 1).replace("{", "}", 1))  # unbalanced
        inputs.append(b"\xff\xfe" + sample.encode("utf-8")[::-1])  # binary garbage
    problems = []
    for text in inputs:
        try:
            tokens = plugin.tokens(text)
            plugin.parse(text)
        except Exception as error:  # noqa: BLE001
            problems.append(f"tokens()/parse() raised {type(error).__name__} on {_preview(text)}: {error}")
            continue
        if not isinstance(tokens, list) or not all(isinstance(token, str) for token in tokens):
            problems.append(f"tokens() on {_preview(text)} must return a list of str, got {type(tokens).__name__}")
        elif not (text.strip() if isinstance(text, str) else text.strip()) and tokens:
            problems.append(f"tokens() of blank input {_preview(text)} must be [], got {tokens!r}")
    return problems


def check_decomposition(
    plugin: LanguagePlugin, samples: Sequence[str], expected_kinds: set[SubCodeKind] | None = None
) -> list[str]:
    """Check the DSA-CQE decomposition map (Xu et al., ISWC 2024 posters, Sec. 2).

    Args:
        expected_kinds: the kinds the samples contain; default: every kind whose node-type
            set is non-empty must be found in at least one sample.
    """
    mapping = plugin.subcode_node_types
    if not isinstance(mapping, Mapping):
        return [f"subcode_node_types must be a mapping SubCodeKind -> node types, got {type(mapping).__name__}"]
    problems = []
    for key in mapping:
        if not isinstance(key, SubCodeKind):
            problems.append(f"subcode_node_types key {key!r} is not a SubCodeKind (use SubCodeKind.FOR, not 'For')")
    missing = [kind.value for kind in SubCodeKind if kind not in mapping]
    if missing:
        problems.append(
            f"subcode_node_types lacks {missing}; map every kind, with frozenset() where the language has no such construct"
        )
    owner: dict[str, Any] = {}
    for key, types in mapping.items():
        if not is_set(types):
            problems.append(f"subcode_node_types[{key!r}] must be a set of node types, got {types!r}")
            continue
        for node_type in types:
            if node_type in owner and owner[node_type] != key:
                problems.append(f"node type {node_type!r} is mapped to both {owner[node_type]} and {key}")
            owner[node_type] = key
    if problems:
        return problems
    if not any(mapping.values()):
        return [("subcode_node_types maps every kind to frozenset(): the plugin cannot decompose, and dsa-cqe "
                 "refuses its language; map the kinds the language has (docs/plugins.md, section 5)")]
    found = set(subcode_kind_counts(plugin, samples))
    wanted = expected_kinds if expected_kinds is not None else {kind for kind, types in mapping.items() if types}
    for kind in sorted(wanted - found, key=lambda k: k.value):
        problems.append(
            f"no {kind.value} sub-code found in the samples (node types {sorted(mapping.get(kind, ()))}); "
            f"add a sample with one, or fix the node types"
        )
    return problems


def check_definition_fields(plugin: LanguagePlugin, samples: Sequence[str]) -> list[str]:
    """Check that each definition field occurs on its node type in the samples and holds an identifier."""
    fields_by_type = dict(plugin.definition_fields)
    if not fields_by_type:
        return []
    identifiers = frozenset(plugin.identifier_node_types)
    seen: dict[tuple[str, str], list[bool]] = {}
    for sample in samples:
        for node in _walk(plugin.parse(sample).root_node):
            for field_name in fields_by_type.get(node.type, ()):
                child = node.child_by_field_name(field_name)
                has_identifier = child is not None and any(n.type in identifiers for n in _walk(child))
                seen.setdefault((node.type, field_name), []).append(has_identifier)
    problems = []
    if not seen:
        problems.append(f"none of the definition node types {sorted(fields_by_type)} occurs in the samples")
    else:
        # an unseen node type's fields go unchecked: a wrong but existing field would pass
        absent = sorted(set(fields_by_type) - {node_type for node_type, _ in seen})
        if absent:
            problems.append(f"the definition node types {absent} never occur in the samples; add code with them, so "
                            f"that the kit can check their fields")
    for (node_type, field_name), flags in sorted(seen.items()):
        if not any(flags):
            problems.append(
                f"field {field_name!r} of {node_type!r} never holds an identifier in the samples "
                f"({count(len(flags), 'occurrence')}); is it the right field?"
            )
    return problems
