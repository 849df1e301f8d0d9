"""`docs-flatten index` and `ingest`: records or sources into the store, then their vectors."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from flatten.cli.jobs import Job, flatten_settings, plan, rerun_with
from flatten.cli.options import (
    CRAWL_DEFAULTS,
    DEFAULTS,
    ApiKeyEnv,
    BaseUrl,
    Concurrency,
    Config,
    Delay,
    Exclude,
    Header,
    IgnoreRobots,
    Include,
    Json,
    Kind,
    KindOption,
    MaxChars,
    MaxDepth,
    MaxFileSize,
    MaxPages,
    MaxPageSize,
    Model,
    NoSitemap,
    Quiet,
    Ref,
    Repo,
    Root,
    Scope,
    StoreDir,
    Subdir,
    Timeout,
    TokenEnv,
    Url,
    Workers,
    close,
    corpus_name,
    crawl_options,
    embedding_config,
    read_config,
    settings_options,
    source_records,
)
from flatten.cli.output import add_cli_hint, error_lines, json_line, say
from flatten.config import SOURCE_KEYS
from flatten.corpus_names import root_corpus
from flatten.errors import FlattenError, UsageError
from flatten.progress import Progress
from flatten.summary import Summary

# The pipeline and the index load when a command runs, not for --help.
if TYPE_CHECKING:
    from index.ingest import IngestOptions, IngestReport
    from index.loader import LoadReport


@contextlib.contextmanager
def summarized(summary: Summary, as_json: bool) -> Iterator[Summary]:
    """Fill `summary` in the block; with --json print it on stdout whatever happens (a failed
    run prints `ok: false` and its error before the error's own lines on stderr)."""
    started = time.perf_counter()
    try:
        yield summary
    except BaseException as exc:
        add_cli_hint(exc)
        summary.fail(exc)
        raise
    finally:
        summary.timings.total = time.perf_counter() - started
        if as_json:
            json_line(summary)


def _add_ingest(summary: Summary, report: IngestReport) -> None:
    summary.add_load(report.load, report.chunks_total)
    if report.vectors is not None:
        summary.add_vectors(report.vectors, report.vectors_pending)


def _load(
    store_dir: str | None,
    files: list[Path],
    corpus: str,
    options: IngestOptions,
    summary: Summary,
    *,
    talk: bool,
    streams: list[Path] | None = None,
) -> None:
    """Load, then (with embeddings configured) embed what has no vector yet; say what was done
    on stderr and in `summary`."""
    from index.ingest import ingest_files
    from index.snapshot import TooManyRemovals
    from index.vectors.client import EmbeddingError

    progress = Progress("embedding", enabled=talk)

    def loaded(report: LoadReport) -> None:
        if talk:
            say(report.summary())
        if options.embedding is not None:
            stack.enter_context(progress)  # the bar shows while embedding, not while loading

    def embedded(done: int, total: int) -> None:
        progress.update(done, total, "texts")

    try:
        with contextlib.ExitStack() as stack:
            report = ingest_files(store_dir, files, corpus, options, on_loaded=loaded,
                                  progress=embedded, streams=streams or ())  # fmt: skip
    except TooManyRemovals as exc:
        exc.hint = f"if they should go, allow it: `{rerun_with('--max-delete', str(exc.removing))}`"
        raise
    except EmbeddingError as exc:
        if exc.report is not None and exc.report.embedded:
            say(exc.report.summary(), err=True)
            exc.hint = (exc.hint + "; " if exc.hint else "") + (
                f"the {exc.report.embedded:,} vectors embedded before the failure are kept: "
                "run the same command again to resume"
            )
        ingest = getattr(exc, "ingest", None)
        if ingest is not None:  # the load happened: the summary says so
            summary.add_load(ingest.load, ingest.chunks_total)
            if exc.report is not None:
                summary.add_vectors(exc.report, ingest.vectors_pending)
        raise
    _add_ingest(summary, report)
    if talk and report.vectors is not None:
        say(report.vectors.summary())


def _ingest_options(
    store_dir: str | None, settings: dict[str, Any], no_embed: bool, base_url: str | None,
    model: str | None, api_key_env: str | None, *, partial: bool, reindex: bool, wait: float,
    max_delete: str | int | None,
) -> IngestOptions:  # fmt: skip
    """The load settings from the flags; vectors of another identity refused here, before any
    flattening or crawling."""
    from index.ingest import IngestOptions, refuse_other_identity
    from index.snapshot import parse_limit

    embedding = None
    if not no_embed:
        embedding = embedding_config(settings, base_url, model, api_key_env)
    options = IngestOptions(partial=partial, reindex=reindex, wait=wait, embedding=embedding,
                            max_delete=parse_limit(max_delete))  # fmt: skip
    refuse_other_identity(store_dir, options)
    return options


Partial = Annotated[
    bool,
    typer.Option(
        "--partial",
        help="Add and update only; keep documents "
        "this run does not mention (default: the input is the whole corpus).",
    ),
]
Reindex = Annotated[bool, typer.Option("--reindex", help="Drop the corpus and load it afresh.")]
Wait = Annotated[
    float,
    typer.Option("--wait", metavar="SECONDS", help="How long to wait for another writer."),
]
NoEmbed = Annotated[
    bool, typer.Option("--no-embed", help="Load only; leave embedding for a later run.")
]


MaxDelete = Annotated[
    str | None,
    typer.Option(
        "--max-delete",
        metavar="N|PCT%",
        show_default=False,
        help="Documents a snapshot may remove from the corpus, as a number or a percentage "
        "\\[default: half of the corpus, or 10, whichever is more]; past it nothing is written.",
    ),
]
OptionalCorpus = Annotated[
    str | None,
    typer.Option(
        "--corpus",
        show_default=False,
        callback=corpus_name,
        help="Corpus name \\[default: the repository's name (--repo), the folder's name "
        "(--root, a folder PATH), the site's host and path (--url); JSONL and stdin need one].",
    ),
]


def index_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH",
            show_default=False,
            help="JSONL files, - for stdin, or directories (flattened on the fly).",
        ),
    ],
    corpus: OptionalCorpus = None,
    store_dir: StoreDir = None,
    reindex: Reindex = False,
    partial: Partial = False,
    max_delete: MaxDelete = None,
    wait: Wait = 60.0,
    kind: KindOption = Kind.docs,
    include: Include = None,
    exclude: Exclude = None,
    max_file_size: MaxFileSize = DEFAULTS["max_file_size"],
    max_chars: MaxChars = DEFAULTS["max_chars"],
    config: Config = None,
    no_embed: NoEmbed = False,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Load JSONL records (ours or foreign) or folders into the index, incrementally.

    With embeddings configured, chunks without a vector are then embedded (resumably)."""
    from flatten.pipeline import flatten_root
    from flatten.report import RunReport
    from index.loader import spool_records, spool_stdin, stdin_is_stream

    summary = Summary(command="index", corpus=corpus, source=" ".join(paths))
    with summarized(summary, as_json):
        settings = read_config(config)
        name = corpus or _index_corpus(paths)
        summary.corpus = name
        loading = _ingest_options(store_dir, settings, no_embed, base_url, model, api_key_env,
                                  partial=partial, reindex=reindex, wait=wait,
                                  max_delete=max_delete)  # fmt: skip
        flat = flatten_settings({"kind": kind, "include": include, "exclude": exclude,
                                 "max_file_size": max_file_size, "max_chars": max_chars},
                                settings)  # fmt: skip
        options = settings_options(flat, 0, settings)
        run = RunReport(kind=options.kind) if any(Path(p).is_dir() for p in paths) else None
        temporary: list[Path] = []
        files: list[Path] = []
        streams: list[Path] = []  # piped: loaded only when it ends with the writer's closing mark
        try:
            for raw in paths:
                if raw == "-":
                    temporary.append(spool_stdin())
                    files.append(temporary[-1])
                    if stdin_is_stream():
                        streams.append(temporary[-1])
                    continue
                path = Path(raw)
                if path.is_dir():
                    assert run is not None
                    temporary.append(spool_records(flatten_root(path, options, run)))
                    files.append(temporary[-1])
                elif path.is_file():
                    files.append(path)
                else:
                    raise UsageError(f"not a file or directory: {raw}", reason="path-missing")
            if run is not None:
                summary.add_run(run)
                if not quiet:
                    say(run.summary(), err=True)
            _load(store_dir, files, name, loading, summary, talk=not as_json and not quiet,
                  streams=streams)  # fmt: skip
        finally:
            for path in temporary:
                path.unlink(missing_ok=True)


def _index_corpus(paths: list[str]) -> str:
    """The corpus of `index` without --corpus: the folders' name, when every path is a folder
    of that name; JSONL and stdin carry no name (see flatten.corpus_names)."""
    names = {root_corpus(p) for p in paths if p != "-" and Path(p).is_dir()}
    if len(names) == 1 and all(p != "-" and Path(p).is_dir() for p in paths):
        return names.pop()
    stems = [Path(p).stem for p in paths if p != "-" and Path(p).stem]
    suggested = stems[0] if stems else "docs"
    why = ("stdin carries no corpus name" if "-" in paths else
           "JSONL records carry no corpus name" if not names else
           "these folders have different names")  # fmt: skip
    raise UsageError(
        f"name the corpus with --corpus NAME: {why}, and a snapshot loaded into the wrong "
        "corpus removes that corpus's other documents",
        reason="corpus-needed", hint=f"name it, e.g. `{rerun_with('--corpus', suggested)}`",
    )  # fmt: skip


def ingest_command(
    corpus: OptionalCorpus = None,
    root: Root = None,
    repo: Repo = None,
    ref: Ref = None,
    subdir: Subdir = None,
    token_env: TokenEnv = None,
    url: Url = None,
    scope: Scope = None,
    max_pages: MaxPages = CRAWL_DEFAULTS["max_pages"],
    max_depth: MaxDepth = CRAWL_DEFAULTS["max_depth"],
    concurrency: Concurrency = CRAWL_DEFAULTS["concurrency"],
    delay: Delay = CRAWL_DEFAULTS["delay"],
    timeout: Timeout = CRAWL_DEFAULTS["timeout"],
    max_page_size: MaxPageSize = CRAWL_DEFAULTS["max_page_size"],
    ignore_robots: IgnoreRobots = False,
    no_sitemap: NoSitemap = False,
    header: Header = None,
    kind: KindOption = Kind.docs,
    include: Include = None,
    exclude: Exclude = None,
    max_file_size: MaxFileSize = DEFAULTS["max_file_size"],
    max_chars: MaxChars = DEFAULTS["max_chars"],
    workers: Workers = 0,
    store_dir: StoreDir = None,
    reindex: Reindex = False,
    max_delete: MaxDelete = None,
    wait: Wait = 60.0,
    config: Config = None,
    no_embed: NoEmbed = False,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Flatten a folder, repository or docs site and index it: the one-liner for CI.

    Without --root, --repo or --url, every source the config lists is refreshed, one after
    another, each into its own corpus."""
    values = {k: v for k, v in locals().items() if k in SOURCE_KEYS}
    try:
        settings = read_config(config)
        jobs = plan(values, settings)
    except FlattenError as exc:  # before any source ran: one summary says why
        if as_json:
            failed = Summary(command="ingest")
            failed.fail(exc)
            json_line(failed)
        raise
    run = _Run(store_dir=store_dir, settings=settings, header=header, workers=workers,
               reindex=reindex, wait=wait, no_embed=no_embed, base_url=base_url, model=model,
               api_key_env=api_key_env, as_json=as_json, quiet=quiet)  # fmt: skip
    if len(jobs) == 1:
        run.ingest(jobs[0])
        return
    failed = []
    for job in jobs:  # one after another, in one process: the seam for a pool or shards later
        if not quiet:
            say(f"{job.where}: {job.kind} {job.source} -> corpus {job.corpus}", err=True)
        try:
            run.ingest(job)
        except FlattenError as exc:  # said, and the next source still runs
            for line in error_lines(exc):
                say(line, err=True)
            failed.append(exc.exit_code)
    if failed:
        say(f"error: {len(failed)} of {len(jobs)} sources failed", err=True)
        raise typer.Exit(max(failed))


