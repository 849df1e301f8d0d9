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


def records(pages: dict[str, str], seed: str = "/") -> list[dict]:
    with site(pages) as base:
        result = run_cli("flatten", "--url", base + seed, "--no-sitemap", "--timeout", "5")
    assert result.code == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def html(body: str, title: str = "A page - MySite") -> str:
    return f"<html><head><title>{title}</title></head><body><main>{body}</main></body></html>"


def test_text_before_the_first_heading_is_titled_by_the_page_title_never_its_url():
    got = records({"/": html("<p>Intro text here.</p><h2>Step one</h2><p>Do it.</p>",
                             title="Install Guide - MySite")})  # fmt: skip
    assert [r["title"] for r in got] == ["Install Guide", "Step one"]
    assert all(not r["title"].startswith("http") for r in got)
