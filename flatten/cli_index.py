"""The index and query commands of `docs-flatten`: thin over `index.*`, formatting only.

Query commands print the tier line first (on stderr with --json, so stdout stays pure JSON).
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from flatten.cli_common import (
    CRAWL_DEFAULTS,
    DEFAULTS,
    ApiKeyEnv,
    BaseUrl,
    Concurrency,
    Config,
    Corpus,
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
    app,
    close,
    crawl_options,
    embedding_config,
    fail,
    flatten_options,
    reports_errors,
    source_records,
)
from flatten.config import load_config
from flatten.errors import UsageError
from flatten.pipeline import FlattenOptions, flatten_root
from flatten.progress import Progress
from flatten.report import RunReport
from flatten.writer import dumps
from index import queries
from index.citations import CitationRule, parse_rules
from index.embeddings import EmbeddingConfig, EmbeddingError, doctor
from index.errors import StoreError
from index.evaluate import evaluate, read_qrels, read_queries
from index.fusion import RRF_K
from index.loader import LoadReport, load_files, spool_records, spool_stdin
from index.search import LEXICAL_TIER, TIERS, SearchResponse, search, search_mode
from index.store import Store

if TYPE_CHECKING:  # numpy and the vector modules load only in the commands that use them
    from index.vector_search import VectorTier

T = TypeVar("T")

TopK = Annotated[int, typer.Option("--top-k", "-k", min=1, max=1000, help="How many results.")]


def _echo_json(data: Any) -> None:
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _rules(settings: dict[str, Any]) -> list[CitationRule]:
    return parse_rules(settings.get("citations"))


def _tier(as_json: bool, tier: str = LEXICAL_TIER) -> None:
    typer.echo(tier, err=as_json)


def _read(store_dir: str | None, as_json: bool, query: Callable[[Store], T]) -> T:
    """A read-only query against the store, then the tier line (on stderr under --json)."""
    with Store.open(store_dir, readonly=True) as store:
        answer = query(store)
    _tier(as_json)
    return answer


def _load(
    store_dir: str | None,
    wait: float,
    paths: list[Path],
    corpus: str,
    *,
    partial: bool,
    reindex: bool,
    as_json: bool,
    quiet: bool,
    embedding: EmbeddingConfig | None,
) -> LoadReport:
    """Load, then (with embeddings configured) embed what has no vector yet."""
    with Store.open(store_dir, busy_timeout=wait) as store:
        report = load_files(store, paths, corpus, partial=partial, reindex=reindex)
        summary: dict[str, Any] = report.to_dict()
        if not as_json and not quiet:
            typer.echo(report.summary())
        if embedding is not None:
            try:
                summary["vectors"] = _embed(store, embedding, reindex, as_json, quiet)
            except EmbeddingError as exc:
                if as_json:  # the load happened: say so on stdout, the failure on stderr
                    done = exc.report.to_dict() if exc.report is not None else {}
                    _echo_json({**summary, "vectors": {**done, "error": exc.reason}})
                raise
    if as_json:
        _echo_json(summary)
    return report


def _rerun_with_reindex() -> str:
    """This very command with --reindex: what to run when the vector identity changed."""
    args = sys.argv[1:]
    return shlex.join(["docs-flatten", *args] + ([] if "--reindex" in args else ["--reindex"]))


def _refuse_other_identity(
    store_dir: str | None, embedding: EmbeddingConfig | None, reindex: bool
) -> None:
    """Before flattening, crawling or loading: vectors of another identity are refused."""
    if embedding is None or reindex:
        return
    try:
        store = Store.open(store_dir, readonly=True)
    except StoreError:
        return  # no store yet, or one older than vectors: nothing to compare with
    from index.vectors import check_identity

    with store:
        check_identity(store.db, embedding, _rerun_with_reindex())


def _embed(
    store: Store, embedding: EmbeddingConfig, reindex: bool, as_json: bool, quiet: bool
) -> dict[str, Any]:
    from index.embed import embed_pending

    try:
        with Progress("embedding", enabled=not quiet and not as_json) as progress:
            vectors = embed_pending(
                store, embedding, reindex=reindex, reindex_command=_rerun_with_reindex(),
                progress=lambda done, total: progress.update(done, total, "texts"),
            )  # fmt: skip
    except EmbeddingError as exc:
        if exc.report is not None and exc.report.embedded:
            typer.echo(exc.report.summary(), err=True)
            exc.hint = (exc.hint + "; " if exc.hint else "") + (
                f"the {exc.report.embedded:,} vectors embedded before the failure are kept: "
                "run the same command again to resume"
            )
        raise
    if not as_json and not quiet:
        typer.echo(vectors.summary())
    return vectors.to_dict()


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


@app.command("index")
@reports_errors
def index_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH...",
            show_default=False,
            help="JSONL files, - for stdin, or directories (flattened on the fly).",
        ),
    ],
    corpus: Annotated[
        str | None,
        typer.Option(
            "--corpus", show_default=False, help="Corpus name [default: the first path's name]."
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
    embedding = None
    if not no_embed:
        embedding = embedding_config(settings, base_url, model, api_key_env)
    _refuse_other_identity(store_dir, embedding, reindex)
    options = flatten_options(kind, include, exclude, max_file_size, max_chars, 0, settings)
    temporary: list[Path] = []
    files: list[Path] = []
    try:
        for raw in paths:
            if raw == "-":
                temporary.append(spool_stdin())
                files.append(temporary[-1])
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
        _load(store_dir, wait, files, name, partial=partial, reindex=reindex, as_json=as_json,
              quiet=quiet, embedding=embedding)  # fmt: skip
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


@app.command()
@reports_errors
def ingest(
    corpus: Annotated[str, typer.Option("--corpus", help="Corpus name.")],
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
    embedding = None
    if not no_embed:
        embedding = embedding_config(settings, base_url, model, api_key_env)
    _refuse_other_identity(store_dir, embedding, reindex)
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
        _load(
            store_dir,
            wait,
            [spooled],
            corpus,
            partial=False,
            reindex=reindex,
            as_json=as_json,
            quiet=quiet,
            embedding=embedding,
        )
    finally:
        spooled.unlink(missing_ok=True)


def _print_results(response: SearchResponse, explain: bool = False) -> None:
    if not response.results:
        typer.echo("no results: nothing in the index matched this query")
        return
    for n, r in enumerate(response.results, start=1):
        lines = f"L{r.start_line}-{r.end_line}" if r.start_line else ""
        vector = ""
        if r.keyword_match is not None:
            similarity = "-" if r.similarity is None else f"{r.similarity:.3f}"
            vector = f" similarity={similarity} keyword={'yes' if r.keyword_match else 'no'}"
        typer.echo(f"{n}. {r.token}  {lines}  [{r.corpus}] score={r.score:.4g}{vector}")
        if explain:
            typer.echo(f"   explain: lexical rank {r.lexical_rank or '-'}, vector rank "
                       f"{r.vector_rank or '-'}, fused {r.fused or 0:.6f} (sum of 1/(k+rank)), "
                       f"score {r.score:.6f} after the corpus weight")  # fmt: skip
        typer.echo(f"   {r.title}" + (f"  ({' > '.join(r.section)})" if r.section else ""))
        if r.citation:
            typer.echo(f"   cite: {r.citation}")
        if r.snippet:
            typer.echo(f"   {r.snippet}")


Tier = Annotated[
    str | None,
    typer.Option("--tier", show_default=False, metavar="|".join(TIERS),
                 help="Force a tier [default: hybrid with embeddings configured, else lexical]."),
]  # fmt: skip
RrfK = Annotated[int, typer.Option("--rrf-k", min=1, help="Reciprocal rank fusion constant k.")]


def _vector_tier(
    store: Store, embedding: EmbeddingConfig | None, tier: str | None, rerank: str | None = None
) -> VectorTier | None:
    """The vector stage when embeddings are configured; the options checked before any query."""
    search_mode(tier, rerank, embedding is not None)
    if embedding is None:
        return None
    from index.vector_search import VectorTier

    return VectorTier(store, embedding)  # no request until a query needs one


@app.command("search")
@reports_errors
def search_command(
    query: Annotated[
        str | None, typer.Argument(show_default=False, help="What to look for.")
    ] = None,
    queries_file: Annotated[
        Path | None,
        typer.Option(
            "--queries",
            show_default=False,
            help='JSONL of {"id", "query"}: one JSON line of results each.',
        ),
    ] = None,
    top_k: TopK = 10,
    corpus: Corpus = None,
    tier: Tier = None,
    rrf_k: RrfK = RRF_K,
    explain: Annotated[
        bool, typer.Option("--explain", help="Each result's lexical and vector rank, fused score.")
    ] = False,
    rerank: Annotated[
        str | None,
        typer.Option(
            "--rerank",
            metavar="mmr",
            show_default=False,
            help="mmr: keep near-duplicates out of the top results (needs vectors).",
        ),
    ] = None,
    store_dir: StoreDir = None,
    config: Config = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
) -> None:
    """Ranked search with citations: BM25, fused with vectors when embeddings are configured."""
    if (query is None) == (queries_file is None):
        raise UsageError("give a QUERY or --queries FILE", reason="bad-query")
    settings = load_config(config)
    rules = _rules(settings)
    embedding = embedding_config(settings, base_url, model, api_key_env)
    with Store.open(store_dir, readonly=True) as store:
        vectors = _vector_tier(store, embedding, tier, rerank)
        options = {"top_k": top_k, "corpus": corpus, "rules": rules, "vectors": vectors,
                   "tier": tier, "rrf_k": rrf_k, "rerank": rerank}  # fmt: skip
        try:
            if queries_file is not None:
                _search_many(store, read_queries(queries_file), vectors, options)
                return
            assert query is not None
            response = search(store, query, **options)
        finally:
            if vectors is not None:
                vectors.close()
    _tier(as_json, response.tier)
    if as_json:
        _echo_json([r.to_dict() for r in response.results])
    else:
        _print_results(response, explain)


def _search_many(
    store: Store, questions: list[Any], vectors: VectorTier | None, options: dict[str, Any]
) -> None:
    """One JSON line of results per query; each distinct tier line once, on stderr."""
    if vectors is not None:
        vectors.prepare([q.text for q in questions])
    said: set[str] = set()
    for q in questions:
        response = search(store, q.text, **options)
        if response.tier not in said:
            said.add(response.tier)
            _tier(True, response.tier)
        results = [r.to_dict() for r in response.results]
        typer.echo(dumps({"id": q.id, "query": q.text, "tier": response.tier,
                          "results": results}))  # fmt: skip


@app.command("eval")
@reports_errors
def eval_command(
    queries_file: Annotated[Path, typer.Option("--queries", help="JSONL of {id, query}.")],
    qrels: Annotated[Path, typer.Option("--qrels", help="Relevance judgments (TREC/BEIR).")],
    k: Annotated[int, typer.Option("--k", min=1, help="Cut-off for nDCG and recall.")] = 10,
    min_ndcg: Annotated[
        float | None,
        typer.Option(
            "--min-ndcg", show_default=False, help="Exit 1 when nDCG@k falls below this (for CI)."
        ),
    ] = None,
    corpus: Corpus = None,
    tier: Tier = None,
    rrf_k: RrfK = RRF_K,
    store_dir: StoreDir = None,
    config: Config = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
) -> None:
    """Retrieval quality of the index against relevance judgments: nDCG@k, Recall@k, MRR.

    Run it with --tier lexical and again with --tier hybrid to compare the tiers."""
    questions = read_queries(queries_file)
    judgments = read_qrels(qrels)
    tiers: list[str] = []
    with Store.open(store_dir, readonly=True) as store:
        embedding = embedding_config(load_config(config), base_url, model, api_key_env)
        vectors = _vector_tier(store, embedding, tier)
        if vectors is not None:
            vectors.prepare([q.text for q in questions if q.id in judgments])

        def rank(text: str, depth: int) -> list[str]:
            found = search(store, text, top_k=depth, corpus=corpus, snippets=False,
                           vectors=vectors, tier=tier, rrf_k=rrf_k)  # fmt: skip
            if found.tier not in tiers:
                tiers.append(found.tier)
            return [r.source for r in found.results]

        try:
            report = evaluate(questions, judgments, rank, k)
        finally:
            if vectors is not None:
                vectors.close()
    for line in tiers or [LEXICAL_TIER]:
        _tier(as_json, line)
    summary = report.to_dict()
    if as_json:
        _echo_json(summary)
    else:
        typer.echo(" ".join(f"{key}={value}" for key, value in summary.items()))
    if min_ndcg is not None and report.ndcg < min_ndcg:
        fail(f"nDCG@{k} {report.ndcg:.4f} is below --min-ndcg {min_ndcg}")


@app.command("match", context_settings={"ignore_unknown_options": True})
@reports_errors
def match_command(
    words: Annotated[
        list[str],
        typer.Argument(
            metavar="WORDS...",
            show_default=False,
            help="Every document holding all of them; -word excludes.",
        ),
    ],
    paths_only: Annotated[bool, typer.Option("--paths-only", help="Only the paths.")] = False,
    exact: Annotated[bool, typer.Option("--exact", help="Exact word forms only.")] = False,
    corpus: Corpus = None,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """The complete list of documents containing the words (empty means: not there)."""
    found = _read(store_dir, as_json, lambda s: queries.match(s, words, corpus=corpus, exact=exact))
    if as_json:
        _echo_json([d.source for d in found] if paths_only else [d.to_dict() for d in found])
        return
    if not found:
        typer.echo("no document contains " + " and ".join(words))
    for doc in found:
        typer.echo(
            doc.source if paths_only else f"{doc.source}  [{doc.corpus}] {doc.chunks} chunk(s)"
        )


@app.command("words")
@reports_errors
def words_command(
    pattern: Annotated[str | None, typer.Argument(metavar="[REGEX]", show_default=False)] = None,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 100,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """Vocabulary: each word, its stem, documents with the exact word and with any form."""
    found = _read(store_dir, as_json, lambda s: queries.words(s, pattern, limit=limit))
    if as_json:
        _echo_json([w.to_dict() for w in found])
        return
    for w in found:
        typer.echo(
            f"{w.word:<30} stem={w.stem:<24} exact={w.exact_documents} "
            f"any-form={w.any_form_documents}"
        )


@app.command("sources")
@reports_errors
def sources_command(
    corpus: Corpus = None, store_dir: StoreDir = None, config: Config = None, as_json: Json = False
) -> None:
    """Indexed documents with chunk counts, last indexed, and their mapped citation."""
    rules = _rules(load_config(config))
    found, unmapped = _read(
        store_dir, as_json, lambda s: queries.sources(s, corpus=corpus, rules=rules)
    )
    if as_json:
        _echo_json({"sources": [s.to_dict() for s in found], "unmapped": unmapped})
        return
    for s in found:
        cited = f"  -> {s.citation}" if s.citation else ""
        typer.echo(f"{s.source}  [{s.corpus}] {s.chunks} chunk(s), {s.indexed_at}{cited}")
    typer.echo(f"{len(found)} document(s); {unmapped} without a citation rule match")


@app.command("show")
@reports_errors
def show_command(
    token: Annotated[str, typer.Argument(help="<source>#<ordinal>, as search prints it.")],
    corpus: Corpus = None,
    store_dir: StoreDir = None,
    config: Config = None,
    as_json: Json = False,
) -> None:
    """One chunk by its token."""
    rules = _rules(load_config(config))
    chunk = _read(store_dir, as_json, lambda s: queries.show(s, token, corpus=corpus, rules=rules))
    if chunk is None:
        fail(f"no chunk {token} in the index", hint="search prints tokens as <source>#<ordinal>")
    if as_json:
        _echo_json(chunk.to_dict())
        return
    lines = f"  L{chunk.start_line}-{chunk.end_line}" if chunk.start_line else ""
    typer.echo(f"{chunk.token}  [{chunk.corpus}] {chunk.title}{lines}")
    if chunk.citation:
        typer.echo(f"cite: {chunk.citation}")
    typer.echo("")
    typer.echo(chunk.content)


@app.command("get")
@reports_errors
def get_command(
    source: Annotated[str, typer.Argument(help="A document's source, as sources lists it.")],
    offset: Annotated[int, typer.Option("--offset", help="Continue from here.")] = 0,
    corpus: Corpus = None,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """A whole document, in pages of about 12,000 characters."""
    page = _read(store_dir, as_json, lambda s: queries.get(s, source, offset=offset, corpus=corpus))
    if page is None:
        fail(f"no document {source!r} in the index", hint="list them with docs-flatten sources")
    if as_json:
        _echo_json(page.to_dict())
        return
    typer.echo(page.text, nl=False)
    if page.next_offset is not None:
        typer.echo(f"\n[continues: docs-flatten get {source} --offset {page.next_offset}]")


@app.command("toc")
@reports_errors
def toc_command(
    prefix: Annotated[str, typer.Argument(help="Only sources starting with this.")] = "",
    corpus: Corpus = None,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """Table of contents: documents and their sections."""
    entries = _read(store_dir, as_json, lambda s: queries.toc(s, prefix, corpus=corpus))
    if as_json:
        _echo_json([e.to_dict() for e in entries])
        return
    for entry in entries:
        typer.echo(f"{entry.source}" + (f"  ({entry.title})" if entry.title else ""))
        for title in entry.sections:
            typer.echo(f"  - {title}")


@app.command("card")
@reports_errors
def card_command(
    budget: Annotated[int, typer.Option("--budget", min=50, help="Token budget.")] = 800,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """A deterministic, budget-bounded index card for an agent's prompt."""
    text = _read(store_dir, as_json, lambda s: queries.card(s, budget=budget))
    if as_json:
        _echo_json({"card": text, "budget": budget})
    else:
        typer.echo(text, nl=False)


