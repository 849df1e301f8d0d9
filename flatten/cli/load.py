"""`docs-flatten index` and `ingest`: records or sources into the store, then their vectors."""

from __future__ import annotations

import contextlib
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

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
    flatten_options,
    source_records,
)
from flatten.cli.output import echo_json
from flatten.config import load_config
from flatten.errors import UsageError
from flatten.pipeline import FlattenOptions, flatten_root
from flatten.progress import Progress
from flatten.report import RunReport
from index.ingest import IngestOptions, ingest_files, refuse_other_identity
from index.loader import LoadReport, spool_records, spool_stdin, stdin_is_stream
from index.vectors.client import EmbeddingError


def _load(
    store_dir: str | None,
    files: list[Path],
    corpus: str,
    options: IngestOptions,
    *,
    as_json: bool,
    quiet: bool,
    streams: list[Path] | None = None,
) -> None:
    """Load, then (with embeddings configured) embed what has no vector yet; say what was done."""
    talk = not as_json and not quiet
    progress = Progress("embedding", enabled=talk)

    def loaded(report: LoadReport) -> None:
        if talk:
            typer.echo(report.summary())
        if options.embedding is not None:
            stack.enter_context(progress)  # the bar shows while embedding, not while loading

    def embedded(done: int, total: int) -> None:
        progress.update(done, total, "texts")

    try:
        with contextlib.ExitStack() as stack:
            report = ingest_files(store_dir, files, corpus, options, on_loaded=loaded,
                                  progress=embedded, streams=streams or ())  # fmt: skip
    except EmbeddingError as exc:
        if exc.report is not None and exc.report.embedded:
            typer.echo(exc.report.summary(), err=True)
            exc.hint = (exc.hint + "; " if exc.hint else "") + (
                f"the {exc.report.embedded:,} vectors embedded before the failure are kept: "
                "run the same command again to resume"
            )
        ingest = getattr(exc, "ingest", None)
        if as_json and ingest is not None:  # the load happened: say so on stdout
            done = exc.report.to_dict() if exc.report is not None else {}
            echo_json({**ingest.load.to_dict(), "vectors": {**done, "error": exc.reason}})
        raise
    if talk and report.vectors is not None:
        typer.echo(report.vectors.summary())
    if as_json:
        echo_json(report.to_dict())


def _ingest_options(
    store_dir: str | None, settings: dict[str, Any], no_embed: bool, base_url: str | None,
    model: str | None, api_key_env: str | None, *, partial: bool, reindex: bool, wait: float,
) -> IngestOptions:  # fmt: skip
    """The load settings from the flags; vectors of another identity refused here, before any
    flattening or crawling."""
    embedding = None
    if not no_embed:
        embedding = embedding_config(settings, base_url, model, api_key_env)
    options = IngestOptions(partial=partial, reindex=reindex, wait=wait, embedding=embedding,
                            reindex_command=_rerun_with_reindex())  # fmt: skip
    refuse_other_identity(store_dir, options)
    return options


def _rerun_with_reindex() -> str:
    """This very command with --reindex: what to run when the vector identity changed."""
    args = sys.argv[1:]
    return shlex.join(["docs-flatten", *args] + ([] if "--reindex" in args else ["--reindex"]))


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


def index_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH",
            show_default=False,
            help="JSONL files, - for stdin, or directories (flattened on the fly).",
        ),
    ],
    corpus: Annotated[
        str | None,
        typer.Option(
            "--corpus",
            show_default=False,
            callback=corpus_name,
            help="Corpus name \\[default: the first path's name].",
        ),
    ] = None,
    store_dir: StoreDir = None,
    reindex: Reindex = False,
    partial: Partial = False,
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
    settings = load_config(config)
    loading = _ingest_options(store_dir, settings, no_embed, base_url, model, api_key_env,
                              partial=partial, reindex=reindex, wait=wait)  # fmt: skip
    options = flatten_options(kind, include, exclude, max_file_size, max_chars, 0, settings)
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
                temporary.append(spool_records(_flatten_dir(path, options, quiet)))
                files.append(temporary[-1])
            elif path.is_file():
                files.append(path)
            else:
                raise UsageError(f"not a file or directory: {raw}", reason="path-missing")
        name = corpus or _default_corpus(paths[0])
        _load(store_dir, files, name, loading, as_json=as_json, quiet=quiet, streams=streams)
    finally:
        for path in temporary:
            path.unlink(missing_ok=True)


def _flatten_dir(path: Path, options: FlattenOptions, quiet: bool) -> Any:
    report = RunReport()
    records = flatten_root(path, options, report)
    yield from records
    if not quiet:
        typer.echo(report.summary(), err=True)


def _default_corpus(first: str) -> str:
    if first == "-":
        return "default"
    path = Path(first).resolve()
    return path.stem if path.is_file() else path.name or "default"


def ingest_command(
    corpus: Annotated[str, typer.Option("--corpus", callback=corpus_name, help="Corpus name.")],
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
    wait: Wait = 60.0,
    config: Config = None,
    no_embed: NoEmbed = False,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Flatten a folder, repository or docs site and index it: the one-liner for CI."""
    settings = load_config(config)
    loading = _ingest_options(store_dir, settings, no_embed, base_url, model, api_key_env,
                              partial=False, reindex=reindex, wait=wait)  # fmt: skip
    options = flatten_options(kind, include, exclude, max_file_size, max_chars, workers, settings)
    crawling = crawl_options(url, scope, max_pages, max_depth, concurrency, delay, timeout,
                             max_page_size, ignore_robots, no_sitemap, header)  # fmt: skip

    report = RunReport()
    with Progress("ingest", enabled=not quiet) as progress:
        records = source_records(root, repo, ref, subdir, token_env, options, report, progress,
                                 url=url, crawling=crawling)  # fmt: skip
        try:
            spooled = spool_records(records)
        finally:
            close(records)
    try:
        if not quiet and not as_json:
            typer.echo(report.summary(), err=True)
        _load(store_dir, [spooled], corpus, loading, as_json=as_json, quiet=quiet)
    finally:
        spooled.unlink(missing_ok=True)
