"""SQLite's own FTS5, in memory, as the tokenizer and excerpt maker of a text index kept
elsewhere (PostgreSQL): running FTS5's code rather than a copy of it guarantees the same tokens
(porter, unicode61 remove_diacritics 2), the same phrase splitting and byte-identical snippets
and highlights. Rows stay in the scratch tables only for the length of one call.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from index.schema import TOKENIZER
from index.textindex import CHUNK_COLUMNS, ChunkText, DocumentText, TextQuery
from index.textindex.fts5 import HIGHLIGHTS, SNIPPET, marked_spans, render

EXACT_TOKENIZER = "unicode61 remove_diacritics 2"  # chunks_exact's: no stemming
# A token's position: its column's number times this, plus its offset in the column. A line is
# at most 16 MiB (the loader's MAX_LINE_BYTES), so a column never holds this many tokens.
COLUMN_SPAN = 1 << 24


@dataclass(frozen=True)
class Posting:
    term: str
    chunk_id: int
    counts: list[int]  # occurrences in each of CHUNK_COLUMNS
    positions: list[int]  # column * COLUMN_SPAN + offset, ascending


@dataclass(frozen=True)
class Tokenized:
    postings: list[Posting]
    lengths: dict[int, int]  # chunk id -> tokens in all its columns (FTS5's column size -1)
    exact: list[tuple[str, int]]  # (unstemmed term of the body, chunk id), each pair once


class Scratch:
    """One in-memory FTS5 database, used by one call at a time (a lock: the loader writes
    from a second thread while readers may ask for snippets)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        db = sqlite3.connect(":memory:", check_same_thread=False)
        columns = ", ".join(CHUNK_COLUMNS)
        db.execute(
            f"CREATE VIRTUAL TABLE chunks_fts USING fts5({columns}, tokenize = '{TOKENIZER}')"
        )
        db.execute("CREATE VIRTUAL TABLE chunk_terms USING fts5vocab(chunks_fts, 'instance')")
        db.execute(f"CREATE VIRTUAL TABLE exact USING fts5(body, tokenize = '{EXACT_TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE exact_terms USING fts5vocab(exact, 'instance')")
        db.execute(
            f"CREATE VIRTUAL TABLE documents_fts USING fts5(title, path, tokenize = '{TOKENIZER}')"
        )
        self.db = db

    def tokenize(self, rows: Sequence[ChunkText]) -> Tokenized:
        """The postings, lengths and exact terms of these chunks, as FTS5 indexes them."""
        column = {name: n for n, name in enumerate(CHUNK_COLUMNS)}
        with self._lock:
            db = self.db
            try:
                db.executemany(
                    f"INSERT INTO chunks_fts (rowid, {', '.join(CHUNK_COLUMNS)}) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(r.chunk_id, r.title, r.section, r.symbol, r.body, r.parts) for r in rows],
                )
                db.executemany(
                    "INSERT INTO exact (rowid, body) VALUES (?, ?)",
                    [(r.chunk_id, r.body) for r in rows],
                )
                # Bytes: a very long token may be cut inside a multi-byte character.
                instances = db.execute(
                    "SELECT CAST(term AS BLOB), doc, col, offset FROM chunk_terms"
                ).fetchall()
                exact = db.execute(
                    "SELECT DISTINCT CAST(term AS BLOB), doc FROM exact_terms"
                ).fetchall()
            finally:
                db.execute("DELETE FROM chunks_fts")
                db.execute("DELETE FROM exact")
        postings: dict[tuple[bytes, int], Posting] = {}
        lengths = {r.chunk_id: 0 for r in rows}
        for term, doc, col, offset in instances:  # in term, doc, column, offset order
            n = column[col]
            posting = postings.get((term, doc))
            if posting is None:
                posting = postings[term, doc] = Posting(
                    term.decode("utf-8", "replace"), doc, [0] * len(CHUNK_COLUMNS), []
                )
            posting.counts[n] += 1
            posting.positions.append(n * COLUMN_SPAN + offset)
            lengths[doc] += 1
        for posting in postings.values():
            posting.positions.sort()
        words = [(t.decode("utf-8", "replace"), doc) for t, doc in exact]
        return Tokenized(list(postings.values()), lengths, words)

    def phrase_tokens(self, phrase: str, *, exact: bool = False) -> list[str]:
        """The terms of a query phrase, in order (stemmed unless `exact`), as FTS5 parses
        the quoted string."""
        table, terms = ("exact", "exact_terms") if exact else ("chunks_fts", "chunk_terms")
        column = "body"
        with self._lock:
            try:
                self.db.execute(f"INSERT INTO {table} (rowid, {column}) VALUES (1, ?)", (phrase,))
                rows = self.db.execute(f"SELECT CAST(term AS BLOB), offset FROM {terms}").fetchall()
            finally:
                self.db.execute(f"DELETE FROM {table}")
        if exact:  # no positions there: the order does not matter
            return sorted({t.decode("utf-8", "replace") for t, _ in rows})
        return [t.decode("utf-8", "replace") for t, _ in sorted(rows, key=lambda r: r[1])]

    def snippets(self, query: TextQuery, rows: Sequence[ChunkText]) -> dict[int, str]:
        """FTS5's snippet of each row that matches `query` (the row alone decides it)."""
        if not rows or not query.phrases:
            return {}
        with self._lock:
            try:
                self.db.executemany(
                    f"INSERT INTO chunks_fts (rowid, {', '.join(CHUNK_COLUMNS)}) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(r.chunk_id, r.title, r.section, r.symbol, r.body, r.parts) for r in rows],
                )
                found = self.db.execute(
                    f"SELECT f.rowid, {SNIPPET} FROM chunks_fts f WHERE chunks_fts MATCH ?",
                    (render(query),),
                ).fetchall()
            finally:
                self.db.execute("DELETE FROM chunks_fts")
        return {int(chunk_id): text or "" for chunk_id, text in found}

    def highlights(
        self, query: TextQuery, rows: Sequence[DocumentText]
    ) -> dict[int, tuple[list[str], list[str]]]:
        """FTS5's highlighted spans of each document's title and path that match `query`."""
        if not rows or not query.phrases:
            return {}
        with self._lock:
            try:
                self.db.executemany(
                    "INSERT INTO documents_fts (rowid, title, path) VALUES (?, ?, ?)",
                    [(r.document_id, r.title, r.path) for r in rows],
                )
                found = self.db.execute(HIGHLIGHTS, (render(query),)).fetchall()
            finally:
                self.db.execute("DELETE FROM documents_fts")
        return marked_spans(found)
