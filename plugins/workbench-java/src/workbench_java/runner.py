"""Compile and run MultiPL-E-style Java tests with the machine's JDK.

MultiPL-E's Java harness (Cassano et al., "MultiPL-E", IEEE TSE 2023, Sec. III-B and its
``eval_java.py``) is appended after ``prompt + completion``: it closes the method, adds a
``main`` full of ``assert`` statements to the problem class and closes the class. The
original harness reads pass/fail from the exit status of ``java -ea``; we add a wrapper
class instead, whose ``main`` reads the per-run token from the sandbox's pipe, calls the
tests and only then writes the token back on the pass pipe (the protocol of
:class:`workbench.languages.spec.RunSpec`), so a candidate that calls ``System.exit(0)``
or prints a fake marker cannot pass.

The wrapper lives in a package of its own (:data:`HARNESS_PACKAGE`): a class of the unnamed
package, where the candidate's classes are, can shadow ``Runtime`` (or obscure ``java``) for
code in that package, never in another. From there it reaches the tests by reflection. Their
``main`` is renamed to a name drawn per sample (:func:`rename_tests_main`), looked up in the
class the grammar places it in (:func:`find_main_class`): where the grammar misreads the
candidate's code (a Unicode escape, which javac translates and the grammar does not), the
lookup fails (an ``error``) instead of calling another ``main``.

The tests' ``assert`` statements are rewritten into ``if (!(...)) throw new
java.lang.AssertionError(...)``: an ``assert`` is skipped whenever its class's synthetic
``$assertionsDisabled`` flag is set, and the tests live in the candidate's class, whose flag
the candidate can set (``sun.misc.Unsafe``); a plain ``if`` runs whatever the flag says. The
wrapper reports what failed on the last line of stderr (``detail``): the check's expression,
or the exception that escaped the tests, with its line in ``Problem.java``.

The tests must not be readable from the sample's working folder once candidate code runs (a
candidate that opened ``Problem.java``, or ``Problem.class``, whose constants hold each check's
text, and answered every check passed): before it loads the tested class for real, the wrapper
loads every class compiled there without initialising it (no candidate code runs) and removes
every file of the folder. The JVM's memory still holds the loaded tests: see the README, "What
deliberately cheating code can do".
"""

from __future__ import annotations

import functools
import hashlib
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from workbench.languages.spec import RunSpec, TestRunner

#: where Debian's ``libjavatuples-java`` puts the jar the MultiPL-E prompts import
DEFAULT_CLASSPATH: tuple[str, ...] = ("/usr/share/java/javatuples.jar",)
#: environment variable with extra class-path entries (``os.pathsep``-separated)
CLASSPATH_ENV = "WORKBENCH_JAVA_CLASSPATH"

PROGRAM_FILE = "Problem.java"
HARNESS_CLASS = "WorkbenchHarness"
#: the wrapper's package: no type of the unnamed package (the candidate's) is in scope there
HARNESS_PACKAGE = "workbench_harness"

#: fds of the token protocol in the child (see workbench.languages.spec.RunSpec)
TOKEN_INPUT_FD = 3
PASS_TOKEN_FD = 4
#: exit status of the wrapper when ``java`` runs without ``-ea``, or assertions of the tested
#: class were switched off while the tests ran
ASSERTIONS_DISABLED_EXIT = 3
#: exit status after a failed check (an ``AssertionError``): the sample ``failed``
CHECK_FAILED_EXIT = 90
#: exit status after any other exception or error escaped the tests: an ``error``, as in the
#: Python runner (an ``OutOfMemoryError`` is ``oom`` by its marker)
UNCAUGHT_EXCEPTION_EXIT = 91
EXIT_STATUSES = {ASSERTIONS_DISABLED_EXIT: "error", CHECK_FAILED_EXIT: "failed", UNCAUGHT_EXCEPTION_EXIT: "error"}

