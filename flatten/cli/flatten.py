"""`docs-flatten flatten`: a folder, repository or site to JSONL records on stdout or a file."""

from __future__ import annotations

from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from flatten.cli.options import (
    CRAWL_DEFAULTS,
    DEFAULTS,
    Concurrency,
    Delay,
    Exclude,
    Header,
    IgnoreRobots,
    Include,
    Kind,
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
    close,
    crawl_options,
    flatten_options,
    source_records,
)  # fmt: skip
from flatten.progress import Progress
from flatten.record import PROFILES
from flatten.report import RunReport
from flatten.writer import write_json, write_jsonl


class Format(StrEnum):
    native = "native"
    langchain = "langchain"
    llamaindex = "llamaindex"
    haystack = "haystack"


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
                      help="Write JSONL here (atomically) [default: stdout].")] = None,
    include: Include = None,
    exclude: Exclude = None,
    max_file_size: MaxFileSize = DEFAULTS["max_file_size"],
    max_chars: MaxChars = DEFAULTS["max_chars"],
    fmt: Annotated[Format, typer.Option("--format", help="Record layout: native v1, or the "
                   "document layout of a RAG framework.")] = Format.native,
    report_path: Annotated[Path | None, typer.Option("--report", metavar="FILE",
                           show_default=False, help="Write the run report as JSON.")] = None,
    workers: Workers = 0,
    quiet: Quiet = False,
) -> None:  # fmt: skip
    """Flatten a folder, a git repository or a docs site into JSONL records, one per slice."""
    options = flatten_options(kind, include, exclude, max_file_size, max_chars, workers)
    # What this run writes is never read as input (`--root . -o out.jsonl`, run twice).
    outputs = tuple(str(p) for p in (output, report_path) if p is not None)
    options = replace(options, outputs=outputs)
    crawling = crawl_options(url, scope, max_pages, max_depth, concurrency, delay, timeout,
                             max_page_size, ignore_robots, no_sitemap, header)  # fmt: skip
    report = RunReport(source=str(root or repo or url))
    try:
        with Progress("flatten", enabled=not quiet) as progress:
            records = source_records(root, repo, ref, subdir, token_env, options, report,
                                     progress, url=url, crawling=crawling)  # fmt: skip
            try:
                write_jsonl(records, output, PROFILES[fmt.value], marked=fmt is Format.native)
            finally:
                close(records)
    except BaseException as exc:
        report.fail(exc)
        raise
    finally:
        if report_path is not None:
            write_json(report.to_dict(), report_path)
    if not quiet:
        typer.echo(report.summary(), err=True)
