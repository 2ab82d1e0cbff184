"""Discovery of language plugins through pluggy and the ``workbench.languages`` entry points.

Built-in plugins are listed in :data:`DEFAULT_PLUGINS` and register through the same
hook as third-party ones, so the core never names a concrete language.

One broken plugin must not take the others down: an entry point that does not import, a hook
that raises or returns something other than :class:`LanguagePlugin` instances, or an entry
point without the hook is left out and recorded as a :class:`PluginProblem` (``workbench
languages`` lists them; every command logs them once as warnings). Conflicts are refused where
they matter, never settled silently: two plugins of one language name make that language
unusable until one is uninstalled, and an alias or extension claimed by several plugins is an
error when it is looked up, also when one of the claimants is itself unusable (pass the plugin's
name instead; a folder's files take the command's ``--language`` when it names one of the usable
claimants). A plugin whose grammar does not load, or that names node types or fields the
installed grammar lacks (written for another grammar version), is an error when it is asked for,
before any file is parsed; the message tells a grammar package to install from one that is
installed but raised.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import logging
import os
import threading
from dataclasses import dataclass

import pluggy

from workbench.errors import LanguageNotFoundError
from workbench.languages.grammar_fit import foreign_grammar_message, grammar_mismatches, plugin_faults
from workbench.languages.spec import ENTRY_POINT_GROUP, PROJECT_NAME, LanguageHookSpec, LanguagePlugin, shape_problems

#: modules of plugins that ship inside the workbench package itself
DEFAULT_PLUGINS: tuple[str, ...] = ("workbench.languages.python_plugin",)

_log = logging.getLogger(__name__)


class LanguageConflictError(LanguageNotFoundError):
    """Several installed plugins claim the asked-for language name, alias or extension."""


class LanguageGrammarError(LanguageNotFoundError):
    """The plugin of the asked-for language cannot load its tree-sitter grammar."""


@dataclass(frozen=True)
class PluginInfo:
    """An installed plugin as ``workbench languages`` shows it.

    Attributes:
        plugin: the :class:`LanguagePlugin`.
        distribution: the Python distribution that provides it (``"workbench"`` for built-ins).
        version: that distribution's version (``"?"`` if unknown).
        grammar_version: the version of ``plugin.grammar_distribution`` (``"?"`` if not installed).
    """

    plugin: LanguagePlugin
    distribution: str
    version: str
    grammar_version: str


@dataclass(frozen=True)
class PluginProblem:
    """A plugin that was left out, or a conflict between plugins.

    Attributes:
        source: which plugin: its distribution and entry point (``"workbench-go (entry point
            go = workbench_go)"``), or the language for a conflict.
        message: what is wrong and what to do, one sentence.
    """

    source: str
    message: str

    def __str__(self) -> str:
        return f"{self.source}: {self.message}"


@dataclass(frozen=True)
class _Claim:
    """One plugin's claim on an alias or extension: its language, its distribution, and whether it
    is usable (``"usable"``), one of several providers of its language (``"clash"``) or left out
    as malformed (``"left out"``)."""

    language: str
    distribution: str
    state: str

    def __str__(self) -> str:
        if self.state == "usable":
            return f"{self.language} ({self.distribution})"
        if self.state == "clash":
            return f"{self.language} ({self.distribution}; unusable: several plugins provide {self.language})"
        return f"{self.language} ({self.distribution}; left out: malformed)"


@dataclass(frozen=True)
class _Discovery:
    infos: tuple[PluginInfo, ...]
    problems: tuple[PluginProblem, ...]
    #: language name -> the distributions that all provide it (such a language is not usable)
    clashes: dict[str, tuple[str, ...]]
    #: alias or extension -> every plugin that claims it, usable or not (a clashing or malformed
    #: plugin's claim still makes a key ambiguous: it must never route to the other claimant silently)
    claims: dict[str, tuple[_Claim, ...]]


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    """The group's entry points, in a fixed order (distribution, then entry-point name), so the
    outcome never depends on the order of ``sys.path`` or the current folder."""
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(found, key=lambda ep: ((ep.dist.name if ep.dist else "").lower(), ep.name, ep.value))


#: one discovery at a time: two threads that each built their own plugin objects would disagree on
#: which object is "the" plugin (an RLock: discovery calls the other cached steps)
_DISCOVERY_LOCK = threading.RLock()


def _cached_under_lock(function):
    """:func:`functools.cache`, with every call made under :data:`_DISCOVERY_LOCK`, so that the
    first callers of several threads share one result instead of racing to build one each."""
    cached = functools.cache(function)

    @functools.wraps(function)
    def call(*args):
        with _DISCOVERY_LOCK:
            return cached(*args)

    call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
    return call


def plugin_manager() -> pluggy.PluginManager:
    """Return the process-wide plugin manager with built-in and entry-point plugins loaded
    (the ones that fail to load are in :func:`plugin_problems`)."""
    return _load()[0]


@_cached_under_lock
def _load() -> tuple[pluggy.PluginManager, dict[int, str], tuple[PluginProblem, ...]]:
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(LanguageHookSpec)
    for module_name in DEFAULT_PLUGINS:
        manager.register(importlib.import_module(module_name), name=module_name)
    distributions: dict[int, str] = {}
    problems: list[PluginProblem] = []
    for entry_point in _entry_points():
        distribution = entry_point.dist.name if entry_point.dist else "?"
        source = f"{distribution} (entry point {entry_point.name} = {entry_point.value})"
        try:
            plugin = entry_point.load()
        except Exception as error:  # noqa: BLE001 - any import failure of a third-party module
            problems.append(PluginProblem(source, f"it does not import ({type(error).__name__}: {error}); the plugin "
                                                  f"is left out"))
            continue
        if manager.is_registered(plugin):
            continue  # two entry points naming one module: one plugin
        # each entry point is registered under its own distribution, so two packages that chose the
        # same entry-point name do not hide one another
        try:
            manager.register(plugin, name=f"{distribution}:{entry_point.name}")
        except (ValueError, pluggy.PluginValidationError) as error:
            problems.append(PluginProblem(source, f"it cannot be registered ({error}); the plugin is left out"))
            continue
        if not manager.get_hookcallers(plugin) and isinstance(plugin, type):
            manager.unregister(plugin)
            module = entry_point.value.partition(":")[0].strip()
            problems.append(PluginProblem(source, (
                f"the entry point names the class {plugin.__name__}, not a module: name the module that holds the "
                f"@hookimpl workbench_languages function ({entry_point.name} = {module}; docs/plugins.md); the "
                f"plugin is left out")))
            continue
        if not manager.get_hookcallers(plugin):
            manager.unregister(plugin)
            problems.append(PluginProblem(source, (
                "it has no workbench_languages hook: the entry point must name a module (not a function) whose "
                "workbench_languages function is decorated with @hookimpl (docs/plugins.md); the plugin is left out")))
            continue
        distributions[id(plugin)] = distribution
    return manager, distributions, tuple(problems)


def _not_a_list(returned: object) -> str | None:
    """What a ``workbench_languages`` hook returned instead of an iterable of plugins (``"None, not a list
    ..."``), or ``None`` when it returned an iterable (its items are checked one by one)."""
    if returned is None:
        return "None, not a list of LanguagePlugin instances (a missing return?)"
    if isinstance(returned, LanguagePlugin):
        kind = type(returned).__name__
        return f"a {kind} instance, not a list of LanguagePlugin instances: return [{kind}()]"
    if isinstance(returned, (str, bytes)) or not hasattr(returned, "__iter__"):
        return f"{returned!r}, not a list of LanguagePlugin instances"
    return None


@_cached_under_lock
def _discover() -> _Discovery:
    manager, distributions, load_problems = _load()
    problems = list(load_problems)
    found: dict[str, list[PluginInfo]] = {}
    # malformed plugins' claims and the keys they claim, where their name and keys are readable
    left_out: list[tuple[_Claim, tuple[str, ...]]] = []
    for impl in manager.hook.workbench_languages.get_hookimpls():
        distribution = distributions.get(id(impl.plugin), PROJECT_NAME)
        source = f"{distribution} ({manager.get_name(impl.plugin)})"
        try:
            returned = impl.function()
            not_a_list = _not_a_list(returned)
            provided = [] if not_a_list else list(returned)
        except Exception as error:  # noqa: BLE001 - a third-party hook
            problems.append(PluginProblem(source, f"its workbench_languages hook failed ({type(error).__name__}: "
                                                  f"{error}); the plugin is left out"))
            continue
        if not_a_list:
            problems.append(PluginProblem(source, f"its workbench_languages hook returned {not_a_list}; the plugin "
                                                  f"is left out"))
            continue
        wrong = [item for item in provided if not isinstance(item, LanguagePlugin)]
        if wrong:
            problems.append(PluginProblem(source, f"its workbench_languages hook returned {wrong[0]!r}, not a "
                                                  f"LanguagePlugin instance; the plugin is left out"))
            continue
        for plugin in provided:
            shape = shape_problems(plugin)
            if shape:
                problems.append(PluginProblem(source, f"its {type(plugin).__name__} is malformed ({'; '.join(shape)}); "
                                                      f"the plugin is left out"))
                keys = _readable_keys(plugin)
                if keys:
                    left_out.append((_Claim(plugin.name, distribution, "left out"), keys))
                continue
            found.setdefault(plugin.name, []).append(PluginInfo(
                plugin=plugin, distribution=distribution, version=_version(distribution),
                grammar_version=_version(plugin.grammar_distribution) if plugin.grammar_distribution else "?"))
    infos, clashes = [], {}
    claims: dict[str, list[_Claim]] = {}
    for name in sorted(found):
        providers = found[name]
        state = "usable" if len(providers) == 1 else "clash"
        for info in providers:
            for key in dict.fromkeys(k.lower() for k in (*info.plugin.aliases, *info.plugin.extensions)):
                claims.setdefault(key, []).append(_Claim(name, info.distribution, state))
        if len(providers) == 1:
            infos.append(providers[0])
            continue
        clashes[name] = tuple(info.distribution for info in providers)
        problems.append(PluginProblem(f"language {name!r}", (
            f"two plugins provide it ({' and '.join(clashes[name])}); neither is used until one is uninstalled")))
    for claim, keys in left_out:
        for key in keys:
            claims.setdefault(key, []).append(claim)
    for key, claimants in claims.items():  # an alias or extension two languages claim: looked up by name only
        if len({claim.language for claim in claimants}) > 1:
            problems.append(PluginProblem(f"{key!r}", (
                f"claimed by the languages {', '.join(map(str, claimants))}; files or options that name it are "
                f"refused: pass --language with the language's name")))
    for problem in problems:
        _log.warning("plugin problem: %s", problem)
    return _Discovery(tuple(infos), tuple(problems), clashes, {key: tuple(value) for key, value in claims.items()})


def _readable_keys(plugin: LanguagePlugin) -> tuple[str, ...]:
    """A malformed plugin's aliases and extensions, lowercased: those of the two attributes that
    are a tuple or list of texts; none when its name is not a non-empty text (nothing reliable
    to claim)."""
    keys = []
    if not isinstance(plugin.name, str) or not plugin.name:
        return ()
    for attribute in ("aliases", "extensions"):
        value = getattr(plugin, attribute, ())
        if isinstance(value, (tuple, list)) and all(isinstance(item, str) for item in value):
            keys.extend(item.lower() for item in value)
    return tuple(dict.fromkeys(keys))


def installed_plugins() -> tuple[PluginInfo, ...]:
    """Return every usable language plugin, sorted by name (those left out, and the reason:
    :func:`plugin_problems`)."""
    return _discover().infos


def plugin_problems() -> tuple[PluginProblem, ...]:
    """Return the plugins that were left out and the conflicts between plugins, in discovery order."""
    return _discover().problems


def refresh_plugins() -> None:
    """Forget what was discovered, so that plugins installed since (in a notebook, a test) are found."""
    with _DISCOVERY_LOCK:
        for cached in (_load, _discover, _usable):
            cached.cache_clear()
    importlib.invalidate_caches()


def _installed_names() -> str:
    return ", ".join(info.plugin.name for info in installed_plugins()) or "(none)"


@_cached_under_lock
def _usable(name: str) -> LanguagePlugin:
    """The plugin called ``name`` once its grammar is known to load (parsing plugins only)."""
    plugin = next(info.plugin for info in installed_plugins() if info.plugin.name == name)
    if not {"tokens", "decompose"} & set(plugin.capabilities()):  # a runner-only plugin parses nothing
        return plugin
    if type(plugin).language_capsule is LanguagePlugin.language_capsule:
        raise LanguageGrammarError(
            f"the {name} plugin's {type(plugin).__name__} does not implement language_capsule() (it returns the "
            f"grammar's language pointer, e.g. tree_sitter_go.language(); docs/plugins.md)")
    try:
        plugin.load_language()
    except Exception as error:  # noqa: BLE001 - a missing or broken grammar package, or a plugin bug
        raise LanguageGrammarError(_grammar_failure(plugin, error)) from error
    # a plugin made for another grammar version still parses, but misses the renamed node types
    mismatches = grammar_mismatches(plugin)
    if mismatches:
        grammar = f" ({plugin.grammar_distribution} {_version(plugin.grammar_distribution)})" \
            if plugin.grammar_distribution else ""
        foreign = foreign_grammar_message(plugin)
        if foreign is not None:  # no grammar version fixes a capsule that returns another language's grammar
            raise LanguageGrammarError(f"the {name} plugin's {foreign}")
        faults = plugin_faults(plugin)
        if faults:  # a plugin bug, which no grammar version fixes: fix those first
            raise LanguageGrammarError(
                f"the {name} plugin is malformed (no grammar version fixes it): {_first_five(faults)}; fix the "
                f"plugin (its conformance tests say the same: docs/plugins.md)")
        shown = _first_five(mismatches)
        raise LanguageGrammarError(
            f"the {name} plugin does not fit the installed grammar{grammar}: {shown}. "
            f"Install the grammar version the plugin was written for (pip shows its requirement), or fix the "
            f"plugin (its conformance tests say the same: docs/plugins.md)")
    return plugin


def _first_five(problems: list[str]) -> str:
    return "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")


