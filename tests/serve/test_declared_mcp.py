"""Declared tools over MCP: the server `sophrosyne serve` builds, with the SDK's client in-process, as a restricted
role limited to its declared tools (`free_sql = false`), on SQLite and PostgreSQL (and MariaDB, with the slow
tests); a policy that does not hold still stops a spawned server at its start."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.declared import ABSENCES, D042, PEOPLE
from fixtures.engines import ROWS, build_sqlite, built
from fixtures.policies import POLICY
from fixtures.serving import ROOT, Session, in_process

# The ops role runs its declared tools only: no statement of its own.
LIMITED = POLICY.replace("[roles.ops]\n", "[roles.ops]\nfree_sql = false\n", 1)


@pytest.fixture(scope="module", params=["sqlite", "postgres", pytest.param("mariadb", marks=pytest.mark.slow)])
def session(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    folder = tmp_path_factory.mktemp(f"declared-{request.param}")
    policy = folder / "policy.toml"
    policy.write_text(LIMITED + ABSENCES + PEOPLE)
    settings = {"SOPHROSYNE_SCHEMA_CHECK_S": "0"}
    with (
        built(request.param, folder, "declared_mcp") as target,
        in_process(target, policy=policy, role="ops", env=settings) as opened,
    ):
        yield opened


def listed(session: Session) -> dict[str, Any]:
    return {tool.name: tool for tool in session.portal.call(session.client.list_tools).tools}


def test_the_declared_tools_are_listed_with_typed_arguments_and_free_sql_is_not(session: Session) -> None:
    tools = listed(session)
    assert {"absences_between", "people_of", "list_tables", "describe_table"} <= set(tools)
    assert not {"execute_sql", "explain_sql"} & set(tools)
    people = tools["people_of"]
    assert people.description == "The employees of a department."
    code = people.input_schema["properties"]["code"]
    assert code["type"] == "string" and code["maxLength"] == 40 and code["description"]
    assert people.input_schema["required"] == ["code"]
    start = tools["absences_between"].input_schema["properties"]["start"]
    assert start["type"] == "string" and start["format"] == "date"
    assert {"columns", "rows", "sql_executed"} <= set(people.output_schema["required"])  # execute_sql's output


def test_a_declared_tool_answers_as_the_role_sees_the_data(session: Session) -> None:
    result = session.call("people_of", {"code": "D042"})  # the client checks it against the output schema
    assert not result.is_error, result.content
    assert [row[0] for row in (result.structured_content or {})["rows"]] == D042
    other = session.call("people_of", {"code": "D017"})
    assert (other.structured_content or {})["rows"] == []  # the role's row filter holds
    absences = session.call("absences_between", {"start": "2025-09-01", "end": "2025-11-30"})
    rows = (absences.structured_content or {})["rows"]
    assert {row[0] for row in rows} == {a[1] for a in ROWS["absence_records"] if a[1] in D042}


def test_values_are_bound_and_checked(session: Session) -> None:
    for attack in ("D042' OR '1'='1", "x'; DROP TABLE employees; --"):
        result = session.call("people_of", {"code": attack})
        assert not result.is_error and (result.structured_content or {})["rows"] == []
    refused = session.call("absences_between", {"start": "2025-09-01' OR 1=1 --", "end": "2025-11-30"})
    assert refused.is_error
    early = session.call("absences_between", {"start": "2019-01-01", "end": "2025-11-30"})
    assert early.is_error and "start" in str(early.content[0])  # below its declared minimum


def test_the_limited_role_cannot_run_its_own_sql(session: Session) -> None:
    result = session.call("execute_sql", {"sql": "SELECT full_name FROM employees"})
    assert result.is_error and "runs only the tools its policy declares" in str(result.content[0])


def test_a_policy_that_does_not_hold_stops_the_server_at_start(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    written = 'sql = "DELETE FROM employees WHERE department = :code"'
    policy.write_text(
        LIMITED + "\n".join(written if line.startswith("sql = ") else line for line in PEOPLE.split("\n"))
    )
    database = build_sqlite(tmp_path / "hr.sqlite")
    ran = subprocess.run(
        [sys.executable, "-m", "sophrosyne", "serve", str(database), "--policy", str(policy)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert ran.returncode != 0
    assert f"{policy}:" in ran.stderr and "people_of" in ran.stderr
