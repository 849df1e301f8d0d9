"""A crawled page's first slice is named by the page's H1 only when it is a whole section: the
first part of a section cut for the budget keeps the name its other parts carry."""

from __future__ import annotations

from functools import partial
from http.server import SimpleHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from crawl.crawler import CrawlOptions
from flatten.pipeline import FlattenOptions, flatten_url
from flatten.report import RunReport
from tests.site_checks import SITES, check, served
from tests.sites import page, serve


def _crawl(url: str, max_chars: int, scope: str | None = None) -> list[dict[str, Any]]:
    options = CrawlOptions(scope=scope, max_depth=20, max_pages=200)
    return [r.to_dict() for r in flatten_url(url, FlattenOptions(max_chars=max_chars),
                                             RunReport(), crawl_options=options)]  # fmt: skip


def test_first_part_of_a_cut_section_keeps_its_name_and_a_whole_one_takes_the_h1(tmp_path: Path):
    words = " ".join(f"word{i}" for i in range(40))
    body = "<h2 id='helpers'>Helper Functions</h2>" + "".join(f"<p>{words}</p>" for _ in range(8))
    (tmp_path / "index.html").write_bytes(page("Developer Interface", body))
    (tmp_path / "short").mkdir()
    short = "<h2 id='use'>Usage</h2><p>One short paragraph.</p>"
    (tmp_path / "short" / "index.html").write_bytes(page("Short Page", short))
    handler = partial(SimpleHTTPRequestHandler, directory=str(tmp_path))
    with serve(handler) as base:
        cut = _crawl(base + "/", 600)
        whole = _crawl(base + "/short/", 4000)
    titles = [r["title"] for r in cut if r["url"] == base + "/"]
    assert len(titles) > 2
    assert titles == [
        f"Helper Functions (part {k}/{len(titles)})" for k in range(1, 1 + len(titles))
    ]
    assert cut[0]["section"] == ["Developer Interface", "Helper Functions"]
    assert (whole[0]["title"], whole[0]["section"]) == ("Short Page", ["Short Page"])


@pytest.mark.parametrize("site", [s for s in SITES if s.root.is_dir()], ids=lambda s: s.name)
def test_real_sites_at_a_small_budget_are_titled_by_their_h1(site):
    with served(site) as base:
        records = _crawl(base + site.seed, 500, site.scope)
    figures = check(site, records, {})
    assert figures.problems == [], figures.problems
