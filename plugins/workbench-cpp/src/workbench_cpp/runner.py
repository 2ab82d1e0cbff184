"""Compile and run MultiPL-E-style C++ tests with g++.

MultiPL-E's C++ harness (Cassano et al., "MultiPL-E", IEEE TSE 2023, Sec. III-B and its
``eval_cpp.py``: ``g++ -std=c++17``, pass = exit status 0) is appended after
``prompt + completion``: it closes the function and defines ``int main()`` full of
``assert`` calls. Reading only the exit status would let a candidate that calls
``exit(0)`` pass, so we rename the harness's ``main`` to ``workbench_tests_main`` (adding
the ``return 0;`` that ``main`` has implicitly, [basic.start.main]/5) and link a ``main``
of our own, from a second translation unit, that calls it and only then writes the per-run
token, which it read from the sandbox's pipe before any candidate code ran (the protocol of
:class:`workbench.languages.spec.RunSpec`).

The tests' ``assert`` is ours too: right before the harness, ``assert`` (and every name our
macro uses) is undefined and redefined, so a candidate's ``#define NDEBUG`` or ``#undef
assert`` cannot switch the checks off, and a failed check exits with
:data:`CHECK_FAILED_EXIT` after printing the expression (status ``failed``), where glibc's
``assert`` would ``abort()`` (``SIGABRT``, which is ``killed``, like any crash).

The tests must not be readable from the sample's working folder once candidate code runs (a
candidate that opened ``program.cpp``, or the binary, which holds each check's text for the
report, and answered every check passed): the build's last command removes the sources, and the
token reader removes the binary's file. The running program's own image (``/proc/self/exe``, its
memory) still holds the compiled tests: see the README, "What deliberately cheating code can do".
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from workbench.languages.spec import RunSpec, TestRunner

SOURCE_FILE = "program.cpp"
#: our ``main``, the token reader and the check-failure report: a translation unit of their
#: own, so no macro or declaration of the candidate reaches them
WRAPPER_FILE = "workbench_main.cpp"
BINARY = "program"
TESTS_MAIN = "workbench_tests_main"
#: fds of the token protocol in the child (see workbench.languages.spec.RunSpec)
TOKEN_INPUT_FD = 3
PASS_TOKEN_FD = 4
#: exit status after a failed check of the tests (their ``assert``): the sample ``failed``
CHECK_FAILED_EXIT = 90
#: exit status after an exception escaped the tests: an ``error``, as in the Python runner
UNCAUGHT_EXCEPTION_EXIT = 91
EXIT_STATUSES = {CHECK_FAILED_EXIT: "failed", UNCAUGHT_EXCEPTION_EXIT: "error"}

# Inserted between the candidate's code and the harness (preprocessing directives may stand
# anywhere, even inside the function the harness closes). Every name the macro uses is
# undefined first, so a candidate's macros cannot reach into it; the report function is
# declared inside the macro (no name at namespace scope to preempt) and has a random name per
# sample, so a candidate cannot define it (or a static function it would bind to) beforehand.
# The tests' own names (``candidate``, the function under test, ``std::vector``'s ``==``)
# stay within the candidate's reach: see the README, "What deliberately cheating code can do".
_CHECKS_TEMPLATE = """\
#undef NDEBUG
#undef assert
#undef {tests_main}
#undef {report}
#undef static_cast
#undef bool
#undef void
#undef const
#undef char
#define assert(expression) (static_cast<bool>(expression) ? void(0) : [] {{ void {report}(const char*); {report}(#expression); }}())
"""

# The token is read by a constructor of priority 101, which runs before every default-priority
# static initialiser (GCC, "constructor (priority)"), so ordinary candidate code never sees the
# token pipe; the buffer lives in this translation unit, so the candidate cannot name it. The same
# constructor removes the program's file from the working folder.
# Code written to cheat can still run first (a constructor of priority 0-100, .preinit_array,
# an ifunc resolver) or read the process's memory: see the README.
_WRAPPER_TEMPLATE = """\
#include <cstdio>
#include <cstdlib>
#include <cxxabi.h>
#include <exception>
#include <typeinfo>
#include <unistd.h>

