"""Vectors on PostgreSQL: pgvector, with `vectors.storage.Matrix`'s interface, so the vector
stage and the search run unchanged on both stores.

Vectors are stored unit length (`storage.pack`), so the inner product is the cosine: the HNSW
index is over `vector_ip_ops` on `embedding::vector(D)` (or on `embedding::halfvec(D)` when the
store URL says `?vectors=halfvec`: half the index's size), built once a backfill leaves
`EXACT_BELOW` vectors or more (queries use whichever cast the index was built with). A query
asks for `hnsw.ef_search` at least its depth (pgvector's default, 40, would return at most 40
rows), with iterative scans on, so a corpus-filtered query still fills its depth. Below
`EXACT_BELOW` vectors the scan is exact (cheaper than the graph there, and exact).
"""

from __future__ import annotations

from collections.abc import Sized
from dataclasses import dataclass
from typing import Any

import numpy as np

from index.scope import CHUNKS, Filter
from index.vectors.storage import DTYPE

EXACT_BELOW = 20_000  # vectors: below this many, search every one (exact and fast enough)
EF_SEARCH_MAX = 1000  # pgvector's ceiling for hnsw.ef_search
HALFVEC = "halfvec"

# The HNSW build's memory (maintenance_work_mem): the graph of every vector fits in it, or
# pgvector goes on building it on disk, many times slower (20k x 384 took 41 s with 4 MB).
# Measured on pgvector 0.8 (default m = 16, its NOTICE "no longer fits after N tuples"): an
# element takes its vector (4 bytes a dimension, 2 for halfvec, 8 of header) and 704-708 bytes
# of graph, whatever the dimension.
GRAPH_BYTES = 720  # per element, the measured 708 rounded up
SLACK = 1.25  # the upper layers' random share and the allocator's rounding
MIN_BUILD = 64 << 20  # PostgreSQL's own default: never ask for less
# What a build may take at most, unless the store URL's `build_memory=` says: the server's
# shared_buffers (customarily a quarter of its memory), and at least this much.
MIN_CAP = 1 << 30


@dataclass(frozen=True)
class BuildMemory:
    """What the HNSW build is given, in bytes, and what decided it."""

    needed: int  # the graph's estimated size
    cap: int  # the most it may take (the URL's build_memory=, else the server's share)
    current: int  # the session's maintenance_work_mem, which is never lowered
    chosen: int

    @property
    def setting(self) -> str:
        return f"{-(-self.chosen // 1024)}kB"  # maintenance_work_mem's unit, rounded up


def build_memory(
    count: int, dimension: int, *, half: bool, cap: int, current: int = 0
) -> BuildMemory:
    """The memory for an HNSW build over `count` vectors of `dimension`: the graph's estimated
    size, at least PostgreSQL's default and the session's `current` setting (a server tuned
    higher keeps its own), at most `cap` (see `server_cap`; a cap the user gave wins over
    all)."""
    element = dimension * (2 if half else 4) + 8 + GRAPH_BYTES
    needed = int(count * element * SLACK)
    chosen = min(max(needed, MIN_BUILD, current), cap)
    return BuildMemory(needed=needed, cap=cap, current=current, chosen=chosen)


def server_cap(shared_buffers: int, current: int) -> int:
    """The most a build takes when the store URL sets no `build_memory=`: the server's
    shared_buffers or `MIN_CAP`, whichever is more, and never less than its own setting."""
    return max(shared_buffers, MIN_CAP, current)


def literal(vector: np.ndarray | list[float] | bytes) -> str:
    """A vector as pgvector's text input (`[0.1,0.2,...]`); float32 bytes are read as such."""
    if isinstance(vector, bytes | bytearray | memoryview):
        vector = np.frombuffer(vector, dtype=DTYPE)
    return "[" + ",".join(map(str, np.asarray(vector, dtype=DTYPE).tolist())) + "]"


def column_type(db: Any, dimension: int) -> str:
    """The cast the HNSW index is (or will be) built on: the index's own when it exists."""
    row = db.execute("SELECT pg_get_indexdef(to_regclass('vectors_hnsw'))").fetchone()
    built = row[0] if row else None
    if built is not None:
        kind = HALFVEC if "halfvec" in built else "vector"
    else:
        kind = HALFVEC if getattr(db, "vector_type", None) == HALFVEC else "vector"
    return f"{kind}({int(dimension)})"


