"""workbench's Python test harness. It runs INSIDE the sandbox, standard library only,
as ``python -S -s -B harness.py TOKEN_FD PASS_FD PROGRAM TESTS [ENTRY_POINT]``, or as
``__main__`` of a process forked from a worker's interpreter started with those options
(``workbench.execute.zygote``: the runner's ``RunSpec.python_main``), which is why every
way out ends in ``os._exit``.

Order of events (the pass-token protocol of ``workbench.languages.spec.RunSpec``):

1. read this run's token from TOKEN_FD and close it, before any candidate code exists;
2. make the process non-dumpable (no ptrace, no ``/proc/PID/mem`` for the candidate's
   own child processes) and install an audit hook (PEP 578) that holds the token, the
   only reference to it, and refuses the known ways to reach it from Python code:
   ``gc`` object walks, trace and profile functions, other audit hooks, ``ctypes``
   memory access and opening ``/proc/*/mem``; ``sys.settrace`` may only switch tracing off;
3. read TESTS and remove their file (a candidate that read it would answer every assert; a
   failing check's traceback quotes its line from the text kept in ``main``), compile
   PROGRAM (exit 3 on a syntax error) and TESTS, run PROGRAM, then TESTS in a
   namespace whose builtins are a snapshot taken before the candidate ran, then
   ``check(ENTRY_POINT)`` when the tests define ``check``;
4. only if all of that returned normally, raise the audit event that makes the hook
   write the token to PASS_FD. The hook accepts that event only from this harness's own
   ``main`` frame (captured before any candidate code ran), once.

Exit statuses: 0 passed, 1 a check failed (``AssertionError``), 2 any other error
(including ``exit()`` called by the candidate), 3 the program does not compile, 4 the
harness was misused or the tests do not compile.

Threat model: ``exit(0)``/``os._exit(0)``, killing the parent, printing markers, replaying
an old token, redefining ``check``, ``AssertionError`` or builtins (patched in ``builtins`` or
shadowed by a top-level name) cannot produce a pass.
The function under test is wrapped: a return value (or an element of a returned list,
tuple, set or dict) whose class the candidate created and gave comparison, truth,
arithmetic or conversion dunders, or whose pre-existing class it gave new ones, is refused
(the "always equal" object). Until the verdict is in ``main``'s locals, call frames are out
of reach (``_FRAME_EVENTS``): from any frame, ``f_back`` leads to ``main`` and the guard.
Audit hooks are not a security boundary (PEP 578 says so); a candidate that exploits the
interpreter itself could still forge a pass. It cannot leave the sandbox either way.
"""

import builtins
import os
import sys
import types  # noqa: F401  imported now: at import it reads a traceback's frame, which is refused later

#: with ``-S`` the runner hands over, in this variable, what ``site`` would have given the
#: program (see :func:`_restore_site`)
SITE_VARIABLE = "WORKBENCH_PYTHON_SITE"


def _restore_site():
    """Give a program started with ``-S`` what ``site`` gives it, without running ``site``.

    ``site`` costs most of an interpreter's start-up where ``.pth`` files import code (an
    editable install's finder imports ``pathlib`` and ``re``): it was about half of each
    sample's CPU time. The runner asked the interpreter once for the result (prefixes and
    ``sys.path``, ``.pth`` folders included) and passes it as lines of ``SITE_VARIABLE``:
    ``prefix``, ``exec_prefix``, then the ``sys.path`` entries. The ``exit``/``quit``/``help``/
    ``copyright`` builtins come from ``site``'s own functions. Not carried over: what ``.pth``
    lines *execute* (import hooks of editable installs, setuptools' distutils shim) and
    ``sitecustomize``.
    """
    facts = os.environ.pop(SITE_VARIABLE, None)
    if not sys.flags.no_site or facts is None:
        return
    lines = facts.split("\n")
    if len(lines) < 2:
        return
    sys.prefix, sys.exec_prefix = lines[0], lines[1]
    sys.path[:] = [entry for entry in lines[2:] if entry]
    import site  # importing it with -S runs nothing; its helpers set the builtins

    site.setquit()
    site.setcopyright()
    site.sethelper()


