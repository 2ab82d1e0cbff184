"""The Python :class:`~workbench.languages.spec.TestRunner`: HumanEval-style problems
(``prompt`` + completion, a ``test`` that defines ``check(candidate)``, an ``entry_point``)
run by the harness in :mod:`workbench.languages.python_harness`."""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from importlib import resources

from workbench.languages.spec import RunSpec, TestRunner

#: the harness's variable for what ``site`` gives a program (see ``python_harness._restore_site``)
SITE_VARIABLE = "WORKBENCH_PYTHON_SITE"

#: fds of the token protocol in the child (see RunSpec)
TOKEN_INPUT_FD = 3
PASS_TOKEN_FD = 4

#: harness exit status -> sample status (see the harness docstring)
HARNESS_EXIT_STATUSES = {1: "failed", 2: "error", 3: "syntax_error", 4: "error"}

_FACTS_SCRIPT = (
    "import json, os, site, sys\n"
    "p = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)),"
    " os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}\n"
    "p.update(getattr(site, 'getsitepackages', lambda: [])())\n"
    "print(json.dumps({'folders': sorted(x for x in p if x and os.path.isdir(x)), 'prefix': sys.prefix,"
    " 'exec_prefix': sys.exec_prefix, 'path': [x for x in sys.path if x]}))\n"
)


@functools.cache
def harness_source() -> str:
    """Return the harness program's text (written into each sample's working directory)."""
    return resources.files("workbench.languages").joinpath("python_harness.py").read_text(encoding="utf-8")


@functools.cache
def _interpreter_facts(interpreter: str) -> dict:
    """What ``interpreter`` reports about itself once ``site`` ran (``-I``: no user site, no
    ``PYTHON*`` variables, no current directory on the path, as in the sandbox)."""
    try:
        done = subprocess.run([interpreter, "-I", "-c", _FACTS_SCRIPT], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        raise RuntimeError(f"cannot run the Python interpreter {interpreter!r}: {error}") from error
    if done.returncode != 0:
        said = done.stderr.strip()[-300:] or f"it exited with status {done.returncode} and printed nothing on stderr"
        raise RuntimeError(f"cannot run the Python interpreter {interpreter!r}: {said}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise RuntimeError(f"{interpreter!r} does not behave like a Python interpreter: `{interpreter} -I -c ...` printed "
                           f"{done.stdout.strip()[:80]!r} where a JSON line was expected") from None


def interpreter_paths(interpreter: str) -> tuple[str, ...]:
    """Return the folders ``interpreter`` needs (its prefixes and site-packages), which the
    sandbox re-exposes read-only when they lie under a hidden folder (a venv in the home).

    Raises:
        RuntimeError: the interpreter cannot be started.
    """
    return tuple(_interpreter_facts(interpreter)["folders"])


def site_facts(interpreter: str) -> str | None:
    """Return what ``site`` gives a program of ``interpreter``, as the harness's
    ``WORKBENCH_PYTHON_SITE`` value (lines: ``sys.prefix``, ``sys.exec_prefix``, then the
    ``sys.path`` entries), or ``None`` when a path holds a line break (``site`` then runs in
    each sample, as it normally does).

    Raises:
        RuntimeError: the interpreter cannot be started.
    """
    facts = _interpreter_facts(interpreter)
    lines = [facts["prefix"], facts["exec_prefix"], *facts["path"]]
    if any("\n" in line or "\0" in line for line in lines):
        return None
    return "\n".join(lines)


def _defines_uncalled_check(tests: str) -> bool:
    """True when ``tests`` define a top-level ``check`` that no line of them uses (HumanEval's
    layout, where the harness calls ``check(entry_point)``), unlike MultiPL-E's, whose
    ``test_check()`` calls it. Tests that do not parse are left to the harness to report."""
    try:
        tree = ast.parse(tests)
    except (SyntaxError, ValueError):
        return False
    defined = any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "check" for node in tree.body)
    used = any(isinstance(node, ast.Name) and node.id == "check" and isinstance(node.ctx, ast.Load) for node in ast.walk(tree))
    return defined and not used


class PythonTestRunner(TestRunner):
    """Runs a Python program against HumanEval-style tests.

    The program is ``prompt + completion`` (``--mode completion``) or the completion alone
    (``--mode full``); the tests are exec'd after it and ``check(<entry_point>)`` is called
    when they define ``check``, as in HumanEval (Chen et al. 2021, the ``test`` field);
    tests that call their checks themselves (MultiPL-E's ``test_check()``) also work, and
    need no entry point. Tests that only define ``check`` are refused without one.

    Args:
        interpreter: the Python that runs samples (default: the one running workbench, so
            samples see the same installed packages, e.g. numpy).
    """

    def __init__(self, interpreter: str | None = None):
        self.interpreter = interpreter or sys.executable

    @property
    def toolchain(self) -> tuple[str, ...]:  # type: ignore[override]
        return (self.interpreter,)

    def prepare(self, program: str, tests: str, entry_point: str | None, token: str) -> RunSpec:
        """Return the :class:`RunSpec`; the token travels over fd 3, never in a file.

        Raises:
            ValueError: no ``entry_point`` while ``tests`` define ``check`` and never call it
                (HumanEval's layout): nothing would check the program, so it would pass.
        """
        if not entry_point and _defines_uncalled_check(tests):
            raise ValueError(
                "the tests define check(candidate) but never call it, and no entry point names the function "
                "to pass to it (set the problems' entry point column)"
            )
        site = site_facts(self.interpreter)
        # -S: the harness restores what site would give (measured once, see site_facts), which
        # spares each sample the .pth processing; not -I: it would also ignore PYTHONHASHSEED,
        # and the environment is ours alone anyway
        flags = ["-S", "-s", "-B"] if site is not None else ["-s", "-B"]
        return RunSpec(
            files={"harness.py": harness_source(), "program.py": program, "tests.py": tests},
            run=[
                self.interpreter, *flags, "harness.py",
                str(TOKEN_INPUT_FD), str(PASS_TOKEN_FD), "program.py", "tests.py", entry_point or "",
            ],
            env={
                **({SITE_VARIABLE: site} if site is not None else {}),
                "PYTHONIOENCODING": "utf-8",
                "PYTHONHASHSEED": "0",  # set/dict order of str keys is the same on every run
                "PYTHONSAFEPATH": "1",  # the working directory is not on sys.path
                "PYTHONDONTWRITEBYTECODE": "1",
                # one BLAS/OpenMP thread: threads count against the process limit
                "OPENBLAS_NUM_THREADS": "1",
                "OMP_NUM_THREADS": "1",
                "MKL_NUM_THREADS": "1",
            },
            token_input_fd=TOKEN_INPUT_FD,
            pass_token_fd=PASS_TOKEN_FD,
            exit_statuses=HARNESS_EXIT_STATUSES,
            read_only_paths=interpreter_paths(self.interpreter),
            out_of_memory_markers=("MemoryError",),
            # the harness may run in a forked, pre-started interpreter (it ends with os._exit)
            python_main="harness.py",
        )
