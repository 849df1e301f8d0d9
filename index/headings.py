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
        db = sqlite3.connect(":memory:", check_same_thread=False)
        # HIGHLIGHTS' table (a heading is its title, its path empty), its text kept in a plain
        # table beside it: emptied at once after each call ('delete-all'), where a table that
        # keeps its own text deletes row by row, tokenizing each again (twice the call's cost).
        db.execute("CREATE TABLE headings (id INTEGER PRIMARY KEY, title TEXT, path TEXT)")
        db.execute("CREATE VIRTUAL TABLE documents_fts USING fts5(title, path, content = "
                   f"'headings', content_rowid = 'id', tokenize = '{TOKENIZER}')")  # fmt: skip
        _marker = db
    return _marker


def marked_headings(query: TextQuery, headings: dict[int, str]) -> dict[int, list[str]]:
    """For each heading (chunk id -> its title) that `query`'s phrases match: the spans matched,
    as the text index's `title_highlights` gives them for those chunks."""
    if not query.phrases or not headings:
        return {}
    rows = list(headings.items())
    with _lock:
        db = _connection()
        try:
            db.executemany("INSERT INTO headings (id, title, path) VALUES (?, ?, '')", rows)
            db.executemany("INSERT INTO documents_fts (rowid, title, path) VALUES (?, ?, '')", rows)
            found = db.execute(HIGHLIGHTS, (render(titles_only(query)),)).fetchall()
        finally:
            db.execute("INSERT INTO documents_fts (documents_fts) VALUES ('delete-all')")
            db.execute("DELETE FROM headings")
    return {chunk_id: title for chunk_id, (title, _) in marked_spans(found).items()}