int {tests_main}({parameters});

static char workbench_token[256];
static long workbench_token_length = 0;

__attribute__((constructor(101))) static void workbench_read_token() {{
    long got;
    while (workbench_token_length < (long)sizeof workbench_token
           && (got = read({token_in}, workbench_token + workbench_token_length,
                          sizeof workbench_token - workbench_token_length)) > 0) {{
        workbench_token_length += got;
    }}
    close({token_in});
    // the program's own file holds each check's text (and the tests' literals): no file of the
    // working folder may hold the tests once candidate code runs (the build removed the sources)
    unlink("{binary}");
}}

// called by the tests' assert when a check fails; the last stderr line says which
void {report}(const char* expression) {{
    std::fprintf(stderr, "workbench: assertion failed: %s\\n", expression);
    std::fflush(stderr);
    _exit({check_failed});
}}

// glibc's assert calls this: a failed assert the candidate's own code (or a harness that
// includes <cassert> again) makes is a failed check too, not a SIGABRT
extern "C" void __assert_fail(const char* expression, const char* file, unsigned int line,
                              const char* function) noexcept {{
    (void)file; (void)line;
    std::fprintf(stderr, "workbench: assertion failed: %s%s%s\\n", expression, function ? " in " : "",
                 function ? function : "");
    std::fflush(stderr);
    _exit({check_failed});
}}

[[noreturn]] static void workbench_uncaught(const char* type, const char* what) {{
    int demangled_status = 0;
    char* demangled = type ? abi::__cxa_demangle(type, nullptr, nullptr, &demangled_status) : nullptr;
    std::fprintf(stderr, "workbench: uncaught exception %s%s%s\\n", demangled ? demangled : (type ? type : "of unknown type"),
                 what ? ": " : "", what ? what : "");
    std::fflush(stderr);
    _exit({uncaught});
}}

