"""The language-plugin contract: everything a plugin author implements, in one place.

A language plugin is a Python module (or object) exposing the pluggy hook
:func:`workbench_languages`, which returns one or more :class:`LanguagePlugin`
instances. Plugins are found through the entry-point group ``workbench.languages``;
the built-in Python plugin registers through the very same hook (see
:mod:`workbench.languages.registry`), so the core never names a language.

A :class:`LanguagePlugin` gives

* identity: ``name``, ``aliases``, ``extensions``, the grammar distribution;
* the tree-sitter ``Language`` (:meth:`LanguagePlugin.load_language`);
* dedup tokens: which grammar node types are identifiers and literals
  (Allamanis 2019, Sec. 3: "identifier and literal tokens");
* the DSA-CQE decomposition map: grammar node types for the eight sub-code kinds
  (For, While, Assign, If, ClassDef, FunctionDef, Switch, Call; Xu et al., ISWC 2024
  posters, "Decompositional Semantic Analysis", Sec. 2);
* optionally a :class:`TestRunner` for ``workbench execute``.

Example (a minimal plugin module, registered under ``[project.entry-points."workbench.languages"]``)::

    import tree_sitter_go
    from workbench.languages.spec import LanguagePlugin, SubCodeKind, hookimpl

    class Go(LanguagePlugin):
        name = "go"
        extensions = (".go",)
        grammar_distribution = "tree-sitter-go"
        identifier_node_types = frozenset({"identifier", "field_identifier", ...})
        ...
        def language_capsule(self):
            return tree_sitter_go.language()

    @hookimpl
    def workbench_languages():
        return [Go()]
"""

from __future__ import annotations

import enum
import shutil
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any, ClassVar

import pluggy

from workbench.errors import WorkbenchError

PROJECT_NAME = "workbench"
ENTRY_POINT_GROUP = "workbench.languages"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)

#: the captures a plugin's ``name_query`` may use (see :attr:`LanguagePlugin.name_query`)
NAME_QUERY_CAPTURES = frozenset({"definition", "update", "not_a_name"})


class SubCodeKind(str, enum.Enum):
    """The eight predefined node kinds whose sub-trees become DSA-CQE sub-codes.

    Source: Xu, Zhang, Zhang, Han, "Decompositional Semantic Analysis for LLM-based
    Code Quality Evaluation", ISWC 2024 posters (CEUR-WS Vol-3828, paper 7), Sec. 2.
    """

    FOR = "For"
    WHILE = "While"
    ASSIGN = "Assign"
    IF = "If"
    CLASS_DEF = "ClassDef"
    FUNCTION_DEF = "FunctionDef"
    SWITCH = "Switch"
    CALL = "Call"


#: statuses a sample can end with (``workbench execute`` result rows)
SAMPLE_STATUSES: tuple[str, ...] = ("passed", "failed", "error", "syntax_error", "timeout", "killed", "oom")

#: the fd numbers a runner may use for the token pipes (0-2 are stdio; bash names fds up to 9)
TOKEN_FD_RANGE = range(3, 10)

#: the default :attr:`RunSpec.build_timeout_s`: what compiling one program may take, apart from
#: the sample's timeout (a MultiPL-E ``javac`` or ``g++`` takes 1-5 s on a loaded 2-core machine)
DEFAULT_BUILD_TIMEOUT_S = 60.0


class InvalidRunSpecError(WorkbenchError, ValueError):
    """A :class:`RunSpec` breaks the runner contract; the message names every bad field."""


