"""Vector storage: the store's vector identity, float32 BLOBs, and an in-memory matrix to score.

stdlib sqlite3 here cannot load extensions (no sqlite-vec), so vectors are BLOBs in a plain table
and scoring is one numpy matrix product over all of them (unit-normalised once, at load).
A store holds vectors of one identity (model + dimension + query prefix + document template):
vectors of two models are not comparable, so a different identity is refused until `--reindex`
replaces them.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from flatten.hashing import sha256_hex
from index.vectors.blas import one_thread
from index.vectors.client import EmbeddingConfig, IdentityMismatch

if TYPE_CHECKING:
    from index.scope import Filter

DTYPE = np.dtype("<f4")


@dataclass(frozen=True)
class Identity:
    model: str
    dimension: int | None
    query_prefix: str
    document_template: str

    @classmethod
    def of(cls, config: EmbeddingConfig, dimension: int | None = None) -> Identity:
        return cls(config.model, dimension, config.query_prefix, config.template)

    def differs(self, other: Identity) -> list[str]:
        """The settings that differ (a dimension not yet known matches any)."""
        names = []
        for name in ("model", "query_prefix", "document_template", "dimension"):
            mine, theirs = getattr(self, name), getattr(other, name)
            if mine != theirs and not (name == "dimension" and None in (mine, theirs)):
                names.append(f"{name} {mine!r} -> {theirs!r}")
        return names


def stored_identity(db: sqlite3.Connection) -> Identity | None:
    row = db.execute(
        "SELECT model, dimension, query_prefix, document_template FROM vector_identity"
    ).fetchone()
    return Identity(*row) if row else None


def identity_mismatch(stored: Identity, wanted: Identity) -> IdentityMismatch:
    refused = IdentityMismatch(
        "the index holds vectors of another identity: " + "; ".join(stored.differs(wanted)),
        reason="identity-mismatch",
    )
    refused.stored, refused.wanted = stored, wanted
    return refused


def check_identity(db: sqlite3.Connection, config: EmbeddingConfig) -> None:
    """Refuse (before anything is sent) when the store's vectors were made differently."""
    stored = stored_identity(db)
    if stored is not None and stored.differs(Identity.of(config)):
        raise identity_mismatch(stored, Identity.of(config))


def reset(db: sqlite3.Connection, config: EmbeddingConfig) -> None:
    """Drop every vector and take `config`'s identity (inside the caller's transaction)."""
    db.execute("DELETE FROM vectors")
    db.execute("DELETE FROM vector_identity")
    db.execute(
        "UPDATE chunks SET embed_key = NULL, embed_skip = NULL "
        "WHERE embed_key IS NOT NULL OR embed_skip IS NOT NULL"
    )
    claim(db, config)


def claim(db: sqlite3.Connection, config: EmbeddingConfig) -> None:
    """Record `config`'s identity if the store has none yet."""
    db.execute(
        "INSERT OR IGNORE INTO vector_identity (id, model, query_prefix, document_prefix, "
        "document_template, created_at) VALUES (1, ?, ?, ?, ?, ?)",
        (config.model, config.query_prefix, config.document_prefix, config.template,
         time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())),
    )  # fmt: skip


def set_dimension(db: sqlite3.Connection, dimension: int) -> None:
    db.execute("UPDATE vector_identity SET dimension = ? WHERE dimension IS NULL", (dimension,))


def index_vectors(db: sqlite3.Connection) -> None:
    """After vectors were added: PostgreSQL builds its HNSW index once there are enough of them
    (one build after the bulk insert is far faster than an index kept up row by row); SQLite
    scores a matrix and has nothing to do."""
    if not isinstance(db, sqlite3.Connection):
        db.index_vectors()  # index.postgres.connection


def vector_key(embedded_text: str) -> str:
    return sha256_hex(embedded_text)


def pack(vector: list[float]) -> bytes:
    """float32 bytes of the unit vector: stored normalised, so loading needs no arithmetic."""
    return unit(np.asarray(vector, dtype=DTYPE)).tobytes()


def packed(db: sqlite3.Connection, vector: list[float]) -> bytes | str:
    """`pack(vector)` as the store's `embedding` column takes it (pgvector's text on Postgres)."""
    if isinstance(db, sqlite3.Connection):
        return pack(vector)
    return db.vector_literal(unit(np.asarray(vector, dtype=DTYPE)))  # index.postgres


def collect_garbage(db: sqlite3.Connection) -> int:
    """Delete vectors no chunk uses any more; return how many."""
    # NOT EXISTS, not NOT IN: Postgres plans NOT IN over a subquery larger than work_mem as a
    # nested scan (hours at a million vectors); NOT EXISTS is an anti-join on both engines.
    return db.execute(
        "DELETE FROM vectors WHERE NOT EXISTS "
        "(SELECT 1 FROM chunks c WHERE c.embed_key = vectors.key)"
    ).rowcount


