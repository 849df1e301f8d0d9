"""Ingest: files or records -> load -> embed, as one library call (the CLI's `index` and `ingest`
are thin over it).

With embeddings configured, a store holding vectors of another identity is refused before any
work (`check_identity` first, so a long flatten or crawl is not wasted); after the load, every
chunk without a vector is embedded, resumably. A failure while embedding comes after a load that
happened: the `EmbeddingError` carries the `IngestReport` so far as `exc.ingest`.

What a corpus was made from (text the caller gives: `flatten.manifest.SourceState` as JSON,
with source, ref, commit, settings and the JSONL's sha256) is kept in `corpora.origin` once its
load (and embedding) succeeded; any other load of the corpus clears it. `ingest` skips a
repository whose remote still names that commit, `index --manifests` a manifest entry equal
to it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from index.corpus_source import check_source
from index.errors import StoreError
from index.loader import LoadReport, check_corpus_name, load_files, spool_records
from index.snapshot import DEFAULT_LIMIT, RemovalLimit
from index.store import Store

if TYPE_CHECKING:  # numpy and httpx load only when embeddings are configured
    from index.vectors.backfill import EmbedReport
    from index.vectors.client import EmbeddingConfig


@dataclass(frozen=True)
class IngestOptions:
    partial: bool = False  # add and update only; keep documents this run does not mention
    reindex: bool = False  # drop the corpus (and vectors of another identity) and load afresh
    wait: float = 60.0  # seconds to wait for another writer
    embedding: EmbeddingConfig | None = None  # None: load only
    max_delete: RemovalLimit = DEFAULT_LIMIT  # how much of the corpus a snapshot may remove
    replace: bool = False  # the corpus's documents replaced by this load's, whatever its source


@dataclass
class IngestReport:
    """What a load (and its embedding) did; `flatten.summary.Summary` writes it as JSON."""

    load: LoadReport
    vectors: EmbedReport | None = None
    chunks_total: int = 0  # chunks of the corpus after the load
    vectors_pending: int = 0  # chunks of the store still without a vector after embedding


def refuse_other_identity(store_dir: str | Path | None, options: IngestOptions) -> None:
    """Before flattening, crawling or loading: vectors of another identity are refused."""
    if options.embedding is None or options.reindex:
        return
    try:
        store = Store.open(store_dir, readonly=True)
    except StoreError:
        return  # no store yet, or one older than vectors: nothing to compare with
    from index.vectors.storage import check_identity

    with store:
        check_identity(store.db, options.embedding)


def refuse_other_source(
    store_dir: str | Path | None, corpus: str, source: str | None, options: IngestOptions
) -> None:
    """Before flattening, crawling or loading: a corpus holding another source is refused
    (`index.corpus_source`; the load checks again, in its transaction)."""
    if source is None or options.replace:
        return
    try:
        store = Store.open(store_dir, readonly=True)
    except StoreError:
        return  # no store yet, or one that cannot be read before it is upgraded
    with store:
        check_source(store.db, corpus, source)


def ingest_files(
    store_dir: str | Path | None,
    files: list[Path],
    corpus: str,
    options: IngestOptions = IngestOptions(),
    *,
    on_loaded: Callable[[LoadReport], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    streams: Collection[Path] = (),
    state: str | None = None,
    source: str | None = None,
) -> IngestReport:
    """Load JSONL files into `corpus`, then embed what has no vector yet. `streams`: the files
    that came through a pipe, loaded only when framed as `load_files` says. `state`: what the
    files were made from, recorded once all of that succeeded. `source`: what they are a
    snapshot of, as `load_files` takes it (with `options.replace`)."""
    check_corpus_name(corpus)
    with Store.open(store_dir, busy_timeout=options.wait) as store:
        return ingest_into(store, files, corpus, options, on_loaded=on_loaded,
                           progress=progress, streams=streams, state=state,
                           source=source)  # fmt: skip


def ingest_into(
    store: Store,
    files: list[Path],
    corpus: str,
    options: IngestOptions = IngestOptions(),
    *,
    on_loaded: Callable[[LoadReport], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    streams: Collection[Path] = (),
    state: str | None = None,
    source: str | None = None,
) -> IngestReport:
    """`ingest_files` into a store the caller opened (and closes): a run loading many corpora
    opens it once. Vectors of another identity are refused before the load."""
    check_corpus_name(corpus)
    if options.embedding is not None and not options.reindex:
        from index.vectors.storage import check_identity

        check_identity(store.db, options.embedding)
    report = IngestReport(load_files(store, files, corpus, partial=options.partial,
                                     reindex=options.reindex, streams=streams,
                                     max_delete=options.max_delete, source=source,
                                     replace=options.replace))  # fmt: skip
    report.chunks_total = _corpus_chunks(store, corpus)
    if on_loaded is not None:
        on_loaded(report.load)
    if options.embedding is not None:
        from index.vectors.backfill import embed_pending
        from index.vectors.client import EmbeddingError

        try:
            report.vectors = embed_pending(store, options.embedding, reindex=options.reindex,
                                           progress=progress)  # fmt: skip
        except EmbeddingError as exc:
            report.vectors_pending = _pending_vectors(store)
            exc.ingest = report  # type: ignore[attr-defined]
            raise
        report.vectors_pending = _pending_vectors(store)
    if state is not None:
        with store.write() as db:
            db.execute("UPDATE corpora SET origin = ? WHERE name = ?", (state, corpus))
    return report


def source_states(store_dir: str | Path | None) -> dict[str, str]:
    """What each corpus of the store was last made from (the text `ingest_files` was given),
    by corpus name; empty without a store."""
    try:
        store = Store.open(store_dir, readonly=True)
    except StoreError:
        return {}
    with store:
        return states_of(store)


def states_of(store: Store) -> dict[str, str]:
    """`source_states` of a store the caller opened."""
    rows = store.db.execute("SELECT name, origin FROM corpora WHERE origin IS NOT NULL")
    return dict(rows.fetchall())


def _corpus_chunks(store: Store, corpus: str) -> int:
    return int(store.db.execute(
        "SELECT coalesce(sum(d.chunks), 0) FROM documents d JOIN corpora k ON k.id = d.corpus_id "
        "WHERE k.name = ?", (corpus,)).fetchone()[0])  # fmt: skip


def _pending_vectors(store: Store) -> int:
    """Chunks with neither a vector nor a reason to have none (as `stats` counts them)."""
    return int(
        store.db.execute(
            "SELECT count(*) - count(embed_key) - count(embed_skip) FROM chunks"
        ).fetchone()[0]
    )


def ingest_records(
    store_dir: str | Path | None,
    records: Iterable[Any],
    corpus: str,
    options: IngestOptions = IngestOptions(),
    *,
    on_loaded: Callable[[LoadReport], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    source: str | None = None,
) -> IngestReport:
    """`ingest_files` for records in memory (e.g. `flatten_root(...)`), as a whole corpus."""
    check_corpus_name(corpus)
    refuse_other_identity(store_dir, options)
    refuse_other_source(store_dir, corpus, source, options)
    spooled = spool_records(records)
    try:
        return ingest_files(store_dir, [spooled], corpus, options, on_loaded=on_loaded,
                            progress=progress, source=source)  # fmt: skip
    finally:
        spooled.unlink(missing_ok=True)
