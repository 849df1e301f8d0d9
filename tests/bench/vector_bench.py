"""Vector tier benchmarks: index-time embedding overhead and hybrid query latency.

The embeddings server is the tests' real OpenAI-format server, in its own process on 127.0.0.1,
with an embedder that answers at once (a seeded random 384-dimension vector per text), so what
is measured is our side: HTTP round trips, JSON, hashing, SQLite writes, numpy scoring, fusion.
The server's own time (measured inside its handler, read from its /stats) is subtracted from the
index-time figure.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

PROJECT = Path(__file__).resolve().parents[2]
DIMENSION = 384


@contextmanager
def embedding_server(embedder: str = "instant", python: str = sys.executable,
                     dimension: int = DIMENSION) -> Iterator[str]:  # fmt: skip
    """`python -m tests.embedserver` in its own process; yields its base URL."""
    proc = subprocess.Popen(
        [python, "-m", "tests.embedserver", "--embedder", embedder, "--dimension", str(dimension)],
        cwd=PROJECT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def server_seconds(base_url: str) -> float:
    return float(httpx.get(base_url.removesuffix("/v1") + "/stats").json()["busySeconds"])


@dataclass
class VectorMeasurement:
    slices: int
    embed_seconds: float  # embedding the whole store, server time included
    server_seconds: float
    overhead_ms_per_1000: float  # embed_seconds - server_seconds, per 1,000 slices
    matrix_load_ms: float  # the first query's wait for the vectors (mapped, or read from SQLite)
    first_query_ms: float  # the first hybrid query of a new process, median of 3 processes
    p50_ms: float
    p95_ms: float
    queries: int
    # CPU time (every thread of the process), which a machine shared with other work inflates
    # far less than wall time: the first query's, and the median query's
    first_query_cpu_ms: float = 0.0
    cpu_p50_ms: float = 0.0


_FIRST_QUERY = """
import sys, time
from index.search import SearchOptions, search
from index.store import Store
from index.vectors.client import EmbeddingConfig
from index.vectors.stage import VectorTier
store, base, query = sys.argv[1:4]
with Store.open(store, readonly=True) as reader, VectorTier(
    reader, EmbeddingConfig(base_url=base, model="instant-384")
) as vectors:
    started, cpu = time.perf_counter(), time.process_time()
    search(reader, query, SearchOptions(top_k=10), vectors=vectors)
    print(time.perf_counter() - started, time.process_time() - cpu)
"""


def first_query_ms(store: Path, base_url: str, query: str) -> tuple[float, float]:
    """One hybrid query in a fresh process (a one-shot `search`, a newly started MCP server),
    wall and CPU ms: it waits for the store's vectors before it can score."""
    out = subprocess.run(
        [sys.executable, "-c", _FIRST_QUERY, str(store), base_url, query],
        cwd=PROJECT, capture_output=True, text=True, check=True, timeout=300,
    )  # fmt: skip
    wall, cpu = out.stdout.split()[-2:]
    return float(wall) * 1000, float(cpu) * 1000


def measure_hybrid(work: Path, count: int, queries: list[str]) -> VectorMeasurement:
    """Embed the lexical benchmark's store of `count` slices, then time hybrid queries."""
    from index.search import SearchOptions, search
    from index.store import Store
    from index.vectors.backfill import embed_pending
    from index.vectors.client import EmbeddingConfig
    from index.vectors.stage import VectorTier

    with embedding_server() as base:
        config = EmbeddingConfig(base_url=base, model="instant-384")
        with Store.open(work / f"store-{count}") as store:
            report = embed_pending(store, config, reindex=True)
        busy = server_seconds(base)
        latencies, cpu = [], []
        with (
            Store.open(work / f"store-{count}", readonly=True) as reader,
            VectorTier(reader, config) as vectors,
        ):
            started = time.perf_counter()
            vectors.matrix()
            matrix_ms = (time.perf_counter() - started) * 1000
            for query in queries:
                started, used = time.perf_counter(), time.process_time()
                response = search(reader, query, SearchOptions(top_k=10), vectors=vectors)
                latencies.append((time.perf_counter() - started) * 1000)
                cpu.append((time.process_time() - used) * 1000)
                assert response.tier.name == "hybrid", response.tier
        store = work / f"store-{count}"
        firsts = [first_query_ms(store, base, q) for q in queries[:3]]
    latencies.sort()
    return VectorMeasurement(
        count,
        round(report.seconds, 2),
        round(busy, 2),
        round((report.seconds - busy) / count * 1000 * 1000, 1),
        round(matrix_ms, 1),
        round(statistics.median(wall for wall, _ in firsts), 1),
        round(statistics.median(latencies), 2),
        round(latencies[int(len(latencies) * 0.95) - 1], 2),
        len(latencies),
        round(statistics.median(used for _, used in firsts), 1),
        round(statistics.median(cpu), 2),
    )
