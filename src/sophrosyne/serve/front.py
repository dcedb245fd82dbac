"""What a person meets over HTTP outside the protocol: a short page at `/`, and a GET of `/mcp` that does not ask
for an event stream answered at once rather than held open forever."""

from __future__ import annotations

import re
from typing import Any

from starlette.requests import Request
from starlette.responses import PlainTextResponse

from sophrosyne.serve.client_config import CLIENTS

# A Host header as a browser sends it; anything else is not echoed back into the page.
_HOST = re.compile(r"^[A-Za-z0-9.\-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$")


def front_page(request: Request) -> PlainTextResponse:
    """What this is, where /health is, and how to connect: no version, no sources (a policy keeps those for
    callers with a token, on /health)."""
    host = request.headers.get("host", "")
    base = f"{request.url.scheme}://{host}" if _HOST.match(host) else "http://HOST:PORT"
    text = (
        "Sophrosyne: read-only tools over databases for SQL agents, served over MCP.\n\n"
        f"MCP endpoint: {base}/mcp (streamable HTTP: an MCP client POSTs JSON-RPC there)\n"
        f"Health:       {base}/health\n\n"
        "Connect a client: print its configuration with\n"
        f"  sophrosyne config --client {'|'.join(CLIENTS)} --url {base}/mcp\n"
        "and add --token when the server has a policy (each request then sends Authorization: Bearer TOKEN).\n"
    )
    return PlainTextResponse(text)


NOT_A_STREAM = (
    "This is an MCP endpoint (streamable HTTP): a GET here opens an event stream, for a client that asks for one "
    "(Accept: text/event-stream); an MCP client POSTs JSON-RPC here. See / for how to connect.\n"
)


class StreamsOnlyWhenAsked:
    """ASGI middleware: a GET of `/mcp` whose Accept header does not name text/event-stream (a browser, curl) is
    answered 406 with a line that says what this is, instead of an event stream that never ends."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"].rstrip("/") == "/mcp":
            accept = b",".join(value for name, value in scope["headers"] if name == b"accept")
            if b"text/event-stream" not in accept.lower():
                await PlainTextResponse(NOT_A_STREAM, status_code=406)(scope, receive, send)
                return
        await self.app(scope, receive, send)