# Assertions must be on, or the candidate's own ``assert`` statements are skipped (the tests'
# are rewritten into plain checks, see unconditional_checks). The token is read from its pipe
# before the problem class is even loaded (so no static initialiser of candidate code runs
# first), kept in a local variable, and written to the pass pipe only after the problem's main
# returned. The tests are found and called by reflection (this package cannot name a class of the
# unnamed package). The inherited fds are used directly (a FileDescriptor set by reflection, hence
# ``--add-opens java.base/java.io``): re-opening /dev/fd/N is refused when the sandbox runs the
# sample under another user id than the one that created the pipes. Whatever escapes the tests
# ends the JVM with halt() (no shutdown hook of the candidate runs) after one last stderr line
# that says what failed: `detail` quotes it.
_HARNESS_TEMPLATE = """\
package {package};

public final class {harness} {{
    private static java.io.FileDescriptor inherited(int number) throws ReflectiveOperationException {{
        java.io.FileDescriptor descriptor = new java.io.FileDescriptor();
        java.lang.reflect.Field field = java.io.FileDescriptor.class.getDeclaredField("fd");
        field.setAccessible(true);
        field.setInt(descriptor, number);
        return descriptor;
    }}

    public static void main(String[] args) throws Throwable {{
        boolean assertionsEnabled = false;
        assert assertionsEnabled = true;
        if (!assertionsEnabled) {{
            System.err.println("workbench: run with java -ea, assertions are disabled");
            System.exit({assertions_exit});
        }}
        java.io.ByteArrayOutputStream token = new java.io.ByteArrayOutputStream();
        try (java.io.FileInputStream in = new java.io.FileInputStream(inherited({token_in}))) {{
            byte[] buffer = new byte[256];
            for (int got; (got = in.read(buffer)) > 0; ) {{
                token.write(buffer, 0, got);
            }}
        }}
        java.io.FileOutputStream out = new java.io.FileOutputStream(inherited({token_out}));
        try {{
            loadClassesAndRemoveFiles();
        }} catch (Throwable thrown) {{
            System.err.println("workbench: could not remove the tests' files from the working folder: " + thrown);
            System.err.flush();
            Runtime.getRuntime().halt({uncaught});
        }}
        Class<?> tested = null;
        try {{
            tested = Class.forName("{main_class}");
            java.lang.reflect.Method tests = tested.getDeclaredMethod("{tests_main}", String[].class);
            tests.setAccessible(true);
            tests.invoke(null, (Object) args);
        }} catch (java.lang.reflect.InvocationTargetException thrown) {{
            fail(thrown.getCause());
        }} catch (Throwable thrown) {{  // also: no such class or method, where the grammar misread the program
            fail(thrown);
        }}
        if (assertionsSwitchedOff(tested)) {{
            System.err.println("workbench: assertions of {main_class} were switched off while the tests ran");
            System.err.flush();
            Runtime.getRuntime().halt({assertions_exit});
        }}
        token.writeTo(out);
        out.close();
    }}

    // Every class compiled into the working folder is loaded, not initialised (no candidate code
    // runs), and then every file there is removed: no file the candidate can open holds the tests
    // (Problem.java, or Problem.class, whose constants hold each check's text as its message).
    private static void loadClassesAndRemoveFiles() throws java.io.IOException {{
        java.nio.file.Path folder = java.nio.file.Paths.get("").toAbsolutePath();
        java.util.List<java.nio.file.Path> files = new java.util.ArrayList<>();
        try (java.util.stream.Stream<java.nio.file.Path> found = java.nio.file.Files.walk(folder)) {{
            found.filter(path -> !java.nio.file.Files.isDirectory(path, java.nio.file.LinkOption.NOFOLLOW_LINKS))
                 .forEach(files::add);
        }}
        ClassLoader loader = {harness}.class.getClassLoader();
        for (java.nio.file.Path file : files) {{
            String name = folder.relativize(file).toString();
            if (name.endsWith(".class")) {{
                String binaryName = name.substring(0, name.length() - ".class".length())
                                        .replace(java.io.File.separatorChar, '.');
                try {{
                    Class.forName(binaryName, false, loader);
                }} catch (ClassNotFoundException | LinkageError unloadable) {{
                    // not a class of this name: its use fails as it would have
                }}
            }}
        }}
        for (java.nio.file.Path file : files) {{
            java.nio.file.Files.delete(file);
        }}
    }}

    // the candidate's own assert statements obey this flag (javac's $assertionsDisabled)
    private static boolean assertionsSwitchedOff(Class<?> tested) {{
        if (!tested.desiredAssertionStatus()) {{
            return true;
        }}
        try {{
            java.lang.reflect.Field flag = tested.getDeclaredField("$assertionsDisabled");
            flag.setAccessible(true);
            return flag.getBoolean(null);
        }} catch (NoSuchFieldException absent) {{
            return false;
        }} catch (ReflectiveOperationException | RuntimeException unreadable) {{
            return true;
        }}
    }}

    // the frame of the tests' (renamed) main that was running (the check), else the innermost one
    private static StackTraceElement where(Throwable thrown) {{
        StackTraceElement[] frames = thrown.getStackTrace();
        for (StackTraceElement frame : frames) {{
            if (frame.getClassName().equals("{main_class}") && frame.getMethodName().equals("{tests_main}")) {{
                return frame;
            }}
        }}
        return frames.length > 0 ? frames[0] : null;
    }}

    private static void fail(Throwable thrown) {{
        int status = thrown instanceof AssertionError ? {check_failed} : {uncaught};
        try {{
            thrown.printStackTrace();
            StackTraceElement frame = where(thrown);
            String at = frame == null ? "" : " (" + frame.getFileName() + ":" + frame.getLineNumber() + ")";
            String message = thrown.getMessage();
            Throwable cause = thrown.getCause();
            if (message == null && cause != null) {{  // ExceptionInInitializerError: the cause says why
                message = "caused by " + cause.getClass().getName()
                          + (cause.getMessage() != null ? ": " + cause.getMessage() : "");
            }}
            if (thrown instanceof AssertionError) {{
                System.err.println("workbench: assertion failed" + (message != null ? ": " + message : "") + at);
            }} else {{
                System.err.println("workbench: uncaught exception " + thrown.getClass().getName()
                                   + (message != null ? ": " + message : "") + at);
            }}
        }} catch (Throwable ignored) {{
            // a message that cannot be printed changes nothing about the verdict
        }} finally {{
            System.err.flush();
            Runtime.getRuntime().halt(status);
        }}
    }}
}}
"""


