"""Every MCP tool call leaves one audit record: role, arguments, SQL as written and executed, rows, errors."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from mcp import Client
from typer.testing import CliRunner

from sophrosyne.cli.app import app, demo_path
from sophrosyne.environment import Environment
from sophrosyne.serve.server import build_server
from sophrosyne.settings import Settings

POLICY = Path(__file__).parents[1] / "examples" / "policy.toml"


def run_calls(env: Environment, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(build_server(env)) as client:
            return [await client.call_tool(name, args) for name, args in calls]

    return asyncio.run(go())


def test_each_call_is_one_record_with_the_sql_as_executed(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    settings = Settings.load(None, audit_log=log, policy_file=POLICY, cache_dir=tmp_path / "cache")
    env = Environment.open(demo_path(), settings=settings, role_name="ops_manager")
    results = run_calls(
        env,
        [
            ("list_tables", {}),
            ("execute_sql", {"sql": "SELECT COUNT(*) AS n FROM employees"}),
            ("execute_sql", {"sql": "DELETE FROM employees"}),
            ("describe_table", {"table": "salaries"}),
        ],
    )
    assert [r.is_error for r in results] == [False, False, True, True]
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [r["tool"] for r in records] == ["list_tables", "execute_sql", "execute_sql", "describe_table"]
    assert {r["role"] for r in records} == {"ops_manager"}
    count = records[1]
    assert count["arguments"] == {"sql": "SELECT COUNT(*) AS n FROM employees", "limit": None, "source": None}
    assert count["sql_written"] == "SELECT COUNT(*) AS n FROM employees"
    assert "_sec_employees" in count["sql_executed"] and "D042" in count["sql_executed"]
    assert count["rows"] == 1 and count["response_tokens"] > 0 and count["ms"] > 0
    assert count["error_code"] is None
    assert records[2]["error_code"] == "rejected" and "DELETE" in records[2]["error_message"]
    assert records[3]["error_code"] == "unknown_table"


def test_restricted_roles_see_their_own_sql_not_the_filters(tmp_path: Path) -> None:
    settings = Settings.load(None, policy_file=POLICY, cache_dir=tmp_path / "cache")
    env = Environment.open(demo_path(), settings=settings, role_name="ops_manager")
    output = env.execute_sql("SELECT COUNT(*) AS n FROM employees")
    assert "D042" not in output.sql_executed and "_sec_" not in output.sql_executed
    plan = env.explain_sql("SELECT * FROM employees")
    assert plan.plan == [] and plan.note


def test_audit_command_summarizes_a_log(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    env = Environment.open(demo_path(), settings=Settings.load(None, audit_log=log, cache_dir=tmp_path / "c"))
    run_calls(env, [("execute_sql", {"sql": "SELECT * FROM departments"}), ("describe_table", {"table": "nope"})])
    result = CliRunner().invoke(app, ["audit", str(log)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "execute_sql" in result.output and "departments" in result.output and "unknown_table" in result.output
    missing = CliRunner().invoke(app, ["audit", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 1
