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

A dotted name (`httpx.Client.stream`, `os.path`) is asked as its words and, besides them, as
the whole, a phrase: the slice that writes the name out ranks above one that has its words
apart, and the page stage can tell the declaration it names (index.ranking).

Chinese and Japanese write no spaces between words (and Korean glues particles on), and the
tokenizer makes one token of a whole run of such characters: the index adds each run's bigrams
and characters to `parts` (`index.text.cjk_parts`), and the query asks a run of one or two
characters as itself, a longer one by its bigrams, each a word, and as the phrase of them (a
quoted phrase, asked besides its words: the slice that says it verbatim ranks first).

A question's everyday phrasing also asks for the words docs use for its idea (`takes too long`
-> timeout), and a word the index lacks for its indexed synonyms (index.phrasing); those added
words are a guess at the topic, so they count only in a slice's title, section or symbol.

A term in nearly every chunk costs far more to rank than a rare one and, with an IDF near zero,
barely moves the ranking, so such terms are left out when the query has rarer ones. When every
word is common, chunks whose title, section or symbol hold them all are tried first.

The stage returns candidates (chunk id and BM25 score) without snippets: the search ranks and
groups them, then asks `snippets` for the excerpts of the few it shows. The plan is structured
(`TextQuery`); the store's text index (`index.textindex`: FTS5, or BM25 on Postgres) runs it.
"""

from __future__ import annotations

import itertools
import math
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from index.phrasing import implied_by_phrasing, synonyms
from index.schema import TOKENIZER
from index.text import cjk_pieces, query_words, quoted_phrases
from index.textindex import CHUNK_COLUMNS, LexicalHit, TextQuery, text_index

# bm25() column weights: title, section, symbol, body, identifier parts.
WEIGHTS = (4.0, 2.0, 3.0, 1.0, 0.5)
_SUFFIXES = ("s", "es", "ed", "ing", "ment", "ments", "er", "ers", "ion", "ions", "ation")
_FAMILY_MIN = 4  # shorter words have too many unrelated "inflections"


_COMPOUND_MIN = 6  # a word shorter than this is not split
_PART_MIN = 4  # nor into a part shorter than this
# Nor a longer word: each cut is stemmed and looked up, so a 24,000-character query word cost
# 48,000 stems of its length (half a minute); FTS5's stemmer leaves tokens past 64 bytes as
# they are anyway.
_COMPOUND_MAX = 64
_JOINED_MIN = 2  # chunks that must hold two words written together to count as a spelling
# A dotted name: parts that each start with a letter or `_`, so `0.28.1` is a version, not one.
_DOTTED = re.compile(r"(?<![\w.])[^\W\d]\w*(?:\.[^\W\d]\w*)+")


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
        try:
            # Bytes: the tokenizer may cut a very long token inside a multi-byte character.
            row = _stemmer.execute("SELECT CAST(term AS BLOB) FROM v LIMIT 1").fetchone()
        finally:
            _stemmer.execute("DELETE FROM s")  # or every later word would get this one's stem
    return row[0].decode("utf-8", "replace") if row else word


def family(vocabulary: Vocabulary, word: str) -> list[str]:
    """Inflections of `word` whose stems differ from its own and occur in the index."""
    if len(word) < _FAMILY_MIN or not word.isalpha() or not stem(word).endswith("i"):
        return []
    forms: dict[str, str] = {}  # stem -> the first form that makes it
    for suffix in _SUFFIXES:
        forms.setdefault(stem(word + suffix), word + suffix)
    forms.pop(stem(word), None)
    counts = vocabulary.docs(list(forms))
    return [form for form_stem, form in forms.items() if counts[form_stem]]


HEADLINE = CHUNK_COLUMNS[:3]  # title, section, symbol: the columns that say what a slice is about
CJK_PIECES = CHUNK_COLUMNS[4:]  # parts: where the bigrams of CJK runs are indexed
COMMON_SHARE = 0.25  # a term in more than this share of chunks is "common"


@dataclass(frozen=True)
class Term:
    """A query word as the plan asks for it."""

    word: str
    forms: tuple[str, ...]  # the word, inflections with other stems, compound spellings
    idf: float  # BM25's IDF of the word over chunks: what a match of it is worth
    # Not the user's word but one the docs would use for their phrasing (index.phrasing): a
    # guess at the topic, so only a heading or symbol naming it counts, never a mention.
    implied: bool = False


@dataclass(frozen=True)
class QueryPlan:
    query: TextQuery  # the forms of the words asked for, OR-ed
    # Every word is common: first try chunks whose title, section or symbol hold them all.
    headline_first: TextQuery | None = None
    terms: tuple[Term, ...] = ()  # every word, common ones too

    @property
    def implied(self) -> list[str]:
        """The words added for the query's phrasing (see `Term.implied`)."""
        return [t.word for t in self.terms if t.implied]

    @property
    def every_word(self) -> TextQuery:
        """Every word's forms: a document's title and path are short, so no word is too common
        to look for there."""
        return TextQuery(tuple(dict.fromkeys(f for t in self.terms for f in t.forms)))


