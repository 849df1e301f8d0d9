"""The text index: where chunk text is stored, tokenized and ranked, behind one protocol.

Everything in `index/` that touches text (the lexical stage, snippets, the page stage's title and
path matches, `match`, `words`, `show`/`get`, the loader's writes, the vector backfill's reads)
goes through `TextIndex`; the SQL around it (corpora, documents, chunks, scope filters) stays
portable. Two implementations, one chosen by the connection's kind (`text_index`):

- `index.textindex.fts5.Fts5TextIndex`: SQLite FTS5 (`chunks_fts`, `chunks_exact`,
  `documents_fts`, the fts5vocab tables), FTS5's own bm25();
- `index.textindex.postgres.PostgresTextIndex`: BM25 computed on stock PostgreSQL from postings
  and term statistics the loader keeps, with FTS5's tokenizer, column weights, k1, b and IDF, so
  both stores rank alike.

What the caller says is structured (`TextQuery`: phrases, OR or AND, optional columns); each
backend renders it (FTS5 as a MATCH expression). Which words, forms and compounds to ask for is
decided once, above this seam, by `index.lexical.plan`.

Transactions: every method runs on the connection the index was made for, inside whatever
transaction the caller has open. Writes (`prepare_load`, `write_documents`, `write_chunks`,
`stage_chunks`, `delete_document`) never commit or roll back: the loader's transaction makes a
corpus load atomic, text included. Reads see what that connection sees (its own uncommitted
writes too).
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

# The columns of a chunk's text, in this order everywhere (FTS5 column numbers, weights).
CHUNK_COLUMNS = ("title", "section", "symbol", "body", "parts")
# BM25's parameters, FTS5's defaults (its bm25() takes no other).
K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class ChunkText:
    """The text of one chunk, as indexed: `parts` holds identifier pieces (`getUserName` ->
    `get user name`, see `index.text.identifier_parts`)."""

    chunk_id: int
    title: str
    section: str
    symbol: str
    body: str
    parts: str


@dataclass(frozen=True)
class DocumentText:
    """What a document says about itself for the page stage: its title and its path's words
    (`index.paths.document_fields`)."""

    document_id: int
    title: str
    path: str


@dataclass(frozen=True)
class TextQuery:
    """What to look for, before any backend's syntax.

    `phrases`: each a query form as the user's words give it (`deploy`, `aws_eks_cluster`,
    `blue green`); the tokenizer splits it, and a form of several tokens matches them in
    sequence (a phrase). `every`: a chunk must match all phrases (AND), else any (OR).
    `columns`: only these of `CHUNK_COLUMNS` (or of title/path for documents); None: all.
    `narrowed`: phrases (also in `phrases`) that match only in these columns of their own, in
    an OR query (a word the plan adds as a guess at the topic counts only in a heading).
    An empty `phrases` matches nothing."""

    phrases: tuple[str, ...]
    every: bool = False
    columns: tuple[str, ...] | None = None
    narrowed: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def columns_of(self, phrase: str) -> tuple[str, ...] | None:
        """The columns `phrase` may match in."""
        return dict(self.narrowed).get(phrase, self.columns)


@dataclass(frozen=True)
class LexicalHit:
    chunk_id: int
    score: float  # BM25, higher is better


@runtime_checkable
class TextIndex(Protocol):
    """A store's text index. Chunk ids are `chunks.id`, document ids `documents.id`."""

    name: str  # the lexical engine, as the tier line names it: "fts5", "bm25 (postgres)"

    # --- writes: inside the caller's (the loader's) transaction, never committed here ---

    def prepare_load(self) -> None:
        """Called once at the start of a corpus load (FTS5: its write buffer size)."""
        ...

    def write_documents(self, rows: Sequence[DocumentText]) -> None:
        """Add the title/path rows of new documents (ids not yet in the index)."""
        ...

    def write_chunks(self, corpus_id: int, rows: Sequence[ChunkText]) -> None:
        """Add the text of new chunks (ids not yet in the index), all of corpus `corpus_id`, and
        update the term statistics. May run on the loader's second thread, one call at a time,
        while no other statement runs on the connection."""
        ...

    def stage_chunks(self, corpus_id: int, rows: Sequence[ChunkText]) -> Callable[[], None]:
        """`write_chunks` in two steps: what needs no statement is done now, on the calling
        thread (FTS5: the statements and their parameters), and the returned call writes (on the
        loader's second thread, under the same rules as `write_chunks`)."""
        ...

    def delete_document(self, corpus_id: int, document_id: int) -> None:
        """Remove a document's title/path row and the text of all its chunks (and their share
        of the term statistics). Call it BEFORE the `chunks` rows are deleted: the document's
        chunks are found through `chunks.document_id`."""
        ...

    # --- reads ---

    def chunk_texts(self, chunk_ids: Sequence[int], chars: int | None = None) -> dict[int, str]:
        """The body of each chunk that exists (its first `chars` characters when given)."""
        ...

    def version(self) -> Any:
        """A value that changes whenever the index may have changed (any connection's commit,
        or this connection's own writes): what a cache of `document_frequencies` is keyed by."""
        ...

    def document_frequencies(self, terms: Sequence[str]) -> dict[str, int]:
        """How many chunks hold each STEMMED term (`index.lexical.stem`), 0 when none, over the
        whole index (every corpus), as FTS5's vocabulary counts them."""
        ...

    def rank(
        self, query: TextQuery, depth: int, scope: tuple[str, list[object]] = ("", [])
    ) -> list[LexicalHit]:
        """The best `depth` chunks matching `query` by BM25 (column weights `lexical.WEIGHTS`,
        k1 `K1`, b `B`, IDF and document length over the whole index, as FTS5's bm25()),
        best first, within `scope`: an `index.scope.scope_filter` fragment over `c`/`d`/`k`
        with `?` placeholders and its parameters ("": everything)."""
        ...

    def snippets(self, query: TextQuery, chunk_ids: Sequence[int]) -> dict[int, str]:
        """An excerpt of each chunk's body around what `query` matches, as FTS5's
        snippet(..., 3, '', '', ' … ', 24) makes it; chunks that do not match are absent."""
        ...

    def highlights(
        self, query: TextQuery, document_ids: Sequence[int]
    ) -> dict[int, tuple[list[str], list[str]]]:
        """For each of these documents whose title or path matches `query`: the matched spans
        of its title and of its path, as FTS5's highlight() marks them (a phrase is one span)."""
        ...

    def documents_with(self, query: TextQuery, *, exact: bool = False) -> dict[int, int]:
        """Document id -> how many of its chunks match `query`. `exact`: unstemmed terms, and no
        positions (a phrase's tokens need only all be in the chunk)."""
        ...

    def exact_terms(self) -> Iterator[str]:
        """Every unstemmed term of the index, most chunks first, then by term."""
        ...


_INDEXES: weakref.WeakKeyDictionary[Any, TextIndex] = weakref.WeakKeyDictionary()


def text_index(db: Any) -> TextIndex:
    """The text index that `db` (a `sqlite3.Connection` or a psycopg connection) holds. FTS5's
    keeps no state (a new one each time: a sqlite3 connection cannot be weakly referenced);
    Postgres's is one object per connection, so what it remembers is shared."""
    if isinstance(db, sqlite3.Connection):
        from index.textindex.fts5 import Fts5TextIndex

        return Fts5TextIndex(db)
    found = _INDEXES.get(db)
    if found is None:
        from index.textindex.postgres import PostgresTextIndex

        # The store hands its sqlite3-style wrapper; the index speaks psycopg itself.
        found = _INDEXES[db] = PostgresTextIndex(getattr(db, "raw", db))
    return found


__all__ = [
    "CHUNK_COLUMNS",
    "K1",
    "B",
    "ChunkText",
    "DocumentText",
    "LexicalHit",
    "TextIndex",
    "TextQuery",
    "text_index",
]
