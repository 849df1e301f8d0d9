"""The two stores side by side: SQLite and PostgreSQL + pgvector on the same slices and vectors.

Per store: the first load's rate, a no-op reload (on Postgres, zero row writes asserted through
`pg_stat_user_tables`), a reload with 1% of the documents changed, embedding every slice
(384 dimensions, the tests' embeddings server answering at once), lexical, vector and hybrid
query latency (p50/p95), disk per slice, the loader's peak memory (this process's peak RSS over
the three loads) and the server's (the peak of its processes' summed PSS, sampled each second:
shared buffers counted once), and on Postgres the HNSW build alone. The Postgres server is the
tests' own (tests/pgserver.py: the pinned wheel's PostgreSQL 18 + pgvector 0.8.2, fsync off, on
loopback). Each phase is logged to stderr as it ends (with the load average), so a long run
that is stopped still tells its rates.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from index_bench import bench_queries, write_slices  # run.py puts tests/bench on the path
from vector_bench import PROJECT, embedding_server

if str(PROJECT) not in sys.path:  # tests.pgserver, the test suite's own server
    sys.path.insert(0, str(PROJECT))


@dataclass
class StoreMeasurement:
    store: str
    slices: int
    load_seconds: float
    slices_per_s: float
    noop_reload_seconds: float
    # Postgres: rows inserted, updated or deleted by the no-op reload in every table but
    # `corpora` (whose one row records when the corpus was last loaded, as on SQLite)
    noop_row_writes: int | None
    churn_reload_seconds: float  # 1% of the documents changed
    embed_seconds: float
    lexical_p50_ms: float
    lexical_p95_ms: float
    vector_p50_ms: float
    vector_p95_ms: float
    hybrid_p50_ms: float
    hybrid_p95_ms: float
    bytes_per_slice: float
    queries: int
    hnsw_build_seconds: float | None = None  # Postgres: CREATE INDEX ... USING hnsw alone
    loader_peak_mb: float | None = None  # this process's peak RSS over the three loads
    server_peak_mb: float | None = None  # Postgres: peak summed PSS of the server's processes
    load_average: str = ""  # 1-minute load average at the start and the end of the run


def log(message: str) -> None:
    """A phase's figure as it ends, with the load average: a stopped run still tells them."""
    load = os.getloadavg()[0]
    print(f"{time.strftime('%H:%M:%S')} load {load:.1f} {message}", file=sys.stderr, flush=True)


