"""A Ctrl-C outside a command's own handling must still end ``workbench`` with exit status 130, or
keep the status it had decided (docs/exit-status.md), never kill it by the signal (a Python caller
sees return code -2) nor print a traceback: while the command line imports its command modules, and
while the interpreter shuts down after the command finished or said ``Interrupted`` (a second
Ctrl-C; Python gives SIGINT back its default action late in its shutdown).

Real subprocesses running the real console entry point (``workbench.cli:main``); the SIGINT is sent
by the process to itself at a hooked moment: the import of a command module (a meta-path finder),
an exit function (atexit), or the teardown of the heap (``__del__`` of a global of ``__main__``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

#: sends SIGINT to this process when ``workbench.cli.score`` is imported (while ``workbench.cli``
#: starts) and, with ``{again}``, again as the interpreter tears down its modules
_CTRL_C_WHILE_STARTING = """
import os, signal, sys

class CtrlCOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == "workbench.cli.score":
            os.kill(os.getpid(), signal.SIGINT)
        return None

class CtrlCAtTeardown:
    def __del__(self, kill=os.kill, pid=os.getpid(), sigint=signal.SIGINT):  # the module's names may be gone
        kill(pid, sigint)

if {again!r}:
    bomb = CtrlCAtTeardown()
sys.meta_path.insert(0, CtrlCOnImport())
from workbench.cli import main
main()
"""

#: a driver of ``main()``; ``{moment}`` is where the (second) Ctrl-C comes once the command ended
_CTRL_C_AFTER_THE_COMMAND = """
import atexit, os, signal, sys

class CtrlCAtTeardown:
    def __del__(self, kill=os.kill, pid=os.getpid(), sigint=signal.SIGINT):  # the module's names may be gone
        kill(pid, sigint)

if {moment!r} == "teardown":  # a global of __main__: deleted as the interpreter tears down its modules
    bomb = CtrlCAtTeardown()

from workbench.cli import main

if {moment!r} == "exit functions":
    atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))
if {interrupted!r}:  # the command's own Ctrl-C, while it prints its report: it says Interrupted, 130
    import workbench.cli.dedup as dedup_cli

    def print_run(*args, **kwargs):
        raise KeyboardInterrupt

    dedup_cli.print_run = print_run
main()
"""


def _run(script: Path, *args: str) -> subprocess.CompletedProcess:
    # a child inherits an ignored SIGINT from a background shell: restore the default, as a terminal has
    return subprocess.run([sys.executable, str(script), *args], check=False, capture_output=True, text=True,
                          timeout=300, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def _corpus(path: Path) -> Path:
    rows = [{"id": f"r{i}", "content": f"def f{i}(x):\n    return x + {i} * {i + 1} - g(x, {i})\n"} for i in range(4)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.mark.parametrize("again", [False, True], ids=["once", "again while exiting"])
def test_ctrl_c_while_the_command_line_starts_exits_130_with_one_line(tmp_path, again):
    script = tmp_path / "workbench"  # the console script's name: this process is the `workbench` command
    script.write_text(_CTRL_C_WHILE_STARTING.format(again=again))
    done = _run(script, "languages")
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert "Interrupted: workbench stopped while it started, before it did anything (exit status 130)" in done.stderr


def test_ctrl_c_while_another_program_imports_the_command_line_is_its_own(tmp_path):
    script = tmp_path / "program.py"  # not the `workbench` command: the KeyboardInterrupt goes on as it came
    script.write_text(_CTRL_C_WHILE_STARTING.format(again=False))
    done = _run(script, "languages")
    assert done.returncode == -signal.SIGINT, (done.returncode, done.stderr)
    assert "KeyboardInterrupt" in done.stderr and "Interrupted: workbench" not in done.stderr


@pytest.mark.parametrize("moment", ["exit functions", "teardown"])
def test_ctrl_c_after_a_finished_command_keeps_its_status(tmp_path, moment):
    script = tmp_path / "workbench"
    script.write_text(_CTRL_C_AFTER_THE_COMMAND.format(moment=moment, interrupted=False))
    done = _run(script, "languages", "--help")
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "Usage: workbench languages" in done.stdout
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr


@pytest.mark.parametrize("moment", ["exit functions", "teardown"])
def test_a_second_ctrl_c_after_interrupted_keeps_130(tmp_path, moment):
    script = tmp_path / "workbench"
    script.write_text(_CTRL_C_AFTER_THE_COMMAND.format(moment=moment, interrupted=True))
    out = tmp_path / "out"
    done = _run(script, "dedup", str(_corpus(tmp_path / "c.jsonl")), "-o", str(out), "--no-progress", "--workers", "1")
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert f"outputs are complete and in place in -o {out}" in done.stderr
    assert "Traceback" not in done.stderr and "KeyboardInterrupt" not in done.stderr, done.stderr
    assert (out / "report.json").is_file() and (out / "manifest.json").is_file()


def test_ctrl_c_twice_while_an_exit_hangs_ends_it_at_once_with_the_status(tmp_path):
    script = tmp_path / "workbench"
    script.write_text(textwrap.dedent("""
        import atexit, os, signal, time
        from workbench.cli import main

        def hangs():  # an exit function that waits long (a worker thread still running, say)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(120)

        atexit.register(hangs)
        main()
    """))
    started = time.monotonic()
    done = _run(script, "languages", "--help")
    assert time.monotonic() - started < 60
    assert done.returncode == 0, (done.returncode, done.stderr)
    assert "workbench is ending (exit status 0); Ctrl-C again to end it at once" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_ctrl_c_past_typer_exits_130(tmp_path):
    """A second Ctrl-C while typer and click unwind from the command's exit reaches main() itself."""
    script = tmp_path / "workbench"
    script.write_text(textwrap.dedent("""
        import workbench.cli

        def app():  # the KeyboardInterrupt as it would come once click handled the command's exit
            raise KeyboardInterrupt

        workbench.cli.app = app
        workbench.cli.main()
    """))
    done = _run(script)
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert "Interrupted: workbench stopped (exit status 130)" in done.stderr and "Traceback" not in done.stderr


def test_the_driver_reaches_the_teardown(tmp_path):
    """The hook of the tests above works: without the command line, a Ctrl-C at teardown kills."""
    script = tmp_path / "plain.py"
    script.write_text(textwrap.dedent("""
        import os, signal

        class CtrlCAtTeardown:
            def __del__(self, kill=os.kill, pid=os.getpid(), sigint=signal.SIGINT):
                kill(pid, sigint)

        bomb = CtrlCAtTeardown()
    """))
    assert _run(script).returncode == -signal.SIGINT
