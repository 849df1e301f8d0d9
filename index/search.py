"""Search: named stages composed by one function. Today the lexical stage; the vector stage and
fusion join here later without changing what callers get back."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from index.citations import CitationRule
from index.lexical import lexical
from index.located import Located, located_fields
from index.store import Store
from index.text import safe_display

LEXICAL_TIER = "tier: lexical (FTS5) - no embeddings configured"


@dataclass
class SearchResult(Located):
    score: float = 0.0
    snippet: str = ""
    symbol: str | None = None
    kind: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.located_dict(),
            "score": round(self.score, 4),
            "snippet": self.snippet,
            "symbol": self.symbol,
            "kind": self.kind,
        }


@dataclass
class SearchResponse:
    query: str
    tier: str
    results: list[SearchResult] = field(default_factory=list)


def search(
    store: Store,
    query: str,
    *,
    top_k: int = 10,
    corpus: str | None = None,
    rules: list[CitationRule] | None = None,
    snippets: bool = True,
) -> SearchResponse:
    hits = lexical(store.db, query, top_k=top_k, corpus=corpus, snippets=snippets)
    results = describe(store, [(h.chunk_id, h.score, h.snippet) for h in hits], rules or [])
    results.sort(key=lambda r: -r.score)
    return SearchResponse(query, LEXICAL_TIER, results[:top_k])


def describe(
    store: Store, hits: list[tuple[int, float, str]], rules: list[CitationRule]
) -> list[SearchResult]:
    """Results for chunk ids, with their document, corpus (weight applied) and citation."""
    if not hits:
        return []
    ids = [h[0] for h in hits]
    marks = ",".join("?" * len(ids))
    rows = {
        row[0]: row
        for row in store.db.execute(
            "SELECT c.id, d.source, c.ordinal, c.title, c.section, c.anchor, c.start_line, "
            "c.end_line, k.name, k.weight, c.symbol, c.kind FROM chunks c "
            "JOIN documents d ON d.id = c.document_id JOIN corpora k ON k.id = d.corpus_id "
            f"WHERE c.id IN ({marks})",
            ids,
        )
    }
    results = []
    for chunk_id, score, snippet in hits:
        row = rows.get(chunk_id)
        if row is None:
            continue
        _, source, ordinal, title, section, anchor, start, end, corpus, weight, symbol, kind = row
        fields = located_fields(rules, source, corpus, ordinal, title, section, anchor, start, end)
        results.append(
            SearchResult(
                **fields,
                score=score * weight,
                snippet=safe_display(" ".join(snippet.split())),
                symbol=symbol,
                kind=kind,
            )
        )
    return results