class Vocabulary:
    """How many chunks hold each stemmed term, as the text index counts them, remembered while
    the index is unchanged: fts5vocab counts by walking the term's whole list, so a common term
    costs about a millisecond per look-up, and a long-lived reader (the MCP server) asks for
    the same terms again and again."""

    MAX_TERMS = 65_536

    def __init__(self, db: Any) -> None:
        self.db = db
        self.text = text_index(db)
        self._seen: Any = None
        self._docs: dict[str, int] = {}
        self._chunks: int | None = None

    def refresh(self) -> None:
        """Forget the counts if the index changed (another connection committed, or this one)."""
        seen = self.text.version()
        if seen != self._seen or len(self._docs) > self.MAX_TERMS:
            self._seen, self._docs, self._chunks = seen, {}, None

    def chunks(self) -> int:
        """How many chunks the index holds (BM25's N, and what makes a term common). Counted,
        not read off the largest id: ids are never reused, so after a drop or many reloads the
        largest id overstates the count, and every term looked rare."""
        if self._chunks is None:
            self._chunks = int(self.db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        return self._chunks

    def docs(self, terms: list[str]) -> dict[str, int]:
        """Chunks holding each term (0: not in the index)."""
        wanted = sorted({t for t in terms if t not in self._docs})
        if wanted:
            self._docs.update(self.text.document_frequencies(wanted))
        return {t: self._docs[t] for t in terms}


def dotted_names(query: str) -> list[str]:
    """The dotted names a query writes (`httpx.Client.stream`), lowercased, in order, once."""
    return list(dict.fromkeys(name.lower() for name in _DOTTED.findall(query)))


def _document_frequency(vocabulary: Vocabulary, word: str) -> int | None:
    if not word.isalnum():
        return None  # several tokens (`aws_eks_cluster`): a phrase, never dropped
    return vocabulary.docs([stem(word)])[stem(word)]


def idf(chunks: int, frequency: int) -> float:
    """BM25's inverse document frequency as FTS5 computes it (never below a tiny positive)."""
    return max(math.log((chunks - frequency + 0.5) / (frequency + 0.5)), 1e-6)


def compounds(vocabulary: Vocabulary, words: list[str], unknown: set[str]) -> dict[str, list[str]]:
    """For each query word, the other spellings of it as a compound that occur in the index: a
    word the index lacks (`unknown`) split into two indexed words, as a phrase (`bluegreen` ->
    `blue green`, which also matches `blue-green`), and its join with the next query word
    (`blue` + `green` -> `bluegreen`). Only unknown words are split: a known one is spelled as
    the pages spell it, and splitting it finds accidents (`treatment` -> `treat ment`)."""
    splits: dict[str, list[tuple[str, str]]] = {}
    joins: list[tuple[str, str]] = []
    for word in words:
        if word in unknown and word.isalpha() and _COMPOUND_MIN <= len(word) <= _COMPOUND_MAX:
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
    counts = vocabulary.docs(wanted)
    indexed = {term for term, n in counts.items() if n}
    # A joined spelling found in a single chunk is an accident (a hashtag, a typo), not the
    # way the pages write it.
    spelled = {term for term, n in counts.items() if n >= _JOINED_MIN}
    out: dict[str, list[str]] = {}
    for word, pairs in splits.items():
        for left, right in pairs:
            if stem(left) in indexed and stem(right) in indexed:
                out.setdefault(word, []).append(f"{left} {right}")
    for word, after in joins:
        if stem(word + after) in spelled:  # a spelling of both words
            out.setdefault(word, []).append(word + after)
            out.setdefault(after, []).append(word + after)
    return out


def plan(db: Any, query: str, vocabulary: Vocabulary | None = None) -> QueryPlan | None:
    """How to run a user's query, or None when it has no words. `vocabulary`: counts kept from
    earlier queries on the same connection, if any."""
    words, runs, bigrams = cjk_words(query_words(query))
    if not words:
        return None
    if vocabulary is None:
        vocabulary = Vocabulary(db)
    vocabulary.refresh()
    # A quoted phrase and a dotted name are each asked whole (as well as by their words).
    phrases = [p for p in [*quoted_phrases(query), *dotted_names(query)] if p not in words]
    phrases += [p for p in runs if p not in phrases]
    chunks = vocabulary.chunks()
    frequency = {w: _document_frequency(vocabulary, w) for w in words}
    spellings = compounds(vocabulary, words, {w for w in words if frequency[w] == 0})
    implied = _implied(vocabulary, query, words, frequency, spellings)
    # A word the index lacks (and no compound spelling of it) finds nothing: it must not count
    # as the "rarer" word that lets a common one be dropped, or `configure site` on an index
    # without "site" would search for "site" alone and find nothing.
    present = [w for w in words if frequency[w] != 0 or w in spellings] or words
    rare = [w for w in present if (frequency[w] or 0) <= COMMON_SHARE * chunks]
    terms = tuple(
        Term(word, tuple(dict.fromkeys([word, *family(vocabulary, word),
                                        *spellings.get(word, ())])),
             idf(chunks, frequency[word] or 0), word in implied)
        for word in words + implied
    ) + tuple(Term(phrase, (phrase, *runs.get(phrase, ())), idf(chunks, 0))
              for phrase in phrases)  # fmt: skip
    headline = None
    if not rare and not phrases:  # a quoted phrase is looked for in the text too
        headline = TextQuery(tuple(present), every=True, columns=HEADLINE)
    # A quoted phrase is asked besides the words, never instead of them: docs that say it
    # verbatim rank first, and a phrase no page has still finds the pages with its words.
    asked = set(rare or present) | set(implied) | set(phrases)
    forms = [(f, t.implied) for t in terms if t.word in asked for f in t.forms]
    phrases = tuple(dict.fromkeys(f for f, _ in forms))
    # A user's word is asked everywhere; a bigram cut from a longer CJK run only in `parts`.
    plain = {f for f, implied in forms if not implied and f not in bigrams}
    narrowed = tuple(dict.fromkeys((f, CJK_PIECES if f in bigrams else HEADLINE)
                                   for f, implied in forms if f not in plain))  # fmt: skip
    return QueryPlan(TextQuery(phrases, narrowed=narrowed), headline, terms)


def cjk_words(words: list[str]) -> tuple[list[str], dict[str, tuple[str]], set[str]]:
    """The query's words with each CJK run made searchable (`index.text.cjk_pieces`): a run of
    one or two characters is a word; a longer one is asked by its bigrams, each a word (a
    question written without spaces still finds the pages with some of its words), and as the
    phrase of them, returned with the run itself (the phrase -> (run,)), which is asked too: a
    heading that is just the run matches it whole, in its own column. Other words unchanged.
    Also returns the bigrams that are only pieces of a run (not words of the query on their
    own): asked in `parts` alone, where the index keeps a run's bigrams, so a page whose title
    is one of them (`连接`) does not outrank one that has the word asked for (`连接池`)."""
    out: list[str] = []
    runs: dict[str, tuple[str]] = {}
    whole: set[str] = set()
    for word in words:
        pieces = cjk_pieces(word)
        if pieces is None:
            out.append(word)
            whole.add(word)
            continue
        for asked, written in pieces:
            if " " in asked:
                runs[asked] = (written,)
                out.extend(asked.split())
            else:
                out.append(asked)
                whole.add(asked)
    cut = {w for phrase in runs for w in phrase.split()} - whole
    return list(dict.fromkeys(out)), runs, cut


def _implied(
    vocabulary: Vocabulary,
    query: str,
    words: list[str],
    frequency: dict[str, int | None],
    spellings: dict[str, list[str]],
) -> list[str]:
    """The words the docs would use for the query's everyday phrasing, and the synonyms of a
    query word the index lacks (index.phrasing): those the index has and the query does not
    ask already. Their frequencies are added to `frequency`."""
    absent = [w for w in words if frequency[w] == 0 and w not in spellings]
    wanted = implied_by_phrasing(query, stem) + [s for w in absent for s in synonyms(w, stem)]
    asked = {stem(w) for w in words}
    out = []
    for word in dict.fromkeys(wanted):
        if stem(word) in asked:
            continue
        asked.add(stem(word))
        frequency[word] = _document_frequency(vocabulary, word)
        if frequency[word]:
            out.append(word)
    return out


def lexical(
    db: Any,
    planned: QueryPlan,
    *,
    depth: int,
    enough: int,
    scope: tuple[str, list[object]] = ("", []),
) -> tuple[list[LexicalHit], TextQuery]:
    """The best `depth` chunks by BM25 within `scope` (a `scope_filter`), and the query that
    found them (for `snippets`). When every word is common the headline query is used if it
    finds at least `enough` chunks."""
    text = text_index(db)
    if planned.headline_first:
        hits = text.rank(planned.headline_first, depth, scope)
        if len(hits) >= enough:
            return hits, planned.headline_first
    return text.rank(planned.query, depth, scope), planned.query


def snippets(db: Any, query: TextQuery, chunk_ids: Sequence[int]) -> dict[int, str]:
    """A matching excerpt of each of these chunks that matches `query`."""
    return text_index(db).snippets(query, chunk_ids)
