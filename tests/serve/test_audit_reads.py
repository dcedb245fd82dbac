"""Every read leaves an audit record, through a real MCP client session (issue 33, findings 3 and 4): a
resource read (real sample values), a prompt, a completion and the resource list, like a tool call; and a
completion names only the sources the caller's token gives a role on, as list_sources does."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import PromptReference, ResourceTemplateReference

from fixtures.engines import build_sqlite
from fixtures.policies import POLICY, TOKENS
from sophrosyne.environment import Environment
from sophrosyne.serve.features import TEMPLATE, table_uri
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings
from sophrosyne.sources import Sources
from sophrosyne.sql.policy import hash_token

GROUND = PromptReference(type="ref/prompt", name="ground")
TABLES = ResourceTemplateReference(type="ref/resource", uri=TEMPLATE)
# A second source whose policy knows only its own token: the ops token of POLICY gives no role on it.
SHOP_TOKEN = "shop-token-0c41d7"
SHOP_POLICY = f"""
default_role = "clerk"
[roles.clerk]
[tokens]
"{hash_token(SHOP_TOKEN)}" = "clerk"
"""


def records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def open_source(folder: Path, name: str, policy: str, log: Path) -> Environment:
    (folder / f"{name}.toml").write_text(policy)
    # Without directives: their indexes would build in the background after the handshake, for nothing here.
    settings = Settings.load(
        None, audit_log=log, policy_file=folder / f"{name}.toml", cache_dir=folder / "cache", directives="none"
    )
    return Environment.open(build_sqlite(folder / f"{name}.sqlite"), settings=settings, name=name)


@contextlib.asynccontextmanager
async def over_http(server: MCPServer, token: str) -> AsyncIterator[Client]:
    """A client session over streamable HTTP with a bearer token, the app served in this process."""
    app = server.streamable_http_app()
    transport = httpx2.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        server.session_manager.run(),  # what the app's lifespan runs
        httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000", headers=headers) as http,
        Client(streamable_http_client("http://127.0.0.1:8000/mcp", http_client=http)) as client,
    ):
        yield client


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MCPServer, Path]]:
    """Two sources behind tokens, auditing to one log: `hr` under POLICY, `shop` opened only by SHOP_TOKEN."""
    folder = tmp_path_factory.mktemp("audit_reads")
    log = folder / "audit.jsonl"
    hr, shop = open_source(folder, "hr", POLICY, log), open_source(folder, "shop", SHOP_POLICY, log)
    yield build_server(Sources({"hr": hr, "shop": shop}), require_token=True), log
    hr.close()
    shop.close()


def test_resources_prompts_and_completions_are_audited_like_tool_calls(served: tuple[MCPServer, Path]) -> None:
    server, log = served
    before = len(records(log))
    uri = table_uri("hr", "employees")

    async def session() -> tuple[list[str], str]:
        async with over_http(server, TOKENS["ops"]) as client:
            listed = [str(r.uri) for r in (await client.list_resources()).resources]
            text = (await client.read_resource(uri)).contents[0].text  # type: ignore[union-attr]
            with pytest.raises(MCPError):
                await client.read_resource(table_uri("hr", "notes"))  # denied: reads like a missing table
            await client.get_prompt("explore", {"question": "Who was absent?"})
            await client.get_prompt(
                "ground", {"table": "departments", "column": "dept_name", "value": "ops", "source": "hr"}
            )
            await client.complete(TABLES, {"name": "table", "value": "e"}, context_arguments={"source": "hr"})
            return listed, text

    listed, text = anyio.run(session)
    assert uri in listed and "table employees" in text
    written = records(log)[before:]
    assert [r["tool"] for r in written] == [
        "resources/list",
        "resources/read",
        "resources/read",
        "prompts/get",
        "prompts/get",
        "completion/complete",
    ]
    listing, read, denied, explore, ground, complete = written
    assert listing["arguments"] == {} and listing["response_tokens"] > 0
    # The read shows real sample values: its record has the statements as executed, through the role's CTEs.
    assert read["role"] == "ops" and read["arguments"] == {"uri": uri} and read["error_code"] is None
    assert read["rows"] > 0 and read["response_tokens"] > 0 and read["ms"] > 0
    assert "_sec_employees" in read["sql_executed"] and "D042" in read["sql_executed"]
    assert denied["arguments"] == {"uri": table_uri("hr", "notes")} and denied["error_code"] == "unknown_table"
    assert explore["arguments"] == {"name": "explore", "arguments": {"question": "Who was absent?", "knowledge": None}}
    assert ground["role"] == "ops" and ground["arguments"]["arguments"]["value"] == "ops"
    assert complete["role"] == "ops" and complete["response_tokens"] > 0
    assert complete["arguments"] == {"ref": TEMPLATE, "argument": "table", "value": "e", "context": {"source": "hr"}}


def test_a_completion_names_only_sources_the_token_opens(served: tuple[MCPServer, Path]) -> None:
    server, log = served
    before = len(records(log))

    async def session(token: str) -> tuple[list[str], list[str], str]:
        async with over_http(server, token) as client:
            sources = (await client.complete(GROUND, {"name": "source", "value": ""})).completion.values
            tables = await client.complete(TABLES, {"name": "table", "value": ""}, context_arguments={"source": "shop"})
            listed = await client.call_tool("list_sources", {})
            return sources, tables.completion.values, str(listed.content[0].text)  # type: ignore[union-attr]

    sources, shop_tables, listed = anyio.run(session, TOKENS["ops"])
    assert sources == ["hr"] and shop_tables == []  # the ops token gives no role on `shop`
    assert "shop" not in listed  # as list_sources says
    sources, shop_tables, _ = anyio.run(session, SHOP_TOKEN)
    assert sources == ["shop"] and "employees" in shop_tables
    completions = [r for r in records(log)[before:] if r["tool"] == "completion/complete"]
    # With several sources and none named, no one role applies (as for list_sources); `shop` refused ops.
    assert [r["role"] for r in completions] == ["", "", "", "clerk"]
