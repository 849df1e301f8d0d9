"""A store's health, as `doctor` reports it: the same questions on SQLite and on PostgreSQL.

Can the store be opened? Which schema does it hold against this version's (older: the next load
upgrades it; newer: refused)? Is the text index whole (SQLite: FTS5's own integrity-check of
each FTS table, content against index; Postgres: the BM25 term statistics and totals against
the postings they count, and how many deltas wait to be folded)? Which vectors does it hold, how
many chunks lack one, and is what answers a vector query in order (the SQLite sidecar current,
or Postgres's HNSW index built and valid, or exact below the threshold)? Which corpora, and on
Postgres which server and extensions? Which records say where they are in a way that cannot be
cited (a `url` that is no web link, a line range that cannot be one: `index.citations`)?

Nothing is written: the store is opened read-only, and the FTS5 integrity-check (an INSERT to
FTS5, so it needs a writable connection and the write lock) runs in a transaction that is rolled
back. What is wrong is a `Finding`: `failed` (the store cannot serve as it is: `store-damaged`,
`index-newer`, the store's open errors) or `warning` (it serves, but something waits:
`index-outdated`, deltas not folded, a stale sidecar, a missing HNSW index).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flatten.errors import FlattenError
from index.errors import StoreError
from index.store import DB_NAME, STORE_ENV, Store, store_dir, store_target, upgrade_hint

if TYPE_CHECKING:
    from index.postgres.store import PostgresStore
    from index.vectors.client import DoctorReport, EmbeddingConfig

FAILED = "failed"
WARNING = "warning"
DAMAGED = "store-damaged"
CHECK_WAIT = 5.0  # seconds the FTS5 integrity-check waits for a writer to finish
# The FTS5 tables of a SQLite store, each checked content against index.
FTS_TABLES = ("chunks_fts", "chunks_exact", "documents_fts")


@dataclass(frozen=True)
class Finding:
    """One thing wrong: what was checked, how bad (`failed` or `warning`), its named reason."""

    check: str  # store, schema, text, vectors
    level: str
    reason: str
    message: str


@dataclass
class CorpusCount:
    name: str
    documents: int
    chunks: int


@dataclass
class TextHealth:
    engine: str  # as the tier line names it
    checked: list[str]  # what was verified (tables, or statistics against postings)
    chunks: int  # chunks the text index holds
    pending_deltas: int | None = None  # Postgres: term-statistic rows not folded yet
    pending_corpora: list[str] | None = None  # Postgres: the corpora they belong to
    dead_chunks: int | None = None  # Postgres: deleted chunks whose postings await compaction


@dataclass
class VectorHealth:
    model: str
    dimension: int | None
    vectors: int
    chunks_with_vector: int
    chunks_pending: int  # neither a vector nor a reason to have none: the next embedding run's
    chunks_skipped: dict[str, int]
    chunks_missing_vector: int  # name a vector the store does not hold
    search: str  # what answers a vector query: "matrix", "exact", "hnsw (vector)", ...
    sidecar: str | None = None  # SQLite: current, stale, absent
    pgvector: str | None = None  # Postgres: the extension's version


@dataclass
class ServerHealth:
    version: str
    extensions: dict[str, str]  # installed: name -> version
    pg_search: str  # installed, available (not installed), absent


@dataclass
class StoreHealth:
    store: str  # as messages show it (never a password)
    kind: str | None  # sqlite, postgres; None when it could not be opened
    schema: str | None = None  # the store's last migration
    this_schema: str = ""  # this version's last migration
    schema_state: str | None = None  # current, older, newer
    corpora: list[CorpusCount] = field(default_factory=list)
    documents: int = 0
    chunks: int = 0
    bytes: int | None = None
    text: TextHealth | None = None
    vectors: VectorHealth | None = None
    server: ServerHealth | None = None
    findings: list[Finding] = field(default_factory=list)

    def add(self, check: str, level: str, reason: str, message: str) -> None:
        self.findings.append(Finding(check, level, reason, message))

    @property
    def failure(self) -> Finding | None:
        """The first failed check (the one the exit names), if any."""
        return next((f for f in self.findings if f.level == FAILED), None)


@dataclass
class Diagnosis:
    """`doctor`'s answer: the store's health (None when no store was named and the default has
    no index) and the embeddings probe (None when no embeddings are configured)."""

    store: StoreHealth | None
    embeddings: DoctorReport | None
    unchecked: list[str] = field(default_factory=list)  # what was not checked, and why


def diagnose(store: str | None, embedding: EmbeddingConfig | None) -> Diagnosis:
    """Check the store (`--store`, else $DOCS_FLATTEN_STORE, else the default folder) and probe
    the embeddings server when one is configured. A default folder without an index is not
    checked (nothing was asked of it); a store named and missing is a failure."""
    named = store_target(store) is not None
    unchecked = []
    health = None
    if named or (store_dir(None) / DB_NAME).exists():
        health = check_store(store)
    else:
        unchecked.append(f"no index at {store_dir(None)} (name a store with --store or "
                         f"${STORE_ENV})")  # fmt: skip
    report = None
    if embedding is not None:
        from index.vectors.client import doctor

        report = doctor(embedding)
    else:
        unchecked.append("no embeddings configured")
    return Diagnosis(health, report, unchecked)


def check_store(target: str | os.PathLike[str] | None = None) -> StoreHealth:
    """The health of the store at `target` (as `Store.open` takes it); never raises for what
    is wrong with the store: that is a finding."""
    from index.postgres.url import StoreURLError, is_postgres, shown

    where = store_target(target)
    health = StoreHealth(shown(str(where)) if is_postgres(where) else str(store_dir(target)), None)
    _set_this_schema(health)
    try:
        opened = Store.open(target, readonly=True, busy_timeout=CHECK_WAIT)
    except StoreURLError:
        raise  # not the store's state: the command line's fault (a usage error)
    except StoreError as exc:
        _refused(health, exc)
        return health
    with opened:
        health.store, health.kind = opened.location, opened.kind
        try:
            _check_open(health, opened)
        except StoreError as exc:  # the server went away, or a table is unreadable
            health.add("store", FAILED, exc.reason or "store-unreadable", exc.message)
    return health


def _set_this_schema(health: StoreHealth) -> None:
    from index.schema import latest

    health.this_schema = latest()


def _refused(health: StoreHealth, exc: StoreError) -> None:
    """A store `Store.open` refused: why, as a finding (a newer or older schema says so)."""
    reason = exc.reason or "store-unreadable"
    if reason == "index-newer":
        health.schema_state = "newer"
        health.add("schema", FAILED, reason, f"{exc.message}: refused")
    elif reason == "index-outdated":
        health.schema_state = "older"
        health.add("schema", WARNING, reason,
                   f"{exc.message}: the next load upgrades it (not checked further until "
                   "then)")  # fmt: skip
    else:
        health.add("store", FAILED, reason, exc.message + (f" ({exc.hint})" if exc.hint else ""))


def _check_open(health: StoreHealth, store: Store | PostgresStore) -> None:
    # One snapshot for every read: a load committing meanwhile must not look like damage.
    begin = "BEGIN ISOLATION LEVEL REPEATABLE READ" if store.kind == "postgres" else "BEGIN"
    try:
        store.db.execute(begin)
        try:
            if store.kind == "postgres":
                _check_postgres(health, store)  # type: ignore[arg-type]
            else:
                _check_sqlite(health, store)  # type: ignore[arg-type]
        finally:
            store._rollback()  # nothing was written: ending the snapshot is all
    except sqlite3.DatabaseError as exc:
        health.add("store", FAILED, DAMAGED, f"the index at {health.store} is unreadable: {exc}")
    except FlattenError:
        raise
    except Exception as exc:  # psycopg's errors, without importing it on SQLite
        if type(exc).__module__.split(".")[0] != "psycopg":
            raise
        fault = store.fault(exc, writing=False)  # type: ignore[union-attr]
        health.add("store", FAILED, fault.reason or "store-unreadable", fault.message)


def _counts(health: StoreHealth, store: Store | PostgresStore) -> dict[str, Any]:
    from index import documents

    info = documents.stats(store)  # type: ignore[arg-type]
    health.bytes = info["bytes"]
    health.corpora = [CorpusCount(c["name"], c["documents"], c["chunks"]) for c in info["corpora"]]
    health.documents, health.chunks = info["documents"], info["chunks"]
    return info


def _schema(health: StoreHealth, applied: set[str]) -> None:
    from index.schema import MIGRATIONS

    names = [name for name, _ in MIGRATIONS]
    have = [name for name in names if name in applied]
    health.schema = have[-1] if have else None
    if len(have) == len(names):
        health.schema_state = "current"
        return
    health.schema_state = "older"
    lacking = ", ".join(name for name in names if name not in applied)
    health.add("schema", WARNING, "index-outdated",
               f"the store lacks {lacking}: the next load upgrades it")  # fmt: skip


def _citations(health: StoreHealth, db: Any) -> None:
    """What records said about where they are that cannot be cited (`index.citations`): a `url`
    that is no web link (cited by its path instead) and a line range that cannot be one (cited
    without lines). Counted, the first of each named: a warning, the store serves."""
    from index.citations import MAX_SPAN, link

    odd = [source for source, url in db.execute(
        "SELECT source, url FROM documents WHERE url IS NOT NULL ORDER BY source")
        if link(url) is None]  # fmt: skip
    if odd:
        health.add("citations", WARNING, "url-not-a-link",
                   f"{len(odd):,} document(s) have a url that is no web link (an absolute "
                   f"http(s) URL with nothing that breaks a link): cited by their source "
                   f"instead, e.g. '{odd[0][:200]}'")  # fmt: skip
    (count, example) = db.execute(
        "SELECT count(*), min(d.source || '#' || c.ordinal) FROM chunks c "
        "JOIN documents d ON d.id = c.document_id WHERE c.start_line < 1 "
        "OR c.end_line < c.start_line OR c.end_line - c.start_line >= ?",
        (MAX_SPAN,),
    ).fetchone()
    if count:
        health.add("citations", WARNING, "range-not-lines",
                   f"{count:,} chunk(s) have a line range that cannot be one (starting "
                   f"before 1, ending before it starts, or spanning more than {MAX_SPAN:,} "
                   f"lines): cited without lines, e.g. '{example[:200]}'")  # fmt: skip


def _vectors(health: StoreHealth, info: dict[str, Any], db: Any, search: str) -> None:
    stats = info["vectors"]
    if stats is None:
        return
    (missing,) = db.execute(
        "SELECT count(*) FROM chunks c WHERE c.embed_key IS NOT NULL "
        "AND NOT EXISTS (SELECT 1 FROM vectors v WHERE v.key = c.embed_key)"
    ).fetchone()
    health.vectors = VectorHealth(
        model=stats["model"], dimension=stats["dimension"], vectors=stats["vectors"],
        chunks_with_vector=stats["chunksWithVector"], chunks_pending=stats["chunksPending"],
        chunks_skipped=stats["chunksSkipped"], chunks_missing_vector=int(missing), search=search,
    )  # fmt: skip
    if missing:
        health.add("vectors", FAILED, DAMAGED,
                   f"{missing:,} chunk(s) name a vector the store does not hold")  # fmt: skip
    if stats["chunksPending"]:
        health.add("vectors", WARNING, "vectors-pending",
                   f"{stats['chunksPending']:,} chunk(s) have no vector yet: the next "
                   "`ingest` or `index` with embeddings configured embeds them")  # fmt: skip


# --- SQLite ---


def _check_sqlite(health: StoreHealth, store: Store) -> None:
    from index.schema import known

    db = store.db
    _schema(health, known(db))
    problems = [row[0] for row in db.execute("PRAGMA quick_check").fetchall() if row[0] != "ok"]
    if problems:
        health.add("store", FAILED, DAMAGED,
                   f"SQLite's quick_check: {'; '.join(problems[:3])}")  # fmt: skip
        return
    _sparse(health, store)
    info = _counts(health, store)
    (indexed,) = db.execute("SELECT count(*) FROM chunks_fts").fetchone()
    health.text = TextHealth("FTS5", [], int(indexed))
    if indexed != health.chunks:
        health.add("text", FAILED, DAMAGED, f"the text index holds {indexed:,} chunk(s), the "
                   f"store {health.chunks:,}")  # fmt: skip
    _fts_integrity(health, store)
    _citations(health, db)
    _vectors(health, info, db, "matrix")
    if health.vectors is not None and health.vectors.vectors:
        health.vectors.sidecar = _sidecar_state(store)


def _sparse(health: StoreHealth, store: Store) -> None:
    """A store whose free pages are a quarter of it or more (`index.store.SPARSE_SHARE`): a
    version before compaction left it so after a load that removed most of a corpus. Any load
    or drop compacts it now, a reload of unchanged input too (nothing else is written)."""
    if not store.sparse():
        return
    free, pages = store.free_pages()
    hint = upgrade_hint(store.location, "compacts it (a reload of the same input too)")
    health.add("store", WARNING, "store-sparse",
               f"{free:,} of its {pages:,} pages ({free / pages:.0%}) are free space that deleted "
               f"rows left; {hint}")  # fmt: skip


def _fts_integrity(health: StoreHealth, store: Store) -> None:
    """FTS5's integrity-check of each FTS table (with rank 1: the index against the content),
    in a transaction rolled back. It needs a writable connection and the write lock: a
    read-only file or a writer that holds the lock past `CHECK_WAIT` leaves it unchecked."""
    assert health.text is not None
    try:
        db = sqlite3.connect(store.path, timeout=CHECK_WAIT, isolation_level=None)
    except sqlite3.Error as exc:
        health.add("text", WARNING, "text-unchecked", f"FTS5 integrity not checked: {exc}")
        return
    try:
        db.execute("BEGIN")
        for table in FTS_TABLES:
            db.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")
            health.text.checked.append(table)
    except sqlite3.DatabaseError as exc:
        code = getattr(exc, "sqlite_errorname", "") or ""
        if code.startswith(("SQLITE_READONLY", "SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CANTOPEN")):
            why = "the store is read-only to this user" if "READONLY" in code else (
                "another run is writing to it")  # fmt: skip
            health.add("text", WARNING, "text-unchecked",
                       f"FTS5 integrity not checked: {why}")  # fmt: skip
        else:
            table = FTS_TABLES[len(health.text.checked)]
            health.add("text", FAILED, DAMAGED, f"FTS5 integrity-check of {table}: {exc} "
                       "(rebuild: remove the store and index again)")  # fmt: skip
    finally:
        with contextlib.suppress(sqlite3.Error):
            if db.in_transaction:
                db.execute("ROLLBACK")
        db.close()


def _sidecar_state(store: Store) -> str:
    """Whether the vector sidecar copies the store now (`current`), not (`stale`: the next
    vector query rebuilds it) or is not there yet (`absent`)."""
    from index.vectors.sidecar import read_sidecar, sidecar_path, store_state

    path = sidecar_path(store.path)
    if not path.exists():
        return "absent"
    count, state = store_state(store.db)
    return "current" if read_sidecar(path, count, state, store.db) is not None else "stale"


# --- PostgreSQL ---


def _check_postgres(health: StoreHealth, store: PostgresStore) -> None:
    from index.postgres.schema import known
    from index.postgres.vectors import EXACT_BELOW
    from index.textindex.postgres import pg_search_available

    db = store.db
    _schema(health, known(db))
    extensions = dict(db.execute("SELECT extname, extversion FROM pg_extension ORDER BY 1"))
    pg_search = "installed" if "pg_search" in extensions else (
        "available" if pg_search_available(db) else "absent")  # fmt: skip
    version = db.execute("SELECT current_setting('server_version')").fetchone()[0]
    health.server = ServerHealth(version, extensions, pg_search)
    info = _counts(health, store)
    _bm25_integrity(health, db)
    _citations(health, db)
    index_def, valid = db.execute(
        "SELECT pg_get_indexdef(i.indexrelid), i.indisvalid FROM pg_index i "
        "WHERE i.indexrelid = to_regclass('vectors_hnsw')"
    ).fetchone() or (None, None)
    if index_def is None:
        search = "exact"
    else:
        search = f"hnsw ({'halfvec' if 'halfvec' in index_def else 'vector'})"
    _vectors(health, info, db, search)
    if health.vectors is None:
        return
    health.vectors.pgvector = extensions.get("vector")
    if index_def is not None and not valid:
        health.add("vectors", FAILED, DAMAGED, "the HNSW index vectors_hnsw is invalid (a build "
                   "that did not finish): REINDEX INDEX vectors_hnsw")  # fmt: skip
    elif index_def is None and health.vectors.vectors >= EXACT_BELOW:
        health.add("vectors", WARNING, "hnsw-missing",
                   f"{health.vectors.vectors:,} vectors and no HNSW index: each query scans "
                   "them all (the next embedding run builds it)")  # fmt: skip


def _bm25_integrity(health: StoreHealth, db: Any) -> None:
    """The BM25 statistics against what they count: each corpus's totals (chunks, tokens)
    against its text rows, the text rows against the store's chunks, and each term's chunk
    counts (stemmed and exact) against its live postings. Deltas not yet folded count the same
    (they are summed), so they are reported, not faulted."""
    from index.textindex.postgres import NAME

    (indexed,) = db.execute("SELECT count(*) FROM text_chunks").fetchone()
    text = health.text = TextHealth(NAME, [], int(indexed))
    damage = []
    off = db.execute(
        "SELECT k.name, coalesce(t.chunks, 0), coalesce(r.chunks, 0), coalesce(t.tokens, 0), "
        "coalesce(r.tokens, 0) FROM (SELECT corpus_id, chunks, tokens FROM text_totals) t "
        "FULL JOIN (SELECT corpus_id, count(*) AS chunks, sum(length) AS tokens FROM text_chunks "
        "GROUP BY corpus_id) r USING (corpus_id) LEFT JOIN corpora k "
        "ON k.id = coalesce(t.corpus_id, r.corpus_id) "
        "WHERE coalesce(t.chunks, 0) <> coalesce(r.chunks, 0) "
        "OR coalesce(t.tokens, 0) <> coalesce(r.tokens, 0) ORDER BY 1"
    ).fetchall()
    damage += [f"corpus {name}: totals say {tc:,} chunks/{tt:,} tokens, its text rows hold "
               f"{rc:,}/{rt:,}" for name, tc, rc, tt, rt in off]  # fmt: skip
    text.checked.append("totals")
    if indexed != health.chunks:
        damage.append(f"the text index holds {indexed:,} chunk(s), the store {health.chunks:,}")
    text.checked.append("chunks")
    for table, column in (("text_blocks", "docs"), ("text_exact", "exact_docs")):
        wrong = _term_counts_off(db, table, column)
        if wrong:
            term, counted, live = wrong[0]
            damage.append(f"{len(wrong):,} term(s) whose {column} disagree with {table} (e.g. "
                          f"{term!r}: {counted} counted, {live} postings)")  # fmt: skip
        text.checked.append(f"{column} vs {table}")
    for problem in damage:
        health.add("text", FAILED, DAMAGED, f"BM25 statistics: {problem}")
    pending = db.execute(
        "SELECT k.name, count(*) FROM text_terms t LEFT JOIN corpora k ON k.id = t.corpus_id "
        "WHERE t.batch <> 0 GROUP BY k.name ORDER BY 1"
    ).fetchall()
    text.pending_deltas = sum(n for _, n in pending)
    text.pending_corpora = [str(name) for name, _ in pending]
    (text.dead_chunks,) = db.execute("SELECT count(*) FROM text_dead").fetchone()
    if text.pending_deltas:
        health.add("text", WARNING, "deltas-pending",
                   f"{text.pending_deltas:,} term-statistic delta row(s) of "
                   f"{', '.join(text.pending_corpora)} not folded yet (summed by every query; "
                   "folded at the corpus's next load)")  # fmt: skip


def _term_counts_off(db: Any, table: str, column: str) -> list[tuple[str, int, int]]:
    """The terms whose `column` in `text_terms` (summed over corpora and deltas) differs from
    their live postings in `table`: the postings' count less those of deleted chunks (still in
    their blocks, listed in `text_dead`), found by unpacking only the blocks of batches that
    have any."""
    import numpy as np

    from index.textindex.postgres import _unpack  # the blocks' packed format is that module's

    rows = db.execute(
        f"SELECT coalesce(p.term, s.term), coalesce(s.n, 0), coalesce(p.n, 0) "
        f"FROM (SELECT term, sum(n)::int8 AS n FROM {table} GROUP BY term) p "
        f"FULL JOIN (SELECT term, sum({column})::int8 AS n FROM text_terms GROUP BY term) s "
        f"ON s.term = p.term"
    ).fetchall()
    dead_by_batch: dict[int, np.ndarray] = {}
    for batch, ids in db.execute(
        "SELECT batch, array_agg(chunk_id) FROM text_dead GROUP BY batch"
    ).fetchall():
        dead_by_batch[int(batch)] = np.array(ids, dtype=np.int64)
    dead: dict[str, int] = {}
    if dead_by_batch:
        for term, batch, base, n, ids in db.execute(
            f"SELECT term, batch, base, n, ids FROM {table} WHERE batch = ANY(?)",
            (sorted(dead_by_batch),),
        ).fetchall():
            held = _unpack(bytes(ids), int(n)) + int(base)
            gone = int(np.isin(held, dead_by_batch[int(batch)]).sum())
            if gone:
                dead[term] = dead.get(term, 0) + gone
    off = []
    for term, counted, postings in rows:
        live = int(postings) - dead.get(term, 0)
        if int(counted) != live and (counted or live):
            off.append((str(term), int(counted), live))
    return sorted(off)
