"""The agent's toolboxes and `run_python` over a real MCP session: the specs the model sees, roles, results."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sophrosyne.agent.outcome import read_tables
from sophrosyne.agent.toolbox import EnvironmentTools, MCPTools, ToolOutput, rows_of
from sophrosyne.cli.app import demo_path
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError, QueryFailed
from sophrosyne.sandbox.rows import Rows
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings
from sophrosyne.sql.policy import hash_token

POLICY = Path(__file__).resolve().parents[2] / "examples" / "policy.toml"
OPS_TOKEN = "ops-manager-token"  # the demo token of examples/policy.toml


def test_in_process_specs_are_the_servers_own() -> None:
    env = Environment.open(demo_path())
    listed = asyncio.run(build_server(env).list_tools())

    async def specs() -> list[tuple[str, str, dict[str, object]]]:
        async with EnvironmentTools(env) as tools:
            return [(s.name, s.description, s.parameters) for s in tools.specs]

    assert asyncio.run(specs()) == [(t.name, t.description, t.input_schema) for t in listed]
    assert "run_python" not in {t.name for t in listed}  # off unless asked for
    env.db.close()


def test_run_python_runs_as_the_callers_role() -> None:
    env = Environment.open(demo_path(), settings=Settings(policy_file=POLICY), role_name="ops_manager")
    code = "df = sql('SELECT department, COUNT(*) AS n FROM employees GROUP BY department')\nresult = df"

    async def run() -> ToolOutput:
        async with EnvironmentTools(env, allow_python=True) as tools:
            assert tools.has("run_python")
            return await tools.call("run_python", {"code": code})

    output = asyncio.run(run())
    assert not output.is_error, output.text
    assert output.data is not None
    # The role sees its own department only: sql() went down the role's secured path.
    assert [row[0] for row in output.data["rows"]] == ["D042"]
    assert output.data["sql_calls"] == 1
    env.db.close()


def test_run_python_errors_are_tool_errors() -> None:
    env = Environment.open(demo_path())

    async def run() -> ToolOutput:
        async with EnvironmentTools(env, allow_python=True) as tools:
            return await tools.call("run_python", {"code": "import socket\nsocket.socket()\nresult = 1"})

    output = asyncio.run(run())
    assert output.is_error and "Operation not permitted" in output.text
    env.db.close()


def test_unknown_tools_come_back_as_errors_the_model_can_read() -> None:
    env = Environment.open(demo_path())

    async def run() -> ToolOutput:
        async with EnvironmentTools(env) as tools:
            return await tools.call("drop_table", {"table": "employees"})

    output = asyncio.run(run())
    assert output.is_error and output.text.startswith("no tool `drop_table`; the tools are: list_sources")
    env.db.close()


def test_rows_of_other_servers_results() -> None:
    as_objects = ToolOutput("read_query", {}, json.dumps([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]))
    assert (rows_of(as_objects).columns, rows_of(as_objects).rows) == (["a", "b"], [[1, "x"], [2, "y"]])
    wrapped = ToolOutput("execute_sql", {}, "", {"result": {"columns": ["n"], "rows": [[3]]}})
    assert rows_of(wrapped).rows == [[3]]
    with pytest.raises(QueryFailed, match="returned text"):
        rows_of(ToolOutput("query", {}, "3 rows: ..."))


def test_tables_read_by_a_query_leave_out_ctes() -> None:
    sql = "WITH recent AS (SELECT * FROM absence_records) SELECT * FROM recent JOIN employees USING (employee_id)"
    assert read_tables(sql) == ["absence_records", "employees"]
    assert read_tables("SELEC nonsense (") == []


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    """`sophrosyne serve demo --http` with the example policy, whose tokens name roles."""
    policy = POLICY
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "sophrosyne", "serve", "demo", "--http", "--port", str(port)]
    process = subprocess.Popen([*command, "--policy", str(policy)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60  # as fixtures.serving gives it: 30 s passed at load 20 (2.3 CPU-s of imports)
        while not _listening(port):
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline, "the HTTP server did not start"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)
        if process.stderr:
            process.stderr.close()


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def test_an_http_server_with_a_bearer_token(http_server: str) -> None:
    env = Environment.open(demo_path())
    listed = asyncio.run(build_server(env).list_tools())
    env.db.close()

    async def run(token: str) -> tuple[list[str], Rows]:
        async with MCPTools(http_server, token=token) as tools:
            return [s.name for s in tools.specs], await tools.sql("SELECT DISTINCT department FROM employees")

    assert hash_token(OPS_TOKEN) in POLICY.read_text()
    names, rows = asyncio.run(run(OPS_TOKEN))
    # The model sees the server's own tools/list: the policy's declared tool for its role comes last.
    assert names == [t.name for t in listed] + ["absences_between"]
    assert rows.rows == [["D042"]]  # the token's role filters what the agent's queries see
    with pytest.raises(ConfigError, match="could not connect to the MCP server"):
        asyncio.run(run("wrong-token"))
