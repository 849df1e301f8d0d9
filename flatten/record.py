"""The v1 record: one slice of one document with its provenance (the JSONL wire contract).

This module is the one place that knows the record's field names. The seven fields ChatCLI reads
(`id, source, title, content, chunkSize, repoUrl, commit`) are always present; the extensions are
written only when they have a value, as flat scalars or short lists so vector stores keep them.

Format-specific fields come from the slicer as `meta` pairs, among them `lineUnit: "cell"` on
notebook slices: their `startLine`/`endLine` are 1-based cell numbers, not lines of the file's
JSON. Without `lineUnit`, ranges are lines. API-spec operations carry `schemas` (the names of
the schemas they reference); Kubernetes manifests `apiVersion` and `namespace`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RECORD_VERSION = 1


@dataclass(frozen=True)
class Provenance:
    """Where a run's documents came from: credentials are stripped before this is built."""

    repo_url: str | None = None
    commit: str | None = None
    ref: str | None = None


@dataclass(frozen=True)
class Record:
    source: str
    ordinal: int  # 1-based position of the slice in its document
    title: str
    content: str
    kind: str
    hash: str
    doc_hash: str
    provenance: Provenance = Provenance()
    lang: str | None = None
    doc_title: str | None = None
    section: tuple[str, ...] = ()
    anchor: str | None = None
    symbol: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    url: str | None = None
    redactions: int = 0
    syntax_error: bool = False
    meta: tuple[tuple[str, str], ...] = ()  # format-specific fields (YAML: apiVersion, namespace)

    @property
    def id(self) -> str:
        return f"{self.source}#{self.ordinal}"

    @property
    def chunk_size(self) -> int:
        return len(self.content.encode("utf-8"))

    def to_dict(self) -> dict[str, Any]:
        """The native layout, keys in a fixed order so output is byte-for-byte deterministic."""
        data: dict[str, Any] = {
            "id": self.id,
            "source": self.source,
            "title": self.title,
            "content": self.content,
            "chunkSize": self.chunk_size,
            "repoUrl": self.provenance.repo_url,
            "commit": self.provenance.commit,
        }
        data.update(self.metadata())
        return data

    def metadata(self) -> dict[str, Any]:
        """The extension fields that have a value."""
        optional: dict[str, Any] = {
            "kind": self.kind,
            "lang": self.lang,
            "docTitle": self.doc_title,
            "section": list(self.section) or None,
            "anchor": self.anchor,
            "symbol": self.symbol,
            "startLine": self.start_line,
            "endLine": self.end_line,
            "ordinal": self.ordinal,
            "hash": self.hash,
            "docHash": self.doc_hash,
            "ref": self.provenance.ref,
            "url": self.url,
            "redactions": self.redactions or None,
            "syntaxError": self.syntax_error or None,
            **dict(self.meta),
        }
        return {k: v for k, v in optional.items() if v is not None}
