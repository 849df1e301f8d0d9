"""`ordered_map` and `ordered_chunks` over forked workers: `map`'s results in `map`'s order, a
worker's error raised in the caller, and a worker that dies an error of its own instead of a wait
without end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.parallel import (
    MIN_ITEMS_FOR_PROCESSES,
    _start_method,
    chunk_bounds,
    in_background,
    ordered_chunks,
    ordered_map,
)
from tests.conftest import PROJECT
from tests.processes import still_running

# Items enough for worker processes, a chunk size and a window: any run's shape.
_any_run = given(
    st.lists(st.integers(0, 10**6), min_size=MIN_ITEMS_FOR_PROCESSES, max_size=700),
    st.integers(1, 40),
    st.integers(1, 12),
)


def _square_or_fail(x: int) -> int:
    if x == -1:
        raise ValueError("minus one")
    return x * x


@settings(max_examples=10, deadline=None)
@_any_run
def test_results_come_in_input_order_whatever_the_chunks_and_window(items, chunk_size, window):
    got = list(ordered_map(_square_or_fail, items, workers=2, chunk_size=chunk_size,
                           window=window))  # fmt: skip
    assert got == [x * x for x in items]


def test_an_error_in_a_worker_is_raised_in_the_caller():
    items = list(range(MIN_ITEMS_FOR_PROCESSES * 2))
    items[300] = -1
    with pytest.raises(ValueError, match="minus one"):
        list(ordered_map(_square_or_fail, items, workers=2))


def test_a_consumer_that_stops_early_leaves_no_worker_behind():
    before = set(os.listdir("/proc/self/task")), _children()
    results = ordered_map(_square_or_fail, list(range(5000)), workers=2, chunk_size=4)
    assert next(results) == 0
    results.close()
    assert _children() == before[1]


def _children() -> set[int]:
    path = f"/proc/self/task/{os.getpid()}/children"
    with open(path) as handle:
        return {int(pid) for pid in handle.read().split()}


_KILLED = textwrap.dedent(
    """
    import os, signal
    from flatten.errors import FlattenError
    from flatten.parallel import ordered_map

    def die_on_300(x):
        if x == 300:
            os.kill(os.getpid(), signal.SIGKILL)
        return x

    try:
        list(ordered_map(die_on_300, list(range(1000)), workers=2))
    except FlattenError as exc:
        print(exc.reason, exc.message)
    """
)


def test_a_worker_killed_mid_run_is_a_named_error_not_a_hang():
    done = subprocess.run([sys.executable, "-c", _KILLED], cwd=PROJECT, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("worker-lost a worker process ended in the middle of the run")
    assert f"killed by signal {int(signal.SIGKILL)}" in done.stdout


_ENDED_QUIETLY = textwrap.dedent(
    """
    import os, sys
    from flatten.errors import FlattenError
    from flatten.parallel import ordered_map

    how, at = sys.argv[1], int(sys.argv[2])

    def end_at(x):
        if x == at:
            if how == "exit":  # a library ending the process itself: no result, exit code 0
                os._exit(0)
            sys.exit(0)
        return x

    try:
        list(ordered_map(end_at, list(range(1000)), workers=2))
    except FlattenError as exc:
        print(type(exc).__name__, exc.reason, exc.message)
    except Exception as exc:
        print(type(exc).__name__, exc)
    """
)


def _ended_quietly(how: str, at: int) -> str:
    # Run apart, with a bound: the failure this guards against is a wait without end.
    done = subprocess.run([sys.executable, "-c", _ENDED_QUIETLY, how, str(at)], cwd=PROJECT,
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("at", [100, 999])  # a chunk sent early; the last chunk, Nones sent
def test_a_worker_that_exits_0_holding_a_chunk_is_a_lost_worker_not_a_hang(at):
    assert _ended_quietly("exit", at) == (
        "WorkerLost worker-lost a worker process ended in the middle of the run (exit code 0)"
    )


@pytest.mark.parametrize("at", [100, 999])
def test_sys_exit_in_the_function_is_an_error_of_its_chunk_raised_in_the_caller(at):
    # Not an end of the worker (its chunk lost), nor a SystemExit ending the caller quietly.
    assert _ended_quietly("sys.exit", at) == "RuntimeError SystemExit: 0"


def _slow_last(x: int) -> int:
    if x == 399:  # the last item: the other worker runs out of chunks, is sent None and exits
        import time

        time.sleep(0.5)
    return x


def test_a_worker_that_ends_when_the_chunks_run_out_is_not_a_lost_worker():
    # The workers are sent their Nones with the last chunk's number: one exits while the
    # other still works, and its ended process must not read as a worker that died.
    items = list(range(400))
    assert list(ordered_map(_slow_last, items, workers=2, chunk_size=4)) == items
    assert not _children()


_PARENT_KILLED = textwrap.dedent(
    """
    import multiprocessing, os, signal, sys, time
    from flatten import parallel

    def slow(x):
        time.sleep(0.002)
        return x

    def killed_after_one(results):
        next(results)
        print(*(p.pid for p in multiprocessing.active_children()), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    if sys.argv[1] == "pipes only":  # as where prctl is not to be had
        parallel._die_with_parent = lambda parent: None
    if sys.argv[2] == "pool":
        with parallel.worker_pool(2) as pool:
            killed_after_one(pool.imap(slow, range(100000)))
    else:
        killed_after_one(parallel.ordered_map(slow, list(range(100000)), workers=2, chunk_size=40))
    """
)


@pytest.mark.parametrize(
    ("how", "where"), [("kernel", "chunks"), ("pipes only", "chunks"), ("kernel", "pool")]
)
def test_workers_end_with_a_parent_killed_outright(how, where):
    # capture_output waits for EOF on stdout and stderr: a worker that outlived the parent
    # holding either was the hang (TimeoutExpired here).
    try:
        done = subprocess.run([sys.executable, "-c", _PARENT_KILLED, how, where], cwd=PROJECT,
                              capture_output=True, text=True, timeout=120)  # fmt: skip
    except subprocess.TimeoutExpired as hung:
        _end_survivors(_pids(hung.stdout))
        raise
    assert done.returncode == -signal.SIGKILL, done.stderr
    workers = _pids(done.stdout)
    assert len(workers) == 2 and "Traceback" not in done.stderr
    assert _end_survivors(workers) == []


def _pids(printed: str | bytes | None) -> list[int]:
    text = printed.decode() if isinstance(printed, bytes) else printed or ""
    return [int(pid) for pid in text.split()]


def _end_survivors(pids: list[int]) -> list[int]:
    """Those of `pids` still running after a generous wait, SIGKILLed then (not left to the
    rest of the suite)."""
    survivors = still_running(dict.fromkeys(pids))
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    return survivors


_ONE_PROCESS = textwrap.dedent(
    """
    import sys
    from flatten.parallel import MIN_ITEMS_FOR_PROCESSES, ordered_map

    assert list(ordered_map(abs, [-1] * 1000, workers=1)) == [1] * 1000
    assert list(ordered_map(abs, [-1] * (MIN_ITEMS_FOR_PROCESSES - 1), workers=2))
    print("multiprocessing" in sys.modules)
    list(ordered_map(abs, [-1] * MIN_ITEMS_FOR_PROCESSES, workers=2))
    print("multiprocessing" in sys.modules)
    """
)


def test_a_run_that_starts_no_worker_never_loads_multiprocessing():
    done = subprocess.run([sys.executable, "-c", _ONE_PROCESS], cwd=PROJECT, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True"]


def _chunk_sum(chunk: list[int]) -> tuple[int, int]:
    return len(chunk), sum(chunk)


@settings(max_examples=10, deadline=None)
@_any_run
def test_chunks_are_folded_whole_and_come_back_in_order(items, chunk_size, window):
    got = list(ordered_chunks(_chunk_sum, items, workers=2, chunk_size=chunk_size,
                              window=window))  # fmt: skip
    chunks = [items[start:end] for start, end in chunk_bounds(len(items), chunk_size, 2)]
    assert got == [(len(chunk), sum(chunk)) for chunk in chunks]


@given(st.integers(0, 5000), st.integers(1, 64), st.integers(1, 8))
def test_chunks_cover_the_items_in_order_and_shrink_only_towards_the_end(count, size, workers):
    bounds = chunk_bounds(count, size, workers)
    assert [i for start, end in bounds for i in range(start, end)] == list(range(count))
    sizes = [end - start for start, end in bounds]
    assert all(1 <= n <= size for n in sizes) and sizes == sorted(sizes, reverse=True)
    # Full chunks while there is plenty left: the last few are what shrink.
    assert sizes.count(size) >= (count - 2 * workers * size) // size


def test_without_workers_each_item_is_a_chunk_of_its_own():
    # The caller hears of every item as it is done (a progress hook per file, in order).
    assert list(ordered_chunks(_chunk_sum, [3, 4, 5], workers=2)) == [(1, 3), (1, 4), (1, 5)]
    items = list(range(MIN_ITEMS_FOR_PROCESSES))
    assert list(ordered_chunks(_chunk_sum, items, workers=1)) == [(1, x) for x in items]


def test_a_background_call_gives_its_result_and_leaves_no_thread_to_fork_beside():
    result = in_background(lambda: subprocess.run(["git", "--version"], capture_output=True))
    assert result().returncode == 0
    assert threading.active_count() == 1  # workers forked now are forked, not forkserver's
    assert _start_method() == "fork"


def test_a_background_call_raises_its_error_in_the_caller():
    def fail() -> None:
        raise ValueError("in the thread")

    result = in_background(fail)
    with pytest.raises(ValueError, match="in the thread"):
        result()
