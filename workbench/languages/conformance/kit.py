"""The conformance kit's entry point: :func:`check_plugin` runs the checks and returns a
:class:`ConformanceReport`.

Example::

    from workbench.languages import get_language
    from workbench.languages.conformance import check_plugin

    report = check_plugin(get_language("python"), ["def f(x):\\n    return x + 1\\n"],
                          checks=("identity", "tokens"))
    print(report)             # one line per check: ok / FAILED with the problems
    report.raise_if_failed()  # PluginConformanceError listing every problem
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from workbench.languages.conformance import checks as plugin_checks
from workbench.languages.conformance.runner_check import RunnerCase, check_runner
from workbench.languages.spec import LanguagePlugin, SubCodeKind


class PluginConformanceError(AssertionError):
    """A plugin failed one or more conformance checks; the message lists every problem."""


@dataclass
class ConformanceReport:
    """The outcome of :func:`check_plugin`.

    Attributes:
        plugin: the plugin's name.
        problems: check name -> problems found (an empty list: the check passed).
        skipped: check name -> why it was skipped (e.g. a missing toolchain).
    """

    plugin: str
    problems: dict[str, list[str]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no check found a problem."""
        return not any(self.problems.values())

    def failed_checks(self) -> list[str]:
        """Return the names of the checks that found problems."""
        return [name for name, found in self.problems.items() if found]

    def __str__(self) -> str:
        lines = [f"conformance of language plugin {self.plugin!r}:"]
        for name, found in self.problems.items():
            # a check whose live half was skipped still ran its static half: one line says both
            skipped = f", part skipped ({self.skipped[name]})" if name in self.skipped else ""
            lines.append(f"  {name}: {'ok' if not found else 'FAILED'}{skipped}")
            lines.extend(f"    - {problem}" for problem in found)
        for name, reason in self.skipped.items():
            if name not in self.problems:
                lines.append(f"  {name}: skipped ({reason})")
        return "\n".join(lines)

    def raise_if_failed(self) -> None:
        """Raise :class:`PluginConformanceError` listing every problem, if any check failed."""
        if not self.ok:
            raise PluginConformanceError(str(self))


#: the checks, in the order they run (``check_<name>`` in :mod:`.checks`, ``runner`` in :mod:`.runner_check`)
CHECKS: tuple[str, ...] = (
    "identity", "registration", "grammar", "node_types", "tokens", "robustness", "decomposition",
    "definition_fields", "runner",
)


def check_plugin(
    plugin: LanguagePlugin,
    samples: Sequence[str],
    *,
    expected_tokens: Mapping[int, Sequence[str]] | None = None,
    expected_kinds: set[SubCodeKind] | None = None,
    runner_cases: Sequence[RunnerCase] = (),
    checks: Sequence[str] = CHECKS,
    execute: bool = True,
    timeout_s: float = 60.0,
    executor: str = "auto",
) -> ConformanceReport:
    """Run the conformance checks on ``plugin`` and return a report (never raises for a bad plugin).

    Args:
        plugin: the plugin instance to check.
        samples: valid source files of the language; together they should contain every
            construct of the decomposition map and some identifiers and literals.
        expected_tokens: sample index -> the exact token list ``tokens()`` must return.
        expected_kinds: the sub-code kinds the samples contain (default: every mapped kind).
        runner_cases: programs with tests for the runner, at least one passing and one failing.
        checks: which checks to run (names from :data:`CHECKS`).
        execute: build and run ``runner_cases`` when the toolchain is installed.
        timeout_s: limit for each of those runs (build and run), in seconds.
        executor: ``"auto"``, ``"sandbox"`` or ``"unsandboxed"`` (see :func:`check_runner`).

    Returns:
        :class:`ConformanceReport`; call ``raise_if_failed()`` in a test.

    Raises:
        ValueError: an unknown check name.
    """
    unknown = set(checks) - set(CHECKS)
    if unknown:
        raise ValueError(f"unknown conformance checks {sorted(unknown)}; known: {', '.join(CHECKS)}")
    samples = list(samples)
    runs: dict[str, Callable[[], list[str]]] = {
        "identity": lambda: plugin_checks.check_identity(plugin),
        "registration": lambda: plugin_checks.check_registration(plugin),
        "grammar": lambda: plugin_checks.check_grammar(plugin, samples),
        "node_types": lambda: plugin_checks.check_node_types(plugin),
        "tokens": lambda: plugin_checks.check_tokens(plugin, samples, expected_tokens),
        "robustness": lambda: plugin_checks.check_robustness(plugin, samples),
        "decomposition": lambda: plugin_checks.check_decomposition(plugin, samples, expected_kinds),
        "definition_fields": lambda: plugin_checks.check_definition_fields(plugin, samples),
    }
    report = ConformanceReport(plugin=str(plugin.name))
    # a grammar that does not load, or another language's, is one sentence in each check that needs it
    blocker = plugin_checks.grammar_blocker(plugin) if set(checks) & set(plugin_checks.GRAMMAR_CHECKS) else None
    for name in CHECKS:
        if name not in checks:
            continue
        if name == "runner":
            problems, skipped = check_runner(plugin, runner_cases, execute=execute, timeout_s=timeout_s,
                                             executor=executor)
            report.problems[name] = problems
            if skipped:
                report.skipped[name] = skipped
            continue
        if blocker is not None and name in plugin_checks.GRAMMAR_CHECKS:
            report.problems[name] = [blocker]
            continue
        try:
            report.problems[name] = runs[name]()
        except Exception as error:  # noqa: BLE001 - a crashing check is a finding, not a kit crash
            report.problems[name] = [f"check crashed: {type(error).__name__}: {error}"]
    return report
