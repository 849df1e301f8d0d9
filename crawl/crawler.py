"""A bounded, polite, same-host crawl of an HTML documentation site.

Bounds: pages, depth, bytes per page (counted after decompression, while streaming, so neither
an endless page nor a compression bomb gets through), a deadline per page, and bounded
concurrency with a delay between requests. Redirects are followed here, not by the client, so
an off-scope target is recorded and never fetched. Every URL is checked in its normal form
(dot segments resolved), the form that is requested. robots.txt is obeyed unless turned off,
read as RFC 9309 says (Protego: wildcards, the longest match wins; a robots.txt that answers
5xx or cannot be reached disallows everything) and its Crawl-delay capped at
`max_crawl_delay`; robots.txt and sitemaps obey the page-size cap too. 429 and 503 are retried
after their Retry-After, within limits. Every page not taken is reported with a reason, a page
that cannot be extracted is skipped with one, and a crawl cut short by a bound says so
(`truncated`).
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import ssl
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from protego import Protego

from crawl.charset import decode_html
from crawl.duplicates import without_duplicates
from crawl.extract import Unextractable, extract
from crawl.options import CrawlOptions
from crawl.urls import Scope, lenient_path, looks_non_html, normalize, resolve
from flatten.classify import include_exclude_reason
from flatten.errors import FlattenError
from flatten.retry import retry_after_seconds
from flatten.userinfo import strip_credentials

_HTML_TYPES = ("text/html", "application/xhtml+xml")
_LOC = re.compile(r"<loc>\s*([^<\s]+)\s*</loc>", re.I)
_REDIRECTS = (301, 302, 303, 307, 308)
MAX_REDIRECTS = 5


class CrawlError(FlattenError):
    """The crawl could not fetch a single page."""


def nothing_fetched(url: str, report: CrawlReport) -> CrawlError:
    """The error of a crawl that got no page: why the seed was skipped, the counts of every
    reason, and a hint for the seed's reason."""
    seed = next(((r, d) for u, r, d in report.skipped if u == report.seed), None)
    message = f"no page could be fetched from {strip_credentials(url)}"
    if seed is not None:
        message += f": the seed was skipped ({seed[0]}" + (f": {seed[1]})" if seed[1] else ")")
    if report.skipped and not (seed and len(report.skipped) == 1):
        counts = ", ".join(f"{r} {n:,}" for r, n in sorted(report.skipped_by_reason.items()))
        message += f"; skipped by reason: {counts}"
    reason = seed[0] if seed else ""
    hint = _SEED_HINTS.get(
        "http-5xx" if reason.startswith("http-5") else reason,
        "check the URL and --scope; --report lists why each page was skipped",
    )
    return CrawlError(message, reason="nothing-fetched", hint=hint)


_SEED_HINTS = {
    "scope": "the seed is outside the crawl's scope: widen --scope or start from a page in it",
    "robots": "robots.txt forbids the seed: --ignore-robots if you may crawl it anyway",
    "timeout": "the server did not answer in time: raise --timeout or check it is up",
    "unreachable": "nothing answered at that host and port: check the server is up and the "
    "URL's host and port are right",
    "http-5xx": "the server failed (5xx): check it is up and try again",
    "http-404": "the seed does not exist: check the URL",
    "redirect-loop": "the seed redirects in a loop: start from the page it should reach",
    "error": "the request failed (connection, or a bad --header?): check the URL and headers",
    "type": "the seed is not HTML: start from an HTML page of the site",
}


# Skip reasons that lose a page which may still exist (a server fault, a timeout, the byte cap,
# a status other than "gone"): a crawl with any of them is no snapshot of the site. 404 and 410
# say the page is gone, and scope, robots, type, depth or duplicate are the crawl's own choices.
_GONE = frozenset({"http-404", "http-410"})
_LOST = frozenset({"error", "timeout", "size", "redirect-loop", "unreachable"})


def loses_page(reason: str) -> bool:
    return reason in _LOST or (reason.startswith("http-") and reason not in _GONE)


@dataclass(frozen=True)
class Page:
    url: str
    title: str
    markdown: str
    depth: int
    heading_ids: tuple[tuple[int, str], ...] = ()  # (markdown line, the page's id)
    canonical: str | None = None


