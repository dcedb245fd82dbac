"""The `sophrosyne` command on the embedded demo database, through Typer's CliRunner."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from fixtures.engines import build_sqlite, sha256_file
from sophrosyne.cli.app import app, demo_path

runner = CliRunner()
COMMANDS = sorted(typer.main.get_command(app).commands)  # type: ignore[attr-defined]


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args))


def as_json(*args: str) -> Any:
    result = invoke(*args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(autouse=True)
def demo_unchanged() -> Iterator[None]:
    """No command may change the shipped demo file."""
    before = sha256_file(demo_path())
    yield
    assert sha256_file(demo_path()) == before


def test_the_documented_commands_exist() -> None:
    assert {"tables", "describe", "values", "find", "sql", "sources", "serve", "demo"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help_with_an_example(command: str) -> None:
    result = invoke(command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout


def test_serve_help_names_every_kind_of_call_the_audit_log_records() -> None:
    """Resources, prompts and completions are audited as tool calls are (issue 33, finding 3)."""
    result = invoke("serve", "--help")
    words = " ".join(re.sub(r"[│╭╮╰╯─]", " ", result.stdout).split())
    assert "per tool call, resource list or read, prompt and completion" in words


def test_tables() -> None:
    result = invoke("tables")
    assert result.exit_code == 0, result.stderr
    assert "departments" in result.stdout and "absence_records" in result.stdout
    listing = as_json("tables", "demo")
    names = {t["name"] for t in listing["tables"]}
    assert {"departments", "employees", "attendance", "approved_leave", "absence_records"} <= names


def test_describe() -> None:
    result = invoke("describe", "employees")
    assert result.exit_code == 0, result.stderr
    assert "department" in result.stdout
    described = as_json("describe", "demo", "employees")
    assert described["table"] == "employees"
    department = next(c for c in described["columns"] if c["name"] == "department")
    assert department["key"].startswith("FK -> departments")


def test_values_with_search() -> None:
    result = invoke("values", "departments", "dept_name", "--search", "operations")
    assert result.exit_code == 0, result.stderr
    assert "Operations and Logistics" in result.stdout
    values = as_json("values", "demo", "departments", "dept_name", "--search", "operations")
    exact = {v["value"] for v in values["values"] if v["score"] == 100}
    assert exact == {"Operations and Logistics", "IT Operations", "Field Operations"}


def test_find() -> None:
    result = invoke("find", "Operations and Logistics", "--table", "departments")
    assert result.exit_code == 0, result.stderr
    found = as_json("find", "demo", "Operations and Logistics", "--table", "departments")
    (match,) = found["matches"]
    assert match["table"] == "departments"
    assert any("D042" in row for row in match["rows"])


def test_find_searches_views_with_views(tmp_path: Path) -> None:
    database = str(build_sqlite(tmp_path / "hr.sqlite"))
    assert "department_headcount" not in {m["table"] for m in as_json("find", database, "Field Operations")["matches"]}
    found = as_json("find", database, "Field Operations", "--views")
    assert "department_headcount" in {m["table"] for m in found["matches"]}


def test_sql() -> None:
    query = "SELECT dept_code, dept_name FROM departments WHERE dept_code = 'D042'"
    result = invoke("sql", query)
    assert result.exit_code == 0, result.stderr
    assert "Operations and Logistics" in result.stdout
    out = as_json("sql", "demo", query)
    assert out["rows"] == [["D042", "Operations and Logistics"]]
    assert out["sql_executed"].startswith("SELECT")
    limited = as_json("sql", "SELECT employee_id FROM employees", "--limit", "2")
    assert limited["row_count"] == 2 and limited["truncated"] is True
    plan = as_json("sql", "--explain", query)
    assert plan["plan"]


def test_sources() -> None:
    (source,) = as_json("sources")
    assert source["dialect"] == "sqlite"
    assert source["tables"] >= 10


@pytest.mark.parametrize(
    "statement",
    [
        "DELETE FROM absence_records",
        "DROP TABLE employees",
        "SELECT 1; DELETE FROM absence_records",
        "ATTACH DATABASE '/tmp/evil.db' AS evil",
        "PRAGMA query_only = 0",
        "WITH x AS (DELETE FROM attendance RETURNING *) SELECT * FROM x",
    ],
)
def test_sql_write_is_refused_with_a_one_line_reason(statement: str) -> None:
    result = invoke("sql", statement)
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines and lines[0].startswith("error: ")
    assert len(lines[0]) > len("error: ") + 10
    assert all(line.startswith(("error: ", "hint: ")) for line in lines)
    assert "Traceback" not in result.stderr


def test_fixable_errors_exit_with_a_hint() -> None:
    result = invoke("describe", "employes")
    assert result.exit_code == 1
    assert "Did you mean `employees`" in result.stderr
    result = invoke("tables", "/nonexistent/db.sqlite")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ")


def test_wrong_argument_count_is_a_usage_error() -> None:
    result = invoke("values", "departments")
    assert result.exit_code == 2


def test_demo_walks_through_and_refuses_the_delete() -> None:
    result = invoke("demo")
    assert result.exit_code == 0, result.stderr
    for step in ("list_tables", "describe_table", "get_distinct_values", "Operations and Logistics", "refused"):
        assert step in result.stdout
