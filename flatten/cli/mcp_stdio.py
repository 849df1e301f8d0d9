"""MCP over stdio, keeping JSON-RPC's promises at both ends of the wire.

The SDK's stdio transport drops a line it cannot read without a word, and at the end of input
cancels the requests still being answered: a client that writes its requests and closes its end
(a script, `printf ... | docs-flatten mcp`) gets some of its answers, or none. Here a line that
is not a JSON-RPC message is answered with the JSON-RPC error for it (-32700 when it is not JSON,
-32600 when it is JSON of another shape) and the server reads on; at the end of input every
request already read is answered, for `DRAIN_SECONDS` at most, before the server stops.

A caller waits for the answer carrying its request's id, so the id is kept wherever the line
holds one: a lone surrogate escape (`"\ud800"`, valid JSON text that a JavaScript client sends
after cutting a string mid-emoji, and no Unicode text) is refused with the request's id (-32602
in params, as `index` refuses such a line; -32600 elsewhere); a line too deep or a number too
long for the SDK's parser gets its -32700 with the id read from the line's top level; a byte
order mark before a message is skipped. A request whose id is no string or whole number (an
object, 1.5, null) is read by the SDK as a notification, which nobody answers: every method but
the `notifications/` ones is a request, so it is answered -32600 with id null.

Between the SDK's transport and its server sit one relay task (reading) and one wrapper of the
write stream (noting each answer); both are the SDK's public stream types, unchanged.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

from flatten.record import SURROGATE_ESCAPE
from flatten.shown import is_utf8

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

# How long requests still being answered at the end of input may take: a search waits on an
# embeddings server at most its own timeout, and a client that hung up does not wait forever.
DRAIN_SECONDS = 30.0
SHOWN_CHARS = 60  # an unreadable line is echoed in its error message cut to this

RequestId = int | str


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one session over stdin and stdout until the input ends and its requests are
    answered (or `DRAIN_SECONDS` have passed)."""
    async with stdio_server() as (incoming, outgoing):
        unanswered = _Unanswered()
        answers = _NotedAnswers(outgoing, unanswered)
        relay_send, relay_receive = anyio.create_memory_object_stream[SessionMessage | Exception]()
        async with anyio.create_task_group() as relaying:
            relaying.start_soon(_relay, incoming, relay_send, answers, unanswered)
            await server.run(relay_receive, answers, server.create_initialization_options())
            relaying.cancel_scope.cancel()  # the server stopped first: stop reading


async def _relay(
    incoming: Any, forward: Any, answers: _NotedAnswers, unanswered: _Unanswered
) -> None:
    """Pass each message on (noting the requests), answer what is not a message, and hold the
    end of input back until the requests read are answered."""
    try:
        async with forward:
            async for item in incoming:
                if isinstance(item, Exception):
                    reread = refusal_for(item)
                    if not isinstance(reread, SessionMessage):
                        if reread is not None:
                            await answers.send(SessionMessage(reread))
                        continue
                    item = reread
                if _request_without_id(item.message):
                    await answers.send(SessionMessage(_error(None, INVALID_REQUEST, NO_ID)))
                    continue
                unanswered.note(item.message)
                await forward.send(item)
            with anyio.move_on_after(DRAIN_SECONDS):
                await unanswered.none_left()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the server stopped reading: nothing left to pass on


NOT_A_MESSAGE = (
    'Invalid Request: not a JSON-RPC 2.0 message (an object with jsonrpc "2.0", a string '
    "method, an id for a request, and params an object when given)"
)
NO_ID = (
    "Invalid Request: a request's id must be a string or a whole number (only notifications/ "
    "methods are sent without one)"
)


def refusal_for(error: Exception) -> SessionMessage | JSONRPCError | None:
    """The JSON-RPC answer to a line the transport could not read as a message (its parse or
    validation error), None for a blank line (nothing was sent) or a notification, or the
    message itself when only a byte order mark stood before it."""
    details = _details(error)
    line = details[0].get("input") if details and details[0].get("type") == "json_invalid" else None
    if isinstance(line, str):
        if not line.strip():
            return None
        if line.startswith("\ufeff") and line[1:].strip():
            try:
                return SessionMessage(jsonrpc_message_adapter.validate_json(line[1:]))
            except Exception as exc:  # the SDK's reader's error, as the line's own
                return refusal_for(exc)
        surrogate = _lone_surrogate(line)
        if surrogate is not None:
            return surrogate or None
        problem = str(details[0].get("msg", "")).removeprefix("Invalid JSON: ")
        message = f"Parse error: the line is not JSON ({_shown(line.strip())})"
        if problem.startswith(_PARSER_LIMITS):  # JSON, past the parser's depth or digits
            message = f"Parse error: {problem} ({_shown(line.strip())})"
            return _error(_top_level_id(line), PARSE_ERROR, message)
        return _error(None, PARSE_ERROR, message)
    if not details:  # not the validator's error: say only that the line was unreadable
        return _error(None, PARSE_ERROR, "Parse error")
    envelope = next((d["input"] for d in details if _is_envelope(d.get("input"))), None)
    return _error(_request_id(envelope), INVALID_REQUEST, NOT_A_MESSAGE)


