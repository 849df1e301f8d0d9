"""The `docs-flatten` command: argument parsing and output over the library API, nothing more.

Data goes to stdout, diagnostics to stderr. Exit codes: 0 ok, 1 the run failed, 2 usage error.
Every failure prints what was wrong and what to do; no traceback reaches the user.
"""

from __future__ import annotations

import signal
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from flatten import __version__
from flatten.cli_common import (
    CRAWL_DEFAULTS,
    DEFAULTS,
    Concurrency,
    Config,
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
    app,
    close,
    crawl_options,
    flatten_options,
    reports_errors,
    source_records,
)  # fmt: skip
from flatten.config import load_config
from flatten.errors import FlattenError
from flatten.profiles import PROFILES
from flatten.progress import Progress
from flatten.report import RunReport
from flatten.writer import write_json, write_jsonl


class Format(StrEnum):
    native = "native"
    langchain = "langchain"
    llamaindex = "llamaindex"
    haystack = "haystack"


@app.callback(invoke_without_command=True)
def _root(
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.")] = False,
) -> None:
    if version:
        typer.echo(f"docs-flatten {__version__}")
        raise typer.Exit(0)


@app.command()
@reports_errors
def flatten(
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
    config: Config = None,
    quiet: Quiet = False,
) -> None:  # fmt: skip
    """Flatten a folder, a git repository or a docs site into JSONL records, one per slice."""
    options = flatten_options(kind, include, exclude, max_file_size, max_chars, workers,
                              load_config(config))  # fmt: skip
    crawling = crawl_options(url, scope, max_pages, max_depth, concurrency, delay, timeout,
                             max_page_size, ignore_robots, no_sitemap, header)  # fmt: skip
    report = RunReport(source=str(root or repo or url))
    try:
        with Progress("flatten", enabled=not quiet) as progress:
            records = source_records(root, repo, ref, subdir, token_env, options, report,
                                     progress, url=url, crawling=crawling)  # fmt: skip
            try:
                write_jsonl(records, output, PROFILES[fmt.value])
            finally:
                close(records)
    except FlattenError as exc:
        report.error = {"reason": exc.reason, "message": exc.message}
        raise
    finally:
        if report_path is not None:
            write_json(report.to_dict(), report_path)
    if not quiet:
        typer.echo(report.summary(), err=True)


# The index and query commands register themselves on the same app.
from flatten import cli_index, cli_mcp  # noqa: E402, F401


def _terminate(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # run the same clean-up as Ctrl-C


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    app()


if __name__ == "__main__":
    main()
