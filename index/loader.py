"""Load JSONL records into the index: incremental, keyed by content, one transaction per run.

One pass reads every line once, a block at a time, inside the store's write transaction, and
groups the lines by document (corpus, source). Our own records name their source and ordinal at
a fixed place at the start of the line, so they are placed without parsing JSON; any other line
is parsed. Each document is settled when the next one begins (see `_Load`): unchanged (its
fingerprint matches: a digest of its raw lines first, then of its lines less their provenance,
`content_digest`, so a new commit that did not touch a document leaves it unchanged and a no-op
reload parses nothing), with its commit, ref and repository path updated in place where only they
moved; or new or changed: its lines parsed and validated and the document replaced, its text
indexed on a second thread while the next documents are read. Malformed lines are counted with
their line numbers and never stop the load. A load is a complete snapshot of its corpus unless
`partial`: documents it does not mention are removed.

Lines are read through the record codec (`flatten.record`): our own records, the layouts it
writes for LangChain, LlamaIndex and Haystack, BEIR's and plain `{"text": ...}` lines. The mark
lines that frame a piped stream are not records: they decide whether the stream is loaded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from flatten.errors import FlattenError, UsageError, write_failed
from flatten.record import (
    MARK_KEY,
    MARK_PREFIX,
    SECTION_SEPARATOR,
    Malformed,
    Mark,
    Record,
    content_digest,
    decode_line,
    encode_line,
    is_stream,
    native_head,
    provenance_pairs,
    read_mark,
    read_provenance,
)
from index.corpus_source import adopt_source
from index.paths import document_fields, locale_of
from index.snapshot import DEFAULT_LIMIT, RemovalLimit
from index.store import Compaction, Store, new_ids
from index.text import derived_parts
from index.textindex import ChunkText, DocumentText, text_index

__all__ = ["EmptyInput", "LoadReport", "Malformed", "StreamError", "load_files", "load_records"]

MAX_LINE_BYTES = 16 << 20  # a longer line is reported, not parsed
READ_BYTES = 1 << 20  # pass 1 reads the files a block at a time
HOLD_CHARS = 256 << 20  # a document's lines kept in memory until it is settled, at most
# A fingerprint is `v2:<content>:<lines>`. <content> is a digest of the document's lines less
# their provenance (see `content_digest`): it decides whether a document changed. <lines> is a
# digest of the raw lines (commit and all): when it matches, so does the content, and the lines
# are not read again (a no-op reload hashes each line once, and parses nothing). Older versions
# stored `v2:<content>` (matched by content) or the raw digest alone, with no prefix (matched by
# it); either is rewritten at the document's next load.
FINGERPRINT_PREFIX = "v2:"


class StreamError(FlattenError):
    """A piped stream that is not a complete snapshot: its producer failed (`stream-failed`) or
    it ended without the writer's closing mark (`stream-incomplete`). Nothing is loaded."""


class EmptyInput(FlattenError):
    """An input from which no record could be read (empty, blank, every line malformed or cut):
    no snapshot of anything, so it never empties a corpus (`empty-input`, nothing written).
    Removing a corpus is asked for by name (`index.drop`)."""

    held = 1  # documents the corpus holds (0: none, no corpus was made): `drop` is named if any


def check_corpus_name(name: str) -> str:
    """A corpus name, or `UsageError`: an empty or blank name would load a corpus that no
    `--corpus` can select."""
    if not name.strip():
        raise UsageError("a corpus name cannot be empty", reason="bad-corpus",
                         hint="name the corpus, e.g. --corpus docs")  # fmt: skip
    return name


@dataclass
class LoadReport:
    """What a load did; as JSON it is the `load` part of the run summary (flatten.summary)."""

    corpus: str = ""
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks: int = 0  # chunks written (new and changed documents)
    lines: int = 0
    malformed: list[tuple[str, int, str]] = field(default_factory=list)  # (file, line, reason)
    seconds: float = 0.0
    partial: str | None = None  # why the input said it was not a whole snapshot, if it did
    compacted: Compaction | None = None  # the store compacted after the load (Store.compact)

    def summary(self) -> str:
        head = (
            f"{self.corpus}: {self.added:,} added, {self.updated:,} updated, "
            f"{self.unchanged:,} unchanged, {self.removed:,} removed, "
            f"{len(self.malformed):,} malformed ({self.chunks:,} chunks written, "
            f"{self.seconds:.2f} s)"
        )
        if self.partial:
            head += f"\n  partial input ({self.partial}): nothing removed"
        if self.compacted:
            head += f"\n  {self.compacted.summary()}"
        shown = [f"  {f}:{n}: {r}" for f, n, r in self.malformed[:10]]
        more = len(self.malformed) - len(shown)
        return "\n".join([head, *shown] + ([f"  ... and {more} more"] if more > 0 else []))


