"""The index schema as numbered migrations, applied once each and recorded.

An existing store upgrades itself when it is opened by a newer version; nothing edits the
schema by hand elsewhere. Later tiers (vectors) arrive as new migrations and leave the lexical
tables as they are.

Chunk text lives once, in the FTS5 table (`chunks_fts`, rowid = `chunks.id`): `body` is the
slice content, `parts` holds the pieces of identifiers (`getUserName` -> `get user name`) so a
part finds the whole. `chunks_exact` is a contentless index of the same text without stemming and
without positions (`detail=none`, the cheapest to build): it answers "which documents hold this
exact word". Both merge segments less eagerly than the default (`automerge` 16, `crisismerge`
64): loads build about an eighth faster, and queries stay within a millisecond.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

TOKENIZER = "porter unicode61 remove_diacritics 2"


def _run(db: sqlite3.Connection, script: str) -> None:
    # Not executescript(): it commits first, and a migration must stay in its transaction.
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def m001_lexical(db: sqlite3.Connection) -> None:
    _run(
        db,
        f"""
        CREATE TABLE corpora (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            origin TEXT,
            repo_url TEXT,
            commit_sha TEXT,
            ref TEXT,
            weight REAL NOT NULL DEFAULT 1.0,
            indexed_at TEXT
        );
        CREATE TABLE documents (
            id INTEGER PRIMARY KEY,
            corpus_id INTEGER NOT NULL REFERENCES corpora(id) ON DELETE CASCADE,
            source TEXT NOT NULL,
            fingerprint TEXT NOT NULL,
            doc_hash TEXT,
            title TEXT,
            kind TEXT,
            lang TEXT,
            url TEXT,
            repo_url TEXT,
            commit_sha TEXT,
            ref TEXT,
            chunks INTEGER NOT NULL,
            chars INTEGER NOT NULL,
            indexed_at TEXT NOT NULL,
            UNIQUE (corpus_id, source)
        );
        CREATE TABLE chunks (
            id INTEGER PRIMARY KEY,
            document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
            ordinal INTEGER NOT NULL,
            hash TEXT NOT NULL,
            title TEXT NOT NULL,
            section TEXT,
            anchor TEXT,
            symbol TEXT,
            start_line INTEGER,
            end_line INTEGER,
            kind TEXT,
            redactions INTEGER NOT NULL DEFAULT 0,
            meta TEXT,
            UNIQUE (document_id, ordinal)
        );
        CREATE INDEX chunks_hash ON chunks(hash);
        CREATE VIRTUAL TABLE chunks_fts USING fts5(
            title, section, symbol, body, parts, tokenize = '{TOKENIZER}'
        );
        CREATE VIRTUAL TABLE chunks_exact USING fts5(
            body, content = '', detail = none, tokenize = 'unicode61 remove_diacritics 2'
        );
        INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('automerge', 16);
        INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('crisismerge', 64);
        INSERT INTO chunks_exact (chunks_exact, rank) VALUES ('automerge', 16);
        INSERT INTO chunks_exact (chunks_exact, rank) VALUES ('crisismerge', 64);
        CREATE VIRTUAL TABLE vocab_stemmed USING fts5vocab(chunks_fts, 'row');
        CREATE VIRTUAL TABLE vocab_exact USING fts5vocab(chunks_exact, 'row');
        """,
    )


def m002_vectors(db: sqlite3.Connection) -> None:
    """The vector tier: one identity per store, float32 vectors keyed by the embedded text.

    `chunks.embed_key` names the vector a chunk uses (the hash of the text that was embedded:
    document prefix with the title, then the content), so a chunk whose text is unchanged finds
    its vector again after its document is replaced. `embed_skip` says why a chunk has none
    (redacted, binary, minified, rejected by the server). NULL in both: not considered yet.
    """
    _run(
        db,
        """
        ALTER TABLE chunks ADD COLUMN embed_key TEXT;
        ALTER TABLE chunks ADD COLUMN embed_skip TEXT;
        CREATE INDEX chunks_embed_key ON chunks(embed_key);
        CREATE TABLE vector_identity (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            model TEXT NOT NULL,
            dimension INTEGER,
            query_prefix TEXT NOT NULL,
            document_prefix TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE vectors (
            id INTEGER PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            embedding BLOB NOT NULL
        );
        """,
    )


def m003_repo_paths(db: sqlite3.Connection) -> None:
    """What a citation needs beyond the document's repository and commit: its path inside the
    repository (`repoPath`: `source` is relative to the folder that was flattened, which may be
    a subfolder) and whether the work tree's file differed from that commit (`dirty`)."""
    _run(
        db,
        """
        ALTER TABLE documents ADD COLUMN repo_path TEXT;
        ALTER TABLE documents ADD COLUMN dirty INTEGER NOT NULL DEFAULT 0;
        """,
    )


def m004_document_template(db: sqlite3.Connection) -> None:
    """The vector identity names the whole document template (context line, then content).

    Vectors embedded before it were made from the document prefix and the content, which is
    the template `<prefix>{text}`: recorded as such, so they stay valid for a config that keeps
    that template, and a config with another one is refused until `--reindex`.
    """
    _run(
        db,
        """
        ALTER TABLE vector_identity ADD COLUMN document_template TEXT;
        UPDATE vector_identity SET document_template = document_prefix || '{text}'
        """,
    )


def m005_document_fields(db: sqlite3.Connection) -> None:
    """What a document says about itself, apart from its slices: its title and the words of its
    path in `documents_fts` (rowid = `documents.id`), which the search scores beside the best
    slice's BM25 so a query naming the page's subject finds the page; and the language of a
    document in a translated tree (`documents.locale`, `docs/ja/...`: see
    `index.paths.locale_of`), NULL for unmarked documents, indexed only where set (most stores
    have none, and a search asks that first). Both are filled in for the documents a store
    already has."""
    from index.paths import document_fields, locale_of  # shared with the loader

    _run(
        db,
        f"""
        ALTER TABLE documents ADD COLUMN locale TEXT;
        CREATE INDEX documents_locale ON documents(locale) WHERE locale IS NOT NULL;
        CREATE VIRTUAL TABLE documents_fts USING fts5(title, path, tokenize = '{TOKENIZER}')
        """,
    )
    rows = db.execute("SELECT id, source, title FROM documents").fetchall()
    db.executemany(
        "UPDATE documents SET locale = ? WHERE id = ?",
        [(tag, doc_id) for doc_id, source, _ in rows if (tag := locale_of(source)) is not None],
    )
    db.executemany(
        "INSERT INTO documents_fts (rowid, title, path) VALUES (?, ?, ?)",
        [(doc_id, *document_fields(source, title)) for doc_id, source, title in rows],
    )


def m006_corpus_source(db: sqlite3.Connection) -> None:
    """What each corpus is a snapshot of (`corpora.source`: the normalised repository URL,
    folder or site, see `flatten.corpus_sources`), so that loading another source into it is
    refused rather than silently replacing its documents. NULL for corpora loaded before it (and
    for loads that name no source): the next load that names one adopts it."""
    db.execute("ALTER TABLE corpora ADD COLUMN source TEXT")


def m007_cjk_parts(db: sqlite3.Connection) -> None:
    """CJK text findable by its words: `parts` holds the bigrams and characters of each CJK
    run (`index.text.cjk_parts`), which chunks written before lack. Re-derived for the chunks
    whose text has a CJK character (none in most stores: a scan, no write), in place."""
    from index.text import derived_parts, has_cjk  # the loader's own derivation

    rows = db.execute("SELECT rowid, title, section, symbol, body, parts FROM chunks_fts")
    changed = [
        (parts, rowid)
        for rowid, *text, old in rows
        if any(has_cjk(t or "") for t in text) and (parts := derived_parts(*text)) != old
    ]
    db.executemany("UPDATE chunks_fts SET parts = ? WHERE rowid = ?", changed)


def m008_no_chunk_hash_index(db: Any) -> None:  # either store: the same statement
    """The index on `chunks.hash` goes: no query looks a chunk up by its hash (a document's
    fingerprint says what changed), and keeping it cost every load a B-tree insert per chunk
    (0.4 s of 100k slices, on the path every statement waits for) and 8 MB a 100k store."""
    db.execute("DROP INDEX IF EXISTS chunks_hash")


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("m001_lexical", m001_lexical),
    ("m002_vectors", m002_vectors),
    ("m003_repo_paths", m003_repo_paths),
    ("m004_document_template", m004_document_template),
    ("m005_document_fields", m005_document_fields),
    ("m006_corpus_source", m006_corpus_source),
    ("m007_cjk_parts", m007_cjk_parts),
    ("m008_no_chunk_hash_index", m008_no_chunk_hash_index),
]