def _clash_error(name: str) -> LanguageConflictError:
    return LanguageConflictError(
        f"two plugins provide the language {name!r} ({' and '.join(_discover().clashes[name])}): uninstall one")


def _grammar_failure(plugin: LanguagePlugin, error: Exception) -> str:
    """Why ``plugin``'s grammar did not load and what to do: install the grammar package only when
    importing it failed and it is not installed; reinstall it when it is installed but does not
    import; otherwise the package is there and loading raised (a plugin or grammar bug), which no
    install fixes."""
    name, distribution = plugin.name, plugin.grammar_distribution
    raised = f"{type(error).__name__}: {error}"
    installed = _version(distribution) if distribution else "?"
    if isinstance(error, ImportError):
        if distribution and installed != "?":
            return (f"the {name} plugin cannot load its tree-sitter grammar: {distribution} {installed} is installed "
                    f"but does not import ({raised}); reinstall it (pip install --force-reinstall {distribution}) and "
                    f"run again")
        install = f"pip install {distribution}" if distribution else "its grammar package"
        return f"the {name} plugin cannot load its tree-sitter grammar ({raised}); install it ({install}) and run again"
    package = f"its grammar package {distribution} {installed} is installed, but" if installed != "?" else "loading"
    return (f"the {name} plugin cannot load its tree-sitter grammar: {package} {type(plugin).__name__}.language_capsule() "
            f"or tree_sitter.Language raised {raised}. This is a fault of the plugin or of the grammar's build, not a "
            f"missing package: report it to the plugin's authors (the plugin's conformance tests show it: "
            f"docs/plugins.md)")


