"""One request of a handshake-era client over stateless streamable HTTP, served in the request's own task.

For each POST the SDK's stateless path builds a transport, a dispatcher and a session of their own in the
session manager's task group, with an event stream per answer: measured over HTTP here, about a third of a
small call's CPU (benchmarks/serving.py, README). A well-formed request (a `tools/call`, a list; not
`initialize`) is served here instead as the SDK serves a 2026-07-28 request: the server's handlers through
`serve_one`, with a connection born ready at the request's protocol version, as the SDK's stateless path makes
it. The answer is JSON when the handler ends before it says anything; a handler that notifies (progress) turns
it into an event stream, and a client that hangs up cancels the call (and so its statement). Everything else
(initialize, notifications, GET, DELETE, a malformed body, a refused header) goes to the SDK as it came.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecurityMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data, progress_token_from_params
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    ProgressToken,
    RequestId,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

logger = logging.getLogger("sophrosyne.server")

# Once an answer is an event stream, a comment line this often keeps proxies from closing it as idle.
PING_S = 15.0
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"connection", b"keep-alive"),
    (b"x-accel-buffering", b"no"),
]
_JSON_HEADERS = [(b"content-type", b"application/json")]


def serve_requests_inline(manager: StreamableHTTPSessionManager) -> None:
    """Make `manager` (stateless) serve each well-formed handshake-era request in its own task (see above)."""
    if manager.stateless:
        manager.asgi_app = RequestBodyLimitMiddleware(_Inline(manager), manager.max_request_body_size)


class _Inline:
    """ASGI: a request served here, anything else handed to the SDK's own handling, its body replayed."""

    def __init__(self, manager: StreamableHTTPSessionManager) -> None:
        self.manager = manager
        self.sdk = manager._handle_request
        self.security = TransportSecurityMiddleware(manager.security_settings)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("method") != "POST" or self.manager._task_group is None:
            await self.sdk(scope, receive, send)
            return
        request = Request(scope, receive)
        version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
        has_json, has_sse = check_accept_headers(request)
        plain = (
            (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
            and has_json
            and has_sse
            and await self.security.validate_request(request, is_post=True) is None  # content type, host, origin
        )
        if not plain:
            await self.sdk(scope, receive, send)
            return
        body = await request.body()
        call = _request_of(body)
        if call is None:
            await self.sdk(scope, _replayed(body, receive), send)
            return
        connection = Connection.from_envelope(version or DEFAULT_NEGOTIATED_VERSION, None, None)
        exchange = _Exchange(
            transport=TransportContext(kind="streamable-http", can_send_request=False),
            request_id=call.id,
            message_metadata=ServerMessageMetadata(request_context=request),
            progress_token=progress_token_from_params(call.params),
        )
        answer = _answer(self.manager, exchange, call, connection)
        await _respond(answer, exchange, receive, send)


def _request_of(body: bytes) -> JSONRPCRequest | None:
    """The body as one request served here; None for the SDK (initialize, a notification, a batch, bad JSON)."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(decoded, dict) or "id" not in decoded or decoded.get("method") == "initialize":
        return None
    try:
        return JSONRPCRequest.model_validate(decoded, by_name=False)
    except ValidationError:
        return None


def _replayed(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body read already given again first."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


@dataclass
class _Exchange:
    """The dispatch context of one request: no back-channel (stateless), notifications onto its answer's stream."""

    transport: TransportContext
    request_id: RequestId
    message_metadata: ServerMessageMetadata
    progress_token: ProgressToken | None = None
    sink: MemoryObjectSendStream[bytes] | None = None
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = field(default=False, init=False)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        if self.sink is None:
            return
        message = JSONRPCNotification(jsonrpc="2.0", method=method, params=dict(params) if params else None)
        try:
            await self.sink.send(_event(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.debug("dropped %s: the answer's stream is closed", method)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)


async def _answer(
    manager: StreamableHTTPSessionManager, exchange: _Exchange, call: JSONRPCRequest, connection: Connection
) -> JSONRPCResponse | JSONRPCError:
    """The handler's answer, its exceptions mapped as the SDK's handshake-era dispatcher maps them."""
    lifespan = manager._lifespan_state
    try:
        result = await serve_one(
            manager.app, exchange, call.method, call.params, connection=connection, lifespan_state=lifespan
        )
    except Exception as exc:
        error = handler_exception_to_error_data(exc)
        if error is None:
            logger.exception("handler for %r raised", call.method)
            error = ErrorData(code=0, message=str(exc))
        return JSONRPCError(jsonrpc="2.0", id=call.id, error=error)
    return JSONRPCResponse(jsonrpc="2.0", id=call.id, result=result)


async def _respond(answer: Any, exchange: _Exchange, receive: Receive, send: Send) -> None:
    """JSON if the handler ends without notifying; else an event stream from its first notification on. A client
    that hangs up cancels the handler."""
    sink, notices = anyio.create_memory_object_stream[bytes](0)
    exchange.sink = sink
    result: list[JSONRPCResponse | JSONRPCError] = []

    async def run() -> None:
        async with sink:
            result.append(await answer)

    async def watch(scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async with notices, anyio.create_task_group() as group:
        group.start_soon(run)
        group.start_soon(watch, group.cancel_scope)
        event, done = await _next(notices)
        if done:
            body = json.dumps(_dumped(result[0]), separators=(",", ":")).encode()
            await send({"type": "http.response.start", "status": 200, "headers": _JSON_HEADERS})
            await send({"type": "http.response.body", "body": body, "more_body": False})
        else:
            # A notification came, or the handler is slow: an event stream from here on, pinged while quiet.
            await send({"type": "http.response.start", "status": 200, "headers": _SSE_HEADERS})
            while not done:
                await send({"type": "http.response.body", "body": event or b": ping\r\n\r\n", "more_body": True})
                event, done = await _next(notices)
            await send({"type": "http.response.body", "body": _event(result[0]), "more_body": False})
        group.cancel_scope.cancel()


async def _next(notices: MemoryObjectReceiveStream[bytes]) -> tuple[bytes | None, bool]:
    """The next notification's event (None after PING_S without one), and whether the handler has ended."""
    with anyio.move_on_after(PING_S):
        try:
            return await notices.receive(), False
        except anyio.EndOfStream:
            return None, True
    return None, False


def _dumped(message: JSONRPCResponse | JSONRPCError | JSONRPCNotification) -> dict[str, Any]:
    return message.model_dump(mode="json", by_alias=True, exclude_none=True)


def _event(message: JSONRPCResponse | JSONRPCError | JSONRPCNotification) -> bytes:
    return f"event: message\r\ndata: {json.dumps(_dumped(message), separators=(',', ':'))}\r\n\r\n".encode()
