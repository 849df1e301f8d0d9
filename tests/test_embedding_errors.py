"""An embeddings server that answers with something other than JSON (a proxy's HTML error page,
a web UI at the wrong URL) is reported in one line: the status and a short, clean excerpt."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from index.vectors.client import EXCERPT_CHARS, body_excerpt
from tests.conftest import FIXTURES, run_cli
from tests.embedserver import EmbeddingServer
from tests.sites import Responder, serve

BAD_GATEWAY = b"""<html>
<head><title>502 Bad Gateway</title></head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr><center>nginx/1.25.3</center>
</body>
</html>
"""


class BadGateway(Responder):
    """A reverse proxy whose embeddings server is down: an HTML page, retry at once."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.respond(502, BAD_GATEWAY, headers={"Retry-After": "0"})


class WebPage(Responder):
    """A web UI where the API was meant: 200 and a page of HTML."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.respond(200, b"<!doctype html>\n<html><body>\n<h1>Welcome</h1>\n<p>Sign in\x1b[31m"
                     b"</p></body></html>")  # fmt: skip


def said(stderr: str, *words: str) -> str:
    """The one stderr line holding all the words (and the lines are plain text)."""
    lines = [line for line in stderr.splitlines() if all(w in line for w in words)]
    assert len(lines) == 1, stderr
    assert "<" not in stderr and "\x1b" not in stderr, stderr
    return lines[0]


def test_an_html_error_page_is_one_line_with_its_status_and_title(tmp_path):
    store = tmp_path / "store"
    with serve(BadGateway) as base:
        result = run_cli("index", FIXTURES / "docs-tree", "--store", store,
                         "--base-url", base + "/v1", "--model", "m")  # fmt: skip
    assert result.code == 1
    line = said(result.stderr, "error:", "502")
    assert line.endswith("(text/html): 502 Bad Gateway"), line


def test_a_search_degraded_by_an_html_error_page_says_so_in_one_tier_line(tmp_path):
    store = tmp_path / "store"
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        loaded = run_cli("index", FIXTURES / "docs-tree", "--store", store,
                         "--base-url", base + "/v1", "--model", "hash-64", "-q")  # fmt: skip
        assert loaded.code == 0, loaded.stderr
    with serve(BadGateway) as base:
        found = run_cli("search", "install with docker", "--store", store, "--json-object",
                        "--base-url", base + "/v1", "--model", "hash-64")  # fmt: skip
    assert found.code == 0, found.stderr
    line = said(found.stderr, "tier:", "DEGRADED")
    assert "502" in line and "502 Bad Gateway)" in line, line
    reason = json.loads(found.stdout)["tier"]["reason"]
    assert "\n" not in reason and "<" not in reason and "502 Bad Gateway" in reason


def test_a_web_page_where_the_api_was_meant_is_named_with_its_status(tmp_path):
    with serve(WebPage) as base:
        result = run_cli("index", FIXTURES / "docs-tree", "--store", tmp_path / "store",
                         "--base-url", base + "/v1", "--model", "m")  # fmt: skip
    assert result.code == 1
    line = said(result.stderr, "error:", "not in the OpenAI format")
    assert "200" in line and "Welcome Sign in" in line, line


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=2000), st.sampled_from(["text/html", "application/json", "text/plain",
                                                 ""]))  # fmt: skip
def test_an_excerpt_is_one_short_clean_line_whatever_the_body(body, content_type):
    shown = body_excerpt(body, content_type)
    assert len(shown) <= EXCERPT_CHARS
    assert shown == shown.strip()
    assert not any(c.isspace() and c != " " for c in shown)
    assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in shown)
    assert "  " not in shown


def test_a_json_error_body_is_shown_by_its_message():
    body = json.dumps({"error": {"message": 'model "m" not found,\ntry pulling it first'}})
    assert body_excerpt(body, "application/json") == 'model "m" not found, try pulling it first'
