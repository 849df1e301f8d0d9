"""The lexical stage: FTS5 BM25 over title, section, symbol, body and identifier parts.

Queries are built, never passed through: each word becomes a quoted FTS5 string (so no input can
raise an FTS5 syntax error), words are OR-ed (a natural-language question is not an implicit
AND of every word), and stopwords are dropped unless nothing else is left.

FTS5's porter splits some families across stems (`deploy`, `deploying` -> `deploi`, but
`deployment(s)` -> `deploy`), and it stems prefix queries too (`deploy*` is `deploi*`), so a
prefix cannot bridge the split. Instead, a query word brings in inflected forms whose stem
differs from its own and occurs in the index (`deploy` also asks for the stem of `deployment`).
This is done where porter made an `-i` stem (the y -> i rule that splits these families).

Compounds match written together or apart: a query word that splits into two indexed words also
asks for them as a phrase (`bluegreen` -> "blue green", which also matches `blue-green`), and
two neighbouring query words whose joined form is indexed ask for it (`blue green` ->
`bluegreen`).

A term in nearly every chunk costs far more to rank than a rare one and, with an IDF near zero,
barely moves the ranking, so such terms are left out when the query has rarer ones. When every
word is common, chunks whose title, section or symbol hold them all are tried first.

The stage returns candidates (chunk id and BM25 score) without snippets: the search ranks and
groups them, then asks `excerpts` for the snippets of the few it shows and the other matching
slices of their documents.
"""

from __future__ import annotations

import itertools
import json
import math
import sqlite3
import threading
from dataclasses import dataclass
from functools import lru_cache

from index.schema import TOKENIZER
from index.scope import CHUNKS
from index.text import fts_string, query_words

# bm25() column weights: title, section, symbol, body, identifier parts.
WEIGHTS = (4.0, 2.0, 3.0, 1.0, 0.5)
_SUFFIXES = ("s", "es", "ed", "ing", "ment", "ments", "er", "ers", "ion", "ions", "ation")
_FAMILY_MIN = 4  # shorter words have too many unrelated "inflections"


_COMPOUND_MIN = 6  # a word shorter than this is not split
_PART_MIN = 4  # nor into a part shorter than this


@dataclass(frozen=True)
class LexicalHit:
    chunk_id: int
    score: float  # higher is better


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
class Term:
    """A query word as the plan asks for it."""

    word: str
    forms: tuple[str, ...]  # the word, inflections with other stems, compound spellings
    idf: float  # BM25's IDF of the word over chunks: what a match of it is worth


@dataclass(frozen=True)
class QueryPlan:
    expression: str  # the FTS5 MATCH expression
    # Every word is common: first try chunks whose title, section or symbol hold them all.
    headline_first: str | None = None
    terms: tuple[Term, ...] = ()  # every word, common ones too

    @property
    def every_word(self) -> str:
        """An expression for every word: a document's title and path are short, so no word is
        too common to look for there."""
        return " OR ".join(dict.fromkeys(fts_string(f) for t in self.terms for f in t.forms))


def _document_frequency(db: sqlite3.Connection, word: str) -> int | None:
    if not word.isalnum():
        return None  # several tokens (`aws_eks_cluster`): a phrase, never dropped
    row = db.execute("SELECT doc FROM vocab_stemmed WHERE term = ?", (stem(word),)).fetchone()
    return int(row[0]) if row else 0


def idf(chunks: int, frequency: int) -> float:
    """BM25's inverse document frequency as FTS5 computes it (never below a tiny positive)."""
    return max(math.log((chunks - frequency + 0.5) / (frequency + 0.5)), 1e-6)