def _lookup(key: str, what: str) -> LanguagePlugin | None:
    """The usable plugin that ``key`` names: a language name first, else the one language that
    claims ``key`` as an alias or extension; ``None`` when nothing claims it.

    Every claim counts, also one of a plugin that is not usable (one of two providers of a
    language, or left out as malformed): a key two languages claim is refused even when one of
    them cannot be used, so it never routes silently to the other.

    Raises:
        LanguageConflictError: two plugins provide the language, or several languages claim the key.
        LanguageGrammarError: the plugin's grammar does not load (:func:`_usable`).
    """
    key = key.lower()
    discovery = _discover()
    if key in discovery.clashes:
        raise _clash_error(key)
    by_name = [info.plugin for info in installed_plugins() if info.plugin.name == key]
    if by_name:
        return _usable(by_name[0].name)
    claims = discovery.claims.get(key, ())
    languages = list(dict.fromkeys(claim.language for claim in claims))
    if len(languages) > 1:
        raise LanguageConflictError(
            f"{what} {key!r} is claimed by the languages {', '.join(map(str, claims))}: pass --language with "
            f"the language's name, or uninstall one of the plugins")
    if not languages:
        return None
    if languages[0] in discovery.clashes:
        raise _clash_error(languages[0])
    if claims[0].state != "usable":
        return None  # a malformed plugin's alone: "no plugin", and the plugin problems say why
    return _usable(languages[0])


