"""BM25 on stock PostgreSQL: the same ranking as FTS5's bm25(), from postings the loader keeps.

Text is tokenized by SQLite's own FTS5 tokenizer (`index.textindex.scratch`), so a term here is
a term there. Each chunk's text is kept in `text_chunks` with its length in tokens. The postings
are kept as FTS5 keeps its own: in blocks, one row per (term, batch of chunks written together)
in `text_blocks`, holding packed arrays (chunk ids, their lengths, counts per column, token
offsets for phrases and column filters); the body's unstemmed terms likewise in `text_exact`.
A load writes a few rows per term instead of one per (term, chunk), and a query reads a term's
postings from a handful of rows. The postings of chunks holding a term in a heading column
(title, section, symbol) are also kept on their own, in `text_heads` (same layout): a query
that looks for a term only there (the headline query of common words) reads those few, not the
term's whole list, and scores them as before: the same chunks, counts, lengths and IDF. Term
statistics (chunks per term) and totals (chunks, tokens) are kept per corpus, so two corpora
loading at once never wait on each other's rows; the loader updates them in its transaction,
and a query sums them.

A deleted chunk leaves its entries in the blocks, listed in `text_dead` and skipped by every
read, until its batch is rewritten without them (`_compact`: when a quarter of the batch is
gone, or when a new chunk takes a dead one's id).

A query is scored exactly as FTS5 scores it: for each phrase i, IDF_i = ln((N - n_i + 0.5) /
(n_i + 0.5)) (1e-6 when not positive) over the whole index, and each matching chunk gets
sum_i IDF_i * f_i (k1 + 1) / (f_i + k1 (1 - b + b D / avgdl)), where f_i is the phrase's
occurrences weighted by column (`lexical.WEIGHTS`) and D the chunk's tokens. The postings of the
query's terms are fetched in one statement and scored with numpy, in float64 and FTS5's order of
operations (see /work/notes/pgbm25.md and pgload.md for why not a sparse HNSW index, and why
not SQL aggregation per posting).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from index.scope import CHUNKS
from index.textindex import CHUNK_COLUMNS, K1, B, ChunkText, DocumentText, LexicalHit, TextQuery
from index.textindex.scratch import CHUNK_SPAN, COLUMN_SPAN, Scratch, TermChunks, Tokenized

NAME = "bm25 (postgres)"
# A batch is rewritten without its deleted chunks once this share of them is gone.
COMPACT_SHARE = 0.25
# The heading columns: short, so their postings are a small share of a common term's, and the
# lexical stage's headline query looks only there.
HEAD_COLUMNS = CHUNK_COLUMNS[:3]

TABLES = (
    """CREATE TABLE IF NOT EXISTS text_chunks (
        chunk_id bigint PRIMARY KEY,
        corpus_id bigint NOT NULL,
        batch bigint NOT NULL,
        title text NOT NULL, section text NOT NULL, symbol text NOT NULL,
        body text NOT NULL, parts text NOT NULL,
        length integer NOT NULL
    )""",
    "CREATE SEQUENCE IF NOT EXISTS text_batch_numbers",
    """CREATE TABLE IF NOT EXISTS text_batches (
        batch bigint PRIMARY KEY,
        corpus_id bigint NOT NULL,
        chunks integer NOT NULL
    )""",
    # Packed arrays (see `_pack`): ids - base, lengths, counts (5 per chunk), offsets (the
    # token offsets of each chunk's occurrences, column by column as the counts say).
    """CREATE TABLE IF NOT EXISTS text_blocks (
        term text COLLATE "C" NOT NULL,
        batch bigint NOT NULL,
        base bigint NOT NULL,
        n integer NOT NULL,
        ids bytea NOT NULL,
        lengths bytea NOT NULL,
        counts bytea NOT NULL,
        offsets bytea NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS text_blocks_term ON text_blocks (term)",
    "CREATE INDEX IF NOT EXISTS text_blocks_batch ON text_blocks (batch)",
    # The postings of text_blocks whose chunk holds the term in a heading column, again.
    "CREATE TABLE IF NOT EXISTS text_heads (LIKE text_blocks)",
    "CREATE INDEX IF NOT EXISTS text_heads_term ON text_heads (term)",
    "CREATE INDEX IF NOT EXISTS text_heads_batch ON text_heads (batch)",
    """CREATE TABLE IF NOT EXISTS text_exact (
        term text COLLATE "C" NOT NULL,
        batch bigint NOT NULL,
        base bigint NOT NULL,
        n integer NOT NULL,
        ids bytea NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS text_exact_term ON text_exact (term)",
    "CREATE INDEX IF NOT EXISTS text_exact_batch ON text_exact (batch)",
    """CREATE TABLE IF NOT EXISTS text_dead (
        chunk_id bigint PRIMARY KEY,
        batch bigint NOT NULL
    )""",
    # Chunks per term, as deltas: a row per (term, corpus, batch written or documents deleted),
    # folded into batch 0 when the corpus's next load first writes (see `_fold_terms`).
    """CREATE TABLE IF NOT EXISTS text_terms (
        term text COLLATE "C" NOT NULL,
        corpus_id bigint NOT NULL,
        batch bigint NOT NULL,
        docs integer NOT NULL,
        exact_docs integer NOT NULL,
        PRIMARY KEY (term, corpus_id, batch)
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
DEAD = "SELECT coalesce(array_agg(chunk_id), '{}') FROM text_dead"
BLOCK_COLUMNS = "term, batch, base, n, ids, lengths, counts, offsets"
EXACT_COLUMNS = "term, batch, base, n, ids"
BLOCK_TYPES = ["text", "int8", "int8", "int4", "bytea", "bytea", "bytea", "bytea"]


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
    """Postgres text cannot hold NUL; U+FFFD is, like NUL, a separator to the tokenizer (so
    no token holds either: the tokenizer's terms are written as they are)."""
    return value.replace("\x00", "\ufffd")


_Phrase = tuple[list[str], tuple[str, ...] | None]  # its terms, and its columns (None: all)


# --- packed arrays ---

_WIDTHS = ((0xFF, np.uint8), (0xFFFF, np.uint16), (0xFFFFFFFF, np.uint32))


def _pack(values: np.ndarray) -> tuple[bytes, int]:
    """Non-negative integers as little-endian bytes, 1, 2, 4 or 8 each (the fewest that hold
    the largest); (bytes, width). A reader finds the width from the length and the count."""
    top = int(values.max()) if len(values) else 0
    for limit, kind in _WIDTHS:
        if top <= limit:
            return values.astype(np.dtype(kind).newbyteorder("<")).tobytes(), np.dtype(
                kind
            ).itemsize
    return values.astype("<u8").tobytes(), 8


def _unpack(data: bytes, count: int) -> np.ndarray:
    if not count:
        return np.zeros(0, dtype=np.int64)
    kind = {1: "<u1", 2: "<u2", 4: "<u4", 8: "<u8"}[len(data) // count]
    return np.frombuffer(data, dtype=kind).astype(np.int64)


def _unpack_rows(data: Sequence[bytes], counts: Sequence[int]) -> np.ndarray:
    """Several rows' packed arrays, one after the other: one conversion when they share a
    width (they do when written by batches of a like size)."""
    if len({len(d) // c for d, c in zip(data, counts, strict=True) if c}) <= 1:
        return _unpack(b"".join(data), sum(counts))
    return np.concatenate([_unpack(d, c) for d, c in zip(data, counts, strict=True)])


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The indexes starts[0] .. starts[0] + sizes[0] - 1, then the next range's, ..."""
    total = int(sizes.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(sizes)
    return np.arange(total) - np.repeat(ends - sizes - starts, sizes)


# A phrase's matches: chunk ids, weighted occurrences (f), chunk lengths.
Hits = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass(frozen=True)
class TermPostings:
    """A term's live postings over the whole index, chunk ids ascending."""

    ids: np.ndarray
    lengths: np.ndarray
    counts: np.ndarray  # [postings, columns]
    positions: np.ndarray | None  # column * COLUMN_SPAN + offset, posting after posting
    first: np.ndarray | None  # each posting's first position; one more at the end


def _columns_of(counts: np.ndarray) -> np.ndarray:
    """The column of each position, when the positions follow the counts' order."""
    width = counts.shape[1]
    return np.repeat(np.tile(np.arange(width), len(counts)), counts.ravel())


def _block_rows(batch: int, tokens: Tokenized) -> Iterator[tuple[Any, ...]]:
    """The `text_blocks` rows of one batch: each array is packed once for the whole batch
    (one width) and cut at the terms' bounds."""
    stemmed = tokens.stemmed
    if not len(stemmed.ids):
        return
    base = int(stemmed.ids.min())
    lengths = np.array([tokens.lengths[i] for i in stemmed.ids.tolist()], dtype=np.int64)
    offsets = tokens.positions % COLUMN_SPAN
    ids, w_ids = _pack(stemmed.ids - base)
    lens, w_lens = _pack(lengths)
    counts, w_counts = _pack(tokens.counts.ravel())
    packed_offsets, w_offsets = _pack(offsets)
    width = tokens.counts.shape[1]
    first = np.concatenate(([0], np.cumsum(tokens.counts.sum(axis=1)))).tolist()
    starts = stemmed.starts.tolist()
    for t, term in enumerate(stemmed.terms):
        a, b = starts[t], starts[t + 1]
        yield (
            term, batch, base, b - a,
            ids[a * w_ids:b * w_ids], lens[a * w_lens:b * w_lens],
            counts[a * width * w_counts:b * width * w_counts],
            packed_offsets[first[a] * w_offsets:first[b] * w_offsets],
        )  # fmt: skip


def _heads(tokens: Tokenized) -> Tokenized:
    """These tokens' postings of chunks holding the term in a heading column (`HEAD_COLUMNS`),
    with all their counts and positions: what `text_heads` keeps."""
    keep = tokens.counts[:, [CHUNK_COLUMNS.index(c) for c in HEAD_COLUMNS]].any(axis=1)
    stemmed = tokens.stemmed
    kept = np.concatenate(([0], np.cumsum(keep)))[stemmed.starts]  # new starts, per term
    present = np.flatnonzero(np.diff(kept))
    first = _firsts(tokens.counts)
    sizes = np.diff(first)[keep]
    return Tokenized(
        TermChunks([stemmed.terms[t] for t in present.tolist()],
                   np.concatenate((kept[present], kept[-1:])), stemmed.ids[keep]),
        tokens.counts[keep], tokens.positions[_ranges(first[:-1][keep], sizes)],
        tokens.lengths, tokens.exact,
    )  # fmt: skip


def _exact_rows(batch: int, exact: TermChunks) -> Iterator[tuple[Any, ...]]:
    if not len(exact.ids):
        return
    base = int(exact.ids.min())
    ids, width = _pack(exact.ids - base)
    starts = exact.starts.tolist()
    for t, term in enumerate(exact.terms):
        a, b = starts[t], starts[t + 1]
        yield term, batch, base, b - a, ids[a * width : b * width]


def _term_postings(rows: list[Any], positions: bool, dead: np.ndarray) -> TermPostings:
    """One term's postings from its blocks (`base, n, ids, lengths, counts, offsets` rows),
    without the dead chunks, chunk ids ascending."""
    width = len(CHUNK_COLUMNS)
    if not rows:
        empty = np.zeros(0, dtype=np.int64)
        return TermPostings(empty, empty, np.zeros((0, width), dtype=np.int64), empty,
                            np.zeros(1, dtype=np.int64))  # fmt: skip
    bases, sizes, packed_ids, packed_lengths, packed_counts, offsets = zip(*rows, strict=True)
    all_ids = np.repeat(np.array(bases, dtype=np.int64), sizes) + _unpack_rows(packed_ids, sizes)
    all_counts = _unpack_rows(packed_counts, [n * width for n in sizes]).reshape(-1, width)
    places = first = None
    if positions:
        first = _firsts(all_counts)
        row_ends = np.cumsum(sizes)
        per_row = np.diff(first[np.concatenate(([0], row_ends))]).tolist()
        places = _columns_of(all_counts) * COLUMN_SPAN + _unpack_rows(offsets, per_row)
    out = TermPostings(all_ids, _unpack_rows(packed_lengths, sizes), all_counts, places, first)
    keep = ~np.isin(all_ids, dead) if len(dead) else np.ones(len(all_ids), dtype=bool)
    if keep.all() and (len(all_ids) < 2 or np.all(np.diff(all_ids) > 0)):
        return out
    order = np.flatnonzero(keep)
    order = order[np.argsort(all_ids[order], kind="stable")]
    return _select(out, order)


def _firsts(counts: np.ndarray) -> np.ndarray:
    """Each posting's first position, and one past the last."""
    return np.concatenate(([0], np.cumsum(counts.sum(axis=1))))


def _select(postings: TermPostings, order: np.ndarray) -> TermPostings:
    """These postings (indexes), in this order, their positions following them."""
    counts = postings.counts[order]
    if postings.positions is None or postings.first is None:
        return TermPostings(postings.ids[order], postings.lengths[order], counts, None, None)
    sizes = counts.sum(axis=1)
    places = postings.positions[_ranges(postings.first[order], sizes)]
    return TermPostings(postings.ids[order], postings.lengths[order], counts, places,
                        _firsts(counts))  # fmt: skip


def _positions_of(postings: TermPostings, chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index in `chunks`, position) of every occurrence of the term in these chunks (which
    all hold it)."""
    assert postings.positions is not None and postings.first is not None
    at = np.searchsorted(postings.ids, chunks)
    sizes = postings.first[at + 1] - postings.first[at]
    places = postings.positions[_ranges(postings.first[at], sizes)]
    return np.repeat(np.arange(len(chunks)), sizes), places


def _union(found: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """The chunks in any of these sets of distinct ids: (ids ascending, how many sets hold
    each, where each set's ids are in them). Chunk ids are dense, so when the range is not
    much wider than the sets a mark per id in the range is cheaper than sorting them."""
    if len(found) == 1:
        return found[0], np.ones(len(found[0]), dtype=np.int64), [np.arange(len(found[0]))]
    present = [ids for ids in found if len(ids)]
    total = sum(len(ids) for ids in present)
    if not total:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, [empty for _ in found]
    low = min(int(ids[0]) for ids in present)
    span = max(int(ids[-1]) for ids in present) - low + 1
    if span > 8 * total + 4096:
        ids, hits = np.unique(np.concatenate(found), return_counts=True)
        return ids, hits, [np.searchsorted(ids, f) for f in found]
    marks = np.zeros(span, dtype=np.int64)
    for ids in found:
        marks[ids - low] += 1
    held = np.flatnonzero(marks)
    rank = np.cumsum(marks > 0) - 1
    return held + low, marks[held], [rank[ids - low] for ids in found]


def _best(ids: np.ndarray, scores: np.ndarray, count: int) -> np.ndarray:
    """The indexes of the best `count` by score, then by chunk id (as the old SQL ordered):
    only those at least as good as the count-th are sorted."""
    if count < len(ids):
        bar = np.partition(scores, len(ids) - count)[len(ids) - count]
        pick = np.flatnonzero(scores >= bar)
    else:
        pick = np.arange(len(ids))
    return pick[np.lexsort((ids[pick], -scores[pick]))][:count]


def _kept_blocks(rows: list[Any], dead: np.ndarray) -> Iterator[tuple[Any, ...]]:
    """These `text_blocks` rows without the dead chunks' postings (a row left empty goes)."""
    for term, batch, base, n, ids, lengths, counts, offsets in rows:
        postings = _term_postings([(base, n, ids, lengths, counts, offsets)], True, dead)
        kept = len(postings.ids)
        if kept == n:
            yield term, batch, base, n, ids, lengths, counts, offsets
        elif kept:
            assert postings.positions is not None
            yield (term, batch, base, kept, _pack(postings.ids - base)[0],
                   _pack(postings.lengths)[0], _pack(postings.counts.ravel())[0],
                   _pack(postings.positions % COLUMN_SPAN)[0])  # fmt: skip


def _kept_exact(rows: list[Any], dead: np.ndarray) -> Iterator[tuple[Any, ...]]:
    for term, batch, base, n, packed in rows:
        ids = base + _unpack(packed, n)
        kept = ids[~np.isin(ids, dead)]
        if len(kept) == n:
            yield term, batch, base, n, packed
        elif len(kept):
            yield term, batch, base, len(kept), _pack(kept - base)[0]


class PostgresTextIndex:
    name = NAME

    def __init__(self, db: Any) -> None:
        # The psycopg connection itself (the store's sqlite3-style wrapper holds it as `raw`):
        # this module writes Postgres's own SQL and COPY, in the caller's transaction.
        self.db = getattr(db, "raw", db)
        self.scratch = Scratch()
        self._fold_pending = False
        self._heads = False

    @property
    def heads(self) -> bool:
        """Whether the store has `text_heads`. One made before it existed has none (the text
        index's tables are made once, by the store's first migration) and is read and written
        without, as before; once there, the table stays, so only a yes is remembered."""
        if not self._heads:
            found = self.db.execute("SELECT to_regclass('text_heads') IS NOT NULL").fetchone()
            self._heads = bool(found[0])
        return self._heads

    # --- writes ---

    def prepare_load(self) -> None:
        self._fold_pending = True  # the corpus is known at the first write

    def _fold_terms(self, corpus_id: int) -> None:
        """Once per load, at its first write: fold what an earlier load left (see
        `finish_load`). Within the load deltas are only inserted: updating a row once per batch
        in one transaction leaves a chain of versions each later update must walk (a 100k-slice
        load took quadratic time). A load that writes nothing writes no row here either."""
        if not self._fold_pending:
            return
        self._fold_pending = False
        self.finish_load(corpus_id)

    def finish_load(self, corpus_id: int) -> None:
        """At the end of a corpus's load, in its transaction (the Postgres store calls it
        before COMMIT): sum the corpus's term deltas into one row per term, so no query sums
        them, and `doctor` finds none pending. Writes nothing when none are pending."""
        pending = self.db.execute(
            "SELECT EXISTS (SELECT 1 FROM text_terms WHERE corpus_id = %s AND batch <> 0)",
            (corpus_id,),
        ).fetchone()[0]
        if not pending:
            return
        self.db.execute(
            "WITH gone AS (DELETE FROM text_terms WHERE corpus_id = %s "
            "RETURNING term, docs, exact_docs) "
            "INSERT INTO text_terms (term, corpus_id, batch, docs, exact_docs) "
            "SELECT term, %s, 0, sum(docs), sum(exact_docs) FROM gone GROUP BY term "
            "HAVING sum(docs) <> 0 OR sum(exact_docs) <> 0",
            (corpus_id, corpus_id),
        )

    def write_documents(self, rows: Sequence[DocumentText]) -> None:
        if not rows:
            return
        sql = "COPY text_documents (document_id, title, path) FROM STDIN (FORMAT BINARY)"
        with self.db.cursor() as cur, cur.copy(sql) as copy:
            copy.set_types(["int8", "text", "text"])
            for r in rows:
                copy.write_row((r.document_id, _text(r.title or ""), _text(r.path or "")))

    def stage_chunks(self, corpus_id: int, rows: Sequence[ChunkText]) -> Callable[[], None]:
        # Tokenizing reads the term table first (`_fold_terms`): all of it is the write.
        return functools.partial(self.write_chunks, corpus_id, rows)

    def write_chunks(self, corpus_id: int, rows: Sequence[ChunkText]) -> None:
        if not rows:
            return
        self._fold_terms(corpus_id)
        tokens = self.scratch.tokenize(rows)
        ids = [r.chunk_id for r in rows]
        taken = self.db.execute(
            "SELECT DISTINCT batch FROM text_dead WHERE chunk_id = ANY(%s)", (ids,)
        ).fetchall()
        if taken:  # a new chunk takes a deleted one's id: its old postings must go first
            self._compact([b for (b,) in taken])
        (batch,) = self.db.execute(
            "INSERT INTO text_batches (batch, corpus_id, chunks) "
            "VALUES (nextval('text_batch_numbers'), %s, %s) RETURNING batch",
            (corpus_id, len(rows)),
        ).fetchone()
        with self.db.cursor() as cur:
            with cur.copy(
                "COPY text_chunks (chunk_id, corpus_id, batch, title, section, symbol, body, "
                "parts, length) FROM STDIN (FORMAT BINARY)"
            ) as copy:
                copy.set_types(["int8", "int8", "int8", *["text"] * 5, "int4"])
                for r in rows:
                    copy.write_row((r.chunk_id, corpus_id, batch, _text(r.title),
                                    _text(r.section), _text(r.symbol), _text(r.body),
                                    _text(r.parts), tokens.lengths[r.chunk_id]))  # fmt: skip
            self._copy_blocks(
                cur,
                _block_rows(batch, tokens),
                _exact_rows(batch, tokens.exact),
                _block_rows(batch, _heads(tokens)) if self.heads else None,
            )
        self._count_terms(corpus_id, batch, tokens, +1)
        self._count_totals(corpus_id, len(rows), sum(tokens.lengths.values()), +1)

    @staticmethod
    def _copy_blocks(
        cur: Any,
        blocks: Iterator[tuple[Any, ...]],
        exact: Iterator[tuple[Any, ...]],
        heads: Iterator[tuple[Any, ...]] | None,  # None: the store has no text_heads
    ) -> None:
        for table, rows in (("text_blocks", blocks), ("text_heads", heads)):
            if rows is None:
                continue
            with cur.copy(f"COPY {table} ({BLOCK_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(BLOCK_TYPES)
                for row in rows:
                    copy.write_row(row)
        with cur.copy(f"COPY text_exact ({EXACT_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(BLOCK_TYPES[:5])
            for row in exact:
                copy.write_row(row)

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
        gone = self.db.execute(
            "DELETE FROM text_chunks WHERE chunk_id = ANY(%s) "
            "RETURNING chunk_id, batch, title, section, symbol, body, parts",
            (ids,),
        ).fetchall()
        if not gone:
            return
        self._fold_terms(corpus_id)
        # The postings stay in their blocks until the batch is rewritten: what they counted
        # is found again by tokenizing the stored text (the same tokens as when written).
        tokens = self.scratch.tokenize([ChunkText(r[0], *r[2:]) for r in gone])
        self.db.execute(
            "INSERT INTO text_dead (chunk_id, batch) SELECT * FROM unnest(%s::int8[], %s::int8[])",
            ([r[0] for r in gone], [r[1] for r in gone]),
        )
        self._count_terms(corpus_id, None, tokens, -1)
        self._count_totals(corpus_id, len(gone), sum(tokens.lengths.values()), -1)
        worn = self.db.execute(
            "SELECT b.batch FROM text_batches b JOIN text_dead d ON d.batch = b.batch "
            "WHERE b.batch = ANY(%s) GROUP BY b.batch, b.chunks HAVING count(*) >= b.chunks * %s",
            (sorted({r[1] for r in gone}), COMPACT_SHARE),
        ).fetchall()
        if worn:
            self._compact([b for (b,) in worn])

    def _compact(self, batches: list[int]) -> None:
        """Rewrite these batches' blocks without their deleted chunks."""
        for batch in sorted(batches):
            gone = self.db.execute(
                "DELETE FROM text_dead WHERE batch = %s RETURNING chunk_id", (batch,)
            ).fetchall()
            dead = np.array([i for (i,) in gone], dtype=np.int64)
            with self.db.cursor(binary=True) as cur:
                blocks = cur.execute(
                    f"DELETE FROM text_blocks WHERE batch = %s RETURNING {BLOCK_COLUMNS}", (batch,)
                ).fetchall()
                exact = cur.execute(
                    f"DELETE FROM text_exact WHERE batch = %s RETURNING {EXACT_COLUMNS}",
                    (batch,),
                ).fetchall()
                heads = None
                if self.heads:
                    heads = _kept_blocks(cur.execute(
                        f"DELETE FROM text_heads WHERE batch = %s RETURNING {BLOCK_COLUMNS}",
                        (batch,)).fetchall(), dead)  # fmt: skip
                self._copy_blocks(cur, _kept_blocks(blocks, dead), _kept_exact(exact, dead),
                                  heads)  # fmt: skip
            self.db.execute(
                "UPDATE text_batches SET chunks = chunks - %s WHERE batch = %s", (len(dead), batch)
            )

    def _count_terms(self, corpus_id: int, batch: int | None, tokens: Tokenized, sign: int) -> None:
        """Add (or take away) these chunk counts to the corpus's term statistics: new rows
        keyed by `batch` (None: a new key, for a deletion)."""
        counts: dict[str, list[int]] = {}
        for group, n in ((tokens.stemmed, 0), (tokens.exact, 1)):
            for term, docs in zip(group.terms, np.diff(group.starts).tolist(), strict=True):
                counts.setdefault(term, [0, 0])[n] += docs
        terms = sorted(counts)
        if not terms:
            return
        # The lists as one string each, split by the server: tens of thousands of terms are
        # not dumped and quoted one by one. No term holds a newline (a separator to FTS5).
        key = "%s" if batch is not None else "nextval('text_batch_numbers')"
        self.db.execute(
            f"WITH k (batch) AS (SELECT {key}::int8) "
            "INSERT INTO text_terms (term, corpus_id, batch, docs, exact_docs) "
            "SELECT t, %s, k.batch, d, e FROM k, unnest(string_to_array(%s, E'\\n'), "
            "string_to_array(%s, ',')::int[], string_to_array(%s, ',')::int[]) AS u(t, d, e)",
            ([batch] if batch is not None else [])
            + [corpus_id, "\n".join(terms), ",".join(str(sign * counts[t][0]) for t in terms),
               ",".join(str(sign * counts[t][1]) for t in terms)],
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

    def _postings(
        self, terms: set[str], positions: set[str], heads: set[str]
    ) -> tuple[int, int, dict[str, TermPostings]]:
        """(chunks, tokens) over the whole index and the live postings of these terms (with
        positions for those in `positions`; for those in `heads`, only the chunks holding them
        in a heading column), in one statement: on a busy server each round trip costs more
        than the scoring."""
        source, asked = "text_blocks WHERE term = ANY(%s)", [sorted(terms - heads)]
        if heads:  # never named on a store without the table
            source = (f"(SELECT {BLOCK_COLUMNS} FROM {source} UNION ALL SELECT "
                      f"{BLOCK_COLUMNS} FROM text_heads WHERE term = ANY(%s)) b")  # fmt: skip
            asked.append(sorted(heads))
        with self.db.cursor(binary=True) as cur:
            chunks, tokens, dead, *blocks = cur.execute(
                "SELECT (SELECT coalesce(sum(chunks), 0)::int8 FROM text_totals), "
                "(SELECT coalesce(sum(tokens), 0)::int8 FROM text_totals), "
                f"({DEAD}), array_agg(term), array_agg(base), array_agg(n), array_agg(ids), "
                "array_agg(lengths), array_agg(counts), "
                "array_agg(CASE WHEN term = ANY(%s) THEN offsets END) "
                f"FROM {source}",
                (sorted(positions), *asked),
            ).fetchone()
        found: dict[str, list[tuple[Any, ...]]] = {t: [] for t in terms}
        for term, *rest in zip(*(b or () for b in blocks), strict=True):
            found[term].append(rest)
        dead = np.array(dead, dtype=np.int64)
        postings = {t: _term_postings(rows, t in positions, dead) for t, rows in found.items()}
        return chunks, tokens, postings

    def _phrase_hits(
        self, phrase: list[str], columns: tuple[str, ...] | None, postings: dict[str, TermPostings]
    ) -> Hits:
        """(chunk ids, weighted occurrences f, chunk lengths) of the chunks where the phrase's
        terms occur in sequence within one of `columns` (None: any)."""
        weights = np.array(_weights(columns))
        allowed = np.array([columns is None or c in columns for c in CHUNK_COLUMNS], dtype=float)
        first = postings[phrase[0]]
        if len(phrase) == 1:
            counts, ids, lengths = first.counts, first.ids, first.lengths
            if columns is not None:  # the few chunks with the term in these columns, first
                keep = counts[:, allowed > 0].any(axis=1)
                counts, ids, lengths = counts[keep], ids[keep], lengths[keep]
            f = np.zeros(len(ids))
            for n, weight in enumerate(weights.tolist()):
                if weight:
                    f += weight * counts[:, n]
            return ids, f, lengths
        chunks = first.ids
        for term in phrase[1:]:
            chunks = np.intersect1d(chunks, postings[term].ids, assume_unique=True)
        if not len(chunks):
            return chunks, np.zeros(0), chunks
        owner, starts = _positions_of(first, chunks)
        keys = owner * CHUNK_SPAN + starts
        found = np.isin(starts // COLUMN_SPAN, np.flatnonzero(allowed))
        for i, term in enumerate(phrase[1:], start=1):
            other, places = _positions_of(postings[term], chunks)
            found &= np.isin(keys + i, other * CHUNK_SPAN + places)
        f = np.bincount(owner[found], weights=weights[starts[found] // COLUMN_SPAN],
                        minlength=len(chunks))  # fmt: skip
        hit = np.bincount(owner[found], minlength=len(chunks)) > 0
        lengths = first.lengths[np.searchsorted(first.ids, chunks)]
        return chunks[hit], f[hit], lengths[hit]

    def _matches(self, query: TextQuery) -> tuple[int, int, list[Hits]] | None:
        """(chunks, tokens) of the whole index and each phrase's hits; None when the query can
        match nothing."""
        phrases = self._phrases(query)
        if phrases is None:
            return None
        terms = {t for p, _ in phrases for t in p}
        # A term asked only in heading columns can match only chunks holding it there (a
        # phrase, only where each of its terms is there): their postings are all it needs.
        wide = {t for p, columns in phrases if not _in_heads(columns) for t in p}
        chunks, tokens, postings = self._postings(
            terms,
            {t for p, _ in phrases if len(p) > 1 for t in p},
            terms - wide if self.heads else set(),
        )
        return chunks, tokens, [self._phrase_hits(p, columns, postings) for p, columns in phrases]

    def rank(
        self, query: TextQuery, depth: int, scope: tuple[str, list[object]] = ("", [])
    ) -> list[LexicalHit]:
        found = self._matches(query)
        if found is None or not found[0]:
            return []
        chunks, tokens, matches = found
        avgdl = tokens / chunks
        ids, hits, places = _union([m[0] for m in matches])
        scores = np.zeros(len(ids))
        # float64 in FTS5's order of operations, phrase after phrase: the same figures.
        for (found, f, lengths), where in zip(matches, places, strict=True):
            idf = _idf(chunks, len(found))
            scores[where] += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * lengths / avgdl)))
        if query.every:
            ids, scores = ids[hits == len(matches)], scores[hits == len(matches)]
        in_scope, scope_params = scope
        if in_scope:
            best = self._within(ids, scores, depth, in_scope, scope_params)
        else:
            best = _best(ids, scores, depth)
        return [
            LexicalHit(int(i), float(s))
            for i, s in zip(ids[best].tolist(), scores[best].tolist(), strict=True)
        ]

    def _within(self, ids: np.ndarray, scores: np.ndarray, depth: int, in_scope: str,
                params: list[object]) -> np.ndarray:  # fmt: skip
        """The best `depth` of these chunks that are in the scope (indexes, best first): the
        best are asked about in growing windows, so a scope holding them costs one look-up."""
        sql = (f"SELECT c.id FROM {CHUNKS} WHERE c.id = ANY(%s) "
               f"{in_scope.replace('?', '%s')}")  # fmt: skip
        kept: list[int] = []
        start, size = 0, max(4 * depth, 256)
        while start < len(ids) and len(kept) < depth:
            # The order is total (score, then id), so a wider window begins as the last did.
            window = _best(ids, scores, size)[start:]
            inside = {i for (i,) in self.db.execute(sql, [ids[window].tolist(), *params])}
            kept += [n for n, i in zip(window.tolist(), ids[window].tolist(), strict=True)
                     if i in inside]  # fmt: skip
            start, size = start + len(window), size * 4
        return np.array(kept[:depth], dtype=np.int64)

    def _phrases(self, query: TextQuery) -> list[_Phrase] | None:
        """Each phrase's terms and the columns it may match in; None when the query can match
        nothing. A phrase with no token (`___`) matches nothing, as in FTS5."""
        phrases = [([_text(t) for t in self.scratch.phrase_tokens(p)], query.columns_of(p))
                   for p in query.phrases]  # fmt: skip
        if query.every and any(not terms for terms, _ in phrases):
            return None
        phrases = [p for p in phrases if p[0]]
        return phrases or None

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
            found = self._exact_ids(terms)
            need = len(terms) if query.every else 1
        else:
            matched = self._matches(query)
            if matched is None:
                return {}
            matches = matched[2]
            found = [m[0] for m in matches]
            need = len(matches) if query.every else 1
        ids, hits, _ = _union(found)
        chunks = ids[hits >= need].tolist()
        if not chunks:
            return {}
        return dict(
            self.db.execute(
                "SELECT document_id, count(*) FROM chunks WHERE id = ANY(%s) GROUP BY document_id",
                (chunks,),
            ).fetchall()
        )

    def _exact_ids(self, terms: list[str]) -> list[np.ndarray]:
        """The live chunks holding each of these unstemmed terms."""
        found: dict[str, list[np.ndarray]] = {t: [] for t in terms}
        with self.db.cursor(binary=True) as cur:
            dead, *blocks = cur.execute(
                f"SELECT ({DEAD}), array_agg(term), array_agg(base), array_agg(n), "
                "array_agg(ids) FROM text_exact WHERE term = ANY(%s)",
                (terms,),
            ).fetchone()
        for term, base, n, packed in zip(*(b or () for b in blocks), strict=True):
            found[term].append(base + _unpack(packed, n))
        dead = np.array(dead, dtype=np.int64)
        out = []
        for term in terms:
            ids = np.concatenate(found[term]) if found[term] else np.zeros(0, dtype=np.int64)
            out.append(np.sort(ids[~np.isin(ids, dead)] if len(dead) else ids))
        return out

    def exact_terms(self) -> Iterator[str]:
        rows = self.db.execute(
            "SELECT term FROM text_terms GROUP BY term HAVING sum(exact_docs) > 0 "
            "ORDER BY sum(exact_docs) DESC, term"
        ).fetchall()
        for (term,) in rows:
            yield term


def _in_heads(columns: tuple[str, ...] | None) -> bool:
    return columns is not None and set(columns) <= set(HEAD_COLUMNS)


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
