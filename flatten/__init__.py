"""docs-flatten: turn documentation and code into a searchable, citable corpus.

The library API the CLI is built on: `flatten_root` (a folder), `flatten_repo` (a git
repository) and `flatten_url` (a documentation site) each yield v1 records.

    from flatten import FlattenOptions, flatten_root

    for record in flatten_root("docs/", FlattenOptions(kind="docs")):
        print(record.id, record.title, record.to_dict())
"""

from flatten.errors import FlattenError, NothingToFlatten, OutputError, SourceError, UsageError
from flatten.pipeline import FlattenOptions, flatten_repo, flatten_root, flatten_url
from flatten.profiles import PROFILES
from flatten.record import Provenance, Record
from flatten.report import RunReport
from flatten.writer import write_jsonl

__version__ = "0.1.0"

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
    "flatten_repo",
    "flatten_root",
    "flatten_url",
    "write_jsonl",
]
