"""The crawler against real HTTP servers on 127.0.0.1: a real docs site and a hostile one."""

from __future__ import annotations

import json
import time

import pytest

from crawl.crawler import CrawlOptions, CrawlReport, crawl
from crawl.extract import extract
from crawl.urls import Scope, normalize
from tests.conftest import SHARED, assert_clean_failure, run_cli
from tests.sites import HostileSite, gzip_bomb, page, serve, serve_directory

HTTPX_SITE = SHARED / "sites" / "httpx"


def test_urls_are_normalised_and_scope_matches_whole_segments():
    assert normalize("HTTP://Host:80/a?b=2&a=1#x") == "http://host/a?a=1&b=2"
    scope = Scope.for_seed("http://h/docs/intro.html")
    assert scope.admits("http://h/docs/x") and scope.admits("http://h/docs")
    assert not scope.admits("http://h/docs-old/x") and not scope.admits("https://h/docs/x")


def test_the_title_is_the_h1_else_the_title_less_the_site_name_else_og_title_never_a_url():
    def title(head: str, body: str, url: str = "http://h/docs/a-page.html") -> str:
        return extract(f"<html><head>{head}</head><body>{body}</body></html>", url).title

    docusaurus = "<article><header><h1>Intro</h1></header><p>x</p></article>"
    assert title("<title>Intro | Pebble</title>", docusaurus) == "Intro"
    assert title("<title>Install - tinyfit 1.2.0</title>", "<p>x</p>") == "Install"
    assert title("<title>API reference — tinyfit</title>", "<p>x</p>") == "API reference"
    site_name = "<meta property='og:site_name' content='Pebble'>"
    assert title(f"<title>Pebble</title>{site_name}", "<p>x</p>") == "Pebble"
    assert title("<meta property='og:title' content='From OG'>", "<p>x</p>") == "From OG"
    assert title("", "<p>x</p>") == "a page"
    assert title(
        "<title>x</title>", "<main><h1>The <code>run</code> <em>command</em></h1></main>"
    ) == ("The run command")


def test_extraction_keeps_structure_and_drops_chrome():
    html = page("T", """
        <h2 id="install">Install <a class="headerlink" href="#install">¶</a></h2>
        <p>Run <code>pip</code> <strong>now</strong>.</p>
        <div class="language-bash highlight"><pre><code>pip install x
pip list</code></pre></div>
        <ul><li>one</li><li>two<ul><li>nested</li></ul></li></ul>
        <table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
        <a class="theme-edit-this-page" href="/edit">Edit this page</a>
        <div class="cookie-banner">We use cookies</div>
        <pre class="prism-code"><code><span class="token-line">line one</span><span
            class="token-line">line two</span></code></pre>
        <p>a<br>b</p>""")  # fmt: skip
    extracted = extract(html.decode(), "http://h/docs/")
    markdown = extracted.markdown
    assert "## Install\n" in markdown and "{#" not in markdown and "¶" not in markdown
    lines = markdown.split("\n")
    assert [(lines[n], i) for n, i in extracted.heading_ids] == [
        ("# T", "top"),
        ("## Install", "install"),
    ]
    assert "Run `pip` **now**." in markdown
    assert "```bash\npip install x\npip list\n```" in markdown
    assert "- one\n- two\n  - nested" in markdown
    assert "| a | b |\n|---|---|\n| 1 | 2 |" in markdown
    assert "line one\nline two" in markdown  # Docusaurus: one element per code line
    for chrome in ("NAV LINKS", "FOOTER TEXT", "Edit this page", "cookies"):
        assert chrome not in markdown


@pytest.fixture(scope="module")
def httpx_site():
    if not (HTTPX_SITE / "index.html").exists():
        pytest.skip(f"the built httpx docs site is absent ({HTTPX_SITE})")
    with serve_directory(HTTPX_SITE) as base:
        yield base


def test_a_real_mkdocs_material_site(httpx_site):
    report = CrawlReport()
    pages = {p.url: p for p in crawl(httpx_site + "/", CrawlOptions(), report)}
    assert len(pages) >= 20 and not report.truncated
    quickstart = pages[httpx_site + "/quickstart/"]
    assert quickstart.title.startswith("QuickStart")
    assert "\n## Passing Parameters in URLs\n" in quickstart.markdown
    lines = quickstart.markdown.split("\n")
    assert ("## Passing Parameters in URLs", "passing-parameters-in-urls") in {
        (lines[n], i) for n, i in quickstart.heading_ids
    }
    assert "```\n>>> import httpx\n```" in quickstart.markdown
    for chrome in ("Table of contents", "Made with", "Initializing search"):
        assert all(chrome not in p.markdown for p in pages.values()), chrome
    # The sitemap names the production domain: reported once, never fetched.
    assert report.skipped_by_reason["other-host"] == 1


def test_records_from_a_site_carry_the_page_url_and_its_heading_ids(httpx_site):
    result = run_cli("flatten", "--url", httpx_site + "/", "-q")
    assert result.code == 0, result.stderr
    records = result.records()
    anchors = {r["anchor"] for r in records if r["source"].endswith("/quickstart/")}
    assert "passing-parameters-in-urls" in anchors
    assert all(r["url"] == r["source"] and r["kind"] == "html" for r in records)


@pytest.fixture
def hostile():
    HostileSite.requests = []
    HostileSite.busy_hits = 0
    gzip_bomb()  # made before the crawl starts, so serving it costs no time
    with serve(HostileSite) as base:
        yield base


