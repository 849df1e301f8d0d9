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

import sys
import types
from typing import TYPE_CHECKING, Any

from flatten._lazy import lazy_getattr

# Public name -> module. Loaded on first use, so `import index` (and the CLI's start-up) does
# not pay for numpy, httpx or the agent surface until they are needed.
_EXPORTS = {
    "SearchOptions": "index.search",
    "search": "index.search",
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
    "CorpusSourceMismatch": "index.corpus_source",
    "StoreError": "index.errors",
    "EmptyInput": "index.loader",
    "LoadReport": "index.loader",
    "drop_corpus": "index.drop",
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
    "CorpusSourceMismatch",
    "EmbedReport",
    "EmbeddingConfig",
    "EmbeddingError",
    "EmptyInput",
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
    "drop_corpus",
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


class _Package(types.ModuleType):
    """`search` is both a function and the module it lives in. Importing the module binds it
    on the package as `search`, which would hide the function from `from index import search`;
    the package keeps the function instead (the module stays in sys.modules as index.search)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "search" and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
    from index.agent import Knowledge
    from index.citations import CitationRule, cite, parse_rules
    from index.corpus_source import CorpusSourceMismatch
    from index.documents import get, match, show, sources, toc
    from index.drop import drop_corpus
    from index.errors import ConfigError, StoreError
    from index.ingest import IngestOptions, IngestReport, ingest_files, ingest_records
    from index.loader import EmptyInput, LoadReport, load_files, load_records
    from index.results import Hit, SearchResponse, Tier, TierUsed
    from index.search import SearchOptions, search
    from index.store import Store
    from index.vectors.backfill import EmbedReport, embed_pending
    from index.vectors.client import EmbeddingConfig, EmbeddingError, IdentityMismatch
    from index.vectors.stage import VectorTier
