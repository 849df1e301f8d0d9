"""Search: named stages composed by one function.

The lexical stage (FTS5 BM25) always runs; with embeddings configured the vector stage runs too
and the two rankings are fused by reciprocal rank fusion. The document stage (index.ranking)
then scores the slices as the pages they belong to and, by default, keeps one hit per page.
When the vector stage cannot run (the
server is down, the index has no vectors yet) a hybrid search degrades to lexical and its
`TierUsed` says why; only a search forced to the vector tier fails instead.
"""

from __future__ import annotations

import json
import sqlite3
import weakref
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from index.citations import CitationRule, citation
from index.declarations import Declaration, collapse, declarations
from index.errors import QueryError
from index.fusion import RRF_K, mmr, rrf
from index.lexical import QueryPlan, Vocabulary, lexical, plan, snippets
from index.ranking import CANDIDATES, Page, Scored, group, locate
from index.ranking import others as others_of
from index.ranking import score as score_pages
from index.results import (
    LOCATED_COLUMNS,
    NO_EMBEDDINGS,
    REQUESTED,
    Hit,
    SearchResponse,
    Tier,
    TierUsed,
    located_fields,
    origin_of,
)
from index.scope import CHUNKS, Filter, Scope, scope_filter
from index.store import Store
from index.textindex import TextQuery, text_index

if TYPE_CHECKING:  # numpy and the vector stage load only when vectors are used
    import numpy as np

    from index.vectors.stage import VectorTier

RERANKERS = ("mmr",)
FUSION_DEPTH = 50  # each stage contributes at least this many candidates to the fusion
SNIPPET_CHARS = 240
OTHER_ANCHORS = 10  # a grouped hit lists at most this many anchors of its other matches


@dataclass(frozen=True)
class SearchOptions:
    """How to search. `tier` forces one of `Tier` (default: hybrid when vectors are given, else
    lexical); `rerank="mmr"` spreads near-duplicates out of the top results.

    Results are pages: at most `per_doc` hits from one document (None: the raw list of slices).
    `paths`, `kinds` and `lang` narrow where to look (see `index.scope.Scope`); `explain` fills
    each hit's `ranking`."""

    top_k: int = 10
    corpus: str | None = None  # only this corpus; None: all of them
    rules: list[CitationRule] = field(default_factory=list)
    snippets: bool = True  # a matching excerpt of each hit (off: `snippet` is None)
    tier: Tier | str | None = None
    rrf_k: int = RRF_K
    rerank: str | None = None
    per_doc: int | None = 1
    paths: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    lang: str | None = None
    explain: bool = False

    @property
    def scope(self) -> Scope:
        return Scope(self.corpus, tuple(self.paths), tuple(self.kinds), self.lang)


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
    if options.per_doc is not None and options.per_doc < 1:
        raise QueryError("per_doc must be at least 1 (None: every slice)", reason="bad-per-doc",
                         value=options.per_doc)  # fmt: skip
    scope = scope_filter(store.db, options.scope)  # an unknown corpus fails before any work
    engine = _engine(store)
    if mode == Tier.LEXICAL or vectors is None:
        why = NO_EMBEDDINGS if vectors is None else REQUESTED
        return _lexical_response(store, query, scope, options, TierUsed(Tier.LEXICAL, reason=why,
                                 engine=engine))  # fmt: skip
    from index.vectors.stage import VectorsUnavailable

    depth = max(options.top_k, FUSION_DEPTH)
    try:
        # The query's words are planned, searched and scored as pages while the vector stage
        # fetches the query's vector and scores the vectors (see `nearest_chunks_alongside`).
        query_vector, near, side = vectors.nearest_chunks_alongside(
            query, depth, scope, lambda: _lexical_side(store, query, scope, depth)
        )  # fmt: skip
    except VectorsUnavailable as exc:
        if mode == Tier.VECTOR:
            from index.vectors.client import EmbeddingError

            raise EmbeddingError(f"vector search unavailable: {exc}",
                                 reason="vectors-unavailable") from exc  # fmt: skip
        used = TierUsed(Tier.LEXICAL, degraded=True, reason=str(exc), engine=engine)
        return _lexical_response(store, query, scope, options, used)
    # In vector mode the lexical candidates only say which hits matched by keyword.
    results = _fused(store, query, query_vector, vectors, side.ranked[:depth], near, side.located,
                     side.expression, options, vector_only=mode == Tier.VECTOR)  # fmt: skip
    used = TierUsed(mode, model=vectors.config.model, dimension=vectors.matrix().dimension,
                    engine=engine)  # fmt: skip
    return SearchResponse(query, used, results, _also(side.planned))


def _also(planned: QueryPlan | None) -> list[str] | None:
    """The words the plan added to the query's (`SearchResponse.also_asked`)."""
    return (planned.implied or None) if planned else None


def _lexical_response(
    store: Store, query: str, scope: Filter, options: SearchOptions, used: TierUsed
) -> SearchResponse:
    planned = plan(store.db, query, _vocabulary(store))
    results = _lexical_only(store, query, planned, scope, options)
    return SearchResponse(query, used, results, _also(planned))


