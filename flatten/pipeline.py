"""Files to records: list, filter by path, read, decode, redact, slice, number. The library core.

`flatten_root` and `flatten_repo` are the entry points; both stream records in path order and
fill a `RunReport` as they go. Reading and slicing run in worker processes on large trees; the
listing, the path rules and the order of the output stay in this process. A worker takes a
chunk of consecutive files and sends back one `Batch`: their records and their report counts,
summed. Asked for JSON lines (`encode_as`, what `flatten` writes), the workers encode them too:
this process then only copies bytes, where unpickling and encoding every record, then updating
the report file by file, was the serial part of a parallel run.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, overload

from flatten.classify import (
    NEVER_MINIFIED,
    SPEC_SUFFIXES,
    FileClass,
    classify,
    classify_text,
    include_exclude_reason,
    is_boilerplate,
    might_be_docs,
    path_skip_reason,
    suffix_of,
)
from flatten.content import Unreadable, decode, looks_minified, read_snapshot
from flatten.errors import NothingToFlatten, UsageError
from flatten.hashing import sha256_hex
from flatten.options import FlattenOptions
from flatten.parallel import in_background, ordered_chunks, uses_processes
from flatten.record import PROFILES, Provenance, Record, encode_line, new_record
from flatten.report import RunReport
from flatten.secrets import REDACTION_MARK, redact
from flatten.sources import Candidate, Skip, WorkTree, list_tree, resolve_root, work_tree
from flatten.sources.shorthand import expand_repo
from flatten.userinfo import strip_credentials
from flatten.writer import EncodedLines

if TYPE_CHECKING:
    from crawl.crawler import CrawlOptions, Page
from slicers import Slice, Sliced, SliceOptions, slice_text
from slicers.markdown import inline_text

# A notebook is read up to this many times --max-file-size, then kept when its text without
# outputs (`strip_outputs`) fits in --max-file-size.
NOTEBOOK_READ_FACTOR = 16


@dataclass(frozen=True)
class _Tree:
    """What every file of one tree shares. Bound to the function the workers run, so a task
    names only its files, and the parent builds no object per file."""

    options: FlattenOptions
    provenance: Provenance
    repo_prefix: str | None = None  # the root's path in the repository; None: not a git source
    encode_as: str | None = None  # a layout: the records come back as its JSON lines
    run: str = ""  # names this run: what workers learn about the tree is kept for it alone


class _Job(NamedTuple):
    candidate: Candidate
    dirty: bool  # the file is not what the provenance's commit holds


@dataclass
class FileOutcome:
    rel_path: str
    records: list[Record] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)  # records by kind, for the report
    skip: Skip | None = None
    size: int = 0
    notes: tuple[str, ...] = ()
    redactions: Counter[str] = field(default_factory=Counter)
    placeholders: Counter[str] = field(default_factory=Counter)


@dataclass
class Batch:
    """A chunk of consecutive files folded into one, where they were read (a worker): the
    parent, the serial part of a run, then takes one message, one write and a few counter
    updates per chunk rather than an outcome per file. The counts are summed in file order,
    so the report is what file-by-file updates make, down to its counters' key order."""

    records: list[Record] = field(default_factory=list)  # empty when encoded
    encoded: EncodedLines | None = None  # the records' lines, when the tree asked for a layout
    files: int = 0
    size: int = 0  # bytes read
    kinds: Counter[str] = field(default_factory=Counter)
    skips: list[Skip] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (path, note)
    redactions: Counter[str] = field(default_factory=Counter)
    placeholders: Counter[str] = field(default_factory=Counter)


def process_files(tree: _Tree, jobs: list[_Job]) -> Batch:
    """`process_file` over consecutive files, folded into one `Batch` (encoded when the tree
    asks for a layout)."""
    batch = Batch(files=len(jobs))
    for job in jobs:
        outcome = process_file(tree, job)
        batch.size += outcome.size
        if outcome.skip is not None:
            batch.skips.append(outcome.skip)
            continue
        batch.records += outcome.records
        batch.kinds.update(outcome.kinds)
        batch.redactions.update(outcome.redactions)
        batch.placeholders.update(outcome.placeholders)
        batch.notes += [(outcome.rel_path, note) for note in outcome.notes]
    if tree.encode_as is not None:
        layout = tree.encode_as
        lines = b"".join([encode_line(record, layout) for record in batch.records])
        batch.encoded = EncodedLines(lines, len(batch.records))
        batch.records = []
    return batch


