"""The `sophrosyne` command: a thin adapter that parses, calls Environment and renders."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich import box
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table as RichTable

from sophrosyne.bench.cli import bench_app
from sophrosyne.environment import Environment
from sophrosyne.errors import ConfigError, SophrosyneError
from sophrosyne.index.cli import index_command
from sophrosyne.results import (
    DistinctValues,
    FoundRows,
    QueryOutput,
    SchemaHits,
    TableDescription,
    TableList,
    render,
)
from sophrosyne.settings import Settings
from sophrosyne.terminal import console, err_console, reported

app = typer.Typer(
    name="sophrosyne",
    help="A moderated data environment for SQL agents: fine-grained read-only tools over MCP.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
)

DEMO = "demo"
DB_HELP = "Database: a .sqlite/.db/.duckdb path or a SQLAlchemy URL; `demo` (the default) is the embedded HR demo."
ConfigOption = Annotated[Path | None, typer.Option("--config", help="TOML settings file.", show_default=False)]
PolicyOption = Annotated[
    Path | None, typer.Option("--policy", help="TOML policy file: roles, row filters, column rules, tokens.")
]
DescriptionsOption = Annotated[Path | None, typer.Option(help="Folder of BIRD-style <table>.csv column descriptions.")]
RoleOption = Annotated[str | None, typer.Option("--role", help="Role to act as (default: the policy's default role).")]
DirectivesOption = Annotated[
    str | None,
    typer.Option(help="Directive mode: none, directives (default) or oracle.", show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON.")]


def demo_path() -> Path:
    return Path(str(resources.files("sophrosyne") / "data" / "demo.sqlite"))


def resolve_db(target: str | None) -> str:
    return str(demo_path()) if target in (None, "", DEMO) else str(target)


def split_db(args: list[str], needed: int, usage: str) -> tuple[str, list[str]]:
    """Commands take an optional DB before their own arguments: `[DB] TABLE ...`."""
    if len(args) == needed:
        return resolve_db(None), args
    if len(args) == needed + 1:
        return resolve_db(args[0]), args[1:]
    raise typer.BadParameter(f"expected {usage}, got {len(args)} argument(s).")


def open_env(
    db: str,
    config: Path | None,
    descriptions: Path | None = None,
    *,
    policy: Path | None = None,
    role: str | None = None,
    directives: str | None = None,
    audit_log: Path | None = None,
) -> Environment:
    settings = Settings.load(config, policy_file=policy, directives=directives, audit_log=audit_log)
    return Environment.open(db, settings=settings, descriptions=descriptions, role_name=role)


def emit(result: BaseModel | list[Any], as_json: bool) -> None:
    """JSON for machines; for people, tables (what an agent sees is in `sophrosyne demo` and over MCP)."""
    if as_json:
        data = (
            [r.model_dump(mode="json") for r in result] if isinstance(result, list) else result.model_dump(mode="json")
        )
        sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")
        return
    for item in result if isinstance(result, list) else [result]:
        show = HUMAN.get(type(item))
        if show is not None:
            show(item)
        else:
            console.print(escape(render(item)), highlight=False)


def grid(title: str | None, *columns: str) -> RichTable:
    return RichTable(*columns, title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)


def text(value: Any) -> str:
    return "NULL" if value is None else escape(str(value))


def notes(*lines: str | None) -> None:
    for line in lines:
        if line:
            console.print(f"[dim]{escape(line)}[/]")


def print_rows(result: QueryOutput) -> None:
    table = grid(None, *(escape(c) for c in result.columns))
    for row in result.rows:
        table.add_row(*(text(v) for v in row))
    console.print(table)
    more = " (truncated: more rows exist)" if result.truncated else ""
    notes(f"{result.row_count} rows{more} in {result.elapsed_ms:.0f} ms", result.reminder, result.cut)


def print_tables(result: TableList) -> None:
    table = grid(f"{len(result.tables)} tables in {result.source}", "table", "rows", "joins", "description")
    for t in result.tables:
        rows = f"~{t.row_estimate:,}" if t.row_estimate is not None else "?"
        name = f"{t.name} (view)" if t.kind == "view" else t.name
        table.add_row(escape(name), rows, escape("\n".join(t.join_keys)), escape(t.description))
    console.print(table)
    for g in result.groups:
        notes(f"group {g.pattern}: {g.count} tables with the same {g.columns} columns ({g.first} … {g.last})")
    if result.directives:
        flagged = grid("likely irrelevant to the question", "table", "confidence", "reason")
        for d in result.directives:
            flagged.add_row(escape(d.table), d.confidence, escape(d.reason))
        console.print(flagged)
    notes(result.directive_note, result.cut)


def print_description(result: TableDescription) -> None:
    rows = f"~{result.row_estimate:,} rows" if result.row_estimate is not None else "rows unknown"
    title = f"{result.kind} {result.table} ({rows}; samples from {result.sampled_rows:,} rows)"
    table = grid(title, "column", "type", "key", "null", "samples", "description")
    for c in result.columns:
        null = "" if c.null_share is None else f"{c.null_share:.0%}"
        samples = ", ".join(repr(v) for v in c.samples)
        table.add_row(escape(c.name), escape(c.type), escape(c.key or ""), null, escape(samples), escape(c.description))
    console.print(table)
    notes(
        result.description,
        "references: " + ", ".join(result.references) if result.references else None,
        "referenced by: " + ", ".join(result.referenced_by) if result.referenced_by else None,
        result.reminder,
        result.cut,
    )


def print_values(result: DistinctValues) -> None:
    what = f" matching {result.search!r}" if result.search else ""
    table = grid(f"{result.table}.{result.column}{what}", "value", "count", "match")
    for v in result.values:
        table.add_row(text(v.value), f"{v.count:,}", "" if v.score is None else f"{v.score:.0f}")
    console.print(table)
    notes(result.note, result.cut)


def print_found(result: FoundRows) -> None:
    for m in result.matches:
        table = grid(f"{m.table} (matched in {', '.join(m.matched_columns)})", *(escape(c) for c in m.columns))
        for row in m.rows:
            table.add_row(*(text(v) for v in row))
        console.print(table)
    notes(f"searched {result.searched_tables} tables" + ("" if result.matches else "; no rows matched"))
    notes(result.note, result.cut)


def print_hits(result: SchemaHits) -> None:
    table = grid(f"columns best matching {result.query!r}", "table.column", "score", "description")
    for h in result.hits:
        table.add_row(escape(f"{h.table}.{h.column}"), f"{h.score:.3f}", escape(h.description))
    console.print(table)


HUMAN: dict[type, Callable[[Any], None]] = {
    QueryOutput: print_rows,
    TableList: print_tables,
    TableDescription: print_description,
    DistinctValues: print_values,
    FoundRows: print_found,
    SchemaHits: print_hits,
}


@app.command()
def tables(
    db: Annotated[str | None, typer.Argument(help=DB_HELP, show_default=False)] = None,
    question: Annotated[str | None, typer.Option(help="A question, to show directives.")] = None,
    knowledge: Annotated[str | None, typer.Option(help="Evidence for the question.")] = None,
    directives: DirectivesOption = None,
    descriptions: DescriptionsOption = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """List tables with descriptions, row estimates and join keys.

    Example: sophrosyne tables demo --question "How many employees were absent in November?"
    """
    with reported():
        env = open_env(resolve_db(db), config, descriptions, policy=policy, role=role, directives=directives)
        emit(env.list_tables(question=question, knowledge=knowledge), as_json)


@app.command()
def describe(
    args: Annotated[list[str], typer.Argument(metavar="[DB] TABLE", help="Optional database, then the table.")],
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Describe a table: columns, types, keys, null shares, sample values, foreign keys.

    Example: sophrosyne describe demo employees
    """
    with reported():
        db, (table,) = split_db(args, 1, "[DB] TABLE")
        emit(open_env(db, config, policy=policy, role=role).describe_table(table), as_json)


