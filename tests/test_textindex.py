"""The text index on PostgreSQL ranks, excerpts and counts exactly as FTS5 does.

Each example loads the same chunks into SQLite's FTS5 index (the real schema) and into the
Postgres one (a real server, `tests/pgserver.py`), then asks both the same structured queries.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import sqlite3
from collections.abc import Iterator
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from index.schema import migrate
from index.textindex import CHUNK_COLUMNS, ChunkText, DocumentText, TextQuery
from index.textindex.fts5 import Fts5TextIndex

# Words that exercise the tokenizer: porter families, identifiers, compounds, diacritics.
WORDS = ["deploy", "deploying", "deployment", "deployments", "cluster", "aws_eks_cluster",
         "blue", "green", "bluegreen", "blue-green", "café", "cafe", "Über", "getUser", "user",
         "the", "run", "runs", "running", "x", "HTTPServer", "server", "2024"]  # fmt: skip
QUERY_FORMS = ["deploy", "deployment", "cluster", "aws_eks_cluster", "blue green", "bluegreen",
               "cafe", "über", "user", "get user", "run", "server", "the", "zebra", "___",
               "2024", "eks cluster"]  # fmt: skip
COLUMN_CHOICES = [None, CHUNK_COLUMNS[:3], ("body",), CHUNK_COLUMNS, ("title", "body")]
_schemas = itertools.count()
_databases = itertools.count()


@pytest.fixture(scope="module")
def pg_database(postgres_server) -> Iterator[Any]:
    """One database for this module; each example gets a schema of its own in it. Named per
    set-up (the property test runs first, apart from its module: the fixture is made twice)."""
    name = f"textindex{os.getpid()}_{next(_databases)}"
    postgres_server.create_database(name)
    with postgres_server.connect(name, autocommit=True) as db:
        yield db
    postgres_server.drop_database(name)


def _texts(draw: st.DrawFn, chunk_id: int) -> ChunkText:
    def field(most: int) -> str:
        return " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=most)))

    return ChunkText(chunk_id, field(3), field(3), field(1), field(12), field(2))


@st.composite
def corpora(draw: st.DrawFn) -> list[tuple[int, int, list[ChunkText]]]:
    """(corpus id, document id, its chunks) for a few documents in one or two corpora."""
    documents = []
    chunk_ids = itertools.count(1)
    for doc_id in range(1, draw(st.integers(1, 4)) + 1):
        corpus_id = draw(st.integers(1, 2))
        chunks = [_texts(draw, next(chunk_ids)) for _ in range(draw(st.integers(1, 4)))]
        documents.append((corpus_id, doc_id, chunks))
    return documents


@st.composite
def queries(draw: st.DrawFn) -> TextQuery:
    """A query; an OR query over every column may narrow some phrases to columns of their own
    (as the plan does for the words it adds)."""
    phrases = tuple(draw(st.lists(st.sampled_from(QUERY_FORMS), min_size=1, max_size=3,
                                  unique=True)))  # fmt: skip
    every, columns = draw(st.booleans()), draw(st.sampled_from(COLUMN_CHOICES))
    narrowed: tuple[tuple[str, tuple[str, ...]], ...] = ()
    if not every and columns is None:
        own = [c for c in COLUMN_CHOICES if c is not None]
        narrowed = tuple((p, draw(st.sampled_from(own))) for p in phrases if draw(st.booleans()))
    return TextQuery(phrases, every, columns, narrowed)


@cache
def _migrated() -> sqlite3.Connection:
    """An empty store's schema, made once: each example copies it (a backup is a tenth of the
    time of running the migrations)."""
    template = sqlite3.connect(":memory:")
    migrate(template)
    template.commit()
    return template


def _relational(db: Any, documents: list[tuple[int, int, list[ChunkText]]], pg: bool) -> None:
    """The corpora, documents and chunks rows the text index looks its chunks up in."""
    mark = "%s" if pg else "?"
    for corpus_id in sorted({c for c, _, _ in documents}):
        db.execute(f"INSERT INTO corpora (id, name) VALUES ({mark}, {mark})",
                   (corpus_id, f"c{corpus_id}"))  # fmt: skip
    for corpus_id, doc_id, chunks in documents:
        db.execute(
            "INSERT INTO documents (id, corpus_id, source, fingerprint, chunks, chars, "
            f"indexed_at) VALUES ({mark}, {mark}, {mark}, '', 0, 0, '')",
            (doc_id, corpus_id, f"d{doc_id}.md"),
        )
        for ordinal, chunk in enumerate(chunks):
            db.execute(
                "INSERT INTO chunks (id, document_id, ordinal, hash, title) "
                f"VALUES ({mark}, {mark}, {mark}, '', '')",
                (chunk.chunk_id, doc_id, ordinal),
            )


def _new_schema(pg_database: Any) -> str:
    """A schema of its own with the relational tables and the text index's, on the search
    path; its name."""
    from index.textindex.postgres import create_tables

    schema = f"s{next(_schemas)}"
    pg_database.execute(f"CREATE SCHEMA {schema}")
    pg_database.execute(f"SET search_path = {schema}")
    for table in ("corpora", "documents", "chunks"):
        pg_database.execute(f"CREATE TABLE {table} (LIKE public.{table}_template)")
    create_tables(pg_database)
    return schema


def _both(
    pg_database: Any,
    documents: list[tuple[int, int, list[ChunkText]]],
    together: bool = False,
    schema: str | None = None,
):
    """FTS5 and the Postgres text index holding `documents`; Postgres's in `schema` (empty,
    made by `_new_schema`), else in a new schema."""
    from index.textindex.postgres import PostgresTextIndex

    if schema is None:
        _new_schema(pg_database)
    else:
        pg_database.execute(f"SET search_path = {schema}")
    lite = sqlite3.connect(":memory:")
    _migrated().backup(lite)
    _relational(lite, documents, pg=False)
    _relational(pg_database, documents, pg=True)
    both = (Fts5TextIndex(lite), PostgresTextIndex(pg_database))
    for index in both:
        for corpus_id, doc_id, chunks in documents:
            if not together:  # one batch per document, else one per corpus (below)
                index.write_chunks(corpus_id, chunks)
            index.write_documents([DocumentText(doc_id, chunks[0].title, chunks[0].body)])
        for corpus_id in sorted({c for c, _, _ in documents} if together else ()):
            index.write_chunks(
                corpus_id, [c for k, _, cs in documents if k == corpus_id for c in cs]
            )
    return both


@pytest.fixture(scope="module")
def templates(pg_database) -> None:
    """Minimal relational tables (the store's own schema is not this module's subject)."""
    pg_database.execute(
        "CREATE TABLE IF NOT EXISTS public.corpora_template (id bigint PRIMARY KEY, name text, "
        "weight float8 DEFAULT 1)"
    )
    pg_database.execute(
        "CREATE TABLE IF NOT EXISTS public.documents_template (id bigint PRIMARY KEY, "
        "corpus_id bigint, source text, fingerprint text, chunks int, chars int, "
        "indexed_at text, kind text, locale text, title text)"
    )
    pg_database.execute(
        "CREATE TABLE IF NOT EXISTS public.chunks_template (id bigint PRIMARY KEY, "
        "document_id bigint, ordinal int, hash text, title text)"
    )


def _same_ranking(fts5: list[Any], postgres: list[Any]) -> None:
    """Same chunks, scores within 1e-6 relative, and the same order (exact ties in either
    order: FTS5 leaves their order unsaid)."""
    assert {h.chunk_id for h in postgres} == {h.chunk_id for h in fts5}
    expected = {h.chunk_id: h.score for h in fts5}
    for hit in postgres:
        assert math.isclose(hit.score, expected[hit.chunk_id], rel_tol=1e-6), (hit, expected)

    def ranks(hits: list[Any]) -> list[float]:
        return [round(expected[h.chunk_id], 9) for h in hits]

    assert ranks(postgres) == ranks(fts5) == sorted(ranks(fts5), reverse=True)


@pytest.fixture(scope="module")
def empty_schema(pg_database, templates) -> str:
    """One empty schema the property test's examples each fill in a transaction rolled back:
    creating a schema and its tables for every example was half the test's time."""
    return _new_schema(pg_database)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(corpora(), st.lists(queries(), min_size=1, max_size=4), st.data())
