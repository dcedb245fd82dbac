"""The tool commands: `tables`, `describe`, `values`, `find`, `search`, `sql` and `sources`, one call each.

Like every command module, this one loads only typer and rich; each command imports what it needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sophrosyne.cli.targets import (
    DB_HELP,
    ConfigOption,
    DescriptionsOption,
    DirectivesOption,
    JsonOption,
    PolicyOption,
    RoleOption,
    open_env,
    resolve_db,
    split_db,
)
from sophrosyne.cli.terminal import reported
from sophrosyne.errors import ConfigError


def tables(
    db: Annotated[str | None, typer.Argument(help=DB_HELP, show_default=False)] = None,
    question: Annotated[str | None, typer.Option(help="A question, to show directives.")] = None,
    knowledge: Annotated[str | None, typer.Option(help="Evidence for the question.")] = None,
    pattern: Annotated[str | None, typer.Option(help="Only names matching: a glob (sales_*) or a part.")] = None,
    offset: Annotated[int | None, typer.Option(help="Skip this many entries: the next page.", min=0)] = None,
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
    from sophrosyne.cli.display import emit

    with reported():
        env = open_env(resolve_db(db), config, descriptions, policy=policy, role=role, directives=directives)
        emit(env.list_tables(question=question, knowledge=knowledge, pattern=pattern, offset=offset), as_json)


def describe(
    args: Annotated[list[str], typer.Argument(metavar="[DB] TABLE", help="Optional database, then the table.")],
    offset: Annotated[int | None, typer.Option(help="Skip this many columns: the next page.", min=0)] = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Describe a table: columns, types, keys, null shares, sample values, foreign keys.

    Example: sophrosyne describe demo employees
    """
    from sophrosyne.cli.display import emit

    with reported():
        db, (table,) = split_db(args, 1, "[DB] TABLE")
        emit(open_env(db, config, policy=policy, role=role).describe_table(table, offset=offset), as_json)


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
    from sophrosyne.cli.display import emit

    with reported():
        db, (table, column) = split_db(args, 2, "[DB] TABLE COLUMN")
        emit(
            open_env(db, config, policy=policy, role=role).get_distinct_values(
                table, column, search=search, limit=limit
            ),
            as_json,
        )


def find(
    args: Annotated[list[str], typer.Argument(metavar="[DB] TERM", help="Optional database, then the term.")],
    table: Annotated[str | None, typer.Option(help="Only this table.")] = None,
    views: Annotated[bool, typer.Option("--views", help="Search the views too.")] = False,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Rows where a term occurs in text columns.

    Example: sophrosyne find demo "Field Operations"
    """
    from sophrosyne.cli.display import emit

    with reported():
        db, (term,) = split_db(args, 1, "[DB] TERM")
        emit(open_env(db, config, policy=policy, role=role).find_rows(term, table=table, views=views), as_json)


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
    from sophrosyne.cli.display import emit

    with reported():
        db, (query,) = split_db(args, 1, "[DB] QUERY")
        emit(open_env(db, config, descriptions, policy=policy, role=role).search_schema(query, k=k), as_json)


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
    from sophrosyne.cli.display import emit

    with reported():
        db, (statement,) = split_db(args, 1, "[DB] SQL")
        env = open_env(db, config, policy=policy, role=role)
        emit(env.explain_sql(statement) if explain else env.execute_sql(statement, limit=limit), as_json)


def export(
    args: Annotated[list[str], typer.Argument(metavar="[DB] SQL", help="Optional database, then one statement.")],
    format: Annotated[str, typer.Option(help="csv or parquet.")] = "csv",
    limit: Annotated[int | None, typer.Option(help="Most rows to write.", min=1)] = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Write one read-only statement's whole result to a CSV or Parquet file; prints its path and first rows.

    Example: sophrosyne export demo "SELECT * FROM employees" --format parquet
    """
    from sophrosyne.cli.display import emit

    with reported():
        db, (statement,) = split_db(args, 1, "[DB] SQL")
        env = open_env(db, config, policy=policy, role=role)
        emit(env.export_sql(statement, format=format, limit=limit), as_json)  # type: ignore[arg-type]


def sources(
    db: Annotated[str | None, typer.Argument(help=DB_HELP, show_default=False)] = None,
    sources_file: Annotated[
        Path | None, typer.Option("--sources", help="TOML file of several databases, as `serve --sources` takes.")
    ] = None,
    question: Annotated[str | None, typer.Option(help="A question: the sources likely irrelevant are named.")] = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show the databases a server would serve: name, dialect, table count, description.

    Example: sophrosyne sources postgresql://postgres@127.0.0.1/test
    Example: sophrosyne sources --sources sources.toml --question "Which customers ordered teapots?"
    """
    from sophrosyne.cli.display import emit
    from sophrosyne.serve.spec import ServeSpec  # not serve.run: the MCP SDK takes 1-2 s to import

    with reported():
        if sources_file is not None and db is not None:
            raise ConfigError("give a database or --sources, not both.")
        spec = ServeSpec(
            db=None if sources_file else resolve_db(db), sources=sources_file, config=config, policy=policy, role=role
        )
        opened = spec.open()
        try:
            emit(opened.list_sources(dict(opened.environments), question).sources, as_json)
        finally:
            opened.close()
