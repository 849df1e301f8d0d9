"""Search: named stages composed by one function.

The lexical stage (FTS5 BM25) always runs; with embeddings configured the vector stage runs too
and the two rankings are fused by reciprocal rank fusion. When the vector stage cannot run (the
server is down, the index has no vectors yet) a hybrid search degrades to lexical and its
`TierUsed` says why; only a search forced to the vector tier fails instead.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from index.citations import CitationRule
from index.errors import QueryError
from index.fusion import RRF_K, mmr, rrf
from index.lexical import lexical
from index.results import (
    LOCATED_COLUMNS,
    NO_EMBEDDINGS,
    REQUESTED,
    Hit,
    SearchResponse,
    Tier,
    TierUsed,
    located_fields,
)
from index.scope import CHUNKS, corpus_filter
from index.store import Store
from index.vectors.client import EmbeddingError

if TYPE_CHECKING:  # numpy and the vector stage load only when vectors are used
    import numpy as np

    from index.vectors.stage import VectorTier

RERANKERS = ("mmr",)
FUSION_DEPTH = 50  # each stage contributes at least this many candidates to the fusion
SNIPPET_CHARS = 240


@dataclass(frozen=True)
class SearchOptions:
    """How to search. `tier` forces one of `Tier` (default: hybrid when vectors are given, else
    lexical); `rerank="mmr"` spreads near-duplicates out of the top results."""

    top_k: int = 10
    corpus: str | None = None  # only this corpus; None: all of them
    rules: list[CitationRule] = field(default_factory=list)
    snippets: bool = True  # a matching excerpt of each hit (off: `snippet` is None)
    tier: Tier | str | None = None
    rrf_k: int = RRF_K
    rerank: str | None = None


def search_mode(tier: Tier | str | None, rerank: str | None, has_vectors: bool) -> Tier:
    """The tier a search runs at, or `QueryError` for settings that cannot work together."""
    try:
        mode = Tier(tier) if tier is not None else (Tier.HYBRID if has_vectors else Tier.LEXICAL)
    except ValueError:
        raise QueryError(f"unknown tier {tier!r} (one of {', '.join(t.value for t in Tier)})",
                         reason="bad-tier", value=tier) from None  # fmt: skip
    if rerank is not None and rerank not in RERANKERS:
        raise QueryError(f"unknown re-ranker {rerank!r} (one of {', '.join(RERANKERS)})",
                         reason="bad-rerank", value=rerank)  # fmt: skip
    if mode != Tier.LEXICAL and not has_vectors:
        raise QueryError(f"the {mode.value} tier needs embeddings", reason="no-embeddings",
                         value=mode.value)  # fmt: skip
    if rerank and mode == Tier.LEXICAL:
        raise QueryError(f"re-ranking by {rerank} needs vectors: configure embeddings, and do "
                         "not force the lexical tier", reason="rerank-needs-vectors",
                         value=rerank)  # fmt: skip
    return mode


def search(
    store: Store,
    query: str,
    options: SearchOptions | None = None,
    *,
    vectors: VectorTier | None = None,
) -> SearchResponse:
    """Ranked hits for `query`: hybrid when `vectors` is given, else lexical."""
    options = options or SearchOptions()
    mode = search_mode(options.tier, options.rerank, vectors is not None)
    corpus_filter(store.db, options.corpus)  # an unknown corpus fails before any work
    if mode == Tier.LEXICAL or vectors is None:
        why = NO_EMBEDDINGS if vectors is None else REQUESTED
        return SearchResponse(query, TierUsed(Tier.LEXICAL, reason=why),
                              _lexical_only(store, query, options))  # fmt: skip
    from index.vectors.stage import VectorsUnavailable

    depth = max(options.top_k, FUSION_DEPTH)

    def keyword_stage() -> list[Any]:
        # In vector mode the lexical candidates only say which hits matched by keyword.
        return lexical(store.db, query, top_k=depth, corpus=options.corpus,
                       snippets=options.snippets)  # fmt: skip

    try:
        query_vector, near, lexical_hits = vectors.nearest_chunks_alongside(
            query, depth, options.corpus, keyword_stage
        )
    except VectorsUnavailable as exc:
        if mode == Tier.VECTOR:
            raise EmbeddingError(f"vector search unavailable: {exc}",
                                 reason="vectors-unavailable") from exc  # fmt: skip
        used = TierUsed(Tier.LEXICAL, degraded=True, reason=str(exc))
        return SearchResponse(query, used, _lexical_only(store, query, options))
    results = _fused(store, query_vector, vectors, lexical_hits, near, options,
                     vector_only=mode == Tier.VECTOR)  # fmt: skip
    if options.rerank == "mmr":
        results = _diversified(vectors, results, options.top_k)
    used = TierUsed(mode, model=vectors.config.model, dimension=vectors.matrix().dimension)
    return SearchResponse(query, used, results[: options.top_k])


def _lexical_only(store: Store, query: str, options: SearchOptions) -> list[Hit]:
    hits = lexical(store.db, query, top_k=options.top_k, corpus=options.corpus,
                   snippets=options.snippets)  # fmt: skip
    results = describe(store, [(h.chunk_id, h.score, h.snippet) for h in hits], options)
    results.sort(key=lambda r: -r.score)
    return results[: options.top_k]


def _fused(
    store: Store,
    query_vector: np.ndarray,
    vectors: VectorTier,
    lexical_hits: list[Any],
    near: list[tuple[int, float]],
    options: SearchOptions,
    *,
    vector_only: bool,
) -> list[Hit]:
    lexical_ids = [h.chunk_id for h in lexical_hits]
    vector_ids = [chunk_id for chunk_id, _ in near]
    if vector_only:
        fused = [(chunk_id, similarity) for chunk_id, similarity in near]
    else:
        fused = rrf([lexical_ids, vector_ids], options.rrf_k)
    snippet_of = {h.chunk_id: h.snippet for h in lexical_hits}
    if options.snippets:  # a hit that matched no word: the start of its text
        openings = chunk_texts(store, [c for c, _ in fused if c not in snippet_of], SNIPPET_CHARS)
        snippet_of.update((c, text + " …") for c, text in openings.items())
    keyword = set(lexical_ids)
    lexical_rank = {chunk_id: rank for rank, chunk_id in enumerate(lexical_ids, start=1)}
    vector_rank = {chunk_id: rank for rank, chunk_id in enumerate(vector_ids, start=1)}
    similarity = dict(near)
    matrix = vectors.matrix()
    results = describe(store, [(c, score, snippet_of.get(c, "")) for c, score in fused], options)
    fused_score = dict(fused)
    for result in results:
        chunk_id = result.chunk_id
        if chunk_id in similarity:
            result.similarity = similarity[chunk_id]
        else:  # found by its words only: its cosine all the same, if it has a vector
            result.similarity = matrix.similarity(query_vector, result.embed_key)
        result.keyword_match = chunk_id in keyword
        result.lexical_rank = lexical_rank.get(chunk_id)
        result.vector_rank = vector_rank.get(chunk_id)
        result.fused = None if vector_only else fused_score[chunk_id]
    results.sort(key=lambda r: -r.score)
    return results


def _diversified(vectors: VectorTier, results: list[Hit], top_k: int) -> list[Hit]:
    import numpy as np

    matrix = vectors.matrix()
    rows = np.zeros((len(results), matrix.dimension), dtype=np.float32)
    for i, result in enumerate(results):
        row = matrix.row_of.get(result.embed_key or "")
        if row is not None:
            rows[i] = matrix.vectors[row]
    order = mmr([r.score for r in results], rows, top_k)
    return [results[i] for i in order]


def chunk_texts(store: Store, chunk_ids: list[int], chars: int | None = None) -> dict[int, str]:
    """The text of each chunk (its first `chars` characters when given), by chunk id."""
    if not chunk_ids:
        return {}
    body = "body" if chars is None else f"substr(body, 1, {int(chars)})"
    rows = store.db.execute(
        f"SELECT rowid, {body} FROM chunks_fts WHERE rowid IN (SELECT value FROM json_each(?))",
        (json.dumps(chunk_ids),),
    )
    return dict(rows.fetchall())


def describe(store: Store, hits: list[tuple[int, float, str]], options: SearchOptions) -> list[Hit]:
    """Hits for (chunk id, score, snippet), with document, corpus (weight applied), citation."""
    if not hits:
        return []
    cursor = store.db.cursor()
    cursor.row_factory = sqlite3.Row
    rows = {
        row["chunk_id"]: row
        for row in cursor.execute(
            f"SELECT c.id AS chunk_id, {LOCATED_COLUMNS}, k.weight AS weight, c.symbol AS symbol, "
            f"c.kind AS kind, c.embed_key AS embed_key FROM {CHUNKS} "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps([h[0] for h in hits]),),
        )
    }
    results = []
    for chunk_id, score, snippet in hits:
        row = rows.get(chunk_id)
        if row is None:
            continue
        results.append(
            Hit(
                **located_fields(options.rules, row),
                score=score * row["weight"],
                snippet=" ".join(snippet.split()) if options.snippets else None,
                symbol=row["symbol"],
                kind=row["kind"],
                chunk_id=chunk_id,
                embed_key=row["embed_key"],
            )
        )
    return results