@dataclass
class Matrix:
    """Every stored vector (unit length, as `pack` stores them) with its key; row i is keys[i]."""

    keys: list[str]
    vectors: np.ndarray  # (n, dimension) float32
    row_of: dict[str, int]

    @classmethod
    def load(cls, db: sqlite3.Connection, batch: int = 4096) -> Matrix:
        """Read in batches into one preallocated array: memory is the matrix and its keys, not
        every BLOB as a Python object as well. One read transaction: one consistent snapshot."""
        in_transaction = db.in_transaction
        if not in_transaction:
            db.execute("BEGIN")
        try:
            count = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
            if not count:
                return cls([], np.zeros((0, 0), DTYPE), {})
            width = db.execute("SELECT length(embedding) FROM vectors LIMIT 1").fetchone()[0]
            vectors = np.empty((count, width // DTYPE.itemsize), DTYPE)
            keys: list[str] = []
            cursor = db.execute("SELECT key, embedding FROM vectors ORDER BY id")
            while rows := cursor.fetchmany(batch):
                block = np.frombuffer(b"".join(r[1] for r in rows), dtype=DTYPE)
                vectors[len(keys) : len(keys) + len(rows)] = block.reshape(len(rows), -1)
                keys.extend(r[0] for r in rows)
        finally:
            if not in_transaction:
                db.execute("COMMIT")
        return cls(keys, vectors, {key: i for i, key in enumerate(keys)})

    @property
    def dimension(self) -> int:
        return int(self.vectors.shape[1]) if len(self.keys) else 0

    def nearest(
        self, query: np.ndarray, n: int, scope: Filter | None = None
    ) -> list[tuple[str, float]]:
        """The `n` keys closest to `query` by cosine, best first (ties by storage order). Every
        vector is scored in one product, so `scope` is left to the caller to apply to the keys
        (pgvector's `PgVectors.nearest`, the same interface, applies it inside its scan)."""
        if not self.keys or n <= 0:
            return []
        return self.best(Product(self.vectors, query).result(), n)

    def best(self, scores: np.ndarray, n: int) -> list[tuple[str, float]]:
        """The `n` keys of the highest `scores` (one per row), best first, ties by row."""
        n = min(n, len(scores))
        if n <= 0:
            return []
        top = np.argpartition(-scores, n - 1)[:n]
        top = top[np.lexsort((top, -scores[top]))]
        return [(self.keys[i], float(scores[i])) for i in top]

    def similarity(self, query: np.ndarray, key: str | None) -> float | None:
        row = self.row_of.get(key) if key else None
        return None if row is None else float(self.vectors[row] @ query)


class Product:
    """Every row's dot product with one query vector, computed in blocks of rows that any
    thread may take: the vector stage's worker starts it, and the query's own thread joins in
    once its lexical stage is done (`VectorTier.nearest_chunks_alongside`), so the two cores
    share the product without BLAS's helper threads (index.vectors.blas). A row's score is
    the same whichever block and thread computes it: one kernel per row, bit for bit."""

    BLOCK_ROWS = 8192  # 12 MB of float32 at 384 dimensions: a tenth of 100k rows

    def __init__(self, vectors: np.ndarray, query: np.ndarray) -> None:
        self.vectors, self.query = vectors, np.asarray(query)
        # The dtype the plain product would give (float32 for the stage's unit vectors).
        self.scores = np.empty(len(vectors), dtype=np.result_type(vectors, self.query))
        self._blocks = -(-len(vectors) // self.BLOCK_ROWS)
        self._next = itertools.count()  # the next block to take (next() is atomic)
        self._done = 0
        self._finished = threading.Condition()

    def share(self) -> None:
        """Compute blocks on this thread until none is left to start."""
        with one_thread():  # memory-bound: see index.vectors.blas
            while (block := next(self._next)) < self._blocks:
                rows = slice(block * self.BLOCK_ROWS, (block + 1) * self.BLOCK_ROWS)
                np.matmul(self.vectors[rows], self.query, out=self.scores[rows])
                with self._finished:
                    self._done += 1
                    if self._done == self._blocks:
                        self._finished.notify_all()

    def result(self) -> np.ndarray:
        """Every row's score, once every block is done (helping with those left)."""
        self.share()
        with self._finished:
            self._finished.wait_for(lambda: self._done == self._blocks)
        return self.scores


def unit(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (zero rows stay zero), so a dot product is the cosine."""
    vectors = np.asarray(vectors, dtype=DTYPE)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.where(norms == 0, 1, norms)