_restore_site()

EXIT_FAILED, EXIT_ERROR, EXIT_SYNTAX, EXIT_MISUSE = 1, 2, 3, 4

_BLOCKED_EVENTS = frozenset({
    "gc.get_objects", "gc.get_referrers", "gc.get_referents",
    "sys._current_frames", "sys._current_exceptions", "sys.setprofile",
    "sys.addaudithook", "cpython.PyInterpreterState_Clear",
})


#: /proc files that expose a process's memory or environment
_PRIVATE_PROC_FILES = ("mem", "pagemap", "environ", "syscall")

#: audit events that hand out a frame: from any frame, ``f_back`` leads to the harness's own
#: frames, whose locals hold the return guard (whose closure cells are writable)
_FRAME_EVENTS = frozenset({"sys._getframe", "sys._getframemodulename"})
#: attributes whose reads raise ``object.__getattr__`` and return a frame
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})


def _make_settrace_guard():
    """Return a replacement for ``sys.settrace`` that only ever switches tracing off.

    A trace function could jump (``frame.f_lineno = ...``) over the checks in ``main``;
    ``doctest.testmod()``, which generated code calls now and then, only restores the
    trace function it found, which is ``None`` here, so it keeps working.
    """
    real_settrace = sys.settrace

    def settrace(function):
        if function is not None:
            raise RuntimeError("workbench sandbox: sys.settrace is not allowed")
        real_settrace(None)

    return settrace


def _make_resolver():
    """Return ``resolve(path)``: the absolute path with every symlink followed, built only
    from C functions bound now (``os.path.realpath`` is Python code whose module globals
    the candidate could patch)."""
    readlink, getcwd, runtime_error = os.readlink, os.getcwd, OSError

    def resolve(path):
        if path[:1] != "/":
            path = getcwd() + "/" + path
        pending = [part for part in path.split("/")][::-1]
        parts, hops = [], 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(part)
            try:
                target = readlink("/" + "/".join(parts))
            except runtime_error:
                continue
            hops += 1
            if hops > 40:
                break
            parts.pop()
            if target[:1] == "/":
                parts = []
            pending.extend([piece for piece in target.split("/")][::-1])
        return "/" + "/".join(parts)

    return resolve


def _make_hook(token, pass_fd, settrace_code):
    """Return the audit hook that alone knows ``token`` (bytes)."""
    # bound now: the candidate can patch this module's globals (it is __main__) and builtins
    getframe, write, close, realpath = sys._getframe, os.write, os.close, _make_resolver()
    blocked, private_proc_files = _BLOCKED_EVENTS, _PRIVATE_PROC_FILES
    frame_events, frame_attributes = _FRAME_EVENTS, _FRAME_ATTRIBUTES
    is_instance, text, raw, refused, no_frame = isinstance, str, bytes, RuntimeError, ValueError
    state = {"frame": None, "done": False, "resolving": False, "verdict": False, "own_call": False}

    def caller():
        # the hook's own sys._getframe raises "sys._getframe" again: that one is let through
        state["own_call"] = True
        try:
            return getframe(2)
        finally:
            state["own_call"] = False

    def hook(event, args):
        if state["own_call"]:
            return
        if event == "workbench.arm":
            if state["frame"] is None:
                state["frame"] = caller()
            return
        if event in ("workbench.verdict", "workbench.pass"):
            if state["done"] or state["frame"] is None or caller() is not state["frame"]:
                raise refused("workbench: success can only be reported by the harness")
            if event == "workbench.verdict":
                state["verdict"] = True
                return
            state["done"] = True
            write(pass_fd, token + b"\n")
            close(pass_fd)
            return
        if state["frame"] is None:
            return
        if not state["verdict"] and (
            event in frame_events or (event == "object.__getattr__" and len(args) > 1 and args[1] in frame_attributes)
        ):
            # ValueError, as where frames do not exist: the standard library's own callers
            # (namedtuple, typing, enum, logging) then carry on without one
            raise no_frame("workbench sandbox: access to call frames is not allowed while the tests run")
        if event == "sys.settrace":
            if caller().f_code is not settrace_code:
                raise refused("workbench sandbox: sys.settrace is not allowed")
            return
        if event in blocked or (event[:7] == "ctypes." and event != "ctypes.dlopen"):
            raise refused(f"workbench sandbox: {event} is not allowed")
        if event == "open" and args and is_instance(args[0], (text, raw)) and not state["resolving"]:
            path = args[0].decode("utf-8", "replace") if is_instance(args[0], raw) else args[0]
            state["resolving"] = True
            try:
                real = realpath(path)  # "../../proc/self/mem" and symlinks lead here too
            finally:
                state["resolving"] = False
            if real[:6] == "/proc/" and real.rstrip("/").rsplit("/", 1)[-1] in private_proc_files:
                raise refused(f"workbench sandbox: opening {path} is not allowed")

    return hook


