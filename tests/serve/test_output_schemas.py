"""Every tool declares an output schema, and its structured content validates against it (issue 37), checked with
the SDK's own client on the server `serve demo --allow-python` builds, in-process (the schemas are the server
object's; tests/serve/test_mcp.py checks them over stdio and HTTP too), for every tool the registry lists and
run_python."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.validators import validator_for

from fixtures.serving import CALLS, Session, in_process
from sophrosyne.tools.registry import NAMES


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    settings = {"SOPHROSYNE_SCHEMA_CHECK_S": "0", "SOPHROSYNE_ALLOW_EXPORTS": "true"}
    with in_process("demo", allow_python=True, env=settings) as opened:
        yield opened


@pytest.fixture(scope="module")
def schemas(session: Session) -> dict[str, dict[str, Any]]:
    listed = session.portal.call(session.client.list_tools).tools
    return {tool.name: tool.output_schema for tool in listed}


def test_every_tool_of_the_registry_and_run_python_declares_a_valid_output_schema(
    schemas: dict[str, dict[str, Any]],
) -> None:
    assert set(schemas) == {*NAMES, "run_python"} == set(CALLS)
    for name, schema in schemas.items():
        assert schema is not None, name
        validator_for(schema).check_schema(schema)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_structured_content_validates_against_the_output_schema(
    session: Session, schemas: dict[str, dict[str, Any]], name: str
) -> None:
    # The SDK's client already refuses structured content that does not match; checked here in full as well.
    result = session.call(name, CALLS[name])
    assert not result.is_error, result.content
    content = result.structured_content
    assert isinstance(content, dict) and content
    errors = list(Draft202012Validator(schemas[name]).iter_errors(content))
    assert not errors, [e.message for e in errors]
    # Every declared field is sent: a schema that lists fields no answer has would validate nothing.
    assert set(content) == set(schemas[name]["properties"]), name


def test_list_tables_structured_content_holds_the_tables_and_the_directives(session: Session) -> None:
    content = session.call("list_tables", CALLS["list_tables"]).structured_content or {}
    names = {t["name"] for t in content["tables"]}
    assert {"employees", "absence_records", "departments"} <= names
    assert content["total"] >= len(names)
    assert content["directives"] and all(d["table"] in names for d in content["directives"])


def test_no_output_schema_makes_a_validator_visit_every_row(schemas: dict[str, dict[str, Any]]) -> None:
    # The SDK's client validates every answer against these: checking that each row of a 200-row answer is an
    # array cost it 3.2 ms of CPU per call (benchmarks/peers.py, the 10,000-row query), more than it spent on
    # the rest of the answer. Rows stay arrays by construction; the schema says they are a list.
    for name in ("execute_sql", "run_python"):
        rows = schemas[name]["properties"]["rows"]
        assert rows == {"type": "array"}, (name, rows)
