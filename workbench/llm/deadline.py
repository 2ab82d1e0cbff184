"""A whole-call deadline for a blocking network call (an LLM answer, an embedding request).

HTTP clients (httpx under litellm and the OpenAI SDK) apply their ``timeout`` to each
socket operation: connect, and every read. A server that sends its headers and then one
byte every few seconds never trips a read timeout, so ``timeout=5`` can hold a call for
minutes, streaming or not. :func:`call_with_deadline` bounds the *whole* call instead,
whatever the provider: the call runs on a helper thread, the caller waits at most
``deadline_s`` and then gives up with :class:`DeadlineExceeded`.

A call past its deadline cannot be interrupted from outside (Python threads cannot be
killed), so it is abandoned: its thread is a daemon that keeps its socket until the
server finishes or the client's own per-read timeout fires, and its answer is thrown
away. The caller, and the run, move on at the deadline.

An abandoned call may still be running when the command ends, e.g. parsing a large answer in
pydantic-core (Rust) for the OpenAI SDK. At interpreter shutdown CPython ends such a daemon
thread with a forced unwind as soon as it needs the GIL again, and unwinding through Rust
frames aborts the process ("FATAL: exception not rethrown", status 134) after all its output
was written. :func:`exit_past_abandoned_calls` ends the process without that shutdown step.

Example::

    >>> from workbench.llm.deadline import call_with_deadline
    >>> call_with_deadline(lambda: 2 + 2, 5.0, what="arithmetic")
    4
"""

from __future__ import annotations

import atexit
import contextvars
import os
import sys
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class DeadlineExceeded(TimeoutError):
    """A call did not finish within its whole-call deadline.

    Attributes:
        what: what was called (``"openai/qwen @ http://127.0.0.1:8000/v1"``).
        deadline_s: the deadline, seconds.
        elapsed_s: seconds waited before giving up (>= ``deadline_s``).
    """

    def __init__(self, what: str, deadline_s: float, elapsed_s: float):
        self.what = what
        self.deadline_s = deadline_s
        self.elapsed_s = elapsed_s
        super().__init__(
            f"{what}: no complete answer within the deadline of {deadline_s:g} s (abandoned after {elapsed_s:.1f} s; "
            f"the server was still connected but had not finished)"
        )


class CallCancelled(Exception):
    """The caller gave up waiting on a call before its deadline (``cancel`` was set)."""


#: how often a wait looks at its ``cancel`` event, seconds
_CANCEL_POLL_S = 0.1

#: the helper threads of calls given up on (past their deadline or cancelled); a finished
#: thread leaves the set when it is collected
_ABANDONED: weakref.WeakSet[threading.Thread] = weakref.WeakSet()


def call_with_deadline(function: Callable[[], T], deadline_s: float | None, *, what: str,
                       cancel: threading.Event | None = None) -> T:
    """Return ``function()``, or raise :class:`DeadlineExceeded` once ``deadline_s`` seconds pass.

    Args:
        function: the blocking call; it runs on a daemon thread with the caller's context
            variables (litellm keeps per-call state there).
        deadline_s: seconds for the whole call, or ``None`` for no deadline (then it runs
            on the caller's thread).
        what: names the call in the error message.
        cancel: when this event is set, the wait ends at once (checked every 0.1 s) and the call
            is abandoned like one past its deadline; ``None``: wait for the deadline.

    Returns:
        what ``function`` returned.

    Raises:
        DeadlineExceeded: the deadline passed first (the call is abandoned, see the module).
        CallCancelled: ``cancel`` was set first (the call is abandoned).
        Exception: whatever ``function`` raised, unchanged, when it failed before the deadline.
    """
    if deadline_s is None:
        return function()
    if deadline_s <= 0:
        raise ValueError(f"a deadline must be > 0 seconds, not {deadline_s}")
    outcome: dict[str, Any] = {}
    finished = threading.Event()
    context = contextvars.copy_context()

    def run() -> None:
        try:
            outcome["value"] = context.run(function)
        except BaseException as error:  # handed to the caller, never lost on the helper thread
            outcome["error"] = error
        finally:
            finished.set()

    started = time.perf_counter()
    helper = threading.Thread(target=run, name=f"deadline:{what}"[:60], daemon=True)
    helper.start()
    cancelled = cancel.is_set if cancel is not None else lambda: False
    done = False
    while not done and not cancelled():
        left = deadline_s - (time.perf_counter() - started)
        if left <= 0:
            break
        done = finished.wait(left if cancel is None else min(left, _CANCEL_POLL_S))
    if not done:
        _ABANDONED.add(helper)
    if not done and cancelled():
        raise CallCancelled(f"{what}: abandoned when the run was stopped")
    if not done:
        raise DeadlineExceeded(what, deadline_s, time.perf_counter() - started)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def abandoned_calls_running() -> int:
    """How many calls given up on (:class:`DeadlineExceeded`, :class:`CallCancelled`) still run."""
    return sum(1 for thread in list(_ABANDONED) if thread.is_alive())


