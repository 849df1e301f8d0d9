"""BM25 on stock PostgreSQL: the same ranking as FTS5's bm25(), from postings the loader keeps.

Text is tokenized by SQLite's own FTS5 tokenizer (`index.textindex.scratch`), so a term here is
a term there. Each chunk's text is kept in `text_chunks` with its length in tokens; each (term,
chunk) pair in `text_postings` with its count per column and its positions (phrases, column
filters); the body's unstemmed terms in `text_exact`. Term statistics (chunks per term) and
totals (chunks, tokens) are kept per corpus, so two corpora loading at once never wait on each
other's rows; the loader updates them in its transaction, and a query sums them.

A query is scored exactly as FTS5 scores it: for each phrase i, IDF_i = ln((N - n_i + 0.5) /
(n_i + 0.5)) (1e-6 when not positive) over the whole index, and each matching chunk gets
sum_i IDF_i * f_i (k1 + 1) / (f_i + k1 (1 - b + b D / avgdl)), where f_i is the phrase's
occurrences weighted by column (`lexical.WEIGHTS`) and D the chunk's tokens. Candidates come
from the postings' primary key (term, chunk): exact scoring over a B-tree-selected set (see
/work/notes/pgbm25.md for why not a sparse HNSW index).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from index.scope import CHUNKS
from index.textindex import CHUNK_COLUMNS, K1, B, ChunkText, DocumentText, LexicalHit, TextQuery
from index.textindex.scratch import COLUMN_SPAN, Scratch

NAME = "bm25 (postgres)"

TABLES = (
    """CREATE TABLE IF NOT EXISTS text_chunks (
        chunk_id bigint PRIMARY KEY,
        corpus_id bigint NOT NULL,
        title text NOT NULL, section text NOT NULL, symbol text NOT NULL,
        body text NOT NULL, parts text NOT NULL,
        length integer NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS text_postings (
        term text COLLATE "C" NOT NULL,
        chunk_id bigint NOT NULL,
        counts integer[] NOT NULL,
        positions integer[] NOT NULL,
        PRIMARY KEY (term, chunk_id)
    )""",
    "CREATE INDEX IF NOT EXISTS text_postings_chunk ON text_postings (chunk_id)",
    """CREATE TABLE IF NOT EXISTS text_exact (
        term text COLLATE "C" NOT NULL,
        chunk_id bigint NOT NULL,
        PRIMARY KEY (term, chunk_id)
    )""",
    "CREATE INDEX IF NOT EXISTS text_exact_chunk ON text_exact (chunk_id)",
    """CREATE TABLE IF NOT EXISTS text_terms (
        term text COLLATE "C" NOT NULL,
        corpus_id bigint NOT NULL,
        docs integer NOT NULL,
        exact_docs integer NOT NULL,
        PRIMARY KEY (term, corpus_id)
    )""",
    """CREATE TABLE IF NOT EXISTS text_totals (
        corpus_id bigint PRIMARY KEY,
        chunks bigint NOT NULL,
        tokens bigint NOT NULL,
        changes bigint NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS text_documents (
        document_id bigint PRIMARY KEY,
        title text NOT NULL,
        path text NOT NULL
    )""",
)


def create_tables(db: Any) -> None:
    """The text index's tables (idempotent), for the Postgres store's migration to call."""
    for statement in TABLES:
        db.execute(statement)


def pg_search_available(db: Any) -> bool:
    """Whether ParadeDB's `pg_search` (BM25 inside Postgres) could be used. It is not
    installable from the registries here, so the index always runs its own BM25; this only
    lets `doctor` say which."""
    row = db.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pg_search'").fetchone()
    return row is not None


def _text(value: str) -> str:
    """Postgres text cannot hold NUL; U+FFFD is, like NUL, a separator to the tokenizer."""
    return value.replace("\x00", "\ufffd")


class PostgresTextIndex:
    name = NAME

    def __init__(self, db: Any) -> None:
        # The psycopg connection itself (the store's sqlite3-style wrapper holds it as `raw`):
        # this module writes Postgres's own SQL and COPY, in the caller's transaction.
        self.db = getattr(db, "raw", db)
        self.scratch = Scratch()

    # --- writes ---

    def prepare_load(self) -> None:
        pass  # nothing to tune per load

    def write_documents(self, rows: Sequence[DocumentText]) -> None:
        if not rows:
            return
        sql = "COPY text_documents (document_id, title, path) FROM STDIN"
        with self.db.cursor() as cur, cur.copy(sql) as copy:
            for r in rows:
                copy.write_row((r.document_id, _text(r.title or ""), _text(r.path or "")))

    def write_chunks(self, corpus_id: int, rows: Sequence[ChunkText]) -> None:
        if not rows:
            return
        tokens = self.scratch.tokenize(rows)
        with self.db.cursor() as cur:
            with cur.copy(
                "COPY text_chunks (chunk_id, corpus_id, title, section, symbol, body, parts, "
                "length) FROM STDIN"
            ) as copy:
                for r in rows:
                    copy.write_row((r.chunk_id, corpus_id, _text(r.title), _text(r.section),
                                    _text(r.symbol), _text(r.body), _text(r.parts),
                                    tokens.lengths[r.chunk_id]))  # fmt: skip
            with cur.copy(
                "COPY text_postings (term, chunk_id, counts, positions) FROM STDIN"
            ) as copy:
                for p in tokens.postings:
                    copy.write_row((_text(p.term), p.chunk_id, p.counts, p.positions))
            with cur.copy("COPY text_exact (term, chunk_id) FROM STDIN") as copy:
                for term, chunk_id in tokens.exact:
                    copy.write_row((_text(term), chunk_id))
        stemmed = Counter(_text(p.term) for p in tokens.postings)
        exact = Counter(_text(term) for term, _ in tokens.exact)
        self._count_terms(corpus_id, stemmed, exact, +1)
        self._count_totals(corpus_id, len(rows), sum(tokens.lengths.values()), +1)

    def delete_document(self, corpus_id: int, document_id: int) -> None:
        ids = [
            i
            for (i,) in self.db.execute(
                "SELECT id FROM chunks WHERE document_id = %s", (document_id,)
            )
        ]
        self.db.execute("DELETE FROM text_documents WHERE document_id = %s", (document_id,))
        if not ids:
            return
        stemmed = Counter(dict(self.db.execute(
            "WITH gone AS (DELETE FROM text_postings WHERE chunk_id = ANY(%s) RETURNING term) "
            "SELECT term, count(*) FROM gone GROUP BY term", (ids,)).fetchall()))  # fmt: skip
        exact = Counter(dict(self.db.execute(
            "WITH gone AS (DELETE FROM text_exact WHERE chunk_id = ANY(%s) RETURNING term) "
            "SELECT term, count(*) FROM gone GROUP BY term", (ids,)).fetchall()))  # fmt: skip
        chunks, length = self.db.execute(
            "WITH gone AS (DELETE FROM text_chunks WHERE chunk_id = ANY(%s) RETURNING length) "
            "SELECT count(*), coalesce(sum(length), 0) FROM gone",
            (ids,),
        ).fetchone()
        self._count_terms(corpus_id, stemmed, exact, -1)
        self._count_totals(corpus_id, chunks, length, -1)

    def _count_terms(
        self, corpus_id: int, stemmed: Counter[str], exact: Counter[str], sign: int
    ) -> None:
        """Add (or take away) these chunk counts to the corpus's term statistics, in term
        order (two writers of one corpus are kept apart by the store's lock; this order keeps
        any others from deadlocking)."""
        terms = sorted(set(stemmed) | set(exact))
        if not terms:
            return
        self.db.execute(
            "INSERT INTO text_terms (term, corpus_id, docs, exact_docs) "
            "SELECT t, %s, d, e FROM unnest(%s::text[], %s::int[], %s::int[]) AS u(t, d, e) "
            "ON CONFLICT (term, corpus_id) DO UPDATE SET docs = text_terms.docs + excluded.docs, "
            "exact_docs = text_terms.exact_docs + excluded.exact_docs",
            (corpus_id, terms, [sign * stemmed[t] for t in terms],
             [sign * exact[t] for t in terms]),
        )  # fmt: skip

    def _count_totals(self, corpus_id: int, chunks: int, tokens: int, sign: int) -> None:
        self.db.execute(
            "INSERT INTO text_totals (corpus_id, chunks, tokens, changes) VALUES (%s, %s, %s, 1) "
            "ON CONFLICT (corpus_id) DO UPDATE SET chunks = text_totals.chunks + excluded.chunks, "
            "tokens = text_totals.tokens + excluded.tokens, changes = text_totals.changes + 1",
            (corpus_id, sign * chunks, sign * tokens),
        )

    # --- reads ---

    def chunk_texts(self, chunk_ids: Sequence[int], chars: int | None = None) -> dict[int, str]:
        if not chunk_ids:
            return {}
        body = "body" if chars is None else f"left(body, {int(chars)})"
        rows = self.db.execute(
            f"SELECT chunk_id, {body} FROM text_chunks WHERE chunk_id = ANY(%s)",
            (list(chunk_ids),),
        )
        return dict(rows.fetchall())

    def version(self) -> Any:
        return self.db.execute(
            "SELECT coalesce(sum(changes), 0)::bigint, count(*) FROM text_totals"
        ).fetchone()

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        wanted = sorted(set(terms))
        if not wanted:
            return {}
        found = dict(
            self.db.execute(
                "SELECT term, sum(docs) FROM text_terms WHERE term = ANY(%s) GROUP BY term",
                ([_text(t) for t in wanted],),
            ).fetchall()
        )
        return {t: int(found.get(_text(t)) or 0) for t in wanted}

    def rank(
        self, query: TextQuery, depth: int, scope: tuple[str, list[object]] = ("", [])
    ) -> list[LexicalHit]:
        phrases = self._phrases(query)
        if phrases is None:
            return []
        chunks, tokens = self.db.execute(
            "SELECT coalesce(sum(chunks), 0)::bigint, coalesce(sum(tokens), 0)::bigint "
            "FROM text_totals"
        ).fetchone()
        if not chunks:
            return []
        avgdl = tokens / chunks
        idfs = [_idf(chunks, self._hits(p, query.columns)) for p in phrases]
        matches, params = self._matches(phrases, query.columns)
        in_scope, scope_params = scope
        where = ""
        if in_scope:
            where = (f"WHERE h.chunk_id IN (SELECT c.id FROM {CHUNKS} WHERE true "
                     f"{in_scope.replace('?', '%s')})")  # fmt: skip
        having = f"HAVING count(*) = {len(phrases)}" if query.every else ""
        # float8 throughout, in FTS5's order of operations: the same figures to the last bits.
        sql = (
            f"WITH hits (chunk_id, n, f) AS ({matches}) "
            "SELECT h.chunk_id, sum((%s::float8[])[h.n + 1] * ((h.f * (%s + 1.0)) / "
            "(h.f + %s * (1.0 - %s + %s * t.length::float8 / %s)))) AS score "
            "FROM hits h JOIN text_chunks t ON t.chunk_id = h.chunk_id "
            f"{where} GROUP BY h.chunk_id {having} ORDER BY score DESC, h.chunk_id LIMIT %s"
        )
        rows = self.db.execute(
            sql, [*params, idfs, K1, K1, B, B, avgdl, *scope_params, depth]
        ).fetchall()
        return [LexicalHit(int(chunk_id), float(score)) for chunk_id, score in rows]

    def _phrases(self, query: TextQuery) -> list[list[str]] | None:
        """Each phrase's terms; None when the query can match nothing. A phrase with no token
        (`___`) matches nothing, as in FTS5."""
        phrases = [[_text(t) for t in self.scratch.phrase_tokens(p)] for p in query.phrases]
        if query.every and any(not p for p in phrases):
            return None
        phrases = [p for p in phrases if p]
        return phrases or None

    def _hits(self, phrase: list[str], columns: tuple[str, ...] | None) -> int:
        """How many chunks of the whole index match the phrase (FTS5's n_i)."""
        if len(phrase) == 1 and columns is None:
            return self.document_frequencies(phrase)[phrase[0]]
        sql, params = _phrase_matches(phrase, columns)
        return int(self.db.execute(f"SELECT count(*) FROM ({sql}) m", params).fetchone()[0])

    def _matches(
        self, phrases: list[list[str]], columns: tuple[str, ...] | None
    ) -> tuple[str, list[Any]]:
        """(chunk id, phrase number, weighted occurrences) of every phrase's matching chunks."""
        parts, params = [], []
        for n, phrase in enumerate(phrases):
            sql, phrase_params = _phrase_matches(phrase, columns)
            parts.append(f"SELECT chunk_id, {n}, f FROM ({sql}) p{n}")
            params += phrase_params
        return " UNION ALL ".join(parts), params

    def snippets(self, query: TextQuery, chunk_ids: Sequence[int]) -> dict[int, str]:
        if not chunk_ids:
            return {}
        rows = self.db.execute(
            "SELECT chunk_id, title, section, symbol, body, parts FROM text_chunks "
            "WHERE chunk_id = ANY(%s) ORDER BY chunk_id",
            (list(chunk_ids),),
        ).fetchall()
        return self.scratch.snippets(query, [ChunkText(*r) for r in rows])

    def highlights(
        self, query: TextQuery, document_ids: Sequence[int]
    ) -> dict[int, tuple[list[str], list[str]]]:
        if not query.phrases or not document_ids:
            return {}
        rows = self.db.execute(
            "SELECT document_id, title, path FROM text_documents WHERE document_id = ANY(%s) "
            "ORDER BY document_id",
            (list(document_ids),),
        ).fetchall()
        return self.scratch.highlights(query, [DocumentText(*r) for r in rows])

    def documents_with(self, query: TextQuery, *, exact: bool = False) -> dict[int, int]:
        if exact:
            # No positions in the exact index: a phrase's terms need only all be in the chunk.
            tokens = [self.scratch.phrase_tokens(p, exact=True) for p in query.phrases]
            terms = sorted({_text(t) for ts in tokens for t in ts})
            if not terms or (query.every and any(not ts for ts in tokens)):
                return {}
            need = len(terms) if query.every else 1
            chunks = (
                "SELECT chunk_id FROM text_exact WHERE term = ANY(%s) "
                f"GROUP BY chunk_id HAVING count(*) >= {need}"
            )
            params: list[Any] = [terms]
        else:
            phrases = self._phrases(query)
            if phrases is None:
                return {}
            matches, params = self._matches(phrases, query.columns)
            need = len(phrases) if query.every else 1
            chunks = (
                f"SELECT chunk_id FROM ({matches}) h GROUP BY chunk_id HAVING count(*) >= {need}"
            )
        return dict(
            self.db.execute(
                f"SELECT c.document_id, count(*) FROM ({chunks}) m JOIN chunks c "
                "ON c.id = m.chunk_id GROUP BY c.document_id",
                params,
            ).fetchall()
        )

    def exact_terms(self) -> Iterator[str]:
        rows = self.db.execute(
            "SELECT term FROM text_terms GROUP BY term HAVING sum(exact_docs) > 0 "
            "ORDER BY sum(exact_docs) DESC, term"
        ).fetchall()
        for (term,) in rows:
            yield term


def _idf(chunks: int, hits: int) -> float:
    """FTS5's bm25() IDF (not `lexical.idf`, which the plan uses: same formula, but this one
    must be FTS5's to the bit, and never below its 1e-6)."""
    value = math.log((chunks - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def _weights(columns: tuple[str, ...] | None) -> list[float]:
    """The column weights, 0 for a column the query does not look at."""
    from index.lexical import WEIGHTS  # the ranking's tuning lives with the lexical stage

    pairs = zip(CHUNK_COLUMNS, WEIGHTS, strict=True)
    return [w if columns is None or c in columns else 0.0 for c, w in pairs]


def _phrase_matches(phrase: list[str], columns: tuple[str, ...] | None) -> tuple[str, list[Any]]:
    """SQL for (chunk_id, f): the chunks where the phrase's terms occur in sequence within one
    of `columns` (None: any), f its occurrences there weighted by column."""
    weights = _weights(columns)
    allowed = [n for n, c in enumerate(CHUNK_COLUMNS) if columns is None or c in columns]
    if len(phrase) == 1:
        weighted = " + ".join(f"counts[{n + 1}] * %s::float8" for n in allowed)
        found = " + ".join(f"counts[{n + 1}]" for n in allowed)
        where = "" if columns is None else f" AND ({found}) > 0"
        sql = f"SELECT chunk_id, {weighted} AS f FROM text_postings WHERE term = %s{where}"
        return sql, [*(weights[n] for n in allowed), phrase[0]]
    joins = " ".join(
        f"JOIN text_postings p{i} ON p{i}.term = %s AND p{i}.chunk_id = p0.chunk_id "
        f"AND x + {i} = ANY(p{i}.positions)"
        for i in range(1, len(phrase))
    )
    column_filter = "" if columns is None else f" AND x / {COLUMN_SPAN} = ANY(%s::int[])"
    sql = (
        f"SELECT p0.chunk_id, sum((%s::float8[])[x / {COLUMN_SPAN} + 1]) AS f "
        "FROM text_postings p0 CROSS JOIN LATERAL unnest(p0.positions) AS x "
        f"{joins} WHERE p0.term = %s{column_filter} GROUP BY p0.chunk_id"
    )
    params: list[Any] = [weights, *phrase[1:], phrase[0]]
    if columns is not None:
        params.append(allowed)
    return sql, params
