"""`docs-flatten flatten`: a folder, repository or site to JSONL records on stdout or a file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flatten.cli.flattening import flatten_to_jsonl
from flatten.cli.options import (
    Concurrency,
    Config,
    Delay,
    Exclude,
    Header,
    IgnoreRobots,
    Include,
    KindOption,
    MaxChars,
    MaxDepth,
    MaxFileSize,
    MaxPages,
    MaxPageSize,
    NoSitemap,
    Quiet,
    Ref,
    Repo,
    Root,
    Scope,
    Subdir,
    Timeout,
    TokenEnv,
    Url,
    Workers,
)  # fmt: skip
from flatten.cli.settings import CRAWL_DEFAULTS, DEFAULTS, Format, Kind, stdout_dash

__all__ = ["Format", "flatten_command"]


def flatten_command(
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
    output: Annotated[Path | None, typer.Option("-o", "--output", show_default=False,
                      callback=stdout_dash,
                      help="Write JSONL here (atomically) \\[default: stdout].")] = None,
    include: Include = None,
    exclude: Exclude = None,
    max_file_size: MaxFileSize = DEFAULTS["max_file_size"],
    max_chars: MaxChars = DEFAULTS["max_chars"],
    fmt: Annotated[Format, typer.Option("--format", help="Record layout: native v1, or the "
                   "document layout of a RAG framework.")] = Format.native,
    report_path: Annotated[Path | None, typer.Option("--report", metavar="FILE",
                           show_default=False, help="Write the run report as JSON.")] = None,
    workers: Workers = 0,
    config: Config = None,
    quiet: Quiet = False,
) -> None:  # fmt: skip
    """Flatten a folder, a git repository or a docs site into JSONL records, one per slice."""
    flatten_to_jsonl(
        fmt, output, root=root, repo=repo, ref=ref, subdir=subdir, token_env=token_env, url=url,
        scope=scope, max_pages=max_pages, max_depth=max_depth, concurrency=concurrency,
        delay=delay, timeout=timeout, max_page_size=max_page_size, ignore_robots=ignore_robots,
        no_sitemap=no_sitemap, header=header, kind=kind, include=include, exclude=exclude,
        max_file_size=max_file_size, max_chars=max_chars, report_path=report_path,
        workers=workers, config=config, quiet=quiet,
    )  # fmt: skip
