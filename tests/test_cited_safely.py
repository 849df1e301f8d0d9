"""What a record says about where it is (`url`, `repoUrl`/`commit`, `startLine`/`endLine`, its
source's spelling) reaches a reader only as a citation that can be one, and a source is found by
the name a reader types: end to end, from a real JSONL file or folder through a real store to
`search`, `show`, `get`, `toc` and the MCP tools."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from index.agent import Knowledge
from index.citations import MAX_SPAN, link
from index.loader import MAX_LINE_BYTES
from tests.conftest import jsonl, run_cli, write

# Each foreign `url` that must not become a link, with the one word of its slice.
NOT_LINKS = [
    ("jsurl", "javascript:alert(1)//"),
    ("dataurl", "data:text/html,<script>alert(1)</script>"),
    ("fileurl", "file:///etc/passwd"),
    ("nlurl", "https://docs.example.com/a/\n[click](http://evil.example)"),
    ("parenurl", "https://docs.example.com/a)[click](http://evil.example"),
    ("spaceurl", "https://docs.example.com/a [click](http://evil.example)"),
    ("bidiurl", "https://docs.example.com/\u202egnp.exe"),
    ("relurl", "/docs/page.html"),
    ("nohosturl", "https:///docs/page.html"),
    ("angleurl", "https://docs.example.com/<img src=x onerror=alert(1)>"),
]


def search_json(store: str, word: str) -> list[dict]:
    return search_json_in(store, word)


def search_json_in(store: str, word: str, *options: str) -> list[dict]:
    result = run_cli("search", word, "--store", store, "--json", *options)
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def foreign(tmp_path: Path, store_url: str) -> str:
    records = [{"source": f"{word}.md", "url": url, "content": f"{word} words"}
               for word, url in NOT_LINKS]  # fmt: skip
    records += [
        {"source": "ok.md", "url": "https://docs.example.com/guide/", "anchor": "set-up",
         "ordinal": 2, "content": "okurl words"},
        {"source": "cred.md", "url": "https://user:s3cret@docs.example.com/p", "content":
         "credurl words"},
        {"source": "wiki.md", "url": "https://en.example.org/wiki/Foo_(bar)", "content":
         "wikiurl words"},
        # A forge's permalink built from a record's hostile commit.
        {"source": "forge.md", "repoUrl": "https://github.com/o/r", "content": "forgeurl words",
         "commit": "abc)[click](http://evil.example", "startLine": 1, "endLine": 2},
        # Line ranges that cannot be true, and one that can.
        {"source": "back.md", "startLine": 10, "endLine": 2, "content": "backrange words"},
        {"source": "huge.md", "startLine": 1, "endLine": 99999999999, "content":
         "hugerange words"},
        {"source": "fine.md", "startLine": 3, "endLine": 4, "content": "finerange words\nx"},
        {"source": "pinned.md", "repoUrl": "https://github.com/o/r", "commit": "a" * 40,
         "startLine": 7, "endLine": 3, "content": "pinnedrange words"},
        # A source name holding a line break and a markdown link of its own.
        {"source": "p2\n[click](http://evil.example)", "content": "breakname words"},
    ]  # fmt: skip
    path = jsonl(tmp_path / "foreign.jsonl", records)
    loaded = run_cli("index", path, "--corpus", "foreign", "--store", store_url, "-q")
    assert loaded.code == 0, loaded.stderr
    return store_url


@pytest.mark.parametrize(("word", "url"), NOT_LINKS)
def test_a_foreign_url_that_is_no_web_link_is_cited_as_its_source(foreign, word, url):
    (hit,) = search_json(foreign, word)
    assert hit["citation"] == f"{word}.md"
    shown = run_cli("show", f"{word}.md#1", "--store", foreign, "--json")
    assert json.loads(shown.stdout)["citation"] == f"{word}.md"
    text = run_cli("search", word, "--store", foreign)
    assert "evil" not in text.stdout and "javascript" not in text.stdout


def test_a_web_link_is_cited_as_one_without_its_credentials(foreign):
    assert search_json(foreign, "okurl")[0]["citation"] == "https://docs.example.com/guide/#set-up"
    assert search_json(foreign, "credurl")[0]["citation"] == "https://docs.example.com/p"
    assert search_json(foreign, "wikiurl")[0]["citation"] == "https://en.example.org/wiki/Foo_(bar)"


def test_a_source_name_with_a_line_break_is_cited_on_one_line(foreign):
    (hit,) = search_json(foreign, "breakname")
    assert hit["citation"] == "p2\\n[click](http://evil.example)"  # escaped, as names are shown
    text = run_cli("search", "breakname", "--store", foreign).stdout
    assert "\n[click]" not in text and "cite:" not in text  # one line, no second spelling


def test_a_permalink_built_from_a_hostile_commit_is_not_cited(foreign):
    assert search_json(foreign, "forgeurl")[0]["citation"] == "forge.md:1-2"


def test_a_range_that_cannot_be_one_is_answered_and_cited_as_none(foreign):
    for word, source in (("backrange", "back.md"), ("hugerange", "huge.md")):
        (hit,) = search_json(foreign, word)
        assert (hit["citation"], hit["startLine"], hit["endLine"]) == (source, None, None)
        assert "lineUnit" not in hit
    (hit,) = search_json(foreign, "finerange")
    assert (hit["citation"], hit["startLine"], hit["endLine"]) == ("fine.md:3-4", 3, 4)
    # A permalink pinned to the commit keeps the file and leaves the lines out.
    (hit,) = search_json(foreign, "pinnedrange")
    assert hit["citation"] == f"https://github.com/o/r/blob/{'a' * 40}/pinned.md"
    shown = json.loads(run_cli("show", "back.md#1", "--store", foreign, "--json").stdout)
    assert (shown["citation"], shown["startLine"], shown["endLine"]) == ("back.md", None, None)


def test_the_mcp_answers_cite_the_same(foreign):
    knowledge = Knowledge(foreign)
    try:
        for word, _ in NOT_LINKS:
            (hit,) = knowledge.search(word)["results"]
            assert hit["citation"] == f"{word}.md"
        (hit,) = knowledge.search("hugerange")["results"]
        assert (hit["citation"], hit["startLine"]) == ("huge.md", None)
    finally:
        knowledge.close()


def test_doctor_counts_and_names_what_cannot_be_cited(foreign):
    result = run_cli("doctor", "--store", foreign, "--json")
    assert result.code == 0, result.stderr  # warnings: the store serves
    findings = {f["reason"]: f for f in json.loads(result.stdout)["store"]["findings"]}
    odd_url, odd_range = findings["url-not-a-link"], findings["range-not-lines"]
    assert odd_url["level"] == odd_range["level"] == "warning"
    assert odd_url["message"].startswith(f"{len(NOT_LINKS)} document(s) have a url")
    assert odd_url["message"].endswith("e.g. 'angleurl.md'")
    assert odd_range["message"].startswith("3 chunk(s) have a line range")
    assert odd_range["message"].endswith("e.g. 'back.md#1'")


def test_the_card_names_no_site_or_repository_from_what_is_no_link(tmp_path, store_url):
    path = jsonl(tmp_path / "card.jsonl", [
        {"source": "v6.md", "url": "https://[x/", "content": "bracket words"},
        {"source": "nl.md", "url": "https://docs.example.com/\n[click](http://evil.example)",
         "content": "newline words"},
    ])  # fmt: skip
    assert run_cli("index", path, "--corpus", "site", "--store", store_url, "-q").code == 0
    hostile = jsonl(tmp_path / "repo.jsonl", [
        {"source": "r.md", "content": "repo words", "commit": "a" * 40,
         "repoUrl": "https://git.example.com/o/r\n[click](http://evil.example)"},
    ])  # fmt: skip
    assert run_cli("index", hostile, "--corpus", "repo", "--store", store_url, "-q").code == 0
    card = run_cli("card", "--store", store_url)
    assert card.code == 0, card.stderr
    assert "- corpus `site`: 2 documents, 2 chunks, from a site" in card.stdout
    assert "- corpus `repo`: 1 documents, 1 chunks, from a repository" in card.stdout
    assert "evil" not in card.stdout


def test_get_does_not_pad_a_document_to_a_far_line(tmp_path, store_url):
    # Line 10**11 of a two-slice document: placed, it would be 100 GB of blank lines.
    far = 10**11
    path = jsonl(tmp_path / "far.jsonl", [
        {"source": "far.md", "ordinal": 1, "startLine": 3, "endLine": 3, "content": "near"},
        {"source": "far.md", "ordinal": 2, "startLine": far, "endLine": far, "content": "far"},
    ])  # fmt: skip
    assert run_cli("index", path, "--corpus", "far", "--store", store_url, "-q").code == 0
    got = run_cli("get", "far.md", "--store", store_url, "--all")
    assert (got.code, got.stdout) == (0, "near\n\nfar")  # set apart, not placed


def test_the_span_bound_is_what_one_jsonl_line_can_hold():
    assert MAX_SPAN == MAX_LINE_BYTES
    assert link("HTTPS://Docs.Example.com/x") == "HTTPS://Docs.Example.com/x"
    assert link("https://[::1]:8080/x") == "https://[::1]:8080/x"
    assert link("https://[::1/x") is None
    assert link("https://docs.example.com/x[1]") is None
    assert link("ftp://docs.example.com/x") is None


# --- names in Unicode NFD (committed from macOS) ------------------------------------------------

NFD = unicodedata.normalize("NFD", "café.md")
NFC = unicodedata.normalize("NFC", "café.md")


@pytest.fixture
def decomposed(tmp_path: Path, store_url: str) -> str:
    write(tmp_path / "nfd", {f"docs/{NFD}": "# Café\n\nnfd only\n"})
    ingested = run_cli("ingest", "--root", tmp_path / "nfd", "--store", store_url, "-q")
    assert ingested.code == 0, ingested.stderr
    return store_url


def test_a_decomposed_name_is_found_by_its_composed_spelling(decomposed):
    assert NFD != NFC
    got = run_cli("get", f"docs/{NFC}", "--store", decomposed, "--json")
    assert got.code == 0, got.stderr
    page = json.loads(got.stdout)
    assert page["source"] == f"docs/{NFD}"  # answered as stored: its bytes are its name
    assert "nfd only" in page["text"]
    shown = run_cli("show", f"docs/{NFC}#1", "--store", decomposed, "--json")
    assert shown.code == 0, shown.stderr
    assert json.loads(shown.stdout)["source"] == f"docs/{NFD}"
    for prefix in (f"docs/{NFC[:4]}", f"docs/{NFC[:4]}".encode().decode(), "docs/caf\u00e9"):
        toc = run_cli("toc", prefix, "--store", decomposed, "--json")
        assert toc.code == 0, toc.stderr
        assert [e["source"] for e in json.loads(toc.stdout)] == [f"docs/{NFD}"]
    # A search within a path prefix too.
    (hit,) = search_json_in(decomposed, "nfd", "--path", "docs/caf\u00e9")
    assert hit["source"] == f"docs/{NFD}"
    # Its stored spelling still works, and the search's citation keeps the stored bytes.
    assert run_cli("get", f"docs/{NFD}", "--store", decomposed).code == 0
    assert search_json(decomposed, "nfd")[0]["citation"] == f"docs/{NFD}:1-3"


def test_the_mcp_tools_find_a_decomposed_name_by_its_composed_spelling(decomposed):
    knowledge = Knowledge(decomposed)
    try:
        page = knowledge.get(f"docs/{NFC}")
        assert (page["status"], page["source"]) == ("ok", f"docs/{NFD}")
        toc = knowledge.toc("docs/caf\u00e9")
        assert [d["source"] for d in toc["documents"]] == [f"docs/{NFD}"]
    finally:
        knowledge.close()


def test_two_names_that_differ_only_in_normalization_are_said_not_picked(tmp_path, store_url):
    # Both spell U+1EC7 (e, dot below, circumflex): one decomposed, one with its marks in
    # another order. Asked for the composed one, neither is the answer: both are named.
    first, second = "e\u0323\u0302.md", "e\u0302\u0323.md"
    path = jsonl(
        tmp_path / "two.jsonl",
        [
            {"source": first, "content": "first words"},
            {"source": second, "content": "second words"},
        ],
    )
    assert run_cli("index", path, "--corpus", "two", "--store", store_url, "-q").code == 0
    got = run_cli("get", "\u1ec7.md", "--store", store_url)
    assert got.code == 2, got.stderr
    assert "differ only in Unicode normalization" in got.stderr
    assert "$'e\\u0323\\u0302.md'" in got.stderr and "$'e\\u0302\\u0323.md'" in got.stderr
    assert "Traceback" not in got.stderr
    # A near miss names both, told apart.
    near = run_cli("get", "\u1ec7.txt", "--store", store_url)
    assert near.code == 1
    assert "did you mean one of $'e\\u0302\\u0323.md', $'e\\u0323\\u0302.md'?" in near.stderr
    # Each exact spelling is still its own document.
    assert run_cli("get", first, "--store", store_url).stdout.startswith("first")
    assert run_cli("get", second, "--store", store_url).stdout.startswith("second")
    knowledge = Knowledge(store_url)
    try:
        answer = knowledge.get("\u1ec7.md")
        assert answer["status"] == "ambiguous_source", answer
    finally:
        knowledge.close()


# --- a token as search --json gives it ----------------------------------------------------------


def test_the_json_token_of_a_name_with_a_line_break_is_shown(tmp_path, store_url):
    write(tmp_path / "names", {"new\nline.md": "# New\n\nline name\n"})
    out = tmp_path / "names.jsonl"
    assert run_cli("flatten", "--root", tmp_path / "names", "-o", out).code == 0
    assert run_cli("index", out, "--corpus", "names", "--store", store_url, "-q").code == 0
    (hit,) = search_json(store_url, "line")
    assert hit["token"] == "new\nline.md#1"
    for token in (hit["token"], "new\\nline.md#1", "new\nline.md (slice 1)"):
        shown = run_cli("show", token, "--store", store_url, "--json")
        assert shown.code == 0, (token, shown.stderr)
        assert json.loads(shown.stdout)["source"] == "new\nline.md"
    got = run_cli("get", hit["source"], "--store", store_url)
    assert (got.code, got.stdout) == (0, "# New\n\nline name\n")
