"""The tools an agent calls: one interface, in-process over an Environment or as a client of any MCP server."""

from __future__ import annotations

import json
import os
import shlex
import tempfile
import time
from abc import ABC, abstractmethod
from contextlib import AsyncExitStack
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sophrosyne.errors import ConfigError, QueryFailed
from sophrosyne.llm import ToolSpec
from sophrosyne.sandbox.rows import Rows, environment_rows
from sophrosyne.tools.registry import FOREIGN_SQL_TOOLS

if TYPE_CHECKING:
    from mcp import Client

    from sophrosyne.environment import Environment

# The tool that runs a query: Sophrosyne's, or that of another MCP database server.
SQL_TOOLS = ("execute_sql", *FOREIGN_SQL_TOOLS)
# Variables an external server never needs: the agent's own model keys.
PRIVATE_VARIABLES = ("OPENAI_API_KEY", "SOPHROSYNE_API_KEY", "SOPHROSYNE_LLM_API_KEY")


@dataclass
class ToolOutput:
    """One tool call as the model sees it, with what a trace records of it."""

    name: str
    arguments: dict[str, Any]
    text: str
    data: dict[str, Any] | None = None
    is_error: bool = False
    ms: float = 0.0

    @property
    def rows(self) -> int | None:
        """Rows in a query-like result (execute_sql's `row_count`, distinct values), when the server says."""
        if not self.data:
            return None
        if isinstance(self.data.get("row_count"), int):
            return int(self.data["row_count"])
        for key in ("rows", "values"):
            if isinstance(self.data.get(key), list):
                return len(self.data[key])
        return None


class Toolbox(ABC):
    """An MCP client session: the model sees exactly the server's own `tools/list`.

    Use as `async with toolbox:`; then `specs`, `call(name, arguments)` and `sql(query)`."""

    label = "tools"

    def __init__(self) -> None:
        self.specs: list[ToolSpec] = []
        self.instructions = ""
        self._client: Client | None = None
        self._stack: AsyncExitStack | None = None

    @abstractmethod
    async def _connect(self, stack: AsyncExitStack) -> Client:
        """Open the session (closed with `stack`)."""

    async def __aenter__(self) -> Toolbox:
        self._stack = AsyncExitStack()
        try:
            self._client = await self._connect(self._stack)
            listed = await self._client.list_tools()
        except BaseException:
            await self._stack.aclose()
            raise
        self.specs = [
            ToolSpec(t.name, t.description or "", dict(t.input_schema or {"type": "object", "properties": {}}))
            for t in listed.tools
        ]
        self.instructions = self._client.instructions or ""
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._stack is not None:
            await self._stack.aclose()
        self._client = None

    def has(self, name: str) -> bool:
        return any(s.name == name for s in self.specs)

    @property
    def sql_tool(self) -> str | None:
        """The tool that runs a SQL query on this server, if it has one."""
        return next((name for name in SQL_TOOLS if self.has(name)), None)

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        """Call a tool; an unknown tool or a tool error comes back as an error output the model can read."""
        if self._client is None:
            raise ConfigError("the toolbox is not open.", hint="Use `async with toolbox:`.")
        if not self.has(name):
            return ToolOutput(name, arguments, no_tool(name, [s.name for s in self.specs]), is_error=True)
        started = time.perf_counter()
        result = await self._client.call_tool(name, arguments)
        ms = (time.perf_counter() - started) * 1000
        text = "\n".join(getattr(c, "text", "") for c in result.content if getattr(c, "type", "") == "text")
        if result.is_error:
            text = text.removeprefix(f"Error executing tool {name}: ")  # the SDK's wrapping, noise to a model
        data = result.structured_content if isinstance(result.structured_content, dict) else None
        return ToolOutput(name, arguments, text, data, bool(result.is_error), ms)

    async def call_sql(self, query: str) -> ToolOutput:
        """Call the server's SQL tool with one query, whatever its argument is named."""
        tool = self.sql_tool
        if tool is None:
            known = ", ".join(s.name for s in self.specs)
            return ToolOutput("sql", {"sql": query}, f"this server has no SQL tool (it has: {known}).", is_error=True)
        spec = next(s for s in self.specs if s.name == tool)
        names = list(spec.parameters.get("required") or spec.parameters.get("properties") or ["sql"])
        argument = "sql" if "sql" in names else "query" if "query" in names else str(names[0])
        return await self.call(tool, {argument: query})

    async def sql(self, query: str) -> Rows:
        """Run one query through the server's SQL tool (its secured path) for a program's `sql()`."""
        output = await self.call_sql(query)
        if output.is_error:
            raise QueryFailed(output.text.strip() or "the query failed.")
        return rows_of(output)


