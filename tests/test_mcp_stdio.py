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


INVALID_PARAMS = -32602
DEEP = "[" * 5000 + "]" * 5000


def _raw(request_id: Any, arguments: str, name: str = "knowledge_search") -> str:
    """A tools/call line as a client writes it: `arguments` is JSON text, written as is."""
    return ('{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "method": "tools/call", '
            '"params": {"name": "' + name + '", "arguments": ' + arguments + "}}")  # fmt: skip


# Lines that are JSON a client may well send, each with the error code and id of its answer:
# its sender waits for that id, so it is echoed wherever the line holds one.
WAITED_FOR = [
    # A lone surrogate (a JavaScript string cut mid-emoji; JSON.stringify escapes it): no
    # Unicode text, refused as `index` refuses such a line, in params or elsewhere.
    (_raw(116, '{"query": "\\ud800"}'), INVALID_PARAMS, 116, "params.arguments.query"),
    (_raw(117, '{"query": "a \\udc00 b"}', "knowledge_enumerate"), INVALID_PARAMS, 117,
     "params.arguments.query"),
    (_raw("s", '{"source": "x\\ud83d", "offset": 0}', "knowledge_get"), INVALID_PARAMS, "s",
     "params.arguments.source"),
    (_raw(118, '{"prefix": "\\ud800\\u0041"}', "knowledge_toc"), INVALID_PARAMS, 118,
     "params.arguments.prefix"),
    (_raw(119, '{"\\udfff": 1}'), INVALID_PARAMS, 119, "(a key)"),
    ('{"jsonrpc": "2.0", "id": 120, "method": "tools/\\ud800"}', INVALID_REQUEST, 120, "method"),
    ('{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', INVALID_REQUEST, None, "id"),
    # JSON past what the SDK's parser reads: the id found at the line's top level.
    (_raw(121, '{"query": "x", "deep": ' + DEEP + "}"), PARSE_ERROR, 121, "recursion limit"),
    (_raw(122, '{"query": "x", "top_k": ' + "7" * 5000 + "}"), PARSE_ERROR, 122, "out of range"),
    ('{"params": {"id": 7, "x": ' + DEEP + '}, "id": "late", "method": "ping"}', PARSE_ERROR,
     "late", "recursion limit"),
    # An id that is no string or whole number: the SDK read these as notifications, unanswered.
    ('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}', INVALID_REQUEST, None, "id"),
    ('{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', INVALID_REQUEST, None, "id"),
    ('{"jsonrpc": "2.0", "id": null, "method": "ping"}', INVALID_REQUEST, None, "id"),
    ('{"jsonrpc": "2.0", "id": [3], "method": "ping"}', INVALID_REQUEST, None, "id"),
]  # fmt: skip


def test_a_request_the_sdk_cannot_read_is_answered_with_its_own_id(store):
    lines: list[str | dict[str, Any]] = [INITIALIZE, INITIALIZED]
    lines += [line for line, *_ in WAITED_FOR]
    # Not answered: a notification with a lone surrogate (nobody answers a notification).
    lines.append('{"jsonrpc": "2.0", "method": "notifications/cancelled", '
                 '"params": {"requestId": 1, "reason": "\\ud800"}}')  # fmt: skip
    answers, stderr, code = exchange(store, [*lines, search_call(99)])
    assert code == 0, stderr
    assert "Traceback" not in stderr
    refused = [a for a in answers if "error" in a]
    got = [(a["error"]["code"], a["id"]) for a in refused]
    assert got == [(c, i) for _, c, i, _ in WAITED_FOR]
    for answer, (_, _, _, words) in zip(refused, WAITED_FOR, strict=True):
        assert words in answer["error"]["message"], answer
        assert len(answer["error"]["message"]) < 400
    assert by_id(answers)[99]["result"]["isError"] is False  # and it served on


def test_a_byte_order_mark_before_a_message_is_skipped(store):
    answers, stderr, code = exchange(store, [INITIALIZE, INITIALIZED,
                                             "\ufeff" + json.dumps(search_call(7))])  # fmt: skip
    assert code == 0, stderr
    assert by_id(answers)[7]["result"]["isError"] is False