def test_postgres_bm25_scores_and_ranks_as_fts5(
    pg_database, empty_schema, documents, asked, data
) -> None:
    with pg_database.transaction(force_rollback=True):
        _check_bm25_as_fts5(pg_database, empty_schema, documents, asked, data)


def _check_bm25_as_fts5(pg_database, schema, documents, asked, data) -> None:
    together = data.draw(st.booleans())
    fts5, postgres = _both(pg_database, documents, together=together, schema=schema)
    if data.draw(st.booleans()):  # a replaced document: the statistics must follow
        corpus_id, doc_id, gone = data.draw(st.sampled_from(documents))
        if data.draw(st.booleans()):  # in a load of its own (the statistics are folded)
            postgres.prepare_load()
        for index in (fts5, postgres):
            index.delete_document(corpus_id, doc_id)
        if data.draw(st.booleans()):  # a new chunk takes a deleted one's id
            reborn = _texts(data.draw, gone[0].chunk_id)
            for index in (fts5, postgres):
                index.write_chunks(corpus_id, [reborn])
    chunk_ids = [c.chunk_id for _, _, chunks in documents for c in chunks]
    for query in asked:
        _same_ranking(fts5.rank(query, 100), postgres.rank(query, 100))
        assert postgres.snippets(query, chunk_ids) == fts5.snippets(query, chunk_ids)
        assert postgres.documents_with(query) == fts5.documents_with(query)
        words = TextQuery(query.phrases)  # a title and path: no chunk columns
        doc_ids = [d for _, d, _ in documents]
        assert postgres.highlights(words, doc_ids) == fts5.highlights(words, doc_ids)
    # As `match --exact` asks: the exact index has no positions, so no phrases.
    words = data.draw(st.lists(st.sampled_from(WORDS), min_size=1))
    exact = TextQuery(tuple(t for w in words for t in re.findall(r"[^\W_]+", w)), True)
    assert postgres.documents_with(exact, exact=True) == fts5.documents_with(exact, exact=True)
    assert list(postgres.exact_terms()) == list(fts5.exact_terms())
    stems = ["deploi", "deploy", "cluster", "blue", "user", "cafe", "uber", "zebra", "the"]
    assert postgres.document_frequencies(stems) == fts5.document_frequencies(stems)
    assert postgres.chunk_texts(chunk_ids, 7) == fts5.chunk_texts(chunk_ids, 7)


