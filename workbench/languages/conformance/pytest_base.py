"""The pytest base class of the conformance kit: subclass it in a plugin's tests."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbench.languages.conformance.kit import CHECKS, check_plugin
from workbench.languages.conformance.runner_check import RunnerCase
from workbench.languages.spec import LanguagePlugin, SubCodeKind


class LanguagePluginConformance:
    """Base class for a plugin's conformance tests: subclass it as ``Test...`` and set

    Attributes:
        plugin: the plugin instance under test.
        samples: valid source files that together contain the eight constructs.
        expected_tokens: optional sample index -> exact tokens.
        expected_kinds: optional set of :class:`SubCodeKind` the samples contain.
        runner_cases: :class:`RunnerCase` list (at least one pass and one fail) if the
            plugin has a runner.

    Each check of :data:`CHECKS` becomes one test; the runner test is skipped when the
    runner's toolchain is missing.
    """

    plugin: LanguagePlugin
    samples: Sequence[str] = ()
    expected_tokens: Mapping[int, Sequence[str]] | None = None
    expected_kinds: set[SubCodeKind] | None = None
    runner_cases: Sequence[RunnerCase] = ()

    def _check(self, name: str) -> None:
        report = check_plugin(
            self.plugin, self.samples, expected_tokens=self.expected_tokens, expected_kinds=self.expected_kinds,
            runner_cases=self.runner_cases, checks=(name,),
        )
        report.raise_if_failed()
        if name in report.skipped:
            import pytest

            pytest.skip(report.skipped[name])


def _check_test(name: str):
    """The pytest test of one check (``test_<name>``), so that :data:`CHECKS` alone lists them."""

    def test(self: LanguagePluginConformance) -> None:
        self._check(name)

    test.__name__ = test.__qualname__ = f"test_{name}"
    test.__doc__ = f"The conformance kit's ``{name}`` check."
    return test


for _name in CHECKS:
    setattr(LanguagePluginConformance, f"test_{_name}", _check_test(_name))