@functools.cache
def _java_grammar():
    import tree_sitter
    import tree_sitter_java

    return tree_sitter.Language(tree_sitter_java.language())


def _parse(text: str):
    """The tree-sitter Java tree of ``text`` (a parser per call: prepare runs in several threads)."""
    import tree_sitter

    return tree_sitter.Parser(_java_grammar()).parse(text.encode("utf-8"))


def _java_string(text: str) -> str:
    """``text`` as a Java string literal on one line (a backslash is doubled, so no ``\\uXXXX``
    in it is read as a Unicode escape, JLS 3.3)."""
    text = " ".join(text.split())
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _strip_parentheses(node) -> str:
    """The text of an expression without the parentheses MultiPL-E puts around a check."""
    while node.type == "parenthesized_expression" and node.named_child_count == 1:
        node = node.named_children[0]
    return node.text.decode("utf-8", "replace")


def unconditional_checks(source: str, tests_start: int) -> str:
    """Rewrite every ``assert`` statement from character ``tests_start`` of ``source`` on (the
    tests) into ``{ if (!(condition)) throw new java.lang.AssertionError(message); }``.

    An ``assert`` runs only while its class's ``$assertionsDisabled`` flag is false, and the
    tests' class is the candidate's, whose static initialiser can set that flag; the ``if``
    checks regardless. The message is the statement's own (``assert c : m;``) or the
    condition's text. Lines keep their numbers (the condition and message texts keep their
    line breaks). Only the tests are parsed, so nothing the candidate writes (a Unicode escape
    the grammar does not translate, an unclosed construct) changes how they are read. A
    statement the grammar cannot read cleanly is left as it is (``-ea`` and the wrapper's
    after-check still hold it).

    Args:
        source: the whole ``Problem.java`` (program, newline, tests).
        tests_start: where the tests begin, in characters.

    Returns:
        the source with the tests' asserts rewritten.
    """
    tests = source[tests_start:]
    data = tests.encode("utf-8")
    edits: list[tuple[int, int, bytes]] = []
    stack = [_parse(tests).root_node]
    while stack:
        node = stack.pop()
        if node.type == "assert_statement" and not node.has_error:
            parts = node.named_children
            if len(parts) in (1, 2):
                condition = parts[0].text.decode("utf-8", "replace")
                message = (parts[1].text.decode("utf-8", "replace") if len(parts) == 2
                           else _java_string(_strip_parentheses(parts[0])))
                check = f"{{ if (!({condition})) throw new java.lang.AssertionError({message}); }}"
                edits.append((node.start_byte, node.end_byte, check.encode("utf-8")))
                continue
        stack.extend(node.children)
    for start, end, text in sorted(edits, reverse=True):
        data = data[:start] + text + data[end:]
    return source[:tests_start] + data.decode("utf-8") if edits else source


