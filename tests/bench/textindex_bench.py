"""The Postgres text index against FTS5: SciFact quality on the same records, and load and query
figures at scale. Run by hand: `python -m tests.bench.textindex_bench [slices]`.

The relational part of the store stays SQLite here (the Postgres store is measured by its own
bench); only the text index is swapped, so the figures are the text index's alone.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from index.textindex import ChunkText, DocumentText

SHARED = Path(__file__).resolve().parents[3] / "shared"
BATCH = 2000


def mirror(lite: Any, pg: Any) -> float:
    """Copy a SQLite store's text into the Postgres text index (committed); seconds taken."""
    from index.textindex.postgres import PostgresTextIndex, create_tables

    create_tables(pg)
    index = PostgresTextIndex(pg)
    started = time.perf_counter()
    corpus_of = dict(lite.execute("SELECT c.id, d.corpus_id FROM chunks c JOIN documents d "
                                  "ON d.id = c.document_id").fetchall())  # fmt: skip
    rows = lite.execute("SELECT rowid, title, section, symbol, body, parts FROM chunks_fts "
                        "ORDER BY rowid")  # fmt: skip
    while batch := rows.fetchmany(BATCH):
        by_corpus: dict[int, list[ChunkText]] = {}
        for row in batch:
            by_corpus.setdefault(corpus_of[row[0]], []).append(ChunkText(*row))
        for corpus_id, texts in by_corpus.items():
            index.write_chunks(corpus_id, texts)
    documents = lite.execute("SELECT rowid, title, path FROM documents_fts").fetchall()
    index.write_documents([DocumentText(*d) for d in documents])
    pg.commit()
    return time.perf_counter() - started


@contextmanager
def postgres_text(text: Any) -> Iterator[None]:
    """Searches in this block use `text` as the text index (the rest stays on SQLite)."""
    modules = [importlib.import_module(f"index.{m}") for m in ("lexical", "ranking", "search")]
    saved = [m.text_index for m in modules]
    for m in modules:
        m.text_index = lambda db: text  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for m, original in zip(modules, saved, strict=True):
            m.text_index = original  # type: ignore[attr-defined]


def scifact(server: Any, work: Path) -> dict[str, Any]:
    from index.evaluate import evaluate, read_qrels, read_queries
    from index.loader import load_files
    from index.search import SearchOptions, search
    from index.store import Store
    from index.textindex.postgres import PostgresTextIndex

    root = SHARED / "eval" / "scifact"
    server.create_database("scifact")
    out: dict[str, Any] = {}
    with Store.open(work / "store-scifact") as store, server.connect("scifact") as pg:
        load_files(store, [root / "corpus.jsonl"], "scifact")
        out["mirror_seconds"] = round(mirror(store.db, pg), 2)
        queries = read_queries(root / "queries-train.jsonl")
        judgments = read_qrels(root / "qrels" / "train.tsv")

        def rank(text: str, depth: int) -> list[str]:
            options = SearchOptions(top_k=depth, snippets=False)
            return [r.source for r in search(store, text, options).results]

        out["sqlite"] = evaluate(queries, judgments, rank, 10).to_dict()
        with postgres_text(PostgresTextIndex(pg)):
            out["postgres"] = evaluate(queries, judgments, rank, 10).to_dict()
    return out


def at_scale(server: Any, work: Path, slices: int) -> dict[str, Any]:
    """Load time, size and lexical search latency of both text indexes on the bench's
    generated slices and queries (`tests.bench.index_bench`)."""
    from index.loader import load_files
    from index.search import SearchOptions, search
    from index.store import Store
    from index.textindex.postgres import PostgresTextIndex
    from tests.bench.index_bench import bench_queries, write_slices

    server.create_database("scale")
    data = work / f"slices-{slices}.jsonl"
    write_slices(data, slices)
    out: dict[str, Any] = {"slices": slices}
    with Store.open(work / "store-scale") as store, server.connect("scale") as pg:
        started = time.perf_counter()
        load_files(store, [data], "bench")
        out["sqlite_load_seconds"] = round(time.perf_counter() - started, 1)
        out["postgres_text_load_seconds"] = round(mirror(store.db, pg), 1)
        out["postgres_text_bytes_per_slice"] = round(
            pg.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
                "WHERE c.relname LIKE 'text%%' AND c.relkind = 'r'"
            ).fetchone()[0]
            / slices
        )
        out["postgres_heads_bytes_per_slice"] = round(
            pg.execute("SELECT pg_total_relation_size('text_heads')").fetchone()[0] / slices
        )
        queries = bench_queries(slices)
        # Query by query, each engine in turn (the same minute's load for each); `postgres
        # whole lists` reads every term's whole list, as before text_heads.
        engines = {
            "fts5": nullcontext,
            "postgres": lambda: postgres_text(PostgresTextIndex(pg)),
            "postgres whole lists": lambda: whole_lists(PostgresTextIndex(pg)),
        }
        latencies: dict[str, list[float]] = {name: [] for name in engines}
        for query in queries:
            for name, engine in engines.items():
                with engine():
                    begun = time.perf_counter()
                    search(store, query, SearchOptions(top_k=10))
                    latencies[name].append((time.perf_counter() - begun) * 1000)
        for name, times in latencies.items():
            common = sorted(times[1::3])  # `queries_for`: every third asks two common words
            for label, some in (("", sorted(times)), ("_two_common", common)):
                out[f"{name}{label}_search_ms_p50"] = round(statistics.median(some), 2)
                out[f"{name}{label}_search_ms_p95"] = round(some[int(len(some) * 0.95) - 1], 2)
    return out


@contextmanager
def whole_lists(text: Any) -> Iterator[None]:
    """`postgres_text(text)`, reading every term's whole list (no `text_heads`)."""
    from index.textindex import postgres

    saved = postgres._in_heads
    postgres._in_heads = lambda columns: False
    try:
        with postgres_text(text):
            yield
    finally:
        postgres._in_heads = saved


def main() -> None:
    from tests.pgserver import start_server

    slices = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = start_server()
    try:
        with tempfile.TemporaryDirectory() as folder:
            if slices:
                print(at_scale(server, Path(folder), slices))
            else:
                print(scifact(server, Path(folder)))
    finally:
        server.remove()


if __name__ == "__main__":
    main()
