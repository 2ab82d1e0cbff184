"""Language plugins: the contract (:mod:`.spec`), discovery (:mod:`.registry`) and the
conformance kit for plugin authors (:mod:`.conformance`)."""

from workbench.languages.registry import (
    PluginInfo,
    PluginProblem,
    get_language,
    installed_plugins,
    language_for_path,
    plugin_problems,
    refresh_plugins,
)
from workbench.languages.spec import LanguagePlugin, RunSpec, SubCodeKind, TestRunner, hookimpl

__all__ = [
    "LanguagePlugin",
    "PluginInfo",
    "PluginProblem",
    "RunSpec",
    "SubCodeKind",
    "TestRunner",
    "get_language",
    "hookimpl",
    "installed_plugins",
    "language_for_path",
    "plugin_problems",
    "refresh_plugins",
]