@app.command("stats")
@reports_errors
def stats_command(store_dir: StoreDir = None, as_json: Json = False) -> None:
    """Corpora, documents, chunks, kinds, size of the index, and its vectors if any."""
    info = _read(store_dir, as_json, queries.stats)
    if as_json:
        _echo_json(info)
        return
    typer.echo(f"store: {info['store']} ({info['bytes'] / 1e6:.1f} MB)")
    for c in info["corpora"]:
        origin = f" from {c['repoUrl']}@{(c['commit'] or '')[:12]}" if c["repoUrl"] else ""
        typer.echo(f"corpus {c['name']}: {c['documents']} documents, {c['chunks']} chunks{origin}")
    typer.echo("kinds: " + ", ".join(f"{k} {v}" for k, v in info["kinds"].items()))
    if vectors := info["vectors"]:
        skipped = ", ".join(f"{n} {why}" for why, n in vectors["chunksSkipped"].items())
        typer.echo(f"vectors: {vectors['vectors']:,} of model={vectors['model']} "
                   f"dim={vectors['dimension']}; chunks with a vector "
                   f"{vectors['chunksWithVector']:,}, pending {vectors['chunksPending']:,}"
                   + (f", skipped {skipped}" if skipped else ""))  # fmt: skip


@app.command("doctor")
@reports_errors
def doctor_command(
    config: Config = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
) -> None:
    """Probe the embeddings server: reachable, model, dimension, normalised, latency per batch."""
    embedding = embedding_config(load_config(config), base_url, model, api_key_env)
    if embedding is None:
        raise UsageError("no embeddings configured", reason="no-embeddings",
                         hint="set embeddings.base_url and embeddings.model in docs-flatten.yaml, "
                         "or pass --base-url and --model")  # fmt: skip
    report = doctor(embedding)
    if as_json:
        _echo_json(report.to_dict())
    else:
        typer.echo(f"server: {report.base_url}  model: {report.model}")
        if report.reachable:
            typer.echo(f"reachable: yes  dimension: {report.dimension}  "
                       f"normalised: {'yes' if report.normalized else 'no'}")  # fmt: skip
            typer.echo("latency per batch of 8: " + ", ".join(f"{ms} ms" for ms in
                                                              report.batch_latency_ms))  # fmt: skip
        if report.suggested_query_prefix:
            typer.echo(f"suggested query_prefix: {report.suggested_query_prefix!r}")
            typer.echo(f"suggested document_prefix: {report.suggested_document_prefix!r}")
    if not report.reachable:
        fail(f"embeddings server not usable: {report.error}")
