"""Over HTTP a person who opens the server in a browser or with curl is told what it is and how to connect;
a GET of /mcp that does not ask for an event stream is answered, not held open forever."""

from __future__ import annotations

from collections.abc import Iterator

import anyio
import httpx2
import pytest

from sophrosyne.environment import Environment
from sophrosyne.serve.run import http_asgi
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings
from sophrosyne.sources import Sources


@pytest.fixture(scope="module")
def app() -> Iterator[object]:
    from sophrosyne.cli.targets import demo_path

    env = Environment.open(str(demo_path()), settings=Settings(directives="none"))
    yield http_asgi(build_server(Sources.single(env), require_token=False), "127.0.0.1")
    env.close()


def get(app: object, path: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    async def fetch() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=app)  # type: ignore[arg-type]
        with anyio.fail_after(10):  # an endless stream would fail here, not hang the suite
            async with httpx2.AsyncClient(transport=transport, base_url="http://10.0.0.5:8000") as client:
                return await client.get(path, headers=headers or {})

    return anyio.run(fetch)


def test_the_root_says_what_this_is_where_health_is_and_how_to_connect(app: object) -> None:
    page = get(app, "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/plain")
    assert "MCP endpoint: http://10.0.0.5:8000/mcp" in page.text and "http://10.0.0.5:8000/health" in page.text
    assert "sophrosyne config --client claude-code|" in page.text and "--url http://10.0.0.5:8000/mcp" in page.text
    assert "0.1" not in page.text  # no version: a policy keeps it for callers with a token
    hostile = get(app, "/", {"host": "evil<script>.example"})
    assert "<script>" not in hostile.text and "http://HOST:PORT/mcp" in hostile.text


@pytest.mark.parametrize("accept", [None, "*/*", "application/json", "text/html"])
def test_a_get_of_mcp_without_asking_for_a_stream_is_answered_at_once(app: object, accept: str | None) -> None:
    answer = get(app, "/mcp", {"accept": accept} if accept else {"accept": ""})
    assert answer.status_code == 406
    assert "MCP endpoint" in answer.text and "text/event-stream" in answer.text
