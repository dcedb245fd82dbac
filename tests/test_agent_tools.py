"""The agent's toolboxes and `run_python` over a real MCP session: the specs the model sees, roles, results."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from sophrosyne.agent.outcome import read_tables
from sophrosyne.agent.tools import EnvironmentTools, ToolOutput, rows_of
from sophrosyne.cli import demo_path
from sophrosyne.environment import Environment
from sophrosyne.errors import QueryFailed
from sophrosyne.mcp_server import build_server
from sophrosyne.settings import Settings

POLICY = Path(__file__).resolve().parents[1] / "examples" / "policy.toml"


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