def process_file(tree: _Tree, job: _Job) -> FileOutcome:
    """Read, decode, redact and slice one file. Never raises for anything the file contains."""
    rel = job.candidate.rel_path
    options = tree.options
    limit = options.max_file_size
    # A notebook's bytes are mostly outputs the slicer drops: the limit is on what it keeps.
    notebook = classify(rel).fmt == "notebook"
    try:
        data = read_snapshot(
            job.candidate.root,
            job.candidate.inner,
            limit * (NOTEBOOK_READ_FACTOR if notebook else 1),
        )
        decoded = decode(data)
    except Unreadable as exc:
        return FileOutcome(rel, skip=Skip(rel, exc.reason, exc.detail))
    text = decoded.text
    if len(data) > limit:  # only a notebook is read past the limit
        within = _notebook_within(rel, len(data), text, limit)
        if isinstance(within, Skip):
            return FileOutcome(rel, skip=within, size=len(data))
        text = within
    file_class = classify_text(rel, text)
    part_of_spec = _part_of_spec(tree, job.candidate, file_class, text)
    if part_of_spec is not None:
        file_class = replace(file_class, fmt="openapi", kind="openapi", is_docs=True)
    if options.kind == "docs" and not file_class.is_docs:
        return FileOutcome(
            rel, skip=Skip(rel, "not-docs", "JSON/YAML, not an API spec"), size=len(data)
        )
    if file_class.fmt not in NEVER_MINIFIED and looks_minified(text):
        return FileOutcome(rel, skip=Skip(rel, "minified", "very long lines"), size=len(data))
    redacted = redact(text, options.redaction)
    slicing = SliceOptions(options.max_chars, file_class.lang, title=part_of_spec or None)
    sliced = slice_text(file_class.fmt, redacted.text, rel, slicing)
    if not sliced.slices:
        return FileOutcome(rel, skip=Skip(rel, "empty", "no non-blank lines"), size=len(data))
    repo_path = None if tree.repo_prefix is None else tree.repo_prefix + rel
    records = build_records(
        rel, redacted.text, sliced, kind=file_class.kind, lang=file_class.lang,
        provenance=tree.provenance, redacted=bool(redacted.total), repo_path=repo_path,
        dirty=job.dirty,
    )  # fmt: skip
    notes = (*((decoded.note,) if decoded.note else ()), *sliced.notes)
    kinds = Counter(record.kind for record in records)
    return FileOutcome(rel, records, kinds, size=len(data), notes=notes,
                       redactions=redacted.counts, placeholders=redacted.placeholders)  # fmt: skip


def _part_of_spec(
    tree: _Tree, candidate: Candidate, file_class: FileClass, text: str
) -> str | None:
    """The title an API spec gives this file when it is a piece of one (`/users`, `schema
    User`; "" for a piece without a role), else None. Only JSON/YAML that is no spec itself
    and looks like a piece (a path item, an operation, a schema) is looked up."""
    if file_class.is_docs or suffix_of(candidate.inner).lower() not in SPEC_SUFFIXES:
        return None
    from flatten.spec_files import referring_title  # JSON/YAML only: the spec resolver loads here
    from slicers.refs import looks_like_fragment

    if not looks_like_fragment(text):
        return None
    return referring_title(tree.run, candidate.root, candidate.inner, tree.options.max_file_size)


def _notebook_within(rel: str, size: int, text: str, limit: int) -> str | Skip:
    """A notebook read past --max-file-size: its text without outputs when that fits, else the
    skip (`strip_outputs` writes ASCII, so its length is its size in bytes)."""
    from slicers.notebook import strip_outputs

    stripped = strip_outputs(text)
    if stripped is None:
        return Skip(rel, "too-large", f"{size} bytes > {limit}, and not a notebook")
    if len(stripped) > limit:
        detail = f"{len(stripped)} bytes without its outputs > {limit} ({size} with them)"
        return Skip(rel, "too-large", detail)
    return stripped


