"""The options the commands share, their defaults read from the library's option dataclasses,
and the flags turned into those dataclasses (sizes parsed, exactly one source checked)."""

from __future__ import annotations

import dataclasses
import inspect
import math
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from crawl.options import CrawlOptions
from flatten.config import Setting, check_keys, config_path, load_config, parse_size
from flatten.errors import UsageError
from flatten.options import FlattenOptions

# --help reads the defaults from the option dataclasses alone: the pipeline, the crawler
# (httpx, selectolax), the redaction patterns and the index load when a command runs.
if TYPE_CHECKING:
    from flatten.record import Record
    from flatten.report import RunReport
    from flatten.writer import EncodedLines
    from index.vectors.client import EmbeddingConfig


class Kind(StrEnum):
    docs = "docs"
    code = "code"
    auto = "auto"


def stdout_dash(path: Path | None) -> Path | None:
    """`-o -` writes to stdout, as most tools read it (leaving `-o` out says the same)."""
    return None if path is not None and str(path) == "-" else path


def size_text(size: int) -> str:
    """Bytes as the shortest exact size `parse_size` reads back: 1048576 -> `1MiB`."""
    for suffix, unit in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def finite(value: float | None) -> float | None:
    """A number flag that must be finite: `nan` passes every comparison, `inf` none."""
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter(f"must be a finite number, not {value} (reason: not-finite)")
    return value


# Options shared by the commands that flatten (flatten, ingest, index DIR).
Root = Annotated[Path | None, typer.Option("--root", help="A local directory.", show_default=False)]
Repo = Annotated[
    str | None,
    typer.Option(
        "--repo",
        show_default=False,
        help="A git URL, a path, or owner/repo (GitHub), gitlab:group/repo to clone "
        "(shallow, into a temporary directory).",
    ),
]
Ref = Annotated[
    str | None,
    typer.Option(
        "--ref",
        show_default=False,
        help="Branch, tag or commit SHA \\[default: the remote's default branch].",
    ),
]
Subdir = Annotated[
    str | None,
    typer.Option(
        "--subdir",
        show_default=False,
        help="Only this folder of the repository (sources stay repository-relative).",
    ),
]
TokenEnv = Annotated[
    str | None,
    typer.Option(
        "--token-env",
        metavar="NAME",
        show_default=False,
        help="Environment variable holding a token for the clone (never printed).",
    ),
]
KindOption = Annotated[
    Kind,
    typer.Option(
        "--kind",
        help="docs: markdown, reST, AsciiDoc, text. code/auto: every text file, "
        "sliced by its structure.",
    ),
]
Include = Annotated[
    list[str] | None,
    typer.Option(
        "--include", metavar="GLOB", show_default=False, help="Only paths matching (repeatable)."
    ),
]
Exclude = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude", metavar="GLOB", show_default=False, help="Skip paths matching (repeatable)."
    ),
]
MaxFileSize = Annotated[
    str,
    typer.Option("--max-file-size", metavar="SIZE", help="Skip larger files (1MiB, 512k, bytes)."),
]
MaxChars = Annotated[
    int, typer.Option("--max-chars", help="Size budget of one slice, in characters.")
]
# Processes are forked as asked, however few the files: a count past any machine's cores
# (a typo, 10000 for 100) would fork that many.
MAX_PROCESSES = 256
Workers = Annotated[
    int,
    typer.Option(
        "--workers",
        min=0,
        max=MAX_PROCESSES,
        show_default=False,
        help="Worker processes \\[default: one per core on large trees].",
    ),
]
Quiet = Annotated[bool, typer.Option("-q", "--quiet", help="No progress or summary.")]
Url = Annotated[
    str | None,
    typer.Option(
        "--url", show_default=False, help="A documentation site to crawl (same host, bounded)."
    ),
]
Scope = Annotated[
    str | None,
    typer.Option(
        "--scope",
        metavar="PREFIX",
        show_default=False,
        help="Path prefix the crawl stays in \\[default: the URL's directory].",
    ),
]
MaxPages = Annotated[int, typer.Option("--max-pages", min=1, help="Pages to fetch at most.")]
MaxDepth = Annotated[int, typer.Option("--max-depth", min=0, help="Links to follow from the URL.")]
Concurrency = Annotated[
    int, typer.Option("--concurrency", min=1, max=32, help="Requests in flight at once.")
]
# A crawl waits `--delay` and `--timeout` in full: `inf` would never end it.
Delay = Annotated[
    float,
    typer.Option("--delay", min=0, callback=finite,
                 help="Seconds between requests (robots.txt Crawl-delay can raise it)."),
]  # fmt: skip
Timeout = Annotated[
    float, typer.Option("--timeout", min=0.1, callback=finite, help="Seconds for one page.")
]
MaxPageSize = Annotated[
    str,
    typer.Option(
        "--max-page-size", metavar="SIZE", help="Bytes per page at most, after decompression."
    ),
]
IgnoreRobots = Annotated[bool, typer.Option("--ignore-robots", help="Do not obey robots.txt.")]
NoSitemap = Annotated[bool, typer.Option("--no-sitemap", help="Do not seed from sitemap.xml.")]
Header = Annotated[
    list[str] | None,
    typer.Option(
        "--header",
        metavar="NAME:VALUE",
        show_default=False,
        help="Request header, e.g. for a token (repeatable; never echoed).",
    ),
]