@app.command()
def values(
    args: Annotated[
        list[str],
        typer.Argument(metavar="[DB] TABLE COLUMN", help="Optional database, the table and the column."),
    ],
    search: Annotated[str | None, typer.Option("--search", "-s", help="Rank values by match to this text.")] = None,
    limit: Annotated[int | None, typer.Option(help="Most values to show.", min=1)] = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Distinct values of a column with counts, optionally ranked by a search text.

    Example: sophrosyne values demo departments dept_name --search operations
    """
    with reported():
        db, (table, column) = split_db(args, 2, "[DB] TABLE COLUMN")
        emit(
            open_env(db, config, policy=policy, role=role).get_distinct_values(
                table, column, search=search, limit=limit
            ),
            as_json,
        )


@app.command("find")
def find(
    args: Annotated[list[str], typer.Argument(metavar="[DB] TERM", help="Optional database, then the term.")],
    table: Annotated[str | None, typer.Option(help="Only this table.")] = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rows where a term occurs in text columns.

    Example: sophrosyne find demo "Field Operations"
    """
    with reported():
        db, (term,) = split_db(args, 1, "[DB] TERM")
        emit(open_env(db, config, policy=policy, role=role).find_rows(term, table=table), as_json)


@app.command()
def search(
    args: Annotated[list[str], typer.Argument(metavar="[DB] QUERY", help="Optional database, then the query.")],
    k: Annotated[int, typer.Option("-k", help="How many columns to show.", min=1, max=100)] = 10,
    descriptions: DescriptionsOption = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find the columns that best match a description (hybrid search over names and descriptions).

    Example: sophrosyne search demo "date of an unexplained absence"
    """
    with reported():
        db, (query,) = split_db(args, 1, "[DB] QUERY")
        emit(open_env(db, config, descriptions, policy=policy, role=role).search_schema(query, k=k), as_json)


@app.command()
def sql(
    args: Annotated[list[str], typer.Argument(metavar="[DB] SQL", help="Optional database, then one statement.")],
    limit: Annotated[int | None, typer.Option(help="Most rows to return.", min=1)] = None,
    explain: Annotated[bool, typer.Option(help="Show the engine's plan instead of rows.")] = False,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run one read-only statement. Writes and escapes are refused with a reason and exit code 1.

    Example: sophrosyne sql demo "SELECT dept_name FROM departments LIMIT 5"
    """
    with reported():
        db, (statement,) = split_db(args, 1, "[DB] SQL")
        env = open_env(db, config, policy=policy, role=role)
        emit(env.explain_sql(statement) if explain else env.execute_sql(statement, limit=limit), as_json)


@app.command()
def sources(
    db: Annotated[str | None, typer.Argument(help=DB_HELP, show_default=False)] = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the database a server would serve: name, dialect, table count.

    Example: sophrosyne sources postgresql://postgres@127.0.0.1/test
    """
    with reported():
        emit(open_env(resolve_db(db), config, policy=policy, role=role).list_sources(), as_json)


@app.command()
def serve(
    db: Annotated[str | None, typer.Argument(help=DB_HELP, show_default=False)] = None,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    workers: Annotated[
        int, typer.Option(help="HTTP worker processes (stateless HTTP lets each serve any request).", min=1)
    ] = 1,
    descriptions: DescriptionsOption = None,
    directives: DirectivesOption = None,
    audit_log: Annotated[Path | None, typer.Option(help="Append one JSONL audit record per tool call here.")] = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
) -> None:
    """Serve the database to agents over MCP (stdio by default, or streamable HTTP).

    Example: sophrosyne serve demo            (stdio, for Claude Code, Cursor, OpenCode)
    Example: sophrosyne serve my.db --http --port 8000 --policy policy.toml --workers 2

    Over stdio the role comes from --role; over HTTP with a policy, each request's bearer token names it.
    """
    from sophrosyne.mcp_server import ServeSpec, serve_workers, warm_in_background
    from sophrosyne.mcp_server import serve as run_server

    with reported():
        if workers > 1 and not http:
            raise ConfigError("--workers needs --http.", hint="Over stdio the agent starts one server itself.")
        env = open_env(
            resolve_db(db), config, descriptions, policy=policy, role=role, directives=directives, audit_log=audit_log
        )
        warm_in_background(env)
        err_console.print(f"{env.db.name}: {len(env.catalog.tables)} tables", highlight=False)
        if http:
            err_console.print(f"serving {env.db.name} on http://{host}:{port}/mcp")
        if workers > 1:
            spec = ServeSpec(
                db=resolve_db(db),
                host=host,
                port=port,
                config=config,
                descriptions=descriptions,
                policy=policy,
                role=role,
                directives=directives,
                audit_log=audit_log,
            )
            serve_workers(spec, workers)
        else:
            run_server(env, http=http, host=host, port=port)


@app.command()
def audit(
    log: Annotated[Path, typer.Argument(help="A JSONL audit log written by `serve --audit-log`.")],
    top: Annotated[int, typer.Option(help="How many slowest calls and recent errors to show.", min=1)] = 10,
) -> None:
    """Summarize an audit log: calls per tool and role, tables touched, errors, slowest calls.

    Example: sophrosyne audit audit.jsonl
    """
    from sophrosyne.audit import render_summary, summarize

    with reported():
        if not log.is_file():
            raise ConfigError(f"audit log `{log}` does not exist.", hint="Give the file `serve --audit-log` wrote.")
        render_summary(summarize(log, top=top), console)


@app.command()
def demo(
    db: Annotated[str | None, typer.Argument(help="Database for the walk-through (default: the HR demo).")] = None,
) -> None:
    """A narrated walk-through of the explorer pattern on the embedded HR database, with no model.

    Example: sophrosyne demo
    """
    with reported():
        env = open_env(resolve_db(db), None)
        for title, step in demo_steps(env):
            console.print(Panel(escape(title), style="bold cyan", expand=False))
            step()


def demo_steps(env: Environment) -> list[tuple[str, Callable[[], None]]]:
    question = "How many employees in the operations team were absent last month (November 2025)?"
    grounded = (
        "SELECT COUNT(DISTINCT a.employee_id) AS absent_employees\n"
        "FROM absence_records AS a JOIN employees AS e ON a.employee_id = e.employee_id\n"
        "WHERE e.department = 'D042' AND a.absence_date >= '2025-11-01' AND a.absence_date < '2025-12-01'"
    )

    def show(result: BaseModel) -> None:
        console.print(escape(render(result)), highlight=False)

    def rejected() -> None:
        try:
            env.execute_sql("DELETE FROM absence_records")
        except SophrosyneError as exc:
            console.print(f"[red]refused:[/] {escape(str(exc))}")

    return [
        (
            f"Question: {question}\n1. list_tables, always first",
            lambda: show(env.list_tables(question=question)),
        ),
        (
            "   search_schema finds where things are stored, in schemas too large to read whole",
            lambda: show(env.search_schema("date of an unexplained absence", k=3)),
        ),
        (
            "2. describe_table employees: `department` holds codes, not names",
            lambda: show(env.describe_table("employees")),
        ),
        (
            "   describe_table absence_records: the unexplained absences",
            lambda: show(env.describe_table("absence_records")),
        ),
        (
            "3. ground the filter: get_distinct_values(departments, dept_name, search='operations')\n"
            "   three matches: an agent must ask which one; here the user means Operations and Logistics",
            lambda: show(env.get_distinct_values("departments", "dept_name", search="operations")),
        ),
        (
            "   find_rows('Operations and Logistics') gives its code",
            lambda: show(env.find_rows("Operations and Logistics", table="departments")),
        ),
        (
            "4. the grounded query (COUNT DISTINCT: one employee can be absent twice)",
            lambda: show(env.execute_sql(grounded)),
        ),
        ("5. a write is refused before it reaches the database", rejected),
    ]


app.command("index")(index_command)
app.add_typer(bench_app, name="bench")


def main() -> None:  # pragma: no cover - console entry for `python -m sophrosyne`
    app()
