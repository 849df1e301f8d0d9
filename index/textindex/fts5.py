"""The text index on SQLite FTS5 (the tables of `index.schema`).

`chunks_fts` stores and ranks the chunk text (bm25() with `lexical.WEIGHTS`), `chunks_exact` is
its unstemmed, position-free twin for `match --exact` and `words`, `documents_fts` holds each
document's title and path words, and the fts5vocab tables count terms.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from index.bulk import bulk_insert
from index.lexical import WEIGHTS
from index.scope import CHUNKS
from index.text import fts_string
from index.textindex import ChunkText, DocumentText, LexicalHit, TextQuery

# What each FTS5 table buffers in memory before writing a segment (SQLite's default is 1 MiB):
# room for a whole batch (the loader's `_BatchWriter`), so each batch is one segment, not four:
# less merging. Memory grows by at most this much per table, whatever the corpus size.
FTS_BUFFER_BYTES = 8 << 20
SNIPPET = "snippet(chunks_fts, 3, '', '', ' … ', 24)"
MARKED = re.compile("\x01(.*?)\x02", re.DOTALL)  # a span highlight() marked
HIGHLIGHTS = (
    "SELECT rowid, highlight(documents_fts, 0, char(1), char(2)), "
    "highlight(documents_fts, 1, char(1), char(2)) FROM documents_fts WHERE documents_fts MATCH ?"
)


def render(query: TextQuery) -> str:
    """A `TextQuery` as an FTS5 MATCH expression (every phrase a quoted string: no input can
    raise an FTS5 syntax error)."""
    if query.narrowed and query.columns is None and not query.every:
        return " OR ".join(_in_columns(fts_string(p), query.columns_of(p)) for p in query.phrases)
    joined = (" AND " if query.every else " OR ").join(fts_string(p) for p in query.phrases)
    if query.columns is not None and len(query.phrases) > 1:
        joined = f"({joined})"  # a column filter binds to the phrase or group after it
    return _in_columns(joined, query.columns)


def titles_only(query: TextQuery) -> TextQuery:
    """`query`'s phrases, any of them, in a chunk's title only."""
    return TextQuery(query.phrases, columns=("title",))


def _in_columns(expression: str, columns: tuple[str, ...] | None) -> str:
    """`expression` limited to these columns (None: every column)."""
    if columns is None:
        return expression
    if len(columns) == 1:
        return f"{columns[0]} : {expression}"
    return f"{{{' '.join(columns)}}} : {expression}"


def rank_query(in_scope: str) -> str:
    """The ranking SQL (parameters: the MATCH expression, the scope's, then the limit)."""
    weights = ", ".join(str(w) for w in WEIGHTS)
    if in_scope:
        # `+f.rowid`: a bare rowid would be handed to FTS5 as a constraint, which then runs the
        # MATCH once per chunk of the scope (seconds on a large one) instead of filtering.
        in_scope = f"AND +f.rowid IN (SELECT c.id FROM {CHUNKS} WHERE 1 {in_scope})"
    return (
        f"SELECT f.rowid, -bm25(chunks_fts, {weights}) AS score "
        f"FROM chunks_fts f WHERE chunks_fts MATCH ? {in_scope} "
        f"ORDER BY bm25(chunks_fts, {weights}) LIMIT ?"
    )


class Fts5TextIndex:
    name = "fts5"

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    # --- writes ---

    def prepare_load(self) -> None:
        """Set the FTS5 tables' write buffer (`hashsize`, kept in their config) where it
        differs: a store built by an older version takes it at its next load, no migration."""
        for table in ("chunks_fts", "chunks_exact"):
            current = self.db.execute(
                f"SELECT v FROM {table}_config WHERE k = 'hashsize'"
            ).fetchone()
            if current is None or current[0] != FTS_BUFFER_BYTES:
                self.db.execute(
                    f"INSERT INTO {table} ({table}, rank) VALUES ('hashsize', ?)",
                    (FTS_BUFFER_BYTES,),
                )

    def write_documents(self, rows: Sequence[DocumentText]) -> None:
        self.db.executemany(
            "INSERT INTO documents_fts (rowid, title, path) VALUES (?, ?, ?)",
            [(r.document_id, r.title, r.path) for r in rows],
        )

    def write_chunks(self, corpus_id: int, rows: Sequence[ChunkText]) -> None:
        self.stage_chunks(corpus_id, rows)()

    def stage_chunks(self, corpus_id: int, rows: Sequence[ChunkText]) -> Callable[[], None]:
        """The statements made now (on the calling thread: their parameters bound many rows to
        a statement, see `bulk_insert`), run later: the write takes the GIL only to bind and to
        end (SQLite releases it for a whole statement), so the loader's second thread spends
        its time in SQLite alone."""
        if not rows:
            return lambda: None
        insert = bulk_insert(
            self.db,
            "INSERT INTO chunks_fts (rowid, title, section, symbol, body, parts) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(r.chunk_id, r.title, r.section, r.symbol, r.body, r.parts) for r in rows],
        )
        first, last = rows[0].chunk_id, rows[-1].chunk_id

        def write() -> None:
            insert()
            # The same text again, for the exact index: read back from the table just written
            # (a copy inside SQLite) rather than bound a second time.
            self.db.execute(
                "INSERT INTO chunks_exact (rowid, body) "
                "SELECT rowid, body FROM chunks_fts WHERE rowid BETWEEN ? AND ?",
                (first, last),
            )

        return write

    def delete_document(self, corpus_id: int, document_id: int) -> None:
        rows = self.db.execute(
            "SELECT c.id, f.body FROM chunks c JOIN chunks_fts f ON f.rowid = c.id "
            "WHERE c.document_id = ?",
            (document_id,),
        ).fetchall()
        # chunks_exact is contentless: a delete names the text it indexed.
        self.db.executemany(
            "INSERT INTO chunks_exact (chunks_exact, rowid, body) VALUES ('delete', ?, ?)", rows
        )
        self.db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(r[0],) for r in rows])
        self.db.execute("DELETE FROM documents_fts WHERE rowid = ?", (document_id,))

    # --- reads ---

    def chunk_texts(self, chunk_ids: Sequence[int], chars: int | None = None) -> dict[int, str]:
        if not chunk_ids:
            return {}
        body = "body" if chars is None else f"substr(body, 1, {int(chars)})"
        rows = self.db.execute(
            f"SELECT rowid, {body} FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?))",
            (json.dumps(list(chunk_ids)),),
        )
        return dict(rows.fetchall())

    def version(self) -> Any:
        return (self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes)

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        wanted = sorted(set(terms))
        if not wanted:
            return {}
        # A list of values, not a subquery: fts5vocab looks each term up, never scans.
        # Bytes, decoded here: a long query word can meet a prefix entry cut inside a
        # multi-byte character, which sqlite3 would refuse to decode (an error, not a miss).
        rows = self.db.execute(
            "SELECT CAST(term AS BLOB), doc FROM vocab_stemmed WHERE term IN "
            f"({', '.join('?' for _ in wanted)})",
            wanted,
        ).fetchall()
        found = {term.decode("utf-8", "replace"): doc for term, doc in rows}
        return {t: int(found.get(t, 0)) for t in wanted}

    def rank(
        self, query: TextQuery, depth: int, scope: tuple[str, list[object]] = ("", [])
    ) -> list[LexicalHit]:
        in_scope, params = scope
        rows = self.db.execute(rank_query(in_scope), [render(query), *params, depth]).fetchall()
        return [LexicalHit(int(r[0]), float(r[1])) for r in rows]

    def snippets(self, query: TextQuery, chunk_ids: Sequence[int]) -> dict[int, str]:
        """Asked for the few hits shown, after ranking: FTS5 seeks each id (a bare rowid
        constraint), cheaper than excerpting every candidate in the ranking query."""
        if not chunk_ids:
            return {}
        rows = self.db.execute(
            f"SELECT f.rowid, {SNIPPET} FROM chunks_fts f WHERE chunks_fts MATCH ? "
            "AND f.rowid IN (SELECT value FROM json_each(?))",
            (render(query), json.dumps(list(chunk_ids))),
        )
        return {int(chunk_id): text or "" for chunk_id, text in rows}

    def highlights(
        self, query: TextQuery, document_ids: Sequence[int]
    ) -> dict[int, tuple[list[str], list[str]]]:
        """Looked up by id: FTS5 seeks."""
        if not query.phrases or not document_ids:
            return {}
        rows = self.db.execute(
            f"{HIGHLIGHTS} AND +rowid IN (SELECT value FROM json_each(?))",
            (render(query), json.dumps(list(document_ids))),
        )
        return marked_spans(rows)

    def documents_with(self, query: TextQuery, *, exact: bool = False) -> dict[int, int]:
        table = "chunks_exact" if exact else "chunks_fts"
        return dict(
            self.db.execute(
                f"SELECT c.document_id, count(*) FROM {table} m JOIN chunks c ON c.id = m.rowid "
                f"WHERE {table} MATCH ? GROUP BY c.document_id",
                (render(query),),
            ).fetchall()
        )

    def exact_terms(self) -> Iterator[str]:
        for (term,) in self.db.execute("SELECT term FROM vocab_exact ORDER BY doc DESC, term"):
            yield term


def marked_spans(rows: Iterable[tuple[int, str, str]]) -> dict[int, tuple[list[str], list[str]]]:
    """The spans `HIGHLIGHTS` marked in each document's title and path."""
    return {
        int(doc_id): (MARKED.findall(title or ""), MARKED.findall(path or ""))
        for doc_id, title, path in rows
    }
