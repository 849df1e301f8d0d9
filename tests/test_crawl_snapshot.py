"""A crawl is loaded as a snapshot of its site (removing what is gone) only when it saw the whole
site: cut by a bound or missing pages to server errors, it adds and updates and removes nothing.
Real HTTP servers on 127.0.0.1, real SQLite stores."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from tests.conftest import assert_clean_failure, run_cli
from tests.sites import Responder, page, serve

PAGES = ["a", "b", "c", "d", "e", "f"]


class ChangingSite(Responder):
    """/docs/ links to every page; `answers` overrides a path's status (and body)."""

    answers: ClassVar[dict[str, tuple[int, bytes]]] = {}

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path in self.answers:
            status, body = self.answers[path]
            self.respond(status, body, headers={"Retry-After": "0"})
        elif path == "/docs/":
            links = "".join(f"<p><a href='/docs/{p}'>{p}</a></p>" for p in PAGES)
            self.respond(200, page("Home", "<p>Welcome home.</p>" + links))
        elif path.removeprefix("/docs/") in PAGES:
            name = path.removeprefix("/docs/")
            self.respond(200, page(f"Page {name}", f"<p>All about {name} and more.</p>"))
        else:
            self.respond(404, b"not here")


@pytest.fixture
def site():
    ChangingSite.answers = {}
    with serve(ChangingSite) as base:
        yield base + "/docs/"
    ChangingSite.answers = {}


def ingest(url: str, store: object, *extra: str) -> tuple[int, dict, str]:
    result = run_cli("ingest", "--url", url, "--corpus", "site", "--store", store, "--json",
                     "--timeout", "5", "--no-sitemap", *extra)  # fmt: skip
    return result.code, json.loads(result.stdout), result.stderr


def test_a_crawl_cut_by_max_pages_loads_as_partial_and_removes_nothing(site, store_url):
    code, first, _ = ingest(site, store_url)
    assert code == 0 and first["load"]["added"] == 7 and first["partial"] is None
    code, second, _ = ingest(site, store_url, "--max-pages", "3")
    assert code == 0
    assert second["partial"]["reason"] == "truncated"
    assert second["load"]["removed"] == 0
    assert second["crawl"]["partial"] == second["partial"]


def test_a_crawl_that_lost_pages_to_server_errors_removes_nothing(site, store_url):
    ingest(site, store_url)
    ChangingSite.answers = {"/docs/b": (503, b"busy"), "/docs/c": (500, b"oops")}
    code, summary, _ = ingest(site, store_url)
    assert code == 0
    assert summary["partial"]["reason"] == "fetch-errors"
    assert "http-503 1" in summary["partial"]["detail"]
    assert summary["load"]["removed"] == 0
    found = run_cli("show", "--store", store_url, site + "b#1")
    assert found.code == 0, found.stderr


def test_the_text_summary_says_a_crawl_was_partial(site, tmp_path):
    result = run_cli("ingest", "--url", site, "--corpus", "site", "--store", tmp_path / "s",
                     "--max-pages", "2", "--no-sitemap")  # fmt: skip
    assert result.code == 0, result.stderr
    assert "PARTIAL (truncated" in result.stderr and "remove nothing" in result.stderr


def test_a_page_gone_404_in_a_complete_crawl_is_still_removed(site, tmp_path):
    ingest(site, tmp_path / "s")
    ChangingSite.answers = {"/docs/b": (404, b"gone"), "/docs/c": (410, b"gone")}
    code, summary, _ = ingest(site, tmp_path / "s")
    assert code == 0 and summary["partial"] is None
    assert summary["load"]["removed"] == 2


def test_a_crawl_that_finds_no_text_fails_and_keeps_the_corpus(site, tmp_path):
    ingest(site, tmp_path / "s")
    empty = b"<html><head><title>Nothing</title></head><body><main></main></body></html>"
    ChangingSite.answers = {"/docs/": (200, empty)}
    result = run_cli("ingest", "--url", site, "--corpus", "site", "--store", tmp_path / "s",
                     "--no-sitemap")  # fmt: skip
    assert_clean_failure(result, 1, "no text found")
    kept = run_cli("show", "--store", tmp_path / "s", site + "a#1")
    assert kept.code == 0 and "All about a" in kept.stdout, kept.stderr


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        ((500, b"oops"), ["http-500", "5xx"]),
        ((302, b""), ["redirect"]),
    ],
)
def test_no_page_fetched_names_the_seeds_reason(site, answer, words):
    ChangingSite.answers = {"/docs/": answer}
    result = run_cli("flatten", "--url", site, "--no-sitemap", "--timeout", "5")
    assert_clean_failure(result, 1, "no page could be fetched", *words)


def test_no_page_fetched_names_a_scope_that_excludes_the_seed(site):
    result = run_cli("flatten", "--url", site, "--scope", "/other/", "--no-sitemap")
    assert_clean_failure(result, 1, "no page could be fetched", "seed was skipped (scope")


def test_a_partial_crawl_piped_into_index_removes_nothing(site, tmp_path):
    # flatten | index -: the closing mark carries the crawl's word that it saw part of the site.
    import shlex
    import subprocess
    import sys

    store = tmp_path / "store"

    def piped(*extra: str) -> subprocess.CompletedProcess[str]:
        flatten = [sys.executable, "-m", "flatten", "flatten", "--url", site, "--no-sitemap",
                   "--timeout", "5", "--quiet", *extra]  # fmt: skip
        index = [sys.executable, "-m", "flatten", "index", "-", "--corpus", "site",
                 "--store", str(store), "--json"]  # fmt: skip
        line = f"{shlex.join(flatten)} | {shlex.join(index)}"
        return subprocess.run(line, shell=True, capture_output=True, text=True, timeout=120)

    whole = piped()
    assert whole.returncode == 0 and json.loads(whole.stdout)["load"]["added"] == 7, whole.stderr
    cut = piped("--max-pages", "3")
    summary = json.loads(cut.stdout)
    assert cut.returncode == 0 and summary["load"]["removed"] == 0, cut.stderr
    assert summary["partial"]["reason"] == "truncated"
    again = piped()
    assert json.loads(again.stdout)["partial"] is None


def test_a_partial_crawl_written_to_a_file_and_loaded_later_removes_nothing(site, tmp_path):
    # flatten -o FILE, then index FILE: the file carries the crawl's word that it is partial.
    store, cut = tmp_path / "store", tmp_path / "cut.jsonl"

    def load(path) -> dict:
        result = run_cli("index", path, "--corpus", "site", "--store", store, "--json")
        assert result.code == 0, result.stderr
        return json.loads(result.stdout)

    whole = tmp_path / "whole.jsonl"
    assert run_cli("flatten", "--url", site, "--no-sitemap", "-o", whole, "-q").code == 0
    assert load(whole)["load"]["added"] == 7
    made = run_cli("flatten", "--url", site, "--no-sitemap", "--max-pages", "3", "-o", cut, "-q")
    assert made.code == 0, made.stderr
    summary = load(cut)
    assert summary["partial"]["reason"] == "truncated"
    assert summary["load"]["removed"] == 0
    assert load(whole)["partial"] is None  # a whole crawl's file is still a snapshot