def compounds(db: sqlite3.Connection, words: list[str], unknown: set[str]) -> dict[str, list[str]]:
    """For each query word, the other spellings of it as a compound that occur in the index: a
    word the index lacks (`unknown`) split into two indexed words, as a phrase (`bluegreen` ->
    `blue green`, which also matches `blue-green`), and its join with the next query word
    (`blue` + `green` -> `bluegreen`). Only unknown words are split: a known one is spelled as
    the pages spell it, and splitting it finds accidents (`treatment` -> `treat ment`)."""
    splits: dict[str, list[tuple[str, str]]] = {}
    joins: list[tuple[str, str]] = []
    for word in words:
        if word in unknown and word.isalpha() and len(word) >= _COMPOUND_MIN:
            cuts = range(_PART_MIN, len(word) - _PART_MIN + 1)
            splits[word] = [(word[:i], word[i:]) for i in cuts]
    for word, after in itertools.pairwise(words):
        if word.isalpha() and after.isalpha() and min(len(word), len(after)) >= _PART_MIN:
            joins.append((word, after))
    wanted = sorted(
        {stem(part) for pairs in splits.values() for pair in pairs for part in pair}
        | {stem(word + after) for word, after in joins}
    )
    if not wanted:
        return {}
    # A list of values, not a subquery: fts5vocab looks each term up instead of scanning.
    indexed = {
        term
        for (term,) in db.execute(
            f"SELECT term FROM vocab_stemmed WHERE term IN ({', '.join('?' for _ in wanted)})",
            wanted,
        )
    }
    out: dict[str, list[str]] = {}
    for word, pairs in splits.items():
        for left, right in pairs:
            if stem(left) in indexed and stem(right) in indexed:
                out.setdefault(word, []).append(f"{left} {right}")
    for word, after in joins:
        if stem(word + after) in indexed:  # a spelling of both words
            out.setdefault(word, []).append(word + after)
            out.setdefault(after, []).append(word + after)
    return out


def plan(db: sqlite3.Connection, query: str) -> QueryPlan | None:
    """How to run a user's query, or None when it has no words."""
    words = query_words(query)
    if not words:
        return None
    chunks = db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0]
    frequency = {w: _document_frequency(db, w) for w in words}
    rare = [w for w in words if (frequency[w] or 0) <= COMMON_SHARE * chunks]
    spellings = compounds(db, words, {w for w in words if frequency[w] == 0})
    terms = tuple(
        Term(word, tuple(dict.fromkeys([word, *family(db, word), *spellings.get(word, ())])),
             idf(chunks, frequency[word] or 0))
        for word in words
    )  # fmt: skip
    headline = None
    if not rare:
        together = " AND ".join(fts_string(w) for w in words)
        headline = f"{{title section symbol}} : ({together})"
    expression = " OR ".join(
        dict.fromkeys(fts_string(f) for t in terms if t.word in (rare or words) for f in t.forms)
    )
    return QueryPlan(expression, headline, terms)


def lexical(
    db: sqlite3.Connection,
    planned: QueryPlan,
    *,
    depth: int,
    enough: int,
    scope: tuple[str, list[object]] = ("", []),
) -> tuple[list[LexicalHit], str]:
    """The best `depth` chunks by BM25 within `scope` (a `scope_filter`), and the expression
    that found them (for `excerpts`). When every word is common the headline expression is
    used if it finds at least `enough` chunks."""
    if planned.headline_first:
        hits = _rank(db, planned.headline_first, depth, scope)
        if len(hits) >= enough:
            return hits, planned.headline_first
    return _rank(db, planned.expression, depth, scope), planned.expression


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


def _rank(
    db: sqlite3.Connection, expression: str, depth: int, scope: tuple[str, list[object]]
) -> list[LexicalHit]:
    in_scope, params = scope
    rows = db.execute(rank_query(in_scope), [expression, *params, depth]).fetchall()
    return [LexicalHit(int(r[0]), float(r[1])) for r in rows]


SNIPPET = "snippet(chunks_fts, 3, '', '', ' … ', 24)"


@dataclass(frozen=True)
class Excerpt:
    """What the shown slices of one document need from the lexical index."""

    snippets: dict[int, str]  # chunk id -> a matching excerpt, for the slices asked
    matching: list[int]  # every chunk of the document that matches, in id order


def excerpts(
    db: sqlite3.Connection, expression: str, first: int, last: int, shown: list[int],
    snippets: bool,
) -> Excerpt:  # fmt: skip
    """The chunks with ids from `first` to `last` (one document's: a load gives a document's
    chunks consecutive ids) that match `expression`, and the snippets of those in `shown`.

    The id range is handed to FTS5, which seeks to it in each term's list: cheap, unlike a
    MATCH run over every chunk again."""
    snippet = f"CASE WHEN f.rowid IN (SELECT value FROM json_each(?)) THEN {SNIPPET} END"
    if not snippets:
        snippet = "NULL"
    rows = db.execute(
        f"SELECT f.rowid, {snippet} FROM chunks_fts f WHERE chunks_fts MATCH ? "
        "AND f.rowid BETWEEN ? AND ? ORDER BY f.rowid",
        [*([json.dumps(shown)] if snippets else []), expression, first, last],
    ).fetchall()
    return Excerpt({r[0]: r[1] for r in rows if r[1] is not None}, [r[0] for r in rows])