#: dunders a class may define and still not change how its instances compare or convert
_HARMLESS_DUNDERS = frozenset({
    "__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__init__", "__slots__",
    "__annotations__", "__orig_bases__", "__parameters__", "__match_args__", "__firstlineno__",
    "__static_attributes__", "__dataclass_fields__", "__dataclass_params__",
})
#: the most elements of a return value inspected per call
_INSPECT_BUDGET = 200_000


def _make_dunder_check():
    """Return ``dunders_since(cls, before)``: whether ``cls.__dict__`` has a dunder that could
    change how its instances compare or convert (any but ``_HARMLESS_DUNDERS``) and that is not,
    by identity, the value in ``before`` (a copy of ``cls.__dict__`` taken earlier; ``{}`` for a
    class that did not exist then). A new function per caller, made from names bound now: a
    module-level one could be patched (``__code__``) by the candidate."""
    attribute, type_of, text, harmless, missing = type.__getattribute__, type, str, _HARMLESS_DUNDERS, object()

    def dunders_since(cls, before):
        for name, value in attribute(cls, "__dict__").items():
            if (type_of(name) is text and name[:2] == "__" and name[-2:] == "__" and name not in harmless
                    and before.get(name, missing) is not value):
                return True
        return False

    return dunders_since


def _existing_classes():
    """Return id -> (class, a copy of its ``__dict__``) for every class that exists now
    (``__subclasses__`` from ``object``): the copy for classes made in Python code (heap types),
    whose dunders can be reassigned later, ``None`` for C types, whose cannot. (The copy is a C
    call; sorting the dunders of each class instead cost about 1 ms per sample.)"""
    found, stack, attribute = {}, [object], type.__getattribute__
    heap_flag = 1 << 9  # Py_TPFLAGS_HEAPTYPE
    while stack:
        cls = stack.pop()
        if id(cls) in found:
            continue
        found[id(cls)] = (cls, dict(attribute(cls, "__dict__")) if attribute(cls, "__flags__") & heap_flag else None)
        try:
            stack.extend(type.__subclasses__(cls))
        except TypeError:
            pass
    return found


