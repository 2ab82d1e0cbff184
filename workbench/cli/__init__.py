"""The ``workbench`` command line. This package only parses options and prints; the work
lives in the library modules. Each sub-command is one module here that registers itself
on :data:`app`."""

from __future__ import annotations

from workbench.cli.app import app

# Importing a command module registers its command(s) on ``app``.
from workbench.cli import bias  # noqa: E402,F401
from workbench.cli import correlate  # noqa: E402,F401
from workbench.cli import dedup  # noqa: E402,F401
from workbench.cli import execute  # noqa: E402,F401
from workbench.cli import languages  # noqa: E402,F401
from workbench.cli import score  # noqa: E402,F401
from workbench.cli import models  # noqa: E402,F401
from workbench.cli import run  # noqa: E402,F401
from workbench.cli import report  # noqa: E402,F401


def main() -> None:
    """Entry point of the ``workbench`` console script.

    The command's exit status is kept even when an LLM call it gave up on still runs
    (:func:`workbench.llm.deadline.exit_past_abandoned_calls`).
    """
    try:
        app()
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            from workbench.llm.deadline import exit_past_abandoned_calls

            exit_past_abandoned_calls(done.code or 0)
        raise


__all__ = ["app", "main"]
