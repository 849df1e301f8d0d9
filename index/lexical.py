"""The lexical stage: FTS5 BM25 over title, section, symbol, body and identifier parts.

Queries are built, never passed through: each word becomes a quoted FTS5 string (so no input can
raise an FTS5 syntax error), words are OR-ed (a natural-language question is not an implicit
AND of every word), and stopwords are dropped unless nothing else is left.

FTS5's porter splits some families across stems (`deploy`, `deploying` -> `deploi`, but
`deployment(s)` -> `deploy`), and it stems prefix queries too (`deploy*` is `deploi*`), so a
prefix cannot bridge the split. Instead, a query word brings in inflected forms whose stem
differs from its own and occurs in the index (`deploy` also asks for the stem of `deployment`).
This is done where porter made an `-i` stem (the y -> i rule that splits these families).

A term in nearly every chunk costs far more to rank than a rare one and, with an IDF near zero,
barely moves the ranking, so such terms are left out when the query has rarer ones. When every
word is common, chunks whose title, section or symbol hold them all are tried first.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from functools import lru_cache

from index.schema import TOKENIZER
from index.scope import CHUNKS, corpus_filter
from index.text import fts_string, query_words

# bm25() column weights: title, section, symbol, body, identifier parts.
WEIGHTS = (4.0, 2.0, 3.0, 1.0, 0.5)
_SUFFIXES = ("s", "es", "ed", "ing", "ment", "ments", "er", "ers", "ion", "ions", "ation")
_FAMILY_MIN = 4  # shorter words have too many unrelated "inflections"


@dataclass(frozen=True)
class LexicalHit:
    chunk_id: int
    score: float  # higher is better
    snippet: str


_stem_lock = threading.Lock()
_stemmer: sqlite3.Connection | None = None


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    """The term the index's own tokenizer makes of `word` (so it always agrees with the index)."""
    global _stemmer
    with _stem_lock:
        if _stemmer is None:
            _stemmer = sqlite3.connect(":memory:", check_same_thread=False)
            _stemmer.execute(f"CREATE VIRTUAL TABLE s USING fts5(w, tokenize = '{TOKENIZER}')")
            _stemmer.execute("CREATE VIRTUAL TABLE v USING fts5vocab(s, 'row')")
        _stemmer.execute("INSERT INTO s (w) VALUES (?)", (word,))
        row = _stemmer.execute("SELECT term FROM v LIMIT 1").fetchone()
        _stemmer.execute("DELETE FROM s")
    return row[0] if row else word


def family(db: sqlite3.Connection, word: str) -> list[str]:
    """Inflections of `word` whose stems differ from its own and occur in the index."""
    if len(word) < _FAMILY_MIN or not word.isalpha() or not stem(word).endswith("i"):
        return []
    stems = {stem(word)}
    forms = []
    for suffix in _SUFFIXES:
        form = word + suffix
        form_stem = stem(form)
        if form_stem in stems:
            continue
        stems.add(form_stem)
        if db.execute("SELECT 1 FROM vocab_stemmed WHERE term = ?", (form_stem,)).fetchone():
            forms.append(form)
    return forms


COMMON_SHARE = 0.25  # a term in more than this share of chunks is "common"


@dataclass(frozen=True)
class QueryPlan:
    expression: str  # the FTS5 MATCH expression
    # Every word is common: first try chunks whose title, section or symbol hold them all.
    headline_first: str | None = None


def _document_frequency(db: sqlite3.Connection, word: str) -> int | None:
    if not word.isalnum():
        return None  # several tokens (`aws_eks_cluster`): a phrase, never dropped
    row = db.execute("SELECT doc FROM vocab_stemmed WHERE term = ?", (stem(word),)).fetchone()
    return int(row[0]) if row else 0


def plan(db: sqlite3.Connection, query: str) -> QueryPlan | None:
    """How to run a user's query, or None when it has no words."""
    words = query_words(query)
    if not words:
        return None
    chunks = db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
    frequency = {w: _document_frequency(db, w) for w in words}
    rare = [w for w in words if (frequency[w] or 0) <= COMMON_SHARE * chunks]
    terms: list[str] = []
    for word in rare or words:
        terms.append(fts_string(word))
        terms.extend(fts_string(form) for form in family(db, word))
    headline = None
    if not rare:
        together = " AND ".join(fts_string(w) for w in words)
        headline = f"{{title section symbol}} : ({together})"
    return QueryPlan(" OR ".join(terms), headline)


def lexical(
    db: sqlite3.Connection,
    query: str,
    *,
    top_k: int,
    corpus: str | None = None,
    snippets: bool = True,
) -> list[LexicalHit]:
    planned = plan(db, query)
    if planned is None:
        return []
    if planned.headline_first:
        hits = _rank(db, planned.headline_first, top_k, corpus, snippets)
        if len(hits) >= top_k:
            return hits
    return _rank(db, planned.expression, top_k, corpus, snippets)


def rank_query(db: sqlite3.Connection, corpus: str | None, snippets: bool) -> tuple[str, list]:
    """The ranking SQL (parameters: the MATCH expression, the corpus's, then the limit)."""
    weights = ", ".join(str(w) for w in WEIGHTS)
    in_corpus, corpus_params = corpus_filter(db, corpus)
    if in_corpus:
        # `+f.rowid`: a bare rowid would be handed to FTS5 as a constraint, which then runs the
        # MATCH once per chunk of the corpus (seconds on a large one) instead of filtering.
        in_corpus = f"AND +f.rowid IN (SELECT c.id FROM {CHUNKS} WHERE 1 {in_corpus})"
    snippet = "snippet(chunks_fts, 3, '', '', ' … ', 24)" if snippets else "''"
    sql = (
        f"SELECT f.rowid, -bm25(chunks_fts, {weights}) AS score, {snippet} "
        f"FROM chunks_fts f WHERE chunks_fts MATCH ? {in_corpus} "
        f"ORDER BY bm25(chunks_fts, {weights}) LIMIT ?"
    )
    return sql, corpus_params


def _rank(
    db: sqlite3.Connection, expression: str, top_k: int, corpus: str | None, snippets: bool
) -> list[LexicalHit]:
    sql, corpus_params = rank_query(db, corpus, snippets)
    rows = db.execute(sql, [expression, *corpus_params, top_k]).fetchall()
    return [LexicalHit(int(r[0]), float(r[1]), r[2] or "") for r in rows]
