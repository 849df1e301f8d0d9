"""The run summary, schema 1: what `flatten --report`, `index --json` and `ingest --json` write.

One dataclass tree, written by `flatten.jsonform` (camelCase keys), so the three commands cannot
drift apart. Every key is always present: a part that did not run is null (`files` on `index` of
a JSONL file, `load` on `flatten`, `vectors` without embeddings), so a script reads the same
shape whatever happened. A failed run is the same object with `ok: false` and `error`.

The stages' own reports (`RunReport`, the index's `LoadReport` and `EmbedReport`) are read here
by their attributes: this module imports neither the pipeline nor the index.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from flatten.errors import FlattenError
from flatten.jsonform import json_field
from flatten.userinfo import strip_credentials

if TYPE_CHECKING:
    from flatten.report import RunReport

SCHEMA = 1
_SECONDS = json_field(digits=3)


class LoadLike(Protocol):
    """What the summary reads of the index's `LoadReport`."""

    corpus: str
    added: int
    updated: int
    unchanged: int
    removed: int
    chunks: int
    lines: int
    malformed: list[tuple[str, int, str]]
    seconds: float
    partial: str | None
    compacted: Any  # index.store.Compaction | None: bytes_before, bytes_after


class VectorsLike(Protocol):
    """What the summary reads of the index's `EmbedReport`."""

    model: str
    dimension: int | None
    embedded: int
    reused: int
    skipped: dict[str, int]
    rejected: list[tuple[str, str]]
    requests: int
    collected: int
    seconds: float


@dataclass
class Files:
    seen: int = 0
    kept: int = 0
    skipped: int = 0
    skipped_by_reason: dict[str, int] = field(default_factory=dict)
    bytes_read: int = 0


@dataclass
class Slices:
    total: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)


@dataclass
class Redactions:
    total: int = 0
    by_rule: dict[str, int] = field(default_factory=dict)
    placeholders_kept: dict[str, int] = field(default_factory=dict)  # stand-ins, not secrets


@dataclass
class MalformedLine:
    file: str
    line: int
    reason: str


@dataclass
class Load:
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    malformed: int = 0
    lines: int = 0
    malformed_lines: list[MalformedLine] = field(default_factory=list)
    # The store compacted after the load (FTS5 optimize, VACUUM): it had freed a quarter of
    # its pages or more (index.store.SPARSE_SHARE); null when it was not.
    compacted: Compacted | None = None


@dataclass
class Compacted:
    bytes_before: int
    bytes_after: int


@dataclass
class Chunks:
    total: int = 0  # in the corpus after the run
    written: int = 0  # by this run (new and changed documents)


@dataclass
class Vectors:
    model: str = ""
    dimension: int | None = None
    embedded: int = 0  # texts sent and stored
    reused: int = 0  # chunks whose text had a vector already
    pending: int = 0  # chunks still without a vector after the run (a later run embeds them)
    failed: int = 0  # inputs the server refused (skipped, reported, not retried)
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> chunks never sent
    requests: int = 0
    collected: int = 0  # vectors no chunk uses any more, deleted


@dataclass
class Timings:
    flatten: float | None = field(default=None, metadata=_SECONDS)
    load: float | None = field(default=None, metadata=_SECONDS)
    embed: float | None = field(default=None, metadata=_SECONDS)
    total: float = field(default=0.0, metadata=_SECONDS)


@dataclass
class ErrorInfo:
    reason: str
    message: str
    hint: str | None = None


@dataclass
class SkippedPath:
    path: str
    reason: str
    detail: str = ""
    files: int = 1


@dataclass
class Note:
    path: str
    note: str


