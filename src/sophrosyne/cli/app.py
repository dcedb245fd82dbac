"""The `sophrosyne` command: a thin adapter that parses, calls Environment and renders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sophrosyne.bench.cli import bench_app
from sophrosyne.cli.targets import (
    DB_HELP,
    DEMO,
    ConfigOption,
    DescriptionsOption,
    DirectivesOption,
    JsonOption,
    PolicyOption,
    RoleOption,
    closing_opened,
    open_env,
    resolve_db,
    say_when_the_demo_is_served,
    split_db,
)
from sophrosyne.cli.targets import demo_path as demo_path  # where tests and scripts have found it
from sophrosyne.cli.terminal import console, current_log_level, err_console, reported, set_log_level
from sophrosyne.errors import ConfigError, InvalidArgument, SophrosyneError

# Only typer and rich load at start-up; each command imports what it needs, so `--help` and a small
# query stay quick (the database drivers, sqlglot and the index are heavy).

app = typer.Typer(
    name="sophrosyne",
    help="A moderated data environment for SQL agents: fine-grained read-only tools over MCP.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _show_version(value: bool) -> None:
    if value:
        from sophrosyne import __version__

        console.print(f"sophrosyne {__version__}", highlight=False)
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version and exit."),
    ] = False,
    log_level: Annotated[
        str, typer.Option("--log-level", help="Log level of the messages on stderr: debug, info, warning, error.")
    ] = "warning",
) -> None:
    """A moderated data environment for SQL agents: fine-grained read-only tools over MCP.

    Example: sophrosyne --log-level info serve demo
    """
    set_log_level(log_level)


@app.command()
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

    with reported(), closing_opened():
        env = open_env(resolve_db(db), config, descriptions, policy=policy, role=role, directives=directives)
        emit(env.list_tables(question=question, knowledge=knowledge, pattern=pattern, offset=offset), as_json)


@app.command()
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

    with reported(), closing_opened():
        db, (table,) = split_db(args, 1, "[DB] TABLE")
        emit(open_env(db, config, policy=policy, role=role).describe_table(table, offset=offset), as_json)


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
    from sophrosyne.cli.display import emit

    with reported(), closing_opened():
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
    from sophrosyne.cli.display import emit

    with reported(), closing_opened():
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
    from sophrosyne.cli.display import emit

    with reported(), closing_opened():
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
    from sophrosyne.cli.display import emit

    with reported(), closing_opened():
        db, (statement,) = split_db(args, 1, "[DB] SQL")
        env = open_env(db, config, policy=policy, role=role)
        emit(env.explain_sql(statement) if explain else env.execute_sql(statement, limit=limit), as_json)


@app.command()
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
    from sophrosyne.serve.run import ServeSpec

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


@app.command()
def serve(
    db: Annotated[str | None, typer.Argument(help=DB_HELP, show_default=False)] = None,
    sources: Annotated[
        Path | None,
        typer.Option("--sources", help="TOML file of several databases (name, path or url, description, policy)."),
    ] = None,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option(help="HTTP address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="HTTP port.")] = 8000,
    workers: Annotated[
        int, typer.Option(help="HTTP worker processes (stateless HTTP lets each serve any request).", min=1)
    ] = 1,
    descriptions: DescriptionsOption = None,
    directives: DirectivesOption = None,
    audit_log: Annotated[Path | None, typer.Option(help="Append one JSONL audit record per tool call here.")] = None,
    allow_python: Annotated[
        bool,
        typer.Option(
            "--allow-python",
            help="Also offer run_python: sandboxed Python programs whose sql() runs as the caller's role.",
        ),
    ] = False,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
) -> None:
    """Serve databases to agents over MCP (stdio by default, or streamable HTTP).

    Example: sophrosyne serve demo            (stdio, for Claude Code, Cursor, OpenCode)
    Example: sophrosyne serve my.db --http --port 8000 --policy policy.toml --workers 2
    Example: sophrosyne serve --sources sources.toml --http
    Example: sophrosyne serve demo --allow-python   (adds run_python, a sandboxed Python tool)

    Over stdio the role comes from --role; over HTTP with a policy, each request's bearer token names it.
    On start, the exact client configuration for this way of serving is printed on stderr.
    """
    import os
    import sys

    from sophrosyne.serve.handshake import EarlyStdio, snapshot_path

    # Over stdio the handshake is answered at once, before the heavy imports below (see handshake.py).
    early = None if http else EarlyStdio(snapshot_path(sys.argv[1:]))
    from sophrosyne.serve.client_config import client_configuration, serve_arguments, server_command
    from sophrosyne.serve.run import ServeSpec, serve_workers
    from sophrosyne.serve.run import serve as run_server

    with reported():
        if workers > 1 and not http:
            raise ConfigError("--workers needs --http.", hint="Over stdio the agent starts one server itself.")
        if sources is None and db is None and os.environ.get("SOPHROSYNE_SOURCES"):
            sources = Path(os.environ["SOPHROSYNE_SOURCES"])  # keeps the sources' location off the command line
        if sources is not None and db is not None:
            raise ConfigError("give a database or --sources, not both.", hint="Add the database to the sources file.")
        say_when_the_demo_is_served(db, sources)
        spec = ServeSpec(
            db=None if sources is not None else resolve_db(db),
            sources=sources,
            host=host,
            port=port,
            config=config,
            descriptions=descriptions,
            policy=policy,
            role=role,
            directives=directives,
            audit_log=audit_log,
            allow_python=allow_python,
        )
        # The server answers at once; each schema is read in the background (a bad target is told on each call).
        opened = spec.open()
        spec.drain_s = opened.settings.timeout_s + 1
        for env in opened.environments.values():
            env.db.start_reading_catalog()
        if allow_python:
            from sophrosyne.sandbox.executor import check_sandbox

            check_sandbox(opened.settings)  # refuse to start rather than offer Python less isolated
        for name, env in opened.environments.items():
            err_console.print(f"{name}: {env.dialect} at {env.url}", highlight=False, markup=False, soft_wrap=True)
        options: dict[str, str | Path | None] = {
            "sources": sources,
            "config": config,
            "descriptions": descriptions,
            "policy": policy,
            "role": role,
            "directives": directives,
            "audit_log": audit_log,
        }
        url = f"http://{host}:{port}/mcp" if http else None
        token = http and any(env.policy is not None for env in opened.environments.values())
        # A database given in SOPHROSYNE_DATABASE stays there: the printed command would show its password.
        given = db or (None if os.environ.get("SOPHROSYNE_DATABASE") else DEMO)
        args = serve_arguments(None if sources is not None else given, options)
        if allow_python:
            args.append("--allow-python")
        err_console.print(
            client_configuration(server_command(), args, http_url=url, token=token),
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
        if workers > 1:
            opened.close()
            serve_workers(spec, workers)
        else:
            run_server(
                opened,
                http=http,
                host=host,
                port=port,
                log_level=current_log_level(),
                early=early,
                allow_python=allow_python,
            )


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
def ask(
    args: Annotated[
        list[str],
        typer.Argument(metavar="[DB] QUESTION", help="Optional database (not with --server), then the question."),
    ],
    knowledge: Annotated[str | None, typer.Option(help="Knowledge or evidence for the question.")] = None,
    solver: Annotated[str, typer.Option(help="explorer (explore, ground, run, verify) or flex (plans and a vote).")] = (
        "explorer"
    ),
    model: Annotated[str | None, typer.Option(help="Chat model (default: the `model` setting).")] = None,
    base_url: Annotated[
        str | None, typer.Option(help="OpenAI-compatible endpoint …/v1 (default: `base_url`, OPENAI_BASE_URL).")
    ] = None,
    server: Annotated[
        str | None,
        typer.Option(
            help="Use this MCP server instead of DB: a stdio command or an http(s) URL.", metavar="CMD_OR_URL"
        ),
    ] = None,
    token: Annotated[str | None, typer.Option(help="Bearer token for an HTTP --server.")] = None,
    review: Annotated[bool, typer.Option("--review", help="Have a reviewer approve, revise or block the SQL.")] = False,
    trace: Annotated[Path | None, typer.Option(help="Write every step (JSONL) to this file.")] = None,
    descriptions: DescriptionsOption = None,
    directives: DirectivesOption = None,
    config: ConfigOption = None,
    policy: PolicyOption = None,
    role: RoleOption = None,
    as_json: JsonOption = False,
) -> None:
    """Ask a question in plain words: a model explores the database with the tools, then answers with SQL.

    Example: sophrosyne ask demo "How many employees in Field Operations were absent in November 2025?"
    Example: sophrosyne ask --server "sophrosyne serve shop.db" "Top 5 customers by revenue" --solver flex

    Progress goes to stderr, one line per step. Exit codes: 0 answer, 1 gave up or error, 2 no model
    configured, 3 a clarification is needed (when nobody is at the terminal to answer it).
    """
    from sophrosyne.agent import Solver
    from sophrosyne.cli.ask import AskRequest, error_json, is_interactive, toolbox_for
    from sophrosyne.cli.ask import ask as run_ask
    from sophrosyne.llm import ModelClient
    from sophrosyne.settings import Settings

    if solver not in ("explorer", "flex"):
        raise typer.BadParameter("--solver must be explorer or flex.")
    with reported():
        if server:
            if len(args) != 1:
                raise typer.BadParameter("with --server, give only the question.")
            db, question = None, args[0]
        else:
            db, (question,) = split_db(args, 1, "[DB] QUESTION")
        try:
            if not question.strip():
                raise InvalidArgument("the question is empty.", hint='e.g. sophrosyne ask demo "How many employees?"')
            settings = Settings.load(config, policy_file=policy, directives=directives)
            llm = ModelClient.from_settings(settings, model=model, base_url=base_url)  # exits 2 without a model
            env = open_env(db, config, descriptions, policy=policy, role=role, directives=directives) if db else None
            chosen: Solver = "flex" if solver == "flex" else "explorer"
            request = AskRequest(question, knowledge, chosen, review, trace, as_json, is_interactive(as_json))
            code = run_ask(request, llm, settings, toolbox_for(env, server, token), (console, err_console))
        except SophrosyneError as exc:
            if as_json:
                console.print(error_json(exc), highlight=False, soft_wrap=True)
            raise
    raise typer.Exit(code)


@app.command()
def demo(
    db: Annotated[str | None, typer.Argument(help="Database for the walk-through (default: the HR demo).")] = None,
) -> None:
    """A narrated walk-through of the explorer pattern on the embedded HR database, with no model.

    Example: sophrosyne demo
    """
    from sophrosyne.cli.demo import run_demo

    with reported(), closing_opened():
        run_demo(open_env(resolve_db(db), None))


@app.command("index")
def index(
    db: Annotated[str, typer.Argument(help="Database: a .sqlite/.db/.duckdb path or a SQLAlchemy URL.")],
    descriptions: DescriptionsOption = None,
    config: ConfigOption = None,
    values: Annotated[bool, typer.Option(help="Also index distinct text values, for literal grounding.")] = True,
    value_seconds: Annotated[float, typer.Option(help="Time budget of the value index, seconds.", min=0.1)] = 20.0,
    rebuild: Annotated[bool, typer.Option(help="Rebuild even when a cached index matches the schema.")] = False,
) -> None:
    """Build the offline index (BM25 + embeddings over columns, distinct values) in the cache folder.

    The index is keyed by a hash of the schema and descriptions: it is reused while they are unchanged.

    Example: sophrosyne index ../shared/datasets/bird_dev/dev_databases/superhero/superhero.sqlite
    --descriptions ../shared/datasets/bird_dev/dev_databases/superhero/database_description
    """
    from rich.markup import escape

    from sophrosyne.cli.terminal import progress_bar
    from sophrosyne.index.build import index_database
    from sophrosyne.settings import Settings

    with reported():
        settings = Settings.load(config)
        with progress_bar() as tick:
            report = index_database(
                db,
                settings,
                descriptions=descriptions,
                values=values,
                value_seconds=value_seconds,
                rebuild=rebuild,
                progress=tick,
            )
        console.print(
            f"indexed {report.columns} columns of {report.tables} tables"
            + (f" and {report.values} distinct values" if report.values is not None else "")
            + f" in {report.seconds:.2f} s -> {escape(str(report.folder))}"
        )


app.add_typer(bench_app, name="bench")


def main() -> None:  # pragma: no cover - console entry for `python -m sophrosyne`
    app()
