"""The worker pool: threads that each own a sandbox slot (and so a user id when root).

Threads suffice: each worker only waits on its sandboxed child process. The number of
tasks in flight is bounded, so a generations file of any size is read lazily.
"""

from __future__ import annotations

import contextvars
import queue
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def run_in_slots(
    items: Iterable[Item],
    work: Callable[[Item, int], Result],
    workers: int,
    *,
    on_interrupt: Callable[[], None] | None = None,
) -> Iterator[Result]:
    """Yield ``work(item, slot)`` for every item, in completion order.

    Each call gets a slot number in ``0 .. workers-1`` that no other running call holds.

    Args:
        items: the work items (consumed lazily).
        work: the function; exceptions propagate to the consumer.
        workers: parallel calls (>= 1).
        on_interrupt: called when the consumer stops early or an exception (e.g.
            ``KeyboardInterrupt``) ends the run, before pending work is cancelled, so it
            can kill running sandboxes. It, the cancelling and the pool's shutdown run to
            their end even when another Ctrl-C comes meanwhile (:func:`_through_ctrl_c`): the
            interrupt already on its way is raised after them.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, not {workers}")
    slots: queue.SimpleQueue[int] = queue.SimpleQueue()
    for slot in range(workers):
        slots.put(slot)

    def with_slot(item: Item) -> Result:
        slot = slots.get()
        try:
            return work(item, slot)
        finally:
            slots.put(slot)

    iterator = iter(items)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="workbench-exec")
    pending: set[Future] = set()
    finished_cleanly = False
    try:
        for item in iterator:
            # each worker runs in the caller's context: a message built there words its options as the
            # caller does (workbench.option_words: config keys under workbench run)
            pending.add(pool.submit(contextvars.copy_context().run, with_slot, item))
            if len(pending) >= 2 * workers:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    yield future.result()
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
        finished_cleanly = True
    finally:
        if finished_cleanly:
            pool.shutdown(wait=True, cancel_futures=True)
        else:
            def stop() -> None:
                if on_interrupt is not None:
                    on_interrupt()
                for future in pending:
                    future.cancel()
                pool.shutdown(wait=True, cancel_futures=True)

            _through_ctrl_c(stop)


def _through_ctrl_c(clean_up: Callable[[], None]) -> None:
    """Run ``clean_up`` to its end although Ctrl-C is pressed again meanwhile.

    A second Ctrl-C while the first one's clean-up killed the running samples raised
    ``KeyboardInterrupt`` inside it: the pool was never shut down and the samples ran on to
    their timeout. In the main thread SIGINT is held off while ``clean_up`` runs (its handler
    only counts); the ``KeyboardInterrupt`` or exception already propagating says what
    happened. A third Ctrl-C raises ``KeyboardInterrupt`` as usual (the handler it had), a way out
    of a clean-up that hangs. SIGTERM is held with it where a handler of Python's turns it into a
    ``KeyboardInterrupt`` too (the ``workbench`` command: :func:`workbench.cli.interrupts.end_sigterm_as_ctrl_c`);
    the two count together. Elsewhere (signals reach only the main thread) it runs as it is.
    """
    if threading.current_thread() is not threading.main_thread():
        clean_up()
        return
    held = []
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}

    def hold(signum, frame) -> None:
        held.append(signum)
        if len(held) > 1:
            handler = previous.get(signum)
            if callable(handler):
                handler(signum, frame)
            raise KeyboardInterrupt

    for number, handler in previous.items():
        if number == signal.SIGINT or callable(handler):
            signal.signal(number, hold)
    try:
        clean_up()
    finally:
        for number, handler in previous.items():
            if number == signal.SIGINT or callable(handler):
                signal.signal(number, handler if handler is not None else signal.default_int_handler)
