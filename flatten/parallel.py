"""An order-preserving parallel map with a bounded window, so memory stays flat.

Results come back in input order (the output is deterministic) and at most `window` chunks are
in flight, so a slow consumer never lets results pile up in memory. `ordered_chunks` hands a
function whole chunks and sends back one result per chunk: a worker can then fold a chunk's
results into one (the pipeline joins its files' lines and sums their counts), so the caller,
the one serial part of a run, handles a message per chunk rather than an object per item.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from itertools import islice
from typing import TYPE_CHECKING, TypeVar

from flatten.errors import FlattenError

# multiprocessing (and the pickle and socket modules under it) loads when workers start: a
# run on one worker, or on too few files, never starts one and never pays for it.
if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.pool import Pool
    from multiprocessing.process import BaseProcess
    from multiprocessing.synchronize import Lock

T = TypeVar("T")
R = TypeVar("R")

# Below this many items the process start-up costs more than it saves.
MIN_ITEMS_FOR_PROCESSES = 200
# Items per chunk (but the last few, see `chunk_bounds`). Each chunk is a message the parent
# waits for, unpickles and hands on while the workers hold the cores: the parent's CPU in a
# 2-worker run of the docs bench tree is ~55 ms at 32 files a chunk, ~72 ms at 16.
CHUNK_SIZE = 32


def default_workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _start_method() -> str:
    """fork when this process has one thread (workers start in milliseconds and inherit the
    loaded grammars); forkserver otherwise, since forking beside another thread can deadlock."""
    import multiprocessing

    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return "fork"
    return "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def _enter_worker(parent: int | None) -> None:
    """What a worker process does first: take the signals a worker should, die with `parent`
    (the pid of the process it was forked from; None where that is not known here, a
    forkserver's child), and let go of the caller's stdin and stdout."""
    # Ctrl-C is the parent's to handle: it stops the pool and cleans up once. SIGTERM must kill
    # a worker outright, as Pool.terminate() expects; the parent's own handler (which turns
    # SIGTERM into a clean-up) is inherited by fork and would leave a worker blocked on a lock.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent(parent)
    _release_stdio()


# prctl(2): the signal the kernel sends this process when the thread that forked it ends.
_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int | None) -> None:
    """On Linux, have the kernel SIGKILL this worker when its parent ends, however it ends: a
    parent that is SIGKILLed (the OOM killer, `kill -9`, a CI timeout) runs no clean-up, and
    its workers would live on under PID 1, holding the pipes the caller waits on. Elsewhere
    (or should prctl fail) a worker ends when it finds its pipe to the parent closed, after
    the chunk in hand."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0))  # fmt: skip
        except (ImportError, OSError, AttributeError):  # no ctypes, no libc, no prctl
            pass
    # A parent that died between the fork and the prctl call sends no signal: it is gone.
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def _release_stdio() -> None:
    """Point fd 0 and fd 1 at /dev/null: a worker sends its results through a pipe to the
    parent and reads nothing, so it must not hold the caller's stdout open (a reader of
    `flatten | index -`, `$(...)`, a CI log waits for every holder to close it). fd 2 stays:
    a worker that fails outside its task (or a library in it) has only stderr to say why."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):
        if fd != null:
            os.dup2(null, fd)
    if null > 1:
        os.close(null)


def _run_chunk(fn: Callable[[T], R], chunk: list[T]) -> list[R]:
    return [fn(item) for item in chunk]


def ordered_map(
    fn: Callable[[T], R],
    items: list[T],
    *,
    workers: int = 0,
    chunk_size: int = CHUNK_SIZE,
    window: int = 8,
) -> Iterator[R]:
    """`map(fn, items)` over worker processes when that pays off; in order, bounded in memory.

    `fn` must be a module-level function (pickled by reference where workers are not forked).
    """
    chunks = ordered_chunks(partial(_run_chunk, fn), items, workers=workers,
                            chunk_size=chunk_size, window=window)  # fmt: skip
    for results in chunks:
        yield from results


def uses_processes(count: int, workers: int = 0) -> bool:
    """Whether `ordered_chunks` starts worker processes for `count` items (`workers` 0: one
    per CPU): only past one worker and `MIN_ITEMS_FOR_PROCESSES` items."""
    return (workers or default_workers()) > 1 and count >= MIN_ITEMS_FOR_PROCESSES


def ordered_chunks(
    fn: Callable[[list[T]], R],
    items: list[T],
    *,
    workers: int = 0,
    chunk_size: int = CHUNK_SIZE,
    window: int = 8,
) -> Iterator[R]:
    """`fn` of each run of at most `chunk_size` consecutive items (`chunk_bounds`), in order:
    over worker processes when that pays off, with at most `window` chunks in flight. Where
    no process is started, each chunk is one item: folding saves nothing in this process, and
    the caller hears of each item as soon as it is done.

    `fn` must be a module-level function, or a `functools.partial` of one (pickled by reference
    where workers are not forked).
    """
    if not uses_processes(len(items), workers):
        yield from (fn([item]) for item in items)
        return
    workers = workers or default_workers()
    bounds = chunk_bounds(len(items), chunk_size, workers)
    chunks: Iterator[list[T]] = (items[start:end] for start, end in bounds)
    if _start_method() == "fork":
        yield from _forked_map(fn, items, workers, bounds, window)
        return
    import multiprocessing

    method = _start_method()
    # A forkserver's child is the forkserver's, not this process's (it ends when we do).
    parent = None if method == "forkserver" else os.getpid()
    pool = multiprocessing.get_context(method).Pool(workers, initializer=_enter_worker,
                                                    initargs=(parent,))  # fmt: skip
    with _running(pool):
        pending = deque(pool.apply_async(fn, (c,)) for c in islice(chunks, window))
        while pending:
            result = pending.popleft().get()
            for chunk in islice(chunks, 1):
                pending.append(pool.apply_async(fn, (chunk,)))
            yield result


def in_background(fn: Callable[[], R]) -> Callable[[], R]:
    """`fn()`, started in a thread now (to wait on a subprocess beside other work); the call
    returned waits for its result, or raises its error. Call it before `ordered_chunks`: a
    thread still running when workers start makes them forkserver processes, slow to start."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # raised in the caller, when it asks
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="background", daemon=True)
    thread.start()

    def result() -> R:
        thread.join()
        ok, value = outcome[0]
        if not ok:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]

    return result


