"""The query's words marked in the candidates' section headings, by SQLite's FTS5 in memory.

The page stage counts the words a section's heading names (`ranking.heading_scores`). Marking
them in the store's own text index (`TextIndex.title_highlights`) runs the query's MATCH over
every chunk's title before keeping the hundred candidates: a walk of each word's whole list, 2
to 6 ms of a lexical query at 100k slices when its words are common. The candidates' headings
are at hand already (`ranking.Page.title`, the text the index holds as each chunk's title), so
they are marked here instead: the same FTS5 code, tokenizer and query over those few rows, which
gives the same spans, for every engine (PostgreSQL marks them with SQLite's FTS5 as well).
"""

from __future__ import annotations

import sqlite3
import threading

from index.schema import TOKENIZER
from index.textindex import TextQuery
from index.textindex.fts5 import HIGHLIGHTS, marked_spans, render, titles_only

_lock = threading.Lock()  # one connection, one call at a time (readers on several threads)
_marker: sqlite3.Connection | None = None


def _connection() -> sqlite3.Connection:
    global _marker
    if _marker is None:
        db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        # HIGHLIGHTS' table (a heading is its title, its path empty), its text kept in a plain
        # table beside it and no column sizes (what highlight() needs, no more): each call's
        # rows are written in a transaction rolled back after, half the cost of FTS5 keeping
        # its own copy and of deleting the rows one by one.
        db.execute("CREATE TABLE headings (id INTEGER PRIMARY KEY, title TEXT, path TEXT)")
        db.execute("CREATE VIRTUAL TABLE documents_fts USING fts5(title, path, content = "
                   "'headings', content_rowid = 'id', columnsize = 0, "
                   f"tokenize = '{TOKENIZER}')")  # fmt: skip
        _marker = db
    return _marker


def marked_headings(query: TextQuery, headings: dict[int, str]) -> dict[int, list[str]]:
    """For each heading (chunk id -> its title) that `query`'s phrases match: the spans matched,
    as the text index's `title_highlights` gives them for those chunks."""
    if not query.phrases or not headings:
        return {}
    with _lock:
        db = _connection()
        db.execute("BEGIN")
        try:
            db.executemany("INSERT INTO headings (id, title, path) VALUES (?, ?, '')",
                           headings.items())  # fmt: skip
            db.execute("INSERT INTO documents_fts (rowid, title, path) "
                       "SELECT id, title, path FROM headings")  # fmt: skip
            found = db.execute(HIGHLIGHTS, (render(titles_only(query)),)).fetchall()
        finally:
            db.execute("ROLLBACK")
    return {chunk_id: title for chunk_id, (title, _) in marked_spans(found).items()}