OPTIONS = CrawlOptions(max_pages=60, max_depth=4, timeout=3.0, max_page_bytes=1 << 20,
                       concurrency=4)  # fmt: skip


def test_a_hostile_site_ends_bounded_reported_and_with_the_rest_intact(hostile):
    report = CrawlReport()
    started = time.monotonic()
    pages = {p.url.removeprefix(hostile): p for p in crawl(hostile + "/docs/", OPTIONS, report)}
    elapsed = time.monotonic() - started
    reasons = {url.removeprefix(hostile): reason for url, reason, _ in report.skipped}
    asked = [path for path, _ in HostileSite.requests]

    assert elapsed < 30  # bounded: nothing hangs
    assert {"/docs/", "/docs/a", "/docs/loop1", "/docs/loop2", "/docs/from-sitemap"} <= set(pages)
    assert reasons["/docs/redirect-loop"] == "redirect-loop"
    assert reasons["/docs/off-host"] == "scope"
    assert reasons["/docs/endless"] == "size" and reasons["/docs/bomb"] == "size"
    assert reasons["/docs/slow"] == "timeout"
    assert reasons["/docs/private/secret"] == "robots"
    assert reasons["/docs/manual.pdf"] == "type" and reasons["/docs/logo.png"] == "type"
    assert reasons["/docs/data"] == "type"  # by Content-Type, before the body is read
    assert reasons["/docs-old/page"] == "scope" and reasons["/docs/missing"] == "http-404"
    assert reasons["/sitemap.xml"] == "other-host"  # it names https://other.invalid/page
    assert pages["/docs/busy"].markdown.strip().endswith("served after Retry-After")
    assert asked.count("/docs/busy") == 2
    # The infinite calendar stops at the depth bound, and says so.
    months = [url for url in pages if url.startswith("/docs/calendar")]
    assert 1 <= len(months) <= OPTIONS.max_depth
    assert reasons[f"/docs/calendar?month={len(months) + 1}"] == "depth"
    # Query order and fragments make no new pages; off-scope and robots-disallowed never asked.
    assert asked.count("/docs/a?a=1&b=2") == 1 and "/docs/a?b=2&a=1" not in asked
    assert not any(p.startswith(("/docs-old", "/docs/private", "/docs/manual.pdf")) for p in asked)
    # Duplicate text (page A by another URL) is emitted once.
    assert reasons.get("/docs/a?a=1&b=2") == "duplicate"


def test_max_pages_truncates_and_reports_the_frontier(hostile):
    report = CrawlReport()
    pages = crawl(hostile + "/docs/", CrawlOptions(max_pages=3, timeout=1.0), report)
    assert len(pages) <= 3 and report.truncated and report.frontier > 0


def test_crawl_delay_from_robots_spaces_requests(hostile):
    HostileSite.robots = "User-agent: *\nCrawl-delay: 0.3\n"
    try:
        options = CrawlOptions(max_pages=3, timeout=1.0, use_sitemap=False)
        started = time.monotonic()
        assert len(crawl(hostile + "/docs/a", options)) == 3
        polite = time.monotonic() - started
        started = time.monotonic()
        crawl(hostile + "/docs/a", CrawlOptions(max_pages=3, timeout=1.0, use_sitemap=False,
                                                respect_robots=False))  # fmt: skip
        ignored = time.monotonic() - started
    finally:
        HostileSite.robots = "User-agent: *\nDisallow: /docs/private/\n"
    assert polite >= 0.55  # three requests, 0.3 s apart
    assert ignored < polite


def test_cli_url_with_a_header_that_is_never_echoed(hostile, tmp_path):
    report_path = tmp_path / "report.json"
    result = run_cli("flatten", "--url", hostile + "/docs/", "--header", "X-Token: s3cret-value",
                     "--timeout", "1", "--max-page-size", "1MiB", "--max-depth", "1",
                     "--report", report_path)  # fmt: skip
    assert result.code == 0, result.stderr
    sent = {headers.get("X-Token") for _, headers in HostileSite.requests}
    assert sent == {"s3cret-value"}
    assert all("docs-flatten/" in h.get("User-Agent", "") for _, h in HostileSite.requests)
    assert "s3cret" not in result.stdout + result.stderr + report_path.read_text()
    crawl_report = json.loads(report_path.read_text())["crawl"]
    assert crawl_report["pagesFetched"] >= 3 and "skippedByReason" in crawl_report


def test_cli_url_where_no_page_can_be_fetched_fails_clearly(hostile):
    result = run_cli("flatten", "--url", hostile + "/docs/missing", "--timeout", "1",
                     "--no-sitemap")  # fmt: skip
    assert_clean_failure(result, 1, "no page could be fetched")


def test_cli_url_must_be_http(tmp_path):
    assert_clean_failure(run_cli("flatten", "--url", "ftp://x/y"), 2, "not an http(s) URL")


def test_ingest_a_site_then_search_it(hostile, tmp_path):
    store = tmp_path / "store"
    result = run_cli("ingest", "--url", hostile + "/docs/", "--corpus", "site", "--store", store,
                     "--timeout", "1", "--max-page-size", "1MiB", "--json")  # fmt: skip
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["load"]["added"] >= 5
    found = run_cli("search", "usage", "--store", store, "--json")
    top = json.loads(found.stdout)[0]
    # The page's H1 opens the slice (its own section has no text): named and anchored by it.
    assert top["source"] == hostile + "/docs/a"
    assert (top["title"], top["anchor"]) == ("Page A", "top")
