"""Search: named stages composed by one function.

The lexical stage (FTS5 BM25) always runs; with embeddings configured the vector stage runs too
and the two rankings are fused by reciprocal rank fusion. When the vector stage cannot run (the
server is down, the index has no vectors yet) a hybrid search degrades to lexical and its tier
line says why; only a search forced to `--tier vector` fails instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flatten.errors import UsageError
from index.citations import CitationRule
from index.fusion import RRF_K, mmr, rrf
from index.lexical import lexical
from index.results import Located, located_fields
from index.store import Store
from index.text import safe_display
from index.vectors.client import EmbeddingError

if TYPE_CHECKING:  # numpy and the vector stage load only when vectors are used
    import numpy as np

    from index.vectors.stage import VectorTier

LEXICAL_TIER = "tier: lexical (FTS5) - no embeddings configured"
TIERS = ("lexical", "vector", "hybrid")
FUSION_DEPTH = 50  # each stage contributes at least this many candidates to the fusion
SNIPPET_CHARS = 240


@dataclass
class SearchResult(Located):
    score: float = 0.0
    snippet: str = ""
    symbol: str | None = None
    kind: str | None = None
    similarity: float | None = None  # cosine to the query, where the vector stage ran
    # Among the lexical stage's candidates (its best max(top_k, 50) by BM25: every chunk holding
    # the query's words when fewer match), where vectors ran.
    keyword_match: bool | None = None
    lexical_rank: int | None = None  # ranks in each stage and the fused score, for --explain
    vector_rank: int | None = None
    fused: float | None = None
    chunk_id: int = 0  # the store's row id and its vector's key: internal, never shown
    embed_key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            **self.located_dict(),
            "score": round(self.score, 4),
            "snippet": self.snippet,
            "symbol": self.symbol,
            "kind": self.kind,
        }
        if self.similarity is not None or self.keyword_match is not None:
            data["similarity"] = None if self.similarity is None else round(self.similarity, 4)
            data["keywordMatch"] = self.keyword_match
            data["lexicalRank"] = self.lexical_rank
            data["vectorRank"] = self.vector_rank
            data["fused"] = None if self.fused is None else round(self.fused, 6)
        return data


@dataclass
class SearchResponse:
    query: str
    tier: str
    results: list[SearchResult] = field(default_factory=list)
    degraded: str | None = None  # why the vector stage did not run, when it should have


def search_mode(tier: str | None, rerank: str | None, has_vectors: bool) -> str:
    """The tier a search runs at, or `UsageError` for settings that cannot work together."""
    mode = tier or ("hybrid" if has_vectors else "lexical")
    if mode not in TIERS:
        raise UsageError(f"unknown tier {mode!r} (one of {', '.join(TIERS)})", reason="bad-tier")
    if rerank not in (None, "mmr"):
        raise UsageError(f"unknown re-ranker {rerank!r} (mmr)", reason="bad-rerank")
    hint = (
        "set embeddings.base_url and embeddings.model in docs-flatten.yaml, or pass "
        "--base-url and --model"
    )
    if mode != "lexical" and not has_vectors:
        raise UsageError(f"--tier {mode} needs embeddings", reason="no-embeddings", hint=hint)
    if rerank and mode == "lexical":
        raise UsageError("--rerank mmr needs vectors: configure embeddings, and not "
                         "--tier lexical", reason="no-embeddings", hint=hint)  # fmt: skip
    return mode


def search(
    store: Store,
    query: str,
    *,
    top_k: int = 10,
    corpus: str | None = None,
    rules: list[CitationRule] | None = None,
    snippets: bool = True,
    vectors: VectorTier | None = None,
    tier: str | None = None,
    rrf_k: int = RRF_K,
    rerank: str | None = None,
) -> SearchResponse:
    """Ranked chunks for `query`: hybrid when `vectors` is given, else lexical.

    `tier` forces one of `TIERS`; `rerank="mmr"` spreads near-duplicates out of the top results.
    """
    mode = search_mode(tier, rerank, vectors is not None)
    rules = rules or []
    if mode == "lexical" or vectors is None:
        line = LEXICAL_TIER if vectors is None else "tier: lexical (FTS5) - forced by --tier"
        return SearchResponse(query, line, _lexical_only(store, query, top_k, corpus, rules,
                                                          snippets))  # fmt: skip
    from index.vectors.stage import VectorsUnavailable

    depth = max(top_k, FUSION_DEPTH)
    try:
        query_vector, near = vectors.nearest_chunks(query, depth, corpus)
    except VectorsUnavailable as exc:
        if mode == "vector":
            raise EmbeddingError(f"vector search unavailable: {exc}",
                                 reason="vectors-unavailable") from exc  # fmt: skip
        line = f"tier: hybrid -> DEGRADED to lexical ({exc})"
        results = _lexical_only(store, query, top_k, corpus, rules, snippets)
        return SearchResponse(query, line, results, degraded=str(exc))
    # In vector mode the lexical candidates only say which hits matched by keyword.
    lexical_hits = lexical(store.db, query, top_k=depth, corpus=corpus, snippets=snippets)
    results = _fused(store, query_vector, vectors, lexical_hits, near, rrf_k, rules, snippets,
                     vector_only=mode == "vector")  # fmt: skip
    if rerank == "mmr":
        results = _diversified(vectors, results, top_k)
    line = (
        f"tier: hybrid (FTS5 + vectors, RRF) - {vectors.describe()}"
        if mode == "hybrid"
        else f"tier: vector - {vectors.describe()}"
    )
    return SearchResponse(query, line, results[:top_k])


def _lexical_only(
    store: Store,
    query: str,
    top_k: int,
    corpus: str | None,
    rules: list[CitationRule],
    snippets: bool,
) -> list[SearchResult]:
    hits = lexical(store.db, query, top_k=top_k, corpus=corpus, snippets=snippets)
    results = describe(store, [(h.chunk_id, h.score, h.snippet) for h in hits], rules)
    results.sort(key=lambda r: -r.score)
    return results[:top_k]


def _fused(
    store: Store,
    query_vector: np.ndarray,
    vectors: VectorTier,
    lexical_hits: list[Any],
    near: list[tuple[int, float]],
    rrf_k: int,
    rules: list[CitationRule],
    snippets: bool,
    *,
    vector_only: bool,
) -> list[SearchResult]:
    lexical_ids = [h.chunk_id for h in lexical_hits]
    vector_ids = [chunk_id for chunk_id, _ in near]
    if vector_only:
        fused = [(chunk_id, similarity) for chunk_id, similarity in near]
    else:
        fused = rrf([lexical_ids, vector_ids], rrf_k)
    snippet_of = {h.chunk_id: h.snippet for h in lexical_hits}
    if snippets:  # a hit that matched no word: the start of its text
        openings = chunk_texts(store, [c for c, _ in fused if c not in snippet_of], SNIPPET_CHARS)
        snippet_of.update((c, text + " …") for c, text in openings.items())
    keyword = set(lexical_ids)
    lexical_rank = {chunk_id: rank for rank, chunk_id in enumerate(lexical_ids, start=1)}
    vector_rank = {chunk_id: rank for rank, chunk_id in enumerate(vector_ids, start=1)}
    similarity = dict(near)
    matrix = vectors.matrix()
    results = describe(store, [(c, score, snippet_of.get(c, "")) for c, score in fused], rules)
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


def _diversified(
    vectors: VectorTier, results: list[SearchResult], top_k: int
) -> list[SearchResult]:
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


def describe(
    store: Store, hits: list[tuple[int, float, str]], rules: list[CitationRule]
) -> list[SearchResult]:
    """Results for chunk ids, with their document, corpus (weight applied) and citation."""
    if not hits:
        return []
    rows = {
        row[0]: row
        for row in store.db.execute(
            "SELECT c.id, d.source, c.ordinal, c.title, c.section, c.anchor, c.start_line, "
            "c.end_line, k.name, k.weight, c.symbol, c.kind, c.embed_key FROM chunks c "
            "JOIN documents d ON d.id = c.document_id JOIN corpora k ON k.id = d.corpus_id "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps([h[0] for h in hits]),),
        )
    }
    results = []
    for chunk_id, score, snippet in hits:
        row = rows.get(chunk_id)
        if row is None:
            continue
        (
            _,
            source,
            ordinal,
            title,
            section,
            anchor,
            start,
            end,
            corpus,
            weight,
            symbol,
            kind,
            key,
        ) = row
        fields = located_fields(rules, source, corpus, ordinal, title, section, anchor, start, end)
        results.append(
            SearchResult(
                **fields,
                score=score * weight,
                snippet=safe_display(" ".join(snippet.split())),
                symbol=symbol,
                kind=kind,
                chunk_id=chunk_id,
                embed_key=key,
            )
        )
    return results
