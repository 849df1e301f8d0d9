"""Search: named stages composed by one function. Today the lexical stage; the vector stage and
fusion join here later without changing what callers get back."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from index.citations import CitationRule, cite
from index.lexical import lexical
from index.store import Store
from index.text import safe_display

LEXICAL_TIER = "tier: lexical (FTS5) - no embeddings configured"


@dataclass
class SearchResult:
    token: str  # `<source>#<ordinal>`: the raw citation token, an index key
    source: str
    ordinal: int
    title: str
    section: list[str]
    anchor: str | None
    start_line: int | None
    end_line: int | None
    score: float
    corpus: str
    citation: str | None  # the mapped citation, when a rule matched
    snippet: str
    symbol: str | None = None
    kind: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "token": self.token,
            "source": self.source,
            "ordinal": self.ordinal,
            "title": self.title,
            "section": self.section,
            "anchor": self.anchor,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "score": round(self.score, 4),
            "corpus": self.corpus,
            "citation": self.citation,
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
        results.append(
            SearchResult(
                token=f"{source}#{ordinal}",
                source=source,
                ordinal=ordinal,
                title=safe_display(title),
                section=json.loads(section) if section else [],
                anchor=anchor,
                start_line=start,
                end_line=end,
                score=score * weight,
                corpus=corpus,
                citation=cite(
                    rules, source, corpus=corpus, ordinal=ordinal, heading=title, anchor=anchor
                ),
                snippet=safe_display(" ".join(snippet.split())),
                symbol=symbol,
                kind=kind,
            )
        )
    return results