def test_postgres_ranking_keeps_to_the_scope(pg_database, templates) -> None:
    documents = [(1, 1, [ChunkText(1, "Deploy", "", "", "deploy the cluster", "")]),
                 (2, 2, [ChunkText(2, "Deploy", "", "", "deploy a cluster", "")])]  # fmt: skip
    fts5, postgres = _both(pg_database, documents)
    scope = ("AND k.name = ?", ["c2"])
    query = TextQuery(("deploy",))
    assert [h.chunk_id for h in postgres.rank(query, 10, scope)] == [2]
    _same_ranking(fts5.rank(query, 10, scope), postgres.rank(query, 10, scope))


def test_postgres_chunk_taking_a_deleted_ones_id_is_found_and_the_old_text_is_not(
    pg_database, templates
) -> None:
    # Eight documents in one batch: deleting one leaves its postings in the batch (too few
    # to rewrite it), listed as dead, until a new chunk takes the id.
    documents = [(1, d, [ChunkText(d, f"Doc {d}", "", "", f"cluster deploy {d}", "")])
                 for d in range(1, 9)]  # fmt: skip
    fts5, postgres = _both(pg_database, documents, together=True)
    for index in (fts5, postgres):
        index.delete_document(1, 1)
    assert 1 not in {h.chunk_id for h in postgres.rank(TextQuery(("deploy",)), 10)}
    for index in (fts5, postgres):
        index.write_chunks(1, [ChunkText(1, "Reborn", "", "", "green cluster", "")])
    for words in (("deploy",), ("green",), ("cluster",)):
        _same_ranking(fts5.rank(TextQuery(words), 10), postgres.rank(TextQuery(words), 10))
    assert [h.chunk_id for h in postgres.rank(TextQuery(("green",)), 10)] == [1]
    assert postgres.document_frequencies(["deploi", "green", "cluster"]) == {
        "deploi": 7, "green": 1, "cluster": 8}  # fmt: skip


