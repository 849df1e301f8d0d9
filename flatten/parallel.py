"""An order-preserving parallel map with a bounded window, so memory stays flat.

Results come back in input order (the output is deterministic) and at most `window` chunks are
in flight, so a slow consumer never lets results pile up in memory.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from itertools import islice
from multiprocessing.pool import Pool, ThreadPool
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

# Below this many items the process start-up costs more than it saves.
MIN_ITEMS_FOR_PROCESSES = 200


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _start_method() -> str:
    """fork when this process has one thread (workers start in milliseconds and inherit the
    loaded grammars); forkserver otherwise, since forking beside another thread can deadlock."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _worker_signals() -> None:
    # Ctrl-C is the parent's to handle: it stops the pool and cleans up once. SIGTERM must kill
    # a worker outright, as Pool.terminate() expects; the parent's own handler (which turns
    # SIGTERM into a clean-up) is inherited by fork and would leave a worker blocked on a lock.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _run_chunk(fn: Callable[[T], R], chunk: list[T]) -> list[R]:
    return [fn(item) for item in chunk]


def ordered_map(
    fn: Callable[[T], R],
    items: list[T],
    *,
    workers: int = 0,
    chunk_size: int = 16,
    window: int = 8,
) -> Iterator[R]:
    """`map(fn, items)` over worker processes when that pays off; in order, bounded in memory.

    `fn` must be a module-level function (it is pickled by reference).
    """
    workers = workers or default_workers()
    if workers <= 1 or len(items) < MIN_ITEMS_FOR_PROCESSES:
        yield from map(fn, items)
        return
    chunks: Iterator[list[T]] = (
        items[i : i + chunk_size] for i in range(0, len(items), chunk_size)
    )
    pool = multiprocessing.get_context(_start_method()).Pool(workers, initializer=_worker_signals)
    with _running(pool):
        pending = deque(pool.apply_async(_run_chunk, (fn, c)) for c in islice(chunks, window))
        while pending:
            results = pending.popleft().get()
            for chunk in islice(chunks, 1):
                pending.append(pool.apply_async(_run_chunk, (fn, chunk)))
            yield from results


@contextmanager
def worker_pool(workers: int) -> Iterator[Pool]:
    """A pool of `workers` forked processes (they inherit the caller's state, so a task can be
    an index into it); threads where forking is unsafe (another thread runs) or unavailable,
    which share that state too. Stopped at the end of the block, whatever happened."""
    if _start_method() == "fork":
        pool: Pool = multiprocessing.get_context("fork").Pool(workers, initializer=_worker_signals)
    else:
        pool = ThreadPool(workers)
    with _running(pool):
        yield pool


@contextmanager
def _running(pool: Pool) -> Iterator[Pool]:
    """`pool` until the block ends: closed and joined after it, terminated at once on an
    error, Ctrl-C, or a consumer that stopped early."""
    try:
        yield pool
    except BaseException:
        pool.terminate()
        pool.join()
        raise
    pool.close()
    pool.join()