def _status_kb(pid: int | str, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


@contextmanager
def peak_rss_mb() -> Iterator[list[float]]:
    """This process's peak RSS (MB) over the block: VmHWM, reset first (clear_refs 5)."""
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")
    peak = [0.0]
    yield peak
    peak[0] = round(_status_kb("self", "VmHWM") / 1024, 1)


class ServerMemory:
    """The peak of the server's memory: the summed PSS (proportional set size, so the shared
    buffers every backend maps count once) of the postmaster and its children, sampled each
    second on a thread."""

    def __init__(self, data_dir: Path) -> None:
        self.postmaster = int((data_dir / "postmaster.pid").read_text().split()[0])
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _pids(self) -> list[int]:
        pids = [self.postmaster]
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as stat:
                        if int(stat.read().rsplit(")", 1)[1].split()[1]) == self.postmaster:
                            pids.append(int(entry))
                except (OSError, ValueError, IndexError):
                    continue
        return pids

    def sample(self) -> int:
        total = 0
        for pid in self._pids():
            try:
                with open(f"/proc/{pid}/smaps_rollup") as rollup:
                    for line in rollup:
                        if line.startswith("Pss:"):
                            total += int(line.split()[1])
                            break
            except OSError:
                continue
        self.peak_kb = max(self.peak_kb, total)
        return total

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            self.sample()

    def __enter__(self) -> ServerMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def peak_mb(self) -> float:
        return round(self.peak_kb / 1024, 1)


@contextmanager
def timed_hnsw_build(memory: str | None) -> Iterator[list[float]]:
    """Time PostgreSQL's HNSW build (one CREATE INDEX after the backfill) on its own, with
    `memory` as its maintenance_work_mem: the store's default (512 MB) holds a 100k x 384
    graph, not a 1M one, and a graph that outgrows it is built on disk, many times slower."""
    from index.postgres import vectors

    spent: list[float] = []
    build, default_memory = vectors.ensure_index, vectors.BUILD_MEMORY

    def ensure_index(db) -> None:  # type: ignore[no-untyped-def]
        started = time.perf_counter()
        build(db)
        spent.append(time.perf_counter() - started)
        log(f"HNSW index step {spent[-1]:.1f} s (maintenance_work_mem {vectors.BUILD_MEMORY})")

    vectors.ensure_index = ensure_index
    if memory:
        vectors.BUILD_MEMORY = memory
    try:
        yield spent
    finally:
        vectors.ensure_index, vectors.BUILD_MEMORY = build, default_memory


def build_memory(count: int) -> str:
    """maintenance_work_mem for an HNSW graph of `count` 384-dimension vectors: ~2 KB each in
    pgvector's build (the vector, 2m level-0 neighbour ids, upper levels), with headroom; at
    least the store's 512 MB."""
    return f"{max(512, -(-count * 3 // 1024 // 1024) * 1024)}MB"


def churned(data: Path, out: Path, share: float = 0.01) -> Path:
    """`data` with every 1/share-th document's slices edited (the same documents each run)."""
    # Through the record's own codec: the unchanged lines come out byte for byte as they went
    # in, as a re-run of flatten writes them, so only the edited documents differ.
    from flatten.hashing import sha256_hex
    from flatten.record import decode_line, encode_line

    step = round(1 / share)
    with open(data, "rb") as src, open(out, "wb") as dst:
        for number, line in enumerate(src, 1):
            record = decode_line(line, f"{data.name}#L{number}")
            if int(record.source[5:11]) % step == 0:
                content = record.content + " churned"
                record = dataclasses.replace(record, content=content, hash=sha256_hex(content))
            dst.write(encode_line(record))
    return out


def _percentiles(latencies: list[float]) -> tuple[float, float]:
    latencies = sorted(latencies)
    return (round(statistics.median(latencies), 2),
            round(latencies[max(0, int(len(latencies) * 0.95) - 1)], 2))  # fmt: skip


def _row_writes(db) -> int:  # type: ignore[no-untyped-def]
    db.execute("SELECT pg_stat_force_next_flush()")
    db.execute("SELECT pg_stat_clear_snapshot()")
    return int(db.execute(
        "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables "
        "WHERE relname <> 'corpora'").fetchone()[0])  # fmt: skip


def measure_store(label: str, target: str, data: Path, churn: Path, count: int,
                  queries: list[str], server_memory: ServerMemory | None = None,
                  ) -> StoreMeasurement:  # fmt: skip
    from index.loader import load_files
    from index.search import SearchOptions, search
    from index.store import Store
    from index.vectors.backfill import embed_pending
    from index.vectors.client import EmbeddingConfig
    from index.vectors.stage import VectorTier

    postgres = target.startswith("postgresql://")
    load_average = f"{os.getloadavg()[0]:.1f}"
    log(f"{label}: loading {count} slices")
    with Store.open(target) as store, peak_rss_mb() as loader_peak:
        started = time.perf_counter()
        load_files(store, [data], "bench")
        load_seconds = time.perf_counter() - started
        log(f"{label}: load {load_seconds:.1f} s ({count / load_seconds:.0f} slices/s)")
        before = _row_writes(store.db) if postgres else 0
        started = time.perf_counter()
        report = load_files(store, [data], "bench")
        noop_seconds = time.perf_counter() - started
        writes = _row_writes(store.db) - before if postgres else None
        log(f"{label}: no-op reload {noop_seconds:.2f} s, {writes} row writes")
        assert report.unchanged and not report.chunks
        assert not writes, f"a no-op reload wrote {writes} rows"
        started = time.perf_counter()
        load_files(store, [churn], "bench")
        churn_seconds = time.perf_counter() - started
        log(f"{label}: 1% churn reload {churn_seconds:.2f} s")
    with Store.open(target) as store:
        log(f"{label}: loader peak RSS {loader_peak[0]} MB; embedding")
        with embedding_server() as base, timed_hnsw_build(build_memory(count)) as hnsw:
            # batches of 512 (a setting users have): 1M slices in 64s is 15k round trips
            config = EmbeddingConfig(base_url=base, model="instant-384", batch_size=512)
            started = time.perf_counter()
            marks = iter(range(count // 10, count * 2, count // 10))
            mark = [next(marks)]

            def progress(done: int, total: int) -> None:
                if done >= mark[0]:
                    log(f"{label}: embedded {done}/{total} ({time.perf_counter() - started:.0f} s)")
                    mark[0] = next(marks)

            embed_pending(store, config, reindex=True, progress=progress)
            embed_seconds = time.perf_counter() - started
            log(f"{label}: embed {embed_seconds:.1f} s (HNSW build included)")
            if postgres:
                started = time.perf_counter()
                store.db.execute("VACUUM ANALYZE")
                log(f"{label}: VACUUM ANALYZE {time.perf_counter() - started:.1f} s")
            size = store.size()
            log(f"{label}: {size} bytes on disk ({size / count:.0f} per slice)")
            timings: dict[str, list[float]] = {"lexical": [], "vector": [], "hybrid": []}
            with Store.open(target, readonly=True) as reader, VectorTier(reader, config) as vt:
                vt.prepare(queries)  # the query vectors first: the server is not what is timed
                for tier, times in timings.items():
                    for query in queries:
                        started = time.perf_counter()
                        search(reader, query, SearchOptions(top_k=10, tier=tier), vectors=vt)
                        times.append((time.perf_counter() - started) * 1000)
                    log(f"{label}: {tier} p50/p95 {_percentiles(times)} ms")
    (lex50, lex95), (vec50, vec95), (hyb50, hyb95) = (
        _percentiles(timings[t]) for t in ("lexical", "vector", "hybrid")
    )
    return StoreMeasurement(
        label, count, round(load_seconds, 2), round(count / load_seconds),
        round(noop_seconds, 2), writes, round(churn_seconds, 2), round(embed_seconds, 2),
        lex50, lex95, vec50, vec95, hyb50, hyb95, round(size / count, 1), len(queries),
        round(sum(hnsw), 1) if hnsw else None, loader_peak[0],
        server_memory.peak_mb if server_memory else None,
        f"{load_average} -> {os.getloadavg()[0]:.1f}",
    )  # fmt: skip


STORES = ("sqlite", "postgres")


def measure_stores(work: Path, count: int = 100_000, queries: int = 100,
                   stores: tuple[str, ...] = STORES) -> list[StoreMeasurement]:  # fmt: skip
    from tests.pgserver import PASSWORD, PASSWORD_ENV, start_server

    data = work / f"slices-{count}.jsonl"
    write_slices(data, count)
    churn = churned(data, work / f"slices-{count}-churn.jsonl")
    log(f"generated {count} slices and their 1% churn")
    asked = bench_queries(count)[:queries]
    results = []
    if "sqlite" in stores:
        folder = work / f"store-sqlite-{count}"
        if folder.exists():
            for child in folder.iterdir():
                child.unlink()
        results.append(measure_store("sqlite", str(folder), data, churn, count, asked))
    if "postgres" in stores:
        server = start_server()
        try:
            os.environ[PASSWORD_ENV] = PASSWORD
            url = server.create_database("bench") + f"?password_env={PASSWORD_ENV}"
            with ServerMemory(server.folder / "data") as memory:
                results.append(measure_store("postgres", url, data, churn, count, asked, memory))
        finally:
            server.remove()
    return results
