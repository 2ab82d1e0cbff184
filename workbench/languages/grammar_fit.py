"""Does a plugin fit the grammar that is installed? Every node type and field it names must exist.

A plugin written against one grammar version and run with another can load, parse and tokenize
without an error while its node-type lists no longer match (a renamed type is simply never seen):
identifiers go missing from the token bags and dedup finds fewer duplicates, with nothing said.
The conformance kit runs this check for plugin authors; the registry runs it before a command
uses a plugin, so such a mismatch is an error naming the types, never a silently different result.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.languages.spec import NAME_QUERY_CAPTURES, LanguagePlugin


def is_set(value: Any) -> bool:
    """Whether a plugin attribute is a set (``set`` or ``frozenset``), as its node-type lists must be."""
    return isinstance(value, (set, frozenset))


def _named_kind_exists(language: Any, node_type: str) -> bool:
    kind_id = language.id_for_node_kind(node_type, True)
    return kind_id is not None and language.node_kind_is_visible(kind_id)


#: the query predicates py-tree-sitter evaluates (``#eq?`` ... ``#not-any-of?``) or keeps as pattern
#: properties (``#is?``, ``#is-not?``, ``#set!``); any other one is handed to a ``predicate`` callback,
#: which workbench does not pass, so the pattern matches as if the predicate were not there
KNOWN_QUERY_PREDICATES = frozenset({
    "eq?", "not-eq?", "any-eq?", "any-not-eq?", "match?", "not-match?", "any-match?", "any-not-match?",
    "any-of?", "not-any-of?", "is?", "is-not?", "set!"})


def unknown_predicates(query: str) -> list[str]:
    """The predicates of a tree-sitter query text that are not in :data:`KNOWN_QUERY_PREDICATES`
    (strings and ``;`` comments are passed over), e.g. ``["eqq?"]`` for ``(#eqq? @x "a")``."""
    # strings and comments in one left-to-right pass: a ``"`` in a comment opens no string, a ``;`` in a string no comment
    text = re.sub(r'"(?:\\.|[^"\\])*"|;[^\n]*', lambda found: '""' if found.group().startswith('"') else "", query)
    return sorted(set(re.findall(r"\(\s*#([^\s()\"]+)", text)) - KNOWN_QUERY_PREDICATES)


#: the starts of ``tree_sitter.QueryError`` messages that a grammar release can cause (a renamed node
#: type or field, a pattern a changed grammar no longer allows); any other query error is the plugin's
_QUERY_ERRORS_OF_A_GRAMMAR_VERSION = ("Invalid node type", "Invalid field name", "Impossible pattern")


def grammar_mismatches(plugin: LanguagePlugin) -> list[str]:
    """What in ``plugin`` does not fit its tree-sitter grammar as installed.

    Checked: every node type of ``identifier_node_types``, ``literal_node_types``,
    ``skip_node_types``, ``subcode_node_types``, ``definition_fields`` and
    ``embedded_code_node_types`` is a visible named node type of the grammar; the identifier,
    literal and skip sets do not overlap; ``name_query`` compiles and captures only
    ``@definition`` / ``@update`` / ``@not_a_name`` and uses no predicate tree-sitter ignores
    (:func:`unknown_predicates`); each definition field is a field of the grammar.

    Args:
        plugin: the plugin (its grammar is loaded).

    Returns:
        one sentence per problem (empty when the plugin fits); a grammar that does not load is
        one problem (``"load_language() raised ..."``).
    """
    return [problem for problem, _ in _fit_problems(plugin)]


def plugin_faults(plugin: LanguagePlugin) -> list[str]:
    """The problems of :func:`grammar_mismatches` that no grammar version fixes: a list that is not a
    set, overlapping token sets, a ``name_query`` capture other than the three or a predicate tree-sitter
    ignores, a query that does not
    compile for another reason than a node type or field name, a definition field list that is not a
    tuple. Renamed node types and fields are not among them (another grammar release may have them).

    Args:
        plugin: the plugin (its grammar is loaded).

    Returns:
        one sentence per fault, worded as in :func:`grammar_mismatches`; empty when there is none.
    """
    return [problem for problem, fault in _fit_problems(plugin) if fault]


def _fit_problems(plugin: LanguagePlugin) -> list[tuple[str, bool]]:
    """``(problem, is_plugin_fault)`` for each problem of :func:`grammar_mismatches`, in its order."""
    try:
        language = plugin.load_language()
    except Exception as error:  # noqa: BLE001 - a third-party grammar package
        return [(f"load_language() raised {type(error).__name__}: {error}", False)]
    problems: list[tuple[str, bool]] = []
    groups: dict[str, Any] = {
        "identifier_node_types": plugin.identifier_node_types,
        "literal_node_types": plugin.literal_node_types,
        "skip_node_types": plugin.skip_node_types,
    }
    for kind, types in dict(plugin.subcode_node_types).items():
        groups[f"subcode_node_types[{getattr(kind, 'value', kind)}]"] = types
    groups["definition_fields"] = frozenset(plugin.definition_fields)
    groups["embedded_code_node_types"] = plugin.embedded_code_node_types
    for group, types in groups.items():
        if not is_set(types):
            problems.append((f"{group} must be a set of node-type strings, got {type(types).__name__} {types!r}", True))
            continue
        for node_type in sorted(types, key=str):
            if not isinstance(node_type, str):
                problems.append((f"{group}: {node_type!r} is not a visible named node type of the grammar", True))
            elif not _named_kind_exists(language, node_type):
                problems.append((f"{group}: {node_type!r} is not a visible named node type of the grammar", False))
    pairs = (("identifier", plugin.identifier_node_types), ("literal", plugin.literal_node_types),
             ("skip", plugin.skip_node_types))
    for i, (name_a, types_a) in enumerate(pairs):
        for name_b, types_b in pairs[i + 1 :]:
            if is_set(types_a) and is_set(types_b) and types_a & types_b:
                problems.append((f"{name_a} and {name_b} node types overlap: {sorted(types_a & types_b)}", True))
    try:
        query = plugin.compiled_name_query()
    except Exception as error:  # noqa: BLE001 - tree_sitter.QueryError and friends
        problems.append((f"name_query does not compile against the grammar: {error}",
                         not str(error).startswith(_QUERY_ERRORS_OF_A_GRAMMAR_VERSION)))
    else:
        unknown = sorted(set(query.capture_name(i) for i in range(query.capture_count)) - NAME_QUERY_CAPTURES
                         if query is not None else ())
        if unknown:
            problems.append((f"name_query captures {unknown}; use only {sorted(NAME_QUERY_CAPTURES)}", True))
        predicates = unknown_predicates(plugin.name_query) if query is not None else []
        if predicates:
            problems.append((f"name_query uses the predicates {['#' + p for p in predicates]}, which tree-sitter does "
                             f"not evaluate (its pattern matches as if they were not there); use #eq?, #not-eq?, "
                             f"#match?, #not-match?, #any-of? or #not-any-of?", True))
    for node_type, fields in dict(plugin.definition_fields).items():
        if isinstance(fields, str) or not isinstance(fields, (tuple, list)):
            problems.append((f"definition_fields[{node_type!r}] must be a tuple of field names, got {fields!r}", True))
            continue
        for field_name in fields:
            if not isinstance(field_name, str):
                problems.append((f"definition_fields[{node_type!r}]: {field_name!r} is not a field of the grammar", True))
            elif language.field_id_for_name(field_name) is None:
                problems.append((f"definition_fields[{node_type!r}]: {field_name!r} is not a field of the grammar", False))
    return problems


#: the share of a plugin's node types its grammar must lack to be taken for another language's
#: grammar: a grammar release renames a few types, another language's grammar lacks most of them
#: (measured on the bundled plugins: 21-88% missing in another language's grammar, at most a few
#: types in another release of its own)
FOREIGN_SHARE = 0.5


def foreign_grammar(plugin: LanguagePlugin) -> tuple[int, int, list[str]] | None:
    """Whether the grammar ``plugin`` loads looks like another language's altogether (its
    ``language_capsule()`` returns the wrong grammar) rather than another release of its own:
    at least :data:`FOREIGN_SHARE` of the node types it names (identifier, literal, skip,
    sub-code, embedded-code and definition node types; at least 4 of them) are not visible named
    node types of the grammar.

    Args:
        plugin: the plugin (its grammar loads).

    Returns:
        ``(missing, named, up to 3 missing types)``, or ``None`` when the grammar looks like the
        plugin's language (or it names too few types to tell, or some list is malformed:
        :func:`grammar_mismatches` says so).
    """
    try:
        language = plugin.load_language()
        groups = [plugin.identifier_node_types, plugin.literal_node_types, plugin.skip_node_types,
                  plugin.embedded_code_node_types, frozenset(dict(plugin.definition_fields)),
                  *dict(plugin.subcode_node_types).values()]
    except Exception:  # noqa: BLE001 - grammar_mismatches reports a grammar or an attribute that fails
        return None
    if not all(is_set(group) for group in groups):
        return None
    named = sorted({node_type for group in groups for node_type in group if isinstance(node_type, str)})
    missing = [node_type for node_type in named if not _named_kind_exists(language, node_type)]
    if len(named) < 4 or len(missing) < FOREIGN_SHARE * len(named):
        return None
    return len(missing), len(named), missing[:3]


def foreign_grammar_message(plugin: LanguagePlugin) -> str | None:
    """The sentence that says ``plugin``'s ``language_capsule()`` loads another language's grammar
    (:func:`foreign_grammar`), as the conformance kit and the registry report it.

    Args:
        plugin: the plugin (its grammar loads).

    Returns:
        ``"language_capsule() loads another grammar than tree-sitter-go's: N of its M node types are
        not in it (e.g. ...); make GoLanguage.language_capsule() return the go grammar's language,
        e.g. tree_sitter_go.language() (docs/plugins.md)"``, or ``None`` when the grammar looks like
        the plugin's language.
    """
    foreign = foreign_grammar(plugin)
    if foreign is None:
        return None
    missing, named, examples = foreign
    distribution = plugin.grammar_distribution
    declared = f"{distribution}'s" if distribution else "its language's"
    example = f", e.g. {distribution.replace('-', '_')}.language()" if distribution else ""
    return (f"language_capsule() loads another grammar than {declared}: {missing} of its {named} node types are "
            f"not in it (e.g. {', '.join(map(repr, examples))}); make {type(plugin).__name__}.language_capsule() "
            f"return the {plugin.name} grammar's language{example} (docs/plugins.md)")


__all__ = ["foreign_grammar", "foreign_grammar_message", "grammar_mismatches", "is_set", "plugin_faults"]