@dataclass
class _Doc:
    lines_digest: Any  # of its raw lines (see FINGERPRINT_PREFIX)
    # (file, offset, ordinal, line number)
    lines: list[tuple[int, int, int, int]] = field(default_factory=list)
    ordinals: set[int] = field(default_factory=set)
    # Its lines as read (our raw lines, other layouts' parsed records), aligned with `lines`,
    # while it is the document being read; None once settled, past `HOLD_CHARS`, or when every
    # document is settled after pass 1: its lines are then read back from the files.
    held: list[bytes | Record] | None = field(default_factory=list)
    held_chars: int = 0


@dataclass
class _Framing:
    """What one file's marks say (flatten.record): a piped stream is a complete snapshot only
    when it ends with a closing mark that counts its records."""

    records: int = 0  # record lines since the last closing mark
    closed: bool = False  # the last line that was not blank was a closing mark
    error: str | None = None  # an error mark's reason
    miscount: tuple[int, int] | None = None  # (records seen, records the mark says)
    partial: str | None = None  # a closing mark's word that its run saw the source in part

    def see(self, mark: Mark) -> None:
        self.partial = self.partial or mark.partial
        if mark.error is not None:
            self.error = mark.error
        elif mark.records != self.records and self.miscount is None:
            self.miscount = (self.records, mark.records)
        self.closed = mark.error is None
        self.records = 0

    def record(self) -> None:
        self.records += 1
        self.closed = False


def _read_lines(handle: IO[bytes]) -> Iterator[tuple[int, int, bytes | None]]:
    """(line number, offset, the line without its newline, or None when over the size limit),
    read a block at a time: a line over the limit is skipped, never held whole."""
    number = 0
    at = 0  # the file offset of `tail`, the start of a line the next block continues
    tail = b""
    skipped: int | None = None  # the offset of the line over the limit being skipped
    while True:
        block = handle.read(READ_BYTES)
        if skipped is not None:
            end = block.find(b"\n")
            if block and end < 0:
                at += len(block)
                continue
            number += 1
            yield number, skipped, None
            skipped = None
            if end < 0:
                return
            at += end + 1
            block = block[end + 1 :]
            if not block:
                continue  # the line ended with the block: not the end of the file
        if not block:
            if tail:
                yield number + 1, at, tail
            return
        lines = (tail + block if tail else block).split(b"\n")
        tail = lines.pop()
        for line in lines:
            number += 1
            yield number, at, line if len(line) <= MAX_LINE_BYTES else None
            at += len(line) + 1
        if len(tail) > MAX_LINE_BYTES:
            skipped, at, tail = at, at + len(tail), b""


def load_files(
    store: Store,
    paths: list[Path],
    corpus: str,
    *,
    partial: bool = False,
    reindex: bool = False,
    hold_chars: int = HOLD_CHARS,
    streams: Collection[Path] = (),
    max_delete: RemovalLimit = DEFAULT_LIMIT,
    source: str | None = None,
    replace: bool = False,
) -> LoadReport:
    """Load JSONL files into `corpus` in one transaction.

    `source`: what the files are a snapshot of (`flatten.corpus_sources.corpus_source`); a
    corpus holding another source is refused (`CorpusSourceMismatch`) unless `replace`, which
    replaces the corpus's documents with these whatever their source.

    `streams` are the paths that came through a pipe (`index -`): each is a complete snapshot
    only if it ends with the writer's closing mark; without one nothing is loaded (`partial`
    loads it anyway, adding and updating only). A file holding an error mark, or a closing mark
    that miscounts its records, is never loaded. Either way: `StreamError`, nothing committed.
    A snapshot removing more documents than `max_delete` allows: `TooManyRemovals`, likewise."""
    check_corpus_name(corpus)
    started = time.perf_counter()
    report = LoadReport(corpus=corpus)
    with contextlib.ExitStack() as files:
        # One handle reads each file in order, another reads lines back (pass 2, provenance).
        handles = [files.enter_context(open(path, "rb")) for path in paths]
        readers = [files.enter_context(open(path, "rb")) for path in paths]
        with store.write(corpus) as db:
            # Another source: refused here, or with `replace` its content replaced (a reindex).
            replacing = adopt_source(db, corpus, source, replace=replace)
            load = _Load(db, readers, paths, corpus, report, reindex or replacing, hold_chars)
            try:
                framings = load.read(handles)
                _refuse_unframed(paths, framings, set(streams), partial)
                # A stream whose producer saw its source in part (a truncated crawl) is no
                # snapshot: it adds and updates, and removes nothing.
                report.partial = next((f.partial for f in framings if f.partial), None)
                load.finish(partial or report.partial is not None, max_delete)
            finally:
                load.writer.close()  # before the transaction ends, however it ends
    report.compacted = store.compact()  # committed: a snapshot may have freed most
    report.seconds = time.perf_counter() - started
    return report