def _make_return_guard(known_classes):
    """Return ``guard(function)``: a wrapper that refuses return values whose class has
    comparison, truth, arithmetic or conversion dunders that the candidate gave it (the
    "always equal" object that fools ``==`` asserts): a class created after the harness
    started that defines such dunders, or one that existed before whose dunders changed
    since (``type(os.environ).__eq__ = ...``). Classes that existed before and kept their
    dunders (builtins, the standard library loaded so far, C types such as numpy's) and new
    classes without such dunders pass.

    Args:
        known_classes: :func:`_existing_classes`, taken before any candidate code ran.

    Everything it uses is bound here, before candidate code runs (the harness's module
    globals and ``builtins`` can be patched by the candidate; its frames, whose locals lead
    here, are out of reach while the tests run: ``_FRAME_EVENTS``), and classes are compared
    by identity, never through ``__hash__``/``__eq__`` that a metaclass could redefine.
    """
    type_of, ident, type_error, none = type, id, TypeError, {}
    attribute = type.__getattribute__
    plain = (int, float, str, bool, type(None), bytes, complex)
    sequences = (list, tuple, set, frozenset)
    dict_type = dict
    dunders_since, budget_per_call = _make_dunder_check(), _INSPECT_BUDGET
    heap_flag = 1 << 9  # Py_TPFLAGS_HEAPTYPE: only heap types can be made from Python code

    def suspicious(cls, verdicts):
        cached = verdicts.get(ident(cls))
        if cached is not None and cached[0] is cls:
            return cached[1]
        verdict = False
        for base in attribute(cls, "__mro__"):
            if not (attribute(base, "__flags__") & heap_flag):
                continue
            known = known_classes.get(ident(base))
            # a class that existed: patched since the harness started? A new one: any such dunder?
            verdict = dunders_since(base, known[1] if known is not None and known[0] is base else none)
            if verdict:
                break
        # remembered for this call only: a class harmless now can be patched before the next
        verdicts[ident(cls)] = (cls, verdict)
        return verdict

    def inspect(value):
        stack, budget, verdicts = [value], budget_per_call, {}
        while stack and budget > 0:
            item = stack.pop()
            budget -= 1
            cls = type_of(item)
            if cls in plain:
                continue
            if suspicious(cls, verdicts) or suspicious(type_of(cls), verdicts):
                raise type_error(
                    "workbench harness: the program returned an instance of a class whose comparison "
                    "or conversion it redefined; such values are not accepted"
                )
            if cls in sequences:
                stack.extend(item)
            elif cls is dict_type:
                stack.extend(item.keys())
                stack.extend(item.values())

    def guard(function):
        def guarded(*args, **kwargs):
            result = function(*args, **kwargs)
            inspect(result)
            return result

        guarded.__name__ = getattr(function, "__name__", "candidate")
        guarded.__doc__ = getattr(function, "__doc__", None)
        guarded.__wrapped__ = function
        return guarded

    return guard


def _read_token(fd):
    chunks = []
    try:
        while True:
            chunk = os.read(fd, 256)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).strip()


