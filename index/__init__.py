"""The local SQLite index: loader, schema, search stages and query modules.

Load records and search them from Python, as the CLI does:

    from pathlib import Path
    from index import Store, load_files, search

    with Store.open(".docs-flatten") as store:
        load_files(store, [Path("corpus.jsonl")], "docs")
        for hit in search(store, "rotate the signing key", top_k=5).results:
            print(hit.token, hit.citation, hit.snippet)
"""

from index.citations import CitationRule, cite, parse_rules
from index.errors import ConfigError, StoreError
from index.loader import LoadReport, load_files
from index.search import SearchResponse, SearchResult, search
from index.store import Store

__all__ = [
    "CitationRule",
    "ConfigError",
    "LoadReport",
    "SearchResponse",
    "SearchResult",
    "Store",
    "StoreError",
    "cite",
    "load_files",
    "parse_rules",
    "search",
]