def _refuse_unframed(
    paths: list[Path], framings: list[_Framing], streams: set[Path], partial: bool
) -> None:
    """`StreamError` for input that says it is not a whole snapshot (see `load_files`)."""
    for path, framing in zip(paths, framings, strict=True):
        piped = path in streams
        name = "the piped input" if piped else path.name
        if framing.error is not None:
            raise StreamError(
                f"{name} ends with the producer's error mark ({framing.error}): its run failed, "
                "so nothing was loaded and the index is as it was",
                reason="stream-failed", hint="fix the flatten run and pipe it again",
            )  # fmt: skip
        if framing.miscount is not None:
            seen, said = framing.miscount
            raise StreamError(
                f"{name} holds {seen:,} records before a closing mark that says {said:,}: it was "
                "cut or spliced, so nothing was loaded and the index is as it was",
                reason="stream-incomplete",
            )
        if piped and not framing.closed and not partial:
            raise StreamError(
                f"{name} ended without the closing mark docs-flatten's writer puts at the end of "
                f'a complete stream ({{"{MARK_KEY}":{{"end":true,...}}}}): the producer failed '
                "or was cut short, so nothing was loaded and the index is as it was",
                reason="stream-incomplete",
                hint="pipe `docs-flatten flatten --root DIR` (native format) into it; for another "
                "producer's JSONL, load a file (`index FILE`) or add --partial (add and update "
                "only, no removals)",
            )


class _CameBack(Exception):
    """A document came back after another while streaming (`_Load.read` starts over)."""


