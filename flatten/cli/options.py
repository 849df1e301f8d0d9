"""The options the commands share, declared for typer; their defaults, and the flags turned into
the library's option dataclasses, are `flatten.cli.settings`' (which does not import typer)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

import crawl.options as crawl
from flatten.cli.settings import MAX_PROCESSES, Kind
from flatten.errors import UsageError

# The index loads when a command runs, not for --help.
if TYPE_CHECKING:
    from index.vectors.client import EmbeddingConfig


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
# Bounded as the config's crawl settings are (`crawl.options`).
MaxPages = Annotated[int, typer.Option("--max-pages", min=crawl.PAGES[0], max=crawl.PAGES[1],
                                       help="Pages to fetch at most.")]  # fmt: skip
MaxDepth = Annotated[int, typer.Option("--max-depth", min=crawl.DEPTH[0], max=crawl.DEPTH[1],
                                       help="Links to follow from the URL.")]  # fmt: skip
Concurrency = Annotated[
    int,
    typer.Option("--concurrency", min=crawl.CONCURRENCY[0], max=crawl.CONCURRENCY[1],
                 help="Requests in flight at once."),
]  # fmt: skip
# A crawl waits `--delay` and `--timeout` in full: `nan` passes every comparison.
Delay = Annotated[
    float,
    typer.Option("--delay", min=crawl.DELAY[0], max=crawl.DELAY[1], callback=finite,
                 help="Seconds between requests (robots.txt Crawl-delay can raise it)."),
]  # fmt: skip
Timeout = Annotated[
    float,
    typer.Option("--timeout", min=crawl.TIMEOUT[0], max=crawl.TIMEOUT[1], callback=finite,
                 help="Seconds for one page."),
]  # fmt: skip
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


def embedding_config(
    settings: dict[str, Any], base_url: str | None, model: str | None, api_key_env: str | None
) -> EmbeddingConfig | None:
    """The embeddings settings: the loaded config's section with the flags over it; None if off."""
    from index.vectors.client import EmbeddingConfig

    section = dict(settings.get("embeddings") or {})
    overrides = {"base_url": base_url, "model": model, "api_key_env": api_key_env}
    section.update({k: v for k, v in overrides.items() if v is not None})
    return EmbeddingConfig.from_config(section or None)


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
