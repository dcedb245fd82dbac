"""The MCP tools, one per entry of the registry (tools/registry.py), each derived from its tool's function.

A tool's arguments are its function's (less the environment, plus `source` when it runs over one source), its
description is the function's docstring and its output schema is the schema of the result model it returns.
Each answer carries the result twice: its text (what a model reads, database values in data blocks) and the
result itself as structured content, which validates against the output schema (what a program reads).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ResourceLink, TextContent, ToolAnnotations
from pydantic import BaseModel

from sophrosyne.environment import Environment
from sophrosyne.errors import AccessDenied, ConfigError
from sophrosyne.serve.caller import Source, caller_view
from sophrosyne.serve.lean import output_schema
from sophrosyne.serve.mapping import AsyncToolFn, ToolFn
from sophrosyne.settings import FLAT, Settings
from sophrosyne.sources import Sources
from sophrosyne.sql.policy.tools import DeclaredTool
from sophrosyne.tools.base import Result, render
from sophrosyne.tools.registry import NAMES, TOOLS, ToolEntry

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# A tool that writes on the server (an export's file) and reads the database only.
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
# The tools that run a statement the caller writes: refused to a role limited to its declared tools.
OWN_SQL = ("execute_sql", "explain_sql", "export_sql", "run_python")

Mapped = Callable[[ToolFn], AsyncToolFn]


def add_tools(
    server: MCPServer, sources: Sources, mapping: Callable[[float | None], Mapped]
) -> dict[str, dict[str, Any]]:
    """Every tool of the registry that the settings serve on `server`, each call mapped by `mapping(seconds)`
    (mapping.py; None: `timeout_s`); returns each tool's output schema by name (the SDK derives none from a
    function that builds its own result)."""
    settings = sources.settings
    schemas = {}
    for entry in TOOLS:
        if entry.served_if is not None and not _setting(settings, entry.served_if):
            continue
        seconds = None if entry.seconds is None else max(settings.limits.timeout_s, _setting(settings, entry.seconds))
        schemas[entry.name] = add_tool(server, sources, entry, mapping(seconds))
    return schemas


def _setting(settings: Settings, flat: str) -> Any:
    section, name = FLAT[flat]
    return getattr(getattr(settings, section), name)


def add_tool(server: MCPServer, sources: Sources, entry: ToolEntry, mapped: Mapped) -> dict[str, Any]:
    """One tool of the registry on `server`; returns its output schema."""
    function = entry.function()
    signature = inspect.signature(function, eval_str=True)
    parameters = list(signature.parameters.values())[1:]  # the first is the environment the call runs in
    if entry.over == "source":
        parameters.append(inspect.Parameter("source", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Source))

    def call(**arguments: Any) -> CallToolResult:
        if entry.over == "sources":
            result = getattr(sources, entry.name)(readable_views(sources), **arguments)
        else:
            view = caller_view(sources, arguments.pop("source", None))
            result = getattr(view, entry.name)(**arguments)
        return respond(result)

    call.__name__ = call.__qualname__ = entry.name
    call.__doc__ = function.__doc__
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=parameters, return_annotation=CallToolResult
    )
    annotations = WRITES if entry.writes else READ_ONLY
    server.add_tool(mapped(call), name=entry.name, annotations=annotations, structured_output=False)
    return output_schema(signature.return_annotation)


def add_declared_tools(server: MCPServer, sources: Sources, mapped: Mapped) -> dict[str, tuple[str, DeclaredTool]]:
    """The tools each source's policy file declares (`[[tools]]`), each on its source: its arguments are its
    typed parameters, its output that of execute_sql. Returns them by name, with their source."""
    declared: dict[str, tuple[str, DeclaredTool]] = {}
    for source, env in sources.environments.items():
        for tool in env.policy.tools if env.policy is not None else []:
            if tool.name in NAMES or tool.name in declared or tool.name == "run_python":
                raise ConfigError(
                    f"{tool.where}: a tool named `{tool.name}` is served already.",
                    hint="Give it another name (a policy shared by several sources declares its tools for each).",
                )
            declared[tool.name] = (source, tool)
            server.add_tool(
                mapped(_declared_call(sources, source, tool)),
                name=tool.name,
                description=tool.description,
                annotations=READ_ONLY,
                structured_output=False,
            )
    return declared


def _declared_call(sources: Sources, source: str, tool: DeclaredTool) -> ToolFn:
    def call(**arguments: Any) -> CallToolResult:
        return respond(caller_view(sources, source).run_declared(tool, arguments))

    call.__name__ = call.__qualname__ = tool.name
    parameters = [
        inspect.Parameter(
            p.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=inspect.Parameter.empty if p.required else None,
            annotation=p.annotation(),
        )
        for p in tool.parameters
    ]
    call.__signature__ = inspect.Signature(parameters, return_annotation=CallToolResult)  # type: ignore[attr-defined]
    return call


def shown_to_caller(sources: Sources, declared: dict[str, tuple[str, DeclaredTool]]) -> Callable[[str], bool]:
    """Whether `tools/list` shows a tool to the caller: a declared tool to the roles it is for, the tools that run
    a statement of the caller's own to a role free to write one (`free_sql`); every other tool to all."""

    def shown(name: str) -> bool:
        if name in declared:
            source, tool = declared[name]
            try:
                return caller_view(sources, source).role.name in tool.roles
            except AccessDenied:
                return False
        if name in OWN_SQL:
            return any(view.role.free_sql for view in readable_views(sources).values())
        return True

    return shown


def respond(result: BaseModel) -> CallToolResult:
    """A tool's answer: the result's text, the resources it points to (an export's file) as resource links, and
    the result as structured content (its output schema's shape)."""
    links = result.links() if isinstance(result, Result) else []
    content: list[Any] = [TextContent(type="text", text=render(result))]
    content += [ResourceLink(type="resource_link", **link.model_dump()) for link in links]
    return CallToolResult(content=content, structured_content=result.model_dump(mode="json"))


def readable_views(sources: Sources) -> dict[str, Environment]:
    """Each source as the caller's role, less the sources its token opens nothing of (they are not listed)."""
    views = {}
    for name in sources.names:
        try:
            views[name] = caller_view(sources, name)
        except AccessDenied:
            continue
    return views
