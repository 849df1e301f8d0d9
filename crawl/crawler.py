"""A bounded, polite, same-host crawl of an HTML documentation site.

Bounds: pages, depth, bytes per page (counted after decompression, while streaming, so neither
an endless page nor a compression bomb gets through), a deadline per page, and bounded
concurrency with a delay between requests. Redirects are followed here, not by the client, so
an off-scope target is recorded and never fetched. robots.txt is obeyed (Crawl-delay too) unless
turned off; 429 and 503 are retried after their Retry-After, within limits. Every page not
taken is reported with a reason, and a crawl cut short by a bound says so (`truncated`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
import urllib.robotparser
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx

from crawl.extract import extract
from crawl.urls import Scope, looks_non_html, normalize, resolve
from flatten._version import __version__
from flatten.errors import FlattenError
from flatten.hashing import sha256_hex
from flatten.retry import retry_after_seconds

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_LOC = re.compile(r"<loc>\s*([^<\s]+)\s*</loc>", re.I)
_CHARSET = re.compile(r"charset=[\"']?([\w.:-]+)", re.I)
MAX_REDIRECTS = 5
USER_AGENT = f"docs-flatten/{__version__} (documentation indexer)"


class CrawlError(FlattenError):
    """The crawl could not fetch a single page."""


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
    respect_robots: bool = True
    use_sitemap: bool = True
    scope: str | None = None  # a path prefix; default: the seed's directory
    headers: tuple[tuple[str, str], ...] = ()
    user_agent: str = USER_AGENT


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    markdown: str
    depth: int


@dataclass
class CrawlReport:
    seed: str = ""
    scope: str = ""
    fetched: int = 0
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (url, reason, detail)
    frontier: int = 0  # in-scope URLs found but not visited
    truncated: bool = False

    def skip(self, url: str, reason: str, detail: str = "") -> None:
        self.skipped.append((url, reason, detail))

    @property
    def skipped_by_reason(self) -> Counter[str]:
        return Counter(reason for _, reason, _ in self.skipped)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "scope": self.scope,
            "pagesFetched": self.fetched,
            "skippedByReason": dict(sorted(self.skipped_by_reason.items())),
            "frontier": self.frontier,
            "truncated": self.truncated,
            "skipped": [{"url": u, "reason": r, "detail": d} for u, r, d in self.skipped],
        }


@dataclass(frozen=True)
class _Busy:
    """A 429/503 answer: retry after the server's Retry-After, if it allows."""

    status: int
    retry_after: str | None