@dataclass
class Summary:
    schema: int = SCHEMA
    command: str = ""  # flatten, pack, index or ingest
    ok: bool = True
    corpus: str | None = None
    source: str | None = None
    source_expanded: dict[str, str] | None = None  # {"from": shorthand, "to": URL}
    repo_url: str | None = None
    ref: str | None = None
    commit: str | None = None
    dirty: bool | None = None  # the work tree had uncommitted changes (when the source says)
    # A source of a many-source run skipped as unchanged since its last load (a repository whose
    # remote names the same commit, a manifest entry the same as before): true; false when it
    # ran; null when no such check applies (one source on the flags, flatten).
    up_to_date: bool | None = None
    kind: str | None = None
    listing: str | None = None  # git ls-files, walk or crawl
    files: Files | None = None
    slices: Slices | None = None
    redactions: Redactions | None = None
    load: Load | None = None
    chunks: Chunks | None = None
    vectors: Vectors | None = None
    timings: Timings = field(default_factory=Timings)
    error: ErrorInfo | None = None
    skipped: list[SkippedPath] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    crawl: dict[str, Any] | None = None
    pack: dict[str, Any] | None = None
    # {reason, detail} when the source was seen only in part (a truncated crawl, pages lost to
    # errors): its load added and updated, and removed nothing.
    partial: dict[str, str] | None = None

    def __post_init__(self) -> None:
        # A source is shown and kept: a password in `--url` (or a repo URL) goes no further.
        self.source = strip_credentials(self.source) if self.source else None

    def add_run(self, run: RunReport) -> None:
        """The flatten stage: source, provenance, files, slices, redactions, skipped paths."""
        self.source = strip_credentials(self.source or run.source) or None
        if run.expanded:
            self.source_expanded = {"from": run.expanded[0], "to": run.expanded[1]}
        origin = run.provenance
        self.repo_url, self.commit, self.ref = origin.repo_url, origin.commit, origin.ref
        self.dirty = run.dirty
        self.kind, self.listing = run.kind, run.listing or None
        self.files = Files(run.files_seen, run.files_kept, run.files_skipped,
                           _sorted(run.skipped_by_reason), run.bytes_read)  # fmt: skip
        self.slices = Slices(run.slices, _sorted(run.slices_by_kind))
        self.redactions = Redactions(sum(run.redactions.values()), _sorted(run.redactions),
                                     _sorted(run.placeholders))  # fmt: skip
        self.skipped = [SkippedPath(s.path, s.reason, s.detail, s.files) for s in run.skipped]
        self.notes = [Note(path, note) for path, note in run.notes]
        self.crawl, self.pack = run.crawl, run.pack
        self.partial = run.partial
        self.timings.flatten = run.seconds
        if run.error is not None and self.error is None:
            self.ok, self.error = False, run.error

    def add_state(self, state: Any, up_to_date: bool) -> None:
        """What a many-source run knows of a source (`flatten.manifest.SourceState`) before or
        without flattening it."""
        self.up_to_date = up_to_date
        if state is not None:
            self.ref, self.commit = state.ref, state.commit

    def add_load(self, load: LoadLike, chunks_total: int) -> None:
        self.corpus = load.corpus
        self.load = Load(load.added, load.updated, load.unchanged, load.removed,
                         len(load.malformed), load.lines,
                         [MalformedLine(f, n, r) for f, n, r in load.malformed])  # fmt: skip
        done = load.compacted
        if done is not None:
            self.load.compacted = Compacted(done.bytes_before, done.bytes_after)
        self.chunks = Chunks(total=chunks_total, written=load.chunks)
        self.timings.load = load.seconds
        if load.partial and self.partial is None:
            self.partial = {"reason": load.partial,
                            "detail": "the input's closing mark says its run saw the source "
                            "in part"}  # fmt: skip

    def add_vectors(self, vectors: VectorsLike, pending: int) -> None:
        self.vectors = Vectors(
            model=vectors.model, dimension=vectors.dimension, embedded=vectors.embedded,
            reused=vectors.reused, pending=pending, failed=len(vectors.rejected),
            skipped=_sorted(Counter(vectors.skipped)), requests=vectors.requests,
            collected=vectors.collected,
        )  # fmt: skip
        self.timings.embed = vectors.seconds

    def fail(self, exc: BaseException) -> None:
        """The run ended early: `ok` false and why (any exception: a failed run never says ok)."""
        self.ok = False
        self.error = error_info(exc)


def error_info(exc: BaseException) -> ErrorInfo:
    """The reason, message and hint of an exception, as the summary names them."""
    if isinstance(exc, FlattenError):
        return ErrorInfo(exc.reason, exc.message, exc.hint)
    if isinstance(exc, KeyboardInterrupt):
        return ErrorInfo("interrupted", "interrupted before the end")
    if isinstance(exc, BrokenPipeError):
        return ErrorInfo("output-closed", "the reader of stdout went away")
    return ErrorInfo("internal-error", f"{type(exc).__name__}: {exc}")


def _sorted(counts: Counter[str] | dict[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items()))
