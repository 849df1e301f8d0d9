"""A question's everyday phrasing finds the page written in the docs' vocabulary (index.phrasing):
"takes too long" finds the timeouts page, "faking" the mocking page, and the added words count
only where a heading names them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from index.lexical import stem
from index.phrasing import PHRASINGS, SYNONYMS, implied_by_phrasing, synonyms
from index.search import SearchOptions, search
from index.store import Store
from tests.conftest import indexed_tree, run_cli

DOCS = {
    "docs/timeouts.md": (
        "# Timeouts\n\nThe default timeout is five seconds of network inactivity; set "
        "`timeout=None` to disable it.\n"
    ),
    # Says "takes" (one of the question's own words) and mentions a timeout in passing.
    "docs/uploads.md": (
        "# Uploads\n\nA large upload takes a while on a slow link; a timeout error, a timeout "
        "of any kind, is retried.\n"
    ),
    "docs/testing.md": (
        "# Mock transports\n\nReturn canned responses from a handler instead of the network.\n"
    ),
    "docs/network.md": "# Network\n\nResponses come from the network through the transport.\n",
    "docs/fakes.md": "# Fixtures\n\nA fake clock for testing retries.\n",
}


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory):
    return indexed_tree(tmp_path_factory.mktemp("phrasing"), DOCS, "docs", kind="docs")


def found(store_dir, query: str) -> tuple[list[str], list[str] | None]:
    with Store.open(store_dir, readonly=True) as opened:
        response = search(opened, query, SearchOptions(top_k=5))
    return [hit.source for hit in response.results], response.also_asked


def test_an_everyday_phrase_finds_the_page_the_docs_name_for_its_idea(store_dir):
    pages, also = found(store_dir, "what if the server takes too long to answer")
    assert pages[0] == "docs/timeouts.md"
    assert also == ["timeout"]


def test_a_word_the_docs_do_not_use_asks_for_its_synonyms(store_dir):
    # No page says "stubbing" (the index lacks it): the page headed "Mock" is found.
    pages, also = found(store_dir, "stubbing responses")
    assert pages[0] == "docs/testing.md"
    assert also is not None and "mock" in also


def test_a_word_the_docs_use_is_not_widened_to_its_synonyms(store_dir):
    # "fake" is indexed: its pages are the ones meant, so "mock" is not asked.
    pages, also = found(store_dir, "fake clock")
    assert pages[0] == "docs/fakes.md"
    assert also is None


def test_an_added_word_counts_in_headings_only(store_dir):
    # "timeout" in the body of the uploads page does not lift it: only its own words do.
    with Store.open(store_dir, readonly=True) as opened:
        hits = search(opened, "it takes too long", SearchOptions(top_k=5, explain=True)).results
    uploads = next(h for h in hits if h.source == "docs/uploads.md")
    timeouts = next(h for h in hits if h.source == "docs/timeouts.md")
    assert timeouts.score > uploads.score
    alone = search_sources(store_dir, "takes too long")
    assert "docs/network.md" not in alone  # no word of it, and no heading naming a timeout


def search_sources(store_dir, query: str) -> list[str]:
    return found(store_dir, query)[0]


def test_explain_names_the_words_added_for_the_phrasing(store_dir):
    result = run_cli("search", "server took too long", "--store", store_dir, "--explain")
    assert result.code == 0, result.stderr
    assert "also asked, in headings" in result.stdout and "timeout" in result.stdout


def test_phrasings_match_inflections_and_not_partial_phrases():
    assert implied_by_phrasing("the request is taking too long", stem) == ["timeout"]
    assert implied_by_phrasing("Moving from requests", stem) == ["migration", "compatibility"]
    assert implied_by_phrasing("too long", stem) == []  # "line too long" is not a time limit
    assert implied_by_phrasing("take long walks", stem) == []


def test_synonyms_are_compared_by_stem_and_exclude_the_word_itself():
    assert "mock" in synonyms("faking", stem) and "fake" not in synonyms("faking", stem)
    assert synonyms("serendipity", stem) == []


@given(st.text(max_size=60))
def test_any_query_gives_known_words_only(query):
    known = {w for _, words in PHRASINGS for w in words}
    assert set(implied_by_phrasing(query, stem)) <= known
    for word in query.split()[:3]:
        assert set(synonyms(word, stem)) <= set().union(*SYNONYMS)
