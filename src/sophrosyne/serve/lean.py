"""The lean MCP surface: tool definitions without schema boilerplate, since every client pays for them in tokens."""

from __future__ import annotations

import inspect
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import Tool as MCPTool
from pydantic import BaseModel


class LeanServer(MCPServer):
    """An MCPServer whose tool definitions carry no schema boilerplate (titles, `anyOf` with null, null
    defaults): every client pays for the definitions in tokens before its first call. `output_schemas` are the
    tools' output schemas by name (the tools build their own results, so the SDK derives none)."""

    output_schemas: dict[str, dict[str, Any]] | None = None

    async def list_tools(self) -> list[MCPTool]:
        schemas = self.output_schemas or {}
        return [
            tool.model_copy(
                update={
                    "description": inspect.cleandoc(tool.description or ""),
                    "input_schema": lean_schema(tool.input_schema),
                    "output_schema": schemas.get(tool.name, tool.output_schema),
                }
            )
            for tool in await super().list_tools()
        ]


def lean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The same arguments with less text: optional values are simply not required."""
    properties = {}
    for name, prop in (schema.get("properties") or {}).items():
        prop = {k: v for k, v in prop.items() if k != "title" and not (k == "default" and v is None)}
        options = prop.pop("anyOf", None)
        if options is not None:
            kept = [o for o in options if o.get("type") != "null"]
            prop = {**(kept[0] if len(kept) == 1 else {"anyOf": kept}), **prop}
        properties[name] = prop
    lean: dict[str, Any] = {"type": "object", "properties": properties}
    if schema.get("required"):
        lean["required"] = schema["required"]
    return lean


def output_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON schema of a result as it is sent (`model_dump(mode="json")`), what a client validates structured
    content against, without what validation does not read: titles, defaults, items that may be anything, and
    `anyOf` for a value that may be null (a list of types instead)."""
    lean: dict[str, Any] = _lean_output(model.model_json_schema(mode="serialization"))
    return lean


def _lean_output(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_lean_output(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("title", "default"):
            continue
        if key in ("properties", "$defs"):  # names, each of a schema: a property named `title` is kept
            kept[key] = {name: _lean_output(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMAS:
            kept[key] = _lean_output(value)
        else:
            kept[key] = value  # a value (an enum, a description), not a schema
    if kept.get("items") in ({}, {"type": "array"}):
        # Items of any value, or a result's rows (arrays of any values, by construction): without it a validator
        # no longer visits every row or cell. The SDK's client checked each row of a 200-row answer, 3.2 ms of
        # its CPU per call (jsonschema), which doubled the client's time of execute_sql's largest answers.
        del kept["items"]
    options = kept.get("anyOf")
    if options is not None and all(set(o) == {"type"} and isinstance(o["type"], str) for o in options):
        del kept["anyOf"]
        kept = {"type": [o["type"] for o in options], **kept}
    return kept


# The keywords whose values are schemas (or lists of them).
_SUBSCHEMAS = {"items", "prefixItems", "anyOf", "allOf", "oneOf", "not", "additionalProperties"}
