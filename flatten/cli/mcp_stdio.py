"""MCP over stdio, keeping JSON-RPC's promises at both ends of the wire.

The SDK's stdio transport drops a line it cannot read without a word, and at the end of input
cancels the requests still being answered: a client that writes its requests and closes its end
(a script, `printf ... | docs-flatten mcp`) gets some of its answers, or none. Here a line that
is not a JSON-RPC message is answered with the JSON-RPC error for it (-32700 when it is not JSON,
-32600 when it is JSON of another shape) and the server reads on; at the end of input every
request already read is answered, for `DRAIN_SECONDS` at most, before the server stops.

Between the SDK's transport and its server sit one relay task (reading) and one wrapper of the
write stream (noting each answer); both are the SDK's public stream types, unchanged.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
)

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
                    refusal = refusal_for(item)
                    if refusal is not None:
                        await answers.send(SessionMessage(refusal))
                    continue
                unanswered.note(item.message)
                await forward.send(item)
            with anyio.move_on_after(DRAIN_SECONDS):
                await unanswered.none_left()
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass  # the server stopped reading: nothing left to pass on


def refusal_for(error: Exception) -> JSONRPCError | None:
    """The JSON-RPC answer to a line the transport could not read as a message (its parse or
    validation error), or None for a blank line (nothing was sent)."""
    details = _details(error)
    line = details[0].get("input") if details and details[0].get("type") == "json_invalid" else None
    if isinstance(line, str):
        if not line.strip():
            return None
        message = f"Parse error: the line is not JSON ({_shown(line.strip())})"
        return JSONRPCError(jsonrpc="2.0", id=None,
                            error=ErrorData(code=PARSE_ERROR, message=message))  # fmt: skip
    if not details:  # not the validator's error: say only that the line was unreadable
        return JSONRPCError(jsonrpc="2.0", id=None,
                            error=ErrorData(code=PARSE_ERROR, message="Parse error"))  # fmt: skip
    envelope = next((d["input"] for d in details if _is_envelope(d.get("input"))), None)
    request_id = envelope.get("id") if envelope is not None else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None  # undeterminable: JSON-RPC answers such a request with id null
    message = (
        'Invalid Request: not a JSON-RPC 2.0 message (an object with jsonrpc "2.0", a string '
        "method, an id for a request, and params an object when given)"
    )
    return JSONRPCError(jsonrpc="2.0", id=request_id,
                        error=ErrorData(code=INVALID_REQUEST, message=message))  # fmt: skip


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
