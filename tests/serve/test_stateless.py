"""A handshake-era request over stateless HTTP is served in its own task (serve/stateless.py): answered as JSON,
with the answer the SDK's own per-request session gives; anything else still reaches the SDK as it came."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette

from sophrosyne.environment import Environment
from sophrosyne.serve import server as server_module
from sophrosyne.serve.calls import Calls
from sophrosyne.serve.run import http_asgi
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings
from sophrosyne.sources import Sources

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
CALLS: list[dict[str, Any]] = [
    {"method": "tools/call", "params": {"name": "execute_sql", "arguments": {"sql": "SELECT 1 AS one"}}},
    {"method": "tools/call", "params": {"name": "describe_table", "arguments": {"table": "no_such_table"}}},
    {"method": "tools/call", "params": {"name": "no_such_tool", "arguments": {}}},
    {"method": "tools/list", "params": {}},
    {"method": "no/such_method", "params": {}},
]
# What differs between two answers to one call: each data block's random nonce, and the time it took.
_VARYING = re.compile(r"\b[0-9a-f]{8}\b|(?<=elapsed_ms\": )[0-9.]+|(?<=in )\d+(?= ms)")


@pytest.fixture(scope="module")
def env() -> Iterator[Environment]:
    from sophrosyne.cli.targets import demo_path

    opened = Environment.open(str(demo_path()), settings=Settings(directives="none"))
    yield opened
    opened.close()


def _app(env: Environment, *, inline: bool, monkeypatch: pytest.MonkeyPatch) -> Starlette:
    if not inline:
        monkeypatch.setattr(server_module, "serve_requests_inline", lambda manager: None)
    app = http_asgi(build_server(Sources.single(env), require_token=False), "127.0.0.1")
    monkeypatch.undo()
    return app


def _posts(app: Starlette, bodies: list[bytes]) -> list[httpx2.Response]:
    async def run() -> list[httpx2.Response]:
        async with app.router.lifespan_context(app):  # the session manager runs, as under uvicorn
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as client:
                with anyio.fail_after(30):
                    return [await client.post("/mcp", content=body, headers=HEADERS) for body in bodies]

    return anyio.run(run)


def _message(response: httpx2.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    return dict(json.loads(data[-1]))


def _bodies() -> list[bytes]:
    return [json.dumps({"jsonrpc": "2.0", "id": i + 1, **call}).encode() for i, call in enumerate(CALLS)]


def test_requests_get_the_answers_of_the_sdks_own_session(env: Environment, monkeypatch: pytest.MonkeyPatch) -> None:
    inline = _posts(_app(env, inline=True, monkeypatch=monkeypatch), _bodies())
    sdk = _posts(_app(env, inline=False, monkeypatch=monkeypatch), _bodies())
    for call, ours, theirs in zip(CALLS, inline, sdk, strict=True):
        assert ours.status_code == theirs.status_code == 200, call
        assert ours.headers["content-type"].startswith("application/json")  # served inline: no event stream
        assert theirs.headers["content-type"].startswith("text/event-stream")  # the SDK's session
        assert _VARYING.sub("N", json.dumps(_message(ours))) == _VARYING.sub("N", json.dumps(_message(theirs))), call
    assert _message(inline[0])["result"]["structuredContent"]["rows"] == [[1]]
    assert _message(inline[1])["result"]["isError"] is True
    assert "error" in _message(inline[4])


def test_what_is_not_one_request_reaches_the_sdk(env: Environment, monkeypatch: pytest.MonkeyPatch) -> None:
    app = _app(env, inline=True, monkeypatch=monkeypatch)
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    hello, noted, broken = _posts(app, [json.dumps(initialize).encode(), json.dumps(notification).encode(), b"{"])
    assert hello.status_code == 200 and _message(hello)["result"]["serverInfo"]["name"] == "sophrosyne"
    assert noted.status_code == 202
    assert broken.status_code == 400 and "Parse error" in broken.text  # the SDK's words, its body replayed


SLOW = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT COUNT(*) FROM c"


def test_a_client_that_hangs_up_stops_its_call(env: Environment) -> None:
    calls = Calls()
    app = http_asgi(build_server(Sources.single(env), require_token=False, calls=calls), "127.0.0.1")
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    body = json.dumps({**call, "params": {"name": "execute_sql", "arguments": {"sql": SLOW}}}).encode()
    headers = [(b"host", b"127.0.0.1:8000"), *((k.encode(), v.encode()) for k, v in HEADERS.items())]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/mcp", "raw_path": b"/mcp", "query_string": b"", "root_path": "", "headers": headers,
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}  # fmt: skip
    sent: list[dict[str, Any]] = []

    async def run() -> None:
        hung_up = anyio.Event()
        given = False

        async def receive() -> dict[str, Any]:
            nonlocal given
            if not given:
                given = True
                return {"type": "http.request", "body": body, "more_body": False}
            await hung_up.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async with app.router.lifespan_context(app), anyio.create_task_group() as group:
            group.start_soon(app, scope, receive, send)
            with anyio.fail_after(30):  # generous: the suite runs at a load of 15 and more
                while not calls.pool("tools").busy:  # the statement runs
                    await anyio.sleep(0.01)
            hung_up.set()
            with anyio.fail_after(12):  # well before its 30 s time limit: stopped, its thread given back
                while calls.pool("tools").busy or calls.active:
                    await anyio.sleep(0.02)

    anyio.run(run)
    assert not [m for m in sent if m["type"] == "http.response.body"]  # nobody to answer