def ensure_index(db: Any) -> None:
    """The HNSW index, once the store holds `EXACT_BELOW` vectors (below, a query scans them
    all: exact, and no index to keep up row by row); inside the caller's transaction."""
    row = db.execute("SELECT dimension FROM vector_identity").fetchone()
    if row is None or not row[0]:
        return
    if db.execute("SELECT to_regclass('vectors_hnsw')").fetchone()[0] is not None:
        return
    count = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    if count < EXACT_BELOW:
        return
    kind = column_type(db, row[0])
    ops = "halfvec_ip_ops" if kind.startswith(HALFVEC) else "vector_ip_ops"
    memory = planned_memory(db, count, int(row[0]), half=kind.startswith(HALFVEC))
    db.execute(f"SET LOCAL maintenance_work_mem = '{memory.setting}'")  # the graph in memory
    db.execute(f"CREATE INDEX vectors_hnsw ON vectors USING hnsw ((embedding::{kind}) {ops})")


def planned_memory(db: Any, count: int, dimension: int, *, half: bool) -> BuildMemory:
    """`build_memory` for this store: its URL's `build_memory=` or the server's share as the
    cap, the session's setting as the floor."""
    shared, current = db.execute(
        "SELECT pg_size_bytes(current_setting('shared_buffers')), "
        "pg_size_bytes(current_setting('maintenance_work_mem'))"
    ).fetchone()
    cap = getattr(db, "build_memory", None) or server_cap(int(shared), int(current))
    return build_memory(count, dimension, half=half, cap=cap, current=int(current))


class _Count(Sized):
    def __init__(self, count: int) -> None:
        self.count = count

    def __len__(self) -> int:
        return self.count


class PgVectors:
    """The store's vectors as `Matrix` offers them: `keys` (only its length is asked), a
    `dimension`, `nearest`, `similarity`, and `row_of`/`vectors` for the vectors of given keys
    (read on demand: MMR wants a few dozen)."""

    def __init__(self, db: Any, count: int, dimension: int, cast: str | None = None) -> None:
        self.db = db
        self.keys = _Count(count)
        self._dimension = dimension
        self._cast = cast  # the HNSW index's cast (`vector(384)`), None: no index
        self.row_of = _Rows(self)
        self._rows: list[np.ndarray] = []

    @classmethod
    def load(cls, db: Any) -> PgVectors:
        """One round trip, no count(*) of a large table (100 ms at 100k vectors): without the
        HNSW index the count is exact up to `EXACT_BELOW` (a bounded scan); with it, the
        planner's estimate. Only the vector stage's widening loop reads it, as a bound."""
        dimension, indexdef, estimate, small = db.execute(
            "SELECT (SELECT dimension FROM vector_identity), "
            "pg_get_indexdef(to_regclass('vectors_hnsw')), "
            "(SELECT reltuples FROM pg_class WHERE oid = to_regclass('vectors')), "
            "CASE WHEN to_regclass('vectors_hnsw') IS NULL THEN "
            "(SELECT count(*) FROM (SELECT 1 FROM vectors LIMIT ?) AS t) END",
            (EXACT_BELOW,),
        ).fetchone()
        if small is not None and small < EXACT_BELOW:
            count = int(small)
        else:  # an index: there are at least EXACT_BELOW (it is built only then)
            count = max(int(estimate or 0), EXACT_BELOW)
        cast = None
        if indexdef is not None and dimension:
            cast = f"{HALFVEC if 'halfvec' in indexdef else 'vector'}({int(dimension)})"
        return cls(db, count, int(dimension or 0), cast)

    @property
    def dimension(self) -> int:
        return self._dimension if len(self.keys) else 0

    @property
    def vectors(self) -> np.ndarray:
        if not self._rows:
            return np.zeros((0, self._dimension), DTYPE)
        return np.vstack(self._rows)

    def nearest(
        self, query: np.ndarray, n: int, scope: Filter | None = None
    ) -> list[tuple[str, float]]:
        """The `n` keys closest to `query` (used by a chunk within `scope`, an
        `index.scope.scope_filter`, when given), best first, ties by storage order."""
        if not len(self.keys) or n <= 0:
            return []
        q = literal(query)
        within, params = "", []
        if scope is not None and scope[0]:
            within = f"WHERE EXISTS (SELECT 1 FROM {CHUNKS} WHERE c.embed_key = v.key {scope[0]})"
            params = list(scope[1])
        if len(self.keys) < EXACT_BELOW or self._cast is None:
            distance = "v.embedding <#> ?::vector"
            tie = ", v.id"  # as numpy's order: ties by storage order, whatever LIMIT cuts
        else:
            distance = f"v.embedding::{self._cast} <#> ?::{self._cast}"
            self.db.execute(
                "SELECT set_config('hnsw.ef_search', ?, false), "
                "set_config('hnsw.iterative_scan', 'relaxed_order', false)",
                (str(min(max(n, 40), EF_SEARCH_MAX)),),
            )
            tie = ""  # the index orders by distance alone
        # Relaxed order (iterative scans) may return rows slightly out of order: sort again.
        rows = self.db.execute(
            f"SELECT key, score FROM (SELECT v.id, v.key, -({distance}) AS score "
            f"FROM vectors v {within} ORDER BY {distance}{tie} LIMIT ?) t ORDER BY score DESC, id",
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
