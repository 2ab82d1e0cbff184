"""The ``workbench`` command line. This package only parses options and prints; the work
lives in the library modules. Each sub-command is one module here that registers itself
on :data:`app`."""

from __future__ import annotations

import sys

from workbench.cli.interrupts import (
    ctrl_c_while_starting,
    end_sigterm_as_ctrl_c,
    exit_status_of,
    interrupted_status,
    interrupted_word,
    keep_status_on_late_ctrl_c,
    started_as_command,
)

if started_as_command():  # SIGTERM (SLURM, `timeout`) is a Ctrl-C from the start, exit status 143
    end_sigterm_as_ctrl_c()

# the command modules take a second or more to import: a Ctrl-C meanwhile is the command's too
with ctrl_c_while_starting():
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

    SIGTERM ends a command as Ctrl-C does, with exit status 143 (:func:`end_sigterm_as_ctrl_c`).

    Raises:
        SystemExit: always (typer's standalone mode), with the command's exit status (130 for a
            ``KeyboardInterrupt`` that got past typer, 143 after SIGTERM); a Ctrl-C after that keeps it
            (:func:`keep_status_on_late_ctrl_c`).
    """
    end_sigterm_as_ctrl_c()
    try:
        app()
    except SystemExit as stop:
        keep_status_on_late_ctrl_c(exit_status_of(stop))
        if stop.code is None or isinstance(stop.code, int):  # a message code is printed by Python's own exit
            from workbench.llm.deadline import exit_past_abandoned_calls

            exit_past_abandoned_calls(exit_status_of(stop))
        raise
    except KeyboardInterrupt:  # a second Ctrl-C while typer/click unwind from the command's exit
        status = interrupted_status()
        keep_status_on_late_ctrl_c(status)
        print(f"{interrupted_word()}: workbench stopped (exit status {status})", file=sys.stderr)
        raise SystemExit(status) from None


__all__ = ["app", "main"]
