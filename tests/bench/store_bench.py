"""The two stores side by side: SQLite and PostgreSQL + pgvector on the same slices and vectors.

Per store: the first load's rate, a no-op reload (on Postgres, zero row writes asserted through
`pg_stat_user_tables`), a reload with 1% of the documents changed, embedding every slice
(384 dimensions, the tests' embeddings server answering at once), lexical, vector and hybrid
query latency (p50/p95), and disk per slice. The Postgres server is the tests' own
(tests/pgserver.py: the pinned wheel's PostgreSQL 18 + pgvector 0.8.2, fsync off, on loopback).
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import sys
import time
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
                  queries: list[str]) -> StoreMeasurement:  # fmt: skip
    from index.loader import load_files
    from index.search import SearchOptions, search
    from index.store import Store
    from index.vectors.backfill import embed_pending
    from index.vectors.client import EmbeddingConfig
    from index.vectors.stage import VectorTier

    postgres = target.startswith("postgresql://")
    with Store.open(target) as store:
        started = time.perf_counter()
        load_files(store, [data], "bench")
        load_seconds = time.perf_counter() - started
        before = _row_writes(store.db) if postgres else 0
        started = time.perf_counter()
        report = load_files(store, [data], "bench")
        noop_seconds = time.perf_counter() - started
        writes = _row_writes(store.db) - before if postgres else None
        assert report.unchanged and not report.chunks
        assert not writes, f"a no-op reload wrote {writes} rows"
        started = time.perf_counter()
        load_files(store, [churn], "bench")
        churn_seconds = time.perf_counter() - started
        with embedding_server() as base:
            config = EmbeddingConfig(base_url=base, model="instant-384")
            started = time.perf_counter()
            embed_pending(store, config, reindex=True)
            embed_seconds = time.perf_counter() - started
            if postgres:
                store.db.execute("VACUUM ANALYZE")
            size = store.size()
            timings: dict[str, list[float]] = {"lexical": [], "vector": [], "hybrid": []}
            with Store.open(target, readonly=True) as reader, VectorTier(reader, config) as vt:
                vt.prepare(queries)  # the query vectors first: the server is not what is timed
                for tier, times in timings.items():
                    for query in queries:
                        started = time.perf_counter()
                        search(reader, query, SearchOptions(top_k=10, tier=tier), vectors=vt)
                        times.append((time.perf_counter() - started) * 1000)
    (lex50, lex95), (vec50, vec95), (hyb50, hyb95) = (
        _percentiles(timings[t]) for t in ("lexical", "vector", "hybrid")
    )
    return StoreMeasurement(
        label, count, round(load_seconds, 2), round(count / load_seconds),
        round(noop_seconds, 2), writes, round(churn_seconds, 2), round(embed_seconds, 2),
        lex50, lex95, vec50, vec95, hyb50, hyb95, round(size / count, 1), len(queries),
    )  # fmt: skip


def measure_stores(work: Path, count: int = 100_000, queries: int = 100) -> list[StoreMeasurement]:
    from tests.pgserver import PASSWORD, PASSWORD_ENV, start_server

    data = work / f"slices-{count}.jsonl"
    write_slices(data, count)
    churn = churned(data, work / f"slices-{count}-churn.jsonl")
    asked = bench_queries(count)[:queries]
    folder = work / f"store-sqlite-{count}"
    if folder.exists():
        for child in folder.iterdir():
            child.unlink()
    results = [measure_store("sqlite", str(folder), data, churn, count, asked)]
    server = start_server()
    try:
        os.environ[PASSWORD_ENV] = PASSWORD
        url = server.create_database("bench") + f"?password_env={PASSWORD_ENV}"
        results.append(measure_store("postgres", url, data, churn, count, asked))
    finally:
        server.remove()
    return results
