"""The worker pool: threads that each own a sandbox slot (and so a user id when root).

Threads suffice: each worker only waits on its sandboxed child process. The number of
tasks in flight is bounded, so a generations file of any size is read lazily.
"""

from __future__ import annotations

import contextvars
import queue
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
            can kill running sandboxes.
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
        if not finished_cleanly:
            if on_interrupt is not None:
                on_interrupt()
            for future in pending:
                future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
