"""The crawl's options, apart from the crawler: the CLI reads their defaults for --help without
importing httpx and the HTML parser."""

from __future__ import annotations

from dataclasses import dataclass

from flatten._version import __version__

USER_AGENT = f"docs-flatten/{__version__} (documentation indexer)"

# The bounds (lowest, highest) of the crawl's number settings, for the flags
# (flatten.cli.options) and the config (flatten.config) alike: past them a value is a typo, and a
# crawl told `--delay 1e308` would wait between two requests for ever.
PAGES = (1, 1_000_000)  # --max-pages
DEPTH = (0, 1_000)  # --max-depth: links followed from the URL
CONCURRENCY = (1, 32)  # --concurrency: requests in flight
DELAY = (0.0, 60.0)  # --delay, seconds between requests (robots.txt's own is capped at 30 s)
TIMEOUT = (0.1, 600.0)  # --timeout, seconds for one page


@dataclass(frozen=True)
class CrawlOptions:
    max_pages: int = 500
    max_depth: int = 5
    max_page_bytes: int = 5 << 20
    timeout: float = 15.0  # seconds for one page, all of it
    concurrency: int = 4
    delay: float = 0.0  # seconds between requests (robots.txt Crawl-delay can raise it)
    retries: int = 2
    max_retry_after: float = 30.0
    max_crawl_delay: float = 30.0  # robots.txt may ask for more (100000, inf): capped, reported
    respect_robots: bool = True
    use_sitemap: bool = True
    scope: str | None = None  # a path prefix; default: the seed's directory
    # Globs on URL paths (`/docs/1.*`), as --include/--exclude: checked before a fetch.
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    user_agent: str = USER_AGENT