class _Load:
    """One corpus load inside the store's write transaction.

    Pass 1 reads the files in order. Documents come one after another (flatten writes each
    document's slices together), so each is settled as soon as the next begins: written while
    the rest is read, its text indexed on the writer's thread. A document that comes back after
    another (split across the input) undoes that: everything written since the savepoint taken
    at the start is rolled back, pass 1 starts over, and every document is settled after it,
    reading its lines back from the files, as one whole. Either way the same rows are written,
    in the same order. Streaming, a settled document's lines are not kept (memory stays flat).
    """

    SAVEPOINT = "docs_flatten_streamed"

    def __init__(
        self,
        db: sqlite3.Connection,
        readers: list[IO[bytes]],
        paths: list[Path],
        corpus: str,
        report: LoadReport,
        reindex: bool,
        hold_chars: int,
    ) -> None:
        self.db, self.readers, self.paths, self.report = db, readers, paths, report
        self.hold_chars = hold_chars
        self.now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        db.execute(
            "INSERT INTO corpora (name, indexed_at) VALUES (?, ?) "
            # origin: what the corpus was made from (ingest_files' `state`), no longer known
            "ON CONFLICT(name) DO UPDATE SET indexed_at = excluded.indexed_at, origin = NULL",
            (corpus, self.now),
        )
        found = db.execute("SELECT id FROM corpora WHERE name = ?", (corpus,)).fetchone()
        self.corpus_id: int = found[0]
        text_index(db).prepare_load()
        # source -> (id, fingerprint, (repo_url, commit_sha, ref, repo_path, dirty))
        self.existing: dict[str, tuple[int, str, tuple[Any, ...]]] = {
            row[1]: (row[0], row[2], row[3:])
            for row in db.execute(
                "SELECT id, source, fingerprint, repo_url, commit_sha, ref, repo_path, dirty "
                "FROM documents WHERE corpus_id = ?",
                (self.corpus_id,),
            )
        }
        # A reindex writes every document it reads anew (`_settle`); what it does not mention
        # goes as in any snapshot, so an input it could not read in full removes nothing.
        self.reindex = reindex
        self.docs: dict[str, _Doc] = {}
        self.streaming = True
        db.execute(f"SAVEPOINT {self.SAVEPOINT}")
        self._start_writing()

    def _start_writing(self) -> None:
        self.writer = _BatchWriter(self.db)
        self.written: Record | None = None  # the first document written: the corpus's origin
        # Unchanged documents whose provenance moved (or whose fingerprint an older version
        # stored): (provenance..., fingerprint, id), updated in place at the end.
        self.moved: list[tuple[Any, ...]] = []
        self.unparsed: list[tuple[str, int, str]] = []  # malformed lines found when settling
        self.readable = 0  # documents settled with at least one record read
        self.added: Counter[str] = Counter()  # new documents by content hash (`_moved`)

    def _stop_streaming(self) -> None:
        """A document came back after another: undo what was written, and forget what was read
        (the lines of a settled document are not kept: memory stays flat while streaming)."""
        try:
            self.writer.wait()  # its error, if any, is this load's
        finally:
            self.writer.close()
        self.db.execute(f"ROLLBACK TO SAVEPOINT {self.SAVEPOINT}")
        text_index(self.db).prepare_load()  # what it noted for this load was rolled back too
        report = self.report
        report.added = report.updated = report.unchanged = report.removed = report.chunks = 0
        report.lines, report.malformed = 0, []
        self._start_writing()
        self.docs = {}
        self.streaming = False

    def read(self, handles: list[IO[bytes]]) -> list[_Framing]:
        """Pass 1: every line read once, grouped by document and fingerprinted (and, while
        streaming, each document settled once the next begins). Returns each file's framing.
        A document that comes back after another starts it over, not streaming: every line
        read again and kept track of, every document settled after it (`finish`)."""
        try:
            return self._read(handles)
        except _CameBack:
            self._stop_streaming()
            for handle in handles:
                handle.seek(0)
            return self._read(handles)

    def _read(self, handles: list[IO[bytes]]) -> list[_Framing]:
        report, docs = self.report, self.docs
        framings = [_Framing() for _ in handles]
        doc: _Doc | None = None
        previous: str | None = None
        for index, (path, handle) in enumerate(zip(self.paths, handles, strict=True)):
            framing = framings[index]
            for number, offset, line in _read_lines(handle):
                report.lines += 1
                if line is None:
                    framing.record()
                    report.malformed.append((path.name, number, "line longer than 16 MiB"))
                    continue
                if not line.removeprefix(b"\xef\xbb\xbf").strip():
                    continue  # blank, or an editor's byte order mark alone on the first line
                chunk: Record | None = None
                try:
                    mark = read_mark(line) if line.startswith(MARK_PREFIX) else None
                    if mark is None:
                        place = native_head(line)
                        if place is None:
                            chunk = decode_line(line, f"{path.name}#L{number}")
                            place = chunk.source, chunk.ordinal
                except Malformed as exc:
                    framing.record()
                    report.malformed.append((path.name, number, str(exc)))
                    continue
                if mark is not None:
                    framing.see(mark)
                    continue
                framing.record()
                source, ordinal = place
                if source != previous:
                    if doc is not None and self.streaming:
                        self._settle(previous, doc)  # type: ignore[arg-type]
                    doc = docs.get(source)
                    if doc is None:
                        doc = docs[source] = _Doc(hashlib.sha256())
                        if not self.streaming:
                            doc.held = None
                    elif self.streaming:
                        raise _CameBack
                    previous = source
                if ordinal < 0:
                    ordinal = len(doc.lines) + 1
                if ordinal in doc.ordinals:
                    report.malformed.append((path.name, number, f"duplicate {source}#{ordinal}"))
                    continue
                doc.ordinals.add(ordinal)
                doc.lines.append((index, offset, ordinal, number))
                digest = doc.lines_digest
                digest.update(line.rstrip(b"\r") if line.endswith(b"\r") else line)
                digest.update(b"\n")
                if doc.held is not None:
                    doc.held_chars += len(line) if chunk is None else len(chunk.content)
                    if doc.held_chars > self.hold_chars:
                        doc.held = None  # a very large document: read back from the file
                    else:
                        doc.held.append(line if chunk is None else chunk)
        if doc is not None and self.streaming:
            self._settle(previous, doc)  # type: ignore[arg-type]
        return framings

    def finish(self, partial: bool, max_delete: RemovalLimit) -> None:
        """After pass 1: settle what is left, update moved provenance, remove what is gone."""
        db, report, existing = self.db, self.report, self.existing
        try:
            if not self.streaming:
                for source, doc in self.docs.items():
                    self._settle(source, doc)
            self.writer.flush()
            self.writer.wait()
        finally:
            self.writer.close()
        report.malformed.extend(self.unparsed)
        if not partial and not self.readable:
            raise _empty_input(report, held=len(existing))
        if not partial and existing and report.malformed:
            # A malformed line may be the only line of a document: no whole snapshot, so what
            # it does not mention is kept.
            report.partial = f"{len(report.malformed):,} malformed lines"
            partial = True
        if not partial and not self.reindex:  # past the limit, the transaction is rolled back
            gone = [doc_id for s, (doc_id, *_) in existing.items() if s not in self.docs]
            max_delete.check(len(gone) - self._moved(gone), len(existing), report.corpus)
        db.executemany(
            "UPDATE documents SET repo_url = ?, commit_sha = ?, ref = ?, repo_path = ?, "
            "dirty = ?, fingerprint = ? WHERE id = ?",
            self.moved,
        )
        if self.written is not None:  # the corpus's origin, as its newest records say
            p = self.written.provenance
            origin: tuple[Any, ...] | None = (p.repo_url, p.commit, p.ref)
        else:
            origin = self.moved[0][:3] if self.moved else None
        if origin is not None:
            db.execute(
                "UPDATE corpora SET repo_url = ?, commit_sha = ?, ref = ? WHERE id = ?",
                (*origin, self.corpus_id),
            )
        if not partial:
            for source, (doc_id, *_) in existing.items():
                if source not in self.docs:
                    delete_document(db, doc_id, self.corpus_id)
                    report.removed += 1

    def _settle(self, source: str, doc: _Doc) -> None:
        """Skip an unchanged document (noting a moved provenance) or write a new or changed
        one, replacing what the store held."""
        held, doc.held = doc.held, None
        try:
            self._write_or_skip(source, doc, held)
        finally:
            if self.streaming:  # settled for good: only its source is remembered
                doc.lines, doc.ordinals = [], set()

    def _write_or_skip(self, source: str, doc: _Doc, held: list[bytes | Record] | None) -> None:
        """`_settle` with the document's held lines taken from it."""
        report = self.report
        lines = doc.lines_digest.hexdigest()
        current = self.existing.get(source)
        known = current[1] if current and not self.reindex else ""  # a reindex writes anew
        if current and _lines_of(known) == lines:
            # The same lines as the store last saw, provenance and all: nothing else to read.
            report.unchanged += 1
            self.readable += 1
            if known == lines:  # an older version's fingerprint: rewritten
                stored = (*current[2][:4], bool(current[2][4]))
                self.moved.append((*stored, self._fingerprint(doc, held, lines), current[0]))
            return
        fingerprint = self._fingerprint(doc, held, lines)
        if current and _content_of(known) == _content_of(fingerprint):
            report.unchanged += 1  # the same content from another commit
            self.readable += 1
            stored = (*current[2][:4], bool(current[2][4]))
            provenance = self._provenance_of(doc, held, source)
            if provenance != stored or known != fingerprint:
                self.moved.append((*provenance, fingerprint, current[0]))
            return
        chunks = self._chunks_of(doc, held, source)
        if chunks:
            self.readable += 1
        if not chunks or (current and len(chunks) < len(doc.lines)):
            return  # a line of it could not be read: the stored version is kept whole
        if current:
            self.writer.delete(current[0])
        if current:
            report.updated += 1
        else:
            report.added += 1
            if chunks[0].doc_hash:
                self.added[chunks[0].doc_hash] += 1
        self.written = self.written or chunks[0]
        self.writer.add(self.corpus_id, source, fingerprint, chunks, self.now)
        report.chunks += len(chunks)

    def _moved(self, gone: list[int]) -> int:
        """How many of the documents `gone` are moved, not removed: each whose content hash
        a new document of this load has (one for one). A renamed folder is no removal for the
        removal limit: its documents are all still there."""
        if not gone or not self.added:
            return 0
        hashes = Counter(h for (h,) in self.db.execute(
            "SELECT doc_hash FROM documents WHERE id IN (SELECT value FROM json_each(?)) "
            "AND doc_hash IS NOT NULL", (json.dumps(gone),)))  # fmt: skip
        return sum((hashes & self.added).values())

    def _fingerprint(self, doc: _Doc, held: list[bytes | Record] | None, lines: str) -> str:
        """`v2:<content>:<lines>` (see FINGERPRINT_PREFIX): the content digest over the lines in
        reading order, each of another layout as the record it parsed to, written as ours (so
        its provenance is told apart too)."""
        digest = hashlib.sha256()
        for at, (f, _, _, number) in enumerate(doc.lines):
            line = self._line(doc, held, at)
            if isinstance(line, bytes):
                line = line.rstrip(b"\r\n")
                # Held, it is ours (pass 1 holds other layouts as records); read back from the
                # file, it may be another layout, parsed in pass 1: it parses now.
                if held is None and native_head(line) is None:
                    line = decode_line(line, f"{self.paths[f].name}#L{number}")
            ours = line if isinstance(line, bytes) else encode_line(line).rstrip(b"\n")
            content_digest(ours, digest)
            digest.update(b"\n")
        return f"{FINGERPRINT_PREFIX}{digest.hexdigest()}:{lines}"

    def _line(self, doc: _Doc, held: list[bytes | Record] | None, at: int) -> bytes | Record:
        """A document's line `at` (in reading order): held, or read back from its file."""
        if held is not None:
            return held[at]
        f, offset, _, _ = doc.lines[at]
        self.readers[f].seek(offset)
        return self.readers[f].readline(MAX_LINE_BYTES + 1)

    def _provenance_of(
        self, doc: _Doc, held: list[bytes | Record] | None, source: str
    ) -> tuple[Any, ...]:
        """(repoUrl, commit, ref, repoPath, dirty) of an unchanged document's first slice, as
        its documents row keeps them."""
        first = min(range(len(doc.lines)), key=lambda at: doc.lines[at][2])
        line = self._line(doc, held, first)
        if isinstance(line, bytes):
            pairs = provenance_pairs(line)
            if pairs is not None:
                return read_provenance(pairs)
            line = decode_line(line, source)  # not our layout: it parsed in pass 1, it parses now
        p = line.provenance
        return p.repo_url, p.commit, p.ref, line.repo_path, line.dirty

    def _chunks_of(self, doc: _Doc, held: list[bytes | Record] | None, source: str) -> list[Record]:
        """A document's chunks in ordinal order, each line parsed now (or in pass 1)."""
        chunks = []
        for at, (f, _, ordinal, number) in enumerate(doc.lines):
            line = self._line(doc, held, at)
            try:
                chunk = decode_line(line, source) if isinstance(line, bytes) else line
            except Malformed as exc:
                self.unparsed.append((self.paths[f].name, number, str(exc)))
                continue
            if (chunk.source, chunk.ordinal) != (source, ordinal):
                chunk = dataclasses.replace(chunk, source=source, ordinal=ordinal)
            chunks.append(chunk)
        return sorted(chunks, key=lambda c: c.ordinal)