def rename_tests_main(tests: str, name: str) -> str:
    """Rename the ``main`` method that ``tests`` declare (the last, if several) to ``name``.

    Only the tests are parsed (they begin with the ``}`` that closes the candidate's method;
    the grammar recovers from that), so the candidate's code cannot hide their ``main``. The
    line numbers stay as they are.

    Args:
        tests: the MultiPL-E Java test harness.
        name: the new name (a Java identifier).

    Returns:
        the tests with their ``main`` renamed; unchanged when they declare none (the wrapper's
        lookup of ``name`` then fails: an ``error``, never another ``main`` run).
    """
    names = []
    stack = [_parse(tests).root_node]
    while stack:
        node = stack.pop()
        if node.type == "method_declaration":
            method = node.child_by_field_name("name")
            if method is not None and method.text == b"main":
                names.append(method)
        stack.extend(node.children)
    if not names:
        return tests
    method = max(names, key=lambda node: node.start_byte)
    data = tests.encode("utf-8")
    return (data[: method.start_byte] + name.encode() + data[method.end_byte :]).decode("utf-8")


def find_main_class(source: str, default: str = "Problem") -> str:
    """Return the name of the class that declares ``static void main`` in ``source``.

    Uses the tree-sitter Java grammar, so braces inside strings or comments do not
    confuse it; when the code is too broken to tell, returns ``default`` (MultiPL-E's
    class name), and compilation then reports the real error.

    Args:
        source: a whole Java compilation unit (prompt + completion + tests).
        default: the class name to fall back on.
    """
    mains: list[tuple[int, str]] = []
    stack = [_parse(source).root_node]
    while stack:
        node = stack.pop()
        if node.type == "method_declaration":
            name = node.child_by_field_name("name")
            if name is not None and name.text == b"main":
                parent = node.parent
                while parent is not None and parent.type != "class_declaration":
                    parent = parent.parent
                if parent is not None and parent.child_by_field_name("name") is not None:
                    mains.append((node.start_byte, parent.child_by_field_name("name").text.decode("utf-8")))
            continue
        stack.extend(node.children)
    # the last main in the file wins: the harness's main comes after anything the candidate wrote
    return max(mains)[1] if mains else default