def build_records(
    source: str,
    text: str,
    sliced: Sliced,
    *,
    kind: str,
    lang: str | None,
    provenance: Provenance,
    redacted: bool,
    url: str | None = None,
    doc_title: str | None = None,
    repo_path: str | None = None,
    dirty: bool = False,
) -> list[Record]:
    """The records of one sliced document (a file or a crawled page)."""
    doc_hash = sha256_hex(text)
    title = doc_title or sliced.doc_title
    return [
        new_record(
            source=source,
            ordinal=ordinal,
            title=piece.title or title or source,
            content=piece.content,
            kind=kind,
            hash=sha256_hex(piece.content),
            doc_hash=doc_hash,
            provenance=provenance,
            lang=lang,
            doc_title=title,
            section=piece.section,
            anchor=piece.anchor,
            symbol=piece.symbol,
            start_line=piece.start_line,
            end_line=piece.end_line,
            url=url,
            repo_path=repo_path,
            dirty=dirty,
            redactions=piece.content.count(REDACTION_MARK) if redacted else 0,
            syntax_error=sliced.syntax_error,
            meta=piece.meta,
        )
        for ordinal, piece in enumerate(sliced.slices, start=1)
    ]


ProgressHook = Callable[[RunReport], None]


def flatten_tree(
    root: Path,
    options: FlattenOptions,
    report: RunReport,
    *,
    prefix: str = "",
    git: WorkTree | Callable[[], WorkTree | None] | None = None,
    on_progress: ProgressHook | None = None,
    encode_as: str | None = None,
) -> Iterator[Record | EncodedLines]:
    """Records for every file under `root` that `options` takes, in path order. `prefix` starts
    every source; `git` is the repository the files come from, if any: records carry its
    provenance, their path in it (`repoPath`) and whether the file differs from its commit.
    `git` may be a call that waits for it (`in_background`): it is asked once the tree is
    listed, so the two sets of git commands run at the same time.
    With `encode_as` (a layout, a key of `PROFILES`), the records of each chunk of files come
    as one `EncodedLines` instead, encoded in the worker that sliced them."""
    if encode_as is not None and encode_as not in PROFILES:  # before any worker would fail
        raise UsageError(f"no record layout {encode_as!r} (one of {', '.join(PROFILES)})",
                         reason="bad-layout")  # fmt: skip
    started = time.perf_counter()
    report.kind = options.kind
    report.listing, entries = list_tree(root, prefix, options.outputs)
    if callable(git):
        git = git()
    provenance = git.provenance if git else Provenance()
    repo_prefix = git.prefix if git else None
    changed = git.changed if git else frozenset()
    report.dirty = bool(changed) if git else None
    report.provenance = provenance
    jobs: list[_Job] = []
    for entry in entries:
        if isinstance(entry, Skip):
            report.skip(entry)
            continue
        reason = _path_rule(entry.rel_path, options)
        if reason:
            report.skip(Skip(entry.rel_path, reason))
        else:
            jobs.append(_Job(entry, entry.rel_path in changed))
    report.files_total = len(jobs)

    tree = _Tree(options, provenance, repo_prefix, encode_as, uuid.uuid4().hex)
    if uses_processes(len(jobs), options.workers):
        _preload_for_workers()
    for batch in ordered_chunks(partial(process_files, tree), jobs, workers=options.workers):
        report.files_done += batch.files
        report.bytes_read += batch.size
        for skip in batch.skips:
            report.skip(skip)
        kept = batch.files - len(batch.skips)  # a file is skipped or kept
        report.keep_counted(batch.kinds, batch.redactions, batch.placeholders, files=kept)
        report.notes += batch.notes
        if batch.encoded is None:
            yield from batch.records
        elif batch.encoded.count:
            yield batch.encoded
        report.seconds = time.perf_counter() - started
        if on_progress:
            on_progress(report)

    report.seconds = time.perf_counter() - started
    if report.files_kept == 0:
        raise _nothing_to_flatten(report)


def _preload_for_workers() -> None:
    """Import now what `process_file` imports on first use (every slicer, the spec resolver):
    a tree this large may be sliced by forked workers, which inherit it rather than each
    importing it again. A small run loads only what its files need."""
    import flatten.spec_files  # noqa: F401
    import slicers.refs  # noqa: F401
    from slicers.registry import preload

    preload()


def _path_rule(rel: str, options: FlattenOptions) -> str | None:
    reason = path_skip_reason(rel)
    if reason:
        return reason
    reason = include_exclude_reason(rel, options.include, options.exclude)
    if reason:
        return reason
    if is_boilerplate(rel) and not options.include:  # a matching --include asked for it
        return "boilerplate"
    if options.kind == "docs" and not might_be_docs(rel):
        return "not-docs"
    return None