def no_tool(name: str, known: list[str]) -> str:
    """The answer to a call of a tool that does not exist, naming those that do."""
    return f"no tool `{name}`; the tools are: {', '.join(known)}."


def rows_of(output: ToolOutput) -> Rows:
    """Columns and rows of a SQL tool's output: structured content when the server gives it, else JSON text."""
    data = output.data
    if data is None:
        try:
            parsed = json.loads(output.text)
        except ValueError:
            raise QueryFailed(
                "the SQL tool returned text, not a table.", hint="Use a server whose SQL tool returns rows."
            ) from None
        data = {"rows": parsed} if isinstance(parsed, list) else parsed
    rows = data.get("rows")
    if isinstance(data.get("result"), dict):  # a wrapped result
        return rows_of(ToolOutput(output.name, output.arguments, "", data["result"]))
    if isinstance(rows, list) and rows and isinstance(rows[0], dict):
        columns = list(rows[0])
        return Rows(columns, [[r.get(c) for c in columns] for r in rows])
    if not isinstance(rows, list):
        raise QueryFailed("the SQL tool's result has no rows.")
    notes = [str(data[k]) for k in ("cut", "reminder") if data.get(k)]
    return Rows(
        [str(c) for c in data.get("columns", [])],
        [list(r) for r in rows],
        bool(data.get("truncated")),
        str(data.get("sql_executed", "")),
        notes,
    )


class EnvironmentTools(Toolbox):
    """In-process: the same MCP server definition (`build_server(env)`) through an in-memory session, so the
    model sees the tools it would see over stdio or HTTP; `sql()` goes straight down the role's secured path."""

    def __init__(self, env: Environment, *, allow_python: bool = False) -> None:
        super().__init__()
        self.env = env
        self.allow_python = allow_python
        self.label = f"in-process {env.name}"

    async def _connect(self, stack: AsyncExitStack) -> Client:
        from mcp import Client

        from sophrosyne.serve.server import build_server

        server = build_server(self.env, allow_python=self.allow_python)
        return await stack.enter_async_context(Client(server))

    async def sql(self, query: str) -> Rows:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(environment_rows, self.env, query)


class MCPTools(Toolbox):
    """A client of any MCP server: a stdio command (`sophrosyne serve shop.db`, `npx @bytebase/dbhub …`) or a
    streamable HTTP URL, with an optional bearer token."""

    def __init__(self, target: str, *, token: str | None = None, cwd: str | None = None) -> None:
        super().__init__()
        if not target.strip():
            raise ConfigError("--server needs a command or a URL.", hint="e.g. --server 'sophrosyne serve shop.db'.")
        self.target = target
        self.token = token
        self.cwd = cwd
        self.label = target

    @property
    def is_http(self) -> bool:
        return self.target.startswith(("http://", "https://"))

    async def _connect(self, stack: AsyncExitStack) -> Client:
        from mcp import Client, StdioServerParameters

        if self.is_http:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
            # Streams may stay open while a slow tool runs: a long read timeout, as the SDK's own client has.
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=300.0))
            )
            try:
                return await stack.enter_async_context(Client(streamable_http_client(self.target, http_client=http)))
            except Exception as exc:
                raise ConfigError(
                    f"could not connect to the MCP server {self.target}: {_reason(exc)}.",
                    hint="Check the URL (…/mcp) and, for a server with a policy, the --token.",
                ) from None
        if self.token:
            raise ConfigError("a bearer token needs an HTTP server URL.", hint="Drop --token for a stdio command.")
        from mcp.client.stdio import stdio_client

        command, *args = shlex.split(self.target)
        environment = {k: v for k, v in os.environ.items() if k not in PRIVATE_VARIABLES}
        parameters = StdioServerParameters(command=command, args=args, env=environment, cwd=self.cwd)
        # The server's log would interleave with the agent's progress: it goes to a file, shown on failure.
        log = stack.enter_context(tempfile.TemporaryFile("w+"))  # noqa: SIM115 - closed with the stack
        try:
            return await stack.enter_async_context(Client(stdio_client(parameters, errlog=log)))
        except Exception as exc:
            log.seek(0)
            said = " ".join(log.read().split())[-300:]
            raise ConfigError(
                f"could not start the MCP server `{self.target}`: {_reason(exc)}."
                + (f" It said: {said}" if said else ""),
                hint="Check the command by running it in a terminal.",
            ) from None


def _reason(exc: BaseException) -> str:
    """The innermost message of an error (anyio wraps transport failures in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
