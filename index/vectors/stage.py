"""The vector stage of a query: embed the query, score every stored vector, map keys to chunks.

A `VectorTier` lives as long as its caller (one CLI command, or an MCP server): it keeps one
HTTP client, the query vectors it has fetched, and the store's vectors as a matrix, reloaded
when another connection has written to the store since. A server failure is remembered for a
while, so a batch of queries degrades at once instead of waiting out the timeout on each.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np

from index.postgres.vectors import PgVectors
from index.scope import CHUNKS, Filter
from index.store import Store
from index.vectors.client import EmbeddingClient, EmbeddingConfig, EmbeddingError
from index.vectors.sidecar import load_matrix
from index.vectors.storage import Identity, Matrix, Product, stored_identity, unit

RETRY_AFTER_FAILURE = 30.0  # seconds before a failed server is asked again
T = TypeVar("T")


class VectorsUnavailable(Exception):
    """The vector stage cannot run for this query; the message is the reason, for the tier line."""


@dataclass
class VectorTier:
    store: Store
    config: EmbeddingConfig
    _client: EmbeddingClient | None = None
    _matrix: Matrix | PgVectors | None = None
    _version: int | None = None
    _queries: dict[str, np.ndarray] = field(default_factory=dict)
    _failed: tuple[float, str] | None = None
    _worker: ThreadPoolExecutor | None = None

    def close(self) -> None:
        if self._worker is not None:
            self._worker.shutdown()
            self._worker = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> VectorTier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def matrix(self) -> Matrix | PgVectors:
        """The store's vectors; `VectorsUnavailable` when there are none of this identity."""
        postgres = self.store.path is None  # pgvector searches in place: nothing to cache
        version = None if postgres else self.store.db.execute("PRAGMA data_version").fetchone()[0]
        if self._matrix is None or version != self._version or postgres:
            identity = stored_identity(self.store.db)
            if identity is None:
                raise VectorsUnavailable("no vectors in the index: load it with embeddings "
                                         "configured")  # fmt: skip
            differs = identity.differs(Identity.of(self.config))
            if differs:
                raise VectorsUnavailable("vector identity mismatch: " + "; ".join(differs))
            self._matrix = (
                PgVectors.load(self.store.db)
                if postgres
                else load_matrix(self.store.db, self.store.path)
            )
            self._version = version
        if not self._matrix.keys:
            raise VectorsUnavailable("no vectors in the index yet")
        return self._matrix

    def prepare(self, queries: list[str]) -> None:
        """Fetch the vectors of many queries in batches (a failure is left for query_vector)."""
        missing = list(dict.fromkeys(q for q in queries if q not in self._queries))
        if not missing:
            return
        try:
            vectors = self._embed([self.config.query_text(q) for q in missing])
        except VectorsUnavailable:
            return
        self._queries.update(zip(missing, unit(np.asarray(vectors)), strict=True))

    def query_vector(self, query: str) -> np.ndarray:
        if query not in self._queries:
            self._queries[query] = unit(np.asarray(self._embed([self.config.query_text(query)])))[0]
        return self._queries[query]

    def _recent_failure(self) -> None:
        """`VectorsUnavailable` while a failed server is not to be asked again yet."""
        if self._failed and time.monotonic() - self._failed[0] < RETRY_AFTER_FAILURE:
            raise VectorsUnavailable(self._failed[1])

    def _embed(self, texts: list[str]) -> list[list[float]]:
        self._recent_failure()
        try:
            if self._client is None:
                self._client = EmbeddingClient(self.config)
            return self._client.embed(texts)
        except EmbeddingError as exc:
            reason = f"embeddings unreachable: {exc.message}"
            self._failed = (time.monotonic(), reason)
            raise VectorsUnavailable(reason) from exc

    def nearest_chunks(
        self, query: str, depth: int, scope: Filter | None
    ) -> tuple[np.ndarray, list[tuple[int, float]]]:
        """The query's vector and the `depth` nearest chunks within `scope` (an
        `index.scope.scope_filter`; None: every chunk) as (chunk id, cosine), best first."""
        vector, hits, _ = self.nearest_chunks_alongside(query, depth, scope, lambda: None)
        return vector, hits

    def nearest_chunks_alongside(
        self, query: str, depth: int, scope: Filter | None, other: Callable[[], T]
    ) -> tuple[np.ndarray, list[tuple[int, float]], T]:
        """`nearest_chunks`, with `other()` (the lexical stage) run on this thread while a
        worker thread fetches the query's vector (an HTTP round trip: in a new process, the
        HTTP client's import as well) and scores the vectors with it: the server, numpy and
        SQLite all release the GIL, so on two cores the query takes the longer of the two, not
        their sum; once `other()` is done this thread takes its share of the product's blocks
        (`storage.Product`). The first query of a process reads the store's vectors meanwhile.
        The worker never touches the store's SQLite connection (pgvector scores in the store:
        its connection serialises the two threads' statements)."""
        if query not in self._queries:  # degrade at once, not after a lexical stage for nothing
            self._recent_failure()
        if self._worker is None:
            self._worker = ThreadPoolExecutor(1, thread_name_prefix="docs-flatten-stage")
        fetched = self._worker.submit(self.query_vector, query)
        try:
            matrix = self.matrix()
        except VectorsUnavailable:
            fetched.result()  # an unreachable server is the reason given first
            raise
        shared: Future[Product | None] = Future()
        scored = self._worker.submit(_scored, fetched, matrix, depth, scope, shared)
        try:
            result = other()
        except BaseException:
            wait([scored])  # its own failure, if any, is dropped for `other`'s
            raise
        product = shared.result()  # once the query's vector is in (None: no product to share)
        if product is not None:
            product.share()  # this thread takes the blocks the worker has not started yet
        vector, near = scored.result()
        wanted = depth
        while True:
            hits = _chunks_for(self.store, near, scope)
            if len(hits) >= depth or wanted >= len(matrix.keys):
                return vector, hits[:depth], result
            wanted *= 4  # duplicates collapse onto one key, or the scope dropped some
            near = matrix.nearest(vector, wanted, scope)


