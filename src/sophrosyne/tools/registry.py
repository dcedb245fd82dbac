"""The one list of tools: what every other list of tools (server, terminal, agent, bench, facade) is derived from.

A tool is its module, `tools/<name>.py`: its function, whose signature is the tool's arguments (types,
defaults, bounds, each described with `Field`) and whose docstring is the tool's description, and the result
model that function returns, whose JSON schema is the tool's output schema. This list says which modules are
tools, in the order clients see them, and what the rest of the code needs to know of each without loading it:
the command that does the same at a terminal, which argument names the tables a call explores, and the result
models the Python API names.

It imports no tool module (they load sqlglot and pydantic): the command line reads it at start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import Any, Literal


@dataclass(frozen=True)
class ToolEntry:
    """One tool: `name` is its module, its function, its Environment method and its MCP name."""

    name: str
    # The command that does the same at a terminal: hints written for agents name the tool, a person reads this.
    command: str | None = None
    # The argument naming what a call explores: a table (`table`) or the tables its statement reads (`sql`).
    explores: Literal["table", "sql"] | None = None
    # What a call runs over: one source, which an MCP call names with `source=` when there are several, or
    # every source the caller may read (the function then runs per source, and `Sources` gathers the answers).
    over: Literal["source", "sources"] = "source"
    # The result models `from sophrosyne import ...` gives, space-separated.
    exports: str = ""
    # Whether a call writes (an export's file, on the server): its MCP annotation is then not read-only.
    writes: bool = False
    # The setting (flat name) of the seconds a call may take, when not `timeout_s`.
    seconds: str | None = None
    # The setting (flat name) that must be true for a server to serve it, for a tool that is not served by default.
    served_if: str | None = None

    @property
    def module(self) -> str:
        return f"sophrosyne.tools.{self.name}"

    def function(self) -> Callable[..., Any]:
        """The tool's function (loads its module): `function(env, **arguments)`."""
        fn: Callable[..., Any] = getattr(import_module(self.module), self.name)
        return fn


# In the order `tools/list` gives them: the order an agent is told to work in.
TOOLS: tuple[ToolEntry, ...] = (
    ToolEntry("list_sources", "sophrosyne sources", over="sources", exports="SourceInfo SourceList SourceRelevance"),
    ToolEntry("list_tables", "sophrosyne tables", exports="TableSummary TableGroupInfo Directive TableList"),
    ToolEntry("describe_table", "sophrosyne describe", explores="table", exports="ColumnInfo TableDescription"),
    ToolEntry("get_distinct_values", "sophrosyne values", explores="table", exports="ValueCount DistinctValues"),
    ToolEntry("find_rows", "sophrosyne find", explores="table", exports="TableRows FoundRows"),
    ToolEntry("search_schema", "sophrosyne search", exports="SchemaHit SchemaHits"),
    ToolEntry("execute_sql", "sophrosyne sql", explores="sql", exports="QueryOutput"),
    ToolEntry("explain_sql", "sophrosyne sql --explain", explores="sql", exports="QueryPlan"),
    ToolEntry(
        "export_sql",
        "sophrosyne export",
        explores="sql",
        exports="ExportOutput",
        writes=True,
        seconds="export_timeout_s",
        served_if="allow_exports",
    ),
)

NAMES = tuple(entry.name for entry in TOOLS)
# Tools whose `table` argument names the table a call looked at: described, sampled, searched.
TABLE_TOOLS = tuple(entry.name for entry in TOOLS if entry.explores == "table")
# Tools whose `sql` argument reads tables.
SQL_TOOLS = tuple(entry.name for entry in TOOLS if entry.explores == "sql")
# The SQL tool of other MCP database servers (DBHub, the reference SQLite server, …): an agent runs its queries
# through one, and a trace counts the tables they read.
FOREIGN_SQL_TOOLS = ("read_query", "query", "run_query", "execute_query", "sql")


def tool_named(name: str) -> ToolEntry:
    """The entry of a tool by name (KeyError for one that is not a tool)."""
    for entry in TOOLS:
        if entry.name == name:
            return entry
    raise KeyError(name)
