"""Vectors on PostgreSQL: pgvector, with `vectors.storage.Matrix`'s interface, so the vector
stage and the search run unchanged on both stores.

Vectors are stored unit length (`storage.pack`), so the inner product is the cosine: the HNSW
index is over `vector_ip_ops` on `embedding::vector(D)` (or `halfvec(D)`, `?vectors=halfvec` in
the store URL: half the index's size), made once the dimension is known. A query asks for
`hnsw.ef_search` at least its depth (pgvector's default, 40, would return at most 40 rows), with
iterative scans on, so a corpus-filtered query still fills its depth. Below `EXACT_BELOW`
vectors the scan is exact (a sequential scan costs less than the graph there, and it is exact).
"""

from __future__ import annotations

from collections.abc import Sized
from typing import Any

import numpy as np

from index.vectors.storage import DTYPE

EXACT_BELOW = 20_000  # vectors: below this many, search every one (exact and fast enough)
EF_SEARCH_MAX = 1000  # pgvector's ceiling for hnsw.ef_search
HALFVEC = "halfvec"


def literal(vector: np.ndarray | list[float] | bytes) -> str:
    """A vector as pgvector's text input (`[0.1,0.2,...]`); float32 bytes are read as such."""
    if isinstance(vector, bytes | bytearray | memoryview):
        vector = np.frombuffer(vector, dtype=DTYPE)
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=DTYPE)) + "]"


def column_type(db: Any, dimension: int) -> str:
    kind = HALFVEC if getattr(db, "vector_type", None) == HALFVEC else "vector"
    return f"{kind}({int(dimension)})"


def ensure_index(db: Any, dimension: int) -> None:
    """The HNSW index for vectors of `dimension` (inside the caller's transaction)."""
    kind = column_type(db, dimension)
    ops = "halfvec_ip_ops" if kind.startswith(HALFVEC) else "vector_ip_ops"
    db.execute(
        f"CREATE INDEX IF NOT EXISTS vectors_hnsw ON vectors USING hnsw ((embedding::{kind}) {ops})"
    )


class _Count(Sized):
    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count


class PgVectors:
    """The store's vectors as `Matrix` offers them: `keys` (only its length is asked), a
    `dimension`, `nearest`, `similarity`, and `row_of`/`vectors` for the vectors of given keys
    (read on demand: MMR wants a few dozen)."""

    def __init__(self, db: Any, count: int, dimension: int) -> None:
        self.db = db
        self.keys = _Count(count)
        self._dimension = dimension
        self.row_of = _Rows(self)
        self._rows: list[np.ndarray] = []

    @classmethod
    def load(cls, db: Any) -> PgVectors:
        count = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
        dimension = db.execute("SELECT dimension FROM vector_identity").fetchone()
        return cls(db, int(count), int(dimension[0] or 0) if dimension else 0)

    @property
    def dimension(self) -> int:
        return self._dimension if len(self.keys) else 0

    @property
    def vectors(self) -> np.ndarray:
        if not self._rows:
            return np.zeros((0, self._dimension), DTYPE)
        return np.vstack(self._rows)

    def nearest(
        self, query: np.ndarray, n: int, corpus: str | None = None
    ) -> list[tuple[str, float]]:
        """The `n` keys closest to `query` (used by a chunk of `corpus`, when given), best
        first, ties by storage order."""
        if not len(self.keys) or n <= 0:
            return []
        q = literal(query)
        within, params = "", []
        if corpus is not None:
            within = (
                "WHERE EXISTS (SELECT 1 FROM chunks c JOIN documents d ON d.id = c.document_id "
                "JOIN corpora k ON k.id = d.corpus_id WHERE c.embed_key = v.key AND k.name = ?)"
            )
            params = [corpus]
        if len(self.keys) < EXACT_BELOW:
            distance = "v.embedding <#> ?::vector"
        else:
            kind = column_type(self.db, self._dimension)
            distance = f"v.embedding::{kind} <#> ?::{kind}"
            self.db.execute(f"SET hnsw.ef_search = {min(max(n, 40), EF_SEARCH_MAX)}")
            self.db.execute("SET hnsw.iterative_scan = relaxed_order")
        # Relaxed order (iterative scans) may return rows slightly out of order: sort again.
        rows = self.db.execute(
            f"SELECT key, score FROM (SELECT v.id, v.key, -({distance}) AS score "
            f"FROM vectors v {within} ORDER BY {distance} LIMIT ?) t ORDER BY score DESC, id",
            [q, *params, q, n],
        ).fetchall()
        return [(key, float(score)) for key, score in rows]

    def similarity(self, query: np.ndarray, key: str | None) -> float | None:
        if not key:
            return None
        row = self.db.execute(
            "SELECT -(embedding <#> ?::vector) FROM vectors WHERE key = ?", (literal(query), key)
        ).fetchone()
        return None if row is None else float(row[0])

    def vector_of(self, key: str) -> np.ndarray | None:
        row = self.db.execute(
            "SELECT embedding::text FROM vectors WHERE key = ?", (key,)
        ).fetchone()
        if row is None:
            return None
        return np.asarray([float(x) for x in row[0].strip("[]").split(",")], dtype=DTYPE)


class _Rows:
    """`row_of.get(key)`: the vector's row in `PgVectors.vectors`, read on first ask."""

    def __init__(self, owner: PgVectors) -> None:
        self.owner = owner
        self.rows: dict[str, int] = {}

    def get(self, key: str, default: int | None = None) -> int | None:
        if key in self.rows:
            return self.rows[key]
        vector = self.owner.vector_of(key) if key else None
        if vector is None:
            return default
        self.owner._rows.append(vector)
        self.rows[key] = len(self.owner._rows) - 1
        return self.rows[key]
