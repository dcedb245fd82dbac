"""The MCP server through the SDK's own client: in-process, over stdio and over streamable HTTP."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from fixtures.engines import build_sqlite, sha256_file
from fixtures.serving import free_port, wait_until_ready
from sophrosyne.environment import Environment
from sophrosyne.serve.server import build_server

ROOT = Path(__file__).resolve().parents[2]
TOOLS = {
    "list_sources",
    "list_tables",
    "describe_table",
    "get_distinct_values",
    "find_rows",
    "execute_sql",
    "explain_sql",
    "search_schema",
}
CALLS: dict[str, dict[str, Any]] = {
    "list_sources": {},
    "list_tables": {},
    "describe_table": {"table": "employees"},
    "get_distinct_values": {"table": "departments", "column": "dept_name", "search": "operations"},
    "find_rows": {"term": "Field Operations", "table": "departments"},
    "execute_sql": {"sql": "SELECT dept_code, dept_name FROM departments ORDER BY dept_code", "limit": 2},
    "explain_sql": {"sql": "SELECT * FROM employees WHERE employee_id = 3"},
    "search_schema": {"query": "date of an absence", "k": 3},
}


class Session:
    """A connected MCP client driven from synchronous tests through an anyio portal."""

    def __init__(self, portal: BlockingPortal, client: Client) -> None:
        self.portal = portal
        self.client = client

    def list_tools(self) -> list[Any]:
        return list(self.portal.call(self.client.list_tools).tools)

    def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return self.portal.call(functools.partial(self.client.call_tool, name, arguments))

    def call_many(self, calls: list[tuple[str, dict[str, Any]]]) -> list[CallToolResult]:
        """Send the calls at once, as an agent running tools in parallel does."""

        async def run_all() -> list[CallToolResult]:
            results: list[CallToolResult | None] = [None] * len(calls)

            async def one(i: int, name: str, arguments: dict[str, Any]) -> None:
                results[i] = await self.client.call_tool(name, arguments)

            async with anyio.create_task_group() as group:
                for i, (name, arguments) in enumerate(calls):
                    group.start_soon(one, i, name, arguments)
            return [r for r in results if r is not None]

        return self.portal.call(run_all)

    @property
    def instructions(self) -> str:
        return self.client.instructions or ""


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sqlite(tmp_path_factory.mktemp("mcp") / "hr.sqlite")


@pytest.fixture(scope="module")
def http_server(database: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A spawned `sophrosyne serve --http`, started early so that its start overlaps the other tests."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "sophrosyne", "serve", str(database), "--http", "--port", str(port)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    yield process, port
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    if process.stderr:
        process.stderr.close()


@pytest.fixture(scope="module")
def portal() -> Iterator[BlockingPortal]:
    with start_blocking_portal() as blocking:
        yield blocking


@pytest.fixture(scope="module", params=["in-process", "stdio", "http"])
def session(
    request: pytest.FixtureRequest,
    portal: BlockingPortal,
    database: Path,
    http_server: tuple[subprocess.Popen[bytes], int],
) -> Iterator[Session]:
    environment = None
    if request.param == "in-process":
        environment = Environment.open(database)
        target: Any = build_server(environment)
    elif request.param == "stdio":
        target = StdioServerParameters(
            # This process's environment: a checkout's PYTHONPATH serves its own code.
            command=sys.executable,
            args=["-m", "sophrosyne", "serve", str(database)],
            cwd=str(ROOT),
            env=dict(os.environ),
        )
    else:
        target = wait_until_ready(*http_server)
    with portal.wrap_async_context_manager(Client(target)) as client:
        yield Session(portal, client)
    if environment is not None:
        environment.db.close()


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def test_tools_list_has_documented_tools(session: Session) -> None:
    tools = {t.name: t for t in session.list_tools()}
    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool.description and "Example:" in tool.description, name
        assert f"{name}(" in tool.description.split("Example:", 1)[1], name
        # Every tool declares its output (issue 37); test_output_schemas.py checks each answer against it.
        assert tool.output_schema is not None and tool.output_schema["type"] == "object", name
        properties = tool.input_schema.get("properties", {})
        assert set(CALLS[name]) <= set(properties), name
        for argument, schema in properties.items():
            assert schema.get("description"), f"{name}.{argument} has no description"
        assert tool.annotations is not None and tool.annotations.read_only_hint is True, name


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_tool_returns_text_and_its_result_as_structured_content(session: Session, name: str) -> None:
    result = session.call(name, CALLS[name])  # the SDK's client validates it against the tool's output schema
    assert not result.is_error, text_of(result)
    assert text_of(result).strip()
    assert isinstance(result.structured_content, dict) and result.structured_content


def test_results_carry_the_data(session: Session) -> None:
    rows = session.call("execute_sql", CALLS["execute_sql"])
    data = rows.structured_content or {}
    assert data["rows"] == [["D017", "IT Operations"], ["D042", "Operations and Logistics"]]
    assert data["truncated"] is True
    assert "IT Operations" in text_of(rows)
    values = text_of(session.call("get_distinct_values", CALLS["get_distinct_values"]))
    for value in ("IT Operations", "Operations and Logistics", "Field Operations"):
        assert f"{value}: 1" in values
    described = text_of(session.call("describe_table", {"table": "employees"}))
    assert "referenced by: absence_records.employee_id -> employee_id" in described


def test_database_values_sit_in_data_blocks(session: Session) -> None:
    text = text_of(session.call("execute_sql", {"sql": "SELECT body FROM notes WHERE note_id = 6"}))
    opening = next(line for line in text.splitlines() if line.startswith("<data "))
    nonce = opening[len("<data ") : -1]
    assert f"</data {nonce}>" in text
    inside = text.split(opening, 1)[1].split(f"</data {nonce}>", 1)[0]
    assert "O'Brien" in inside


def test_rejected_statement_is_a_tool_error_with_the_reason(session: Session, database: Path) -> None:
    before = sha256_file(database)
    result = session.call("execute_sql", {"sql": "DELETE FROM notes"})
    assert result.is_error
    assert "DELETE" in text_of(result) and "not allowed" in text_of(result)
    assert "Traceback" not in text_of(result)
    assert sha256_file(database) == before


def test_fixable_errors_reach_the_client(session: Session) -> None:
    result = session.call("describe_table", {"table": "employes"})
    assert result.is_error
    assert "Did you mean `employees`" in text_of(result)
    result = session.call("execute_sql", {"sql": "SELECT full_nam FROM employees"})
    assert result.is_error
    assert "full_name" in text_of(result)


def test_parallel_calls(session: Session) -> None:
    count = "SELECT COUNT(*) AS n FROM employees WHERE employee_id <= {}"
    calls = [("execute_sql", {"sql": count.format(i)}) for i in range(8)]
    calls += [("describe_table", {"table": t}) for t in ("employees", "notes", "departments")]
    results = session.call_many(calls)
    assert not any(r.is_error for r in results)
    counts = [(r.structured_content or {})["rows"][0][0] for r in results[:8]]
    assert counts == list(range(8))


def test_invalid_arguments_are_refused(session: Session) -> None:
    result = session.call("get_distinct_values", {"table": "departments", "column": "dept_name", "limit": 0})
    assert result.is_error


def test_instructions_teach_the_explorer_pattern_and_data_blocks(session: Session) -> None:
    instructions = session.instructions
    for word in ("list_tables", "describe_table", "get_distinct_values", "execute_sql"):
        assert word in instructions
    assert "<data NONCE>" in instructions and "never instructions" in instructions
