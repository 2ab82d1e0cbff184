"""Discovery of language plugins through pluggy and the ``workbench.languages`` entry points.

Built-in plugins are listed in :data:`DEFAULT_PLUGINS` and register through the same
hook as third-party ones, so the core never names a concrete language.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
from dataclasses import dataclass

import pluggy

from workbench.errors import LanguageNotFoundError
from workbench.languages.spec import ENTRY_POINT_GROUP, PROJECT_NAME, LanguageHookSpec, LanguagePlugin

#: modules of plugins that ship inside the workbench package itself
DEFAULT_PLUGINS: tuple[str, ...] = ("workbench.languages.python_plugin",)


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


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "?"


@functools.cache
def plugin_manager() -> pluggy.PluginManager:
    """Return the process-wide plugin manager with built-in and entry-point plugins loaded."""
    manager = pluggy.PluginManager(PROJECT_NAME)
    manager.add_hookspecs(LanguageHookSpec)
    for module_name in DEFAULT_PLUGINS:
        manager.register(importlib.import_module(module_name), name=module_name)
    manager.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
    return manager


@functools.cache
def installed_plugins() -> tuple[PluginInfo, ...]:
    """Return every installed language plugin, sorted by name.

    Raises:
        ValueError: two plugins claim the same language name.
    """
    manager = plugin_manager()
    distributions = {id(module): dist.project_name for module, dist in manager.list_plugin_distinfo()}
    infos: dict[str, PluginInfo] = {}
    for impl in manager.hook.workbench_languages.get_hookimpls():
        distribution = distributions.get(id(impl.plugin), PROJECT_NAME)
        for plugin in impl.function():
            if plugin.name in infos:
                raise ValueError(
                    f"two plugins provide the language {plugin.name!r}: "
                    f"{infos[plugin.name].distribution} and {distribution}"
                )
            infos[plugin.name] = PluginInfo(
                plugin=plugin,
                distribution=distribution,
                version=_version(distribution),
                grammar_version=_version(plugin.grammar_distribution) if plugin.grammar_distribution else "?",
            )
    return tuple(infos[name] for name in sorted(infos))


def get_language(name: str) -> LanguagePlugin:
    """Return the plugin for a language name, alias or file extension (``"py"``, ``".java"``).

    Raises:
        LanguageNotFoundError: no installed plugin handles ``name``; the message lists
            the installed languages and how to add one.
    """
    for info in installed_plugins():
        if info.plugin.handles(name):
            return info.plugin
    names = ", ".join(info.plugin.name for info in installed_plugins()) or "(none)"
    raise LanguageNotFoundError(
        f"no language plugin for {name!r}; installed: {names}. "
        f"Install the language's plugin package (pip install ./plugins/workbench-<language>), or write one: docs/plugins.md."
    )


def language_for_path(path: str) -> LanguagePlugin | None:
    """Return the plugin whose extensions match ``path``'s suffix, or ``None``."""
    import os

    suffix = os.path.splitext(path)[1].lower()
    if not suffix:
        return None
    for info in installed_plugins():
        if suffix in info.plugin.extensions:
            return info.plugin
    return None
