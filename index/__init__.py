"""The local SQLite index: loader, schema, search stages, query modules and the agent surface.

Load records and search them from Python, as the CLI does:

    from flatten import FlattenOptions, flatten_root
    from index import SearchOptions, Store, load_records, search

    with Store.open(".docs-flatten") as store:
        load_records(store, flatten_root("docs/", FlattenOptions()), "docs")
        for hit in search(store, "rotate the signing key", SearchOptions(top_k=5)).results:
            print(hit.token, hit.citation, hit.snippet)

With embeddings: `embed_pending(store, EmbeddingConfig(...))` after a load, then
`search(..., vectors=VectorTier(store, config))` for hybrid results. `Knowledge` answers as the
MCP tools do (framed, capped, secret-free JSON).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flatten._lazy import lazy_getattr

# Eager: `search` is also the name of its module, which would shadow the function on the
# package once `index.search` is imported anywhere.
from index.search import SearchOptions, search

# Public name -> module. Loaded on first use, so `import index` (and the CLI's start-up) does
# not pay for numpy, httpx or the agent surface until they are needed.
_EXPORTS = {
    "Knowledge": "index.agent",
    "Hit": "index.results",
    "SearchResponse": "index.results",
    "Tier": "index.results",
    "TierUsed": "index.results",
    "CitationRule": "index.citations",
    "cite": "index.citations",
    "parse_rules": "index.citations",
    "EmbedReport": "index.vectors.backfill",
    "embed_pending": "index.vectors.backfill",
    "EmbeddingConfig": "index.vectors.client",
    "EmbeddingError": "index.vectors.client",
    "IdentityMismatch": "index.vectors.client",
    "ConfigError": "index.errors",
    "StoreError": "index.errors",
    "LoadReport": "index.loader",
    "load_files": "index.loader",
    "load_records": "index.loader",
    "IngestOptions": "index.ingest",
    "IngestReport": "index.ingest",
    "ingest_files": "index.ingest",
    "ingest_records": "index.ingest",
    "get": "index.documents",
    "match": "index.documents",
    "show": "index.documents",
    "sources": "index.documents",
    "toc": "index.documents",
    "Store": "index.store",
    "VectorTier": "index.vectors.stage",
}

__all__ = [
    "CitationRule",
    "ConfigError",
    "EmbedReport",
    "EmbeddingConfig",
    "EmbeddingError",
    "Hit",
    "IdentityMismatch",
    "IngestOptions",
    "IngestReport",
    "Knowledge",
    "LoadReport",
    "SearchOptions",
    "SearchResponse",
    "Store",
    "StoreError",
    "Tier",
    "TierUsed",
    "VectorTier",
    "cite",
    "embed_pending",
    "get",
    "ingest_files",
    "ingest_records",
    "load_files",
    "load_records",
    "match",
    "parse_rules",
    "search",
    "show",
    "sources",
    "toc",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
    from index.agent import Knowledge
    from index.citations import CitationRule, cite, parse_rules
    from index.documents import get, match, show, sources, toc
    from index.errors import ConfigError, StoreError
    from index.ingest import IngestOptions, IngestReport, ingest_files, ingest_records
    from index.loader import LoadReport, load_files, load_records
    from index.results import Hit, SearchResponse, Tier, TierUsed
    from index.store import Store
    from index.vectors.backfill import EmbedReport, embed_pending
    from index.vectors.client import EmbeddingConfig, EmbeddingError, IdentityMismatch
    from index.vectors.stage import VectorTier
