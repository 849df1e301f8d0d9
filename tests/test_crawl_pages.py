"""What a crawled page's records say: titles, citation anchors, which pages are indexed and how
their HTML reads as markdown. Real HTTP servers on 127.0.0.1 serving hand-written pages."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

from tests.conftest import run_cli
from tests.sites import Responder, serve


class Pages(Responder):
    """Serves `pages` (path -> HTML); anything else is a 404."""

    pages: ClassVar[dict[str, str]] = {}

    def do_GET(self) -> None:
        body = self.pages.get(self.path.split("?")[0])
        if body is None:
            self.respond(404, b"not here")
        else:
            self.respond(200, body.encode())


@contextmanager
def site(pages: dict[str, str]) -> Iterator[str]:
    Pages.pages = pages
    with serve(Pages) as base:
        yield base


def records(pages: dict[str, str], seed: str = "/", *extra: str) -> list[dict]:
    with site(pages) as base:
        result = run_cli("flatten", "--url", base + seed, "--no-sitemap", "--timeout", "5", *extra)
    assert result.code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def html(body: str, title: str = "A page - MySite") -> str:
    return f"<html><head><title>{title}</title></head><body><main>{body}</main></body></html>"


def test_text_before_the_first_heading_is_titled_by_the_page_title_never_its_url():
    got = records({"/": html("<p>Intro text here.</p><h2>Step one</h2><p>Do it.</p>",
                             title="Install Guide - MySite")})  # fmt: skip
    assert [r["title"] for r in got] == ["Install Guide", "Step one"]
    assert all(not r["title"].startswith("http") for r in got)


def citations(got: list[dict]) -> list[str]:
    from index.citations import Origin, default_citation

    return [default_citation(Origin(r["source"], ordinal=r["ordinal"], anchor=r.get("anchor"),
                                    url=r["url"])).text for r in got]  # fmt: skip


def ids_in(page_html: str) -> set[str]:
    from selectolax.lexbor import LexborHTMLParser

    return {n.attributes.get("id") or "" for n in LexborHTMLParser(page_html).css("[id]")}


ANCHOR_PAGE = html(
    "<h1>Anchors</h1><p>Intro.</p>"
    "<h2 id='a b'>Spaced</h2><p>One.</p>"
    "<h2 id='50%'>Percent</h2><p>Two.</p>"
    "<h2 id='x\"y'>Quoted</h2><p>Three.</p>"
    "<h2><a id='inner'></a>Inner anchor</h2><p>Four.</p>"
    "<h2 id=''>Empty id</h2><p>Five.</p>"
    "<h2>No id at all</h2><p>Six.</p>"
)


def test_a_crawled_pages_citation_anchor_is_an_id_the_page_has_percent_encoded():
    from urllib.parse import unquote, urlsplit

    got = records({"/": ANCHOR_PAGE})
    cited = dict(zip([r["title"] for r in got], citations(got), strict=True))
    base = got[0]["url"]
    assert cited["Spaced"] == base + "#a%20b"
    assert cited["Percent"] == base + "#50%25"
    assert cited["Quoted"] == base + "#x%22y"
    assert cited["Inner anchor"] == base + "#inner"
    assert cited["Empty id"] == base and cited["No id at all"] == base
    present = ids_in(ANCHOR_PAGE)
    for record, citation in zip(got, citations(got), strict=True):
        assert record.get("anchor") is None or record["anchor"] in present, record
        if "#" in citation:
            assert unquote(urlsplit(citation).fragment) in present, citation


MKDOCS_HOME = html(
    "<p align='center'><img src='logo.png' alt='HTTPX'></p><h1>HTTPX</h1><p>A client.</p>"
    "<h2 id='features'>Features</h2><p>Many.</p>",
    title="HTTPX",
)


def test_an_h1_without_id_gets_no_made_up_anchor_and_a_logo_repeating_the_title_folds_in():
    got = records({"/": MKDOCS_HOME})
    assert [(r["title"], r.get("anchor")) for r in got] == [("HTTPX", None),
                                                            ("Features", "features")]  # fmt: skip
    assert got[0]["content"].startswith("HTTPX\n\n# HTTPX\n\nA client.")
    assert citations(got)[0] == got[0]["url"]


def mdbook(title: str, body: str, *, printing: bool = False) -> str:
    robots = '<meta name="robots" content="noindex">' if printing else ""
    return (f"<!DOCTYPE HTML><html><head><!-- Book generated using mdBook --><title>{title}"
            f" - The Book</title>{robots}</head><body><nav id='sidebar'><a href='/book/ch1.html'>"
            "One</a><a href='/book/ch2.html'>Two</a><a href='/book/print.html'>Print</a></nav>"
            f"<main>{body}</main></body></html>")  # fmt: skip


BOOK = {
    "/book/": mdbook("Intro", "<h1 id='intro'>Intro</h1><p>The book begins.</p>"),
    "/book/ch1.html": mdbook("One", "<h1 id='one'>One</h1><p>Chapter one text.</p>"),
    "/book/ch2.html": mdbook("Two", "<h1 id='two'>Two</h1><p>Chapter two text.</p>"),
    "/book/print.html": mdbook("Book", "<h1 id='intro'>Intro</h1><p>The book begins.</p>"
                               "<h1 id='one'>One</h1><p>Chapter one text.</p>"
                               "<h1 id='two'>Two</h1><p>Chapter two text.</p>", printing=True),
}  # fmt: skip


def test_mdbooks_print_page_is_skipped_and_reported_when_its_chapters_are_crawled(tmp_path):
    report = tmp_path / "report.json"
    with site(BOOK) as base:
        result = run_cli("flatten", "--url", base + "/book/", "--no-sitemap", "--report", report)
    assert result.code == 0, result.stderr
    sources = {json.loads(line)["source"].removeprefix(base) for line in result.stdout.split("\n")
               if line}  # fmt: skip
    assert sources == {"/book/", "/book/ch1.html", "/book/ch2.html"}
    skipped = json.loads(report.read_text())["crawl"]["skipped"]
    assert [(s["url"].removeprefix(base), s["reason"]) for s in skipped
            if s["reason"] == "all-in-one"] == [("/book/print.html", "all-in-one")]  # fmt: skip


def test_mdbooks_print_page_is_kept_when_its_chapters_are_not_crawled():
    got = records(BOOK, "/book/print.html", "--include", "/book/print.html")
    assert {r["source"].rsplit("/", 1)[-1] for r in got} == {"print.html"}


def test_markup_inside_code_goes_and_markdown_specials_in_text_are_escaped():
    got = records({"/": html("<h1>Api</h1><p>Call <code>httpx.<strong>request</strong></code> "
                             "with <em>*</em> or <strong>a*b</strong> as 2 * 3.</p>")})  # fmt: skip
    text = got[0]["content"]
    assert "`httpx.request`" in text
    assert "*\\**" in text and "**a\\*b**" in text and "2 \\* 3" in text


RUSTDOC = html(
    "<h1>Struct Vec</h1><p>A vector.</p>"
    "<h2 id='impl-Vec%3CT%3E'>impl&lt;T&gt; Vec&lt;T&gt;</h2><p>Methods.</p>"
    "<h3 id='method.new'>pub const fn new() -&gt; Vec&lt;T&gt;</h3><p>Makes one.</p>"
    "<h3 id='method.cmp'>fn lt(a: &amp;T) -&gt; bool where T: <em>Ord</em> &lt; 3</h3><p>x</p>"
)


def test_rustdoc_generics_stay_in_titles_and_content():
    from slicers.markdown import inline_text

    got = records({"/": RUSTDOC})
    titles = [r["title"] for r in got]
    assert "impl<T> Vec<T>" in titles
    assert "pub const fn new() -> Vec<T>" in titles
    assert "fn lt(a: &T) -> bool where T: Ord < 3" in titles
    for record in got:  # the content's heading reads as its title once rendered
        heading = record["content"].split("\n", 1)[0].lstrip("#").strip()
        assert inline_text(heading) == record["title"]
