"""docs-flatten: turn documentation and code into a searchable, citable corpus.

The library API the CLI is built on: `flatten_root` (a folder), `flatten_repo` (a git
repository) and `flatten_url` (a documentation site) each yield v1 records.

    from flatten import FlattenOptions, flatten_root

    for record in flatten_root("docs/", FlattenOptions(kind="docs")):
        print(record.id, record.title, record.to_dict())

`corpus_source("repo" | "root" | "url", value)` names what a corpus is a snapshot of, as the
store keeps it: `index.load_records(..., source=...)` refuses to load another source into a
corpus unless `replace=True`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flatten._lazy import lazy_getattr
from flatten._version import __version__

# Public name -> module, loaded on first use: `import flatten.errors` (as `index` and `crawl` do)
# must not pull in the pipeline, the slicers and tree-sitter.
_EXPORTS = {
    "FlattenError": "flatten.errors",
    "NothingToFlatten": "flatten.errors",
    "OutputError": "flatten.errors",
    "SourceError": "flatten.errors",
    "UsageError": "flatten.errors",
    "FlattenOptions": "flatten.options",
    "corpus_source": "flatten.corpus_sources",
    "flatten_repo": "flatten.pipeline",
    "flatten_root": "flatten.pipeline",
    "flatten_url": "flatten.pipeline",
    "PROFILES": "flatten.record",
    "Provenance": "flatten.record",
    "Record": "flatten.record",
    "RunReport": "flatten.report",
    "write_jsonl": "flatten.writer",
}

__all__ = [
    "PROFILES",
    "FlattenError",
    "FlattenOptions",
    "NothingToFlatten",
    "OutputError",
    "Provenance",
    "Record",
    "RunReport",
    "SourceError",
    "UsageError",
    "__version__",
    "corpus_source",
    "flatten_repo",
    "flatten_root",
    "flatten_url",
    "write_jsonl",
]


__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
    from flatten.corpus_sources import corpus_source
    from flatten.errors import FlattenError, NothingToFlatten, OutputError, SourceError, UsageError
    from flatten.options import FlattenOptions
    from flatten.pipeline import flatten_repo, flatten_root, flatten_url
    from flatten.record import PROFILES, Provenance, Record
    from flatten.report import RunReport
    from flatten.writer import write_jsonl
