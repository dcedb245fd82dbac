"""The lean surface: what every client pays before its first call (tool definitions and instructions)."""

from __future__ import annotations

import asyncio
import functools
import json
from typing import Any

import pytest
import quicktok
from mcp import Client

from sophrosyne.cli.app import demo_path
from sophrosyne.environment import Environment
from sophrosyne.serve.lean import lean_schema
from sophrosyne.serve.server import build_server

# Issue 10: tool definitions plus server instructions within 1,200 o200k tokens.
SURFACE_TOKENS = 1200
# The output schemas together (issue 37), measured at 1,434: they grow only when a result model does.
OUTPUT_SCHEMA_TOKENS = 1500


@functools.cache
def surface() -> tuple[list[dict[str, Any]], str]:
    async def read() -> tuple[list[dict[str, Any]], str]:
        env = Environment.open(demo_path())
        try:
            async with Client(build_server(env)) as client:
                tools = (await client.list_tools()).tools
                instructions = client.instructions or ""
        finally:
            env.db.close()
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools], instructions

    return asyncio.run(read())


def o200k(text: str) -> int:
    return len(quicktok.get_encoding("o200k_base").encode(text))


def test_tool_definitions_and_instructions_fit_the_token_budget() -> None:
    tools, instructions = surface()
    # Counted as a model is given them: each definition as compact JSON (name, description, input schema,
    # annotations). The output schemas are for the client's program, which validates answers with them.
    given = [{k: v for k, v in t.items() if k != "outputSchema"} for t in tools]
    total = sum(o200k(json.dumps(t, separators=(",", ":"))) for t in given) + o200k(instructions)
    assert total <= SURFACE_TOKENS, total
    assert len(tools) == 8


def test_output_schemas_stay_lean() -> None:
    tools, _ = surface()
    text = json.dumps([t["outputSchema"] for t in tools], separators=(",", ":"))
    assert '"title"' not in text and '"default"' not in text
    assert o200k(text) <= OUTPUT_SCHEMA_TOKENS, o200k(text)


def test_definitions_carry_no_schema_boilerplate() -> None:
    tools, _ = surface()
    for tool in tools:
        given = json.dumps(tool["inputSchema"])
        assert '"title"' not in given and '"null"' not in given, tool["name"]
        assert tool["description"] == tool["description"].strip() and "\n        " not in tool["description"]


def test_lean_schema_keeps_types_bounds_and_required() -> None:
    schema = {
        "type": "object",
        "title": "args",
        "properties": {
            "table": {"type": "string", "title": "Table", "description": "Table name."},
            "limit": {
                "anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
                "default": None,
                "title": "Limit",
                "description": "Most rows.",
            },
            "k": {"type": "integer", "default": 10, "title": "K"},
        },
        "required": ["table"],
    }
    assert lean_schema(schema) == {
        "type": "object",
        "properties": {
            "table": {"type": "string", "description": "Table name."},
            "limit": {"type": "integer", "minimum": 1, "description": "Most rows."},
            "k": {"type": "integer", "default": 10},
        },
        "required": ["table"],
    }


@pytest.mark.parametrize("tool", ["list_tables", "describe_table", "execute_sql", "get_distinct_values"])
def test_every_tool_takes_a_source(tool: str) -> None:
    tools, _ = surface()
    found = next(t for t in tools if t["name"] == tool)
    assert "source" in found["inputSchema"]["properties"]
    assert "source" not in found["inputSchema"].get("required", [])
