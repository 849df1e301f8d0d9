"""The settings of a command that flattens, without typer: the flags' defaults read from the
library's option dataclasses, the config read and checked, and the flags turned into those
dataclasses (sizes parsed, exactly one source checked). `flatten.cli.options` declares the
flags for typer with these; `flatten.cli.quick` runs `flatten` on them without importing typer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


class Kind(StrEnum):
    docs = "docs"
    code = "code"
    auto = "auto"


class Format(StrEnum):
    """`flatten --format`: the record layout, native v1 or a RAG framework's document."""

    native = "native"
    langchain = "langchain"
    llamaindex = "llamaindex"
    haystack = "haystack"


def size_text(size: int) -> str:
    """Bytes as the shortest exact size `parse_size` reads back: 1048576 -> `1MiB`."""
    for suffix, unit in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


# Processes are forked as asked, however few the files: a count past any machine's cores
# (a typo, 10000 for 100) would fork that many.
MAX_PROCESSES = 256


# Text parameters that name a file or folder on disk (a `Path` parameter does too): a Linux
# file name may be any bytes, which Python hands over as surrogate escapes. Any other text of a
# command line must be UTF-8: it is matched against the index's text, sent to a server or
# printed, and a surrogate escape in it ended in a traceback (sqlite refuses to encode it).
ON_DISK = frozenset({"store_dir", "paths", "repo", "subdir"})


def undecodable(value: str) -> str | None:
    """`value` as the index spells such a name (`flatten.sources.base.escape_name`: each byte
    that is not UTF-8 as `\\xNN`) if it holds such a byte, else None."""
    from flatten.shown import is_utf8
    from flatten.sources.base import escape_name

    return None if is_utf8(value) else escape_name(value)


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


def stdout_dash(path: Path | None) -> Path | None:
    """`-o -` writes to stdout, as most tools read it (leaving `-o` out says the same)."""
    return None if path is not None and str(path) == "-" else path