class _Skip(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def crawl(seed: str, options: CrawlOptions | None = None, report: CrawlReport | None = None
          ) -> list[Page]:  # fmt: skip
    """Crawl from `seed`; pages in URL order, exact duplicates (same text) dropped."""
    options = options or CrawlOptions()
    report = report if report is not None else CrawlReport()
    scope = Scope.for_seed(seed, options.scope)
    report.seed = normalize(seed)
    report.scope = f"{scope.scheme}://{scope.netloc}{scope.prefix}"
    pages = asyncio.run(_Crawler(scope, options, report).run(report.seed))
    return _without_duplicates(pages, report)


def _without_duplicates(pages: list[Page], report: CrawlReport) -> list[Page]:
    kept: dict[str, Page] = {}
    for page in sorted(pages, key=lambda p: p.url):
        digest = sha256_hex(page.markdown)
        if digest in kept:
            report.skip(page.url, "duplicate", f"same text as {kept[digest].url}")
        else:
            kept[digest] = page
    return sorted(kept.values(), key=lambda p: p.url)


class _Crawler:
    def __init__(self, scope: Scope, options: CrawlOptions, report: CrawlReport) -> None:
        self.scope = scope
        self.options = options
        self.report = report
        self.queue: deque[tuple[str, int]] = deque()
        self.seen: set[str] = set()
        self.pages: list[Page] = []
        self.robots: urllib.robotparser.RobotFileParser | None = None
        self.delay = options.delay
        self.next_request = 0.0
        self.clock = asyncio.Lock()
        self.started = 0  # pages whose fetch began (bounded by max_pages)
        self.active = 0  # fetches in flight
        self.changed = asyncio.Condition()  # the queue or `active` changed
        self.sitemaps: list[str] = []  # named by robots.txt

    async def run(self, seed: str) -> list[Page]:
        headers = {"User-Agent": self.options.user_agent, **dict(self.options.headers)}
        async with httpx.AsyncClient(
            follow_redirects=False, headers=headers, timeout=self.options.timeout
        ) as client:
            self.client = client
            if self.options.respect_robots:
                await self._load_robots()
            self._enqueue(seed, 0, source="seed")
            if self.options.use_sitemap:
                await self._seed_from_sitemap()
            workers = [asyncio.create_task(self._worker()) for _ in range(self.options.concurrency)]
            await asyncio.gather(*workers)
        self.report.frontier = len(self.queue)
        if self.queue:
            self.report.truncated = True
        return self.pages

    def _enqueue(self, url: str, depth: int, *, source: str) -> None:
        if url in self.seen:
            return
        self.seen.add(url)
        if not self.scope.admits(url):
            self.report.skip(url, "scope", f"outside {self.report.scope} (from {source})")
        elif looks_non_html(url):
            self.report.skip(url, "type", "not HTML by its extension")
        elif depth > self.options.max_depth:
            self.report.skip(url, "depth", f"deeper than {self.options.max_depth}")
        elif self.robots is not None and not self.robots.can_fetch(self.options.user_agent, url):
            self.report.skip(url, "robots", "disallowed by robots.txt")
        else:
            self.queue.append((url, depth))

    async def _worker(self) -> None:
        while True:
            async with self.changed:
                # An empty queue is not the end while other fetches may still add links.
                while not self.queue and self.active:
                    await self.changed.wait()
                if not self.queue or self.started >= self.options.max_pages:
                    self.changed.notify_all()
                    return
                url, depth = self.queue.popleft()
                self.started += 1
                self.active += 1
            try:
                await self._visit(url, depth)
            finally:
                async with self.changed:
                    self.active -= 1
                    self.changed.notify_all()  # new links, or the last fetch is done

    async def _visit(self, url: str, depth: int) -> None:
        try:
            final_url, html = await self._fetch(url)
        except _Skip as skip:
            self.report.skip(url, skip.reason, skip.detail)
            return
        except TimeoutError:
            self.report.skip(url, "timeout", f"no complete page within {self.options.timeout:g} s")
            return
        except httpx.HTTPError as exc:
            self.report.skip(url, "error", type(exc).__name__)
            return
        page = extract(html, final_url)
        self.report.fetched += 1
        self.pages.append(Page(final_url, page.title, page.markdown, depth))
        for link in page.links:
            self._enqueue(link, depth + 1, source=final_url)

    async def _wait_turn(self) -> None:
        """A polite gap between requests, across all workers."""
        async with self.clock:
            now = time.monotonic()
            wait = self.next_request - now
            self.next_request = max(now, self.next_request) + self.delay
        if wait > 0:
            await asyncio.sleep(wait)

    async def _fetch(self, url: str) -> tuple[str, str]:
        """(final URL, HTML) of a page, following in-scope redirects and retrying 429/503."""
        attempts = 0
        chain = [url]  # this request's redirects so far
        current = url
        while True:
            await self._wait_turn()
            async with asyncio.timeout(self.options.timeout):  # per attempt, not its retry wait
                outcome = await self._attempt(current, chain)
            if isinstance(outcome, tuple):
                return outcome
            if isinstance(outcome, str):  # a redirect to follow
                current = outcome
                continue
            attempts += 1  # 429/503: a pause, then a retry
            pause = retry_after_seconds(outcome.retry_after, attempts)
            if attempts > self.options.retries or pause > self.options.max_retry_after:
                raise _Skip(f"http-{outcome.status}", f"still busy after {attempts - 1} retries")
            await asyncio.sleep(pause)

    async def _attempt(self, current: str, chain: list[str]) -> tuple[str, str] | str | _Busy:
        """One request: the page (URL, HTML), a redirect target, or a busy answer to retry."""
        async with self.client.stream("GET", current) as response:
            status = response.status_code
            if status in (301, 302, 303, 307, 308):
                target = resolve(current, response.headers.get("location", ""))
                if target is None:
                    raise _Skip("error", f"redirect without a usable Location ({status})")
                if not self.scope.admits(target):
                    raise _Skip("scope", f"redirects off scope to {target}; not fetched")
                if target in chain or len(chain) > MAX_REDIRECTS:
                    raise _Skip("redirect-loop", " -> ".join([*chain, target]))
                if target in self.seen:
                    raise _Skip("duplicate", f"redirects to {target}, already queued")
                self.seen.add(target)
                chain.append(target)
                return target
            if status in (429, 503):
                return _Busy(status, response.headers.get("retry-after"))
            if status >= 400:
                raise _Skip(f"http-{status}", response.reason_phrase or "")
            content_type = response.headers.get("content-type", "")
            if content_type and not content_type.lower().startswith(_HTML_TYPES):
                raise _Skip("type", f"Content-Type {content_type.split(';')[0]}")
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > self.options.max_page_bytes:
                raise _Skip("size", f"Content-Length {declared} bytes")
            body = bytearray()
            async for chunk in response.aiter_bytes():  # decompressed as it arrives
                body += chunk
                if len(body) > self.options.max_page_bytes:
                    raise _Skip("size", f"over {self.options.max_page_bytes} bytes")
            return current, _decode(bytes(body), content_type)

    async def _load_robots(self) -> None:
        robots_url = f"{self.scope.scheme}://{self.scope.netloc}/robots.txt"
        try:
            async with asyncio.timeout(self.options.timeout):
                response = await self.client.get(robots_url)
        except (httpx.HTTPError, TimeoutError):
            return  # no robots.txt we can read: nothing is disallowed
        if response.status_code >= 400:
            return
        parser = urllib.robotparser.RobotFileParser()
        parser.parse(response.text.splitlines())
        self.robots = parser
        crawl_delay = _crawl_delay(response.text, self.options.user_agent)
        if crawl_delay:
            self.delay = max(self.delay, crawl_delay)
        self.sitemaps = list(parser.site_maps() or [])

    async def _seed_from_sitemap(self) -> None:
        candidates = [f"{self.scope.scheme}://{self.scope.netloc}/sitemap.xml", *self.sitemaps]
        for sitemap in dict.fromkeys(normalize(s) for s in candidates):
            if urlsplit(sitemap)[:2] != (self.scope.scheme, self.scope.netloc):
                self.report.skip(sitemap, "scope", "sitemap on another host; not fetched")
                continue
            try:
                async with asyncio.timeout(self.options.timeout):
                    response = await self.client.get(sitemap)
            except (httpx.HTTPError, TimeoutError):
                continue
            if response.status_code >= 400:
                continue
            for loc in _LOC.findall(response.text[: self.options.max_page_bytes]):
                url = resolve(sitemap, loc)
                if url:
                    self._enqueue(url, 1, source="sitemap")


def _crawl_delay(robots: str, user_agent: str) -> float | None:
    """Crawl-delay for our agent (else `*`). The stdlib parser drops fractional values."""
    groups: list[tuple[list[str], float | None]] = []
    agents: list[str] = []
    delay: float | None = None
    in_rules = False
    for raw in robots.splitlines():
        key, sep, value = raw.split("#", 1)[0].partition(":")
        key, value = key.strip().lower(), value.strip()
        if not sep:
            continue
        if key == "user-agent":
            if in_rules:
                groups.append((agents, delay))
                agents, delay, in_rules = [], None, False
            agents.append(value.lower())
        elif key in ("allow", "disallow", "crawl-delay"):
            in_rules = True
            if key == "crawl-delay":
                with contextlib.suppress(ValueError):
                    delay = float(value)
    if agents:
        groups.append((agents, delay))
    name = user_agent.split("/")[0].lower()
    for wanted in (lambda a: a != "*" and a in name, lambda a: a == "*"):
        for group_agents, group_delay in groups:
            if any(wanted(a) for a in group_agents):
                return group_delay
    return None


def _decode(body: bytes, content_type: str) -> str:
    match = _CHARSET.search(content_type) or _CHARSET.search(body[:2048].decode("ascii", "ignore"))
    encoding = match.group(1) if match else "utf-8"
    try:
        return body.decode(encoding, errors="replace")
    except LookupError:
        return body.decode("utf-8", errors="replace")