def _empty_input(report: LoadReport, held: int) -> EmptyInput:
    """`EmptyInput` for a load that read no record, naming its first malformed lines; `held`:
    the documents the corpus holds (none: it is not in the store, and no corpus was made)."""
    bad = report.malformed
    shown = "; ".join(f"{f}:{n}: {r}" for f, n, r in bad[:3]) + ("; ..." if len(bad) > 3 else "")
    lines = f" ({len(bad):,} malformed: {shown})" if bad else ""
    corpus = (f"corpus {report.corpus!r} is as it was" if held else
              f"no corpus {report.corpus!r} was made")  # fmt: skip
    error = EmptyInput(
        f"the input holds no records{lines}: nothing was loaded and {corpus}",
        reason="empty-input",
        hint="check the input (a failed or cut-short producer?)"
        + ("; a corpus is removed only when asked by name" if held else ""),
    )
    error.held = held
    return error


def _content_of(fingerprint: str) -> str | None:
    """The content digest of a fingerprint (None in an older version's raw digest)."""
    if not fingerprint.startswith(FINGERPRINT_PREFIX):
        return None
    return fingerprint[len(FINGERPRINT_PREFIX) :].partition(":")[0]


def _lines_of(fingerprint: str) -> str | None:
    """The raw lines' digest of a fingerprint: all of an older version's, which had no prefix;
    a `v2:<content>` fingerprint has none apart from its content digest, which is the same when
    the lines hold no provenance."""
    if not fingerprint.startswith(FINGERPRINT_PREFIX):
        return fingerprint
    return fingerprint.rpartition(":")[2]