# Options shared by the index and query commands.
def store_path(value: str | None) -> str | None:
    """A --store value: an empty one (`--store "$STORE"` with the variable unset) would fall
    back to the default folder, and a load would write where nobody meant."""
    if value is not None and not value.strip():
        raise typer.BadParameter("an empty path names no store (an unset variable?) "
                                 "(reason: empty-path)")  # fmt: skip
    return value


StoreDir = Annotated[
    str | None,
    typer.Option(
        "--store",
        metavar="DIR",
        show_default=False,
        callback=store_path,
        help="The index directory \\[default: $DOCS_FLATTEN_STORE or .docs-flatten].",
    ),
]


def corpus_name(value: str | None) -> str | None:
    """A --corpus value: an empty or blank name is a usage error (no corpus can have it)."""
    from index.loader import check_corpus_name

    try:
        return None if value is None else check_corpus_name(value)
    except UsageError as exc:
        raise typer.BadParameter(f"{exc.message} (reason: {exc.reason})") from None


Corpus = Annotated[
    str | None,
    typer.Option("--corpus", show_default=False, callback=corpus_name, help="Only this corpus."),
]
Json = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
Config = Annotated[
    Path | None,
    typer.Option(
        "--config",
        show_default=False,
        help="Config file \\[default: ./docs-flatten.yaml if present].",
    ),
]

_EMBEDDINGS = "Embeddings (override the embeddings: section of the config)"
BaseUrl = Annotated[
    str | None,
    typer.Option("--base-url", show_default=False, rich_help_panel=_EMBEDDINGS,
                  help="Embeddings server in the OpenAI format, e.g. http://127.0.0.1:11434/v1."),
]  # fmt: skip
Model = Annotated[
    str | None,
    typer.Option("--model", show_default=False, rich_help_panel=_EMBEDDINGS,
                 help="Embedding model name."),
]  # fmt: skip
ApiKeyEnv = Annotated[
    str | None,
    typer.Option("--api-key-env", metavar="NAME", show_default=False, rich_help_panel=_EMBEDDINGS,
                 help="Environment variable holding the API key (the key is never printed)."),
]  # fmt: skip


def read_config(path: Path | None) -> dict[str, Any]:
    """The config (`flatten.config.load_config`) with every section checked now, the index's too
    (citations, embeddings): a wrong key fails the command before it does anything, whichever
    sections the command reads."""
    from flatten.cli.inputs import option_file
    from flatten.secrets import RedactionRules

    with option_file(path) as readable:  # a pipe read once; /dev/zero never
        settings = load_config(readable)
    RedactionRules.from_config(settings.get("redaction"))
    # The index's modules only where their sections are: `flatten` starts without them.
    if settings.get("citations") is not None:
        from index.citations import parse_rules

        parse_rules(settings["citations"])
    if settings.get("embeddings"):
        from index.vectors.client import EmbeddingConfig

        # Keys only: base_url and model may come from the flags (checked when embeddings are used).
        known = EmbeddingConfig.__dataclass_fields__
        check_keys(config_path(path), "embeddings", settings["embeddings"], known)
    return settings


def embedding_config(
    settings: dict[str, Any], base_url: str | None, model: str | None, api_key_env: str | None
) -> EmbeddingConfig | None:
    """The embeddings settings: the loaded config's section with the flags over it; None if off."""
    from index.vectors.client import EmbeddingConfig

    section = dict(settings.get("embeddings") or {})
    overrides = {"base_url": base_url, "model": model, "api_key_env": api_key_env}
    section.update({k: v for k, v in overrides.items() if v is not None})
    return EmbeddingConfig.from_config(section or None)


def flatten_options(
    kind: Kind,
    include: list[str] | None,
    exclude: list[str] | None,
    max_file_size: str,
    max_chars: int,
    workers: int,
    settings: dict[str, Any],
) -> FlattenOptions:
    """The flags, plus the `redaction:` section of the loaded config."""
    from flatten.secrets import RedactionRules

    return FlattenOptions(
        kind=kind.value,
        include=tuple(include or ()),
        exclude=tuple(exclude or ()),
        max_file_size=parse_size(max_file_size) if max_file_size else FLATTEN["max_file_size"],
        max_chars=max_chars,
        workers=workers,
        redaction=RedactionRules.from_config(settings.get("redaction")),
    )


def settings_options(
    flat: dict[str, Setting], workers: int, settings: dict[str, Any]
) -> FlattenOptions:
    """`flatten_options` from resolved settings (flag > config > default, `flatten.config`)."""

    def v(name: str) -> Any:
        return flat[name].value

    return flatten_options(Kind(v("kind")), v("include"), v("exclude"), str(v("max_file_size")),
                           v("max_chars"), workers, settings)  # fmt: skip