def build_javac_class_archive(cache_dir: str | os.PathLike[str],
                              javac_options: Sequence[str] = ("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC")) -> Path:
    """Record a class-data-sharing archive of the compiler's classes and return its path.

    ``javac`` is a JVM program; loading and verifying its own classes is about a third of
    the CPU a MultiPL-E build takes (0.47 s instead of 0.71 s user time per build here,
    OpenJDK 17). A dynamic AppCDS archive (JEP 350, ``-XX:ArchiveClassesAtExit``) recorded
    once from one compilation lets every later ``javac`` map those classes instead. The
    archive is keyed by the JDK version and the options; an existing one is reused.

    Args:
        cache_dir: where to keep archives.
        javac_options: the ``-J`` options the runner's ``javac`` will use.

    Returns:
        the archive file, for ``JavaRunner(javac_class_archive=...)``.

    Raises:
        RuntimeError: ``javac`` is missing or cannot record the archive.
    """
    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError("javac not found on PATH")
    version = subprocess.run([javac, "-J-version"], capture_output=True, text=True).stderr
    key = hashlib.sha256((os.path.realpath(javac) + version + "\0".join(javac_options)).encode()).hexdigest()[:16]
    archive = Path(cache_dir) / f"javac-{key}.jsa"
    if archive.is_file():
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(f".jsa.{os.getpid()}")
    with tempfile.TemporaryDirectory() as workdir:
        source = Path(workdir, "Warmup.java")
        source.write_text("import java.util.*;\nclass Warmup { public static void main(String[] a) {"
                          " List<Integer> l = new ArrayList<>(Arrays.asList(1, 2)); assert l.size() == 2; } }\n")
        done = subprocess.run([javac, *javac_options, f"-J-XX:ArchiveClassesAtExit={partial}", "-d", workdir,
                               str(source)], capture_output=True, text=True)
    if done.returncode != 0 or not partial.is_file():
        raise RuntimeError(f"recording the javac class archive failed: {done.stderr[-500:]}")
    partial.replace(archive)  # atomic: parallel builders never see half a file
    return archive


