"""Over streamable HTTP: bearer tokens map to roles; 50 concurrent clients with mixed roles never see each
other's data, and the server never fails."""

from __future__ import annotations

import contextlib
import json
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types import CallToolResult, TextContent

from fixtures.engines import build_sqlite
from fixtures.policies import POLICY, TOKENS, leaked
from fixtures.serving import http_server
from sophrosyne.sql.policy import hash_token

ROOT = Path(__file__).resolve().parents[2]
CALLS: list[tuple[str, dict[str, Any]]] = [
    ("execute_sql", {"sql": "SELECT * FROM employees"}),
    ("execute_sql", {"sql": "SELECT dept_name FROM departments"}),
    ("execute_sql", {"sql": "SELECT body, tag FROM notes"}),
    ("execute_sql", {"sql": "SELECT * FROM absence_records ORDER BY record_id"}),
    ("describe_table", {"table": "departments"}),
    ("describe_table", {"table": "employees"}),
    ("get_distinct_values", {"table": "departments", "column": "dept_name"}),
    ("get_distinct_values", {"table": "employees", "column": "full_name", "search": "a"}),
    ("find_rows", {"term": "Operations"}),
    ("find_rows", {"term": "discount"}),
    ("list_tables", {}),
]
CLIENTS, CALLS_EACH = 50, 20


@pytest.fixture(scope="module", params=[1, 2], ids=["1-worker", "2-workers"])
def server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("http_security")
    database = build_sqlite(folder / "hr.sqlite")
    policy = folder / "policy.toml"
    policy.write_text(POLICY)
    workers = str(request.param)
    with http_server(str(database), "--workers", workers, "--policy", str(policy)) as (process, port):
        yield f"http://127.0.0.1:{port}/mcp"
        assert process.poll() is None, "the server died"


@contextlib.asynccontextmanager
async def client(url: str, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as session,
    ):
        yield session


def text_of(result: CallToolResult) -> str:
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    return "\n".join(texts) + json.dumps(result.structured_content or {}, default=str)


@pytest.mark.parametrize("token", [None, "wrong", TOKENS["ops"] + "x", hash_token(TOKENS["ops"])])
def test_requests_without_a_valid_token_are_refused(server: str, token: str | None) -> None:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    with httpx2.Client(timeout=10) as http:
        response = http.post(server, headers=headers, json=body)
    assert response.status_code == 401
    assert "employees" not in response.text


@pytest.mark.parametrize(
    ("clients", "calls_each"),
    [pytest.param(10, 3, id="10x3"), pytest.param(CLIENTS, CALLS_EACH, id="50x20", marks=pytest.mark.slow)],
)
def test_concurrent_clients_with_mixed_roles(server: str, clients: int, calls_each: int) -> None:
    """50 clients x 20 calls is the acceptance run (`-m slow`); 10 x 3 runs by default."""
    latencies: list[float] = []
    outcomes: list[tuple[str, str, bool, str]] = []  # role, tool, is_error, text

    async def one_client(number: int) -> None:
        role = "admin" if number % 3 == 0 else "ops"
        number *= 7  # spread the clients over the calls
        async with client(server, TOKENS[role]) as session:
            for k in range(calls_each):
                name, arguments = CALLS[(number + k) % len(CALLS)]
                start = time.perf_counter()
                result = await session.call_tool(name, arguments)
                latencies.append(time.perf_counter() - start)
                outcomes.append((role, name, bool(result.is_error), text_of(result)))

    async def run_all() -> None:
        async with anyio.create_task_group() as group:
            for number in range(clients):
                group.start_soon(one_client, number)

    start = time.perf_counter()
    anyio.run(run_all)
    elapsed = time.perf_counter() - start
    assert len(outcomes) == clients * calls_each
    assert [o for o in outcomes if "internal error" in o[3]] == []
    # ops never sees a value outside its scope; its only errors are the denied table, worded as missing.
    ops = [o for o in outcomes if o[0] == "ops"]
    assert [o[1] for o in ops if leaked([[o[3]]])] == []
    assert all("no table `notes`" in o[3] for o in ops if o[2])
    assert any(o[2] for o in ops)
    # admin does see those values: the leak detector would have fired on a cross-role answer.
    admin = [o for o in outcomes if o[0] == "admin"]
    assert not any(o[2] for o in admin)
    assert any(leaked([[o[3]]]) for o in admin)
    p95 = statistics.quantiles(latencies, n=20)[-1] * 1000
    print(
        f"\n{len(outcomes)} calls from {clients} clients in {elapsed:.1f} s; "
        f"p50 {statistics.median(latencies) * 1000:.0f} ms, p95 {p95:.0f} ms"
    )