class WorkerLost(FlattenError):
    """A worker process ended in the middle of a run (killed, out of memory, a crash)."""


def chunk_bounds(count: int, chunk_size: int, workers: int) -> list[tuple[int, int]]:
    """(start, end) of each chunk of `count` items: `chunk_size` items, then fewer as the end
    nears (a share of what is left per worker), so the workers run out of work together
    rather than one idling while the other finishes a full last chunk."""
    bounds, start = [], 0
    while start < count:
        end = start + max(1, min(chunk_size, (count - start) // (2 * workers)))
        bounds.append((start, end))
        start = end
    return bounds


def _forked_map(
    fn: Callable[[list[T]], R],
    items: list[T],
    workers: int,
    bounds: list[tuple[int, int]],
    window: int,
) -> Iterator[R]:
    """`ordered_chunks` over forked workers that inherit `items`: a task is a chunk's number.

    No Pool: its three helper threads cost the parent a core's tenth (its worker-watching
    thread wakes on every result that waits in the pipe) and took the GIL from the loop
    that writes the output. Here the calling thread sends chunk numbers (a few bytes: the
    pipe never fills, so sending never blocks on a worker that is itself blocked on sending
    its results) and reads results, which workers send whole under a lock; a worker that
    dies is seen by its sentinel, where a Pool would wait forever. The Nones that end the
    workers follow the last number at once: a worker with nothing left exits while the
    others finish, so waiting for the workers to exit adds little to the end of the run.
    An exit code 0 is such an end only once the Nones are out; a chunk still missing when no
    worker is left was held by one that ended (`WorkerLost` either way, never a wait).
    """
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = multiprocessing.get_context("fork")
    tasks_in, tasks_out = ctx.Pipe(duplex=False)
    results_in, results_out = ctx.Pipe(duplex=False)
    _widen(results_in)
    take, give = ctx.Lock(), ctx.Lock()
    ends = (tasks_out, results_in)  # the parent's: a worker closes its copies
    processes = [
        ctx.Process(target=_serve, args=(fn, items, bounds, tasks_in, take, results_out,
                                         give, os.getpid(), ends), daemon=True)
        for _ in range(workers)
    ]  # fmt: skip
    for process in processes:
        process.start()
    tasks_in.close()  # the workers' ends: an EOF, not a hang, should they all be gone
    results_out.close()
    chunks = len(bounds)
    sent, done = 0, 0
    finished: dict[int, R] = {}
    watched = [results_in, *(process.sentinel for process in processes)]

    def send_up_to(count: int) -> None:
        nonlocal sent
        while sent < min(count, chunks):
            tasks_out.send(sent)
            sent += 1
            if sent == chunks:
                for _ in processes:
                    tasks_out.send(None)

    def receive() -> None:
        try:
            index, ok, value = results_in.recv()
        except EOFError:  # every worker is gone, and a result with them
            for process in processes:
                process.join(5)
            raise _lost(processes) from None
        if not ok:
            raise value
        finished[index] = value

    try:
        send_up_to(window)
        while done < chunks:
            while done not in finished:
                ready = wait(watched)
                if results_in in ready:
                    receive()
                    continue
                ended = [p for p in processes if p.sentinel in ready]
                for process in ended:
                    process.join(5)  # its exit code is known a moment after its sentinel
                # Exit code 0 is a worker that took its None only once the Nones are out:
                # before, it is one that ended holding a chunk (os._exit(0) in a library).
                if sent < chunks or any(process.exitcode != 0 for process in ended):
                    raise _lost(ended)
                watched = [w for w in watched if w not in ready]
                if len(watched) == 1:  # no worker left: what they sent is in the pipe
                    while done not in finished and results_in.poll():
                        receive()
                    if done not in finished:  # one took a chunk, not a None, and ended
                        raise _lost(ended)
            result = finished.pop(done)
            done += 1
            send_up_to(done + window)
            yield result
        for process in processes:
            process.join()
    finally:
        for process in processes:
            if process.exitcode is None:  # stopped early or failed: not waited for
                process.terminate()
        for process in processes:
            process.join()
        tasks_out.close()
        results_in.close()


def _widen(pipe: Connection) -> None:
    """Make the results pipe hold a few chunks' results (1 MiB; Linux's unprivileged bound),
    so a worker writes one in a go and goes back to work rather than waiting, 64 KiB at a time,
    for the parent to read it. Where that cannot be done the pipe keeps its size."""
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), fcntl.F_SETPIPE_SZ, 1 << 20)
    except (ImportError, AttributeError, OSError):  # not Linux, or over the user's pipe quota
        pass


