"""The check ``workbench execute`` makes before any sample runs (``_preflight``: the sandbox's user
can reach the runner's toolchain), for every installed runner: it once prepared an empty test
harness, which a runner that rewrites its harness (one that renames the harness's ``main``)
refuses, so ``execute`` with that language stopped before its first sample."""

from __future__ import annotations

import pytest

from workbench.execute.job import ExecutionConfig, check_sandbox
from workbench.languages.registry import installed_plugins
from workbench.languages.spec import RunSpec, TestRunner
from workbench.errors import WorkbenchError

RUNNER_LANGUAGES = [info.plugin.name for info in installed_plugins() if info.plugin.runner is not None]


@pytest.mark.parametrize("language", RUNNER_LANGUAGES)
def test_preflight_passes_for_every_installed_runner(language):
    runner = next(info.plugin.runner for info in installed_plugins() if info.plugin.name == language)
    assert isinstance(runner.toolchain_spec("0" * 32), RunSpec)
    if runner.missing_toolchain():
        pytest.skip(f"the {language} runner's toolchain is missing here: {runner.missing_toolchain()}")
    assert check_sandbox(ExecutionConfig(language=language)).level is not None


class _HarnessOnlyRunner(TestRunner):
    """A runner whose ``prepare`` needs real tests, and which says so in ``toolchain_spec``."""

    toolchain = ("/bin/sh",)

    def prepare(self, program, tests, entry_point, token):
        if "main" not in tests:
            raise ValueError("the tests define no main")
        return RunSpec(files={"t.sh": tests}, run=["/bin/sh", "t.sh"], token_input_fd=3, pass_token_fd=4)

    def toolchain_spec(self, token):
        return self.prepare("", "main", None, token)


class _BrokenRunner(_HarnessOnlyRunner):
    def toolchain_spec(self, token):
        raise RuntimeError("no idea")


def test_preflight_uses_the_runners_toolchain_spec_and_names_a_broken_one():
    from workbench.execute.job import _preflight
    from workbench.execute.sandbox_helpers import sandbox_for

    _preflight(_HarnessOnlyRunner(), sandbox_for())  # prepare("", "", ...) would raise here
    with pytest.raises(WorkbenchError, match=r"_BrokenRunner cannot describe its toolchain .*RuntimeError: no idea"):
        _preflight(_BrokenRunner(), sandbox_for())