def get_language(name: str) -> LanguagePlugin:
    """Return the plugin for a language name, alias or file extension (``"py"``, ``".java"``).

    A plugin's own name wins over another plugin's alias of the same spelling.

    Raises:
        LanguageNotFoundError: no installed plugin handles ``name``; the message lists
            the installed languages and how to add one.
        LanguageConflictError: two plugins provide the language, or several claim the alias or
            extension.
        LanguageGrammarError: the plugin's tree-sitter grammar does not load (not installed).
    """
    plugin = _lookup(name, "the alias or extension")
    if plugin is not None:
        return plugin
    raise LanguageNotFoundError(
        f"no language plugin for {name!r}; installed: {_installed_names()}. "
        f"Install the language's plugin package (pip install ./plugins/workbench-<language>), or write one: docs/plugins.md."
    )


def canonical_language(name: str) -> str:
    """The language name of the plugin that handles ``name`` (an alias or extension: ``"py"`` ->
    ``"python"``), so that runs and reports that name one plugin two ways agree; ``name`` itself
    when no single usable plugin handles it (the lookup's own error is raised where the plugin is used)."""
    try:
        plugin = _lookup(name, "the alias or extension")
    except LanguageNotFoundError:
        return name
    return plugin.name if plugin is not None else name


def plugin_versions(name: str) -> dict[str, str] | None:
    """What made a language's tokens, for a report that must be reproducible.

    Args:
        name: a language name, alias or extension.

    Returns:
        ``{"language", "plugin", "plugin_version", "grammar", "grammar_version"}`` (``"?"`` for
        an unknown version), or ``None`` when no usable plugin handles ``name``.
    """
    try:
        plugin = _lookup(name, "the alias or extension")
    except LanguageNotFoundError:
        return None
    if plugin is None:
        return None
    info = next(info for info in installed_plugins() if info.plugin is plugin)
    return {"language": plugin.name, "plugin": info.distribution, "plugin_version": info.version,
            "grammar": plugin.grammar_distribution, "grammar_version": info.grammar_version}