def _make_nondumpable():
    """``prctl(PR_SET_DUMPABLE, 0)`` through ``_ctypes`` itself: importing ``ctypes`` (its
    type classes, ``struct``) cost each sample about 2 ms more than the call."""
    try:
        import _ctypes

        class Int(_ctypes._SimpleCData):
            _type_ = "i"

        class Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = Int

        class Library:
            _handle = _ctypes.dlopen(None, os.RTLD_NOW)

        Function(("prctl", Library()))(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # not Linux, or no ctypes: the pid namespace still isolates
        pass


def _say(message):
    """Write ``message`` to the real stderr; never raises (the candidate may have broken stdio)."""
    for stream in (sys.stdout, sys.__stderr__):
        try:
            if stream is sys.__stderr__:
                stream.write(message)
            stream.flush()
        except BaseException:
            pass


def _exception_text(error, tests_text=None):
    """The last lines of ``error``'s traceback; a frame of the tests quotes its line from
    ``tests_text`` (their file is gone by then: :func:`main` removes it before candidate code runs)."""
    try:
        import traceback  # only on failure: it pulls in linecache, tokenize and re, a start-up cost

        if tests_text is not None:
            import linecache

            # mtime None: an entry checkcache never drops (as for a module's __loader__ source)
            linecache.cache["tests.py"] = (len(tests_text), None, tests_text.splitlines(True), "tests.py")
        lines = traceback.format_exception(type(error), error, error.__traceback__)
        return "".join(lines[-12:])
    except BaseException:
        return "harness: an exception that cannot be formatted\n"


def main():
    # Everything the verdict depends on is bound to locals before candidate code runs:
    # the candidate can patch modules (os._exit, sys.audit) but not this frame's locals.
    audit, exit_now = sys.audit, os._exit
    assertion_error, system_exit, base_exception = AssertionError, SystemExit, BaseException
    exit_failed, exit_error, exit_syntax, exit_misuse = EXIT_FAILED, EXIT_ERROR, EXIT_SYNTAX, EXIT_MISUSE
    if len(sys.argv) < 5:
        _say("usage: harness.py TOKEN_FD PASS_FD PROGRAM TESTS [ENTRY_POINT]\n")
        exit_now(EXIT_MISUSE)
    token_fd, pass_fd = int(sys.argv[1]), int(sys.argv[2])
    program_path, tests_path = sys.argv[3], sys.argv[4]
    entry_point = sys.argv[5] if len(sys.argv) > 5 else ""
    token = _read_token(token_fd)
    if not token:
        _say("harness: no token on the token fd\n")
        exit_now(EXIT_MISUSE)
    _make_nondumpable()
    sys.settrace = _make_settrace_guard()
    hook = _make_hook(token, pass_fd, sys.settrace.__code__)
    del token
    sys.addaudithook(hook)
    del hook
    guard = _make_return_guard(_existing_classes())
    audit("workbench.arm")
    clean_builtins = dict(vars(builtins))

    with open(program_path, encoding="utf-8", errors="surrogateescape") as handle:
        program_text = handle.read()
    with open(tests_path, encoding="utf-8", errors="surrogateescape") as handle:
        tests_text = handle.read()
    try:  # the tests live on in this frame only: a candidate that read their file would answer every assert
        os.unlink(tests_path)
    except OSError:
        pass
    try:
        program_code = compile(program_text, "program.py", "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError) as error:
        # no candidate code has run: the verdict is in, and formatting the error may read frames
        audit("workbench.verdict")
        _say(_exception_text(error))
        exit_now(exit_syntax)
    try:
        tests_code = compile(tests_text, "tests.py", "exec", dont_inherit=True, optimize=0)
    except (SyntaxError, ValueError) as error:
        audit("workbench.verdict")
        _say("harness: the test code does not compile\n" + _exception_text(error, tests_text))
        exit_now(exit_misuse)

    # not "__main__": a program's `if __name__ == "__main__":` demo does not run, as in HumanEval's
    # execution.py, evalplus and bigcode-evaluation-harness, whose exec() globals have no __main__ either
    namespace = {"__name__": "program", "__builtins__": builtins, "__file__": "program.py"}
    checks_returned = False
    status, error = exit_error, None
    try:
        exec(program_code, namespace)
        # the tests see the program's names, but never its versions of builtins: a top-level
        # `abs = lambda x: 0` would answer the tests' own `abs(...)` before the builtins do
        test_namespace = {
            name: value for name, value in namespace.items()
            if type(name) is not str or name[:2] == "__" or name not in clean_builtins
        }
        test_namespace["__builtins__"] = dict(clean_builtins)
        if entry_point and callable(namespace.get(entry_point)):
            # tests that look the function up themselves (MultiPL-E's test_check) get the guard too
            test_namespace[entry_point] = guard(namespace[entry_point])
        exec(tests_code, test_namespace)
        check = test_namespace.get("check")
        if entry_point and callable(check):
            if entry_point not in namespace:
                raise NameError(f"the program does not define {entry_point!r}")
            check(guard(namespace[entry_point]))
        checks_returned = True
    except assertion_error as caught:
        status, error = exit_failed, caught
    except system_exit:
        error = "harness: the program called exit() before the checks completed\n"
    except base_exception as caught:
        error = caught
    try:
        # the outcome is in this frame's locals now, out of the candidate's reach: frames may
        # be read again (formatting a traceback reads them)
        audit("workbench.verdict")
    except base_exception as caught:
        _say(_exception_text(caught, tests_text))
        exit_now(exit_error)
    if error is not None:
        _say(error if type(error) is str else _exception_text(error, tests_text))
    if not checks_returned:
        exit_now(status)
    try:
        audit("workbench.pass")
    except base_exception as caught:
        _say(_exception_text(caught, tests_text))
        exit_now(exit_error)
    _say("")
    exit_now(0)


if __name__ == "__main__":
    main()