def _nothing_to_flatten(report: RunReport) -> NothingToFlatten:
    by_reason = report.skipped_by_reason
    if report.kind == "docs" and by_reason.get("not-docs"):
        return NothingToFlatten(
            f"no documentation files found; {by_reason['not-docs']:,} code or other text "
            "file(s) were skipped by --kind docs",
            reason="no-docs",
            hint="re-run with --kind code (or --kind auto) to take code and other text files",
        )
    detail = ", ".join(f"{k} {v:,}" for k, v in by_reason.most_common(4)) or "no files at all"
    return NothingToFlatten(
        f"nothing to flatten ({detail})",
        reason="nothing-kept",
        hint="check the path, --include/--exclude and --kind",
    )


# Typed for callers: records, or with `encode_as` records and `EncodedLines`.
@overload
def flatten_root(root: str | Path, options: FlattenOptions | None = ...,
                 report: RunReport | None = ..., *, on_progress: ProgressHook | None = ...,
                 encode_as: None = ...) -> Iterator[Record]: ...  # fmt: skip
@overload
def flatten_root(root: str | Path, options: FlattenOptions | None = ...,
                 report: RunReport | None = ..., *, on_progress: ProgressHook | None = ...,
                 encode_as: str) -> Iterator[Record | EncodedLines]: ...  # fmt: skip
def flatten_root(
    root: str | Path,
    options: FlattenOptions | None = None,
    report: RunReport | None = None,
    *,
    on_progress: ProgressHook | None = None,
    encode_as: str | None = None,
) -> Iterator[Any]:
    """Flatten a local directory. Inside a git work tree, records carry its commit and origin.
    `encode_as` (a layout): the records come as JSON lines (see `flatten_tree`)."""
    options = options or FlattenOptions()
    report = report if report is not None else RunReport()
    path = resolve_root(root)
    report.source = str(path)
    # The work tree's git commands (a `status` of every file) run while the tree is listed.
    git = in_background(partial(work_tree, path))
    yield from flatten_tree(path, options, report, git=git, on_progress=on_progress,
                            encode_as=encode_as)  # fmt: skip


@overload
def flatten_repo(url: str, ref: str | None = ..., options: FlattenOptions | None = ...,
                 report: RunReport | None = ..., *, subdir: str | None = ...,
                 token_env: str | None = ..., on_progress: ProgressHook | None = ...,
                 encode_as: None = ...) -> Iterator[Record]: ...  # fmt: skip
@overload
def flatten_repo(url: str, ref: str | None = ..., options: FlattenOptions | None = ...,
                 report: RunReport | None = ..., *, subdir: str | None = ...,
                 token_env: str | None = ..., on_progress: ProgressHook | None = ...,
                 encode_as: str) -> Iterator[Record | EncodedLines]: ...  # fmt: skip
def flatten_repo(
    url: str,
    ref: str | None = None,
    options: FlattenOptions | None = None,
    report: RunReport | None = None,
    *,
    subdir: str | None = None,
    token_env: str | None = None,
    on_progress: ProgressHook | None = None,
    encode_as: str | None = None,
) -> Iterator[Any]:
    """Clone `url` (shallow, into a temporary directory that is always removed) and flatten it.

    `url` may be a shorthand (`owner/repo`, `gitlab:group/repo`) that is not a local path: it is
    expanded to its https URL, and the report says so. `encode_as` as for `flatten_root`."""
    from flatten.sources import clone  # the clone (and its URL checks) load for a --repo run alone

    options = options or FlattenOptions()
    report = report if report is not None else RunReport()
    expanded = expand_repo(url)
    if expanded is not None:
        report.expanded = (url, expanded)
        url = expanded
    with clone(url, ref, subdir=subdir, token_env=token_env) as checkout:
        report.source = checkout.provenance.repo_url or url
        yield from flatten_tree(
            checkout.root,
            options,
            report,
            prefix=checkout.prefix,  # sources keep --subdir: they are the repository's paths
            git=WorkTree(checkout.provenance, "", frozenset()),
            on_progress=on_progress,
            encode_as=encode_as,
        )


def _titled_by_page(sliced: Sliced, page: Page) -> Sliced:
    """A page's first slice is named by the page: when it opens at the page's H1 (and took the
    name of a heading below, as a heading-only section merged into the next does), it is
    titled and anchored by the H1 instead. Only a whole section is: the first part of a section
    cut for the budget keeps its section's name, which its other parts carry with their
    numbers (`Helper Functions (part 1/8)`, not `Developer Interface` then `(part 2/8)`)."""
    if not sliced.slices:
        return sliced
    first = sliced.slices[0]
    opening = first.content.split("\n", 1)[0]
    if first.title == page.title or not opening.startswith("# ") or _is_cut(sliced.slices):
        return sliced
    if inline_text(opening[2:]) != page.title:
        return sliced
    anchor = dict(page.heading_ids).get(first.start_line - 1)
    retitled = replace(first, title=page.title, section=(page.title,), anchor=anchor)
    return replace(sliced, slices=[retitled, *sliced.slices[1:]])