def language_for_path(path: str, prefer: str | None = None) -> LanguagePlugin | None:
    """Return the plugin whose extensions match ``path``'s suffix, or ``None``.

    Args:
        path: a file path (only its suffix is read).
        prefer: a language name, alias or extension (the command's ``--language``) that settles a
            suffix several plugins claim when it names one of them; otherwise it is not used.

    Raises:
        LanguageConflictError: several plugins claim the suffix and ``prefer`` names none of them.
        LanguageGrammarError: the plugin's grammar does not load.
    """
    suffix = os.path.splitext(path)[1].lower()
    if not suffix:
        return None
    claims = _discover().claims.get(suffix, ())
    if not claims:
        return None
    if len({claim.language for claim in claims}) > 1 and prefer is not None:
        preferred = canonical_language(prefer)
        if any(claim.language == preferred and claim.state == "usable" for claim in claims):
            return _usable(preferred)
    return _lookup(suffix, "the file extension")


def extension_claimants(extension: str) -> tuple[str, ...]:
    """The languages whose plugins claim ``extension`` (``".cpp"``), usable or not, in name order:
    more than one means the extension is ambiguous and only ``--language`` settles it
    (:func:`language_for_path`)."""
    claims = _discover().claims.get(extension.lower(), ())
    return tuple(sorted({claim.language for claim in claims}))


__all__ = [
    "DEFAULT_PLUGINS", "LanguageConflictError", "LanguageGrammarError", "PluginInfo", "PluginProblem",
    "canonical_language", "extension_claimants", "get_language", "installed_plugins", "language_for_path", "plugin_manager", "plugin_problems", "plugin_versions",
    "refresh_plugins",
]