int main(int argc, char** argv) {{
    (void)argc; (void)argv;
    int status = 1;
    try {{
        status = {tests_main}({arguments});
    }} catch (const std::exception& error) {{
        workbench_uncaught(typeid(error).name(), error.what());
    }} catch (...) {{
        std::type_info* type = abi::__cxa_current_exception_type();
        workbench_uncaught(type ? type->name() : nullptr, nullptr);
    }}
    if (status != 0) return status;
    long written = 0, put;
    while (written < workbench_token_length
           && (put = write({token_out}, workbench_token + written, workbench_token_length - written)) > 0) {{
        written += put;
    }}
    return written == workbench_token_length ? 0 : 4;
}}
"""


def rename_tests_main(tests: str) -> tuple[str, bool]:
    """Rename the test harness's ``main`` to :data:`TESTS_MAIN` and give it ``return 0;``.

    The harness is parsed with the tree-sitter C++ grammar (it starts with the ``}`` that
    closes the candidate's function; the grammar recovers from that).

    Args:
        tests: the MultiPL-E C++ test harness.

    Returns:
        (rewritten harness, whether its ``main`` takes parameters).

    Raises:
        ValueError: the harness defines no ``main`` function.
    """
    import tree_sitter
    import tree_sitter_cpp

    data = tests.encode("utf-8")
    tree = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cpp.language())).parse(data)
    for node in tree.root_node.children:
        if node.type != "function_definition":
            continue
        declarator = node.child_by_field_name("declarator")
        name = declarator.child_by_field_name("declarator") if declarator is not None else None
        body = node.child_by_field_name("body")
        if name is None or body is None or name.text != b"main":
            continue
        parameters = declarator.child_by_field_name("parameters")
        takes_arguments = parameters is not None and parameters.named_child_count > 0
        close = body.end_byte - 1  # the body's closing brace
        rewritten = (
            data[: name.start_byte]
            + TESTS_MAIN.encode()
            + data[name.end_byte : close]
            + b"    return 0;\n"
            + data[close:]
        )
        return rewritten.decode("utf-8"), takes_arguments
    raise ValueError("the C++ test harness defines no main() function; cannot wrap it to report a pass token")


# ``#include <bits/stdc++.h>`` preceded by nothing but other #include lines and blank lines
_LEADING_STDCXX_INCLUDE = re.compile(r"\A(?:[ \t]*(?:#[ \t]*include[^\n]*)?\n)*?[ \t]*#[ \t]*include[ \t]*<bits/stdc\+\+\.h>")
_STDCXX_HEADER = "bits/stdc++.h"


def build_precompiled_header(cache_dir: str | os.PathLike[str], compiler_options: Sequence[str] = ("-std=c++17",)) -> Path:
    """Precompile ``<bits/stdc++.h>`` once and return the directory to pass to :class:`CppRunner`.

    Compiling ``bits/stdc++.h`` dominates the build time of a MultiPL-E C++ program
    (about 1.0 s of 1.1 s CPU with g++ 12 here); a precompiled header cuts a build to
    about 0.25 s. The header must be built with the same options as the programs, so
    the directory is keyed by the g++ version and the options. Building takes a few
    seconds and about 100 MB of disk; an existing build is reused.

    Args:
        cache_dir: where to keep precompiled headers.
        compiler_options: the options the programs will be compiled with.

    Returns:
        a directory holding ``bits/stdc++.h.gch`` and a link to the real header.

    Raises:
        RuntimeError: g++ is missing or cannot precompile the header.
    """
    compiler = shutil.which("g++")
    if compiler is None:
        raise RuntimeError("g++ not found on PATH")
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True, check=True).stdout
    key = hashlib.sha256((version + "\0" + "\0".join(compiler_options)).encode()).hexdigest()[:16]
    directory = Path(cache_dir) / f"stdcxx-{key}"
    gch = directory / (_STDCXX_HEADER + ".gch")
    if gch.is_file():
        return directory
    probe = subprocess.run([compiler, *compiler_options, "-x", "c++", "-E", "-H", "-"], input="#include <bits/stdc++.h>\n",
                           capture_output=True, text=True)
    header = next((line.split()[1] for line in probe.stderr.splitlines() if line.startswith(". ") and line.endswith(_STDCXX_HEADER)), None)
    if header is None:
        raise RuntimeError(f"cannot locate bits/stdc++.h with {compiler}: {probe.stderr[-300:]}")
    gch.parent.mkdir(parents=True, exist_ok=True)
    partial = gch.with_suffix(f".gch.{os.getpid()}")
    built = subprocess.run([compiler, *compiler_options, "-x", "c++-header", header, "-o", str(partial)],
                           capture_output=True, text=True)
    if built.returncode != 0:
        raise RuntimeError(f"precompiling {header} failed: {built.stderr[-500:]}")
    link = directory / _STDCXX_HEADER
    if not link.exists():
        link.symlink_to(header)  # the program's own #include must still find the (guard-free) header here
    partial.replace(gch)  # atomic: parallel builders never see half a file
    return directory


class CppRunner(TestRunner):
    """``g++`` then the binary, with a wrapper ``main`` that writes the pass token and an
    ``assert`` of its own for the tests.

    Args:
        compiler_options: options for g++ before the file names; default ``-std=c++17``
            as in MultiPL-E (no optimisation, assertions on: never add ``-DNDEBUG``).
        precompiled_header_dir: a directory from :func:`build_precompiled_header` (built
            with the same ``compiler_options``). Used only for programs that begin with
            ``#include`` lines including ``<bits/stdc++.h>`` (all MultiPL-E C++ prompts):
            for them, force-including the header first (``-include``) declares nothing
            they would not see anyway. The sandbox must let the compiler read that directory.
    """

    toolchain: ClassVar[tuple[str, ...]] = ("g++",)

    def __init__(self, compiler_options: Sequence[str] = ("-std=c++17",),
                 precompiled_header_dir: str | os.PathLike[str] | None = None):
        self.compiler_options = list(compiler_options)
        self.precompiled_header_dir = None if precompiled_header_dir is None else str(precompiled_header_dir)

    def prepare(self, program: str, tests: str, entry_point: str | None, token: str) -> RunSpec:
        """Return the RunSpec for ``program + tests`` (``entry_point`` is not needed: the tests call it).

        Files: ``program.cpp`` (the program, our ``assert``, the harness with its ``main``
        renamed) and ``workbench_main.cpp`` (our ``main``). Build: one ``g++`` command for
        both (a compile or link error is the sample's ``syntax_error``, its message quoting the
        source), then ``rm`` of both sources. Run: ``./program``; the wrapper reads the token
        from fd 3 before static initialisation, removes the program's own file (it holds each
        check's text), and writes the token to fd 4 after the harness's ``main`` returned 0: no
        file of the working folder holds the tests once candidate code runs. A failed check exits with
        :data:`CHECK_FAILED_EXIT` (``failed``), an escaped exception with
        :data:`UNCAUGHT_EXCEPTION_EXIT` (``error``); ``abort()`` and crashes stay ``killed``.
        ``token`` itself is not used: it travels over the pipe.

        Raises:
            ValueError: ``tests`` defines no ``main``.
        """
        harness, takes_arguments = rename_tests_main(tests)
        report = f"workbench_check_failed_{secrets.token_hex(8)}"
        checks = _CHECKS_TEMPLATE.format(tests_main=TESTS_MAIN, report=report)
        wrapper = _WRAPPER_TEMPLATE.format(
            tests_main=TESTS_MAIN,
            parameters="int, char**" if takes_arguments else "",
            arguments="argc, argv" if takes_arguments else "",
            report=report,
            check_failed=CHECK_FAILED_EXIT,
            uncaught=UNCAUGHT_EXCEPTION_EXIT,
            token_in=TOKEN_INPUT_FD,
            token_out=PASS_TOKEN_FD,
            binary=BINARY,
        )
        compiler = shutil.which("g++") or "g++"
        remove = shutil.which("rm") or "rm"
        options = list(self.compiler_options)
        read_only: tuple[str, ...] = ()
        if self.precompiled_header_dir is not None and _LEADING_STDCXX_INCLUDE.match(program):
            options += ["-I", self.precompiled_header_dir, "-include", _STDCXX_HEADER]
            read_only = (os.path.realpath(self.precompiled_header_dir),)
        return RunSpec(
            # MultiPL-E joins program and tests with a newline (nuprl/MultiPL-E
            # evaluation/src/main.py); without it a body ending in a // comment swallows the "}"
            files={SOURCE_FILE: program + "\n" + checks + harness, WRAPPER_FILE: wrapper},
            # the sources hold the tests: they are removed before the program runs (a compile error
            # has quoted its lines by then); the program removes its own file (the wrapper's constructor)
            build=[[compiler, *options, "-o", BINARY, SOURCE_FILE, WRAPPER_FILE],
                   [remove, "-f", "--", SOURCE_FILE, WRAPPER_FILE]],
            run=[f"./{BINARY}"],
            token_input_fd=TOKEN_INPUT_FD,
            pass_token_fd=PASS_TOKEN_FD,
            exit_statuses=EXIT_STATUSES,
            read_only_paths=read_only,
            out_of_memory_markers=("std::bad_alloc",),
        )

    def toolchain_spec(self, token: str) -> RunSpec:
        """Return the :class:`RunSpec` of a minimal MultiPL-E program (a function that includes
        ``<bits/stdc++.h>`` and a harness with an empty ``main``): the same ``g++``, binary and
        read-only paths (the precompiled header's folder, when set) as every sample. ``prepare``
        itself needs a harness with a ``main``, so the default (empty tests) would raise."""
        return self.prepare("#include <bits/stdc++.h>\nint workbench_probe() {\n    return 0;\n",
                            "}\nint main() {\n}\n", None, token)