@dataclass
class CrawlReport:
    seed: str = ""
    scope: str = ""
    fetched: int = 0
    skipped: list[tuple[str, str, str]] = field(default_factory=list)  # (url, reason, detail)
    frontier: int = 0  # in-scope URLs found but not visited
    truncated: bool = False
    crawl_delay: float = 0.0  # seconds between requests, as applied
    notes: list[tuple[str, str]] = field(default_factory=list)  # (url, what was limited)
    # A wider --scope and how many refused pages it admits, when the scope refused most of them.
    scope_hint: tuple[str, int] | None = None

    def skip(self, url: str, reason: str, detail: str = "") -> None:
        self.skipped.append((url, reason, detail))

    def note(self, url: str, note: str) -> None:
        self.notes.append((url, note))

    @property
    def skipped_by_reason(self) -> Counter[str]:
        return Counter(reason for _, reason, _ in self.skipped)

    @property
    def partial(self) -> tuple[str, str] | None:
        """(reason, detail) when this crawl is not the whole site: cut by a bound, or pages
        lost to errors. Its pages then add and update, never remove (a partial load)."""
        if self.truncated:
            return "truncated", f"{self.frontier:,} pages left unvisited by a bound"
        lost = Counter(reason for _, reason, _ in self.skipped if loses_page(reason))
        if lost:
            counts = ", ".join(f"{r} {n:,}" for r, n in sorted(lost.items()))
            return "fetch-errors", f"{sum(lost.values()):,} pages not fetched ({counts})"
        return None

    def to_dict(self) -> dict[str, Any]:
        partial = self.partial
        return {
            "seed": self.seed,
            "scope": self.scope,
            "pagesFetched": self.fetched,
            "skippedByReason": dict(sorted(self.skipped_by_reason.items())),
            "frontier": self.frontier,
            "truncated": self.truncated,
            "partial": {"reason": partial[0], "detail": partial[1]} if partial else None,
            "crawlDelay": self.crawl_delay,
            "scopeHint": self.scope_hint[0] if self.scope_hint else None,
            "scopeHintAdmits": self.scope_hint[1] if self.scope_hint else None,
            "notes": [{"url": u, "note": n} for u, n in self.notes],
            "skipped": [{"url": u, "reason": r, "detail": d} for u, r, d in self.skipped],
        }


@dataclass(frozen=True)
class _Busy:
    """A 429/503 answer: retry after the server's Retry-After, if it allows."""

    status: int
    retry_after: str | None


def unreachable(exc: httpx.ConnectError | httpx.ConnectTimeout) -> tuple[str, str]:
    """(reason, detail) of a connection that could not be made: `cannot connect: connection
    refused`, `cannot connect: host not found`, named from the system's error under httpx's."""
    if isinstance(exc, httpx.ConnectTimeout):
        return "unreachable", "cannot connect: no answer in time"
    cause: BaseException | None = exc
    # anyio wraps the system's error in a plain `OSError('All connection attempts failed')`.
    while cause is not None and not (isinstance(cause, OSError) and cause.errno is not None):
        cause = cause.__cause__ or cause.__context__
    if isinstance(cause, socket.gaierror):
        why = "host not found"
    elif isinstance(cause, ssl.SSLError):
        why = f"TLS handshake failed ({cause.reason or cause.__class__.__name__})"
    elif isinstance(cause, OSError) and cause.errno and cause.errno > 0:
        why = os.strerror(cause.errno).lower()  # `connection refused`, `network is unreachable`
    else:
        why = str(exc) or type(exc).__name__
    return "unreachable", f"cannot connect: {why}"


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
    report.scope_hint = scope_hint(scope, report)
    return without_duplicates(pages, report.skip)


def scope_hint(scope: Scope, report: CrawlReport) -> tuple[str, int] | None:
    """A wider scope, when this one refused more same-host pages than were fetched."""
    outside = [url for url, reason, _ in report.skipped if reason == "scope"
               and urlsplit(url)[:2] == (scope.scheme, scope.netloc)]  # fmt: skip
    if len(outside) <= report.fetched:
        return None
    return scope.wider(outside)


