"""The lean MCP surface: tool definitions without schema boilerplate, since every client pays for them in tokens."""

from __future__ import annotations

import inspect
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import Tool as MCPTool


class LeanServer(MCPServer):
    """An MCPServer whose tool definitions carry no schema boilerplate (titles, `anyOf` with null, null
    defaults): every client pays for the definitions in tokens before its first call."""

    async def list_tools(self) -> list[MCPTool]:
        return [
            tool.model_copy(
                update={
                    "description": inspect.cleandoc(tool.description or ""),
                    "input_schema": lean_schema(tool.input_schema),
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