@dataclass(frozen=True)
class RunSpec:
    """What a :class:`TestRunner` asks the sandbox to do for one sample.

    The pass-token protocol (how a sample proves that its checks ran):

    1. The sandbox draws a fresh random token per run (32 hex characters).
    2. If ``token_input_fd`` is set, the sandbox opens a pipe, writes the token and a
       newline into it, closes its own end, and places the read end at that fd number in
       the child. The harness must read it and close the fd *before* any candidate code
       runs, and must not write it to disk, argv or the environment. (Runners that set
       no ``token_input_fd`` may instead embed the ``token`` argument of
       :meth:`TestRunner.prepare` in their files; that is weaker, since the candidate
       can read its own working directory.)
    3. The sandbox places the write end of a second pipe at ``pass_token_fd`` (or, with
       ``pass_token_file``, reads that file from the working directory when ``run``
       exits). After every check returned, and only then, the harness writes the token
       there.
    4. A sample is ``passed`` only when the process exited with status 0 and everything
       that arrived on that channel, stripped of surrounding whitespace, equals the
       token. Anything else written there (a stale token, a guess, extra bytes) fails.

    Build commands run before ``run`` in the same sandbox and working directory, with
    the token fds closed; a non-zero exit of any of them is a ``syntax_error`` (compile
    error). They run under a limit of their own, ``build_timeout_s``, and the sample's
    timeout (the one calibrated from the reference's run) starts when they are done: a
    compiler's start-up and work (``javac`` is itself a JVM) never eat the time of the tests.

    Attributes:
        files: files to write into the sample's fresh working directory, relative POSIX
            name -> text (sub-folders allowed, no ``..``, no absolute names).
        run: the argv that runs the program with its tests (working directory: the
            sample's folder).
        build: commands (argv lists) run in order before ``run``.
        build_timeout_s: wall-clock seconds all build commands together may take, apart from
            the sample's timeout; a build that takes longer is a ``timeout`` whose detail says
            so. The CPU rlimit of each build command is set from it like the run's from its
            timeout (``ceil(seconds) + 1``; the run's, when that is larger; a fixed
            ``ResourceLimits.cpu_seconds`` holds for both). Default
            :data:`DEFAULT_BUILD_TIMEOUT_S`, generous: a compile error is not slow.
        env: extra environment variables for build and run (the sandbox scrubs the rest).
        pass_token_fd: fd number (3..9) in the child where the harness writes the token,
            or ``None`` when the runner uses ``pass_token_file``.
        pass_token_file: a file name (inside the working directory) the harness writes
            the token to, or ``None``.
        token_input_fd: fd number (3..9, not ``pass_token_fd``) in the child from which
            the harness reads the token (step 2), or ``None``.
        exit_statuses: exit status of ``run`` -> sample status (one of
            :data:`SAMPLE_STATUSES`) for runs that did not pass, e.g. ``{3: "syntax_error"}``;
            unlisted non-zero statuses are ``failed``, a zero status without the token is
            ``error``.
        read_only_paths: host paths the toolchain needs (interpreter prefix, JDK), made
            visible read-only even when they lie under a path the sandbox hides (e.g. a
            virtual environment or pyenv under the user's home).
        limit_overrides: :class:`workbench.execute.ResourceLimits` field -> value for
            this runner (e.g. ``{"address_space_bytes": None}`` for a JVM that reserves
            more address space than it uses); ``None`` means unlimited.
        out_of_memory_markers: texts in the program's stderr that mean the runtime ran out
            of memory (e.g. the runtime's out-of-memory exception name, ``MemoryError``,
            ``java.lang.OutOfMemoryError``; Node's ``JavaScript heap out of memory``); a failed
            run whose stderr holds one is ``oom``, and so is one that the timeout or the CPU
            limit ended after the runtime reported it. The first and last 8 KiB of stderr are
            searched (a report followed by a long native stack trace is found). The sandbox adds
            the OS's own "Cannot allocate memory".
        python_main: the name (in ``files``) of a Python script that ``run`` runs
            (``run`` = a Python interpreter and its options, this name, the script's
            arguments), set when the script may run in an interpreter that was started
            before the sample, with the same options and environment, and forked for it
            (:mod:`workbench.execute.zygote`): it must not depend on what happened at
            start-up beyond that, and must end with ``os._exit`` (it is not a fresh process's
            end: ``atexit`` handlers do not run). Needs ``pass_token_fd`` and no ``build``.
            ``None`` (the default): every sample starts its own interpreter.

    Raises:
        InvalidRunSpecError: (when built) a field breaks the rules above; the message names
            each bad field, e.g. ``RunSpec.files: name '../main.py' must be a relative path
            inside the working directory``.

    Example::

        RunSpec(files={"h.sh": 'read -r t <&3; exec 3<&-; test 1 = 1 && echo "$t" >&4'},
                run=["/bin/sh", "h.sh"], token_input_fd=3, pass_token_fd=4)
    """

    files: Mapping[str, str]
    run: list[str]
    build: list[list[str]] = field(default_factory=list)
    env: Mapping[str, str] = field(default_factory=dict)
    pass_token_fd: int | None = None
    pass_token_file: str | None = None
    token_input_fd: int | None = None
    exit_statuses: Mapping[int, str] = field(default_factory=dict)
    read_only_paths: tuple[str, ...] = ()
    limit_overrides: Mapping[str, int | None] = field(default_factory=dict)
    out_of_memory_markers: tuple[str, ...] = ()
    python_main: str | None = None
    build_timeout_s: float = DEFAULT_BUILD_TIMEOUT_S

    def __post_init__(self) -> None:
        problems = run_spec_problems(self)
        if problems:
            raise InvalidRunSpecError("invalid RunSpec: " + "; ".join(problems))