@dataclass(frozen=True)
class _LexicalSide:
    """The lexical half of a hybrid query: its plan, its candidates scored as pages, the text
    query that found them, and the candidates' pages (which serve the fused scoring too)."""

    planned: QueryPlan | None
    ranked: list[Scored]
    expression: TextQuery | None
    located: dict[int, Page]


def _lexical_side(store: Store, query: str, scope: Filter, depth: int) -> _LexicalSide:
    planned = plan(store.db, query, _vocabulary(store))
    stage, expression = _lexical_stage(store, planned, scope, depth)
    located = locate(store.db, [c for c, _ in stage])
    ranked = score_pages(store.db, stage, query, planned, located=located)
    return _LexicalSide(planned, ranked, expression, located)


def _engine(store: Store) -> str | None:
    """The lexical engine when it is not FTS5 (the default, left unsaid in JSON)."""
    name = text_index(store.db).name
    return None if name == "fts5" else name


_VOCABULARIES: weakref.WeakKeyDictionary[Store, Vocabulary] = weakref.WeakKeyDictionary()


def _vocabulary(store: Store) -> Vocabulary:
    """The store's remembered term counts (see `index.lexical.Vocabulary`)."""
    vocabulary = _VOCABULARIES.get(store)
    if vocabulary is None or vocabulary.db is not store.db:
        vocabulary = _VOCABULARIES[store] = Vocabulary(store.db)
    return vocabulary


def _lexical_stage(
    store: Store, planned: QueryPlan | None, scope: tuple[str, list[object]], enough: int
) -> tuple[list[tuple[int, float]], TextQuery | None]:
    """The lexical stage's candidates (chunk id, BM25), and the query that found them."""
    if planned is None:
        return [], None
    hits, expression = lexical(store.db, planned, depth=max(CANDIDATES, enough),
                               enough=enough, scope=scope)  # fmt: skip
    return [(h.chunk_id, h.score) for h in hits], expression


def _lexical_ranked(
    store: Store,
    query: str,
    planned: QueryPlan | None,
    scope: tuple[str, list[object]],
    enough: int,
) -> tuple[list[Scored], TextQuery | None]:
    """The lexical stage's candidates scored as pages, and the query that found them."""
    stage, expression = _lexical_stage(store, planned, scope, enough)
    return score_pages(store.db, stage, query, planned), expression


def _lexical_only(
    store: Store,
    query: str,
    planned: QueryPlan | None,
    scope: tuple[str, list[object]],
    options: SearchOptions,
) -> list[Hit]:
    scored, expression = _lexical_ranked(store, query, planned, scope, options.top_k)
    ranked, found = _as_declarations(store, scored, options)
    chosen = group(ranked, options.top_k, options.per_doc)
    return _shown(store, scored, chosen, expression, options, found)


def _as_declarations(
    store: Store, scored: list[Scored], options: SearchOptions, reach: int | None = None
) -> tuple[list[Scored], dict[int, Declaration] | None]:
    """Results are pages, and within a page declarations: each declaration the slicer cut into
    several slices in one place, at the earliest of them that matched (index.declarations).
    The raw list of slices (`per_doc` None) is left as it is. `reach`: how many documents the
    hits may come from (default `top_k`). Also returns the declarations found there (None: not
    looked for)."""
    if options.per_doc is None:
        return scored, None
    found = _declarations(store, scored, reach or options.top_k)
    if not found:
        return scored, found
    return collapse(scored, lambda s: s.chunk_id, found,
                    lambda s, chunk_id: replace(s, chunk_id=chunk_id)), found  # fmt: skip


def _declarations(store: Store, scored: list[Scored], top_k: int) -> dict[int, Declaration]:
    """The split declarations in the documents the results can come from: the first `top_k`
    documents to appear in `scored` (`group` takes its hits from those), those with code
    only (prose declares nothing)."""
    first = list(dict.fromkeys(s.document_id for s in scored))[:top_k]
    coded = {s.document_id for s in scored if s.symbol is not None} & set(first)
    return declarations(store.db, coded) if coded else {}


def _shown(
    store: Store,
    scored: list[Scored],
    chosen: list[Scored],
    expression: TextQuery | None,
    options: SearchOptions,
    declared: dict[int, Declaration] | None = None,
) -> list[Hit]:
    """The chosen slices as hits: located and cited, with their snippets, and (grouped) the
    other candidate slices of their documents. `declared`: their split declarations, if known."""
    results = describe(store, [(s.chunk_id, s.score) for s in chosen], options, declared)
    by_chunk = {s.chunk_id: s for s in chosen}
    found: dict[int, str] = {}
    if options.snippets:
        if expression is not None:
            found = snippets(store.db, expression, [r.chunk_id for r in results])
        # A hit that matched no word: the start of its text.
        openings = chunk_texts(store, [r.chunk_id for r in results if not found.get(r.chunk_id)],
                               SNIPPET_CHARS)  # fmt: skip
        found.update((c, text + " …") for c, text in openings.items())
    others = others_of(scored, chosen) if options.per_doc is not None else {}
    anchors = _anchors(store, [c for ids in others.values() for c in ids])
    for result in results:
        item = by_chunk[result.chunk_id]
        if options.snippets:
            result.snippet = " ".join(found.get(result.chunk_id, "").split())
        if options.per_doc is not None:
            other = others.get(item.document_id, [])
            listed = dict.fromkeys(a for c in other if (a := anchors.get(c)))
            result.other_matches = len(other)
            result.other_anchors = list(listed)[:OTHER_ANCHORS]
        if options.explain:
            result.ranking = item.ranking
    return results