def test_postgres_text_index_names_its_engine(pg_database) -> None:
    from index.textindex import text_index
    from index.textindex.postgres import pg_search_available

    assert text_index(pg_database).name == "bm25 (postgres)"
    assert pg_search_available(pg_database) is False  # not installable here: its own BM25 runs


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**9), st.sampled_from([0.5, 1.0, 2.25, 3.0])),
                unique_by=lambda p: p[0]), st.integers(1, 30))  # fmt: skip
def test_best_chunks_are_the_head_of_the_full_order(pairs, count) -> None:
    import numpy as np

    from index.textindex.postgres import _best

    ids = np.array([i for i, _ in pairs], dtype=np.int64)
    scores = np.array([s for _, s in pairs])
    expected = sorted(range(len(pairs)), key=lambda n: (-scores[n], ids[n]))[:count]
    assert _best(ids, scores, count).tolist() == expected


@settings(deadline=None)
@given(st.lists(st.sets(st.one_of(st.integers(1, 300), st.integers(1, 10**12))), max_size=4))
def test_union_of_chunk_sets_counts_and_places_every_id(sets) -> None:
    import numpy as np

    from index.textindex.postgres import _union

    found = [np.array(sorted(s), dtype=np.int64) for s in sets]
    ids, hits, places = _union(found)
    everything = sorted(set().union(*sets))
    assert ids.tolist() == everything
    assert hits.tolist() == [sum(i in s for s in sets) for i in everything]
    for chunks, where in zip(found, places, strict=True):
        assert ids[where].tolist() == chunks.tolist()


def test_postgres_headline_query_reads_only_heading_postings(pg_database, templates) -> None:
    """A query asked only in the heading columns is answered from the heading postings: with
    the whole lists gone it still ranks as FTS5 does; a query over every column needs them."""
    body = [ChunkText(i, "", "", "", "deploy cluster " * (i % 3 + 1), "") for i in range(1, 40)]
    titled = [ChunkText(40, "Deploy the cluster", "", "", "deploy", ""),
              ChunkText(41, "", "Deploying", "", "cluster cluster", "")]  # fmt: skip
    fts5, postgres = _both(pg_database, [(1, 1, body), (1, 2, titled)])
    headline = TextQuery(("deploy", "cluster"), every=False, columns=CHUNK_COLUMNS[:3])
    expected = fts5.rank(headline, 10)
    assert {h.chunk_id for h in expected} == {40, 41}
    pg_database.execute("DELETE FROM text_blocks")  # the whole lists: only the heads remain
    _same_ranking(expected, postgres.rank(headline, 10))
    assert postgres.rank(TextQuery(("deploy",)), 10) == []


def test_postgres_store_made_before_heading_postings_still_writes_and_ranks(
    pg_database, templates
) -> None:
    """A store whose text tables predate `text_heads` is written and read without it."""
    chunks = [ChunkText(1, "Deploy", "", "", "cluster", ""), ChunkText(2, "", "", "", "deploy", "")]
    fts5, postgres = _both(pg_database, [(1, 1, chunks[:1])])
    pg_database.execute("DROP TABLE text_heads")
    from index.textindex.postgres import PostgresTextIndex

    postgres = PostgresTextIndex(pg_database)
    for index in (fts5, postgres):
        index.write_chunks(1, chunks[1:])
        index.delete_document(1, 1)
    for columns in (None, CHUNK_COLUMNS[:3]):
        query = TextQuery(("deploy",), columns=columns)
        _same_ranking(fts5.rank(query, 10), postgres.rank(query, 10))