def _lost(ended: list[BaseProcess]) -> WorkerLost:
    """The error for a worker lost among `ended` (one that did not exit 0, if any did not)."""
    code = next((p.exitcode for p in ended if p.exitcode != 0), ended[0].exitcode)
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return WorkerLost(f"a worker process ended in the middle of the run ({how})",
                      reason="worker-lost",
                      hint="out of memory? --workers 1 runs each file in this process")  # fmt: skip


def _serve(
    fn: Callable[[list[T]], R],
    items: list[T],
    bounds: list[tuple[int, int]],
    tasks: Connection,
    take: Lock,
    results: Connection,
    give: Lock,
    parent: int,
    parents_ends: tuple[Connection, ...],
) -> None:
    """A worker: run `fn` over each chunk it is sent, until it is sent None, or until the
    parent is gone. Its copies of the parent's ends are closed first, so the parent's are the
    only ones: once it ends, however it ends, a worker waiting for a task reads an EOF and one
    sending a result a broken pipe (where no signal ends it first, see `_die_with_parent`)."""
    from multiprocessing.reduction import ForkingPickler

    _enter_worker(parent)
    for theirs in parents_ends:
        theirs.close()
    while True:
        try:
            with take:
                index = tasks.recv()
        except EOFError:  # the parent is gone
            return
        if index is None:
            return
        try:
            start, end = bounds[index]
            message = ForkingPickler.dumps((index, True, fn(items[start:end])))
        except KeyboardInterrupt:  # a stop ends the worker, as ever (no signal raises one
            raise  # here: SIGINT is ignored, SIGTERM kills, see `_enter_worker`)
        except BaseException as exc:  # the parent raises it: a SystemExit too, as the chunk's
            message = ForkingPickler.dumps((index, False, _portable(exc)))
        with give:
            try:
                results.send_bytes(message)
            except BrokenPipeError:  # the parent is gone
                return


def _portable(exc: BaseException) -> Exception:
    """`exc`, or a RuntimeError naming it when it cannot be pickled or is no Exception (a
    SystemExit raised in the parent would end it as if the run had gone well)."""
    from multiprocessing.reduction import ForkingPickler

    if not isinstance(exc, Exception):
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    try:
        ForkingPickler.loads(ForkingPickler.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


@contextmanager
def worker_pool(workers: int) -> Iterator[Pool]:
    """A pool of `workers` forked processes (they inherit the caller's state, so a task can be
    an index into it); threads where forking is unsafe (another thread runs) or unavailable,
    which share that state too. Stopped at the end of the block, whatever happened."""
    import multiprocessing
    from multiprocessing.pool import ThreadPool

    if _start_method() == "fork":
        pool: Pool = multiprocessing.get_context("fork").Pool(
            workers, initializer=_enter_worker, initargs=(os.getpid(),)
        )
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
