"""Section headings are marked in memory (index.headings) exactly as the store's text index marks
them, and a query no longer asks the index to mark every chunk's title."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from index.headings import marked_headings
from index.search import SearchOptions, search
from index.store import Store
from index.textindex import ChunkText, TextQuery
from index.textindex.fts5 import MARKED, Fts5TextIndex, render, titles_only
from tests.conftest import indexed_tree
from tests.test_textindex import QUERY_FORMS, WORDS, _migrated, queries

TITLE_WORDS = [*WORDS, "Blue Green", "aws_eks_cluster.main", "Client.stream", "Ünïcode", "ÉCOLE",
               "école", "getUserName", "—", "v1.2", "(part 1/2)"]  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(TITLE_WORDS), max_size=6), min_size=1, max_size=8),
    queries(),
)
def test_headings_are_marked_as_the_text_index_marks_chunk_titles(titles, query):
    db = sqlite3.connect(":memory:")
    _migrated().backup(db)
    index = Fts5TextIndex(db)
    headings = {n: " ".join(words) for n, words in enumerate(titles, start=1)}
    index.write_chunks(1, [ChunkText(n, title, "", "", "", "") for n, title in headings.items()])
    marked_in_store = db.execute(  # what FTS5 marks in the store's own chunk titles
        "SELECT rowid, highlight(chunks_fts, 0, char(1), char(2)) FROM chunks_fts "
        "WHERE chunks_fts MATCH ?",
        (render(titles_only(query)),),
    )
    expected = {chunk_id: MARKED.findall(title) for chunk_id, title in marked_in_store}
    assert marked_headings(query, headings) == expected


def test_marked_headings_leave_nothing_behind_for_the_next_call():
    query = TextQuery((QUERY_FORMS[0],))
    assert marked_headings(query, {1: "Deploy it", 2: "Other"}) == {1: ["Deploy"]}
    assert marked_headings(query, {3: "Nothing here"}) == {}


def test_a_lexical_query_never_marks_titles_across_the_whole_index(tmp_path):
    """Marking the headings in the index ran the query's MATCH over every chunk's title (a walk
    of each word's whole list) to keep a hundred candidates; it happens in memory now."""
    files = {f"docs/p{n}.md": f"# Page {n}\n\n## Deploy step {n}\n\nDeploy the app.\n"
             for n in range(6)}  # fmt: skip
    store_dir = indexed_tree(tmp_path, files, "docs")
    statements: list[str] = []
    with Store.open(store_dir, readonly=True) as opened:
        opened.db.set_trace_callback(statements.append)
        hits = search(opened, "deploy step", SearchOptions(explain=True)).results
    assert hits and all(h.ranking.field_score > 0 for h in hits)  # the headings did count
    assert not [s for s in statements if "highlight(chunks_fts" in s]
