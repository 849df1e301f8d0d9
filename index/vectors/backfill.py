"""Index-time embedding: give every chunk without a vector one, in batches, resumably.

Runs after a load, over the whole store: a chunk is pending until it has a vector key or a skip
reason. Its key is the hash of the text sent (the document template filled with the chunk's
content, title, breadcrumb and document title: `template.py`), so a chunk whose text has a vector
already reuses it without a request, even when its document changed around it. Each batch is
committed on its own: a failure keeps what came before it and the next run resumes there.
Redacted chunks (they held a secret), binary and minified text never leave the machine. A batch
the server rejects (4xx) is split in halves until the input it refuses is found; that input is
skipped and reported, the rest is embedded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flatten.content import looks_binary, looks_minified
from index.store import Store
from index.textindex import text_index
from index.vectors import sidecar
from index.vectors.client import EmbeddingClient, EmbeddingConfig, EmbeddingError
from index.vectors.storage import (
    Identity,
    check_identity,
    claim,
    collect_garbage,
    identity_mismatch,
    index_vectors,
    packed,
    reset,
    set_dimension,
    stored_identity,
    vector_key,
)
from index.vectors.template import SliceText


@dataclass
class EmbedReport:
    embedded: int = 0  # texts sent and stored
    reused: int = 0  # chunks that needed no text of their own sent: same text, one vector
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> chunks
    rejected: list[tuple[str, str]] = field(default_factory=list)  # (token, reason)
    requests: int = 0
    server_seconds: float = 0.0  # time spent waiting on the server
    seconds: float = 0.0
    collected: int = 0  # vectors garbage-collected
    model: str = ""
    dimension: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model, "dimension": self.dimension, "embedded": self.embedded,
            "reused": self.reused, "skipped": dict(sorted(self.skipped.items())),
            "rejected": [{"chunk": t, "reason": r} for t, r in self.rejected],
            "requests": self.requests, "collected": self.collected,
            "serverSeconds": round(self.server_seconds, 3), "seconds": round(self.seconds, 3),
        }  # fmt: skip

    def summary(self) -> str:
        skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items()))
        lines = [
            f"vectors ({self.model}, dim {self.dimension}): {self.embedded:,} embedded, "
            f"{self.reused:,} reused, {sum(self.skipped.values()):,} skipped"
            + (f" ({skipped})" if skipped else "")
            + f", {self.collected:,} collected ({self.requests} requests, {self.seconds:.2f} s)"
        ]
        lines += [f"  rejected {token}: {reason}" for token, reason in self.rejected[:10]]
        return "\n".join(lines)


@dataclass
class _Pending:
    chunk_ids: list[int]
    token: str  # the first chunk's <source>#<ordinal>, for reports
    text: str
    key: str


def embed_pending(
    store: Store,
    config: EmbeddingConfig,
    *,
    reindex: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> EmbedReport:
    """Embed every chunk of the store that has no vector yet; `EmbeddingError` on failure.

    On failure the vectors stored so far stay (the exception carries the partial report as
    `.report`). `reindex` drops all vectors first and takes `config`'s identity.
    """
    started = time.perf_counter()
    report = EmbedReport(model=config.model)
    with store.write() as db:
        if reindex:
            reset(db, config)
        else:
            check_identity(db, config)
            claim(db, config)
    report.dimension = stored_identity(store.db).dimension  # type: ignore[union-attr]
    total = store.db.execute(f"SELECT count(*) FROM chunks c WHERE {_PENDING}").fetchone()[0]
    known = {row[0] for row in store.db.execute("SELECT key FROM vectors")} if total else set()
    client = EmbeddingClient(config)
    try:
        after, done = 0, 0
        while True:  # a page of chunks at a time: memory stays flat on a large first run
            todo, after, seen = _pending(store, config, report, known, after)
            if not seen:
                break
            for start in range(0, len(todo), config.batch_size):
                batch = todo[start : start + config.batch_size]
                _embed_batch(store, client, batch, report, known)
            done += seen
            if progress:
                progress(done, total)
        with store.write() as db:
            report.collected = collect_garbage(db)
            index_vectors(db)
        if store.path is not None:  # a file store: the next process's first query finds it ready
            sidecar.refresh(store.db, store.path)
    except EmbeddingError as exc:
        exc.report = report
        raise
    finally:
        client.close()
        report.seconds = time.perf_counter() - started
    return report


def _embed_batch(
    store: Store,
    client: EmbeddingClient,
    batch: list[_Pending],
    report: EmbedReport,
    known: set[str],
) -> None:
    """Embed one batch and commit it on its own (a later failure keeps it)."""
    vectors = _embed_splitting(client, batch, report)
    for dimension in {len(vector) for _, vector in vectors if vector is not None}:
        if report.dimension is None:
            report.dimension = dimension
        elif dimension != report.dimension:  # the server changed under the same settings
            config = client.config
            raise identity_mismatch(Identity.of(config, report.dimension),
                                    Identity.of(config, dimension))  # fmt: skip
    with store.write() as db:
        if report.dimension is not None:
            set_dimension(db, report.dimension)
        _store_batch(db, vectors)
    known.update(item.key for item, vector in vectors if vector is not None)


# Chunks without a vector; those skipped as binary or minified are looked at again (those are
# our heuristics, and they may improve); redacted and rejected ones stay skipped until --reindex.
_PENDING = (
    "c.embed_key IS NULL AND (c.embed_skip IS NULL OR c.embed_skip IN ('binary', 'minified'))"
)
PAGE = 4096  # chunks read per page


def _pending(
    store: Store, config: EmbeddingConfig, report: EmbedReport, known: set[str], after: int
) -> tuple[list[_Pending], int, int]:
    """The next page of pending chunks after id `after`: (texts to send, one per distinct key;
    the last id read; how many chunks were read). Chunks whose text has a vector already get
    its key now, and skipped chunks their reason."""
    found = store.db.execute(
        "SELECT c.id, d.source, c.ordinal, c.title, c.redactions, d.title, c.section, "
        "coalesce(c.kind, d.kind) FROM chunks c JOIN documents d ON d.id = c.document_id "
        f"WHERE {_PENDING} AND c.id > ? ORDER BY c.id LIMIT ?",
        (after, PAGE),
    ).fetchall()
    bodies = text_index(store.db).chunk_texts([r[0] for r in found])
    rows = [(*r[:5], bodies[r[0]], *r[5:]) for r in found if r[0] in bodies]
    by_key: dict[str, _Pending] = {}
    skips: list[tuple[str, int]] = []
    reuses: list[tuple[str, int]] = []
    for chunk_id, source, ordinal, title, redactions, body, doc_title, section, kind in rows:
        reason = _skip_reason(body, redactions)
        if reason:
            skips.append((reason, chunk_id))
            report.skipped[reason] = report.skipped.get(reason, 0) + 1
            continue
        breadcrumb = tuple(json.loads(section)) if section else ()
        piece = SliceText(body, title, doc_title or "", breadcrumb, source, kind)
        text = config.document_text(piece)
        key = vector_key(text)
        if key in known:
            reuses.append((key, chunk_id))
            report.reused += 1
        elif key in by_key:  # the same text twice in this page: one request serves both
            by_key[key].chunk_ids.append(chunk_id)
            report.reused += 1
        else:
            by_key[key] = _Pending([chunk_id], f"{source}#{ordinal}", text, key)
    if skips or reuses:
        with store.write() as db:
            db.executemany("UPDATE chunks SET embed_skip = ? WHERE id = ?", skips)
            db.executemany(
                "UPDATE chunks SET embed_key = ?, embed_skip = NULL WHERE id = ?", reuses
            )
    return list(by_key.values()), (found[-1][0] if found else after), len(found)


def _skip_reason(body: str, redactions: int) -> str | None:
    if redactions:
        return "redacted"
    if looks_binary(body):
        return "binary"
    if looks_minified(body):
        return "minified"
    return None


def _embed_splitting(
    client: EmbeddingClient, batch: list[_Pending], report: EmbedReport
) -> list[tuple[_Pending, list[float] | None]]:
    """Vectors for the batch; an input the server rejects (4xx) is found by halving: None."""
    sent = time.perf_counter()
    report.requests += 1
    try:
        vectors = client.embed_batch([item.text for item in batch])
    except EmbeddingError as exc:
        if not _rejected(exc):
            raise
        if len(batch) == 1:
            report.rejected.append((batch[0].token, f"{exc.reason}: {exc.message}"))
            report.skipped["rejected"] = report.skipped.get("rejected", 0) + 1
            return [(batch[0], None)]
        middle = len(batch) // 2
        return _embed_splitting(client, batch[:middle], report) + _embed_splitting(
            client, batch[middle:], report
        )
    finally:
        report.server_seconds += time.perf_counter() - sent
    report.embedded += len(batch)
    return list(zip(batch, vectors, strict=True))


def _rejected(exc: EmbeddingError) -> bool:
    """A 4xx other than auth, not-found or 429 is about the input: worth splitting the batch."""
    return (
        exc.status is not None
        and 400 <= exc.status < 500
        and exc.status not in (401, 403, 404, 429)
    )


def _store_batch(db: Any, vectors: list[tuple[_Pending, list[float] | None]]) -> None:
    stored = [(item.key, packed(db, vector)) for item, vector in vectors if vector is not None]
    db.executemany("INSERT OR IGNORE INTO vectors (key, embedding) VALUES (?, ?)", stored)
    db.executemany(
        "UPDATE chunks SET embed_key = ?, embed_skip = ? WHERE id = ?",
        [
            (None, "rejected", i) if vector is None else (item.key, None, i)
            for item, vector in vectors
            for i in item.chunk_ids
        ],
    )
