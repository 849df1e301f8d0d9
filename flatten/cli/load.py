"""`docs-flatten index` and `ingest`: records or sources into the store, then their vectors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from flatten.cli.inputs import option_file
from flatten.cli.jobs import flatten_settings, plan, rerun_with
from flatten.cli.options import (
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
    corpus_name,
)
from flatten.cli.output import say
from flatten.cli.settings import (
    CRAWL_DEFAULTS,
    DEFAULTS,
    MAX_PROCESSES,
    Kind,
    read_config,
    settings_options,
)
from flatten.config import SOURCE_KEYS, load_sources
from flatten.corpus_names import root_corpus
from flatten.errors import UsageError

# The pipeline, the shards and the index load when a command runs, not for --help.
if TYPE_CHECKING:
    from flatten.shards import Shard

Partial = Annotated[
    bool,
    typer.Option(
        "--partial",
        help="Add and update only; keep documents "
        "this run does not mention (default: the input is the whole corpus).",
    ),
]
Reindex = Annotated[bool, typer.Option("--reindex", help="Drop the corpus and load it afresh.")]
Replace = Annotated[
    bool,
    typer.Option(
        "--replace",
        help="Replace the corpus's content with this source's, even when the corpus holds "
        "another source (without it, that is refused: corpus-source-mismatch).",
    ),
]
# SQLite and PostgreSQL keep the wait in milliseconds in a 32-bit integer: past its range
# SQLite would not wait at all.
MAX_WAIT = 1_000_000
Wait = Annotated[
    float,
    typer.Option("--wait", metavar="SECONDS", min=0, max=MAX_WAIT,
                 help="How long to wait for another writer."),
]  # fmt: skip
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


Manifests = Annotated[
    Path | None,
    typer.Option(
        "--manifests",
        metavar="DIR",
        show_default=False,
        help="Load every corpus the shards' manifests below DIR list (`ingest --shard i/n --out "
        "DIR` writes them), each JSONL checked against its sha256; a corpus whose entry is "
        "unchanged since its last load is skipped.",
    ),
]


def index_command(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="PATH",
            show_default=False,
            help="JSONL files, - for stdin, or directories (flattened on the fly).",
        ),
    ] = None,
    manifests: Manifests = None,
    corpus: OptionalCorpus = None,
    store_dir: StoreDir = None,
    reindex: Reindex = False,
    replace: Replace = False,
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
    if manifests is not None or not paths:
        _index_manifests(paths, manifests, corpus, store_dir, config, reindex, partial,
                         max_delete, wait, no_embed, base_url, model, api_key_env,
                         as_json=as_json, quiet=quiet, replace=replace)  # fmt: skip
        return
    from flatten.cli.inputs import FOLDER, PIPE, check_stdin, input_kind, spool_named_pipe
    from flatten.cli.loading import ingest_options, load_into, summarized
    from flatten.corpus_sources import corpus_source
    from flatten.pipeline import flatten_root
    from flatten.report import RunReport
    from flatten.summary import Summary
    from index.ingest import refuse_other_source
    from index.loader import spool_records, spool_stdin, stdin_is_stream

    summary = Summary(command="index", corpus=corpus, source=" ".join(paths))
    with summarized(summary, as_json):
        # Every PATH is checked before any is read (a pipe can be read only once).
        kinds = {raw: input_kind(raw) for raw in paths if raw != "-"}
        settings = read_config(config)
        name = corpus or _index_corpus(paths)
        summary.corpus = name
        loading = ingest_options(store_dir, settings, no_embed, base_url, model, api_key_env,
                                  partial=partial, reindex=reindex, wait=wait,
                                  max_delete=max_delete, replace=replace)  # fmt: skip
        # One folder is a source the corpus remembers; JSONL and stdin name none.
        one_folder = len(paths) == 1 and Path(paths[0]).is_dir()
        source = corpus_source("root", paths[0]) if one_folder else None
        refuse_other_source(store_dir, name, source, loading)  # before flattening it
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
                    check_stdin()
                    temporary.append(spool_stdin())
                    files.append(temporary[-1])
                    if stdin_is_stream():
                        streams.append(temporary[-1])
                    continue
                path, kind = Path(raw), kinds[raw]
                if kind == PIPE:  # a named pipe or `<(...)`: read once, framed as stdin is
                    temporary.append(spool_named_pipe(path))
                    files.append(temporary[-1])
                    streams.append(temporary[-1])
                elif kind == FOLDER:
                    assert run is not None
                    temporary.append(spool_records(flatten_root(path, options, run)))
                    files.append(temporary[-1])
                else:
                    files.append(path)
            if run is not None:
                summary.add_run(run)
                if not quiet:
                    say(run.summary(), err=True)
            load_into(store_dir, files, name, loading, summary, talk=not as_json and not quiet,
                      streams=streams, source=source)  # fmt: skip
        finally:
            for path in temporary:
                path.unlink(missing_ok=True)


def _index_manifests(
    paths: list[str] | None, manifests: Path | None, corpus: str | None, store_dir: str | None,
    config: Path | None, reindex: bool, partial: bool, max_delete: str | None, wait: float,
    no_embed: bool, base_url: str | None, model: str | None, api_key_env: str | None, *,
    as_json: bool, quiet: bool, replace: bool = False,
) -> None:  # fmt: skip
    """`index --manifests DIR` (see flatten.cli.many); a usage error for PATHs beside it, or
    for neither."""
    from flatten.cli.loading import failure_summary, ingest_options
    from flatten.cli.many import index_manifests
    from flatten.manifest import find_manifests

    with failure_summary("index", as_json):
        if manifests is None:
            raise UsageError("give JSONL files, folders or - (stdin), or --manifests DIR",
                             reason="no-source")  # fmt: skip
        if paths or corpus is not None:
            raise UsageError("--manifests DIR names every corpus itself: give no PATH and no "
                             "--corpus beside it", reason="bad-source")  # fmt: skip
        settings = read_config(config)
        loading = ingest_options(store_dir, settings, no_embed, base_url, model, api_key_env,
                                  partial=partial, reindex=reindex, wait=wait,
                                  max_delete=max_delete, replace=replace)  # fmt: skip
        found = find_manifests(manifests)
    # A failure that escapes is the run's, before any summary was printed (a store that
    # cannot be opened): one summary says why.
    with failure_summary("index", as_json):
        index_manifests(found, store_dir, loading, as_json=as_json, quiet=quiet)


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
    replace: Replace = False,
    max_delete: MaxDelete = None,
    wait: Wait = 60.0,
    config: Config = None,
    sources: SourcesFile = None,
    jobs: Jobs = 0,
    shard: ShardOption = None,
    out: Out = None,
    no_embed: NoEmbed = False,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Flatten a folder, repository or docs site and index it: the one-liner for CI.

    Without --root, --repo or --url, every source the config (or --sources FILE) lists is
    refreshed, --jobs at a time, each into its own corpus; a repository whose remote still
    names the commit of its last load is skipped without cloning. --shard i/n takes one
    matrix job's share of them; --out DIR writes JSONL and a manifest for `index --manifests`
    instead of loading."""
    from flatten.cli.loading import Run, failure_summary
    from flatten.parallel import default_workers
    from flatten.shards import parse_shard, pick
    from index.snapshot import parse_limit

    values = {k: v for k, v in locals().items() if k in SOURCE_KEYS}
    with failure_summary("ingest", as_json):  # before any source ran: one summary says why
        settings = read_config(config)
        parse_limit(max_delete)  # --max-delete refused now, not after each source's flatten
        if sources is not None:
            with option_file(sources) as readable:
                settings = {**settings, "sources": load_sources(readable)}
        planned = plan(values, settings)
        chosen: Shard | None = parse_shard(shard) if shard is not None else None
        if chosen is not None:
            planned = pick(planned, lambda job: job.corpus, chosen)
    run = Run(store_dir=store_dir, settings=settings, header=header, workers=workers,
               reindex=reindex, wait=wait, no_embed=no_embed, base_url=base_url, model=model,
               api_key_env=api_key_env, as_json=as_json, quiet=quiet,
               replace=replace)  # fmt: skip
    if len(planned) == 1 and planned[0].where == "flags" and out is None and chosen is None:
        run.ingest(planned[0])
        return
    from flatten.cli.many import ingest_many

    # Each source's failure is its summary's; one that escapes is the run's, before any
    # summary was printed (a store or --out that cannot be used): one summary says why.
    with failure_summary("ingest", as_json):
        ingest_many(run, planned, workers=jobs or default_workers(), out=out, shard=chosen)