def delete_document(db: sqlite3.Connection, doc_id: int, corpus_id: int) -> None:
    text_index(db).delete_document(corpus_id, doc_id)  # first: it finds the chunks by document
    db.execute("DELETE FROM chunks WHERE document_id = ?", (doc_id,))
    db.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


# json.dumps(..., ensure_ascii=False) builds an encoder per call: one, made once, writes the same.
_json = json.JSONEncoder(ensure_ascii=False).encode


DOCUMENT_ROWS = (
    "INSERT INTO documents (id, corpus_id, source, fingerprint, doc_hash, title, kind, lang, url, "
    "repo_url, commit_sha, ref, repo_path, dirty, chunks, chars, indexed_at, locale) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
)
CHUNK_ROWS = (
    "INSERT INTO chunks (id, document_id, ordinal, hash, title, section, anchor, symbol, "
    "start_line, end_line, kind, redactions, meta) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


class _BatchWriter:
    """Inserts documents and chunks in batches, with ids assigned here (no round trip per row).

    A batch's text is indexed on a second thread while this one parses the next: SQLite
    releases the GIL for a whole statement, and each FTS5 table's batch is one statement (see
    `index.bulk.bulk_insert`), so the writer takes the GIL a few times a batch, not once a row
    (`executemany` on a second thread was slower: it waited for the GIL at every row). One
    batch at most is in flight, so memory stays flat, and the connection runs one statement at
    a time: this thread waits for the batch in flight before it writes again, and nothing else
    may use the connection until `close()`.
    """

    # Content per batch: each FTS5 statement ends in a segment of its own (SQLite opens a
    # statement savepoint for a multi-row insert, and FTS5 writes out what it buffered there),
    # so batches are large (fewer segments to merge), and bounded (memory stays flat).
    BATCH_CHARS = 4 << 20
    # The first batch is smaller: the writing thread has nothing to do until it is read.
    FIRST_BATCH_CHARS = BATCH_CHARS >> 3

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db
        self.doc_ids, self.chunk_ids = new_ids(db, "documents"), new_ids(db, "chunks")
        self.documents: list[tuple[Any, ...]] = []
        self.chunks: list[tuple[Any, ...]] = []
        self.texts: list[ChunkText] = []
        self.deletes: list[int] = []
        self.corpus_id = 0
        self.batch_chars = 0
        self.batch_limit = self.FIRST_BATCH_CHARS
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="docs-flatten-load")
        self._writing: Future[None] | None = None
        # Whether the writing thread is inside a batch, and whether `close()` began: the thread
        # itself says so under this condition. A future cannot: a stop landing inside
        # `submit()` loses the one the writing thread is already running.
        self._state = threading.Condition()
        self._active = False
        self.closing = False

    def delete(self, doc_id: int) -> None:
        """Delete a document before the rows that replace it are written."""
        self.deletes.append(doc_id)

    def add(
        self, corpus_id: int, source: str, fingerprint: str, chunks: list[Record], now: str
    ) -> None:
        first = chunks[0]
        self.corpus_id = corpus_id  # one corpus a load
        doc_id = next(self.doc_ids)
        self.documents.append(
            (doc_id, corpus_id, source, fingerprint, first.doc_hash, first.doc_title or first.title,
             first.kind, first.lang, first.url, first.provenance.repo_url, first.provenance.commit,
             first.provenance.ref, first.repo_path, first.dirty,
             len(chunks), sum(len(c.content) for c in chunks), now, locale_of(source))
        )  # fmt: skip
        for chunk in chunks:
            chunk_id = next(self.chunk_ids)
            self.chunks.append(
                (chunk_id, doc_id, chunk.ordinal, chunk.hash, chunk.title,
                 _json(chunk.section) if chunk.section else None,
                 chunk.anchor, chunk.symbol, chunk.start_line, chunk.end_line, chunk.kind,
                 chunk.redactions,
                 _json(dict(chunk.meta)) if chunk.meta else None)
            )  # fmt: skip
            section = SECTION_SEPARATOR.join(chunk.section)
            parts = derived_parts(chunk.title, section, chunk.symbol or "", chunk.content)
            self.texts.append(ChunkText(chunk_id, chunk.title, section, chunk.symbol or "",
                                        chunk.content, parts))  # fmt: skip
            self.batch_chars += len(chunk.content)
        if self.batch_chars >= self.batch_limit:
            self.flush()

    def flush(self) -> None:
        """Write the rows so far: documents and chunks here, their text on the writing thread
        (once the batch before them is written: one statement at a time on the connection).
        Writing the rows there too, as one JSON statement a table, was no faster: SQLite is
        the longer of the two threads, and such rows cost it more than bound ones."""
        db, corpus_id = self.db, self.corpus_id
        deletes, documents, chunks, texts = self.deletes, self.documents, self.chunks, self.texts
        self.deletes, self.documents, self.chunks, self.texts = [], [], [], []
        self.batch_chars, self.batch_limit = 0, self.BATCH_CHARS
        # Made ready while the batch in flight is written (what the text index can do off
        # the connection), so the writing thread spends its turn in SQLite alone.
        index = text_index(db)
        write_text = index.stage_chunks(corpus_id, texts) if texts else None
        self.wait()
        for doc_id in deletes:  # before the rows that replace them (one source, one row)
            delete_document(db, doc_id, corpus_id)
        db.executemany(DOCUMENT_ROWS, documents)
        index.write_documents([DocumentText(d[0], *document_fields(d[2], d[5])) for d in documents])
        db.executemany(CHUNK_ROWS, chunks)
        if write_text is not None:
            self._writing = self._thread.submit(self._write, write_text)

    def _write(self, write: Callable[[], object]) -> None:
        """A batch's text, on the writing thread; not after `close()` began."""
        with self._state:
            if self.closing:
                return
            self._active = True
        try:
            write()
        finally:
            with self._state:
                self._active = False
                self._state.notify_all()

    def wait(self) -> None:
        """Wait for the batch in flight; its error, if any, is raised here."""
        if self._writing is not None:
            self._writing.result()  # a stop here leaves it in flight, for `close()` to wait for
            self._writing = None

    def close(self) -> None:
        """Nothing in flight when the transaction ends, however this load ends: the batch in
        flight stops after its current statement, and this waits for it, through a second stop
        too. A statement of it run after the rollback would run on its own and commit, and one
        run after the store is closed would crash the process. (Its error, if any, gives way to
        the one already raised.)"""
        stopped: BaseException | None = None
        while True:
            # Not `Thread.join()`: on Python 3.11 a join a signal interrupts marks the thread
            # ended while it still runs (bpo-45274's fix), and the next join returns at once.
            try:
                with self._state:
                    self.closing = True  # a batch not begun yet is not begun at all
                    while self._active:
                        self._state.wait()
                break
            except BaseException as exc:  # a second Ctrl-C or SIGTERM: wait all the same
                stopped = exc
        self._writing = None
        self._thread.shutdown(wait=False)  # idle now: its thread ends on its own
        if stopped is not None:
            raise stopped


