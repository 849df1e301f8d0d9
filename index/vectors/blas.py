"""The vector stage's matrix product on one BLAS thread.

Scoring every stored vector is one matrix-vector product that reads the whole matrix (154 MB at
100k x 384): memory-bound, so a second BLAS thread hardly shortens it, while OpenBLAS's helper
threads spin-wait after each call and hold the second core the query's lexical stage runs on
(`VectorTier.nearest_chunks_alongside`). On two cores, one thread took a hybrid query's CPU time
from 28 to 19 ms at 100k x 384. On one thread a row's score no longer depends on the number of
cores: OpenBLAS splits the rows among its threads, and the few rows at an uneven split go through
its edge kernel, whose last bit can differ (at 100k rows on two cores the split is even, and the
scores are bit-for-bit those of the multi-threaded product).

OpenBLAS's thread count belongs to the process (its `_local` setter too, despite the name): it
is set to one for the length of the product and put back after, so another thread's BLAS call in
that window runs on one thread as well (the same result, at most slower). Where numpy's BLAS is
not OpenBLAS (Accelerate, MKL) the product runs as it always did.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

MAPS = Path("/proc/self/maps")  # the shared libraries this process has loaded (Linux)
# (get, set) as OpenBLAS names them, plain and as numpy's wheels build it (scipy-openblas).
_NAMES = (
    ("openblas_get_num_threads", "openblas_set_num_threads"),
    ("scipy_openblas_get_num_threads64_", "scipy_openblas_set_num_threads64_"),
    ("openblas_get_num_threads64_", "openblas_set_num_threads64_"),
)
Threads = tuple[Callable[[], int], Callable[[int], None]]

_lock = threading.Lock()
_inside = 0  # threads inside `one_thread` now
_before = 0  # the count to put back when the last of them leaves


@functools.cache
def _openblas() -> Threads | None:
    """OpenBLAS's thread-count getter and setter, if numpy's BLAS is OpenBLAS."""
    import numpy  # noqa: F401  (its BLAS is loaded with it)

    try:
        loaded = MAPS.read_text().splitlines()
    except OSError:  # not Linux
        return None
    paths = {line.split(maxsplit=5)[-1] for line in loaded if "openblas" in line.lower()}
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path)
        except OSError:
            continue
        for get_name, set_name in _NAMES:
            getter, setter = getattr(library, get_name, None), getattr(library, set_name, None)
            if getter is not None and setter is not None:
                getter.argtypes, getter.restype = [], ctypes.c_int
                setter.argtypes, setter.restype = [ctypes.c_int], None
                return getter, setter
    return None


@contextmanager
def one_thread() -> Iterator[None]:
    """BLAS calls inside the block use one thread (nested and concurrent blocks alike)."""
    global _inside, _before
    with _lock:
        found = _openblas()
        if found is not None:
            if _inside == 0:
                _before = found[0]()
                found[1](1)
            _inside += 1
    try:
        yield
    finally:
        if found is not None:
            with _lock:
                _inside -= 1
                if _inside == 0 and _before > 1:
                    found[1](_before)