class JavaRunner(TestRunner):
    """``javac`` then ``java -ea`` with a wrapper class that writes the pass token.

    Args:
        classpath: jar files / folders for compiling and running; default: the entries of
            ``$WORKBENCH_JAVA_CLASSPATH`` followed by :data:`DEFAULT_CLASSPATH`.
        jvm_options: extra options for ``java`` (``-ea`` is always added). The defaults
            keep the JVM to one GC thread (threads count against the sandbox's process
            limit) and cap its heap, which stands in for the address-space limit the
            sandbox lifts for JVMs (a JVM reserves far more address space than it uses).
        javac_options: extra options for ``javac``. The defaults make the compiler's own
            JVM start faster (client JIT only; same bytecode) and cap its heap.
        javac_class_archive: an archive from :func:`build_javac_class_archive` (built with
            the same ``javac_options``), to start the compiler faster; the sandbox must let
            it be read (it is listed in ``read_only_paths``).
    """

    toolchain: ClassVar[tuple[str, ...]] = ("javac", "java")

    def __init__(
        self,
        classpath: Sequence[str] | None = None,
        jvm_options: Sequence[str] = ("-XX:+UseSerialGC", "-Xmx1g"),
        javac_options: Sequence[str] = ("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-J-Xmx1g"),
        javac_class_archive: str | os.PathLike[str] | None = None,
    ):
        if classpath is None:
            extra = [entry for entry in os.environ.get(CLASSPATH_ENV, "").split(os.pathsep) if entry]
            classpath = [*extra, *DEFAULT_CLASSPATH]
        self.classpath = list(classpath)
        self.jvm_options = list(jvm_options)
        self.javac_options = list(javac_options)
        self.javac_class_archive = None if javac_class_archive is None else os.path.realpath(javac_class_archive)

    def missing_toolchain(self) -> list[str]:
        """Return missing executables and class-path jars (with the Debian package that ships javatuples)."""
        missing = super().missing_toolchain()
        for entry in self.classpath:
            if not os.path.exists(entry):
                hint = " (apt-get install libjavatuples-java)" if "javatuples" in entry else ""
                missing.append(f"{entry}{hint}")
        return missing

    def prepare(self, program: str, tests: str, entry_point: str | None, token: str) -> RunSpec:
        """Return the RunSpec for ``program + tests`` (``entry_point`` is not needed: the tests call it).

        Files: ``Problem.java`` (program and harness, the harness's ``assert`` statements
        rewritten by :func:`unconditional_checks`, its ``main`` renamed by
        :func:`rename_tests_main` to a name drawn for this sample) and ``WorkbenchHarness.java``
        (package :data:`HARNESS_PACKAGE`). Build: ``javac``; a compile error is the sample's
        ``syntax_error``. Run: ``java -ea`` on the wrapper, which reads the token from fd 3,
        loads the folder's classes (not initialised) and removes its files (an ``error`` if it
        cannot: exit :data:`UNCAUGHT_EXCEPTION_EXIT`), calls the renamed ``main`` in the class
        :func:`find_main_class` names, and writes the token to fd 4 after it returned. A failed check exits with :data:`CHECK_FAILED_EXIT`
        (``failed``), any other escaped exception (or a ``main`` that is not where the grammar
        placed it) with :data:`UNCAUGHT_EXCEPTION_EXIT` (``error``), each after a last stderr
        line saying what failed. ``token`` itself is not used: it travels over the pipe.
        """
        # MultiPL-E joins them with a newline (nuprl/MultiPL-E evaluation/src/main.py,
        # cached_eval_script); without it a body ending in a // comment swallows the harness's "}"
        main_class = find_main_class(program + "\n" + tests)
        tests_main = f"workbench_tests_{secrets.token_hex(8)}"  # a name the candidate cannot know
        source = unconditional_checks(program + "\n" + rename_tests_main(tests, tests_main), len(program) + 1)
        harness = _HARNESS_TEMPLATE.format(
            package=HARNESS_PACKAGE,
            harness=HARNESS_CLASS,
            main_class=main_class,
            tests_main=tests_main,
            assertions_exit=ASSERTIONS_DISABLED_EXIT,
            check_failed=CHECK_FAILED_EXIT,
            uncaught=UNCAUGHT_EXCEPTION_EXIT,
            token_in=TOKEN_INPUT_FD,
            token_out=PASS_TOKEN_FD,
        )
        classpath = os.pathsep.join([".", *self.classpath])
        javac = shutil.which("javac") or "javac"
        java = shutil.which("java") or "java"
        javac_options = list(self.javac_options)
        read_only = [os.path.realpath(entry) for entry in self.classpath if os.path.exists(entry)]
        if self.javac_class_archive is not None:
            javac_options.append(f"-J-XX:SharedArchiveFile={self.javac_class_archive}")
            read_only.append(self.javac_class_archive)
        return RunSpec(
            files={PROGRAM_FILE: source, f"{HARNESS_CLASS}.java": harness},
            build=[
                [javac, *javac_options, "-encoding", "UTF-8", "-nowarn", "-cp", classpath, "-d", ".",
                 PROGRAM_FILE, f"{HARNESS_CLASS}.java"]
            ],
            # no attach listener: another JVM the candidate starts cannot load an agent into this one
            run=[java, "-ea", "--add-opens=java.base/java.io=ALL-UNNAMED", "-XX:+DisableAttachMechanism",
                 *self.jvm_options, "-cp", classpath, f"{HARNESS_PACKAGE}.{HARNESS_CLASS}"],
            token_input_fd=TOKEN_INPUT_FD,
            pass_token_fd=PASS_TOKEN_FD,
            exit_statuses=EXIT_STATUSES,
            read_only_paths=tuple(read_only),
            limit_overrides={"address_space_bytes": None},
            out_of_memory_markers=("java.lang.OutOfMemoryError",),
        )