def _spool(name: str, fill: Callable[[IO[bytes]], None]) -> Path:
    """A temporary file the two passes can read twice, filled by `fill`; a failed write is a
    named error (a full disk says so) and leaves no file. The caller removes the file."""
    fd, path = tempfile.mkstemp(prefix=f"docs-flatten-{name}", suffix=".jsonl")
    try:
        with os.fdopen(fd, "wb") as out:
            fill(out)
    except OSError as exc:
        os.unlink(path)
        raise write_failed(f"the temporary copy of the {name} ({path})", exc) from exc
    except BaseException:
        os.unlink(path)
        raise
    return Path(path)


def spool_records(records: Iterable[Record | dict[str, Any]]) -> Path:
    """Records (`Record`s, or dicts in any layout the loader reads) to a temporary JSONL file."""

    def fill(out: IO[bytes]) -> None:
        for record in records:
            out.write(encode_line(record))

    return _spool("records", fill)


def load_records(
    store: Store,
    records: Iterable[Record | dict[str, Any]],
    corpus: str,
    *,
    partial: bool = False,
    reindex: bool = False,
    source: str | None = None,
    replace: bool = False,
) -> LoadReport:
    """Load records from memory (e.g. `flatten_root(...)`, or dicts in any layout load_files
    reads) as one file would load; `source` and `replace` as `load_files` takes them."""
    path = spool_records(records)
    try:
        return load_files(store, [path], corpus, partial=partial, reindex=reindex,
                          source=source, replace=replace)  # fmt: skip
    finally:
        path.unlink(missing_ok=True)


def spool_stdin() -> Path:
    """Standard input to a temporary file, so the two passes can read it twice."""
    return _spool("stdin", lambda out: shutil.copyfileobj(sys.stdin.buffer, out))


def spool_stream(stream: IO[bytes], name: str, first: bytes = b"") -> Path:
    """A stream that can be read once (a named pipe, a process substitution's /dev/fd/N) to a
    temporary file the two passes can read twice; `first`: what was read of it already."""

    def fill(out: IO[bytes]) -> None:
        out.write(first)
        shutil.copyfileobj(stream, out)

    return _spool(name, fill)


def stdin_is_stream() -> bool:
    """Standard input is a pipe or socket: a stream `load_files` wants framed. A file redirected
    to it (`index - < corpus.jsonl`) is a file."""
    return is_stream(0)