def _error(request_id: RequestId | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id,
                        error=ErrorData(code=code, message=message))  # fmt: skip


def _request_id(envelope: Any) -> RequestId | None:
    """The id of a request as its answer may carry it; None where there is none to echo."""
    found = envelope.get("id") if isinstance(envelope, dict) else None
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None  # undeterminable: JSON-RPC answers such a request with id null
    if isinstance(found, str) and not is_utf8(found):
        return None  # a lone surrogate in the id itself: it cannot be written back
    return found


def _request_without_id(message: Any) -> bool:
    """A request method read as a notification: its id was no string or whole number."""
    return isinstance(message, JSONRPCNotification) and not message.method.startswith(
        "notifications/"
    )


# The SDK's parser (jiter) refuses nesting past 255 levels and numbers it cannot hold: lines
# that are JSON all the same, so their id, when they have one, is worth finding.
_PARSER_LIMITS = ("recursion limit exceeded", "number out of range")


def _lone_surrogate(line: str) -> JSONRPCError | bool | None:
    """The refusal of a message holding a lone surrogate (False: a notification, unanswered),
    or None when the line holds none, or is no JSON the standard library reads either."""
    if "\\u" not in line or not SURROGATE_ESCAPE.search(line):
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    where = _surrogate_path(value)
    if where is None:
        return None
    if not isinstance(value, dict):  # a batch: no message, whatever it holds
        return _error(None, INVALID_REQUEST, NOT_A_MESSAGE)
    if "id" not in value and str(value.get("method")).startswith("notifications/"):
        return False  # nobody answers a notification
    code, kind = (INVALID_PARAMS, "Invalid params") if where.startswith("params") else (
        INVALID_REQUEST, "Invalid Request")  # fmt: skip
    message = (f"{kind}: {where} holds a lone surrogate, which is no Unicode text (send each "
               "character whole: a UTF-16 pair, or none)")  # fmt: skip
    return _error(_request_id(value), code, message)


def _surrogate_path(value: Any) -> str | None:
    """Where in `value` the first string (or key) holding a lone surrogate is: `params.
    arguments.query`; None when none does. Walked without recursion (nesting is the caller's
    to limit)."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            if not is_utf8(item):
                return where or "the message"
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                if not is_utf8(key):
                    escaped = json.dumps(key)[1:-1][:SHOWN_CHARS]  # the surrogate as \\udXXX
                    return f"{where}.{escaped}".lstrip(".") + " (a key)"
                stack.append((f"{where}.{_shown(key)}".lstrip("."), child))
        elif isinstance(item, list):
            stack.extend((f"{where}[{n}]", child) for n, child in reversed(list(enumerate(item))))
    return None


# JSON strings and brackets: enough to follow a line's nesting without parsing it.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')
_COLON = re.compile(r"\s*:\s*")


def _top_level_id(line: str) -> RequestId | None:
    """The `id` member of the object a line holds, read without parsing the rest (which the
    parsers refuse); None when there is none to echo."""
    if not line.lstrip().startswith("{"):
        return None
    depth = 0
    for token in _TOKEN.finditer(line):
        text = token.group()
        if text in "[{":
            depth += 1
        elif text in "]}":
            depth -= 1
        elif depth == 1 and text == '"id"':
            colon = _COLON.match(line, token.end())
            if colon is None:
                continue  # a value "id", not the key
            try:
                found, _ = json.JSONDecoder().raw_decode(line, colon.end())
            except (ValueError, RecursionError):
                return None
            return _request_id({"id": found})
    return None


def _details(error: Exception) -> list[dict[str, Any]]:
    errors = getattr(error, "errors", None)
    if not callable(errors):
        return []
    try:
        return list(errors(include_url=False))
    except TypeError:
        return []


def _is_envelope(value: Any) -> bool:
    """The top-level object of a line (the validator also reports nested values)."""
    return isinstance(value, dict) and ("method" in value or "jsonrpc" in value)


def _shown(line: str) -> str:
    text = json.dumps(line, ensure_ascii=False)[1:-1]  # one line, its controls escaped
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS] + "…"


class _Unanswered:
    """The ids of the requests read and not answered yet (a cancelled one is not waited for)."""

    def __init__(self) -> None:
        self._ids: set[RequestId] = set()
        self._changed = anyio.Event()

    def note(self, message: Any) -> None:
        if isinstance(message, JSONRPCRequest):
            self._ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == (
            "notifications/cancelled"
        ):
            self.answered((message.params or {}).get("requestId"))

    def answered(self, request_id: Any) -> None:
        if isinstance(request_id, int | str) and request_id in self._ids:
            self._ids.discard(request_id)
            self._changed.set()
            self._changed = anyio.Event()

    async def none_left(self) -> None:
        while self._ids:
            await self._changed.wait()


class _NotedAnswers:
    """The server's write stream, noting the id of each answer once it is handed on."""

    def __init__(self, inner: Any, unanswered: _Unanswered) -> None:
        self._inner = inner
        self._unanswered = unanswered

    async def send(self, item: SessionMessage) -> None:
        await self._inner.send(item)
        if isinstance(item.message, JSONRPCResponse | JSONRPCError):
            self._unanswered.answered(item.message.id)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _NotedAnswers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