# How a reader (a read-only connection, which cannot migrate) reads a store that lacks a
# migration that only adds columns: through a temporary view of the same name, which SQLite
# resolves before the stored table, holding the new columns as their defaults; one that only
# re-derives indexed text is read as it is (a statement that does nothing). A store that
# lacks any other migration is refused until a writer upgrades it.
READ_AS_IF: dict[str, str] = {
    "m003_repo_paths": "CREATE TEMP VIEW documents AS "
    "SELECT *, NULL AS repo_path, 0 AS dirty FROM main.documents",
    "m004_document_template": "CREATE TEMP VIEW vector_identity AS "
    "SELECT *, document_prefix || '{text}' AS document_template FROM main.vector_identity",
    "m006_corpus_source": "CREATE TEMP VIEW corpora AS SELECT *, NULL AS source FROM main.corpora",
    # Only re-derives text: the store reads as it is (CJK words inside a run stay unfound).
    "m007_cjk_parts": "SELECT 1",
    "m008_no_chunk_hash_index": "SELECT 1",  # an index no reader uses
}


def migrate(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations this store has not seen, in order; return their names."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at TEXT)"
    )
    return apply(db, MIGRATIONS, known(db), "strftime('%Y-%m-%dT%H:%M:%SZ','now')")


def apply(
    db: Any, migrations: list[tuple[str, Callable[[Any], None]]], done: set[str], now: str
) -> list[str]:
    """Run each of `migrations` not in `done`, in order, recording it with the time `now` (an
    SQL expression); return their names. Both stores' schemas are applied by this."""
    applied = []
    for name, migration in migrations:
        if name in done:
            continue
        migration(db)
        db.execute(f"INSERT INTO schema_migrations VALUES (?, {now})", (name,))
        applied.append(name)
    return applied


def known(db: sqlite3.Connection) -> set[str]:
    """The migrations this store has applied (none in a store that has no schema yet)."""
    table = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'"
    if db.execute(table).fetchone() is None:
        return set()
    return {row[0] for row in db.execute("SELECT name FROM schema_migrations")}


def newer(db: sqlite3.Connection) -> list[str]:
    """Migrations this store has that this version does not know: a newer version wrote it."""
    return sorted(known(db) - {name for name, _ in MIGRATIONS})


def missing(db: sqlite3.Connection) -> list[str]:
    """Migrations this version has that this store lacks: an older version wrote it."""
    return [name for name, _ in MIGRATIONS if name not in known(db)]


def read_as_if_current(db: sqlite3.Connection, lacking: list[str]) -> bool:
    """Let a read-only connection read a store lacking `lacking` as if it had them, when each of
    them only adds columns (see `READ_AS_IF`); False, with nothing done, when one does more."""
    if not all(name in READ_AS_IF for name in lacking):
        return False
    for name in lacking:
        db.execute(READ_AS_IF[name])
    return True


def latest() -> str:
    """This version's schema, named by its last migration."""
    return MIGRATIONS[-1][0]