def exit_past_abandoned_calls(status: int) -> None:
    """End the process with ``status`` now if abandoned calls still run; else return.

    Does what interpreter shutdown does first (waits for the non-daemon threads, runs the
    :mod:`atexit` functions, flushes stdout and stderr), then ``os._exit(status)``, so no
    abandoned call's thread is unwound at shutdown (see the module: that can abort the process
    with status 134 instead of the command's own status). A process without abandoned calls
    returns at once and shuts down as usual.

    Args:
        status: the exit status (docs/exit-status.md).
    """
    if not abandoned_calls_running():
        return
    # what Py_FinalizeEx does before it unwinds daemon threads: threading's own shutdown (it wakes
    # idle pool workers, e.g. litellm's, and joins the non-daemon threads), then the atexit functions
    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken pipe: nothing more can be said there
            pass
    os._exit(status)


def worst_case_seconds(timeout_s: float, max_retries: int, retry_wait_s: float, max_backoff_s: float, *,
                       retry_after: bool = True) -> float:
    """The longest one LLM call can take with retries: every attempt runs to its deadline and
    every backoff waits its longest.

    ``timeout_s * (max_retries + 1)`` plus the waits before retries ``1 .. max_retries``
    (:func:`workbench.llm.client.backoff_wait`). The client's own wait before retry ``n`` is at
    most ``min(retry_wait_s * 2**(n-1) + retry_wait_s, max_backoff_s)`` (exponential backoff with
    jitter in ``[0, retry_wait_s]``); a server's ``Retry-After`` (a 429 or 503 of a rate-limited
    API) may stretch any wait up to ``max_backoff_s`` and never further, so with ``retry_after``
    each wait counts as ``max_backoff_s``. A sample makes one such call per step (DSA-CQE: one
    per sub-code and per comparison), so its bound is this times its steps.

    Args:
        timeout_s: the whole-call deadline of one attempt (``--timeout``), seconds.
        max_retries: retries after the first attempt (``--retries``).
        retry_wait_s: the first backoff wait (``--retry-wait``), seconds.
        max_backoff_s: the cap on one backoff wait, seconds.
        retry_after: whether a server can ask for longer waits (served models; the in-process
            ``local/`` models answer without HTTP headers, so only the own backoff counts).

    Returns:
        seconds.

    Example::

        >>> worst_case_seconds(5.0, 2, 1.0, 30.0, retry_after=False)   # 3 attempts x 5 s + waits of 2 s and 3 s
        20.0
        >>> worst_case_seconds(5.0, 2, 1.0, 30.0)   # a server may ask for 30 s before each retry
        75.0
    """
    if retry_after:
        return timeout_s * (max_retries + 1) + max_retries * max_backoff_s
    waits = sum(min(retry_wait_s * 2 ** (n - 1) + retry_wait_s, max_backoff_s) for n in range(1, max_retries + 1))
    return timeout_s * (max_retries + 1) + waits