class _Crawler:
    def __init__(self, scope: Scope, options: CrawlOptions, report: CrawlReport) -> None:
        self.scope = scope
        self.options = options
        self.report = report
        self.queue: deque[tuple[str, int]] = deque()
        self.seen: set[str] = set()
        # A URL's depth is the fewest links from the seed, whichever fetch finishes first: a
        # page reached by a slow path after a fast, longer one is taken at the shorter depth
        # (a depth-skipped page is queued after all; a fetched one's links move nearer too),
        # so the pages within --max-depth are the same set on every run (a load removes the
        # rest: the depth bound is the crawl's scope, not a cut).
        self.depth: dict[str, int] = {}
        self.too_deep: set[str] = set()  # skipped for depth, until reached at a smaller one
        self.followed: dict[str, list[str]] = {}  # a fetched page's links, by its queued URL
        self.pages: list[Page] = []
        self.robots: Protego | None = None
        # (reason, detail) when every page is refused: robots.txt could not be read (RFC 9309
        # then disallows everything), or its host could not be reached at all.
        self.robots_refusal: tuple[str, str] | None = None
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
            self.report.crawl_delay = self.delay
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
            self._nearer(url, depth)
            return
        self.seen.add(url)
        self.depth[url] = depth
        refusal = self._refusal(url, source)
        if refusal:
            self.report.skip(url, *refusal)
        elif looks_non_html(url):
            self.report.skip(url, "type", "not HTML by its extension")
        elif depth > self.options.max_depth:
            self.report.skip(url, "depth", f"deeper than {self.options.max_depth}")
            self.too_deep.add(url)
        else:
            self.queue.append((url, depth))

    def _nearer(self, url: str, depth: int) -> None:
        """`url`, seen before, found again `depth` links from the seed: if that is nearer,
        a depth skip is undone, and a fetched page's links are one step nearer too."""
        if depth >= self.depth.get(url, depth):
            return
        self.depth[url] = depth  # a queued URL is visited at its least depth (`_worker`)
        if url in self.too_deep and depth <= self.options.max_depth:
            self.too_deep.discard(url)
            self.report.skipped = [s for s in self.report.skipped
                                   if not (s[0] == url and s[1] == "depth")]  # fmt: skip
            self.queue.append((url, depth))
        for link in self.followed.get(url, ()):
            self._enqueue(link, depth + 1, source=url)

    def _refusal(self, url: str, source: str) -> tuple[str, str] | None:
        """(reason, detail) when scope or robots.txt forbids `url` (a normal URL), else None."""
        if not self.scope.admits(url):
            return "scope", f"outside {self.report.scope} (from {source})"
        path = urlsplit(url).path or "/"
        filtered = include_exclude_reason(path, self.options.include, self.options.exclude)
        if filtered:
            flag = "--include" if filtered == "not-included" else "--exclude"
            return filtered, f"URL path turned away by {flag} (from {source})"
        if self.robots_refusal:
            return self.robots_refusal
        if self.robots is None:
            return None
        parts = urlsplit(url)
        lenient = lenient_path(url) + (f"?{parts.query}" if parts.query else "")
        agent = self.options.user_agent
        if not (self.robots.can_fetch(url, agent) and self.robots.can_fetch(lenient, agent)):
            return "robots", "disallowed by robots.txt"
        return None

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
                depth = min(depth, self.depth.get(url, depth))
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
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            self.report.skip(url, *unreachable(exc))
            return
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            self.report.skip(url, "error", type(exc).__name__)
            return
        try:
            page = extract(html, final_url)
        except Unextractable as exc:
            self.report.skip(final_url, exc.reason, str(exc))
            return
        except Exception as exc:  # a parser fault is this page's, never the whole crawl's
            self.report.skip(final_url, "unextractable", f"{type(exc).__name__}: {exc}"[:200])
            return
        self.report.fetched += 1
        depth = min(depth, self.depth.get(url, depth))  # found nearer while it was fetched
        self.followed[url] = page.links
        for link in page.links:
            self._enqueue(link, depth + 1, source=final_url)
        if page.generated:
            self.report.skip(final_url, "generated-index", f"{page.generated}; links followed")
            return
        if page.whole_book and self._admits_another(page.links, final_url):
            why = f"{page.whole_book}: its chapters are in scope and crawled on their own"
            self.report.skip(final_url, "all-in-one", why)
            return
        self.pages.append(Page(final_url, page.title, page.markdown, depth, page.heading_ids,
                               page.canonical))  # fmt: skip

    def _admits_another(self, links: list[str], url: str) -> bool:
        """Whether the crawl may fetch some page `links` name other than `url` itself."""
        return any(link != url and self._refusal(link, url) is None for link in links)

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
            if status in _REDIRECTS:
                target = resolve(current, response.headers.get("location", ""))
                if target is None:
                    raise _Skip("error", f"redirect without a usable Location ({status})")
                refusal = self._refusal(target, current)
                if refusal:
                    raise _Skip(refusal[0], f"redirects to {target}: {refusal[1]}; not fetched")
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
            body, more = await _read_capped(response, self.options.max_page_bytes)
            if more:
                raise _Skip("size", f"over {self.options.max_page_bytes} bytes")
            return current, decode_html(body, content_type)

    async def _read_site_file(self, url: str, what: str) -> tuple[int, str]:
        """(status, text) of robots.txt or a sitemap: same-host redirects followed, at most
        the page-size cap read (the rest ignored, and noted)."""
        current = url
        for _ in range(MAX_REDIRECTS + 1):
            async with (asyncio.timeout(self.options.timeout),
                        self.client.stream("GET", current) as response):  # fmt: skip
                if response.status_code not in _REDIRECTS:
                    body, more = await _read_capped(response, self.options.max_page_bytes)
                    break
                target = resolve(current, response.headers.get("location", ""))
                if target is None or urlsplit(target)[:2] != urlsplit(url)[:2]:
                    raise _Skip("scope", f"{what} redirects to {target or 'nowhere'}")
                current = target
        else:
            raise _Skip("redirect-loop", f"{what}: more than {MAX_REDIRECTS} redirects")
        text = body.decode("utf-8", errors="replace")
        if more:
            if what == "robots.txt":
                text = text[: text.rfind("\n") + 1]  # whole lines only: never half a rule
            self.report.note(url, f"{what} over {self.options.max_page_bytes} bytes: "
                                  "only what came before the cap was read")  # fmt: skip
        return response.status_code, text

    async def _load_robots(self) -> None:
        robots_url = f"{self.scope.scheme}://{self.scope.netloc}/robots.txt"
        hint = "RFC 9309: assume everything is disallowed; --ignore-robots to crawl anyway"
        try:
            status, text = await self._read_site_file(robots_url, "robots.txt")
        except _Skip as skip:  # RFC 9309 allows treating this as no robots.txt at all
            self.report.note(robots_url, f"robots.txt not read ({skip.detail}): none assumed")
            return
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:  # nor can any page be
            self.robots_refusal = unreachable(exc)
            return
        except (httpx.TimeoutException, TimeoutError):  # a server this slow serves no page
            self.robots_refusal = (
                "timeout",
                (
                    f"robots.txt: no answer within {self.options.timeout:g} s, so nothing may be "
                    "fetched (RFC 9309)"
                ),
            )
            return
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            self.robots_refusal = "robots", f"robots.txt unreachable ({type(exc).__name__}); {hint}"
            return
        if status >= 500:
            self.robots_refusal = "robots", f"robots.txt answered HTTP {status}; {hint}"
            return
        if status >= 400:
            return  # no robots.txt: nothing is disallowed
        self.robots = Protego.parse(text)
        self.sitemaps = list(self.robots.sitemaps)
        asked = self.robots.crawl_delay(self.options.user_agent)  # None unless finite, >= 0
        if asked is None:
            return
        if asked > self.options.max_crawl_delay:
            self.report.note(robots_url, f"Crawl-delay {asked:g} s capped at "
                                         f"{self.options.max_crawl_delay:g} s")  # fmt: skip
        self.delay = max(self.delay, min(asked, self.options.max_crawl_delay))

    async def _seed_from_sitemap(self) -> None:
        robots_url = f"{self.scope.scheme}://{self.scope.netloc}/robots.txt"
        candidates = (resolve(robots_url, s) for s in ["/sitemap.xml", *self.sitemaps])
        for sitemap in dict.fromkeys(s for s in candidates if s):
            if urlsplit(sitemap)[:2] != (self.scope.scheme, self.scope.netloc):
                self.report.skip(sitemap, "scope", "sitemap on another host; not fetched")
                continue
            try:
                status, text = await self._read_site_file(sitemap, "sitemap")
            except _Skip as skip:
                self.report.skip(sitemap, skip.reason, skip.detail)
                continue
            except (httpx.HTTPError, httpx.InvalidURL, TimeoutError):
                continue
            if status >= 400:
                continue
            elsewhere: Counter[str] = Counter()
            for loc in _LOC.findall(text):
                url = resolve(sitemap, loc)
                if url and urlsplit(url)[:2] != (self.scope.scheme, self.scope.netloc):
                    elsewhere[urlsplit(url).netloc] += 1  # a build served away from its host
                elif url:
                    self._enqueue(url, 1, source="sitemap")
            if elsewhere:
                hosts = ", ".join(f"{n} URLs on {host}" for host, n in sorted(elsewhere.items()))
                self.report.skip(sitemap, "other-host",
                                 f"{hosts}: another host (the site's production address?); "
                                 "not fetched")  # fmt: skip


async def _read_capped(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """The body, decompressed as it arrives, up to `limit` bytes; True when there was more
    (then the rest is never read, so neither an endless body nor a compression bomb fills
    memory)."""
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body += chunk
        if len(body) > limit:
            return bytes(body[:limit]), True
    return bytes(body), False