def _scored(
    fetched: Future[np.ndarray],
    matrix: Matrix | PgVectors,
    depth: int,
    scope: Filter | None,
    shared: Future[Product | None],
) -> tuple[np.ndarray, list[tuple[str, float]]]:
    """The query's vector (once fetched) and its `depth` nearest keys. The product over an
    in-memory matrix is handed out through `shared` as it starts, for another thread to join;
    `shared` is always resolved (None when there is no product to share)."""
    try:
        vector = fetched.result()
        if len(vector) != matrix.dimension:
            raise VectorsUnavailable(f"the server's vectors have dimension {len(vector)}, the "
                                     f"index's {matrix.dimension}")  # fmt: skip
        if not isinstance(matrix, Matrix):  # pgvector scores in the store
            return vector, matrix.nearest(vector, depth, scope)
        product = Product(matrix.vectors, vector)
        shared.set_result(product)
        return vector, matrix.best(product.result(), depth)
    finally:
        if not shared.done():
            shared.set_result(None)


def _chunks_for(
    store: Store, near: list[tuple[str, float]], scope: Filter | None
) -> list[tuple[int, float]]:
    """Chunks using each key (a key is shared by chunks with identical text) within `scope`, in
    `near`'s order."""
    in_scope, scope_params = scope or ("", [])
    query = (
        f"SELECT c.id, c.embed_key FROM {CHUNKS} "
        f"WHERE c.embed_key IN (SELECT value FROM json_each(?)) {in_scope} ORDER BY c.id"
    )
    by_key: dict[str, list[int]] = {}
    for chunk_id, key in store.db.execute(query, [json.dumps([k for k, _ in near]), *scope_params]):
        by_key.setdefault(key, []).append(chunk_id)
    return [(chunk_id, score) for key, score in near for chunk_id in by_key.get(key, [])]