def crawl_options(
    url: str | None, scope: str | None, max_pages: int, max_depth: int, concurrency: int,
    delay: float, timeout: float, max_page_size: str, ignore_robots: bool, no_sitemap: bool,
    headers: list[str] | None,
) -> CrawlOptions | None:  # fmt: skip
    """Crawl options from the flags; None without --url (then the crawler is never imported)."""
    max_page_bytes = parse_size(max_page_size)
    if max_page_bytes <= 0:  # every page would be "too large": a run that can keep nothing
        raise UsageError("--max-page-size must be positive", reason="bad-size")
    if url is None:
        return None
    pairs = []
    for header in headers or ():
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise UsageError("--header takes NAME:VALUE", reason="bad-header")
        pairs.append((name.strip(), value.strip()))
    return CrawlOptions(
        max_pages=max_pages, max_depth=max_depth, max_page_bytes=max_page_bytes,
        timeout=timeout, concurrency=concurrency, delay=delay, respect_robots=not ignore_robots,
        use_sitemap=not no_sitemap, scope=scope, headers=tuple(pairs),
    )  # fmt: skip


def option_defaults(options: type) -> dict[str, Any]:
    """An option dataclass's defaults, read from its fields: no instance, whose default
    factories would load what --help does not need (the redaction patterns)."""
    return {f.name: f.default for f in dataclasses.fields(options)
            if f.default is not dataclasses.MISSING}  # fmt: skip


_CRAWL = option_defaults(CrawlOptions)
CRAWL_DEFAULTS: dict[str, Any] = {
    **{
        flag: _CRAWL[flag] for flag in ("max_pages", "max_depth", "concurrency", "delay", "timeout")
    },
    "max_page_size": size_text(_CRAWL["max_page_bytes"]),
}


def source_records(
    root: Path | None,
    repo: str | None,
    ref: str | None,
    subdir: str | None,
    token_env: str | None,
    options: FlattenOptions,
    report: RunReport,
    on_progress: Callable[[RunReport], None] | None = None,
    *,
    url: str | None = None,
    crawling: CrawlOptions | None = None,
    encode_as: str | None = None,
) -> Iterator[Record | EncodedLines]:
    """The records of --root, --repo or --url (exactly one), after checking the flags fit.
    `encode_as` (a layout, for writing JSONL): a tree's files come as `EncodedLines`, encoded
    by the workers; a site's pages come as records (they are sliced in this process anyway)."""
    from flatten.pipeline import flatten_repo, flatten_root, flatten_url

    if sum(x is not None for x in (root, repo, url)) != 1:
        raise UsageError(
            "give exactly one of --root DIR, --repo URL or --url URL", reason="bad-source"
        )
    if url is not None:
        check_repo_only("url", ref, subdir, token_env)
        return flatten_url(url, options, report, crawl_options=crawling)
    if root is not None:
        check_repo_only("root", ref, subdir, token_env)
        return flatten_root(root, options, report, on_progress=on_progress, encode_as=encode_as)
    assert repo is not None
    return flatten_repo(repo, ref, options, report, subdir=subdir, token_env=token_env,
                        on_progress=on_progress, encode_as=encode_as)  # fmt: skip


def check_repo_only(kind: str, ref: str | None, subdir: str | None, token_env: str | None) -> None:
    """`UsageError` for a repository's settings on a source of another `kind`."""
    if kind != "repo" and (ref or subdir or token_env):
        raise UsageError("--ref, --subdir and --token-env go with --repo", reason="bad-source")


def close(records: Iterator[Record]) -> None:
    """End a record generator now, so a clone's temporary directory goes before we return."""
    closer = getattr(records, "close", None)
    if closer:
        closer()


FLATTEN = option_defaults(FlattenOptions)  # the library's defaults, shown by --help
DEFAULTS = {"max_file_size": size_text(FLATTEN["max_file_size"]), "max_chars": FLATTEN["max_chars"]}


F = TypeVar("F", bound=Callable[..., Any])


def with_options_of(base: Callable[..., Any], *, drop: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Give a command every option of `base` that it does not declare itself (nor `drop`s), so a
    command that runs the same pipeline (`pack` beside `flatten`) repeats none of the
    declarations. Typer reads the combined signature; the inherited values arrive in `**kwargs`.
    """

    def decorate(command: F) -> F:
        own = {name: p for name, p in inspect.signature(command, eval_str=True).parameters.items()
               if p.kind is not inspect.Parameter.VAR_KEYWORD}  # fmt: skip
        inherited = [own.pop(name, p) for name, p in
                     inspect.signature(base, eval_str=True).parameters.items()
                     if name not in drop]  # fmt: skip
        params = [*own.values(), *inherited]  # its own new options first, then base's order
        keyword = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]
        command.__signature__ = inspect.Signature(keyword)  # type: ignore[attr-defined]
        return command

    return decorate
