"""SQLite's own FTS5, in memory, as the tokenizer and excerpt maker of a text index kept
elsewhere (PostgreSQL): running FTS5's code rather than a copy of it guarantees the same tokens
(porter, unicode61 remove_diacritics 2), the same phrase splitting and byte-identical snippets
and highlights. Rows stay in the scratch tables only for the length of one call.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from index.schema import TOKENIZER
from index.textindex import CHUNK_COLUMNS, ChunkText, DocumentText, TextQuery
from index.textindex.fts5 import HIGHLIGHTS, SNIPPET, marked_spans, render

EXACT_TOKENIZER = "unicode61 remove_diacritics 2"  # chunks_exact's: no stemming
# A token's position: its column's number times this, plus its offset in the column. A line is
# at most 16 MiB (the loader's MAX_LINE_BYTES), so a column never holds this many tokens.
COLUMN_SPAN = 1 << 24
PHRASES_KEPT = 4096  # tokenized query phrases remembered (a small, bounded cache)
CHUNK_SPAN = 8 * COLUMN_SPAN  # room for the columns' positions: chunk * this + position


@dataclass(frozen=True)
class TermChunks:
    """Terms and the chunks holding them, grouped by term: term t's postings are
    `ids[starts[t]:starts[t + 1]]`, chunk ids ascending."""

    terms: list[str]
    starts: np.ndarray  # int64, len(terms) + 1
    ids: np.ndarray  # int64, one per (term, chunk)


@dataclass(frozen=True)
class Tokenized:
    stemmed: TermChunks
    counts: np.ndarray  # int64 [postings, len(CHUNK_COLUMNS)]: occurrences in each column
    # Every posting's positions (column * COLUMN_SPAN + offset, ascending), one after the
    # other in posting order: posting p has counts[p].sum() of them.
    positions: np.ndarray  # int64
    lengths: dict[int, int]  # chunk id -> tokens in all its columns (FTS5's column size -1)
    exact: TermChunks  # the body's unstemmed terms


def _decode(term: bytes) -> str:
    # Bytes: a very long token may be cut inside a multi-byte character.
    return term.decode("utf-8", "replace")


def _grouped(db: sqlite3.Connection, rows_table: str, instances: str) -> tuple[list[str], Any]:
    """The terms of an fts5vocab 'row' table and, for each of its instances (in the same term
    order, then chunk, column, offset), the numbers `instances` gives, read as one string
    (a row per instance through Python would cost more than the tokenizing)."""
    found = db.execute(f"SELECT CAST(term AS BLOB), cnt FROM {rows_table}").fetchall()
    text = db.execute(instances).fetchone()[0] or ""
    numbers = np.fromstring(text, dtype=np.int64, sep=" ")
    sizes = np.array([n for _, n in found], dtype=np.int64)
    return [_decode(t) for t, _ in found], (sizes, numbers)


def _postings(sizes: Any, chunk: Any, key: Any, strict: bool) -> tuple[Any, Any, Any]:
    """(first posting of each term, posting of each instance, first instance of each posting)
    for instances grouped by term; `key` must ascend within a term (strictly: `strict`)."""
    term = np.repeat(np.arange(len(sizes)), sizes)
    same = term[1:] == term[:-1]
    steps = np.diff(key)[same]
    if not np.all(steps > 0 if strict else steps >= 0):
        raise RuntimeError("fts5vocab instances came out of order")
    new = np.ones(len(chunk), dtype=bool)
    new[1:] = ~same | (chunk[1:] != chunk[:-1])
    posting = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    term_first = np.concatenate(([0], np.cumsum(sizes)))[:-1]
    starts = np.append(posting[term_first], len(first)).astype(np.int64)
    return starts, posting, first


class Scratch:
    """One in-memory FTS5 database, used by one call at a time (a lock: the loader writes
    from a second thread while readers may ask for snippets)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._phrases: dict[tuple[str, bool], tuple[str, ...]] = {}  # a query's words recur
        db = sqlite3.connect(":memory:", check_same_thread=False)
        columns = ", ".join(CHUNK_COLUMNS)
        # Contentless twins for tokenizing: emptied at once ('delete-all'), where a table that
        # keeps its text deletes row by row, tokenizing each again.
        for name, fields, tokenizer in (("tokens", columns, TOKENIZER),
                                        ("exact", "body", EXACT_TOKENIZER)):  # fmt: skip
            db.execute(f"CREATE VIRTUAL TABLE {name} USING fts5({fields}, "
                       f"tokenize = '{tokenizer}', content = '')")  # fmt: skip
            db.execute(f"CREATE VIRTUAL TABLE {name}_instances USING fts5vocab({name}, 'instance')")
            db.execute(f"CREATE VIRTUAL TABLE {name}_rows USING fts5vocab({name}, 'row')")
        db.execute(
            f"CREATE VIRTUAL TABLE chunks_fts USING fts5({columns}, tokenize = '{TOKENIZER}')"
        )
        # HIGHLIGHTS' table, its text kept in a plain table beside it and no column sizes (what
        # highlight() needs, no more): each call's rows are written in a savepoint rolled back
        # after, half the cost of FTS5 keeping its own copy and deleting the rows one by one.
        db.execute("CREATE TABLE documents (id INTEGER PRIMARY KEY, title TEXT, path TEXT)")
        db.execute("CREATE VIRTUAL TABLE documents_fts USING fts5(title, path, content = "
                   "'documents', content_rowid = 'id', columnsize = 0, "
                   f"tokenize = '{TOKENIZER}')")  # fmt: skip
        self.db = db

    def tokenize(self, rows: Sequence[ChunkText]) -> Tokenized:
        """The postings, lengths and exact terms of these chunks, as FTS5 indexes them."""
        column = " ".join(f"WHEN '{c}' THEN {n}" for n, c in enumerate(CHUNK_COLUMNS))
        with self._lock:
            db = self.db
            try:
                db.executemany(
                    f"INSERT INTO tokens (rowid, {', '.join(CHUNK_COLUMNS)}) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    [(r.chunk_id, r.title, r.section, r.symbol, r.body, r.parts) for r in rows],
                )
                db.executemany(
                    "INSERT INTO exact (rowid, body) VALUES (?, ?)",
                    [(r.chunk_id, r.body) for r in rows],
                )
                # One number per instance: chunk, column and offset.
                terms, (sizes, keys) = _grouped(
                    db, "tokens_rows",
                    f"SELECT group_concat(doc * {CHUNK_SPAN} + (CASE col {column} END) * "
                    f"{COLUMN_SPAN} + offset, ' ') FROM tokens_instances",
                )  # fmt: skip
                words, (word_sizes, word_chunks) = _grouped(
                    db, "exact_rows", "SELECT group_concat(doc, ' ') FROM exact_instances"
                )
            finally:
                db.execute("INSERT INTO tokens (tokens) VALUES ('delete-all')")
                db.execute("INSERT INTO exact (exact) VALUES ('delete-all')")
        chunk, position = keys // CHUNK_SPAN, keys % CHUNK_SPAN
        starts, posting, first = _postings(sizes, chunk, keys, strict=True)
        width = len(CHUNK_COLUMNS)
        counts = np.bincount(
            posting * width + position // COLUMN_SPAN, minlength=len(first) * width
        ).reshape(-1, width)
        lengths = {r.chunk_id: 0 for r in rows}
        found, tokens = np.unique(chunk, return_counts=True)
        lengths.update(zip(found.tolist(), tokens.tolist(), strict=True))
        # One instance per occurrence in the exact table too: a posting per (term, chunk).
        word_starts, _, word_first = _postings(word_sizes, word_chunks, word_chunks, strict=False)
        return Tokenized(
            TermChunks(terms, starts, chunk[first]),
            counts,
            position,
            lengths,
            TermChunks(words, word_starts, word_chunks[word_first]),
        )

    def phrase_tokens(self, phrase: str, *, exact: bool = False) -> list[str]:
        """The terms of a query phrase, in order (stemmed unless `exact`), as FTS5 parses
        the quoted string."""
        known = self._phrases.get((phrase, exact))
        if known is not None:
            return list(known)
        table = "exact" if exact else "tokens"
        with self._lock:
            try:
                self.db.execute(f"INSERT INTO {table} (rowid, body) VALUES (1, ?)", (phrase,))
                rows = self.db.execute(
                    f"SELECT CAST(term AS BLOB), offset FROM {table}_instances"
                ).fetchall()
            finally:
                self.db.execute(f"INSERT INTO {table} ({table}) VALUES ('delete-all')")
        if exact:  # no positions there: the order does not matter
            terms = sorted({_decode(t) for t, _ in rows})
        else:
            terms = [_decode(t) for t, _ in sorted(rows, key=lambda r: r[1])]
        if len(self._phrases) >= PHRASES_KEPT:
            self._phrases.clear()
        self._phrases[phrase, exact] = tuple(terms)
        return terms

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
        """FTS5's highlighted spans of each document's title and path that match `query`
        (`rows` with distinct ids)."""
        rows_in = [(r.document_id, r.title, r.path) for r in rows]
        return self._highlighted(query, "VALUES (?, ?, ?)", rows_in)

    def marked_titles(self, query: TextQuery, titles: dict[int, str]) -> dict[int, list[str]]:
        """For each title (id -> its text) that `query` matches: the spans matched, as
        `highlights` marks a document's title (the page stage's section headings)."""
        found = self._highlighted(query, "VALUES (?, ?, '')", titles.items())
        return {row_id: title for row_id, (title, _) in found.items()}

    def _highlighted(
        self, query: TextQuery, values: str, rows: Collection[Sequence[Any]]
    ) -> dict[int, tuple[list[str], list[str]]]:
        """`HIGHLIGHTS` over `rows` (id, title and path as `values` spells them)."""
        if not rows or not query.phrases:
            return {}
        with self._lock:
            self.db.execute("SAVEPOINT marking")
            try:
                self.db.executemany(f"INSERT INTO documents (id, title, path) {values}", rows)
                self.db.execute("INSERT INTO documents_fts (rowid, title, path) "
                                "SELECT id, title, path FROM documents")  # fmt: skip
                found = self.db.execute(HIGHLIGHTS, (render(query),)).fetchall()
            finally:
                self.db.execute("ROLLBACK TO marking")
                self.db.execute("RELEASE marking")
        return marked_spans(found)


@functools.cache
def shared() -> Scratch:
    """One scratch database for the callers that have no store of their own to hang one on
    (the page stage marking section headings, on either store): its lock serves one call at a
    time, for readers on several threads."""
    return Scratch()
