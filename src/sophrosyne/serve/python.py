"""run_python, the server's own tool: a sandboxed program whose `sql()` runs as the caller's role (sandbox/)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from sophrosyne.base.data_blocks import close_data, escaped, new_nonce, open_data
from sophrosyne.serve.caller import Source, caller_view
from sophrosyne.serve.exports import program_exports
from sophrosyne.serve.lean import output_schema
from sophrosyne.serve.mapping import AsyncToolFn, ToolFn
from sophrosyne.serve.tools import READ_ONLY
from sophrosyne.sources import Sources
from sophrosyne.tools.base import fit_rows, render_table
from sophrosyne.tools.execute_sql import own_sql_allowed


class ProgramOutput(BaseModel):
    columns: list[str]
    rows: list[list[Any]]
    row_count: int
    output: str = ""
    sql_calls: int = 0
    elapsed_ms: float = 0.0


def add_run_python(server: MCPServer, sources: Sources, mapped: Callable[[ToolFn], AsyncToolFn]) -> dict[str, Any]:
    """`run_python` on `server`, each call mapped by `mapped` (in threads and under a deadline of its own);
    returns its output schema."""
    from sophrosyne.sandbox.executor import PythonExecutor
    from sophrosyne.sandbox.rows import environment_rows

    executor = PythonExecutor(sources.settings)

    # Rows as structured content too (a program reads them typed).
    @server.tool(annotations=READ_ONLY, structured_output=False)
    @mapped
    def run_python(
        code: Annotated[
            str,
            Field(
                description="A Python program. sql(query) runs one read-only query and returns a pandas DataFrame "
                "(pd is pandas); export(id) reads one of your exports; assign the answer to `result`."
            ),
        ],
        source: Source = None,
    ) -> CallToolResult:
        """Run a Python program in a sandbox (no network, no files outside its own folder, CPU, memory and time
        limits) for transformations awkward in SQL. Its sql() goes through the same read-only, role-filtered
        path as execute_sql.

        Example: run_python(code="df = sql('SELECT department FROM employees')\nresult = df.value_counts()")
        """
        caller = caller_view(sources, source)
        own_sql_allowed(caller)
        ran = executor.run(code, lambda query: environment_rows(caller, query), program_exports(sources))
        rows, _ = fit_rows(ran.columns, ran.rows, caller.settings.limits.token_budget)
        output = ProgramOutput(
            columns=ran.columns,
            rows=rows,
            row_count=len(rows),
            output=ran.output,
            sql_calls=len(ran.sql_calls),
            elapsed_ms=round(ran.ms, 2),
        )
        cut = f" (showing {len(rows)} of {len(ran.rows)})" if len(rows) < len(ran.rows) else ""
        nonce = new_nonce()
        text = f"{len(rows)} rows{cut} from {output.sql_calls} sql() calls\n" + render_table(
            output.columns, rows, nonce
        )
        if ran.output:
            # What the program printed may be the database's values: data, its lines kept, each escaped.
            printed = [escaped(line) for line in ran.output.split("\n")]
            text += "\n" + "\n".join(["printed:", open_data(nonce), *printed, close_data(nonce)])
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=output.model_dump(mode="json")
        )

    return output_schema(ProgramOutput)
