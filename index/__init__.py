"""The local SQLite index: loader, schema, search stages, query modules and the agent surface.

Load records and search them from Python, as the CLI does:

    from flatten import FlattenOptions, flatten_root
    from index import Store, load_records, search

    with Store.open(".docs-flatten") as store:
        load_records(store, flatten_root("docs/", FlattenOptions()), "docs")
        for hit in search(store, "rotate the signing key", top_k=5).results:
            print(hit.token, hit.citation, hit.snippet)

With embeddings: `embed_pending(store, EmbeddingConfig(...))` after a load, then
`search(..., vectors=VectorTier(store, config))` for hybrid results. `Knowledge` answers as the
MCP tools do (framed, capped, secret-free JSON).
"""

from index.agent import Knowledge
from index.citations import CitationRule, cite, parse_rules
from index.embed import EmbedReport, embed_pending
from index.embeddings import EmbeddingConfig, EmbeddingError, IdentityMismatch
from index.errors import ConfigError, StoreError
from index.loader import LoadReport, load_files, load_records
from index.queries import get, match, show, sources, toc
from index.search import SearchResponse, SearchResult, search
from index.store import Store
from index.vector_search import VectorTier

__all__ = [
    "CitationRule",
    "ConfigError",
    "EmbedReport",
    "EmbeddingConfig",
    "EmbeddingError",
    "IdentityMismatch",
    "Knowledge",
    "LoadReport",
    "SearchResponse",
    "SearchResult",
    "Store",
    "StoreError",
    "VectorTier",
    "cite",
    "embed_pending",
    "get",
    "load_files",
    "load_records",
    "match",
    "parse_rules",
    "search",
    "show",
    "sources",
    "toc",
]