def _anchors(store: Store, chunk_ids: list[int]) -> dict[int, str]:
    if not chunk_ids:
        return {}
    rows = store.db.execute(
        "SELECT id, anchor FROM chunks WHERE anchor IS NOT NULL AND id IN "
        "(SELECT value FROM json_each(?)) ORDER BY id",
        (json.dumps(chunk_ids),),
    )
    return dict(rows.fetchall())


def _fused(
    store: Store,
    query: str,
    query_vector: np.ndarray,
    vectors: VectorTier,
    lexical_ranked: list[Scored],
    near: list[tuple[int, float]],
    located: dict[int, Page],
    expression: TextQuery | None,
    options: SearchOptions,
    *,
    vector_only: bool,
) -> list[Hit]:
    lexical_ids = [s.chunk_id for s in lexical_ranked]
    vector_ids = [chunk_id for chunk_id, _ in near]
    if vector_only:
        fused = [(chunk_id, similarity) for chunk_id, similarity in near]
    else:
        fused = rrf([lexical_ids, vector_ids], options.rrf_k)
    # The fused ranking holds the lexical field scores already: only the priors again.
    scored = score_pages(store.db, fused, query, None, "cosine" if vector_only else "rrf", located)
    # MMR picks among every page, not the first top_k.
    reach = len(scored) if options.rerank == "mmr" else None
    ranked, found = _as_declarations(store, scored, options, reach)
    if options.rerank == "mmr":
        grouped = group(ranked, len(ranked), options.per_doc)
        chosen = _diversified(store, vectors, grouped, options.top_k)
    else:
        chosen = group(ranked, options.top_k, options.per_doc)
    results = _shown(store, scored, chosen, expression, options, found)
    keyword = set(lexical_ids)
    lexical_rank = {chunk_id: rank for rank, chunk_id in enumerate(lexical_ids, start=1)}
    vector_rank = {chunk_id: rank for rank, chunk_id in enumerate(vector_ids, start=1)}
    similarity = dict(near)
    matrix = vectors.matrix()
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
    return results


def _diversified(
    store: Store, vectors: VectorTier, scored: list[Scored], top_k: int
) -> list[Scored]:
    import numpy as np

    matrix = vectors.matrix()
    keys = dict(
        store.db.execute(
            "SELECT id, embed_key FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
            (json.dumps([s.chunk_id for s in scored]),),
        ).fetchall()
    )
    rows = np.zeros((len(scored), matrix.dimension), dtype=np.float32)
    for i, item in enumerate(scored):
        row = matrix.row_of.get(keys.get(item.chunk_id) or "")
        if row is not None:
            rows[i] = matrix.vectors[row]
    order = mmr([s.score for s in scored], rows, top_k)
    return [scored[i] for i in order]


def chunk_texts(store: Store, chunk_ids: list[int], chars: int | None = None) -> dict[int, str]:
    """The text of each chunk (its first `chars` characters when given), by chunk id."""
    return text_index(store.db).chunk_texts(chunk_ids, chars)


def describe(
    store: Store,
    hits: list[tuple[int, float]],
    options: SearchOptions,
    found: dict[int, Declaration] | None = None,
) -> list[Hit]:
    """Hits for (chunk id, score), in that order, with document, corpus and citation (a slice
    of a split declaration cites the declaration; `found`: those declarations, if known)."""
    if not hits:
        return []
    cursor = store.db.cursor()
    cursor.row_factory = sqlite3.Row
    rows = {
        row["chunk_id"]: row
        for row in cursor.execute(
            f"SELECT c.id AS chunk_id, c.document_id AS document_id, {LOCATED_COLUMNS}, "
            "c.symbol AS symbol, "
            f"c.kind AS kind, c.embed_key AS embed_key FROM {CHUNKS} "
            "WHERE c.id IN (SELECT value FROM json_each(?))",
            (json.dumps([h[0] for h in hits]),),
        )
    }
    cut = found
    if cut is None:
        cut = declarations(store.db, {r["document_id"] for r in rows.values() if r["symbol"]})
    results = []
    for chunk_id, score in hits:
        row = rows.get(chunk_id)
        if row is None:
            continue
        fields = located_fields(options.rules, row)
        whole = cut.get(chunk_id)
        if whole is not None:  # one slice of a longer declaration: cite the declaration
            span = replace(origin_of(row), start_line=whole.start_line, end_line=whole.end_line)
            fields["citation"] = citation(options.rules, span)
        results.append(
            Hit(
                **fields,
                declaration=whole.symbol if whole else None,
                score=score,
                symbol=row["symbol"],
                kind=row["kind"],
                chunk_id=chunk_id,
                embed_key=row["embed_key"],
            )
        )
    return results
