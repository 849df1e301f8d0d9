"""The MCP server's stdio wire, in a real subprocess: what a client that writes raw JSON-RPC
lines gets back when it closes its end early or sends a line that is not a message.

The SDK's client cannot send a malformed line, nor close its end with requests in flight and
still read the answers; a client written in another language can do both, so these tests speak
the wire directly (the SDK's client over stdio is tested in test_mcp.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, run_cli

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test-client", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def search_call(request_id: int | str, query: str = "install with docker") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
            "params": {"name": "knowledge_search", "arguments": {"query": query}}}  # fmt: skip


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("mcp-stdio") / "store"
    assert run_cli("index", FIXTURES / "docs-tree", "--store", store, "-q").code == 0
    return store


def exchange(store: Path, lines: list[str | dict[str, Any]]) -> tuple[list[dict], str, int]:
    """Write every line, close stdin, and read until the server exits: (its answers, its
    stderr, its exit code)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "flatten", "mcp", "--store", str(store)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    sent = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    stdout, stderr = server.communicate(sent.encode(), timeout=120)
    answers = [json.loads(line) for line in stdout.decode().splitlines()]
    return answers, stderr.decode(), server.returncode


def by_id(answers: list[dict]) -> dict[Any, dict]:
    return {answer.get("id"): answer for answer in answers}


def test_requests_read_before_the_end_of_input_are_all_answered_before_the_server_exits(store):
    calls = [search_call(n) for n in range(1, 9)]
    answers, stderr, code = exchange(store, [INITIALIZE, INITIALIZED, *calls])
    assert code == 0, stderr
    assert "Traceback" not in stderr
    answered = by_id(answers)
    assert sorted(answered, key=str) == sorted(["init", *range(1, 9)], key=str)
    for n in range(1, 9):
        found = json.loads(answered[n]["result"]["content"][0]["text"])
        assert found["results"][0]["source"] == "docs/guide/install.md"


# Lines a client may send by mistake, each with the JSON-RPC error it is answered with, and the
# id the answer carries (the request's own when it has one: its sender is waiting for it).
MISTAKES = [
    ("{", PARSE_ERROR, None),
    ('{"jsonrpc": "2.0", "id": 3, "method": "tools/call"', PARSE_ERROR, None),  # cut short
    ("\ufeffnot json at all \u00e9", PARSE_ERROR, None),
    ("null", INVALID_REQUEST, None),
    ("42", INVALID_REQUEST, None),
    ('"tools/list"', INVALID_REQUEST, None),
    ("[]", INVALID_REQUEST, None),
    ('[{"jsonrpc": "2.0", "id": 4, "method": "ping"}]', INVALID_REQUEST, None),  # a batch
    ('{"hello": "world"}', INVALID_REQUEST, None),
    ('{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": 3}', INVALID_REQUEST, 5),
    ('{"jsonrpc": "2.0", "id": "six", "method": 6}', INVALID_REQUEST, "six"),
]


def test_each_line_that_is_not_a_message_is_answered_and_the_server_serves_on(store):
    # Blank lines are not answered: nothing was sent.
    lines: list[str | dict[str, Any]] = [INITIALIZE, INITIALIZED, ""]
    for line, _, _ in MISTAKES:
        lines += [line, "   "]
    answers, stderr, code = exchange(store, [*lines, search_call(99)])
    assert code == 0, stderr
    refused = [a for a in answers if "error" in a]
    assert [(a["error"]["code"], a["id"]) for a in refused] == [(c, i) for _, c, i in MISTAKES]
    assert all("\n" not in a["error"]["message"] for a in refused)
    assert "the line is not JSON ({)" in refused[0]["error"]["message"]
    assert by_id(answers)[99]["result"]["isError"] is False