@dataclass(frozen=True)
class _Run:
    """What every job of one `ingest` shares: the store, the config, the flags not per source."""

    store_dir: str | None
    settings: dict[str, Any]
    header: list[str] | None
    workers: int
    reindex: bool
    wait: float
    no_embed: bool
    base_url: str | None
    model: str | None
    api_key_env: str | None
    as_json: bool
    quiet: bool

    def ingest(self, job: Job) -> None:
        """Flatten one source and load it into its corpus; its summary on stdout with --json."""
        from flatten.report import RunReport
        from index.loader import spool_records

        v = job.value
        summary = Summary(command="ingest", corpus=job.corpus, source=job.source)
        with summarized(summary, self.as_json):
            loading = _ingest_options(self.store_dir, self.settings, self.no_embed,
                                      self.base_url, self.model, self.api_key_env, partial=False,
                                      reindex=self.reindex, wait=self.wait,
                                      max_delete=v("max_delete"))  # fmt: skip
            options = settings_options(job.settings, self.workers, self.settings)
            crawling = crawl_options(v("url"), v("scope"), v("max_pages"), v("max_depth"),
                                     v("concurrency"), v("delay"), v("timeout"),
                                     str(v("max_page_size")), v("ignore_robots"),
                                     v("no_sitemap"), self.header)  # fmt: skip
            report = RunReport(source=job.source)
            talk = not self.quiet and not self.as_json
            try:
                with Progress("ingest", enabled=not self.quiet) as progress:
                    root = v("root")
                    records = source_records(Path(root) if root is not None else None,
                                             v("repo"), v("ref"), v("subdir"), v("token_env"),
                                             options, report, progress, url=v("url"),
                                             crawling=crawling)  # fmt: skip
                    try:
                        spooled = spool_records(records)
                    finally:
                        close(records)
            finally:
                summary.add_run(report)  # what was seen, even when the flatten failed
            try:
                if talk:
                    say(report.summary(), err=True)
                _load(self.store_dir, [spooled], job.corpus, loading, summary, talk=talk)
            finally:
                spooled.unlink(missing_ok=True)