def _is_relative_inside(name: Any) -> bool:
    """True for a relative POSIX name that stays inside its folder (no ``..``, no empty part)."""
    if not isinstance(name, str) or not name or "\\" in name or name.startswith("/"):
        return False
    parts = name.split("/")
    return ".." not in parts and "" not in parts and not PurePosixPath(name).is_absolute()


def _is_argv(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and bool(value) and all(isinstance(arg, str) for arg in value)


def _is_str_tuple(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(isinstance(item, str) for item in value)


def run_spec_problems(spec: RunSpec) -> list[str]:
    """Return what is wrong with ``spec``'s fields (empty when it keeps the contract), each
    problem naming its field. :class:`RunSpec` calls it when built."""
    problems = []
    if not isinstance(spec.files, Mapping) or not spec.files:
        problems.append("RunSpec.files must be a non-empty mapping name -> text")
    else:
        for name, text in spec.files.items():
            if not _is_relative_inside(name):
                problems.append(f"RunSpec.files: name {name!r} must be a relative path inside the working directory")
            if not isinstance(text, str):
                problems.append(f"RunSpec.files[{name!r}] must be text, got {type(text).__name__}")
    if not _is_argv(spec.run):
        problems.append(f"RunSpec.run must be a non-empty argv list of str, got {spec.run!r}")
    if not isinstance(spec.build, (list, tuple)) or not all(_is_argv(command) for command in spec.build):
        problems.append(f"RunSpec.build must be a list of non-empty argv lists of str, got {spec.build!r}")
    if not isinstance(spec.env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in spec.env.items()):
        problems.append("RunSpec.env must map str to str")
    problems += _token_channel_problems(spec)
    statuses = spec.exit_statuses if isinstance(spec.exit_statuses, Mapping) else {None: None}
    allowed = [status for status in SAMPLE_STATUSES if status != "passed"]  # only the token can pass
    for code, status in statuses.items():
        if not isinstance(code, int) or isinstance(code, bool) or code == 0 or status not in allowed:
            problems.append(f"RunSpec.exit_statuses must map non-zero ints to one of {allowed}, got {code!r}: {status!r}")
    paths = spec.read_only_paths
    if not _is_str_tuple(paths) or not all(path.startswith("/") for path in paths):
        problems.append(f"RunSpec.read_only_paths must be a tuple of absolute paths, got {paths!r}")
    markers = spec.out_of_memory_markers
    if not _is_str_tuple(markers) or not all(markers):
        problems.append(f"RunSpec.out_of_memory_markers must be a tuple of non-empty texts, got {markers!r}")
    problems += _limit_override_problems(spec.limit_overrides)
    limit = spec.build_timeout_s
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not 0 < limit <= 86400:
        problems.append(f"RunSpec.build_timeout_s must be a number of seconds above 0 and at most 86400, got {limit!r}")
    problems += _python_main_problems(spec)
    return problems


def _python_main_problems(spec: RunSpec) -> list[str]:
    """``python_main``: a file of the spec that ``run`` names after the interpreter, with the
    token on an fd and no build commands (what a forked interpreter can serve)."""
    main = spec.python_main
    if main is None:
        return []
    problems = []
    if not isinstance(main, str) or not isinstance(spec.files, Mapping) or main not in spec.files:
        problems.append(f"RunSpec.python_main must name one of RunSpec.files, got {main!r}")
    elif not _is_argv(spec.run) or main not in spec.run[1:]:
        problems.append(f"RunSpec.python_main {main!r} must appear in RunSpec.run after the interpreter")
    if spec.build:
        problems.append("RunSpec.python_main cannot be combined with build commands")
    if spec.pass_token_fd is None:
        problems.append("RunSpec.python_main needs pass_token_fd (not pass_token_file)")
    return problems


def _token_channel_problems(spec: RunSpec) -> list[str]:
    """The pass-token channel: exactly one of fd / file, fds in range and distinct."""
    problems = []
    if (spec.pass_token_fd is None) == (spec.pass_token_file is None):
        problems.append("RunSpec: set exactly one of pass_token_fd and pass_token_file")
    fds = {"token_input_fd": spec.token_input_fd, "pass_token_fd": spec.pass_token_fd}
    for name, fd in fds.items():
        if fd is not None and (not isinstance(fd, int) or isinstance(fd, bool) or fd not in TOKEN_FD_RANGE):
            problems.append(f"RunSpec.{name} must be an int from 3 to 9 (0-2 are stdio), got {fd!r}")
    if spec.token_input_fd is not None and spec.token_input_fd == spec.pass_token_fd:
        problems.append("RunSpec.token_input_fd and pass_token_fd must differ")
    if spec.pass_token_file is not None:
        if not _is_relative_inside(spec.pass_token_file):
            problems.append(f"RunSpec.pass_token_file {spec.pass_token_file!r} must be a relative name")
        elif isinstance(spec.files, Mapping) and spec.pass_token_file in spec.files:
            problems.append("RunSpec.pass_token_file is among RunSpec.files: the token would exist before the tests ran")
    return problems


def _limit_override_problems(overrides: Any) -> list[str]:
    if not isinstance(overrides, Mapping):
        return [f"RunSpec.limit_overrides must be a mapping, got {overrides!r}"]
    if not overrides:
        return []
    # imported here: the execution package imports this module
    from workbench.execute.limits import ResourceLimits

    try:
        ResourceLimits().with_overrides(overrides)
    except (ValueError, TypeError) as error:
        return [f"RunSpec.limit_overrides: {error}"]
    return []


class TestRunner:
    """How to build and run a program with its tests for one language.

    The sandbox (:mod:`workbench.execute`) owns isolation, limits and timeouts; the
    runner only says which files to write and which commands to run, and arranges for
    its test harness to report success with an unforgeable per-run token *after* the
    checks returned (so ``exit(0)`` before the checks, or a printed fake marker, cannot
    count as a pass). See :class:`RunSpec` for the exact token protocol.
    """

    __test__ = False  # not a pytest test class

    #: executables that must be on PATH (e.g. ``("javac", "java")``)
    toolchain: ClassVar[tuple[str, ...]] = ()

    def missing_toolchain(self) -> list[str]:
        """Return the executables of :attr:`toolchain` not found on PATH (empty when all present)."""
        return [tool for tool in self.toolchain if shutil.which(tool) is None]

    def build_program(self, prompt: str, completion: str, mode: str) -> str:
        """Return the program text for a generation.

        Args:
            prompt: the problem's prompt (signature and docstring).
            completion: the generated text.
            mode: ``"completion"`` (append ``completion`` to ``prompt``) or ``"full"``
                (``completion`` is a whole program).
        """
        if mode == "full":
            return completion
        if mode != "completion":
            raise ValueError(f"mode must be 'completion' or 'full', not {mode!r}")
        return prompt + completion

    def prepare(self, program: str, tests: str, entry_point: str | None, token: str) -> RunSpec:
        """Return the :class:`RunSpec` that runs ``program`` against ``tests``.

        Args:
            program: the candidate program (from :meth:`build_program`).
            tests: the problem's test code, in the layout of the problem set.
            entry_point: the function under test, when the test harness needs it.
            token: this run's token. Runners that set ``RunSpec.token_input_fd`` should
                ignore it (the harness receives it over the pipe); others may embed it.
        """
        raise NotImplementedError

    def toolchain_spec(self, token: str) -> RunSpec:
        """Return a :class:`RunSpec` that uses the toolchain the way every sample's does: the
        same build and run executables and the same ``read_only_paths``, for the checks made
        before any sample runs (``workbench execute`` refuses to start when the sandbox's user
        cannot reach them). It is never run.

        The default prepares an empty program with empty tests. A runner whose ``prepare``
        needs a real test harness (the C++ runner renames the harness's ``main``) overrides
        this with a small representative one; the conformance kit checks that it works.

        Args:
            token: a token, as for :meth:`prepare`.

        Raises:
            whatever :meth:`prepare` raises: a runner bug, reported before any sample runs.
        """
        return self.prepare("", "", None, token)


class LanguagePlugin:
    """Base class for a language plugin. Subclasses set the class attributes and
    implement :meth:`language_capsule`; the default methods work from those attributes.

    Class attributes:
        name: canonical lower-case name (``"python"``).
        aliases: other names users may type (``("py", "python3")``).
        extensions: file extensions with the dot (``(".py",)``), used by folder loaders.
        grammar_distribution: the PyPI distribution of the tree-sitter grammar, for
            ``workbench languages`` (``"tree-sitter-python"``).
        identifier_node_types: grammar node types whose text is an identifier token.
        literal_node_types: grammar node types whose whole text is one literal token
            (strings, numbers, characters); the walk does not descend into them.
        skip_node_types: node types whose sub-trees yield no tokens (e.g. comments).
        anonymous_identifier_node_types: anonymous (keyword-like) grammar tokens that the
            language's own tokenizer reports as identifiers, e.g. Python's soft keywords
            ``match``/``case``/``_``/``type`` and ``__future__`` (``tokenize`` gives NAME tokens).
        subcode_node_types: :class:`SubCodeKind` -> grammar node types.
        definition_fields: grammar node type -> the tree-sitter field names whose
            identifiers are *defined* by that node (``{"assignment": ("left",)}``). A field
            holding a member access (``self.item``) defines the dotted member, and its base
            (``self``) is read; identifiers under a subscript, index, size, value or default,
            and a called function (C++'s ``v.at(i) = x``), are read: the fields of
            :attr:`read_in_target_fields`.
        name_query: optional tree-sitter query for bindings that fields cannot express, in
            the manner of tree-sitter's ``locals.scm``: ``@definition`` marks a binding
            target (treated like a definition field), ``@update`` a target that is read
            before it is rebound (``i++``, ``--i``, ``total += x``: its names are both defined
            and read), ``@not_a_name`` an identifier that names no variable (a keyword
            argument's name, a module path in an import, a label).
        embedded_code_node_types: node types inside a literal that hold code whose names
            are read (Python's f-string ``interpolation``); the rest of the literal is not
            searched for names.
        non_name_fields: field names whose identifiers are never free names (member
            names; in statically typed languages, types). Python reads its annotations at
            run time, so its plugin keeps only the member field.
        read_in_target_fields: field names whose identifiers are read even inside a binding
            target (the default: the subscript, index, size, value or default, and called
            function fields of the bundled grammars, so ``a[i] = x`` reads ``a`` and ``i``);
            a grammar that names such a field otherwise adds it (tree-sitter-go's
            ``index_expression`` and ``unary_expression`` hold theirs in ``operand``).
        runner: a :class:`TestRunner`, or ``None`` if the plugin cannot execute code.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    extensions: ClassVar[tuple[str, ...]] = ()
    grammar_distribution: ClassVar[str] = ""
    identifier_node_types: ClassVar[frozenset[str]] = frozenset()
    literal_node_types: ClassVar[frozenset[str]] = frozenset()
    skip_node_types: ClassVar[frozenset[str]] = frozenset({"comment"})
    anonymous_identifier_node_types: ClassVar[frozenset[str]] = frozenset()
    subcode_node_types: ClassVar[Mapping[SubCodeKind, frozenset[str]]] = {}
    definition_fields: ClassVar[Mapping[str, tuple[str, ...]]] = {}
    name_query: ClassVar[str] = ""
    embedded_code_node_types: ClassVar[frozenset[str]] = frozenset()
    non_name_fields: ClassVar[frozenset[str]] = frozenset(
        {"attribute", "field", "property", "type", "return_type", "type_parameters"}
    )
    read_in_target_fields: ClassVar[frozenset[str]] = frozenset(
        {"type", "return_type", "subscript", "index", "indices", "argument", "arguments", "default", "value", "array",
         "size", "function"}
    )
    runner: TestRunner | None = None

    _language: Any = None
    _token_kind_ids: tuple[frozenset[int], frozenset[int]] | None = None
    _name_query: Any = None
    _parsers: threading.local | None = None

    # -- the grammar -------------------------------------------------------------------
    def language_capsule(self) -> Any:
        """Return the grammar's language pointer (e.g. ``tree_sitter_python.language()``), or the
        ``tree_sitter.Language`` built from it."""
        raise NotImplementedError

    def load_language(self) -> Any:
        """Return the ``tree_sitter.Language`` for this plugin (built once, then cached).

        ``language_capsule()`` may also return the ``tree_sitter.Language`` built from the pointer,
        which is then used as it is.

        Raises:
            TypeError: ``language_capsule()`` returned something that is neither a language
                pointer nor a ``tree_sitter.Language`` (``None``, the grammar module itself).
            whatever ``language_capsule()`` raises (an ``ImportError`` for a grammar package
                that is not installed).
        """
        if self._language is None:
            import tree_sitter

            capsule = self.language_capsule()
            if isinstance(capsule, tree_sitter.Language):
                self._language = capsule
            else:
                try:
                    self._language = tree_sitter.Language(capsule)
                except TypeError as error:  # tree-sitter says only "an integer is required"
                    module = (self.grammar_distribution or "tree-sitter-go").replace("-", "_")
                    returned = "None" if capsule is None else f"a {type(capsule).__name__}"
                    raise TypeError(
                        f"{type(self).__name__}.language_capsule() returned {returned}; return the grammar "
                        f"package's language pointer, e.g. {module}.language()") from error
        return self._language

    def parse(self, code: str | bytes) -> Any:
        """Parse source code and return the ``tree_sitter.Tree``.

        tree-sitter always returns a tree; syntax errors appear as ``ERROR`` /
        missing nodes (``tree.root_node.has_error``), never as an exception. Each thread
        reuses one ``tree_sitter.Parser`` (a parser is not safe to share between threads;
        making one per call cost about a tenth of a dedup tokenization).
        """
        data = code.encode("utf-8", errors="surrogateescape") if isinstance(code, str) else code
        return self._parser().parse(data)

    def _parser(self) -> Any:
        local = self._parsers
        if local is None:
            local = self._parsers = threading.local()
        parser = getattr(local, "parser", None)
        if parser is None:
            import tree_sitter

            parser = local.parser = tree_sitter.Parser(self.load_language())
        return parser

    # -- source files ------------------------------------------------------------------
    def decode_source(self, data: bytes) -> str:
        """Return the text of a source file's bytes, as the language's tools read it.

        The default reads UTF-8 (a leading byte-order mark is dropped, so a file saved with one
        tokenizes and hashes like its copy without). A language whose files declare their
        encoding overrides this (Python's PEP 263 coding cookie).

        Args:
            data: the whole file, non-empty.
        Returns:
            The decoded text.
        Raises:
            UnicodeDecodeError: the bytes are not in the file's encoding.
            ValueError: the file declares an encoding that Python does not know (the message
                says which).
        """
        return data.decode("utf-8-sig")

    # -- dedup tokens ------------------------------------------------------------------
    def _is_token_node(self, node: Any) -> bool:
        if node.start_byte == node.end_byte:  # a MISSING node inserted by error recovery
            return False
        kind = node.type
        if not node.is_named:
            return kind in self.anonymous_identifier_node_types
        return kind in self.literal_node_types or kind in self.identifier_node_types

    def iter_token_nodes(self, root: Any) -> Iterator[Any]:
        """Yield identifier and literal nodes in source order (iterative pre-order walk).

        The reference implementation of the token definition; :meth:`token_spans` gives
        the same tokens faster (a cursor walk over node kind ids).
        """
        skip = self.skip_node_types
        stack = [root]
        while stack:
            node = stack.pop()
            if node.is_named and node.type in skip:
                continue
            if self._is_token_node(node):
                yield node
                continue
            stack.extend(reversed(node.children))

    def token_kind_ids(self) -> tuple[frozenset[int], frozenset[int]]:
        """Return ``(stop, tokens)``: the grammar's node kind ids (``Node.kind_id``) where the
        token walk stops descending (token and skipped node types), and those of them that are
        tokens (identifier and literal types, named; anonymous identifier types, anonymous).

        Every id of the grammar whose name and namedness match a listed type is included (an
        alias has an id of its own); types the grammar does not know match nothing (a plugin
        may list types of several grammar versions). Computed once per plugin.
        """
        if self._token_kind_ids is None:
            language = self.load_language()
            named = self.identifier_node_types | self.literal_node_types
            tokens, skips = set(), set()
            for kind_id in range(language.node_kind_count):
                kind, is_named = language.node_kind_for_id(kind_id), language.node_kind_is_named(kind_id)
                if is_named and kind in self.skip_node_types:  # skipping wins, as in the walk
                    skips.add(kind_id)
                elif (kind in named) if is_named else (kind in self.anonymous_identifier_node_types):
                    tokens.add(kind_id)
            self._token_kind_ids = (frozenset(tokens | skips), frozenset(tokens))
        return self._token_kind_ids

    def compiled_name_query(self) -> Any:
        """Return the compiled :attr:`name_query` (a ``tree_sitter.Query``), or ``None`` when the
        plugin has none. Compiled once.

        Raises:
            tree_sitter.QueryError: the query names a node type or field the grammar lacks.
        """
        if not self.name_query:
            return None
        if self._name_query is None:
            import tree_sitter

            self._name_query = tree_sitter.Query(self.load_language(), self.name_query)
        return self._name_query

    def token_spans(self, tree: Any) -> list[tuple[int, int]]:
        """Return the byte spans ``(start, end)`` of the identifier and literal tokens of a
        parsed tree, in source order; the same tokens as :meth:`iter_token_nodes`.

        The same pre-order walk, done with a ``tree_sitter.TreeCursor`` and node kind ids
        (:meth:`token_kind_ids`): no list of children per node, no type name per node, and
        the spans come out in source order. On the 20k-file benchmark corpus this costs about
        two thirds of what a token query (its captures sorted and filtered for nesting) did.
        """
        stop, token_kinds = self.token_kind_ids()
        cursor = tree.walk()
        spans: list[tuple[int, int]] = []
        append = spans.append
        first_child, next_sibling, parent = cursor.goto_first_child, cursor.goto_next_sibling, cursor.goto_parent
        while True:
            node = cursor.node
            if node.kind_id not in stop:
                if first_child():
                    continue
            elif node.kind_id in token_kinds:
                start, end = node.start_byte, node.end_byte
                if start != end:
                    append((start, end))
                elif first_child():  # zero width (a MISSING node) is no token: the walk descends
                    continue
            # a leaf, a token or a skipped node: on to the next sibling, or up until there is one
            while not next_sibling():
                if not parent():
                    return spans

    def scan_tokens(self, code: str | bytes) -> tuple[list[str], bool]:
        """Return ``(tokens, has_error)``: the tokens of :meth:`tokens` and whether the
        parse needed error recovery (tree-sitter still yields tokens for broken code)."""
        data = code.encode("utf-8", errors="surrogateescape") if isinstance(code, str) else code
        tree = self.parse(data)
        if type(self).iter_token_nodes is LanguagePlugin.iter_token_nodes:
            spans = self.token_spans(tree)
        else:  # the plugin refines the walk (e.g. filters some nodes): honour it
            spans = [(n.start_byte, n.end_byte) for n in self.iter_token_nodes(tree.root_node)]
        tokens = [data[start:end].decode("utf-8", errors="replace") for start, end in spans]
        return tokens, tree.root_node.has_error

    def tokens(self, code: str | bytes) -> list[str]:
        """Return the identifier and literal tokens of ``code`` in source order.

        Comments, keywords and operators are dropped, as in Allamanis 2019, Sec. 3
        ("we tokenize ... keeping only identifiers and literals"). Override
        :meth:`scan_tokens` for languages whose grammars need more than node-type lists.
        """
        return self.scan_tokens(code)[0]

    # -- capabilities --------------------------------------------------------------------
    def capabilities(self) -> list[str]:
        """Return which jobs this plugin supports: ``tokens`` (some identifier or literal node type),
        ``decompose`` (some sub-code kind maps to a node type), ``execute`` (a runner)."""
        caps = []
        if self.identifier_node_types or self.literal_node_types:
            caps.append("tokens")
        # eight empty sets decompose nothing: every program would be one undecomposed unit
        if any(self.subcode_node_types.values()):
            caps.append("decompose")
        if self.runner is not None:
            caps.append("execute")
        return caps

    def handles(self, name_or_extension: str) -> bool:
        """True when ``name_or_extension`` is this plugin's name, an alias or an extension."""
        key = name_or_extension.lower()
        return key == self.name or key in self.aliases or key in self.extensions

    def kind_of(self, node_type: str) -> SubCodeKind | None:
        """Return the sub-code kind of a grammar node type, or ``None``."""
        for kind, types in self.subcode_node_types.items():
            if node_type in types:
                return kind
        return None

    def __repr__(self) -> str:
        return f"<LanguagePlugin {self.name}>"


#: the plugin attributes that are sets of node-type or field names
_NAME_SET_ATTRIBUTES = ("identifier_node_types", "literal_node_types", "skip_node_types",
                        "anonymous_identifier_node_types", "embedded_code_node_types", "non_name_fields",
                        "read_in_target_fields")


def shape_problems(plugin: LanguagePlugin) -> list[str]:
    """The attributes of ``plugin`` whose type breaks the core (a string where a set or tuple of
    strings belongs, a sub-code map keyed by text): checked when plugins are discovered, so such
    a plugin is left out with the reason instead of failing in the middle of a job. Whether the
    names exist in the grammar is the conformance kit's business
    (:mod:`workbench.languages.conformance`).

    Returns:
        one sentence per problem, e.g. ``"identifier_node_types must be a set of strings, got
        str 'identifier'"``; empty when the shapes are right.
    """
    problems = []
    if not isinstance(plugin.name, str) or not plugin.name:
        problems.append(f"name must be a non-empty string, got {plugin.name!r}")
    for attribute in ("aliases", "extensions"):
        value = getattr(plugin, attribute)
        if not isinstance(value, (tuple, list)) or not all(isinstance(item, str) for item in value):
            problems.append(f"{attribute} must be a tuple of strings, got {type(value).__name__} {value!r}")
    for attribute in _NAME_SET_ATTRIBUTES:
        value = getattr(plugin, attribute)
        if not isinstance(value, (set, frozenset)) or not all(isinstance(item, str) for item in value):
            problems.append(f"{attribute} must be a set of strings, got {type(value).__name__} {value!r}")
    mapping = plugin.subcode_node_types
    if not isinstance(mapping, Mapping):
        problems.append(f"subcode_node_types must be a mapping SubCodeKind -> node types, got {mapping!r}")
    else:
        for kind, types in mapping.items():
            if not isinstance(kind, SubCodeKind):
                problems.append(f"subcode_node_types key {kind!r} is not a SubCodeKind (use SubCodeKind.FOR, not 'For')")
            if not isinstance(types, (set, frozenset)) or not all(isinstance(item, str) for item in types):
                problems.append(f"subcode_node_types[{kind!r}] must be a set of strings, got {types!r}")
    fields = plugin.definition_fields
    if not isinstance(fields, Mapping) or not all(
            isinstance(names, (tuple, list)) and all(isinstance(name, str) for name in names)
            for names in fields.values()):
        problems.append(f"definition_fields must map node types to tuples of field names, got {fields!r}")
    if not isinstance(plugin.name_query, str):
        problems.append(f'name_query must be a string (a tree-sitter query, or "" for none), '
                        f"got {type(plugin.name_query).__name__}")
    if plugin.runner is not None and not isinstance(plugin.runner, TestRunner):
        problems.append(f"runner must be a TestRunner instance or None, got {type(plugin.runner).__name__}")
    return problems


class LanguageHookSpec:
    """The pluggy hook specification (one hook)."""

    @hookspec
    def workbench_languages(self) -> list[LanguagePlugin]:  # type: ignore[empty-body]
        """Return the :class:`LanguagePlugin` instances this plugin provides."""

