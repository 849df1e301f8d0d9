"""Load JSONL records into the index: incremental, keyed by content, one transaction per run.

Pass 1 reads every line once and groups it by document (corpus, source): each document gets a
fingerprint over its raw lines, and only line offsets are kept. Our own records name their source
and ordinal at a fixed place at the start of the line, so pass 1 reads those without parsing JSON;
any other line is parsed. Documents whose fingerprint is unchanged are skipped: a no-op reload
parses nothing. Pass 2 parses and validates every line of the new and changed documents
(reading back from the file what pass 1 did not keep within a memory budget) and replaces those
documents. Malformed lines are counted with their line numbers and never stop the load. A load is a
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
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from flatten.hashing import sha256_hex
from index.store import Store
from index.text import identifier_parts

MAX_LINE_BYTES = 16 << 20  # a longer line is reported, not parsed
# `{"id":"<source>#<ordinal>","source":"<source>"` as our writer puts it (no escapes inside;
# json.dumps' default spacing accepted too).
_NATIVE_HEAD = re.compile(rb'^\{\s*"id":\s*"([^"\\]*)#(\d+)",\s*"source":\s*"([^"\\]*)"')
HOLD_CHARS = 256 << 20  # content kept between the passes, at most
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


_TEXT_FIELDS = frozenset({
    "id", "id_", "_id", "source", "title", "anchor", "symbol", "kind", "lang", "docTitle", "url",
    "permalink", "repoUrl", "commit", "ref", "docHash",
})  # fmt: skip
_INT_FIELDS = frozenset({"ordinal", "startLine", "endLine", "redactions"})


def _checked(data: dict[str, Any]) -> dict[str, Any]:
    """Types checked (and numbers given as text accepted) in one pass over the fields present."""
    fixed: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            continue
        if key in _TEXT_FIELDS:
            if type(value) is not str:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise Malformed(f"{key} must be a string, not {type(value).__name__}")
                fixed[key] = str(value)
        elif key in _INT_FIELDS and type(value) is not int:
            if isinstance(value, str) and value.isdigit():
                fixed[key] = int(value)
            else:
                raise Malformed(f"{key} must be an integer")
    if fixed:
        data = {**data, **fixed}
    return data


def normalize(obj: Any, fallback_source: str) -> Chunk:
    """One JSON value as a chunk, or `Malformed` with the reason."""
    if type(obj) is not dict:
        raise Malformed("not a JSON object")
    nested = obj.get("metadata")
    if type(nested) is not dict:
        nested = obj.get("meta")
    data = {**nested, **obj} if type(nested) is dict else obj
    content = data.get("content")
    if content is None:
        content = data.get("text", data.get("page_content"))
    if type(content) is not str:
        raise Malformed("no text: expected content, text or page_content as a string")
    if not content.strip():
        raise Malformed("empty content")
    data = _checked(data)
    get = data.get
    raw_id = get("id") or get("id_") or get("_id")
    id_match = _ID_ORDINAL.match(raw_id) if raw_id else None
    source = get("source") or get("url") or (id_match.group(1) if id_match else raw_id)
    source = source or fallback_source
    ordinal = get("ordinal")
    if ordinal is None and id_match and id_match.group(1) == source:
        ordinal = int(id_match.group(2))
    section = get("section")
    if type(section) is str:
        section = [part for part in section.split(" > ") if part]
    elif section is None:
        section = []
    elif not (type(section) is list and all(type(s) is str for s in section)):
        raise Malformed("section must be a list of strings")
    extra = data.keys() - _KNOWN_FIELDS
    meta = {k: data[k] for k in sorted(extra) if isinstance(data[k], str | int | float | bool)}
    return Chunk(
        source=source,
        ordinal=ordinal if ordinal is not None else -1,  # -1: numbered in order of appearance
        content=content,
        title=get("title") or get("docTitle") or source,
        hash=sha256_hex(content),
        section=section,
        anchor=get("anchor"),
        symbol=get("symbol"),
        start_line=get("startLine"),
        end_line=get("endLine"),
        kind=get("kind"),
        lang=get("lang"),
        doc_title=get("docTitle"),
        url=get("url") or get("permalink"),
        repo_url=get("repoUrl"),
        commit=get("commit"),
        ref=get("ref"),
        doc_hash=get("docHash"),
        redactions=get("redactions") or 0,
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
    # (file, offset, ordinal, line number)
    lines: list[tuple[int, int, int, int]] = field(default_factory=list)
    ordinals: set[int] = field(default_factory=set)
    held: list[Chunk] | None = field(default_factory=list)  # None: re-read in pass 2


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
    hold_chars: int = HOLD_CHARS,
) -> LoadReport:
    """Load JSONL files into `corpus` in one transaction."""
    started = time.perf_counter()
    report = LoadReport(corpus=corpus)
    # Read before the write lock to decide what to keep in memory; rechecked under the lock.
    known = {} if reindex else _fingerprints(store.db, corpus)
    handles = [open(path, "rb") for path in paths]  # noqa: SIM115 - closed below
    try:
        docs: dict[str, _Doc] = {}
        held_chars = 0
        holding = True
        previous: str | None = None
        for index, (path, handle) in enumerate(zip(paths, handles, strict=True)):
            for number, offset, line in _read_lines(handle):
                report.lines += 1
                if line is None:
                    report.malformed.append((path.name, number, "line longer than 16 MiB"))
                    continue
                if not line.strip():
                    continue
                chunk: Chunk | None = None
                head = _NATIVE_HEAD.match(line)
                if head and head.group(1) == head.group(3):
                    source, ordinal = head.group(3).decode("utf-8", "replace"), int(head.group(2))
                else:
                    try:
                        chunk = _parse(line, f"{path.name}#L{number}")
                    except Malformed as exc:
                        report.malformed.append((path.name, number, str(exc)))
                        continue
                    source, ordinal = chunk.source, chunk.ordinal
                doc = docs.get(source)
                if doc is None:
                    doc = docs[source] = _Doc(hashlib.sha256())
                if ordinal < 0:
                    ordinal = len(doc.lines) + 1
                if ordinal in doc.ordinals:
                    report.malformed.append((path.name, number, f"duplicate {source}#{ordinal}"))
                    continue
                if previous is not None and previous != source:
                    _release_if_unchanged(docs[previous], known.get(previous))
                previous = source
                doc.ordinals.add(ordinal)
                doc.lines.append((index, offset, ordinal, number))
                # The raw line, not a re-serialisation: cheaper, and our output is deterministic.
                doc.hasher.update(line.rstrip(b"\r\n"))
                doc.hasher.update(b"\n")
                if chunk is None:
                    doc.held = None  # not parsed yet: pass 2 reads it
                elif holding and doc.held is not None:
                    chunk.ordinal = ordinal
                    held_chars += len(chunk.content)
                    if held_chars > hold_chars:
                        holding = False  # over budget: pass 2 reads everything back
                        for other in docs.values():
                            other.held = None
                    else:
                        doc.held.append(chunk)
                elif not holding:
                    doc.held = None
        with store.write() as db:
            _apply(db, handles, paths, docs, corpus, report, partial, reindex)
    finally:
        for handle in handles:
            handle.close()
    report.seconds = time.perf_counter() - started
    return report


def _fingerprints(db: sqlite3.Connection, corpus: str) -> dict[str, str]:
    return dict(
        db.execute(
            "SELECT d.source, d.fingerprint FROM documents d JOIN corpora k "
            "ON k.id = d.corpus_id WHERE k.name = ?",
            (corpus,),
        ).fetchall()
    )


def _release_if_unchanged(doc: _Doc, known: str | None) -> None:
    """A finished document that is unchanged needs no content in memory."""
    if doc.held and known is not None and doc.hasher.copy().hexdigest() == known:
        doc.held = []


def _apply(
    db: sqlite3.Connection,
    handles: list[IO[bytes]],
    paths: list[Path],
    docs: dict[str, _Doc],
    corpus: str,
    report: LoadReport,
    partial: bool,
    reindex: bool,
) -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    db.execute(
        "INSERT INTO corpora (name, indexed_at) VALUES (?, ?) "
        "ON CONFLICT(name) DO UPDATE SET indexed_at = excluded.indexed_at",
        (corpus, now),
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
    origin = _write_documents(writer, handles, paths, docs, existing, corpus_id, now, report)
    writer.flush()
    if origin is not None:  # the corpus's origin, as its newest records say
        db.execute(
            "UPDATE corpora SET repo_url = ?, commit_sha = ?, ref = ? WHERE id = ?",
            (origin.repo_url, origin.commit, origin.ref, corpus_id),
        )
    if not partial:
        for source, (doc_id, _) in existing.items():
            if source not in docs:
                _delete_document(db, doc_id)
                report.removed += 1


def _write_documents(
    writer: _BatchWriter,
    handles: list[IO[bytes]],
    paths: list[Path],
    docs: dict[str, _Doc],
    existing: dict[str, tuple[int, str]],
    corpus_id: int,
    now: str,
    report: LoadReport,
) -> Chunk | None:
    """Add new and replace changed documents; return the first chunk written (its origin)."""
    origin: Chunk | None = None
    for source, doc in docs.items():
        fingerprint = doc.hasher.hexdigest()
        current = existing.get(source)
        if current and current[1] == fingerprint:
            report.unchanged += 1
            continue
        chunks = _chunks_of(doc, handles, paths, source, report)
        if current:
            _delete_document(writer.db, current[0])
        if not chunks:  # every line of it was malformed
            report.removed += 1 if current else 0
            continue
        if current:
            report.updated += 1
        else:
            report.added += 1
        origin = origin or chunks[0]
        writer.add(corpus_id, source, fingerprint, chunks, now)
        report.chunks += len(chunks)
    return origin


def _chunks_of(
    doc: _Doc, handles: list[IO[bytes]], paths: list[Path], source: str, report: LoadReport
) -> list[Chunk]:
    """A document's chunks in ordinal order: kept from pass 1, or parsed from the file now."""
    if doc.held is not None and len(doc.held) == len(doc.lines):
        return sorted(doc.held, key=lambda c: c.ordinal)
    chunks = []
    for f, offset, ordinal, number in doc.lines:
        handles[f].seek(offset)
        try:
            chunk = _parse(handles[f].readline(MAX_LINE_BYTES + 1), source)
        except Malformed as exc:
            report.malformed.append((paths[f].name, number, str(exc)))
            continue
        chunk.source, chunk.ordinal = source, ordinal
        chunks.append(chunk)
    return sorted(chunks, key=lambda c: c.ordinal)


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
    """Inserts documents and chunks in batches, with ids assigned here (no round trip per row).

    (Writing batches on a second thread while the next is parsed was measured slower: SQLite's
    FTS5 work dominates and the threads only contend for the GIL.)
    """

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
        documents, chunks, texts, exact = self.documents, self.chunks, self.texts, self.exact
        self.documents, self.chunks, self.texts, self.exact = [], [], [], []
        db = self.db
        db.executemany(
            "INSERT INTO documents (id, corpus_id, source, fingerprint, doc_hash, title, kind, "
            "lang, url, repo_url, commit_sha, ref, chunks, chars, indexed_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            documents,
        )
        db.executemany(
            "INSERT INTO chunks (id, document_id, ordinal, hash, title, section, anchor, symbol, "
            "start_line, end_line, kind, redactions, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            chunks,
        )
        db.executemany(
            "INSERT INTO chunks_fts (rowid, title, section, symbol, body, parts) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            texts,
        )
        db.executemany("INSERT INTO chunks_exact (rowid, body) VALUES (?, ?)", exact)


def spool_records(records: Iterable[Any]) -> Path:
    """Records (`Record`s or dicts) to a temporary JSONL file that the loader can read twice.

    The caller removes the file."""
    from flatten.writer import write_jsonl  # the writer's atomic file: never a half-written spool

    fd, name = tempfile.mkstemp(prefix="docs-flatten-", suffix=".jsonl")
    os.close(fd)
    try:
        write_jsonl(records, name, lambda r: r if isinstance(r, dict) else r.to_dict())
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


def load_records(
    store: Store,
    records: Iterable[Any],
    corpus: str,
    *,
    partial: bool = False,
    reindex: bool = False,
) -> LoadReport:
    """Load records from memory (e.g. `flatten_root(...)`, or dicts in any layout load_files
    reads) as one file would load."""
    path = spool_records(records)
    try:
        return load_files(store, [path], corpus, partial=partial, reindex=reindex)
    finally:
        path.unlink(missing_ok=True)


def spool_stdin() -> Path:
    """Standard input to a temporary file, so the two passes can read it twice."""
    fd, name = tempfile.mkstemp(prefix="docs-flatten-stdin-", suffix=".jsonl")
    with os.fdopen(fd, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out)
    return Path(name)
