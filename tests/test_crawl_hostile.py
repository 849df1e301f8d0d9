"""Hostile sites against the crawler, on real HTTP servers on 127.0.0.1: paths that climb out of
scope, robots.txt read as RFC 9309 says, pages that used to kill the crawl, endless or bombed
robots.txt and sitemaps, and URLs that are usage errors."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import ClassVar
from urllib.parse import unquote, urlsplit

import pytest

from crawl.crawler import CrawlOptions, CrawlReport, Page, crawl
from crawl.urls import Scope, normalize
from tests.conftest import assert_clean_failure, run_cli
from tests.sites import Responder, gzip_filled, page, serve


class Site(Responder):
    """Routes set per test: path -> (status, body, content type); a callable streams a body."""

    routes: ClassVar[dict[str, tuple[int, bytes, str] | Callable[[Responder], None]]] = {}
    asked: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        type(self).asked.append(self.path)
        route = type(self).routes.get(self.path)
        if route is None:
            self.respond(404, b"not found", "text/plain")
        elif callable(route):
            route(self)
        else:
            self.respond(*route)


@pytest.fixture
def site() -> Iterator[str]:
    Site.routes, Site.asked = {}, []
    with serve(Site) as base:
        yield base


def html(title: str, body: str) -> tuple[int, bytes, str]:
    return 200, page(title, body), "text/html; charset=utf-8"


def links(*hrefs: str) -> str:
    return "".join(f"<a href='{h}'>{h}</a> " for h in hrefs)


def run(
    base: str, seed: str, **options: object
) -> tuple[dict[str, Page], dict[str, str], CrawlReport]:
    report = CrawlReport()
    settings = {"timeout": 5.0, "use_sitemap": False, **options}
    pages = crawl(base + seed, CrawlOptions(**settings), report)
    reasons = {url.removeprefix(base): reason for url, reason, _ in report.skipped}
    return {p.url.removeprefix(base): p for p in pages}, reasons, report


def climbed_to_private(asked: list[str]) -> list[str]:
    """Requests that any server (even one decoding %2F and resolving `..`) reads as /private."""
    return [p for p in asked if "private" in p and not unquote(p).startswith("/s/private")]


# Item 4: dot segments, robots.txt per RFC 9309.


def test_urls_lose_their_dot_segments_escaped_or_not():
    assert normalize("http://h/s/../private/secret.html") == "http://h/private/secret.html"
    assert normalize("http://h/s/%2e%2E/private/x") == "http://h/private/x"
    assert normalize("http://h/s/.%2e/x/./y/.") == "http://h/x/y/"
    assert normalize("http://h/../../x") == "http://h/x"  # never above the root
    assert normalize("http://h/a%7eb%2fc") == "http://h/a~b%2Fc"  # only unreserved decoded
    scope = Scope.for_seed("http://h/s/")
    assert not scope.admits(normalize("http://h/s/..%2Fprivate/x"))  # a decoding server's view
    assert scope.admits(normalize("http://h/s/a%2Fb"))


def test_links_that_climb_out_of_scope_are_never_fetched(site):
    Site.routes = {
        "/s/": html(
            "Start",
            links(
                "/s/../private/secret.html",
                f"{site}/s/../private/abs.html",
                "%2e%2e/private/a.html",
                "/s/%2E%2E/private/b.html",
                "/s/..%2Fprivate/c.html",
                "/s/./ok.html",
            ),
        ),
        "/s/ok.html": html("Ok", "<p>in scope</p>"),
        "/private/secret.html": html("Secret", "<p>never</p>"),
    }
    pages, reasons, _ = run(site, "/s/")
    assert set(pages) == {"/s/", "/s/ok.html"}
    assert reasons["/private/secret.html"] == "scope" and reasons["/private/a.html"] == "scope"
    assert reasons["/s/..%2Fprivate/c.html"] == "scope"
    assert climbed_to_private(Site.asked) == []


def test_robots_txt_is_checked_on_the_path_that_is_requested(site):
    Site.routes = {
        "/robots.txt": (200, b"User-agent: *\nDisallow: /private/\n", "text/plain"),
        "/": html(
            "Home",
            links(
                "/pub/../private/a.html",
                "/pub/%2e%2e/private/b.html",
                "/pub/..%2Fprivate/c.html",
                "/redirect",
            ),
        ),
        "/redirect": lambda h: h.respond(302, headers={"Location": "/pub/../private/d.html"}),
        "/private/a.html": html("Secret", "<p>never</p>"),
    }
    _, reasons, _ = run(site, "/")
    assert reasons["/private/a.html"] == "robots" and reasons["/private/b.html"] == "robots"
    assert reasons["/pub/..%2Fprivate/c.html"] == "robots"
    assert reasons["/redirect"] == "robots"  # a redirect target is checked like a link
    assert climbed_to_private(Site.asked) == []


def test_robots_wildcards_and_end_anchors_as_rfc_9309_says(site):
    robots = b"User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?print=\n"
    Site.routes = {
        "/robots.txt": (200, robots, "text/plain"),
        "/": html("Home", links("/a/b.pdf", "/page?print=1", "/page", "/a/b.pdf.html")),
        "/page": html("Page", "<p>page</p>"),
        "/page?print=1": html("Print", "<p>print</p>"),
        "/a/b.pdf.html": html("Not a PDF", "<p>html</p>"),
    }
    pages, reasons, _ = run(site, "/")
    assert reasons["/a/b.pdf"] == "robots" and reasons["/page?print=1"] == "robots"
    assert {"/page", "/a/b.pdf.html"} <= set(pages)
    assert "/page?print=1" not in Site.asked


@pytest.mark.parametrize("rules", [
    "Disallow: /docs/\nAllow: /docs/public/", "Allow: /docs/public/\nDisallow: /docs/",
])  # fmt: skip
def test_the_longest_robots_rule_wins_whatever_its_line_order(site, rules):
    Site.routes = {
        "/robots.txt": (200, f"User-agent: *\n{rules}\n".encode(), "text/plain"),
        "/": html("Home", links("/docs/public/a", "/docs/other")),
        "/docs/public/a": html("Public", "<p>public</p>"),
        "/docs/other": html("Other", "<p>other</p>"),
    }
    pages, reasons, _ = run(site, "/")
    assert "/docs/public/a" in pages and reasons["/docs/other"] == "robots"


def test_a_robots_txt_that_fails_with_5xx_disallows_everything(site):
    Site.routes = {"/robots.txt": (503, b"down", "text/plain"), "/": html("Home", "<p>x</p>")}
    pages, reasons, report = run(site, "/")
    assert pages == {} and reasons["/"] == "robots"
    assert "--ignore-robots" in report.skipped[0][2]


# Item 14: Crawl-delay capped; robots.txt and sitemaps under the page-size cap.


def run_bounded(base: str, seed: str, **options: object
                ) -> tuple[dict[str, Page], dict[str, str], CrawlReport]:  # fmt: skip
    """`run` with a generous bound: a hang fails the test instead of stalling the suite."""
    result: list[tuple[dict[str, Page], dict[str, str], CrawlReport]] = []
    worker = threading.Thread(target=lambda: result.append(run(base, seed, **options)),
                              daemon=True)  # fmt: skip
    worker.start()
    worker.join(60)
    assert result, "the crawl did not finish within 60 s"
    return result[0]


@pytest.mark.parametrize("delay", ["100000", "inf"])
def test_a_huge_crawl_delay_is_capped_and_reported(site, delay):
    Site.routes = {
        "/robots.txt": (200, f"User-agent: *\nCrawl-delay: {delay}\n".encode(), "text/plain"),
        "/": html("Home", links("/a", "/b")),
        "/a": html("A", "<p>a</p>"),
        "/b": html("B", "<p>b</p>"),
    }
    pages, _, report = run_bounded(site, "/", max_crawl_delay=0.2)
    assert set(pages) == {"/", "/a", "/b"}
    if delay == "100000":
        assert report.crawl_delay == 0.2
        assert [n for _, n in report.notes] == ["Crawl-delay 100000 s capped at 0.2 s"]
    else:  # not a finite number: ignored (RFC 9309 parsers drop malformed values)
        assert report.crawl_delay == 0.0


def test_the_cli_summary_and_report_say_the_crawl_delay_was_capped(site, tmp_path):
    Site.routes = {
        "/robots.txt": (200, b"User-agent: *\nCrawl-delay: 100000\n", "text/plain"),
        "/": html("Home", "<p>one page</p>"),
    }
    report_path = tmp_path / "report.json"
    result = run_cli("flatten", "--url", site + "/", "--max-pages", "1", "--no-sitemap",
                     "--report", report_path, timeout=60)  # fmt: skip
    assert result.code == 0, result.stderr
    assert "Crawl-delay 100000 s capped at 30 s" in result.stderr
    assert '"crawlDelay": 30.0' in report_path.read_text()


def endless_robots(handler: Responder) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "text/plain")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    try:
        lines = b"User-agent: *\nDisallow: /private/\n" + b"Disallow: /nothing-here\n" * 2000
        for _ in range(100_000):  # 4.5 GB at most: the client stops long before
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(lines), lines))
    except (BrokenPipeError, ConnectionResetError):
        pass


def test_an_endless_robots_txt_is_read_up_to_the_page_cap(site):
    Site.routes = {
        "/robots.txt": endless_robots,
        "/": html("Home", links("/private/a", "/pub")),
        "/pub": html("Pub", "<p>pub</p>"),
    }
    pages, reasons, report = run_bounded(site, "/", max_page_bytes=1 << 20)
    assert set(pages) == {"/", "/pub"}
    assert reasons["/private/a"] == "robots"
    notes = [n for _, n in report.notes]
    assert notes == [f"robots.txt over {1 << 20} bytes: only what came before the cap was read"]


def test_a_gzip_bomb_sitemap_is_read_up_to_the_page_cap(site):
    head = b"<urlset><url><loc>/from-sitemap</loc></url>"
    bomb = gzip_filled(head, b" ", 256)  # 256 MiB unpacked
    Site.routes = {
        "/sitemap.xml": lambda h: h.respond(
            200, bomb, "application/xml", {"Content-Encoding": "gzip"}
        ),
        "/": html("Home", "<p>home</p>"),
        "/from-sitemap": html("From the sitemap", "<p>listed</p>"),
    }
    pages, _, report = run_bounded(site, "/", use_sitemap=True, max_page_bytes=1 << 20)
    assert set(pages) == {"/", "/from-sitemap"}
    notes = [n for _, n in report.notes]
    assert notes == [f"sitemap over {1 << 20} bytes: only what came before the cap was read"]


# Item 13: one page never ends the crawl.


def nested(depth: int, tag: str = "div") -> bytes:
    return page("Deep", f"<{tag}>" * depth + "deep text" + f"</{tag}>" * depth)


def test_deeply_nested_pages_are_extracted_or_skipped_and_the_crawl_goes_on(site):
    Site.routes = {
        "/": html("Home", links("/deep600", "/deep200k", "/after")),
        "/deep600": (200, nested(600), "text/html"),
        "/deep200k": (200, nested(200_000), "text/html"),
        "/after": html("After", "<p>still crawled</p>"),
    }
    pages, reasons, _ = run_bounded(site, "/")
    assert "deep text" in pages["/deep600"].markdown and "/after" in pages
    assert reasons["/deep200k"] == "too-deep"


def test_charsets_come_only_from_the_header_a_bom_or_a_real_meta(site):
    text = "<main><h1>Café</h1><p>naïve text</p></main>"
    Site.routes = {
        "/": html(
            "Home", links(*(f"/{n}" for n in ("idna", "undefined", "title", "body", "meta", "bom")))
        ),
        "/idna": (200, page("Idna", text), "text/html; charset=idna"),
        "/undefined": (200, page("Undefined", text), "text/html; charset=undefined"),
        "/title": (200, page("About charset=undefined", text), "text/html"),
        "/body": (200, page("Body", "<p>we serve charset=utf-16 pages</p>" + text), "text/html"),
        "/meta": (
            200,
            b"<meta charset='iso-8859-2'>"
            + page("Meta", "<p>\xb1</p>").replace(b"\xc2\xb1", b"\xb1"),
            "text/html",
        ),
        "/bom": (
            200,
            "\ufeff".encode("utf-16-le") + page("Bom", text).decode().encode("utf-16-le"),
            "text/html; charset=iso-8859-1",
        ),
    }
    pages, reasons, _ = run(site, "/")
    for name in ("idna", "undefined", "title", "body", "bom"):
        assert "naïve text" in pages[f"/{name}"].markdown, name
    assert pages["/title"].title == "About charset=undefined"
    assert "ą" in pages["/meta"].markdown  # 0xB1 in ISO-8859-2
    assert not reasons


# Item 17: URLs that are usage errors, and links that are simply dropped.


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999/", "http://h:port/"])
def test_a_url_that_cannot_be_parsed_is_a_usage_error(url):
    assert_clean_failure(run_cli("flatten", "--url", url), 2, "not a valid URL")


def test_links_that_cannot_be_parsed_are_dropped_and_the_crawl_goes_on(site):
    Site.routes = {
        "/": html("Home", links("http://[::1", "http://127.0.0.1:99999/", "/a")),
        "/a": html("A", "<p>a</p>"),
    }
    pages, _, _ = run(site, "/")
    assert set(pages) == {"/", "/a"}


def test_scope_of_an_ipv6_seed_keeps_its_brackets():
    scope = Scope.for_seed("http://[::1]:8080/docs/")
    assert scope.netloc == "[::1]:8080" and scope.admits("http://[::1]:8080/docs/a")
    assert urlsplit(normalize("http://[::1]:8080/docs/")).port == 8080


def slow_robots(handler: Responder) -> None:
    threading.Event().wait(3)  # past the crawl's timeout below
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        handler.respond(200, b"User-agent: *\nAllow: /\n", "text/plain")


def test_a_robots_txt_that_never_answers_is_a_timeout_not_a_robots_refusal(site):
    Site.routes = {"/robots.txt": slow_robots, "/": html("Home", "<p>x</p>")}
    pages, reasons, report = run(site, "/", timeout=0.5)
    assert pages == {} and reasons["/"] == "timeout"
    assert "--ignore-robots" not in report.skipped[0][2]
