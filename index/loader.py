"""Load JSONL records into the index: incremental, keyed by content, one transaction per run.

Pass 1 reads every line once: malformed lines are counted with their line numbers and never stop
the load; each document (corpus, source) gets a fingerprint over its records (content by hash),
and only line offsets are kept. Documents whose fingerprint is unchanged are skipped. Pass 2
reads back just the lines of new and changed documents and replaces those documents. A load is a
complete snapshot of its corpus unless `partial`: documents it does not mention are removed.

Our own records load, and so do foreign ones: LangChain (`page_content` + `metadata`),
LlamaIndex (`text` + `metadata`), Haystack (`content` + `meta`), and plain `{"text": ...}` lines.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from flatten.hashing import sha256_hex
from index.store import Store
from index.text import identifier_parts

MAX_LINE_BYTES = 16 << 20  # a longer line is reported, not parsed
_ID_ORDINAL = re.compile(r"^(.*)#(\d+)$")
_KNOWN_FIELDS = {
    "id",
    "id_",
    "_id",
    "source",
    "title",
    "content",
    "text",
    "page_content",
    "chunkSize",
    "repoUrl",
    "commit",
    "kind",
    "lang",
    "docTitle",
    "section",
    "anchor",
    "symbol",
    "startLine",
    "endLine",
    "ordinal",
    "hash",
    "docHash",
    "ref",
    "url",
    "permalink",
    "redactions",
    "syntaxError",
    "metadata",
    "meta",
}


class Malformed(ValueError):
    """A line that cannot be loaded; the message says why."""


@dataclass
class Chunk:
    source: str
    ordinal: int
    content: str
    title: str
    hash: str
    section: list[str] = field(default_factory=list)
    anchor: str | None = None
    symbol: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    kind: str | None = None
    lang: str | None = None
    doc_title: str | None = None
    url: str | None = None
    repo_url: str | None = None
    commit: str | None = None
    ref: str | None = None
    doc_hash: str | None = None
    redactions: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


def _str(value: Any, name: str, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise Malformed(f"missing {name}")
        return None
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    raise Malformed(f"{name} must be a string, not {type(value).__name__}")


def _int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.isdigit():
            return int(value)
        raise Malformed(f"{name} must be an integer")
    return value


def normalize(obj: Any, fallback_source: str) -> Chunk:
    """One JSON value as a chunk, or `Malformed` with the reason."""
    if not isinstance(obj, dict):
        raise Malformed("not a JSON object")
    nested = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else obj.get("meta")
    data: dict[str, Any] = {**(nested if isinstance(nested, dict) else {}), **obj}
    content = next((data[k] for k in ("content", "text", "page_content") if k in data), None)
    if not isinstance(content, str):
        raise Malformed("no text: expected content, text or page_content as a string")
    if not content.strip():
        raise Malformed("empty content")
    raw_id = _str(data.get("id") or data.get("id_") or data.get("_id"), "id")
    id_match = _ID_ORDINAL.match(raw_id) if raw_id else None
    source = (
        _str(data.get("source") or data.get("url"), "source")
        or (id_match.group(1) if id_match else raw_id)
        or fallback_source
    )
    ordinal = _int(data.get("ordinal"), "ordinal")
    if ordinal is None and id_match and id_match.group(1) == source:
        ordinal = int(id_match.group(2))
    section = data.get("section")
    if isinstance(section, str):
        section = [part for part in section.split(" > ") if part]
    elif section is None:
        section = []
    elif not (isinstance(section, list) and all(isinstance(s, str) for s in section)):
        raise Malformed("section must be a list of strings")
    meta = {
        k: v
        for k, v in data.items()
        if k not in _KNOWN_FIELDS and isinstance(v, str | int | float | bool)
    }
    return Chunk(
        source=source,
        ordinal=ordinal if ordinal is not None else -1,  # -1: numbered in order of appearance
        content=content,
        title=_str(data.get("title"), "title") or _str(data.get("docTitle"), "docTitle") or source,
        hash=sha256_hex(content),
        section=section,
        anchor=_str(data.get("anchor"), "anchor"),
        symbol=_str(data.get("symbol"), "symbol"),
        start_line=_int(data.get("startLine"), "startLine"),
        end_line=_int(data.get("endLine"), "endLine"),
        kind=_str(data.get("kind"), "kind"),
        lang=_str(data.get("lang"), "lang"),
        doc_title=_str(data.get("docTitle"), "docTitle"),
        url=_str(data.get("url") or data.get("permalink"), "url"),
        repo_url=_str(data.get("repoUrl"), "repoUrl"),
        commit=_str(data.get("commit"), "commit"),
        ref=_str(data.get("ref"), "ref"),
        doc_hash=_str(data.get("docHash"), "docHash"),
        redactions=_int(data.get("redactions"), "redactions") or 0,
        meta=meta,
    )


@dataclass
class LoadReport:
    corpus: str = ""
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0  # chunks written (new and changed documents)
    lines: int = 0
    malformed: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, reason)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "chunks": self.chunks,
            "lines": self.lines,
            "malformed": len(self.malformed),
            "malformedLines": [{"file": f, "line": n, "reason": r} for f, n, r in self.malformed],
            "seconds": round(self.seconds, 3),
        }

    def summary(self) -> str:
        head = (
            f"{self.corpus}: {self.added:,} added, {self.updated:,} updated, "
            f"{self.unchanged:,} unchanged, {self.removed:,} removed, "
            f"{len(self.malformed):,} malformed ({self.chunks:,} chunks written, "
            f"{self.seconds:.2f} s)"
        )
        shown = [f"  {f}:{n}: {r}" for f, n, r in self.malformed[:10]]
        more = len(self.malformed) - len(shown)
        return "\n".join([head, *shown] + ([f"  ... and {more} more"] if more > 0 else []))


@dataclass
class _Doc:
    hasher: Any
    lines: list[tuple[int, int, int]] = field(default_factory=list)  # (file, offset, ordinal)
    ordinals: set[int] = field(default_factory=set)


def _read_lines(handle: IO[bytes]) -> Iterator[tuple[int, int, bytes | None]]:
    """(line number, offset, line bytes or None when over the size limit)."""
    number = 0
    while True:
        offset = handle.tell()
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # skip the rest of an oversized line
                line = handle.readline(1 << 20)
            yield number, offset, None
            continue
        yield number, offset, line


def _parse(line: bytes, fallback_source: str) -> Chunk:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Malformed(f"invalid UTF-8 at byte {exc.start}") from exc
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Malformed(f"bad JSON: {exc.msg} (column {exc.colno})") from exc
    return normalize(obj, fallback_source)


def load_files(
    store: Store,
    paths: list[Path],
    corpus: str,
    *,
    partial: bool = False,
    reindex: bool = False,
) -> LoadReport:
    """Load JSONL files into `corpus` in one transaction."""
    started = time.perf_counter()
    report = LoadReport(corpus=corpus)
    handles = [open(path, "rb") for path in paths]  # noqa: SIM115 - closed below
    try:
        docs: dict[str, _Doc] = {}
        provenance: dict[str, str | None] = {}
        for index, (path, handle) in enumerate(zip(paths, handles, strict=True)):
            for number, offset, line in _read_lines(handle):
                report.lines += 1
                if line is None:
                    report.malformed.append((path.name, number, "line longer than 16 MiB"))
                    continue
                if not line.strip():
                    continue
                try:
                    chunk = _parse(line, f"{path.name}#L{number}")
                except Malformed as exc:
                    report.malformed.append((path.name, number, str(exc)))
                    continue
                doc = docs.setdefault(chunk.source, _Doc(hashlib.sha256()))
                ordinal = chunk.ordinal if chunk.ordinal >= 0 else len(doc.lines) + 1
                if ordinal in doc.ordinals:
                    report.malformed.append(
                        (path.name, number, f"duplicate {chunk.source}#{ordinal}")
                    )
                    continue
                chunk.ordinal = ordinal
                doc.ordinals.add(ordinal)
                doc.lines.append((index, offset, ordinal))
                # The raw line, not a re-serialisation: cheaper, and our output is deterministic.
                doc.hasher.update(line.rstrip(b"\r\n"))
                doc.hasher.update(b"\n")
                if not provenance:
                    provenance = {"repo": chunk.repo_url, "commit": chunk.commit, "ref": chunk.ref}
        with store.write() as db:
            _apply(db, handles, docs, corpus, provenance, report, partial, reindex)
    finally:
        for handle in handles:
            handle.close()
    report.seconds = time.perf_counter() - started
    return report


def _apply(
    db: sqlite3.Connection,
    handles: list[IO[bytes]],
    docs: dict[str, _Doc],
    corpus: str,
    provenance: dict[str, str | None],
    report: LoadReport,
    partial: bool,
    reindex: bool,
) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    db.execute(
        "INSERT INTO corpora (name, repo_url, commit_sha, ref, indexed_at) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT(name) DO UPDATE SET repo_url = excluded.repo_url, "
        "commit_sha = excluded.commit_sha, ref = excluded.ref, indexed_at = excluded.indexed_at",
        (corpus, provenance.get("repo"), provenance.get("commit"), provenance.get("ref"), now),
    )
    corpus_id = db.execute("SELECT id FROM corpora WHERE name = ?", (corpus,)).fetchone()[0]
    existing = {
        source: (doc_id, fingerprint)
        for doc_id, source, fingerprint in db.execute(
            "SELECT id, source, fingerprint FROM documents WHERE corpus_id = ?", (corpus_id,)
        )
    }
    if reindex:
        for doc_id, _ in existing.values():
            _delete_document(db, doc_id)
        existing = {}
    writer = _BatchWriter(db)
    for source, doc in docs.items():
        fingerprint = doc.hasher.hexdigest()
        current = existing.get(source)
        if current and current[1] == fingerprint:
            report.unchanged += 1
            continue
        if current:
            _delete_document(db, current[0])
            report.updated += 1
        else:
            report.added += 1
        chunks = sorted(
            (_reread(handles[f], offset, source, ordinal) for f, offset, ordinal in doc.lines),
            key=lambda c: c.ordinal,
        )
        writer.add(corpus_id, source, fingerprint, chunks, now)
        report.chunks += len(chunks)
    writer.flush()
    if not partial:
        for source, (doc_id, _) in existing.items():
            if source not in docs:
                _delete_document(db, doc_id)
                report.removed += 1


def _reread(handle: IO[bytes], offset: int, source: str, ordinal: int) -> Chunk:
    handle.seek(offset)
    chunk = _parse(handle.readline(MAX_LINE_BYTES + 1), source)
    chunk.source, chunk.ordinal = source, ordinal
    return chunk


def _delete_document(db: sqlite3.Connection, doc_id: int) -> None:
    rows = db.execute(
        "SELECT c.id, f.body FROM chunks c JOIN chunks_fts f ON f.rowid = c.id "
        "WHERE c.document_id = ?",
        (doc_id,),
    ).fetchall()
    db.executemany(
        "INSERT INTO chunks_exact (chunks_exact, rowid, body) VALUES ('delete', ?, ?)", rows
    )
    db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(r[0],) for r in rows])
    db.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
    db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


class _BatchWriter:
    """Inserts documents and chunks in batches, with ids assigned here (no round trip per row)."""

    BATCH = 2000

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.next_doc = db.execute("SELECT coalesce(max(id), 0) + 1 FROM documents").fetchone()[0]
        self.next_chunk = db.execute("SELECT coalesce(max(id), 0) + 1 FROM chunks").fetchone()[0]
        self.documents: list[tuple[Any, ...]] = []
        self.chunks: list[tuple[Any, ...]] = []
        self.texts: list[tuple[Any, ...]] = []
        self.exact: list[tuple[int, str]] = []

    def add(
        self, corpus_id: int, source: str, fingerprint: str, chunks: list[Chunk], now: str
    ) -> None:
        first = chunks[0]
        doc_id = self.next_doc
        self.next_doc += 1
        self.documents.append(
            (doc_id, corpus_id, source, fingerprint, first.doc_hash, first.doc_title or first.title,
             first.kind, first.lang, first.url, first.repo_url, first.commit, first.ref,
             len(chunks), sum(len(c.content) for c in chunks), now)
        )  # fmt: skip
        for chunk in chunks:
            chunk_id = self.next_chunk
            self.next_chunk += 1
            self.chunks.append(
                (chunk_id, doc_id, chunk.ordinal, chunk.hash, chunk.title,
                 json.dumps(chunk.section, ensure_ascii=False) if chunk.section else None,
                 chunk.anchor, chunk.symbol, chunk.start_line, chunk.end_line, chunk.kind,
                 chunk.redactions,
                 json.dumps(chunk.meta, ensure_ascii=False) if chunk.meta else None)
            )  # fmt: skip
            parts = identifier_parts(" ".join((chunk.title, chunk.symbol or "", chunk.content)))
            self.texts.append((chunk_id, chunk.title, " > ".join(chunk.section),
                               chunk.symbol or "", chunk.content, parts))  # fmt: skip
            self.exact.append((chunk_id, chunk.content))
        if len(self.chunks) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        db = self.db
        db.executemany(
            "INSERT INTO documents (id, corpus_id, source, fingerprint, doc_hash, title, kind, "
            "lang, url, repo_url, commit_sha, ref, chunks, chars, indexed_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            self.documents,
        )
        db.executemany(
            "INSERT INTO chunks (id, document_id, ordinal, hash, title, section, anchor, symbol, "
            "start_line, end_line, kind, redactions, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            self.chunks,
        )
        db.executemany(
            "INSERT INTO chunks_fts (rowid, title, section, symbol, body, parts) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            self.texts,
        )
        db.executemany("INSERT INTO chunks_exact (rowid, body) VALUES (?, ?)", self.exact)
        self.documents, self.chunks, self.texts, self.exact = [], [], [], []


def spool_stdin() -> Path:
    """Standard input to a temporary file, so the two passes can read it twice."""
    fd, name = tempfile.mkstemp(prefix="docs-flatten-stdin-", suffix=".jsonl")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return Path(name)