SourcesFile = Annotated[
    Path | None,
    typer.Option("--sources", metavar="FILE", show_default=False,
                 help="Sources to ingest instead of the config's: a YAML list of entries as "
                 "the config's sources: takes them (or a file with a sources: list)."),
]  # fmt: skip
Jobs = Annotated[
    int,
    typer.Option("--jobs", "-j", min=0, max=MAX_PROCESSES, metavar="N", show_default=False,
                 help="Sources flattened at a time, each in a worker process; the loads run "
                 "in this one \\[default: one per core]."),
]  # fmt: skip
ShardOption = Annotated[
    str | None,
    typer.Option("--shard", metavar="i/n", show_default=False,
                 help="Take shard i of n of the sources (a stable share by a hash of each "
                 "corpus name: one per CI matrix job)."),
]  # fmt: skip
Out = Annotated[
    Path | None,
    typer.Option("--out", metavar="DIR", show_default=False,
                 help="Write each source's JSONL and the shard's manifest into DIR instead of "
                 "loading them (`index --manifests` loads them); a source whose remote has not "
                 "moved since DIR's last manifest is not cloned again."),
]  # fmt: skip


def drop_command(
    corpus: Annotated[
        str,
        typer.Option(
            "--corpus",
            metavar="NAME",
            show_default=False,
            callback=corpus_name,
            help="The corpus to remove, with all its documents.",
        ),
    ],
    store_dir: StoreDir = None,
    wait: Wait = 60.0,
    as_json: Json = False,
    quiet: Quiet = False,
) -> None:
    """Remove a corpus from the index: its documents, chunks and text (vectors stay, keyed by
    content, for any corpus to reuse). A load never empties a corpus; this does, when asked."""
    from flatten.cli.loading import summarized
    from flatten.summary import Summary
    from index.drop import drop_corpus
    from index.store import Store

    summary = Summary(command="drop", corpus=corpus)
    with summarized(summary, as_json):
        with Store.open(store_dir, readonly=True):
            pass  # no store here: `index-not-built`, and none is made
        with Store.open(store_dir, busy_timeout=wait) as store:
            report = drop_corpus(store, corpus)
        summary.add_load(report, 0)
        if not as_json and not quiet:
            say(f"{corpus}: dropped ({report.removed:,} documents removed)", err=True)
            if report.compacted:
                say(f"  {report.compacted.summary()}", err=True)
