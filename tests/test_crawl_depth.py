"""--max-depth bounds a crawl's scope, as --scope does: a crawl that stopped at the bound is a
complete snapshot of the pages within it (not partial), so a load removes pages an earlier,
deeper crawl indexed, and says so. For that the set within the bound must not depend on which
fetch finished first: a page found late by a shorter path is taken at the shorter depth. Real
HTTP servers on 127.0.0.1, real SQLite stores."""

from __future__ import annotations

import json
import time
from typing import ClassVar

from crawl.crawler import CrawlReport, crawl
from crawl.options import CrawlOptions
from tests.conftest import run_cli
from tests.sites import Responder, page, serve


class LinkedSite(Responder):
    """`links`: each page's links; `slow`: pages answered after a pause."""

    links: ClassVar[dict[str, list[str]]] = {}
    slow: ClassVar[dict[str, float]] = {}

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path not in self.links:
            return self.respond(404, b"not here")
        time.sleep(self.slow.get(path, 0.0))
        links = "".join(f"<p><a href='{to}'>{to}</a></p>" for to in self.links[path])
        self.respond(200, page(f"Page {path}", f"<p>All about {path} and more.</p>{links}"))


TREE = {
    "/docs/": ["/docs/a", "/docs/b"],
    "/docs/a": ["/docs/a1", "/docs/a2"],
    "/docs/a1": ["/docs/a1x"],
    "/docs/b": [],
    "/docs/a2": [],
    "/docs/a1x": [],
}


def ingest(url: str, store: object, *extra: str, json_out: bool = True):
    flags = ["--json"] if json_out else []
    return run_cli("ingest", "--url", url, "--corpus", "site", "--store", store,
                   "--timeout", "10", "--no-sitemap", *flags, *extra)  # fmt: skip


def test_a_smaller_depth_is_a_narrower_snapshot_that_says_what_it_removes(tmp_path):
    LinkedSite.links, LinkedSite.slow = TREE, {}
    store = tmp_path / "store"
    with serve(LinkedSite) as base:
        whole = ingest(base + "/docs/", store)
        assert whole.code == 0 and json.loads(whole.stdout)["load"]["added"] == 6, whole.stderr
        narrow = ingest(base + "/docs/", store, "--max-depth", "1")
        summary = json.loads(narrow.stdout)
        assert narrow.code == 0 and summary["partial"] is None
        assert summary["crawl"]["skippedByReason"] == {"depth": 2}
        assert summary["load"]["removed"] == 3  # a1, a2 and a1x: past the bound now
        said = ingest(base + "/docs/", store, "--max-depth", "1", json_out=False)
    assert said.code == 0, said.stderr
    assert "crawl: 2 linked pages past --max-depth not fetched" in said.stderr
    assert "removes pages indexed from deeper" in said.stderr


def test_a_page_found_late_by_a_shorter_path_is_within_the_depth():
    # The seed links `slow` and `fast`; fast -> mid -> target, and slow -> target. While slow
    # is answering, target is found three links away and skipped for --max-depth 2; slow's
    # answer then shows it two links away: it is fetched, every run.
    LinkedSite.slow = {"/docs/slow": 1.0}
    LinkedSite.links = {
        "/docs/": ["/docs/slow", "/docs/fast"],
        "/docs/slow": ["/docs/target"],
        "/docs/fast": ["/docs/mid"],
        "/docs/mid": ["/docs/target", "/docs/far"],
        "/docs/target": ["/docs/under"],
        "/docs/far": [],
        "/docs/under": [],
    }
    with serve(LinkedSite) as base:
        options = CrawlOptions(max_depth=2, concurrency=4, use_sitemap=False, timeout=10)
        report = CrawlReport()
        pages = crawl(base + "/docs/", options, report)
    fetched = sorted(p.url.removeprefix(base) for p in pages)
    assert fetched == ["/docs/", "/docs/fast", "/docs/mid", "/docs/slow", "/docs/target"]
    deeper = sorted(url.removeprefix(base) for url, reason, _ in report.skipped
                    if reason == "depth")  # fmt: skip
    assert deeper == ["/docs/far", "/docs/under"] and report.partial is None
