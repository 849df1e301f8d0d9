"""The query commands of `docs-flatten`: thin over `index.*`; `output` formats.

Ranked search (search, eval) says its tier on stderr; the other commands print exactly their
content on stdout.
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from flatten.cli import output
from flatten.cli.inputs import option_file
from flatten.cli.options import (
    ApiKeyEnv,
    BaseUrl,
    Config,
    Corpus,
    Json,
    Model,
    StoreDir,
    embedding_config,
    finite,
)
from flatten.cli.output import echo_json
from flatten.cli.settings import read_config
from flatten.errors import FlattenError, UsageError
from flatten.jsonform import to_json
from index import documents
from index.citations import CitationRule, parse_rules
from index.fusion import RRF_K
from index.results import NO_EMBEDDINGS, Tier, TierUsed
from index.scope import Scope
from index.store import Store, store_flag
from index.text import query_words

if TYPE_CHECKING:  # numpy, the vector modules and the search stages load only when used
    from index.evaluate import EvalReport
    from index.search import SearchOptions
    from index.vectors.client import EmbeddingConfig
    from index.vectors.stage import VectorTier

T = TypeVar("T")
C = TypeVar("C", bound=Callable[..., None])


@contextlib.contextmanager
def json_failures(command: str, as_json: bool) -> Iterator[None]:
    """Under --json a failure in the block is also a JSON error object on stdout, as a usage
    error is: a script reading stdout learns why (an empty stdout looks like a crash)."""
    try:
        yield
    except FlattenError as exc:
        if as_json:
            output.json_failure(command, exc)
        raise


def fails_as_json(command: C) -> C:
    """`json_failures` around the whole command (under --json or --json-object). Only for
    commands that print their JSON last, once nothing can fail; a command that can still fail
    after its report (eval's floors, doctor's checks) puts only what comes before it inside."""
    name = command.__name__.removesuffix("_command")

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        with json_failures(name, bool(kwargs.get("as_json") or kwargs.get("as_object"))):
            command(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


TopK = Annotated[int, typer.Option("--top-k", "-k", min=1, max=1000, help="How many results.")]
PathPrefix = Annotated[
    list[str] | None,
    typer.Option("--path", metavar="PREFIX", show_default=False,
                 help="Only sources starting with PREFIX (repeat for several)."),
]  # fmt: skip
Kind = Annotated[
    list[str] | None,
    typer.Option("--kind", metavar="KIND", show_default=False,
                 help="Only documents of this kind: markdown, code, yaml, terraform, shell, "
                 "text, html, ... (repeat for several)."),
]  # fmt: skip
Lang = Annotated[
    str | None,
    typer.Option("--lang", metavar="TAG|all", show_default=False,
                 help="Translated trees (docs/<lang>/, i18n/<lang>/): only this language "
                 "\\[default: the one the corpus has most of; all: every language]."),
]  # fmt: skip


def _rules(settings: dict[str, Any]) -> list[CitationRule]:
    return parse_rules(settings.get("citations"))


def _read(store_dir: str | None, query: Callable[[Store], T]) -> T:
    """A read-only query against the store."""
    with Store.open(store_dir, readonly=True) as store:
        return query(store)


Tier = Annotated[
    str | None,
    typer.Option("--tier", show_default=False, metavar="|".join(t.value for t in Tier),
                 help="Force a tier \\[default: hybrid with embeddings configured, else lexical]."),
]  # fmt: skip
RrfK = Annotated[int, typer.Option("--rrf-k", min=1, help="Reciprocal rank fusion constant k.")]


def _vector_tier(
    store: Store, embedding: EmbeddingConfig | None, tier: str | None, rerank: str | None = None
) -> VectorTier | None:
    """The vector stage when embeddings are configured; the options checked before any query."""
    from index.search import search_mode  # the search stages load when a query runs, not for --help

    search_mode(tier, rerank, embedding is not None)
    if embedding is None:
        return None
    from index.vectors.stage import VectorTier

    return VectorTier(store, embedding)  # no request until a query needs one


@fails_as_json
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
    per_doc: Annotated[
        int, typer.Option("--per-doc", min=1, metavar="N", help="Hits per document at most.")
    ] = 1,
    slices: Annotated[
        bool, typer.Option("--slices", help="The raw list of slices, not grouped by document.")
    ] = False,
    path: PathPrefix = None,
    kind: Kind = None,
    lang: Lang = None,
    store_dir: StoreDir = None,
    config: Config = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
    as_object: Annotated[
        bool,
        typer.Option(
            "--json-object",
            help="JSON: one object, the results with the query and the tier they were found at "
            "(as each --queries line and the MCP tool give them); --json alone prints the list.",
        ),
    ] = False,
) -> None:
    """Ranked search with citations: BM25, fused with vectors when embeddings are configured."""
    if (query is None) == (queries_file is None):
        raise UsageError("give a QUERY or --queries FILE", reason="bad-query")
    if query is not None and not query_words(query):
        # As knowledge_search answers: a query of no words is a mistake, not "no results".
        raise UsageError("give at least one word to look for", reason="bad-query")
    from index.search import SearchOptions, search

    settings = read_config(config)
    rules = _rules(settings)
    embedding = embedding_config(settings, base_url, model, api_key_env)
    options = SearchOptions(top_k=top_k, corpus=corpus, rules=rules, tier=tier, rrf_k=rrf_k,
                            rerank=rerank, per_doc=None if slices else per_doc,
                            paths=tuple(path or ()), kinds=tuple(kind or ()), lang=lang,
                            explain=explain)  # fmt: skip
    questions = None  # read before the store opens: a usage error first
    if queries_file is not None:
        from index.evaluate import read_queries

        with option_file(queries_file) as readable:
            questions = read_queries(readable)
    with Store.open(store_dir, readonly=True) as store:
        vectors = _vector_tier(store, embedding, tier, rerank)
        try:
            if questions is not None:
                _search_many(store, questions, vectors, options)
                return
            assert query is not None
            response = search(store, query, options, vectors=vectors)
        finally:
            if vectors is not None:
                vectors.close()
    output.tier_line(response.tier)
    if as_object:
        echo_json(response)
    elif as_json:
        echo_json(response.results)
    else:
        output.results(response, explain)


def _search_many(
    store: Store, questions: list[Any], vectors: VectorTier | None, options: SearchOptions
) -> None:
    """One JSON line per query (its id, then the response's JSON form); each distinct tier line
    once, on stderr."""
    from index.search import search

    if vectors is not None:
        vectors.prepare([q.text for q in questions])
    said: set[TierUsed] = set()
    for q in questions:
        response = search(store, q.text, options, vectors=vectors)
        if response.tier not in said:
            said.add(response.tier)
            output.tier_line(response.tier)
        output.json_line({"id": q.id, **to_json(response)})


def eval_command(
    queries_file: Annotated[
        Path, typer.Option("--queries", help='JSONL of {"id", "query", "expect"?: [pages]}.')
    ],
    qrels: Annotated[
        Path | None,
        typer.Option(
            "--qrels",
            show_default=False,
            help="Relevance judgments (TREC/BEIR); optional when queries carry expect.",
        ),
    ] = None,
    k: Annotated[
        int, typer.Option("-k", "--top-k", min=1, help="Cut-off for nDCG, recall and hit@k.")
    ] = 10,
    group: Annotated[
        str,
        typer.Option(
            "--group",
            metavar="doc|slice",
            help="Rank documents (a document's first slice) or slices.",
        ),
    ] = "doc",
    min_ndcg: Annotated[
        float | None,
        typer.Option(
            "--min-ndcg",
            show_default=False,
            callback=finite,
            help="Exit 1 when nDCG@k falls below this (for CI).",
        ),
    ] = None,
    min_hit_rate: Annotated[
        float | None,
        typer.Option(
            "--min-hit-rate",
            show_default=False,
            callback=finite,
            help="Exit 1 when the share of queries with a relevant hit in the top k is below this.",
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
    """Retrieval quality of the index against relevance judgments: nDCG@k, Recall@k, MRR, hit@k.

    Judged ids may name documents (their source), slices (<source>#<ordinal>) or, in a question
    file's expect lists, pages (a path without extension). Run it with --tier lexical and again
    with --tier hybrid to compare the tiers."""
    # A failure before the report (a missing store, an unreadable queries file) is a JSON
    # error under --json; a floor missed after it is said by the report and the exit code.
    with json_failures("eval", as_json):
        report, tiers = _evaluation(queries_file, qrels, k, group, corpus, tier, rrf_k,
                                    store_dir, config, base_url, model, api_key_env)  # fmt: skip
    for used in tiers or [TierUsed(Tier.LEXICAL, reason=NO_EMBEDDINGS)]:
        output.tier_line(used)
    output.unmatched_judgments(report.unmatched)
    if as_json:
        echo_json(report.to_dict(per_query=True))
    else:
        output.evaluation(report.to_dict())
    if min_ndcg is not None and report.ndcg < min_ndcg:
        raise FlattenError(f"nDCG@{k} {report.ndcg:.4f} is below --min-ndcg {min_ndcg}",
                           reason="below-min-ndcg")  # fmt: skip
    if min_hit_rate is not None and report.hit_k < min_hit_rate:
        raise FlattenError(f"hit@{k} {report.hit_k:.4f} is below --min-hit-rate {min_hit_rate}",
                           reason="below-min-hit-rate")  # fmt: skip


def _evaluation(
    queries_file: Path, qrels: Path | None, k: int, group: str, corpus: str | None,
    tier: str | None, rrf_k: int, store_dir: str | None, config: Path | None,
    base_url: str | None, model: str | None, api_key_env: str | None,
) -> tuple[EvalReport, list[TierUsed]]:  # fmt: skip
    """`eval`'s report, and the tiers its searches ran at."""
    from index.evaluate import evaluate, read_qrels, read_queries, with_expectations
    from index.judgments import GROUPS, UNMATCHED, ranked_units, resolve

    if group not in GROUPS:
        raise UsageError(f"--group: one of {', '.join(GROUPS)}, not {group!r}", reason="bad-group")
    with option_file(queries_file) as readable:
        questions = read_queries(readable)
    with option_file(qrels) as readable:
        judged = with_expectations(questions, read_qrels(readable) if readable else {})
    if not judged:
        raise UsageError("no judgments: give --qrels FILE, or queries with an expect list",
                         reason="no-judgments")  # fmt: skip
    pages = {q.id: set(q.expect) for q in questions if q.expect}
    from index.search import SearchOptions, search

    tiers: list[TierUsed] = []
    with Store.open(store_dir, readonly=True) as store:
        resolved = resolve(store, judged, group, pages=pages, corpus=corpus)
        embedding = embedding_config(read_config(config), base_url, model, api_key_env)
        vectors = _vector_tier(store, embedding, tier)
        if vectors is not None:
            vectors.prepare([q.text for q in questions if q.id in judged])

        def rank(text: str, depth: int) -> list[tuple[str, ...]]:
            # Documents are ranked as search ranks its pages (what a user sees); slices need
            # the raw list, or a document's other matching slices would never be ranked.
            options = SearchOptions(top_k=depth, corpus=corpus, snippets=False, tier=tier,
                                    rrf_k=rrf_k,
                                    per_doc=None if group == "slice" else 1)  # fmt: skip
            found = search(store, text, options, vectors=vectors)
            if found.tier not in tiers:
                tiers.append(found.tier)
            return ranked_units([(r.corpus, r.source, r.ordinal) for r in found.results], group)

        try:
            report = evaluate(questions, resolved.relevant, rank, k, name=_unit_name)
        finally:
            if vectors is not None:
                vectors.close()
    report.group, report.judged = group, dict(resolved.named)
    report.unmatched = [(q, i) for q, i in resolved.unmatched if i != UNMATCHED]
    return report, tiers


def _unit_name(unit: tuple[str, ...]) -> str:
    """A ranked unit as a reader knows it: a source, or a slice's `<source>#<ordinal>`."""
    return unit[1] if len(unit) == 2 else f"{unit[1]}#{unit[2]}"


@fails_as_json
def match_command(
    words: Annotated[
        list[str],
        typer.Argument(
            metavar="WORDS",
            show_default=False,
            help="Every document holding all of them; -word excludes.",
        ),
    ],
    paths_only: Annotated[bool, typer.Option("--paths-only", help="Only the paths.")] = False,
    exact: Annotated[bool, typer.Option("--exact", help="Exact word forms only.")] = False,
    corpus: Corpus = None,
    path: PathPrefix = None,
    kind: Kind = None,
    lang: Lang = None,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """The complete list of documents containing the words (empty means: not there)."""
    scope = Scope(corpus, tuple(path or ()), tuple(kind or ()), lang)
    found = _read(store_dir, lambda s: documents.match(s, words, scope=scope, exact=exact))
    if as_json:
        echo_json([d.source for d in found] if paths_only else found)
        return
    output.matched(found, words, paths_only)


@fails_as_json
def words_command(
    pattern: Annotated[
        str | None,
        typer.Argument(
            metavar="REGEX",
            show_default=False,
            help="Only words matching this (Python regex) \\[default: all].",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Words to list at most.")] = 100,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """Vocabulary: each word, its stem, documents with the exact word and with any form."""
    found = _read(store_dir, lambda s: documents.words(s, pattern, limit=limit))
    if as_json:
        echo_json(found)
        return
    output.vocabulary(found)


@fails_as_json
def sources_command(
    corpus: Corpus = None, store_dir: StoreDir = None, config: Config = None, as_json: Json = False
) -> None:
    """Indexed documents with chunk counts, last indexed, and their mapped citation."""
    rules = _rules(read_config(config))
    found, unmapped = _read(store_dir, lambda s: documents.sources(s, corpus=corpus, rules=rules))
    if as_json:
        echo_json({"sources": found, "unmapped": unmapped})
        return
    output.sources(found, unmapped)


@fails_as_json
def show_command(
    token: Annotated[
        str,
        typer.Argument(
            help="<source> (slice <ordinal>), as search prints it, or <source>#<ordinal>."
        ),
    ],
    corpus: Corpus = None,
    store_dir: StoreDir = None,
    config: Config = None,
    as_json: Json = False,
) -> None:
    """One chunk by its token."""
    rules = _rules(read_config(config))
    chunk = _read(store_dir, lambda s: documents.show(s, token, corpus=corpus, rules=rules))
    if chunk is None:
        raise FlattenError(f"no chunk {token} in the index", reason="no-chunk",
                           hint="search prints slices as <source> (slice <ordinal>)")  # fmt: skip
    if as_json:
        echo_json(chunk)
        return
    output.chunk(chunk)


@fails_as_json
def get_command(
    source: Annotated[
        str,
        typer.Argument(
            help="A document's source, as sources lists it (or a slice of it, as "
            "search prints it: <source> (slice <ordinal>))."
        ),
    ],
    offset: Annotated[int, typer.Option("--offset", help="Continue from here.")] = 0,
    whole: Annotated[bool, typer.Option("--all", help="The whole document, not a page.")] = False,
    corpus: Corpus = None,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """A whole document, in pages of about 12,000 characters (--all: in one)."""
    if whole and offset:
        raise UsageError(
            "--all gives the whole document; it takes no --offset", reason="bad-offset"
        )
    from index.results import read_slice
    from index.suggest import Meant, did_you_mean, meant_in

    size = {"page_chars": sys.maxsize} if whole else {}

    def read(store: Store) -> tuple[documents.Page | None, Meant]:
        page = documents.get(store, source, offset=offset, corpus=corpus, **size)
        if page is None and labelled is not None:  # `a.md (slice 3)`, copied from search
            page = documents.get(store, labelled, offset=offset, corpus=corpus, **size)
        return page, Meant() if page is not None else meant_in(store, source, corpus)

    # What search prints for a slice is its label (`index.results.Located.label`): its
    # document, unless a document has that very name.
    slice_of = read_slice(source) if source.endswith(")") else None
    labelled = slice_of[0] if slice_of else None
    page, meant = _read(store_dir, read)
    if page is None:
        said = did_you_mean(meant)
        flag = store_flag(store_dir)
        listing_hint = (f"its table of contents: `docs-flatten toc {meant.folder}/{flag}`"
                        if meant.folder is not None
                        else f"list them with `docs-flatten sources{flag}`")  # fmt: skip
        raise FlattenError(f"no document '{source}' in the index", reason="no-document",
                           hint=f"{said} ({listing_hint})" if said else listing_hint)  # fmt: skip
    if as_json:
        echo_json(page)
        return
    output.page(page, source if labelled is None else page.source)


@fails_as_json
def toc_command(
    prefix: Annotated[str, typer.Argument(help="Only sources starting with this.")] = "",
    corpus: Corpus = None,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """Table of contents: documents and their sections."""
    entries = _read(store_dir, lambda s: documents.toc(s, prefix, corpus=corpus))
    if as_json:
        echo_json(entries)
        return
    output.toc(entries)


@fails_as_json
def card_command(
    budget: Annotated[int, typer.Option("--budget", min=50, help="Token budget.")] = 800,
    corpus: Corpus = None,
    store_dir: StoreDir = None,
    as_json: Json = False,
) -> None:
    """A deterministic, budget-bounded index card for an agent's prompt."""
    text = _read(store_dir, lambda s: documents.card(s, budget=budget, corpus=corpus))
    if as_json:
        echo_json({"card": text, "budget": budget})
    else:
        output.card(text)


@fails_as_json
def stats_command(corpus: Corpus = None, store_dir: StoreDir = None, as_json: Json = False) -> None:
    """Corpora, documents, chunks, kinds, size of the index, and its vectors if any."""
    info = _read(store_dir, lambda s: documents.stats(s, corpus=corpus))
    if as_json:
        echo_json(info)
        return
    output.stats(info)


def doctor_command(
    store_dir: StoreDir = None,
    config: Config = None,
    base_url: BaseUrl = None,
    model: Model = None,
    api_key_env: ApiKeyEnv = None,
    as_json: Json = False,
) -> None:
    """Check the store (schema, text index, vectors, corpora; the server on PostgreSQL) and
    probe the embeddings server: reachable, model, dimension, normalised, latency per batch."""
    from index.health import diagnose

    # A failed check is the report's to say; a failure before it (a bad config, nothing to
    # check) is a JSON error under --json.
    with json_failures("doctor", as_json):
        embedding = embedding_config(read_config(config), base_url, model, api_key_env)
        found = diagnose(store_dir, embedding)
        if found.store is None and found.embeddings is None:
            raise UsageError(f"nothing to check: {'; '.join(found.unchecked)}",
                             reason="nothing-to-check",
                             hint="name a store with --store (or DOCS_FLATTEN_STORE); for the "
                             "embeddings, set embeddings.base_url and embeddings.model in "
                             "docs-flatten.yaml, or pass --base-url and --model")  # fmt: skip
    if as_json:
        echo_json(found)
    else:
        output.doctor(found)
    failure = found.store.failure if found.store is not None else None
    if failure is not None:
        raise FlattenError(
            f"store check failed ({failure.reason}): {failure.message}", reason=failure.reason
        )
    if found.embeddings is not None and not found.embeddings.reachable:
        raise FlattenError(f"embeddings server not usable: {found.embeddings.error}",
                           reason="embeddings-unusable")  # fmt: skip
