"""The query's words marked in the candidates' section headings, by SQLite's FTS5 in memory.

The page stage counts the words a section's heading names (`ranking.heading_scores`). Marking
them in the store's own text index (highlight() of `chunks_fts`) runs the query's MATCH over
every chunk's title before keeping the hundred candidates: a walk of each word's whole list, 2
to 6 ms of a lexical query at 100k slices when its words are common. The candidates' headings
are at hand already (`ranking.Page.title`, the text the index holds as each chunk's title), so
they are marked here instead: the same FTS5 code, tokenizer and query over those few rows, which
gives the same spans, for every engine (PostgreSQL marks them with SQLite's FTS5 as well).
"""

from __future__ import annotations

from index.textindex import TextQuery
from index.textindex.fts5 import titles_only
from index.textindex.scratch import shared


def marked_headings(query: TextQuery, headings: dict[int, str]) -> dict[int, list[str]]:
    """For each heading (chunk id -> its title) that `query`'s phrases match: the spans matched,
    as FTS5's highlight() marks them in the store's chunk titles."""
    if not query.phrases or not headings:
        return {}
    return shared().marked_titles(titles_only(query), headings)
