"""The commands beside the tools: `ask` a question, walk the `demo`, build the `index`, summarize an `audit` log."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sophrosyne.base.text import counted
from sophrosyne.cli.targets import (
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
from sophrosyne.cli.terminal import console, err_console, reported, say
from sophrosyne.errors import ConfigError, InvalidArgument, SophrosyneError


def audit(
    log: Annotated[Path, typer.Argument(help="A JSONL audit log written by `serve --audit-log`.")],
    top: Annotated[int, typer.Option(help="How many slowest calls and recent errors to show.", min=1)] = 10,
    caller: Annotated[
        str | None,
        typer.Option(help="Only the calls of this caller: a token's subject or email (e.g. --caller ada@example.com)."),
    ] = None,
) -> None:
    """Summarize an audit log: calls per tool, role and caller, tables touched, errors, slowest calls.

    Example: sophrosyne audit audit.jsonl --caller ada@example.com
    """
    from sophrosyne.audit import render_summary, summarize

    with reported():
        if not log.is_file():
            raise ConfigError(f"audit log `{log}` does not exist.", hint="Give the file `serve --audit-log` wrote.")
        render_summary(summarize(log, top=top, caller=caller), console)


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
            llm = ModelClient.from_settings(
                settings, model=model, base_url=base_url, on_wait=say
            )  # exits 2 without a model
            env = open_env(db, config, descriptions, policy=policy, role=role, directives=directives) if db else None
            chosen: Solver = "flex" if solver == "flex" else "explorer"
            request = AskRequest(question, knowledge, chosen, review, trace, as_json, is_interactive(as_json))
            code = run_ask(request, llm, settings, toolbox_for(env, server, token), (console, err_console))
        except SophrosyneError as exc:
            if as_json:
                console.print(error_json(exc), highlight=False, soft_wrap=True)
            raise
    raise typer.Exit(code)


def demo(
    db: Annotated[str | None, typer.Argument(help="Database for the walk-through (default: the HR demo).")] = None,
) -> None:
    """A narrated walk-through of the explorer pattern on the embedded HR database, with no model.

    Example: sophrosyne demo
    """
    from sophrosyne.cli.demo import run_demo

    with reported():
        run_demo(open_env(resolve_db(db), None))


def index(
    db: Annotated[str, typer.Argument(help="Database: a .sqlite/.db/.duckdb path or a SQLAlchemy URL.")],
    descriptions: DescriptionsOption = None,
    config: ConfigOption = None,
    values: Annotated[bool, typer.Option(help="Also index distinct text values, for literal grounding.")] = True,
    value_seconds: Annotated[float, typer.Option(help="Time budget of the value index, seconds.", min=0.1)] = 20.0,
    rebuild: Annotated[bool, typer.Option(help="Rebuild even when a cached index matches the schema.")] = False,
) -> None:
    """Build the offline index (BM25 + embeddings over columns, distinct values) in the cache folder.

    The index is keyed by a hash of the schema and descriptions: it is reused while they are unchanged. The
    joins the schema does not declare are inferred from names and each checked by its values, to the end.

    Example: sophrosyne index ../shared/datasets/bird_dev/dev_databases/superhero/superhero.sqlite
    --descriptions ../shared/datasets/bird_dev/dev_databases/superhero/database_description
    """
    from rich.markup import escape

    from sophrosyne.cli.terminal import progress_bar
    from sophrosyne.directives.units import fold_units
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
                # The columns a server's directives index: shard groups folded, one table per group.
                indexed=lambda catalog: fold_units(catalog).catalog,
            )
        console.print(
            f"indexed {counted(report.columns, 'column')} of {counted(report.tables, 'table')}"
            + (f" and {counted(report.values, 'distinct value')}" if report.values is not None else "")
            + f" in {report.seconds:.2f} s -> {escape(str(report.folder))}"
        )
        # The joins a server infers within `join_inference_s` at each start, checked here to the end and saved.
        joins = open_env(db, config, descriptions).complete_joins()
        console.print(f"inferred {counted(len(joins.joins), 'join')} the schema does not declare: {escape(joins.note)}")