def _is_cut(slices: list[Slice]) -> bool:
    """Whether the first slice is a part of a section: the next one continues that section
    (the same breadcrumb and anchor: each heading's section has its own)."""
    if len(slices) < 2:
        return False
    first, second = slices[:2]
    return bool(first.section) and (first.section, first.anchor) == (second.section, second.anchor)


def _without_title_preamble(sliced: Sliced, text: str, page: Page) -> Sliced:
    """Text before the first heading that only repeats the page's title (a logo's alt text
    over the H1: "HTTPX") is no slice of its own: it folds into the next one."""
    if len(sliced.slices) < 2 or sliced.slices[0].section:
        return sliced
    first, second = sliced.slices[:2]
    if inline_text(" ".join(first.content.split())) != page.title:
        return sliced
    lines = text.split("\n")[first.start_line - 1 : second.end_line]
    folded = replace(second, content="\n".join(lines), start_line=first.start_line)
    return replace(sliced, slices=[folded, *sliced.slices[2:]])


def _with_page_ids(sliced: Sliced, page: Page) -> Sliced:
    """A crawled page's anchors are ids its HTML has: a slug the slicer made up for a heading
    without one (MkDocs' H1) would cite a fragment that lands nowhere, so it goes."""
    ids = {anchor for _, anchor in page.heading_ids}
    if all(piece.anchor is None or piece.anchor in ids for piece in sliced.slices):
        return sliced
    kept = [piece if piece.anchor is None or piece.anchor in ids else replace(piece, anchor=None)
            for piece in sliced.slices]  # fmt: skip
    return replace(sliced, slices=kept)


def flatten_url(
    url: str,
    options: FlattenOptions | None = None,
    report: RunReport | None = None,
    *,
    crawl_options: CrawlOptions | None = None,
) -> Iterator[Record]:
    """Crawl a documentation site (bounded, same host) and flatten each page's main content.

    Pages come in URL order; `source` and `url` are the page URL; the markdown slicer gives
    sections with the page's own heading ids as anchors.
    """
    # Imported here: the crawler brings httpx and selectolax, which only --url needs.
    from crawl.crawler import CrawlError, CrawlOptions, CrawlReport, crawl, nothing_fetched

    options = options or FlattenOptions()
    report = report if report is not None else RunReport()
    started = time.perf_counter()
    crawl_report = CrawlReport()
    report.source, report.listing, report.kind = strip_credentials(url), "crawl", "html"
    # --include/--exclude filter the crawl's URL paths, before anything is fetched.
    crawl_options = replace(crawl_options or CrawlOptions(), include=options.include,
                            exclude=options.exclude)  # fmt: skip
    try:
        pages = crawl(url, crawl_options, crawl_report)
    finally:
        report.crawl = crawl_report.to_dict()
        for page_url, reason, detail in crawl_report.skipped:
            report.skip(Skip(page_url, reason, detail))
    if not pages:
        raise nothing_fetched(url, crawl_report)
    report.files_total = len(pages)
    for page in pages:
        report.files_done += 1
        report.bytes_read += len(page.markdown.encode("utf-8"))
        redacted = redact(page.markdown, options.redaction)
        slicing = SliceOptions(options.max_chars, heading_ids=page.heading_ids, title=page.title)
        sliced = slice_text("markdown", redacted.text, page.url, slicing)
        sliced = _without_title_preamble(sliced, redacted.text, page)
        sliced = _with_page_ids(_titled_by_page(sliced, page), page)
        if not sliced.slices:
            report.skip(Skip(page.url, "empty", "no main content"))
            continue
        records = build_records(
            page.url, redacted.text, sliced, kind="html", lang="html", provenance=Provenance(),
            redacted=bool(redacted.total), url=page.url, doc_title=page.title,
        )  # fmt: skip
        report.keep(records, redacted.counts, redacted.placeholders)
        yield from records
        report.seconds = time.perf_counter() - started
    report.seconds = time.perf_counter() - started
    if report.files_kept == 0:  # as a tree with nothing kept: never an empty "snapshot"
        raise CrawlError(
            f"no text found on the {len(pages):,} page(s) fetched from {url}",
            reason="no-text",
            hint="the pages' main content is empty (rendered by JavaScript?); the report "
            "lists each page",
        )
